// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Tests of the host unwinder on this very process: its mappings become
 * MMAP2 records, a sample is made of the registers and stack captured in
 * capture_here(), and the unwound chain must reach its callers.  Then the
 * same sample with bad parts: garbage stack bytes, garbage registers, a
 * stack pointer outside the copy, a file that is missing, one that changed
 * (another build id), and a copy whose CFI is cut off.  Each time the
 * chain must end cleanly (no crash under ASan/UBSan, only frames in
 * executable mappings, the sample otherwise intact).
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <limits.h>
#include <libelf.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <elfutils/libdwelf.h>

#include <perfrec/event.h>
#include <perfrec/evlist.h>
#include <perfrec/unwind.h>

#include "unwind-capture.h"
#include "unwind-internal.h"
#include "unwtab.h"
#include "vdso.h"

static void take_map(void *ctx, const struct perf_event_header *h)
{
	cr_assert_eq(perfrec_unwinder__rewrite(ctx, h, NULL, NULL, 0), 0);
}

static void feed_maps(struct perfrec_unwinder *u, const char *swap_path, const uint8_t *build_id)
{
	for_each_map(swap_path, build_id, take_map, u);
}

/* This process's executable mappings: where every caller must lie. */
static struct { uint64_t start, end; } exec_ranges[256];
static size_t nr_exec;

static bool in_exec(uint64_t pc)
{
	if (!nr_exec) {
		FILE *f = fopen("/proc/self/maps", "r");
		char line[PATH_MAX + 128], perms[8];

		while (f && fgets(line, sizeof(line), f) && nr_exec < 256) {
			uint64_t a, b;

			if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s", &a, &b, perms) == 3 && perms[2] == 'x') {
				exec_ranges[nr_exec].start = a;
				exec_ranges[nr_exec++].end = b;
			}
		}
		if (f)
			fclose(f);
	}
	for (size_t i = 0; i < nr_exec; i++)
		if (pc >= exec_ranges[i].start && pc < exec_ranges[i].end)
			return true;
	return false;
}

struct chain {
	uint64_t nr;
	uint64_t ip[600];
	uint64_t cgroup;
};

/* Unwind @s; the rewritten sample must parse, end in the cgroup, and carry only the chain. */
static struct chain unwind(struct perfrec_unwinder *u, const struct snap *s)
{
	static unsigned char in[65536], out[65536];
	struct perf_event_attr a = attr(), na;
	struct perf_event_header *h = sample(s, in);
	struct perfrec_sample smp;
	struct chain c = {0};
	int n = perfrec_unwinder__rewrite(u, h, &a, out, sizeof(out));

	cr_assert_gt(n, 0, "rewrite: %d", n);
	perfrec_unwinder__rewrite_attr(&a, &na);
	cr_assert_eq(na.sample_type & (PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER), 0);
	cr_assert_eq(perfrec_sample__parse_attr((void *)out, &na, &smp), 0);
	cr_assert_eq(((struct perf_event_header *)out)->size, (unsigned)n);
	cr_assert_geq(smp.nr_callchain, 2, "PERF_CONTEXT_USER and the ip at least");
	cr_assert_eq(smp.callchain[0], PERF_CONTEXT_USER);
	cr_assert_eq(smp.callchain[1], s->regs[R_IP]);
	c.nr = smp.nr_callchain - 1;
	cr_assert_leq(c.nr, 127);
	/* Callers are return addresses - 1: the call lies in code. */
	for (uint64_t i = 1; i < c.nr; i++)
		cr_assert(in_exec(smp.callchain[1 + i] + 1), "frame %" PRIu64 " %#" PRIx64 " is not in code",
			  i, smp.callchain[1 + i]);
	memcpy(c.ip, smp.callchain + 1, c.nr * 8);
	c.cgroup = smp.cgroup;
	cr_assert_eq(c.cgroup, 0x77, "the fields after the stack are kept");
	return c;
}

static bool chain_has(const struct chain *c, void (*fn)(struct snap *))
{
	uint64_t a = (uint64_t)(uintptr_t)fn;

	for (uint64_t i = 1; i < c->nr; i++)
		if (c->ip[i] >= a && c->ip[i] < a + 128)
			return true;
	return false;
}

static struct perfrec_unwinder *new_unwinder(void)
{
	struct perfrec_unwinder_opts o = { .sz = sizeof(o) };
	struct perfrec_unwinder *u;

	cr_assert_eq(perfrec_unwinder__new(&o, &u), 0);
	return u;
}

/*
 * For the tests of libdwfl's sessions: with the unwind tables a sample
 * goes to libdwfl only where a table says so; these send every one.
 */
static struct perfrec_unwinder *new_dwfl_unwinder(void)
{
	struct perfrec_unwinder_tables_opts to = { .off = true };
	struct perfrec_unwinder *u = new_unwinder();

	cr_assert_eq(perfrec_unwinder__set_tables(u, &to), 0);
	return u;
}

static struct snap snap;

static void setup(void)
{
	find_stack_end();
	outer_marker(&snap);
}

TestSuite(unwind, .init = setup);

Test(unwind, a_real_stack_unwinds_through_its_callers)
{
	struct perfrec_unwinder *u = new_unwinder();
	struct perfrec_unwinder_stats st;
	struct chain c;

	feed_maps(u, NULL, NULL);
	c = unwind(u, &snap);
	cr_expect(chain_has(&c, middle_marker), "middle_marker is not a caller (%" PRIu64 " frames)", c.nr);
	cr_expect(chain_has(&c, outer_marker), "outer_marker is not a caller");
	/* Again: the cached ELF and session serve it, nothing is opened. */
	perfrec_unwinder__stats(u, &st);
	{
		uint64_t opened = st.elf_opened;

		c = unwind(u, &snap);
		perfrec_unwinder__stats(u, &st);
		cr_expect_eq(st.elf_opened, opened, "a file was opened again for the same process");
		cr_expect(chain_has(&c, outer_marker));
	}
	cr_expect_eq(st.samples, 2);
	cr_expect_eq(st.unwound, 2);
	perfrec_unwinder__free(u);
}

Test(unwind, garbage_stack_bytes_end_the_chain_cleanly)
{
	struct perfrec_unwinder *u = new_unwinder();
	struct snap s = snap;

	feed_maps(u, NULL, NULL);
	srand(7);
	for (int round = 0; round < 50; round++) {
		for (size_t i = 0; i < STACK; i++)
			s.stack[i] = (unsigned char)rand();
		/* Some words that look like code addresses of the binary. */
		for (size_t i = 0; i < STACK / 8; i += 7) {
			uint64_t v = snap.regs[R_IP] + (uint64_t)(rand() % 4096);

			memcpy(s.stack + i * 8, &v, 8);
		}
		(void)unwind(u, &s);
	}
	perfrec_unwinder__free(u);
}

Test(unwind, garbage_registers_end_the_chain_cleanly)
{
	struct perfrec_unwinder *u = new_unwinder();
	struct snap s = snap;

	feed_maps(u, NULL, NULL);
	srand(11);
	for (int round = 0; round < 200; round++) {
		for (int i = 0; i < NR_REGS; i++)
			s.regs[i] = ((uint64_t)rand() << 33) ^ ((uint64_t)rand() << 2) ^ (uint64_t)rand();
		if (round % 2)
			s.regs[R_IP] = snap.regs[R_IP] + (uint64_t)(rand() % 65536) - 32768;
		(void)unwind(u, &s);
	}
	perfrec_unwinder__free(u);
}

/*
 * The copy starts at the stack pointer, so memory is read relative to it:
 * what lies past the bytes the kernel could copy (dyn_size) is out of reach.
 */
Test(unwind, frames_past_the_stack_copy_end_the_chain)
{
	struct perfrec_unwinder *u = new_unwinder();
	struct chain whole, c;
	struct snap s;

	feed_maps(u, NULL, NULL);
	whole = unwind(u, &snap);
	cr_assert_geq(whole.nr, 3);
	s = snap;
	s.dyn = 0;
	c = unwind(u, &s);
	cr_expect_eq(c.nr, 1, "no stack copied, yet %" PRIu64 " frames", c.nr);
	s.dyn = 8;
	c = unwind(u, &s);
	cr_expect_lt(c.nr, whole.nr, "8 bytes of stack gave the whole chain");
	/* A stack pointer at the top of the address space: reads must not wrap. */
	s = snap;
	s.regs[R_SP] = UINT64_MAX - 7;
	s.regs[R_BP] = UINT64_MAX - 7;
	c = unwind(u, &s);
	cr_expect_leq(c.nr, 2);
	perfrec_unwinder__free(u);
}

/*
 * Anonymous executable memory (JIT code: node makes dozens of such maps
 * a run) is no file: a libdwfl session leaves it out instead of looking
 * for "//anon" through map_files, the process's root and the host (three
 * failed opens a map) and counting it a missing file.
 */
Test(unwind, anonymous_code_is_not_looked_for_as_a_file)
{
	struct perfrec_unwinder *u = new_dwfl_unwinder();
	_Alignas(8) unsigned char rec[256] = {0};
	struct perfrec_unwinder_stats st;
	struct chain c;

	feed_maps(u, NULL, NULL);
	take_map(u, mmap2_record(rec, 0x10000000000ULL, 1 << 20, 0, PROT_READ | PROT_EXEC, "//anon"));
	c = unwind(u, &snap);
	cr_expect(chain_has(&c, outer_marker), "the stack no longer unwinds");
	perfrec_unwinder__stats(u, &st);
	cr_expect_eq(st.elf_missing, 0, "%" PRIu64 " files missing: //anon was looked for", st.elf_missing);
	perfrec_unwinder__free(u);
}

Test(unwind, a_missing_or_changed_file_is_not_used)
{
	static const uint8_t other_id[20] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 };
	struct perfrec_unwinder_opts o = { .sz = sizeof(o), .proc = "" };
	struct perfrec_unwinder_stats st;
	struct perfrec_unwinder *u;
	struct chain c;

	/* Missing: the map names a path that does not exist (and no procfs). */
	cr_assert_eq(perfrec_unwinder__new(&o, &u), 0);
	feed_maps(u, "/nonexistent/perfrec-unwind-test", NULL);
	c = unwind(u, &snap);
	cr_expect(!chain_has(&c, outer_marker), "unwound through a binary it could not have read");
	perfrec_unwinder__stats(u, &st);
	cr_expect_geq(st.elf_missing, 1);
	perfrec_unwinder__free(u);

	/* Changed: the path is there, with another build id than the map's. */
	u = new_unwinder();
	feed_maps(u, NULL, other_id);
	c = unwind(u, &snap);
	cr_expect(!chain_has(&c, outer_marker), "used a file whose build id differs from the map's");
	perfrec_unwinder__stats(u, &st);
	cr_expect_geq(st.elf_missing, 1);
	perfrec_unwinder__free(u);
}

/* A copy of this binary with .eh_frame and .eh_frame_hdr cut to a few bytes of zeros. */
static void cut_cfi(const char *path)
{
	int in = open("/proc/self/exe", O_RDONLY | O_CLOEXEC), out;
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	Elf *elf;
	char buf[65536];
	ssize_t n;

	cr_assert_geq(in, 0);
	out = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	cr_assert_geq(out, 0);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		cr_assert_eq(write(out, buf, (size_t)n), n);
	elf_version(EV_CURRENT);
	elf = elf_begin(in, ELF_C_READ, NULL);
	cr_assert_not_null(elf);
	cr_assert_eq(elf_getshdrstrndx(elf, &shstrndx), 0);
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		gelf_getshdr(scn, &sh);
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && (!strcmp(name, ".eh_frame") || !strcmp(name, ".eh_frame_hdr") ||
			     !strcmp(name, ".debug_frame"))) {
			/* Keep the first 4 bytes (a length), zero the rest: CFI that stops short. */
			memset(buf, 0, sizeof(buf));
			for (uint64_t off = 4; off < sh.sh_size; off += sizeof(buf)) {
				size_t len = sh.sh_size - off < sizeof(buf) ? sh.sh_size - off : sizeof(buf);

				cr_assert_eq(pwrite(out, buf, len, (off_t)(sh.sh_offset + off)), (ssize_t)len);
			}
		}
	}
	elf_end(elf);
	close(in);
	close(out);
}

Test(unwind, truncated_cfi_ends_the_chain_cleanly)
{
	char path[] = "/tmp/perfrec-unwind-cfi-XXXXXX";
	struct perfrec_unwinder_opts o = { .sz = sizeof(o), .proc = "" };
	struct perfrec_unwinder *u;
	struct chain c;
	int fd = mkstemp(path);
	struct stat st;

	cr_assert_geq(fd, 0);
	close(fd);
	cut_cfi(path);
	cr_assert_eq(stat(path, &st), 0);
	/* libdwfl, then the tables. */
	for (int tables = 0; tables < 2; tables++) {
	struct perfrec_unwinder_table_stats ts;

	/* The map names the cut copy by its device and inode. */
	cr_assert_eq(perfrec_unwinder__new(&o, &u), 0);
	if (!tables)
		cr_assert_eq(perfrec_unwinder__set_tables(u, &(struct perfrec_unwinder_tables_opts){ .off = true }), 0);
	feed_maps(u, path, NULL);
	{
		/* feed_maps() gave the exe's dev/ino: say the copy's instead. */
		_Alignas(8) unsigned char rec[512] = {0};
		struct perf_event_header *h = (void *)rec;
		unsigned char *p = rec + sizeof(*h);
		FILE *f = fopen("/proc/self/maps", "r");
		char line[PATH_MAX + 128], exe[PATH_MAX];
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

		cr_assert(n > 0);
		exe[n] = 0;
		while (fgets(line, sizeof(line), f)) {
			uint64_t start, end, pgoff, ino = (uint64_t)st.st_ino;
			char perms[8], name[PATH_MAX] = "";
			uint32_t pid = (uint32_t)getpid(), prot = PROT_READ | PROT_EXEC;
			unsigned maj = major(st.st_dev), min = minor(st.st_dev);

			if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*u %4095s",
				   &start, &end, perms, &pgoff, name) < 5 || strcmp(name, exe) || perms[2] != 'x')
				continue;
			memcpy(p, &pid, 4);
			memcpy(p + 4, &pid, 4);
			memcpy(p + 8, &start, 8);
			end -= start;
			memcpy(p + 16, &end, 8);
			memcpy(p + 24, &pgoff, 8);
			memcpy(p + 32, &maj, 4);
			memcpy(p + 36, &min, 4);
			memcpy(p + 40, &ino, 8);
			memcpy(p + 56, &prot, 4);
			strcpy((char *)p + 64, path);
			h->type = PERF_RECORD_MMAP2;
			h->misc = PERF_RECORD_MISC_USER;
			h->size = (uint16_t)((sizeof(*h) + 64 + strlen(path) + 1 + 7) & ~(size_t)7);
			cr_assert_eq(perfrec_unwinder__rewrite(u, h, NULL, NULL, 0), 0);
		}
		fclose(f);
	}
	c = unwind(u, &snap);
	perfrec_unwinder__table_stats(u, &ts);
	/*
	 * libdwfl stops where there is no CFI; the tables say the file has
	 * none and follow its frame pointers where it keeps them (an ASan
	 * build does), as perf's unwinding does, never anything else.
	 */
	if (!tables)
		cr_expect(!chain_has(&c, outer_marker), "libdwfl unwound through a binary without CFI");
	else
		cr_expect(!chain_has(&c, outer_marker) || ts.fp_frames >= 1,
			  "unwound through a binary without CFI, not by its frame pointers");
	perfrec_unwinder__free(u);
	}
	unlink(path);
}

Test(unwind, fork_copies_and_exec_clears_an_address_space)
{
	struct perfrec_unwinder *u = new_unwinder();
	_Alignas(8) unsigned char rec[64] = {0};
	struct perf_event_header *h = (void *)rec;
	uint32_t ids[4] = { (uint32_t)getpid(), 1, (uint32_t)getpid(), 1 };
	struct perfrec_unwinder_stats st;
	struct chain c;

	feed_maps(u, NULL, NULL);
	perfrec_unwinder__stats(u, &st);
	cr_assert_eq(st.spaces, 1);
	/* COMM with exec: a new image, none of the old maps. */
	h->type = PERF_RECORD_COMM;
	h->misc = PERF_RECORD_MISC_COMM_EXEC;
	h->size = sizeof(*h) + 8 + 16;
	memcpy(rec + sizeof(*h), ids, 8);
	cr_assert_eq(perfrec_unwinder__rewrite(u, h, NULL, NULL, 0), 0);
	c = unwind(u, &snap);
	cr_expect_eq(c.nr, 1, "unwound with the maps of the image before exec");
	/* EXIT of the leader drops the space. */
	h->type = PERF_RECORD_EXIT;
	h->misc = 0;
	h->size = sizeof(*h) + 24;
	memcpy(rec + sizeof(*h), ids, 16);
	cr_assert_eq(perfrec_unwinder__rewrite(u, h, NULL, NULL, 0), 0);
	perfrec_unwinder__stats(u, &st);
	cr_expect_eq(st.spaces, 0);
	perfrec_unwinder__free(u);
}

struct collected {
	unsigned char buf[1 << 17];
	size_t len, nr;
	uint32_t types[16];
};

static int collect(void *ctx, const struct perf_event_header *rec)
{
	struct collected *c = ctx;

	cr_assert_leq(c->len + rec->size, sizeof(c->buf));
	memcpy(c->buf + c->len, rec, rec->size);
	c->len += rec->size;
	if (c->nr < 16)
		c->types[c->nr] = rec->type;
	c->nr++;
	return 0;
}

/*
 * The sample at @in made a sample of a child of this process at
 * @sample_time, and at @fork_rec that child's FORK at time 1000, its
 * trailer laid out for TID and TIME as @sb (the trailer of @a minus
 * IDENTIFIER and CGROUP) says.
 */
static void child_and_fork(unsigned char *in, uint64_t sample_time, unsigned char *fork_rec,
			   const struct perf_event_attr *a, struct perf_event_attr *sb)
{
	struct perf_event_header *fh = (void *)fork_rec;
	uint32_t child = (uint32_t)getpid() + 100000, ids[4] = { child, (uint32_t)getpid(), child, (uint32_t)getpid() };
	uint64_t v = (uint64_t)child << 32 | child, t = 1000;

	memcpy(in + sizeof(*fh) + 16, &v, 8);
	memcpy(in + sizeof(*fh) + 24, &sample_time, 8);
	fh->type = PERF_RECORD_FORK;
	fh->size = sizeof(*fh) + 24 + 16;
	memcpy(fork_rec + sizeof(*fh), ids, 16);
	memcpy(fork_rec + sizeof(*fh) + 16, &t, 8);  /* fork's own time */
	memcpy(fork_rec + sizeof(*fh) + 24, &v, 8);  /* trailer: pid, tid */
	memcpy(fork_rec + sizeof(*fh) + 32, &t, 8);  /* trailer: time */
	*sb = *a;
	sb->sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
}

/*
 * A round in drain order: the sample (time 2000) of a process forked from
 * this one comes before its FORK (time 1000), written from another CPU's
 * ring.  Flushed, the sample is unwound with the maps the FORK gave it,
 * and the records come back in the order pushed.
 */
Test(unwind, a_round_is_unwound_in_time_order_and_emitted_in_push_order)
{
	static unsigned char in[65536];
	static struct collected got;
	static struct perf_event_attr sb;
	struct perfrec_unwinder *u = new_unwinder();
	struct perf_event_attr a = attr(), na;
	struct perf_event_header *h = sample(&snap, in);
	_Alignas(8) unsigned char fork_rec[64] = {0};
	struct perfrec_sample s;
	const struct perf_event_header *out;

	feed_maps(u, NULL, NULL);
	a.sample_id_all = 1;
	child_and_fork(in, 2000, fork_rec, &a, &sb);
	cr_assert_eq(perfrec_unwinder__push(u, h, &a), 0);
	cr_assert_eq(perfrec_unwinder__push(u, (const void *)fork_rec, &sb), 0);
	cr_assert_eq(perfrec_unwinder__flush(u, collect, &got), 0);
	cr_assert_eq(got.nr, 2);
	cr_expect_eq(got.types[0], PERF_RECORD_SAMPLE, "not in push order");
	cr_expect_eq(got.types[1], PERF_RECORD_FORK);
	out = (const void *)got.buf;
	perfrec_unwinder__rewrite_attr(&a, &na);
	cr_assert_eq(perfrec_sample__parse_attr(out, &na, &s), 0);
	{
		struct chain c = { .nr = s.nr_callchain - 1 };

		memcpy(c.ip, s.callchain + 1, c.nr * 8);
		cr_expect(chain_has(&c, outer_marker), "the sample was unwound before its FORK (%" PRIu64 " frames)", c.nr);
	}
	perfrec_unwinder__free(u);
}

/*
 * The other way round: a sample from before the FORK is unwound before it
 * (the child has no maps yet: its ip alone).  Its time is read where it
 * lies in the sample, after the identifier, ip, pid and tid.
 */
Test(unwind, a_sample_before_its_fork_is_unwound_before_it)
{
	static unsigned char in[65536];
	static struct collected got;
	static struct perf_event_attr sb;
	struct perfrec_unwinder *u = new_unwinder();
	struct perf_event_attr a = attr(), na;
	struct perf_event_header *h = sample(&snap, in);
	_Alignas(8) unsigned char fork_rec[64] = {0};
	struct perfrec_sample s;

	feed_maps(u, NULL, NULL);
	a.sample_id_all = 1;
	child_and_fork(in, 500, fork_rec, &a, &sb);
	/* The FORK pushed first: time order puts the sample before it all the same. */
	cr_assert_eq(perfrec_unwinder__push(u, (const void *)fork_rec, &sb), 0);
	cr_assert_eq(perfrec_unwinder__push(u, h, &a), 0);
	cr_assert_eq(perfrec_unwinder__flush(u, collect, &got), 0);
	cr_assert_eq(got.nr, 2);
	cr_assert_eq(got.types[1], PERF_RECORD_SAMPLE, "not in push order");
	perfrec_unwinder__rewrite_attr(&a, &na);
	cr_assert_eq(perfrec_sample__parse_attr((const void *)(got.buf + ((const struct perf_event_header *)got.buf)->size),
						&na, &s), 0);
	cr_expect_eq(s.nr_callchain, 2, "the sample was unwound after its FORK (%" PRIu64 " frames)",
		     s.nr_callchain - 1);
	perfrec_unwinder__free(u);
}

/* Behind: the sample in the unwound layout with its ip alone, no unwinder needed. */
Test(unwind, strip_gives_the_ip_alone_in_the_rewritten_layout)
{
	static unsigned char in[65536], out[65536];
	struct perf_event_attr a = attr(), na;
	struct perf_event_header *h = sample(&snap, in);
	struct perfrec_sample s;
	int n = perfrec_unwinder__strip(h, &a, out, sizeof(out));

	cr_assert_gt(n, 0);
	cr_expect_lt((size_t)n, (size_t)h->size / 20, "the stack is still in it");
	perfrec_unwinder__rewrite_attr(&a, &na);
	cr_assert_eq(perfrec_sample__parse_attr((void *)out, &na, &s), 0);
	cr_assert_eq(s.nr_callchain, 2);
	cr_expect_eq(s.callchain[0], PERF_CONTEXT_USER);
	cr_expect_eq(s.callchain[1], snap.regs[R_IP]);
	cr_expect_eq(s.cgroup, 0x77);
	cr_expect_eq(s.time, 1000);
	/* Too small a buffer, and records that are not DWARF samples. */
	cr_expect_eq(perfrec_unwinder__strip(h, &a, out, 16), -ENOBUFS);
	a.sample_type &= ~(uint64_t)PERF_SAMPLE_STACK_USER;
	cr_expect_eq(perfrec_unwinder__strip(h, &a, out, sizeof(out)), 0);
}

/* Feed an MMAP2 record of this process: [@start, @start + @len) of @name with @prot. */
static void feed_one_map(struct perfrec_unwinder *u, uint64_t start, uint64_t len, uint32_t prot, const char *name)
{
	_Alignas(8) unsigned char rec[256] = {0};

	cr_assert_eq(perfrec_unwinder__rewrite(u, mmap2_record(rec, start, len, 0, prot, name), NULL, NULL, 0), 0);
}

/*
 * A process that maps data as it runs (heap, arenas, thread stacks: with
 * mmap_data every one is an MMAP2 record) keeps its unwind session, and
 * one that maps new code (the loader, one library at a time; dlopen) has
 * it added to the session: only code that is cut or replaced rebuilds it.
 * Rebuilding on every map re-read all CFI per sample and left the host
 * unwinder behind at 1 kHz.
 */
Test(unwind, data_and_new_code_keep_the_session_replaced_code_renews_it)
{
	struct perfrec_unwinder *u = new_dwfl_unwinder();
	struct perfrec_unwinder_stats st;
	void *anon = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t base = (uint64_t)(uintptr_t)anon, missing;
	struct chain c;

	cr_assert_neq(anon, MAP_FAILED);
	feed_maps(u, NULL, NULL);
	c = unwind(u, &snap);
	cr_assert(chain_has(&c, outer_marker));
	perfrec_unwinder__stats(u, &st);
	cr_assert_eq(st.sessions, 1);
	missing = st.elf_missing;
	for (int i = 0; i < 4; i++) {
		feed_one_map(u, base + (uint64_t)i * 8192, 8192, PROT_READ | PROT_WRITE, "//anon");
		c = unwind(u, &snap);
		cr_expect(chain_has(&c, outer_marker), "data map %d lost the callers", i);
	}
	perfrec_unwinder__stats(u, &st);
	cr_expect_eq(st.sessions, 1, "%" PRIu64 " sessions built for one set of code maps", st.sessions);
	/* New code: added to the session (its file is looked for, once), not rebuilt. */
	feed_one_map(u, base + 32768, 8192, PROT_READ | PROT_EXEC, "/nonexistent/libnew.so");
	c = unwind(u, &snap);
	c = unwind(u, &snap);
	cr_expect(chain_has(&c, outer_marker), "new code lost the callers");
	perfrec_unwinder__stats(u, &st);
	cr_expect_eq(st.sessions, 1, "new code rebuilt the session");
	cr_expect_eq(st.elf_missing, missing + 1, "the new code's file was not looked for once");
	/* That code replaced (munmap and map again): the session is built again, once. */
	feed_one_map(u, base + 32768, 8192, PROT_READ | PROT_EXEC, "/nonexistent/libother.so");
	c = unwind(u, &snap);
	c = unwind(u, &snap);
	cr_expect(chain_has(&c, outer_marker));
	perfrec_unwinder__stats(u, &st);
	cr_expect_eq(st.sessions, 2);
	munmap(anon, 1 << 16);
	perfrec_unwinder__free(u);
}

struct split_feed {
	struct perfrec_unwinder *u;
	char exe[PATH_MAX];
	bool exe_only;
};

/* Feed the maps of this executable only, or all but those. */
static void take_split(void *ctx, const struct perf_event_header *h)
{
	struct split_feed *f = ctx;
	bool is_exe = strcmp((const char *)h + sizeof(*h) + 64, f->exe) == 0;

	if (is_exe == f->exe_only)
		take_map(f->u, h);
}

/* Code added to a session is unwound through: the loader maps the program's libraries first, say. */
Test(unwind, code_added_later_is_unwound_through)
{
	struct split_feed f = { .u = new_dwfl_unwinder() };
	ssize_t n = readlink("/proc/self/exe", f.exe, sizeof(f.exe) - 1);
	struct perfrec_unwinder_stats st;
	struct chain c;

	cr_assert(n > 0);
	f.exe[n] = 0;
	for_each_map(NULL, NULL, take_split, &f);
	c = unwind(f.u, &snap);
	cr_expect_not(chain_has(&c, outer_marker), "unwound through a program whose maps it did not have");
	f.exe_only = true;
	for_each_map(NULL, NULL, take_split, &f);
	c = unwind(f.u, &snap);
	cr_expect(chain_has(&c, middle_marker) && chain_has(&c, outer_marker),
		  "the program's code, added to the session, is not unwound through");
	perfrec_unwinder__stats(f.u, &st);
	cr_expect_eq(st.sessions, 1, "%" PRIu64 " sessions: the program's maps rebuilt it", st.sessions);
	perfrec_unwinder__free(f.u);
}

/* A process none of whose code can be had costs one attempt, not one per sample. */
Test(unwind, maps_without_any_usable_file_are_tried_once_until_they_change)
{
	struct perfrec_unwinder *u = new_dwfl_unwinder();
	struct perfrec_unwinder_stats st;
	struct chain c;

	feed_one_map(u, 0x10000000, 1 << 16, PROT_READ | PROT_EXEC, "/nonexistent/prog");
	for (int i = 0; i < 3; i++) {
		c = unwind(u, &snap);
		cr_expect_eq(c.nr, 1, "frames from a process with no usable file");
	}
	perfrec_unwinder__stats(u, &st);
	cr_expect_eq(st.sessions, 1, "%" PRIu64 " attempts for the same maps", st.sessions);
	cr_expect_eq(st.elf_missing, 1);
	/* Its maps change (the loader maps a library that is there): tried again, and unwound. */
	feed_maps(u, NULL, NULL);
	c = unwind(u, &snap);
	cr_expect(chain_has(&c, outer_marker));
	perfrec_unwinder__stats(u, &st);
	cr_expect_eq(st.sessions, 2);
	perfrec_unwinder__free(u);
}

struct as_pid {
	struct perfrec_unwinder *u;
	uint32_t pid;
};

/* This process's maps as those of process @pid. */
static void take_map_as(void *ctx, const struct perf_event_header *h)
{
	_Alignas(8) unsigned char rec[PATH_MAX + 256];
	const struct as_pid *a = ctx;

	memcpy(rec, h, h->size);
	memcpy(rec + sizeof(*h), &a->pid, 4);
	memcpy(rec + sizeof(*h) + 4, &a->pid, 4);
	take_map(a->u, (const void *)rec);
}

/* The snapshot as a sample of process @pid: whether it reached outer_marker. */
static bool whole_as(struct perfrec_unwinder *u, uint32_t pid)
{
	static _Alignas(8) unsigned char in[65536], out[65536];
	struct perf_event_attr a = attr();
	struct perf_event_header *h = sample(&snap, in);
	uint64_t ids = (uint64_t)pid << 32 | pid;
	int n;

	memcpy(in + sizeof(*h) + 16, &ids, 8);
	n = perfrec_unwinder__rewrite(u, h, &a, out, sizeof(out));
	cr_assert_gt(n, 0);
	for (unsigned i = 0; i + 8 <= (unsigned)n; i += 8) {
		uint64_t v, f = (uint64_t)(uintptr_t)outer_marker;

		memcpy(&v, out + i, 8);
		if (v >= f && v < f + 128)
			return true;
	}
	return false;
}

/*
 * The live sessions are counted as they are built, dropped for the cap
 * and freed with their process (perfrec_unwinder__stats() is asked after
 * every round, and no longer walks the spaces to count them).
 */
Test(unwind, live_sessions_are_counted_as_they_come_and_go)
{
	struct perfrec_unwinder_opts o = { .sz = sizeof(o), .max_spaces = 1 };
	uint32_t exit_ids[4] = { 7001, 1, 7001, 1 };
	struct perfrec_unwinder_stats st;
	struct perfrec_unwinder *u;

	cr_assert_eq(perfrec_unwinder__new(&o, &u), 0);
	cr_assert_eq(perfrec_unwinder__set_tables(u, &(struct perfrec_unwinder_tables_opts){ .off = true }), 0);
	for (uint32_t pid = 7000; pid < 7002; pid++)
		for_each_map(NULL, NULL, take_map_as, &(struct as_pid){ .u = u, .pid = pid });
	cr_assert(whole_as(u, 7000));
	perfrec_unwinder__stats(u, &st);
	cr_expect_eq(st.live_sessions, 1);
	cr_assert(whole_as(u, 7001));
	perfrec_unwinder__stats(u, &st);
	cr_expect_eq(st.live_sessions, 1, "%zu sessions past a cap of 1", st.live_sessions);
	cr_expect_eq(st.sessions_evicted, 1);
	cr_assert(whole_as(u, 7000));
	perfrec_unwinder__stats(u, &st);
	cr_expect_eq(st.live_sessions, 1);
	cr_expect_eq(st.sessions_evicted, 2);
	/* 7001's session went for 7000's: its exit leaves 7000's. */
	{
		_Alignas(8) unsigned char rec[64] = {0};
		struct perf_event_header *h = (void *)rec;

		h->type = PERF_RECORD_EXIT;
		h->size = sizeof(*h) + 24;
		memcpy(rec + sizeof(*h), exit_ids, 16);
		cr_assert_eq(perfrec_unwinder__rewrite(u, h, NULL, NULL, 0), 0);
		perfrec_unwinder__stats(u, &st);
		cr_expect_eq(st.live_sessions, 1);
		exit_ids[0] = exit_ids[2] = 7000;
		memcpy(rec + sizeof(*h), exit_ids, 16);
		cr_assert_eq(perfrec_unwinder__rewrite(u, h, NULL, NULL, 0), 0);
		perfrec_unwinder__stats(u, &st);
		cr_expect_eq(st.live_sessions, 0, "%zu sessions of processes gone", st.live_sessions);
	}
	perfrec_unwinder__free(u);
}

/* --- the unwind tables ------------------------------------------------------ */

static char tabdir[] = "/tmp/perfrec-unwind-tables-XXXXXX";

static void make_tabdir(void)
{
	setup();
	cr_assert_not_null(mkdtemp(tabdir));
}

static void rm_tabdir(void)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", tabdir);
	cr_expect_eq(system(cmd), 0);
}

static const char *dirname_of(const char *path)
{
	static char d[PATH_MAX + 64];

	snprintf(d, sizeof(d), "%s", path);
	*strrchr(d, '/') = 0;
	return d;
}

/* This test binary's build id (20 bytes), as the kernel puts it in MMAP2. */
static void self_build_id(uint8_t id[20])
{
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	const void *p;
	Elf *elf;

	cr_assert_geq(fd, 0);
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	cr_assert_not_null(elf);
	cr_assert_eq(dwelf_elf_gnu_build_id(elf, &p), 20, "the test binary has no 20-byte build id");
	memcpy(id, p, 20);
	elf_end(elf);
	close(fd);
}

/* An unwinder whose tables go to tabdir (with @max_bytes in memory; 0: the default). */
static struct perfrec_unwinder *new_table_unwinder(uint64_t max_bytes)
{
	struct perfrec_unwinder_tables_opts to = { .dir = tabdir, .max_bytes = max_bytes };
	struct perfrec_unwinder *u = new_unwinder();

	cr_assert_eq(perfrec_unwinder__set_tables(u, &to), 0);
	return u;
}

/* Unwind the snapshot as a process mapping this binary with build id @id; its table stats. */
static struct perfrec_unwinder_table_stats unwind_with_tables(const uint8_t *id, bool *whole)
{
	struct perfrec_unwinder *u = new_table_unwinder(0);
	struct perfrec_unwinder_table_stats ts;
	struct perfrec_unwinder_stats st;
	struct chain c;

	feed_maps(u, NULL, id);
	c = unwind(u, &snap);
	*whole = chain_has(&c, middle_marker) && chain_has(&c, outer_marker);
	perfrec_unwinder__table_stats(u, &ts);
	perfrec_unwinder__stats(u, &st);
	cr_expect_eq(st.sessions, 0, "libdwfl was asked (%" PRIu64 " sessions)", st.sessions);
	perfrec_unwinder__free(u);
	return ts;
}

static void table_path(const uint8_t id[20], char *path, size_t len)
{
	int n = snprintf(path, len, "%s/.unwtab/", tabdir);

	for (int i = 0; i < 20; i++)
		n += snprintf(path + n, len - (size_t)n, "%02x", id[i]);
	snprintf(path + n, len - (size_t)n, ".unwtab");
}

/*
 * The tables are the unwinder's way: built once per file, saved beside the
 * build-id cache (0600 in a 0700 .unwtab), loaded by the next unwinder
 * instead of built; a damaged or cut file is refused, removed and built
 * again, and its replacement loads.
 */
Test(unwind_tables, kept_on_disk_loaded_again_and_rebuilt_when_damaged, .init = make_tabdir, .fini = rm_tabdir)
{
	struct perfrec_unwinder_table_stats ts;
	char path[PATH_MAX + 64];
	struct stat st;
	uint8_t id[20];
	bool whole;
	int fd;

	self_build_id(id);
	table_path(id, path, sizeof(path));
	ts = unwind_with_tables(id, &whole);
	cr_expect(whole, "not unwound through middle_marker and outer_marker with the tables");
	cr_expect_eq(ts.by_tables, 1);
	cr_expect_eq(ts.by_dwfl, 0);
	cr_expect_geq(ts.cache.built, 1);
	cr_expect_eq(ts.cache.saved, 1, "%" PRIu64 " tables saved: only files with a build id go to disk",
		     ts.cache.saved);
	cr_assert_eq(stat(path, &st), 0, "no table file %s", path);
	cr_expect_eq(st.st_mode & 0777, 0600);
	cr_assert_eq(stat(dirname_of(path), &st), 0);
	cr_expect_eq(st.st_mode & 0777, 0700);

	/* A restart: loaded, not built. */
	ts = unwind_with_tables(id, &whole);
	cr_expect(whole);
	cr_expect_eq(ts.cache.loaded, 1);
	cr_expect_eq(ts.cache.saved, 0);
	cr_expect_eq(ts.cache.refused, 0);

	/* Damaged in its rows, then cut short: refused, rebuilt, saved again. */
	for (int damage = 0; damage < 2; damage++) {
		cr_assert_eq(stat(path, &st), 0);
		fd = open(path, O_RDWR | O_CLOEXEC);
		cr_assert_geq(fd, 0);
		if (damage == 0)
			cr_assert_eq(pwrite(fd, "\xff\xfe\xfd\xfc", 4, st.st_size / 2), 4);
		else
			cr_assert_eq(ftruncate(fd, st.st_size / 3), 0);
		close(fd);
		ts = unwind_with_tables(id, &whole);
		cr_expect(whole, "damage %d: not unwound whole", damage);
		cr_expect_eq(ts.cache.refused, 1, "damage %d: the table file was not refused", damage);
		cr_expect_eq(ts.cache.loaded, 0, "damage %d: a damaged table was loaded", damage);
		cr_expect_eq(ts.cache.saved, 1, "damage %d: not saved again", damage);
		ts = unwind_with_tables(id, &whole);
		cr_expect_eq(ts.cache.loaded, 1, "damage %d: the table saved again does not load", damage);
		cr_expect_eq(ts.cache.refused, 0);
	}
}

/*
 * A changed binary: the map names the same path with a new build id.  The
 * table of the old one, on disk under its build id, is not used, and the
 * file at the path (the old one's build id) makes no table for the new.
 */
Test(unwind_tables, a_table_of_another_build_id_is_not_used, .init = make_tabdir, .fini = rm_tabdir)
{
	static const uint8_t new_id[20] = { 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8 };
	struct perfrec_unwinder_table_stats ts;
	uint8_t id[20];
	bool whole;

	self_build_id(id);
	ts = unwind_with_tables(id, &whole);
	cr_assert_eq(ts.cache.saved, 1);
	ts = unwind_with_tables(new_id, &whole);
	cr_expect_not(whole, "unwound through a binary whose build id is not the map's");
	cr_expect_eq(ts.cache.loaded, 0, "the old binary's table was loaded for the new one");
	cr_expect_eq(ts.cache.saved, 0, "a table was saved for the new build id");
}

/*
 * Memory holds the tables up to its bound: past it they go (counted) and
 * come back.  Each round asks for them again: rows the unwinder kept of
 * pcs it saw (lib/unwind.c's memo) went with their tables.
 */
Test(unwind_tables, the_memory_bound_evicts_and_unwinding_goes_on, .init = make_tabdir, .fini = rm_tabdir)
{
	struct perfrec_unwinder *u = new_table_unwinder(1);
	struct perfrec_unwinder_table_stats ts;
	uint64_t got = 0;
	struct chain c;

	feed_maps(u, NULL, NULL);
	for (int i = 0; i < 3; i++) {
		c = unwind(u, &snap);
		cr_expect(chain_has(&c, middle_marker) && chain_has(&c, outer_marker), "round %d", i);
		perfrec_unwinder__table_stats(u, &ts);
		cr_expect_gt(ts.cache.built + ts.cache.loaded, got, "round %d: the evicted tables were not asked for", i);
		got = ts.cache.built + ts.cache.loaded;
	}
	perfrec_unwinder__table_stats(u, &ts);
	cr_expect_geq(ts.cache.evicted, 1, "nothing evicted past a 1-byte bound");
	cr_expect_eq(ts.cache.tables, 1, "%zu tables kept under a 1-byte bound", ts.cache.tables);
	cr_expect_eq(ts.by_tables, 3);
	perfrec_unwinder__free(u);
}

static bool whole(struct perfrec_unwinder *u)
{
	struct chain c = unwind(u, &snap);

	return chain_has(&c, middle_marker) && chain_has(&c, outer_marker);
}

/* A record of this process, the body's first 16 bytes @ids (pid, ppid or pid, tid, ...). */
static void feed_task(struct perfrec_unwinder *u, uint32_t type, uint16_t misc, const uint32_t ids[4])
{
	_Alignas(8) unsigned char rec[64] = {0};
	struct perf_event_header *h = (void *)rec;

	h->type = type;
	h->misc = misc;
	h->size = sizeof(*h) + 24 + 16;
	memcpy(rec + sizeof(*h), ids, 16);
	cr_assert_eq(perfrec_unwinder__rewrite(u, h, NULL, NULL, 0), 0);
}

/* This executable's code mapping, [*start, *end). */
static void exe_text(uint64_t *start, uint64_t *end)
{
	uint64_t pc = (uint64_t)(uintptr_t)capture_here, a, b;
	char line[PATH_MAX + 128], perms[8];
	FILE *f = fopen("/proc/self/maps", "r");

	*start = *end = 0;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s", &a, &b, perms) == 3 && pc >= a && pc < b) {
			*start = a;
			*end = b;
		}
	if (f)
		fclose(f);
	cr_assert_gt(*end, *start, "capture_here() is in no mapping");
}

/*
 * The unwinder remembers what it found at each pc of a process (its memo),
 * and forgets it when the process's code changes: a binary replaced by
 * another at the same addresses (here: the same path with another build
 * id, whose file is not to be had, so its frames end the chain), its code
 * cut by a data map, an exec, the pid used again by a new process.  Each
 * time the next sample must be unwound with the new maps, and back.
 */
Test(unwind_tables, a_process_whose_code_changes_is_not_unwound_from_memory, .init = setup)
{
	static const uint8_t other_id[20] = { 0xde, 0xad, 0xbe, 0xef, 9, 8, 7, 6, 5, 4, 3, 2, 1 };
	struct perfrec_unwinder *u = new_unwinder();
	uint32_t pid = (uint32_t)getpid(), ids[4] = { pid, pid, pid, pid };
	uint64_t start, end;
	uint8_t id[20];

	self_build_id(id);
	exe_text(&start, &end);
	feed_maps(u, NULL, id);
	cr_assert(whole(u));
	cr_assert(whole(u), "not unwound whole the second time (from memory)");
	/* Another binary at the same addresses. */
	feed_maps(u, NULL, other_id);
	cr_expect_not(whole(u), "unwound with the replaced binary's table");
	feed_maps(u, NULL, id);
	cr_expect(whole(u), "the binary mapped again is not unwound through");
	/* Data over the code: no code there any more. */
	feed_one_map(u, start, end - start, PROT_READ | PROT_WRITE, "//anon");
	cr_expect_not(whole(u), "unwound through code a data map replaced");
	feed_maps(u, NULL, id);
	cr_expect(whole(u));
	/* An exec: none of the old code (a data map of the new image first), then the other binary. */
	feed_task(u, PERF_RECORD_COMM, PERF_RECORD_MISC_COMM_EXEC, ids);
	feed_one_map(u, 0x10000, 0x1000, PROT_READ | PROT_WRITE, "//anon");
	cr_expect_not(whole(u), "unwound with the code of the image before exec");
	feed_maps(u, NULL, other_id);
	cr_expect_not(whole(u), "unwound with the maps of the image before exec");
	/* The process exits and its pid is a new process's, mapping the same way. */
	feed_maps(u, NULL, id);
	cr_expect(whole(u));
	feed_task(u, PERF_RECORD_EXIT, 0, ids);
	feed_maps(u, NULL, other_id);
	cr_expect_not(whole(u), "the new process of the same pid was unwound with the old one's maps");
	feed_task(u, PERF_RECORD_EXIT, 0, ids);
	feed_maps(u, NULL, id);
	cr_expect(whole(u));
	perfrec_unwinder__free(u);
}

/* New tables (perfrecd's reload) are another cache: nothing remembered of the old one's rows is used. */
Test(unwind_tables, new_tables_are_asked_not_the_rows_of_the_old, .init = make_tabdir, .fini = rm_tabdir)
{
	struct perfrec_unwinder *u = new_unwinder();
	struct perfrec_unwinder_table_stats ts;

	feed_maps(u, NULL, NULL);
	cr_assert(whole(u));
	cr_assert_eq(perfrec_unwinder__set_tables(u, &(struct perfrec_unwinder_tables_opts){ .dir = tabdir }), 0);
	cr_expect(whole(u));
	perfrec_unwinder__table_stats(u, &ts);
	cr_expect_geq(ts.cache.built, 1, "the new cache built no table: rows of the old one were used");
	perfrec_unwinder__free(u);
}

/*
 * A round of three CPUs' rings, each in time order, one after the other:
 * this binary's code mapped again and again, alternately with its own
 * build id and with another one (whose file is not to be had), and a
 * sample after each.  Flushed, every sample is unwound with the mapping
 * of its time: whole after its own build id, not after the other.
 */
Test(unwind_tables, a_round_of_several_rings_is_unwound_in_time_order, .init = setup)
{
	static const uint8_t other_id[20] = { 0xba, 0xd1, 0xd0 };
	static unsigned char recs[16][PATH_MAX + 256];
	static unsigned char samples[8][65536];
	static struct collected got;
	struct perfrec_unwinder *u = new_unwinder();
	struct perf_event_attr a = attr(), na, sb;
	const struct perf_event_header *ev[16];
	char exe[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	uint64_t start, end, pgoff = 0, v, ids = (uint64_t)getpid() << 32 | (uint32_t)getpid();
	uint8_t id[20];
	size_t off;

	cr_assert_gt(len, 0);
	exe[len] = 0;
	self_build_id(id);
	exe_text(&start, &end);
	{
		FILE *f = fopen("/proc/self/maps", "r");
		char line[PATH_MAX + 128];
		uint64_t x, y, o;

		while (f && fgets(line, sizeof(line), f))
			if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %*s %" SCNx64, &x, &y, &o) == 3 && x == start)
				pgoff = o;
		if (f)
			fclose(f);
	}
	feed_maps(u, NULL, id);
	a.sample_id_all = 1;
	sb = a;
	sb.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	for (unsigned k = 0; k < 8; k++) {
		struct perf_event_header *h = mmap2_record(recs[2 * k], start, end - start, pgoff, PROT_READ | PROT_EXEC, exe);

		h->misc |= PERF_RECORD_MISC_MMAP_BUILD_ID;
		recs[2 * k][sizeof(*h) + 32] = 20;
		memcpy(recs[2 * k] + sizeof(*h) + 36, k % 2 ? other_id : id, 20);
		off = h->size;
		v = 100 * k + 50;
		memcpy(recs[2 * k] + off, &ids, 8);
		memcpy(recs[2 * k] + off + 8, &v, 8);
		h->size = (uint16_t)(off + 16);
		ev[2 * k] = h;
		h = sample(&snap, samples[k]);
		v = 100 * k + 75;
		memcpy(samples[k] + sizeof(*h) + 24, &v, 8);
		ev[2 * k + 1] = h;
	}
	/* Three rings: records 0, 3, 6, ... then 1, 4, 7, ... then 2, 5, 8, ... */
	for (unsigned r = 0; r < 3; r++)
		for (unsigned i = r; i < 16; i += 3)
			cr_assert_eq(perfrec_unwinder__push(u, ev[i], ev[i]->type == PERF_RECORD_SAMPLE ? &a : &sb), 0);
	cr_assert_eq(perfrec_unwinder__flush(u, collect, &got), 0);
	cr_assert_eq(got.nr, 16);
	perfrec_unwinder__rewrite_attr(&a, &na);
	off = 0;
	for (unsigned i = 0, seen = 0; i < 16; i++) {
		const struct perf_event_header *h = (const void *)(got.buf + off);
		struct perfrec_sample smp;
		struct chain c = { 0 };

		off += h->size;
		if (h->type != PERF_RECORD_SAMPLE)
			continue;
		seen++;
		cr_assert_eq(perfrec_sample__parse_attr(h, &na, &smp), 0);
		c.nr = smp.nr_callchain - 1;
		memcpy(c.ip, smp.callchain + 1, c.nr * 8);
		if ((smp.time / 100) % 2 == 0)
			cr_expect(chain_has(&c, outer_marker), "the sample at %" PRIu64 " was not unwound with its map",
				  smp.time);
		else
			cr_expect_not(chain_has(&c, outer_marker), "the sample at %" PRIu64 " was unwound with "
				      "another time's map", smp.time);
		cr_assert_leq(seen, 8);
	}
	perfrec_unwinder__free(u);
}

/*
 * The [vdso] maps perfrecd writes carry the image's build id: its table
 * is built from the running image (vdso.h), so a sample at the entry of a
 * vdso function (CFA = rsp + 8) goes on to its caller.  Without it the
 * walk had no CFI there and no frame pointer to follow: the ip alone.
 */
Test(unwind_tables, a_sample_in_the_vdso_goes_on_to_its_caller)
{
	struct perfrec_unwinder *u = new_unwinder();
	_Alignas(8) unsigned char rec[512] = {0};
	struct perfrec_unwinder_table_stats ts;
	uint8_t id[PERFREC_BUILD_ID_MAX];
	uint64_t start = 0, end = 0, entry = 0, ra = (uint64_t)(uintptr_t)outer_marker + 16;
	struct perf_event_header *h;
	struct unwtab *t = NULL;
	struct snap s = { 0 };
	char line[PATH_MAX + 128];
	FILE *f = fopen("/proc/self/maps", "r");
	int idlen = vdso_build_id(id), fd;
	struct chain c;

	if (idlen <= 0)
		cr_skip_test("this kernel's vdso has no build id");
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "[vdso]"))
			cr_assert_eq(sscanf(line, "%" SCNx64 "-%" SCNx64, &start, &end), 2);
	fclose(f);
	cr_assert_gt(start, 0, "no [vdso] in /proc/self/maps");
	/* A function's entry: the first row whose CFA is rsp + 8. */
	fd = vdso_memfd(id, (size_t)idlen);
	cr_assert_geq(fd, 0);
	cr_assert_eq(unwtab_build_fd(fd, NULL, &t), 0);
	close(fd);
	for (size_t i = 0; i < t->nr_rows && !entry; i++)
		if ((t->rows[i].kind & UNWTAB_KIND_MASK) == UNWTAB_CFA_SP && t->rows[i].cfa_off == 8)
			entry = start + t->rows[i].start;
	unwtab_free(t);
	cr_assert_gt(entry, 0, "no function entry in the vdso's table");

	feed_maps(u, NULL, NULL);
	h = mmap2_record(rec, start, end - start, 0, PROT_READ | PROT_EXEC, VDSO_MAP_NAME);
	h->misc |= PERF_RECORD_MISC_MMAP_BUILD_ID;
	rec[sizeof(*h) + 32] = (unsigned char)idlen;
	memcpy(rec + sizeof(*h) + 36, id, (size_t)idlen);
	cr_assert_eq(perfrec_unwinder__rewrite(u, h, NULL, NULL, 0), 0);
	s.regs[R_IP] = entry;
	s.regs[R_SP] = (uint64_t)(uintptr_t)&s.stack;
	memcpy(s.stack, &ra, 8);
	s.dyn = STACK;
	c = unwind(u, &s);
	cr_assert_geq(c.nr, 2, "the vdso sample stops at its ip");
	cr_expect_eq(c.ip[1], ra - 1, "its caller is not the return address on the stack");
	perfrec_unwinder__table_stats(u, &ts);
	cr_expect_geq(ts.cache.built, 1);
	perfrec_unwinder__free(u);
}

static struct snap sigsnap;

static void on_usr1(int sig)
{
	(void)sig;
	outer_marker(&sigsnap);
}

__attribute__((noinline)) void raise_marker(void);
__attribute__((noinline)) void raise_marker(void)
{
	raise(SIGUSR1);
	__asm__ volatile("" ::: "memory");
}

/*
 * A signal frame (glibc's __restore_rt: registers restored by DWARF
 * expressions) is a row the tables cannot say: libdwfl goes on from it
 * (counted), and the chain comes out as libdwfl alone unwinds it, through
 * the signal frame to the interrupted code.
 */
Test(unwind_tables, a_signal_frame_is_libdwfls_and_the_chain_goes_through_it)
{
	struct sigaction sa = { .sa_handler = on_usr1 }, old;
	struct perfrec_unwinder *u = new_unwinder(), *d = new_dwfl_unwinder();
	struct perfrec_unwinder_table_stats ts;
	struct chain c, cd;

	cr_assert_eq(sigaction(SIGUSR1, &sa, &old), 0);
	raise_marker();
	cr_assert_eq(sigaction(SIGUSR1, &old, NULL), 0);
	feed_maps(u, NULL, NULL);
	feed_maps(d, NULL, NULL);
	c = unwind(u, &sigsnap);
	cd = unwind(d, &sigsnap);
	cr_expect(chain_has(&c, outer_marker));
	cr_expect(chain_has(&c, (void (*)(struct snap *))raise_marker), "the chain stops at the signal frame (%" PRIu64
		  " frames)", c.nr);
	cr_expect(c.nr == cd.nr && !memcmp(c.ip, cd.ip, c.nr * 8), "not libdwfl's chain");
	for (uint64_t i = 0; i < c.nr || i < cd.nr; i++)
		cr_log_info("%2" PRIu64 " %#18" PRIx64 " %#18" PRIx64, i, i < c.nr ? c.ip[i] : 0, i < cd.nr ? cd.ip[i] : 0);
	perfrec_unwinder__table_stats(u, &ts);
	cr_expect_eq(ts.by_dwfl, 1, "the signal frame was not handed to libdwfl");
	cr_expect_eq(ts.by_tables, 0);
	/* libdwfl went on from the signal frame: the frames below it are the tables'. */
	cr_expect_geq(ts.table_frames, 2, "libdwfl unwound the frames the tables had found (%" PRIu64 ")",
		      ts.table_frames);
	perfrec_unwinder__free(u);
	perfrec_unwinder__free(d);
}

/*
 * JIT code as node's V8 has it: anonymous executable memory without CFI
 * whose frames keep frame pointers.  The stub is push rbp; mov rbp, rsp;
 * call *rsi (its second argument, with the first passed on); pop rbp; ret.
 */
typedef void (*jit_stub_fn)(struct snap *s, void (*callee)(struct snap *));
static const unsigned char jit_code[] = { 0x55, 0x48, 0x89, 0xe5, 0xff, 0xd6, 0x5d, 0xc3 };

__attribute__((noinline)) void jit_callee(struct snap *s);
__attribute__((noinline)) void jit_callee(struct snap *s)
{
	middle_marker(s);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void jit_caller(struct snap *s, jit_stub_fn stub);
__attribute__((noinline)) void jit_caller(struct snap *s, jit_stub_fn stub)
{
	stub(s, jit_callee);
	__asm__ volatile("" ::: "memory");
}

static struct snap jitsnap;

/*
 * The chain of a sample taken under JIT code, whose map is named as the
 * kernel names anonymous memory: through the JIT frame to its caller and
 * on past it, the steps through it counted as frame pointers'.
 */
static void unwind_through_jit(struct perfrec_unwinder *u)
{
	struct perfrec_unwinder_table_stats ts;
	unsigned char *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t stub = (uint64_t)(uintptr_t)code, caller = (uint64_t)(uintptr_t)jit_caller, past = 0;
	bool in_stub = false;
	struct chain c;

	cr_assert_neq(code, MAP_FAILED);
	memcpy(code, jit_code, sizeof(jit_code));
	cr_assert_eq(mprotect(code, 4096, PROT_READ | PROT_EXEC), 0);
	jit_caller(&jitsnap, (jit_stub_fn)(uintptr_t)stub);
	feed_maps(u, NULL, NULL);
	feed_one_map(u, stub, 4096, PROT_READ | PROT_EXEC, "//anon");
	c = unwind(u, &jitsnap);
	for (uint64_t i = 0; i < c.nr; i++) {
		cr_log_info("%2" PRIu64 " %#18" PRIx64, i, c.ip[i]);
		in_stub |= c.ip[i] >= stub && c.ip[i] < stub + sizeof(jit_code);
	}
	cr_expect(chain_has(&c, jit_callee), "jit_callee is not a caller");
	cr_expect(in_stub, "the JIT frame is not in the chain");
	/* Through it to jit_caller, and on past it: the test's own frame, criterion's. */
	for (uint64_t i = 1; i < c.nr && !past; i++)
		past = c.ip[i] >= caller && c.ip[i] < caller + 128 ? i + 1 : 0;
	cr_expect(past, "the chain stops at the JIT frame (%" PRIu64 " frames)", c.nr);
	cr_expect_gt(c.nr, past, "nothing past jit_caller");
	perfrec_unwinder__table_stats(u, &ts);
	cr_expect_geq(ts.fp_frames, 1, "the frame pointer steps are not counted (%" PRIu64 ")", ts.fp_frames);
	perfrec_unwinder__free(u);
	munmap(code, 4096);
}

/*
 * A sample libdwfl unwinds (tables off, as while a file's table is still
 * pending under the build budget) whose stack goes through JIT code:
 * libdwfl's chain ends at the JIT frame (no CFI); from its registers the
 * frame pointers lead through it to its caller, and libdwfl goes on from
 * there.  The chain stopped at the JIT frame before.
 */
Test(unwind, libdwfl_goes_on_by_frame_pointers_through_jit_code)
{
	unwind_through_jit(new_dwfl_unwinder());
}

/*
 * The same with the tables: "//anon", the kernel's name for anonymous
 * memory, was taken for a file not to be had, and the walk ended at the
 * JIT frame instead of following its frame pointers.
 */
Test(unwind_tables, jit_code_in_anonymous_memory_is_walked_by_frame_pointers)
{
	unwind_through_jit(new_unwinder());
}
