// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The control socket is born with its mode and group (daemon/ctlsock.c):
 * never there with another mode, and never chmod()ed or chown()ed by path
 * (which would act on whatever the path names by then, a symlink swapped
 * in).  bind() and the by-path calls are interposed: bind() notes the
 * socket's mode and group the moment it exists, in a shared page, since
 * the bind may happen in a child; chmod() and its kin count the calls
 * naming the socket.  Under a umask of 022, as systemd gives services.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "ctlsock.h"

struct seen {
	char path[108];
	int binds;
	mode_t mode;       /* right after the bind that created the path */
	gid_t gid;
	int by_path;       /* chmod/chown-like calls naming the path */
};

static struct seen *seen;
static char dir[64];

static bool ours(const char *p)
{
	return seen && p && seen->path[0] && strcmp(p, seen->path) == 0;
}

/* Interposed: the executable's definition wins over libc's. */
int bind(int fd, const struct sockaddr *sa, socklen_t len)
{
	const struct sockaddr_un *un = (const struct sockaddr_un *)sa;
	long r = syscall(SYS_bind, fd, sa, len);
	struct stat st;

	if (r == 0 && sa->sa_family == AF_UNIX && ours(un->sun_path) && lstat(un->sun_path, &st) == 0) {
		seen->binds++;
		seen->mode = st.st_mode;
		seen->gid = st.st_gid;
	}
	return (int)r;
}

int chmod(const char *p, mode_t m)
{
	if (ours(p))
		seen->by_path++;
	return (int)syscall(SYS_fchmodat, AT_FDCWD, p, m);
}

int chown(const char *p, uid_t u, gid_t g)
{
	if (ours(p))
		seen->by_path++;
	return (int)syscall(SYS_fchownat, AT_FDCWD, p, u, g, 0);
}

int lchown(const char *p, uid_t u, gid_t g)
{
	if (ours(p))
		seen->by_path++;
	return (int)syscall(SYS_fchownat, AT_FDCWD, p, u, g, AT_SYMLINK_NOFOLLOW);
}

int fchmodat(int dfd, const char *p, mode_t m, int flags)
{
	if (ours(p))
		seen->by_path++;
	return (int)syscall(SYS_fchmodat, dfd, p, m, flags);
}

int fchownat(int dfd, const char *p, uid_t u, gid_t g, int flags)
{
	if (ours(p))
		seen->by_path++;
	return (int)syscall(SYS_fchownat, dfd, p, u, g, flags);
}

static void setup(void)
{
	seen = mmap(NULL, sizeof(*seen), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(seen, MAP_FAILED);
	memset(seen, 0, sizeof(*seen));
	strcpy(dir, "/tmp/test-ctlsock.XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(seen->path, sizeof(seen->path), "%s/io.perfrec", dir);
	umask(022);
}

static void teardown(void)
{
	unlink(seen->path);
	rmdir(dir);
	munmap(seen, sizeof(*seen));
	seen = NULL;
}

/* A group the socket can be given: another one when root (nogroup), else our own. */
static gid_t some_group(void)
{
	return geteuid() == 0 ? 65534 : getgid();
}

static void check(bool have_gid, gid_t gid)
{
	char *created = NULL;
	struct stat st;
	int fd;

	fd = ctlsock_create(seen->path, have_gid, gid, &created);
	cr_assert_geq(fd, 0, "ctlsock_create: %s", strerror(-fd));
	cr_assert_str_eq(created, seen->path);
	cr_assert_eq(seen->binds, 1, "the socket was bound %d times", seen->binds);
	cr_assert(S_ISSOCK(seen->mode));
	cr_assert_eq(seen->mode & 07777, 0666, "right after bind() the socket's mode is %04o, not 0666",
		     (unsigned)(seen->mode & 07777));
	if (have_gid)
		cr_assert_eq(seen->gid, gid, "right after bind() the socket's group is %u, not %u",
			     (unsigned)seen->gid, (unsigned)gid);
	cr_assert_eq(seen->by_path, 0, "the socket's mode or owner was set by path %d times", seen->by_path);
	cr_assert_eq(lstat(seen->path, &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0666);
	if (have_gid)
		cr_assert_eq(st.st_gid, gid);
	close(fd);
	free(created);
}

Test(ctlsock, born_with_its_mode, .init = setup, .fini = teardown)
{
	check(false, 0);
}

Test(ctlsock, born_with_its_mode_and_group, .init = setup, .fini = teardown)
{
	check(true, some_group());
}

/* A stale socket (nobody listening) is replaced, born the same way. */
Test(ctlsock, stale_socket_replaced_born_with_its_mode, .init = setup, .fini = teardown)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	strcpy(sa.sun_path, seen->path);
	cr_assert_eq((int)syscall(SYS_bind, fd, &sa, sizeof(sa)), 0);
	close(fd);
	check(true, some_group());
}

/* SIGCHLD ignored, as a parent may leave it: the child that binds leaves no status. */
Test(ctlsock, born_with_its_mode_sigchld_ignored, .init = setup, .fini = teardown)
{
	signal(SIGCHLD, SIG_IGN);
	check(true, some_group());
}
