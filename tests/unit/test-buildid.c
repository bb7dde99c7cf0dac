// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests for build ids: ELF notes checked against binutils' readelf,
 * hand-built ELF files of each class and byte order, cut and mangled files,
 * raw note blobs, and the table that decides which binaries go into
 * HEADER_BUILD_ID (decoded here entry by entry), plus the writer round trip.
 */
#include <criterion/criterion.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <perfrec/buildid.h>
#include <perfrec/pdreader.h>
#include <perfrec/pdwriter.h>

#include "buildid-internal.h"

/* Build id of @path as `readelf -n` prints it; length or -1. */
static int readelf_build_id(const char *path, uint8_t id[PERFREC_BUILD_ID_MAX])
{
	char cmd[4200], line[512];
	int len = -1;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "readelf -n '%s' 2>/dev/null", path);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (fgets(line, sizeof(line), p)) {
		char *s = strstr(line, "Build ID: ");
		unsigned int b;

		if (!s || len >= 0)
			continue;
		s += strlen("Build ID: ");
		len = 0;
		while (len < PERFREC_BUILD_ID_MAX && sscanf(s, "%2x", &b) == 1) {
			id[len++] = (uint8_t)b;
			s += 2;
		}
	}
	pclose(p);
	return len;
}

static char *tmp_path(const char *tag)
{
	static char buf[4][256];
	static int n;
	char *p = buf[n++ % 4];

	snprintf(p, 256, "/tmp/test-buildid-%d-%s", (int)getpid(), tag);
	return p;
}

static void write_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, data, len), (ssize_t)len);
	close(fd);
}

static void *slurp(const char *path, size_t *ret_len)
{
	size_t cap = 1 << 20, len = 0;
	char *buf = malloc(cap);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	cr_assert(fd >= 0 && buf);
	while ((n = read(fd, buf + len, cap - len)) > 0) {
		len += (size_t)n;
		if (len == cap) {
			cap *= 2;
			buf = realloc(buf, cap);
			cr_assert(buf);
		}
	}
	close(fd);
	*ret_len = len;
	return buf;
}

Test(buildid, read_elf_matches_readelf)
{
	const char *paths[] = { "/bin/true", "/proc/self/exe", "/bin/ls" };
	int checked = 0;

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		uint8_t want[PERFREC_BUILD_ID_MAX], got[PERFREC_BUILD_ID_MAX];
		char real[4096];
		ssize_t n = readlink(paths[i], real, sizeof(real) - 1);
		const char *p = paths[i];
		int wl, gl;

		if (n > 0) {
			real[n] = '\0';
			p = real;
		}
		wl = readelf_build_id(p, want);
		if (wl <= 0)
			continue;
		gl = perfrec_buildid__read_elf(p, got);
		cr_assert_eq(gl, wl, "%s: length %d, readelf says %d", p, gl, wl);
		cr_assert_arr_eq(got, want, (size_t)wl, "%s: build id differs from readelf's", p);
		checked++;
	}
	if (!checked)
		cr_skip_test("readelf found no build id in /bin/true, the test binary or /bin/ls");
}

Test(buildid, non_elf_and_missing_files_fail_cleanly)
{
	uint8_t id[PERFREC_BUILD_ID_MAX];
	const char *text = tmp_path("text");

	write_file(text, "#!/bin/sh\necho not an ELF file at all, just text\n", 50);
	cr_assert_eq(perfrec_buildid__read_elf(text, id), -ENOEXEC);
	write_file(text, "", 0);
	cr_assert_eq(perfrec_buildid__read_elf(text, id), -ENOEXEC);
	unlink(text);
	cr_assert_eq(perfrec_buildid__read_elf(text, id), -ENOENT);
	cr_assert_eq(perfrec_buildid__read_elf("/tmp", id), -ENOEXEC);
}

/*
 * A copy of /bin/true cut at various points: never a crash, and either an
 * error or (when the cut falls after the note) the true id.  Below the ELF
 * header size it must be -ENOEXEC.
 */
Test(buildid, truncated_elf_errors_without_crashing)
{
	static const size_t cuts[] = { 0, 4, 16, 52, 63, 64, 100, 300, 700, 1000, 4096, 8192 };
	uint8_t want[PERFREC_BUILD_ID_MAX], got[PERFREC_BUILD_ID_MAX];
	const char *cut = tmp_path("cut");
	size_t len;
	char *bin = slurp("/bin/true", &len);
	int wl = perfrec_buildid__read_elf("/bin/true", want);

	if (wl <= 0)
		cr_skip_test("/bin/true has no build id");
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]) && cuts[i] < len; i++) {
		int r;

		write_file(cut, bin, cuts[i]);
		r = perfrec_buildid__read_elf(cut, got);
		if (cuts[i] < sizeof(Elf64_Ehdr))
			cr_assert_eq(r, -ENOEXEC, "cut at %zu: %d", cuts[i], r);
		else if (r > 0)
			cr_assert(r == wl && !memcmp(got, want, (size_t)wl), "cut at %zu: wrong id", cuts[i]);
		else
			cr_assert(r == -ENOEXEC || r == -ENOENT, "cut at %zu: %d", cuts[i], r);
	}
	/* Header pointing everywhere but the file: offsets and counts past the end. */
	{
		Elf64_Ehdr *eh = (Elf64_Ehdr *)bin;

		eh->e_phoff = 0x7fffffffffffff00ULL;
		eh->e_shoff = len - 8;
		eh->e_shnum = 0xffff;
		write_file(cut, bin, len);
		cr_assert_eq(perfrec_buildid__read_elf(cut, got), -ENOEXEC);
	}
	unlink(cut);
	free(bin);
}

static void put16(unsigned char *p, uint16_t v, bool be)
{
	if (be)
		v = __builtin_bswap16(v);
	memcpy(p, &v, 2);
}

static void put32(unsigned char *p, uint32_t v, bool be)
{
	if (be)
		v = __builtin_bswap32(v);
	memcpy(p, &v, 4);
}

static void put64(unsigned char *p, uint64_t v, bool be)
{
	if (be)
		v = __builtin_bswap64(v);
	memcpy(p, &v, 8);
}

/* A GNU note ("GNU\0", type 3) with @id_len bytes, preceded by a decoy note. */
static size_t make_notes(unsigned char *buf, const uint8_t *id, size_t id_len, bool be)
{
	size_t off = 0;

	/* decoy: an ABI tag note (type 1) owned by "GNU" */
	put32(buf + off, 4, be);
	put32(buf + off + 4, 16, be);
	put32(buf + off + 8, NT_GNU_ABI_TAG, be);
	memcpy(buf + off + 12, "GNU", 4);
	memset(buf + off + 16, 0x5a, 16);
	off += 32;
	put32(buf + off, 4, be);
	put32(buf + off + 4, (uint32_t)id_len, be);
	put32(buf + off + 8, NT_GNU_BUILD_ID, be);
	memcpy(buf + off + 12, "GNU", 4);
	memcpy(buf + off + 16, id, id_len);
	off += 16 + ((id_len + 3) & ~(size_t)3);
	return off;
}

/*
 * A minimal ELF file of the given class and byte order whose notes are
 * reachable through a PT_NOTE program header, or only through a SHT_NOTE
 * section header.  Returns the file size.
 */
static size_t make_elf(unsigned char *buf, bool is64, bool be, bool sections, const uint8_t *id, size_t id_len)
{
	size_t ehsz = is64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr);
	size_t phsz = is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr);
	size_t shsz = is64 ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr);
	size_t tab = ehsz, notes = ehsz + 2 * (sections ? shsz : phsz), nlen;
	unsigned char *e = buf, *t;

	memset(buf, 0, 4096);
	memcpy(e, ELFMAG, SELFMAG);
	e[EI_CLASS] = is64 ? ELFCLASS64 : ELFCLASS32;
	e[EI_DATA] = be ? ELFDATA2MSB : ELFDATA2LSB;
	e[EI_VERSION] = EV_CURRENT;
	nlen = make_notes(buf + notes, id, id_len, be);
	if (is64) {
		put16(e + offsetof(Elf64_Ehdr, e_type), ET_EXEC, be);
		put64(e + (sections ? offsetof(Elf64_Ehdr, e_shoff) : offsetof(Elf64_Ehdr, e_phoff)), tab, be);
		put16(e + offsetof(Elf64_Ehdr, e_phentsize), (uint16_t)phsz, be);
		put16(e + offsetof(Elf64_Ehdr, e_shentsize), (uint16_t)shsz, be);
		put16(e + (sections ? offsetof(Elf64_Ehdr, e_shnum) : offsetof(Elf64_Ehdr, e_phnum)), 2, be);
	} else {
		put16(e + offsetof(Elf32_Ehdr, e_type), ET_EXEC, be);
		put32(e + (sections ? offsetof(Elf32_Ehdr, e_shoff) : offsetof(Elf32_Ehdr, e_phoff)),
		      (uint32_t)tab, be);
		put16(e + offsetof(Elf32_Ehdr, e_phentsize), (uint16_t)phsz, be);
		put16(e + offsetof(Elf32_Ehdr, e_shentsize), (uint16_t)shsz, be);
		put16(e + (sections ? offsetof(Elf32_Ehdr, e_shnum) : offsetof(Elf32_Ehdr, e_phnum)), 2, be);
	}
	/* entry 0: PT_LOAD / SHT_NULL; entry 1: the notes */
	t = buf + tab;
	if (!sections)
		put32(t, PT_LOAD, be);
	t += sections ? shsz : phsz;
	if (is64 && !sections) {
		put32(t + offsetof(Elf64_Phdr, p_type), PT_NOTE, be);
		put64(t + offsetof(Elf64_Phdr, p_offset), notes, be);
		put64(t + offsetof(Elf64_Phdr, p_filesz), nlen, be);
		put64(t + offsetof(Elf64_Phdr, p_align), 4, be);
	} else if (!sections) {
		put32(t + offsetof(Elf32_Phdr, p_type), PT_NOTE, be);
		put32(t + offsetof(Elf32_Phdr, p_offset), (uint32_t)notes, be);
		put32(t + offsetof(Elf32_Phdr, p_filesz), (uint32_t)nlen, be);
		put32(t + offsetof(Elf32_Phdr, p_align), 4, be);
	} else if (is64) {
		put32(t + offsetof(Elf64_Shdr, sh_type), SHT_NOTE, be);
		put64(t + offsetof(Elf64_Shdr, sh_offset), notes, be);
		put64(t + offsetof(Elf64_Shdr, sh_size), nlen, be);
		put64(t + offsetof(Elf64_Shdr, sh_addralign), 4, be);
	} else {
		put32(t + offsetof(Elf32_Shdr, sh_type), SHT_NOTE, be);
		put32(t + offsetof(Elf32_Shdr, sh_offset), (uint32_t)notes, be);
		put32(t + offsetof(Elf32_Shdr, sh_size), (uint32_t)nlen, be);
		put32(t + offsetof(Elf32_Shdr, sh_addralign), 4, be);
	}
	return notes + nlen;
}

Test(buildid, hand_built_elf_of_each_class_and_byte_order)
{
	static const struct {
		bool is64, be, sections;
		size_t id_len;
	} cases[] = {
		{ true, false, false, 20 }, { false, false, false, 20 }, { true, true, false, 16 },
		{ false, true, false, 8 },  { true, false, true, 20 },   { false, false, true, 12 },
		{ true, true, true, 20 },
	};
	const char *path = tmp_path("elf");

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		unsigned char file[4096];
		uint8_t id[PERFREC_BUILD_ID_MAX], got[PERFREC_BUILD_ID_MAX];
		size_t len;
		int r;

		for (size_t k = 0; k < sizeof(id); k++)
			id[k] = (uint8_t)(0x11 * (i + 1) + 7 * k);
		len = make_elf(file, cases[i].is64, cases[i].be, cases[i].sections, id, cases[i].id_len);
		write_file(path, file, len);
		memset(got, 0, sizeof(got));
		r = perfrec_buildid__read_elf(path, got);
		cr_assert_eq(r, (int)cases[i].id_len, "case %zu: %d", i, r);
		cr_assert_arr_eq(got, id, cases[i].id_len, "case %zu: wrong id", i);
		/* the note cut short by 4 bytes: no id, and no read past the end */
		write_file(path, file, len - 4);
		r = perfrec_buildid__read_elf(path, got);
		cr_assert(r < 0, "case %zu cut: %d", i, r);
	}
	unlink(path);
}

Test(buildid, parse_notes_finds_gnu_build_id)
{
	unsigned char blob[256];
	uint8_t id[20], got[PERFREC_BUILD_ID_MAX];
	size_t len;

	for (size_t k = 0; k < sizeof(id); k++)
		id[k] = (uint8_t)(0xa0 + k);
	len = make_notes(blob, id, 20, false);
	cr_assert_eq(perfrec_buildid__parse_notes(blob, len, got), 20);
	cr_assert_arr_eq(got, id, 20);
	/* odd length: desc padded to 4 */
	len = make_notes(blob, id, 13, false);
	cr_assert_eq(perfrec_buildid__parse_notes(blob, len, got), 13);
	cr_assert_arr_eq(got, id, 13);
	/* cut anywhere before the id's last byte: not found, never past len */
	for (size_t cut = 0; cut < 32 + 16 + 13; cut++)
		cr_assert_eq(perfrec_buildid__parse_notes(blob, cut, got), -ENOENT, "cut %zu", cut);
	/* wrong owner or type */
	len = make_notes(blob, id, 20, false);
	memcpy(blob + 32 + 12, "GNX", 4);
	cr_assert_eq(perfrec_buildid__parse_notes(blob, len, got), -ENOENT);
	make_notes(blob, id, 20, false);
	blob[32 + 8] = 4;
	cr_assert_eq(perfrec_buildid__parse_notes(blob, len, got), -ENOENT);
	/* a descsz that claims more than the blob */
	make_notes(blob, id, 20, false);
	put32(blob + 32 + 4, 0xfffffff0u, false);
	cr_assert_eq(perfrec_buildid__parse_notes(blob, len, got), -ENOENT);
}

Test(buildid, kernel_reads_notes_under_sysfs_root)
{
	char root[256], dir[300], file[320];
	unsigned char blob[256];
	uint8_t id[20], got[PERFREC_BUILD_ID_MAX];
	size_t len;

	for (size_t k = 0; k < sizeof(id); k++)
		id[k] = (uint8_t)(3 * k + 1);
	snprintf(root, sizeof(root), "%s", tmp_path("sys"));
	snprintf(dir, sizeof(dir), "%s/kernel", root);
	snprintf(file, sizeof(file), "%s/notes", dir);
	cr_assert_eq(mkdir(root, 0700), 0);
	cr_assert_eq(mkdir(dir, 0700), 0);
	len = make_notes(blob, id, 20, false);
	write_file(file, blob, len);
	cr_assert_eq(perfrec_buildid__kernel(root, got), 20);
	cr_assert_arr_eq(got, id, 20);
	unlink(file);
	cr_assert_eq(perfrec_buildid__kernel(root, got), -ENOENT);
	rmdir(dir);
	rmdir(root);
}

/* --- table ---------------------------------------------------------------- */

/* A kernel-style MMAP2 record with a build id and a sample_id trailer. */
static size_t make_mmap2(unsigned char *buf, uint16_t cpumode, uint32_t pid, const char *name,
			 const uint8_t *id, size_t id_len)
{
	size_t nlen = strlen(name) + 1, size = (72 + nlen + 7) / 8 * 8 + 16;
	struct perf_event_header h = {
		.type = PERF_RECORD_MMAP2,
		.misc = (uint16_t)(cpumode | PERF_RECORD_MISC_MMAP_BUILD_ID),
		.size = (uint16_t)size,
	};
	uint64_t start = 0x400000, mlen = 0x1000, pgoff = 0;

	memset(buf, 0, size);
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + 8, &pid, 4);
	memcpy(buf + 12, &pid, 4);
	memcpy(buf + 16, &start, 8);
	memcpy(buf + 24, &mlen, 8);
	memcpy(buf + 32, &pgoff, 8);
	buf[40] = (uint8_t)id_len;
	memcpy(buf + 44, id, id_len);
	memcpy(buf + 72, name, nlen);
	memset(buf + size - 16, 0xee, 16); /* trailer: must not be taken for the name */
	return size;
}

struct entry {
	uint16_t misc;
	int32_t pid;
	uint8_t id[20];
	uint8_t id_len;
	char name[256];
};

/* Decode a HEADER_BUILD_ID body as perf 6.1 does; returns the entry count. */
static size_t decode_build_ids(const unsigned char *p, size_t len, struct entry *out, size_t max)
{
	size_t off = 0, n = 0;

	while (off < len) {
		struct perf_event_header h;
		size_t nmax;

		cr_assert(len - off >= BUILDID_ENTRY_HEAD, "entry header cut at %zu", off);
		memcpy(&h, p + off, sizeof(h));
		cr_assert(h.size > BUILDID_ENTRY_HEAD && h.size <= len - off, "bad entry size %u", h.size);
		cr_assert_eq((h.size - BUILDID_ENTRY_HEAD) % 64, 0, "name not padded to 64");
		cr_assert(h.misc & BUILDID_MISC_BUILD_ID_SIZE, "size flag missing");
		cr_assert(n < max);
		out[n].misc = h.misc;
		memcpy(&out[n].pid, p + off + 8, 4);
		memcpy(out[n].id, p + off + 12, 20);
		out[n].id_len = p[off + 32];
		cr_assert(p[off + 33] == 0 && p[off + 34] == 0 && p[off + 35] == 0, "reserved bytes not zero");
		nmax = h.size - BUILDID_ENTRY_HEAD;
		cr_assert(strnlen((const char *)p + off + 36, nmax) < nmax, "name not terminated");
		snprintf(out[n].name, sizeof(out[n].name), "%s", (const char *)p + off + 36);
		for (size_t k = strlen(out[n].name); k < nmax; k++)
			cr_assert_eq(p[off + 36 + k], 0, "padding not zero");
		n++;
		off += h.size;
	}
	return n;
}

static const struct entry *find_entry(const struct entry *e, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(e[i].name, name))
			return &e[i];
	return NULL;
}

static const uint8_t ID_TEN[20] = { 0x10, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19 };
static const uint8_t ID_TWENTY[20] = { 0x20, 0xff, 0xfe, 0xfd };
static const uint8_t ID_LIBC[20] = { 0xc0, 0xc1, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7 };
static const uint8_t ID_KERNEL[20] = { 0x4b, 0x45, 0x52, 0x4e, 0x45, 0x4c, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 0x99 };

static struct perfrec_buildid_table *fill_table(void)
{
	struct perfrec_buildid_table *t;
	unsigned char rec[512];

	cr_assert_eq(perfrec_buildid_table__new(&t), 0);
	make_mmap2(rec, PERF_RECORD_MISC_USER, 10, "/usr/bin/ten", ID_TEN, 20);
	perfrec_buildid_table__note_mmap2(t, (void *)rec);
	make_mmap2(rec, PERF_RECORD_MISC_USER, 10, "/lib/libc.so.6", ID_LIBC, 8);
	perfrec_buildid_table__note_mmap2(t, (void *)rec);
	make_mmap2(rec, PERF_RECORD_MISC_USER, 20, "/usr/bin/twenty", ID_TWENTY, 20);
	perfrec_buildid_table__note_mmap2(t, (void *)rec);
	make_mmap2(rec, PERF_RECORD_MISC_USER, 20, "/lib/libc.so.6", ID_LIBC, 8);
	perfrec_buildid_table__note_mmap2(t, (void *)rec);
	make_mmap2(rec, PERF_RECORD_MISC_KERNEL, (uint32_t)-1, "[kernel.kallsyms]_text", ID_KERNEL, 20);
	perfrec_buildid_table__note_mmap2(t, (void *)rec);
	/* without the build-id flag the union holds maj/min/ino: ignored */
	make_mmap2(rec, PERF_RECORD_MISC_USER, 10, "/usr/bin/noflag", ID_TEN, 20);
	((struct perf_event_header *)rec)->misc = PERF_RECORD_MISC_USER;
	perfrec_buildid_table__note_mmap2(t, (void *)rec);
	return t;
}

static size_t build_entries(struct perfrec_buildid_table *t, struct entry *e, size_t max)
{
	struct featbuf fb;
	size_t n;
	int r;

	featbuf_init(&fb);
	r = buildid_table_build_feature(t, &fb);
	cr_assert(r >= 0, "build: %d", r);
	n = decode_build_ids(fb.buf, fb.len, e, max);
	cr_assert_eq(n, (size_t)r, "returned count %d, decoded %zu", r, n);
	featbuf_exit(&fb);
	return n;
}

Test(buildid, table_writes_sampled_pids_binaries_and_kernel_only)
{
	struct perfrec_buildid_table *t = fill_table();
	struct entry e[16];
	const struct entry *x;
	size_t n;

	perfrec_buildid_table__note_sample_pid(t, 10, false);
	perfrec_buildid_table__note_sample_pid(t, 0, true);
	n = build_entries(t, e, 16);
	cr_assert_eq(n, 3, "entries: %zu", n);
	cr_assert_null(find_entry(e, n, "/usr/bin/twenty"), "unsampled pid 20's binary written");
	cr_assert_null(find_entry(e, n, "/usr/bin/noflag"));
	x = find_entry(e, n, "/usr/bin/ten");
	cr_assert_not_null(x);
	cr_assert_eq(x->pid, -1);
	cr_assert_eq(x->misc & PERF_RECORD_MISC_CPUMODE_MASK, PERF_RECORD_MISC_USER);
	cr_assert_eq(x->id_len, 20);
	cr_assert_arr_eq(x->id, ID_TEN, 20);
	x = find_entry(e, n, "/lib/libc.so.6");
	cr_assert_not_null(x);
	cr_assert_eq(x->id_len, 8);
	cr_assert_arr_eq(x->id, ID_LIBC, 8);
	for (size_t k = 8; k < 20; k++)
		cr_assert_eq(x->id[k], 0, "id padding not zero");
	x = find_entry(e, n, "[kernel.kallsyms]");
	cr_assert_not_null(x);
	cr_assert_eq(x->misc & PERF_RECORD_MISC_CPUMODE_MASK, PERF_RECORD_MISC_KERNEL);
	cr_assert_arr_eq(x->id, ID_KERNEL, 20);
	perfrec_buildid_table__free(t);
}

/*
 * A [vdso] map's build id stays in its MMAP2 only: perf takes a table
 * entry named [vdso] for its vdso binary, which it then finds only in a
 * build-id cache, and with ~/.debug empty names no vdso frame.
 */
Test(buildid, table_leaves_the_vdso_out)
{
	struct perfrec_buildid_table *t = fill_table();
	unsigned char rec[512];
	struct entry e[16];
	size_t n;

	make_mmap2(rec, PERF_RECORD_MISC_USER, 10, "[vdso]", ID_TWENTY, 20);
	perfrec_buildid_table__note_mmap2(t, (void *)rec);
	perfrec_buildid_table__note_sample_pid(t, 10, false);
	n = build_entries(t, e, 16);
	cr_assert_null(find_entry(e, n, "[vdso]"), "the vdso is in HEADER_BUILD_ID");
	cr_assert_not_null(find_entry(e, n, "/usr/bin/ten"));
	perfrec_buildid_table__free(t);
}

/*
 * A new file describes its processes again (synthesized MMAP2s, then the
 * rings'): the last file's processes and binaries are forgotten, so none
 * of it lingers in a long run.
 */
Test(buildid, table_reset_forgets_the_last_files_processes)
{
	struct perfrec_buildid_table *t = fill_table();
	unsigned char rec[512];
	struct entry e[16];
	size_t n;

	perfrec_buildid_table__note_sample_pid(t, 10, false);
	perfrec_buildid_table__note_sample_pid(t, 0, true);
	cr_assert_eq(perfrec_buildid_table__nr_processes(t), 2);
	perfrec_buildid_table__reset_samples(t);
	cr_assert_eq(perfrec_buildid_table__nr_processes(t), 0);
	cr_assert_eq(build_entries(t, e, 16), 0);
	/* next file: samples of pid 20 name nothing until it is described again */
	perfrec_buildid_table__note_sample_pid(t, 20, false);
	cr_assert_eq(build_entries(t, e, 16), 0);
	make_mmap2(rec, PERF_RECORD_MISC_USER, 20, "/usr/bin/twenty", ID_TWENTY, 20);
	perfrec_buildid_table__note_mmap2(t, (void *)rec);
	make_mmap2(rec, PERF_RECORD_MISC_USER, 20, "/lib/libc.so.6", ID_LIBC, 8);
	perfrec_buildid_table__note_mmap2(t, (void *)rec);
	perfrec_buildid_table__note_sample_pid(t, 20, false);
	n = build_entries(t, e, 16);
	cr_assert_eq(n, 2);
	cr_assert_not_null(find_entry(e, n, "/usr/bin/twenty"));
	cr_assert_not_null(find_entry(e, n, "/lib/libc.so.6"));
	cr_assert_null(find_entry(e, n, "[kernel.kallsyms]"));
	perfrec_buildid_table__free(t);
	perfrec_buildid_table__free(NULL);
}

/* A PERF_RECORD_EXIT (struct perf_record_fork) with a sample_id trailer. */
static void note_exit(struct perfrec_buildid_table *t, uint32_t pid, uint32_t tid)
{
	struct perf_event_header h = { .type = PERF_RECORD_EXIT, .size = 8 + 24 + 16 };
	unsigned char rec[64];
	uint32_t ppid = 1;
	uint64_t time = 12345;

	memset(rec, 0xee, h.size);
	memcpy(rec, &h, sizeof(h));
	memcpy(rec + 8, &pid, 4);
	memcpy(rec + 12, &ppid, 4);
	memcpy(rec + 16, &tid, 4);
	memcpy(rec + 20, &ppid, 4);
	memcpy(rec + 24, &time, 8);
	perfrec_buildid_table__note_exit(t, (void *)rec);
}

/*
 * One long file while a host starts 100,000 short processes, each mapping
 * its own binary and libc: the table must follow the processes alive, not
 * all that ever ran (it grew by ~120 bytes per process, without bound, in
 * a soak).  The rings are read one after another, so for every other
 * process the EXIT comes before its exec's MMAP2s.  A tenth of them is
 * sampled, and their binaries must still be written after they are gone;
 * the others' must not.
 */
Test(buildid, table_forgets_processes_that_exit)
{
	struct perfrec_buildid_table *t;
	unsigned char rec[512];
	uint8_t id[20] = { 0xab };
	char name[64];
	struct featbuf fb;
	size_t most = 0;
	int r;

	cr_assert_eq(perfrec_buildid_table__new(&t), 0);
	/* a long-lived process throughout */
	make_mmap2(rec, PERF_RECORD_MISC_USER, 1, "/sbin/init", ID_TEN, 20);
	perfrec_buildid_table__note_mmap2(t, (void *)rec);
	for (uint32_t i = 0; i < 100000; i++) {
		uint32_t pid = 1000 + i;
		bool reordered = i % 2;

		if (reordered)
			note_exit(t, pid, pid);
		snprintf(name, sizeof(name), "/opt/bin/tool-%u", i);
		memcpy(id + 1, &i, sizeof(i));
		make_mmap2(rec, PERF_RECORD_MISC_USER, pid, name, id, 20);
		perfrec_buildid_table__note_mmap2(t, (void *)rec);
		make_mmap2(rec, PERF_RECORD_MISC_USER, pid, "/lib/libc.so.6", ID_LIBC, 8);
		perfrec_buildid_table__note_mmap2(t, (void *)rec);
		note_exit(t, pid, pid + 500000); /* a thread of it */
		if (i % 10 == 0 || i % 10 == 5)
			perfrec_buildid_table__note_sample_pid(t, pid, false);
		if (!reordered)
			note_exit(t, pid, pid);
		if (perfrec_buildid_table__nr_processes(t) > most)
			most = perfrec_buildid_table__nr_processes(t);
	}
	cr_assert(most <= 2048, "the table held %zu processes at once, 2 alive at most", most);
	/* the feature: init is not sampled; every sampled tool and libc, nothing else */
	featbuf_init(&fb);
	r = buildid_table_build_feature(t, &fb);
	cr_assert_eq(r, 20000 + 1, "entries: %d", r);
	cr_assert_not_null(memmem(fb.buf, fb.len, "/opt/bin/tool-99990", 20));
	cr_assert_not_null(memmem(fb.buf, fb.len, "/opt/bin/tool-99995", 20));
	cr_assert_not_null(memmem(fb.buf, fb.len, "/opt/bin/tool-0", 16));
	cr_assert_null(memmem(fb.buf, fb.len, "/opt/bin/tool-1", 16));
	cr_assert_null(memmem(fb.buf, fb.len, "/sbin/init", 10));
	featbuf_exit(&fb);
	perfrec_buildid_table__free(t);
}

/*
 * A process's last samples, even its exec's MMAP2, can be drained after
 * its EXIT: they still count.  A thread's EXIT forgets nothing.
 */
Test(buildid, table_counts_what_is_drained_after_the_exit)
{
	struct perfrec_buildid_table *t = fill_table();
	unsigned char rec[512];
	struct entry e[16];
	size_t n;

	note_exit(t, 10, 11);  /* a thread of pid 10 */
	note_exit(t, 20, 20);  /* pid 20 itself */
	note_exit(t, 30, 30);  /* pid 30, whose MMAP2 is still in another ring */
	perfrec_buildid_table__note_sample_pid(t, 10, false);
	perfrec_buildid_table__note_sample_pid(t, 20, false);
	perfrec_buildid_table__note_sample_pid(t, 30, false);
	make_mmap2(rec, PERF_RECORD_MISC_USER, 30, "/usr/bin/thirty", ID_TWENTY, 4);
	perfrec_buildid_table__note_mmap2(t, (void *)rec);
	n = build_entries(t, e, 16);
	cr_assert_eq(n, 4);
	cr_assert_not_null(find_entry(e, n, "/usr/bin/ten"));
	cr_assert_not_null(find_entry(e, n, "/usr/bin/twenty"));
	cr_assert_not_null(find_entry(e, n, "/usr/bin/thirty"));
	perfrec_buildid_table__free(t);
}

Test(buildid, table_ignores_malformed_mmap2)
{
	struct perfrec_buildid_table *t;
	unsigned char rec[512];
	struct perf_event_header *h = (void *)rec;
	struct entry e[4];

	cr_assert_eq(perfrec_buildid_table__new(&t), 0);
	/* name not NUL-terminated within the record */
	make_mmap2(rec, PERF_RECORD_MISC_USER, 7, "/bin/unterminated", ID_TEN, 20);
	h->size = 72 + 8;
	memset(rec + 72, 'x', 8);
	perfrec_buildid_table__note_mmap2(t, h);
	/* build id size out of range */
	make_mmap2(rec, PERF_RECORD_MISC_USER, 7, "/bin/toolong", ID_TEN, 20);
	rec[40] = 21;
	perfrec_buildid_table__note_mmap2(t, h);
	/* too short to hold the fixed part */
	make_mmap2(rec, PERF_RECORD_MISC_USER, 7, "/bin/short", ID_TEN, 20);
	h->size = 40;
	perfrec_buildid_table__note_mmap2(t, h);
	/* not an MMAP2 */
	make_mmap2(rec, PERF_RECORD_MISC_USER, 7, "/bin/mmap1", ID_TEN, 20);
	h->type = PERF_RECORD_MMAP;
	perfrec_buildid_table__note_mmap2(t, h);
	perfrec_buildid_table__note_sample_pid(t, 7, false);
	cr_assert_eq(build_entries(t, e, 4), 0);
	perfrec_buildid_table__free(t);
}

/* The table's feature through the real writer and reader. */
Test(buildid, add_feature_round_trips_through_writer_and_reader)
{
	struct perfrec_buildid_table *t = fill_table();
	struct perfrec_pdwriter *w;
	struct perfrec_pdreader *r;
	struct perf_event_attr attr = {
		.size = sizeof(attr), .type = PERF_TYPE_SOFTWARE, .config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID,
		.sample_id_all = 1,
	};
	uint64_t id = 1;
	const char *path = tmp_path("pd");
	const void *body;
	size_t len, n;
	struct entry e[8];
	int fd;

	perfrec_buildid_table__note_sample_pid(t, 20, false);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	cr_assert(fd >= 0);
	cr_assert_eq(perfrec_pdwriter__new(fd, &(struct perfrec_pdwriter_opts){ .sz = sizeof(struct perfrec_pdwriter_opts), .owns_fd = true }, &w), 0);
	cr_assert_eq(perfrec_pdwriter__add_attr(w, &attr, &id, 1, "cpu-clock"), 0);
	cr_assert_eq(perfrec_buildid_table__add_feature(t, w), 0);
	cr_assert_eq(perfrec_pdwriter__finish(w), 0);
	perfrec_pdwriter__free(w, false);
	cr_assert_eq(perfrec_pdreader__open(path, NULL, &r), 0);
	cr_assert_eq(perfrec_pdreader__feature(r, PERFREC_FEAT_BUILD_ID, &body, &len), 0);
	n = decode_build_ids(body, len, e, 8);
	cr_assert_eq(n, 2);
	cr_assert_not_null(find_entry(e, n, "/usr/bin/twenty"));
	cr_assert_not_null(find_entry(e, n, "/lib/libc.so.6"));
	perfrec_pdreader__free(r);
	unlink(path);
	perfrec_buildid_table__free(t);
}
