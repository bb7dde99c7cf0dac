// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Recorded files on a wall-clock time line (window.h).  Placing a file
 * needs its clock pair: a published file has HEADER_CLOCK_DATA; a file
 * still being written (NAME.data.tmp) gets its features only when it is
 * finished, so its samples are placed with the clocks as they read now,
 * which holds on the host and boot that is writing it (a .tmp whose
 * samples lie ahead of the sample clock is from an earlier boot, and is
 * refused rather than misplaced).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <ini.h>
#include <json-c/json.h>
#include <perfrec/event.h>
#include <perfrec/pdwriter.h>
#include <perfrec/timespec.h>

#include "window.h"

#define DEFAULT_CONFIG "/etc/perfrecd/perfrecd.conf"
#define DEFAULT_DIR "/var/lib/perfrecd"

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

int window_record_time(const struct perfrec_pdreader *r, const struct perf_event_header *rec, uint64_t *ret_time,
		       uint32_t *ret_cpu)
{
	const struct perfrec_pdreader_attr *a = NULL;
	uint64_t id;

	if (rec->type >= PERFREC_RECORD_HEADER_ATTR)
		return 0;
	if (perfrec_event__identifier(rec, &id) == 0)
		a = perfrec_pdreader__attr_by_id(r, id);
	if (!a && perfrec_pdreader__nr_attrs(r) == 1)
		a = perfrec_pdreader__attr(r, 0);
	if (!a || !(a->attr.sample_type & PERF_SAMPLE_TIME))
		return 0;
	if (rec->type == PERF_RECORD_SAMPLE) {
		struct perfrec_sample s;

		if (perfrec_sample__parse(rec, a->attr.sample_type, a->attr.read_format, &s) < 0)
			return 0;
		*ret_time = s.time;
		if (ret_cpu)
			*ret_cpu = (a->attr.sample_type & PERF_SAMPLE_CPU) ? s.cpu : UINT32_MAX;
		return 1;
	} else {
		struct perfrec_sample_id sid;

		if (!a->attr.sample_id_all || perfrec_sample_id__parse(rec, a->attr.sample_type, &sid) < 0)
			return 0;
		*ret_time = sid.time;
		if (ret_cpu)
			*ret_cpu = (a->attr.sample_type & PERF_SAMPLE_CPU) ? sid.cpu : UINT32_MAX;
		return 1;
	}
}

uint64_t window_record_lost(const struct perf_event_header *h)
{
	uint64_t n = 0;

	/* LOST: header, id, lost; LOST_SAMPLES: header, lost. */
	if (h->type == PERF_RECORD_LOST && h->size >= 24)
		memcpy(&n, (const char *)h + 16, 8);
	else if (h->type == PERF_RECORD_LOST_SAMPLES && h->size >= 16)
		memcpy(&n, (const char *)h + 8, 8);
	return n;
}

static int set_error(struct window_file *f, int r, const char *fmt, const char *detail)
{
	if (asprintf(&f->error, fmt, detail) < 0)
		f->error = NULL;
	return r;
}

/* The manifest's start/end, samples, lost and recovered flag; 0 if read. */
static int read_manifest(struct window_file *f, uint64_t *ret_end)
{
	char *jp = NULL;
	json_object *root, *v;
	uint64_t end = 0;
	char err[128];

	if (f->in_progress || asprintf(&jp, "%s.json", f->path) < 0)
		return -ENOENT;
	root = json_object_from_file(jp);
	free(jp);
	if (!root)
		return -ENOENT;
	if (!json_object_object_get_ex(root, "end", &v) || !json_object_get_string(v) ||
	    perfrec_timespec__parse(json_object_get_string(v), 0, &end, err, sizeof(err)) < 0) {
		json_object_put(root);
		return -EBADMSG;
	}
	if (json_object_object_get_ex(root, "samples", &v))
		f->samples = (uint64_t)json_object_get_int64(v);
	if (json_object_object_get_ex(root, "lost", &v))
		f->lost = (uint64_t)json_object_get_int64(v);
	if (json_object_object_get_ex(root, "recovered", &v) && json_object_get_boolean(v))
		f->mode = "recovered";
	json_object_put(root);
	*ret_end = end;
	return 0;
}

/* Walk the records: samples, lost, the last sample's time; compression seen raw. */
static int walk(struct perfrec_pdreader *rd, struct window_file *f, uint64_t *ret_last, bool *ret_has)
{
	const struct perf_event_header *h;
	uint64_t off, t;
	int r;

	*ret_has = false;
	while ((r = perfrec_pdreader__next(rd, &h, &off)) > 0) {
		if (h->type == PERF_RECORD_SAMPLE) {
			f->samples++;
			if (window_record_time(rd, h, &t, NULL) > 0 && (!*ret_has || t > *ret_last)) {
				*ret_last = t;
				*ret_has = true;
			}
		} else {
			f->lost += window_record_lost(h);
		}
	}
	return r;
}

/* What window_name_stamp_ns() reads back. */
void window_name_stamp(uint64_t wall_ns, char *buf, size_t sz)
{
	time_t secs = (time_t)(wall_ns / 1000000000ULL);
	struct tm tm;
	char s[32];

	gmtime_r(&secs, &tm);
	strftime(s, sizeof(s), "%Y%m%dT%H%M%S", &tm);
	snprintf(buf, sz, "-%s.%03uZ-", s, (unsigned)(wall_ns / 1000000 % 1000));
}

/* The UTC start perfrecd writes into a name ("-20261123T140300.250Z-"), or 0. */
uint64_t window_name_stamp_ns(const char *path)
{
	const char *b = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;

	for (const char *p = strchr(b, '-'); p; p = strchr(p + 1, '-')) {
		struct tm tm = { 0 };
		unsigned ms;
		char z;
		int n = 0;

		if (sscanf(p, "-%4d%2d%2dT%2d%2d%2d.%3u%c-%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
			   &tm.tm_min, &tm.tm_sec, &ms, &z, &n) == 8 && z == 'Z' && n > 0) {
			time_t t;

			tm.tm_year -= 1900;
			tm.tm_mon -= 1;
			t = timegm(&tm);
			return t > 0 ? (uint64_t)t * 1000000000ULL + ms * 1000000ULL : 0;
		}
	}
	return 0;
}

/* A .tmp's clock pair, read now on the clock its attrs name. */
static int clock_now(struct perfrec_pdreader *rd, struct perfrec_clockdata *ret)
{
	const struct perfrec_pdreader_attr *a = perfrec_pdreader__nr_attrs(rd) ? perfrec_pdreader__attr(rd, 0) : NULL;
	clockid_t id = a && a->attr.use_clockid ? (clockid_t)a->attr.clockid : CLOCK_MONOTONIC;
	struct timespec w, c;

	if (clock_gettime(id, &c) < 0 || clock_gettime(CLOCK_REALTIME, &w) < 0)
		return -errno;
	ret->clockid = (uint32_t)id;
	ret->wall_ns = (uint64_t)w.tv_sec * 1000000000ULL + (uint64_t)w.tv_nsec;
	ret->clock_ns = (uint64_t)c.tv_sec * 1000000000ULL + (uint64_t)c.tv_nsec;
	return 0;
}

static bool has_raw_compressed(const char *path)
{
	struct perfrec_pdreader_opts o = { .sz = sizeof(o), .salvage = true, .raw_compressed = true };
	const struct perf_event_header *h;
	struct perfrec_pdreader *rd;
	bool found = false;
	uint64_t off;

	if (perfrec_pdreader__open(path, &o, &rd) < 0)
		return false;
	for (int i = 0; i < 256 && !found && perfrec_pdreader__next(rd, &h, &off) > 0; i++)
		found = h->type == PERFREC_RECORD_COMPRESSED;
	perfrec_pdreader__free(rd);
	return found;
}

/*
 * Whether a live writer holds the file open as @fd: perfrec_pdwriter__create()
 * keeps an exclusive flock on a .tmp from its creation until it is
 * published, and the kernel drops it when the writer dies, as
 * perfrec_pdwriter__in_use() and so `perfrecctl recover` judge it.
 */
static bool held_by_writer(int fd)
{
	if (flock(fd, LOCK_SH | LOCK_NB) < 0)
		return errno == EWOULDBLOCK;
	(void)flock(fd, LOCK_UN);
	return false;
}

bool window_file_held(const struct window_file *f)
{
	return f->fd >= 0 && held_by_writer(f->fd);
}

const char *window_file_source(const struct window_file *f, char *buf, size_t sz)
{
	if (f->fd < 0)
		return f->path;
	snprintf(buf, sz, "/proc/self/fd/%d", f->fd);
	return buf;
}

/* Where @f's span starts when it has no clock data of its own: its first record, else its name. */
static void place_in_progress(struct window_file *f, struct perfrec_pdreader *rd)
{
	const struct perf_event_header *h;
	uint64_t t, off;

	f->start_wall = 0;
	perfrec_pdreader__rewind(rd);
	while (perfrec_pdreader__next(rd, &h, &off) > 0)
		if (window_record_time(rd, h, &t, NULL) > 0) {
			f->start_wall = perfrec_clockdata__to_wall(&f->clock, t);
			break;
		}
	if (!f->start_wall)
		f->start_wall = window_name_stamp_ns(f->path);
	if (!f->start_wall || f->start_wall > f->clock.wall_ns)
		f->start_wall = f->clock.wall_ns;
}

/* The header, attrs and features of @rd into @f: mode, spans, compression. */
static int load_header(struct window_file *f, struct perfrec_pdreader *rd, const char *src)
{
	const void *d;
	size_t len;
	uint64_t off;

	if (perfrec_pdreader__header(rd)->magic != PERFREC_MAGIC2 || perfrec_pdreader__nr_attrs(rd) == 0) {
		const char *e = perfrec_pdreader__error(rd, &off);

		return set_error(f, -EBADMSG, "not perf data: %s", e[0] ? e : "no events");
	}
	if (perfrec_pdreader__feature(rd, PERFREC_FEAT_SPANS, &d, &len) == 0) {
		const struct perfrec_spans_feature *sf = d;

		f->mode = "flight";
		if (len >= sizeof(*sf) && sf->nr <= (len - sizeof(*sf)) / sizeof(struct perfrec_cpu_span) && sf->nr) {
			f->spans = malloc(sf->nr * sizeof(*f->spans));
			if (f->spans) {
				memcpy(f->spans, sf + 1, sf->nr * sizeof(*f->spans));
				f->nr_spans = sf->nr;
			}
		}
	}
	if (strstr(f->path, "-recovered"))
		f->mode = "recovered";
	f->compressed = perfrec_pdreader__feature(rd, PERFREC_FEAT_COMPRESSED, &d, &len) == 0 ||
			(f->in_progress && has_raw_compressed(src));
	return 0;
}

/*
 * A .tmp its writer holds but has not written a header into yet (it was
 * listed the moment it was created): being written, empty, placed by its
 * name.  False for anything else.
 */
static bool just_begun(struct window_file *f)
{
	if (!f->in_progress || f->fd < 0 || (!f->being_written && !(f->being_written = held_by_writer(f->fd))))
		return false;
	free(f->spans);
	f->spans = NULL;
	f->nr_spans = 0;
	f->start_wall = f->end_wall = window_name_stamp_ns(f->path);
	if (!f->start_wall) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		f->start_wall = f->end_wall = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	}
	return true;
}

/*
 * Read @f (path and fd set) from @src.  A .tmp's lock is looked at before
 * and after the read: held at either time, its writer is alive and the
 * file may have grown while it was walked.  A .tmp without clock data is
 * placed with the clocks as they read after the walk, when nothing it
 * holds can be newer; only then do samples ahead of that clock say the
 * file is from an earlier boot, and only when no writer holds it.
 */
static int load(struct window_file *f, const char *src)
{
	struct perfrec_pdreader_opts o = { .sz = sizeof(o), .salvage = f->in_progress };
	struct perfrec_pdreader *rd = NULL;
	uint64_t end = 0, last = 0, off;
	bool has_last, clock_later = false;
	int r;

	f->being_written = f->in_progress && f->fd >= 0 && held_by_writer(f->fd);
	r = perfrec_pdreader__open(src, &o, &rd);
	if (r < 0)
		return just_begun(f) ? 0 : set_error(f, r, "cannot read: %s", strerror(-r));
	r = load_header(f, rd, src);
	if (r < 0) {
		if (just_begun(f)) {
			free(f->error);
			f->error = NULL;
			r = 0;
		}
		goto out;
	}
	r = perfrec_clockdata__from_reader(rd, &f->clock);
	if (r == -ENOENT && f->in_progress) {
		clock_later = true;
		r = 0;
	}
	if (r < 0) {
		r = set_error(f, r, "%s", r == -ENOENT ? "no HEADER_CLOCK_DATA: its samples cannot be placed in wall-clock time"
						     : "its HEADER_CLOCK_DATA is malformed");
		goto out;
	}
	f->start_wall = f->clock.wall_ns;
	if (read_manifest(f, &end) == 0) {
		f->has_manifest = true;
		f->end_wall = end > f->start_wall ? end : f->start_wall;
		goto out;
	}
	r = walk(rd, f, &last, &has_last);
	if (r < 0) {
		const char *e = perfrec_pdreader__error(rd, &off);

		r = set_error(f, r, "damaged: %s", e[0] ? e : strerror(-r));
		goto out;
	}
	if (f->in_progress && f->fd >= 0 && !f->being_written)
		f->being_written = held_by_writer(f->fd);
	if (clock_later) {
		r = clock_now(rd, &f->clock);
		if (r < 0) {
			r = set_error(f, r, "cannot read the clocks: %s", strerror(-r));
			goto out;
		}
		/* Placed from now back: a leftover's data cannot lie ahead of now. */
		if (!f->being_written && has_last && last > f->clock.clock_ns) {
			r = set_error(f, -ESTALE, "%s", "left by an earlier boot (its sample times lie ahead of this "
					       "boot's clock): recover it with perfrecctl recover");
			goto out;
		}
		place_in_progress(f, rd);
	}
	f->end_wall = has_last ? perfrec_clockdata__to_wall(&f->clock, last) : f->start_wall;
	if (f->end_wall < f->start_wall)
		f->end_wall = f->start_wall;
	r = 0;
out:
	perfrec_pdreader__free(rd);
	return r;
}

/* @f as opened at @fd (taken over, kept in f->fd) under @path (taken over). */
static int load_fd(struct window_file *f, char *path, int fd)
{
	struct stat st;
	char buf[32];

	memset(f, 0, sizeof(*f));
	f->path = path;
	f->fd = fd;
	f->mode = "continuous";
	f->in_progress = ends_with(path, ".tmp");
	if (fstat(fd, &st) < 0)
		return set_error(f, -errno, "cannot read: %s", strerror(errno));
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	f->size = (uint64_t)st.st_size;
	if (!S_ISREG(st.st_mode))
		return set_error(f, -EINVAL, "%s", "not a regular file");
	return load(f, window_file_source(f, buf, sizeof(buf)));
}

int window_file_load(struct window_file *f, char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK), r;

	if (fd < 0) {
		memset(f, 0, sizeof(*f));
		f->path = path;
		f->fd = -1;
		f->mode = "continuous";
		f->in_progress = ends_with(path, ".tmp");
		return set_error(f, -errno, "cannot read: %s", strerror(errno));
	}
	r = load_fd(f, path, fd);
	/* The caller asked for a path: nothing held. */
	close(f->fd);
	f->fd = -1;
	return r;
}

void window_file_exit(struct window_file *f)
{
	free(f->path);
	free(f->error);
	free(f->label);
	free(f->spans);
	if (f->fd >= 0)
		close(f->fd);
	memset(f, 0, sizeof(*f));
	f->fd = -1;
}

bool window_cpu_short(const struct window_file *f, size_t i)
{
	const struct perfrec_cpu_span *s = &f->spans[i];
	uint64_t lo = UINT64_MAX, hi = 0;

	for (size_t k = 0; k < f->nr_spans; k++) {
		if (!f->spans[k].samples)
			continue;
		if (f->spans[k].first_time < lo)
			lo = f->spans[k].first_time;
		if (f->spans[k].last_time > hi)
			hi = f->spans[k].last_time;
	}
	if (!s->samples)
		return hi > lo;
	return s->first_time > lo + WINDOW_GAP_NS || s->last_time + WINDOW_GAP_NS < hi;
}

void window_files_free(struct window_file *files, size_t n)
{
	for (size_t i = 0; files && i < n; i++)
		window_file_exit(&files[i]);
	free(files);
}

static int cmp_file(const void *a, const void *b)
{
	const struct window_file *x = a, *y = b;

	if (!!x->error != !!y->error)
		return x->error ? 1 : -1;
	if (x->start_wall != y->start_wall)
		return x->start_wall < y->start_wall ? -1 : 1;
	return strcmp(x->path, y->path);
}

void window_files_sort(struct window_file *files, size_t n)
{
	if (n)
		qsort(files, n, sizeof(*files), cmp_file);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int push(char ***v, size_t *n, size_t *cap, char *s)
{
	if (!s)
		return -ENOMEM;
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 16;
		char **nv = realloc(*v, c * sizeof(**v));

		if (!nv) {
			free(s);
			return -ENOMEM;
		}
		*v = nv;
		*cap = c;
	}
	(*v)[(*n)++] = s;
	return 0;
}

/* A listing being taken. */
struct builder {
	const struct window_scan_opts *o;
	struct window_file *files;
	size_t nr, cap;
	struct window_gone *gone;
	size_t nr_gone, cap_gone;
};

static struct window_file *new_file(struct builder *b)
{
	if (b->nr == b->cap) {
		size_t c = b->cap ? b->cap * 2 : 16;
		struct window_file *v = realloc(b->files, c * sizeof(*v));

		if (!v)
			return NULL;
		b->files = v;
		b->cap = c;
	}
	memset(&b->files[b->nr], 0, sizeof(b->files[b->nr]));
	b->files[b->nr].fd = -1;
	return &b->files[b->nr++];
}

static int add_gone(struct builder *b, char *path)
{
	if (b->nr_gone == b->cap_gone) {
		size_t c = b->cap_gone ? b->cap_gone * 2 : 4;
		struct window_gone *v = realloc(b->gone, c * sizeof(*v));

		if (!v) {
			free(path);
			return -ENOMEM;
		}
		b->gone = v;
		b->cap_gone = c;
	}
	b->gone[b->nr_gone].path = path;
	b->gone[b->nr_gone++].start_wall = window_name_stamp_ns(path);
	return 0;
}

static bool known_path(const struct builder *b, const char *path)
{
	for (size_t i = 0; i < b->nr; i++)
		if (!strcmp(b->files[i].path, path))
			return true;
	for (size_t i = 0; i < b->nr_gone; i++)
		if (!strcmp(b->gone[i].path, path))
			return true;
	return false;
}

static struct window_file *by_inode(struct builder *b, const struct stat *st)
{
	for (size_t i = 0; i < b->nr; i++)
		if (!b->files[i].error && b->files[i].dev == st->st_dev && b->files[i].ino == st->st_ino)
			return &b->files[i];
	return NULL;
}

/* Whether the listing keeps @f open: it may hold data of the window. */
static bool keep_open(const struct window_scan_opts *o, const struct window_file *f)
{
	return o && o->keep && !f->error &&
	       (f->in_progress || (f->start_wall < o->keep_to && f->end_wall >= o->keep_from));
}

static int open_name(int dfd, const char *name, bool nofollow)
{
	return openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NONBLOCK | (nofollow ? O_NOFOLLOW : 0));
}

/* "NAME.data.tmp" -> "NAME.data". */
static char *final_name(const char *name)
{
	return ends_with(name, ".tmp") ? strndup(name, strlen(name) - 4) : NULL;
}

static int take_name(struct builder *b, int dfd, const char *dir, const char *name, int depth);

/*
 * A .tmp no writer holds may have been published (renamed) just before
 * its lock was looked at: when its name no longer leads to it, it is
 * taken again under its final name, finished.
 */
static int settle_unheld(struct builder *b, struct window_file *f, int dfd, const char *dir, const char *name,
			 int depth)
{
	struct stat st;
	char *final;
	int r = 0;

	if (!f->in_progress || f->being_written || depth > 0 ||
	    (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_dev == f->dev && st.st_ino == f->ino))
		return 0;
	final = final_name(name);
	if (!final)
		return -ENOMEM;
	if (fstatat(dfd, final, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_dev == f->dev && st.st_ino == f->ino)
		r = take_name(b, dfd, dir, final, depth + 1);
	free(final);
	return r < 0 ? r : 0;
}

/*
 * Open @name of @dir (open as @dfd; @dir NULL: @name is a path of its
 * own) and read it into the listing.  A .tmp gone since it was listed is
 * looked for under its final name; a file the listing holds already (by
 * inode) is taken again only when it was listed as a .tmp and has been
 * published since.  1 if the listing changed, 0 if not, -errno.
 */
static int take_name(struct builder *b, int dfd, const char *dir, const char *name, int depth)
{
	char *final = NULL, *path = NULL;
	struct window_file *f;
	struct stat st;
	int fd = open_name(dfd, name, dir != NULL), err = errno, r;
	size_t idx;

	if (fd < 0 && err == ENOENT && (final = final_name(name))) {
		fd = open_name(dfd, final, dir != NULL);
		err = errno;
		name = final;
	}
	path = dir ? (asprintf(&path, "%s/%s", dir, name) < 0 ? NULL : path) : strdup(name);
	if (!path) {
		r = -ENOMEM;
		goto out;
	}
	if (fd < 0 && err == ENOENT) {
		r = dir ? add_gone(b, path) : -ENOENT;
		path = dir ? NULL : path;
		goto out;
	}
	if (fd >= 0 && fstat(fd, &st) == 0 && (f = by_inode(b, &st))) {
		r = 0;
		if (!strcmp(f->path, path) || !f->in_progress || ends_with(path, ".tmp"))
			goto out;
		window_file_exit(f);
	} else if (!(f = new_file(b))) {
		r = -ENOMEM;
		goto out;
	}
	if (fd < 0) {
		f->path = path;
		f->mode = "continuous";
		f->in_progress = ends_with(path, ".tmp");
		set_error(f, -err, "cannot read: %s", strerror(err));
		path = NULL;
		r = 1;
		goto out;
	}
	idx = (size_t)(f - b->files);
	load_fd(f, path, fd);
	path = NULL;
	fd = -1;
	r = dir ? settle_unheld(b, f, dfd, dir, name, depth) : 0;
	/* What cannot hold data of the window is not kept open (the array may have moved). */
	f = &b->files[idx];
	if (f->fd >= 0 && !keep_open(b->o, f)) {
		close(f->fd);
		f->fd = -1;
	}
	r = r < 0 ? r : 1;
out:
	if (fd >= 0)
		close(fd);
	free(path);
	free(final);
	return r;
}

int window_list_name(struct window_listing *l, int dfd, const char *dir, const char *name)
{
	struct builder b = { .files = l->files, .nr = l->nr, .cap = l->nr, .gone = l->gone, .nr_gone = l->nr_gone,
			     .cap_gone = l->nr_gone };
	int r;

	r = take_name(&b, dfd, dir, name, 0);
	l->files = b.files;
	l->nr = b.nr;
	l->gone = b.gone;
	l->nr_gone = b.nr_gone;
	return r;
}

/* The names of recorded files in @dfd: NAME.data and NAME.data.tmp, sorted. */
static int read_names(int dfd, char ***ret, size_t *ret_n)
{
	int fd = dup(dfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	char **v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	int r = 0;

	if (!d) {
		r = -errno;
		if (fd >= 0)
			close(fd);
		return r;
	}
	rewinddir(d);
	while (r == 0 && (de = readdir(d))) {
		if (de->d_name[0] == '.' || strstr(de->d_name, ".recovering-") ||
		    !(ends_with(de->d_name, ".data") || ends_with(de->d_name, ".data.tmp")))
			continue;
		r = push(&v, &n, &cap, strdup(de->d_name));
	}
	closedir(d);
	if (n)
		qsort(v, n, sizeof(*v), cmp_str);
	*ret = v;
	*ret_n = n;
	return r;
}

/*
 * Readings of a directory until one finds nothing new: a file renamed
 * while the directory is read may be in neither name's place when readdir
 * passes it.  Rotations are seconds apart; a reading takes milliseconds.
 */
#define LIST_READINGS 8

static int list_dir(struct builder *b, const char *dir)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), r = 0;

	if (dfd < 0)
		return -errno;
	for (int pass = 0; r >= 0 && pass < LIST_READINGS; pass++) {
		char **names = NULL;
		size_t n = 0;
		bool changed = false;

		r = read_names(dfd, &names, &n);
		for (size_t i = 0; r >= 0 && i < n; i++) {
			char *path;

			if (asprintf(&path, "%s/%s", dir, names[i]) < 0) {
				r = -ENOMEM;
				break;
			}
			if (!known_path(b, path)) {
				r = take_name(b, dfd, dir, names[i], 0);
				changed |= r > 0;
			}
			free(path);
		}
		for (size_t i = 0; i < n; i++)
			free(names[i]);
		free(names);
		if (pass > 0 && !changed)
			break;
	}
	close(dfd);
	return r < 0 ? r : 0;
}

void window_listing_free(struct window_listing *l)
{
	window_files_free(l->files, l->nr);
	for (size_t i = 0; i < l->nr_gone; i++)
		free(l->gone[i].path);
	free(l->gone);
	memset(l, 0, sizeof(*l));
}

int window_list(const char *const *paths, size_t n, const struct window_scan_opts *o, struct window_listing *ret)
{
	struct builder b = { .o = o };
	int r = 0;

	for (size_t i = 0; r >= 0 && i < n; i++) {
		struct stat st;

		if (stat(paths[i], &st) == 0 && S_ISDIR(st.st_mode))
			r = list_dir(&b, paths[i]);
		else
			r = take_name(&b, AT_FDCWD, NULL, paths[i], 0);
	}
	memset(ret, 0, sizeof(*ret));
	ret->files = b.files;
	ret->nr = b.nr;
	ret->gone = b.gone;
	ret->nr_gone = b.nr_gone;
	if (r < 0) {
		window_listing_free(ret);
		return r;
	}
	window_files_sort(ret->files, ret->nr);
	return 0;
}

int window_scan(const char *const *paths, size_t n, struct window_file **ret, size_t *nret)
{
	struct window_listing l;
	int r = window_list(paths, n, NULL, &l);

	if (r < 0)
		return r;
	*ret = l.files;
	*nret = l.nr;
	l.files = NULL;
	l.nr = 0;
	window_listing_free(&l);
	return 0;
}

void window_strv_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

int window_files(const char *const *paths, size_t n, uint64_t from_wall, uint64_t to_wall, char ***ret,
		 size_t *nret)
{
	struct window_file *files;
	size_t nf, k = 0;
	char **v;
	int r;

	r = window_scan(paths, n, &files, &nf);
	if (r < 0)
		return r;
	v = calloc(nf + 1, sizeof(*v));
	if (!v) {
		window_files_free(files, nf);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nf; i++) {
		const struct window_file *f = &files[i];

		if (f->error || f->start_wall >= to_wall || (f->end_wall < from_wall && !f->being_written))
			continue;
		v[k++] = f->path;
		files[i].path = NULL;
	}
	window_files_free(files, nf);
	*ret = v;
	*nret = k;
	return 0;
}

static int ini_cb(void *user, const char *section, const char *name, const char *value)
{
	char **dir = user;

	if (!strcmp(section, "output") && !strcmp(name, "directory") && value[0]) {
		free(*dir);
		*dir = strdup(value);
	}
	return 1;
}

int window_parse_time(const char *cmd, const char *opt, const char *v, uint64_t *ret_wall_ns)
{
	struct timespec now;
	char err[256];

	clock_gettime(CLOCK_REALTIME, &now);
	if (perfrec_timespec__parse(v, (uint64_t)now.tv_sec * 1000000000ULL + (uint64_t)now.tv_nsec, ret_wall_ns, err,
				    sizeof(err)) < 0) {
		fprintf(stderr, "perfrecctl %s: %s: %s\n", cmd, opt, err);
		return -EINVAL;
	}
	return 0;
}

const char *window_default_config(void)
{
	return DEFAULT_CONFIG;
}

char *window_default_dir(void)
{
	char *dir = NULL;

	/* An unreadable or broken config still names its directory if it got that far. */
	ini_parse(DEFAULT_CONFIG, ini_cb, &dir);
	return dir ? dir : strdup(DEFAULT_DIR);
}
