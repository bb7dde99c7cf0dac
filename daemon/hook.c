// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * on-rotate hooks.  vfork() keeps starting a hook cheap even with large
 * ring mappings, and reports a failed exec of /bin/sh to the caller.  The
 * file's path travels in the environment and is expanded by the shell as
 * "$PERFREC_FILE", so no quoting of untrusted names is ever needed.  The
 * daemon blocks signals for its signalfd, and a child would inherit that
 * mask; it is reset so that a hook can be interrupted and its own children
 * behave normally.  A hook is another program, maybe an admin's script:
 * it gets what it needs and nothing of the daemon's (child()).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
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

/*
 * What a hook gets of the daemon's environment: a fixed PATH (systemd's
 * for services), and the locale and time zone, if set, so its messages and
 * dates read as the daemon's do.  Nothing else: credentials the daemon was
 * given (AWS_SECRET_ACCESS_KEY for uploads), LD_PRELOAD, a NOTIFY_SOCKET
 * are not the hook's.
 */
#define HOOK_PATH "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
static const char *const passed[] = { "LANG=", "LC_ALL=", "TZ=" };

#define NR_VARS 7
#define NR_PASSED (sizeof(passed) / sizeof(passed[0]))

/* The hook's environment: HOOK_PATH, passed[] from ours, then @vars.
 * The strings are borrowed; NULL when out of memory. */
static char **hook_env(char *const *vars)
{
	char **envp = calloc(1 + NR_PASSED + NR_VARS + 1, sizeof(*envp));
	size_t k = 0;

	if (!envp)
		return NULL;
	envp[k++] = HOOK_PATH;
	for (size_t i = 0; i < NR_PASSED; i++)
		for (size_t e = 0; environ && environ[e]; e++)
			if (!strncmp(environ[e], passed[i], strlen(passed[i]))) {
				envp[k++] = environ[e];
				break;
			}
	for (int i = 0; i < NR_VARS; i++)
		envp[k++] = vars[i];
	return envp;
}

/* Prepared before vfork(): the child only makes system calls, and says here why it failed. */
struct child_setup {
	char *const *argv, *const *envp;
	int err;
};

/*
 * The child, sharing the daemon's memory until execve(): it sets up what
 * systemd gives a service's helper.  stdin is /dev/null, stdout and
 * stderr stay the daemon's (the journal); every other descriptor (the
 * control socket, the rings, a client's pipe) is closed.  No capability
 * survives the exec: the ambient and inheritable sets are cleared, the
 * bounding set too where we may (the daemon keeps no CAP_SETPCAP after
 * its drop), the permitted set emptied, and no_new_privs set, so that a
 * hook run as root gets no capability from exec (permitted is capped by
 * ours, empty) nor from a setuid or file-capability program.  Signals are
 * unblocked at their default action.
 */
static __attribute__((noreturn, noinline)) void child(struct child_setup *s)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct none[_LINUX_CAPABILITY_U32S_3] = { { 0 } };
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	sigset_t empty;
	int fd;

	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			(void)sigaction(sig, &dfl, NULL);   /* glibc's own signals: EINVAL, harmless */
	/* Not O_CLOEXEC: with the daemon's stdin closed, this is fd 0 itself. */
	fd = open("/dev/null", O_RDONLY);
	if (fd < 0 || (fd != STDIN_FILENO && dup2(fd, STDIN_FILENO) < 0))
		goto fail;
	if (close_range(3, ~0U, 0) < 0)
		goto fail;
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		goto fail;
	for (int c = 0; prctl(PR_CAPBSET_READ, c, 0, 0, 0) >= 0; c++)
		(void)prctl(PR_CAPBSET_DROP, c, 0, 0, 0);   /* EPERM without CAP_SETPCAP: see above */
	if (syscall(SYS_capset, &h, none) < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		goto fail;
	sigemptyset(&empty);
	sigprocmask(SIG_SETMASK, &empty, NULL);
	execve(s->argv[0], s->argv, s->envp);
fail:
	s->err = -errno;
	_exit(127);
}

/*
 * Start "/bin/sh -c @script" with @envp in a clean child (child()).
 * vfork(): the daemon's page tables (rings, a history of hundreds of MiB)
 * are not copied for a child that only execs; the calling thread waits
 * until the exec, and learns why it failed.  All signals are blocked
 * around it so that no handler of ours runs in the child.
 * 0 and *ret_pid, or -errno.
 */
static int spawn_shell(char *script, char **envp, pid_t *ret_pid)
{
	static struct child_setup s;
	char *argv[] = { "/bin/sh", "-c", script, NULL };
	sigset_t all, old;
	pid_t pid;
	int r;

	s = (struct child_setup){ .argv = argv, .envp = envp };
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid = vfork();
	if (pid == 0)
		child(&s);
	r = pid < 0 ? -errno : s.err;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (pid > 0 && r < 0)
		(void)waitpid(pid, NULL, 0);   /* it exited 127 before its exec */
	if (r < 0)
		return r;
	*ret_pid = pid;
	return 0;
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
