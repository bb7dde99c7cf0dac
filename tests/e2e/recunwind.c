// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libperfrec's record object recording another process with DWARF
 * callchains, for test-record-unwind.sh:
 *
 *   recunwind host|raw PID DIR   a.data (the first file), snap.data (a
 *                                snapshot of it), b.data (the file after a
 *                                rotate); the target runs 1.5 CPU seconds
 *                                in each file
 *   recunwind nodwarf PID DIR    unwind_host without stack_user: prints
 *                                the error and the message it got
 *
 * host asks for host unwinding (unwind_host), raw leaves the stacks in the
 * files.  Every message of the library goes to stderr as "msg ERR: TEXT".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <perfrec/perfrec.h>

static void on_msg(void *ctx, int err, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "msg %d: %s\n", err, msg);
}

/* utime + stime of @pid in clock ticks; -1 when it is gone. */
static long cpu_ticks(int pid)
{
	char path[64], buf[1024], *p;
	unsigned long ut, st;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	/* After the command name, which may hold spaces: state is field 3, utime 14. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		return -1;
	return (long)(ut + st);
}

/* Wait (at most 120 s) until @pid has run @secs more CPU seconds. */
static int ran(int pid, double secs)
{
	long hz = sysconf(_SC_CLK_TCK), t0 = cpu_ticks(pid);
	struct timespec tick = { .tv_nsec = 50 * 1000 * 1000 };

	for (int i = 0; i < 120 * 20; i++) {
		long t = cpu_ticks(pid);

		if (t < 0 || t0 < 0) {
			fprintf(stderr, "process %d is gone\n", pid);
			return -1;
		}
		if (t - t0 >= (long)(secs * hz))
			return 0;
		nanosleep(&tick, NULL);
	}
	fprintf(stderr, "process %d did not run %.1f s within 120 s\n", pid, secs);
	return -1;
}

int main(int argc, char **argv)
{
	struct perfrec_record_opts o = {
		.sz = sizeof(o), .events = "cpu-clock", .freq = 499, .callchain = true,
		.target = PERFREC_TARGET_PROCESS, .mmap_pages = 1024,
		.stack_user = PERFREC_STACK_USER_DEFAULT, .msg = on_msg,
	};
	struct perfrec_record *r;
	char a[4096], b[4096], snap[4096];
	int pid, e, e2;

	if (argc != 4) {
		fprintf(stderr, "usage: recunwind host|raw|nodwarf PID DIR\n");
		return 2;
	}
	pid = atoi(argv[2]);
	o.pid = pid;
	o.unwind_host = strcmp(argv[1], "raw") != 0;
	if (!strcmp(argv[1], "nodwarf"))
		o.stack_user = 0;
	snprintf(a, sizeof(a), "%s/a.data", argv[3]);
	snprintf(b, sizeof(b), "%s/b.data", argv[3]);
	snprintf(snap, sizeof(snap), "%s/snap.data", argv[3]);

	e = perfrec_record__start(a, &o, &r);
	if (e < 0) {
		printf("start: %d %s\n", e, strerror(-e));
		return 1;
	}
	if (ran(pid, 1.5) < 0)
		return 1;
	e = perfrec_record__snapshot(r, snap);
	if (e < 0)
		fprintf(stderr, "snapshot: %s\n", strerror(-e));
	if (e == 0) {
		e = perfrec_record__rotate(r, b);
		if (e < 0)
			fprintf(stderr, "rotate: %s\n", strerror(-e));
	}
	if (e == 0 && ran(pid, 1.5) < 0)
		e = -ESRCH;
	e2 = perfrec_record__stop(r);
	if (e2 < 0)
		fprintf(stderr, "stop: %s\n", strerror(-e2));
	return e < 0 || e2 < 0;
}
