// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A workload whose hot function changes halfway, for differential flame
 * graphs: phase one calls alpha_hot() four times for each beta_hot() call,
 * phase two the other way round, both from run_phase() (frame pointers
 * kept, as workload.c), so each function grows in one window and shrinks in
 * the other and is in both.  It prints
 * each phase's start and end in CLOCK_MONOTONIC ns (perfrecd's sample
 * clock) and CLOCK_REALTIME ns (for --from/--to):
 *
 *   shifts SECONDS_PER_PHASE
 *   -> phase alpha mono START END wall START END
 *      phase beta mono START END wall START END
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

static unsigned long long ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

__attribute__((noinline)) void store(unsigned long x);
__attribute__((noinline)) void store(unsigned long x)
{
	sink += x;
}

/* Not leaves (they call store()), so the frame-pointer unwinder keeps their callers. */
__attribute__((noinline)) unsigned long alpha_hot(unsigned long n);
__attribute__((noinline)) unsigned long alpha_hot(unsigned long n)
{
	for (unsigned long i = 0; i < 100000; i++)
		n = n * 6364136223846793005UL + 1442695040888963407UL;
	store(n);
	return n;
}

__attribute__((noinline)) unsigned long beta_hot(unsigned long n);
__attribute__((noinline)) unsigned long beta_hot(unsigned long n)
{
	for (unsigned long i = 0; i < 100000; i++)
		n = (n ^ (n >> 7)) * 2862933555777941757UL + 3037000493UL;
	store(n);
	return n;
}

__attribute__((noinline)) void run_phase(const char *name, unsigned alphas, unsigned betas, double secs);
__attribute__((noinline)) void run_phase(const char *name, unsigned alphas, unsigned betas, double secs)
{
	unsigned long long m0 = ns(CLOCK_MONOTONIC), w0 = ns(CLOCK_REALTIME), end = m0 + secs * 1e9;
	unsigned long n = 1;

	while (ns(CLOCK_MONOTONIC) < end) {
		for (unsigned i = 0; i < alphas; i++)
			n += alpha_hot(n);
		for (unsigned i = 0; i < betas; i++)
			n += beta_hot(n);
	}
	sink += n;
	printf("phase %s mono %llu %llu wall %llu %llu\n", name, m0, ns(CLOCK_MONOTONIC), w0, ns(CLOCK_REALTIME));
	fflush(stdout);
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 2.0;

	run_phase("alpha", 4, 1, secs);
	run_phase("beta", 1, 4, secs);
	return 0;
}
