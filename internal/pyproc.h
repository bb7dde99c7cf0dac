/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CPython processes and their layout (issue 27): which mapping of a process
 * holds the interpreter (the executable when it is linked statically, else
 * a mapped libpython3.X.so), its version, where its _PyRuntime lies in the
 * process, and the struct member offsets a walk of its Python frames needs.
 * The BPF walker reads those at sample time; pyproc_walk() is the same walk
 * from user space, through /proc/PID/mem, and is its oracle in the tests.
 *
 * Versions 3.10 to 3.13 on x86_64 (LP64, little endian).  The offsets come,
 * in this order, from
 *   1. the DWARF of the interpreter's own file (pyenv builds keep it;
 *      separate debug files are not looked up yet): struct members found
 *      by name, so any build of the version works;
 *   2. 3.13's _Py_DebugOffsets, the table CPython keeps at the start of
 *      _PyRuntime for out-of-process tools, read from the file's
 *      .PyRuntime section and checked (cookie, version, bounds);
 *   3. pyproc_table_offsets(): the numbers of pyproc-layout.c's table, one row
 *      per minor version, learnt from CPython's headers of that version
 *      (Include/internal/pycore_runtime.h, pycore_interp.h, pycore_frame.h,
 *      cpython/pystate.h, cpython/code.h, cpython/unicodeobject.h) and held
 *      to the DWARF of pyenv's 3.10.13, 3.11.7, 3.12.1 and 3.13.0 by
 *      tests/unit/test-pyproc.c, and to a live walk of Debian's 3.11.2.
 * A version outside the table, or offsets that fail the checks, is a
 * status (never a guess): the caller records such a process as before and
 * counts it (struct pyproc_counters).
 */
#ifndef PERFREC_PYPROC_H
#define PERFREC_PYPROC_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <gelf.h>

enum pyproc_status {
	PYPROC_OK = 0,
	PYPROC_NOT_PYTHON,       /* no mapping holds a CPython runtime */
	PYPROC_UNKNOWN_VERSION,  /* _PyRuntime found, version unreadable */
	PYPROC_UNSUPPORTED,      /* version read, not 3.10 .. 3.13 */
	PYPROC_UNKNOWN_LAYOUT,   /* no source gave sane offsets */
	PYPROC_BAD_ELF,          /* the interpreter's file does not parse */
	PYPROC_NO_FILE,          /* process gone, file unreadable or replaced */
	_PYPROC_STATUS_MAX,
};

enum pyproc_source {
	PYPROC_SRC_NONE = 0,
	PYPROC_SRC_DWARF,
	PYPROC_SRC_DEBUG_OFFSETS,
	PYPROC_SRC_TABLE,
};

/* A member this version does not have. */
#define PYPROC_OFF_NONE UINT32_MAX

/* Byte offsets, each within the struct named before the '_'. */
struct pyproc_offsets {
	uint32_t runtime_interp_head;   /* _PyRuntime.interpreters.head */
	uint32_t interp_threads_head;   /* 3.10: tstate_head; else threads.head */
	uint32_t tstate_next;
	uint32_t tstate_native_tid;     /* native_thread_id; NONE in 3.10 */
	uint32_t tstate_frame;          /* 3.10 frame, 3.11-12 cframe, 3.13 current_frame */
	uint32_t cframe_current_frame;  /* 3.11-12 only */
	uint32_t frame_previous;        /* 3.10 f_back */
	uint32_t frame_code;            /* f_code; 3.13 f_executable */
	uint32_t frame_instr;           /* 3.10 f_lasti, 3.11-12 prev_instr, 3.13 instr_ptr */
	uint32_t frame_owner;           /* NONE in 3.10 */
	uint32_t code_name;             /* co_qualname; 3.10 co_name */
	uint32_t code_filename;
	uint32_t code_firstlineno;
	uint32_t unicode_ascii_data;    /* sizeof(PyASCIIObject) */
	/* Added for the BPF walk (pywalk.h); members added go last. */
	uint32_t frame_is_entry;        /* 3.11 _PyInterpreterFrame.is_entry; else NONE */
	uint32_t tstate_thread_id;      /* thread_id: pthread_self(), the thread's fsbase */
};

/* What the interpreter's ELF file says, before any process is looked at. */
struct pyproc_elf {
	enum pyproc_status status;
	unsigned major, minor;
	uint32_t hexversion;        /* Py_Version (3.11+), else 0 */
	uint64_t runtime_vaddr;     /* _PyRuntime's st_value */
	uint64_t code_type_vaddr;   /* PyCode_Type's, 0 when absent */
	uint64_t load_vaddr;        /* lowest PT_LOAD p_vaddr, page aligned */
	int elf_type;               /* ET_EXEC or ET_DYN */
};

struct pyproc_info {
	enum pyproc_status status;
	enum pyproc_source source;
	unsigned major, minor;
	uint32_t hexversion;
	char path[PATH_MAX];        /* in the process's mount namespace */
	uint64_t load_bias;
	uint64_t runtime_addr;      /* _PyRuntime in the process */
	uint64_t code_type_addr;    /* PyCode_Type in the process, or 0 */
	struct pyproc_offsets off;
};

struct pyproc_counters {
	uint64_t n[_PYPROC_STATUS_MAX];
};

struct pyproc_frame {
	char name[128];
	char file[256];
	uint32_t firstlineno;
};

const char *pyproc_status_name(enum pyproc_status s);
/* The same as a key for status and metrics: "python", "not_python", "unsupported_version"... */
const char *pyproc_status_key(enum pyproc_status s);
const char *pyproc_source_name(enum pyproc_source s);
void pyproc_count(struct pyproc_counters *c, enum pyproc_status s);

/*
 * Looks at process PID under PROC (normally "/proc"): fills INFO, whose
 * status says what was found.  Files are opened beneath PROC/PID/root
 * (openat2 RESOLVE_IN_ROOT, no symlink followed last) and must be the
 * mapped inode.  Returns 0, or -errno when PROC/PID cannot be read at all.
 */
int pyproc_detect(const char *proc, pid_t pid, struct pyproc_info *info);

/*
 * What one interpreter file says, wherever it is mapped: detection of a
 * second process of the same python (same device, inode and mtime) costs
 * no ELF or DWARF parse.  PYPROC_CACHE_FILES files at most, the oldest
 * replaced.  Zeroed is empty; nothing to free.
 */
#define PYPROC_CACHE_FILES 32

struct pyproc_file {
	dev_t dev;
	ino_t ino;
	struct timespec mtime;
	enum pyproc_status status;
	enum pyproc_source source;
	unsigned major, minor;
	uint32_t hexversion;
	int elf_type;
	uint64_t load_vaddr, runtime_vaddr, code_type_vaddr;
	struct pyproc_offsets off;
};

struct pyproc_cache {
	struct pyproc_file files[PYPROC_CACHE_FILES];
	size_t nr, next;
	uint64_t hits, misses;
};

/* pyproc_detect() through CACHE (NULL: none). */
int pyproc_detect_cached(const char *proc, pid_t pid, struct pyproc_cache *cache,
			 struct pyproc_info *info);

/* The version, _PyRuntime and load address from an ELF of any origin. */
void pyproc_elf_scan(Elf *elf, const char *file_name, struct pyproc_elf *out);

/* Offsets from each source; 0, or -ENOENT/-EINVAL/-EPROTO when it has none. */
int pyproc_table_offsets(unsigned major, unsigned minor, struct pyproc_offsets *off);
int pyproc_dwarf_offsets(Elf *elf, unsigned minor, struct pyproc_offsets *off);
int pyproc_debug_offsets_parse(const void *buf, size_t len, unsigned minor,
			       struct pyproc_offsets *off);
/* 3.13's _Py_DebugOffsets at _PyRuntime in the file ELF. */
int pyproc_elf_debug_offsets(Elf *elf, const struct pyproc_elf *pe,
			     struct pyproc_offsets *off);

/*
 * Walks the Python frames of the thread TID (0: the first thread state) of
 * the process whose /proc/PID/mem is MEMFD, innermost first, into at most
 * MAX frames; a frame whose code is not a code object (PyCode_Type) is
 * left out.  3.10 keeps no native thread id: a TID there finds nothing.
 * Returns the number written, or -errno (-ESRCH: no such thread state).
 */
int pyproc_walk(int memfd, const struct pyproc_info *info, pid_t tid,
		struct pyproc_frame *frames, size_t max);

#endif
