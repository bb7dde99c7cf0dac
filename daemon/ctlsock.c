// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The control socket itself: the one systemd passed (socket activation),
 * or one created at the configured path (a stale one replaced, a live one
 * refused), its group and mode.  control.c serves what connects.
 */
#include <errno.h>
#include <grp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
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
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno == EADDRINUSE) {
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
		errno = 0;
		if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
			goto fail;
	} else if (errno) {
		struct stat st;

		if (stat(path, &st) < 0 || !S_ISSOCK(st.st_mode))
			goto fail;
	}
	*ret_created = strdup(path);
	/* Everyone may connect (Ping and Status are public); each call is
	 * checked against the peer's credentials (SO_PEERCRED). */
	if (chmod(path, 0666) < 0 || (have_gid && chown(path, (uid_t)-1, gid) < 0))
		log_warning("Cannot set the owner/mode of %s: %m", path);
	if (listen(fd, SOMAXCONN) < 0)
		goto fail;
	return fd;
fail:
	r = -errno;
	close(fd);
	return log_error_errno(r, "Cannot listen on %s: %s", path, strerror(-r));
}
