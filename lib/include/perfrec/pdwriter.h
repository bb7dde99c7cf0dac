/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * PERFILE2 writer.  Layout written:
 *
 *   header | ids of attr 0..n | attrs (attr + ids section) | data |
 *   feature section table | feature bodies
 *
 * The header goes first with data.size = 0; perfrec_pdwriter__checkpoint()
 * rewrites it with the data written so far (so a file left behind by a
 * crash is readable up to the last checkpoint); perfrec_pdwriter__finish()
 * appends the feature sections and rewrites it for good.  The writer only
 * writes to the fd it is given; naming, fsync of the directory and rename
 * belong to perfrec_pdwriter__create()/__publish().
 *
 * Pipe mode (perfrec_pdwriter__new_pipe) writes the stream format instead:
 *
 *   perf_pipe_file_header | HEADER_ATTR per attr | HEADER_FEATURE per feature
 *   set so far | data ... | HEADER_FEATURE per feature set later
 *
 * to a pipe/socket fd or a sink callback, strictly sequentially (no seek).
 * A stream is flushed at every FINISHED_ROUND written on its own (the end
 * of a drain pass), so live readers get each pass as soon as it is whole.
 *
 * With compression (opts.compress_level 1..19) every data byte is carried in
 * PERF_RECORD_COMPRESSED records (a zstd stream flushed at each record, as
 * perf record -z writes) and HEADER_COMPRESSED is added at finish.
 *
 * Not thread-safe: one thread drives a writer.
 */
#ifndef PERFREC_PDWRITER_H
#define PERFREC_PDWRITER_H

#include <sys/uio.h>
#include <perfrec/format.h>

struct perfrec_pdwriter;

struct perfrec_pdwriter_opts {
	size_t sz;
	bool owns_fd; /* close the fd in __free() */
	/* 0: plain records; 1..19: zstd level of PERF_RECORD_COMPRESSED frames */
	int compress_level;
};

/*
 * Where a pipe-mode writer sends its bytes instead of an fd: called with
 * whole, consecutive pieces of the stream; must take all of them and return
 * >= 0, or return -errno, after which the writer fails every later call with
 * that error (the stream is cut).  Called only from the writer's calls.
 */
typedef int (*perfrec_pdwriter_sink_fn)(void *ctx, const struct iovec *iov, int iovcnt);

struct perfrec_pdwriter_pipe_opts {
	size_t sz;
	bool owns_fd;                  /* close the fd in __free() */
	perfrec_pdwriter_sink_fn sink; /* if set, bytes go here and the fd is unused */
	void *sink_ctx;
	/*
	 * zstd level (0 = off).  Note perf 6.1 cannot decompress pipe-mode
	 * input ("Couldn't decompress data"); perfrec's reader can.
	 */
	int compress_level;
};

/* Start a file on @fd (at offset 0, truncated).  Ownership per opts. */
PERFREC_API int perfrec_pdwriter__new(int fd, const struct perfrec_pdwriter_opts *opts,
				      struct perfrec_pdwriter **ret_writer);

/*
 * Start a pipe-mode stream on @fd (any fd: pipe, socket, file; written with
 * write(2), blocking until taken, never seeked) or, with opts->sink, on the
 * callback (pass fd -1).  Nothing is emitted until the first data write (or
 * __finish()): attrs and features set before then go out as HEADER_ATTR and
 * HEADER_FEATURE records first.  __checkpoint() only flushes; __publish()
 * returns -EINVAL.  -E2BIG if an attr or feature record would not fit in a
 * record's 64 KiB.
 */
PERFREC_API int perfrec_pdwriter__new_pipe(int fd, const struct perfrec_pdwriter_pipe_opts *opts,
					   struct perfrec_pdwriter **ret_writer);

/*
 * Create "@path.tmp" (mode 0640, O_CLOEXEC|O_EXCL) and start a file there;
 * the writer owns the fd and remembers @path for __publish().  The fd holds
 * an exclusive flock(2) for the writer's life, which tells recovery that
 * the file is being written (perfrec_recover__file() refuses it).
 */
PERFREC_API int perfrec_pdwriter__create(const char *path, struct perfrec_pdwriter **ret_writer);

/*
 * Whether a live writer from __create() holds the file @path (its
 * "NAME.tmp"): 1 if so, 0 if not (a leftover of a dead writer, or any
 * other file), -errno if @path cannot be opened.
 */
PERFREC_API int perfrec_pdwriter__in_use(const char *path);

/*
 * Add an event: its attr (attr->size bytes are used; all attrs of a file must
 * be the same size), its ids and its name (for HEADER_EVENT_DESC, which the
 * writer produces itself at finish).  Only before the first data write.
 */
PERFREC_API int perfrec_pdwriter__add_attr(struct perfrec_pdwriter *w,
					   const struct perf_event_attr *attr,
					   const uint64_t *ids, size_t nr_ids, const char *name);

/* Append bytes to the data section.  Returns 0 or -errno (-ENOSPC ...). */
PERFREC_API int perfrec_pdwriter__write(struct perfrec_pdwriter *w, const void *buf, size_t len);
PERFREC_API int perfrec_pdwriter__writev(struct perfrec_pdwriter *w, const struct iovec *iov, int iovcnt);

/* Bytes in the data section so far. */
PERFREC_API uint64_t perfrec_pdwriter__data_size(const struct perfrec_pdwriter *w);

/*
 * Rewrite the header so the file is readable up to here (data.size set,
 * no feature bits), then fdatasync.
 */
PERFREC_API int perfrec_pdwriter__checkpoint(struct perfrec_pdwriter *w);

/* Set (copying) the body of feature @feat; replaces an earlier one. */
PERFREC_API int perfrec_pdwriter__set_feature(struct perfrec_pdwriter *w, int feat,
					      const void *data, size_t len);

/* Write feature sections and the final header; fsync.  Data writes end. */
PERFREC_API int perfrec_pdwriter__finish(struct perfrec_pdwriter *w);

/*
 * After __finish() on a writer from __create(): rename "@path.tmp" to @path
 * and fsync the directory.
 */
PERFREC_API int perfrec_pdwriter__publish(struct perfrec_pdwriter *w);

/* Free; a writer from __create() that was never published unlinks its tmp file
 * only if @discard is true (otherwise it stays for recovery). */
PERFREC_API void perfrec_pdwriter__free(struct perfrec_pdwriter *w, bool discard);

/* The fd written to (borrowed); -EBADF for a sink writer. */
PERFREC_API int perfrec_pdwriter__fd(const struct perfrec_pdwriter *w);

/*
 * Turn on compression (level 1..19, 0 = off) for a writer made by __create()
 * or __new() without it.  Only before the first data write (-EBUSY after).
 */
PERFREC_API int perfrec_pdwriter__set_compress(struct perfrec_pdwriter *w, int level);

/* What compression did so far (all zero when off). */
struct perfrec_pdwriter_compress_stats {
	uint64_t bytes_in;   /* record bytes handed to the writer */
	uint64_t bytes_out;  /* bytes of COMPRESSED records produced, headers included */
	uint64_t nr_frames;  /* COMPRESSED records */
	uint64_t cpu_ns;     /* thread CPU time spent in zstd */
};

/*
 * Have the writer keep what perf's post-pass would find (off by default;
 * only before the first data write, -EBUSY after): every record written
 * from now on is looked at, MMAP2 with build ids, EXIT and samples going
 * into a build-id table the writer owns, and sample times into the first
 * and last.  __finish() then writes HEADER_BUILD_ID (the sampled binaries
 * and the kernel) and SAMPLE_TIME, unless the caller set them.  Each write
 * must hold whole records (in any number of iovecs); other bytes are
 * written but not looked at.  Returns 0, -EINVAL, -EBUSY or -ENOMEM.
 */
PERFREC_API int perfrec_pdwriter__track(struct perfrec_pdwriter *w);

/*
 * First and last sample time seen by a tracking writer: 0, -ENODATA when it
 * does not track or saw no sample (outputs untouched), -EINVAL.
 */
PERFREC_API int perfrec_pdwriter__sample_times(const struct perfrec_pdwriter *w, uint64_t *ret_first,
					       uint64_t *ret_last);

/* Copy the counters above into *@ret_stats (zeros for NULL @w). */
PERFREC_API void perfrec_pdwriter__compress_stats(const struct perfrec_pdwriter *w,
						  struct perfrec_pdwriter_compress_stats *ret_stats);

#endif
