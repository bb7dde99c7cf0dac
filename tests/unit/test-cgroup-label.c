// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Tests of internal/cgroup-label.c: cgroup paths, in the shapes docker,
 * containerd, CRI-O, podman, systemd-nspawn, libvirt, kubelet (both cgroup
 * drivers, every QoS class) and systemd write them, to runtime, container,
 * pod, QoS, unit and slice (table-driven); and the views' selection by
 * container / pod prefix and unit or slice name.
 */
#include <string.h>

#include <criterion/criterion.h>

#include "cgroup-label.h"

#define ID "4f1c2a9e0b7d3c6a5e8f9012ab34cd56ef7890123456789abcdef0123456789a"
#define ID2 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define UID "1234abcd-5678-90ef-1234-567890abcdef"
#define UID_ "1234abcd_5678_90ef_1234_567890abcdef"
#define STATIC_UID "0fd3f7c7a3f4a6e8a7b5c3d2e1f09876"

struct label_case {
	const char *path;
	const char *runtime, *container, *pod, *qos, *unit, *slice;
};

static const struct label_case cases[] = {
	/* systemd: services, scopes, slices; no runtime */
	{ "/", "", "", "", "", "", "" },
	{ "", "", "", "", "", "", "" },
	{ NULL, "", "", "", "", "", "" },
	{ "/system.slice", "", "", "", "", "", "system.slice" },
	{ "/system.slice/nginx.service", "", "", "", "", "nginx.service", "system.slice" },
	{ "/system.slice/foo.service/worker", "", "", "", "", "foo.service", "system.slice" },
	{ "/user.slice/user-1000.slice/session-2.scope", "", "", "", "", "session-2.scope", "user-1000.slice" },
	{ "/user.slice/user-1000.slice/user@1000.service/app.slice/app-gnome.scope",
	  "", "", "", "", "app-gnome.scope", "app.slice" },
	{ "/.service", "", "", "", "", "", "" },
	/* docker: systemd and cgroupfs drivers */
	{ "/system.slice/docker-" ID ".scope", "docker", ID, "", "", "docker-" ID ".scope", "system.slice" },
	{ "/docker/" ID, "docker", ID, "", "", "", "" },
	/* a container running systemd: its own unit is the innermost */
	{ "/system.slice/docker-" ID ".scope/system.slice/cron.service",
	  "docker", ID, "", "", "cron.service", "system.slice" },
	/* containerd outside Kubernetes (nerdctl) */
	{ "/system.slice/nerdctl-" ID ".scope", "containerd", ID, "", "", "nerdctl-" ID ".scope", "system.slice" },
	/* Kubernetes, systemd driver: burstable, besteffort, guaranteed (no QoS level) */
	{ "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice/cri-containerd-" ID ".scope",
	  "containerd", ID, UID, "burstable", "cri-containerd-" ID ".scope", "kubepods-burstable-pod" UID_ ".slice" },
	{ "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_ ".slice/crio-" ID ".scope",
	  "cri-o", ID, UID, "besteffort", "crio-" ID ".scope", "kubepods-besteffort-pod" UID_ ".slice" },
	{ "/kubepods.slice/kubepods-pod" UID_ ".slice/cri-containerd-" ID ".scope",
	  "containerd", ID, UID, "guaranteed", "cri-containerd-" ID ".scope", "kubepods-pod" UID_ ".slice" },
	{ "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice/crio-conmon-" ID ".scope",
	  "cri-o", "", UID, "burstable", "crio-conmon-" ID ".scope", "kubepods-burstable-pod" UID_ ".slice" },
	/* a pod's slice without its containers: pod and QoS, no runtime */
	{ "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice",
	  "", "", UID, "burstable", "", "kubepods-burstable-pod" UID_ ".slice" },
	{ "/kubepods.slice/kubepods-besteffort.slice", "", "", "", "besteffort", "", "kubepods-besteffort.slice" },
	/* static pods: a 32-hex config hash for a UID */
	{ "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" STATIC_UID ".slice/cri-containerd-" ID ".scope",
	  "containerd", ID, STATIC_UID, "burstable", "cri-containerd-" ID ".scope",
	  "kubepods-burstable-pod" STATIC_UID ".slice" },
	/* kind, k3s: kubelet under a --cgroup-root */
	{ "/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/kubelet-kubepods-besteffort-pod" UID_
	  ".slice/cri-containerd-" ID ".scope",
	  "containerd", ID, UID, "besteffort", "cri-containerd-" ID ".scope",
	  "kubelet-kubepods-besteffort-pod" UID_ ".slice" },
	/* Kubernetes, cgroupfs driver */
	{ "/kubepods/burstable/pod" UID "/" ID, "containerd", ID, UID, "burstable", "", "" },
	{ "/kubepods/besteffort/pod" UID "/" ID, "containerd", ID, UID, "besteffort", "", "" },
	{ "/kubepods/pod" UID "/" ID, "containerd", ID, UID, "guaranteed", "", "" },
	{ "/kubepods/burstable/pod" UID "/crio-" ID, "cri-o", ID, UID, "burstable", "", "" },
	/* not a UID: no pod */
	{ "/kubepods/besteffort/pod0b1c/" ID, "containerd", ID, "", "besteffort", "", "" },
	/* podman: rootful, rootless, its conmon, its pods, cgroupfs */
	{ "/machine.slice/libpod-" ID ".scope", "podman", ID, "", "", "libpod-" ID ".scope", "machine.slice" },
	{ "/machine.slice/libpod-" ID ".scope/container", "podman", ID, "", "", "libpod-" ID ".scope", "machine.slice" },
	{ "/machine.slice/libpod-conmon-" ID ".scope", "podman", "", "", "", "libpod-conmon-" ID ".scope",
	  "machine.slice" },
	{ "/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID ".scope",
	  "podman", ID, "", "", "libpod-" ID ".scope", "user.slice" },
	{ "/machine.slice/machine-libpod_pod_" ID2 ".slice/libpod-" ID ".scope",
	  "podman", ID, "", "", "libpod-" ID ".scope", "machine-libpod_pod_" ID2 ".slice" },
	{ "/libpod_parent/libpod-" ID, "podman", ID, "", "", "", "" },
	/* systemd-nspawn and libvirt machines: the machine's name, unescaped */
	{ "/machine.slice/machine-web.scope", "systemd-nspawn", "web", "", "", "machine-web.scope", "machine.slice" },
	{ "/machine.slice/machine-build\\x2dbox.scope/payload", "systemd-nspawn", "build-box", "", "",
	  "machine-build\\x2dbox.scope", "machine.slice" },
	{ "/machine.slice/machine-qemu\\x2d1\\x2dvm1.scope/libvirt/vcpu0", "libvirt", "qemu-1-vm1", "", "",
	  "machine-qemu\\x2d1\\x2dvm1.scope", "machine.slice" },
	/* nested runtimes: the innermost container */
	{ "/system.slice/docker-" ID ".scope/docker/" ID2, "docker", ID2, "", "", "docker-" ID ".scope", "system.slice" },
	/* not containers: short or non-hex ids, wrong suffix, an id without a runtime's name */
	{ "/docker-1234.scope", "", "", "", "", "docker-1234.scope", "" },
	{ "/docker-" ID ".slice", "", "", "", "", "", "docker-" ID ".slice" },
	{ "/a/xyz" ID, "", "", "", "", "", "" },
	{ "/system.slice/docker-" ID, "", "", "", "", "", "system.slice" },
	{ "/somewhere/" ID, "", ID, "", "", "", "" },
};

Test(cgroup_label, real_paths_are_labelled)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct label_case *c = &cases[i];
		struct cgroup_label l;

		memset(&l, 'x', sizeof(l));
		cgroup_label_parse(c->path, &l);
		cr_expect_str_eq(l.runtime, c->runtime, "%s: runtime '%s', want '%s'", c->path, l.runtime, c->runtime);
		cr_expect_str_eq(l.container, c->container, "%s: container '%s', want '%s'", c->path, l.container,
				 c->container);
		cr_expect_str_eq(l.pod, c->pod, "%s: pod '%s', want '%s'", c->path, l.pod, c->pod);
		cr_expect_str_eq(l.qos, c->qos, "%s: qos '%s', want '%s'", c->path, l.qos, c->qos);
		cr_expect_str_eq(l.unit, c->unit, "%s: unit '%s', want '%s'", c->path, l.unit, c->unit);
		cr_expect_str_eq(l.slice, c->slice, "%s: slice '%s', want '%s'", c->path, l.slice, c->slice);
	}
}

Test(cgroup_label, an_overlong_component_is_cut_to_the_buffer)
{
	char path[CGROUP_NAME_MAX * 2 + 16];
	struct cgroup_label l;

	path[0] = '/';
	memset(path + 1, 'u', CGROUP_NAME_MAX * 2 - 8);
	strcpy(path + 1 + CGROUP_NAME_MAX * 2 - 8, ".service");
	cgroup_label_parse(path, &l);
	cr_expect_eq(strlen(l.unit), CGROUP_NAME_MAX - 1);
	cr_expect_str_eq(l.container, "");
}

struct select_case {
	struct cgroup_select sel;
	const char *path;
	bool want;
};

#define POD_CG "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice/cri-containerd-" ID ".scope"

static const struct select_case selects[] = {
	{ { .container = ID }, "/system.slice/docker-" ID ".scope", true },
	{ { .container = "4f1c2a" }, "/system.slice/docker-" ID ".scope", true },
	{ { .container = "4f1c2b" }, "/system.slice/docker-" ID ".scope", false },
	{ { .container = "4f1c2a" }, "/system.slice/nginx.service", false },
	{ { .container = "web" }, "/machine.slice/machine-web.scope", true },
	/* a pod: its UID as the API gives it, or as its slice spells it, or a prefix */
	{ { .pod = UID }, POD_CG, true },
	{ { .pod = UID_ }, POD_CG, true },
	{ { .pod = "1234abcd-56" }, POD_CG, true },
	{ { .pod = "1234abce" }, POD_CG, false },
	{ { .pod = "1234abcd" }, "/system.slice/docker-" ID ".scope", false },
	{ { .pod = "1234abcd", .container = ID2 }, POD_CG, false },
	{ { .pod = "1234abcd", .container = "4f" }, POD_CG, true },
	/* a unit by name, with or without .service, and a slice */
	{ { .unit = "nginx.service" }, "/system.slice/nginx.service", true },
	{ { .unit = "nginx" }, "/system.slice/nginx.service", true },
	{ { .unit = "nginx" }, "/system.slice/nginx-debug.service", false },
	{ { .unit = "foo.service" }, "/system.slice/foo.service/worker", true },
	{ { .unit = "system.slice" }, "/system.slice/foo.service/worker", true },
	{ { .unit = "user.slice" }, "/system.slice/foo.service/worker", false },
	{ { .unit = "kubepods-burstable.slice" }, POD_CG, true },
	{ { .unit = "nginx" }, NULL, false },
	{ { 0 }, "/anything", true },
};

Test(cgroup_label, views_select_by_container_pod_and_unit)
{
	for (size_t i = 0; i < sizeof(selects) / sizeof(selects[0]); i++) {
		const struct select_case *c = &selects[i];
		struct cgroup_label l;

		cgroup_label_parse(c->path, &l);
		cr_expect_eq(cgroup_select_matches(&c->sel, c->path, &l), c->want,
			     "case %zu: %s by container=%s pod=%s unit=%s: want %d", i, c->path,
			     c->sel.container ? c->sel.container : "-", c->sel.pod ? c->sel.pod : "-",
			     c->sel.unit ? c->sel.unit : "-", c->want);
	}
	cr_expect(!cgroup_select_any(&(struct cgroup_select){ 0 }));
	cr_expect(!cgroup_select_any(NULL));
	cr_expect(cgroup_select_any(&(struct cgroup_select){ .unit = "x" }));
}
