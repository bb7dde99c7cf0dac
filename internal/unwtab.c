// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Building unwind tables (internal/unwtab.h) from an ELF file's CFI with libdw.
 *
 * The FDEs of .eh_frame (then .debug_frame) are listed with
 * dwarf_next_cfi(), their address ranges decoded here (libdw has no call
 * that gives an FDE's range), sorted, and those that overlap an earlier
 * one dropped: .eh_frame, which the program's own unwinder uses, wins.
 * Each FDE's range is then walked row by row with dwarf_cfi_addrframe(),
 * whose [start, end) says where the next row begins, and each row's rules
 * translated into the table's few kinds.  Equal neighbours are merged, and
 * a gap row ends every FDE that the next does not start right after.
 *
 * Everything is bounded: the sections' sizes, the number of FDEs (by the
 * section's size), rows (opts->max_rows) and steps (each one moves the pc
 * forward).
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dwarf.h>
#include <elfutils/libdw.h>

#include "unwtab.h"

/* DWARF register numbers of x86_64 (the psABI's). */
#define DW_RBP 6
#define DW_RSP 7
#define DW_RA 16

enum fde_src { SRC_EH = 0, SRC_DEBUG = 1 };

struct fde_range {
	uint64_t lo, hi;
	uint8_t src;
};

struct cfi_section {
	Elf_Data *data;
	uint64_t addr;      /* the section's address, for pc-relative pointers */
	bool eh;
};

struct builder {
	struct unwtab *t;
	size_t cap, max_rows;
	struct fde_range *fdes;
	size_t nr_fdes, cap_fdes;
	const unsigned char *ident;
	/*
	 * dwarf_cfi_addrframe() calls left: one per row before merging.  Rows
	 * are bounded by the CFI's instructions, but each call runs an FDE's
	 * instructions again, so a hostile FDE of many rows is stopped here.
	 */
	uint64_t steps;
};

/* --- pointers in CFI (DW_EH_PE_*) ------------------------------------------ */

static int read_uleb(const uint8_t **pp, const uint8_t *end, uint64_t *ret, bool sign)
{
	const uint8_t *p = *pp;
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t b;

	do {
		if (p >= end || shift >= 64)
			return -EBADMSG;
		b = *p++;
		v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	if (sign && shift < 64 && (b & 0x40))
		v |= ~(uint64_t)0 << shift;
	*pp = p;
	*ret = v;
	return 0;
}

static int read_fixed(const uint8_t **pp, const uint8_t *end, unsigned size, bool sign, uint64_t *ret)
{
	uint64_t v = 0;

	if ((size_t)(end - *pp) < size)
		return -EBADMSG;
	memcpy(&v, *pp, size); /* little-endian: x86_64 only */
	if (sign && size < 8 && (v >> (size * 8 - 1)) & 1)
		v |= ~(uint64_t)0 << (size * 8);
	*pp += size;
	*ret = v;
	return 0;
}

/* A value of encoding @enc's format (its low nibble), without the application. */
static int read_encoded(const uint8_t **pp, const uint8_t *end, uint8_t enc, uint64_t *ret)
{
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr: return read_fixed(pp, end, 8, false, ret);
	case DW_EH_PE_uleb128: return read_uleb(pp, end, ret, false);
	case DW_EH_PE_udata2: return read_fixed(pp, end, 2, false, ret);
	case DW_EH_PE_udata4: return read_fixed(pp, end, 4, false, ret);
	case DW_EH_PE_udata8: return read_fixed(pp, end, 8, false, ret);
	case DW_EH_PE_sleb128: return read_uleb(pp, end, ret, true);
	case DW_EH_PE_sdata2: return read_fixed(pp, end, 2, true, ret);
	case DW_EH_PE_sdata4: return read_fixed(pp, end, 4, true, ret);
	case DW_EH_PE_sdata8: return read_fixed(pp, end, 8, true, ret);
	default: return -EBADMSG;
	}
}

/* The pointer encoding of FDEs under @cie: 'R' of a "z" augmentation, else absolute. */
static int fde_encoding(const Dwarf_CIE *cie, uint8_t *ret_enc)
{
	const uint8_t *p = cie->augmentation_data, *end;
	const char *a = cie->augmentation;

	*ret_enc = DW_EH_PE_absptr;
	if (!a || a[0] != 'z')
		return a && a[0] ? -EBADMSG : 0;
	if (!p && cie->augmentation_data_size)
		return -EBADMSG;
	end = p + cie->augmentation_data_size;
	for (a++; *a; a++) {
		uint64_t skip;
		uint8_t enc;

		switch (*a) {
		case 'R':
			if (p >= end)
				return -EBADMSG;
			*ret_enc = *p++;
			break;
		case 'L':
			if (p++ >= end)
				return -EBADMSG;
			break;
		case 'P':
			if (p >= end)
				return -EBADMSG;
			enc = *p++;
			if (read_encoded(&p, end, enc, &skip) < 0)
				return -EBADMSG;
			break;
		case 'S':
		case 'B':
			break;
		default:
			return 0; /* the rest is not ours to know; 'R' comes first in practice */
		}
	}
	return 0;
}

/* [*lo, *hi) of the FDE @fde, whose CIE says @enc; 1 when it is to be skipped. */
static int fde_range(const struct cfi_section *s, const Dwarf_FDE *fde, uint8_t enc, uint64_t *lo, uint64_t *hi)
{
	const uint8_t *base = s->data->d_buf, *p = fde->start, *end = fde->end;
	uint64_t start, len;

	if (p < base || end > base + s->data->d_size || p > end)
		return -EBADMSG;
	if (enc == DW_EH_PE_omit || (enc & DW_EH_PE_indirect))
		return 1;
	if (read_encoded(&p, end, enc, &start) < 0 || read_encoded(&p, end, enc & 0x0f, &len) < 0)
		return -EBADMSG;
	switch (enc & 0x70) {
	case DW_EH_PE_absptr:
		break;
	case DW_EH_PE_pcrel:
		start += s->addr + (uint64_t)((const uint8_t *)fde->start - base);
		break;
	default:
		return 1; /* datarel, textrel, funcrel: not in x86_64 .eh_frame */
	}
	/* An FDE of discarded code (start 0 in .debug_frame) or an empty one. */
	if (!len || (!start && !s->eh) || start + len < start)
		return 1;
	*lo = start;
	*hi = start + len;
	return 0;
}

/* --- listing the FDEs -------------------------------------------------------- */

static int add_fde(struct builder *b, uint64_t lo, uint64_t hi, uint8_t src)
{
	if (b->nr_fdes == b->cap_fdes) {
		size_t n = b->cap_fdes ? b->cap_fdes * 2 : 1024;
		struct fde_range *f = reallocarray(b->fdes, n, sizeof(*f));

		if (!f)
			return -ENOMEM;
		b->fdes = f;
		b->cap_fdes = n;
	}
	b->fdes[b->nr_fdes++] = (struct fde_range){ .lo = lo, .hi = hi, .src = src };
	return 0;
}

static int cie_of(const struct builder *b, const struct cfi_section *s, Dwarf_Off off, uint8_t *ret_enc)
{
	Dwarf_CFI_Entry e;
	Dwarf_Off next;

	if (dwarf_next_cfi(b->ident, s->data, s->eh, off, &next, &e) != 0 || !dwarf_cfi_cie_p(&e))
		return -EBADMSG;
	return fde_encoding(&e.cie, ret_enc);
}

/* Every FDE of @s into b->fdes.  Each entry moves the offset forward: bounded by the size. */
static int list_fdes(struct builder *b, const struct cfi_section *s)
{
	Dwarf_Off off = 0, next, cie_off = (Dwarf_Off)-1;
	uint8_t enc = 0;
	int r;

	while (off < s->data->d_size) {
		Dwarf_CFI_Entry e;
		uint64_t lo, hi;

		next = off;
		r = dwarf_next_cfi(b->ident, s->data, s->eh, off, &next, &e);
		if (r == 1)
			break;
		if (next <= off || next == (Dwarf_Off)-1)
			return r < 0 ? -EBADMSG : 0;
		off = next;
		if (r < 0 || dwarf_cfi_cie_p(&e))
			continue;
		if (e.fde.CIE_pointer != cie_off) {
			if (cie_of(b, s, e.fde.CIE_pointer, &enc) < 0)
				continue;
			cie_off = e.fde.CIE_pointer;
		}
		r = fde_range(s, &e.fde, enc, &lo, &hi);
		if (r < 0)
			return r;
		if (r == 0 && (r = add_fde(b, lo, hi, s->eh ? SRC_EH : SRC_DEBUG)) < 0)
			return r;
	}
	return 0;
}

static int by_lo(const void *a, const void *b)
{
	const struct fde_range *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return (int)x->src - (int)y->src;
}

/* Sorted, without overlaps: an FDE starting inside the one before is dropped. */
static void sort_fdes(struct builder *b)
{
	size_t n = 0;

	if (b->nr_fdes)
		qsort(b->fdes, b->nr_fdes, sizeof(*b->fdes), by_lo);
	for (size_t i = 0; i < b->nr_fdes; i++) {
		if (n && b->fdes[i].lo < b->fdes[n - 1].hi)
			continue;
		b->fdes[n++] = b->fdes[i];
	}
	b->nr_fdes = n;
}

/* --- rules to rows ------------------------------------------------------------- */

enum saved { SAVED_SAME, SAVED_UNDEFINED, SAVED_AT, SAVED_OTHER };

/* Where the caller's @regno is: unchanged, lost, at CFA + *off, or something else. */
static enum saved saved_rule(Dwarf_Frame *f, int regno, int64_t *off)
{
	Dwarf_Op mem[3], *ops;
	size_t n;

	if (dwarf_frame_register(f, regno, mem, &ops, &n) < 0)
		return SAVED_OTHER;
	if (n == 0)
		return ops ? SAVED_UNDEFINED : SAVED_SAME;
	if (ops[0].atom != DW_OP_call_frame_cfa)
		return SAVED_OTHER;
	*off = 0;
	if (n == 1)
		return SAVED_AT;
	if (n == 2 && ops[1].atom == DW_OP_plus_uconst) {
		*off = (int64_t)ops[1].number;
		return SAVED_AT;
	}
	return SAVED_OTHER;
}

/* rsp's rule in the caller must be "the CFA" (val_offset(0)), as the psABI has it. */
static bool sp_is_cfa(Dwarf_Frame *f)
{
	Dwarf_Op mem[3], *ops;
	size_t n;

	if (dwarf_frame_register(f, DW_RSP, mem, &ops, &n) < 0 || n != 2)
		return false;
	return ops[0].atom == DW_OP_call_frame_cfa && ops[1].atom == DW_OP_stack_value;
}

/* The expression of a .plt: breg7 N; breg16 0; lit15; and; litK; ge; lit3; shl; plus. */
static bool plt_rule(const Dwarf_Op *ops, size_t n, struct unwtab_row *r)
{
	static const uint8_t shape[] = { DW_OP_breg7, DW_OP_breg16, DW_OP_lit15, DW_OP_and, 0,
					 DW_OP_ge, DW_OP_lit3, DW_OP_shl, DW_OP_plus };

	if (n != sizeof(shape))
		return false;
	for (size_t i = 0; i < n; i++)
		if (i != 4 && ops[i].atom != shape[i])
			return false;
	if (ops[1].number != 0 || ops[4].atom < DW_OP_lit0 || ops[4].atom > DW_OP_lit15 ||
	    (int64_t)ops[0].number < 0 || (int64_t)ops[0].number > INT32_MAX)
		return false;
	r->cfa_off = (int32_t)ops[0].number;
	r->fp_off = (int16_t)(ops[4].atom - DW_OP_lit0);
	return true;
}

static uint8_t cfa_rule(Dwarf_Frame *f, struct unwtab_row *r)
{
	Dwarf_Op *ops;
	size_t n;
	uint64_t reg;
	int64_t off;

	if (dwarf_frame_cfa(f, &ops, &n) < 0 || !n)
		return UNWTAB_FALLBACK;
	if (plt_rule(ops, n, r))
		return UNWTAB_PLT;
	if (n != 1)
		return UNWTAB_FALLBACK;
	if (ops[0].atom == DW_OP_bregx) {
		reg = ops[0].number;
		off = (int64_t)ops[0].number2;
	} else if (ops[0].atom == DW_OP_breg6 || ops[0].atom == DW_OP_breg7) {
		reg = ops[0].atom - DW_OP_breg0;
		off = (int64_t)ops[0].number;
	} else {
		return UNWTAB_FALLBACK;
	}
	if ((reg != DW_RSP && reg != DW_RBP) || off < INT32_MIN || off > INT32_MAX)
		return UNWTAB_FALLBACK;
	r->cfa_off = (int32_t)off;
	return reg == DW_RSP ? UNWTAB_CFA_SP : UNWTAB_CFA_BP;
}

/* @f's rules as a row's (r->start set by the caller). */
static void translate(Dwarf_Frame *f, int ra_reg, bool signal, struct unwtab_row *r)
{
	uint8_t kind = cfa_rule(f, r);
	int64_t off;

	if (kind == UNWTAB_FALLBACK || signal || ra_reg != DW_RA || !sp_is_cfa(f))
		goto fallback;
	switch (saved_rule(f, DW_RA, &off)) {
	case SAVED_UNDEFINED:
		kind = UNWTAB_OUTERMOST;
		break;
	case SAVED_AT:
		if (off < INT8_MIN || off > INT8_MAX)
			goto fallback;
		r->ra_off = (int8_t)off;
		break;
	default:
		goto fallback;
	}
	if (kind == UNWTAB_PLT) {
		if (saved_rule(f, DW_RBP, &off) != SAVED_SAME)
			goto fallback;
		r->kind = kind;
		return;
	}
	switch (saved_rule(f, DW_RBP, &off)) {
	case SAVED_SAME:
		r->fp_off = 0;
		break;
	case SAVED_UNDEFINED:
		r->fp_off = 0;
		kind |= UNWTAB_FP_UNDEFINED;
		break;
	case SAVED_AT:
		if (off == 0 || off < INT16_MIN || off > INT16_MAX)
			goto fallback;
		r->fp_off = (int16_t)off;
		break;
	default:
		goto fallback;
	}
	r->kind = kind;
	return;
fallback:
	*r = (struct unwtab_row){ .start = r->start, .kind = UNWTAB_FALLBACK };
}

static bool same_rule(const struct unwtab_row *a, const struct unwtab_row *b)
{
	return a->kind == b->kind && a->cfa_off == b->cfa_off && a->fp_off == b->fp_off && a->ra_off == b->ra_off;
}

static int push_row(struct builder *b, const struct unwtab_row *row)
{
	struct unwtab *t = b->t;

	if (t->nr_rows && t->rows[t->nr_rows - 1].start == row->start)
		t->nr_rows--; /* an empty row: the new one replaces it */
	if (t->nr_rows && same_rule(&t->rows[t->nr_rows - 1], row))
		return 0;
	if (t->nr_rows == b->cap) {
		size_t n = b->cap ? b->cap * 2 : 4096;
		struct unwtab_row *rows;

		if (b->cap >= b->max_rows)
			return -E2BIG;
		if (n > b->max_rows)
			n = b->max_rows;
		rows = reallocarray(t->rows, n, sizeof(*rows));
		if (!rows)
			return -ENOMEM;
		t->rows = rows;
		b->cap = n;
	}
	t->rows[t->nr_rows++] = *row;
	if ((row->kind & UNWTAB_KIND_MASK) == UNWTAB_FALLBACK)
		t->nr_fallback++;
	return 0;
}

/* The rows of [lo, hi), one dwarf_cfi_addrframe() per row; each moves the pc forward. */
static int fde_rows(struct builder *b, Dwarf_CFI *cfi, uint64_t lo, uint64_t hi)
{
	for (uint64_t pc = lo; pc < hi;) {
		struct unwtab_row row = { .start = pc, .kind = UNWTAB_FALLBACK };
		Dwarf_Frame *f;
		Dwarf_Addr s, e;
		bool signal;
		int ra, r;

		if (!b->steps--)
			return -E2BIG;
		if (dwarf_cfi_addrframe(cfi, pc, &f) < 0)
			return push_row(b, &row); /* CFI libdw cannot read: not ours to guess */
		ra = dwarf_frame_info(f, &s, &e, &signal);
		if (ra < 0 || s > pc || e <= pc) {
			free(f);
			return push_row(b, &row);
		}
		translate(f, ra, signal, &row);
		free(f);
		if ((r = push_row(b, &row)) < 0)
			return r;
		pc = e < hi ? e : hi;
	}
	return 0;
}

static int emit_rows(struct builder *b, Dwarf_CFI *eh, Dwarf_CFI *debug)
{
	for (size_t i = 0; i < b->nr_fdes; i++) {
		const struct fde_range *f = &b->fdes[i];
		struct unwtab_row gap = { .start = f->hi, .kind = UNWTAB_GAP };
		int r;

		r = fde_rows(b, f->src == SRC_EH ? eh : debug, f->lo, f->hi);
		if (r < 0)
			return r;
		if (i + 1 == b->nr_fdes || b->fdes[i + 1].lo > f->hi)
			if ((r = push_row(b, &gap)) < 0)
				return r;
	}
	b->t->nr_fdes = b->nr_fdes;
	return 0;
}

/* --- the ELF file ---------------------------------------------------------------- */

static int check_ehdr(Elf *elf)
{
	GElf_Ehdr eh;

	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh))
		return -EINVAL;
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
	    eh.e_machine != EM_X86_64 || (eh.e_type != ET_EXEC && eh.e_type != ET_DYN))
		return -EINVAL;
	return 0;
}

/* The GNU build id of @elf (from its notes, segments or sections). */
static int read_build_id(Elf *elf, uint8_t id[PERFREC_BUILD_ID_MAX])
{
	Elf_Scn *scn = NULL;
	size_t nph;

	if (elf_getphdrnum(elf, &nph) == 0)
		for (size_t i = 0; i < nph && i < 64; i++) {
			GElf_Phdr ph;
			Elf_Data *d;
			int n;

			if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_NOTE)
				continue;
			d = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz, ELF_T_BYTE);
			if (d && (n = perfrec_buildid__parse_notes(d->d_buf, d->d_size, id)) > 0)
				return n;
		}
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		int n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		d = elf_rawdata(scn, NULL);
		if (d && (n = perfrec_buildid__parse_notes(d->d_buf, d->d_size, id)) > 0)
			return n;
	}
	return -ENOENT;
}

static int read_loads(Elf *elf, struct unwtab *t)
{
	size_t nph;

	if (elf_getphdrnum(elf, &nph) < 0)
		return -EINVAL;
	for (size_t i = 0; i < nph && i < 4096; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		if (t->nr_loads == UNWTAB_MAX_LOADS)
			return -EINVAL;
		t->loads[t->nr_loads++] = (struct unwtab_load){
			.offset = ph.p_offset, .vaddr = ph.p_vaddr, .filesz = ph.p_filesz,
		};
	}
	return 0;
}

/* Section @name of @elf with its bytes, or 0 when absent/empty; -EFBIG past the bound. */
static int find_section(Elf *elf, const char *name, struct cfi_section *ret)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx) < 0)
		return 0;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *n;

		if (!gelf_getshdr(scn, &sh) || !(n = elf_strptr(elf, shstrndx, sh.sh_name)) || strcmp(n, name))
			continue;
		if (sh.sh_type == SHT_NOBITS || !sh.sh_size)
			return 0;
		if (sh.sh_size > UNWTAB_MAX_SECTION)
			return -EFBIG;
		if (sh.sh_flags & SHF_COMPRESSED) {
			GElf_Chdr ch;

			if (!gelf_getchdr(scn, &ch) || ch.ch_size > UNWTAB_MAX_SECTION)
				return -EFBIG;
			if (elf_compress(scn, 0, 0) < 0)
				return -EBADMSG;
		}
		ret->data = elf_getdata(scn, NULL);
		ret->addr = sh.sh_addr;
		return ret->data && ret->data->d_buf && ret->data->d_size ? 1 : 0;
	}
	return 0;
}

struct sources {
	Elf *elf, *debug_elf;
	Dwarf *dwarf;
	Dwarf_CFI *eh, *debug;
	struct cfi_section eh_sec, debug_sec;
};

/* The .debug_frame of @elf through libdw (which also inflates a compressed one). */
static int open_debug_frame(struct sources *src, Elf *elf)
{
	int r;

	src->dwarf = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
	if (!src->dwarf)
		return 0;
	r = find_section(elf, ".debug_frame", &src->debug_sec);
	if (r <= 0)
		return r;
	src->debug = dwarf_getcfi(src->dwarf);
	return src->debug ? 1 : 0;
}

static int open_sources(struct sources *src, int debug_fd, const struct unwtab *t)
{
	Elf *delf = src->elf;
	int r;

	r = find_section(src->elf, ".eh_frame", &src->eh_sec);
	if (r < 0)
		return r;
	if (r > 0) {
		src->eh_sec.eh = true;
		src->eh = dwarf_getcfi_elf(src->elf);
		if (!src->eh)
			return -EBADMSG;
	}
	if (debug_fd >= 0) {
		uint8_t id[PERFREC_BUILD_ID_MAX];

		src->debug_elf = elf_begin(debug_fd, ELF_C_READ_MMAP, NULL);
		if (!src->debug_elf || check_ehdr(src->debug_elf) < 0)
			return -EINVAL;
		r = read_build_id(src->debug_elf, id);
		if (r != t->build_id_len || memcmp(id, t->build_id, (size_t)r))
			return -EINVAL;
		delf = src->debug_elf;
	}
	r = open_debug_frame(src, delf);
	if (r < 0)
		return r;
	return src->eh || src->debug ? 0 : -ENODATA;
}

static void close_sources(struct sources *src)
{
	/* The CFI of dwarf_getcfi_elf() is the caller's to end; that of dwarf_getcfi() is the Dwarf's. */
	if (src->eh)
		dwarf_cfi_end(src->eh);
	if (src->dwarf)
		dwarf_end(src->dwarf);
	if (src->debug_elf)
		elf_end(src->debug_elf);
	if (src->elf)
		elf_end(src->elf);
}

static int build(struct builder *b, struct sources *src, const struct unwtab_build_opts *o)
{
	struct unwtab *t = b->t;
	int r;

	if (check_ehdr(src->elf) < 0)
		return -EINVAL;
	b->ident = (const unsigned char *)elf_getident(src->elf, NULL);
	r = read_build_id(src->elf, t->build_id);
	if (r == -ENOENT && o->build_id_optional)
		r = 0;
	if (r < 0)
		return r;
	t->build_id_len = (uint8_t)r;
	if ((r = read_loads(src->elf, t)) < 0 || (r = open_sources(src, o->debug_fd, t)) < 0)
		return r;
	if (src->eh && (r = list_fdes(b, &src->eh_sec)) < 0)
		return r;
	if (src->debug && (r = list_fdes(b, &src->debug_sec)) < 0)
		return r;
	sort_fdes(b);
	return emit_rows(b, src->eh, src->debug);
}

int unwtab_build_fd(int fd, const struct unwtab_build_opts *opts, struct unwtab **ret_table)
{
	struct unwtab_build_opts o = { .sz = sizeof(o), .debug_fd = -1 };
	struct sources src = {0};
	struct builder b = {0};
	int r;

	if (fd < 0 || !ret_table || (opts && opts->sz < sizeof(o)))
		return -EINVAL;
	if (opts)
		o = *opts;
	b.max_rows = o.max_rows ? o.max_rows : UNWTAB_MAX_ROWS_DEFAULT;
	b.steps = 4 * (uint64_t)b.max_rows;
	b.t = calloc(1, sizeof(*b.t));
	if (!b.t)
		return -ENOMEM;
	elf_version(EV_CURRENT);
	src.elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	r = src.elf ? build(&b, &src, &o) : -EINVAL;
	close_sources(&src);
	free(b.fdes);
	if (!r)
		r = unwtab_index(b.t);
	if (r < 0) {
		unwtab_free(b.t);
		return r;
	}
	*ret_table = b.t;
	return 0;
}

void unwtab_free(struct unwtab *t)
{
	if (!t)
		return;
	free(t->first);
	free(t->rows);
	free(t);
}

/*
 * The finest granules (from 64 bytes) for an index of at most a quarter
 * as many entries as rows, 1 byte a row (a hostile span stays small):
 * compiled code has a row every 50 bytes or so, so a look-up searches a
 * handful of rows in one or two cache lines.  Granules of 4 KiB held some
 * 80 rows of cc1: seven probes, most of them cache misses, in tables of
 * megabytes.
 */
int unwtab_index(struct unwtab *t)
{
	uint64_t span;
	size_t r = 0;

	free(t->first);
	t->first = NULL;
	if (t->nr_rows < 2 || t->nr_rows > UINT32_MAX)
		return 0;
	t->index_base = t->rows[0].start;
	span = t->rows[t->nr_rows - 1].start - t->index_base;
	for (t->index_shift = 6; t->index_shift < 63 && (span >> t->index_shift) > t->nr_rows / 4 + 1024;)
		t->index_shift++;
	t->index_len = (size_t)(span >> t->index_shift) + 1;
	t->first = calloc(t->index_len, sizeof(*t->first));
	if (!t->first)
		return -ENOMEM;
	for (size_t k = 0; k < t->index_len; k++) {
		uint64_t a = t->index_base + ((uint64_t)k << t->index_shift);

		while (r + 1 < t->nr_rows && t->rows[r + 1].start <= a)
			r++;
		t->first[k] = (uint32_t)r;
	}
	return 0;
}

const struct unwtab_row *unwtab_lookup(const struct unwtab *t, uint64_t addr)
{
	size_t lo = 0, hi = t->nr_rows;

	if (t->first && addr >= t->index_base) {
		uint64_t k = (addr - t->index_base) >> t->index_shift;

		if (k + 1 < t->index_len) {
			lo = t->first[k];
			hi = (size_t)t->first[k + 1] + 1;
		} else {
			lo = t->first[t->index_len - 1];
		}
	}
	/* The first row past @addr in [lo, hi); the one before it holds @addr (rows[lo] does not pass it). */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->rows[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &t->rows[lo - 1] : NULL;
}

int unwtab_bias(const struct unwtab *t, uint64_t map_start, uint64_t pgoff, uint64_t *ret_bias)
{
	for (uint32_t i = 0; i < t->nr_loads && i < UNWTAB_MAX_LOADS; i++) {
		const struct unwtab_load *l = &t->loads[i];
		uint64_t page_off = l->offset & ~(uint64_t)4095;

		/* The mapping starts at the segment's page (or inside it): vaddr - offset is constant. */
		if (pgoff >= page_off && pgoff < l->offset + l->filesz) {
			*ret_bias = map_start - pgoff + l->offset - l->vaddr;
			return 0;
		}
	}
	return -ENOENT;
}
