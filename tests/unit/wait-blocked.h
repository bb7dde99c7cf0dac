/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * For the off-CPU tests (test-offcpu.c, test-offcpu-whole.c): wait,
 * bounded, until a thread sleeps in read() on a given fd.  Writing to its
 * pipe after a fixed sleep instead assumed the thread was there by then: a
 * thread started late (a loaded machine, an ASan build) found its bytes
 * waiting, never blocked, and the program rightly counted nothing (seen in
 * CI: "min 0: the blocks are not counted", "reader blocked 0 ns").  The
 * kernel names the system call in /proc/self/task/TID/syscall only while
 * the thread is blocked in it ("running" otherwise).
 */
#ifndef PERFREC_TEST_WAIT_BLOCKED_H
#define PERFREC_TEST_WAIT_BLOCKED_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

/* @tid: where the thread stores its tid (0 until it runs). */
static void wait_blocked_in_read(const pid_t *tid, int fd)
{
	for (int i = 0; i < 10000; i++) {
		pid_t t = __atomic_load_n(tid, __ATOMIC_ACQUIRE);
		char path[64], line[256];
		unsigned long arg0 = ~0ul;
		long nr = -1;
		FILE *f;

		snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)t);
		if (t > 0 && (f = fopen(path, "re"))) {
			bool blocked = fgets(line, sizeof(line), f) && sscanf(line, "%ld %lx", &nr, &arg0) == 2 &&
				       nr == SYS_read && arg0 == (unsigned long)fd;

			fclose(f);
			if (blocked)
				return;
		}
		usleep(1000);
	}
	cr_assert_fail("the reader never blocked in read() on fd %d", fd);
}

#endif
