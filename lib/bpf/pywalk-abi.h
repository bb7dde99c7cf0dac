/* SPDX-License-Identifier: (LGPL-2.1-only OR BSD-2-Clause) */
/*
 * What lib/bpf/pywalk.bpf.c and internal/pywalk.c share: the per-process
 * layout the program walks with, and its ring record, which is struct
 * pywalk_rec of internal/pywalk.h cut after its nr frames (pywalk.c
 * checks the two agree).  Types are the kernel's __u32/__u64 so both
 * sides can include it (vmlinux.h there, <linux/types.h> here).
 */
#ifndef PERFREC_PYWALK_ABI_H
#define PERFREC_PYWALK_ABI_H

#define PYWALK_ABI_MAX_FRAMES 96        /* PYWALK_MAX_FRAMES */
#define PYWALK_ABI_MAX_THREADS 64       /* thread states looked at per walk */
#define PYWALK_ABI_FRAME_READ 128       /* bytes of one frame read at once, at most */
#define PYWALK_ABI_OFF_NONE 0xffffffffu /* PYPROC_OFF_NONE */

/* _PyInterpreterFrame.owner of the C stack's shim frames (3.12, 3.13). */
#define PYWALK_ABI_OWNED_BY_CSTACK 3

/* The map value of one process: pyproc_info's layout, as the walk uses it. */
struct pywalk_abi_proc {
	__u64 runtime;          /* _PyRuntime in the process */
	__u32 minor;            /* 10 .. 13 */
	__u32 frame_read;       /* bytes of a frame the members below lie in */
	__u32 runtime_interp_head;
	__u32 interp_threads_head;
	__u32 tstate_next;
	__u32 tstate_thread_id; /* pthread_self(): the thread's fsbase */
	__u32 tstate_frame;
	__u32 cframe_current_frame;     /* NONE but in 3.11, 3.12 */
	__u32 frame_previous;
	__u32 frame_code;
	__u32 frame_instr;
	__u32 instr_size;       /* 4: 3.10's int f_lasti; 8: a pointer */
	__u32 frame_owner;      /* NONE: 3.10 */
	__u32 frame_is_entry;   /* NONE but in 3.11 */
};

struct pywalk_abi_frame {
	__u64 code;
	__u64 instr;
	__u32 flags;
	__u32 pad;
};

struct pywalk_abi_rec {
	__u64 time;
	__u32 pid, tid;
	__u32 cpu;
	__u16 nr;
	__u16 flags;
	struct pywalk_abi_frame frames[PYWALK_ABI_MAX_FRAMES];
};

#define PYWALK_ABI_TRUNCATED (1u << 0)
#define PYWALK_ABI_TORN      (1u << 1)
#define PYWALK_ABI_NO_TSTATE (1u << 2)
#define PYWALK_ABI_F_ENTRY   (1u << 0)

#endif
