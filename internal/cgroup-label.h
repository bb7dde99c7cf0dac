/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Internal (not exported from libperfrec): what a cgroup path says about
 * the task in it, read from the path alone, without asking a container
 * runtime or the Kubernetes API: the runtime and container id, the
 * Kubernetes pod UID and QoS class, the systemd unit and slice.  Runtimes
 * and kubelet name their cgroups in a few fixed shapes, for both cgroup
 * drivers (systemd: "kubepods-burstable-pod<uid>.slice/cri-containerd-
 * <id>.scope"; cgroupfs: "/kubepods/burstable/pod<uid>/<id>"), so a path
 * recorded on a host of a fleet is enough, also long after the container
 * is gone.  Used by the daemon (manifests) and perfrecctl (views, filters).
 */
#ifndef PERFREC_CGROUP_LABEL_H
#define PERFREC_CGROUP_LABEL_H

#include <stdbool.h>

/* Longest unit name / container id kept (plus NUL); longer ones are cut. */
#define CGROUP_NAME_MAX 256

struct cgroup_label {
	/*
	 * "docker", "containerd", "cri-o", "podman", "systemd-nspawn",
	 * "libvirt", or "" (no runtime's cgroup).  podman's conmon scope
	 * ("libpod-conmon-<id>.scope") says "podman" with no container: the
	 * monitor, not the container's own processes.
	 */
	char runtime[16];
	/* 64-hex container id; an nspawn or libvirt machine's name; or "" */
	char container[CGROUP_NAME_MAX];
	/* Kubernetes pod UID, with '-' (systemd slices write '_'); or "" */
	char pod[48];
	/* "guaranteed", "burstable", "besteffort" under kubepods; or "" */
	char qos[16];
	/* innermost systemd .service or .scope component; or "" */
	char unit[CGROUP_NAME_MAX];
	/* innermost .slice component above it; or "" */
	char slice[CGROUP_NAME_MAX];
};

/*
 * Fill @ret from the cgroup path @path ("/system.slice/docker-<id>.scope";
 * NULL reads as "").  Never fails: what the path does not say is "".
 */
void cgroup_label_parse(const char *path, struct cgroup_label *ret);

/* What a view selects by; NULL fields select any. */
struct cgroup_select {
	const char *container;  /* a container id or a prefix of one (or a machine name) */
	const char *pod;        /* a pod UID or a prefix of one, '-' or '_' */
	/*
	 * A unit or slice: "nginx.service", "nginx" (a .service), "system.slice":
	 * any component of the path, so a unit's delegated subtree and a
	 * slice's units are in it.
	 */
	const char *unit;
};

/* Whether @sel selects any field at all. */
bool cgroup_select_any(const struct cgroup_select *sel);

/* Whether the cgroup @path (labelled @l) is one @sel selects. */
bool cgroup_select_matches(const struct cgroup_select *sel, const char *path, const struct cgroup_label *l);

#endif
