// SPDX-License-Identifier: (LGPL-2.1-only OR BSD-2-Clause)
/*
 * Off-CPU time, measured in the kernel: at each context switch the thread
 * leaving the CPU in a sleeping state has its block time and its kernel and
 * user stacks noted; when it is switched back in, the time it was away is
 * added to a map keyed by (pid, tid, stacks).  User space (lib/offcpu.c)
 * reads and clears that map at each file end and turns every entry into one
 * "offcpu-time" sample whose period is the blocked nanoseconds, the way
 * perf record --off-cpu does.  Aggregating in the kernel keeps the cost per
 * switch to a couple of map updates instead of one ring record.
 *
 * Whole user stacks (whole_stacks, set with callchain=dwarf and host
 * unwinding): the frame-pointer walk above loses the callers of code built
 * without frame pointers, so for a bounded sample of blocks (copies_per_sec
 * per CPU, one per copy_gap_ns per thread) the blocking thread's user
 * registers and the top of its user stack go to the copies ring while it
 * is still current and its memory readable, and user space unwinds them
 * with the host's DWARF unwinder at once, while the process surely exists.
 * When the thread comes back, a small wake record with its blocked time
 * follows, and that block is summed in user space with the unwound stack
 * instead of here.  Nothing is held in the kernel across a block but the
 * ring's records.  Blocks not sampled, or whose records find the ring
 * full, are aggregated with their frame-pointer stacks as before.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#define TASK_INTERRUPTIBLE	0x1
#define TASK_UNINTERRUPTIBLE	0x2
#define MAX_STACK_DEPTH		127
#define MAX_ENTRIES		10240
#define EEXIST			17	/* errno.h is not for BPF programs */
/* Kernel frames of our own making: this program and bpf_trace_run4. */
#define SKIP_KERNEL_FRAMES	2
/* Keep in step with lib/offcpu.c (struct perfrec_offcpu_copy there). */
#define COPY_CHUNK		512
#define COPY_CHUNKS		16	/* 8 KiB of stack, perf's default */
#define NR_PT_REGS		21	/* x86_64 struct pt_regs, in u64 */

/* Keep in step with struct perfrec_offcpu_key in lib/offcpu.c. */
struct offcpu_key {
	__u32 pid;
	__u32 tid;
	__s32 kstack_id;
	__s32 ustack_id;
	__u32 state;
	__u32 cpu;
};

/* Ring records of sampled blocks; keep in step with lib/offcpu.c. */
#define REC_COPY	1
#define REC_WAKE	2

/* A block's user registers and stack, sent when it starts. */
struct ucopy {
	__u32 kind;		/* REC_COPY */
	__u32 tid;
	__u64 ts;		/* the block's start: (tid, ts) names it */
	__u32 pid;
	__u32 pad;
	__u64 start_time;	/* the process's start (boot ns): pid reuse */
	__u64 exe_ino;		/* its executable's inode: an exec */
	__u64 regs[NR_PT_REGS];	/* struct pt_regs of the user side */
	__u64 len;		/* bytes of stack copied from regs' sp */
	__u8 stack[COPY_CHUNK * COPY_CHUNKS];
};

/* The end of a block a copy was sent for (delta 0: too short to count). */
struct uwake {
	__u32 kind;		/* REC_WAKE */
	__u32 tid;
	__u64 ts;
	__u64 delta;
	__u32 pid;
	__s32 kstack_id;
	__s32 ustack_id;
	__u32 state;
	__u32 cpu;
	__u32 pad;
};

struct tstart {
	__u64 ts;
	__u64 last_copy;	/* when this thread's last copy was taken */
	__u32 copied;		/* this block's copy is in the ring */
	__u32 last_short;	/* the thread's last block was shorter than min_ns */
	__s32 kstack_id;
	__s32 ustack_id;
	__u32 state;
	__u32 cpu;
};

/*
 * Kernel and user stacks in maps of their own: a stack whose bucket holds
 * another stack gets no id (-EEXIST), and user stacks, which differ for
 * every program, would crowd the kernel's few blocking paths out.  User
 * space frees the ids it has drained (lib/offcpu.c), so a map holds the
 * stacks of one file, not of the daemon's life.
 */
struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, MAX_STACK_DEPTH * sizeof(__u64));
	__uint(max_entries, MAX_ENTRIES);
} kstacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, MAX_STACK_DEPTH * sizeof(__u64));
	__uint(max_entries, MAX_ENTRIES);
} ustacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct tstart);
} tstarts SEC(".maps");

/* Copies and wakes of sampled blocks, read by a thread of lib/offcpu.c; user space sizes it. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} copies SEC(".maps");

/* Per CPU: the second (2^30 ns) and the copies taken in it. */
struct rate {
	__u64 window;
	__u64 n;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rate);
} rates SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(key_size, sizeof(struct offcpu_key));
	__uint(value_size, sizeof(__u64));
	__uint(max_entries, MAX_ENTRIES);
} offcpu SEC(".maps");

/*
 * The filter, written by user space through the skeleton's mapped .bss at
 * any time (perfrec_offcpu__set_filter()): a reload that changes it needs
 * no privilege the daemon dropped after loading this program.
 */
volatile __u64 min_ns = 0;
volatile __u64 cgroup_id = 0;		/* 0: every cgroup */
/* Set by user space before load (read-only data of the skeleton). */
const volatile __u32 self_tgid = 0;	/* never count the profiler */
const volatile bool whole_stacks = false;	/* copy user registers and stacks */
const volatile __u32 copies_per_sec = 0;	/* per CPU */
const volatile __u64 copy_gap_ns = 0;		/* per thread, between two copies */
const volatile __u64 copies_ring_bytes = 4096;	/* the size of copies */

/* Counters user space reads to report what was lost. */
__u64 lost_full = 0;
__u64 lost_stacks = 0;	/* stacks not recorded: their bucket held another */
__u64 copies_taken = 0;	/* blocks whose user stack was copied */
__u64 copies_lost = 0;	/* copies or wakes the ring had no room for */

/*
 * Flags for a record going to the ring: user space reads it every 20 ms
 * anyway, so it is woken only when a quarter of the ring is waiting, not
 * for each record.
 */
static __u64 ring_flags(void)
{
	return bpf_ringbuf_query(&copies, BPF_RB_AVAIL_DATA) > copies_ring_bytes / 4 ?
	       BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

/* One more copy in this CPU's second, if the budget allows. */
static bool copy_allowed(__u64 now)
{
	__u32 zero = 0;
	struct rate *r = bpf_map_lookup_elem(&rates, &zero);

	if (!r)
		return false;
	if (r->window != now >> 30) {
		r->window = now >> 30;
		r->n = 0;
	}
	if (r->n >= copies_per_sec)
		return false;
	r->n++;
	return true;
}

/* The top of the user stack from @sp, in chunks: stop where the mapping ends. */
static __u64 copy_stack(struct ucopy *c, __u64 sp)
{
	__u32 i;

	for (i = 0; i < COPY_CHUNKS; i++)
		if (bpf_probe_read_user(&c->stack[i * COPY_CHUNK], COPY_CHUNK,
					(const void *)(sp + i * COPY_CHUNK)) < 0)
			break;
	return i * COPY_CHUNK;
}

/*
 * Send @prev's user registers and stack (it is current: its memory is
 * the one bpf_probe_read_user() reads).  bpf_task_pt_regs() came in 5.15;
 * an older kernel sends no copies, and keeps frame-pointer stacks.
 */
static bool send_copy(struct task_struct *prev, struct tstart *st, __u64 now)
{
	struct pt_regs *regs;
	struct ucopy *c;

	if (!bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_task_pt_regs))
		return false;
	/*
	 * A thread blocking all the time does not take every copy, nor does
	 * one whose last block was too short to count: most blocks are short
	 * hand-offs, and a copy of one is wasted.
	 */
	if (now - st->last_copy < copy_gap_ns || st->last_short || !BPF_CORE_READ(prev, mm) ||
	    !copy_allowed(now))
		return false;
	st->last_copy = now;
	c = bpf_ringbuf_reserve(&copies, sizeof(*c), 0);
	if (!c) {
		__sync_fetch_and_add(&copies_lost, 1);
		return false;
	}
	regs = (struct pt_regs *)bpf_task_pt_regs(prev);
	if (!regs || bpf_probe_read_kernel(c->regs, sizeof(c->regs), regs) < 0) {
		bpf_ringbuf_discard(c, 0);
		return false;
	}
	c->kind = REC_COPY;
	c->tid = prev->pid;
	c->ts = now;
	c->pid = prev->tgid;
	c->start_time = BPF_CORE_READ(prev, group_leader, start_boottime);
	c->exe_ino = BPF_CORE_READ(prev, mm, exe_file, f_inode, i_ino);
	c->len = copy_stack(c, c->regs[19]);	/* pt_regs.sp */
	bpf_ringbuf_submit(c, ring_flags());
	__sync_fetch_and_add(&copies_taken, 1);
	return true;
}

/*
 * @next, whose block's copy was sent, is back after @delta ns: tell user
 * space, which sums the block with the unwound stack (true) or, for a
 * block too short to count, forgets the copy.  false: aggregate it here.
 */
static bool send_wake(struct task_struct *next, struct tstart *st, __u64 delta, bool counted)
{
	struct uwake w = {
		.kind = REC_WAKE,
		.tid = next->pid,
		.ts = st->ts,
		.delta = counted ? delta : 0,
		.pid = next->tgid,
		.kstack_id = st->kstack_id,
		.ustack_id = st->ustack_id,
		.state = st->state,
		.cpu = st->cpu,
	};

	st->copied = 0;
	if (bpf_ringbuf_output(&copies, &w, sizeof(w), ring_flags()) == 0)
		return counted;
	__sync_fetch_and_add(&copies_lost, 1);
	return false;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev,
	     struct task_struct *next, unsigned int prev_state)
{
	__u64 now = bpf_ktime_get_ns();
	struct tstart *st;

	/* The thread leaving: note when and where it blocked. */
	if ((prev_state & (TASK_INTERRUPTIBLE | TASK_UNINTERRUPTIBLE)) &&
	    prev->pid != 0 && prev->tgid != self_tgid &&
	    (cgroup_id == 0 || bpf_get_current_cgroup_id() == cgroup_id)) {
		st = bpf_task_storage_get(&tstarts, prev, NULL,
					  BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (st) {
			st->ts = now;
			/* current is still prev here, so its stacks are ours. */
			st->kstack_id = bpf_get_stackid(ctx, &kstacks,
							SKIP_KERNEL_FRAMES);
			st->ustack_id = bpf_get_stackid(ctx, &ustacks,
							BPF_F_USER_STACK);
			if (st->kstack_id == -EEXIST || st->ustack_id == -EEXIST)
				__sync_fetch_and_add(&lost_stacks, 1);
			st->state = prev_state;
			st->cpu = bpf_get_smp_processor_id();
			st->copied = whole_stacks && send_copy(prev, st, now);
		}
	}

	/* The thread coming back: add the time it was away. */
	st = bpf_task_storage_get(&tstarts, next, NULL, 0);
	if (st && st->ts) {
		__u64 delta = now - st->ts;

		st->last_short = delta < min_ns;
		if (whole_stacks && st->copied && send_wake(next, st, delta, delta >= min_ns)) {
			st->ts = 0;
			return 0;
		}
		st->ts = 0;
		if (delta >= min_ns) {
			struct offcpu_key key = {
				.pid = next->tgid,
				.tid = next->pid,
				.kstack_id = st->kstack_id,
				.ustack_id = st->ustack_id,
				.state = st->state,
				.cpu = st->cpu,
			};
			__u64 *total = bpf_map_lookup_elem(&offcpu, &key);

			if (total)
				__sync_fetch_and_add(total, delta);
			else if (bpf_map_update_elem(&offcpu, &key, &delta,
						     BPF_NOEXIST) != 0)
				__sync_fetch_and_add(&lost_full, 1);
		}
	}
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
