/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The "cgroups" part of a file's manifest: which cgroups its samples came
 * from and how many each, with the systemd unit or container each cgroup
 * path names, so a fleet can find "the files where service X was busy"
 * without opening them.  Counted as the file is written, or from the file.
 */
#ifndef PERFRECD_MANIFEST_CGROUP_H
#define PERFRECD_MANIFEST_CGROUP_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>
#include <linux/perf_event.h>

/* Longest unit name / container id the classifier returns (plus NUL). */
#define CGROUP_NAME_MAX 256

/*
 * Classify a cgroup path ("/system.slice/docker-<id>.scope").  @unit gets
 * the innermost path component that is a systemd service or scope unit
 * ("foo.service", "session-2.scope"), else "".  @container gets the id of
 * a container runtime's cgroup (docker-, libpod-, crio-, cri-containerd-
 * scopes; a bare 64-hex component as docker's and kubelet's cgroupfs
 * drivers name them), else "".  Both buffers CGROUP_NAME_MAX bytes.
 */
void cgroup_classify(const char *path, char unit[CGROUP_NAME_MAX], char container[CGROUP_NAME_MAX]);

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
/* The JSON array manifest_cgroups() returns, from the counts.  0 or -ENOMEM. */
int cgroup_counts_json(const struct cgroup_counts *t, json_object **ret_array);

/*
 * Read the perf.data file at @path and return a new JSON array of
 * {"id", "path", "samples", ["unit"], ["container"]} for every cgroup its
 * samples (those with PERF_SAMPLE_CGROUP) name, most samples first; "path"
 * is left out when the file has no CGROUP record for the id.  0 and
 * *ret_array (owned by the caller), or -errno (-EBADMSG: unreadable file).
 */
int manifest_cgroups(const char *path, json_object **ret_array);

#endif
