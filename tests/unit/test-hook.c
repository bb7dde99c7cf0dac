// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Tests of the on-rotate hook: the command sees the file as its last
 * argument and the PERFREC_* environment, starts with a clean signal mask
 * and /dev/null as stdin, is never waited for by hook_run, is reaped with
 * its exit status logged, and at most HOOK_MAX_RUNNING run at once; it gets
 * none of the daemon's environment, descriptors or capabilities.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hook.h"

static char dir[64];

static void make_dir(void)
{
	strcpy(dir, "/tmp/test-hook-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void remove_dir(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_expect_eq(system(cmd), 0);
}

/* Reaps until @n hooks ended; gives up after 20 s so a broken reaper fails
 * the test instead of hanging it. */
static int reap_n(int n)
{
	int got = 0;

	for (int i = 0; i < 2000 && got < n; i++) {
		got += hook_reap();
		if (got < n)
			usleep(10000);
	}
	return got;
}

static char *read_file(const char *name)
{
	static char buf[65536];
	char path[256];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "re");
	cr_assert_not_null(f, "%s missing", path);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

static bool has_line(const char *text, const char *line)
{
	size_t len = strlen(line);

	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (strncmp(p, line, len) == 0 && (p[len] == '\n' || p[len] == 0))
			return true;
	return false;
}

Test(hook, command_gets_path_as_last_argument_and_perfrec_environment)
{
	struct tm tm = { .tm_year = 2026 - 1900, .tm_mon = 10, .tm_mday = 23, .tm_hour = 14, .tm_min = 3 };
	uint64_t t0 = (uint64_t)timegm(&tm) * 1000000000;
	struct hook_info hi = {
		.path = "/var/lib/perfrec/my file.data", .host = "box1",
		.start_wall_ns = t0 + 123456789, .end_wall_ns = t0 + 61 * 1000000000ULL + 7000000,
		.samples = 12345, .lost = 6, .recovered = true,
	};
	char cmd[1024], *env;
	sigset_t mask;

	make_dir();
	/* A stale value in the daemon's environment must be replaced. */
	setenv("PERFREC_HOST", "stale", 1);
	/* The daemon blocks signals for its signalfd; the hook must not inherit that. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	snprintf(cmd, sizeof(cmd),
		 "sh -c 'env > %1$s/env; for a; do last=$a; done; printf %%s \"$last\" > %1$s/last; "
		 "echo $# > %1$s/argc; "
		 /* read by the shell itself: a grep child would read the mask
		  * the shell holds while it forks, not the one it was given */
		 "while read -r k v; do [ \"$k\" = SigBlk: ] && printf \"SigBlk:\\t%%s\\n\" \"$v\" > %1$s/sigblk; done < /proc/$$/status; "
		 "readlink /proc/$$/fd/0 > %1$s/stdin' argv0 first",
		 dir);
	cr_assert_gt(hook_run(cmd, &hi), 0);
	cr_assert_eq(reap_n(1), 1);
	cr_expect_eq(hook_running(), 0);

	cr_expect_str_eq(read_file("last"), hi.path);
	cr_expect_str_eq(read_file("argc"), "2\n");
	cr_expect(has_line(read_file("sigblk"), "SigBlk:\t0000000000000000"), "%s", read_file("sigblk"));
	cr_expect_str_eq(read_file("stdin"), "/dev/null\n");
	env = read_file("env");
	cr_expect(has_line(env, "PERFREC_FILE=/var/lib/perfrec/my file.data"), "%s", env);
	cr_expect(has_line(env, "PERFREC_HOST=box1"), "%s", env);
	cr_expect(!strstr(env, "PERFREC_HOST=stale"), "%s", env);
	cr_expect(has_line(env, "PERFREC_START=2026-11-23T14:03:00.123Z"), "%s", env);
	cr_expect(has_line(env, "PERFREC_END=2026-11-23T14:04:01.007Z"), "%s", env);
	cr_expect(has_line(env, "PERFREC_SAMPLES=12345"), "%s", env);
	cr_expect(has_line(env, "PERFREC_LOST=6"), "%s", env);
	cr_expect(has_line(env, "PERFREC_RECOVERED=1"), "%s", env);
	/* A fixed PATH, whatever the daemon's. */
	cr_expect(has_line(env, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"), "%s", env);
	remove_dir();
}

/* The value of "@key:\t..." in the hook's dump of /proc/self/status. */
static const char *status_field(const char *status, const char *key, char *out, size_t size)
{
	size_t len = strlen(key);

	for (const char *p = status; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, key, len) && p[len] == ':') {
			p += len + 1;
			p += strspn(p, " \t");
			snprintf(out, size, "%.*s", (int)strcspn(p, "\n"), p);
			return out;
		}
	return "(missing)";
}

/*
 * The hook is a helper of a privileged daemon (issue 28 item 13): it gets
 * none of the daemon's secrets (environment), descriptors or capabilities.
 * The test runs as the daemon would run as root without user=.
 */
Test(hook, gets_a_clean_environment_no_descriptors_and_no_capabilities)
{
	struct hook_info hi = { .path = "/x/e.data", .host = "h" };
	char cmd[1024], v[64], *st;
	int p[2];

	make_dir();
	setenv("AWS_SECRET_ACCESS_KEY", "s3cr3t", 1);
	setenv("LD_PRELOAD", "", 1);
	setenv("TZ", "UTC", 1);
	/* A descriptor left open without O_CLOEXEC, as a client's pipe may be. */
	cr_assert_eq(pipe(p), 0);
	snprintf(cmd, sizeof(cmd),
		 "sh -c 'env > %1$s/env; ls /proc/self/fd > %1$s/fds; cat /proc/$$/status > %1$s/status' argv0",
		 dir);
	cr_assert_gt(hook_run(cmd, &hi), 0);
	cr_assert_eq(reap_n(1), 1);
	close(p[0]);
	close(p[1]);
	cr_expect(!strstr(read_file("env"), "AWS_SECRET_ACCESS_KEY"), "%s", read_file("env"));
	cr_expect(!strstr(read_file("env"), "LD_PRELOAD"), "%s", read_file("env"));
	cr_expect(has_line(read_file("env"), "TZ=UTC"), "%s", read_file("env"));
	unsetenv("AWS_SECRET_ACCESS_KEY");
	unsetenv("LD_PRELOAD");
	unsetenv("TZ");
	/* 0, 1, 2, and the one ls opened to list them. */
	cr_expect_str_eq(read_file("fds"), "0\n1\n2\n3\n");
	st = read_file("status");
	cr_expect_str_eq(status_field(st, "CapInh", v, sizeof(v)), "0000000000000000");
	cr_expect_str_eq(status_field(st, "CapPrm", v, sizeof(v)), "0000000000000000");
	cr_expect_str_eq(status_field(st, "CapEff", v, sizeof(v)), "0000000000000000");
	cr_expect_str_eq(status_field(st, "CapAmb", v, sizeof(v)), "0000000000000000");
	cr_expect_str_eq(status_field(st, "NoNewPrivs", v, sizeof(v)), "1");
	/* Had we CAP_SETPCAP (root without the daemon's drop), the bounding set goes too. */
	if (prctl(PR_CAPBSET_READ, CAP_SETPCAP) == 1)
		cr_expect_str_eq(status_field(st, "CapBnd", v, sizeof(v)), "0000000000000000");
	remove_dir();
}

Test(hook, exit_status_is_reaped_and_logged)
{
	static const struct { const char *cmd; const char *log; } cases[] = {
		{ "true", "on-rotate hook for /x/a.data exited with status 0" },
		{ "exit 3 #", "on-rotate hook for /x/a.data exited with status 3" },
		{ "kill -KILL $$ #", "on-rotate hook for /x/a.data killed by signal Killed" },
	};
	struct hook_info hi = { .path = "/x/a.data", .host = "h" };

	make_dir();
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char path[256];
		int fd, saved = dup(STDERR_FILENO);

		snprintf(path, sizeof(path), "%s/log%zu", dir, i);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		cr_assert_geq(fd, 0);
		cr_assert_gt(hook_run(cases[i].cmd, &hi), 0);
		dup2(fd, STDERR_FILENO);
		int got = reap_n(1);
		dup2(saved, STDERR_FILENO);
		close(saved);
		close(fd);
		cr_expect_eq(got, 1, "%s: reaped %d", cases[i].cmd, got);
		snprintf(path, sizeof(path), "log%zu", i);
		cr_expect(strstr(read_file(path), cases[i].log), "%s: log was \"%s\"", cases[i].cmd,
			  read_file(path));
	}
	cr_expect_eq(hook_running(), 0);
	remove_dir();
}

Test(hook, run_does_not_wait_for_the_hook)
{
	struct hook_info hi = { .path = "/x/b.data", .host = "h" };
	char cmd[512], go[128];
	int fd;

	make_dir();
	/* The hook waits for a file only the test creates after hook_run
	 * returned: were hook_run to wait, the test would hang (and fail). */
	snprintf(go, sizeof(go), "%s/go", dir);
	snprintf(cmd, sizeof(cmd), "while [ ! -e %s ]; do sleep 0.02; done; :", go);
	cr_assert_gt(hook_run(cmd, &hi), 0);
	cr_expect_eq(hook_running(), 1);
	cr_expect_eq(hook_reap(), 0);
	cr_expect_eq(hook_running(), 1);
	fd = open(go, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	cr_assert_geq(fd, 0);
	close(fd);
	cr_expect_eq(reap_n(1), 1);
	cr_expect_eq(hook_running(), 0);
	remove_dir();
}

Test(hook, other_children_are_not_reaped)
{
	struct hook_info hi = { .path = "/x/c.data", .host = "h" };
	int st = 0;
	pid_t child = fork();

	cr_assert_geq(child, 0);
	if (child == 0)
		_exit(7);
	cr_assert_gt(hook_run("true", &hi), 0);
	cr_expect_eq(reap_n(1), 1);
	/* The daemon's own child is still there for its owner to wait for. */
	cr_expect_eq(waitpid(child, &st, 0), child);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 7);
}

Test(hook, at_most_max_running_hooks)
{
	struct hook_info hi = { .path = "/x/d.data", .host = "h" };
	pid_t pids[HOOK_MAX_RUNNING];

	/* exec: the hook's pid is sleep itself, so killing it ends it all. */
	for (int i = 0; i < HOOK_MAX_RUNNING; i++) {
		pids[i] = hook_run("exec sleep 60 #", &hi);
		cr_assert_gt(pids[i], 0, "hook %d: %d", i, pids[i]);
	}
	cr_expect_eq(hook_running(), HOOK_MAX_RUNNING);
	cr_expect_eq(hook_run("true", &hi), -EBUSY);
	cr_expect_eq(hook_running(), HOOK_MAX_RUNNING);
	for (int i = 0; i < HOOK_MAX_RUNNING; i++)
		kill(pids[i], SIGKILL);
	cr_expect_eq(reap_n(HOOK_MAX_RUNNING), HOOK_MAX_RUNNING);
	cr_expect_eq(hook_running(), 0);
	/* Slots are free again. */
	cr_expect_gt(hook_run("true", &hi), 0);
	cr_expect_eq(reap_n(1), 1);
}
