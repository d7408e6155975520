/*
 * Scatter/gather lists of the software NIC, and the one walk over a byte
 * range of them that every transport uses (gathering a request, placing a
 * response, scattering a send into a receive WQE).
 */
#ifndef KINET_SOFT_SGL_H
#define KINET_SOFT_SGL_H

#include <stdbool.h>
#include <stdint.h>

#include "kinet/kinet.h"

/* One entry: where it points, its key (to look it up again before use when
 * the registration may have gone meanwhile) and its memory type. */
struct kinet_sgl_entry {
	uint8_t *ptr;
	uint32_t len;
	uint32_t key;
	enum kinet_mem_type type;
};

/* The pieces of bytes [off, off + n) of a list, in order. */
struct kinet_sgl_iter {
	const struct kinet_sgl_entry *sge;
	int nsge;
	int i;
	uint32_t pos;  /* list offset of entry i */
	uint32_t off;  /* next byte wanted */
	uint32_t left; /* bytes wanted and not yet given: after the walk, what the list lacked */
};

static inline void kinet_sgl_iter_init(struct kinet_sgl_iter *it, const struct kinet_sgl_entry *sge, int nsge,
				       uint32_t off, uint32_t n)
{
	*it = (struct kinet_sgl_iter){.sge = sge, .nsge = nsge, .off = off, .left = n};
}

/* The next piece: entry *g, from byte *in of it, *take bytes.  False once
 * the range or the list is done. */
static inline bool kinet_sgl_iter_next(struct kinet_sgl_iter *it, const struct kinet_sgl_entry **g,
				       uint32_t *in, uint32_t *take)
{
	while (it->i < it->nsge && it->left) {
		const struct kinet_sgl_entry *e = &it->sge[it->i++];

		if (it->off >= it->pos + e->len) {
			it->pos += e->len;
			continue;
		}
		*g = e;
		*in = it->off - it->pos;
		*take = e->len - *in < it->left ? e->len - *in : it->left;
		it->off += *take;
		it->pos += e->len;
		it->left -= *take;
		return true;
	}
	return false;
}

#endif /* KINET_SOFT_SGL_H */
