// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests of daemon/pystage.c: synthetic samples whose callchains run
 * through the eval loop, a fake walker (the stage's take() seam) and a
 * fake process (its setup() seam: code objects laid out in a memfd read
 * at the process's addresses).  The eval loop's frames are replaced by
 * the Python frames they ran, in order, native frames below and above
 * staying; mismatched counts are matched from the root; a cut walk only
 * from an eval frame that is the sample's own ip; a group with a frame
 * that cannot be named stays native.  In the stream the stage emits, the
 * region's MMAP2 comes before the first sample that uses it, once per
 * file, and the image the jitsink writes into the cache names the code
 * objects at the addresses the samples carry.
 */
#include <criterion/criterion.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <perfrec/event.h>

#include "bidcache.h"
#include "drain.h"
#include "jitimage.h"
#include "jitsink.h"
#include "pymerge.h"
#include "pystage.h"

#define SAMPLE_ST (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | \
		   PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN)
#define SB_ST (PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER)
#define SAMPLE_ID 11
#define SB_ID 22
#define PID 4242
#define CODE_TYPE 0x500000ull
#define ASCII ((1u << 5) | (1u << 6))

/* The process: eval loop at [EVAL, EVAL + 0x1000), native code elsewhere. */
#define EVAL 0x401000ull
#define ENCODER 0x7f0000001234ull   /* a C function called from Python (json's encoder) */
#define HELPER 0x402100ull          /* between eval calls (_PyFunction_Vectorcall) */
#define PYMAIN 0x403300ull          /* Py_RunMain */
#define MAIN 0x404400ull
/* code objects */
#define C_LEAF 0x2000ull
#define C_MIDDLE 0x3000ull
#define C_OUTER 0x4000ull
#define C_MODULE 0x5000ull
#define C_GARBAGE 0x6000ull

static struct pyproc_info info;
static struct pywalk_rec walk;
static bool have_walk;
static unsigned setups;
static const char *leaf_name = "hot_leaf";   /* what the running program calls it */
static int setup_err;                          /* setup() fails so (0: it does not) */
static uint64_t instr_at;                      /* each frame's instruction from its code object (0: none) */

static const struct pywalk_rec *fake_take(struct pywalk *pw, uint32_t cpu, uint32_t tid, uint64_t time)
{
	(void)pw;
	if (!have_walk || cpu != walk.cpu || tid != walk.tid || time < walk.time)
		return NULL;
	have_walk = false;
	return &walk;
}

static void put_str(int fd, uint64_t at, const char *s)
{
	int64_t len = (int64_t)strlen(s);
	uint32_t state = ASCII;

	cr_assert_eq(pwrite(fd, &len, 8, (off_t)at + 16), 8);
	cr_assert_eq(pwrite(fd, &state, 4, (off_t)at + 32), 4);
	cr_assert_eq(pwrite(fd, s, strlen(s), (off_t)at + info.off.unicode_ascii_data), (ssize_t)strlen(s));
}

static void put_code(int fd, uint64_t at, uint64_t type, uint64_t name, int32_t line)
{
	uint64_t file = 0x1f00;
	int64_t units = 64;   /* ob_size: 128 bytes of bytecode */

	cr_assert_eq(pwrite(fd, &units, 8, (off_t)at + 16), 8);
	cr_assert_eq(pwrite(fd, &type, 8, (off_t)at + 8), 8);
	cr_assert_eq(pwrite(fd, &name, 8, (off_t)at + info.off.code_name), 8);
	cr_assert_eq(pwrite(fd, &file, 8, (off_t)at + info.off.code_filename), 8);
	cr_assert_eq(pwrite(fd, &line, 4, (off_t)at + info.off.code_firstlineno), 4);
}

static int fake_setup(void *ctx, pid_t pid, struct pystage_proc_setup *ret)
{
	int fd = memfd_create("pystage", MFD_CLOEXEC);

	(void)ctx;
	setups++;
	cr_assert_eq(pid, PID);
	if (setup_err)
		return setup_err;
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, 0x10000), 0);
	put_str(fd, 0x1000, leaf_name);
	put_str(fd, 0x1100, "middle");
	put_str(fd, 0x1200, "outer");
	put_str(fd, 0x1300, "<module>");
	put_str(fd, 0x1f00, "/w/prog.py");
	put_code(fd, C_LEAF, CODE_TYPE, 0x1000, 30);
	put_code(fd, C_MIDDLE, CODE_TYPE, 0x1100, 20);
	put_code(fd, C_OUTER, CODE_TYPE, 0x1200, 10);
	put_code(fd, C_MODULE, CODE_TYPE, 0x1300, 1);
	put_code(fd, C_GARBAGE, CODE_TYPE + 64, 0x1300, 1);
	ret->eval_lo = EVAL;
	ret->eval_hi = EVAL + 0x1000;
	return pyname_cache_new(fd, &info, &ret->names);
}

/* What the stage emits, copied. */
static uint8_t out[1 << 16];
static size_t out_len, out_nr;

static void capture(struct sink *s, struct drain_rec *r)
{
	(void)s;
	cr_assert_leq(out_len + r->h->size, sizeof(out));
	memcpy(out + out_len, r->h, r->h->size);
	out_len += r->h->size;
	out_nr++;
}

static const struct sink_ops capture_ops = { .record = capture };

static char dir[] = "/tmp/test-pystage-XXXXXX";
static struct config cfg;
static const struct config *cfgp = &cfg;
static struct drain *layout;
static struct pystage *ps;
static struct jitsink js;
static struct sink cap = { .ops = &capture_ops };
static const uint64_t sb_ids[] = { SB_ID };
static const int sb_cpus[] = { 1 };

static void setup(void)
{
	struct drain_opts dopts = { .sz = sizeof(dopts) };
	struct pystage_opts o = {
		.sz = sizeof(o), .sideband_sample_type = SB_ST, .sideband_ids = sb_ids, .sideband_cpus = sb_cpus,
		.nr_sideband_ids = 1, .take = fake_take, .setup = fake_setup,
	};
	struct jitsink_opts jo = { .sideband_sample_type = SB_ST };
	uint64_t id = SAMPLE_ID, sid = SB_ID;
	char path[PATH_MAX];

	memset(&info, 0, sizeof(info));
	info.status = PYPROC_OK;
	info.major = 3;
	info.minor = 11;
	info.code_type_addr = CODE_TYPE;
	cr_assert_eq(pyproc_table_offsets(3, 11, &info.off), 0);
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/.build-id", dir);
	cr_assert_eq(mkdir(path, 0750), 0);
	cfg.buildid_cache = dir;
	cr_assert_eq(drain_new(&dopts, &layout), 0);
	cr_assert_eq(drain_add_ids(layout, &id, 1, SAMPLE_ST, 0), 0);
	cr_assert_eq(drain_add_ids(layout, &sid, 1, SB_ST, 0), 0);
	o.layout = layout;
	cr_assert_eq(pystage_new(&o, &ps), 0);
	jitsink_init(&js, &cfgp, &jo);
	cr_assert_eq(stage_add_sink(pystage_stage(ps), &cap), 0);
	cr_assert_eq(stage_add_sink(pystage_stage(ps), &js.sink), 0);
	out_len = out_nr = 0;
	setups = 0;
	have_walk = false;
	leaf_name = "hot_leaf";
	setup_err = 0;
	instr_at = 0;
}

static void teardown(void)
{
	char cmd[64];

	pystage_free(ps);
	jitsink_exit(&js);
	drain_free(layout);
	bidcache_clear();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
	strcpy(dir, "/tmp/test-pystage-XXXXXX");
}

/* Feed @h to the stage as the drain would. */
static void feed(const void *rec)
{
	struct drain_rec r;

	drain_decode(layout, rec, &r);
	r.ring = 0;
	pystage_stage(ps)->sink.ops->record(&pystage_stage(ps)->sink, &r);
}

/* The user part's first frame: the sample's ip. */
static uint64_t user_ip(const uint64_t *chain, size_t nr)
{
	for (size_t i = 0; i + 1 < nr; i++)
		if (chain[i] == PERF_CONTEXT_USER)
			return chain[i + 1];
	return 0;
}

/* A sample of PID on CPU 1 at @time with @nr chain entries. */
static size_t make_sample(uint8_t *buf, uint64_t time, const uint64_t *chain, size_t nr)
{
	uint64_t f[] = { SAMPLE_ID, user_ip(chain, nr), (uint64_t)PID << 32 | PID, time, 1, 1000, nr };
	struct perf_event_header *h = (void *)buf;

	h->type = PERF_RECORD_SAMPLE;
	h->misc = PERF_RECORD_MISC_USER;
	memcpy(buf + 8, f, sizeof(f));
	memcpy(buf + 8 + sizeof(f), chain, nr * 8);
	h->size = (uint16_t)(8 + sizeof(f) + nr * 8);
	return h->size;
}

static void set_walk(uint64_t time, uint16_t flags, const uint64_t *codes, const uint32_t *fflags, size_t n)
{
	memset(&walk, 0, sizeof(walk));
	walk.time = time;
	walk.pid = walk.tid = PID;
	walk.cpu = 1;
	walk.flags = flags;
	walk.nr = (uint16_t)n;
	for (size_t i = 0; i < n; i++)
		walk.frames[i] = (struct pywalk_frame){
			.code = codes[i], .flags = fflags[i], .instr = instr_at ? codes[i] + instr_at : 0,
		};
	have_walk = true;
}

/* The chain of the @i-th sample the stage emitted (NULL: none), its ip in *@ret_ip. */
static const uint64_t *emitted_chain_ip(size_t i, uint64_t *ret_nr, uint64_t *ret_ip)
{
	size_t k = 0;

	for (size_t off = 0; off < out_len;) {
		const struct perf_event_header *h = (const void *)(out + off);
		struct perfrec_sample s;

		off += h->size;
		if (h->type != PERF_RECORD_SAMPLE || k++ != i)
			continue;
		cr_assert_eq(perfrec_sample__parse(h, SAMPLE_ST, 0, &s), 0);
		*ret_nr = s.nr_callchain;
		*ret_ip = s.ip;
		return s.callchain;
	}
	return NULL;
}

static const uint64_t *emitted_chain(size_t i, uint64_t *ret_nr)
{
	uint64_t ip;

	return emitted_chain_ip(i, ret_nr, &ip);
}

/* The @i-th sample's own ip. */
static uint64_t emitted_ip(size_t i)
{
	uint64_t nr, ip = 0;

	cr_assert_not_null(emitted_chain_ip(i, &nr, &ip));
	return ip;
}

/* The address of the @slot-th code object named. */
#define PY(slot) (PYSTAGE_REGION_BASE + ((slot) + 1) * PYSTAGE_SLOT + PYSTAGE_SLOT / 2)

static void check_chain(size_t i, const uint64_t *want, size_t n)
{
	uint64_t nr;
	const uint64_t *got = emitted_chain(i, &nr);

	cr_assert_not_null(got, "sample %zu not emitted", i);
	cr_assert_eq(nr, n, "sample %zu: %lu entries, want %zu", i, (unsigned long)nr, n);
	for (size_t k = 0; k < n; k++)
		cr_assert_eq(got[k], want[k], "sample %zu entry %zu: %#lx, want %#lx", i, k, (unsigned long)got[k],
			     (unsigned long)want[k]);
}

/* The image the cache holds for @bid: @addr's name in it, or NULL. */
static char *image_name(const uint8_t *bid, uint64_t addr)
{
	Dwfl_Callbacks cbs = { .find_elf = dwfl_build_id_find_elf, .find_debuginfo = dwfl_standard_find_debuginfo };
	char path[PATH_MAX], hex[2 * JITIMAGE_BID_LEN + 2];
	const char *n = NULL;
	Dwfl_Module *mod;
	Dwfl *dwfl;
	char *ret;

	jitimage_bid_path(bid, hex);
	snprintf(path, sizeof(path), "%s/.build-id/%s", dir, hex);
	dwfl = dwfl_begin(&cbs);
	mod = dwfl_report_elf(dwfl, "py", path, -1, PYSTAGE_REGION_BASE, false);
	dwfl_report_end(dwfl, NULL, NULL);
	if (mod)
		n = dwfl_module_addrname(mod, addr);
	ret = n ? strdup(n) : NULL;
	dwfl_end(dwfl);
	return ret;
}

/* <module> -> outer -> (C helper) -> middle -> hot_leaf -> json's encoder, two eval calls. */
static const uint64_t chain2[] = {
	PERF_CONTEXT_KERNEL, 0xffffffff81000010ull, PERF_CONTEXT_USER,
	ENCODER, EVAL + 0x10, HELPER, EVAL + 0x20, PYMAIN, MAIN,
};

Test(pystage, eval_frames_become_python_frames_in_order, .init = setup, .fini = teardown)
{
	/* innermost first: group 0 = hot_leaf, middle (entry); group 1 = outer, <module> (entry) */
	const uint64_t codes[] = { C_LEAF, C_MIDDLE, C_OUTER, C_MODULE };
	const uint32_t fl[] = { 0, PYWALK_F_ENTRY, 0, PYWALK_F_ENTRY };
	const uint64_t want[] = {
		PERF_CONTEXT_KERNEL, 0xffffffff81000010ull, PERF_CONTEXT_USER,
		ENCODER, PY(0), PY(1), HELPER, PY(2), PY(3), PYMAIN, MAIN,
	};
	struct pystage_stats st;
	uint8_t rec[1024];

	set_walk(1000, 0, codes, fl, 4);
	make_sample(rec, 1000, chain2, 9);
	feed(rec);
	check_chain(0, want, 11);
	cr_assert_eq(emitted_ip(0), ENCODER, "the ip of a sample in C code moved");
	pystage_get_stats(ps, &st);
	cr_assert_eq(st.merged, 1);
	cr_assert_eq(st.mismatched, 0);
	cr_assert_eq(setups, 1);
}

Test(pystage, the_mmap2_comes_first_once_per_file_and_the_image_names_the_code, .init = setup, .fini = teardown)
{
	const uint64_t codes[] = { C_LEAF, C_MIDDLE, C_OUTER, C_MODULE };
	const uint32_t fl[] = { 0, PYWALK_F_ENTRY, 0, PYWALK_F_ENTRY };
	const struct perf_event_header *h = (const void *)out;
	char name[128], path[PATH_MAX], hex[2 * JITIMAGE_BID_LEN + 2];
	uint8_t rec[1024], bid[JITIMAGE_BID_LEN];
	struct perfrec_sample_id sid;
	Dwfl_Callbacks cbs = { .find_elf = dwfl_build_id_find_elf, .find_debuginfo = dwfl_standard_find_debuginfo };
	Dwfl_Module *mod;
	Dwfl *dwfl;

	for (int i = 0; i < 2; i++) {
		set_walk(1000 + i, 0, codes, fl, 4);
		make_sample(rec, 1000 + i, chain2, 9);
		feed(rec);
	}
	cr_assert_eq(out_nr, 3, "not one MMAP2 and two samples: %zu records", out_nr);
	cr_assert_eq(h->type, PERF_RECORD_MMAP2);
	cr_assert(h->misc & PERF_RECORD_MISC_MMAP_BUILD_ID);
	/* its name: pid, range and the start of its build id (one program's of those the pid runs) */
	snprintf(name, sizeof(name), "/perfrec-jit/py-%d-%llx-%llx-%02x%02x%02x%02x.so", PID, PYSTAGE_REGION_BASE,
		 (unsigned long long)PYSTAGE_REGION_LEN, out[44], out[45], out[46], out[47]);
	cr_assert_str_eq((const char *)out + 72, name);
	cr_assert_eq(perfrec_sample_id__parse(h, SB_ST, &sid), 0);
	cr_assert_eq(sid.time, 999, "the MMAP2 is not just before its sample");
	cr_assert_eq(sid.id, SB_ID);
	cr_assert_eq(sid.pid, PID);
	memcpy(bid, out + 44, JITIMAGE_BID_LEN);

	/* a new file: the region is named again, before its first sample there */
	jitsink_file_end(&js);
	jitsink_file_begin(&js);
	out_len = out_nr = 0;
	set_walk(2000, 0, codes, fl, 4);
	make_sample(rec, 2000, chain2, 9);
	feed(rec);
	cr_assert_eq(out_nr, 2);
	cr_assert_eq(h->type, PERF_RECORD_MMAP2);
	cr_assert_neq(memcmp(bid, out + 44, JITIMAGE_BID_LEN), 0, "a build id of the last file");

	/* the first file's image, as perfparser and our symbolizer read it */
	jitimage_bid_path(bid, hex);
	snprintf(path, sizeof(path), "%s/.build-id/%s", dir, hex);
	dwfl = dwfl_begin(&cbs);
	mod = dwfl_report_elf(dwfl, "py", path, -1, PYSTAGE_REGION_BASE, false);
	cr_assert_not_null(mod, "no image at %s: %s", path, dwfl_errmsg(-1));
	dwfl_report_end(dwfl, NULL, NULL);
	cr_assert_str_eq(dwfl_module_addrname(mod, PY(0)), "py::hot_leaf (/w/prog.py:30)");
	cr_assert_str_eq(dwfl_module_addrname(mod, PY(0) - 1), "py::hot_leaf (/w/prog.py:30)");
	cr_assert_str_eq(dwfl_module_addrname(mod, PY(3)), "py::<module> (/w/prog.py:1)");
	dwfl_end(dwfl);
}

Test(pystage, more_groups_than_eval_frames_match_from_the_root, .init = setup, .fini = teardown)
{
	/* three eval calls' groups, only two eval frames unwound: the innermost group is left out */
	const uint64_t codes[] = { C_LEAF, C_MIDDLE, C_OUTER, C_MODULE };
	const uint32_t fl[] = { PYWALK_F_ENTRY, PYWALK_F_ENTRY, 0, PYWALK_F_ENTRY };
	const uint64_t want[] = {
		PERF_CONTEXT_KERNEL, 0xffffffff81000010ull, PERF_CONTEXT_USER,
		ENCODER, PY(0), HELPER, PY(1), PY(2), PYMAIN, MAIN,
	};
	struct pystage_stats st;
	uint8_t rec[1024];

	set_walk(1000, 0, codes, fl, 4);
	make_sample(rec, 1000, chain2, 9);
	feed(rec);
	/* slots in naming order: middle 0, outer 1, <module> 2; hot_leaf never named */
	check_chain(0, want, 10);
	pystage_get_stats(ps, &st);
	cr_assert_eq(st.merged, 1);
	cr_assert_eq(st.mismatched, 1);
}

Test(pystage, more_eval_frames_than_groups_leave_the_inner_native, .init = setup, .fini = teardown)
{
	const uint64_t codes[] = { C_OUTER, C_MODULE };
	const uint32_t fl[] = { 0, PYWALK_F_ENTRY };
	const uint64_t want[] = {
		PERF_CONTEXT_KERNEL, 0xffffffff81000010ull, PERF_CONTEXT_USER,
		ENCODER, EVAL + 0x10, HELPER, PY(0), PY(1), PYMAIN, MAIN,
	};
	struct pystage_stats st;
	uint8_t rec[1024];

	set_walk(1000, 0, codes, fl, 2);
	make_sample(rec, 1000, chain2, 9);
	feed(rec);
	check_chain(0, want, 10);
	pystage_get_stats(ps, &st);
	cr_assert_eq(st.mismatched, 1);
}

Test(pystage, a_torn_walk_merges_from_the_running_eval_frame_only, .init = setup, .fini = teardown)
{
	/* read: hot_leaf, middle (entry), then outer, and cut before <module> */
	const uint64_t codes[] = { C_LEAF, C_MIDDLE, C_OUTER };
	const uint32_t fl[] = { 0, PYWALK_F_ENTRY, 0 };
	/* the sample's own ip is in the eval loop: that call runs hot_leaf */
	const uint64_t chain[] = { PERF_CONTEXT_USER, EVAL + 0x30, HELPER, EVAL + 0x20, PYMAIN, MAIN };
	const uint64_t want[] = { PERF_CONTEXT_USER, PY(0), PY(1), HELPER, EVAL + 0x20, PYMAIN, MAIN };
	struct pystage_stats st;
	uint8_t rec[1024];

	set_walk(1000, PYWALK_TORN, codes, fl, 3);
	make_sample(rec, 1000, chain, 6);
	feed(rec);
	check_chain(0, want, 7);
	/* its own ip too: perf report's self column names hot_leaf, not the eval loop */
	cr_assert_eq(emitted_ip(0), PY(0), "ip %#lx", (unsigned long)emitted_ip(0));
	/* the same walk under json's encoder: which eval call runs what is not known, nothing merged */
	set_walk(1001, PYWALK_TORN, codes, fl, 3);
	make_sample(rec, 1001, chain2, 9);
	feed(rec);
	check_chain(1, chain2, 9);
	pystage_get_stats(ps, &st);
	cr_assert_eq(st.merged, 1);
	cr_assert_eq(st.unmerged, 1);
	cr_assert_eq(st.mismatched, 2);
}

Test(pystage, a_group_with_garbage_stays_native, .init = setup, .fini = teardown)
{
	const uint64_t codes[] = { C_LEAF, C_GARBAGE, C_OUTER, C_MODULE };
	const uint32_t fl[] = { 0, PYWALK_F_ENTRY, 0, PYWALK_F_ENTRY };
	const uint64_t want[] = {
		PERF_CONTEXT_KERNEL, 0xffffffff81000010ull, PERF_CONTEXT_USER,
		ENCODER, EVAL + 0x10, HELPER, PY(1), PY(2), PYMAIN, MAIN,
	};
	struct pystage_stats st;
	uint8_t rec[1024];

	set_walk(1000, 0, codes, fl, 4);
	make_sample(rec, 1000, chain2, 9);
	feed(rec);
	check_chain(0, want, 10);
	pystage_get_stats(ps, &st);
	cr_assert_eq(st.names_failed, 1);
	cr_assert_eq(st.merged, 1);
}

Test(pystage, samples_without_a_walk_pass_unchanged, .init = setup, .fini = teardown)
{
	struct pystage_stats st;
	uint8_t rec[1024];
	size_t len = make_sample(rec, 1000, chain2, 9);

	feed(rec);
	cr_assert_eq(out_len, len);
	cr_assert_eq(memcmp(out, rec, len), 0);
	pystage_get_stats(ps, &st);
	cr_assert_eq(st.not_joined, 1);
	cr_assert_eq(setups, 0, "a process set up without a walk");
}

Test(pystage, an_exit_forgets_the_process, .init = setup, .fini = teardown)
{
	const uint64_t codes[] = { C_OUTER, C_MODULE };
	const uint32_t fl[] = { 0, PYWALK_F_ENTRY };
	uint64_t ex[9] = { 0 };
	struct perfrec_sample_id sid = { .pid = PID, .tid = PID, .time = 1500, .id = SB_ID, .cpu = 1 };
	struct perf_event_header *h = (void *)ex;
	struct pystage_stats st;
	uint8_t rec[1024];

	set_walk(1000, 0, codes, fl, 2);
	make_sample(rec, 1000, chain2, 9);
	feed(rec);
	h->type = PERF_RECORD_EXIT;
	/* pid, ppid, tid, ptid, time, then the trailer */
	h->size = 32 + (uint16_t)perfrec_sample_id__size(SB_ST);
	memcpy(&ex[1], (uint32_t[]){ PID, 1 }, 8);
	memcpy(&ex[2], (uint32_t[]){ PID, 1 }, 8);
	ex[3] = 1500;
	perfrec_sample_id__write((uint8_t *)ex + 32, SB_ST, &sid);
	feed(ex);
	/*
	 * a sample it took before, from a ring drained after the EXIT's: this
	 * round, and the next (newer than its first: older ones stay native,
	 * no_sample_older_than_the_region_mmap2_carries_its_addresses)
	 */
	for (int i = 0; i < 2; i++) {
		set_walk(1200 + i, 0, codes, fl, 2);
		make_sample(rec, 1200 + i, chain2, 9);
		feed(rec);
		pystage_stage(ps)->sink.ops->round(&pystage_stage(ps)->sink, 0);
	}
	pystage_get_stats(ps, &st);
	cr_assert_eq(st.merged, 3, "a sample drained after its process's EXIT not merged");
	cr_assert_eq(setups, 1);
	/* a new process of that pid, rounds later */
	set_walk(2000, 0, codes, fl, 2);
	make_sample(rec, 2000, chain2, 9);
	feed(rec);
	cr_assert_eq(setups, 2, "a pid's state outlived its exit");
}

Test(pystage, an_exec_gets_a_region_of_its_own, .init = setup, .fini = teardown)
{
	const uint64_t codes[] = { C_LEAF, C_MODULE };
	const uint32_t fl[] = { 0, PYWALK_F_ENTRY };
	struct perfrec_sample_id sid = { .pid = PID, .tid = PID, .time = 1500, .id = SB_ID, .cpu = 1 };
	uint64_t comm[8] = { 0 };
	struct perf_event_header *h = (void *)comm;
	uint8_t rec[1024], bid[2][JITIMAGE_BID_LEN];
	char *n, name0[128];

	set_walk(1000, 0, codes, fl, 2);
	make_sample(rec, 1000, chain2, 9);
	feed(rec);
	cr_assert_eq(((const struct perf_event_header *)out)->type, PERF_RECORD_MMAP2);
	memcpy(bid[0], out + 44, JITIMAGE_BID_LEN);
	memcpy(name0, out + 72, sizeof(name0) - 1);
	name0[sizeof(name0) - 1] = 0;
	/* the process execs another program (python running python: os.execv) */
	h->type = PERF_RECORD_COMM;
	h->misc = PERF_RECORD_MISC_COMM_EXEC;
	memcpy(&comm[1], (uint32_t[]){ PID, PID }, 8);
	memcpy(&comm[2], "python3", 8);
	perfrec_sample_id__write((uint8_t *)comm + 24, SB_ST, &sid);
	h->size = 24 + (uint16_t)perfrec_sample_id__size(SB_ST);
	feed(comm);
	leaf_name = "exec_leaf";
	out_len = out_nr = 0;
	set_walk(2000, 0, codes, fl, 2);
	make_sample(rec, 2000, chain2, 9);
	feed(rec);
	cr_assert_eq(setups, 2);
	cr_assert_eq(((const struct perf_event_header *)out)->type, PERF_RECORD_MMAP2, "no MMAP2 after the exec");
	memcpy(bid[1], out + 44, JITIMAGE_BID_LEN);
	cr_assert_neq(memcmp(bid[0], bid[1], JITIMAGE_BID_LEN), 0, "both programs' code under one build id");
	/* perfparser finds build ids by name: one name for both would name the first program's frames by the second's */
	cr_assert_str_neq(name0, (const char *)out + 72, "both regions named %s", name0);
	jitsink_file_end(&js);
	n = image_name(bid[0], PY(0));
	cr_assert_str_eq(n, "py::hot_leaf (/w/prog.py:30)");
	free(n);
	n = image_name(bid[1], PY(0));
	cr_assert_str_eq(n, "py::exec_leaf (/w/prog.py:30)");
	free(n);
}

static uint64_t code_as_addr(void *ctx, const struct pywalk_frame *f)
{
	(void)ctx;
	return PYSTAGE_REGION_BASE + f->code;
}

Test(pymerge, frames_past_the_user_part_are_never_replaced)
{
	const uint64_t codes[] = { C_LEAF, C_MIDDLE, C_OUTER };
	const uint32_t fl[] = { PYWALK_F_ENTRY, PYWALK_F_ENTRY, PYWALK_F_ENTRY };
	/* three eval frames: the last one's index stays matched in the merge's table */
	const uint64_t a[] = { PERF_CONTEXT_USER, EVAL + 1, EVAL + 2, HELPER, EVAL + 3 };
	/* a user part that ends at a context marker, then what looks like an eval frame */
	const uint64_t b[] = { PERF_CONTEXT_USER, EVAL + 1, PERF_CONTEXT_KERNEL, HELPER, EVAL + 3 };
	const uint64_t want[] = { PERF_CONTEXT_USER, PYSTAGE_REGION_BASE + C_OUTER, PERF_CONTEXT_KERNEL, HELPER, EVAL + 3 };
	uint64_t res[5 + PYWALK_MAX_FRAMES];
	bool partial;
	size_t n;

	set_walk(1, 0, codes, fl, 3);
	cr_assert_eq(pymerge_chain(a, 5, EVAL, EVAL + 0x1000, &walk, code_as_addr, NULL, res, &partial), 5);
	n = pymerge_chain(b, 5, EVAL, EVAL + 0x1000, &walk, code_as_addr, NULL, res, &partial);
	cr_assert_eq(n, 5);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(res[i], want[i], "entry %zu: %#lx, want %#lx", i, (unsigned long)res[i],
			     (unsigned long)want[i]);
}

Test(pystage, a_process_gone_before_its_first_sample_is_not_kept, .init = setup, .fini = teardown)
{
	const uint64_t codes[] = { C_OUTER, C_MODULE };
	const uint32_t fl[] = { 0, PYWALK_F_ENTRY };
	struct sink *in = &pystage_stage(ps)->sink;
	struct pystage_stats st;
	uint8_t rec[1024];

	/* thousands of short-lived processes, each set up once, none kept for long */
	setup_err = -ESRCH;
	for (int i = 0; i < 2 * PYSTAGE_MAX_PROCS; i++) {
		set_walk(1000 + i, 0, codes, fl, 2);
		make_sample(rec, 1000 + i, chain2, 9);
		feed(rec);
		feed(rec);
		out_len = out_nr = 0;
		in->ops->round(in, 0);
		in->ops->round(in, 0);
	}
	pystage_get_stats(ps, &st);
	cr_assert_eq(setups, 2 * PYSTAGE_MAX_PROCS, "a failed setup retried within its round, or never again");
	cr_assert_eq(st.procs_refused, 0, "dead processes filled the table");
	cr_assert_eq(st.procs_failed, 2 * PYSTAGE_MAX_PROCS);
}

Test(pystage, without_a_build_id_cache_nothing_is_merged, .init = setup, .fini = teardown)
{
	const uint64_t codes[] = { C_LEAF, C_MIDDLE, C_OUTER, C_MODULE };
	const uint32_t fl[] = { 0, PYWALK_F_ENTRY, 0, PYWALK_F_ENTRY };
	struct pystage_stats st;
	uint8_t rec[1024];
	size_t len;

	/* names no image could hold: the eval frames stay, and the stage says why */
	cfg.buildid_cache = NULL;
	for (int i = 0; i < 3; i++) {
		out_len = out_nr = 0;
		set_walk(1000 + i, 0, codes, fl, 4);
		len = make_sample(rec, 1000 + i, chain2, 9);
		feed(rec);
		cr_assert_eq(out_nr, 1);
		cr_assert_eq(out_len, len);
		cr_assert_eq(memcmp(out, rec, len), 0, "a sample changed with nothing to name its frames");
	}
	pystage_get_stats(ps, &st);
	cr_assert_eq(st.merged, 0);
	cr_assert_eq(st.no_image, 3);
	cr_assert_eq(st.unmerged, 3);
}

Test(pystage, a_region_the_jitsink_refuses_is_asked_once_a_file, .init = setup, .fini = teardown)
{
	const uint64_t codes[] = { C_LEAF, C_MIDDLE, C_OUTER, C_MODULE };
	const uint32_t fl[] = { 0, PYWALK_F_ENTRY, 0, PYWALK_F_ENTRY };
	uint8_t rec[1024], map[512];
	struct pystage_stats st;
	uint64_t skipped;

	/* the JIT sink's processes all taken by others */
	for (uint32_t pid = 100000; pid < 100000 + JITSINK_MAX_PROCS; pid++)
		cr_assert_gt(jitsink_synth_map(&js, pid, pid, PYSTAGE_REGION_BASE, PYSTAGE_REGION_LEN, "py", NULL, 0,
					       map, sizeof(map)), 0);
	skipped = js.st.skipped;
	for (int i = 0; i < 3; i++) {
		set_walk(1000 + i, 0, codes, fl, 4);
		make_sample(rec, 1000 + i, chain2, 9);
		feed(rec);
	}
	pystage_get_stats(ps, &st);
	cr_assert_eq(st.merged, 0);
	cr_assert_eq(js.st.skipped - skipped, 1, "asked %lu times", (unsigned long)(js.st.skipped - skipped));
	/* a new file: asked again */
	jitsink_file_end(&js);
	jitsink_file_begin(&js);
	set_walk(2000, 0, codes, fl, 4);
	make_sample(rec, 2000, chain2, 9);
	feed(rec);
	cr_assert_eq(js.st.skipped - skipped, 2);
}

Test(pystage, a_frame_whose_code_object_is_gone_stays_native, .init = setup, .fini = teardown)
{
	const uint64_t codes[] = { C_LEAF, C_MIDDLE, C_OUTER, C_MODULE };
	const uint32_t fl[] = { 0, PYWALK_F_ENTRY, 0, PYWALK_F_ENTRY };
	const uint64_t want[] = {
		PERF_CONTEXT_KERNEL, 0xffffffff81000010ull, PERF_CONTEXT_USER,
		ENCODER, PY(0), PY(1), HELPER, PY(2), PY(3), PYMAIN, MAIN,
	};
	struct pystage_stats st;
	uint8_t rec[1024];

	/* every frame 100 bytes into its code object's bytecode: they ran what is there */
	instr_at = PYNAME_CODE_HEAD_MAX - 100;
	set_walk(1000, 0, codes, fl, 4);
	make_sample(rec, 1000, chain2, 9);
	feed(rec);
	check_chain(0, want, 11);
	/* frames past the end of those objects ran others, freed since: their eval frames stay */
	instr_at = PYNAME_CODE_HEAD_MAX + 4096;
	set_walk(2000, 0, codes, fl, 4);
	make_sample(rec, 2000, chain2, 9);
	feed(rec);
	check_chain(1, chain2, 9);
	pystage_get_stats(ps, &st);
	cr_assert_eq(st.merged, 1);
	cr_assert_geq(st.names_failed, 2);
}

/*
 * The drain takes the rings one after the other: the first sample of a
 * process merged (CPU 1's ring) is not its oldest when CPU 0's ring,
 * drained after it, holds older samples of another of its threads.  Those
 * stay native: in time order they come before the region's MMAP2, and
 * hotspot's perfparser, which keeps the location it made of an address it
 * could not map for good, then named none of the process's samples
 * through the same code objects (tests/e2e/test-python-frames.sh, one run
 * in three).
 */
Test(pystage, no_sample_older_than_the_region_mmap2_carries_its_addresses, .init = setup, .fini = teardown)
{
	const uint64_t codes[] = { C_LEAF, C_MIDDLE, C_OUTER, C_MODULE };
	const uint32_t fl[] = { 0, PYWALK_F_ENTRY, 0, PYWALK_F_ENTRY };
	const uint64_t times[] = { 1000, 900, 950, 1000, 1100 };   /* in the drain's order */
	uint64_t map_time = 0;
	struct pystage_stats st;
	uint8_t rec[1024];
	size_t k = 0;

	for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++) {
		set_walk(times[i], 0, codes, fl, 4);
		make_sample(rec, times[i], chain2, 9);
		feed(rec);
	}
	for (size_t off = 0; off < out_len;) {
		const struct perf_event_header *h = (const void *)(out + off);
		struct perfrec_sample_id sid;
		struct perfrec_sample s;
		bool region = false;

		off += h->size;
		if (h->type == PERF_RECORD_MMAP2) {
			cr_assert_eq(perfrec_sample_id__parse(h, SB_ST, &sid), 0);
			cr_assert_eq(map_time, 0, "a second MMAP2");
			map_time = sid.time;
			continue;
		}
		cr_assert_eq(perfrec_sample__parse(h, SAMPLE_ST, 0, &s), 0);
		for (size_t j = 0; j < s.nr_callchain; j++)
			region |= s.callchain[j] >= PYSTAGE_REGION_BASE &&
				  s.callchain[j] < PYSTAGE_REGION_BASE + PYSTAGE_REGION_LEN;
		cr_assert_eq(s.time, times[k], "samples reordered");
		k++;
		cr_assert(map_time, "a sample before the MMAP2 in the stream");
		if (s.time <= map_time)
			cr_assert(!region, "a sample at %lu carries region addresses; the MMAP2 is at %lu",
				  (unsigned long)s.time, (unsigned long)map_time);
		else
			cr_assert(region, "the sample at %lu was not merged", (unsigned long)s.time);
	}
	cr_assert_eq(k, 5);
	check_chain(1, chain2, 9);
	pystage_get_stats(ps, &st);
	cr_assert_eq(st.merged, 3);
	cr_assert_eq(st.before_map, 2, "not counted");
}
