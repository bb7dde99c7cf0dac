// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Capability and identity drop for perfrecd.
 *
 * What the daemon still needs after start-up, and why:
 *   CAP_PERFMON         reopening events on reload (CAP_SYS_ADMIN on
 *                       kernels without CAP_PERFMON, before 5.8)
 *   CAP_IPC_LOCK        mapping the new rings beyond perf_event_mlock_kb
 *   CAP_SYS_PTRACE      re-synthesis at every rotation reads
 *                       /proc/PID/maps and /proc/PID/root/... of every
 *                       process (ptrace "read" access)
 *   CAP_DAC_READ_SEARCH reading binaries of other users for build ids
 *   CAP_SYSLOG          /proc/kallsyms and /proc/modules show real
 *                       addresses only with it (kernel map synthesis)
 * Everything else leaves the bounding set too, so neither the daemon nor
 * an on-rotate hook it starts can get it back.
 */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdbool.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "log.h"
#include "privs.h"

static const cap_value_t keep_caps[] = {
	CAP_PERFMON, CAP_IPC_LOCK, CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH, CAP_SYSLOG,
};

static int kept(bool perfmon_supported, cap_value_t keep[8])
{
	int n = 0;

	for (size_t i = 0; i < sizeof(keep_caps) / sizeof(keep_caps[0]); i++) {
		if (keep_caps[i] == CAP_PERFMON && !perfmon_supported)
			keep[n++] = CAP_SYS_ADMIN;
		else
			keep[n++] = keep_caps[i];
	}
	return n;
}

/* Needs CAP_SETPCAP in the effective set: call before switching user. */
static int drop_bound(bool perfmon_supported)
{
	cap_value_t keep[8];
	int n = kept(perfmon_supported, keep);

	for (cap_value_t c = 0; c <= CAP_LAST_CAP; c++) {
		bool k = false;

		for (int i = 0; i < n; i++)
			k |= keep[i] == c;
		if (!k && CAP_IS_SUPPORTED(c) && cap_drop_bound(c) < 0 && errno != EPERM)
			return -errno;
	}
	return 0;
}

static int set_caps(bool perfmon_supported)
{
	cap_value_t keep[8];
	int n = kept(perfmon_supported, keep), r = 0;
	cap_t caps, cur;

	/* Only keep what we have: an unprivileged run keeps nothing it lacked. */
	cur = cap_get_proc();
	caps = cap_init();
	if (!cur || !caps) {
		r = -ENOMEM;
		goto out;
	}
	for (int i = 0; i < n; i++) {
		cap_flag_value_t have = CAP_CLEAR;

		cap_get_flag(cur, keep[i], CAP_PERMITTED, &have);
		if (have != CAP_SET)
			continue;
		cap_set_flag(caps, CAP_PERMITTED, 1, &keep[i], CAP_SET);
		cap_set_flag(caps, CAP_EFFECTIVE, 1, &keep[i], CAP_SET);
	}
	prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	if (cap_set_proc(caps) < 0)
		r = -errno;
out:
	cap_free(cur);
	cap_free(caps);
	return r;
}

int privs_drop(const char *user, const char *group, const char *dir)
{
	bool perfmon = CAP_IS_SUPPORTED(CAP_PERFMON);
	uid_t uid = geteuid();
	gid_t gid = getegid();
	int r;

	if (user && *user) {
		struct passwd *pw = getpwnam(user);

		if (!pw)
			return log_error_errno(-ESRCH, "Cannot drop privileges: no user '%s'", user);
		uid = pw->pw_uid;
		gid = pw->pw_gid;
	}
	if (group && *group) {
		struct group *gr = getgrnam(group);

		if (!gr)
			return log_error_errno(-ESRCH, "Cannot drop privileges: no group '%s'", group);
		gid = gr->gr_gid;
	}
	if (dir && (uid != geteuid() || gid != getegid()) && chown(dir, uid, gid) < 0)
		log_warning("Cannot hand %s to %s: %m", dir, user && *user ? user : "the daemon's group");

	/* Without CAP_SETPCAP (an unprivileged start) this drops nothing: fine. */
	r = drop_bound(perfmon);
	if (r < 0)
		return log_error_errno(r, "Cannot shrink the capability bounding set: %s", strerror(-r));

	if (uid != geteuid() || gid != getegid()) {
		if (geteuid() != 0)
			return log_error_errno(-EPERM, "Cannot switch to user '%s' / group '%s': not started as root",
					       user ? user : "", group ? group : "");
		/* Keep the permitted set across setuid; effective is rebuilt below. */
		if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0 || setgroups(1, &gid) < 0 ||
		    setresgid(gid, gid, gid) < 0 || setresuid(uid, uid, uid) < 0)
			return log_error_errno(-errno, "Cannot switch to user '%s': %m", user ? user : "");
		prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0);
	}
	r = set_caps(perfmon);
	if (r < 0)
		return log_error_errno(r, "Cannot reduce capabilities: %s", strerror(-r));
	/*
	 * setuid made us non-dumpable, which makes /proc/self root-owned; the
	 * daemon holds no secrets worth that, and monitoring wants to read it.
	 */
	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	log_info("Running as uid %u gid %u with CAP_PERFMON, CAP_IPC_LOCK, CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH, CAP_SYSLOG only",
		 (unsigned)uid, (unsigned)gid);
	return 0;
}
