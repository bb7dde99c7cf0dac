/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * zstd for perf.data: a compressor that turns a byte stream of records into
 * PERF_RECORD_COMPRESSED (type 81) records the way perf record -z writes
 * them (one zstd stream per file, flushed at the end of every record, so
 * each record decodes as soon as it is read), and a decompressor that feeds
 * such records back through one stream with a bounded output.  perf 6.1
 * reads only type 81 (not COMPRESSED2, 83).  Each record holds at most
 * PERFREC_COMPRESS_CHUNK bytes of input, the mmap_len the writer states in
 * HEADER_COMPRESSED, and its compressed form always fits the u16 header.size.
 *
 * Not thread-safe: one thread drives an object.
 */
#ifndef PERFREC_COMPRESS_H
#define PERFREC_COMPRESS_H

#include <sys/types.h>
#include <sys/uio.h>
#include <perfrec/format.h>

/*
 * Most input bytes one COMPRESSED record carries.  zstd's worst case for
 * this much input (raw blocks plus frame header) stays well under the
 * 65535 - 8 bytes a record's payload may have.
 */
#define PERFREC_COMPRESS_CHUNK (60u * 1024)
/*
 * The mmap_len writers state in HEADER_COMPRESSED: perf 6.1 decompresses
 * each record into a buffer of the bytes a cut record left over plus
 * mmap_len, and refuses ("fuzzed or compressed perf.data?") any record
 * larger than that buffer.  A chunk can end in the first bytes of a record
 * up to 64 KiB long (a sample with a DWARF stack copy), so the buffer must
 * hold such a record whole, not just a chunk.
 */
#define PERFREC_COMPRESS_MMAP_LEN (PERFREC_COMPRESS_CHUNK + 64u * 1024)

/* Body of HEADER_COMPRESSED (feature 27), as perf 6.1 reads it. */
struct perfrec_compressed_feature {
	uint32_t version;  /* 0 */
	uint32_t type;     /* 1 = zstd */
	uint32_t level;
	uint32_t ratio;    /* bytes in / bytes out, rounded down */
	uint32_t mmap_len; /* largest decompressed size of one record */
};

#define PERFREC_COMP_ZSTD 1

struct perfrec_compress;
struct perfrec_decompress;

/* Receives one whole COMPRESSED record (header included); >= 0 or -errno. */
typedef int (*perfrec_compress_emit_fn)(void *ctx, const void *rec, size_t len);

/* A compressor at zstd @level (1..19).  -EINVAL for other levels. */
PERFREC_API int perfrec_compress__new(int level, struct perfrec_compress **ret_compress);

/*
 * Feed bytes.  Every PERFREC_COMPRESS_CHUNK bytes of input complete one
 * record, passed to @emit; the rest stays in the stream until more input or
 * __flush().  Input may cut records anywhere (readers join the pieces), but
 * whole records per chunk are what callers normally give.
 */
PERFREC_API int perfrec_compress__feed(struct perfrec_compress *c, const struct iovec *iov, int iovcnt,
				       perfrec_compress_emit_fn emit, void *ctx);

/* Complete the pending record (if any input is pending) and pass it to @emit. */
PERFREC_API int perfrec_compress__flush(struct perfrec_compress *c, perfrec_compress_emit_fn emit, void *ctx);

/* Counters since __new(): input bytes, record bytes out, records, thread CPU ns of the flushes (zstd compresses a chunk there). */
PERFREC_API void perfrec_compress__counters(const struct perfrec_compress *c, uint64_t *ret_in,
					    uint64_t *ret_out, uint64_t *ret_frames, uint64_t *ret_cpu_ns);

/* The zstd level @c was made with. */
PERFREC_API int perfrec_compress__level(const struct perfrec_compress *c);

/* Input bytes in the pending (not yet emitted) record. */
PERFREC_API size_t perfrec_compress__pending(const struct perfrec_compress *c);

/* Free @c (NULL is fine); a pending record is dropped: flush first. */
PERFREC_API void perfrec_compress__free(struct perfrec_compress *c);

/* A decompressor the caller owns (perfrec_decompress__free()); 0 or -ENOMEM. */
PERFREC_API int perfrec_decompress__new(struct perfrec_decompress **ret_decompress);

/*
 * Decompress the payload of one COMPRESSED record (@src, @len: the bytes
 * after its 8-byte header) into @out of @cap bytes.  Returns the bytes
 * produced, -ENOSPC if the record holds more than @cap bytes, -EBADMSG if the
 * data is not a valid continuation of the stream (the stream is then reset).
 */
PERFREC_API ssize_t perfrec_decompress__frame(struct perfrec_decompress *d, const void *src, size_t len,
					      void *out, size_t cap);

/* Start over at a new stream (a new file, or a rewind). */
PERFREC_API void perfrec_decompress__reset(struct perfrec_decompress *d);

/* Free @d; NULL is fine. */
PERFREC_API void perfrec_decompress__free(struct perfrec_decompress *d);

#endif
