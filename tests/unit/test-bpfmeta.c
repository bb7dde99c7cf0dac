// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests for BPF program metadata: the KSYMBOL / BPF_EVENT encodings
 * decoded field by field, the HEADER_BPF_PROG_INFO / HEADER_BPF_BTF bodies
 * round-tripped through the writer, the reader's verify and the parsers
 * (and malformed bodies refused), synthesis from a fake kallsyms with
 * symbols the ring reported, and, where bpf() is permitted, a real socket
 * filter synthesized under the name kallsyms gives it.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <linux/bpf.h>
#include <sys/capability.h>

#include <perfrec/bpfmeta.h>
#include <perfrec/event.h>
#include <perfrec/pdreader.h>
#include <perfrec/pdwriter.h>

#include "kallsyms.h"

#define SAMPLE_TYPE (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU)

static const uint8_t TAG[8] = { 0x3f, 0x3f, 0xc3, 0x76, 0x6c, 0x8e, 0xe4, 0xdf };

Test(bpfmeta, prog_names_follow_kallsyms)
{
	static const struct { const char *short_name, *want; } cases[] = {
		{ "perfrec_hot", "bpf_prog_3f3fc3766c8ee4df_perfrec_hot" },
		{ "", "bpf_prog_3f3fc3766c8ee4df" },
		{ NULL, "bpf_prog_3f3fc3766c8ee4df" },
	};
	char buf[128];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int n = perfrec_bpfmeta__prog_name(buf, sizeof(buf), TAG, cases[i].short_name);

		cr_expect_str_eq(buf, cases[i].want);
		cr_expect_eq(n, (int)strlen(cases[i].want));
	}
}

struct ksym_view {
	struct perf_event_header h;
	uint64_t addr;
	uint32_t len;
	uint16_t ksym_type, flags;
};

Test(bpfmeta, ksymbol_record_decodes_with_its_trailer)
{
	static const char *names[] = { "a", "bpf_prog_0123456789abcdef_x", "exactly_sixteen_" };
	struct perfrec_sample_id sid = { .pid = (uint32_t)-1, .time = 123456789, .id = 42 }, got;
	unsigned char buf[1024];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct ksym_view k;
		int n = perfrec_bpfmeta__encode_ksymbol(buf, sizeof(buf), 0xffffffffc0001000ull + i, 300 + i,
							names[i], SAMPLE_TYPE, &sid);

		cr_assert_gt(n, 0);
		memcpy(&k, buf, sizeof(k));
		cr_expect_eq(k.h.type, PERF_RECORD_KSYMBOL);
		cr_expect_eq(k.h.size, n);
		cr_expect_eq(n % 8, 0);
		cr_expect_eq(k.addr, 0xffffffffc0001000ull + i);
		cr_expect_eq(k.len, 300 + i);
		cr_expect_eq(k.ksym_type, PERF_RECORD_KSYMBOL_TYPE_BPF);
		cr_expect_eq(k.flags, 0);
		cr_expect_str_eq((const char *)buf + sizeof(k), names[i]);
		/* name, NUL, padding, then exactly the trailer */
		cr_expect_eq((size_t)n, ((sizeof(k) + strlen(names[i]) + 1 + 7) & ~(size_t)7) +
					perfrec_sample_id__size(SAMPLE_TYPE));
		cr_assert_eq(perfrec_sample_id__parse((const struct perf_event_header *)buf, SAMPLE_TYPE, &got), 0);
		cr_expect_eq(got.time, sid.time);
		cr_expect_eq(got.id, sid.id);
		cr_expect_eq(got.pid, sid.pid);
	}
}

Test(bpfmeta, bpf_event_record_decodes_with_its_trailer)
{
	struct perfrec_sample_id sid = { .time = 99, .id = 7 }, got;
	unsigned char buf[128];
	struct perf_event_header h;
	uint16_t type, flags;
	uint32_t id;
	int n = perfrec_bpfmeta__encode_bpf_event(buf, sizeof(buf), 207, TAG, SAMPLE_TYPE, &sid);

	cr_assert_eq(n, 24 + (int)perfrec_sample_id__size(SAMPLE_TYPE));
	memcpy(&h, buf, 8);
	memcpy(&type, buf + 8, 2);
	memcpy(&flags, buf + 10, 2);
	memcpy(&id, buf + 12, 4);
	cr_expect_eq(h.type, PERF_RECORD_BPF_EVENT);
	cr_expect_eq(h.size, n);
	cr_expect_eq(type, PERF_BPF_EVENT_PROG_LOAD);
	cr_expect_eq(flags, 0);
	cr_expect_eq(id, 207);
	cr_expect_arr_eq(buf + 16, TAG, 8);
	cr_assert_eq(perfrec_sample_id__parse((const struct perf_event_header *)buf, SAMPLE_TYPE, &got), 0);
	cr_expect_eq(got.time, 99);
	cr_expect_eq(got.id, 7);
}

Test(bpfmeta, encoders_refuse_short_buffers_and_huge_names)
{
	unsigned char buf[64];
	char *big = malloc(70000);
	struct perfrec_sample_id sid = { 0 };

	cr_assert_not_null(big);
	memset(big, 'x', 69999);
	big[69999] = 0;
	cr_expect_eq(perfrec_bpfmeta__encode_ksymbol(buf, 16, 1, 1, "name", SAMPLE_TYPE, &sid), -ENOSPC);
	cr_expect_eq(perfrec_bpfmeta__encode_bpf_event(buf, 20, 1, TAG, SAMPLE_TYPE, &sid), -ENOSPC);
	cr_expect_eq(perfrec_bpfmeta__encode_ksymbol(buf, sizeof(buf), 1, 1, big, SAMPLE_TYPE, &sid), -E2BIG);
	free(big);
}

/*
 * A program with two JITed functions as HEADER_BPF_PROG_INFO stores it:
 * ksyms (2 x u64), func lens (2 x u32), tags (2 x 8) at offsets in data.
 */
struct fake_prog {
	struct bpf_prog_info info;
	unsigned char data[64];
	uint64_t arrays;
};

static void fake_prog(struct fake_prog *f, uint32_t id, const char *name, uint64_t base)
{
	uint64_t ksyms[2] = { base, base + 0x100 };
	uint32_t lens[2] = { 0x80, 0x40 };

	memset(f, 0, sizeof(*f));
	f->info.id = id;
	f->info.type = BPF_PROG_TYPE_SOCKET_FILTER;
	memcpy(f->info.tag, TAG, 8);
	snprintf(f->info.name, sizeof(f->info.name), "%s", name);
	f->info.nr_jited_ksyms = 2;
	f->info.jited_ksyms = 0;
	memcpy(f->data, ksyms, 16);
	f->info.nr_jited_func_lens = 2;
	f->info.jited_func_lens = 16;
	memcpy(f->data + 16, lens, 8);
	f->info.nr_prog_tags = 2;
	f->info.prog_tags = 24;
	memcpy(f->data + 24, TAG, 8);
	memcpy(f->data + 32, TAG, 8);
	f->data[39] ^= 0xff; /* the second function's own tag */
	f->arrays = (1ull << PERFREC_BPF_JITED_KSYMS) | (1ull << PERFREC_BPF_JITED_FUNC_LENS) |
		    (1ull << PERFREC_BPF_PROG_TAGS);
}

struct seen {
	int n;
	struct perfrec_bpf_prog_desc d[4];
	char names[4][17];
	uint64_t addr1[4];
	uint32_t len1[4];
};

static int on_prog(void *ctx, const struct perfrec_bpf_prog_desc *d)
{
	struct seen *s = ctx;

	if (s->n < 4) {
		s->d[s->n] = *d;
		memcpy(s->names[s->n], d->name, 17);
		if (d->nr_funcs >= 2 && d->ksyms && d->lens) {
			memcpy(&s->addr1[s->n], d->ksyms + 8, 8);
			memcpy(&s->len1[s->n], d->lens + 4, 4);
		}
	}
	s->n++;
	return 0;
}

static int on_btf(void *ctx, uint32_t id, const void *data, uint32_t size)
{
	int *n = ctx;

	cr_expect_eq(id, 5);
	cr_expect_eq(size, 6);
	cr_expect_arr_eq(data, "btf!!", 6);
	(*n)++;
	return 0;
}

static char tmp_template[] = "/tmp/test-bpfmeta-XXXXXX";

Test(bpfmeta, features_round_trip_through_writer_reader_and_verify)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr), .type = PERF_TYPE_SOFTWARE, .config = PERF_COUNT_SW_DUMMY,
		.sample_type = SAMPLE_TYPE, .sample_id_all = 1,
	};
	uint64_t attr_id = 11;
	struct perfrec_sample_id sid = { .time = 1, .id = attr_id };
	struct perfrec_bpfmeta *m;
	struct perfrec_pdwriter *w;
	struct perfrec_pdreader *r;
	struct fake_prog a, b;
	struct seen seen = { 0 };
	unsigned char rec[256];
	const void *body;
	size_t len;
	char path[64], text[256];
	int fd, nbtf = 0, n;

	fake_prog(&a, 31, "first", 0xffffffffc0010000ull);
	fake_prog(&b, 32, "second", 0xffffffffc0020000ull);
	cr_assert_eq(perfrec_bpfmeta__new(&m), 0);
	cr_assert_eq(perfrec_bpfmeta__add_prog_info(m, &a.info, sizeof(a.info), a.arrays, a.data, 40), 0);
	/* A shorter info (an older kernel's) is kept at its length. */
	cr_assert_eq(perfrec_bpfmeta__add_prog_info(m, &b.info, offsetof(struct bpf_prog_info, run_time_ns),
						     b.arrays, b.data, 40), 0);
	/* Same id again replaces, not adds. */
	cr_assert_eq(perfrec_bpfmeta__add_prog_info(m, &a.info, sizeof(a.info), a.arrays, a.data, 40), 0);
	cr_assert_eq(perfrec_bpfmeta__nr_progs(m), 2);
	cr_assert_eq(perfrec_bpfmeta__add_btf(m, 5, "btf!!", 6), 0);
	cr_assert_eq(perfrec_bpfmeta__add_btf(m, 5, "other", 6), 0);
	cr_assert_eq(perfrec_bpfmeta__nr_btfs(m), 1);

	strcpy(path, tmp_template);
	fd = mkstemp(path);
	cr_assert(fd >= 0);
	cr_assert_eq(perfrec_pdwriter__new(fd, &(struct perfrec_pdwriter_opts){
		.sz = sizeof(struct perfrec_pdwriter_opts), .owns_fd = true }, &w), 0);
	cr_assert_eq(perfrec_pdwriter__add_attr(w, &attr, &attr_id, 1, "dummy"), 0);
	/* The records too: verify must accept KSYMBOL and BPF_EVENT. */
	n = perfrec_bpfmeta__encode_ksymbol(rec, sizeof(rec), 0xffffffffc0010000ull, 0x80,
					    "bpf_prog_3f3fc3766c8ee4df_first", SAMPLE_TYPE, &sid);
	cr_assert_gt(n, 0);
	cr_assert_eq(perfrec_pdwriter__write(w, rec, (size_t)n), 0);
	n = perfrec_bpfmeta__encode_bpf_event(rec, sizeof(rec), 31, TAG, SAMPLE_TYPE, &sid);
	cr_assert_gt(n, 0);
	cr_assert_eq(perfrec_pdwriter__write(w, rec, (size_t)n), 0);
	cr_assert_eq(perfrec_bpfmeta__add_features(m, w), 0);
	cr_assert_eq(perfrec_pdwriter__finish(w), 0);
	perfrec_pdwriter__free(w, false);

	cr_assert_eq(perfrec_pdreader__open(path, NULL, &r), 0);
	cr_expect_eq(perfrec_pdreader__verify(r), 0, "verify: %s", perfrec_pdreader__error(r, NULL));
	cr_expect_eq(perfrec_pdreader__stats(r)->by_type[PERF_RECORD_KSYMBOL], 1);
	cr_expect_eq(perfrec_pdreader__stats(r)->by_type[PERF_RECORD_BPF_EVENT], 1);
	cr_assert_eq(perfrec_pdreader__feature(r, PERFREC_FEAT_BPF_PROG_INFO, &body, &len), 0);
	/* u32 nr, then per program 16 bytes of header, the info and 40 bytes of data */
	cr_expect_eq(len, 4 + 16 + sizeof(a.info) + 40 + 16 + offsetof(struct bpf_prog_info, run_time_ns) + 40);
	cr_assert_eq(perfrec_bpfmeta__parse_prog_info(body, len, on_prog, &seen), 2);
	cr_assert_eq(seen.n, 2);
	cr_expect_eq(seen.d[0].id, 31);
	cr_expect_str_eq(seen.names[0], "first");
	cr_expect_eq(seen.d[1].id, 32);
	cr_expect_str_eq(seen.names[1], "second");
	cr_expect_eq(seen.d[1].nr_funcs, 2);
	cr_expect_eq(seen.addr1[1], 0xffffffffc0020100ull);
	cr_expect_eq(seen.len1[1], 0x40);
	cr_expect_eq(seen.d[0].arrays, a.arrays);
	cr_expect_gt(perfrec_pdreader__feature_text(r, PERFREC_FEAT_BPF_PROG_INFO, text, sizeof(text)), 0);
	cr_expect(strstr(text, "bpf_prog_3f3fc3766c8ee4df_second (id 32)") != NULL, "%s", text);
	cr_assert_eq(perfrec_pdreader__feature(r, PERFREC_FEAT_BPF_BTF, &body, &len), 0);
	cr_expect_eq(len, 4 + 8 + 6);
	cr_expect_eq(perfrec_bpfmeta__parse_btf(body, len, on_btf, &nbtf), 1);
	cr_expect_eq(nbtf, 1);
	perfrec_pdreader__free(r);
	unlink(path);
	perfrec_bpfmeta__free(m);
}

/* No programs: both features with a zero count, as perf writes them, and verify takes them. */
Test(bpfmeta, an_empty_collection_writes_zero_counts)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr), .type = PERF_TYPE_SOFTWARE, .config = PERF_COUNT_SW_DUMMY,
		.sample_type = SAMPLE_TYPE, .sample_id_all = 1,
	};
	static const int feats[] = { PERFREC_FEAT_BPF_PROG_INFO, PERFREC_FEAT_BPF_BTF };
	uint64_t attr_id = 11;
	struct perfrec_bpfmeta *m;
	struct perfrec_pdwriter *w;
	struct perfrec_pdreader *r;
	char path[64];
	const void *body;
	size_t len;
	int fd;

	cr_assert_eq(perfrec_bpfmeta__new(&m), 0);
	strcpy(path, tmp_template);
	fd = mkstemp(path);
	cr_assert(fd >= 0);
	cr_assert_eq(perfrec_pdwriter__new(fd, &(struct perfrec_pdwriter_opts){
		.sz = sizeof(struct perfrec_pdwriter_opts), .owns_fd = true }, &w), 0);
	cr_assert_eq(perfrec_pdwriter__add_attr(w, &attr, &attr_id, 1, "dummy"), 0);
	/* A file perf takes has records. */
	cr_assert_eq(perfrec_pdwriter__write(w, &(struct perf_event_header){
		.type = PERFREC_RECORD_FINISHED_ROUND, .size = sizeof(struct perf_event_header) },
		sizeof(struct perf_event_header)), 0);
	cr_assert_eq(perfrec_bpfmeta__add_features(m, w), 0);
	cr_assert_eq(perfrec_pdwriter__finish(w), 0);
	perfrec_pdwriter__free(w, false);
	cr_assert_eq(perfrec_pdreader__open(path, NULL, &r), 0);
	cr_assert_eq(perfrec_pdreader__verify(r), 0, "verify: %s", perfrec_pdreader__error(r, NULL));
	for (size_t i = 0; i < 2; i++) {
		cr_assert_eq(perfrec_pdreader__feature(r, feats[i], &body, &len), 0, "feature %d absent", feats[i]);
		cr_assert_eq(len, 4);
		cr_assert_eq(*(const uint32_t *)body, 0);
	}
	perfrec_pdreader__free(r);
	unlink(path);
	perfrec_bpfmeta__free(m);
}

Test(bpfmeta, malformed_prog_info_is_refused)
{
	struct fake_prog a;
	unsigned char body[4 + 16 + sizeof(struct bpf_prog_info) + 40];
	uint32_t nr = 1, info_len = sizeof(a.info), data_len = 40, big = sizeof(a.info) + 8;
	struct perfrec_bpfmeta *m;

	fake_prog(&a, 1, "p", 0x1000);
	memcpy(body, &nr, 4);
	memcpy(body + 4, &info_len, 4);
	memcpy(body + 8, &data_len, 4);
	memcpy(body + 12, &a.arrays, 8);
	memcpy(body + 20, &a.info, sizeof(a.info));
	memcpy(body + 20 + sizeof(a.info), a.data, 40);
	cr_assert_eq(perfrec_bpfmeta__parse_prog_info(body, sizeof(body), NULL, NULL), 1);
	/* cut short */
	cr_expect_eq(perfrec_bpfmeta__parse_prog_info(body, sizeof(body) - 1, NULL, NULL), -EBADMSG);
	/* more entries claimed than present */
	nr = 2;
	memcpy(body, &nr, 4);
	cr_expect_eq(perfrec_bpfmeta__parse_prog_info(body, sizeof(body), NULL, NULL), -EBADMSG);
	nr = 1;
	memcpy(body, &nr, 4);
	/* an info longer than perf's struct (perf: "detected invalid bpf_prog_info") */
	memcpy(body + 4, &big, 4);
	cr_expect_eq(perfrec_bpfmeta__parse_prog_info(body, sizeof(body), NULL, NULL), -EBADMSG);
	memcpy(body + 4, &info_len, 4);
	/* an array running past the data */
	a.info.prog_tags = 36;
	memcpy(body + 20, &a.info, sizeof(a.info));
	cr_expect_eq(perfrec_bpfmeta__parse_prog_info(body, sizeof(body), NULL, NULL), -EBADMSG);
	cr_assert_eq(perfrec_bpfmeta__new(&m), 0);
	cr_expect_eq(perfrec_bpfmeta__add_prog_info(m, &a.info, sizeof(a.info), a.arrays, a.data, 40), -EINVAL);
	cr_expect_eq(perfrec_bpfmeta__add_prog_info(m, &a.info, sizeof(a.info) + 8, a.arrays, a.data, 40), -E2BIG);
	cr_expect_eq(perfrec_bpfmeta__nr_progs(m), 0);
	perfrec_bpfmeta__free(m);
	/* BTF: size past the end */
	{
		unsigned char bb[4 + 8 + 4] = { 1, 0, 0, 0, 9, 0, 0, 0, 5, 0, 0, 0 };

		cr_expect_eq(perfrec_bpfmeta__parse_btf(bb, sizeof(bb), NULL, NULL), -EBADMSG);
		bb[8] = 4;
		cr_expect_eq(perfrec_bpfmeta__parse_btf(bb, sizeof(bb), NULL, NULL), 1);
	}
}

/* Records the test's callback got, by address. */
struct emitted {
	int nr_ksym, nr_event;
	struct { uint64_t addr; uint32_t len; char name[128]; } k[64];
	uint32_t event_ids[64];
};

static int collect_emit(void *ctx, const struct perf_event_header *h)
{
	struct emitted *e = ctx;

	if (h->type == PERF_RECORD_KSYMBOL && e->nr_ksym < 64) {
		struct ksym_view k;

		memcpy(&k, h, sizeof(k));
		e->k[e->nr_ksym].addr = k.addr;
		e->k[e->nr_ksym].len = k.len;
		snprintf(e->k[e->nr_ksym].name, 128, "%s", (const char *)h + sizeof(k));
		e->nr_ksym++;
	} else if (h->type == PERF_RECORD_BPF_EVENT && e->nr_event < 64) {
		memcpy(&e->event_ids[e->nr_event++], (const char *)h + 12, 4);
	}
	return 0;
}

static int find_ksym(const struct emitted *e, uint64_t addr)
{
	for (int i = 0; i < e->nr_ksym; i++)
		if (e->k[i].addr == addr)
			return i;
	return -1;
}

/* A fake procfs in a new directory @dir (a mkdtemp template) whose kallsyms is @text; its path in @path. */
static void fake_kallsyms(char *dir, char path[128], const char *text)
{
	FILE *f;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, 128, "%s/kallsyms", dir);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
}

Test(bpfmeta, synthesis_uses_ring_ksymbols_that_kallsyms_still_shows)
{
	struct perfrec_synth_opts so = { .sz = sizeof(so), .sample_type = SAMPLE_TYPE, .id = 3, .time = 5 };
	char dir[] = "/tmp/test-bpfmeta-proc-XXXXXX", path[128];
	struct perfrec_sample_id sid = { 0 };
	struct perfrec_bpfmeta *m;
	struct emitted *e = calloc(1, sizeof(*e));
	unsigned char rec[256];
	int i;

	cr_assert_not_null(e);
	/* Addresses far from any real program, so the real walk cannot collide. */
	fake_kallsyms(dir, path, "ffffffff81000000 T _text\n"
		      "0000000000000010 t bpf_prog_aaaaaaaaaaaaaaaa_ring\t[bpf]\n"
		      "0000000000002000 t bpf_trampoline_6442\t[bpf]\n"
		      "0000000000002400 t bpf_prog_bbbbbbbbbbbbbbbb_lonely\t[bpf]\n");
	so.proc = dir;
	cr_assert_eq(perfrec_bpfmeta__new(&m), 0);
	/* The ring reported two symbols; one has gone from kallsyms since. */
	cr_assert_gt(perfrec_bpfmeta__encode_ksymbol(rec, sizeof(rec), 0x10, 0x777,
						     "bpf_prog_aaaaaaaaaaaaaaaa_ring", SAMPLE_TYPE, &sid), 0);
	cr_assert_eq(perfrec_bpfmeta__note_record(m, (const struct perf_event_header *)rec), 0);
	cr_assert_gt(perfrec_bpfmeta__encode_ksymbol(rec, sizeof(rec), 0x9000, 0x100,
						     "bpf_prog_cccccccccccccccc_gone", SAMPLE_TYPE, &sid), 0);
	cr_assert_eq(perfrec_bpfmeta__note_record(m, (const struct perf_event_header *)rec), 0);

	cr_assert_geq(perfrec_bpfmeta__synthesize(m, &so, collect_emit, e), 0);
	i = find_ksym(e, 0x10);
	cr_assert_geq(i, 0, "the ring's symbol was not synthesized");
	cr_expect_eq(e->k[i].len, 0x777, "the ring's exact length must be kept");
	cr_expect_str_eq(e->k[i].name, "bpf_prog_aaaaaaaaaaaaaaaa_ring");
	cr_expect_eq(find_ksym(e, 0x9000), -1, "a symbol kallsyms no longer shows was synthesized");
	i = find_ksym(e, 0x2000);
	cr_assert_geq(i, 0);
	cr_expect_eq(e->k[i].len, 0x400, "kallsyms-only symbol: up to the next one");
	cr_expect_str_eq(e->k[i].name, "bpf_trampoline_6442");
	i = find_ksym(e, 0x2400);
	cr_assert_geq(i, 0);
	cr_expect_eq(e->k[i].len, 4096, "the last kallsyms-only symbol: one page");

	/* Unregistered: gone from the next file even while kallsyms is stale. */
	memset(e, 0, sizeof(*e));
	cr_assert_gt(perfrec_bpfmeta__encode_ksymbol(rec, sizeof(rec), 0x10, 0x777,
						     "bpf_prog_aaaaaaaaaaaaaaaa_ring", SAMPLE_TYPE, &sid), 0);
	rec[22] = PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER; /* flags, low byte */
	cr_assert_eq(perfrec_bpfmeta__note_record(m, (const struct perf_event_header *)rec), 0);
	cr_assert_geq(perfrec_bpfmeta__synthesize(m, &so, collect_emit, e), 0);
	i = find_ksym(e, 0x10);
	cr_assert_geq(i, 0, "kallsyms still lists it: kept, but only by kallsyms");
	cr_expect_eq(e->k[i].len, 4096, "kallsyms-only: the next one is farther than a page");

	unlink(path);
	rmdir(dir);
	perfrec_bpfmeta__free(m);
	free(e);
}

/* A small JITed socket filter; fd or -errno. */
static int load_filter(void)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_ALU64 | BPF_ADD | BPF_K, .dst_reg = BPF_REG_0, .imm = 3 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	int fd = bpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, "perfrec_unit", "GPL", insns, 3, NULL);

	return fd < 0 && fd == -1 ? -errno : fd;
}


/*
 * Load the socket filter, JITed, with its info and the name kallsyms gives
 * it; skips the test where that cannot be done here.
 */
static int load_jited_filter(struct bpf_prog_info *info, char want[128])
{
	uint32_t ilen = sizeof(*info);
	int fd = load_filter();

	if (fd < 0)
		cr_skip_test("cannot load a BPF program here: %s", strerror(-fd));
	memset(info, 0, sizeof(*info));
	cr_assert_eq(bpf_obj_get_info_by_fd(fd, info, &ilen), 0);
	if (!info->jited_prog_len) {
		close(fd);
		cr_skip_test("BPF JIT is off");
	}
	perfrec_bpfmeta__prog_name(want, 128, info->tag, "perfrec_unit");
	return fd;
}

Test(bpfmeta, loaded_program_is_synthesized_as_kallsyms_names_it)
{
	struct perfrec_synth_opts so = { .sz = sizeof(so), .sample_type = SAMPLE_TYPE, .id = 3, .time = 5 };
	struct bpf_prog_info info;
	struct perfrec_bpfmeta *m;
	struct emitted *e;
	char want[128];
	int fd, i = -1, r;
	bool event = false;

	fd = load_jited_filter(&info, want);
	e = calloc(1, sizeof(*e));
	cr_assert_not_null(e);
	cr_assert_eq(perfrec_bpfmeta__new(&m), 0);
	r = perfrec_bpfmeta__synthesize(m, &so, collect_emit, e);
	if (r == -EPERM || r == -EACCES) {
		close(fd);
		perfrec_bpfmeta__free(m);
		free(e);
		cr_skip_test("listing BPF programs needs CAP_SYS_ADMIN");
	}
	cr_assert_gt(r, 0);
	for (int k = 0; k < e->nr_ksym; k++)
		if (!strcmp(e->k[k].name, want))
			i = k;
	cr_assert_geq(i, 0, "no KSYMBOL named %s", want);
	cr_expect_eq(e->k[i].len, info.jited_prog_len);
	cr_expect(test_kallsyms_find(want, NULL), "kallsyms has no %s: the names differ", want);
	for (int k = 0; k < e->nr_event; k++)
		event |= e->event_ids[k] == info.id;
	cr_expect(event, "no BPF_EVENT for program id %u", info.id);
	cr_expect_geq(perfrec_bpfmeta__nr_progs(m), 1);
	close(fd);
	perfrec_bpfmeta__free(m);
	free(e);
}


/*
 * collect() reads kallsyms only where it can show more than the programs'
 * own functions; either way a program collected while privileged is still
 * known to be loaded once CAP_SYS_ADMIN is gone (no id walk): by kallsyms'
 * line or by the line collect() put in its place.
 */
Test(bpfmeta, a_program_collected_while_privileged_is_known_after_the_drop)
{
	struct perfrec_synth_opts so = { .sz = sizeof(so), .sample_type = SAMPLE_TYPE, .id = 3, .time = 5 };
	struct bpf_prog_info info;
	uint32_t next;
	struct perfrec_bpfmeta *m;
	struct emitted *e;
	cap_value_t admin = CAP_SYS_ADMIN;
	uint64_t text = 0, etext = 0;
	char want[128];
	bool found = false;
	cap_t caps;
	int fd, r;

	fd = load_jited_filter(&info, want);
	e = calloc(1, sizeof(*e));
	cr_assert_not_null(e);
	cr_assert_eq(perfrec_bpfmeta__new(&m), 0);
	r = perfrec_bpfmeta__collect(m);
	if (r < 0) {
		close(fd);
		perfrec_bpfmeta__free(m);
		free(e);
		cr_skip_test("listing BPF programs needs CAP_SYS_ADMIN: %s", strerror(-r));
	}
	/* Bounds from its pass over kallsyms, when it made one, are kallsyms' own. */
	if (perfrec_bpfmeta__kernel_text(m, &text, &etext)) {
		cr_assert_eq(text, test_kallsyms_addr("_text"));
		cr_assert_eq(etext, test_kallsyms_addr("_etext"));
	}
	cr_assert_not(perfrec_bpfmeta__kernel_text(NULL, &text, &etext));

	caps = cap_get_proc();
	cr_assert_not_null(caps);
	cr_assert_eq(cap_set_flag(caps, CAP_EFFECTIVE, 1, &admin, CAP_CLEAR), 0);
	cr_assert_eq(cap_set_proc(caps), 0);
	cap_free(caps);
	if (bpf_prog_get_next_id(0, &next) == 0 || errno != EPERM) {
		close(fd);
		perfrec_bpfmeta__free(m);
		free(e);
		cr_skip_test("the id walk still works without CAP_SYS_ADMIN (CAP_BPF?)");
	}
	r = perfrec_bpfmeta__synthesize(m, &so, collect_emit, e);
	cr_assert_gt(r, 0, "no program synthesized without the id walk: %d", r);
	for (int k = 0; k < e->nr_ksym; k++)
		found |= !strcmp(e->k[k].name, want);
	cr_assert(found, "no KSYMBOL named %s after the privileges dropped", want);
	close(fd);
	perfrec_bpfmeta__free(m);
	free(e);
}

struct reentrant {
	struct perfrec_bpfmeta *m;
	struct emitted e;
	bool noted;
};

/* Like the daemon's: drains the ring (here: notes a KSYMBOL) from inside emit. */
static int reentrant_emit(void *ctx, const struct perf_event_header *h)
{
	struct reentrant *t = ctx;
	struct perfrec_sample_id sid = { 0 };
	unsigned char rec[256];

	if (!t->noted) {
		t->noted = true;
		cr_assert_gt(perfrec_bpfmeta__encode_ksymbol(rec, sizeof(rec), 0x3000, 0x55,
							     "bpf_prog_dddddddddddddddd_new", SAMPLE_TYPE, &sid), 0);
		cr_expect_eq(perfrec_bpfmeta__note_record(t->m, (const struct perf_event_header *)rec), 0);
	}
	return collect_emit(&t->e, h);
}

Test(bpfmeta, records_noted_during_synthesis_apply_after_it)
{
	struct perfrec_synth_opts so = { .sz = sizeof(so), .sample_type = SAMPLE_TYPE };
	char dir[] = "/tmp/test-bpfmeta-proc-XXXXXX", path[128];
	struct reentrant *t = calloc(1, sizeof(*t));
	int i;

	cr_assert_not_null(t);
	fake_kallsyms(dir, path, "0000000000002000 t bpf_trampoline_1\t[bpf]\n"
		      "0000000000003000 t bpf_prog_dddddddddddddddd_new\t[bpf]\n");
	so.proc = dir;
	cr_assert_eq(perfrec_bpfmeta__new(&t->m), 0);
	cr_assert_geq(perfrec_bpfmeta__synthesize(t->m, &so, reentrant_emit, t), 0);
	cr_assert(t->noted);
	/* First pass: only kallsyms knew it (a page at most). */
	i = find_ksym(&t->e, 0x3000);
	cr_assert_geq(i, 0);
	cr_expect_eq(t->e.k[i].len, 4096);
	/* Next file: the ring's exact length. */
	memset(&t->e, 0, sizeof(t->e));
	cr_assert_geq(perfrec_bpfmeta__synthesize(t->m, &so, collect_emit, &t->e), 0);
	i = find_ksym(&t->e, 0x3000);
	cr_assert_geq(i, 0);
	cr_expect_eq(t->e.k[i].len, 0x55);
	unlink(path);
	rmdir(dir);
	perfrec_bpfmeta__free(t->m);
	free(t);
}

Test(bpfmeta, verify_refuses_a_malformed_prog_info_section)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr), .type = PERF_TYPE_SOFTWARE, .config = PERF_COUNT_SW_DUMMY,
		.sample_type = SAMPLE_TYPE, .sample_id_all = 1,
	};
	/* one entry claimed, its header says 64 bytes of data that are not there */
	uint32_t body[8] = { 1, 64, 64, 0, 0, 0, 0, 0 };
	uint64_t attr_id = 11;
	struct perfrec_pdwriter *w;
	struct perfrec_pdreader *r;
	char path[64];
	int fd;

	strcpy(path, tmp_template);
	fd = mkstemp(path);
	cr_assert(fd >= 0);
	cr_assert_eq(perfrec_pdwriter__new(fd, &(struct perfrec_pdwriter_opts){
		.sz = sizeof(struct perfrec_pdwriter_opts), .owns_fd = true }, &w), 0);
	cr_assert_eq(perfrec_pdwriter__add_attr(w, &attr, &attr_id, 1, "dummy"), 0);
	cr_assert_eq(perfrec_pdwriter__set_feature(w, PERFREC_FEAT_BPF_PROG_INFO, body, sizeof(body)), 0);
	cr_assert_eq(perfrec_pdwriter__finish(w), 0);
	perfrec_pdwriter__free(w, false);
	cr_assert_eq(perfrec_pdreader__open(path, NULL, &r), 0);
	cr_expect_eq(perfrec_pdreader__verify(r), -EBADMSG);
	cr_expect(strstr(perfrec_pdreader__error(r, NULL), "BPF_PROG_INFO") != NULL, "%s",
		  perfrec_pdreader__error(r, NULL));
	perfrec_pdreader__free(r);
	unlink(path);
}
