/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The recorder's side of off-CPU profiling (offcpu=yes): load the BPF
 * program at open, declare the offcpu-time attr in every file, and write the
 * blocked time gathered since the previous file as samples at each finish.
 */
#ifndef PERFRECD_OFFCPU_REC_H
#define PERFRECD_OFFCPU_REC_H

#include <stdint.h>

struct recorder;

/* Id of the offcpu-time attr: far above the kernel's sequential ids. */
#define OFFCPU_REC_ID 0x7fffffff0ffc0001ull

/* Load and attach when configured; logs one line and carries on if not. */
void offcpu_rec_open(struct recorder *rec);
/* Add the offcpu-time attr to the file just created (no-op when off). */
int offcpu_rec_add_attr(struct recorder *rec);
/* Drain the BPF maps into the current file as samples stamped @time. */
void offcpu_rec_write(struct recorder *rec, uint64_t time);
void offcpu_rec_close(struct recorder *rec);

#endif
