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
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <perfrec/pdwriter.h>

#include "featbuf.h"

#define WBUF_SIZE (256u * 1024)
/* Writes at least this large bypass the buffer (one copy fewer). */
#define DIRECT_MIN (WBUF_SIZE / 2)

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
	} feats[PERFREC_FEAT_BITS];
};

static uint64_t align8(uint64_t v)
{
	return (v + 7) & ~(uint64_t)7;
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
		while (n > 0 && iovcnt > 0) {
			if ((size_t)n >= iov->iov_len) {
				n -= (ssize_t)iov->iov_len;
				iov++;
				iovcnt--;
			} else {
				iov->iov_base = (char *)iov->iov_base + n;
				iov->iov_len -= (size_t)n;
				n = 0;
			}
		}
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
	int r;

	if (!w->buf_len)
		return 0;
	r = pwrite_all(w->fd, w->buf, w->buf_len, w->data_offset + w->committed);
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

int perfrec_pdwriter__writev(struct perfrec_pdwriter *w, const struct iovec *iov, int iovcnt)
{
	struct iovec small[16], *copy;
	size_t total = 0;
	int r;

	if (!w || iovcnt < 0 || (iovcnt && !iov))
		return -EINVAL;
	if (w->finished)
		return -EINVAL;
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

	if (total <= WBUF_SIZE - w->buf_len) {
		for (int i = 0; i < iovcnt; i++) {
			memcpy(w->buf + w->buf_len, iov[i].iov_base, iov[i].iov_len);
			w->buf_len += iov[i].iov_len;
		}
		return 0;
	}
	r = flush(w);
	if (r < 0)
		return r;
	if (total < DIRECT_MIN) {
		for (int i = 0; i < iovcnt; i++) {
			memcpy(w->buf + w->buf_len, iov[i].iov_base, iov[i].iov_len);
			w->buf_len += iov[i].iov_len;
		}
		return 0;
	}
	/* Large: straight from the caller's memory (the mapped ring). */
	if ((size_t)iovcnt <= sizeof(small) / sizeof(small[0])) {
		copy = small;
	} else {
		copy = malloc((size_t)iovcnt * sizeof(*copy));
		if (!copy)
			return -ENOMEM;
	}
	memcpy(copy, iov, (size_t)iovcnt * sizeof(*copy));
	r = pwritev_all(w->fd, copy, iovcnt, w->data_offset + w->committed);
	if (copy != small)
		free(copy);
	if (r < 0)
		return r;
	w->committed += total;
	return 0;
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
	r = begin_data(w);
	if (r < 0)
		return r;
	r = flush(w);
	if (r < 0)
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

int perfrec_pdwriter__finish(struct perfrec_pdwriter *w)
{
	struct perfrec_file_section *table = NULL;
	uint64_t flags[4] = {0}, table_off, off;
	size_t nr = 0, k = 0;
	int r;

	if (!w)
		return -EINVAL;
	if (w->finished)
		return 0;
	r = begin_data(w);
	if (r < 0)
		return r;
	r = flush(w);
	if (r < 0)
		return r;
	if (w->nr_attrs && !w->feats[PERFREC_FEAT_EVENT_DESC].set) {
		r = build_event_desc(w);
		if (r < 0)
			return r;
	}
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
	/*
	 * Alignment gaps between bodies were never written: on a regular file
	 * they read as zeros.  Cut whatever a failed earlier write left past
	 * the end.
	 */
	{
		struct stat st;

		if (fstat(w->fd, &st) == 0 && S_ISREG(st.st_mode) && ftruncate(w->fd, (off_t)off) < 0) {
			r = -errno;
			goto out;
		}
	}
	r = sync_fd(w->fd, true);
	if (r < 0)
		goto out;
	r = write_header(w, w->committed, flags);
	if (r < 0)
		goto out;
	r = sync_fd(w->fd, false);
	if (r < 0)
		goto out;
	w->finished = true;
out:
	free(table);
	return r;
}

int perfrec_pdwriter__publish(struct perfrec_pdwriter *w)
{
	char *dir_copy;
	int dfd, r = 0;

	if (!w || !w->path || !w->tmp_path)
		return -EINVAL;
	if (!w->finished)
		return -EBUSY;
	if (w->published)
		return 0;
	if (rename(w->tmp_path, w->path) < 0)
		return -errno;
	w->published = true;
	/* The rename is durable only once the directory entry is. */
	dir_copy = strdup(w->path);
	if (!dir_copy)
		return -ENOMEM;
	dfd = open(dirname(dir_copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		r = -errno;
	} else {
		if (fsync(dfd) < 0)
			r = -errno;
		close(dfd);
	}
	free(dir_copy);
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
	free(w->buf);
	free(w->path);
	free(w->tmp_path);
	free(w);
}

int perfrec_pdwriter__fd(const struct perfrec_pdwriter *w)
{
	return w ? w->fd : -EBADF;
}
