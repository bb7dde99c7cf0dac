// SPDX-License-Identifier: (LGPL-2.1-only OR BSD-2-Clause)
/*
 * Python frames at the sample (issue 27, internal/pywalk.h): attached to
 * the sampling events (PERF_EVENT_IOC_SET_BPF), this runs in the overflow
 * handler right before the kernel writes the sample.  For a process user
 * space told it runs CPython (the procs map, filled from pyproc.h's
 * layout), it finds the interrupted thread's PyThreadState and reads its
 * chain of Python frames, innermost first, into one ring record.
 *
 * The thread state is the one whose thread_id is the thread's fsbase:
 * thread_id is pthread_self(), which on x86_64 (glibc and musl) is the
 * thread pointer, i.e. the fs base the kernel keeps for the task.  That
 * holds in every CPython version and every PID namespace, where
 * native_thread_id (3.11+) is the tid of the process's own namespace,
 * not the one bpf_get_current_pid_tgid() gives, and where the gilstate's
 * current thread state names the GIL's holder, not the thread sampled.
 *
 * Every read is bpf_probe_read_user() of the interrupted process (never
 * a write), each chain is bounded (PYWALK_ABI_MAX_THREADS thread states,
 * two reads each; PYWALK_ABI_MAX_FRAMES frames and 8 shims, one read
 * each: 236 reads at most per sample), and nothing is
 * guessed: a failed read, a pointer that cannot be a user address, or a
 * frame that is its own caller cuts the walk and marks it TORN.
 *
 * The program always returns 1: 0 would drop the sample.  Only helpers
 * of Linux 5.15 and older: no bpf_loop, bounded loops only.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "pywalk-abi.h"

#define USER_END (1ull << 47)   /* x86_64, 4-level: above is not user memory */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);      /* user space sizes it */
	__type(key, __u32);             /* tgid */
	__type(value, struct pywalk_abi_proc);
} procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);   /* user space sizes it */
} walks SEC(".maps");

/* Walks the ring had no room for. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} lost SEC(".maps");

/* The record being built and the frame just read: too big for the stack. */
struct scratch {
	struct pywalk_abi_rec rec;
	__u8 frame[PYWALK_ABI_FRAME_READ];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

static __always_inline int bad_ptr(__u64 p)
{
	return !p || (p & 7) || p >= USER_END;
}

/* The pointer at ADDR of the process; *err set when it cannot be read. */
static __always_inline __u64 rd_ptr(__u64 addr, int *err)
{
	__u64 v = 0;

	if (addr >= USER_END || bpf_probe_read_user(&v, sizeof(v), (const void *)addr))
		*err = 1;
	return v;
}

/* The member at O of the frame just read (NONE or outside it: 0). */
static __always_inline __u64 member(const struct scratch *s, __u32 o, __u32 size)
{
	if (o > PYWALK_ABI_FRAME_READ - 8)
		return 0;
	if (size == 1)
		return s->frame[o];
	if (size == 4)
		return *(const __u32 *)&s->frame[o];
	return *(const __u64 *)&s->frame[o];
}

/* The thread state whose thread_id is FSBASE, or 0 (REC's flags say why). */
static __always_inline __u64 find_tstate(const struct pywalk_abi_proc *p, __u64 fsbase,
					 struct pywalk_abi_rec *rec)
{
	__u64 interp, ts;
	int err = 0;

	interp = rd_ptr(p->runtime + p->runtime_interp_head, &err);
	ts = interp ? rd_ptr(interp + p->interp_threads_head, &err) : 0;
	for (int i = 0; i < PYWALK_ABI_MAX_THREADS && !err && ts; i++) {
		if (bad_ptr(ts))
			break;
		if (rd_ptr(ts + p->tstate_thread_id, &err) == fsbase && !err)
			return ts;
		ts = rd_ptr(ts + p->tstate_next, &err);
	}
	rec->flags |= err || (ts && bad_ptr(ts)) ? PYWALK_ABI_TORN : PYWALK_ABI_NO_TSTATE;
	return 0;
}

/* The innermost frame of thread state TS (3.11-12 through its cframe). */
static __always_inline __u64 first_frame(const struct pywalk_abi_proc *p, __u64 ts,
					 struct pywalk_abi_rec *rec)
{
	__u64 f;
	int err = 0;

	f = rd_ptr(ts + p->tstate_frame, &err);
	if (!err && f && p->cframe_current_frame != PYWALK_ABI_OFF_NONE)
		f = bad_ptr(f) ? (err = 1, 0) : rd_ptr(f + p->cframe_current_frame, &err);
	if (err)
		rec->flags |= PYWALK_ABI_TORN;
	return err ? 0 : f;
}

/*
 * One frame read at FRAME into S: recorded (or, 3.12+, a C-stack shim,
 * which marks the frame below it as the entry).  Its caller, 0 at the
 * end, or 1 to stop (flags set).  The frame count lives in the map value,
 * not in a register: the verifier then sees one state per iteration.
 */
static __always_inline __u64 one_frame(struct scratch *s, const struct pywalk_abi_proc *p,
				       __u64 frame, __u32 read)
{
	struct pywalk_abi_rec *rec = &s->rec;
	__u32 n = rec->nr;
	__u64 code, prev;

	if (bad_ptr(frame) || bpf_probe_read_user(s->frame, read, (const void *)frame))
		goto torn;
	if (p->minor >= 12 && member(s, p->frame_owner, 1) == PYWALK_ABI_OWNED_BY_CSTACK) {
		__u32 k = (n - 1) & 0x7f;

		if (n && k < PYWALK_ABI_MAX_FRAMES)
			rec->frames[k].flags |= PYWALK_ABI_F_ENTRY;
	} else {
		if (n >= PYWALK_ABI_MAX_FRAMES) {
			rec->flags |= PYWALK_ABI_TRUNCATED;
			return 1;
		}
		code = member(s, p->frame_code, 8);
		if (bad_ptr(code))
			goto torn;
		rec->frames[n].code = code;
		rec->frames[n].instr = member(s, p->frame_instr, p->instr_size);
		rec->frames[n].flags = p->minor == 10 ||
			(p->frame_is_entry != PYWALK_ABI_OFF_NONE && member(s, p->frame_is_entry, 1)) ?
			PYWALK_ABI_F_ENTRY : 0;
		rec->frames[n].pad = 0;
		rec->nr = n + 1;
	}
	prev = member(s, p->frame_previous, 8);
	if (prev == frame)
		goto torn;
	return prev;
torn:
	rec->flags |= PYWALK_ABI_TORN;
	return 1;
}

static __always_inline void walk(struct scratch *s, const struct pywalk_abi_proc *p, __u64 frame)
{
	__u32 read = p->frame_read;
	int i;

	if (read < 8 || read > PYWALK_ABI_FRAME_READ) {
		s->rec.flags |= PYWALK_ABI_TORN;
		return;
	}
	/* Shims count against the bound too: one C call of the eval loop each. */
	for (i = 0; i < PYWALK_ABI_MAX_FRAMES + 8 && frame > 1; i++)
		frame = one_frame(s, p, frame, read);
	if (frame > 1)
		s->rec.flags |= PYWALK_ABI_TRUNCATED;
}

SEC("perf_event")
int pywalk(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), ts, frame, size;
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	__u32 tgid = (__u32)(id >> 32), zero = 0, n;
	const struct pywalk_abi_proc *p;
	struct scratch *s;
	__u64 *l;

	p = bpf_map_lookup_elem(&procs, &tgid);
	if (!p)
		return 1;
	s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s)
		return 1;
	s->rec.time = bpf_ktime_get_ns();
	s->rec.pid = tgid;
	s->rec.tid = (__u32)id;
	s->rec.cpu = bpf_get_smp_processor_id();
	s->rec.nr = 0;
	s->rec.flags = 0;
	ts = find_tstate(p, BPF_CORE_READ(task, thread.fsbase), &s->rec);
	frame = ts ? first_frame(p, ts, &s->rec) : 0;
	if (frame)
		walk(s, p, frame);
	n = s->rec.nr;
	if (n > PYWALK_ABI_MAX_FRAMES)
		n = PYWALK_ABI_MAX_FRAMES;
	size = __builtin_offsetof(struct pywalk_abi_rec, frames) + n * sizeof(struct pywalk_abi_frame);
	if (bpf_ringbuf_output(&walks, &s->rec, size, BPF_RB_NO_WAKEUP)) {
		l = bpf_map_lookup_elem(&lost, &zero);
		if (l)
			*l += 1;
	}
	return 1;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
