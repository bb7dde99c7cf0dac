/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A recording in two calls: perfrec_record__start() opens the events on a
 * target (this process, another process, threads, a cgroup or the whole
 * host), writes the state that exists already (kernel maps, the target's
 * tasks and mappings), enables the events and drains the rings into
 * "PATH.tmp" on a thread of its own; perfrec_record__stop() disables them,
 * drains what is left, adds the host features, build ids and sample times,
 * and renames the finished file to PATH.  The file is a perf.data every
 * reader takes (perf report/script, hotspot).  It is built from the same
 * pieces as perfrecd: evlist, ring, synth, pdwriter, hostinfo.  With DWARF
 * callchains (opts->stack_user) and opts->unwind_host its files sit behind
 * perfrecd's host unwinding stage: the stacks are unwound while recording
 * and the files carry small callchains instead of raw stacks.
 *
 *	struct perfrec_record_opts o = {
 *		.sz = sizeof(o), .callchain = true, .target = PERFREC_TARGET_PROCESS,
 *	};
 *	struct perfrec_record *r;
 *
 *	if (perfrec_record__start("self.data", &o, &r) == 0) {
 *		work();
 *		perfrec_record__stop(r);
 *	}
 *
 * Errors are negative errno values; the library prints nothing, but hands
 * a one-line reason to opts->msg when one is set.
 */
#ifndef PERFREC_RECORD_H
#define PERFREC_RECORD_H

#include <perfrec/common.h>
#include <perfrec/evlist.h>

struct perfrec_record;

/*
 * Receives a one-line reason for an error (@err negative errno) or a
 * warning (@err 0), e.g. "cpu-clock on CPU 1: Permission denied".  Called
 * from the calling thread inside __start/__rotate/__snapshot/__stop, and
 * from the drain thread while recording: a write error, or a note (@err 0)
 * that the drain repaired a record the kernel got wrong or found a ring
 * corrupt.  Must not call back into the record object.
 */
typedef void (*perfrec_record_msg_fn)(void *ctx, int err, const char *msg);

/*
 * Options, in libbpf's way: set sz = sizeof(struct perfrec_record_opts);
 * zero fields take their defaults.  A program built against an older,
 * shorter struct keeps working (the fields it lacks take defaults); a sz
 * larger than this library's struct is accepted only if the extra bytes
 * are zero (-E2BIG otherwise: options this library cannot honour).
 */
struct perfrec_record_opts {
	size_t sz;
	/* Event names as perf spells them, comma-separated; NULL: "cpu-clock". */
	const char *events;
	/* Samples per second, or (freq 0) one sample every @period events. Default 1000 Hz. */
	uint64_t freq;
	uint64_t period;
	/* Frame-pointer callchains (kernel and user), as perf record -g. */
	bool callchain;
	/*
	 * What to record (enum perfrec_target_kind, evlist.h).
	 * PERFREC_TARGET_PROCESS with pid 0 is the calling process: its
	 * threads now and every thread or child it starts later (the drain
	 * thread too).  PERFREC_TARGET_CPUS (0, the default, as for an
	 * evlist) records the whole host.
	 */
	int target;
	int32_t pid;            /* PROCESS: 0 is the calling process */
	const int32_t *tids;    /* THREADS, borrowed for __start() */
	size_t nr_tids;
	const char *cgroup;     /* CGROUP: its directory */
	const char *cpus;       /* CPU list ("0-3,6"); NULL: every online CPU */
	/*
	 * Sample timestamps: "monotonic" (default), "monotonic_raw",
	 * "boottime", "realtime", "tai", or "perf" (the kernel's perf clock,
	 * as perf record without -k).  With a named clock the file also gets
	 * HEADER_CLOCKID and HEADER_CLOCK_DATA (the clock and the wall-clock
	 * time read together at start), from which readers (perf script
	 * -F +tod) turn sample times into wall-clock time;
	 * the perf clock cannot be read from user space, so a file on it has
	 * neither and its synthesized records carry time 0.
	 */
	const char *clock;
	size_t mmap_pages;      /* ring data pages per CPU, a power of 2; 0: 128 */
	int compress_level;     /* 0: off; 1..19: zstd (PERF_RECORD_COMPRESSED) */
	/* Named in HEADER_VERSION and CMDLINE; NULL: program_invocation_short_name. */
	const char *program;
	int argc;               /* HEADER_CMDLINE arguments; 0: the executable only */
	char *const *argv;
	perfrec_record_msg_fn msg;
	void *msg_ctx;
	/*
	 * DWARF callchains (with @callchain): bytes of user stack copied
	 * per sample with the user registers, as perf record --call-graph
	 * dwarf,SIZE (PERFREC_STACK_USER_DEFAULT is perf's 8192); the kernel
	 * walks only the kernel part.  A multiple of 8, at most
	 * PERFREC_STACK_USER_MAX; x86_64 only.  0: frame pointers.  Readers
	 * (perf report/script, hotspot) unwind such files themselves, at the
	 * cost of the stack bytes in every sample.
	 */
	uint32_t stack_user;
	/*
	 * Unwind the DWARF stacks on the host while recording, as perfrecd
	 * --unwind host (needs @callchain and @stack_user: -EINVAL without
	 * them).  A worker thread of the recording unwinds each sample's
	 * user stack with the target's ELF files and CFI; the file, and
	 * every file __rotate() and __snapshot() publish, then holds plain
	 * callchains (kernel frames, PERF_CONTEXT_USER, the unwound user
	 * frames) and no user registers or stacks: its attrs ask for
	 * neither, any reader takes it, and a sample takes a few hundred
	 * bytes instead of @stack_user.  When the worker falls far behind,
	 * a sample keeps only its sampled ip as user frame; samples it could
	 * not rewrite are recorded as lost (PERF_RECORD_LOST).  Both are
	 * told, counted per file, to @msg as notes (err 0) when the file
	 * ends.
	 */
	bool unwind_host;
};

/*
 * Start recording into "@path.tmp" (created O_EXCL, mode 0640).  Opens the
 * events disabled, synthesizes the kernel maps and the target's tasks
 * (only the target's: a recording of one process does not describe the
 * rest of the host), writes FINISHED_INIT, enables, and starts a drain
 * thread that writes every ring pass followed by FINISHED_ROUND.  A
 * cgroup or the host gets every process's state: tasks can enter a cgroup
 * at any time.  On
 * success *ret_record is the caller's, to end with perfrec_record__stop().
 * Returns 0, or a negative errno with nothing left behind: -EINVAL for a
 * bad option (opts->msg names it: unwind_host without DWARF callchains
 * is one), -E2BIG for non-zero bytes past the
 * struct this library knows, -ENOENT/-EINVAL for an unknown event, -EACCES
 * or -EPERM when perf_event_paranoid or missing privileges refuse the
 * events, -ESRCH for a process that is gone, -EEXIST when "@path.tmp"
 * exists, or another -errno.  Thread-safe (each call makes its own object).
 */
PERFREC_API int perfrec_record__start(const char *path, const struct perfrec_record_opts *opts,
				      struct perfrec_record **ret_record);

/*
 * End the recording and free @r (whatever the result; @r must not be used
 * again; NULL returns -EINVAL): disable the events, drain the rings, write
 * the host features, HEADER_BUILD_ID and SAMPLE_TIME, finish the file and
 * rename it to its path.  Returns 0, the first error the drain thread met,
 * or that of finishing (the .tmp file then stays, readable by
 * perfrec_recover__file()).
 *
 * Not async-signal-safe (it joins a thread, takes a lock and allocates):
 * never call it from a signal handler.  Have the handler set a flag or
 * write to a pipe, and call __stop from normal code.  Called from the
 * msg callback or any other code on the drain thread it refuses with
 * -EDEADLK (and @r stays alive).  Thread-safe against __rotate and
 * __snapshot on other threads; the caller must not call __stop twice.
 */
PERFREC_API int perfrec_record__stop(struct perfrec_record *r);

/*
 * Publish what is recorded so far as @path, a complete file (its own
 * features, build ids and sample times; unwound with unwind_host), while
 * the recording goes on into its own file.  Returns 0, -EOPNOTSUPP with compression on, -EEXIST when
 * "@path.tmp" exists, -EDEADLK from the drain thread, or -errno.
 * Thread-safe; not async-signal-safe.
 */
PERFREC_API int perfrec_record__snapshot(struct perfrec_record *r, const char *path);

/*
 * Finish and publish the current file, and go on recording into @new_path
 * (which starts with its own synthesized state, so it reads on its own).
 * The events stay enabled: nothing is missed between the files.  Returns
 * 0, or -errno: if the old file could not be finished the recording still
 * moves on to @new_path; if @new_path cannot be started the rings are
 * drained into nothing until a later __rotate() succeeds or __stop() ends
 * the recording.  -EDEADLK from the drain thread.  Thread-safe; not
 * async-signal-safe.
 */
PERFREC_API int perfrec_record__rotate(struct perfrec_record *r, const char *new_path);

#endif
