/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A spooled snapshot copied into a client's regular file by a thread of
 * its own.  A write into a regular file cannot be made non-blocking, and
 * on a hung file system (fsfreeze, a dead NFS server) it waits for as long
 * as the file system does: done from the main loop, that stops the drain
 * and every control call.  The main loop only looks at the progress; one
 * that stops is abandoned there (the client told why), and the thread,
 * which nothing can interrupt in the write, ends when the write returns,
 * closing both fds.  At most FILE_COPY_MAX threads exist at a time, so
 * clients cannot pile up threads and spools behind a hung file system.
 */
#ifndef PERFRECD_FILECOPY_H
#define PERFRECD_FILECOPY_H

#include <stdbool.h>
#include <sys/types.h>

#define FILE_COPY_MAX 4

struct file_copy;

/*
 * Copy @size bytes of @spool into @target from offset 0, truncating it to
 * @size at the end; takes both fds (closed by the copy, also on error).
 * -EBUSY when FILE_COPY_MAX copies are under way.
 */
int file_copy_start(int spool, int target, off_t size, struct file_copy **ret);

/* Readable (EPOLLIN) once the copy ended. */
int file_copy_fd(const struct file_copy *fc);

/* Bytes copied so far. */
off_t file_copy_progress(const struct file_copy *fc);

/* Whether the copy ended; then *ret_err is 0 or -errno. */
bool file_copy_done(const struct file_copy *fc, int *ret_err);

/* The caller is done with @fc: freed now, or by its thread when it ends. */
void file_copy_release(struct file_copy *fc);

#endif
