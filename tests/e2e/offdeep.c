// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Off-CPU workload without frame pointers (built -O2 -fomit-frame-pointer,
 * like Debian's libc): the main thread blocks in libc's read() of a pipe,
 * three calls below main,
 *
 *   main -> level1 -> level2 -> level3 -> read -> (kernel)
 *
 * while a writer thread feeds the pipe one byte every INTERVAL_MS, COUNT
 * times.  A frame-pointer walk from inside read() finds no caller; the
 * whole path needs the CFI.  Prints the main thread's tid and the time it
 * measured itself spending in read().
 *
 * With "badsp" the main thread blocks instead in a read system call made
 * with its stack pointer on an unmapped page: a thread whose user stack
 * cannot be read (no signal may come meanwhile: it would have no stack).
 * With "hold" it stays, once done and its tid printed, until its standard
 * input ends, so that it is alive when the recording's file ends.
 *
 *   offdeep [badsp|hold] [COUNT [INTERVAL_MS]]
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int fds[2];
static int count = 20, interval_ms = 50;
static unsigned long long blocked_ns;

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static void *writer(void *arg)
{
	struct timespec ts = { interval_ms / 1000, (long)(interval_ms % 1000) * 1000000L };

	(void)arg;
	for (int i = 0; i < count; i++) {
		nanosleep(&ts, NULL);
		if (write(fds[1], "x", 1) != 1)
			return NULL;
	}
	return NULL;
}

/*
 * Each level keeps a buffer of its own on the stack that the compiler
 * cannot drop, and does work after the call, so the frames stay distinct
 * (no inlining, no tail calls).
 */
__attribute__((noinline)) long level3(int fd);
__attribute__((noinline)) long level3(int fd)
{
	volatile char buf[64];
	unsigned long long t0 = now_ns();
	long n = read(fd, (char *)buf, 1);

	blocked_ns += now_ns() - t0;
	return n + buf[0];
}

__attribute__((noinline)) long level2(int fd);
__attribute__((noinline)) long level2(int fd)
{
	volatile char pad[96];

	memset((char *)pad, 2, sizeof(pad));
	return level3(fd) + pad[5];
}

__attribute__((noinline)) long level1(int fd);
__attribute__((noinline)) long level1(int fd)
{
	volatile char pad[128];
	long sum = 0;

	memset((char *)pad, 1, sizeof(pad));
	for (int i = 0; i < count; i++)
		sum += level2(fd);
	return sum + pad[7];
}

/* read(fd, buf, 1) with %rsp at 0x10 meanwhile; the kernel never uses it. */
__attribute__((noinline)) long read_without_stack(int fd, char *buf);
__attribute__((noinline)) long read_without_stack(int fd, char *buf)
{
	long n;

	__asm__ volatile("mov %%rsp, %%r12\n\t"
			 "mov $0x10, %%rsp\n\t"
			 "syscall\n\t"
			 "mov %%r12, %%rsp"
			 : "=a"(n)
			 : "0"((long)SYS_read), "D"((long)fd), "S"(buf), "d"(1L)
			 : "rcx", "r11", "r12", "memory");
	return n;
}

int main(int argc, char **argv)
{
	bool badsp = argc > 1 && strcmp(argv[1], "badsp") == 0;
	bool hold = argc > 1 && strcmp(argv[1], "hold") == 0;
	pthread_t t;
	long sum = 0;
	char c;

	if (badsp || hold) {
		argc--;
		argv++;
	}
	if (argc > 1)
		count = atoi(argv[1]);
	if (argc > 2)
		interval_ms = atoi(argv[2]);
	if (count <= 0 || interval_ms <= 0 || pipe(fds) < 0)
		return 2;
	if (pthread_create(&t, NULL, writer, NULL) != 0)
		return 1;
	if (badsp)
		for (int i = 0; i < count; i++) {
			unsigned long long t0 = now_ns();

			sum += read_without_stack(fds[0], &c);
			blocked_ns += now_ns() - t0;
		}
	else
		sum = level1(fds[0]);
	pthread_join(t, NULL);
	printf("tid=%d sum=%ld blocked_ns=%llu\n", (int)getpid(), sum, blocked_ns);
	fflush(stdout);
	while (hold && read(0, &c, 1) > 0)
		;
	return 0;
}
