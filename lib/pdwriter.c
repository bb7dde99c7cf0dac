// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * PERFILE2 writer.  The file is laid out as header | ids | attrs | data |
 * feature table | feature bodies.  The header is written first with
 * data.size = 0; the ids and attrs go out at the first data write (attrs are
 * fixed from then on); data bytes pass through a user-space buffer, or
 * straight to the fd with pwritev when they are large, so the drain path costs
 * few syscalls.  Every write is positional (pwrite) against a "committed"
 * offset that only advances once bytes are fully on the file: a failed write
 * (-ENOSPC, ...) leaves the file readable up to the last good byte, and a
 * later retry overwrites whatever the failed write left beyond it.
 *
 * Pipe mode streams instead (header, HEADER_ATTR and HEADER_FEATURE records,
 * data) with plain sequential writes or a sink callback; as nothing can be
 * rewritten there, a failed write cuts the stream and every later call fails.
 *
 * Compression sits in front of the buffer: data bytes go through a zstd
 * stream (lib/compress.c) that hands back whole PERF_RECORD_COMPRESSED
 * records, and those take the same buffered path as plain data.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <perfrec/buildid.h>
#include <perfrec/compress.h>
#include <perfrec/event.h>
#include <perfrec/pdwriter.h>

#include "buildid-internal.h"
#include "track.h"
#include "featbuf.h"
#include "fsutil.h"

#define WBUF_SIZE (256u * 1024)
/*
 * Writes at least this large bypass the buffer: they go to the kernel
 * straight from the caller's memory (the mapped ring), in one pwritev()
 * behind whatever the buffer holds, so their bytes are copied once, into
 * the page cache, and not first into the buffer.  Smaller ones are copied
 * and gathered, saving system calls.
 */
#define DIRECT_MIN (16u * 1024)

struct wattr {
	struct perf_event_attr attr;
	uint64_t *ids;
	size_t nr_ids;
	char *name;
};

struct perfrec_pdwriter {
	int fd;
	bool owns_fd;
	char *path;     /* final name, for writers from __create() */
	char *tmp_path; /* the name written to */
	bool published;

	struct wattr *attrs;
	size_t nr_attrs;
	uint32_t attr_sz; /* attr->size shared by every attr, 0 until the first */

	bool data_started; /* ids and attrs are on file, data.offset known */
	bool finished;
	uint64_t data_offset;
	uint64_t committed; /* data bytes known to be on the file */

	unsigned char *buf;
	size_t buf_len;

	struct {
		void *data;
		size_t len;
		bool set;
		bool sent; /* pipe mode: already in the stream */
	} feats[PERFREC_FEAT_BITS];

	/* Pipe mode */
	bool pipe;
	perfrec_pdwriter_sink_fn sink;
	void *sink_ctx;
	int stream_err; /* sticky: the stream was cut */

	struct perfrec_compress *zc; /* NULL: no compression */
	/*
	 * Compression cuts COMPRESSED records at record boundaries, so each
	 * holds whole records (what perf itself writes, and what lets a crashed
	 * file be recovered frame by frame): bytes of the current record still
	 * to come, and its header while it arrives in pieces.  A stream whose
	 * headers make no sense (not records) is then compressed as bytes.
	 */
	size_t rec_left;
	unsigned char rec_hdr[8];
	size_t rec_hdr_len;
	bool rec_unsynced;

	/* __track(): what the writer learns from the records it writes. */
	struct track track;                 /* its table is ours (NULL: not tracking) */
	uint64_t *track_buf;                /* a record split across iovecs */
	const struct wattr *last_attr;      /* of the last sample's id */
	bool rec_raw;      /* the record in rec_left goes out uncompressed */
};

static uint64_t align8(uint64_t v)
{
	return (v + 7) & ~(uint64_t)7;
}

/* Step past @n bytes written from *@iov (a short write may end inside one). */
static void iov_consume(struct iovec **iov, int *iovcnt, size_t n)
{
	while (n > 0 && *iovcnt > 0) {
		if (n >= (*iov)->iov_len) {
			n -= (*iov)->iov_len;
			(*iov)++;
			(*iovcnt)--;
		} else {
			(*iov)->iov_base = (char *)(*iov)->iov_base + n;
			(*iov)->iov_len -= n;
			n = 0;
		}
	}
}

/*
 * pwritev until everything is written; short writes resume where they
 * stopped and EINTR retries.  @iov is modified.  A write that returns 0 would
 * loop forever, so it counts as -EIO.
 */
static int pwritev_all(int fd, struct iovec *iov, int iovcnt, uint64_t off)
{
	while (iovcnt > 0) {
		ssize_t n;

		if (iov->iov_len == 0) {
			iov++;
			iovcnt--;
			continue;
		}
		n = pwritev(fd, iov, iovcnt > IOV_MAX ? IOV_MAX : iovcnt, (off_t)off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		off += (uint64_t)n;
		iov_consume(&iov, &iovcnt, (size_t)n);
	}
	return 0;
}

static int pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return pwritev_all(fd, &iov, 1, off);
}

/* fsync/fdatasync, tolerating fds that cannot sync (pipes, /dev/full). */
static int sync_fd(int fd, bool data_only)
{
	int r = data_only ? fdatasync(fd) : fsync(fd);

	if (r < 0 && errno != EINVAL && errno != EROFS)
		return -errno;
	return 0;
}

/*
 * Pipe mode: put @iov on the stream in order, all of it or fail.  A
 * non-blocking fd that is full is waited for, since a record cut in half
 * would make the rest of the stream unreadable.  @iov is modified.
 */
static int stream_out(struct perfrec_pdwriter *w, struct iovec *iov, int iovcnt)
{
	int r;

	if (w->stream_err)
		return w->stream_err;
	if (w->sink) {
		r = w->sink(w->sink_ctx, iov, iovcnt);
		if (r < 0)
			w->stream_err = r;
		return r < 0 ? r : 0;
	}
	while (iovcnt > 0) {
		ssize_t n;

		if (iov->iov_len == 0) {
			iov++;
			iovcnt--;
			continue;
		}
		n = writev(w->fd, iov, iovcnt > IOV_MAX ? IOV_MAX : iovcnt);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				struct pollfd p = { .fd = w->fd, .events = POLLOUT };

				if (poll(&p, 1, -1) < 0 && errno != EINTR) {
					w->stream_err = -errno;
					return w->stream_err;
				}
				continue;
			}
			w->stream_err = -errno;
			return w->stream_err;
		}
		if (n == 0) {
			w->stream_err = -EIO;
			return w->stream_err;
		}
		iov_consume(&iov, &iovcnt, (size_t)n);
	}
	return 0;
}

/* Data bytes to where they belong: the data section, or the stream. */
static int put_data(struct perfrec_pdwriter *w, struct iovec *iov, int iovcnt)
{
	if (w->pipe)
		return stream_out(w, iov, iovcnt);
	return pwritev_all(w->fd, iov, iovcnt, w->data_offset + w->committed);
}

static void fill_header(const struct perfrec_pdwriter *w, struct perfrec_file_header *h,
			uint64_t data_size)
{
	memset(h, 0, sizeof(*h));
	h->magic = PERFREC_MAGIC2;
	h->size = sizeof(*h);
	h->attr_size = (w->attr_sz ? w->attr_sz : sizeof(struct perf_event_attr)) +
		       sizeof(struct perfrec_file_section);
	if (w->data_started) {
		h->data.offset = w->data_offset;
		h->data.size = data_size;
	}
}

/* Offsets of the attrs section, computed the same way begin_data() lays it out. */
static void layout(const struct perfrec_pdwriter *w, uint64_t *ret_attrs_off, uint64_t *ret_data_off)
{
	uint64_t off = sizeof(struct perfrec_file_header);
	uint64_t attr_size = w->attr_sz + sizeof(struct perfrec_file_section);

	for (size_t i = 0; i < w->nr_attrs; i++)
		off += w->attrs[i].nr_ids * sizeof(uint64_t);
	*ret_attrs_off = off;
	off += w->nr_attrs * attr_size;
	*ret_data_off = align8(off);
}

static int write_header(struct perfrec_pdwriter *w, uint64_t data_size, const uint64_t flags[4])
{
	struct perfrec_file_header h;

	fill_header(w, &h, data_size);
	if (w->data_started) {
		uint64_t attrs_off, data_off;

		layout(w, &attrs_off, &data_off);
		h.attrs.offset = attrs_off;
		h.attrs.size = w->nr_attrs * h.attr_size;
	}
	if (flags)
		memcpy(h.flags, flags, sizeof(h.flags));
	return pwrite_all(w->fd, &h, sizeof(h), 0);
}

static int build_event_desc(struct perfrec_pdwriter *w);

/*
 * Features that go into a stream.  TRACING_DATA and BUILD_ID have record
 * types of their own in pipe mode, and perf ignores them as HEADER_FEATURE.
 */
static bool streamable_feature(int f)
{
	return f != PERFREC_FEAT_TRACING_DATA && f != PERFREC_FEAT_BUILD_ID;
}

/*
 * HEADER_FEATURE records {header, u64 feat id, body} for every feature set
 * and not yet sent.  Bodies are not padded: perf reads some features'
 * optional tails by the bytes left in the record.  A feature too big for one
 * record (64 KiB) is left out rather than cutting the stream.
 */
static int send_features(struct perfrec_pdwriter *w)
{
	for (int f = 1; f < PERFREC_FEAT_BITS; f++) {
		struct perf_event_header h;
		uint64_t id = (uint64_t)f;
		struct iovec iov[3];
		int r;

		if (!w->feats[f].set || w->feats[f].sent || !streamable_feature(f))
			continue;
		w->feats[f].sent = true;
		if (sizeof(h) + sizeof(id) + w->feats[f].len > PERFREC_RECORD_MAX)
			continue;
		h.type = PERFREC_RECORD_HEADER_FEATURE;
		h.misc = 0;
		h.size = (uint16_t)(sizeof(h) + sizeof(id) + w->feats[f].len);
		iov[0] = (struct iovec){ &h, sizeof(h) };
		iov[1] = (struct iovec){ &id, sizeof(id) };
		iov[2] = (struct iovec){ w->feats[f].data, w->feats[f].len };
		r = stream_out(w, iov, 3);
		if (r < 0)
			return r;
	}
	return 0;
}

/*
 * A stream's tracing data, as perf record sends it: a 16-byte
 * HEADER_TRACING_DATA record {header, u32 size, u32 pad} whose header.size
 * covers only itself, then @size bytes (the data zero-padded to 8) outside
 * any record.  perf reads them straight from the stream, so they must come
 * before the first tracepoint sample.  Only at the start: a stream's
 * tracing data set later is not sent.
 */
static int send_tracing_data(struct perfrec_pdwriter *w)
{
	static const unsigned char zeros[8];
	struct {
		struct perf_event_header h;
		uint32_t size, pad;
	} rec = { .h = { .type = PERFREC_RECORD_HEADER_TRACING_DATA, .size = sizeof(rec) } };
	size_t len = w->feats[PERFREC_FEAT_TRACING_DATA].len;
	struct iovec iov[3];

	if (!w->feats[PERFREC_FEAT_TRACING_DATA].set || w->feats[PERFREC_FEAT_TRACING_DATA].sent || !len)
		return 0;
	w->feats[PERFREC_FEAT_TRACING_DATA].sent = true;
	if (len > UINT32_MAX - 8)
		return 0;
	rec.size = (uint32_t)((len + 7) & ~(size_t)7);
	iov[0] = (struct iovec){ &rec, sizeof(rec) };
	iov[1] = (struct iovec){ w->feats[PERFREC_FEAT_TRACING_DATA].data, len };
	iov[2] = (struct iovec){ (void *)zeros, rec.size - len };
	return stream_out(w, iov, 3);
}

static bool has_chains(const struct perf_event_attr *a)
{
	return a->sample_type & (PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER);
}

/*
 * Pipe mode's counterpart of the attrs section: the pipe header, one
 * HEADER_ATTR {header, attr, ids} per event, then the features known now
 * and the end-of-features marker perf writes (feature id HEADER_LAST_FEATURE,
 * 32 in perf 6.1, on which perf report --header prints what it got).
 */
static int begin_stream(struct perfrec_pdwriter *w)
{
	struct perfrec_pipe_file_header ph = { .magic = PERFREC_MAGIC2, .size = sizeof(ph) };
	struct perf_event_header h;
	struct iovec iov[3];
	uint64_t last[2];
	int r;

	for (size_t i = 0; i < w->nr_attrs; i++)
		if (sizeof(h) + w->attr_sz + w->attrs[i].nr_ids * sizeof(uint64_t) > PERFREC_RECORD_MAX)
			return -E2BIG;
	iov[0] = (struct iovec){ &ph, sizeof(ph) };
	r = stream_out(w, iov, 1);
	if (r < 0)
		return r;
	/*
	 * Attrs with callchains or user stacks first: perf 6.1 (script and
	 * report) sets up unwinding from the evlist's combined sample_type,
	 * which it computes at the first HEADER_ATTR and then keeps; a
	 * side-band attr first would leave DWARF stacks not unwound.  The
	 * attrs themselves are reordered (stably), so that EVENT_DESC lists
	 * them in the order of the HEADER_ATTR records, as readers check.
	 */
	for (size_t i = 1; i < w->nr_attrs; i++) {
		struct wattr a = w->attrs[i];
		size_t j = i;

		if (!has_chains(&a.attr))
			continue;
		while (j > 0 && !has_chains(&w->attrs[j - 1].attr)) {
			w->attrs[j] = w->attrs[j - 1];
			j--;
		}
		w->attrs[j] = a;
	}
	for (size_t i = 0; i < w->nr_attrs; i++) {
		h.type = PERFREC_RECORD_HEADER_ATTR;
		h.misc = 0;
		h.size = (uint16_t)(sizeof(h) + w->attr_sz + w->attrs[i].nr_ids * sizeof(uint64_t));
		iov[0] = (struct iovec){ &h, sizeof(h) };
		iov[1] = (struct iovec){ &w->attrs[i].attr, w->attr_sz };
		iov[2] = (struct iovec){ w->attrs[i].ids, w->attrs[i].nr_ids * sizeof(uint64_t) };
		r = stream_out(w, iov, 3);
		if (r < 0)
			return r;
	}
	if (w->nr_attrs && !w->feats[PERFREC_FEAT_EVENT_DESC].set) {
		r = build_event_desc(w);
		if (r < 0)
			return r;
	}
	if (w->zc && !w->feats[PERFREC_FEAT_COMPRESSED].set) {
		struct perfrec_compressed_feature cf = {
			.version = 0, .type = PERFREC_COMP_ZSTD,
			.level = (uint32_t)perfrec_compress__level(w->zc),
			.ratio = 0, .mmap_len = PERFREC_COMPRESS_MMAP_LEN,
		};

		r = perfrec_pdwriter__set_feature(w, PERFREC_FEAT_COMPRESSED, &cf, sizeof(cf));
		if (r < 0)
			return r;
	}
	r = send_features(w);
	if (r < 0)
		return r;
	h.type = PERFREC_RECORD_HEADER_FEATURE;
	h.misc = 0;
	h.size = sizeof(h) + sizeof(uint64_t);
	memcpy(last, &h, sizeof(h));
	last[1] = PERFREC_FEAT_LAST_KNOWN + 1;
	iov[0] = (struct iovec){ last, sizeof(last) };
	r = stream_out(w, iov, 1);
	if (r < 0)
		return r;
	r = send_tracing_data(w);
	if (r < 0)
		return r;
	w->data_started = true;
	return 0;
}

/* Put the ids arrays and the attrs section on the file; fixes data.offset. */
static int begin_data(struct perfrec_pdwriter *w)
{
	uint64_t attrs_off, data_off, off = sizeof(struct perfrec_file_header);
	size_t entry = w->attr_sz + sizeof(struct perfrec_file_section);
	unsigned char *sec = NULL;
	int r;

	if (w->data_started)
		return 0;
	if (!w->attr_sz)
		w->attr_sz = sizeof(struct perf_event_attr);
	if (w->pipe)
		return begin_stream(w);
	layout(w, &attrs_off, &data_off);

	if (w->nr_attrs) {
		sec = calloc(w->nr_attrs, entry);
		if (!sec)
			return -ENOMEM;
	}
	for (size_t i = 0; i < w->nr_attrs; i++) {
		struct perfrec_file_section ids = {
			.offset = off,
			.size = w->attrs[i].nr_ids * sizeof(uint64_t),
		};

		if (ids.size) {
			r = pwrite_all(w->fd, w->attrs[i].ids, ids.size, off);
			if (r < 0)
				goto out;
		}
		off += ids.size;
		memcpy(sec + i * entry, &w->attrs[i].attr, w->attr_sz);
		memcpy(sec + i * entry + w->attr_sz, &ids, sizeof(ids));
	}
	if (w->nr_attrs) {
		r = pwrite_all(w->fd, sec, w->nr_attrs * entry, attrs_off);
		if (r < 0)
			goto out;
	}
	/* Zero the alignment gap so the file has no stale bytes in it. */
	if (data_off > attrs_off + w->nr_attrs * entry) {
		static const unsigned char zeros[8];

		r = pwrite_all(w->fd, zeros, data_off - (attrs_off + w->nr_attrs * entry),
			       attrs_off + w->nr_attrs * entry);
		if (r < 0)
			goto out;
	}
	w->data_offset = data_off;
	w->data_started = true;
	r = write_header(w, 0, NULL);
	if (r < 0)
		w->data_started = false;
out:
	free(sec);
	return r;
}

static int flush(struct perfrec_pdwriter *w)
{
	struct iovec iov;
	int r;

	if (!w->buf_len)
		return 0;
	iov.iov_base = w->buf;
	iov.iov_len = w->buf_len;
	r = put_data(w, &iov, 1);
	if (r < 0)
		return r; /* keep the buffer: a retry writes it again at the same place */
	w->committed += w->buf_len;
	w->buf_len = 0;
	return 0;
}

int perfrec_pdwriter__new(int fd, const struct perfrec_pdwriter_opts *opts,
			  struct perfrec_pdwriter **ret_writer)
{
	struct perfrec_pdwriter *w;
	struct stat st;
	int r;

	if (fd < 0 || !ret_writer || !PERFREC_OPTS_VALID(opts, struct perfrec_pdwriter_opts))
		return -EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->fd = fd;
	w->buf = malloc(WBUF_SIZE);
	if (!w->buf) {
		r = -ENOMEM;
		goto fail;
	}
	/* Truncate regular files only: devices such as /dev/full refuse it. */
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && ftruncate(fd, 0) < 0) {
		r = -errno;
		goto fail;
	}
	r = write_header(w, 0, NULL);
	if (r < 0)
		goto fail;
	r = perfrec_pdwriter__set_compress(w, PERFREC_OPTS_GET(opts, compress_level, 0));
	if (r < 0)
		goto fail;
	w->owns_fd = PERFREC_OPTS_GET(opts, owns_fd, false);
	*ret_writer = w;
	return 0;
fail:
	w->fd = -1; /* the caller still owns it on failure */
	perfrec_pdwriter__free(w, false);
	return r;
}

int perfrec_pdwriter__create(const char *path, struct perfrec_pdwriter **ret_writer)
{
	struct perfrec_pdwriter_opts opts = { .sz = sizeof(opts), .owns_fd = true };
	struct perfrec_pdwriter *w = NULL;
	char *tmp = NULL, *final = NULL;
	int fd, r;

	if (!path || !*path || !ret_writer)
		return -EINVAL;
	final = strdup(path);
	if (!final || asprintf(&tmp, "%s.tmp", path) < 0) {
		free(final);
		return -ENOMEM;
	}
	fd = open(tmp, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0640);
	if (fd < 0) {
		r = -errno;
		goto fail;
	}
	/*
	 * Held while the file is written: recovery (perfrec_recover__file(),
	 * a restarted daemon) never takes a .tmp that a live writer holds.
	 * The lock goes with the fd, at free or when the process dies.  A
	 * reader asking whether a .tmp is in use (perfrec_pdwriter__in_use(),
	 * perfrecctl ls and cut) holds a shared lock for an instant: one that
	 * opened the new file by name before this lock is waited for, a
	 * little, rather than the file given up.
	 */
	for (int tries = 0; flock(fd, LOCK_EX | LOCK_NB) < 0; tries++) {
		if (errno != EWOULDBLOCK || tries == 100) {
			r = -errno;
			close(fd);
			unlink(tmp);
			goto fail;
		}
		usleep(1000);
	}
	r = perfrec_pdwriter__new(fd, &opts, &w);
	if (r < 0) {
		close(fd);
		unlink(tmp);
		goto fail;
	}
	w->path = final;
	w->tmp_path = tmp;
	*ret_writer = w;
	return 0;
fail:
	free(tmp);
	free(final);
	return r;
}

int perfrec_pdwriter__in_use(const char *path)
{
	int fd, r = 0;

	if (!path)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK)
		r = 1;
	close(fd);
	return r;
}

int perfrec_pdwriter__add_attr(struct perfrec_pdwriter *w, const struct perf_event_attr *attr,
			       const uint64_t *ids, size_t nr_ids, const char *name)
{
	struct wattr *a, *n;
	uint32_t sz;

	if (!w || !attr || (nr_ids && !ids))
		return -EINVAL;
	if (w->data_started || w->finished)
		return -EBUSY;
	/* size 0 means "the struct we were built with", as for perf_event_open. */
	sz = attr->size ? attr->size : sizeof(struct perf_event_attr);
	if (sz < PERF_ATTR_SIZE_VER0 || sz > sizeof(struct perf_event_attr) || (sz & 7))
		return -EINVAL;
	if (w->attr_sz && sz != w->attr_sz)
		return -EINVAL;
	if (nr_ids > (SIZE_MAX / 2) / sizeof(uint64_t))
		return -EOVERFLOW;

	n = realloc(w->attrs, (w->nr_attrs + 1) * sizeof(*w->attrs));
	if (!n)
		return -ENOMEM;
	w->attrs = n;
	a = &w->attrs[w->nr_attrs];
	memset(a, 0, sizeof(*a));
	memcpy(&a->attr, attr, sz);
	a->attr.size = sz;
	if (nr_ids) {
		a->ids = malloc(nr_ids * sizeof(uint64_t));
		if (!a->ids)
			return -ENOMEM;
		memcpy(a->ids, ids, nr_ids * sizeof(uint64_t));
	}
	a->nr_ids = nr_ids;
	a->name = strdup(name ? name : "");
	if (!a->name) {
		free(a->ids);
		return -ENOMEM;
	}
	w->attr_sz = sz;
	w->nr_attrs++;
	return 0;
}

/* Buffered data write of @total bytes (data already begun). */
static int data_out(struct perfrec_pdwriter *w, const struct iovec *iov, int iovcnt, size_t total)
{
	struct iovec small[16], *v;
	int r;

	if (total < DIRECT_MIN) {
		if (total > WBUF_SIZE - w->buf_len) {
			r = flush(w);
			if (r < 0)
				return r;
		}
		for (int i = 0; i < iovcnt; i++) {
			memcpy(w->buf + w->buf_len, iov[i].iov_base, iov[i].iov_len);
			w->buf_len += iov[i].iov_len;
		}
		return 0;
	}
	/* Large: the buffered bytes, then the caller's, in one call. */
	if ((size_t)iovcnt + 1 <= sizeof(small) / sizeof(small[0])) {
		v = small;
	} else {
		v = malloc(((size_t)iovcnt + 1) * sizeof(*v));
		if (!v)
			return -ENOMEM;
	}
	v[0] = (struct iovec){ .iov_base = w->buf, .iov_len = w->buf_len };
	memcpy(v + 1, iov, (size_t)iovcnt * sizeof(*v));
	r = w->buf_len ? put_data(w, v, iovcnt + 1) : put_data(w, v + 1, iovcnt);
	if (v != small)
		free(v);
	/*
	 * On failure the buffer is kept, as flush() keeps it: a later write
	 * puts it at the same place again.  The caller's bytes are refused.
	 */
	if (r < 0)
		return r;
	w->committed += w->buf_len + total;
	w->buf_len = 0;
	return 0;
}

/* A whole COMPRESSED record from the compressor. */
static int emit_compressed(void *ctx, const void *rec, size_t len)
{
	struct iovec iov = { .iov_base = (void *)rec, .iov_len = len };

	return data_out(ctx, &iov, 1, len);
}

/* Feed @len bytes at @p to the compressor. */
static int feed(struct perfrec_pdwriter *w, const unsigned char *p, size_t len)
{
	struct iovec v = { .iov_base = (void *)p, .iov_len = len };

	return perfrec_compress__feed(w->zc, &v, 1, emit_compressed, w);
}

/* A record larger than a chunk, written as it is after the pending COMPRESSED one. */
static int raw_out(struct perfrec_pdwriter *w, const unsigned char *p, size_t len)
{
	struct iovec v = { .iov_base = (void *)p, .iov_len = len };

	return data_out(w, &v, 1, len);
}

/*
 * A whole record of @size bytes at @p, which directly follows the run
 * (*run, *run_len) of whole records not yet fed: joins the run, or closes
 * the pending COMPRESSED record first when it would outgrow a chunk, or
 * goes out raw when it is larger than a chunk itself.
 */
static int whole_record(struct perfrec_pdwriter *w, const unsigned char *p, size_t size,
			const unsigned char **run, size_t *run_len)
{
	size_t pending = perfrec_compress__pending(w->zc) + *run_len;
	int r;

	if (size > PERFREC_COMPRESS_CHUNK) {
		r = *run_len ? feed(w, *run, *run_len) : 0;
		if (r == 0)
			r = perfrec_compress__flush(w->zc, emit_compressed, w);
		if (r == 0)
			r = raw_out(w, p, size);
		if (r < 0)
			return r;
		*run_len = 0;
		return 0;
	}
	if (pending && pending + size > PERFREC_COMPRESS_CHUNK) {
		r = *run_len ? feed(w, *run, *run_len) : 0;
		if (r == 0)
			r = perfrec_compress__flush(w->zc, emit_compressed, w);
		if (r < 0)
			return r;
		*run = p;
		*run_len = 0;
	}
	if (!*run_len)
		*run = p;
	*run_len += size;
	return 0;
}

/*
 * At a record start that is not whole in this segment: gathers its header
 * from *p (over several segments if need be), then starts the record,
 * compressed or raw.  Advances *p and *left past what it took.  Returns 1
 * when the header shows these are not records after all: from then on the
 * writer feeds bytes, and the rest of this segment has been fed already.
 */
static int start_split_record(struct perfrec_pdwriter *w, const unsigned char **p, size_t *left)
{
	struct perf_event_header h;
	size_t n = sizeof(h) - w->rec_hdr_len;
	int r;

	if (n > *left)
		n = *left;
	memcpy(w->rec_hdr + w->rec_hdr_len, *p, n);
	w->rec_hdr_len += n;
	*p += n;
	*left -= n;
	if (w->rec_hdr_len < sizeof(h))
		return 0;
	memcpy(&h, w->rec_hdr, sizeof(h));
	w->rec_hdr_len = 0;
	if (h.size < sizeof(h)) {
		/* Not records after all: bytes from here on. */
		w->rec_unsynced = true;
		r = feed(w, w->rec_hdr, sizeof(h));
		if (r == 0 && *left)
			r = feed(w, *p, *left);
		return r < 0 ? r : 1;
	}
	w->rec_raw = h.size > PERFREC_COMPRESS_CHUNK;
	if (perfrec_compress__pending(w->zc) &&
	    (w->rec_raw || perfrec_compress__pending(w->zc) + h.size > PERFREC_COMPRESS_CHUNK)) {
		r = perfrec_compress__flush(w->zc, emit_compressed, w);
		if (r < 0)
			return r;
	}
	r = w->rec_raw ? raw_out(w, w->rec_hdr, sizeof(h)) : feed(w, w->rec_hdr, sizeof(h));
	if (r < 0)
		return r;
	w->rec_left = h.size - sizeof(h);
	return 0;
}

/*
 * One segment of a write, @left bytes at @p, record by record.  Returns 1
 * when it found the bytes are not records (see start_split_record()).
 */
static int compress_segment(struct perfrec_pdwriter *w, const unsigned char *p, size_t left)
{
	/*
	 * Whole records lying in this segment are fed as one run, not
	 * two calls per record: each feed costs zstd call overhead and
	 * thread-CPU-clock reads, which dominated -z at high rates
	 * (tests/bench/README.md).  The chunk rule is the same.
	 */
	const unsigned char *run = p;
	size_t run_len = 0;
	int r;

	while (left) {
		struct perf_event_header h;
		size_t n;

		if (!w->rec_left && !w->rec_hdr_len && left >= sizeof(h)) {
			memcpy(&h, p, sizeof(h));
			if (h.size >= sizeof(h) && h.size <= left) {
				r = whole_record(w, p, h.size, &run, &run_len);
				if (r < 0)
					return r;
				p += h.size;
				left -= h.size;
				continue;
			}
		}
		if (run_len) {
			r = feed(w, run, run_len);
			if (r < 0)
				return r;
			run_len = 0;
		}
		if (w->rec_left) {
			n = left < w->rec_left ? left : w->rec_left;
			r = w->rec_raw ? raw_out(w, p, n) : feed(w, p, n);
			if (r < 0)
				return r;
			w->rec_left -= n;
			p += n;
			left -= n;
			continue;
		}
		r = start_split_record(w, &p, &left);
		if (r != 0)
			return r;
	}
	return run_len ? feed(w, run, run_len) : 0;
}

/*
 * Compress whole records: before a record that would take the pending
 * COMPRESSED record past PERFREC_COMPRESS_CHUNK input bytes, close it.  A
 * record larger than a chunk (a sample with a DWARF stack copy of up to
 * 64 KiB) goes out uncompressed: perf 6.1 refuses a record that does not
 * fit in what one COMPRESSED record decompresses to, and a compressed
 * record of its own could outgrow 64 KiB on incompressible bytes.
 */
static int compress_records(struct perfrec_pdwriter *w, const struct iovec *iov, int iovcnt)
{
	int r;

	if (w->rec_unsynced)
		return perfrec_compress__feed(w->zc, iov, iovcnt, emit_compressed, w);
	for (int i = 0; i < iovcnt; i++) {
		r = compress_segment(w, iov[i].iov_base, iov[i].iov_len);
		if (r < 0)
			return r;
		if (r > 0) {
			/* Bytes, not records: the other segments as they are. */
			for (int k = i + 1; k < iovcnt; k++) {
				r = feed(w, iov[k].iov_base, iov[k].iov_len);
				if (r < 0)
					return r;
			}
			return 0;
		}
	}
	return 0;
}

static int flush_all(struct perfrec_pdwriter *w);

static const struct wattr *attr_of(struct perfrec_pdwriter *w, uint64_t id)
{
	const struct wattr *a = w->last_attr;

	for (size_t k = 0; a && k < a->nr_ids; k++)
		if (a->ids[k] == id)
			return a;
	for (size_t i = 0; i < w->nr_attrs; i++)
		for (size_t k = 0; k < w->attrs[i].nr_ids; k++)
			if (w->attrs[i].ids[k] == id)
				return w->last_attr = &w->attrs[i];
	return NULL;
}

/* Learn what a record says about build ids and sample times. */
static void track_record(struct perfrec_pdwriter *w, const struct perf_event_header *h)
{
	const struct wattr *a;
	struct perfrec_sample smp;
	uint64_t id;

	if (h->type != PERF_RECORD_SAMPLE) {
		track_sideband(&w->track, h);
		return;
	}
	if (perfrec_event__identifier(h, &id) < 0 || !(a = attr_of(w, id)) ||
	    perfrec_sample__parse(h, a->attr.sample_type, a->attr.read_format, &smp) < 0)
		return;
	track_sample(&w->track, h, smp.pid, a->attr.sample_type & PERF_SAMPLE_TIME ? smp.time : 0);
}

/* Copy @len bytes at the cursor (@seg, @off) of @iov into @dst, moving it. */
static bool iov_take(const struct iovec *iov, int iovcnt, int *seg, size_t *off, void *dst, size_t len)
{
	unsigned char *d = dst;

	while (len) {
		size_t n;

		while (*seg < iovcnt && *off == iov[*seg].iov_len) {
			(*seg)++;
			*off = 0;
		}
		if (*seg >= iovcnt)
			return false;
		n = iov[*seg].iov_len - *off;
		if (n > len)
			n = len;
		memcpy(d, (const unsigned char *)iov[*seg].iov_base + *off, n);
		d += n;
		len -= n;
		*off += n;
	}
	return true;
}

/*
 * Walk the records of one write, which holds whole records (a ring drain's
 * two segments, a synthesized record...).  A record within one segment is
 * looked at in place; one split between segments is gathered into
 * track_buf.  Bytes that do not parse as records end the walk: tracking is
 * best effort and never fails a write.
 */
static void track_iov(struct perfrec_pdwriter *w, const struct iovec *iov, int iovcnt)
{
	int seg = 0;
	size_t off = 0;

	for (;;) {
		struct perf_event_header h;
		int s2;
		size_t o2;

		while (seg < iovcnt && off == iov[seg].iov_len) {
			seg++;
			off = 0;
		}
		s2 = seg;
		o2 = off;
		if (!iov_take(iov, iovcnt, &s2, &o2, &h, sizeof(h)) || h.size < sizeof(h))
			return;
		if (iov[seg].iov_len - off >= h.size) {
			const unsigned char *p = (const unsigned char *)iov[seg].iov_base + off;

			/* Records are u64-aligned in a ring; a caller's buffer may not be. */
			if (((uintptr_t)p & 7) == 0) {
				track_record(w, (const struct perf_event_header *)p);
				off += h.size;
				continue;
			}
		}
		s2 = seg;
		o2 = off;
		if (!iov_take(iov, iovcnt, &s2, &o2, w->track_buf, h.size))
			return;
		track_record(w, (const struct perf_event_header *)w->track_buf);
		seg = s2;
		off = o2;
	}
}

int perfrec_pdwriter__track(struct perfrec_pdwriter *w)
{
	int r;

	if (!w)
		return -EINVAL;
	if (w->track.bids)
		return 0;
	if (w->data_started || w->finished)
		return -EBUSY;
	w->track_buf = malloc(PERFREC_RECORD_MAX + 1);
	if (!w->track_buf)
		return -ENOMEM;
	r = perfrec_buildid_table__new(&w->track.bids);
	if (r < 0) {
		free(w->track_buf);
		w->track_buf = NULL;
		return r;
	}
	return 0;
}

int perfrec_pdwriter__sample_times(const struct perfrec_pdwriter *w, uint64_t *ret_first,
				   uint64_t *ret_last)
{
	if (!w || !ret_first || !ret_last)
		return -EINVAL;
	if (!w->track.bids || !w->track.first_time)
		return -ENODATA;
	*ret_first = w->track.first_time;
	*ret_last = w->track.last_time;
	return 0;
}

int perfrec_pdwriter__writev(struct perfrec_pdwriter *w, const struct iovec *iov, int iovcnt)
{
	size_t total = 0;
	int r;

	if (!w || iovcnt < 0 || (iovcnt && !iov))
		return -EINVAL;
	if (w->finished)
		return -EINVAL;
	if (w->stream_err)
		return w->stream_err;
	for (int i = 0; i < iovcnt; i++) {
		if (iov[i].iov_len > SIZE_MAX - total)
			return -EOVERFLOW;
		total += iov[i].iov_len;
	}
	if (!total)
		return 0;
	r = begin_data(w);
	if (r < 0)
		return r;
	if (w->track.bids)
		track_iov(w, iov, iovcnt);
	r = w->zc ? compress_records(w, iov, iovcnt) : data_out(w, iov, iovcnt, total);
	/*
	 * A stream goes out at each FINISHED_ROUND (the end of a drain pass):
	 * live readers see every pass when it is complete, not when 256 KiB
	 * have gathered, and a reader that left is noticed within a pass.
	 */
	if (r == 0 && w->pipe && total == sizeof(struct perf_event_header) && iovcnt == 1) {
		struct perf_event_header h;

		memcpy(&h, iov[0].iov_base, sizeof(h));
		if (h.type == PERFREC_RECORD_FINISHED_ROUND)
			r = flush_all(w);
	}
	return r;
}

/* Close the pending COMPRESSED record, then write out the buffer. */
static int flush_all(struct perfrec_pdwriter *w)
{
	int r;

	if (w->zc) {
		r = perfrec_compress__flush(w->zc, emit_compressed, w);
		if (r < 0)
			return r;
	}
	return flush(w);
}

int perfrec_pdwriter__write(struct perfrec_pdwriter *w, const void *buf, size_t len)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	if (len && !buf)
		return -EINVAL;
	return perfrec_pdwriter__writev(w, &iov, 1);
}

uint64_t perfrec_pdwriter__data_size(const struct perfrec_pdwriter *w)
{
	return w ? w->committed + w->buf_len : 0;
}

int perfrec_pdwriter__checkpoint(struct perfrec_pdwriter *w)
{
	int r;

	if (!w)
		return -EINVAL;
	if (w->finished)
		return 0;
	if (w->stream_err)
		return w->stream_err;
	r = begin_data(w);
	if (r < 0)
		return r;
	r = flush_all(w);
	if (r < 0 || w->pipe)
		return r;
	/* Data before header: a header must never claim bytes not yet written. */
	r = sync_fd(w->fd, true);
	if (r < 0)
		return r;
	r = write_header(w, w->committed, NULL);
	if (r < 0)
		return r;
	return sync_fd(w->fd, true);
}

int perfrec_pdwriter__set_feature(struct perfrec_pdwriter *w, int feat, const void *data, size_t len)
{
	void *copy = NULL;

	if (!w || feat <= 0 || feat >= PERFREC_FEAT_BITS || (len && !data))
		return -EINVAL;
	if (w->finished)
		return -EBUSY;
	/* Same body again (the daemon re-adds host features at finish): nothing to resend. */
	if (w->feats[feat].set && w->feats[feat].len == len &&
	    (!len || !memcmp(w->feats[feat].data, data, len)))
		return 0;
	if (len) {
		copy = malloc(len);
		if (!copy)
			return -ENOMEM;
		memcpy(copy, data, len);
	}
	free(w->feats[feat].data);
	w->feats[feat].data = copy;
	w->feats[feat].len = len;
	w->feats[feat].set = true;
	w->feats[feat].sent = false;
	return 0;
}

/* HEADER_EVENT_DESC: nr, attr size, then per event attr, nr_ids, name, ids. */
static int build_event_desc(struct perfrec_pdwriter *w)
{
	struct featbuf fb;
	int r;

	featbuf_init(&fb);
	featbuf_u32(&fb, (uint32_t)w->nr_attrs);
	featbuf_u32(&fb, w->attr_sz);
	for (size_t i = 0; i < w->nr_attrs; i++) {
		featbuf_put(&fb, &w->attrs[i].attr, w->attr_sz);
		featbuf_u32(&fb, (uint32_t)w->attrs[i].nr_ids);
		featbuf_string(&fb, w->attrs[i].name);
		featbuf_put(&fb, w->attrs[i].ids, w->attrs[i].nr_ids * sizeof(uint64_t));
	}
	r = featbuf_err(&fb);
	if (r == 0)
		r = perfrec_pdwriter__set_feature(w, PERFREC_FEAT_EVENT_DESC, fb.buf, fb.len);
	featbuf_exit(&fb);
	return r;
}

/* What __track() learnt, unless the caller set it itself. */
static int tracked_features(struct perfrec_pdwriter *w)
{
	int r;

	if (!w->track.bids)
		return 0;
	if (!w->feats[PERFREC_FEAT_BUILD_ID].set) {
		r = perfrec_buildid_table__add_feature(w->track.bids, w);
		if (r < 0)
			return r;
	}
	if (w->track.first_time && !w->feats[PERFREC_FEAT_SAMPLE_TIME].set) {
		uint64_t t[2] = { w->track.first_time, w->track.last_time };

		r = perfrec_pdwriter__set_feature(w, PERFREC_FEAT_SAMPLE_TIME, t, sizeof(t));
		if (r < 0)
			return r;
	}
	return 0;
}

/* HEADER_COMPRESSED from what the compressor took in and gave out. */
static int set_compressed_feature(struct perfrec_pdwriter *w)
{
	struct perfrec_compressed_feature cf = {
		.version = 0, .type = PERFREC_COMP_ZSTD,
		.level = (uint32_t)perfrec_compress__level(w->zc),
		.mmap_len = PERFREC_COMPRESS_MMAP_LEN,
	};
	uint64_t in, out;

	perfrec_compress__counters(w->zc, &in, &out, NULL, NULL);
	cf.ratio = out ? (uint32_t)(in / out) : 0;
	return perfrec_pdwriter__set_feature(w, PERFREC_FEAT_COMPRESSED, &cf, sizeof(cf));
}

/*
 * The feature table and, after it, each set feature's body, 8-aligned; a
 * bit in @flags for each.  *ret_end is where the file ends.
 */
static int write_features(struct perfrec_pdwriter *w, uint64_t flags[4], uint64_t *ret_end)
{
	struct perfrec_file_section *table = NULL;
	uint64_t table_off, off;
	size_t nr = 0, k = 0;
	int r = 0;

	for (int f = 1; f < PERFREC_FEAT_BITS; f++)
		if (w->feats[f].set)
			nr++;

	/* perf looks for the table right after the data section: no padding. */
	table_off = w->data_offset + w->committed;
	off = table_off + nr * sizeof(*table);
	if (nr) {
		table = calloc(nr, sizeof(*table));
		if (!table)
			return -ENOMEM;
	}
	for (int f = 1; f < PERFREC_FEAT_BITS; f++) {
		if (!w->feats[f].set)
			continue;
		off = align8(off);
		table[k].offset = off;
		table[k].size = w->feats[f].len;
		if (w->feats[f].len) {
			r = pwrite_all(w->fd, w->feats[f].data, w->feats[f].len, off);
			if (r < 0)
				goto out;
		}
		off += w->feats[f].len;
		flags[f / 64] |= 1ULL << (f % 64);
		k++;
	}
	if (nr) {
		r = pwrite_all(w->fd, table, nr * sizeof(*table), table_off);
		if (r < 0)
			goto out;
	}
	*ret_end = off;
out:
	free(table);
	return r;
}

int perfrec_pdwriter__finish(struct perfrec_pdwriter *w)
{
	uint64_t flags[4] = {0}, end;
	struct stat st;
	int r;

	if (!w)
		return -EINVAL;
	if (w->finished)
		return 0;
	if (w->stream_err)
		return w->stream_err;
	r = begin_data(w);
	if (r < 0)
		return r;
	r = flush_all(w);
	if (r < 0)
		return r;
	r = tracked_features(w);
	if (r < 0)
		return r;
	if (w->pipe) {
		/* Late features trail the data; perf takes them wherever they come. */
		r = send_features(w);
		if (r == 0)
			w->finished = true;
		return r;
	}
	if (w->zc && !w->feats[PERFREC_FEAT_COMPRESSED].set) {
		r = set_compressed_feature(w);
		if (r < 0)
			return r;
	}
	if (w->nr_attrs && !w->feats[PERFREC_FEAT_EVENT_DESC].set) {
		r = build_event_desc(w);
		if (r < 0)
			return r;
	}
	r = write_features(w, flags, &end);
	if (r < 0)
		return r;
	/*
	 * Alignment gaps between bodies were never written: on a regular file
	 * they read as zeros.  Cut whatever a failed earlier write left past
	 * the end.
	 */
	if (fstat(w->fd, &st) == 0 && S_ISREG(st.st_mode) && ftruncate(w->fd, (off_t)end) < 0)
		return -errno;
	r = sync_fd(w->fd, true);
	if (r < 0)
		return r;
	r = write_header(w, w->committed, flags);
	if (r < 0)
		return r;
	r = sync_fd(w->fd, false);
	if (r < 0)
		return r;
	w->finished = true;
	return r;
}

int perfrec_pdwriter__publish(struct perfrec_pdwriter *w)
{
	int r;

	if (!w || w->pipe || !w->path || !w->tmp_path)
		return -EINVAL;
	if (!w->finished)
		return -EBUSY;
	if (w->published)
		return 0;
	r = rename_durably(w->tmp_path, w->path);
	/* Renamed even when the directory's fsync failed: published either way. */
	if (r == 0 || access(w->tmp_path, F_OK) < 0)
		w->published = true;
	return r;
}

void perfrec_pdwriter__free(struct perfrec_pdwriter *w, bool discard)
{
	if (!w)
		return;
	if (w->tmp_path && !w->published && discard)
		unlink(w->tmp_path);
	if (w->owns_fd && w->fd >= 0)
		close(w->fd);
	for (size_t i = 0; i < w->nr_attrs; i++) {
		free(w->attrs[i].ids);
		free(w->attrs[i].name);
	}
	free(w->attrs);
	for (int f = 0; f < PERFREC_FEAT_BITS; f++)
		free(w->feats[f].data);
	perfrec_compress__free(w->zc);
	perfrec_buildid_table__free(w->track.bids);
	free(w->track_buf);
	free(w->buf);
	free(w->path);
	free(w->tmp_path);
	free(w);
}

int perfrec_pdwriter__fd(const struct perfrec_pdwriter *w)
{
	return w && w->fd >= 0 ? w->fd : -EBADF;
}

int perfrec_pdwriter__set_compress(struct perfrec_pdwriter *w, int level)
{
	struct perfrec_compress *zc = NULL;
	int r;

	if (!w || level < 0 || level > 19)
		return -EINVAL;
	if (w->data_started || w->finished)
		return -EBUSY;
	if (level) {
		r = perfrec_compress__new(level, &zc);
		if (r < 0)
			return r;
	}
	perfrec_compress__free(w->zc);
	w->zc = zc;
	return 0;
}

void perfrec_pdwriter__compress_stats(const struct perfrec_pdwriter *w,
				      struct perfrec_pdwriter_compress_stats *ret_stats)
{
	if (!ret_stats)
		return;
	memset(ret_stats, 0, sizeof(*ret_stats));
	if (w)
		perfrec_compress__counters(w->zc, &ret_stats->bytes_in, &ret_stats->bytes_out,
					   &ret_stats->nr_frames, &ret_stats->cpu_ns);
}

int perfrec_pdwriter__new_pipe(int fd, const struct perfrec_pdwriter_pipe_opts *opts,
			       struct perfrec_pdwriter **ret_writer)
{
	perfrec_pdwriter_sink_fn sink = PERFREC_OPTS_GET(opts, sink, NULL);
	struct perfrec_pdwriter *w;
	int r;

	if ((!sink && fd < 0) || !ret_writer || !PERFREC_OPTS_VALID(opts, struct perfrec_pdwriter_pipe_opts))
		return -EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->pipe = true;
	w->fd = sink ? -1 : fd;
	w->sink = sink;
	w->sink_ctx = PERFREC_OPTS_GET(opts, sink_ctx, NULL);
	w->buf = malloc(WBUF_SIZE);
	if (!w->buf) {
		r = -ENOMEM;
		goto fail;
	}
	r = perfrec_pdwriter__set_compress(w, PERFREC_OPTS_GET(opts, compress_level, 0));
	if (r < 0)
		goto fail;
	w->owns_fd = !sink && PERFREC_OPTS_GET(opts, owns_fd, false);
	*ret_writer = w;
	return 0;
fail:
	w->fd = -1;
	perfrec_pdwriter__free(w, false);
	return r;
}

/*
 * Here rather than in buildid.c, which builds the feature's body and
 * knows nothing of writers: the table is noted by the writer's tracking
 * (above), and buildid.c calling back into the writer made the two files
 * a circle.
 */
int perfrec_buildid_table__add_feature(struct perfrec_buildid_table *t, struct perfrec_pdwriter *w)
{
	struct featbuf fb;
	int r;

	if (!t || !w)
		return -EINVAL;
	featbuf_init(&fb);
	r = buildid_table_build_feature(t, &fb);
	if (r > 0)
		r = perfrec_pdwriter__set_feature(w, PERFREC_FEAT_BUILD_ID, fb.buf, fb.len);
	featbuf_exit(&fb);
	return r < 0 ? r : 0;
}
