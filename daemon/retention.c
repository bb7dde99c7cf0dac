// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Retention of published recordings.  The directory is read once per call;
 * candidates are "<prefix>-*.data" regular files, which sort by name in
 * recording order because names carry a fixed-width UTC time stamp and a
 * 6-digit sequence number.  Walking them oldest first, a file goes while
 * the remaining ones exceed the count or byte limit, when its own mtime
 * is past the age limit, or while the file system has less free space
 * than the floor (min-free).  Everything is done relative to a directory fd so
 * that a renamed or replaced directory path cannot redirect the unlinks.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "log.h"
#include "retention.h"

struct candidate {
	char *name;
	uint64_t size;
	uint64_t mtime_usec;
};

static int cmp_candidate(const void *a, const void *b)
{
	return strcmp(((const struct candidate *)a)->name, ((const struct candidate *)b)->name);
}

static bool is_published(const char *name, const char *prefix)
{
	size_t plen = strlen(prefix), len = strlen(name);

	/* "<prefix>-" and at least one character before ".data". */
	return len > plen + 1 + 5 && strncmp(name, prefix, plen) == 0 && name[plen] == '-' &&
	       strcmp(name + len - 5, ".data") == 0;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* The manifest and upload marker (upload.c, manifest.c) go with their file. */
static void remove_companions(int dfd, const char *name)
{
	static const char *const suffixes[] = { ".json", ".uploaded" };
	char buf[PATH_MAX];

	for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++)
		if ((size_t)snprintf(buf, sizeof(buf), "%s%s", name, suffixes[i]) < sizeof(buf))
			(void)unlinkat(dfd, buf, 0);
}

static bool is_kept(const char *name, const char *const *keep)
{
	for (; keep && *keep; keep++)
		if (strcmp(base_name(*keep), name) == 0)
			return true;
	return false;
}

static uint64_t realtime_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int statvfs_space(int dfd, void *ctx, struct retention_space *ret)
{
	struct statvfs sv;

	(void)ctx;
	if (fstatvfs(dfd, &sv) < 0)
		return -errno;
	ret->size = (uint64_t)sv.f_blocks * sv.f_frsize;
	ret->avail = (uint64_t)sv.f_bavail * sv.f_frsize;
	return 0;
}

static int get_space(const struct retention_opts *o, int dfd, struct retention_space *ret)
{
	return (o->space ? o->space : statvfs_space)(dfd, o->space_ctx, ret);
}

/* The smaller of @bytes and @percent of @fs_size, of those set; 0: neither. */
static uint64_t share(uint64_t bytes, unsigned percent, uint64_t fs_size)
{
	uint64_t p = (uint64_t)((unsigned __int128)fs_size * percent / 100);

	if (!percent)
		return bytes;
	if (!bytes)
		return p ? p : 1;
	return p < bytes ? p : bytes;
}

static int below_floor(const struct retention_opts *o, int dfd, uint64_t *ret_avail, uint64_t *ret_floor)
{
	struct retention_space sp;
	uint64_t floor;
	int r;

	if (!o->min_free && !o->min_free_percent)
		return 0;
	r = get_space(o, dfd, &sp);
	if (r < 0)
		return r;
	floor = share(o->min_free, o->min_free_percent, sp.size);
	if (ret_avail)
		*ret_avail = sp.avail;
	if (ret_floor)
		*ret_floor = floor;
	return sp.avail < floor;
}

int retention_below_floor(const struct retention_opts *o, uint64_t *ret_avail, uint64_t *ret_floor)
{
	int dfd, r;

	if (!o->min_free && !o->min_free_percent)
		return 0;
	dfd = open(o->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	r = below_floor(o, dfd, ret_avail, ret_floor);
	close(dfd);
	return r;
}

/* The files retention may remove. */
struct candidates {
	struct candidate *c;
	size_t n, cap;
	uint64_t total_bytes;
};

static void candidates_free(struct candidates *cs)
{
	for (size_t i = 0; i < cs->n; i++)
		free(cs->c[i].name);
	free(cs->c);
}

static int candidates_add(struct candidates *cs, const char *name, const struct stat *st)
{
	if (ARRAY_RESERVE(cs->c, cs->cap, cs->n + 1, 64) < 0)
		return -ENOMEM;
	cs->c[cs->n].name = strdup(name);
	if (!cs->c[cs->n].name)
		return -ENOMEM;
	cs->c[cs->n].size = (uint64_t)st->st_size;
	cs->c[cs->n].mtime_usec = (uint64_t)st->st_mtim.tv_sec * 1000000 + (uint64_t)st->st_mtim.tv_nsec / 1000;
	cs->total_bytes += cs->c[cs->n].size;
	cs->n++;
	return 0;
}

/* Our published regular files in @d, oldest (first by name) first.  0 or -errno. */
static int candidates_read(const struct retention_opts *o, DIR *d, struct candidates *cs)
{
	int dfd = dirfd(d), r;
	struct dirent *de;

	while ((errno = 0, de = readdir(d))) {
		struct stat st;

		if (!is_published(de->d_name, o->prefix))
			continue;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno != ENOENT)
				log_warning("Failed to stat %s/%s for retention: %m", o->dir, de->d_name);
			continue;
		}
		if (!S_ISREG(st.st_mode))
			continue;
		r = candidates_add(cs, de->d_name, &st);
		if (r < 0)
			return r;
	}
	if (errno)
		return -errno;
	if (cs->n > 1)
		qsort(cs->c, cs->n, sizeof(*cs->c), cmp_candidate);
	return 0;
}

/*
 * The byte limit and the free-space floor in bytes, their shares of the file
 * system measured once (@sp: what it measured); without a measurement the
 * limits in percent and min-free are not applied.
 */
static void byte_limits(const struct retention_opts *o, int dfd, struct retention_space *sp,
			uint64_t *ret_max_bytes, uint64_t *ret_floor)
{
	int r;

	*ret_max_bytes = o->max_bytes;
	*ret_floor = 0;
	if (!o->max_bytes_percent && !o->min_free && !o->min_free_percent)
		return;
	r = get_space(o, dfd, sp);
	if (r < 0) {
		log_warning("Cannot measure the file system of %s (%s): max-bytes and min-free "
			    "in percent, and min-free, are not applied", o->dir, strerror(-r));
		*ret_max_bytes = o->max_bytes_percent ? 0 : o->max_bytes;
		return;
	}
	*ret_max_bytes = share(o->max_bytes, o->max_bytes_percent, sp->size);
	if (o->min_free || o->min_free_percent)
		*ret_floor = share(o->min_free, o->min_free_percent, sp->size);
}

/* Where retention stands while it walks the candidates, oldest first. */
struct walk {
	uint64_t count, total_bytes, max_bytes, floor, now;
	struct retention_space sp;
};

/* Why @f must go, into @why; false when no limit asks for it. */
static bool must_go(const struct retention_opts *o, const struct walk *w, const struct candidate *f,
		    char *why, size_t whylen)
{
	if (o->max_files && w->count > o->max_files)
		snprintf(why, whylen, "max-files=%" PRIu64, o->max_files);
	else if (w->max_bytes && w->total_bytes > w->max_bytes)
		snprintf(why, whylen, "max-bytes=%" PRIu64, w->max_bytes);
	else if (o->max_age_usec && w->now > f->mtime_usec && w->now - f->mtime_usec > o->max_age_usec)
		snprintf(why, whylen, "max-age=%" PRIu64 "s", o->max_age_usec / 1000000);
	else if (w->floor && w->sp.avail < w->floor)
		snprintf(why, whylen, "min-free=%" PRIu64 ", %" PRIu64 " free", w->floor, w->sp.avail);
	else
		return false;
	return true;
}

/* Remove @f and its companions; 1 removed, 0 gone already, -errno not removed. */
static int remove_file(const struct retention_opts *o, int dfd, const struct candidate *f, const char *why)
{
	int r = 1;

	if (unlinkat(dfd, f->name, 0) < 0) {
		/* Gone already (another remover, or an operator): it no
		 * longer takes space, which is all that matters here. */
		if (errno != ENOENT)
			return log_error_errno(-errno, "Failed to remove %s/%s (retention: %s): %m",
					       o->dir, f->name, why);
		r = 0;
	} else {
		log_info("Removed %s/%s (retention: %s)", o->dir, f->name, why);
	}
	remove_companions(dfd, f->name);
	return r;
}

int retention_apply(const struct retention_opts *o, const char *const *keep)
{
	struct candidates cs = { 0 };
	struct walk w = { .now = realtime_usec() };
	DIR *d;
	int dfd, r, removed = 0;

	dfd = open(o->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return log_error_errno(-errno, "Failed to open %s for retention: %m", o->dir);
	d = fdopendir(dfd);
	if (!d) {
		r = -errno;
		close(dfd);
		return log_error_errno(r, "Failed to read %s for retention: %s", o->dir, strerror(-r));
	}
	r = candidates_read(o, d, &cs);
	if (r < 0) {
		log_error("Failed to read %s for retention: %s", o->dir, strerror(-r));
		goto out;
	}
	/* The floor is measured again after each removal. */
	byte_limits(o, dfd, &w.sp, &w.max_bytes, &w.floor);
	w.count = cs.n;
	w.total_bytes = cs.total_bytes;
	for (size_t i = 0; i < cs.n; i++) {
		const struct candidate *f = &cs.c[i];
		char why[64];

		if (!must_go(o, &w, f, why, sizeof(why)) || is_kept(f->name, keep))
			continue;
		r = remove_file(o, dfd, f, why);
		if (r < 0)
			continue;
		removed += r;
		w.count--;
		w.total_bytes -= f->size;
		/* What the removal freed, as the file system sees it (others write too). */
		if (w.floor && get_space(o, dfd, &w.sp) < 0)
			w.sp.avail += f->size;
	}
	r = removed;
out:
	candidates_free(&cs);
	closedir(d);
	return r;
}
