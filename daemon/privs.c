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
 *
 * The output directory is prepared here too, while perfrecd is still root:
 * only a directory perfrecd creates is handed to its user.  An existing one
 * (a shared 1777 /tmp, /var/tmp, a directory another service owns) keeps
 * its owner, a symbolic link is not followed, and a world-writable one
 * without the sticky bit is refused, since anyone could swap the
 * recordings in it.  Only the last component is created: a typo in a
 * parent (-o /var/lib/perfercd/x) is refused rather than built, and a
 * place no file can be written (/proc, /sys, a read-only mount) is named
 * as such instead of failing later on a permission.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <linux/magic.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
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

/* The ids that @user/@group (NULL or "": stay) stand for.  0 or -ESRCH, logged. */
static int resolve_ids(const char *user, const char *group, uid_t *ret_uid, gid_t *ret_gid)
{
	uid_t uid = geteuid();
	gid_t gid = getegid();

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
	*ret_uid = uid;
	*ret_gid = gid;
	return 0;
}

/*
 * File systems the kernel makes up: they take no files of ours, and as
 * root a permission check on them may pass until the write fails.
 */
static const struct { unsigned long magic; const char *name; } pseudo_fs[] = {
	{ PROC_SUPER_MAGIC, "proc" }, { SYSFS_MAGIC, "sysfs" },
	{ CGROUP_SUPER_MAGIC, "cgroup" }, { CGROUP2_SUPER_MAGIC, "cgroup2" },
	{ DEBUGFS_MAGIC, "debugfs" }, { TRACEFS_MAGIC, "tracefs" },
	{ DEVPTS_SUPER_MAGIC, "devpts" }, { SECURITYFS_MAGIC, "securityfs" },
	{ BPF_FS_MAGIC, "bpf" }, { PSTOREFS_MAGIC, "pstore" },
	{ EFIVARFS_MAGIC, "efivarfs" }, { SELINUX_MAGIC, "selinuxfs" },
};

/*
 * Why nothing can be written under @fd (the directory, or the parent it
 * could not be made in): a pseudo or read-only file system.  Logs and
 * returns -EROFS / -EOPNOTSUPP, or 0 when neither applies.
 */
static int refuse_unwritable_fs(int fd, const char *dir, const char *what)
{
	struct statvfs vfs;
	struct statfs fs;

	if (fstatfs(fd, &fs) == 0)
		for (size_t i = 0; i < sizeof(pseudo_fs) / sizeof(pseudo_fs[0]); i++)
			if ((unsigned long)fs.f_type == pseudo_fs[i].magic)
				return log_error_errno(-EOPNOTSUPP, "Output directory %s is not usable: %s is on %s, "
						       "a file system the kernel makes up that holds no files; "
						       "give a directory on a disk", dir, what, pseudo_fs[i].name);
	if (fstatvfs(fd, &vfs) == 0 && (vfs.f_flag & ST_RDONLY))
		return log_error_errno(-EROFS, "Output directory %s is not usable: %s is on a read-only "
				       "file system", dir, what);
	return 0;
}

/*
 * mkdir @path, its last component only.  1 if made, 0 if it was there,
 * or a negative errno, logged, naming a missing parent or a file system
 * that takes no files.
 */
static int make_last(char *path, const char *dir)
{
	char *slash = strrchr(path, '/');
	const char *parent = ".";
	int r, fd;

	if (mkdir(path, 0750) == 0)
		return 1;
	if (errno == EEXIST)
		return 0;
	r = -errno;
	if (slash == path)
		parent = "/";
	else if (slash)
		*slash = 0, parent = path;
	fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 && r == -ENOENT)
		r = log_error_errno(-ENOENT, "Output directory %s is not usable: its parent %s does not exist "
				    "(perfrecd creates the last component only)", dir, parent);
	else if (fd >= 0 && refuse_unwritable_fs(fd, dir, parent) < 0)
		r = -EROFS;
	else
		r = log_error_errno(r, "Output directory %s is not usable: %s", dir, strerror(-r));
	if (fd >= 0)
		close(fd);
	if (slash && slash != path)
		*slash = '/';
	return r;
}

int privs_prepare_directory(const char *dir, const char *user, const char *group)
{
	bool created = false;
	struct stat st;
	uid_t uid;
	gid_t gid;
	char *path;
	size_t n;
	int fd = -1, r;

	r = resolve_ids(user, group, &uid, &gid);
	if (r < 0)
		return r;
	/* "dir/" would follow a link named dir: O_NOFOLLOW sees the last name only. */
	path = strdup(dir);
	if (!path)
		return log_error_errno(-ENOMEM, "Output directory %s is not usable: %s", dir, strerror(ENOMEM));
	for (n = strlen(path); n > 1 && path[n - 1] == '/'; n--)
		path[n - 1] = 0;

	r = make_last(path, dir);
	if (r < 0)
		goto out;
	created = r > 0;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	/* O_DIRECTORY makes a link fail with ENOTDIR before O_NOFOLLOW's ELOOP. */
	if (fd < 0 && (errno == ELOOP || errno == ENOTDIR) && lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
		r = log_error_errno(-ELOOP, "Output directory %s is a symbolic link: perfrecd does not follow it "
				    "(give the directory it points to)", dir);
		goto out;
	}
	if (fd < 0 || fstat(fd, &st) < 0) {
		r = -errno;
		goto fail;
	}
	r = refuse_unwritable_fs(fd, dir, "it");
	if (r < 0)
		goto out;
	if ((st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX)) {
		r = log_error_errno(-EPERM, "Output directory %s is world-writable without the sticky bit "
				    "(mode %04o): any user could replace or delete the recordings; "
				    "chmod o-w or +t it, or use a directory of its own",
				    dir, (unsigned)(st.st_mode & 07777));
		goto out;
	}
	if (st.st_mode & S_IWOTH)
		log_warning("Output directory %s is world-writable (mode %04o, sticky): other users can add "
			    "files beside the recordings; a directory of its own is safer",
			    dir, (unsigned)(st.st_mode & 07777));
	/*
	 * Ours to hand over only if we made it, and it is still the one we
	 * made (owned by us: a directory swapped in since the mkdir is not).
	 */
	if (created && st.st_uid == geteuid() && (uid != st.st_uid || gid != st.st_gid) &&
	    fchown(fd, uid, gid) < 0)
		/* Not root: privs_drop() will say that it cannot switch either. */
		log_warning("Cannot hand %s to uid %u gid %u: %m", dir, (unsigned)uid, (unsigned)gid);
	if (access(path, W_OK | X_OK) < 0) {
		r = -errno;
		goto fail;
	}
	r = 0;
	goto out;
fail:
	log_error("Output directory %s is not usable: %s", dir, strerror(-r));
out:
	if (fd >= 0)
		close(fd);
	free(path);
	return r;
}

int privs_drop(const char *user, const char *group, const char *dir)
{
	bool perfmon = CAP_IS_SUPPORTED(CAP_PERFMON);
	uid_t uid;
	gid_t gid;
	int r;

	r = resolve_ids(user, group, &uid, &gid);
	if (r < 0)
		return r;

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
	 * An existing directory is not chowned (privs_prepare_directory()), so
	 * say now, not at the first file, if the user cannot write there.
	 */
	/* AT_EACCESS: as the daemon will write, with CAP_DAC_READ_SEARCH to reach it. */
	if (dir && faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS) < 0) {
		r = -errno;
		return log_error_errno(r, "Output directory %s is not writable by uid %u: %s; perfrecd "
				       "hands over only a directory it creates (chown this one, or name a new one)",
				       dir, (unsigned)uid, strerror(-r));
	}
	/*
	 * setuid made us non-dumpable, which makes /proc/self root-owned; the
	 * daemon holds no secrets worth that, and monitoring wants to read it.
	 */
	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	log_info("Running as uid %u gid %u with CAP_PERFMON, CAP_IPC_LOCK, CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH, CAP_SYSLOG only",
		 (unsigned)uid, (unsigned)gid);
	return 0;
}
