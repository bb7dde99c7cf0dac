/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* For the tests of a real recorder (test-snapshot.c, test-recorder-full-disk.c). */
#ifndef PERFREC_TEST_RECORDER_BUSY_H
#define PERFREC_TEST_RECORDER_BUSY_H

#include <time.h>

static volatile unsigned long busy_spin;

/* Keep a CPU busy for @ms, draining @rec as the daemon's loop would. */
static void busy_draining(struct recorder *rec, int ms)
{
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	do {
		for (int i = 0; i < 100000; i++)
			busy_spin += (unsigned long)i;
		recorder_drain(rec);
		clock_gettime(CLOCK_MONOTONIC, &b);
	} while ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < ms);
}

#endif
