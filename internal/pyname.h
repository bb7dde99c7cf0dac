/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Naming Python code objects (issue 27): the qualified name, file and
 * first line of a code object of a live CPython process, read through
 * /proc/PID/mem with the offsets of pyproc.h, once per process and code
 * address (struct pyname_cache), and where its interpreter's eval loop
 * (_PyEval_EvalFrameDefault) lies in the process.
 *
 * Everything read is the process's own memory, so of any origin: every
 * read is bounded, a code object must have PyCode_Type as its type (when
 * the interpreter's file says where that is), its strings must be compact
 * ASCII str objects of sane length; what fails is an error (cached, so a
 * bad address costs one read), never a crash nor a read outside the
 * process.  Control characters in names become '?': a name goes into a
 * line-based symbol table.  Not thread-safe; prints nothing.
 */
#ifndef PERFREC_PYNAME_H
#define PERFREC_PYNAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "pyproc.h"

/* Code objects named per process at most (failed ones count too). */
#define PYNAME_MAX_CODES 16384

struct pyname_code {
	char qualname[160];
	char file[320];
	uint32_t firstlineno;
	/*
	 * 3.11+: bytes from the object's start within which its bytecode ends
	 * (co_code_adaptive is inline: PYNAME_CODE_HEAD_MAX + 2 * ob_size), so
	 * that a frame's instruction pointer tells whether it ran this object;
	 * 0: not known (3.10's f_lasti is an index).
	 */
	uint32_t span;
};

/* What precedes co_code_adaptive in a 3.11-3.13 PyCodeObject, at most (about 200 bytes). */
#define PYNAME_CODE_HEAD_MAX 320

/*
 * Read the code object at @code of the process whose memory is @memfd
 * (/proc/PID/mem, or any file read at the process's addresses).  0,
 * -EFAULT (a read failed: not mapped, process gone), -EPROTO (not a code
 * object, a name that is not a compact ASCII str), -EINVAL (@info not
 * usable, @code 0).
 */
int pyname_read(int memfd, const struct pyproc_info *info, uint64_t code, struct pyname_code *ret);

/* The symbol name of @c: "py::QUALNAME (FILE:LINE)".  snprintf()'s return. */
int pyname_format(const struct pyname_code *c, char *buf, size_t len);

struct pyname_stats {
	uint64_t named;    /* code objects read and named */
	uint64_t renamed;  /* of them, at an address whose object changed since it was named */
	uint64_t stale;    /* lookups refused: the frame ran another object than the one there now */
	uint64_t failed;   /* code addresses that did not read as a code object */
	uint64_t full;     /* lookups refused: PYNAME_MAX_CODES reached */
};

struct pyname_cache;

/*
 * A cache of @pid's code objects, through /proc/@pid/mem (opened now:
 * the caller has ptrace read access, or gets -EACCES/-EPERM), named with
 * @info's layout (copied).  0 or -errno.
 */
int pyname_cache_open(pid_t pid, const struct pyproc_info *info, struct pyname_cache **ret);
/* The same over @memfd, which the cache owns from now on (tests: a file laid out at addresses). */
int pyname_cache_new(int memfd, const struct pyproc_info *info, struct pyname_cache **ret);
/* Close and free.  NULL is fine. */
void pyname_cache_free(struct pyname_cache *c);

/*
 * The slot of @code, run by a frame at instruction @instr (pywalk.h; 0:
 * none): a number below PYNAME_MAX_CODES, given in the order code objects
 * are named.  The first time an address is seen its object is read; then
 * *@ret_new is true and @ret_code holds its names (the caller makes its
 * symbol of them); otherwise *@ret_new is false and @ret_code untouched.
 *
 * Names are read after the sample (when it is merged): the object a frame
 * ran may be gone by then, its address another's.  Where the version
 * tells (3.11+: @instr lies in the object's bytecode), a frame whose
 * instruction is not within the object named at its address makes that
 * address be read again: a new object there gets a new slot (*@ret_new);
 * if the frame's object is not there any more, -ESTALE (nothing is
 * guessed).  -errno as pyname_read() (the same again for that address,
 * without reading), or -ENOSPC when the cache or its slots are full.
 */
int pyname_lookup(struct pyname_cache *c, uint64_t code, uint64_t instr, struct pyname_code *ret_code,
		  bool *ret_new);

void pyname_cache_stats(const struct pyname_cache *c, struct pyname_stats *ret);

/*
 * Where _PyEval_EvalFrameDefault lies in process @pid: its symbol (the
 * file's .dynsym or .symtab) in @info's interpreter file, opened beneath
 * /proc/@pid/root, relocated by @info's load bias, as [*@ret_lo,
 * *@ret_hi).  0, -ENOENT (no such symbol, or of size 0), or -errno.
 */
int pyname_eval_range(pid_t pid, const struct pyproc_info *info, uint64_t *ret_lo, uint64_t *ret_hi);
/* The same in the ELF file @fd (not relocated). */
int pyname_eval_range_fd(int fd, uint64_t *ret_lo, uint64_t *ret_hi);

#endif
