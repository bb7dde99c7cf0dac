// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unwind tables (internal/unwtab.h) on real binaries of this machine: their
 * rows must say what libdw's own dwarf_cfi_addrframe() says at thousands
 * of addresses; a table must come back from disk the same, and a damaged,
 * cut, foreign or odd file must be refused; hostile CFI and non-ELF input
 * must be refused or survived.  Then the unwinder: on this process's own
 * stack, on synthetic stacks (frame pointers in code without a table, a
 * fallback row, a bad chain), and on a real recording of tests/e2e/nofp
 * (perf record --call-graph dwarf), frame by frame against libdwfl's
 * unwinding of the same samples (lib/unwind.c): at least 98% the same.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <dwarf.h>
#include <elfutils/libdw.h>

#include <criterion/criterion.h>

#include <perfrec/event.h>
#include <perfrec/evlist.h>
#include <perfrec/pdreader.h>
#include <perfrec/unwind.h>

#include "unwind-capture.h"
#include "unwind-internal.h"
#include "unwtab.h"
#include "vdso.h"

static char tmpdir[] = "/tmp/test-unwtab.XXXXXX";
static int dirfd_ = -1;

static void make_tmpdir(void)
{
	strcpy(tmpdir, "/tmp/test-unwtab.XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
	dirfd_ = open(tmpdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(dirfd_, 0);
}

static void rm_tmpdir(void)
{
	char cmd[PATH_MAX + 16];

	close(dirfd_);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	cr_assert_eq(system(cmd), 0);
}

static struct unwtab *build_path(const char *path, int *ret)
{
	struct unwtab *t = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	*ret = unwtab_build_fd(fd, NULL, &t);
	close(fd);
	return t;
}

static struct unwtab *must_build(const char *path)
{
	int r;
	struct unwtab *t = build_path(path, &r);

	cr_assert_eq(r, 0, "building the table of %s: %s", path, strerror(-r));
	cr_assert_gt(t->nr_rows, 0);
	return t;
}

/* --- rows against libdw ---------------------------------------------------------- */

/* What libdw says at one address, read here independently of internal/unwtab.c. */
struct expect {
	bool covered, simple;
	int cfa_reg;
	int64_t cfa_off, ra_off, fp_off;
	bool ra_undef, fp_undef, plt;
};

static bool at_cfa(Dwarf_Frame *f, int reg, int64_t *off, bool *undef, bool *same)
{
	Dwarf_Op mem[3], *ops;
	size_t n;

	*undef = *same = false;
	if (dwarf_frame_register(f, reg, mem, &ops, &n) < 0)
		return false;
	if (n == 0) {
		*undef = ops != NULL;
		*same = ops == NULL;
		return true;
	}
	if (ops[0].atom != DW_OP_call_frame_cfa || n > 2 || (n == 2 && ops[1].atom != DW_OP_plus_uconst))
		return false;
	*off = n == 2 ? (int64_t)ops[1].number : 0;
	return true;
}

static struct expect libdw_says(Dwarf_CFI *cfi, uint64_t pc)
{
	struct expect e = {0};
	Dwarf_Frame *f;
	Dwarf_Op *ops;
	size_t n;
	bool sig, same;

	if (dwarf_cfi_addrframe(cfi, pc, &f) < 0)
		return e;
	e.covered = true;
	if (dwarf_frame_info(f, NULL, NULL, &sig) != 16 || sig || dwarf_frame_cfa(f, &ops, &n) < 0)
		goto out;
	if (n == 9 && ops[0].atom == DW_OP_breg7 && ops[1].atom == DW_OP_breg16) {
		e.plt = true;
	} else if (n == 1 && ops[0].atom == DW_OP_bregx && (ops[0].number == 6 || ops[0].number == 7)) {
		e.cfa_reg = (int)ops[0].number;
		e.cfa_off = (int64_t)ops[0].number2;
	} else {
		goto out;
	}
	if (!at_cfa(f, 16, &e.ra_off, &e.ra_undef, &same) || same)
		goto out;
	if (!at_cfa(f, 6, &e.fp_off, &e.fp_undef, &same) || (!same && !e.fp_undef && !e.fp_off))
		goto out;
	e.simple = true;
out:
	free(f);
	return e;
}

static void check_row(const char *path, uint64_t pc, const struct expect *e, const struct unwtab_row *row)
{
	unsigned kind = row ? row->kind & UNWTAB_KIND_MASK : UNWTAB_GAP;

	if (!e->covered) {
		cr_assert(kind == UNWTAB_GAP || kind == UNWTAB_FALLBACK, "%s %#" PRIx64 ": no CFI but kind %u",
			  path, pc, kind);
		return;
	}
	cr_assert(kind != UNWTAB_GAP, "%s %#" PRIx64 ": CFI but a gap row", path, pc);
	if (!e->simple) {
		cr_assert_eq(kind, UNWTAB_FALLBACK, "%s %#" PRIx64 ": a rule the table cannot say, kind %u",
			     path, pc, kind);
		return;
	}
	if (e->ra_undef) {
		cr_assert_eq(kind, UNWTAB_OUTERMOST, "%s %#" PRIx64, path, pc);
		return;
	}
	if (e->plt) {
		cr_assert_eq(kind, UNWTAB_PLT, "%s %#" PRIx64, path, pc);
		return;
	}
	cr_assert_eq(kind, e->cfa_reg == 7 ? UNWTAB_CFA_SP : UNWTAB_CFA_BP, "%s %#" PRIx64 ": kind %u",
		     path, pc, kind);
	cr_assert_eq(row->cfa_off, e->cfa_off, "%s %#" PRIx64 ": CFA offset", path, pc);
	cr_assert_eq(row->ra_off, e->ra_off, "%s %#" PRIx64 ": return address", path, pc);
	cr_assert_eq(!!(row->kind & UNWTAB_FP_UNDEFINED), e->fp_undef, "%s %#" PRIx64, path, pc);
	cr_assert_eq(row->fp_off, e->fp_undef ? 0 : e->fp_off, "%s %#" PRIx64 ": saved rbp", path, pc);
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/*
 * @n random addresses of @path's executable segments, plus every row's
 * first and last byte: the table's row must be libdw's rule there.
 */
static void compare_with_libdw(const char *path, unsigned n)
{
	struct unwtab *t = must_build(path);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	Dwarf_CFI *cfi = dwarf_getcfi_elf(elf);
	uint64_t seed = 0x9e3779b97f4a7c15ull, checked = 0;

	cr_assert_not_null(cfi, "%s: %s", path, dwarf_errmsg(-1));
	cr_assert_gt(t->nr_loads, 0);
	for (unsigned i = 0; i < n; i++) {
		const struct unwtab_load *l = &t->loads[xorshift(&seed) % t->nr_loads];
		uint64_t pc = l->vaddr + xorshift(&seed) % l->filesz;
		struct expect e = libdw_says(cfi, pc);

		check_row(path, pc, &e, unwtab_lookup(t, pc));
		checked++;
	}
	for (size_t i = 0; i + 1 < t->nr_rows; i++) {
		uint64_t ends[2] = { t->rows[i].start, t->rows[i + 1].start - 1 };

		for (int k = 0; k < 2; k++) {
			struct expect e = libdw_says(cfi, ends[k]);

			check_row(path, ends[k], &e, unwtab_lookup(t, ends[k]));
			checked++;
		}
	}
	cr_log_info("%s: %zu rows, %zu FDEs, %zu fallback rows, %" PRIu64 " addresses checked", path,
		    t->nr_rows, t->nr_fdes, t->nr_fallback, checked);
	dwarf_cfi_end(cfi);
	elf_end(elf);
	close(fd);
	unwtab_free(t);
}

Test(unwtab, rows_are_libdws_rules_in_a_program_without_frame_pointers)
{
	compare_with_libdw("tests/e2e/nofp", 20000);
}

Test(unwtab, rows_are_libdws_rules_in_libc_python_xz_node_and_cc1, .timeout = 300)
{
	const char *paths[] = { "/lib/x86_64-linux-gnu/libc.so.6", "/usr/bin/python3.11", "/usr/bin/xz",
				"/usr/bin/node", "/usr/lib/gcc/x86_64-linux-gnu/12/cc1" };
	unsigned done = 0;

	for (size_t i = 0; i < sizeof(paths) / sizeof(*paths); i++) {
		if (access(paths[i], R_OK) < 0) {
			cr_log_warn("%s: not installed here", paths[i]);
			continue;
		}
		compare_with_libdw(paths[i], 20000);
		done++;
	}
	cr_assert_geq(done, 1, "libc at least is on every Debian machine");
}

/* The PLT's expression becomes a row of its own kind, not a fallback. */
Test(unwtab, plt_entries_get_their_rule)
{
	struct unwtab *t = must_build("/lib/x86_64-linux-gnu/libc.so.6");
	size_t plt = 0;

	for (size_t i = 0; i < t->nr_rows; i++)
		if ((t->rows[i].kind & UNWTAB_KIND_MASK) == UNWTAB_PLT) {
			plt++;
			cr_assert_eq(t->rows[i].cfa_off, 8);
			cr_assert(t->rows[i].fp_off == 10 || t->rows[i].fp_off == 11);
		}
	cr_assert_geq(plt, 1, "libc's .plt has the expression rule");
	unwtab_free(t);
}

/* Code with CFI only in .debug_frame (as some toolchains and -fno-asynchronous-unwind-tables leave it). */
Test(unwtab, debug_frame_is_read_where_there_is_no_eh_frame, .init = make_tmpdir, .fini = rm_tmpdir)
{
	char src[PATH_MAX], bin[PATH_MAX], cmd[3 * PATH_MAX];
	struct unwtab *t;
	FILE *f;
	size_t cfa = 0;

	snprintf(src, sizeof(src), "%s/dbg.c", tmpdir);
	snprintf(bin, sizeof(bin), "%s/dbg", tmpdir);
	f = fopen(src, "w");
	cr_assert_not_null(f);
	fputs("int leaf(int x); int leaf(int x) { volatile int a[8]; a[x & 7] = x; return a[1]; }\n"
	      "int main(int c, char **v) { (void)v; return leaf(c); }\n", f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "cc -O1 -g -fno-asynchronous-unwind-tables -fno-unwind-tables "
		 "-Wl,--build-id -o '%s' '%s'", bin, src);
	cr_assert_eq(system(cmd), 0, "cc failed: %s", cmd);
	t = must_build(bin);
	for (size_t i = 0; i < t->nr_rows; i++)
		if ((t->rows[i].kind & UNWTAB_KIND_MASK) == UNWTAB_CFA_SP && t->rows[i].cfa_off > 8)
			cfa++;
	/* leaf() and main() moved the stack pointer: rows only .debug_frame can have given. */
	cr_assert_geq(cfa, 1, "no row from .debug_frame (%zu rows, %zu FDEs)", t->nr_rows, t->nr_fdes);
	unwtab_free(t);
}

/*
 * A program without a build id (static-pie from a memfd, --build-id=none):
 * refused by default, a table (never saved) where the caller knows the
 * file by device and inode.  It had none, and its code was walked by
 * frame pointers where libdwfl read its CFI.
 */
Test(unwtab, a_program_without_a_build_id_gets_a_table_when_asked, .init = make_tmpdir, .fini = rm_tmpdir)
{
	struct unwtab_build_opts o = { .sz = sizeof(o), .debug_fd = -1, .build_id_optional = true };
	char src[PATH_MAX], bin[PATH_MAX], cmd[3 * PATH_MAX];
	struct unwtab *t = NULL;
	FILE *f;
	int fd;

	snprintf(src, sizeof(src), "%s/noid.c", tmpdir);
	snprintf(bin, sizeof(bin), "%s/noid", tmpdir);
	f = fopen(src, "w");
	cr_assert_not_null(f);
	fputs("int leaf(int x); int leaf(int x) { volatile int a[8]; a[x & 7] = x; return a[1]; }\n"
	      "int main(int c, char **v) { (void)v; return leaf(c); }\n", f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "cc -O1 -Wl,--build-id=none -o '%s' '%s'", bin, src);
	cr_assert_eq(system(cmd), 0, "cc failed: %s", cmd);
	fd = open(bin, O_RDONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	cr_assert_eq(unwtab_build_fd(fd, NULL, &t), -ENOENT, "a table without a build id, unasked");
	cr_assert_eq(unwtab_build_fd(fd, &o, &t), 0);
	close(fd);
	cr_assert_eq(t->build_id_len, 0);
	cr_assert_geq(t->nr_fdes, 2, "%zu FDEs", t->nr_fdes);
	cr_assert_eq(unwtab_save(t, dirfd_), -EINVAL, "a table without a build id has no name to be saved by");
	unwtab_free(t);
}

/* The .debug_frame of a separate debug file (objcopy --only-keep-debug) serves a stripped program. */
Test(unwtab, debug_frame_of_a_separate_debug_file, .init = make_tmpdir, .fini = rm_tmpdir)
{
	char src[PATH_MAX], bin[PATH_MAX], dbg[PATH_MAX], cmd[6 * PATH_MAX];
	struct unwtab_build_opts o = { .sz = sizeof(o) };
	struct unwtab *t = NULL;
	size_t fdes;
	int fd;
	FILE *f;

	snprintf(src, sizeof(src), "%s/sep.c", tmpdir);
	snprintf(bin, sizeof(bin), "%s/sep", tmpdir);
	snprintf(dbg, sizeof(dbg), "%s/sep.debug", tmpdir);
	f = fopen(src, "w");
	cr_assert_not_null(f);
	fputs("int leaf(int x); int leaf(int x) { volatile int a[8]; a[x & 7] = x; return a[1]; }\n"
	      "int main(int c, char **v) { (void)v; return leaf(c); }\n", f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "cc -O1 -g -fno-asynchronous-unwind-tables -fno-unwind-tables -Wl,--build-id "
		 "-o '%s' '%s' && objcopy --only-keep-debug '%s' '%s' && strip -g '%s'", bin, src, bin, dbg, bin);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	fd = open(bin, O_RDONLY | O_CLOEXEC);
	/* Stripped, only the C runtime's objects (_start) keep .eh_frame. */
	cr_assert_eq(unwtab_build_fd(fd, NULL, &t), 0);
	fdes = t->nr_fdes;
	unwtab_free(t);
	o.debug_fd = open(dbg, O_RDONLY | O_CLOEXEC);
	cr_assert_eq(unwtab_build_fd(fd, &o, &t), 0);
	cr_assert_geq(t->nr_fdes, fdes + 2, "leaf() and main() from the debug file: %zu FDEs, %zu without",
		      t->nr_fdes, fdes);
	close(o.debug_fd);
	close(fd);
	unwtab_free(t);
}

/* --- on disk -------------------------------------------------------------------- */

static void path_in(char *buf, size_t len, const struct unwtab *t)
{
	char name[UNWTAB_NAME_MAX];

	unwtab_file_name(t->build_id, t->build_id_len, name);
	snprintf(buf, len, "%s/%s", tmpdir, name);
}

Test(unwtab_file, a_saved_table_loads_the_same, .init = make_tmpdir, .fini = rm_tmpdir)
{
	struct unwtab *t = must_build("/lib/x86_64-linux-gnu/libc.so.6"), *l;
	char path[PATH_MAX];
	struct stat st;

	cr_assert_eq(unwtab_save(t, dirfd_), 0);
	path_in(path, sizeof(path), t);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_eq(st.st_mode & 0777 & ~0600, 0, "mode %o", st.st_mode & 0777);
	cr_assert_eq(unwtab_save(t, dirfd_), -EEXIST, "a table in place is not replaced");
	cr_assert_eq(unwtab_load(dirfd_, t->build_id, t->build_id_len, &l), 0);
	cr_assert_eq(l->nr_rows, t->nr_rows);
	cr_assert_eq(memcmp(l->rows, t->rows, t->nr_rows * sizeof(*t->rows)), 0);
	cr_assert_eq(l->nr_loads, t->nr_loads);
	cr_assert_eq(memcmp(l->loads, t->loads, sizeof(t->loads)), 0);
	cr_assert_eq(l->build_id_len, t->build_id_len);
	unwtab_free(l);
	unwtab_free(t);
}

static void write_file(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, buf, len), (ssize_t)len);
	close(fd);
}

static void *read_whole(const char *path, size_t *len)
{
	struct stat st;
	void *buf;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	cr_assert_geq(fd, 0);
	cr_assert_eq(fstat(fd, &st), 0);
	buf = malloc((size_t)st.st_size);
	cr_assert_eq(read(fd, buf, (size_t)st.st_size), st.st_size);
	close(fd);
	*len = (size_t)st.st_size;
	return buf;
}

Test(unwtab_file, damaged_cut_or_foreign_tables_are_refused, .init = make_tmpdir, .fini = rm_tmpdir)
{
	struct unwtab *t = must_build("tests/e2e/nofp"), *l = NULL;
	char path[PATH_MAX];
	uint8_t other[PERFREC_BUILD_ID_MAX];
	size_t len;
	uint8_t *good, *bad;

	cr_assert_eq(unwtab_save(t, dirfd_), 0);
	path_in(path, sizeof(path), t);
	good = read_whole(path, &len);
	bad = malloc(len);
	/* Every byte changed, one at a time: header, build id, counts, rows. */
	for (size_t i = 0; i < len; i++) {
		memcpy(bad, good, len);
		bad[i] ^= 0x41;
		write_file(path, bad, len);
		cr_assert_eq(unwtab_load(dirfd_, t->build_id, t->build_id_len, &l), -EBADMSG,
			     "byte %zu of %zu changed", i, len);
	}
	/* Cut at every length, and one byte too many. */
	for (size_t n = 0; n < len; n += n < 300 ? 1 : 7) {
		write_file(path, good, n);
		cr_assert_eq(unwtab_load(dirfd_, t->build_id, t->build_id_len, &l), -EBADMSG, "cut at %zu", n);
	}
	memcpy(bad, good, len);
	write_file(path, good, len);
	{
		int fd = open(path, O_WRONLY | O_APPEND);

		cr_assert_eq(write(fd, "x", 1), 1);
		close(fd);
	}
	cr_assert_eq(unwtab_load(dirfd_, t->build_id, t->build_id_len, &l), -EBADMSG, "one byte too many");
	/* The right bytes under another build id's name: a table for a changed binary. */
	memcpy(other, t->build_id, sizeof(other));
	other[0] ^= 1;
	{
		char name[UNWTAB_NAME_MAX], opath[PATH_MAX];

		unwtab_file_name(other, t->build_id_len, name);
		snprintf(opath, sizeof(opath), "%s/%s", tmpdir, name);
		write_file(opath, good, len);
		cr_assert_eq(unwtab_load(dirfd_, other, t->build_id_len, &l), -EBADMSG);
	}
	cr_assert_eq(unwtab_load(dirfd_, t->build_id, t->build_id_len - 1, &l), -ENOENT);
	/* A symlink, a directory, a FIFO at the name: refused, never followed or waited on. */
	unlink(path);
	cr_assert_eq(symlink("/lib/x86_64-linux-gnu/libc.so.6", path), 0);
	cr_assert_eq(unwtab_load(dirfd_, t->build_id, t->build_id_len, &l), -EBADMSG);
	unlink(path);
	cr_assert_eq(mkfifo(path, 0600), 0);
	cr_assert_eq(unwtab_load(dirfd_, t->build_id, t->build_id_len, &l), -EBADMSG);
	unlink(path);
	cr_assert_eq(unwtab_load(dirfd_, t->build_id, t->build_id_len, &l), -ENOENT);
	write_file(path, good, len);
	cr_assert_eq(unwtab_load(dirfd_, t->build_id, t->build_id_len, &l), 0, "the good bytes load");
	unwtab_free(l);
	free(good);
	free(bad);
	unwtab_free(t);
}

/* --- hostile input to the builder ------------------------------------------------------ */

/* Offset and size of section @name in the ELF file at @path. */
static bool section_of(const char *path, const char *name, uint64_t *off, uint64_t *size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *elf;
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	bool found = false;

	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	cr_assert_not_null(elf);
	cr_assert_eq(elf_getshdrstrndx(elf, &shstrndx), 0);
	while (!found && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		gelf_getshdr(scn, &sh);
		if (!strcmp(elf_strptr(elf, shstrndx, sh.sh_name), name)) {
			*off = sh.sh_offset;
			*size = sh.sh_size;
			found = true;
		}
	}
	elf_end(elf);
	close(fd);
	return found;
}

static void copy_with(const char *path, const uint8_t *orig, size_t len, uint64_t at, const void *what,
		      size_t wlen)
{
	uint8_t *b = malloc(len);

	memcpy(b, orig, len);
	if (what)
		memcpy(b + at, what, wlen);
	write_file(path, b, len);
	free(b);
}

Test(unwtab_hostile, garbage_or_cut_eh_frame_is_refused_or_survived, .init = make_tmpdir, .fini = rm_tmpdir,
     .timeout = 120)
{
	uint64_t off, size, seed = 12345;
	size_t len;
	uint8_t *orig = read_whole("tests/e2e/nofp", &len), junk[64];
	char path[PATH_MAX];
	unsigned built = 0, refused = 0;

	snprintf(path, sizeof(path), "%s/hostile", tmpdir);
	cr_assert(section_of("tests/e2e/nofp", ".eh_frame", &off, &size));
	/* Random bytes over every part of .eh_frame, and lengths that run past its end. */
	for (unsigned i = 0; i < 600; i++) {
		struct unwtab *t = NULL;
		size_t n = 1 + xorshift(&seed) % sizeof(junk);
		uint64_t at = off + xorshift(&seed) % size;
		int fd, r;

		if (at + n > off + size)
			n = off + size - at;
		for (size_t k = 0; k < n; k++)
			junk[k] = (uint8_t)xorshift(&seed);
		if (i % 3 == 0) /* an entry's length word: huge, or zero */
			memset(junk, i % 2 ? 0xff : 0, n < 4 ? n : 4);
		copy_with(path, orig, len, at, junk, n);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		r = unwtab_build_fd(fd, NULL, &t);
		close(fd);
		if (r == 0) {
			cr_assert_leq(t->nr_rows, UNWTAB_MAX_ROWS_DEFAULT);
			for (size_t k = 1; k < t->nr_rows; k++)
				cr_assert_gt(t->rows[k].start, t->rows[k - 1].start, "rows stay sorted");
			built++;
		} else {
			cr_assert(r == -EBADMSG || r == -ENODATA || r == -E2BIG, "unexpected %d", r);
			refused++;
		}
		unwtab_free(t);
	}
	cr_log_info("hostile .eh_frame: %u built, %u refused", built, refused);
	free(orig);
}

Test(unwtab_hostile, not_an_x86_64_program_is_refused, .init = make_tmpdir, .fini = rm_tmpdir)
{
	size_t len;
	uint8_t *orig = read_whole("tests/e2e/nofp", &len);
	char path[PATH_MAX];
	uint16_t machine = EM_AARCH64, type = ET_REL;
	struct unwtab *t = NULL;
	int r;

	snprintf(path, sizeof(path), "%s/x", tmpdir);
	copy_with(path, orig, len, 18, &machine, 2);
	t = build_path(path, &r);
	cr_assert_eq(r, -EINVAL);
	copy_with(path, orig, len, 16, &type, 2);
	t = build_path(path, &r);
	cr_assert_eq(r, -EINVAL);
	copy_with(path, orig, 100, 0, NULL, 0); /* cut inside the headers */
	t = build_path(path, &r);
	cr_assert_lt(r, 0);
	write_file(path, "#!/bin/sh\n", 10);
	t = build_path(path, &r);
	cr_assert_eq(r, -EINVAL);
	cr_assert_null(t);
	/* An .eh_frame whose header claims 1 TiB: refused before anything is read. */
	{
		Elf64_Ehdr eh;
		uint64_t huge = 1ull << 40, off, size;
		size_t idx = 0;
		int fd = open("tests/e2e/nofp", O_RDONLY | O_CLOEXEC);
		Elf *elf;
		Elf_Scn *scn;

		cr_assert(section_of("tests/e2e/nofp", ".eh_frame", &off, &size));
		elf = elf_begin(fd, ELF_C_READ, NULL);
		for (scn = NULL; (scn = elf_nextscn(elf, scn));) {
			GElf_Shdr sh;

			gelf_getshdr(scn, &sh);
			if (sh.sh_offset == off && sh.sh_size == size)
				idx = elf_ndxscn(scn);
		}
		elf_end(elf);
		close(fd);
		cr_assert_gt(idx, 0);
		memcpy(&eh, orig, sizeof(eh));
		copy_with(path, orig, len, eh.e_shoff + idx * sizeof(Elf64_Shdr) + offsetof(Elf64_Shdr, sh_size),
			  &huge, 8);
		t = build_path(path, &r);
		cr_assert_eq(r, -EFBIG);
	}
	/* A bound on rows is kept. */
	{
		struct unwtab_build_opts o = { .sz = sizeof(o), .debug_fd = -1, .max_rows = 100 };
		int fd = open("/lib/x86_64-linux-gnu/libc.so.6", O_RDONLY | O_CLOEXEC);

		cr_assert_eq(unwtab_build_fd(fd, &o, &t), -E2BIG);
		close(fd);
	}
	/* A debug file of another build id is not used. */
	{
		struct unwtab_build_opts o = { .sz = sizeof(o) };
		int fd = open("tests/e2e/nofp", O_RDONLY | O_CLOEXEC);

		o.debug_fd = open("/lib/x86_64-linux-gnu/libc.so.6", O_RDONLY | O_CLOEXEC);
		cr_assert_eq(unwtab_build_fd(fd, &o, &t), -EINVAL);
		close(o.debug_fd);
		close(fd);
	}
	free(orig);
}

/* --- the unwinder ------------------------------------------------------------------------ */

/* A process's executable mappings with the table of each file, as a caller of unwtab_unwind() keeps them. */
struct tmap {
	uint64_t start, end, bias;
	const struct unwtab *tab;
};

struct space {
	struct tmap maps[512];
	size_t nr;
	struct { char path[PATH_MAX]; struct unwtab *tab; } files[128];
	size_t nr_files;
};

static const struct unwtab *table_of(struct space *s, const char *path)
{
	struct unwtab *t = NULL;
	int fd;

	for (size_t i = 0; i < s->nr_files; i++)
		if (!strcmp(s->files[i].path, path))
			return s->files[i].tab;
	cr_assert_lt(s->nr_files, 128);
	if (!strcmp(path, VDSO_MAP_NAME)) {
		uint8_t id[PERFREC_BUILD_ID_MAX];
		int n = vdso_build_id(id);

		fd = n > 0 ? vdso_memfd(id, (size_t)n) : -1;
	} else {
		fd = path[0] == '/' ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	}
	if (fd >= 0) {
		if (unwtab_build_fd(fd, NULL, &t) < 0)
			t = NULL;
		close(fd);
	}
	snprintf(s->files[s->nr_files].path, PATH_MAX, "%s", path);
	s->files[s->nr_files++].tab = t;
	return t;
}

static void add_map(struct space *s, uint64_t start, uint64_t end, uint64_t pgoff, const char *path)
{
	struct tmap *m;

	cr_assert_lt(s->nr, 512);
	m = &s->maps[s->nr++];
	*m = (struct tmap){ .start = start, .end = end, .tab = table_of(s, path) };
	if (m->tab && unwtab_bias(m->tab, start, pgoff, &m->bias) < 0)
		m->tab = NULL;
}

static void free_space(struct space *s)
{
	for (size_t i = 0; i < s->nr_files; i++)
		unwtab_free(s->files[i].tab);
	free(s);
}

static int find(void *ctx, uint64_t pc, const struct unwtab_row **row)
{
	struct space *s = ctx;

	/* The last map holding @pc: a later mmap over an earlier one replaces it. */
	for (size_t i = s->nr; i-- > 0;)
		if (pc >= s->maps[i].start && pc < s->maps[i].end)
			return s->maps[i].tab ? unwtab_find_row(s->maps[i].tab, s->maps[i].bias, pc, row) : 0;
	return -ENOENT;
}

static struct space *self_space(void)
{
	struct space *s = calloc(1, sizeof(*s));
	char line[PATH_MAX + 128];
	FILE *f = fopen("/proc/self/maps", "r");

	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		uint64_t a, b, pgoff;
		char perms[8], name[PATH_MAX] = "";

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %4095s", &a, &b, perms, &pgoff,
			   name) >= 4 && perms[2] == 'x')
			add_map(s, a, b, pgoff, name);
	}
	fclose(f);
	return s;
}

static unsigned dwfl_frames(struct perfrec_unwinder *u, const struct perf_event_header *rec,
			    const struct perf_event_attr *a, uint64_t *out);

static void take_map(void *ctx, const struct perf_event_header *h)
{
	cr_assert_eq(perfrec_unwinder__rewrite(ctx, h, NULL, NULL, 0), 0);
}

static bool has_frame_in(const struct unwtab_frame *fr, unsigned n, void (*fn)(struct snap *))
{
	uint64_t a = (uint64_t)(uintptr_t)fn;

	for (unsigned i = 1; i < n; i++)
		if (fr[i].pc > a && fr[i].pc < a + 128)
			return true;
	return false;
}

Test(unwind, this_process_unwinds_to_its_callers_and_the_end_of_the_stack)
{
	static struct snap snap;
	struct space *s;
	struct unwtab_regs regs;
	struct unwtab_frame fr[128];
	struct unwtab_result res;

	find_stack_end();
	outer_marker(&snap);
	s = self_space();
	regs = (struct unwtab_regs){ .ip = snap.regs[R_IP], .sp = snap.regs[R_SP], .bp = snap.regs[R_BP],
				     .bp_valid = true };
	cr_assert_eq(unwtab_unwind(&regs, snap.stack, snap.dyn, find, s, fr, 128, &res), 0);
	cr_assert(has_frame_in(fr, res.nr_frames, middle_marker), "%u frames, end %d", res.nr_frames, res.end);
	cr_assert(has_frame_in(fr, res.nr_frames, outer_marker), "%u frames, end %d", res.nr_frames, res.end);
	for (unsigned i = 1; i < res.nr_frames; i++)
		cr_assert_eq(fr[i].how, UNWTAB_FROM_TABLE, "frame %u: everything here has CFI", i);
	/*
	 * Up to _start's undefined return address, or to the end of the 8 KiB
	 * copy (criterion's runner has deep frames below the test).
	 */
	cr_assert(res.end == UNWTAB_END_OUTERMOST || res.end == UNWTAB_END_STACK, "end %d after %u frames",
		  res.end, res.nr_frames);
	/* And libdwfl (lib/unwind.c) finds the same frames in the same sample. */
	{
		struct perfrec_unwinder_opts o = { .sz = sizeof(o) };
		struct perfrec_unwinder *u;
		struct perf_event_attr a = attr();
		static unsigned char in[65536];
		uint64_t theirs[128];
		unsigned nt;

		cr_assert_eq(perfrec_unwinder__new(&o, &u), 0);
		cr_assert_eq(perfrec_unwinder__set_tables(u, &(struct perfrec_unwinder_tables_opts){ .off = true }), 0);
		for_each_map(NULL, NULL, take_map, u);
		nt = dwfl_frames(u, sample(&snap, in), &a, theirs);
		cr_assert_eq(nt, res.nr_frames, "libdwfl: %u frames, ours %u", nt, res.nr_frames);
		for (unsigned i = 0; i < nt; i++)
			cr_assert_eq(theirs[i], fr[i].pc - (i ? 1 : 0), "frame %u", i);
		perfrec_unwinder__free(u);
	}
	free_space(s);
}

/* A fake JIT: executable memory without a table, frames chained by rbp on a stack we make. */
struct fake {
	uint64_t stack[64];
	struct space s;
};

static uint64_t at(struct fake *f, unsigned i)
{
	return (uint64_t)(uintptr_t)&f->stack[i];
}

Test(unwind, code_without_a_table_follows_a_consistent_frame_pointer_chain)
{
	struct fake *f = calloc(1, sizeof(*f));
	struct unwtab_frame fr[16];
	struct unwtab_result res;
	struct unwtab_regs regs;

	f->s.maps[f->s.nr++] = (struct tmap){ .start = 0x10000, .end = 0x20000 }; /* "JIT", no table */
	/* Three frames: [bp] = next bp, [bp + 8] = return address. */
	f->stack[4] = at(f, 10);
	f->stack[5] = 0x10100;
	f->stack[10] = at(f, 20);
	f->stack[11] = 0x10200;
	f->stack[20] = 0;
	f->stack[21] = 0x10300;
	regs = (struct unwtab_regs){ .ip = 0x10010, .sp = at(f, 0), .bp = at(f, 4), .bp_valid = true };
	cr_assert_eq(unwtab_unwind(&regs, f->stack, sizeof(f->stack), find, &f->s, fr, 16, &res), 0);
	cr_assert_eq(res.nr_frames, 4);
	cr_assert_eq(fr[1].pc, 0x10100);
	cr_assert_eq(fr[2].pc, 0x10200);
	cr_assert_eq(fr[3].pc, 0x10300);
	for (unsigned i = 1; i < 4; i++)
		cr_assert_eq(fr[i].how, UNWTAB_FROM_FP);
	cr_assert_eq(res.end, UNWTAB_END_NO_INFO, "a saved rbp of 0 ends the chain");
	/* What the walk read of the copy: up to the last return address, nothing wanted past it. */
	cr_assert_eq(res.high, at(f, 22), "high %#" PRIx64 ", not the end of word 21", res.high);
	cr_assert_eq(res.missed, 0);

	/* A chain that goes down, or leaves the copy, or returns outside code: no frame from it. */
	f->stack[10] = at(f, 2);
	cr_assert_eq(unwtab_unwind(&regs, f->stack, sizeof(f->stack), find, &f->s, fr, 16, &res), 0);
	cr_assert_eq(res.nr_frames, 3, "the frame whose saved rbp goes down is the last");
	cr_assert_eq(res.end, UNWTAB_END_NO_INFO);
	f->stack[10] = at(f, 20);
	f->stack[11] = 0x30000; /* not executable */
	cr_assert_eq(unwtab_unwind(&regs, f->stack, sizeof(f->stack), find, &f->s, fr, 16, &res), 0);
	cr_assert_eq(res.nr_frames, 2);
	cr_assert_eq(res.end, UNWTAB_END_NO_MAP);
	f->stack[11] = 0x10200;
	f->stack[4] = at(f, 10) + 4096; /* past the copy */
	cr_assert_eq(unwtab_unwind(&regs, f->stack, sizeof(f->stack), find, &f->s, fr, 16, &res), 0);
	cr_assert_eq(res.nr_frames, 2);
	cr_assert_eq(res.end, UNWTAB_END_STACK);
	cr_assert_eq(res.missed, at(f, 10) + 4096, "the word wanted past the copy not told: %#" PRIx64, res.missed);
	cr_assert_eq(res.high, at(f, 6));
	regs.bp = at(f, 0) - 16; /* below the stack pointer */
	cr_assert_eq(unwtab_unwind(&regs, f->stack, sizeof(f->stack), find, &f->s, fr, 16, &res), 0);
	cr_assert_eq(res.nr_frames, 1);
	cr_assert_eq(res.end, UNWTAB_END_INCONSISTENT);
	free(f);
}

/* The pcs the walker asked its find function for. */
struct counted {
	struct space *s;
	uint64_t pcs[64];
	unsigned n;
};

static int counted_find(void *ctx, uint64_t pc, const struct unwtab_row **row)
{
	struct counted *c = ctx;

	cr_assert_lt(c->n, 64);
	c->pcs[c->n++] = pc;
	return find(c->s, pc, row);
}

/*
 * A look-up is the walker's main cost: each pc once per walk, the one that
 * checks a return address lands in code being the one its frame's step
 * uses (it was asked twice, 7 look-ups for 4 frames).
 */
Test(unwind, each_pc_is_looked_up_once)
{
	struct fake *f = calloc(1, sizeof(*f));
	struct unwtab_row rows[] = {
		{ .start = 0x1000, .kind = UNWTAB_CFA_SP, .cfa_off = 16, .ra_off = -8 },
		{ .start = 0x1100, .kind = UNWTAB_CFA_SP, .cfa_off = 32, .ra_off = -8 },
		{ .start = 0x1200, .kind = UNWTAB_OUTERMOST },
	};
	struct unwtab t = { .nr_rows = 3, .rows = rows };
	struct counted c = { .s = &f->s };
	struct unwtab_frame fr[16];
	struct unwtab_result res;
	struct unwtab_regs regs;

	f->s.maps[f->s.nr++] = (struct tmap){ .start = 0x400000, .end = 0x402000, .bias = 0x400000, .tab = &t };
	f->s.maps[f->s.nr++] = (struct tmap){ .start = 0x10000, .end = 0x20000 }; /* "JIT", no table */
	/* ip in row 0 (CFA sp + 16) -> 0x401101 in row 1 (CFA + 32) -> JIT by rbp -> 0x401201: outermost */
	f->stack[1] = 0x401101;
	f->stack[5] = 0x10100;
	f->stack[10] = 0;
	f->stack[11] = 0x401201;
	regs = (struct unwtab_regs){ .ip = 0x401010, .sp = at(f, 0), .bp = at(f, 10), .bp_valid = true };
	cr_assert_eq(unwtab_unwind(&regs, f->stack, sizeof(f->stack), counted_find, &c, fr, 16, &res), 0);
	cr_assert_eq(res.nr_frames, 4, "%u frames, end %d", res.nr_frames, res.end);
	cr_assert_eq(fr[2].pc, 0x10100);
	cr_assert_eq(fr[3].pc, 0x401201);
	cr_assert_eq(res.end, UNWTAB_END_OUTERMOST);
	cr_assert_eq(c.n, 4, "%u look-ups for 4 frames", c.n);
	cr_assert_eq(c.pcs[0], 0x401010, "the sampled ip as it is");
	for (unsigned i = 1; i < 4; i++)
		cr_assert_eq(c.pcs[i], fr[i].pc - 1, "look-up %u: a return address at its call", i);
	/* From a caller's frame (where libdwfl stopped): its pc is looked up at the call, once. */
	c.n = 0;
	regs = (struct unwtab_regs){ .ip = 0x401101, .sp = at(f, 2), .bp = at(f, 10), .bp_valid = true };
	cr_assert_eq(unwtab_unwind_from(&regs, at(f, 0), true, f->stack, sizeof(f->stack), counted_find, &c, fr, 16,
					&res), 0);
	cr_assert_eq(res.nr_frames, 3);
	cr_assert_eq(c.n, 3);
	cr_assert_eq(c.pcs[0], 0x401100);
	free(f);
}

/* Tables made by hand: a fallback row stops the walk asking for libdwfl; a CFA that does not go up stops it. */
Test(unwind, a_fallback_row_asks_for_libdwfl_and_a_bad_cfa_ends_the_walk)
{
	struct fake *f = calloc(1, sizeof(*f));
	struct unwtab_row rows[] = {
		{ .start = 0x1000, .kind = UNWTAB_CFA_SP, .cfa_off = 16, .ra_off = -8 },
		{ .start = 0x1100, .kind = UNWTAB_FALLBACK },
		{ .start = 0x1200, .kind = UNWTAB_CFA_SP, .cfa_off = 0, .ra_off = -8 },
		{ .start = 0x1300, .kind = UNWTAB_GAP },
	};
	struct unwtab t = { .nr_rows = 4, .rows = rows };
	struct unwtab_frame fr[16];
	struct unwtab_result res;
	struct unwtab_regs regs = { .ip = 0x401010, .sp = at(f, 0), .bp_valid = false };

	f->s.maps[f->s.nr++] = (struct tmap){ .start = 0x400000, .end = 0x402000, .bias = 0x400000, .tab = &t };
	f->stack[1] = 0x401101; /* a return into the fallback row */
	cr_assert_eq(unwtab_unwind(&regs, f->stack, sizeof(f->stack), find, &f->s, fr, 16, &res), 0);
	cr_assert_eq(res.nr_frames, 2);
	cr_assert_eq(fr[1].pc, 0x401101);
	cr_assert_eq(fr[1].how, UNWTAB_FROM_TABLE);
	cr_assert_eq(res.end, UNWTAB_END_NEED_DWFL);
	cr_assert_eq(res.at.ip, 0x401101, "libdwfl goes on from the last frame");
	cr_assert_eq(res.at.sp, at(f, 2));
	regs.ip = 0x401210; /* CFA = rsp: not above the stack pointer */
	cr_assert_eq(unwtab_unwind(&regs, f->stack, sizeof(f->stack), find, &f->s, fr, 16, &res), 0);
	cr_assert_eq(res.nr_frames, 1);
	cr_assert_eq(res.end, UNWTAB_END_INCONSISTENT);
	regs.ip = 0x401010;
	cr_assert_eq(unwtab_unwind(&regs, f->stack, 8, find, &f->s, fr, 16, &res), 0);
	cr_assert_eq(res.end, UNWTAB_END_STACK, "the return address lies past an 8-byte copy");
	cr_assert_eq(unwtab_unwind(&regs, NULL, 0, find, &f->s, fr, 16, &res), 0);
	cr_assert_eq(res.end, UNWTAB_END_STACK);
	cr_assert_eq(unwtab_unwind(&regs, f->stack, sizeof(f->stack), find, &f->s, fr, 0, &res), -EINVAL);
	free(f);
}

/*
 * In an epilogue the rule for the caller's rbp outlives its pop: the slot
 * lies below the stack pointer, outside the copy.  The walk goes on with
 * the return address, the caller's rbp not known (as libdwfl has it), and
 * a caller whose CFA is rbp-based then ends it.  It ended at the first
 * frame, in 1.4% of the samples of xz, python3 and sqlite3.
 */
Test(unwind, a_saved_rbp_below_the_stack_pointer_is_unknown_not_the_end)
{
	struct fake *f = calloc(1, sizeof(*f));
	struct unwtab_row rows[] = {
		/* after "pop rbp; pop rbx": CFA = rsp + 16, rbp still "saved at CFA - 24" */
		{ .start = 0x1000, .kind = UNWTAB_CFA_SP, .cfa_off = 16, .fp_off = -24, .ra_off = -8 },
		{ .start = 0x1100, .kind = UNWTAB_CFA_SP, .cfa_off = 16, .ra_off = -8 },
		{ .start = 0x1200, .kind = UNWTAB_CFA_BP, .cfa_off = 16, .fp_off = -16, .ra_off = -8 },
		{ .start = 0x1300, .kind = UNWTAB_GAP },
	};
	struct unwtab t = { .nr_rows = 4, .rows = rows };
	struct unwtab_frame fr[16];
	struct unwtab_result res;
	struct unwtab_regs regs = { .ip = 0x401010, .sp = at(f, 0), .bp = 0x1234, .bp_valid = true };

	f->s.maps[f->s.nr++] = (struct tmap){ .start = 0x400000, .end = 0x402000, .bias = 0x400000, .tab = &t };
	f->stack[1] = 0x401101;  /* return address at CFA - 8 = sp + 8 */
	f->stack[3] = 0x401201;  /* the caller's, at its CFA (sp + 16) + 16 - 8 */
	cr_assert_eq(unwtab_unwind(&regs, f->stack, sizeof(f->stack), find, &f->s, fr, 16, &res), 0);
	cr_assert_geq(res.nr_frames, 3, "%u frames, end %d: the unreadable rbp ended the walk", res.nr_frames,
		      res.end);
	cr_assert_eq(fr[1].pc, 0x401101);
	cr_assert_eq(fr[2].pc, 0x401201);
	cr_assert_eq(res.nr_frames, 3);
	cr_assert_eq(res.end, UNWTAB_END_NO_INFO, "a CFA on an unknown rbp is not computed");
	free(f);
}

/* --- a real recording, against libdwfl --------------------------------------------------------- */

/*
 * perf 6.1 crashes in its build-id pass on this kernel unless the maps
 * carry build ids (/work/shared/ORACLES.md): --buildid-mmap, and -N so
 * that nothing is left in ~/.debug.
 */
static void run_perf_record(const char *out, const char *log, const char *prog, const char *arg)
{
	char *const argv[] = { "perf", "record", "-q", "-N", "--buildid-mmap", "-e", "cpu-clock", "-F", "999",
			       "--call-graph", "dwarf,8192", "-o", (char *)out, "--", (char *)prog, (char *)arg, NULL };
	char *const envp[] = { "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", NULL };
	int st, fd;
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(126);
		execvpe("perf", argv, envp);
		_exit(127);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 127)
		cr_assert_fail("perf is not installed (linux-perf is a build dependency)");
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "perf record failed, see %s", log);
}

/* Index in a sample's regs of perf's register @reg under @mask. */
static int reg_index(uint64_t mask, unsigned reg)
{
	if (!(mask & (1ull << reg)))
		return -1;
	return __builtin_popcountll(mask & ((1ull << reg) - 1));
}

/* The user frames libdwfl (lib/unwind.c) gives for @rec. */
static unsigned dwfl_frames(struct perfrec_unwinder *u, const struct perf_event_header *rec,
			    const struct perf_event_attr *a, uint64_t *out)
{
	static unsigned char buf[65536];
	struct perf_event_attr na;
	struct perfrec_sample smp;
	unsigned n = 0;
	int r = perfrec_unwinder__rewrite(u, rec, a, buf, sizeof(buf));
	bool user = false;

	cr_assert_gt(r, 0);
	perfrec_unwinder__rewrite_attr(a, &na);
	cr_assert_eq(perfrec_sample__parse_attr((void *)buf, &na, &smp), 0);
	for (uint64_t i = 0; i < smp.nr_callchain && n < 128; i++) {
		if (smp.callchain[i] == PERF_CONTEXT_USER)
			user = true;
		else if (user)
			out[n++] = smp.callchain[i];
	}
	return n;
}

/* Ours, in the same form: the ip, then callers as return address - 1. */
static unsigned table_frames(struct space *s, const struct perfrec_sample *smp, uint64_t *out,
			     struct unwtab_result *res, unsigned *fp_frames)
{
	struct unwtab_frame fr[128];
	int ip = reg_index(smp->regs_mask, R_IP), sp = reg_index(smp->regs_mask, R_SP),
	    bp = reg_index(smp->regs_mask, R_BP);
	struct unwtab_regs regs;

	cr_assert(ip >= 0 && sp >= 0 && bp >= 0 && (uint32_t)ip < smp->nr_regs);
	regs = (struct unwtab_regs){ .ip = smp->regs[ip], .sp = smp->regs[sp], .bp = smp->regs[bp], .bp_valid = true };
	cr_assert_eq(unwtab_unwind(&regs, smp->stack, smp->stack_dyn_size, find, s, fr, 127, res), 0);
	for (unsigned i = 0; i < res->nr_frames; i++) {
		out[i] = fr[i].pc - (i ? 1 : 0);
		*fp_frames += fr[i].how == UNWTAB_FROM_FP;
	}
	return res->nr_frames;
}

struct tally {
	unsigned samples, same, need_dwfl, frames, dwfl_frames, fp_frames, outermost;
	unsigned leaf_unmapped;  /* samples whose ip no executable MMAP2 of the recording holds */
	double dwfl_s, table_s; /* CPU time in each unwinder (noted, never asserted) */
};

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void compare_sample(struct perfrec_unwinder *u, struct space *s, const struct perf_event_header *rec,
			   const struct perf_event_attr *a, const struct perfrec_sample *smp, struct tally *t)
{
	uint64_t mine[128], theirs[128];
	struct unwtab_result res;
	unsigned nm, nt;

	double t0 = cpu_now(), t1, t2;

	nt = dwfl_frames(u, rec, a, theirs);
	t1 = cpu_now();
	nm = table_frames(s, smp, mine, &res, &t->fp_frames);
	t2 = cpu_now();
	t->dwfl_s += t1 - t0;
	t->table_s += t2 - t1;
	t->samples++;
	t->frames += nm;
	t->dwfl_frames += nt;
	t->outermost += res.end == UNWTAB_END_OUTERMOST;
	if (res.end == UNWTAB_END_NEED_DWFL)
		t->need_dwfl++;
	if (nm == nt && !memcmp(mine, theirs, nm * 8)) {
		t->same++;
		return;
	}
	if (t->samples - t->same <= 5) {
		cr_log_info("sample %u differs: ours %u frames (end %d), libdwfl's %u", t->samples, nm, res.end, nt);
		for (unsigned i = 0; i < (nm > nt ? nm : nt) && i < 40; i++)
			cr_log_info("  %2u %#18" PRIx64 " %#18" PRIx64, i, i < nm ? mine[i] : 0, i < nt ? theirs[i] : 0);
	}
}

/*
 * Record @prog @arg with perf's DWARF mode and unwind every sample of the
 * process whose exec'd name is @comm with both unwinders; the tally.
 */
static struct tally record_and_compare(const char *prog, const char *arg, const char *comm)
{
	struct perfrec_unwinder_opts o = { .sz = sizeof(o), .proc = "" };
	char data[PATH_MAX], log[PATH_MAX];
	struct perfrec_pdreader *rd;
	struct perfrec_unwinder *u;
	const struct perf_event_header *rec;
	struct space *s = calloc(1, sizeof(*s));
	struct tally t = {0};
	uint32_t wl_pid = 0;

	snprintf(data, sizeof(data), "%s/perf.data", tmpdir);
	snprintf(log, sizeof(log), "%s/perf.log", tmpdir);
	run_perf_record(data, log, prog, arg);
	cr_assert_eq(perfrec_pdreader__open(data, NULL, &rd), 0);
	cr_assert_eq(perfrec_unwinder__new(&o, &u), 0);
	/* The reference is libdwfl's: the unwinder's own tables would compare these with themselves. */
	cr_assert_eq(perfrec_unwinder__set_tables(u, &(struct perfrec_unwinder_tables_opts){ .off = true }), 0);
	while (perfrec_pdreader__next(rd, &rec, NULL) == 1) {
		const struct perfrec_pdreader_attr *pa = perfrec_pdreader__attr(rd, 0);
		struct perfrec_sample smp;

		if (rec->type == PERF_RECORD_COMM && (rec->misc & PERF_RECORD_MISC_COMM_EXEC)) {
			const uint32_t *pid = (const void *)(rec + 1);

			if (!strcmp((const char *)(pid + 2), comm))
				wl_pid = pid[0];
		}
		if (rec->type == PERF_RECORD_MMAP2) {
			const unsigned char *b = (const void *)(rec + 1);
			uint32_t pid, prot;
			uint64_t start, len, pgoff;

			memcpy(&pid, b, 4);
			memcpy(&start, b + 8, 8);
			memcpy(&len, b + 16, 8);
			memcpy(&pgoff, b + 24, 8);
			memcpy(&prot, b + 56, 4);
			if (pid == wl_pid && (prot & PROT_EXEC))
				add_map(s, start, start + len, pgoff, (const char *)(b + 64));
		}
		if (rec->type != PERF_RECORD_SAMPLE) {
			cr_assert_eq(perfrec_unwinder__rewrite(u, rec, pa ? &pa->attr : NULL, NULL, 0), 0);
			continue;
		}
		cr_assert_not_null(pa);
		cr_assert_eq(perfrec_sample__parse_attr(rec, &pa->attr, &smp), 0);
		if (smp.pid != wl_pid || !smp.regs_abi || !smp.stack_dyn_size)
			continue;
		{
			const struct unwtab_row *row;

			if (find(s, smp.ip, &row) < 0)
				t.leaf_unmapped++;
		}
		compare_sample(u, s, rec, &pa->attr, &smp, &t);
	}
	cr_log_info("%s: %u samples, %u the same as libdwfl's (%.1f%%), %u needing libdwfl, %u to the stack's end",
		    comm, t.samples, t.same, t.samples ? 100.0 * t.same / t.samples : 0, t.need_dwfl, t.outermost);
	cr_log_info("%s: %.1f frames each (%u by frame pointers), libdwfl's %.1f", comm,
		    t.samples ? (double)t.frames / t.samples : 0, t.fp_frames,
		    t.samples ? (double)t.dwfl_frames / t.samples : 0);
	if (t.samples)
		cr_log_info("CPU per sample: libdwfl %.1f us, tables %.2f us (%.0f ns per frame)",
			    t.dwfl_s * 1e6 / t.samples, t.table_s * 1e6 / t.samples,
			    t.frames ? t.table_s * 1e9 / t.frames : 0);
	{
		struct perfrec_unwinder_stats us;

		perfrec_unwinder__stats(u, &us);
		cr_log_info("libdwfl: %zu spaces, %" PRIu64 " ELF files opened, %" PRIu64 " missing, %" PRIu64
			    " sessions, %" PRIu64 " without maps", us.spaces, us.elf_opened, us.elf_missing,
			    us.sessions, us.no_space);
	}
	perfrec_unwinder__free(u);
	perfrec_pdreader__free(rd);
	free_space(s);
	cr_assert_geq(t.samples, 200, "too few samples of %s (%u)", comm, t.samples);
	return t;
}

Test(unwind, a_recording_of_nofp_unwinds_as_libdwfl_does, .init = make_tmpdir, .fini = rm_tmpdir, .timeout = 180)
{
	struct tally t = record_and_compare("tests/e2e/nofp", "2", "nofp");

	cr_assert_geq(t.same * 100, t.samples * 98, "only %u of %u samples the same", t.same, t.samples);
	cr_assert_geq(t.frames, t.samples * 4, "chains reach main (%u frames in %u samples)", t.frames, t.samples);
}

/*
 * node: V8's JIT code has no CFI but keeps frame pointers.  Through it by
 * rbp and on through node's own C++ by its tables, nearly every sample
 * reaches the end of the stack, where libdwfl stops at the first JIT frame.
 */
Test(unwind, node_is_walked_through_its_jit_code_by_frame_pointers, .init = make_tmpdir, .fini = rm_tmpdir,
     .timeout = 180)
{
	char js[PATH_MAX];
	struct tally t;
	FILE *f;

	if (access("/usr/bin/node", X_OK) < 0)
		cr_skip_test("the workload, /usr/bin/node, is not installed (apt-get install nodejs)");
	snprintf(js, sizeof(js), "%s/busy.js", tmpdir);
	f = fopen(js, "w");
	cr_assert_not_null(f);
	fputs("function leaf(n) { let s = 0; for (let i = 0; i < n; i++) s += Math.sqrt(i) * i; return s; }\n"
	      "function mid(n) { return leaf(n) + leaf(n / 2); }\n"
	      "function top(n) { return mid(n) + JSON.stringify({ a: n }).length; }\n"
	      "const end = Date.now() + 2000; let x = 0;\n"
	      "while (Date.now() < end) x += top(20000);\n"
	      "if (x < 0) console.log(x);\n", f);
	fclose(f);
	t = record_and_compare("/usr/bin/node", js, "node");
	/*
	 * V8 may make its code executable with mprotect(), which no MMAP2
	 * record shows: then perf's file holds no executable mapping of the
	 * samples' code, and no unwinder may walk from there (perf's neither).
	 */
	if (t.leaf_unmapped * 2 > t.samples)
		cr_skip_test("%u of node's %u samples are in memory no executable MMAP2 of perf's recording "
			     "holds (V8 mprotect()ed its code executable): nothing to walk from", t.leaf_unmapped,
			     t.samples);
	cr_assert_gt(t.fp_frames, t.samples, "JIT frames were walked by frame pointers (%u)", t.fp_frames);
	cr_assert_geq(t.outermost * 100, t.samples * 90, "only %u of %u samples reach the end of the stack",
		      t.outermost, t.samples);
	cr_assert_geq(t.frames, t.dwfl_frames, "chains at least as deep as libdwfl's");
}



/* The index's look-ups are a plain binary search's, also over sparse and huge address spans. */
Test(unwtab, indexed_lookups_are_plain_searches)
{
	static const uint64_t starts[][6] = {
		{ 0x1000, 0x1001, 0x1002, 0x5000, 0x5008, 0x9000 },
		{ 0, 1, 1ull << 40, (1ull << 40) + 4096, 1ull << 62, UINT64_MAX - 1 },
	};

	for (size_t s = 0; s < 2; s++) {
		struct unwtab_row rows[6];
		struct unwtab t = { .rows = rows, .nr_rows = 6 };

		for (size_t i = 0; i < 6; i++)
			rows[i] = (struct unwtab_row){ .start = starts[s][i], .kind = UNWTAB_CFA_SP };
		cr_assert_eq(unwtab_index(&t), 0);
		cr_assert_not_null(t.first);
		cr_assert_leq(t.index_len, 2 * 6 + 1024 + 1);
		for (size_t i = 0; i < 6; i++)
			for (int d = -1; d <= 1; d++) {
				uint64_t a = starts[s][i] + (uint64_t)(int64_t)d;
				const struct unwtab_row *want = NULL;

				if (d < 0 && starts[s][i] == 0)
					continue;
				for (size_t k = 0; k < 6; k++)
					if (rows[k].start <= a)
						want = &rows[k];
				cr_assert_eq(unwtab_lookup(&t, a), want, "set %zu, row %zu %+d", s, i, d);
			}
		free(t.first);
	}
}

/*
 * A look-up searches the rows of one granule of the index: compiled code
 * has a row every 50 bytes or so, and granules of 4 KiB made that some 80
 * rows, seven probes, most of them cache misses in a table of megabytes
 * (cc1's).  Granules hold a handful now, for an index of at most a
 * quarter as many entries as rows.
 */
Test(unwtab, index_granules_hold_a_few_rows)
{
	size_t n = 100000;
	struct unwtab t = { .nr_rows = n, .rows = calloc(n, sizeof(struct unwtab_row)) };

	cr_assert_not_null(t.rows);
	for (size_t i = 0; i < n; i++)
		t.rows[i] = (struct unwtab_row){ .start = 0x10000 + 48 * i, .kind = UNWTAB_CFA_SP, .cfa_off = 8 };
	cr_assert_eq(unwtab_index(&t), 0);
	cr_expect_leq(1ull << t.index_shift, 48 * 8, "granules of %llu bytes: %llu rows each",
		      1ull << t.index_shift, (1ull << t.index_shift) / 48);
	cr_expect_leq(t.index_len, n / 4 + 1024 + 1, "an index of %zu entries for %zu rows", t.index_len, n);
	for (size_t i = 0; i < n; i += 997)
		cr_assert_eq(unwtab_lookup(&t, 0x10000 + 48 * i + 47), &t.rows[i]);
	free(t.first);
	free(t.rows);
}

