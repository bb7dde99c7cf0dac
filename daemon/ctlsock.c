// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The control socket itself: the one systemd passed (socket activation),
 * or one created at the configured path (a stale one replaced, a live one
 * refused), born with its group and mode.  control.c serves what connects.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "ctlsock.h"
#include "log.h"

int ctlsock_group(const struct config *cfg, bool *have_gid, gid_t *gid)
{
	const char *name = cfg->control_group ? cfg->control_group : "perfrecd";
	struct group *g;

	if (cfg->control_group && !*cfg->control_group)
		return 0;
	g = getgrnam(name);
	if (!g) {
		if (!cfg->control_group)
			return 0; /* the default group need not exist */
		return log_error_errno(-ENOENT, "control-group: no group named '%s'", name);
	}
	*have_gid = true;
	*gid = g->gr_gid;
	return 0;
}

void ctlsock_raise_nofile(void)
{
	struct rlimit rl;

	/* 1000 clients need 1000 fds beside the rings: take what we may. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

int ctlsock_activated(void)
{
	char **names = NULL;
	int n = sd_listen_fds_with_names(1, &names), fd = -1;

	if (n <= 0)
		return n < 0 ? n : -ENOENT;
	for (int i = 0; i < n; i++)
		if (names && names[i] && !strcmp(names[i], "control"))
			fd = SD_LISTEN_FDS_START + i;
	if (fd < 0 && n == 1)
		fd = SD_LISTEN_FDS_START;
	if (names)
		for (int i = 0; i < n; i++)
			free(names[i]);
	free(names);
	if (fd < 0 || sd_is_socket_unix(fd, SOCK_STREAM, 1, NULL, 0) <= 0)
		return log_error_errno(-EBADF, "systemd passed no listening unix stream socket named 'control'");
	return fd;
}

static int make_parent(const char *path)
{
	char *dir = strdup(path), *slash;
	int r = 0;

	if (!dir)
		return -ENOMEM;
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = 0;
		for (char *p = dir + 1; ; p++) {
			if (*p && *p != '/')
				continue;
			char c = *p;

			*p = 0;
			if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
				r = -errno;
				break;
			}
			*p = c;
			if (!c)
				break;
		}
	}
	free(dir);
	return r;
}

/*
 * bind() creates the socket's inode with the mode of the socket itself
 * (set by fchmod() before bind(); Linux honours it for unix sockets) less
 * the umask, and the fs uid and gid as owner.  chmod() and chown() by path
 * afterwards would leave a window, and act on whatever the path names by
 * then (a symlink swapped in).  The umask is the whole process's and other
 * threads run, so a child of ours binds, with a umask and an fs gid of its
 * own: the inode is born with its mode and group.  -errno of bind(), or
 * -EPERM when the fs gid could not be @gid.
 */
static int bind_born(int fd, const struct sockaddr_un *sa, mode_t mode, bool have_gid, gid_t gid)
{
	pid_t pid;
	int st;

	if (fchmod(fd, mode) < 0)
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		/* A child of a threaded process: system calls only. */
		umask(0);
		if (have_gid) {
			setfsgid(gid);
			if ((gid_t)setfsgid((gid_t)-1) != gid)
				_exit(EPERM);
		}
		_exit(bind(fd, (const struct sockaddr *)sa, sizeof(*sa)) < 0 ? errno : 0);
	}
	while (waitpid(pid, &st, 0) < 0) {
		struct sockaddr_un got;
		socklen_t len = sizeof(got);

		if (errno == EINTR)
			continue;
		if (errno != ECHILD)
			return -errno;
		/* SIGCHLD ignored (inherited so): no status, but the socket tells. */
		if (getsockname(fd, (struct sockaddr *)&got, &len) == 0 && len > sizeof(sa_family_t) &&
		    got.sun_path[0])
			return 0;
		return -ECHILD;
	}
	if (!WIFEXITED(st))
		return -ECHILD;
	return -WEXITSTATUS(st);
}

/*
 * The group, where the fs gid could not be set to it (not root, a
 * supplementary group): through an O_PATH fd of the socket, never
 * following a link.
 */
static int chown_socket(const char *path, gid_t gid)
{
	struct stat st;
	int fd, r = 0;

	fd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		r = -errno;
	else if (!S_ISSOCK(st.st_mode))
		r = -ENOTSOCK;
	else if (fchownat(fd, "", (uid_t)-1, gid, AT_EMPTY_PATH) < 0)
		r = -errno;
	close(fd);
	return r;
}

/* Everyone may connect (Ping and Status are public); each call is checked
 * against the peer's credentials (SO_PEERCRED). */
#define SOCKET_MODE 0666

static int bind_socket(int fd, const struct sockaddr_un *sa, bool have_gid, gid_t gid)
{
	int r = bind_born(fd, sa, SOCKET_MODE, have_gid, gid);

	/* -ECHILD: no status to tell (SIGCHLD ignored); the socket is unbound. */
	if ((r != -EPERM && r != -ECHILD) || !have_gid)
		return r;
	r = bind_born(fd, sa, SOCKET_MODE, false, 0);
	if (r < 0)
		return r;
	r = chown_socket(sa->sun_path, gid);
	if (r < 0)
		log_warning("Cannot give %s to group %u: %s", sa->sun_path, (unsigned)gid, strerror(-r));
	return 0;
}

int ctlsock_create(const char *path, bool have_gid, gid_t gid, char **ret_created)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, r;

	if (strlen(path) >= sizeof(sa.sun_path))
		return log_error_errno(-ENAMETOOLONG, "socket: path too long: %s", path);
	strcpy(sa.sun_path, path);
	r = make_parent(path);
	if (r < 0)
		return log_error_errno(r, "Cannot create the directory of %s: %s", path, strerror(-r));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return log_error_errno(-errno, "Cannot create control socket: %m");
	r = bind_socket(fd, &sa, have_gid, gid);
	if (r == -EADDRINUSE) {
		/* A socket left by a killed perfrecd answers nothing: replace it.
		 * One that answers belongs to a running perfrecd: refuse. */
		int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (probe >= 0 && connect(probe, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
			close(probe);
			close(fd);
			return log_error_errno(-EADDRINUSE, "Another perfrecd is listening on %s", path);
		}
		if (probe >= 0)
			close(probe);
		unlink(path);
		r = bind_socket(fd, &sa, have_gid, gid);
	}
	if (r < 0)
		goto fail;
	*ret_created = strdup(path);
	if (listen(fd, SOMAXCONN) < 0) {
		r = -errno;
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return log_error_errno(r, "Cannot listen on %s: %s", path, strerror(-r));
}
