/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One recorder per output directory.  A second perfrecd on the same
 * directory would take the first one's file in progress for a leftover of
 * a crash and "recover" it from under it; so each daemon holds an
 * exclusive flock(2) on the directory for as long as it records there, and
 * a second one is refused with the holder's PID.
 */
#ifndef PERFRECD_DIRLOCK_H
#define PERFRECD_DIRLOCK_H

#include <sys/types.h>

/*
 * Lock directory @dir for this process: the fd holding the lock into
 * *ret_fd (close it to release).  -EBUSY when another process holds it,
 * with its PID in *ret_holder (0 if unknown); other -errno on failure.
 */
int dirlock_take(const char *dir, int *ret_fd, pid_t *ret_holder);

/* The PID holding an flock on the file open as @fd, from /proc/locks (0: none found). */
pid_t dirlock_holder(int fd);

#endif
