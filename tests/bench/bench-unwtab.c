// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unwind tables (internal/unwtab.h) of real binaries: for each file named,
 * the time to build its table, the rows and bytes in memory and on disk,
 * and the cost of one look-up (a frame's binary search) at random
 * addresses of its code.
 *
 *   bench-unwtab FILE...
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "unwtab.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); /* CPU time: the machine may be busy */
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* ns per unwtab_lookup() at random addresses between the first and last rows. */
static double lookup_ns(const struct unwtab *t)
{
	uint64_t lo = t->rows[0].start, span = t->rows[t->nr_rows - 1].start - lo + 1, s = 88172645463325252ull;
	volatile uint64_t sink = 0;
	const unsigned n = 2000000;
	double t0 = now();

	for (unsigned i = 0; i < n; i++) {
		const struct unwtab_row *r = unwtab_lookup(t, lo + rnd(&s) % span);

		sink += r ? r->kind : 0;
	}
	return (now() - t0) * 1e9 / n;
}

static int one(const char *path, int dirfd)
{
	struct unwtab *t, *l;
	struct stat st;
	char name[UNWTAB_NAME_MAX];
	double t0, built, loaded;
	int fd = open(path, O_RDONLY | O_CLOEXEC), r;

	if (fd < 0 || fstat(fd, &st) < 0) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return 1;
	}
	t0 = now();
	r = unwtab_build_fd(fd, NULL, &t);
	built = now() - t0;
	close(fd);
	if (r < 0) {
		fprintf(stderr, "%s: %s\n", path, strerror(-r));
		return 1;
	}
	unwtab_file_name(t->build_id, t->build_id_len, name);
	unlinkat(dirfd, name, 0);
	r = unwtab_save(t, dirfd);
	t0 = now();
	if (r == 0)
		r = unwtab_load(dirfd, t->build_id, t->build_id_len, &l);
	loaded = now() - t0;
	if (r < 0) {
		fprintf(stderr, "%s: save/load: %s\n", path, strerror(-r));
		unwtab_free(t);
		return 1;
	}
	if (fstatat(dirfd, name, &st, 0) < 0)
		st.st_size = 0;
	printf("%-40s fdes %7zu  rows %8zu  fallback %5zu  build %7.1f ms  on disk %7.2f MiB  load %6.1f ms  "
	       "lookup %5.1f ns\n",
	       path, t->nr_fdes, t->nr_rows, t->nr_fallback, built * 1e3, (double)st.st_size / 1048576,
	       loaded * 1e3, lookup_ns(l));
	unlinkat(dirfd, name, 0);
	unwtab_free(l);
	unwtab_free(t);
	return 0;
}

int main(int argc, char **argv)
{
	char dir[] = "/tmp/bench-unwtab.XXXXXX";
	int dirfd, st = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE...\n", argv[0]);
		return 2;
	}
	if (!mkdtemp(dir) || (dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		perror("mkdtemp");
		return 1;
	}
	for (int i = 1; i < argc; i++)
		st |= one(argv[i], dirfd);
	close(dirfd);
	if (rmdir(dir) < 0) {
		perror(dir);
		st = 1;
	}
	return st;
}
