/*
 * The ofi carrier's bundle format: ofi_tx.c writes it, ofi_rx.c checks it
 * on receipt, ofi.c walks it to deliver.  A bundle's payload is records,
 * each a 32-bit length (host byte order, as the rest of the header) and
 * that many bytes, the last ending where the payload ends.  Nothing here
 * needs libfabric, so tests reach it on its own.
 */
#ifndef KINET_SOFT_OFI_BUNDLE_H
#define KINET_SOFT_OFI_BUNDLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The record at *off of data[0..len): its bytes and length, and *off
 * moved past it.  False at the end, or where the record does not fit
 * (then *off stays short of len: a malformed bundle). */
static inline bool ofi_bundle_next(const uint8_t *data, size_t len, size_t *off, const uint8_t **rec,
				   uint32_t *rec_len)
{
	uint32_t n;

	if (*off >= len || len - *off < sizeof(n))
		return false;
	memcpy(&n, data + *off, sizeof(n));
	if (n > len - *off - sizeof(n))
		return false;
	*rec = data + *off + sizeof(n);
	*rec_len = n;
	*off += sizeof(n) + n;
	return true;
}

/* Whether data[0..len) is whole records. */
static inline bool ofi_bundle_valid(const uint8_t *data, size_t len)
{
	const uint8_t *rec;
	uint32_t n;
	size_t off = 0;

	while (ofi_bundle_next(data, len, &off, &rec, &n))
		;
	return off == len;
}

#endif /* KINET_SOFT_OFI_BUNDLE_H */
