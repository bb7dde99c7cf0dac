/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Internal: addresses of a perf.data file's samples to function names.
 *
 * The symbolizer is fed a file's side-band records in file order (MMAP,
 * MMAP2, FORK, COMM with the exec flag, KSYMBOL) and its HEADER_BUILD_ID
 * table, and keeps per process the maps they describe.  An address is then
 * resolved against the process's maps (user), the kernel's maps and BPF
 * programs (kernel context).
 *
 * Binaries are found by build id, in this order: the path the file names if
 * its build id matches (under symfs), the build-id caches in perf's layout
 * (the configured dir, ~/.debug), /usr/lib/debug/.build-id, then debuginfod
 * (DEBUGINFOD_URLS, libdebuginfod loaded on first need).  Each binary is
 * looked up once per symbolizer: a binary that cannot be found costs one
 * lookup, not one per sample.  Symbols come from libdwfl (.symtab, .dynsym,
 * .gnu_debugdata), inlined frames and source lines from DWARF when present.
 * Kernel symbols come from /proc/kallsyms when the file's kernel build id
 * is the running kernel's, else from a kallsyms copy in a build-id cache
 * (perf's layout: .build-id/xx/yyyy/kallsyms) with that build id; the
 * KASLR shift is taken from the file's kernel map.  Without either, an
 * address in a module still names the module (the file's module maps).
 *
 * Not thread-safe; one symbolizer per thread.  Strings it returns live as
 * long as the symbolizer.
 */
#ifndef PERFREC_SYMBOLIZE_H
#define PERFREC_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <perfrec/format.h>

struct symbolizer;

struct symbolizer_opts {
	size_t sz;
	const char *symfs;        /* prefix of the paths the file names; NULL: "" */
	const char *buildid_dir;  /* extra build-id cache (perf layout); NULL: none */
	const char *home_debug;   /* perf's cache; NULL: $HOME/.debug */
	const char *debug_dir;    /* NULL: /usr/lib/debug */
	const char *kallsyms;     /* NULL: /proc/kallsyms */
	const char *kernel_notes; /* sysfs dir for the running kernel's build id; NULL: /sys */
	bool no_debuginfod;
	bool no_inline;
};

enum sym_kind {
	SYM_USER,
	SYM_KERNEL,
	SYM_BPF,
	SYM_UNKNOWN,
};

/* One resolved frame; inlined frames come before the function holding them. */
struct sym_frame {
	const char *name;       /* "[unknown]" when unresolved */
	const char *module;     /* path, "[kernel.kallsyms]", "[module]", "[bpf]"; NULL: no map */
	enum sym_kind kind;
	const char *file;       /* NULL: no line information */
	unsigned line;
	bool inlined;
	/* The binary's identity (user frames with a map): for pprof mappings. */
	uint64_t map_start, map_end, map_pgoff;
	const uint8_t *build_id;
	uint8_t build_id_len;
};

int symbolizer__new(const struct symbolizer_opts *opts, struct symbolizer **ret);
void symbolizer__free(struct symbolizer *s);

/* Forget every process's maps and the kernel's (a new file starts); binaries stay cached. */
void symbolizer__reset_maps(struct symbolizer *s);

/*
 * Read a HEADER_BUILD_ID feature body: build ids of paths the MMAP records
 * name without one (MMAP, not MMAP2 with build id) and of the kernel.
 * Returns 0 or -EBADMSG for a malformed body (what was read before stays).
 */
int symbolizer__add_build_ids(struct symbolizer *s, const void *data, size_t len);

/* A side-band record; other types are ignored.  Malformed ones are ignored too. */
void symbolizer__note_record(struct symbolizer *s, const struct perf_event_header *rec);

/*
 * Resolve @addr of process @pid, in kernel context if @kernel.  Fills up to
 * @max frames of @ret (innermost inlined frame first, then the function
 * holding it) and returns how many (>= 1 when @max >= 1: an address nothing
 * resolves gives one "[unknown]" frame).  @return_addr: @addr is a return
 * address (a caller frame): the call instruction before it is looked up.
 */
size_t symbolizer__resolve(struct symbolizer *s, uint32_t pid, uint64_t addr, bool kernel,
			   bool return_addr, struct sym_frame *ret, size_t max);

/* Binaries looked up, and how many of those were found (for tests). */
void symbolizer__stats(const struct symbolizer *s, unsigned *ret_lookups, unsigned *ret_found);

#endif
