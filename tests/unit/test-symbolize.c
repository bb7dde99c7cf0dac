// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests for the symbolizer: this test binary's own functions through
 * an MMAP2 naming it (with its build id, a wrong one, or found in a build-id
 * cache only), one lookup per missing binary however many addresses ask,
 * kernel symbols from a fake kallsyms only when the file's kernel build id
 * is the "running" one (KASLR shift applied), BPF programs from KSYMBOL,
 * and damaged records and build-id tables that must be refused, not read.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <linux/perf_event.h>
#include <perfrec/buildid.h>

#include "buildid-internal.h"
#include "symbolize.h"

__attribute__((noinline)) int symbolize_probe_fn(int x);
__attribute__((noinline)) int symbolize_probe_fn(int x)
{
	volatile int y = x;

	return y * 3 + 1;
}

/*
 * Inlines two deep, and one in a lexical block of its own, for the
 * inlined-frame test: built into this binary at -O1 (ASan) and -O2 alike.
 */
static inline __attribute__((always_inline)) int probe_leaf(int x)
{
	volatile int v = x;

	return v * 7 + 1;
}

static inline __attribute__((always_inline)) int probe_mid(int x)
{
	int r = 0;

	for (int i = 0; i < x % 5 + 2; i++)
		r += probe_leaf(x + i);
	return r;
}

__attribute__((noinline)) int symbolize_inline_probe(int x);
__attribute__((noinline)) int symbolize_inline_probe(int x)
{
	int a = probe_mid(x);

	if (a & 1) {
		volatile int z = a;

		a = z + probe_leaf(a);
	}
	return a + probe_mid(a);
}

struct self_map {
	char path[PATH_MAX];
	uint64_t start, end, pgoff;
	uint8_t bid[PERFREC_BUILD_ID_MAX];
	int bid_len;
};

/* The executable mapping of this binary that holds symbolize_probe_fn. */
static void self_map(struct self_map *m)
{
	uintptr_t fn = (uintptr_t)symbolize_probe_fn;
	char line[PATH_MAX + 128];
	ssize_t n = readlink("/proc/self/exe", m->path, sizeof(m->path) - 1);
	FILE *f = fopen("/proc/self/maps", "re");
	bool found = false;

	cr_assert(n > 0 && f);
	m->path[n] = 0;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long long s, e, off;
		char perms[8];

		if (sscanf(line, "%llx-%llx %7s %llx", &s, &e, perms, &off) == 4 && fn >= s && fn < e) {
			m->start = s;
			m->end = e;
			m->pgoff = off;
			found = true;
		}
	}
	fclose(f);
	cr_assert(found, "no mapping holds symbolize_probe_fn");
	m->bid_len = perfrec_buildid__read_elf(m->path, m->bid);
	cr_assert_gt(m->bid_len, 0, "the test binary has no build id");
}

static size_t put_name(uint8_t *p, size_t off, const char *name)
{
	size_t l = strlen(name) + 1, total = (off + l + 7) & ~7ul;

	memset(p + off, 0, total - off);
	memcpy(p + off, name, l);
	return total;
}

static struct perf_event_header *mmap2(uint8_t *buf, uint32_t pid, uint64_t start, uint64_t len, uint64_t pgoff,
				       const uint8_t *bid, int bid_len, const char *name)
{
	struct perf_event_header *h = (void *)buf;
	uint32_t prot = PROT_READ | PROT_EXEC, flags = MAP_PRIVATE;

	memset(buf, 0, 72);
	h->type = PERF_RECORD_MMAP2;
	h->misc = PERF_RECORD_MISC_USER | (bid_len > 0 ? PERF_RECORD_MISC_MMAP_BUILD_ID : 0);
	memcpy(buf + 8, &pid, 4);
	memcpy(buf + 12, &pid, 4);
	memcpy(buf + 16, &start, 8);
	memcpy(buf + 24, &len, 8);
	memcpy(buf + 32, &pgoff, 8);
	if (bid_len > 0) {
		buf[40] = (uint8_t)bid_len;
		memcpy(buf + 44, bid, (size_t)bid_len);
	}
	memcpy(buf + 64, &prot, 4);
	memcpy(buf + 68, &flags, 4);
	h->size = (uint16_t)put_name(buf, 72, name);
	return h;
}

static struct symbolizer *new_sym(const char *buildid_dir)
{
	struct symbolizer_opts o = {
		.sz = sizeof(o), .buildid_dir = buildid_dir, .home_debug = "/nonexistent",
		.debug_dir = "/nonexistent", .no_debuginfod = true,
	};
	struct symbolizer *s = NULL;

	cr_assert_eq(symbolizer__new(&o, &s), 0);
	return s;
}

static const struct sym_frame *outer(const struct sym_frame *f, size_t n)
{
	return &f[n - 1];
}

Test(symbolize, own_function_by_mmap2_with_matching_build_id)
{
	struct self_map m;
	uint8_t buf[PATH_MAX + 128];
	struct sym_frame f[8];
	struct symbolizer *s;
	uint64_t a = (uintptr_t)symbolize_probe_fn;
	size_t n;

	self_map(&m);
	s = new_sym(NULL);
	symbolizer__note_record(s, mmap2(buf, 42, m.start, m.end - m.start, m.pgoff, m.bid, m.bid_len, m.path));
	n = symbolizer__resolve(s, 42, a + 2, false, false, f, 8);
	cr_assert_geq(n, 1);
	cr_assert_str_eq(outer(f, n)->name, "symbolize_probe_fn");
	cr_assert_eq(outer(f, n)->kind, SYM_USER);
	cr_assert_str_eq(outer(f, n)->module, m.path);
	cr_assert_eq(outer(f, n)->build_id_len, m.bid_len);
	cr_assert(outer(f, n)->file && strstr(outer(f, n)->file, "test-symbolize.c"), "no source file from DWARF");
	cr_assert_gt(outer(f, n)->line, 0);
	/* A return address just past the function's first byte: still the function. */
	n = symbolizer__resolve(s, 42, a + 1, false, true, f, 8);
	cr_assert_str_eq(outer(f, n)->name, "symbolize_probe_fn");
	/* Another process has no such map. */
	n = symbolizer__resolve(s, 43, a + 2, false, false, f, 8);
	cr_assert_eq(n, 1);
	cr_assert_str_eq(f[0].name, "[unknown]");
	cr_assert_eq(f[0].kind, SYM_UNKNOWN);
	symbolizer__free(s);
}

Test(symbolize, maj_min_form_with_the_build_id_bit_resolves_by_path)
{
	struct self_map m;
	uint8_t buf[PATH_MAX + 128];
	struct sym_frame f[8];
	struct symbolizer *s;
	size_t n;

	self_map(&m);
	s = new_sym(NULL);
	/* What kernel 6.18 writes for perf -B: the build-id bit, maj 254 where the size goes. */
	mmap2(buf, 11, m.start, m.end - m.start, m.pgoff, m.bid, m.bid_len, m.path);
	memset(buf + 40, 0, 24);
	buf[40] = 254;
	buf[48] = 0x15;
	symbolizer__note_record(s, (void *)buf);
	n = symbolizer__resolve(s, 11, (uintptr_t)symbolize_probe_fn + 2, false, false, f, 8);
	cr_assert_str_eq(outer(f, n)->name, "symbolize_probe_fn");
	cr_assert_eq(outer(f, n)->build_id_len, 0);
	symbolizer__free(s);
}

Test(symbolize, wrong_build_id_is_not_resolved_from_the_path)
{
	struct self_map m;
	uint8_t buf[PATH_MAX + 128], wrong[PERFREC_BUILD_ID_MAX];
	struct sym_frame f[8];
	struct symbolizer *s;
	unsigned lookups, found;
	size_t n;

	self_map(&m);
	memcpy(wrong, m.bid, sizeof(wrong));
	wrong[0] ^= 0xff;
	s = new_sym(NULL);
	symbolizer__note_record(s, mmap2(buf, 7, m.start, m.end - m.start, m.pgoff, wrong, m.bid_len, m.path));
	n = symbolizer__resolve(s, 7, (uintptr_t)symbolize_probe_fn, false, false, f, 8);
	cr_assert_eq(n, 1);
	cr_assert_str_eq(f[0].name, "[unknown]");
	cr_assert_str_eq(f[0].module, m.path, "the map is known even when its binary is not");
	symbolizer__stats(s, &lookups, &found);
	cr_assert_eq(found, 0);
	symbolizer__free(s);
}

Test(symbolize, binary_found_in_build_id_cache_when_its_path_is_gone)
{
	struct self_map m;
	uint8_t buf[PATH_MAX + 128];
	char dir[] = "/tmp/test-symbolize-XXXXXX", path[PATH_MAX], hex[41];
	struct sym_frame f[8];
	struct symbolizer *s;
	size_t n;

	self_map(&m);
	cr_assert(mkdtemp(dir));
	for (int i = 0; i < m.bid_len; i++)
		sprintf(hex + 2 * i, "%02x", m.bid[i]);
	snprintf(path, sizeof(path), "%s/.build-id", dir);
	cr_assert_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/.build-id/%.2s", dir, hex);
	cr_assert_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s", dir, hex, hex + 2);
	cr_assert_eq(symlink(m.path, path), 0);

	s = new_sym(dir);
	symbolizer__note_record(s, mmap2(buf, 9, m.start, m.end - m.start, m.pgoff, m.bid, m.bid_len,
					 "/gone/in/a/container/binary"));
	n = symbolizer__resolve(s, 9, (uintptr_t)symbolize_probe_fn + 2, false, false, f, 8);
	cr_assert_str_eq(outer(f, n)->name, "symbolize_probe_fn");
	cr_assert_str_eq(outer(f, n)->module, "/gone/in/a/container/binary");
	symbolizer__free(s);
	unlink(path);
	snprintf(path, sizeof(path), "%s/.build-id/%.2s", dir, hex);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/.build-id", dir);
	rmdir(path);
	rmdir(dir);
}

Test(symbolize, missing_binary_costs_one_lookup)
{
	uint8_t buf[512], bid[20] = { 1, 2, 3, 4, 5 };
	struct sym_frame f[4];
	struct symbolizer *s = new_sym(NULL);
	unsigned lookups, found;

	symbolizer__note_record(s, mmap2(buf, 5, 0x400000, 0x10000, 0, bid, 20, "/no/such/binary"));
	/* A second process mapping the same build id shares the lookup. */
	symbolizer__note_record(s, mmap2(buf, 6, 0x500000, 0x10000, 0, bid, 20, "/no/such/binary"));
	for (int i = 0; i < 10000; i++) {
		size_t n = symbolizer__resolve(s, i % 2 ? 5 : 6, (i % 2 ? 0x400000 : 0x500000) + (uint64_t)i,
					       false, i % 3 == 0, f, 4);

		cr_assert_eq(n, 1);
		cr_assert_str_eq(f[0].name, "[unknown]");
	}
	symbolizer__stats(s, &lookups, &found);
	cr_assert_eq(lookups, 1, "%u lookups for one missing binary", lookups);
	cr_assert_eq(found, 0);
	symbolizer__free(s);
}

Test(symbolize, exec_forgets_the_old_image_and_fork_inherits)
{
	struct self_map m;
	uint8_t buf[PATH_MAX + 128];
	struct perf_event_header *h = (void *)buf;
	struct sym_frame f[8];
	struct symbolizer *s;
	uint64_t a = (uintptr_t)symbolize_probe_fn + 2;
	uint32_t v[4] = { 21, 20, 21, 20 };
	size_t n;

	self_map(&m);
	s = new_sym(NULL);
	symbolizer__note_record(s, mmap2(buf, 20, m.start, m.end - m.start, m.pgoff, m.bid, m.bid_len, m.path));
	/* FORK of pid 21 from 20: the child has the parent's maps. */
	memset(buf, 0, 48);
	h->type = PERF_RECORD_FORK;
	h->size = 8 + 16 + 8;
	memcpy(buf + 8, v, sizeof(v));
	symbolizer__note_record(s, h);
	n = symbolizer__resolve(s, 21, a, false, false, f, 8);
	cr_assert_str_eq(outer(f, n)->name, "symbolize_probe_fn");
	/* COMM with the exec flag: the old image is gone. */
	memset(buf, 0, 64);
	h->type = PERF_RECORD_COMM;
	h->misc = PERF_RECORD_MISC_COMM_EXEC;
	memcpy(buf + 8, &v[0], 4);
	memcpy(buf + 12, &v[0], 4);
	h->size = (uint16_t)put_name(buf, 16, "newprog");
	symbolizer__note_record(s, h);
	n = symbolizer__resolve(s, 21, a, false, false, f, 8);
	cr_assert_str_eq(f[0].name, "[unknown]");
	n = symbolizer__resolve(s, 20, a, false, false, f, 8);
	cr_assert_str_eq(outer(f, n)->name, "symbolize_probe_fn", "the parent lost its maps");
	symbolizer__free(s);
}

static struct perf_event_header *ksymbol(uint8_t *buf, uint64_t addr, uint32_t len, uint16_t flags, const char *name)
{
	struct perf_event_header *h = (void *)buf;
	uint16_t type = PERF_RECORD_KSYMBOL_TYPE_BPF;

	memset(buf, 0, 24);
	h->type = PERF_RECORD_KSYMBOL;
	memcpy(buf + 8, &addr, 8);
	memcpy(buf + 16, &len, 4);
	memcpy(buf + 20, &type, 2);
	memcpy(buf + 22, &flags, 2);
	h->size = (uint16_t)put_name(buf, 24, name);
	return h;
}

Test(symbolize, bpf_programs_from_ksymbol)
{
	uint8_t buf[256];
	struct sym_frame f[2];
	struct symbolizer *s = new_sym(NULL);
	size_t n;

	symbolizer__note_record(s, ksymbol(buf, 0xffffffffc0001000ull, 0x200, 0, "bpf_prog_0123456789abcdef_hot"));
	symbolizer__note_record(s, ksymbol(buf, 0xffffffffc0002000ull, 0x100, 0, "bpf_prog_fedcba9876543210_other"));
	n = symbolizer__resolve(s, 0, 0xffffffffc0001010ull, true, false, f, 2);
	cr_assert_eq(n, 1);
	cr_assert_str_eq(f[0].name, "bpf_prog_0123456789abcdef_hot");
	cr_assert_eq(f[0].kind, SYM_BPF);
	cr_assert_str_eq(f[0].module, "[bpf]");
	/* Past the program's length: not it. */
	symbolizer__resolve(s, 0, 0xffffffffc0001300ull, true, false, f, 2);
	cr_assert_neq(f[0].kind, SYM_BPF);
	symbolizer__free(s);
}

/* A HEADER_BUILD_ID entry for @name. */
static size_t bid_entry(uint8_t *p, const uint8_t *bid, uint8_t len, const char *name, uint16_t cpumode)
{
	struct perf_event_header *h = (void *)p;
	int32_t pid = -1;

	memset(p, 0, BUILDID_ENTRY_HEAD);
	h->type = PERFREC_RECORD_HEADER_BUILD_ID;
	h->misc = cpumode | BUILDID_MISC_BUILD_ID_SIZE;
	memcpy(p + 8, &pid, 4);
	memcpy(p + 12, bid, len);
	p[12 + 20] = len;
	h->size = (uint16_t)put_name(p, BUILDID_ENTRY_HEAD, name);
	return h->size;
}

static void write_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	cr_assert_geq(fd, 0, "%s: %m", path);
	cr_assert_eq(write(fd, data, len), (ssize_t)len);
	close(fd);
}

struct fake_kernel {
	char dir[64], kallsyms[128], notes_dir[128];
	uint8_t bid[20];
};

static void fake_kernel(struct fake_kernel *k)
{
	static const char syms[] =
		"ffffffff81000000 T _text\n"
		"ffffffff81000100 T fake_func_a\n"
		"ffffffff81000200 t fake_func_b\n"
		"ffffffff81000300 D some_data\n"
		"ffffffffc0100000 t fake_mod_fn\t[fakemod]\n";
	uint8_t note[12 + 4 + 20];
	uint32_t hdr[3] = { 4, 20, 3 };
	char path[256];

	strcpy(k->dir, "/tmp/test-symbolize-k-XXXXXX");
	cr_assert(mkdtemp(k->dir));
	for (int i = 0; i < 20; i++)
		k->bid[i] = (uint8_t)(0xa0 + i);
	snprintf(k->kallsyms, sizeof(k->kallsyms), "%s/kallsyms", k->dir);
	write_file(k->kallsyms, syms, sizeof(syms) - 1);
	snprintf(k->notes_dir, sizeof(k->notes_dir), "%s/sys", k->dir);
	mkdir(k->notes_dir, 0755);
	snprintf(path, sizeof(path), "%s/kernel", k->notes_dir);
	mkdir(path, 0755);
	memcpy(note, hdr, sizeof(hdr));
	memcpy(note + 12, "GNU", 4);
	memcpy(note + 16, k->bid, 20);
	snprintf(path, sizeof(path), "%s/kernel/notes", k->notes_dir);
	write_file(path, note, sizeof(note));
}

static void fake_kernel_rm(struct fake_kernel *k)
{
	char path[256];

	unlink(k->kallsyms);
	snprintf(path, sizeof(path), "%s/kernel/notes", k->notes_dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/kernel", k->notes_dir);
	rmdir(path);
	rmdir(k->notes_dir);
	rmdir(k->dir);
}

static struct symbolizer *kernel_sym_dir(struct fake_kernel *k, const uint8_t *file_bid, uint64_t text,
					 const char *buildid_dir)
{
	struct symbolizer_opts o = {
		.sz = sizeof(o), .kallsyms = k->kallsyms, .kernel_notes = k->notes_dir,
		.home_debug = "/nonexistent", .no_debuginfod = true, .buildid_dir = buildid_dir,
	};
	struct symbolizer *s = NULL;
	uint8_t buf[256];
	struct perf_event_header *h = (void *)buf;
	uint32_t pid = UINT32_MAX;
	uint64_t zero = 0, len = 0x1000000;
	size_t n = bid_entry(buf, file_bid, 20, "[kernel.kallsyms]", PERF_RECORD_MISC_KERNEL);

	cr_assert_eq(symbolizer__new(&o, &s), 0);
	cr_assert_eq(symbolizer__add_build_ids(s, buf, n), 0);
	/* The file's kernel map: MMAP, pid -1, pgoff = _text where that boot had it. */
	memset(buf, 0, 40);
	h->type = PERF_RECORD_MMAP;
	h->misc = PERF_RECORD_MISC_KERNEL;
	memcpy(buf + 8, &pid, 4);
	memcpy(buf + 12, &pid, 4);
	memcpy(buf + 16, &text, 8);
	memcpy(buf + 24, &len, 8);
	memcpy(buf + 32, &text, 8);
	(void)zero;
	h->size = (uint16_t)put_name(buf, 40, "[kernel.kallsyms]_text");
	symbolizer__note_record(s, h);
	return s;
}

static struct symbolizer *kernel_sym(struct fake_kernel *k, const uint8_t *file_bid, uint64_t text)
{
	return kernel_sym_dir(k, file_bid, text, NULL);
}

Test(symbolize, other_kernel_from_a_cached_kallsyms_of_its_build_id)
{
	static const char syms[] =
		"ffffffff81000000 T _text\n"
		"ffffffff81000400 T other_kernel_fn\n"
		"ffffffff81000800 T other_kernel_next\n";
	struct fake_kernel k;
	struct sym_frame f[2];
	struct symbolizer *s;
	uint8_t other[20];
	char hex[41], path[256];

	fake_kernel(&k);
	memcpy(other, k.bid, 20);
	other[0] ^= 0x80;
	for (int i = 0; i < 20; i++)
		sprintf(hex + 2 * i, "%02x", other[i]);
	/* perf's layout: .build-id/xx/yyyy/kallsyms */
	snprintf(path, sizeof(path), "%s/.build-id", k.dir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/.build-id/%.2s", k.dir, hex);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s", k.dir, hex, hex + 2);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s/kallsyms", k.dir, hex, hex + 2);
	write_file(path, syms, sizeof(syms) - 1);

	/* That kernel ran 2 MiB higher in the file's boot. */
	s = kernel_sym_dir(&k, other, 0xffffffff81200000ull, k.dir);
	symbolizer__resolve(s, 1, 0xffffffff81200410ull, true, false, f, 2);
	cr_assert_str_eq(f[0].name, "other_kernel_fn");
	cr_assert_eq(f[0].kind, SYM_KERNEL);
	symbolizer__free(s);
	/* Without the cache: unknown, not the running kernel's fake_func_* names. */
	s = kernel_sym(&k, other, 0xffffffff81200000ull);
	symbolizer__resolve(s, 1, 0xffffffff81200410ull, true, false, f, 2);
	cr_assert_str_eq(f[0].name, "[unknown]");
	symbolizer__free(s);
	unlink(path);
	for (int up = 0; up < 3; up++) {
		char *slash = strrchr(path, '/');

		*slash = 0;
		rmdir(path);
	}
	fake_kernel_rm(&k);
}

Test(symbolize, kernel_from_kallsyms_when_build_id_matches)
{
	struct fake_kernel k;
	struct sym_frame f[2];
	struct symbolizer *s;

	fake_kernel(&k);
	s = kernel_sym(&k, k.bid, 0xffffffff81000000ull);
	symbolizer__resolve(s, 1, 0xffffffff81000150ull, true, false, f, 2);
	cr_assert_str_eq(f[0].name, "fake_func_a");
	cr_assert_eq(f[0].kind, SYM_KERNEL);
	cr_assert_str_eq(f[0].module, "[kernel.kallsyms]");
	symbolizer__resolve(s, 1, 0xffffffff81000201ull, true, true, f, 2);
	cr_assert_str_eq(f[0].name, "fake_func_b");
	symbolizer__resolve(s, 1, 0xffffffffc0100010ull, true, false, f, 2);
	cr_assert_str_eq(f[0].name, "fake_mod_fn");
	cr_assert_str_eq(f[0].module, "[fakemod]");
	symbolizer__free(s);
	fake_kernel_rm(&k);
}

Test(symbolize, kernel_addresses_shift_with_the_files_kaslr_offset)
{
	struct fake_kernel k;
	struct sym_frame f[2];
	struct symbolizer *s;

	fake_kernel(&k);
	/* The file's boot had the kernel 16 MiB higher. */
	s = kernel_sym(&k, k.bid, 0xffffffff82000000ull);
	symbolizer__resolve(s, 1, 0xffffffff82000150ull, true, false, f, 2);
	cr_assert_str_eq(f[0].name, "fake_func_a");
	symbolizer__free(s);
	fake_kernel_rm(&k);
}

Test(symbolize, other_kernels_addresses_stay_unknown)
{
	struct fake_kernel k;
	struct sym_frame f[2];
	struct symbolizer *s;
	uint8_t other[20];

	fake_kernel(&k);
	memcpy(other, k.bid, 20);
	other[19] ^= 1;
	s = kernel_sym(&k, other, 0xffffffff81000000ull);
	symbolizer__resolve(s, 1, 0xffffffff81000150ull, true, false, f, 2);
	cr_assert_str_eq(f[0].name, "[unknown]");
	cr_assert_str_eq(f[0].module, "[kernel.kallsyms]");
	/* A module's address: the file's module map still names the module. */
	{
		uint8_t buf[256];
		struct perf_event_header *h = (void *)buf;
		uint32_t pid = UINT32_MAX;
		uint64_t start = 0xffffffffc0100000ull, len = 0x10000, zero = 0;

		memset(buf, 0, 40);
		h->type = PERF_RECORD_MMAP;
		h->misc = PERF_RECORD_MISC_KERNEL;
		memcpy(buf + 8, &pid, 4);
		memcpy(buf + 12, &pid, 4);
		memcpy(buf + 16, &start, 8);
		memcpy(buf + 24, &len, 8);
		memcpy(buf + 32, &zero, 8);
		h->size = (uint16_t)put_name(buf, 40, "/lib/modules/6.1.0/kernel/fs/xfs/nfs-lock.ko.xz");
		symbolizer__note_record(s, h);
	}
	symbolizer__resolve(s, 1, 0xffffffffc0100010ull, true, false, f, 2);
	cr_assert_str_eq(f[0].name, "[unknown]");
	cr_assert_str_eq(f[0].module, "[nfs_lock]");
	symbolizer__free(s);
	fake_kernel_rm(&k);
}

Test(symbolize, damaged_build_id_tables_are_refused)
{
	struct symbolizer *s = new_sym(NULL);
	uint8_t buf[256], bid[20] = { 9 };
	size_t n = bid_entry(buf, bid, 20, "/usr/bin/x", PERF_RECORD_MISC_USER);
	struct perf_event_header *h = (void *)buf;

	/* Cut anywhere inside the entry. */
	for (size_t cut = 1; cut < n; cut++)
		cr_assert_eq(symbolizer__add_build_ids(s, buf, cut), -EBADMSG, "cut at %zu accepted", cut);
	/* A size beyond the body, one below the fixed part, a name without its NUL. */
	h->size = (uint16_t)(n + 8);
	cr_assert_eq(symbolizer__add_build_ids(s, buf, n), -EBADMSG);
	h->size = 16;
	cr_assert_eq(symbolizer__add_build_ids(s, buf, n), -EBADMSG);
	h->size = (uint16_t)n;
	memset(buf + BUILDID_ENTRY_HEAD, 'x', n - BUILDID_ENTRY_HEAD);
	cr_assert_eq(symbolizer__add_build_ids(s, buf, n), -EBADMSG);
	symbolizer__free(s);
}

Test(symbolize, damaged_records_are_ignored)
{
	struct symbolizer *s = new_sym(NULL);
	uint8_t buf[512], bid[20] = { 1 };
	struct perf_event_header *h;
	struct sym_frame f[2];

	/* Name without NUL within the record. */
	h = mmap2(buf, 3, 0x1000, 0x1000, 0, bid, 20, "/bin/x");
	memset(buf + 72, 'A', h->size - 72);
	symbolizer__note_record(s, h);
	/* Too short for an MMAP2 at all; a build id longer than 20. */
	h = mmap2(buf, 3, 0x1000, 0x1000, 0, bid, 20, "/bin/x");
	h->size = 48;
	symbolizer__note_record(s, h);
	h = mmap2(buf, 3, 0x1000, 0x1000, 0, bid, 20, "/bin/x");
	buf[40] = 200;
	symbolizer__note_record(s, h);
	/* Zero length and wrapping maps. */
	symbolizer__note_record(s, mmap2(buf, 3, 0x1000, 0, 0, bid, 20, "/bin/y"));
	symbolizer__note_record(s, mmap2(buf, 3, UINT64_MAX - 10, 0x1000, 0, bid, 20, "/bin/z"));
	/* KSYMBOL without a NUL. */
	h = ksymbol(buf, 0xffffffffc0000000ull, 16, 0, "bpf_prog_x");
	memset(buf + 24, 'B', h->size - 24);
	symbolizer__note_record(s, h);
	cr_assert_eq(symbolizer__resolve(s, 3, 0x1800, false, false, f, 2), 1);
	cr_assert_str_eq(f[0].name, "[unknown]");
	cr_assert_eq(symbolizer__resolve(s, 0, 0xffffffffc0000004ull, true, false, f, 2), 1);
	cr_assert_neq(f[0].kind, SYM_BPF);
	cr_assert_eq(symbolizer__resolve(s, 3, 0x1800, false, false, f, 0), 0);
	symbolizer__free(s);
}

/* DWARF's own answer, straight from libdw: the innermost inline at @addr of this live process. */
static const char *libdw_innermost_inline(Dwfl *dwfl, uint64_t addr, unsigned *ret_call_line)
{
	Dwfl_Module *mod = dwfl_addrmodule(dwfl, addr);
	Dwarf_Addr bias;
	Dwarf_Die *cu = mod ? dwfl_module_addrdie(mod, addr, &bias) : NULL, *scopes = NULL;
	const char *name = NULL;
	int n = cu ? dwarf_getscopes(cu, addr - bias, &scopes) : 0;

	for (int i = 0; i < n; i++) {
		Dwarf_Attribute at;
		Dwarf_Die origin;
		Dwarf_Word line = 0;
		int tag = dwarf_tag(&scopes[i]);

		if (tag == DW_TAG_subprogram)
			break;
		if (tag != DW_TAG_inlined_subroutine)
			continue;
		if (dwarf_attr(&scopes[i], DW_AT_abstract_origin, &at) && dwarf_formref_die(&at, &origin))
			name = dwarf_diename(&origin);
		if (dwarf_attr(&scopes[i], DW_AT_call_line, &at))
			dwarf_formudata(&at, &line);
		*ret_call_line = (unsigned)line;
		break;
	}
	free(scopes);
	return name;
}

/*
 * Every byte of a function with inlines two deep and in a lexical block:
 * the symbolizer's inlined frame (it walks only the function holding the
 * address, not the unit as dwarf_getscopes() does) is libdw's innermost
 * one, named and at the call line libdw gives, and the function holding
 * it comes last.
 */
Test(symbolize, inlined_frames_are_the_ones_dwarf_getscopes_gives)
{
	static const Dwfl_Callbacks cb = {
		.find_elf = dwfl_linux_proc_find_elf, .find_debuginfo = dwfl_standard_find_debuginfo,
	};
	Dwfl *dwfl = dwfl_begin(&cb);
	uint64_t a = (uintptr_t)symbolize_inline_probe, size;
	struct self_map m;
	uint8_t buf[PATH_MAX + 128];
	struct sym_frame f[8];
	struct symbolizer *s;
	unsigned with_inline = 0, leaf = 0;
	GElf_Sym sym;
	GElf_Off off;

	cr_assert(dwfl);
	cr_assert_eq(dwfl_linux_proc_report(dwfl, getpid()), 0);
	cr_assert_eq(dwfl_report_end(dwfl, NULL, NULL), 0);
	cr_assert_str_eq(dwfl_module_addrinfo(dwfl_addrmodule(dwfl, a), a, &off, &sym, NULL, NULL, NULL),
			 "symbolize_inline_probe");
	size = sym.st_size;
	cr_assert_gt(size, 0);
	self_map(&m);
	s = new_sym(NULL);
	symbolizer__note_record(s, mmap2(buf, 42, m.start, m.end - m.start, m.pgoff, m.bid, m.bid_len, m.path));
	for (uint64_t p = a; p < a + size; p++) {
		unsigned call_line = 0;
		const char *want = libdw_innermost_inline(dwfl, p, &call_line);
		size_t n = symbolizer__resolve(s, 42, p, false, false, f, 8);

		cr_assert_str_eq(outer(f, n)->name, "symbolize_inline_probe", "at +%#llx", (unsigned long long)(p - a));
		if (!want) {
			cr_assert_eq(n, 1, "at +%#llx: %s inlined where libdw has no inline", (unsigned long long)(p - a),
				     f[0].name);
			continue;
		}
		cr_assert_eq(n, 2, "at +%#llx: %zu frames where libdw has %s inlined", (unsigned long long)(p - a), n, want);
		cr_assert_str_eq(f[0].name, want, "at +%#llx", (unsigned long long)(p - a));
		cr_assert(f[0].inlined);
		cr_assert_eq(f[1].line, call_line, "at +%#llx: %s called from line %u, libdw says %u",
			     (unsigned long long)(p - a), want, f[1].line, call_line);
		with_inline++;
		leaf += !strcmp(want, "probe_leaf");
	}
	/* Both inlines showed up as the innermost somewhere, or the test proved little. */
	cr_assert_gt(leaf, 0);
	cr_assert_gt(with_inline, leaf, "probe_mid never the innermost inline");
	symbolizer__free(s);
	dwfl_end(dwfl);
}
