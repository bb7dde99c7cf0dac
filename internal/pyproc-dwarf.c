/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The offsets from the interpreter's own DWARF (pyproc.h, source 1): each
 * struct is found by its type name among the top-level types of the
 * compile units, the first complete definition wins, and members by name,
 * following nested anonymous structs ("threads.head").
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include <dwarf.h>
#include <elfutils/libdw.h>

#include "pyproc.h"

enum { S_RUNTIME, S_INTERP, S_TSTATE, S_CFRAME, S_FRAME, S_CODE, S_ASCII, S_MAX };

/* Type names (typedef or struct tag) per struct, 3.10 and 3.11+. */
static const char *const struct_names[S_MAX][2] = {
	[S_RUNTIME] = { "_PyRuntimeState", "_PyRuntimeState" },
	[S_INTERP] = { "PyInterpreterState", "PyInterpreterState" },
	[S_TSTATE] = { "PyThreadState", "PyThreadState" },
	[S_CFRAME] = { "_PyCFrame", "_PyCFrame" },
	[S_FRAME] = { "PyFrameObject", "_PyInterpreterFrame" },
	[S_CODE] = { "PyCodeObject", "PyCodeObject" },
	[S_ASCII] = { "PyASCIIObject", "PyASCIIObject" },
};

/* Peels typedefs and qualifiers down to a complete struct definition. */
static bool struct_def(Dwarf_Die *die, Dwarf_Die *out)
{
	Dwarf_Die d = *die;

	for (int i = 0; i < 8; i++) {
		Dwarf_Attribute a;
		int tag = dwarf_tag(&d);

		if (tag == DW_TAG_structure_type) {
			if (dwarf_hasattr(&d, DW_AT_declaration) || !dwarf_haschildren(&d))
				return false;
			*out = d;
			return true;
		}
		if (tag != DW_TAG_typedef && tag != DW_TAG_const_type &&
		    tag != DW_TAG_volatile_type)
			return false;
		if (!dwarf_attr(&d, DW_AT_type, &a) || !dwarf_formref_die(&a, &d))
			return false;
	}
	return false;
}

/* One pass over every unit's top-level DIEs, for all wanted names at once. */
static void find_structs(Dwarf *dw, const char *const want[S_MAX], Dwarf_Die found[S_MAX],
			 bool have[S_MAX])
{
	Dwarf_Off off = 0, next;
	size_t hsize;
	unsigned left = S_MAX;

	while (left && dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu, child;

		if (dwarf_offdie(dw, off + hsize, &cu) && dwarf_child(&cu, &child) == 0) {
			do {
				const char *n = dwarf_diename(&child);

				if (!n)
					continue;
				for (int s = 0; s < S_MAX; s++)
					if (!have[s] && !strcmp(n, want[s]) &&
					    struct_def(&child, &found[s])) {
						have[s] = true;
						left--;
					}
			} while (dwarf_siblingof(&child, &child) == 0);
		}
		off = next;
	}
}

/* PATH's member offset ("a.b" into nested structs) in S, or -1. */
static int64_t member_off(Dwarf_Die *s, const char *path)
{
	Dwarf_Die cur = *s;
	int64_t total = 0;
	char part[64];

	while (*path) {
		size_t len = strcspn(path, ".");
		Dwarf_Die m;
		bool hit = false;

		if (len >= sizeof(part))
			return -1;
		memcpy(part, path, len);
		part[len] = '\0';
		path += len + (path[len] == '.');
		if (dwarf_child(&cur, &m) != 0)
			return -1;
		do {
			Dwarf_Attribute a;
			Dwarf_Word w;
			const char *n = dwarf_diename(&m);

			if (dwarf_tag(&m) != DW_TAG_member || !n || strcmp(n, part))
				continue;
			if (!dwarf_attr(&m, DW_AT_data_member_location, &a) ||
			    dwarf_formudata(&a, &w) != 0)
				return -1;
			total += (int64_t)w;
			hit = true;
			break;
		} while (dwarf_siblingof(&m, &m) == 0);
		if (!hit)
			return -1;
		if (*path) {
			Dwarf_Attribute a;
			Dwarf_Die t;

			if (!dwarf_attr(&m, DW_AT_type, &a) || !dwarf_formref_die(&a, &t) ||
			    !struct_def(&t, &cur))
				return -1;
		}
	}
	return total < 0 || total > (1 << 20) ? -1 : total;
}

struct want {
	int s;
	const char *path;
	size_t field;
};

#define F(x) offsetof(struct pyproc_offsets, x)
static const struct want want_common[] = {
	{ S_RUNTIME, "interpreters.head", F(runtime_interp_head) },
	{ S_TSTATE, "next", F(tstate_next) },
	{ S_TSTATE, "thread_id", F(tstate_thread_id) },
	{ S_CODE, "co_filename", F(code_filename) },
	{ S_CODE, "co_firstlineno", F(code_firstlineno) },
};
static const struct want want_310[] = {
	{ S_INTERP, "tstate_head", F(interp_threads_head) },
	{ S_TSTATE, "frame", F(tstate_frame) },
	{ S_FRAME, "f_back", F(frame_previous) },
	{ S_FRAME, "f_code", F(frame_code) },
	{ S_FRAME, "f_lasti", F(frame_instr) },
	{ S_CODE, "co_name", F(code_name) },
};
static const struct want want_311[] = {
	{ S_INTERP, "threads.head", F(interp_threads_head) },
	{ S_TSTATE, "native_thread_id", F(tstate_native_tid) },
	{ S_TSTATE, "cframe", F(tstate_frame) },
	{ S_CFRAME, "current_frame", F(cframe_current_frame) },
	{ S_FRAME, "previous", F(frame_previous) },
	{ S_FRAME, "f_code", F(frame_code) },
	{ S_FRAME, "prev_instr", F(frame_instr) },
	{ S_FRAME, "owner", F(frame_owner) },
	{ S_CODE, "co_qualname", F(code_name) },
};
static const struct want want_311_only[] = {
	{ S_FRAME, "is_entry", F(frame_is_entry) },
};
static const struct want want_313[] = {
	{ S_INTERP, "threads.head", F(interp_threads_head) },
	{ S_TSTATE, "native_thread_id", F(tstate_native_tid) },
	{ S_TSTATE, "current_frame", F(tstate_frame) },
	{ S_FRAME, "previous", F(frame_previous) },
	{ S_FRAME, "f_executable", F(frame_code) },
	{ S_FRAME, "instr_ptr", F(frame_instr) },
	{ S_FRAME, "owner", F(frame_owner) },
	{ S_CODE, "co_qualname", F(code_name) },
};
#undef F

static int fill(Dwarf_Die found[S_MAX], const bool have[S_MAX], const struct want *w,
		size_t n, struct pyproc_offsets *off)
{
	for (size_t i = 0; i < n; i++) {
		int64_t o;

		if (!have[w[i].s] || (o = member_off(&found[w[i].s], w[i].path)) < 0)
			return -ENOENT;
		*(uint32_t *)((char *)off + w[i].field) = (uint32_t)o;
	}
	return 0;
}

int pyproc_dwarf_offsets(Elf *elf, unsigned minor, struct pyproc_offsets *off)
{
	const char *want[S_MAX];
	Dwarf_Die found[S_MAX];
	bool have[S_MAX] = { false };
	struct pyproc_offsets o;
	Dwarf *dw;
	int r, sz;

	if (minor < 10 || minor > 13)
		return -ENOENT;
	dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
	if (!dw)
		return -ENOENT;
	for (int s = 0; s < S_MAX; s++)
		want[s] = struct_names[s][minor >= 11];
	find_structs(dw, want, found, have);
	memset(&o, 0xff, sizeof(o));
	r = fill(found, have, want_common, sizeof(want_common) / sizeof(want_common[0]), &o);
	if (!r && minor == 10)
		r = fill(found, have, want_310, sizeof(want_310) / sizeof(want_310[0]), &o);
	else if (!r && minor < 13)
		r = fill(found, have, want_311, sizeof(want_311) / sizeof(want_311[0]), &o);
	else if (!r)
		r = fill(found, have, want_313, sizeof(want_313) / sizeof(want_313[0]), &o);
	if (!r && minor == 11)
		r = fill(found, have, want_311_only, 1, &o);
	sz = have[S_ASCII] ? dwarf_bytesize(&found[S_ASCII]) : -1;
	if (!r && (sz < 24 || sz > 64))
		r = -ENOENT;
	o.unicode_ascii_data = (uint32_t)sz;
	dwarf_end(dw);
	if (!r)
		*off = o;
	return r;
}
