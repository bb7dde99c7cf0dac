// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * on-rotate hooks.  posix_spawn (vfork-like in glibc) keeps starting a hook
 * cheap even with large ring mappings, and reports a failed exec of
 * /bin/sh to the caller.  The file's path travels in the environment and is
 * expanded by the shell as "$PERFREC_FILE", so no quoting of untrusted
 * names is ever needed.  The daemon blocks signals for its signalfd, and a
 * spawned child would inherit that mask; it is reset so that a hook can be
 * interrupted and its own children behave normally.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hook.h"
#include "log.h"

extern char **environ;

struct running_hook {
	pid_t pid; /* 0: free slot */
	char *path;
};

static struct running_hook hooks[HOOK_MAX_RUNNING];
static int n_running;

static void format_time(char *buf, size_t size, uint64_t ns)
{
	time_t sec = ns / 1000000000;
	struct tm tm;
	size_t n;

	if (!gmtime_r(&sec, &tm) || !(n = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm))) {
		snprintf(buf, size, "1970-01-01T00:00:00.000Z");
		return;
	}
	snprintf(buf + n, size - n, ".%03uZ", (unsigned)(ns / 1000000 % 1000));
}

/* asprintf() that gives NULL on failure (asprintf leaves its pointer undefined). */
__attribute__((format(printf, 1, 2))) static char *str_printf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&s, fmt, ap);
	va_end(ap);
	return r < 0 ? NULL : s;
}

/* Replaces the daemon's own PERFREC_* variables rather than adding
 * duplicates, whose precedence would depend on the shell. */
static bool is_ours(const char *entry)
{
	static const char *const names[] = { "PERFREC_FILE=", "PERFREC_HOST=", "PERFREC_START=",
					     "PERFREC_END=", "PERFREC_SAMPLES=", "PERFREC_LOST=",
					     "PERFREC_RECOVERED=" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strncmp(entry, names[i], strlen(names[i])) == 0)
			return true;
	return false;
}

#define NR_VARS 7

/* The hook's environment: ours without PERFREC_* (is_ours()), then @vars.
 * The strings are borrowed; NULL when out of memory. */
static char **hook_env(char *const *vars)
{
	size_t nenv = 0, k = 0;
	char **envp;

	while (environ && environ[nenv])
		nenv++;
	envp = calloc(nenv + NR_VARS + 1, sizeof(*envp));
	if (!envp)
		return NULL;
	for (size_t i = 0; i < nenv; i++)
		if (!is_ours(environ[i]))
			envp[k++] = environ[i];
	for (int i = 0; i < NR_VARS; i++)
		envp[k++] = vars[i];
	return envp;
}

/*
 * Start "/bin/sh -c @script" with @envp, stdin from /dev/null, and every
 * signal unblocked at its default action (the daemon blocks those its
 * signalfd takes).  0 and *ret_pid, or -errno.
 */
static int spawn_shell(char *script, char **envp, pid_t *ret_pid)
{
	char *argv[] = { "/bin/sh", "-c", script, NULL };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, all;
	int r;

	sigemptyset(&none);
	sigfillset(&all);
	r = posix_spawn_file_actions_init(&fa);
	if (r)
		return -r;
	r = posix_spawnattr_init(&attr);
	if (r) {
		posix_spawn_file_actions_destroy(&fa);
		return -r;
	}
	r = posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
	if (!r)
		r = posix_spawnattr_setsigmask(&attr, &none);
	if (!r)
		r = posix_spawnattr_setsigdefault(&attr, &all);
	if (!r)
		r = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	if (!r)
		r = posix_spawn(ret_pid, argv[0], &fa, &attr, argv, envp);
	posix_spawnattr_destroy(&attr);
	posix_spawn_file_actions_destroy(&fa);
	return -r;
}

int hook_run(const char *command, const struct hook_info *info)
{
	char start[40], end[40], *vars[NR_VARS] = { NULL }, *script = NULL, **envp = NULL;
	struct running_hook *slot = NULL;
	pid_t pid;
	int r;

	for (int i = 0; i < HOOK_MAX_RUNNING && !slot; i++)
		if (!hooks[i].pid)
			slot = &hooks[i];
	if (!slot)
		return log_error_errno(-EBUSY, "Not running on-rotate hook for %s: %d hooks still running",
				       info->path, HOOK_MAX_RUNNING);

	format_time(start, sizeof(start), info->start_wall_ns);
	format_time(end, sizeof(end), info->end_wall_ns);
	vars[0] = str_printf("PERFREC_FILE=%s", info->path);
	vars[1] = str_printf("PERFREC_HOST=%s", info->host ? info->host : "");
	vars[2] = str_printf("PERFREC_START=%s", start);
	vars[3] = str_printf("PERFREC_END=%s", end);
	vars[4] = str_printf("PERFREC_SAMPLES=%" PRIu64, info->samples);
	vars[5] = str_printf("PERFREC_LOST=%" PRIu64, info->lost);
	vars[6] = str_printf("PERFREC_RECOVERED=%d", info->recovered ? 1 : 0);
	script = str_printf("%s \"$PERFREC_FILE\"", command);
	r = script ? 0 : -ENOMEM;
	for (int i = 0; i < NR_VARS; i++)
		if (!vars[i])
			r = -ENOMEM;
	if (r == 0) {
		envp = hook_env(vars);
		r = envp ? spawn_shell(script, envp, &pid) : -ENOMEM;
	}
	if (r < 0) {
		log_error("Failed to start on-rotate hook for %s: %s", info->path, strerror(-r));
	} else {
		/* Logging names the file; without memory for it the hook still ran. */
		slot->pid = pid;
		slot->path = strdup(info->path);
		n_running++;
		log_debug("Started on-rotate hook for %s (pid %d)", info->path, (int)pid);
		r = pid;
	}
	free(envp);
	for (int i = 0; i < NR_VARS; i++)
		free(vars[i]);
	free(script);
	return r;
}

int hook_reap(void)
{
	int reaped = 0;

	for (int i = 0; i < HOOK_MAX_RUNNING; i++) {
		struct running_hook *h = &hooks[i];
		const char *name;
		int st;
		pid_t p;

		if (!h->pid)
			continue;
		p = waitpid(h->pid, &st, WNOHANG);
		if (p == 0 || (p < 0 && errno == EINTR))
			continue;
		name = h->path ? h->path : "(unknown)";
		if (p < 0)
			/* ECHILD: someone else reaped it (or SIGCHLD is ignored);
			 * the slot must not stay taken forever. */
			log_warning("on-rotate hook for %s (pid %d) was lost: %m", name, (int)h->pid);
		else if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			log_info("on-rotate hook for %s exited with status 0", name);
		else if (WIFEXITED(st))
			log_error("on-rotate hook for %s exited with status %d", name, WEXITSTATUS(st));
		else if (WIFSIGNALED(st))
			log_error("on-rotate hook for %s killed by signal %s", name, strsignal(WTERMSIG(st)));
		else
			continue; /* stopped/continued are not reported without WUNTRACED */
		free(h->path);
		h->path = NULL;
		h->pid = 0;
		n_running--;
		reaped++;
	}
	return reaped;
}

int hook_running(void)
{
	return n_running;
}
