// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Files a process maps are its to choose: an ELF for another machine, of
 * another class or byte order, a relocatable object, a file that is cut
 * short or rewritten while the unwinder holds it.  None may take the
 * unwinder down (libdwfl asserts that its frame state has room for the
 * first module's machine's registers: aarch64 has 97, its bitmap 64, and
 * perfrecd died of that), and none may be unwound through; the process's
 * real code still is.  Then the bounds: however many distinct binaries
 * come and go, the unwinder's open files and sessions stay under their
 * caps, and an exited process's state is gone.
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <perfrec/event.h>
#include <perfrec/evlist.h>
#include <perfrec/unwind.h>

#include "unwind-capture.h"
#include "unwind-internal.h"

/*
 * The tests of what libdwfl's sessions are shown: with the unwind tables,
 * a session is built only where a table hands over to libdwfl, so these
 * make every sample go to libdwfl, which reports every code map at once.
 * The tables reach a file through the same checks (find_elf()), only the
 * files samples hit.
 */
static void libdwfl_only(struct perfrec_unwinder *u)
{
	struct perfrec_unwinder_tables_opts to = { .off = true };

	cr_assert_eq(perfrec_unwinder__set_tables(u, &to), 0);
}

static struct snap snap;

static void setup(void)
{
	find_stack_end();
	outer_marker(&snap);
}

static void take_map(void *ctx, const struct perf_event_header *h)
{
	cr_assert_eq(perfrec_unwinder__rewrite(ctx, h, NULL, NULL, 0), 0);
}

/* Unwind the snapshot; the number of user frames (the ip first). */
static uint64_t unwind_frames(struct perfrec_unwinder *u, uint64_t *ips, size_t max)
{
	static unsigned char in[65536], out[65536];
	struct perf_event_attr a = attr(), na;
	struct perfrec_sample smp;
	int n = perfrec_unwinder__rewrite(u, sample(&snap, in), &a, out, sizeof(out));

	cr_assert_gt(n, 0, "rewrite: %d", n);
	perfrec_unwinder__rewrite_attr(&a, &na);
	cr_assert_eq(perfrec_sample__parse_attr((void *)out, &na, &smp), 0);
	cr_assert_geq(smp.nr_callchain, 2);
	cr_assert_eq(smp.callchain[0], PERF_CONTEXT_USER);
	cr_assert_eq(smp.cgroup, 0x77);
	for (uint64_t i = 0; i + 1 < smp.nr_callchain && i < max; i++)
		ips[i] = smp.callchain[1 + i];
	return smp.nr_callchain - 1;
}

static bool reaches_outer(struct perfrec_unwinder *u)
{
	uint64_t ips[600], a = (uint64_t)(uintptr_t)outer_marker;
	uint64_t n = unwind_frames(u, ips, 600);

	for (uint64_t i = 1; i < n; i++)
		if (ips[i] >= a && ips[i] < a + 128)
			return true;
	return false;
}

/* A copy of this test binary at @path with @len bytes at @off replaced by @bytes. */
static void patched_copy(const char *path, off_t off, const void *bytes, size_t len)
{
	int in = open("/proc/self/exe", O_RDONLY | O_CLOEXEC), out;
	char buf[65536];
	ssize_t n;

	cr_assert_geq(in, 0);
	out = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	cr_assert_geq(out, 0, "%s: %m", path);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		cr_assert_eq(write(out, buf, (size_t)n), n);
	if (len)
		cr_assert_eq(pwrite(out, bytes, len, off), (ssize_t)len);
	close(in);
	close(out);
}

/* An executable MMAP2 of @path (by its device and inode) in this process at @start. */
static void feed_file_map(struct perfrec_unwinder *u, const char *path, uint64_t start, uint64_t len)
{
	_Alignas(8) unsigned char rec[PATH_MAX + 256] = {0};
	struct perf_event_header *h;
	unsigned char *p = rec + sizeof(*h);
	struct stat st;
	uint32_t maj, min;
	uint64_t ino;

	cr_assert_eq(stat(path, &st), 0);
	maj = major(st.st_dev);
	min = minor(st.st_dev);
	ino = (uint64_t)st.st_ino;
	h = mmap2_record(rec, start, len, 0, PROT_READ | PROT_EXEC, path);
	memcpy(p + 32, &maj, 4);
	memcpy(p + 36, &min, 4);
	memcpy(p + 40, &ino, 8);
	take_map(u, h);
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	cr_assert_not_null(d);
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n - 1; /* opendir's own */
}

/* One data map of process @pid: a space the unwinder knows. */
static void feed_one(struct perfrec_unwinder *u, uint32_t pid)
{
	_Alignas(8) unsigned char rec[256] = {0};
	struct perf_event_header *h = mmap2_record(rec, 0x1000000, 0x1000, 0, PROT_READ, "//anon");

	memcpy(rec + sizeof(*h), &pid, 4);
	memcpy(rec + sizeof(*h) + 4, &pid, 4);
	take_map(u, h);
}

static char tmpdir[] = "/tmp/perfrec-unwind-input-XXXXXX";

static void make_tmpdir(void)
{
	setup();
	cr_assert_not_null(mkdtemp(tmpdir));
}

static void rm_tmpdir(void)
{
	DIR *d = opendir(tmpdir);
	struct dirent *de;

	while (d && (de = readdir(d)))
		if (de->d_name[0] != '.')
			unlinkat(dirfd(d), de->d_name, 0);
	if (d)
		closedir(d);
	rmdir(tmpdir);
}

struct bad_header {
	char what[24];
	off_t off;
	unsigned char bytes[2];
	size_t len;
};

/*
 * The first module decides libdwfl's machine: each of these, mapped below
 * the program, was what the process was unwound as.  aarch64 (97 frame
 * registers), ppc64 (145), sparc (103) and riscv (66) overflow the 64-bit
 * map of set registers (the assertion seen); the rest are not x86_64 code
 * either.
 */
ParameterizedTestParameters(input, a_foreign_elf_is_refused)
{
	static struct bad_header p[] = {
		{ "aarch64", offsetof(Elf64_Ehdr, e_machine), { EM_AARCH64, 0 }, 2 },
		{ "ppc64", offsetof(Elf64_Ehdr, e_machine), { EM_PPC64, 0 }, 2 },
		{ "sparcv9", offsetof(Elf64_Ehdr, e_machine), { EM_SPARCV9, 0 }, 2 },
		{ "riscv", offsetof(Elf64_Ehdr, e_machine), { EM_RISCV, 0 }, 2 },
		{ "i386", offsetof(Elf64_Ehdr, e_machine), { EM_386, 0 }, 2 },
		{ "unknown machine", offsetof(Elf64_Ehdr, e_machine), { 0x34, 0x12 }, 2 },
		{ "ELFCLASS32", EI_CLASS, { ELFCLASS32 }, 1 },
		{ "big endian", EI_DATA, { ELFDATA2MSB }, 1 },
		{ "relocatable", offsetof(Elf64_Ehdr, e_type), { ET_REL, 0 }, 2 },
		{ "core", offsetof(Elf64_Ehdr, e_type), { ET_CORE, 0 }, 2 },
		{ "not ELF", 0, { 'M', 'Z' }, 2 },
	};

	return cr_make_param_array(struct bad_header, p, sizeof(p) / sizeof(p[0]));
}

ParameterizedTest(struct bad_header *b, input, a_foreign_elf_is_refused, .init = make_tmpdir, .fini = rm_tmpdir)
{
	struct perfrec_unwinder_opts o = { .sz = sizeof(o), .proc = "" };
	struct perfrec_unwinder_stats st;
	struct perfrec_unwinder *u;
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/foreign", tmpdir);
	patched_copy(path, b->off, b->bytes, b->len);
	cr_assert_eq(perfrec_unwinder__new(&o, &u), 0);
	libdwfl_only(u);
	/* Below everything else: the first module libdwfl meets. */
	feed_file_map(u, path, 0x10000, 0x1000);
	for_each_map(NULL, NULL, take_map, u);
	cr_expect(reaches_outer(u), "%s: the program's own code is no longer unwound", b->what);
	perfrec_unwinder__stats(u, &st);
	cr_expect_geq(st.elf_missing, 1, "%s: the file was taken", b->what);
	cr_expect_geq(st.elf_refused, 1, "%s: not counted as refused", b->what);
	perfrec_unwinder__free(u);
}

/* glibc's per-thread cache takes frees without M_PERTURB's fill: fill it up first. */
static void fill_tcache(void)
{
	for (size_t sz = 16; sz <= 1024; sz += 16) {
		void *p[8];

		for (int i = 0; i < 8; i++)
			p[i] = malloc(sz);
		for (int i = 0; i < 8; i++)
			free(p[i]);
	}
}

/*
 * An ET_EXEC file's module lies where its headers say, whatever the base
 * it is mapped at: mapped a second time elsewhere, libdwfl took the new
 * report for a clash and dropped the module it had, whose machine backend
 * the session's unwinding state still used (freed memory read as the
 * number of registers: the assertion, an abort or a crash, as its bytes
 * happened to be).  Here the first module, which gave the session its
 * machine, is mapped again after the session was built, many times.
 */
Test(input, a_fixed_address_file_mapped_twice_keeps_the_session_sound, .init = make_tmpdir, .fini = rm_tmpdir)
{
	static const unsigned char et_exec[2] = { ET_EXEC, 0 };
	struct perfrec_unwinder_opts o = { .sz = sizeof(o), .proc = "" };
	struct perfrec_unwinder *u;
	char path[PATH_MAX];

	/*
	 * Freed memory filled with a pattern: whatever the unwinder reads
	 * after a free (in libdw, out of ASan's sight) is then plainly wrong.
	 */
	mallopt(M_PERTURB, 0xa5);
	fill_tcache();
	snprintf(path, sizeof(path), "%s/fixed", tmpdir);
	patched_copy(path, offsetof(Elf64_Ehdr, e_type), et_exec, sizeof(et_exec));
	cr_assert_eq(perfrec_unwinder__new(&o, &u), 0);
	feed_file_map(u, path, 0x10000, 0x1000);
	for_each_map(NULL, NULL, take_map, u);
	cr_expect(reaches_outer(u));
	for (uint64_t i = 1; i <= 64; i++) {
		feed_file_map(u, path, 0x10000 + i * 0x2000, 0x1000);
		cr_expect(reaches_outer(u), "mapped %" PRIu64 " times: the program is no longer unwound", i + 1);
	}
	perfrec_unwinder__free(u);
}

/* The maps of this process as process @pid, the program's named @path (by its device and inode). */
struct swap {
	struct perfrec_unwinder *u;
	const char *path;
	uint32_t pid;
	char exe[PATH_MAX];
};

static void take_swapped(void *ctx, const struct perf_event_header *h)
{
	struct swap *w = ctx;
	_Alignas(8) unsigned char rec[PATH_MAX + 256];
	unsigned char *p = rec + sizeof(*h);
	const char *name = (const char *)h + sizeof(*h) + 64;

	memcpy(rec, h, h->size);
	memcpy(p, &w->pid, 4);
	memcpy(p + 4, &w->pid, 4);
	if (w->path && strcmp(name, w->exe) == 0) {
		struct perf_event_header *nh;
		uint64_t start, len, pgoff;
		uint32_t prot, maj, min;
		uint64_t ino;
		struct stat st;

		memcpy(&start, p + 8, 8);
		memcpy(&len, p + 16, 8);
		memcpy(&pgoff, p + 24, 8);
		memcpy(&prot, p + 56, 4);
		memset(rec, 0, sizeof(rec));
		nh = mmap2_record(rec, start, len, pgoff, prot, w->path);
		memcpy(p, &w->pid, 4);
		memcpy(p + 4, &w->pid, 4);
		cr_assert_eq(stat(w->path, &st), 0);
		maj = major(st.st_dev);
		min = minor(st.st_dev);
		ino = (uint64_t)st.st_ino;
		memcpy(p + 32, &maj, 4);
		memcpy(p + 36, &min, 4);
		memcpy(p + 40, &ino, 8);
		h = nh;
	} else {
		h = (const void *)rec;
	}
	take_map(w->u, h);
}

static void feed_swapped(struct perfrec_unwinder *u, uint32_t pid, const char *path)
{
	struct swap w = { .u = u, .path = path, .pid = pid };
	ssize_t n = readlink("/proc/self/exe", w.exe, sizeof(w.exe) - 1);

	cr_assert(n > 0);
	w.exe[n] = 0;
	for_each_map(NULL, NULL, take_swapped, &w);
}

/* The snapshot's sample as process @pid's: whether it reached outer_marker. */
static bool reaches_outer_as(struct perfrec_unwinder *u, uint32_t pid)
{
	static unsigned char in[65536], out[65536];
	struct perf_event_attr a = attr(), na;
	struct perf_event_header *h = sample(&snap, in);
	uint64_t pt = (uint64_t)pid << 32 | pid, o = (uint64_t)(uintptr_t)outer_marker;
	struct perfrec_sample smp;
	int n;

	memcpy((unsigned char *)h + sizeof(*h) + 16, &pt, 8);
	n = perfrec_unwinder__rewrite(u, h, &a, out, sizeof(out));
	cr_assert_gt(n, 0);
	perfrec_unwinder__rewrite_attr(&a, &na);
	cr_assert_eq(perfrec_sample__parse_attr((void *)out, &na, &smp), 0);
	for (uint64_t i = 2; i < smp.nr_callchain; i++)
		if (smp.callchain[i] >= o && smp.callchain[i] < o + 128)
			return true;
	return false;
}

/* A copy of this test binary that an unprivileged user owns (and so could change). */
static void users_copy(const char *path)
{
	patched_copy(path, 0, NULL, 0);
	if (geteuid() == 0)
		cr_assert_eq(chown(path, 65534, 65534), 0, "%s: %m", path);
}

/*
 * A user's binary is theirs to truncate while the unwinder holds it: read
 * through a mapping, the next read of its CFI was a SIGBUS.  Its session
 * must go on (the chain ends where the file does) and the daemon live.
 */
Test(input, a_users_file_cut_short_under_the_unwinder_is_survived, .init = make_tmpdir, .fini = rm_tmpdir)
{
	struct perfrec_unwinder_opts o = { .sz = sizeof(o), .proc = "" };
	struct perfrec_unwinder_stats st;
	struct perfrec_unwinder *u;
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/users", tmpdir);
	users_copy(path);
	cr_assert_eq(perfrec_unwinder__new(&o, &u), 0);
	feed_swapped(u, 4000, path);
	cr_expect(reaches_outer_as(u, 4000), "the user's copy is not unwound through");
	perfrec_unwinder__stats(u, &st);
	if (geteuid() == 0)
		cr_expect_eq(st.elf_fds, 1, "a user's file is read through an fd of its own");
	cr_assert_eq(truncate(path, 0), 0);
	for (int i = 0; i < 3; i++)
		reaches_outer_as(u, 4000);
	/* A new process of the same file: the entry is the one read before. */
	feed_swapped(u, 4001, path);
	reaches_outer_as(u, 4001);
	perfrec_unwinder__free(u);
}

/*
 * However many distinct binaries come and go, and whether or not their
 * EXITs are seen: the fds the unwinder holds, its sessions and the
 * address spaces it knows stay under their caps, and it still unwinds.
 */
static void stay_under_caps(bool tables)
{
	struct perfrec_unwinder_opts o = { .sz = sizeof(o), .proc = "", .max_elf_fds = 3, .max_spaces = 2 };
	struct perfrec_unwinder_stats st;
	struct perfrec_unwinder *u;
	char path[PATH_MAX];
	int fds0 = count_fds(), most = 0;
	const int nr = 24;

	cr_assert_eq(perfrec_unwinder__new(&o, &u), 0);
	if (!tables)
		libdwfl_only(u);
	for (int i = 0; i < nr; i++) {
		uint32_t pid = 5000 + (uint32_t)i;

		snprintf(path, sizeof(path), "%s/bin%d", tmpdir, i);
		users_copy(path);
		feed_swapped(u, pid, path);
		cr_expect(reaches_outer_as(u, pid), "binary %d is not unwound through", i);
		/* The older ones are unwound again now and then, as long-lived processes are. */
		if (i >= 2)
			cr_expect(reaches_outer_as(u, pid - 2), "binary %d, again", i - 2);
		perfrec_unwinder__stats(u, &st);
		cr_expect_leq(st.live_sessions, 2, "%zu sessions", st.live_sessions);
		if (geteuid() == 0)
			cr_expect_leq(st.elf_fds, 3, "%zu fds for files", st.elf_fds);
		if (count_fds() - fds0 > most)
			most = count_fds() - fds0;
	}
	/* Cap plus the one session being built may hold one past it. */
	cr_expect_leq(most, 4, "%d fds open at most for %d binaries", most, nr);
	perfrec_unwinder__stats(u, &st);
	if (geteuid() == 0)
		cr_expect_geq(st.elf_evicted, nr - 3);
	/* With the tables, libdwfl has nothing to do here. */
	if (tables)
		cr_expect_eq(st.sessions, 0);
	else
		cr_expect_geq(st.sessions_evicted, 1);
	/* Spaces whose EXIT never came: 64 per session at most are kept. */
	for (uint32_t pid = 10000; pid < 10300; pid++)
		feed_one(u, pid);
	perfrec_unwinder__stats(u, &st);
	cr_expect_leq(st.spaces, 2 * 64, "%zu spaces known", st.spaces);
	cr_expect_geq(st.spaces_evicted, 300 - 2 * 64);
	perfrec_unwinder__free(u);
	cr_expect_eq(count_fds(), fds0, "fds left open after the unwinder was freed");
}

Test(input, open_files_sessions_and_spaces_stay_under_their_caps, .init = make_tmpdir, .fini = rm_tmpdir)
{
	stay_under_caps(false);
}

Test(input, open_files_and_spaces_stay_under_their_caps_with_tables, .init = make_tmpdir, .fini = rm_tmpdir)
{
	stay_under_caps(true);
}

/* The section header of @name in the ELF at @path: its file offset (or -1). */
static off_t shdr_offset(const char *path, const char *name)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf64_Ehdr eh;
	Elf64_Shdr sh, strs;
	char buf[32];

	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, &eh, sizeof(eh), 0), (ssize_t)sizeof(eh));
	cr_assert_eq(pread(fd, &strs, sizeof(strs), (off_t)(eh.e_shoff + eh.e_shstrndx * sizeof(sh))),
		     (ssize_t)sizeof(strs));
	for (unsigned i = 1; i < eh.e_shnum; i++) {
		off_t at = (off_t)(eh.e_shoff + i * sizeof(sh));

		cr_assert_eq(pread(fd, &sh, sizeof(sh), at), (ssize_t)sizeof(sh));
		memset(buf, 0, sizeof(buf));
		if (pread(fd, buf, sizeof(buf) - 1, (off_t)(strs.sh_offset + sh.sh_name)) > 0 && !strcmp(buf, name)) {
			close(fd);
			return at;
		}
	}
	close(fd);
	return -1;
}

/*
 * libdw inflates a compressed DWARF section whole, at the size its header
 * declares, once the unwinder reads that file's .debug_frame: a bomb of a
 * few KiB of deflated zeros was gigabytes of the daemon's memory.  A file
 * declaring more than the unwinder allows is refused; the program's own
 * code is still unwound.
 */
Test(input, a_compressed_section_past_the_bound_is_refused, .init = make_tmpdir, .fini = rm_tmpdir)
{
	struct perfrec_unwinder_opts o = { .sz = sizeof(o), .proc = "" };
	struct perfrec_unwinder_stats st;
	struct perfrec_unwinder *u;
	char path[PATH_MAX];
	Elf64_Shdr sh;
	Elf64_Chdr ch = { .ch_type = ELFCOMPRESS_ZLIB, .ch_size = 1ULL << 40, .ch_addralign = 1 };
	off_t at;
	int fd;

	snprintf(path, sizeof(path), "%s/bomb", tmpdir);
	patched_copy(path, 0, NULL, 0);
	at = shdr_offset(path, ".debug_info");
	if (at < 0)
		cr_skip_test("this test binary has no .debug_info to make a bomb of");
	fd = open(path, O_RDWR | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, &sh, sizeof(sh), at), (ssize_t)sizeof(sh));
	sh.sh_flags |= SHF_COMPRESSED;
	cr_assert_eq(pwrite(fd, &sh, sizeof(sh), at), (ssize_t)sizeof(sh));
	cr_assert_eq(pwrite(fd, &ch, sizeof(ch), (off_t)sh.sh_offset), (ssize_t)sizeof(ch));
	close(fd);
	cr_assert_eq(perfrec_unwinder__new(&o, &u), 0);
	libdwfl_only(u);
	feed_file_map(u, path, 0x10000, 0x1000);
	for_each_map(NULL, NULL, take_map, u);
	cr_expect(reaches_outer(u), "the program's own code is no longer unwound");
	perfrec_unwinder__stats(u, &st);
	cr_expect_geq(st.elf_missing, 1, "a file declaring 1 TiB of DWARF was taken");
	cr_expect_geq(st.elf_refused, 1);
	perfrec_unwinder__free(u);
}

/*
 * The path a map names is the process's to replace: a FIFO there made the
 * unwinder's open() wait for a writer, the worker with it, for good (every
 * later sample "behind").  Only regular files are opened.
 */
Test(input, a_fifo_at_a_mapped_path_is_not_waited_on, .init = make_tmpdir, .fini = rm_tmpdir, .timeout = 20)
{
	struct perfrec_unwinder_opts o = { .sz = sizeof(o), .proc = "" };
	struct perfrec_unwinder_stats st;
	struct perfrec_unwinder *u;
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/fifo", tmpdir);
	cr_assert_eq(mkfifo(path, 0600), 0);
	cr_assert_eq(perfrec_unwinder__new(&o, &u), 0);
	libdwfl_only(u);
	feed_file_map(u, path, 0x10000, 0x1000);
	for_each_map(NULL, NULL, take_map, u);
	cr_expect(reaches_outer(u), "the program's own code is no longer unwound");
	perfrec_unwinder__stats(u, &st);
	cr_expect_geq(st.elf_missing, 1);
	perfrec_unwinder__free(u);
}
