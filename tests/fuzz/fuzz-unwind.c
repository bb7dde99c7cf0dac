// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libFuzzer target for the host unwinder: an input is a few mappings (into
 * this binary's own file, a missing one, anonymous memory), the sample's
 * user registers and its stack bytes, plus a side-band record or two (exec,
 * fork, exit).  Whatever they hold, the rewritten sample must parse for the
 * rewritten attr, keep the fields after the stack, and carry at most 127
 * user frames after PERF_CONTEXT_USER.  One unwinder serves every input, as
 * one serves many files: its ELF cache is exercised across inputs, and each
 * input ends with the process's EXIT.
 *
 * Layout: u8 nr_maps (low 3 bits); per map u64 start, u32 len, u32 pgoff,
 * u8 flags (bit 0 exec, bits 1-2 and 4 which file, bit 3 build id form);
 * the files include copies of this binary made hostile: its header says
 * aarch64, or ET_EXEC (a module that lies at the same range whatever the
 * base: mapped twice, it was freed under the session), or it is owned by
 * nobody and cut short now and then (read through an fd, not a mapping).
 * A file's device and inode are its own.
 *
 * u8 side-band (bit 0 COMM exec before the sample, bit 1 FORK into it,
 * bit 5 the first map mapped again 16 MiB higher after it and the sample
 * unwound again: a session grown after it was built);
 * 20 u64 registers; the rest is the stack copy.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <perfrec/event.h>
#include <perfrec/evlist.h>
#include <perfrec/unwind.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PID 4242
#define NR_REGS 20

static struct perfrec_unwinder *u;
static char exe[PATH_MAX];
static char dir[] = "/tmp/fuzz-unwind-XXXXXX";
static char foreign[PATH_MAX], fixed[PATH_MAX], users[PATH_MAX];
static const char *names[8];
static struct stat sts[8];

/* A copy of this binary at @path with @len bytes at @off replaced (none when @len is 0). */
static void hostile_copy(const char *path, long off, const void *bytes, size_t len)
{
	int in = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	int out = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	char buf[65536];
	ssize_t n;

	if (in < 0 || out < 0)
		abort();
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			abort();
	if (len && pwrite(out, bytes, len, off) != (ssize_t)len)
		abort();
	close(in);
	close(out);
}

static void cleanup(void)
{
	unlink(foreign);
	unlink(fixed);
	unlink(users);
	rmdir(dir);
}

static void setup(void)
{
	static const unsigned char aarch64[2] = { 183, 0 }, et_exec[2] = { 2, 0 };
	ssize_t l = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (l <= 0 || !mkdtemp(dir))
		abort();
	exe[l] = 0;
	snprintf(foreign, sizeof(foreign), "%s/foreign", dir);
	snprintf(fixed, sizeof(fixed), "%s/fixed", dir);
	snprintf(users, sizeof(users), "%s/users", dir);
	hostile_copy(foreign, 18, aarch64, 2);
	hostile_copy(fixed, 16, et_exec, 2);
	hostile_copy(users, 0, NULL, 0);
	if (geteuid() == 0 && chown(users, 65534, 65534) < 0)
		abort();
	atexit(cleanup);
	names[0] = exe;
	names[1] = "/nonexistent/fuzz-unwind";
	names[2] = "//anon";
	names[3] = "[vdso]";
	names[4] = fixed;
	names[5] = foreign;
	names[6] = users;
	names[7] = fixed;
	for (int i = 0; i < 8; i++)
		if (names[i][0] == '/' && names[i][1] != '/')
			stat(names[i], &sts[i]);
}

struct in {
	const uint8_t *p;
	size_t left;
};

static uint64_t take(struct in *in, size_t n)
{
	uint64_t v = 0;

	if (n > in->left)
		n = in->left;
	memcpy(&v, in->p, n);
	in->p += n;
	in->left -= n;
	return v;
}

static void mmap2(uint64_t start, uint64_t len, uint64_t pgoff, uint8_t flags)
{
	_Alignas(8) unsigned char rec[PATH_MAX + 128] = {0};
	struct perf_event_header *h = (void *)rec;
	unsigned char *p = rec + sizeof(*h);
	uint32_t pid = PID, prot = PROT_READ | ((flags & 1) ? PROT_EXEC : 0);
	unsigned which = ((flags >> 1) & 3) | ((flags >> 2) & 4);
	const char *name = names[which];
	size_t nl = strlen(name) + 1;

	memcpy(p, &pid, 4);
	memcpy(p + 4, &pid, 4);
	memcpy(p + 8, &start, 8);
	memcpy(p + 16, &len, 8);
	memcpy(p + 24, &pgoff, 8);
	h->misc = PERF_RECORD_MISC_USER;
	if (flags & 8) {
		h->misc |= PERF_RECORD_MISC_MMAP_BUILD_ID;
		p[32] = (uint8_t)(flags & 0xf0); /* a length, often past 20 */
		memset(p + 36, flags, 20);
	} else {
		uint32_t maj = major(sts[which].st_dev), min = minor(sts[which].st_dev);
		uint64_t ino = sts[which].st_ino;

		memcpy(p + 32, &maj, 4);
		memcpy(p + 36, &min, 4);
		memcpy(p + 40, &ino, 8);
	}
	memcpy(p + 56, &prot, 4);
	memcpy(p + 64, name, nl);
	h->type = PERF_RECORD_MMAP2;
	h->size = (uint16_t)((sizeof(*h) + 64 + nl + 7) & ~(size_t)7);
	perfrec_unwinder__rewrite(u, h, NULL, NULL, 0);
}

static void task(uint32_t type, uint16_t misc, uint32_t pid, uint32_t ppid)
{
	_Alignas(8) unsigned char rec[64] = {0};
	struct perf_event_header *h = (void *)rec;
	uint32_t ids[4] = { pid, ppid, pid, ppid };

	h->type = type;
	h->misc = misc;
	h->size = sizeof(*h) + 32;
	memcpy(rec + sizeof(*h), ids, sizeof(ids));
	perfrec_unwinder__rewrite(u, h, NULL, NULL, 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static unsigned char rec[65536], out[65536];
	struct perf_event_attr a = {
		.size = sizeof(a),
		.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			       PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER |
			       PERF_SAMPLE_CGROUP,
		.sample_regs_user = PERFREC_REGS_USER_X86_64,
		.sample_stack_user = 60000,
	}, na;
	struct in in = { data, size };
	struct { uint64_t start, len, pgoff; uint8_t flags; } first = {0};
	struct perf_event_header *h = (void *)rec;
	unsigned char *p = rec + sizeof(*h);
	struct perfrec_sample s;
	uint64_t v, regs[NR_REGS], stack_len;
	unsigned nr_maps;
	uint8_t side;
	int n;

	if (!u) {
		struct perfrec_unwinder_opts o = { .sz = sizeof(o), .max_elves = 2, .max_spaces = 2, .max_elf_fds = 1 };

		setup();
		if (perfrec_unwinder__new(&o, &u) < 0)
			abort();
	}
	nr_maps = take(&in, 1) & 7;
	for (unsigned i = 0; i < nr_maps; i++) {
		uint64_t start = take(&in, 8), len = take(&in, 4), pgoff = take(&in, 4);

		uint8_t flags = (uint8_t)take(&in, 1);

		if (!i)
			first = (typeof(first)){ start, len, pgoff, flags };
		mmap2(start, len, pgoff, flags);
	}
	side = (uint8_t)take(&in, 1);
	if (side & 2)
		task(PERF_RECORD_FORK, 0, PID + 1, PID);
	if (side & 1)
		task(PERF_RECORD_COMM, PERF_RECORD_MISC_COMM_EXEC, (side & 4) ? PID + 1 : PID, PID);
	for (int i = 0; i < NR_REGS; i++)
		regs[i] = take(&in, 8);
	stack_len = in.left > 60000 ? 60000 : in.left & ~(size_t)7;

#define PUT(x) do { v = (x); memcpy(p, &v, 8); p += 8; } while (0)
	PUT(1);
	PUT(regs[8]);
	PUT((uint64_t)((side & 4) ? PID + 1 : PID) << 32 | PID);
	PUT(1);
	PUT(0);
	PUT(PERF_SAMPLE_REGS_ABI_64);
	memcpy(p, regs, sizeof(regs));
	p += sizeof(regs);
	PUT(stack_len);
	memcpy(p, in.p, stack_len);
	p += stack_len;
	if (stack_len)
		PUT(stack_len - (side >> 3) * 8 > stack_len ? 0 : stack_len - (side >> 3) * 8);
	PUT(0x99);
#undef PUT
	h->type = PERF_RECORD_SAMPLE;
	h->size = (uint16_t)(p - rec);

	n = perfrec_unwinder__rewrite(u, h, &a, out, sizeof(out));
	if (n > 0) {
		perfrec_unwinder__rewrite_attr(&a, &na);
		if (perfrec_sample__parse_attr((void *)out, &na, &s) < 0 || s.cgroup != 0x99 ||
		    s.nr_callchain < 2 || s.nr_callchain > 128 || s.callchain[0] != PERF_CONTEXT_USER)
			abort();
	} else if (n == 0) {
		abort(); /* a DWARF sample is always rewritten */
	}
	if ((side & 0x20) && nr_maps) {
		mmap2(first.start + (16 << 20), first.len, first.pgoff, first.flags);
		if (perfrec_unwinder__rewrite(u, h, &a, out, sizeof(out)) == 0)
			abort();
	}
	task(PERF_RECORD_EXIT, 0, PID, PID);
	task(PERF_RECORD_EXIT, 0, PID + 1, PID);
	/* The user's file cut short under the unwinder, and back, now and then. */
	if ((side & 0xf0) == 0xf0) {
		if (truncate(users, (side & 1) ? 0 : 4096) < 0)
			abort();
		hostile_copy(users, 0, NULL, 0);
	}
	return 0;
}
