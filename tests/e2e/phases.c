// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A workload in three phases for the time-window tests: phase_one(),
 * phase_two() and phase_three() each spin on one CPU for their number of
 * seconds, one after the other, and each prints its wall-clock start and
 * end (CLOCK_REALTIME ns) when it is over:
 *
 *   phase 2 start 1795442580000000000 end 1795442587000000000
 *
 * With GO_FILE, it waits (polling) for that file to exist before phase one,
 * so a test can start it before the recorder and start the phases once the
 * recording runs: its maps then predate every file.
 *
 *   phases SECS1 SECS2 SECS3 [GO_FILE]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile uint64_t sink;

static uint64_t wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Spin for @ns; the loop is in each phase's own body so samples land there. */
#define SPIN(ns)                                                          \
	do {                                                              \
		uint64_t end_ = wall_ns() + (ns);                         \
		while (wall_ns() < end_)                                  \
			for (int i_ = 0; i_ < 20000; i_++)                \
				sink = sink * 31 + (uint64_t)i_;          \
	} while (0)

__attribute__((noinline)) void phase_one(uint64_t ns);
__attribute__((noinline)) void phase_one(uint64_t ns)
{
	SPIN(ns);
}

__attribute__((noinline)) void phase_two(uint64_t ns);
__attribute__((noinline)) void phase_two(uint64_t ns)
{
	SPIN(ns);
}

__attribute__((noinline)) void phase_three(uint64_t ns);
__attribute__((noinline)) void phase_three(uint64_t ns)
{
	SPIN(ns);
}

int main(int argc, char **argv)
{
	void (*fn[3])(uint64_t) = { phase_one, phase_two, phase_three };

	if (argc < 4) {
		fprintf(stderr, "usage: phases SECS1 SECS2 SECS3 [GO_FILE]\n");
		return 2;
	}
	if (argc > 4)
		while (access(argv[4], F_OK) != 0)
			usleep(10000);
	for (int p = 0; p < 3; p++) {
		uint64_t start = wall_ns(), end;

		fn[p]((uint64_t)(atof(argv[p + 1]) * 1e9));
		end = wall_ns();
		printf("phase %d start %llu end %llu\n", p + 1, (unsigned long long)start, (unsigned long long)end);
		fflush(stdout);
	}
	return 0;
}
