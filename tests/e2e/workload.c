// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A workload with a known shape for end-to-end tests: N threads (default:
 * one per online CPU) spin for SECONDS in hot_function(), which only
 * caller_function() calls.  Both keep their frames (built with frame
 * pointers and noinline) so callchains show caller -> hot.
 *
 *   workload [SECONDS] [THREADS]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double seconds = 3.0;
static volatile unsigned long sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void store(unsigned long x);
__attribute__((noinline)) void store(unsigned long x)
{
	sink += x;
}

/*
 * Not a leaf (it calls store()): gcc gives leaves no frame even with
 * -fno-omit-frame-pointer, and the frame-pointer unwinder would then skip
 * the caller.
 */
__attribute__((noinline)) unsigned long hot_function(unsigned long n);
__attribute__((noinline)) unsigned long hot_function(unsigned long n)
{
	unsigned long x = n;

	for (unsigned long i = 0; i < 200000; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	store(x);
	return x;
}

__attribute__((noinline)) void caller_function(double until);
__attribute__((noinline)) void caller_function(double until)
{
	unsigned long n = 0;

	while (now() < until)
		n += hot_function(n);
	sink += n;
}

static void *thread_main(void *arg)
{
	caller_function(*(double *)arg);
	return NULL;
}

int main(int argc, char **argv)
{
	long threads = sysconf(_SC_NPROCESSORS_ONLN);
	pthread_t *tids;
	double until;

	if (argc > 1)
		seconds = atof(argv[1]);
	if (argc > 2)
		threads = atol(argv[2]);
	if (threads < 1)
		threads = 1;
	tids = calloc(threads, sizeof(*tids));
	if (!tids)
		return 1;
	until = now() + seconds;
	for (long i = 1; i < threads; i++)
		pthread_create(&tids[i], NULL, thread_main, &until);
	caller_function(until);
	for (long i = 1; i < threads; i++)
		pthread_join(tids[i], NULL);
	free(tids);
	return 0;
}
