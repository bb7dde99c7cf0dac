// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Tests of the PERFILE2 reader and verifier: a sound file written by our
 * writer verifies, and each kind of damage (cut header, bad magic, sections
 * past the end, bad record sizes and types, duplicate or unknown ids) is
 * rejected with a message naming the problem and the offset where it is.
 * Salvage mode reads a file whose header still says data.size = 0.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <perfrec/event.h>
#include <perfrec/pdreader.h>
#include <perfrec/pdwriter.h>

#include "featbuf.h"

#define SAMPLE_TYPE (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | \
		     PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD)
#define NR_SAMPLES 6

/* The sound file every case starts from, and where its parts are. */
struct good {
	unsigned char *buf;
	size_t len;
	struct perfrec_file_header hdr;
	uint64_t attr_size;   /* attrs-section entry size */
	uint64_t ids1_off;    /* the ids section of attr 1 */
	uint64_t first_rec;   /* offset of the first record (a COMM) */
	uint64_t first_sample;
	uint64_t last_rec;
	uint64_t table;       /* feature table */
	uint64_t hostname;    /* HOSTNAME body */
	int nr_records;
};

static size_t make_sample(void *buf, uint64_t id, uint64_t time)
{
	uint64_t body[6] = { id, 0x401000, 7 | (7ULL << 32), time, 1, 1000 };
	struct perf_event_header h = { .type = PERF_RECORD_SAMPLE, .size = sizeof(h) + sizeof(body) };

	memcpy(buf, &h, sizeof(h));
	memcpy((char *)buf + sizeof(h), body, sizeof(body));
	return h.size;
}

static size_t make_comm(void *buf, uint64_t id)
{
	struct perfrec_sample_id sid = { .pid = 7, .tid = 7, .time = 5, .id = id };
	size_t tr = perfrec_sample_id__size(SAMPLE_TYPE);
	struct perf_event_header h = { .type = PERF_RECORD_COMM, .size = (uint16_t)(8 + 8 + 16 + tr) };
	unsigned char *p = buf;

	memset(buf, 0, h.size);
	memcpy(p, &h, sizeof(h));
	memcpy(p + 16, "sleeper", 7);
	perfrec_sample_id__write(p + 32, SAMPLE_TYPE, &sid);
	return h.size;
}

static void build_good(struct good *g)
{
	struct perfrec_pdwriter_opts wo = { .sz = sizeof(wo), .owns_fd = true };
	struct perf_event_attr a;
	const uint64_t ids0[] = { 21, 22 }, ids1[] = { 23 };
	struct perfrec_pdwriter *w;
	unsigned char rec[128];
	struct featbuf fb;
	uint64_t pos;
	int fd = memfd_create("good", MFD_CLOEXEC);

	memset(g, 0, sizeof(*g));
	cr_assert_geq(fd, 0);
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.sample_period = 1000;
	a.sample_type = SAMPLE_TYPE;
	a.sample_id_all = 1;
	cr_assert_eq(perfrec_pdwriter__new(fd, &wo, &w), 0);
	cr_assert_eq(perfrec_pdwriter__add_attr(w, &a, ids0, 2, "cpu-clock"), 0);
	a.config = PERF_COUNT_SW_DUMMY;
	cr_assert_eq(perfrec_pdwriter__add_attr(w, &a, ids1, 1, "dummy"), 0);
	cr_assert_eq(perfrec_pdwriter__write(w, rec, make_comm(rec, 23)), 0);
	for (int i = 0; i < NR_SAMPLES; i++)
		cr_assert_eq(perfrec_pdwriter__write(w, rec, make_sample(rec, ids0[i % 2], 100 + i)), 0);
	featbuf_init(&fb);
	featbuf_string(&fb, "host");
	cr_assert_eq(perfrec_pdwriter__set_feature(w, PERFREC_FEAT_HOSTNAME, fb.buf, fb.len), 0);
	featbuf_exit(&fb);
	cr_assert_eq(perfrec_pdwriter__finish(w), 0);

	g->len = (size_t)lseek(fd, 0, SEEK_END);
	g->buf = malloc(g->len);
	cr_assert(g->buf);
	cr_assert_eq(pread(fd, g->buf, g->len, 0), (ssize_t)g->len);
	perfrec_pdwriter__free(w, false);

	memcpy(&g->hdr, g->buf, sizeof(g->hdr));
	g->attr_size = g->hdr.attr_size;
	memcpy(&g->ids1_off, g->buf + g->hdr.attrs.offset + g->attr_size * 2 - 16, 8);
	g->first_rec = g->hdr.data.offset;
	g->table = g->hdr.data.offset + g->hdr.data.size;
	/* Table entries in bit order: HOSTNAME (3) before EVENT_DESC (12). */
	memcpy(&g->hostname, g->buf + g->table, 8);
	for (pos = g->first_rec; pos < g->table;) {
		struct perf_event_header h;

		memcpy(&h, g->buf + pos, sizeof(h));
		if (h.type == PERF_RECORD_SAMPLE && !g->first_sample)
			g->first_sample = pos;
		g->last_rec = pos;
		g->nr_records++;
		pos += h.size;
	}
}

static void put16(unsigned char *b, uint64_t off, uint16_t v) { memcpy(b + off, &v, 2); }
static void put32(unsigned char *b, uint64_t off, uint32_t v) { memcpy(b + off, &v, 4); }
static void put64(unsigned char *b, uint64_t off, uint64_t v) { memcpy(b + off, &v, 8); }

Test(pdreader, sound_file_verifies)
{
	struct perfrec_pdreader *r;
	struct good g;
	uint64_t off = 1;

	build_good(&g);
	cr_assert_eq(perfrec_pdreader__open_mem(g.buf, g.len, NULL, &r), 0);
	cr_expect_eq(perfrec_pdreader__verify(r), 0, "%s", perfrec_pdreader__error(r, NULL));
	cr_expect_str_eq(perfrec_pdreader__error(r, &off), "");
	cr_expect_eq(off, 0);
	cr_expect_eq(perfrec_pdreader__stats(r)->nr_records, (uint64_t)g.nr_records);
	cr_expect_eq(perfrec_pdreader__stats(r)->nr_samples, NR_SAMPLES);
	cr_expect_eq(perfrec_pdreader__stats(r)->by_type[PERF_RECORD_COMM], 1);
	cr_expect_eq(perfrec_pdreader__stats(r)->first_time, 100);
	cr_expect_eq(perfrec_pdreader__stats(r)->last_time, 100 + NR_SAMPLES - 1);
	cr_expect_eq(perfrec_pdreader__stats(r)->samples_per_cpu[1], NR_SAMPLES);
	perfrec_pdreader__free(r);
	free(g.buf);
}

enum mut {
	CUT_HEADER, BAD_MAGIC, SWAPPED_MAGIC, HEADER_SIZE, ATTRS_PAST_EOF, IDS_PAST_EOF,
	DATA_PAST_EOF, REC_SIZE_0, REC_PAST_DATA, REC_TYPE, FEAT_TABLE_PAST_EOF,
	FEAT_PAST_EOF, FEAT_STRING, DUP_IDS, SAMPLE_UNKNOWN_ID, SAMPLE_SHORT, TRAILER_UNKNOWN_ID,
	/* Records perf script stops at (perf 6.1 exits non-zero), retyped from the first sample. */
	AS_TRACING_DATA, AS_ID_INDEX, AS_AUXTRACE_INFO, AS_AUXTRACE, AS_THREAD_MAP, AS_CPU_MAP,
	AS_STAT, AS_STAT_ROUND, AS_EVENT_UPDATE, AS_COMPRESSED2,
	/* Records too short for their type's fields. */
	COMM_AS_MMAP2, COMM_WITHOUT_NUL,
	/* A cpu no host has: perf script crashes on it (a byte flipped in the cpu field). */
	SAMPLE_CPU_GARBAGE,
};

/* Apply @m to a copy of the good file; returns its length and the offset expected. */
static size_t mutate(const struct good *g, unsigned char *b, enum mut m, uint64_t *ret_off)
{
	size_t len = g->len;

	switch (m) {
	case CUT_HEADER:
		len = 60;
		*ret_off = 60;
		break;
	case BAD_MAGIC:
		memcpy(b, "NOTPERF!", 8);
		*ret_off = 0;
		break;
	case SWAPPED_MAGIC:
		put64(b, 0, __builtin_bswap64(PERFREC_MAGIC2));
		*ret_off = 0;
		break;
	case HEADER_SIZE:
		put64(b, 8, 200);
		*ret_off = 8;
		break;
	case ATTRS_PAST_EOF:
		put64(b, 32, g->attr_size * 1000);
		*ret_off = 24;
		break;
	case IDS_PAST_EOF:
		put64(b, g->hdr.attrs.offset + g->attr_size * 2 - 16, g->len - 4);
		*ret_off = g->hdr.attrs.offset + g->attr_size * 2 - 16;
		break;
	case DATA_PAST_EOF:
		put64(b, 48, g->len);
		*ret_off = 40;
		break;
	case REC_SIZE_0:
		put16(b, g->first_sample + 6, 0);
		*ret_off = g->first_sample;
		break;
	case REC_PAST_DATA:
		put16(b, g->last_rec + 6, 4000);
		*ret_off = g->last_rec;
		break;
	case REC_TYPE:
		put32(b, g->first_sample, 50);
		*ret_off = g->first_sample;
		break;
	case FEAT_TABLE_PAST_EOF:
		len = g->table + 20;
		*ret_off = g->table;
		break;
	case FEAT_PAST_EOF:
		put64(b, g->table + 8, g->len); /* HOSTNAME size */
		*ret_off = g->table;
		break;
	case FEAT_STRING:
		put32(b, g->hostname, 0x10000); /* string length past its section */
		*ret_off = g->hostname;
		break;
	case DUP_IDS:
		put64(b, g->ids1_off, 21); /* attr 1's id becomes attr 0's first */
		*ret_off = g->ids1_off;
		break;
	case SAMPLE_UNKNOWN_ID:
		put64(b, g->first_sample + 8, 999);
		*ret_off = g->first_sample;
		break;
	case SAMPLE_SHORT:
		/* A 16-byte "sample": its id is known but the body is cut. */
		put16(b, g->first_sample + 6, 16);
		put32(b, g->first_sample + 16, PERFREC_RECORD_FINISHED_ROUND);
		put16(b, g->first_sample + 22, 56 - 16);
		*ret_off = g->first_sample;
		break;
	case TRAILER_UNKNOWN_ID:
		put64(b, g->first_sample - 8, 777); /* the COMM's identifier */
		*ret_off = g->first_rec;
		break;
	case AS_TRACING_DATA: case AS_ID_INDEX: case AS_AUXTRACE_INFO: case AS_AUXTRACE:
	case AS_THREAD_MAP: case AS_CPU_MAP: case AS_STAT: case AS_STAT_ROUND:
	case AS_EVENT_UPDATE: case AS_COMPRESSED2: {
		static const uint32_t type[] = {
			[AS_TRACING_DATA] = PERFREC_RECORD_HEADER_TRACING_DATA,
			[AS_ID_INDEX] = PERFREC_RECORD_ID_INDEX,
			[AS_AUXTRACE_INFO] = PERFREC_RECORD_AUXTRACE_INFO,
			[AS_AUXTRACE] = PERFREC_RECORD_AUXTRACE,
			[AS_THREAD_MAP] = PERFREC_RECORD_THREAD_MAP,
			[AS_CPU_MAP] = PERFREC_RECORD_CPU_MAP,
			[AS_STAT] = PERFREC_RECORD_STAT,
			[AS_STAT_ROUND] = PERFREC_RECORD_STAT_ROUND,
			[AS_EVENT_UPDATE] = PERFREC_RECORD_EVENT_UPDATE,
			[AS_COMPRESSED2] = PERFREC_RECORD_COMPRESSED2,
		};

		/* 56 bytes: id 21, ip, pid/tid, time, cpu, period read as the new type's fields */
		put32(b, g->first_sample, type[m]);
		*ret_off = g->first_sample;
		break;
	}
	case COMM_AS_MMAP2:
		/* 24 bytes before the trailer; an MMAP2 needs 64 and a file name. */
		put32(b, g->first_rec, PERF_RECORD_MMAP2);
		*ret_off = g->first_rec;
		break;
	case COMM_WITHOUT_NUL:
		memset(b + g->first_rec + 16, 'x', 16);
		*ret_off = g->first_rec;
		break;
	case SAMPLE_CPU_GARBAGE:
		put32(b, g->first_sample + 8 + 32, 0xba0001);
		*ret_off = g->first_sample;
		break;
	}
	return len;
}

Test(pdreader, damaged_files_are_rejected_with_problem_and_offset)
{
	static const struct {
		enum mut m;
		const char *want;
	} cases[] = {
		{ CUT_HEADER, "truncated header" },
		{ BAD_MAGIC, "bad magic" },
		{ SWAPPED_MAGIC, "byte-swapped" },
		{ HEADER_SIZE, "header size" },
		{ ATTRS_PAST_EOF, "attrs section" },
		{ IDS_PAST_EOF, "ids section" },
		{ DATA_PAST_EOF, "data section" },
		{ REC_SIZE_0, "record size 0" },
		{ REC_PAST_DATA, "runs past end of data section" },
		{ REC_TYPE, "unknown record type 50" },
		{ FEAT_TABLE_PAST_EOF, "feature section table" },
		{ FEAT_PAST_EOF, "feature HOSTNAME section" },
		{ FEAT_STRING, "feature HOSTNAME: malformed string" },
		{ DUP_IDS, "duplicate id 21" },
		{ SAMPLE_UNKNOWN_ID, "SAMPLE with unknown id 999" },
		{ SAMPLE_SHORT, "does not parse" },
		{ TRAILER_UNKNOWN_ID, "COMM with unknown id 777" },
		{ AS_TRACING_DATA, "TRACING_DATA record" },
		{ AS_ID_INDEX, "ID_INDEX record lists 21 entries but has room for 1" },
		{ AS_AUXTRACE_INFO, "AUXTRACE_INFO record: AUX area tracing" },
		{ AS_AUXTRACE, "AUXTRACE record: AUX area tracing" },
		{ AS_THREAD_MAP, "THREAD_MAP record's entries run past it" },
		{ AS_CPU_MAP, "CPU_MAP record of unknown kind" },
		{ AS_STAT, "STAT record: perf stat counts" },
		{ AS_STAT_ROUND, "STAT_ROUND record: perf stat counts" },
		{ AS_EVENT_UPDATE, "EVENT_UPDATE record for unknown id 4198400" },
		{ AS_COMPRESSED2, "COMPRESSED2 record: perf 6.1 does not read it" },
		{ COMM_AS_MMAP2, "MMAP2 record too short for its fields" },
		{ COMM_WITHOUT_NUL, "COMM record without a NUL-terminated comm" },
		{ SAMPLE_CPU_GARBAGE, "SAMPLE on cpu 12189697, which no host has" },
	};
	struct good g;

	build_good(&g);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		unsigned char *b = malloc(g.len);
		struct perfrec_pdreader *r;
		uint64_t want_off = ~0ULL, off = ~0ULL;
		const char *msg;
		size_t len;

		memcpy(b, g.buf, g.len);
		len = mutate(&g, b, cases[i].m, &want_off);
		cr_assert_eq(perfrec_pdreader__open_mem(b, len, NULL, &r), 0, "case %zu", i);
		cr_expect_eq(perfrec_pdreader__verify(r), -EBADMSG, "case %zu (%s) was not rejected", i, cases[i].want);
		msg = perfrec_pdreader__error(r, &off);
		cr_expect(strstr(msg, cases[i].want), "case %zu: want \"%s\", got \"%s\"", i, cases[i].want, msg);
		cr_expect_eq(off, want_off, "case %zu (%s): offset %llu, want %llu", i, cases[i].want,
			     (unsigned long long)off, (unsigned long long)want_off);
		perfrec_pdreader__free(r);
		free(b);
	}
	free(g.buf);
}

Test(pdreader, iteration_stops_at_a_bad_record)
{
	const struct perf_event_header *rec;
	struct perfrec_pdreader *r;
	struct good g;
	uint64_t off;
	int n = 0, ret;

	build_good(&g);
	put16(g.buf, g.first_sample + 6, 3);
	cr_assert_eq(perfrec_pdreader__open_mem(g.buf, g.len, NULL, &r), 0);
	while ((ret = perfrec_pdreader__next(r, &rec, &off)) > 0)
		n++;
	cr_expect_eq(ret, -EBADMSG);
	cr_expect_eq(n, 1, "only the COMM before the bad sample");
	cr_expect_eq(perfrec_pdreader__next(r, &rec, &off), -EBADMSG, "errors are sticky");
	perfrec_pdreader__free(r);
	free(g.buf);
}

Test(pdreader, salvage_reads_a_file_whose_header_says_no_data)
{
	struct perfrec_pdreader_opts so = { .sz = sizeof(so), .salvage = true };
	const struct perf_event_header *rec;
	struct perfrec_pdreader *r;
	struct good g;
	uint64_t off, last = 0;
	size_t len;
	int n = 0;

	build_good(&g);
	/* As a crash leaves it: placeholder size, no features, last record cut. */
	put64(g.buf, 48, 0);
	memset(g.buf + 72, 0, 32);
	len = g.last_rec + 20;

	cr_assert_eq(perfrec_pdreader__open_mem(g.buf, len, NULL, &r), 0);
	cr_expect_eq(perfrec_pdreader__next(r, &rec, &off), 0, "without salvage, data.size 0 means no records");
	perfrec_pdreader__free(r);

	cr_assert_eq(perfrec_pdreader__open_mem(g.buf, len, &so, &r), 0);
	while (perfrec_pdreader__next(r, &rec, &off) > 0) {
		n++;
		last = off;
	}
	cr_expect_eq(n, g.nr_records - 1, "every whole record, not the cut one");
	cr_expect_eq(last + rec->size, g.last_rec);
	cr_expect_eq(perfrec_pdreader__verify(r), 0, "%s", perfrec_pdreader__error(r, NULL));
	cr_expect_eq(perfrec_pdreader__stats(r)->nr_samples, NR_SAMPLES - 1);
	perfrec_pdreader__free(r);
	free(g.buf);
}

Test(pdreader, larger_attrs_need_zero_tail)
{
	struct perfrec_pdreader *r;
	struct good g;
	unsigned char *b;
	size_t grow = 8, n;

	/* Rebuild the attrs section with 8 more bytes per attr, appended at the end. */
	build_good(&g);
	n = g.hdr.attrs.size / g.attr_size;
	b = calloc(1, g.len + n * (g.attr_size + grow));
	cr_assert(b);
	memcpy(b, g.buf, g.len);
	for (size_t i = 0; i < n; i++) {
		uint64_t src = g.hdr.attrs.offset + i * g.attr_size;
		uint64_t dst = g.len + i * (g.attr_size + grow);
		uint64_t asz = g.attr_size - 16;

		memcpy(b + dst, g.buf + src, asz);
		put32(b, dst + 4, (uint32_t)(asz + grow));
		memcpy(b + dst + asz + grow, g.buf + src + asz, 16);
	}
	put64(b, 16, g.attr_size + grow);
	put64(b, 24, g.len);
	put64(b, 32, n * (g.attr_size + grow));
	cr_assert_eq(perfrec_pdreader__open_mem(b, g.len + n * (g.attr_size + grow), NULL, &r), 0);
	cr_expect_eq(perfrec_pdreader__nr_attrs(r), 2, "%s", perfrec_pdreader__error(r, NULL));
	cr_expect_eq(perfrec_pdreader__attr(r, 0)->attr.sample_type, SAMPLE_TYPE);
	perfrec_pdreader__free(r);

	b[g.len + g.attr_size - 16 + 3] = 1; /* nonzero byte beyond our struct */
	cr_assert_eq(perfrec_pdreader__open_mem(b, g.len + n * (g.attr_size + grow), NULL, &r), 0);
	cr_expect_eq(perfrec_pdreader__verify(r), -EBADMSG);
	cr_expect(strstr(perfrec_pdreader__error(r, NULL), "nonzero byte beyond"), "%s",
		  perfrec_pdreader__error(r, NULL));
	perfrec_pdreader__free(r);
	free(b);
	free(g.buf);
}

/*
 * A file perfrecd's writer could produce that perf or perfparser refuse: no
 * records at all (data size 0, as a recovery of a header-only .tmp made), or
 * a feature section left empty (perfparser: "Feature announced in header but
 * not present").  @empty_feat 0: none empty.
 */
static void build_writer_file(bool records, int empty_feat, unsigned char **ret_buf, size_t *ret_len)
{
	struct perfrec_pdwriter_opts wo = { .sz = sizeof(wo), .owns_fd = true };
	struct perf_event_attr a = {
		.size = sizeof(a), .type = PERF_TYPE_SOFTWARE, .sample_period = 1000,
		.sample_type = SAMPLE_TYPE, .sample_id_all = 1,
	};
	const uint64_t id = 21;
	struct perfrec_pdwriter *w;
	unsigned char rec[128];
	struct featbuf fb;
	int fd = memfd_create("writer", MFD_CLOEXEC);

	cr_assert_geq(fd, 0);
	cr_assert_eq(perfrec_pdwriter__new(fd, &wo, &w), 0);
	cr_assert_eq(perfrec_pdwriter__add_attr(w, &a, &id, 1, "cpu-clock"), 0);
	if (records)
		cr_assert_eq(perfrec_pdwriter__write(w, rec, make_sample(rec, id, 100)), 0);
	featbuf_init(&fb);
	featbuf_string(&fb, "host");
	cr_assert_eq(perfrec_pdwriter__set_feature(w, PERFREC_FEAT_HOSTNAME, fb.buf, fb.len), 0);
	featbuf_exit(&fb);
	if (empty_feat)
		cr_assert_eq(perfrec_pdwriter__set_feature(w, empty_feat, NULL, 0), 0);
	cr_assert_eq(perfrec_pdwriter__finish(w), 0);
	*ret_len = (size_t)lseek(fd, 0, SEEK_END);
	*ret_buf = malloc(*ret_len);
	cr_assert(*ret_buf);
	cr_assert_eq(pread(fd, *ret_buf, *ret_len, 0), (ssize_t)*ret_len);
	perfrec_pdwriter__free(w, false);
}

Test(pdreader, files_perf_or_perfparser_refuse_do_not_verify)
{
	static const struct {
		bool records;
		int empty_feat;
		const char *want; /* NULL: sound */
	} cases[] = {
		{ true, 0, NULL },
		{ false, 0, "data section is empty (data size 0)" },
		{ true, PERFREC_FEAT_BUILD_ID, "feature BUILD_ID announced in the header but its section is empty" },
		{ true, PERFREC_FEAT_CPU_TOPOLOGY, "feature CPU_TOPOLOGY announced in the header but its section is empty" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct perfrec_pdreader *r;
		unsigned char *b;
		size_t len;

		build_writer_file(cases[i].records, cases[i].empty_feat, &b, &len);
		cr_assert_eq(perfrec_pdreader__open_mem(b, len, NULL, &r), 0);
		if (!cases[i].want) {
			cr_expect_eq(perfrec_pdreader__verify(r), 0, "case %zu: %s", i, perfrec_pdreader__error(r, NULL));
		} else {
			cr_expect_eq(perfrec_pdreader__verify(r), -EBADMSG, "case %zu (%s) was not rejected", i, cases[i].want);
			cr_expect(strstr(perfrec_pdreader__error(r, NULL), cases[i].want), "case %zu: want \"%s\", got \"%s\"",
				  i, cases[i].want, perfrec_pdreader__error(r, NULL));
		}
		perfrec_pdreader__free(r);
		free(b);
	}
}

Test(pdreader, check_record_judges_one_record_as_verify_does)
{
	struct perfrec_pdreader *r;
	unsigned char rec[128];
	struct good g;

	build_good(&g);
	cr_assert_eq(perfrec_pdreader__open_mem(g.buf, g.len, NULL, &r), 0);
	make_sample(rec, 22, 7);
	cr_expect_eq(perfrec_pdreader__check_record(r, (const void *)rec, 0), 0, "%s", perfrec_pdreader__error(r, NULL));
	make_sample(rec, 999, 7);
	cr_expect_eq(perfrec_pdreader__check_record(r, (const void *)rec, 4096), -EBADMSG);
	cr_expect(strstr(perfrec_pdreader__error(r, NULL), "SAMPLE with unknown id 999"), "%s",
		  perfrec_pdreader__error(r, NULL));
	perfrec_pdreader__free(r);
	free(g.buf);
}
