/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What an interpreter's ELF file says (pyproc.h): its version, _PyRuntime,
 * its load address; the per-version offset table; 3.13's _Py_DebugOffsets.
 * Everything here reads bytes of a file a process mapped, so of any origin:
 * libelf bounds each section, and every number read is checked before use
 * (tests/fuzz/fuzz-pyproc.c).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "pyproc.h"

/* Where a virtual address of the file lies in a loaded, non-empty section. */
static const uint8_t *elf_vaddr_bytes(Elf *elf, uint64_t vaddr, size_t len)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
		    !(sh.sh_flags & SHF_ALLOC))
			continue;
		if (vaddr < sh.sh_addr || vaddr - sh.sh_addr >= sh.sh_size)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || vaddr - sh.sh_addr > d->d_size ||
		    d->d_size - (vaddr - sh.sh_addr) < len)
			return NULL;
		return (const uint8_t *)d->d_buf + (vaddr - sh.sh_addr);
	}
	return NULL;
}

/* Symbol NAME's value in .dynsym, else .symtab; 0 when absent. */
static uint64_t elf_symbol(Elf *elf, const char *name)
{
	static const Elf64_Word types[] = { SHT_DYNSYM, SHT_SYMTAB };

	for (size_t t = 0; t < 2; t++) {
		Elf_Scn *scn = NULL;

		while ((scn = elf_nextscn(elf, scn))) {
			GElf_Shdr sh;
			Elf_Data *d;

			if (!gelf_getshdr(scn, &sh) || sh.sh_type != types[t] ||
			    !sh.sh_entsize)
				continue;
			d = elf_getdata(scn, NULL);
			for (size_t i = 0; d && i < d->d_size / sh.sh_entsize; i++) {
				GElf_Sym sym;
				const char *n;

				if (!gelf_getsym(d, (int)i, &sym) || sym.st_shndx == SHN_UNDEF)
					continue;
				n = elf_strptr(elf, sh.sh_link, sym.st_name);
				if (n && !strcmp(n, name))
					return sym.st_value;
			}
		}
	}
	return 0;
}

/* "3.X" at the start of S (after PREFIX): the minor version, or -1. */
static int parse_minor(const char *s, const char *prefix)
{
	unsigned minor;
	int n = 0;

	if (!s || strncmp(s, prefix, strlen(prefix)))
		return -1;
	s += strlen(prefix);
	if (sscanf(s, "3.%u%n", &minor, &n) != 1 || n < 3 || minor > 99)
		return -1;
	if (s[n] && s[n] != '.' && s[n] != 'd' && s[n] != 'm' && s[n] != 't')
		return -1;
	return (int)minor;
}

static const char *elf_soname(Elf *elf)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < d->d_size / sh.sh_entsize; i++) {
			GElf_Dyn dyn;

			if (gelf_getdyn(d, (int)i, &dyn) && dyn.d_tag == DT_SONAME)
				return elf_strptr(elf, sh.sh_link, dyn.d_un.d_val);
		}
	}
	return NULL;
}

/*
 * The version, from what can least lie: Py_Version, the hex version the
 * interpreter itself reports (3.11+); then the soname the linker loaded it
 * by; then the file's name, for a static 3.10 executable.
 */
static void read_version(Elf *elf, const char *file_name, struct pyproc_elf *out)
{
	uint64_t v = elf_symbol(elf, "Py_Version");
	const uint8_t *p = v ? elf_vaddr_bytes(elf, v, 4) : NULL;
	const char *base;
	int minor;

	if (p) {
		uint32_t hex;

		memcpy(&hex, p, sizeof(hex));
		out->hexversion = hex;
		out->major = hex >> 24;
		out->minor = (hex >> 16) & 0xff;
		return;
	}
	minor = parse_minor(elf_soname(elf), "libpython");
	if (minor < 0 && file_name) {
		base = strrchr(file_name, '/');
		base = base ? base + 1 : file_name;
		minor = parse_minor(base, "libpython");
		if (minor < 0)
			minor = parse_minor(base, "python");
	}
	if (minor >= 0) {
		out->major = 3;
		out->minor = (unsigned)minor;
	}
}

void pyproc_elf_scan(Elf *elf, const char *file_name, struct pyproc_elf *out)
{
	GElf_Ehdr eh;
	size_t nph;

	memset(out, 0, sizeof(*out));
	out->status = PYPROC_BAD_ELF;
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_X86_64 ||
	    (eh.e_type != ET_EXEC && eh.e_type != ET_DYN) || elf_getphdrnum(elf, &nph))
		return;
	out->elf_type = eh.e_type;
	out->load_vaddr = UINT64_MAX;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD &&
		    ph.p_vaddr < out->load_vaddr)
			out->load_vaddr = ph.p_vaddr & ~(uint64_t)0xfff;
	}
	out->runtime_vaddr = elf_symbol(elf, "_PyRuntime");
	if (out->load_vaddr == UINT64_MAX || !out->runtime_vaddr ||
	    out->runtime_vaddr < out->load_vaddr) {
		out->status = out->load_vaddr == UINT64_MAX ? PYPROC_BAD_ELF : PYPROC_NOT_PYTHON;
		return;
	}
	out->code_type_vaddr = elf_symbol(elf, "PyCode_Type");
	read_version(elf, file_name, out);
	if (!out->major)
		out->status = PYPROC_UNKNOWN_VERSION;
	else if (out->major != 3 || out->minor < 10 || out->minor > 13)
		out->status = PYPROC_UNSUPPORTED;
	else
		out->status = PYPROC_OK;
}
