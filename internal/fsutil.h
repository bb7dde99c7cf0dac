/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* File-system helpers shared inside libperfrec, perfrecd and perfrecctl (not
 * exported from the shared library). */
#ifndef PERFREC_FSUTIL_H
#define PERFREC_FSUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

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
 * Give the file open at @fd the permissions (read/write bits for owner and
 * group, never others') and, where allowed, the owner and group of the
 * file at @like: a manifest or marker beside a data file is read by whoever
 * may read the data, and by no one else.  0 or -errno of the stat/fchmod
 * (a chown we may not do is not an error: the mode still holds).
 */
int copy_access(int fd, const char *like);

/*
 * An output file a command creates for its user: never through a link or
 * into a file someone else planted at the name, and readable by its owner
 * only (perf writes perf.data 0600 too; a profile shows every process and
 * the kernel's map).  The data goes to a new file beside the target, made
 * with O_CREAT|O_EXCL|O_NOFOLLOW, that output_file_publish() renames to
 * the target's name in the same directory (by its fd): a reader never sees
 * half a file, a failed run leaves what was there, and a symlink at the
 * name is replaced, never followed.
 */
struct output_file {
	int fd;         /* write here; the caller closes it (before publishing) */
	int dirfd;      /* the target's directory */
	char *name;     /* the target's name in it */
	char *tmp;      /* the new file's name in it; NULL: fd is the target itself (a stream) */
	char *tmp_path; /* the new file's path, or the target's: for messages and reading back */
	bool replace;
};

/* An existing regular file (or link) at the name is replaced; else -EEXIST. */
#define OUTPUT_REPLACE 1u
/*
 * An existing FIFO, character device or socket (/dev/null, a named pipe,
 * /dev/stdout) of ours or root's is opened and written as it is; without
 * this flag, or owned by another user, it is -EEXIST.
 */
#define OUTPUT_STREAM 2u

/*
 * Open the output for @path (mode @mode, e.g. 0600) into *o.  0, or -EEXIST
 * (something at the name, see the flags), -EISDIR, -errno of the open.
 */
int output_file_open(struct output_file *o, const char *path, unsigned flags, mode_t mode);
/*
 * Put the written file (already closed by the caller) in place: rename over
 * the target (OUTPUT_REPLACE) or only if none appeared meanwhile (-EEXIST),
 * and make that durable.  Releases *o; the new file is removed on failure.
 */
int output_file_publish(struct output_file *o);
/* Give up: remove the new file (a stream is left alone); releases *o. */
void output_file_discard(struct output_file *o);

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
