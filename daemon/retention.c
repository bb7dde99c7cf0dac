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

int retention_apply(const struct retention_opts *o, const char *const *keep)
{
	struct retention_space sp = { 0 };
	uint64_t max_bytes = o->max_bytes, floor = 0;
	struct candidate *c = NULL;
	size_t n = 0, cap = 0;
	uint64_t total_bytes = 0, count, now = realtime_usec();
	struct dirent *de;
	DIR *d;
	int dfd, r = 0, removed = 0;

	dfd = open(o->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return log_error_errno(-errno, "Failed to open %s for retention: %m", o->dir);
	d = fdopendir(dfd);
	if (!d) {
		r = -errno;
		close(dfd);
		return log_error_errno(r, "Failed to read %s for retention: %s", o->dir, strerror(-r));
	}
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
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			struct candidate *nc = realloc(c, ncap * sizeof(*c));

			if (!nc) {
				r = -ENOMEM;
				goto out;
			}
			c = nc;
			cap = ncap;
		}
		c[n].name = strdup(de->d_name);
		if (!c[n].name) {
			r = -ENOMEM;
			goto out;
		}
		c[n].size = st.st_size;
		c[n].mtime_usec = (uint64_t)st.st_mtim.tv_sec * 1000000 + st.st_mtim.tv_nsec / 1000;
		total_bytes += c[n].size;
		n++;
	}
	if (errno) {
		r = -errno;
		goto out;
	}
	if (n > 1)
		qsort(c, n, sizeof(*c), cmp_candidate);
	/* Shares of the file system, measured once; the floor again after each removal. */
	if (o->max_bytes_percent || o->min_free || o->min_free_percent) {
		int rs = get_space(o, dfd, &sp);

		if (rs < 0) {
			log_warning("Cannot measure the file system of %s (%s): max-bytes and min-free "
				    "in percent, and min-free, are not applied", o->dir, strerror(-rs));
			max_bytes = o->max_bytes_percent ? 0 : o->max_bytes;
		} else {
			max_bytes = share(o->max_bytes, o->max_bytes_percent, sp.size);
			if (o->min_free || o->min_free_percent)
				floor = share(o->min_free, o->min_free_percent, sp.size);
		}
	}

	count = n;
	for (size_t i = 0; i < n; i++) {
		char why[64];
		bool aged = o->max_age_usec && now > c[i].mtime_usec &&
			    now - c[i].mtime_usec > o->max_age_usec;

		if (o->max_files && count > o->max_files)
			snprintf(why, sizeof(why), "max-files=%" PRIu64, o->max_files);
		else if (max_bytes && total_bytes > max_bytes)
			snprintf(why, sizeof(why), "max-bytes=%" PRIu64, max_bytes);
		else if (aged)
			snprintf(why, sizeof(why), "max-age=%" PRIu64 "s", o->max_age_usec / 1000000);
		else if (floor && sp.avail < floor)
			snprintf(why, sizeof(why), "min-free=%" PRIu64 ", %" PRIu64 " free", floor, sp.avail);
		else
			continue;
		if (is_kept(c[i].name, keep))
			continue;
		if (unlinkat(dfd, c[i].name, 0) < 0) {
			/* Gone already (another remover, or an operator): it no
			 * longer takes space, which is all that matters here. */
			if (errno != ENOENT) {
				log_error("Failed to remove %s/%s (retention: %s): %m", o->dir, c[i].name, why);
				continue;
			}
		} else {
			log_info("Removed %s/%s (retention: %s)", o->dir, c[i].name, why);
			removed++;
		}
		remove_companions(dfd, c[i].name);
		count--;
		total_bytes -= c[i].size;
		/* What the removal freed, as the file system sees it (others write too). */
		if (floor && get_space(o, dfd, &sp) < 0)
			sp.avail += c[i].size;
	}
	r = removed;
out:
	if (r < 0)
		log_error("Failed to read %s for retention: %s", o->dir, strerror(-r));
	for (size_t i = 0; i < n; i++)
		free(c[i].name);
	free(c);
	closedir(d);
	return r;
}
