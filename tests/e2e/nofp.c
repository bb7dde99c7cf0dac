// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A workload without frame pointers (built -O2 -fomit-frame-pointer) whose
 * paths run through libc, for the DWARF callchain tests: frame pointers
 * cannot see a caller of libc code, CFI can.
 *
 *   main -> outer -> sorts -> qsort -> (libc) -> by_key
 *   start_thread -> reader -> read_some -> read -> (kernel)
 *
 * sorts() asks for the sort; by_key(), the hot comparator, runs two calls
 * below it inside libc.  The reader thread spends its time in read() of
 * /dev/zero, inside the kernel, so its samples have kernel frames and a
 * user stack that ends in read().
 *
 *   nofp [SECONDS]
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/*
 * glibc's qsort is a merge sort: its recursion is log2(NR_KEYS) frames
 * deep, every one of them in a whole unwound chain and none in -g's, which
 * stop at libc.  1024 keys (10 levels; it was 4096, 12) keep the unwound
 * file's bytes per sample below 1.5x -g's with some margin, where 4096
 * put them at 1.50-1.51x on a quiet machine (test-dwarf-host).
 */
#define NR_KEYS 1024

static double seconds = 3.0;
static volatile unsigned long sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Work in the comparator so that the samples land in it. */
__attribute__((noinline)) int by_key(const void *a, const void *b);
__attribute__((noinline)) int by_key(const void *a, const void *b)
{
	unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;

	for (int i = 0; i < 40; i++) {
		x = x * 6364136223846793005UL + 1;
		y = y * 6364136223846793005UL + 1;
	}
	sink += x ^ y;
	return (*(const unsigned long *)a > *(const unsigned long *)b) -
	       (*(const unsigned long *)a < *(const unsigned long *)b);
}

__attribute__((noinline)) void sorts(unsigned long *keys, unsigned long seed);
__attribute__((noinline)) void sorts(unsigned long *keys, unsigned long seed)
{
	for (int i = 0; i < NR_KEYS; i++) {
		seed = seed * 2862933555777941757UL + 3037000493UL;
		keys[i] = seed >> 16;
	}
	qsort(keys, NR_KEYS, sizeof(keys[0]), by_key);
	sink += keys[NR_KEYS / 2];
}

__attribute__((noinline)) void outer(double until);
__attribute__((noinline)) void outer(double until)
{
	unsigned long *keys = malloc(NR_KEYS * sizeof(*keys));
	unsigned long seed = 1;

	if (!keys)
		abort();
	while (now() < until)
		sorts(keys, seed++);
	free(keys);
}

__attribute__((noinline)) long read_some(int fd, char *buf, size_t len);
__attribute__((noinline)) long read_some(int fd, char *buf, size_t len)
{
	long n = read(fd, buf, len);

	sink += n > 0 ? (unsigned char)buf[n - 1] : 0;
	return n;
}

static void *reader(void *arg)
{
	static char buf[1 << 20];
	double until = *(double *)arg;
	int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	while (now() < until)
		read_some(fd, buf, sizeof(buf));
	close(fd);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;
	double until;

	if (argc > 1)
		seconds = atof(argv[1]);
	until = now() + seconds;
	if (pthread_create(&t, NULL, reader, &until))
		return 1;
	outer(until);
	pthread_join(t, NULL);
	printf("%lu\n", sink);
	return 0;
}
