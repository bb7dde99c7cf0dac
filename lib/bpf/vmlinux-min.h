/* SPDX-License-Identifier: (LGPL-2.1-only OR BSD-2-Clause) */
/*
 * Fallback for build hosts without kernel BTF: the few kernel types and
 * constants the programs in lib/bpf use, instead of a vmlinux.h dumped with bpftool.
 * Structs are marked preserve_access_index, so libbpf's CO-RE relocations
 * fix their field offsets against the running kernel's BTF at load time;
 * only the fields named here need exist.
 */
#ifndef PERFREC_VMLINUX_MIN_H
#define PERFREC_VMLINUX_MIN_H

typedef signed char __s8;
typedef unsigned char __u8;
typedef short __s16;
typedef unsigned short __u16;
typedef int __s32;
typedef unsigned int __u32;
typedef long long __s64;
typedef unsigned long long __u64;
typedef __u8 u8;
typedef __u16 u16;
typedef __u32 u32;
typedef __u64 u64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;
typedef _Bool bool;
typedef int pid_t;
enum { false = 0, true = 1 };

enum bpf_map_type {
	BPF_MAP_TYPE_HASH = 1,
	BPF_MAP_TYPE_ARRAY = 2,
	BPF_MAP_TYPE_PERCPU_ARRAY = 6,
	BPF_MAP_TYPE_STACK_TRACE = 7,
	BPF_MAP_TYPE_RINGBUF = 27,
	BPF_MAP_TYPE_TASK_STORAGE = 29,
};

enum {
	BPF_RB_NO_WAKEUP = 1,
	BPF_RB_FORCE_WAKEUP = 2,
	BPF_RB_AVAIL_DATA = 0,
};

/* Only what offcpu.bpf.c asks the running kernel about (bpf_core_enum_value_exists). */
enum bpf_func_id {
	BPF_FUNC_task_pt_regs = 175,
};

enum {
	BPF_NOEXIST = 1,
	BPF_F_NO_PREALLOC = 1,
	BPF_F_USER_STACK = 256,
	BPF_LOCAL_STORAGE_GET_F_CREATE = 1,
};

#pragma clang attribute push (__attribute__((preserve_access_index)), apply_to = record)

struct inode {
	long unsigned int i_ino;
};

struct file {
	struct inode *f_inode;
};

struct mm_struct {
	struct file *exe_file;
};

/* x86: the user fs base, pthread_self() (lib/bpf/pywalk.bpf.c). */
struct thread_struct {
	long unsigned int fsbase;
};

struct task_struct {
	struct thread_struct thread;
	pid_t pid;
	pid_t tgid;
	struct mm_struct *mm;
	struct task_struct *group_leader;
	u64 start_boottime;
};

struct pt_regs {
	long unsigned int r15, r14, r13, r12, bp, bx, r11, r10, r9, r8;
	long unsigned int ax, cx, dx, si, di, orig_ax, ip, cs, flags, sp, ss;
};

#pragma clang attribute pop

#endif
