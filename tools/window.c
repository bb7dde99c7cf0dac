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

/* The UTC start perfrecd writes into a name ("-20261123T140300.250Z-"), or 0. */
static uint64_t name_stamp_ns(const char *path)
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

int window_file_load(struct window_file *f, char *path)
{
	struct perfrec_pdreader_opts o = { .sz = sizeof(o) };
	struct perfrec_pdreader *rd = NULL;
	uint64_t end = 0, last = 0, off;
	const void *d;
	size_t len;
	struct stat st;
	bool has_last;
	int r;

	memset(f, 0, sizeof(*f));
	f->path = path;
	f->mode = "continuous";
	f->in_progress = ends_with(path, ".tmp");
	f->being_written = f->in_progress && perfrec_pdwriter__in_use(path) == 1;
	if (stat(path, &st) < 0)
		return set_error(f, -errno, "cannot read: %s", strerror(errno));
	f->size = (uint64_t)st.st_size;
	o.salvage = f->in_progress;
	r = perfrec_pdreader__open(path, &o, &rd);
	if (r < 0)
		return set_error(f, r, "cannot read: %s", strerror(-r));
	if (perfrec_pdreader__header(rd)->magic != PERFREC_MAGIC2 || perfrec_pdreader__nr_attrs(rd) == 0) {
		const char *e = perfrec_pdreader__error(rd, &off);

		r = set_error(f, -EBADMSG, "not perf data: %s", e[0] ? e : "no events");
		goto out;
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
	if (strstr(path, "-recovered"))
		f->mode = "recovered";
	f->compressed = perfrec_pdreader__feature(rd, PERFREC_FEAT_COMPRESSED, &d, &len) == 0 ||
			(f->in_progress && has_raw_compressed(path));
	r = perfrec_clockdata__from_reader(rd, &f->clock);
	if (r == -ENOENT && f->in_progress)
		r = clock_now(rd, &f->clock);
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
	if (f->in_progress) {
		/* Placed from now back: its data cannot lie ahead of now. */
		if (has_last && last > f->clock.clock_ns) {
			r = set_error(f, -ESTALE, "%s", "left by an earlier boot (its sample times lie ahead of this "
					       "boot's clock): recover it with perfrecctl recover");
			goto out;
		}
		/* Its start is where its first records are; the name holds it to the ms. */
		f->start_wall = 0;
		perfrec_pdreader__rewind(rd);
		{
			const struct perf_event_header *h;
			uint64_t t;

			while (perfrec_pdreader__next(rd, &h, &off) > 0)
				if (window_record_time(rd, h, &t, NULL) > 0) {
					f->start_wall = perfrec_clockdata__to_wall(&f->clock, t);
					break;
				}
		}
		if (!f->start_wall)
			f->start_wall = name_stamp_ns(path);
		if (!f->start_wall || f->start_wall > f->clock.wall_ns)
			f->start_wall = f->clock.wall_ns;
	}
	f->end_wall = has_last ? perfrec_clockdata__to_wall(&f->clock, last) : f->start_wall;
	if (f->end_wall < f->start_wall)
		f->end_wall = f->start_wall;
	r = 0;
out:
	perfrec_pdreader__free(rd);
	return r;
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
	for (size_t i = 0; files && i < n; i++) {
		free(files[i].path);
		free(files[i].error);
		free(files[i].label);
		free(files[i].spans);
	}
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

/* The recorded files of a directory: NAME.data and NAME.data.tmp, sorted by name. */
static int list_dir(const char *dir, char ***v, size_t *n, size_t *cap)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t first = *n;
	int r = 0;

	if (!d)
		return -errno;
	while (r == 0 && (de = readdir(d))) {
		char *p;

		if (de->d_name[0] == '.' || strstr(de->d_name, ".recovering-") ||
		    !(ends_with(de->d_name, ".data") || ends_with(de->d_name, ".data.tmp")))
			continue;
		if (asprintf(&p, "%s/%s", dir, de->d_name) < 0)
			p = NULL;
		r = push(v, n, cap, p);
	}
	closedir(d);
	qsort(*v + first, *n - first, sizeof(**v), cmp_str);
	return r;
}

int window_scan(const char *const *paths, size_t n, struct window_file **ret, size_t *nret)
{
	struct window_file *files = NULL;
	char **v = NULL;
	size_t nv = 0, cap = 0;
	int r = 0;

	for (size_t i = 0; r == 0 && i < n; i++) {
		struct stat st;

		if (stat(paths[i], &st) < 0) {
			r = -errno;
			break;
		}
		r = S_ISDIR(st.st_mode) ? list_dir(paths[i], &v, &nv, &cap) : push(&v, &nv, &cap, strdup(paths[i]));
	}
	if (r == 0 && nv) {
		files = calloc(nv, sizeof(*files));
		if (!files)
			r = -ENOMEM;
	}
	for (size_t i = 0; i < nv; i++) {
		if (r == 0) {
			window_file_load(&files[i], v[i]);
			v[i] = NULL;
		}
		free(v[i]);
	}
	free(v);
	if (r < 0) {
		window_files_free(files, nv);
		return r;
	}
	if (nv)
		qsort(files, nv, sizeof(*files), cmp_file);
	*ret = files;
	*nret = nv;
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
