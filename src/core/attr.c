/*
 * Attribute structs that can grow (struct kinet_ctx_attr, kinet_cq_attr,
 * kinet_qp_attr, kinet_mesh_attr, kinet_boot_attr, kinet_team_attr): each
 * starts with
 * uint32_t size, the struct's size as the caller's header had it.  The
 * library reads no more than that, so a struct may gain fields at its end
 * in a later version: an older caller's fields keep their meaning, and a
 * newer caller's fields this library does not know must be zero (their
 * defaults), else the call fails instead of ignoring them.  size 0 means
 * "this layout": zeroed structs (and designated initializers) keep working.
 * The layout of version 0.x is the first one; a later one will accept every
 * earlier size and give the missing fields their defaults.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "internal.h"

/* No attribute struct is near this size: a larger size is garbage (an
 * uninitialised struct), not a newer header. */
#define ATTR_MAX_SIZE 4096u

int kinet_attr_read_since(const char *name, const void *attr, size_t oldest, size_t ours, void *out)
{
	const uint8_t *p = attr;
	uint32_t size;

	memcpy(&size, attr, sizeof(size));
	if (size == 0)
		size = (uint32_t)ours;
	if (size < oldest || size > ATTR_MAX_SIZE) {
		KINET_ERR("%s->size: %u is not the size of any layout of this struct (%zu bytes here; 0: "
			  "this layout): set it with sizeof, or start from the _attr_init function",
			  name, size, ours);
		return -EINVAL;
	}
	for (uint32_t i = (uint32_t)ours; i < size; i++) {
		if (p[i]) {
			KINET_ERR(
				"%s: fields past the %zu bytes this library knows are set (size %u): a newer "
				"kinet header than this library",
				name, ours, size);
			return -EINVAL;
		}
	}
	/* An older layout's missing fields are zero: their defaults. */
	memset(out, 0, ours);
	memcpy(out, attr, size < ours ? size : ours);
	size = (uint32_t)ours;
	memcpy(out, &size, sizeof(size));
	return 0;
}

int kinet_attr_read(const char *name, const void *attr, size_t ours, void *out)
{
	return kinet_attr_read_since(name, attr, ours, ours, out);
}
