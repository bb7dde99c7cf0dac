// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unwind tables on disk (internal/unwtab.h): one file per build id, a fixed
 * header and the rows as they are in memory (x86_64: little-endian).
 * Whatever is read is checked before it is used: the file is the daemon's
 * own cache, but a damaged disk, a crash half-way or another version must
 * come back as "build it again", never as a table that unwinds wrongly.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "unwtab.h"

#define UNWTAB_MAGIC "PRUNWTAB"
/* 2: the checksum over 64-bit words (1: FNV-1a over bytes, refused and rebuilt) */
#define UNWTAB_VERSION 2u

struct unwtab_file_header {
	char magic[8];
	uint32_t version;
	uint32_t header_size;
	uint8_t build_id_len;
	uint8_t pad[3];
	uint32_t nr_loads;
	uint8_t build_id[PERFREC_BUILD_ID_MAX];
	uint8_t pad2[4];
	uint64_t nr_rows;
	uint64_t checksum;   /* checksum(): of the header (this field 0) and the rows */
	struct unwtab_load loads[UNWTAB_MAX_LOADS];
};

_Static_assert(sizeof(struct unwtab_file_header) == 64 + 24 * UNWTAB_MAX_LOADS, "header layout");
_Static_assert(sizeof(struct unwtab_row) == 16, "row layout");

#define SUM_SEED 0xcbf29ce484222325ull
#define SUM_MUL 0x9e3779b97f4a7c15ull

/*
 * A word at a time (the header and the rows are whole words): xor,
 * multiply, fold the high half down so a change anywhere in a word
 * reaches every bit of what follows.  FNV-1a a byte at a time cost some
 * 1.5 ns a byte, 11 ms for cc1's 7.3-MiB table and 12% of perfrecd's CPU
 * with host unwinding in the first 20 s after a restart (tables being
 * loaded).  Loading cc1's table now takes 12-13 ms, not 18, node's 7.5,
 * not 11.5 (bench-unwtab, CPU time).  It finds damage (a crash cut, a
 * bad disk), not forgery: the directory is root's.
 */
static uint64_t sum_words(uint64_t h, const void *buf, size_t len)
{
	const unsigned char *p = buf;

	for (size_t i = 0; i + 8 <= len; i += 8) {
		uint64_t w;

		memcpy(&w, p + i, 8);
		h = (h ^ w) * SUM_MUL;
		h ^= h >> 32;
	}
	return h;
}

_Static_assert(sizeof(struct unwtab_file_header) % 8 == 0, "the header is whole words");

static uint64_t checksum(const struct unwtab_file_header *h, const struct unwtab_row *rows, size_t nr)
{
	struct unwtab_file_header c = *h;

	c.checksum = 0;
	return sum_words(sum_words(SUM_SEED, &c, sizeof(c)), rows, nr * sizeof(*rows));
}

void unwtab_file_name(const uint8_t *build_id, size_t build_id_len, char *buf)
{
	size_t n = 0;

	for (size_t i = 0; i < build_id_len && i < PERFREC_BUILD_ID_MAX; i++)
		n += (size_t)sprintf(buf + n, "%02x", build_id[i]);
	strcpy(buf + n, ".unwtab");
}

static void fill_header(const struct unwtab *t, struct unwtab_file_header *h)
{
	memset(h, 0, sizeof(*h));
	memcpy(h->magic, UNWTAB_MAGIC, sizeof(h->magic));
	h->version = UNWTAB_VERSION;
	h->header_size = sizeof(*h);
	h->build_id_len = t->build_id_len;
	memcpy(h->build_id, t->build_id, sizeof(h->build_id));
	h->nr_loads = t->nr_loads;
	memcpy(h->loads, t->loads, sizeof(h->loads));
	h->nr_rows = t->nr_rows;
	h->checksum = checksum(h, t->rows, t->nr_rows);
}

/*
 * Not synced: the unwinding worker saves tables as it goes, and an fsync
 * on a busy disk held it (and every sample behind it) for as long as the
 * disk liked.  A table a crash cut or lost fails its checksum at the next
 * load and is built again.
 */
static int write_table(int fd, const struct unwtab *t)
{
	struct unwtab_file_header h;
	int r;

	fill_header(t, &h);
	if ((r = write_all(fd, &h, sizeof(h))) < 0 ||
	    (r = write_all(fd, t->rows, t->nr_rows * sizeof(*t->rows))) < 0)
		return r;
	return 0;
}

/* Where O_TMPFILE is not supported: a unique name, created exclusively, linked and removed. */
static int save_named(const struct unwtab *t, int dirfd, const char *name)
{
	char tmp[UNWTAB_NAME_MAX + 32];
	int fd, r;

	snprintf(tmp, sizeof(tmp), ".%s.%d.%lx", name, getpid(), (unsigned long)random());
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	r = write_table(fd, t);
	if (close(fd) < 0 && !r)
		r = -errno;
	if (!r && linkat(dirfd, tmp, dirfd, name, 0) < 0)
		r = -errno;
	unlinkat(dirfd, tmp, 0);
	return r;
}

int unwtab_save(const struct unwtab *t, int dirfd)
{
	char name[UNWTAB_NAME_MAX], proc[64];
	int fd, r;

	if (!t || !t->build_id_len || t->build_id_len > PERFREC_BUILD_ID_MAX || (t->nr_rows && !t->rows))
		return -EINVAL;
	unwtab_file_name(t->build_id, t->build_id_len, name);
	fd = openat(dirfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
	if (fd < 0)
		return errno == EOPNOTSUPP || errno == EISDIR ? save_named(t, dirfd, name) : -errno;
	r = write_table(fd, t);
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	/* linkat() never replaces: a table already there (-EEXIST) is the same build id's. */
	if (!r && linkat(AT_FDCWD, proc, dirfd, name, AT_SYMLINK_FOLLOW) < 0)
		r = -errno;
	close(fd);
	/* No /proc to name the unnamed file by: write it under a name of its own. */
	return r == -ENOENT ? save_named(t, dirfd, name) : r;
}

static int check_header(const struct unwtab_file_header *h, size_t len, const uint8_t *build_id,
			size_t build_id_len)
{
	if (memcmp(h->magic, UNWTAB_MAGIC, sizeof(h->magic)) || h->version != UNWTAB_VERSION ||
	    h->header_size != sizeof(*h))
		return -EBADMSG;
	if (!h->build_id_len || h->build_id_len > PERFREC_BUILD_ID_MAX || h->build_id_len != build_id_len ||
	    memcmp(h->build_id, build_id, build_id_len) || h->nr_loads > UNWTAB_MAX_LOADS)
		return -EBADMSG;
	/* The size first: a damaged count is damage, not a table too big. */
	if ((len - sizeof(*h)) / sizeof(struct unwtab_row) != h->nr_rows ||
	    (len - sizeof(*h)) % sizeof(struct unwtab_row))
		return -EBADMSG;
	return h->nr_rows > UNWTAB_MAX_ROWS_DEFAULT ? -E2BIG : 0;
}

/* Rows strictly ascending, of known kinds and flags. */
static bool rows_sound(const struct unwtab_row *rows, size_t nr)
{
	for (size_t i = 0; i < nr; i++) {
		if ((rows[i].kind & UNWTAB_KIND_MASK) >= UNWTAB_NR_KINDS ||
		    (rows[i].kind & ~(UNWTAB_KIND_MASK | UNWTAB_FP_UNDEFINED)))
			return false;
		if (i && rows[i].start <= rows[i - 1].start)
			return false;
	}
	return true;
}

int unwtab_parse(const void *buf, size_t len, const uint8_t *build_id, size_t build_id_len,
		 struct unwtab **ret_table)
{
	struct unwtab_file_header h;
	struct unwtab *t;
	int r;

	if (!buf || len < sizeof(h))
		return -EBADMSG;
	memcpy(&h, buf, sizeof(h));
	if ((r = check_header(&h, len, build_id, build_id_len)) < 0)
		return r;
	t = calloc(1, sizeof(*t));
	if (!t || (h.nr_rows && !(t->rows = malloc(h.nr_rows * sizeof(*t->rows))))) {
		free(t);
		return -ENOMEM;
	}
	memcpy(t->rows, (const uint8_t *)buf + sizeof(h), h.nr_rows * sizeof(*t->rows));
	t->nr_rows = h.nr_rows;
	if (checksum(&h, t->rows, t->nr_rows) != h.checksum || !rows_sound(t->rows, t->nr_rows)) {
		unwtab_free(t);
		return -EBADMSG;
	}
	t->build_id_len = h.build_id_len;
	memcpy(t->build_id, h.build_id, sizeof(t->build_id));
	t->nr_loads = h.nr_loads;
	memcpy(t->loads, h.loads, sizeof(t->loads));
	if ((r = unwtab_index(t)) < 0) {
		unwtab_free(t);
		return r;
	}
	*ret_table = t;
	return 0;
}

static int read_exactly(int fd, void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, (uint8_t *)buf + done, len - done, (off_t)done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EBADMSG; /* cut short under us */
		done += (size_t)n;
	}
	return 0;
}

int unwtab_load(int dirfd, const uint8_t *build_id, size_t build_id_len, struct unwtab **ret_table)
{
	char name[UNWTAB_NAME_MAX];
	struct stat st;
	void *buf;
	int fd, r;

	if (!build_id || !build_id_len || build_id_len > PERFREC_BUILD_ID_MAX || !ret_table)
		return -EINVAL;
	unwtab_file_name(build_id, build_id_len, name);
	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return errno == ELOOP ? -EBADMSG : -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		r = fstat(fd, &st) < 0 ? -errno : -EBADMSG;
		close(fd);
		return r;
	}
	if ((uint64_t)st.st_size > sizeof(struct unwtab_file_header) +
					   (uint64_t)UNWTAB_MAX_ROWS_DEFAULT * sizeof(struct unwtab_row)) {
		close(fd);
		return -E2BIG;
	}
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	r = buf ? read_exactly(fd, buf, (size_t)st.st_size) : -ENOMEM;
	close(fd);
	if (!r)
		r = unwtab_parse(buf, (size_t)st.st_size, build_id, build_id_len, ret_table);
	free(buf);
	return r;
}
