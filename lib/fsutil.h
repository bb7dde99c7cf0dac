/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* File-system helpers shared inside libperfrec (not exported). */
#ifndef PERFREC_FSUTIL_H
#define PERFREC_FSUTIL_H

/*
 * Rename @from to @to and make the rename durable (fsync of the directory
 * holding @to).  0 or -errno; -errno of the fsync means the rename was done
 * but may not survive a crash.
 */
int rename_durably(const char *from, const char *to);

#endif
