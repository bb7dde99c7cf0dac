/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Stacks out of perf.data files, symbolized: what the flame graph and pprof
 * writers read.  profile.c walks the files' samples, resolves each frame
 * (lib's symbolizer) and calls back once per sample with its stack; the
 * writers aggregate as they need (a tree for the flame graph, tables for
 * pprof).  Nothing here knows about output formats.
 */
#ifndef PERFRECCTL_PROFILE_H
#define PERFRECCTL_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cgroup-label.h"

enum pframe_kind {
	PFRAME_USER,
	PFRAME_KERNEL,
	PFRAME_BPF,
	PFRAME_UNKNOWN,         /* an address nothing resolved: name is "[unknown]" */
};

/* One frame of a stack.  The strings live as long as the profile run. */
struct pframe {
	const char *name;       /* function; "[unknown]" when unresolved */
	const char *module;     /* binary's path, "[kernel.kallsyms]", a module or "[bpf]"; NULL: none */
	enum pframe_kind kind;
	uint64_t addr;          /* the sampled address (as the file holds it) */
	const char *file;       /* source file (NULL: no line information) */
	unsigned line;
	bool inlined;           /* a frame inlined into the next one up */
	/*
	 * Added after the first version (new fields only at the end): the
	 * mapping the address fell in, for writers that name binaries
	 * (pprof's Mapping).  Zero / NULL when no map holds the address.
	 */
	uint64_t map_start, map_end, map_pgoff;
	const uint8_t *build_id; /* NULL: none known */
	uint8_t build_id_len;
	/*
	 * The symbol as the binary names it, where @name is its demangled
	 * form (C++, Rust); NULL: @name is the symbol's own name.
	 */
	const char *system_name;
};

/* One sample's stack, leaf first, and what it weighs. */
struct pstack {
	const char *event;      /* the event's name, as perf evlist prints it */
	const struct pframe *frames;
	size_t nr_frames;       /* leaf first: frames[0] is where the sample hit */
	uint64_t period;        /* the sample's period: ns for cpu-clock and offcpu-time */
	uint32_t pid, tid;
	const char *comm;
	uint64_t time;          /* sample clock */
	uint64_t wall_ns;       /* the same instant in wall-clock ns (0: file has no clock data) */
	/* Added after the first version (at the end): */
	uint32_t cpu;           /* (uint32_t)-1: the sample does not say */
	const char *cgroup;     /* the task's cgroup path (NULL: not recorded) */
};

struct profile_opts {
	const char *event;      /* only this event's samples (NULL: all) */
	int64_t pid;            /* -1: any */
	const char *comm;       /* NULL: any */
	const char *cgroup;     /* NULL: any */
	uint64_t from_wall_ns, to_wall_ns; /* window in wall-clock ns (0: open) */
	const char *symfs;      /* NULL: / */
	bool no_debuginfod;     /* do not ask DEBUGINFOD_URLS servers */
	bool no_inline;         /* do not expand inlined frames */
	/* Added after the first version: a build-id cache (perf's layout) searched before ~/.debug; NULL: none */
	const char *buildid_dir;
	/* Only samples of cgroups these select (--container, --pod, --unit); all NULL: any */
	struct cgroup_select select;
	/* Keep C++ and Rust names as the binaries have them (perf report --no-demangle) */
	bool no_demangle;
};

typedef int (*profile_stack_fn)(void *ctx, const struct pstack *s);

/*
 * Every sample of @paths (perf.data files, compressed or not) that @o lets
 * through, in file order, to @fn; a non-zero return of @fn stops the walk
 * and is returned.  Errors: negative errno, with a message on stderr
 * naming the file and the problem.
 */
int profile_walk(const char *const *paths, size_t nr_paths, const struct profile_opts *o,
		 profile_stack_fn fn, void *ctx);

#endif
