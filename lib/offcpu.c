// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Off-CPU profiling in user space: loads lib/bpf/offcpu.bpf.c through its
 * generated skeleton (build/offcpu.skel.h), attaches it to sched_switch,
 * and at each file end turns the kernel's aggregated (thread, stacks) ->
 * blocked-ns map into "offcpu-time" samples.  Reasons BPF cannot be used
 * (no BTF, missing capabilities, an old kernel) come back as one line for
 * the daemon to log, because on-CPU recording must go on without it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <perfrec/offcpu.h>

#include "offcpu.skel.h"

/* Layout of the BPF program's map key (struct offcpu_key there). */
struct perfrec_offcpu_key {
	uint32_t pid;
	uint32_t tid;
	int32_t kstack_id;
	int32_t ustack_id;
	uint32_t state;
	uint32_t cpu;
};

struct perfrec_offcpu {
	struct offcpu_bpf *skel;
};

void perfrec_offcpu__attr(struct perf_event_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->type = PERF_TYPE_SOFTWARE;
	attr->config = PERF_COUNT_SW_BPF_OUTPUT;
	attr->size = sizeof(*attr);
	attr->sample_period = 1;
	attr->sample_type = PERFREC_OFFCPU_SAMPLE_TYPE;
	attr->disabled = 1;
}

size_t perfrec_offcpu__sample_size(const struct perfrec_offcpu_entry *e)
{
	size_t nr;

	if (e->nr_kernel > PERFREC_OFFCPU_MAX_STACK || e->nr_user > PERFREC_OFFCPU_MAX_STACK)
		return 0;
	/* Each non-empty stack is preceded by its PERF_CONTEXT_* marker. */
	nr = (e->nr_kernel ? e->nr_kernel + 1 : 0) + (e->nr_user ? e->nr_user + 1 : 0);
	/* header, id, ip, pid/tid, time, cpu/res, period, nr, ips */
	return sizeof(struct perf_event_header) + 7 * sizeof(uint64_t) + nr * sizeof(uint64_t);
}

int perfrec_offcpu__encode_sample(void *buf, size_t size, const struct perfrec_offcpu_entry *e,
				  uint64_t id, uint64_t time)
{
	size_t need = perfrec_offcpu__sample_size(e);
	struct perf_event_header *h = buf;
	uint64_t *p = (uint64_t *)(h + 1);
	uint64_t *nr;

	if (need == 0 || e->period == 0)
		return -EINVAL;
	if (size < need)
		return -ENOSPC;
	h->type = PERF_RECORD_SAMPLE;
	/* Where it blocked: user code is what the reader wants to see first. */
	h->misc = e->nr_user ? PERF_RECORD_MISC_USER : PERF_RECORD_MISC_KERNEL;
	h->size = (uint16_t)need;
	*p++ = id;
	*p++ = e->nr_user ? e->user[0] : e->nr_kernel ? e->kernel[0] : 0;
	*p++ = (uint64_t)e->pid | (uint64_t)e->tid << 32;
	*p++ = time;
	*p++ = (uint64_t)e->cpu;                 /* cpu, res = 0 */
	*p++ = e->period;
	nr = p++;
	*nr = 0;
	if (e->nr_kernel) {
		*p++ = PERF_CONTEXT_KERNEL;
		memcpy(p, e->kernel, e->nr_kernel * sizeof(uint64_t));
		p += e->nr_kernel;
		*nr += e->nr_kernel + 1;
	}
	if (e->nr_user) {
		*p++ = PERF_CONTEXT_USER;
		memcpy(p, e->user, e->nr_user * sizeof(uint64_t));
		p += e->nr_user;
		*nr += e->nr_user + 1;
	}
	return (int)need;
}

static int silent_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return 0;
}

static int cgroup_id_of(const char *path, uint64_t *ret_id)
{
	char buf[4096];
	struct stat st;

	if (path[0] != '/') {
		snprintf(buf, sizeof(buf), "/sys/fs/cgroup/%s", path);
		path = buf;
	}
	if (stat(path, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	/* On cgroup v2 the directory's inode number is the cgroup id. */
	*ret_id = st.st_ino;
	return 0;
}

int perfrec_offcpu__open(const struct perfrec_offcpu_opts *opts, struct perfrec_offcpu **ret,
			 char *why, size_t why_len)
{
	const char *cg = PERFREC_OPTS_GET(opts, cgroup_path, NULL);
	struct perfrec_offcpu *oc;
	uint64_t cgid = 0;
	int r;

	if (!PERFREC_OPTS_VALID(opts, struct perfrec_offcpu_opts) || !ret)
		return -EINVAL;
	*ret = NULL;
	if (access("/sys/kernel/btf/vmlinux", R_OK) < 0) {
		r = -errno;
		snprintf(why, why_len, "the kernel has no BTF (/sys/kernel/btf/vmlinux: %s)",
			 strerror(-r));
		return r;
	}
	if (cg && cg[0]) {
		r = cgroup_id_of(cg, &cgid);
		if (r < 0) {
			snprintf(why, why_len, "cgroup %s: %s", cg, strerror(-r));
			return r;
		}
	}
	oc = calloc(1, sizeof(*oc));
	if (!oc)
		return -ENOMEM;
	/* libbpf would print to stderr; the library never prints. */
	libbpf_set_print(silent_print);
	oc->skel = offcpu_bpf__open();
	if (!oc->skel) {
		r = -errno;
		snprintf(why, why_len, "opening the BPF object failed: %s", strerror(-r));
		goto fail;
	}
	oc->skel->bss->min_ns = PERFREC_OPTS_GET(opts, min_ns, 0);
	oc->skel->bss->cgroup_id = cgid;
	oc->skel->rodata->self_tgid = (uint32_t)PERFREC_OPTS_GET(opts, self_pid, 0);
	r = offcpu_bpf__load(oc->skel);
	if (r < 0) {
		snprintf(why, why_len, "loading the BPF program failed: %s%s", strerror(-r),
			 r == -EPERM ? " (needs CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN)" : "");
		goto fail;
	}
	r = offcpu_bpf__attach(oc->skel);
	if (r < 0) {
		snprintf(why, why_len, "attaching to sched_switch failed: %s", strerror(-r));
		goto fail;
	}
	*ret = oc;
	return 0;
fail:
	perfrec_offcpu__close(oc);
	return r;
}

void perfrec_offcpu__close(struct perfrec_offcpu *oc)
{
	if (!oc)
		return;
	offcpu_bpf__destroy(oc->skel);
	free(oc);
}

int perfrec_offcpu__set_filter(struct perfrec_offcpu *oc, const struct perfrec_offcpu_opts *opts)
{
	const char *cg = PERFREC_OPTS_GET(opts, cgroup_path, NULL);
	uint64_t cgid = 0;
	int r;

	if (!oc || !oc->skel || !oc->skel->bss || !PERFREC_OPTS_VALID(opts, struct perfrec_offcpu_opts))
		return -EINVAL;
	if (cg && cg[0]) {
		r = cgroup_id_of(cg, &cgid);
		if (r < 0)
			return r;
	}
	/* The program reads both at every switch: a block ending now may see either. */
	oc->skel->bss->min_ns = PERFREC_OPTS_GET(opts, min_ns, 0);
	oc->skel->bss->cgroup_id = cgid;
	return 0;
}

uint64_t perfrec_offcpu__lost(const struct perfrec_offcpu *oc)
{
	return oc && oc->skel && oc->skel->bss ? oc->skel->bss->lost_full : 0;
}

uint64_t perfrec_offcpu__lost_stacks(const struct perfrec_offcpu *oc)
{
	return oc && oc->skel && oc->skel->bss ? oc->skel->bss->lost_stacks : 0;
}

/* Remove every stack of the map @fd. */
static void clear_stacks(int fd)
{
	uint32_t id, next;
	bool first = true;

	while (bpf_map_get_next_key(fd, first ? NULL : &id, &next) == 0) {
		if (!first)
			bpf_map_delete_elem(fd, &id);
		id = next;
		first = false;
	}
	if (!first)
		bpf_map_delete_elem(fd, &id);
}

/* Frames of stack @id, innermost first; a lookup miss (id < 0) is empty. */
static uint32_t read_stack(int fd, int32_t id, uint64_t *ips)
{
	uint32_t n = 0;

	if (id < 0)
		return 0;
	memset(ips, 0, PERFREC_OFFCPU_MAX_STACK * sizeof(uint64_t));
	if (bpf_map_lookup_elem(fd, &id, ips) < 0)
		return 0;
	while (n < PERFREC_OFFCPU_MAX_STACK && ips[n])
		n++;
	return n;
}

int perfrec_offcpu__drain(struct perfrec_offcpu *oc, uint64_t id, uint64_t time,
			  perfrec_offcpu_emit_fn emit, void *userdata)
{
	uint64_t kips[PERFREC_OFFCPU_MAX_STACK], uips[PERFREC_OFFCPU_MAX_STACK];
	uint64_t rec[8 + 2 * (PERFREC_OFFCPU_MAX_STACK + 1) + 1];
	struct perfrec_offcpu_key key, next;
	int mfd, kfd, ufd, r, count = 0;
	void *prev = NULL;

	if (!oc || !emit)
		return -EINVAL;
	mfd = bpf_map__fd(oc->skel->maps.offcpu);
	kfd = bpf_map__fd(oc->skel->maps.kstacks);
	ufd = bpf_map__fd(oc->skel->maps.ustacks);
	/*
	 * Deleting the entry just emitted while walking would make the next
	 * get_next_key restart, so delete the previous one after stepping on.
	 */
	while (bpf_map_get_next_key(mfd, prev, &next) == 0) {
		struct perfrec_offcpu_entry e = { 0 };
		uint64_t total;

		if (prev)
			bpf_map_delete_elem(mfd, prev);
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(mfd, &key, &total) < 0 || total == 0)
			continue;
		e.pid = key.pid;
		e.tid = key.tid;
		e.cpu = key.cpu;
		e.period = total;
		e.kernel = kips;
		e.user = uips;
		e.nr_kernel = read_stack(kfd, key.kstack_id, kips);
		e.nr_user = read_stack(ufd, key.ustack_id, uips);
		r = perfrec_offcpu__encode_sample(rec, sizeof(rec), &e, id, time);
		if (r < 0)
			return r;
		r = emit((const struct perf_event_header *)rec, userdata);
		if (r < 0)
			return r;
		count++;
	}
	if (prev)
		bpf_map_delete_elem(mfd, prev);
	/*
	 * Free the stacks drained: never freed, the maps filled with every
	 * blocking stack the host ever had, and a new stack whose bucket was
	 * taken got no id, so a long-running recorder lost more stacks every
	 * hour.  A thread blocked across this point whose stack is freed here
	 * comes back with an id that reads empty (or, if another stack took
	 * that bucket meanwhile, that stack): one sample per such thread.
	 */
	clear_stacks(kfd);
	clear_stacks(ufd);
	return count;
}
