// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Cgroup paths to labels (see cgroup-label.h).  The path is walked one
 * component at a time; each shape a runtime, kubelet or systemd writes is
 * recognised in one component (and, for the cgroupfs drivers, its parent),
 * and the innermost match of each kind wins, so a unit inside a container
 * (a container running systemd) or a container of a pod is named by what
 * is nearest the task.  The shapes, as the runtimes write them:
 *
 *   docker          /system.slice/docker-<id>.scope       /docker/<id>
 *   containerd/CRI  .../cri-containerd-<id>.scope         /kubepods/.../pod<uid>/<id>
 *   CRI-O           .../crio-<id>.scope                   .../crio-<id>
 *   podman          /machine.slice/libpod-<id>.scope[/container]
 *                   .../libpod-conmon-<id>.scope (its monitor)   /libpod_parent/libpod-<id>
 *   systemd-nspawn  /machine.slice/machine-<name>.scope   (libvirt: machine-qemu\x2d1\x2dvm.scope)
 *   Kubernetes      /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid_>.slice
 *                   /kubepods.slice/kubepods-pod<uid_>.slice (guaranteed: no QoS level)
 *                   /kubepods/besteffort/pod<uid>            /kubepods/pod<uid>
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "cgroup-label.h"

struct comp {
	const char *s;
	size_t len;
};

static bool ends_with(struct comp c, const char *suffix)
{
	size_t n = strlen(suffix);

	return c.len > n && !memcmp(c.s + c.len - n, suffix, n);
}

static bool starts_with(struct comp c, const char *prefix)
{
	size_t n = strlen(prefix);

	return c.len >= n && !memcmp(c.s, prefix, n);
}

static bool equals(struct comp c, const char *s)
{
	return c.len == strlen(s) && !memcmp(c.s, s, c.len);
}

static bool all_hex(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (!isxdigit((unsigned char)s[i]))
			return false;
	return true;
}

static void copy(char *dst, size_t sz, const char *src, size_t len)
{
	if (len >= sz)
		len = sz - 1;
	memcpy(dst, src, len);
	dst[len] = '\0';
}

/*
 * A pod UID as kubelet writes it: a UUID (8-4-4-4-12, '-' or, in systemd
 * slice names, '_'), or a static pod's 32-hex config hash.  Into @dst
 * with '-'.
 */
static bool pod_uid(const char *s, size_t len, char *dst, size_t sz)
{
	if (len == 32 && all_hex(s, 32)) {
		copy(dst, sz, s, len);
		return true;
	}
	if (len != 36)
		return false;
	for (size_t i = 0; i < 36; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? s[i] != '-' && s[i] != '_' : !isxdigit((unsigned char)s[i]))
			return false;
	}
	copy(dst, sz, s, len);
	for (char *p = dst; *p; p++)
		if (*p == '_')
			*p = '-';
	return true;
}

static const char *qos_name(const char *s, size_t len)
{
	if (len == strlen("burstable") && !memcmp(s, "burstable", len))
		return "burstable";
	if (len == strlen("besteffort") && !memcmp(s, "besteffort", len))
		return "besteffort";
	return NULL;
}

/*
 * kubelet's systemd-driver slices: "[prefix-]kubepods[-<qos>].slice" and
 * "[prefix-]kubepods[-<qos>]-pod<uid>.slice" (a --cgroup-root adds the
 * prefix, as kind and k3s do).
 */
static void kube_slice(struct comp c, struct cgroup_label *l)
{
	size_t n = c.len - strlen(".slice");
	const char *k = NULL, *rest;
	size_t rlen;

	for (const char *p = c.s; p + 8 <= c.s + n; p++)
		if (!memcmp(p, "kubepods", 8))
			k = p;
	if (!k)
		return;
	rest = k + 8;
	rlen = (size_t)(c.s + n - rest);
	if (!rlen || *rest != '-')
		return;
	rest++, rlen--;
	for (size_t i = 0; i + 3 < rlen; i++) {
		/* "<qos>-pod<uid>" or "pod<uid>" */
		if ((i == 0 || rest[i - 1] == '-') && !memcmp(rest + i, "pod", 3) &&
		    pod_uid(rest + i + 3, rlen - i - 3, l->pod, sizeof(l->pod))) {
			const char *q = i ? qos_name(rest, i - 1) : "guaranteed";

			snprintf(l->qos, sizeof(l->qos), "%s", q ? q : "");
			return;
		}
	}
	if (qos_name(rest, rlen))
		snprintf(l->qos, sizeof(l->qos), "%s", qos_name(rest, rlen));
}

/* kubelet's cgroupfs driver: /kubepods[/<qos>]/pod<uid>/<id>. */
static void kube_dir(struct comp c, struct comp parent, struct cgroup_label *l)
{
	if (equals(parent, "kubepods") && qos_name(c.s, c.len)) {
		snprintf(l->qos, sizeof(l->qos), "%s", qos_name(c.s, c.len));
		return;
	}
	if (starts_with(c, "pod") && pod_uid(c.s + 3, c.len - 3, l->pod, sizeof(l->pod)) && equals(parent, "kubepods"))
		snprintf(l->qos, sizeof(l->qos), "guaranteed");
}

struct scope_kind {
	const char *prefix, *runtime;
	bool container;         /* false: the runtime's monitor, not a container */
};

/* Longer prefixes first: "libpod-conmon-" before "libpod-". */
static const struct scope_kind scopes[] = {
	{ "docker-", "docker", true },
	{ "cri-containerd-", "containerd", true },
	{ "containerd-", "containerd", true },
	{ "nerdctl-", "containerd", true },
	{ "crio-conmon-", "cri-o", false },
	{ "crio-", "cri-o", true },
	{ "libpod-conmon-", "podman", false },
	{ "libpod-", "podman", true },
};

/* systemd's \xNN escapes in unit names ("qemu\x2d1\x2dvm") undone. */
static void unescape(char *dst, size_t sz, const char *s, size_t len)
{
	size_t o = 0;

	for (size_t i = 0; i < len && o + 1 < sz; i++) {
		unsigned v;

		if (s[i] == '\\' && i + 3 < len && s[i + 1] == 'x' && all_hex(s + i + 2, 2) &&
		    sscanf(s + i + 2, "%2x", &v) == 1 && v) {
			dst[o++] = (char)v;
			i += 3;
		} else {
			dst[o++] = s[i];
		}
	}
	dst[o] = '\0';
}

static void set_container(struct cgroup_label *l, const char *runtime, const char *id, size_t len)
{
	snprintf(l->runtime, sizeof(l->runtime), "%s", runtime);
	copy(l->container, sizeof(l->container), id, len);
}

/* A runtime's own name for a container: "<prefix><64 hex>[.scope]". */
static bool runtime_scope(struct comp c, struct cgroup_label *l)
{
	size_t body = ends_with(c, ".scope") ? c.len - strlen(".scope") : c.len;

	for (size_t i = 0; i < sizeof(scopes) / sizeof(scopes[0]); i++) {
		size_t pl = strlen(scopes[i].prefix);

		if (body != pl + 64 || memcmp(c.s, scopes[i].prefix, pl) || !all_hex(c.s + pl, 64))
			continue;
		/* Without .scope only where a cgroupfs driver writes it so (CRI-O, podman). */
		if (body == c.len && strcmp(scopes[i].runtime, "cri-o") && strcmp(scopes[i].runtime, "podman"))
			return false;
		if (scopes[i].container)
			set_container(l, scopes[i].runtime, c.s + pl, 64);
		else
			set_container(l, scopes[i].runtime, "", 0);
		return true;
	}
	return false;
}

static void machine_scope(struct comp c, struct cgroup_label *l)
{
	const char *name = c.s + strlen("machine-");
	size_t len = c.len - strlen("machine-") - strlen(".scope");

	unescape(l->container, sizeof(l->container), name, len);
	snprintf(l->runtime, sizeof(l->runtime), "%s",
		 !strncmp(l->container, "qemu-", 5) || !strncmp(l->container, "lxc-", 4) ? "libvirt" : "systemd-nspawn");
}

static void component(struct comp c, struct comp parent, bool kube, struct cgroup_label *l)
{
	if (ends_with(c, ".slice")) {
		copy(l->slice, sizeof(l->slice), c.s, c.len);
		kube_slice(c, l);
		return;
	}
	if (ends_with(c, ".service") || ends_with(c, ".scope"))
		copy(l->unit, sizeof(l->unit), c.s, c.len);
	if (runtime_scope(c, l))
		return;
	if (starts_with(c, "machine-") && ends_with(c, ".scope") && c.len > strlen("machine-.scope")) {
		machine_scope(c, l);
		return;
	}
	if (kube)
		kube_dir(c, parent, l);
	/* cgroupfs drivers (docker, kubelet): the bare id as a directory name. */
	if (c.len == 64 && all_hex(c.s, 64))
		set_container(l, equals(parent, "docker") ? "docker" : kube ? "containerd" : "", c.s, 64);
}

void cgroup_label_parse(const char *path, struct cgroup_label *ret)
{
	const char *p = path ? path : "";
	struct comp parent = { "", 0 };
	bool kube = false;

	memset(ret, 0, sizeof(*ret));
	while (*p) {
		struct comp c;

		while (*p == '/')
			p++;
		c.s = p;
		while (*p && *p != '/')
			p++;
		c.len = (size_t)(p - c.s);
		if (!c.len)
			continue;
		if (equals(c, "kubepods"))
			kube = true;
		component(c, parent, kube, ret);
		parent = c;
	}
}

bool cgroup_select_any(const struct cgroup_select *sel)
{
	return sel && (sel->container || sel->pod || sel->unit);
}

static bool pod_prefix(const char *pod, const char *want)
{
	for (; *want; want++, pod++)
		if (*pod != (*want == '_' ? '-' : *want))
			return false;
	return true;
}

static bool has_component(const char *path, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = path; p && *p;) {
		const char *e;

		while (*p == '/')
			p++;
		e = strchrnul(p, '/');
		if ((size_t)(e - p) == n && !memcmp(p, name, n))
			return true;
		if ((size_t)(e - p) == n + strlen(".service") && !memcmp(p, name, n) && !strncmp(p + n, ".service", 8))
			return true;
		p = e;
	}
	return false;
}

bool cgroup_select_matches(const struct cgroup_select *sel, const char *path, const struct cgroup_label *l)
{
	if (!sel)
		return true;
	if (sel->container && (!l->container[0] || strncmp(l->container, sel->container, strlen(sel->container))))
		return false;
	if (sel->pod && (!l->pod[0] || !pod_prefix(l->pod, sel->pod)))
		return false;
	if (sel->unit && !has_component(path, sel->unit))
		return false;
	return true;
}
