/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Least privilege: once the events are open and the rings mapped, keep only
 * the capabilities later work needs and, when started as root with a user
 * configured, become that user.
 */
#ifndef PERFRECD_PRIVS_H
#define PERFRECD_PRIVS_H

/*
 * Create the output directory @dir (and its parents) if missing, before
 * privileges are dropped.  A directory this call creates is handed to
 * @user/@group (NULL or "": as we are); an existing one keeps its owner.
 * Refuses @dir when it is a symbolic link (-ELOOP) or world-writable
 * without the sticky bit (-EPERM); warns about a sticky world-writable one.
 * Returns 0 or -errno, logged.
 */
int privs_prepare_directory(const char *dir, const char *user, const char *group);

/*
 * Drop privileges.  @user/@group may be NULL or "" (stay as we are; the
 * group still becomes the owner group of new files).  @dir (the output
 * directory, or NULL) must be writable afterwards, or this fails.
 * Returns 0 or -errno, logged.
 */
int privs_drop(const char *user, const char *group, const char *dir);

#endif
