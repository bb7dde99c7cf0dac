// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libFuzzer target for what internal/pyproc reads out of a process's
 * interpreter file (internal/pyproc-elf.c, pyproc-layout.c): the bytes as
 * an ELF (version, _PyRuntime, load address, 3.13's _Py_DebugOffsets in
 * its .PyRuntime section) and as a bare _Py_DebugOffsets.  Besides no
 * out-of-bounds access under ASan, offsets accepted are bounded: a walker
 * adds them to addresses and must never be handed a wild one.  (The
 * DWARF side is libdw's parsing, not fuzzed here.)
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pyproc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void bounded(const struct pyproc_offsets *o)
{
	const uint32_t *f = (const uint32_t *)o;

	for (size_t i = 0; i < sizeof(*o) / sizeof(*f); i++)
		if (f[i] != PYPROC_OFF_NONE && f[i] > (1u << 20))
			abort();
	if (o->unicode_ascii_data < 24 || o->unicode_ascii_data > 64)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pyproc_offsets off;
	struct pyproc_elf pe;
	char *copy;
	Elf *elf;

	if (pyproc_debug_offsets_parse(data, size, 13, &off) == 0)
		bounded(&off);
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	elf_version(EV_CURRENT);
	elf = elf_memory(copy, size);
	pyproc_elf_scan(elf, "libpython3.13.so.1.0", &pe);
	if (pe.status == PYPROC_OK) {
		if (pe.major != 3 || pe.minor < 10 || pe.minor > 13 || !pe.runtime_vaddr)
			abort();
		if (pyproc_elf_debug_offsets(elf, &pe, &off) == 0)
			bounded(&off);
	}
	elf_end(elf);
	free(copy);
	return 0;
}
