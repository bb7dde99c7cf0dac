/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Synthesis of the state that existed before recording began, from /proc:
 * COMM and FORK for every process and thread, MMAP2 for executable mappings
 * (with build ids read from the ELF notes where possible), and the kernel
 * and module maps.  Every record gets the sample_id trailer of the side-band
 * attr with a real timestamp, so readers order it correctly.
 *
 * The functions keep no state between calls and may run on any thread at
 * once; opts and what it points to are borrowed for the call.
 */
#ifndef PERFREC_SYNTH_H
#define PERFREC_SYNTH_H

#include <perfrec/format.h>

/* Receives each synthesized record; return < 0 to stop synthesis. */
typedef int (*perfrec_synth_emit_fn)(void *ctx, const struct perf_event_header *rec);

struct perfrec_synth_opts {
	size_t sz;
	uint64_t sample_type; /* of the attr the records are attributed to */
	uint64_t id;          /* that attr's id (any one of them) */
	uint64_t time;        /* timestamp for every record, in the file's clock */
	const char *proc;     /* procfs root; NULL: "/proc" */
	const char *sysfs;    /* sysfs root; NULL: "/sys" */
	bool build_ids;       /* put build ids in MMAP2 where readable */
	/*
	 * Addresses of _text and _etext where the caller already has them
	 * (perfrec_bpfmeta__kernel_text() reads them in its own pass over
	 * kallsyms): perfrec_synth__kernel() then does not read kallsyms.
	 * 0: not known.
	 */
	uint64_t kernel_text, kernel_etext;
	/*
	 * Processes (thread group ids) perfrec_synth__tasks() describes; NULL
	 * or nr_pids 0: every process.  A recording of some processes carries
	 * their state only, not the rest of the host's.  Borrowed for the call.
	 */
	const uint32_t *pids;
	size_t nr_pids;
	/*
	 * Also the readable file mappings without exec (misc MMAP_DATA), as
	 * perf's mmap_data: a DWARF unwinder reads .eh_frame_hdr there.
	 */
	bool data_maps;
};

/*
 * The addresses of _text and _etext as perfrec_synth__kernel() finds them
 * (its opts->proc; kernel_text/kernel_etext are returned as given), for a
 * caller to pass back in opts later: read while it still has CAP_SYS_ADMIN,
 * /proc/iomem spares it the pass over kallsyms.  Returns 0, -EPERM when
 * kallsyms hides addresses, or -errno.
 */
PERFREC_API int perfrec_synth__kernel_text(const struct perfrec_synth_opts *opts,
					   uint64_t *ret_text, uint64_t *ret_etext);

/*
 * Kernel map ("[kernel.kallsyms]_text", start = pgoff = _text, len up to
 * _etext, pid -1 / tid 0, misc KERNEL) and one MMAP2 per module of
 * /proc/modules (filename from modules.dep, else "[name]").  Returns 0,
 * -EPERM when kallsyms hides addresses (kptr_restrict; nothing emitted),
 * -errno when kallsyms cannot be read, or the callback's error.  _etext
 * comes from opts->kernel_etext, else on x86-64 from the size of "Kernel
 * code" in /proc/iomem (readable with CAP_SYS_ADMIN), else from kallsyms,
 * where it is near the end: a read of nearly all of it.
 */
PERFREC_API int perfrec_synth__kernel(const struct perfrec_synth_opts *opts,
				      perfrec_synth_emit_fn emit, void *ctx);

/*
 * For every process: FORK (parent = PPid, misc FORK_EXEC as perf writes),
 * COMM, MMAP2 of each executable mapping (build id form when opts->build_ids
 * and the ELF note is readable through /proc/<pid>/root, else maj/min/ino);
 * then FORK (parent = leader) and COMM for each other thread.  Comms are cut
 * to 15 bytes like task->comm.  Trailers: the task's pid/tid, cpu 0.  Tasks
 * that vanish or cannot be read are skipped.  Returns 0, -errno when the
 * proc root cannot be opened or memory runs out, or the callback's error
 * (synthesis stops at once).  Records are lent for the callback's duration.
 * With opts->pids, only those processes (and all their threads).
 */
PERFREC_API int perfrec_synth__tasks(const struct perfrec_synth_opts *opts,
				     perfrec_synth_emit_fn emit, void *ctx);

/*
 * PERF_RECORD_CGROUP for every cgroup under @root (the root first as "/",
 * each directory before its children, paths relative to @root), id = the
 * 64-bit kernfs id from name_to_handle_at(), as samples with
 * PERF_SAMPLE_CGROUP carry it.  @root NULL: the hierarchy perf_event
 * reports ids of (see __cgroup_root).  Trailer pid/tid 0, cpu 0.  Returns
 * 0, -ENOENT when no cgroup hierarchy is mounted, -EOPNOTSUPP when @root is
 * not a cgroup fs, -errno when it cannot be opened, or the callback's error.
 */
PERFREC_API int perfrec_synth__cgroups(const struct perfrec_synth_opts *opts, const char *root,
				       perfrec_synth_emit_fn emit, void *ctx);

/*
 * The mount point of the cgroup hierarchy whose ids perf_event samples
 * carry, from @proc/self/mounts (@proc NULL: "/proc"): a v1 hierarchy with
 * the perf_event controller, else the cgroup2 mount.  0 with the path in
 * @buf, -ENOENT if neither is mounted, -ENAMETOOLONG, or -errno.
 */
PERFREC_API int perfrec_synth__cgroup_root(const char *proc, char *buf, size_t sz);

/* A bare user record (FINISHED_INIT, FINISHED_ROUND): header only. */
PERFREC_API int perfrec_synth__marker(uint32_t type, perfrec_synth_emit_fn emit, void *ctx);

#endif
