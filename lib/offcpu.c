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
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <perfrec/evlist.h>
#include <perfrec/offcpu.h>
#include <perfrec/synth.h>
#include <perfrec/unwind.h>

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

/* Layout of the BPF program's struct ucopy (a sampled block, whole-stack mode). */
#define COPY_STACK 8192
#define NR_PT_REGS 21
struct perfrec_offcpu_copy {
	uint64_t delta;
	uint32_t pid, tid;
	int32_t kstack_id, ustack_id;
	uint32_t state, cpu;
	uint64_t start_time, exe_ino;
	uint64_t regs[NR_PT_REGS];
	uint32_t len, live;
	unsigned char stack[];
};
#define COPIES_RING (8u << 20)        /* about 1000 blocks of 8 KiB between two drains */
#define DEFAULT_COPIES_PER_SEC 32
#define MAX_COPIES 512                /* copies of threads blocked at once: 4 MiB */

/* A process whose mappings the unwinder got from /proc in this drain. */
struct space_seen {
	uint32_t pid;
	bool ok;
};

struct perfrec_offcpu {
	struct offcpu_bpf *skel;
	struct ring_buffer *ring;          /* whole_stacks: the copies ring */
	struct perfrec_unwinder *unwinder;
	struct perfrec_offcpu_copy **pending; /* read from the ring, this drain */
	size_t nr_pending, cap_pending;
	struct space_seen *seen;
	size_t nr_seen, cap_seen;
	uint64_t whole, kept_fp, gone;
	uint64_t dwarf[(sizeof(struct perf_event_header) + 1024 + 8 * (PERFREC_OFFCPU_MAX_STACK + 2) +
			COPY_STACK) / 8];
	uint64_t out[65536 / 8];
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

/* Before load: the program's switch and the ring's size (a page when off). */
static int whole_stacks_setup(struct perfrec_offcpu *oc, const struct perfrec_offcpu_opts *opts)
{
	uint32_t rate = PERFREC_OPTS_GET(opts, copies_per_sec, 0);

	if (!PERFREC_OPTS_GET(opts, whole_stacks, false))
		return 0;
	oc->skel->rodata->whole_stacks = true;
	oc->skel->rodata->copies_per_sec = rate ? rate : DEFAULT_COPIES_PER_SEC;
	oc->skel->rodata->max_copies = MAX_COPIES;
	return bpf_map__set_max_entries(oc->skel->maps.copies, COPIES_RING);
}

/* Keep each record of the ring until the drain has walked the aggregate. */
static int take_copy(void *ctx, void *data, size_t size)
{
	struct perfrec_offcpu *oc = ctx;
	struct perfrec_offcpu_copy *c;

	if (size < sizeof(*c))
		return 0;
	if (oc->nr_pending == oc->cap_pending) {
		size_t cap = oc->cap_pending ? 2 * oc->cap_pending : 64;
		void *p = realloc(oc->pending, cap * sizeof(*oc->pending));

		if (!p)
			return -ENOMEM;
		oc->pending = p;
		oc->cap_pending = cap;
	}
	c = malloc(size);
	if (!c)
		return -ENOMEM;
	memcpy(c, data, size);
	/* What the kernel says it copied, never more than it sent. */
	if (c->len > size - sizeof(*c))
		c->len = (uint32_t)(size - sizeof(*c));
	oc->pending[oc->nr_pending++] = c;
	return 0;
}

/* After load: the ring's reader and the unwinder of its copies. */
static int whole_stacks_open(struct perfrec_offcpu *oc)
{
	struct perfrec_unwinder_opts uo = { .sz = sizeof(uo) };
	int r;

	if (!oc->skel->rodata->whole_stacks)
		return 0;
	oc->ring = ring_buffer__new(bpf_map__fd(oc->skel->maps.copies), take_copy, oc, NULL);
	if (!oc->ring)
		return -errno;
	r = perfrec_unwinder__new(&uo, &oc->unwinder);
	return r < 0 ? r : 0;
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
	r = whole_stacks_setup(oc, opts);
	if (r < 0) {
		snprintf(why, why_len, "setting up whole stacks failed: %s", strerror(-r));
		goto fail;
	}
	r = offcpu_bpf__load(oc->skel);
	if (r < 0) {
		snprintf(why, why_len, "loading the BPF program failed: %s%s", strerror(-r),
			 r == -EPERM ? " (needs CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN)" : "");
		goto fail;
	}
	r = whole_stacks_open(oc);
	if (r < 0) {
		snprintf(why, why_len, "opening the ring of stack copies failed: %s", strerror(-r));
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

static void free_pending(struct perfrec_offcpu *oc)
{
	for (size_t i = 0; i < oc->nr_pending; i++)
		free(oc->pending[i]);
	oc->nr_pending = 0;
	oc->nr_seen = 0;
}

void perfrec_offcpu__close(struct perfrec_offcpu *oc)
{
	if (!oc)
		return;
	ring_buffer__free(oc->ring);
	offcpu_bpf__destroy(oc->skel);
	perfrec_unwinder__free(oc->unwinder);
	free_pending(oc);
	free(oc->pending);
	free(oc->seen);
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

void perfrec_offcpu__copy_stats(const struct perfrec_offcpu *oc, struct perfrec_offcpu_copy_stats *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (!oc || !oc->skel || !oc->skel->bss)
		return;
	ret->copied = oc->skel->bss->copies_taken;
	ret->ring_full = oc->skel->bss->copies_lost;
	ret->whole = oc->whole;
	ret->kept_fp = oc->kept_fp;
	ret->gone = oc->gone;
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

/*
 * Is the process the one that blocked: started when it did (not a reused
 * pid) and running the same executable (no exec since)?  Its mappings are
 * read now, at drain time; these two are what would make them another
 * program's.
 */
static bool same_process(const struct perfrec_offcpu_copy *c)
{
	char path[64], buf[1024], *p;
	unsigned long long start = 0;
	long tck = sysconf(_SC_CLK_TCK);
	struct stat st;
	ssize_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%" PRIu32 "/exe", c->pid);
	if (stat(path, &st) < 0 || (uint64_t)st.st_ino != c->exe_ino || tck <= 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%" PRIu32 "/stat", c->pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	n = (ssize_t)fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	if (n <= 0)
		return false;
	buf[n] = 0;
	/* Field 22, starttime in clock ticks; the comm before it may hold anything. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
			 &start) != 1)
		return false;
	return start == c->start_time / (1000000000ull / (unsigned long long)tck);
}

static int feed_mmap(void *ctx, const struct perf_event_header *rec)
{
	struct perfrec_offcpu *oc = ctx;

	if (rec->type != PERF_RECORD_MMAP2)
		return 0;
	return perfrec_unwinder__rewrite(oc->unwinder, rec, NULL, oc->out, sizeof(oc->out));
}

/*
 * Give the unwinder @c's process's mappings as they are now, once per
 * drain; false when it is gone or is no longer the process that blocked
 * (its space is then empty, and nothing is unwound in it).
 */
static bool prepare_space(struct perfrec_offcpu *oc, const struct perfrec_offcpu_copy *c)
{
	struct {
		struct perf_event_header h;
		uint32_t pid, ppid, tid, ptid;
		uint64_t time;
	} exit_rec = { { PERF_RECORD_EXIT, 0, sizeof(exit_rec) }, c->pid, 0, c->pid, 0, 0 };
	struct perfrec_synth_opts so = { .sz = sizeof(so), .pids = &c->pid, .nr_pids = 1, .data_maps = true };
	bool ok;

	for (size_t i = 0; i < oc->nr_seen; i++)
		if (oc->seen[i].pid == c->pid)
			return oc->seen[i].ok;
	/* What the unwinder knew of this pid is a past drain's: forget it. */
	perfrec_unwinder__rewrite(oc->unwinder, &exit_rec.h, NULL, oc->out, sizeof(oc->out));
	ok = same_process(c) && perfrec_synth__tasks(&so, feed_mmap, oc) == 0 && same_process(c);
	if (!ok)
		perfrec_unwinder__rewrite(oc->unwinder, &exit_rec.h, NULL, oc->out, sizeof(oc->out));
	if (oc->nr_seen == oc->cap_seen) {
		size_t cap = oc->cap_seen ? 2 * oc->cap_seen : 16;
		void *p = realloc(oc->seen, cap * sizeof(*oc->seen));

		if (!p)
			return ok;
		oc->seen = p;
		oc->cap_seen = cap;
	}
	oc->seen[oc->nr_seen++] = (struct space_seen){ .pid = c->pid, .ok = ok };
	return ok;
}

/* The attr of the DWARF sample a copy is dressed as for the unwinder. */
static void dwarf_attr(struct perf_event_attr *a)
{
	perfrec_offcpu__attr(a);
	a->sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
	a->sample_regs_user = PERFREC_REGS_USER_X86_64;
	a->sample_stack_user = COPY_STACK;
}

/*
 * @c as the DWARF sample --call-graph dwarf would have written: kernel
 * chain, user registers (struct pt_regs reordered to perf's x86_64
 * numbering of PERFREC_REGS_USER_X86_64), the stack copy.  Returns its size.
 */
static size_t dwarf_sample(struct perfrec_offcpu *oc, const struct perfrec_offcpu_copy *c,
			   const uint64_t *kips, uint32_t nk, uint64_t id, uint64_t time)
{
	/* pt_regs index of AX BX CX DX SI DI BP SP IP FLAGS CS SS R8 ... R15 */
	static const uint8_t order[] = { 10, 5, 11, 12, 13, 14, 4, 19, 16, 18, 17, 20, 9, 8, 7, 6, 3, 2, 1, 0 };
	struct perf_event_header *h = (struct perf_event_header *)oc->dwarf;
	uint64_t *p = (uint64_t *)(h + 1);
	uint64_t len = c->len & ~7u;

	*p++ = id;
	*p++ = c->regs[16];
	*p++ = (uint64_t)c->pid | (uint64_t)c->tid << 32;
	*p++ = time;
	*p++ = c->cpu;
	*p++ = c->delta;
	*p++ = nk ? nk + 1 : 0;
	if (nk) {
		*p++ = PERF_CONTEXT_KERNEL;
		memcpy(p, kips, nk * sizeof(uint64_t));
		p += nk;
	}
	*p++ = PERF_SAMPLE_REGS_ABI_64;
	for (size_t i = 0; i < sizeof(order); i++)
		*p++ = c->regs[order[i]];
	*p++ = len;
	memcpy(p, c->stack, len);
	p += len / 8;
	if (len)
		*p++ = len;
	h->type = PERF_RECORD_SAMPLE;
	h->misc = PERF_RECORD_MISC_USER;
	h->size = (uint16_t)((unsigned char *)p - (unsigned char *)h);
	return h->size;
}

/*
 * One sample for a sampled block: its user stack unwound where the copy
 * allows, else the frame-pointer stack the kernel noted (never a guess).
 */
static int emit_copy(struct perfrec_offcpu *oc, const struct perfrec_offcpu_copy *c, int kfd, int ufd,
		     uint64_t *kips, uint64_t *uips, uint64_t id, uint64_t time,
		     perfrec_offcpu_emit_fn emit, void *userdata)
{
	struct perfrec_offcpu_entry e = { .pid = c->pid, .tid = c->tid, .cpu = c->cpu, .period = c->delta,
					  .kernel = kips, .user = uips };
	struct perfrec_unwinder_stats before, after;
	struct perf_event_attr a;
	int r;

	if (c->delta == 0)
		return 0;
	e.nr_kernel = read_stack(kfd, c->kstack_id, kips);
	if (prepare_space(oc, c)) {
		dwarf_attr(&a);
		dwarf_sample(oc, c, kips, e.nr_kernel, id, time);
		perfrec_unwinder__stats(oc->unwinder, &before);
		r = perfrec_unwinder__rewrite(oc->unwinder, (struct perf_event_header *)oc->dwarf, &a,
					      oc->out, sizeof(oc->out));
		perfrec_unwinder__stats(oc->unwinder, &after);
		/* At least one caller found: the unwound chain; else the walked one. */
		if (r > 0 && after.unwound > before.unwound) {
			oc->whole++;
			return emit((const struct perf_event_header *)oc->out, userdata);
		}
	} else {
		oc->gone++;
	}
	oc->kept_fp++;
	e.nr_user = read_stack(ufd, c->ustack_id, uips);
	r = perfrec_offcpu__encode_sample(oc->out, sizeof(oc->out), &e, id, time);
	return r < 0 ? r : emit((const struct perf_event_header *)oc->out, userdata);
}

/* The sampled blocks, after the aggregate, while their stack ids still read. */
static int emit_copies(struct perfrec_offcpu *oc, int kfd, int ufd, uint64_t *kips, uint64_t *uips,
		       uint64_t id, uint64_t time, perfrec_offcpu_emit_fn emit, void *userdata)
{
	int r = 0, count = 0;

	for (size_t i = 0; i < oc->nr_pending && r >= 0; i++) {
		r = emit_copy(oc, oc->pending[i], kfd, ufd, kips, uips, id, time, emit, userdata);
		if (r >= 0 && oc->pending[i]->delta)
			count++;
	}
	free_pending(oc);
	return r < 0 ? r : count;
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
	/* The copies sent so far: their blocks ended before this drain. */
	if (oc->ring) {
		r = ring_buffer__consume(oc->ring);
		if (r < 0) {
			free_pending(oc);
			return r;
		}
	}
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
		if (r < 0) {
			free_pending(oc);
			return r;
		}
		r = emit((const struct perf_event_header *)rec, userdata);
		if (r < 0) {
			free_pending(oc);
			return r;
		}
		count++;
	}
	if (prev)
		bpf_map_delete_elem(mfd, prev);
	r = emit_copies(oc, kfd, ufd, kips, uips, id, time, emit, userdata);
	if (r < 0)
		return r;
	count += r;
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
