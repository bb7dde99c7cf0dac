/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The "cgroups" part of a file's manifest: which cgroups its samples came
 * from and how many each, with the systemd unit or container each cgroup
 * path names, so a fleet can find "the files where service X was busy"
 * without opening them.  Counted from the published file itself.
 */
#ifndef PERFRECD_MANIFEST_CGROUP_H
#define PERFRECD_MANIFEST_CGROUP_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

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
 * Read the perf.data file at @path and return a new JSON array of
 * {"id", "path", "samples", ["unit"], ["container"]} for every cgroup its
 * samples (those with PERF_SAMPLE_CGROUP) name, most samples first; "path"
 * is left out when the file has no CGROUP record for the id.  0 and
 * *ret_array (owned by the caller), or -errno (-EBADMSG: unreadable file).
 */
int manifest_cgroups(const char *path, json_object **ret_array);

#endif
