// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests for the views' walk of a callchain (views/profile.c, linked
 * from the views library), on a file holding this very process's mappings: which frames
 * are return addresses, looked up one byte back (in their call), and
 * which are where a context was interrupted, looked up as they are.  A
 * sample taken in the kernel (a timer interrupt, a page fault) carries,
 * after PERF_CONTEXT_USER, the user ip where the task was stopped: at a
 * function's first instruction (a page fault on its first call, an
 * interrupt at its entry), one byte back is another function or none.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <perfrec/event.h>
#include <perfrec/pdwriter.h>

#include "profile.h"

/* Aligned, so the byte before it is padding or another function, never it. */
__attribute__((noinline, aligned(64))) void walk_target(void);
__attribute__((noinline, aligned(64))) void walk_target(void)
{
	__asm__ volatile("" ::: "memory");
}

#define KERNEL_IP 0xffffffff81000c82ULL

static char path[] = "/tmp/test-profile-walk-XXXXXX";

static void write_map(struct perfrec_pdwriter *w, uint64_t start, uint64_t len, uint64_t pgoff,
		      unsigned maj, unsigned min, uint64_t ino, const char *name)
{
	_Alignas(8) unsigned char rec[PATH_MAX + 128] = {0};
	struct perf_event_header *h = (void *)rec;
	unsigned char *p = rec + sizeof(*h);
	uint32_t pid = (uint32_t)getpid(), prot = PROT_READ | PROT_EXEC;
	size_t nlen = strlen(name) + 1;

	memcpy(p, &pid, 4);
	memcpy(p + 4, &pid, 4);
	memcpy(p + 8, &start, 8);
	memcpy(p + 16, &len, 8);
	memcpy(p + 24, &pgoff, 8);
	memcpy(p + 32, &maj, 4);
	memcpy(p + 36, &min, 4);
	memcpy(p + 40, &ino, 8);
	memcpy(p + 56, &prot, 4);
	memcpy(p + 64, name, nlen);
	h->type = PERF_RECORD_MMAP2;
	h->misc = PERF_RECORD_MISC_USER;
	h->size = (uint16_t)((sizeof(*h) + 64 + nlen + 7) & ~(size_t)7);
	cr_assert_eq(perfrec_pdwriter__write(w, h, h->size), 0);
}

/* This process's executable file mappings, as MMAP2 records. */
static void write_maps(struct perfrec_pdwriter *w)
{
	char line[PATH_MAX + 128];
	FILE *f = fopen("/proc/self/maps", "re");

	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		uint64_t start, end, pgoff, ino;
		char perms[8], name[PATH_MAX] = "";
		unsigned maj, min;

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %x:%x %" SCNu64 " %4095s",
			   &start, &end, perms, &pgoff, &maj, &min, &ino, name) < 7 ||
		    name[0] != '/' || perms[2] != 'x')
			continue;
		write_map(w, start, end - start, pgoff, maj, min, ino, name);
	}
	fclose(f);
}

/* A cpu-clock sample of ours with @misc and the callchain @chain. */
static void write_sample(struct perfrec_pdwriter *w, uint16_t misc, uint64_t ip, const uint64_t *chain, size_t nr)
{
	_Alignas(8) unsigned char buf[256];
	struct perf_event_header *h = (void *)buf;
	unsigned char *p = buf + sizeof(*h);
	uint64_t v;

#define PUT(x) do { v = (x); memcpy(p, &v, 8); p += 8; } while (0)
	PUT(42);                                            /* identifier */
	PUT(ip);
	PUT((uint64_t)getpid() << 32 | (uint32_t)getpid()); /* pid, tid */
	PUT(1000);                                          /* time */
	PUT(1000000);                                       /* period */
	PUT(nr);
	for (size_t i = 0; i < nr; i++)
		PUT(chain[i]);
#undef PUT
	h->type = PERF_RECORD_SAMPLE;
	h->misc = misc;
	h->size = (uint16_t)(p - buf);
	cr_assert_eq(perfrec_pdwriter__write(w, h, h->size), 0);
}

static void make_file(uint16_t misc, uint64_t ip, const uint64_t *chain, size_t nr)
{
	struct perfrec_pdwriter_opts wo = { .sz = sizeof(wo), .owns_fd = true };
	struct perf_event_attr a = {
		.size = sizeof(a), .type = PERF_TYPE_SOFTWARE, .config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			       PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN,
	};
	struct perfrec_pdwriter *w;
	uint64_t id = 42;
	int fd;

	strcpy(path, "/tmp/test-profile-walk-XXXXXX");
	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	cr_assert_eq(perfrec_pdwriter__new(fd, &wo, &w), 0);
	cr_assert_eq(perfrec_pdwriter__add_attr(w, &a, &id, 1, "cpu-clock"), 0);
	write_maps(w);
	write_sample(w, misc, ip, chain, nr);
	cr_assert_eq(perfrec_pdwriter__finish(w), 0);
	perfrec_pdwriter__free(w, false);
}

struct seen {
	size_t samples;
	char user[4][64];   /* the user frames' names, leaf first */
	size_t nr_user;
};

static int take(void *ctx, const struct pstack *s)
{
	struct seen *seen = ctx;

	seen->samples++;
	for (size_t i = 0; i < s->nr_frames && seen->nr_user < 4; i++)
		if (s->frames[i].kind == PFRAME_USER)
			snprintf(seen->user[seen->nr_user++], sizeof(seen->user[0]), "%s",
				 s->frames[i].name ? s->frames[i].name : "(null)");
	return 0;
}

static struct seen walk(void)
{
	const char *paths[] = { path };
	struct profile_opts o = { .pid = -1, .no_debuginfod = true };
	struct seen seen = {0};

	cr_assert_eq(profile_walk(paths, 1, &o, take, &seen), 0);
	unlink(path);
	cr_assert_eq(seen.samples, 1);
	return seen;
}

/* Interrupted in the kernel: the user ip after the kernel's frames is where the task stopped. */
Test(profile_walk, user_ip_after_kernel_frames_is_not_a_return_address)
{
	uint64_t target = (uint64_t)(uintptr_t)walk_target;
	const uint64_t chain[] = { PERF_CONTEXT_KERNEL, KERNEL_IP, PERF_CONTEXT_USER, target };
	struct seen seen;

	make_file(PERF_RECORD_MISC_KERNEL, KERNEL_IP, chain, 4);
	seen = walk();
	cr_assert_eq(seen.nr_user, 1);
	cr_expect_str_eq(seen.user[0], "walk_target", "the interrupted user ip at a function's entry is named %s",
			 seen.user[0]);
}

/* Sampled in user mode: the ip is exact, a caller is a return address, looked up one byte back. */
Test(profile_walk, user_sample_ip_is_exact_and_callers_are_return_addresses)
{
	uint64_t target = (uint64_t)(uintptr_t)walk_target;
	const uint64_t chain[] = { PERF_CONTEXT_USER, target, target };
	struct seen seen;

	make_file(PERF_RECORD_MISC_USER, target, chain, 3);
	seen = walk();
	cr_assert_eq(seen.nr_user, 2);
	cr_expect_str_eq(seen.user[0], "walk_target");
	/* Returning to walk_target's first byte is returning from a call before it. */
	cr_expect_str_neq(seen.user[1], "walk_target");
}
