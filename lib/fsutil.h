/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* File-system helpers shared inside libperfrec, perfrecd and perfrecctl (not
 * exported from the shared library). */
#ifndef PERFREC_FSUTIL_H
#define PERFREC_FSUTIL_H

#include <stddef.h>

/*
 * Rename @from to @to and make the rename durable (fsync of the directory
 * holding @to).  0 or -errno; -errno of the fsync means the rename was done
 * but may not survive a crash.
 */
int rename_durably(const char *from, const char *to);

/*
 * Write all @len bytes of @buf to @fd, going on after short writes and
 * EINTR, so that a failure is the cause of the short write (ENOSPC...)
 * rather than a silent truncation.  0 or -errno (-EIO if write() wrote
 * nothing without an error).
 */
int write_all(int fd, const void *buf, size_t len);

/*
 * Open @path read-only (relative to @dirfd, AT_FDCWD for none) only if it
 * is a regular file.  For paths that a recording or a process names (a
 * mapped binary, a cache entry): one of them may be a FIFO or a device by
 * now, whose open() or read() would block or never end.  The open itself
 * does not block (O_NONBLOCK, dropped again once the file is known to be
 * regular) and takes no controlling terminal.  The fd, or -errno: -EINVAL
 * when @path is not a regular file.
 */
int open_regular(int dirfd, const char *path);

#endif
