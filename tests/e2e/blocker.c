// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Off-CPU workload with a known answer: a reader thread blocks in
 * wait_for_data() on a pipe that a writer thread feeds every INTERVAL_MS,
 * COUNT times.  It prints the reader's tid and the total time it measured
 * itself spending inside read(), which the e2e test compares with the
 * off-CPU samples' periods.  Built with frame pointers so the user stack at
 * the block point walks back through wait_for_data.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int fds[2];
static int count = 20, interval_ms = 50;
static uint64_t blocked_ns;
static long reader_tid;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

__attribute__((noinline)) int wait_for_data(int fd);
__attribute__((noinline)) int wait_for_data(int fd)
{
	char c;
	uint64_t t0 = now_ns();
	long n;

	/*
	 * The read system call made right here, not through libc's read(): a
	 * leaf libc function keeps no frame pointer, so a frame-pointer walk
	 * from inside it skips its caller, which is the frame this test wants.
	 */
	__asm__ volatile("syscall"
			 : "=a"(n)
			 : "0"((long)SYS_read), "D"((long)fd), "S"(&c), "d"(1L)
			 : "rcx", "r11", "memory");

	blocked_ns += now_ns() - t0;
	__asm__ volatile("" ::: "memory"); /* keep the frame: no tail call */
	return (int)n;
}

static void *reader(void *arg)
{
	reader_tid = syscall(SYS_gettid);
	for (int i = 0; i < count; i++)
		if (wait_for_data(fds[0]) != 1)
			break;
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;

	if (argc > 1)
		count = atoi(argv[1]);
	if (argc > 2)
		interval_ms = atoi(argv[2]);
	if (pipe(fds) < 0 || pthread_create(&t, NULL, reader, NULL) != 0)
		return 1;
	for (int i = 0; i < count; i++) {
		struct timespec ts = { interval_ms / 1000, (long)(interval_ms % 1000) * 1000000L };

		nanosleep(&ts, NULL);
		if (write(fds[1], "x", 1) != 1)
			return 1;
	}
	pthread_join(t, NULL);
	printf("tid=%ld blocked_ns=%llu\n", reader_tid, (unsigned long long)blocked_ns);
	return 0;
}
