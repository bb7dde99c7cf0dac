// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unwind tables by file, in memory and on disk (see unwtab-cache.h).  The
 * memory cache is a hash of entries by key; evicting scans them all for
 * the least recently used, which is rare (a new file past the bounds) and
 * cheap next to building a table.  A file that made no table is kept as an
 * entry without one, so that no process asks again.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "unwtab-cache.h"

#define NR_BUCKETS 256
#define KEY_MAX 64
/* Table files are removed down to this share of the bound once past it, not one per save. */
#define DISK_LOW_PERCENT 90

struct entry {
	char key[KEY_MAX];
	struct unwtab *t;     /* NULL: the file has no table */
	bool dwfl;            /* no table, but CFI libdwfl may read */
	uint64_t bytes, last_use;
	struct entry *next;
};

struct unwtab_cache {
	char *dir;
	int dirfd;            /* DIR/.unwtab; -1 before it is opened or when it cannot be used */
	bool dir_tried;
	uint64_t max_bytes, max_disk_bytes;
	size_t max_tables;
	uint64_t clock, generation;
	struct entry *buckets[NR_BUCKETS];
	struct unwtab_cache_stats st;
};

static unsigned hash_key(const char *key)
{
	unsigned h = 5381;

	while (*key)
		h = h * 33 + (unsigned char)*key++;
	return h % NR_BUCKETS;
}

int unwtab_cache_new(const struct unwtab_cache_opts *opts, struct unwtab_cache **ret)
{
	struct unwtab_cache *c;

	if (!ret)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->dirfd = -1;
	if (opts && opts->dir && opts->dir[0] && !(c->dir = strdup(opts->dir))) {
		free(c);
		return -ENOMEM;
	}
	c->max_bytes = opts && opts->max_bytes ? opts->max_bytes : UNWTAB_CACHE_DEFAULT_BYTES;
	c->max_tables = opts && opts->max_tables ? opts->max_tables : UNWTAB_CACHE_DEFAULT_COUNT;
	c->max_disk_bytes = opts && opts->max_disk_bytes ? opts->max_disk_bytes : UNWTAB_CACHE_DEFAULT_DISK_BYTES;
	*ret = c;
	return 0;
}

static void entry_free(struct entry *e)
{
	unwtab_free(e->t);
	free(e);
}

void unwtab_cache_free(struct unwtab_cache *c)
{
	if (!c)
		return;
	for (size_t b = 0; b < NR_BUCKETS; b++)
		while (c->buckets[b]) {
			struct entry *e = c->buckets[b];

			c->buckets[b] = e->next;
			entry_free(e);
		}
	if (c->dirfd >= 0)
		close(c->dirfd);
	free(c->dir);
	free(c);
}

uint64_t unwtab_cache_generation(const struct unwtab_cache *c)
{
	return c->generation;
}

void unwtab_cache_stats(const struct unwtab_cache *c, struct unwtab_cache_stats *ret)
{
	*ret = c->st;
}

/* --- on disk ------------------------------------------------------------- */

static bool is_table_name(const char *name)
{
	size_t n = strlen(name);

	return n > 7 && strcmp(name + n - 7, ".unwtab") == 0;
}

/* The bytes of the table files in the directory now. */
static uint64_t disk_usage(int dirfd)
{
	uint64_t total = 0;
	struct dirent *de;
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	while ((de = readdir(d))) {
		struct stat st;

		if (is_table_name(de->d_name) && fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode))
			total += (uint64_t)st.st_size;
	}
	closedir(d);
	return total;
}

/*
 * DIR/.unwtab, made 0700 if missing, used only if it is a directory of
 * ours no one else can write to (the build-id cache it sits in was
 * checked by the daemon; this is checked again as it is opened).
 */
static int open_dir(struct unwtab_cache *c)
{
	struct stat st;
	int top, fd;

	if (c->dir_tried)
		return c->dirfd;
	c->dir_tried = true;
	if (!c->dir)
		return -1;
	top = open(c->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (top < 0)
		goto fail;
	if (mkdirat(top, UNWTAB_CACHE_SUBDIR, 0700) < 0 && errno != EEXIST) {
		close(top);
		goto fail;
	}
	fd = openat(top, UNWTAB_CACHE_SUBDIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	close(top);
	if (fd < 0)
		goto fail;
	if (fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		close(fd);
		goto fail;
	}
	c->dirfd = fd;
	c->st.disk_bytes = disk_usage(fd);
	return fd;
fail:
	c->st.disk_errors++;
	return -1;
}

/* The least recently used table file (by mtime: loads touch it) into @name; false if none. */
static bool oldest_file(int dirfd, char *name, size_t len, uint64_t *size)
{
	struct timespec oldest = { 0 };
	struct dirent *de;
	bool found = false;
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	while ((de = readdir(d))) {
		struct stat st;

		if (!is_table_name(de->d_name) || strlen(de->d_name) >= len ||
		    fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
			continue;
		if (!found || st.st_mtim.tv_sec < oldest.tv_sec ||
		    (st.st_mtim.tv_sec == oldest.tv_sec && st.st_mtim.tv_nsec < oldest.tv_nsec)) {
			oldest = st.st_mtim;
			strcpy(name, de->d_name);
			*size = (uint64_t)st.st_size;
			found = true;
		}
	}
	closedir(d);
	return found;
}

static void trim_disk(struct unwtab_cache *c)
{
	uint64_t low = c->max_disk_bytes / 100 * DISK_LOW_PERCENT;
	char name[UNWTAB_NAME_MAX + 16];
	uint64_t size;

	if (c->st.disk_bytes <= c->max_disk_bytes)
		return;
	/* What others did to the directory meanwhile counts too. */
	c->st.disk_bytes = disk_usage(c->dirfd);
	while (c->st.disk_bytes > low && oldest_file(c->dirfd, name, sizeof(name), &size)) {
		if (unlinkat(c->dirfd, name, 0) < 0)
			break;
		c->st.disk_bytes -= size < c->st.disk_bytes ? size : c->st.disk_bytes;
		c->st.disk_evicted++;
	}
}

static void save(struct unwtab_cache *c, const struct unwtab *t)
{
	char name[UNWTAB_NAME_MAX];
	struct stat st;
	int r;

	if (open_dir(c) < 0)
		return;
	r = unwtab_save(t, c->dirfd);
	if (r == -EEXIST)
		return;
	if (r < 0) {
		c->st.disk_errors++;
		return;
	}
	c->st.saved++;
	unwtab_file_name(t->build_id, t->build_id_len, name);
	if (fstatat(c->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
		c->st.disk_bytes += (uint64_t)st.st_size;
	trim_disk(c);
}

/* The table of @build_id from disk: 0, or -errno (a damaged file is removed). */
static int load(struct unwtab_cache *c, const uint8_t *build_id, size_t len, struct unwtab **ret)
{
	char name[UNWTAB_NAME_MAX];
	struct stat st;
	int r;

	if (!len || open_dir(c) < 0)
		return -ENOENT;
	r = unwtab_load(c->dirfd, build_id, len, ret);
	unwtab_file_name(build_id, len, name);
	if (r == 0) {
		c->st.loaded++;
		/* Used: the last to go when the directory is trimmed. */
		utimensat(c->dirfd, name, NULL, AT_SYMLINK_NOFOLLOW);
	} else if (r == -EBADMSG || r == -E2BIG) {
		c->st.refused++;
		if (fstatat(c->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && unlinkat(c->dirfd, name, 0) == 0)
			c->st.disk_bytes -= (uint64_t)st.st_size < c->st.disk_bytes ? (uint64_t)st.st_size
										   : c->st.disk_bytes;
	}
	return r;
}

/* --- in memory ----------------------------------------------------------- */

static uint64_t table_bytes(const struct unwtab *t)
{
	return t ? sizeof(*t) + t->nr_rows * sizeof(*t->rows) + t->index_len * sizeof(*t->first) : 0;
}

static void evict(struct unwtab_cache *c, const struct entry *keep)
{
	while (c->st.tables > c->max_tables || (c->st.tables > 1 && c->st.bytes > c->max_bytes)) {
		struct entry **oldest = NULL, *e;

		for (size_t b = 0; b < NR_BUCKETS; b++)
			for (struct entry **pp = &c->buckets[b]; *pp; pp = &(*pp)->next)
				if (*pp != keep && (!oldest || (*pp)->last_use < (*oldest)->last_use))
					oldest = pp;
		if (!oldest)
			break;
		e = *oldest;
		*oldest = e->next;
		c->st.tables--;
		c->st.bytes -= e->bytes;
		c->st.evicted++;
		c->generation++;
		entry_free(e);
	}
}

/*
 * Build the table from the files @open gives until one has the build id
 * wanted: 0 with *ret, or the last error (-ENOENT: none was the file).
 */
static int build(struct unwtab_cache *c, const uint8_t *build_id, size_t len, unwtab_open_fn open_fn,
		 void *ctx, struct unwtab **ret)
{
	/* A file known by device and inode may have no build id: it gets a table all the same. */
	struct unwtab_build_opts o = { .sz = sizeof(o), .debug_fd = -1, .build_id_optional = !len };
	int r = -ENOENT;

	for (int attempt = 0;; attempt++) {
		struct unwtab *t = NULL;
		int fd = open_fn(ctx, attempt);

		if (fd == -ESRCH)
			return r;
		if (fd < 0)
			continue;
		r = unwtab_build_fd(fd, &o, &t);
		close(fd);
		if (r == 0 && len && (t->build_id_len != len || memcmp(t->build_id, build_id, len) != 0)) {
			/* Another file at that path now: not the one mapped. */
			unwtab_free(t);
			r = -ENOENT;
			continue;
		}
		if (r == 0) {
			c->st.built++;
			*ret = t;
			return 0;
		}
		if (r != -ENOENT)
			return r;
	}
}

static struct entry *lookup(struct unwtab_cache *c, const char *key)
{
	for (struct entry *e = c->buckets[hash_key(key)]; e; e = e->next)
		if (strcmp(e->key, key) == 0)
			return e;
	return NULL;
}

int unwtab_cache_get(struct unwtab_cache *c, const char *key, const uint8_t *build_id, size_t build_id_len,
		     unwtab_open_fn open_fn, void *ctx, const struct unwtab **ret_table, bool *ret_dwfl)
{
	struct entry *e = lookup(c, key);
	struct unwtab *t = NULL;
	unsigned b;
	int r;

	*ret_table = NULL;
	*ret_dwfl = false;
	if (!e) {
		if (strlen(key) >= KEY_MAX)
			return -EINVAL;
		r = load(c, build_id, build_id_len, &t);
		if (r < 0) {
			r = build(c, build_id, build_id_len, open_fn, ctx, &t);
			if (r == -ENOENT || r == -ENOMEM)
				return r;
			if (r == 0 && build_id_len)
				save(c, t);
		}
		e = calloc(1, sizeof(*e));
		if (!e) {
			unwtab_free(t);
			return -ENOMEM;
		}
		strcpy(e->key, key);
		e->t = t;
		/* No CFI at all: frame pointers.  CFI without a table: libdwfl's. */
		if (r == -ENODATA || r == -EINVAL)
			c->st.no_cfi++;
		else if (r < 0)
			c->st.failed++;
		e->dwfl = r < 0 && r != -ENODATA && r != -EINVAL;
		e->bytes = table_bytes(t);
		b = hash_key(key);
		e->next = c->buckets[b];
		c->buckets[b] = e;
		c->st.tables++;
		c->st.bytes += e->bytes;
		evict(c, e);
	} else {
		c->st.hits++;
	}
	e->last_use = ++c->clock;
	*ret_table = e->t;
	*ret_dwfl = e->dwfl;
	return e->t ? 1 : 0;
}
