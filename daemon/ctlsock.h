/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The control socket's listening end (ctlsock.c). */
#ifndef PERFRECD_CTLSOCK_H
#define PERFRECD_CTLSOCK_H

#include <stdbool.h>
#include <sys/types.h>

#include "config.h"

/*
 * control-group=: its gid into *@gid (*@have_gid true).  The default group
 * need not exist (0, *@have_gid unchanged); a named one that does not
 * exist is -ENOENT, logged.
 */
int ctlsock_group(const struct config *cfg, bool *have_gid, gid_t *gid);
/* Take the hard limit of open files as the soft one: clients need fds. */
void ctlsock_raise_nofile(void);
/*
 * The listening socket systemd passed (named "control", or the only one),
 * made non-blocking by the caller; -ENOENT when none was passed, -EBADF
 * (logged) when what was passed is not a listening unix stream socket.
 */
int ctlsock_activated(void);
/*
 * Bind and listen on @path (its directory made; a socket nobody answers
 * on replaced; one that answers refused with -EADDRINUSE), mode 0666 and
 * group @gid when @have_gid from the moment it exists (no chmod or chown
 * by path, whatever the umask).  The fd, or -errno (logged).  *@ret_created
 * gets a copy of @path, for removal at exit.
 */
int ctlsock_create(const char *path, bool have_gid, gid_t gid, char **ret_created);

#endif
