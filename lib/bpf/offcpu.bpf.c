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

/* Keep in step with struct perfrec_offcpu_key in lib/offcpu.c. */
struct offcpu_key {
	__u32 pid;
	__u32 tid;
	__s32 kstack_id;
	__s32 ustack_id;
	__u32 state;
	__u32 cpu;
};

struct tstart {
	__u64 ts;
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

/* Counters user space reads to report what was lost. */
__u64 lost_full = 0;
__u64 lost_stacks = 0;	/* stacks not recorded: their bucket held another */

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
		}
	}

	/* The thread coming back: add the time it was away. */
	st = bpf_task_storage_get(&tstarts, next, NULL, 0);
	if (st && st->ts) {
		__u64 delta = now - st->ts;

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
