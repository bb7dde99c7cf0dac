// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Internal growable buffer for feature-section bodies.  perf aligns every
 * header string to 64 bytes (NAME_ALIGN in tools/perf/util/header.c) and
 * readers use the stored length to skip, so the padding must be zeros and
 * the length must include it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "featbuf.h"

#define STRING_ALIGN 64

void featbuf_init(struct featbuf *fb)
{
	memset(fb, 0, sizeof(*fb));
}

void featbuf_exit(struct featbuf *fb)
{
	free(fb->buf);
	memset(fb, 0, sizeof(*fb));
}

static int reserve(struct featbuf *fb, size_t more)
{
	size_t need, cap;
	unsigned char *p;

	if (fb->err)
		return fb->err;
	if (more > SIZE_MAX - fb->len)
		return fb->err = -EOVERFLOW;
	need = fb->len + more;
	if (need <= fb->cap)
		return 0;
	cap = fb->cap ? fb->cap : 256;
	while (cap < need)
		cap *= 2;
	p = realloc(fb->buf, cap);
	if (!p)
		return fb->err = -ENOMEM;
	fb->buf = p;
	fb->cap = cap;
	return 0;
}

void featbuf_put(struct featbuf *fb, const void *data, size_t len)
{
	if (len == 0 || reserve(fb, len) < 0)
		return;
	memcpy(fb->buf + fb->len, data, len);
	fb->len += len;
}

void featbuf_u32(struct featbuf *fb, uint32_t v)
{
	featbuf_put(fb, &v, sizeof(v));
}

void featbuf_u64(struct featbuf *fb, uint64_t v)
{
	featbuf_put(fb, &v, sizeof(v));
}

void featbuf_string(struct featbuf *fb, const char *s)
{
	size_t n = strlen(s ? s : "") + 1;
	size_t padded = (n + STRING_ALIGN - 1) / STRING_ALIGN * STRING_ALIGN;

	if (padded > UINT32_MAX) {
		if (!fb->err)
			fb->err = -EOVERFLOW;
		return;
	}
	featbuf_u32(fb, (uint32_t)padded);
	if (reserve(fb, padded) < 0)
		return;
	memcpy(fb->buf + fb->len, s ? s : "", n);
	memset(fb->buf + fb->len + n, 0, padded - n);
	fb->len += padded;
}

void featbuf_patch_u32(struct featbuf *fb, size_t off, uint32_t v)
{
	if (fb->err || off + sizeof(v) > fb->len)
		return;
	memcpy(fb->buf + off, &v, sizeof(v));
}
