// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests of daemon/jitsink.c: an anonymous executable MMAP2 of a
 * process with a perf map (this test, with a mapping of its own) is
 * followed by one naming an image with a build id, the kernel's trailer
 * kept but one nanosecond later; when the file ends the image, with the
 * map's symbols in that mapping only, is in the build-id cache under that
 * build id and linked under its name for perfparser.
 */
#include <criterion/criterion.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bidcache.h"
#include "jitimage.h"
#include "jitsink.h"

#define ST (PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER)

static uint8_t got[512];
static int nr_got;

static int capture(void *ctx, const struct perf_event_header *h)
{
	memcpy(got, h, h->size);
	nr_got++;
	return 0;
}

/* The kernel's MMAP2 of @start/@len "//anon", its trailer: pid tid, time, id, cpu, identifier. */
static size_t kernel_mmap2(uint8_t *buf, uint64_t start, uint64_t len)
{
	uint32_t pid = (uint32_t)getpid(), prot = PROT_READ | PROT_WRITE | PROT_EXEC, flags = MAP_PRIVATE;
	uint64_t pgoff = start >> 12, trailer[5] = { (uint64_t)pid << 32 | pid, 1000, 77, 1, 77 };
	struct perf_event_header *h = (void *)buf;

	memset(buf, 0, 256);
	h->type = PERF_RECORD_MMAP2;
	h->misc = PERF_RECORD_MISC_USER;
	memcpy(buf + 8, &pid, 4);
	memcpy(buf + 12, &pid, 4);
	memcpy(buf + 16, &start, 8);
	memcpy(buf + 24, &len, 8);
	memcpy(buf + 32, &pgoff, 8);
	memcpy(buf + 64, &prot, 4);
	memcpy(buf + 68, &flags, 4);
	memcpy(buf + 72, "//anon", 7);
	memcpy(buf + 80, trailer, sizeof(trailer));
	h->size = 80 + sizeof(trailer);
	return h->size;
}

static const Dwfl_Callbacks cbs = {
	.find_elf = dwfl_build_id_find_elf, .find_debuginfo = dwfl_standard_find_debuginfo,
};

Test(jitsink, an_anon_exec_mapping_gets_an_mmap2_and_an_image)
{
	char dir[] = "/tmp/test-jitsink-XXXXXX", map[64], path[PATH_MAX], name[128], cmd[64];
	const size_t len = 1 << 16;
	uint8_t *code = mmap(NULL, len, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t start = (uint64_t)(uintptr_t)code, t, pgoff, trailer[5];
	struct config cfg = { 0 };
	const struct config *cfgp = &cfg;
	struct jitsink_opts o = { .sideband_sample_type = ST, .emit = capture };
	struct jitsink js;
	uint8_t rec[256];
	FILE *f;
	Dwfl *dwfl;
	Dwfl_Module *mod;

	cr_assert_neq(code, MAP_FAILED);
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/.build-id", dir);
	cr_assert_eq(mkdir(path, 0750), 0);
	cfg.buildid_cache = dir;
	snprintf(map, sizeof(map), "/tmp/perf-%d.map", (int)getpid());
	f = fopen(map, "we");
	cr_assert_not_null(f);
	fprintf(f, "%" PRIx64 " 20 jit_fn_one\n%" PRIx64 " 40 jit_fn_two\n%" PRIx64 " 10 elsewhere\n",
		start + 0x10, start + 0x1000, start + len + 0x1000);
	fclose(f);

	jitsink_init(&js, &cfgp, &o);
	kernel_mmap2(rec, start, len);
	jitsink_note(&js, (const struct perf_event_header *)rec);
	cr_assert_eq(nr_got, 1, "no MMAP2 written after the //anon one");
	{
		const struct perf_event_header *h = (const void *)got;

		cr_assert_eq(h->type, PERF_RECORD_MMAP2);
		cr_assert(h->misc & PERF_RECORD_MISC_MMAP_BUILD_ID);
		memcpy(&pgoff, got + 32, 8);
		cr_assert_eq(pgoff, 0);
		cr_assert_eq(got[40], JITIMAGE_BID_LEN);
		snprintf(name, sizeof(name), "/perfrec-jit/jit-%d-%" PRIx64 "-%zx.so", (int)getpid(), start, len);
		cr_assert_str_eq((const char *)got + 72, name);
		memcpy(trailer, got + h->size - sizeof(trailer), sizeof(trailer));
		memcpy(&t, &trailer[1], 8);
		cr_assert_eq(t, 1001, "not one nanosecond after the kernel's");
		cr_assert_eq(trailer[2], 77);
		cr_assert_eq(trailer[4], 77);
	}
	jitsink_file_end(&js);
	unlink(map);

	/* the image, under the MMAP2's build id, names the map's symbols in the mapping */
	{
		char hex[2 * JITIMAGE_BID_LEN + 2];

		jitimage_bid_path(got + 44, hex);
		snprintf(path, sizeof(path), "%s/.build-id/%s", dir, hex);
	}
	dwfl = dwfl_begin(&cbs);
	mod = dwfl_report_elf(dwfl, "jit", path, -1, start, false);
	cr_assert_not_null(mod, "no image at %s: %s", path, dwfl_errmsg(-1));
	dwfl_report_end(dwfl, NULL, NULL);
	cr_assert_str_eq(dwfl_module_addrname(mod, start + 0x18), "jit_fn_one");
	cr_assert_str_eq(dwfl_module_addrname(mod, start + 0x1020), "jit_fn_two");
	dwfl_end(dwfl);
	cr_assert_eq(js.st.images, 1);
	cr_assert_eq(js.st.image_syms, 2, "a symbol outside the mapping went into its image");
	/* and under its MMAP2 name, for perfparser's --debug */
	snprintf(path, sizeof(path), "%s%s", dir, name);
	cr_assert_eq(access(path, F_OK), 0, "%s", path);

	jitsink_exit(&js);
	bidcache_clear();
	munmap(code, len);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

Test(jitsink, file_mappings_and_no_cache_get_nothing)
{
	struct config cfg = { 0 };
	const struct config *cfgp = &cfg;
	struct jitsink_opts o = { .sideband_sample_type = ST, .emit = capture };
	struct jitsink js;
	uint8_t rec[256];

	nr_got = 0;
	jitsink_init(&js, &cfgp, &o);
	kernel_mmap2(rec, 0x7f0000000000ull, 4096);
	jitsink_note(&js, (const void *)rec);
	cr_assert_eq(nr_got, 0, "an MMAP2 without a cache to put its image in");
	cfg.buildid_cache = "/nonexistent";
	memcpy(rec + 72, "/usr/lib", 9);
	jitsink_note(&js, (const void *)rec);
	cr_assert_eq(nr_got, 0, "a file's mapping taken for JIT code");
	jitsink_exit(&js);
}

/*
 * After an exec the process is another program: its maps are not the old
 * one's.  But the exec that started the program may be drained after its
 * first maps: it ends nothing.
 */
Test(jitsink, an_exec_starts_the_process_over)
{
	char dir[] = "/tmp/test-jitsink-XXXXXX", path[PATH_MAX], cmd[64];
	struct config cfg = { 0 };
	const struct config *cfgp = &cfg;
	struct jitsink_opts o = { .sideband_sample_type = ST, .emit = capture };
	struct jitsink js;
	uint8_t rec[256];
	struct { struct perf_event_header h; uint32_t pid, tid; char comm[16]; uint64_t trailer[5]; } c = {
		.h = { .type = PERF_RECORD_COMM, .misc = PERF_RECORD_MISC_COMM_EXEC, .size = sizeof(c) },
		.pid = (uint32_t)getpid(), .tid = (uint32_t)getpid(), .comm = "other",
	};

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/.build-id", dir);
	cr_assert_eq(mkdir(path, 0750), 0);
	cfg.buildid_cache = dir;
	jitsink_init(&js, &cfgp, &o);
	kernel_mmap2(rec, 0x7f0000000000ull, 4096);
	jitsink_note(&js, (const void *)rec);
	cr_assert_eq(js.nr_procs, 1);
	/* the exec that started this program, drained after its maps (another CPU's ring) */
	c.trailer[0] = (uint64_t)getpid() << 32 | (uint32_t)getpid();
	c.trailer[1] = 999;
	jitsink_note(&js, &c.h);
	kernel_mmap2(rec, 0x7f0000080000ull, 4096);
	jitsink_note(&js, (const void *)rec);
	cr_assert_eq(js.nr_procs, 1, "an exec older than the process's maps ended it");
	/* a later one */
	c.trailer[1] = 2000;
	jitsink_note(&js, &c.h);
	kernel_mmap2(rec, 0x7f0000100000ull, 4096);
	jitsink_note(&js, (const void *)rec);
	cr_assert_eq(js.nr_procs, 2, "the exec'd program shares the old one's state");
	cr_assert_eq(js.st.procs, 2);
	/* a comm change that is no exec (prctl) changes nothing */
	c.h.misc = 0;
	jitsink_note(&js, &c.h);
	kernel_mmap2(rec, 0x7f0000200000ull, 4096);
	jitsink_note(&js, (const void *)rec);
	cr_assert_eq(js.nr_procs, 2);
	jitsink_file_end(&js);
	cr_assert_eq(js.nr_procs, 1, "the program before the exec is still followed");
	jitsink_exit(&js);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

static uint8_t hist_got[512];
static int nr_hist;
static size_t hist_ring;
static uint64_t hist_time;

static int no_file(void *ctx, const struct perf_event_header *h)
{
	return -ENOENT;
}

static int hist_capture(void *ctx, size_t ring, const struct perf_event_header *h, uint64_t time)
{
	memcpy(hist_got, h, h->size);
	hist_ring = ring;
	hist_time = time;
	nr_hist++;
	return 0;
}

/* The symbol of the image in @dir named by the MMAP2 @mmap2 at @addr (NULL: none). */
static const char *image_sym(const char *dir, const uint8_t *mmap2, uint64_t start, uint64_t addr, char *out,
			     size_t len)
{
	char hex[2 * JITIMAGE_BID_LEN + 2], path[PATH_MAX];
	const char *name;
	Dwfl *dwfl = dwfl_begin(&cbs);
	Dwfl_Module *mod;

	jitimage_bid_path(mmap2 + 44, hex);
	snprintf(path, sizeof(path), "%s/.build-id/%s", dir, hex);
	mod = dwfl_report_elf(dwfl, "jit", path, -1, start, false);
	dwfl_report_end(dwfl, NULL, NULL);
	name = mod ? dwfl_module_addrname(mod, addr) : NULL;
	snprintf(out, len, "%s", name ? name : "");
	dwfl_end(dwfl);
	return name ? out : NULL;
}

/*
 * Flight mode: no file; the MMAP2 naming the image goes into the history
 * (the ring of the record it follows, one ns later), each snapshot
 * writes the image, and a later one rewrites it with the symbols the
 * runtime announced since.
 */
Test(jitsink, flight_history_gets_the_mmap2_and_snapshots_the_images)
{
	char dir[] = "/tmp/test-jitsink-XXXXXX", map[64], path[PATH_MAX], cmd[64], sym[128];
	const size_t len = 1 << 16;
	uint8_t *code = mmap(NULL, len, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t start = (uint64_t)(uintptr_t)code;
	struct config cfg = { 0 };
	const struct config *cfgp = &cfg;
	struct jitsink_opts o = { .sideband_sample_type = ST, .emit = no_file };
	struct jitsink js;
	uint8_t rec[256];
	FILE *f;

	cr_assert_neq(code, MAP_FAILED);
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/.build-id", dir);
	cr_assert_eq(mkdir(path, 0750), 0);
	cfg.buildid_cache = dir;
	snprintf(map, sizeof(map), "/tmp/perf-%d.map", (int)getpid());
	f = fopen(map, "we");
	cr_assert_not_null(f);
	fprintf(f, "%" PRIx64 " 20 early_fn\n", start + 0x10);
	fflush(f);

	jitsink_init(&js, &cfgp, &o);
	js.history = hist_capture;
	js.ring = 1;
	kernel_mmap2(rec, start, len);
	jitsink_note(&js, (const struct perf_event_header *)rec);
	cr_assert_eq(nr_hist, 1, "no MMAP2 into the history");
	cr_assert_eq(hist_ring, 1);
	cr_assert_eq(hist_time, 1001);
	cr_assert_eq(js.st.maps, 1, "the mapping was not taken without a file");

	jitsink_write_images(&js);
	cr_assert_not_null(image_sym(dir, hist_got, start, start + 0x18, sym, sizeof(sym)), "no image at the snapshot");
	cr_assert_str_eq(sym, "early_fn");
	cr_assert_null(image_sym(dir, hist_got, start, start + 0x2008, sym, sizeof(sym)));

	/* announced after the first snapshot: the second's image has it too */
	fprintf(f, "%" PRIx64 " 40 later_fn\n", start + 0x2000);
	fclose(f);
	jitsink_write_images(&js);
	cr_assert_not_null(image_sym(dir, hist_got, start, start + 0x2008, sym, sizeof(sym)),
			   "the second snapshot did not rewrite the image");
	cr_assert_str_eq(sym, "later_fn");
	cr_assert_not_null(image_sym(dir, hist_got, start, start + 0x18, sym, sizeof(sym)));
	cr_assert_str_eq(sym, "early_fn");
	/* nothing new: nothing written again */
	jitsink_write_images(&js);
	cr_assert_eq(js.st.images, 2);
	cr_assert_eq(js.st.image_syms, 3);

	unlink(map);
	jitsink_exit(&js);
	bidcache_clear();
	munmap(code, len);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}
