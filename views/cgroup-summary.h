/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The busiest containers and systemd units of a set of recorded files, from
 * their manifests' per-cgroup counts and labels (daemon/manifest-cgroup.c,
 * internal/cgroup-label.h), for `perfrecctl ls` and `status`: what an SRE asks
 * first ("which pod was busy?") without opening a file.  Containers are
 * keyed by runtime and id (with their pod and QoS class), units by name;
 * a container's own scope unit is not listed again among the units.
 */
#ifndef PERFRECCTL_CGROUP_SUMMARY_H
#define PERFRECCTL_CGROUP_SUMMARY_H

#include <stdint.h>
#include <stdio.h>

#include <json-c/json.h>

struct cgroup_summary;

int cgroup_summary_new(struct cgroup_summary **ret);
void cgroup_summary_free(struct cgroup_summary *s);

/*
 * Add the "cgroups" of the manifest @json_path ("<file>.json").  0, or
 * -ENOENT (no manifest, or one without cgroups), -ENOMEM.
 */
int cgroup_summary_add_manifest(struct cgroup_summary *s, const char *json_path);

/* How many manifests were added. */
size_t cgroup_summary_files(const struct cgroup_summary *s);

/*
 * "busiest containers: ..." and "busiest units: ..." lines (the @top
 * busiest each, with their shares of the cgroup-tagged samples), prefixed
 * by @indent, after a line @heading (NULL: none); nothing at all when no
 * manifest named a container or unit.
 */
void cgroup_summary_print(const struct cgroup_summary *s, FILE *f, const char *heading, const char *indent,
			  size_t top);

/*
 * {"containers": [{"runtime", "container", ["pod"], ["qos"], "samples"}...],
 *  "units": [{"unit", ["slice"], "samples"}...], "samples": N}, busiest
 * first, all of them; a new object, or NULL without memory.
 */
json_object *cgroup_summary_json(const struct cgroup_summary *s);

#endif
