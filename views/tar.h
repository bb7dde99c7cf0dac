/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A small ustar writer (tar.c) for `perfrecctl cut --archive`: regular
 * files and links inside the archive, plain or gzip'ed, so that plain
 * `tar xf` unpacks it anywhere.
 */
#ifndef PERFRECCTL_TAR_H
#define PERFRECCTL_TAR_H

#include <stdbool.h>
#include <sys/types.h>

struct tar;

/*
 * Start an archive on @fd (taken over: tar_close() closes it), gzip'ed
 * when @gzip.  0 and *@ret, or -errno.
 */
int tar_open(int fd, bool gzip, struct tar **ret);

/*
 * May @name be a member's name?  Relative, no "." or ".." component, no
 * empty one ("a//b", a trailing '/'), no control character, and short
 * enough for ustar's name and prefix fields: an archive that unpacks
 * only below the directory it is unpacked in.
 */
bool tar_name_ok(const char *name);

/*
 * Append the regular file open at @fd as @name with @mode (its permission
 * bits only) and @mtime.  -EINVAL for a bad name (tar_name_ok()), -EFBIG
 * past ustar's 8 GiB, -EIO when the file shrank or grew while being read,
 * else 0 or -errno.  After an error the archive is not to be used but
 * for tar_close().
 */
int tar_add(struct tar *t, const char *name, int fd, mode_t mode, time_t mtime);

/*
 * May @name be a symbolic link to @target?  @name as tar_name_ok() says;
 * @target relative, fitting ustar's 100-byte link field, its ".."
 * components first and no more of them than @name has directories, no
 * "." or empty component, ending in a plain one: a link that, unpacked,
 * points inside the directory the archive is unpacked in.
 */
bool tar_link_ok(const char *name, const char *target);

/*
 * Append a symbolic link @name -> @target (tar_link_ok(), else -EINVAL).
 * 0 or -errno, as tar_add().
 */
int tar_add_symlink(struct tar *t, const char *name, const char *target, time_t mtime);

/*
 * End the archive (two zero blocks), flush and close it.  Returns 0, or
 * -errno of the first failure of any call on @t.  NULL: nothing.
 */
int tar_close(struct tar *t);

#endif
