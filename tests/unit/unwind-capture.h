/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * For the unwinder's tests (test-unwind.c, test-unwind-sink.c): this
 * process's own registers and stack captured into a struct snap, and a
 * PERF_RECORD_SAMPLE made of them as perf's DWARF mode lays it out.
 */
#ifndef PERFREC_TEST_UNWIND_CAPTURE_H
#define PERFREC_TEST_UNWIND_CAPTURE_H

#define STACK 8192
#define NR_REGS 20 /* bits of PERFREC_REGS_USER_X86_64 */
/* Index in the regs array of perf's register numbers SP, BP and IP. */
#define R_BP 6
#define R_SP 7
#define R_IP 8

struct snap {
	uint64_t regs[NR_REGS];
	unsigned char stack[STACK];
	uint64_t dyn;
};

static uint64_t stack_end;

/* Where the main stack ends, so the copy does not read past it. */
static void find_stack_end(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];

	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		uint64_t a, b;

		if (strstr(line, "[stack]") && sscanf(line, "%" SCNx64 "-%" SCNx64, &a, &b) == 2)
			stack_end = b;
	}
	fclose(f);
}

/*
 * The registers the CFI needs at a known instruction (the lea's target is
 * the next one, whose rule for the CFA is that of the whole body) and the
 * stack from there up, as the kernel would copy them.
 */
/*
 * Reading the raw stack, as the kernel does, crosses ASan's redzones: not
 * instrumented, and copied byte by byte (memcpy would be intercepted).
 */
__attribute__((noinline, no_sanitize_address)) void capture_here(struct snap *s);
__attribute__((noinline, no_sanitize_address)) void capture_here(struct snap *s)
{
	uint64_t ip, sp, bp, bx, r12, r13, r14, r15;

	__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2\n\tmov %%rbx, %3\n\t"
			 "mov %%r12, %4\n\tmov %%r13, %5\n\tmov %%r14, %6\n\tmov %%r15, %7"
			 : "=&r"(ip), "=&r"(sp), "=&r"(bp), "=&r"(bx), "=&r"(r12), "=&r"(r13), "=&r"(r14), "=&r"(r15));
	for (int i = 0; i < NR_REGS; i++)
		s->regs[i] = 0;
	s->regs[1] = bx;
	s->regs[R_BP] = bp;
	s->regs[R_SP] = sp;
	s->regs[R_IP] = ip;
	s->regs[16] = r12;
	s->regs[17] = r13;
	s->regs[18] = r14;
	s->regs[19] = r15;
	s->dyn = stack_end && stack_end - sp < STACK ? stack_end - sp : STACK;
	for (uint64_t i = 0; i < s->dyn; i++)
		s->stack[i] = ((const volatile unsigned char *)sp)[i];
}

__attribute__((noinline)) void middle_marker(struct snap *s);
__attribute__((noinline)) void middle_marker(struct snap *s)
{
	capture_here(s);
	__asm__ volatile("" ::: "memory"); /* not a tail call */
}

__attribute__((noinline)) void outer_marker(struct snap *s);
__attribute__((noinline)) void outer_marker(struct snap *s)
{
	middle_marker(s);
	__asm__ volatile("" ::: "memory");
}

static struct perf_event_attr attr(void)
{
	struct perf_event_attr a = {
		.size = sizeof(a),
		.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			       PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER |
			       PERF_SAMPLE_CGROUP,
		.sample_regs_user = PERFREC_REGS_USER_X86_64,
		.sample_stack_user = STACK,
		.exclude_callchain_user = 1,
	};
	return a;
}

/* A SAMPLE of attr() for @s, pid/tid ours, in @buf (64 KiB). */
static struct perf_event_header *sample(const struct snap *s, unsigned char *buf)
{
	struct perf_event_header *h = (void *)buf;
	unsigned char *p = buf + sizeof(*h);
	uint64_t v;

#define PUT(x) do { v = (x); memcpy(p, &v, 8); p += 8; } while (0)
	PUT(42);                                          /* identifier */
	PUT(s->regs[R_IP]);                               /* ip */
	PUT((uint64_t)getpid() << 32 | (uint32_t)getpid()); /* pid, tid */
	PUT(1000);                                        /* time */
	PUT(0);                                           /* callchain: no kernel part */
	PUT(PERF_SAMPLE_REGS_ABI_64);
	memcpy(p, s->regs, sizeof(s->regs));
	p += sizeof(s->regs);
	PUT(STACK);
	memcpy(p, s->stack, STACK);
	p += STACK;
	PUT(s->dyn);
	PUT(0x77);                                        /* cgroup */
#undef PUT
	h->type = PERF_RECORD_SAMPLE;
	h->misc = PERF_RECORD_MISC_USER;
	h->size = (uint16_t)(p - buf);
	return h;
}

/*
 * An MMAP2 record of this process in @rec (zeroed, at least 64 bytes more
 * than @name): [@start, @start + @len) of @name at @pgoff with @prot; the
 * device/inode or build-id part (bytes 32-55 of the body) is the caller's.
 */
static struct perf_event_header *mmap2_record(unsigned char *rec, uint64_t start, uint64_t len, uint64_t pgoff,
					      uint32_t prot, const char *name)
{
	struct perf_event_header *h = (void *)rec;
	unsigned char *p = rec + sizeof(*h);
	uint32_t pid = (uint32_t)getpid();
	size_t nlen = strlen(name) + 1;

	memcpy(p, &pid, 4);
	memcpy(p + 4, &pid, 4);
	memcpy(p + 8, &start, 8);
	memcpy(p + 16, &len, 8);
	memcpy(p + 24, &pgoff, 8);
	memcpy(p + 56, &prot, 4);
	memcpy(p + 64, name, nlen);
	h->type = PERF_RECORD_MMAP2;
	h->misc = PERF_RECORD_MISC_USER;
	h->size = (uint16_t)((sizeof(*h) + 64 + nlen + 7) & ~(size_t)7);
	return h;
}

/*
 * This process's file mappings as MMAP2 records (device and inode form),
 * with @path_for naming a file in place of @exe when given, and
 * @build_id (20 bytes) in place of dev/ino for that one when given.
 */
static void for_each_map(const char *swap_path, const uint8_t *build_id,
			 void (*take)(void *ctx, const struct perf_event_header *h), void *ctx)
{
	char exe[PATH_MAX], line[PATH_MAX + 128];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	FILE *f = fopen("/proc/self/maps", "r");

	cr_assert(n > 0);
	exe[n] = 0;
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		_Alignas(8) unsigned char rec[PATH_MAX + 256] = {0};
		struct perf_event_header *h;
		uint64_t start, end, pgoff, ino;
		unsigned maj, min;
		char perms[8], name[PATH_MAX] = "";
		unsigned char *p = rec + sizeof(*h);
		uint32_t prot;
		bool is_exe;

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %x:%x %" SCNu64 " %4095s",
			   &start, &end, perms, &pgoff, &maj, &min, &ino, name) < 7 || name[0] != '/')
			continue;
		prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[2] == 'x' ? PROT_EXEC : 0);
		is_exe = strcmp(name, exe) == 0;
		if (is_exe && swap_path)
			snprintf(name, sizeof(name), "%s", swap_path);
		h = mmap2_record(rec, start, end - start, pgoff, prot, name);
		if (is_exe && build_id) {
			h->misc |= PERF_RECORD_MISC_MMAP_BUILD_ID;
			p[32] = 20;
			memcpy(p + 36, build_id, 20);
		} else {
			memcpy(p + 32, &maj, 4);
			memcpy(p + 36, &min, 4);
			memcpy(p + 40, &ino, 8);
		}
		take(ctx, h);
	}
	fclose(f);
}

#endif
