// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libperfrec(3) example: the program records itself (callchains on) while
 * two threads, main and one started after the recording began, run hot().
 * Changing PERFREC_TARGET_PROCESS to PERFREC_TARGET_CPUS records the whole host.
 * Build: cc -O2 -fno-omit-frame-pointer selfprof.c $(pkg-config --cflags --libs libperfrec)
 */
#include <pthread.h>
#include <perfrec/perfrec.h>

__attribute__((noinline)) static void hot(void)
{
	volatile unsigned long sink = 0;

	for (unsigned long i = 0; i < 300000000UL * 4; i++)
		sink += i;
}

__attribute__((noinline)) static void *worker(void *arg)
{
	hot();
	return arg;
}

int main(int argc, char **argv)
{
	struct perfrec_record_opts o = { .sz = sizeof(o), .callchain = true, .target = PERFREC_TARGET_PROCESS };
	struct perfrec_record *r;
	pthread_t t;

	if (perfrec_record__start(argc > 1 ? argv[1] : "selfprof.data", &o, &r) < 0)
		return 1;
	pthread_create(&t, NULL, worker, NULL);
	worker(NULL);
	pthread_join(t, NULL);
	return perfrec_record__stop(r) < 0;
}
