// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Which processes the walk of Python frames walks (daemon/pytrack.h):
 * the name test, the scan of the processes that run, and the side-band
 * records that add (an interpreter's MMAP2) and take back (EXIT, an exec)
 * a process, against a real walker (needs root and BPF: skipped without)
 * and the real Debian python3.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pytrack.h"

#define PYTHON "/usr/bin/python3.11"

Test(pytrack, python_names)
{
	static const char *const yes[] = {
		"/usr/bin/python3.11", "/usr/bin/python3", "/opt/py/bin/python", "python3.13t",
		"/root/.pyenv/versions/3.12.1/lib/libpython3.12.so.1.0", "/usr/lib/libpython3.11d.so",
	};
	static const char *const no[] = {
		"/usr/bin/bash", "/usr/bin/python3-config", "/usr/bin/pythonista",
		"/usr/lib/python3.11/lib-dynload/_json.cpython-311-x86_64-linux-gnu.so",
		"/usr/lib/libpython3.11.a", "/usr/bin/ipython3", "",
	};

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		cr_expect(pytrack_python_name(yes[i]), "%s", yes[i]);
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		cr_expect(!pytrack_python_name(no[i]), "%s", no[i]);
}

/* PROG running "-c CODE" until killed, once it printed (bounded wait). */
static pid_t start(const char *prog, const char *code)
{
	int ready[2];
	struct pollfd pfd;
	pid_t pid;
	char c;

	cr_assert_eq(pipe(ready), 0);
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		char *env[] = { "PATH=/usr/bin:/bin", NULL };

		dup2(ready[1], 1);
		execle(prog, prog, "-I", "-S", "-c", code, (char *)NULL, env);
		_exit(127);
	}
	close(ready[1]);
	pfd = (struct pollfd){ .fd = ready[0], .events = POLLIN };
	cr_assert_eq(poll(&pfd, 1, 60000), 1, "%s did not start", prog);
	cr_assert_eq(read(ready[0], &c, 1), 1, "%s exited", prog);
	close(ready[0]);
	return pid;
}

static void stop(pid_t pid)
{
	int st;

	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
}

static const char loop[] = "import sys\nsys.stdout.write('r')\nsys.stdout.flush()\nwhile True: pass\n";

static struct pywalk *walker(void)
{
	struct pywalk_opts o = { .sz = sizeof(o) };
	struct pywalk *pw = NULL;
	int r;

	if (geteuid() != 0) {
		cr_skip_test("needs root (BPF)");
		return NULL;
	}
	if (access(PYTHON, X_OK)) {
		cr_skip_test("%s not installed", PYTHON);
		return NULL;
	}
	r = pywalk_open(&o, &pw);
	cr_assert_eq(r, 0, "pywalk_open: %s", strerror(-r));
	return pw;
}

/* An executable MMAP2 of @path in @pid at @time, as the side-band event writes it. */
static void mmap2_at(struct pytrack *t, pid_t pid, const char *path, uint64_t time)
{
	union {
		struct perf_event_header h;
		char b[256];
	} u;
	struct {
		struct perf_event_header header;
		uint32_t pid, tid;
		uint64_t start, len, pgoff;
		uint32_t maj, min;
		uint64_t ino, ino_generation;
		uint32_t prot, flags;
	} m = {
		.header = { .type = PERF_RECORD_MMAP2, .misc = PERF_RECORD_MISC_USER },
		.pid = (uint32_t)pid, .tid = (uint32_t)pid, .start = 0x400000, .len = 4096,
		.prot = PROT_READ | PROT_EXEC, .flags = MAP_PRIVATE,
	};
	size_t n = (strlen(path) + 1 + 7) & ~(size_t)7;

	memset(&u, 0, sizeof(u));
	m.header.size = (uint16_t)(sizeof(m) + n);
	memcpy(u.b, &m, sizeof(m));
	memcpy(u.b + sizeof(m), path, strlen(path));
	pytrack_note(t, &u.h, time);
}

static void mmap2(struct pytrack *t, pid_t pid, const char *path)
{
	mmap2_at(t, pid, path, 0);
}

static void exit_rec(struct pytrack *t, pid_t pid)
{
	struct {
		struct perf_event_header h;
		uint32_t pid, ppid, tid, ptid;
		uint64_t time;
	} e = { { PERF_RECORD_EXIT, 0, sizeof(e) }, (uint32_t)pid, 1, (uint32_t)pid, 1, 0 };

	pytrack_note(t, &e.h, 0);
}

static void comm_exec_at(struct pytrack *t, pid_t pid, uint64_t time)
{
	struct {
		struct perf_event_header h;
		uint32_t pid, tid;
		char comm[16];
	} c = { { PERF_RECORD_COMM, PERF_RECORD_MISC_COMM_EXEC, sizeof(c) }, (uint32_t)pid,
		(uint32_t)pid, "sleep" };

	pytrack_note(t, &c.h, time);
}

static void comm_exec(struct pytrack *t, pid_t pid)
{
	comm_exec_at(t, pid, 0);
}

Test(pytrack, scan_then_exit)
{
	struct pywalk_stats ws;
	struct pytrack_stats st;
	struct pytrack *t;
	struct pywalk *pw = walker();
	pid_t pid;

	if (!pw)
		return;
	pid = start(PYTHON, loop);
	cr_assert_eq(pytrack_new(pw, NULL, &t), 0);
	pytrack_scan(t);
	pytrack_get_stats(t, &st);
	cr_expect_geq(st.found.n[PYPROC_OK], 1);
	cr_expect_geq(st.added, 1);
	cr_expect_eq(st.added, st.tracked);
	pywalk_get_stats(pw, &ws);
	cr_expect_eq(ws.procs, st.tracked);
	/* Seen again (its libpython, say): no second detection. */
	mmap2(t, pid, PYTHON);
	pytrack_get_stats(t, &st);
	cr_expect_eq(st.added, st.tracked);
	exit_rec(t, pid);
	pytrack_get_stats(t, &st);
	cr_expect_eq(st.removed, 1);
	cr_expect_eq(st.tracked, st.added - 1);
	pywalk_get_stats(pw, &ws);
	cr_expect_eq(ws.procs, st.tracked);
	stop(pid);
	pytrack_free(t);
	pywalk_free(pw);
}

/* Started after: added at its interpreter's MMAP2, through the cache for the second; exec takes it back. */
Test(pytrack, mmap2_adds_exec_removes)
{
	struct pytrack_stats st;
	struct pywalk_stats ws;
	struct pytrack *t;
	struct pywalk *pw = walker();
	pid_t a, b;

	if (!pw)
		return;
	cr_assert_eq(pytrack_new(pw, NULL, &t), 0);
	a = start(PYTHON, loop);
	b = start(PYTHON, loop);
	mmap2(t, a, "/usr/lib/x86_64-linux-gnu/libc.so.6");
	pytrack_get_stats(t, &st);
	cr_expect_eq(st.cache_misses + st.cache_hits, 0, "libc was looked at");
	mmap2(t, a, PYTHON);
	pytrack_get_stats(t, &st);
	cr_expect_eq(st.added, 1);
	cr_expect_eq(st.found.n[PYPROC_OK], 1);
	cr_expect_eq(st.cache_hits, 0);
	mmap2(t, b, PYTHON);
	pytrack_get_stats(t, &st);
	cr_expect_eq(st.added, 2);
	cr_expect_eq(st.cache_hits, st.cache_misses, "the second python was parsed again");
	comm_exec(t, a);
	pytrack_get_stats(t, &st);
	cr_expect_eq(st.tracked, 1);
	cr_expect_eq(st.removed, 1);
	pywalk_get_stats(pw, &ws);
	cr_expect_eq(ws.procs, 1);
	stop(a);
	stop(b);
	pytrack_free(t);
	pywalk_free(pw);
}

/* A file named like a python that is none: looked at, counted, not walked. */
Test(pytrack, python_name_not_python)
{
	char dir[] = "/tmp/test-pytrack.XXXXXX", exe[64];
	struct pytrack_stats st;
	struct pytrack *t;
	struct pywalk *pw = walker();
	struct stat sb;
	int in, out;
	pid_t pid;

	if (!pw)
		return;
	cr_assert(mkdtemp(dir));
	snprintf(exe, sizeof(exe), "%s/python3", dir);
	in = open("/bin/sh", O_RDONLY | O_CLOEXEC);
	out = open(exe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0700);
	cr_assert(in >= 0 && out >= 0 && fstat(in, &sb) == 0);
	cr_assert_eq(sendfile(out, in, NULL, (size_t)sb.st_size), sb.st_size);
	close(in);
	close(out);
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		execl(exe, exe, "-c", "exec sleep 60", (char *)NULL);
		_exit(127);
	}
	cr_assert_eq(pytrack_new(pw, NULL, &t), 0);
	mmap2(t, pid, exe);
	pytrack_get_stats(t, &st);
	cr_expect_eq(st.added, 0);
	cr_expect_eq(st.found.n[PYPROC_OK], 0);
	cr_expect_eq(st.found.n[PYPROC_NOT_PYTHON], 1);
	stop(pid);
	unlink(exe);
	rmdir(dir);
	pytrack_free(t);
	pywalk_free(pw);
}

/*
 * The drain takes the rings one after the other: the exec of a shell on
 * one CPU can come after the MMAP2 of the python that shell exec'd next
 * on the other (unshare -m sh -c '...; exec python': test-python-frames's
 * process in a mount namespace of its own, one run in three).  That exec
 * ended the shell, not python: python stays walked until an exec or exit
 * newer than its interpreter's MMAP2.
 */
Test(pytrack, an_exec_older_than_the_interpreter_mmap2_is_not_its_end)
{
	struct pytrack_stats st;
	struct pywalk_stats ws;
	struct pytrack *t;
	struct pywalk *pw = walker();
	pid_t pid;

	if (!pw)
		return;
	cr_assert_eq(pytrack_new(pw, NULL, &t), 0);
	pid = start(PYTHON, loop);
	mmap2_at(t, pid, PYTHON, 2000);
	comm_exec_at(t, pid, 1000);   /* the shell's exec, drained late */
	pytrack_get_stats(t, &st);
	cr_expect_eq(st.tracked, 1, "an older exec took the process back");
	cr_expect_eq(st.removed, 0);
	cr_expect_eq(st.stale, 1, "not counted");
	pywalk_get_stats(pw, &ws);
	cr_expect_eq(ws.procs, 1, "the walker no longer walks it");
	/* a newer one is its end */
	comm_exec_at(t, pid, 3000);
	pytrack_get_stats(t, &st);
	cr_expect_eq(st.tracked, 0);
	cr_expect_eq(st.removed, 1);
	pywalk_get_stats(pw, &ws);
	cr_expect_eq(ws.procs, 0);
	stop(pid);
	pytrack_free(t);
	pywalk_free(pw);
}
