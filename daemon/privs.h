/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Least privilege: once the events are open and the rings mapped, keep only
 * the capabilities later work needs and, when started as root with a user
 * configured, become that user.
 */
#ifndef PERFRECD_PRIVS_H
#define PERFRECD_PRIVS_H

/*
 * Drop privileges.  @user/@group may be NULL or "" (stay as we are; the
 * group still becomes the owner group of @dir and new files).  @dir (the
 * output directory) is handed to the user first.  Returns 0 or -errno,
 * logged.
 */
int privs_drop(const char *user, const char *group, const char *dir);

#endif
