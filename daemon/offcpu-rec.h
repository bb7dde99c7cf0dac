/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The recorder's side of off-CPU profiling (offcpu=yes): load the BPF
 * program at open, declare the offcpu-time attr in every output
 * (outfile.c), and write the blocked time gathered since the previous file
 * as samples at each finish.  Its state is its own; the recorder holds the
 * object and passes the writer each call needs.
 */
#ifndef PERFRECD_OFFCPU_REC_H
#define PERFRECD_OFFCPU_REC_H

#include <stddef.h>
#include <stdint.h>

#include <perfrec/perfrec.h>

#include "config.h"

/* Id of the offcpu-time attr: far above the kernel's sequential ids. */
#define OFFCPU_REC_ID 0x7fffffff0ffc0001ull

struct offcpu_rec;

/*
 * Load and attach when @cfg asks for it: 0 and *ret (NULL when off or not
 * possible here, which is logged in one line and not an error).
 */
int offcpu_rec_open(const struct config *cfg, struct offcpu_rec **ret);
/*
 * Load and attach whatever @cfg says (a reload turning offcpu= on): on
 * failure negative errno and the reason in @why; nothing logged.
 */
int offcpu_rec_load(const struct config *cfg, struct offcpu_rec **ret, char *why, size_t why_len);
/*
 * Set @cfg's offcpu-min= and offcpu-cgroup= on the loaded program (a
 * reload: no privilege needed).  Negative errno, the filter unchanged,
 * when the cgroup is not there; 0 when @o is NULL.
 */
int offcpu_rec_set_filter(struct offcpu_rec *o, const struct config *cfg);
/*
 * Add the offcpu-time attr to @w, with the trailer and clock of @evlist's
 * events so readers accept it (no-op when @o is NULL).
 */
int offcpu_rec_add_attr(const struct offcpu_rec *o, const struct perfrec_evlist *evlist,
			struct perfrec_pdwriter *w);
/* Drain the BPF maps into @w (the file @path) as samples stamped @time. */
void offcpu_rec_write(struct offcpu_rec *o, struct perfrec_pdwriter *w, const char *path, uint64_t time);
void offcpu_rec_close(struct offcpu_rec *o);

#endif
