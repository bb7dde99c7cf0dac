/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The "cgroups" part of a file's manifest: which cgroups its samples came
 * from and how many each, with the systemd unit or container each cgroup
 * path names (runtime, container, pod, QoS class, unit, slice), so a fleet
 * can find "the files where service X or pod Y was busy" without opening
 * them.  Counted as the file is written, or from the file.
 */
#ifndef PERFRECD_MANIFEST_CGROUP_H
#define PERFRECD_MANIFEST_CGROUP_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>
#include <linux/perf_event.h>

#include "sink.h"

/*
 * Counts kept while a file is written: every CGROUP record and every sample
 * that goes into it, as a reader of the file would count them.  A note
 * fails only for memory, and then cgroup_counts_json() refuses (the caller
 * reads the file instead).
 */
struct cgroup_counts;

int cgroup_counts_new(struct cgroup_counts **ret);
void cgroup_counts_free(struct cgroup_counts *t);
int cgroup_counts_note_cgroup(struct cgroup_counts *t, const struct perf_event_header *h);
int cgroup_counts_note_sample(struct cgroup_counts *t, const struct perf_event_header *h,
			      uint64_t sample_type, uint64_t read_format);
/*
 * The counts as a sink (sink.h) behind wherever the file sits: its ctx
 * points at the counts of the file being written (struct cgroup_counts
 * **, NULL: no file or none kept), so it counts what the file gets.
 */
extern const struct sink_ops cgroup_counts_sink_ops;
/* The JSON array manifest_cgroups() returns, from the counts.  0 or -ENOMEM. */
int cgroup_counts_json(const struct cgroup_counts *t, json_object **ret_array);

/*
 * Read the perf.data file at @path and return a new JSON array of
 * {"id", "path", "samples", ["runtime"], ["container"], ["pod"], ["qos"],
 * ["unit"], ["slice"]} for every cgroup its samples (those with
 * PERF_SAMPLE_CGROUP) name, most samples first; the labels are
 * cgroup_label_parse()'s of the path (internal/cgroup-label.h), each left out
 * when empty; "path" is left out when the file has no CGROUP record for
 * the id.  0 and
 * *ret_array (owned by the caller), or -errno (-EBADMSG: unreadable file).
 */
int manifest_cgroups(const char *path, json_object **ret_array);

#endif
