// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * zstd streams cut into PERF_RECORD_COMPRESSED records, and back.  The
 * compressor keeps one ZSTD_CCtx per file so later records reuse the window
 * of earlier ones (better ratio than independent frames), and ends each record
 * with ZSTD_e_flush so a reader can decode it without what follows: a file
 * cut by a crash loses nothing before its last whole record.  Input per
 * record is capped at PERFREC_COMPRESS_CHUNK, which bounds both the
 * decompressed size (the mmap_len perf sizes its buffer by) and the
 * compressed size (zstd never expands input by more than its compressBound
 * margin), so no record can outgrow header.size's 16 bits.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
/* For ZSTD_getCParams (exported by libzstd.so; used to cap, never to raise). */
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>

#include <perfrec/compress.h>

#define HDR sizeof(struct perf_event_header)
/*
 * Memory cap for an always-on daemon: at level 19 zstd's defaults take an
 * 8 MiB window and ~85 MB per stream; a 1 MiB window with tables to match
 * takes ~12 MB and costs about 1% of ratio on perf data (whose repeats are
 * local: the same callchains over and over).
 */
#define MAX_WINDOW_LOG 20
#define MAX_TABLE_LOG 20

struct perfrec_compress {
	ZSTD_CCtx *cctx;
	int level;
	size_t in_rec;       /* input bytes in the pending record, gathered in inbuf */
	unsigned char *inbuf;  /* PERFREC_COMPRESS_CHUNK bytes */
	unsigned char *rec;  /* header + payload of the pending record */
	size_t rec_cap;
	ZSTD_outBuffer out;  /* into rec + HDR */
	uint64_t bytes_in, bytes_out, frames, cpu_ns;
};

struct perfrec_decompress {
	ZSTD_DStream *ds;
};

static uint64_t thread_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) < 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int perfrec_compress__new(int level, struct perfrec_compress **ret_compress)
{
	ZSTD_compressionParameters cp;
	struct perfrec_compress *c;

	if (level < 1 || level > 19 || !ret_compress)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->level = level;
	c->rec_cap = HDR + ZSTD_compressBound(PERFREC_COMPRESS_CHUNK) + 64;
	c->rec = malloc(c->rec_cap);
	c->inbuf = malloc(PERFREC_COMPRESS_CHUNK);
	c->cctx = ZSTD_createCCtx();
	cp = ZSTD_getCParams(level, 0, 0);
	if (!c->rec || !c->inbuf || !c->cctx ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(c->cctx, ZSTD_c_compressionLevel, level)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(c->cctx, ZSTD_c_windowLog,
						 cp.windowLog < MAX_WINDOW_LOG ? (int)cp.windowLog : MAX_WINDOW_LOG)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(c->cctx, ZSTD_c_chainLog,
						 cp.chainLog < MAX_TABLE_LOG ? (int)cp.chainLog : MAX_TABLE_LOG)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(c->cctx, ZSTD_c_hashLog,
						 cp.hashLog < MAX_TABLE_LOG ? (int)cp.hashLog : MAX_TABLE_LOG)) ||
	    /* perf's reader does not check checksums; they would cost 4 bytes a frame. */
	    ZSTD_isError(ZSTD_CCtx_setParameter(c->cctx, ZSTD_c_checksumFlag, 0))) {
		perfrec_compress__free(c);
		return -ENOMEM;
	}
	c->out.dst = c->rec + HDR;
	c->out.size = c->rec_cap - HDR;
	*ret_compress = c;
	return 0;
}

/*
 * Compress the pending chunk in one call, ending with a flush, and hand
 * the record to @emit.  The chunk is gathered first (__feed() copies):
 * one ZSTD_compressStream2() per record of some 300 bytes (a sample
 * with a short callchain) cost more in call overhead than compressing.
 */
static int finish_record(struct perfrec_compress *c, perfrec_compress_emit_fn emit, void *ctx)
{
	struct perf_event_header h;
	int r;

	if (c->in_rec) {
		ZSTD_inBuffer in = { c->inbuf, c->in_rec, 0 };
		uint64_t t0 = thread_ns();
		size_t left;

		do {
			left = ZSTD_compressStream2(c->cctx, &c->out, &in, ZSTD_e_flush);
			if (ZSTD_isError(left) || (left && c->out.pos == c->out.size))
				break;
		} while (left);
		c->cpu_ns += thread_ns() - t0;
		if (ZSTD_isError(left))
			return -EIO;
		/* The buffer holds compressBound(CHUNK): a full one is a broken invariant. */
		if (left || in.pos != in.size || HDR + c->out.pos > PERFREC_RECORD_MAX)
			return -EOVERFLOW;
		/* In zstd's stream now: a failed emit below is retried, never compressed again. */
		c->in_rec = 0;
	}
	if (!c->out.pos)
		return 0;
	h.type = PERFREC_RECORD_COMPRESSED;
	h.misc = 0;
	h.size = (uint16_t)(HDR + c->out.pos);
	memcpy(c->rec, &h, HDR);
	r = emit(ctx, c->rec, h.size);
	if (r < 0)
		return r;
	c->bytes_out += h.size;
	c->frames++;
	c->out.pos = 0;
	return 0;
}

int perfrec_compress__feed(struct perfrec_compress *c, const struct iovec *iov, int iovcnt,
			   perfrec_compress_emit_fn emit, void *ctx)
{
	if (!c || !emit || iovcnt < 0 || (iovcnt && !iov))
		return -EINVAL;
	for (int i = 0; i < iovcnt; i++) {
		const unsigned char *p = iov[i].iov_base;
		size_t left = iov[i].iov_len;

		while (left) {
			size_t take;
			int r;

			/* A record whose emit failed goes first, and a full chunk. */
			if (c->out.pos || c->in_rec == PERFREC_COMPRESS_CHUNK) {
				r = finish_record(c, emit, ctx);
				if (r < 0)
					return r;
			}
			take = PERFREC_COMPRESS_CHUNK - c->in_rec;
			if (take > left)
				take = left;
			memcpy(c->inbuf + c->in_rec, p, take);
			p += take;
			left -= take;
			c->in_rec += take;
			c->bytes_in += take;
			if (c->in_rec == PERFREC_COMPRESS_CHUNK) {
				r = finish_record(c, emit, ctx);
				if (r < 0)
					return r;
			}
		}
	}
	return 0;
}

int perfrec_compress__flush(struct perfrec_compress *c, perfrec_compress_emit_fn emit, void *ctx)
{
	if (!c || !emit)
		return -EINVAL;
	return finish_record(c, emit, ctx);
}

void perfrec_compress__counters(const struct perfrec_compress *c, uint64_t *ret_in, uint64_t *ret_out,
				uint64_t *ret_frames, uint64_t *ret_cpu_ns)
{
	if (ret_in)
		*ret_in = c ? c->bytes_in : 0;
	if (ret_out)
		*ret_out = c ? c->bytes_out : 0;
	if (ret_frames)
		*ret_frames = c ? c->frames : 0;
	if (ret_cpu_ns)
		*ret_cpu_ns = c ? c->cpu_ns : 0;
}

size_t perfrec_compress__pending(const struct perfrec_compress *c)
{
	return c ? c->in_rec : 0;
}

int perfrec_compress__level(const struct perfrec_compress *c)
{
	return c ? c->level : 0;
}

void perfrec_compress__free(struct perfrec_compress *c)
{
	if (!c)
		return;
	ZSTD_freeCCtx(c->cctx);
	free(c->rec);
	free(c->inbuf);
	free(c);
}

int perfrec_decompress__new(struct perfrec_decompress **ret_decompress)
{
	struct perfrec_decompress *d;

	if (!ret_decompress)
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->ds = ZSTD_createDStream();
	if (!d->ds || ZSTD_isError(ZSTD_initDStream(d->ds))) {
		perfrec_decompress__free(d);
		return -ENOMEM;
	}
	*ret_decompress = d;
	return 0;
}

ssize_t perfrec_decompress__frame(struct perfrec_decompress *d, const void *src, size_t len,
				  void *out, size_t cap)
{
	ZSTD_inBuffer in = { src, len, 0 };
	ZSTD_outBuffer o = { out, cap, 0 };
	unsigned char extra;
	size_t ret;

	if (!d || (len && !src) || (cap && !out))
		return -EINVAL;
	while (in.pos < in.size) {
		ret = ZSTD_decompressStream(d->ds, &o, &in);
		if (ZSTD_isError(ret)) {
			perfrec_decompress__reset(d);
			return -EBADMSG;
		}
		if (in.pos < in.size && o.pos == o.size)
			return -ENOSPC;
	}
	/* All input taken, but zstd may still hold output that did not fit. */
	if (o.pos == o.size) {
		ZSTD_outBuffer probe = { &extra, 1, 0 };

		ret = ZSTD_decompressStream(d->ds, &probe, &in);
		if (ZSTD_isError(ret)) {
			perfrec_decompress__reset(d);
			return -EBADMSG;
		}
		if (probe.pos)
			return -ENOSPC;
	}
	return (ssize_t)o.pos;
}

void perfrec_decompress__reset(struct perfrec_decompress *d)
{
	if (d && d->ds)
		ZSTD_DCtx_reset(d->ds, ZSTD_reset_session_only);
}

void perfrec_decompress__free(struct perfrec_decompress *d)
{
	if (!d)
		return;
	ZSTD_freeDStream(d->ds);
	free(d);
}
