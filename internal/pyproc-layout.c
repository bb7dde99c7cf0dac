/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The offsets a Python frame walk needs when the interpreter's file has no
 * DWARF: 3.13's own _Py_DebugOffsets, else the per-version table below.
 */
#include <errno.h>
#include <string.h>

#include "pyproc.h"

#define N PYPROC_OFF_NONE

/*
 * One row per minor version, x86_64.  Each number is the member's offset
 * in the struct of that version's headers (the files are CPython's, of the
 * tag named): learnt there, then checked against the DWARF of pyenv's
 * build of that release (tests/unit/test-pyproc.c compares every field).
 * The layouts did not change within these minor versions' releases up to
 * the ones named; a later release that moved a member shows up as a failed
 * walk in the test, not as a silent mismatch, for the builds that have
 * DWARF (the DWARF is then used instead of this table).
 */
static const struct {
	unsigned minor;
	struct pyproc_offsets off;
} table[] = {
	/* v3.10.13: pycore_runtime.h (_PyRuntimeState.interpreters.head 32),
	 * pycore_interp.h (struct _is: next 0, tstate_head 8), cpython/pystate.h
	 * (struct _ts: prev 0, next 8, interp 16, frame 24; no native id),
	 * cpython/frameobject.h (struct _frame: PyObject_VAR_HEAD 24, f_back 24,
	 * f_code 32, ..., f_lasti 96; thread_id 176), cpython/code.h (firstlineno 40,
	 * co_filename 104, co_name 112), PyASCIIObject 48 bytes (with wstr). */
	{ 10, { 32, 8, 8, N, 24, N, 24, 32, 96, N, 112, 104, 40, 48, N, 176 } },
	/* v3.11.7: interpreters.head 40 (after _finalizing etc.), _is.threads.head
	 * 16, _ts: next 8, cframe 56, thread_id 152, native_thread_id 160; _PyCFrame:
	 * use_tracing then current_frame 8; _PyInterpreterFrame (pycore_frame.h):
	 * f_func, f_globals, f_builtins, f_locals, f_code 32, frame_obj,
	 * previous 48, prev_instr 56, stacktop 64, is_entry 68, owner 69;
	 * PyCodeObject: co_firstlineno 72, co_filename 112, co_name 120,
	 * co_qualname 128; PyASCIIObject 48. */
	{ 11, { 40, 16, 8, 160, 56, 8, 48, 32, 56, 69, 128, 112, 72, 48, 68, 152 } },
	/* v3.12.1: interpreters.head 40, _is.threads.head 72, _ts: next 8,
	 * cframe 56, thread_id 136, native_thread_id 144; _PyCFrame.current_frame 0;
	 * _PyInterpreterFrame: f_code 0, previous 8, prev_instr 56, owner 70
	 * (after stacktop 64, return_offset 68); PyCodeObject: co_firstlineno
	 * 68, co_filename 112, co_name 120, co_qualname 128; PyASCIIObject 40
	 * (wstr gone). */
	{ 12, { 40, 72, 8, 144, 56, 0, 8, 0, 56, 70, 128, 112, 68, 40, N, 136 } },
	/* v3.13.0: _PyRuntimeState starts with _Py_DebugOffsets, so
	 * interpreters.head 632; _is.threads.head 7344; _ts: next 8,
	 * current_frame 72, thread_id 152, native_thread_id 160; _PyInterpreterFrame:
	 * f_executable 0, previous 8, instr_ptr 56, owner 70; PyCodeObject
	 * as 3.12; PyASCIIObject 40. */
	{ 13, { 632, 7344, 8, 160, 72, N, 8, 0, 56, 70, 128, 112, 68, 40, N, 152 } },
};

int pyproc_table_offsets(unsigned major, unsigned minor, struct pyproc_offsets *off)
{
	if (major != 3)
		return -ENOENT;
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (table[i].minor == minor) {
			*off = table[i].off;
			return 0;
		}
	return -ENOENT;
}

/*
 * 3.13.0's _Py_DebugOffsets (Include/internal/pycore_runtime.h): a cookie,
 * the hex version, then per struct its size followed by member offsets,
 * all uint64_t.  These are the byte positions of the ones used.
 */
enum {
	DO_COOKIE = 0, DO_VERSION = 8, DO_FREE_THREADED = 16,
	DO_RUNTIME_SIZE = 24, DO_RUNTIME_INTERP_HEAD = 40,
	DO_INTERP_SIZE = 48, DO_INTERP_THREADS_HEAD = 72,
	DO_TSTATE_SIZE = 152, DO_TSTATE_NEXT = 168, DO_TSTATE_FRAME = 184,
	DO_TSTATE_THREAD_ID = 192, DO_TSTATE_NATIVE_TID = 200,
	DO_FRAME_SIZE = 224, DO_FRAME_PREVIOUS = 232, DO_FRAME_EXECUTABLE = 240,
	DO_FRAME_INSTR = 248, DO_FRAME_OWNER = 264,
	DO_CODE_SIZE = 272, DO_CODE_FILENAME = 280, DO_CODE_QUALNAME = 296,
	DO_CODE_FIRSTLINENO = 312,
	DO_UNICODE_SIZE = 536, DO_UNICODE_ASCII_SIZE = 560,
	DO_END = 584,
};

static uint64_t u64_at(const uint8_t *b, size_t at)
{
	uint64_t v;

	memcpy(&v, b + at, sizeof(v));
	return v;
}

/* The member at AT of a struct whose size is at SIZE_AT: within it, or -1. */
static int member(const uint8_t *b, size_t size_at, size_t at, uint32_t *out)
{
	uint64_t size = u64_at(b, size_at), o = u64_at(b, at);

	if (size < 8 || size > (1u << 20) || o > size - 8)
		return -1;
	*out = (uint32_t)o;
	return 0;
}

int pyproc_debug_offsets_parse(const void *buf, size_t len, unsigned minor,
			       struct pyproc_offsets *off)
{
	static const struct { size_t size_at, at, field; } m[] = {
#define F(x) offsetof(struct pyproc_offsets, x)
		{ DO_RUNTIME_SIZE, DO_RUNTIME_INTERP_HEAD, F(runtime_interp_head) },
		{ DO_INTERP_SIZE, DO_INTERP_THREADS_HEAD, F(interp_threads_head) },
		{ DO_TSTATE_SIZE, DO_TSTATE_NEXT, F(tstate_next) },
		{ DO_TSTATE_SIZE, DO_TSTATE_FRAME, F(tstate_frame) },
		{ DO_TSTATE_SIZE, DO_TSTATE_NATIVE_TID, F(tstate_native_tid) },
		{ DO_TSTATE_SIZE, DO_TSTATE_THREAD_ID, F(tstate_thread_id) },
		{ DO_FRAME_SIZE, DO_FRAME_PREVIOUS, F(frame_previous) },
		{ DO_FRAME_SIZE, DO_FRAME_EXECUTABLE, F(frame_code) },
		{ DO_FRAME_SIZE, DO_FRAME_INSTR, F(frame_instr) },
		{ DO_FRAME_SIZE, DO_FRAME_OWNER, F(frame_owner) },
		{ DO_CODE_SIZE, DO_CODE_FILENAME, F(code_filename) },
		{ DO_CODE_SIZE, DO_CODE_QUALNAME, F(code_name) },
		{ DO_CODE_SIZE, DO_CODE_FIRSTLINENO, F(code_firstlineno) },
#undef F
	};
	const uint8_t *b = buf;
	struct pyproc_offsets o;
	uint64_t v, ascii;

	/* Only 3.13's layout of the table itself is known: 3.14 grew it. */
	if (minor != 13)
		return -ENOENT;
	if (!buf || len < DO_END || memcmp(b + DO_COOKIE, "xdebugpy", 8))
		return -EPROTO;
	v = u64_at(b, DO_VERSION);
	/* Free-threaded builds lay objects out differently: not walked. */
	if ((v >> 16) != 0x030d || u64_at(b, DO_FREE_THREADED) != 0)
		return -EPROTO;
	memset(&o, 0, sizeof(o));
	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++)
		if (member(b, m[i].size_at, m[i].at, (uint32_t *)((char *)&o + m[i].field)))
			return -EINVAL;
	ascii = u64_at(b, DO_UNICODE_ASCII_SIZE);
	if (ascii < 24 || ascii > 64 || ascii > u64_at(b, DO_UNICODE_SIZE))
		return -EINVAL;
	o.unicode_ascii_data = (uint32_t)ascii;
	o.cframe_current_frame = PYPROC_OFF_NONE;
	o.frame_is_entry = PYPROC_OFF_NONE;
	*off = o;
	return 0;
}

int pyproc_elf_debug_offsets(Elf *elf, const struct pyproc_elf *pe,
			     struct pyproc_offsets *off)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		uint64_t at;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    pe->runtime_vaddr < sh.sh_addr ||
		    pe->runtime_vaddr - sh.sh_addr >= sh.sh_size)
			continue;
		d = elf_getdata(scn, NULL);
		at = pe->runtime_vaddr - sh.sh_addr;
		if (!d || !d->d_buf || at > d->d_size)
			return -EPROTO;
		/* The table must be this interpreter's own (Py_Version's). */
		if (pe->hexversion && d->d_size - at >= DO_END &&
		    u64_at((const uint8_t *)d->d_buf + at, DO_VERSION) != pe->hexversion)
			return -EPROTO;
		return pyproc_debug_offsets_parse((const uint8_t *)d->d_buf + at,
						  d->d_size - at, pe->minor, off);
	}
	return -ENOENT;
}
