/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Names and directories that other users may have a hand in, made safe
 * before the daemon (often root) writes under them.
 *
 * The host name is anyone's with CAP_SYS_ADMIN in a UTS namespace (a
 * container's root, "unshare -ur --uts") and lands in file names, upload
 * keys and the on-rotate hook's environment; a configured prefix does too.
 * Both are held to the characters a host name is meant to have.
 */
#ifndef PERFRECD_SAFENAME_H
#define PERFRECD_SAFENAME_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* [A-Za-z0-9._-], not beginning with '.' or '-', not empty: safe as a file name's part. */
bool safename_ok(const char *s);

/*
 * @in as a safe name into @out (@size >= 2): every other byte becomes '_',
 * as does a leading '.' or '-'; "" becomes "localhost".  True if nothing
 * was changed.
 */
bool safename_sanitize(const char *in, char *out, size_t size);

/*
 * Open the directory @path (absolute) for writing into it, walking every
 * component from / with O_NOFOLLOW: a symbolic link is refused, except
 * one owned by root in a directory only root may write (/var/run); every
 * directory on the way must be owned by root or @uid, and writable by no
 * one else unless sticky (/tmp); @path itself must be owned by root or
 * @uid and writable by neither group nor others.  With @create, a missing
 * last component is made 0750 and, as root, handed to @uid/@gid.
 * Returns an O_DIRECTORY fd, or -errno with the reason in @err.
 */
int safedir_open(const char *path, uid_t uid, gid_t gid, bool create, char *err, size_t errlen);

/*
 * What safedir_open() checks that does not depend on the daemon's user
 * (for the configuration check, before user= is known): whoever owns the
 * directories is not checked, and a missing one is fine (made at start).
 * 0 or -errno with the reason in @err.
 */
int safedir_check(const char *path, char *err, size_t errlen);

#endif
