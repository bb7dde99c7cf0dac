/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Unwind tables per build id (private to perfrecd; not exported).
 *
 * The host unwinder (lib/unwind.c) runs libdwfl on every sample: the CFI of
 * each frame's function is interpreted again each time, about 100 us per
 * sample on real programs.  Here the CFI of one x86_64 ELF file is turned,
 * once, into a sorted table of rows ("stack deltas", as the OpenTelemetry
 * eBPF profiler calls them): from each row's address on, where the CFA is
 * (rsp or rbp plus an offset), where the return address is and where the
 * caller's rbp is.  That is all an x86_64 unwinder needs for compiled code;
 * the rare rules a row cannot say (DWARF expressions other than the PLT's,
 * a CFA in another register, signal frames) are rows of kind
 * UNWTAB_FALLBACK, for which unwtab_unwind() stops and says that libdwfl
 * has to go on.  Unwinding a sample is then a binary search per frame.
 *
 * A table is keyed by the file's build id and kept on disk (unwtab_save(),
 * unwtab_load()) so that a restart does not build it again.
 */
#ifndef PERFREC_UNWTAB_H
#define PERFREC_UNWTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <perfrec/buildid.h>

enum unwtab_kind {
	UNWTAB_GAP = 0,    /* no CFI here: code without unwind information */
	UNWTAB_CFA_SP,     /* CFA = rsp + cfa_off */
	UNWTAB_CFA_BP,     /* CFA = rbp + cfa_off */
	/*
	 * A PLT entry (the expression every linker writes for .plt): CFA =
	 * rsp + cfa_off, plus 8 when (pc & 15) >= fp_off (once the entry has
	 * pushed the relocation index).  The caller's rbp is unchanged.
	 */
	UNWTAB_PLT,
	UNWTAB_OUTERMOST,  /* the return address is undefined: the stack ends here (_start, clone) */
	UNWTAB_FALLBACK,   /* a rule this table does not express: ask libdwfl */
	UNWTAB_NR_KINDS,
};

/* Row flag: the caller's rbp is undefined (not recoverable) below this frame. */
#define UNWTAB_FP_UNDEFINED 0x10
#define UNWTAB_KIND_MASK 0x0f

/*
 * One row: valid from @start (an address of the ELF file, as its program
 * headers lay it out) up to the next row's start.  16 bytes.
 */
struct unwtab_row {
	uint64_t start;
	int32_t cfa_off;
	int16_t fp_off;  /* the caller's rbp is saved at CFA + fp_off; 0: rbp is unchanged */
	int8_t ra_off;   /* the return address is at CFA + ra_off (-8 for all compiled code) */
	uint8_t kind;    /* enum unwtab_kind | UNWTAB_FP_UNDEFINED */
};

/* An executable PT_LOAD of the file: how a mapping's addresses become the file's. */
struct unwtab_load {
	uint64_t offset, vaddr, filesz;
};

#define UNWTAB_MAX_LOADS 8

struct unwtab {
	uint8_t build_id[PERFREC_BUILD_ID_MAX];
	uint8_t build_id_len;
	uint32_t nr_loads;
	struct unwtab_load loads[UNWTAB_MAX_LOADS];
	size_t nr_rows;
	struct unwtab_row *rows;
	/*
	 * A coarse index over the rows, made when a table is built or loaded
	 * (never stored): first[k] is the last row starting at or before
	 * index_base + (k << index_shift), so that a look-up searches only the
	 * few rows of one granule.  Absent (NULL) in tables made by hand.
	 */
	uint32_t *first;
	size_t index_len;
	uint64_t index_base;
	unsigned index_shift;
	/* How it was built (0 for a loaded table). */
	size_t nr_fdes;       /* FDEs used */
	size_t nr_fallback;   /* rows of kind UNWTAB_FALLBACK */
};

/* Bounds of a table: what the builder and the loader refuse (-E2BIG, -EFBIG). */
#define UNWTAB_MAX_ROWS_DEFAULT (16u << 20)      /* 256 MiB of rows */
#define UNWTAB_MAX_SECTION (512ull << 20)        /* .eh_frame or .debug_frame */

struct unwtab_build_opts {
	size_t sz;
	int debug_fd;        /* a separate debug file of the same build id for .debug_frame; -1: none */
	size_t max_rows;     /* 0: UNWTAB_MAX_ROWS_DEFAULT */
	/*
	 * A file without a build id gets a table (build_id_len 0, which
	 * unwtab_save() refuses) instead of -ENOENT: the caller knows the
	 * file otherwise (a map's device and inode).
	 */
	bool build_id_optional;
};

/*
 * Build the table of the x86_64 executable or shared object open at @fd
 * (read, not changed) from its .eh_frame and, where .eh_frame has nothing
 * for an address, .debug_frame (its own, or that of opts->debug_fd, whose
 * build id must be the same).  @opts may be NULL.  Returns 0 with
 * *ret_table set, or -EINVAL (not an x86_64 ELF executable or shared
 * object, debug file of another build id), -ENOENT (no build id, unless
 * opts->build_id_optional), -ENODATA
 * (no CFI at all), -EBADMSG (CFI that does not parse), -EFBIG (a CFI
 * section over UNWTAB_MAX_SECTION), -E2BIG (more rows than the bound),
 * -ENOMEM, -errno of reading.
 */
int unwtab_build_fd(int fd, const struct unwtab_build_opts *opts, struct unwtab **ret_table);
void unwtab_free(struct unwtab *t);

/* Make t->first (unwtab_build_fd() and unwtab_load() do); 0 or -ENOMEM. */
int unwtab_index(struct unwtab *t);

/* The row for file address @addr (the last with start <= @addr), or NULL before the first. */
const struct unwtab_row *unwtab_lookup(const struct unwtab *t, uint64_t addr);

/*
 * The load bias of a mapping of the file at @map_start from file offset
 * @pgoff: file address = runtime address - bias.  0, or -ENOENT when no
 * executable segment of the table holds @pgoff.
 */
int unwtab_bias(const struct unwtab *t, uint64_t map_start, uint64_t pgoff, uint64_t *ret_bias);

/*
 * On disk: one file per build id, "<hex build id>.unwtab", in the
 * directory @dirfd (the caller's cache directory, already checked to be
 * safe).  A header (magic, format version, build id, loads, row count,
 * checksum), then the rows, little-endian as in memory.
 *
 * unwtab_save() writes it through O_TMPFILE (a unique name with O_EXCL |
 * O_NOFOLLOW where O_TMPFILE is not supported) and links it in place, mode
 * 0600: readers never see a half-written table.  0, -EEXIST when a table is
 * already there (it is the same one: the build id names it), -errno.
 *
 * unwtab_load() opens only a regular file (O_NOFOLLOW), checks everything
 * (size, magic, version, the build id asked for, counts, the checksum, rows
 * sorted and of known kinds) and returns 0 with *ret_table, or -ENOENT
 * (none), -EBADMSG (damaged, truncated, another version or build id: build
 * it again), -E2BIG, -ENOMEM, -errno.
 */
int unwtab_save(const struct unwtab *t, int dirfd);
int unwtab_load(int dirfd, const uint8_t *build_id, size_t build_id_len, struct unwtab **ret_table);
/* The name unwtab_save() uses, into @buf (at least UNWTAB_NAME_MAX bytes). */
#define UNWTAB_NAME_MAX (2 * PERFREC_BUILD_ID_MAX + sizeof(".unwtab"))
void unwtab_file_name(const uint8_t *build_id, size_t build_id_len, char *buf);
/* The checks of unwtab_load() on a file's bytes in memory (for the fuzz target). */
int unwtab_parse(const void *buf, size_t len, const uint8_t *build_id, size_t build_id_len,
		 struct unwtab **ret_table);

/*
 * The unwinder.  The sample's user registers and its copy of the user
 * stack (which starts at regs->sp); @find maps a pc of the process to the
 * row that holds it in the table of the file mapped there (as
 * unwtab_find_row() does with the table and the mapping's load bias), so
 * that a caller may keep the rows of pcs it has seen:
 *   returns 1 with *ret_row: file-backed code with a table (NULL: before
 *     its first row, no information there),
 *   0: executable memory without a table (JIT code, a file without CFI),
 *   negative: no executable mapping at @pc.
 * Each pc is asked for once per walk.  A row must stay valid until @find
 * is called again.
 */
struct unwtab_regs {
	uint64_t ip, sp, bp;
	bool bp_valid;
};

typedef int (*unwtab_find_fn)(void *ctx, uint64_t pc, const struct unwtab_row **ret_row);

/* @find's answer for @pc of a mapping of @t with load bias @bias. */
static inline int unwtab_find_row(const struct unwtab *t, uint64_t bias, uint64_t pc,
				  const struct unwtab_row **ret_row)
{
	*ret_row = unwtab_lookup(t, pc - bias);
	return 1;
}

/* How a frame's pc was found. */
enum unwtab_how {
	UNWTAB_FROM_REGS = 0,  /* the sampled ip */
	UNWTAB_FROM_TABLE,     /* return address found with the table of the frame below */
	UNWTAB_FROM_FP,        /* return address found following rbp (code without a table) */
};

struct unwtab_frame {
	uint64_t pc;    /* the ip, then return addresses (not yet moved back to the call) */
	uint8_t how;    /* enum unwtab_how */
};

/* Why the walk ended. */
enum unwtab_end {
	UNWTAB_END_OUTERMOST = 0, /* the CFI says the stack ends here, or a return address of 0 */
	UNWTAB_END_NEED_DWFL,     /* a fallback row: libdwfl can go on from *ret_at */
	UNWTAB_END_NO_MAP,        /* a return address outside every executable mapping */
	UNWTAB_END_STACK,         /* a read outside the stack copy */
	UNWTAB_END_INCONSISTENT,  /* the stack pointer or frame pointer chain does not go up */
	UNWTAB_END_NO_INFO,       /* code without table nor a usable frame pointer */
	UNWTAB_END_MAX_FRAMES,
};

struct unwtab_result {
	unsigned nr_frames;
	enum unwtab_end end;
	struct unwtab_regs at;  /* the registers of the last frame (where libdwfl starts) */
	uint64_t high;          /* the end of the highest stack word read, 0: none */
	uint64_t missed;        /* a stack word wanted at or past the copy's end, 0: none */
};

/*
 * Walk the stack from @regs, with table look-ups only, into @frames (up to
 * @max_frames).  Returns 0 with *ret filled (at least the ip as frame 0),
 * or -EINVAL.
 */
int unwtab_unwind(const struct unwtab_regs *regs, const void *stack, size_t stack_size,
		  unwtab_find_fn find, void *ctx, struct unwtab_frame *frames, unsigned max_frames,
		  struct unwtab_result *ret);

/*
 * The same from a frame above the sample's (where libdwfl stopped): the
 * stack copy @stack starts at @stack_base (the sample's stack pointer),
 * and with @caller @regs->ip is a return address, looked up at its call.
 */
int unwtab_unwind_from(const struct unwtab_regs *regs, uint64_t stack_base, bool caller, const void *stack,
		       size_t stack_size, unwtab_find_fn find, void *ctx, struct unwtab_frame *frames,
		       unsigned max_frames, struct unwtab_result *ret);

#endif
