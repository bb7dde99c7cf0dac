// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Helper of the synthesis benchmark: one process holding N sleeping threads
 * (small stacks, so 10,000 of them cost ~160 MiB of address space but little
 * memory), so /proc looks like a busy host's.  Prints "ready N" once all
 * exist and then sleeps until killed.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *sleeper(void *arg)
{
	for (;;)
		pause();
	return arg;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 10000, made = 0;
	pthread_attr_t attr;

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 16384);
	for (; made < n; made++) {
		pthread_t t;
		int r = pthread_create(&t, &attr, sleeper, NULL);

		if (r) {
			fprintf(stderr, "spawn-threads: thread %ld: %s\n", made, strerror(r));
			break;
		}
	}
	printf("ready %ld\n", made);
	fflush(stdout);
	for (;;)
		pause();
}
