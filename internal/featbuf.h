/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Internal: a growable byte buffer for building feature-section bodies in
 * perf's encodings (u32/u64 values, perf_header_string padded to 64 bytes,
 * string lists).  Errors are sticky: check featbuf_err() once at the end.
 */
#ifndef PERFREC_FEATBUF_H
#define PERFREC_FEATBUF_H

#include <stddef.h>
#include <stdint.h>

struct featbuf {
	unsigned char *buf;
	size_t len, cap;
	int err; /* first error, negative errno */
};

void featbuf_init(struct featbuf *fb);
void featbuf_exit(struct featbuf *fb);
void featbuf_put(struct featbuf *fb, const void *data, size_t len);
void featbuf_u32(struct featbuf *fb, uint32_t v);
void featbuf_u64(struct featbuf *fb, uint64_t v);
/* perf_header_string: u32 len (incl. NUL, padded to 64), bytes, zero pad. */
void featbuf_string(struct featbuf *fb, const char *s);
/* Overwrite a u32 written earlier at @off (for counts known late). */
void featbuf_patch_u32(struct featbuf *fb, size_t off, uint32_t v);
static inline int featbuf_err(const struct featbuf *fb) { return fb->err; }

#endif
