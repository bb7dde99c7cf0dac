// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Tests of crash recovery: a .tmp built with the writer the way a killed
 * perfrecd leaves it (attrs, records, a checkpoint, more records flushed
 * after it, a record cut by the crash, no features) must come back as a file
 * that verifies and holds exactly the whole records, byte for byte, with the
 * same attrs, ids and names and with host and build-id features; garbage,
 * empty and header-only files must give errors, never a crash or a file.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <perfrec/event.h>
#include <perfrec/pdreader.h>
#include <perfrec/pdwriter.h>
#include <perfrec/recover.h>

#define SAMPLE_TYPE (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | \
		     PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD)
#define PID 4242
#define FIRST_TIME 1000000ULL

static const uint8_t build_id[20] = { 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };

static struct perf_event_attr make_attr(uint64_t config)
{
	struct perf_event_attr a;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = config;
	a.sample_period = 100000;
	a.sample_type = SAMPLE_TYPE;
	a.sample_id_all = 1;
	a.use_clockid = 1;
	a.clockid = CLOCK_MONOTONIC;
	return a;
}

static size_t make_sample(void *buf, uint64_t id, uint64_t ip, uint64_t time)
{
	uint64_t body[6] = { id, ip, (uint64_t)PID | ((uint64_t)PID << 32), time, 1, 100000 };
	struct perf_event_header h = { .type = PERF_RECORD_SAMPLE, .misc = PERF_RECORD_MISC_USER,
				       .size = sizeof(h) + sizeof(body) };

	memcpy(buf, &h, sizeof(h));
	memcpy((char *)buf + sizeof(h), body, sizeof(body));
	return h.size;
}

static size_t make_comm(void *buf, uint64_t id, const char *comm, uint64_t time)
{
	struct perfrec_sample_id sid = { .pid = PID, .tid = PID, .time = time, .id = id };
	size_t n = (strlen(comm) + 1 + 7) & ~(size_t)7;
	size_t tr = perfrec_sample_id__size(SAMPLE_TYPE);
	struct perf_event_header h = { .type = PERF_RECORD_COMM, .size = (uint16_t)(sizeof(h) + 8 + n + tr) };
	uint32_t pid = PID;
	char *p = buf;

	memset(buf, 0, h.size);
	memcpy(p, &h, sizeof(h));
	memcpy(p + 8, &pid, 4);
	memcpy(p + 12, &pid, 4);
	memcpy(p + 16, comm, strlen(comm));
	perfrec_sample_id__write(p + 16 + n, SAMPLE_TYPE, &sid);
	return h.size;
}

/* MMAP2 carrying a build id (misc MMAP_BUILD_ID), as the kernel writes with attr.build_id. */
static size_t make_mmap2(void *buf, uint64_t id, const char *file, uint64_t time)
{
	struct perfrec_sample_id sid = { .pid = PID, .tid = PID, .time = time, .id = id };
	size_t n = (strlen(file) + 1 + 7) & ~(size_t)7;
	size_t tr = perfrec_sample_id__size(SAMPLE_TYPE);
	struct perf_event_header h = { .type = PERF_RECORD_MMAP2,
				       .misc = PERF_RECORD_MISC_USER | PERF_RECORD_MISC_MMAP_BUILD_ID,
				       .size = (uint16_t)(72 + n + tr) };
	uint32_t pid = PID, prot = 5, flags = 2;
	uint64_t addr = 0x400000, len = 0x10000, pgoff = 0;
	unsigned char *p = buf;

	memset(buf, 0, h.size);
	memcpy(p, &h, sizeof(h));
	memcpy(p + 8, &pid, 4);
	memcpy(p + 12, &pid, 4);
	memcpy(p + 16, &addr, 8);
	memcpy(p + 24, &len, 8);
	memcpy(p + 32, &pgoff, 8);
	p[40] = sizeof(build_id);
	memcpy(p + 44, build_id, sizeof(build_id));
	memcpy(p + 64, &prot, 4);
	memcpy(p + 68, &flags, 4);
	memcpy(p + 72, file, strlen(file));
	perfrec_sample_id__write(p + 72 + n, SAMPLE_TYPE, &sid);
	return h.size;
}

static char *tmp_dir(void)
{
	char *d = strdup("/tmp/test-recover-XXXXXX");

	cr_assert_not_null(mkdtemp(d));
	return d;
}

static void rm_dir(char *dir)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
	free(dir);
}

static off_t file_size(const char *path)
{
	struct stat st;

	cr_assert_eq(stat(path, &st), 0, "stat %s: %m", path);
	return st.st_size;
}

/* The records as written, and where each starts in the data section. */
struct recs {
	unsigned char *buf;
	size_t len, cap;
	size_t *starts;
	size_t nr, nr_samples;
};

static void add_rec(struct recs *rs, struct perfrec_pdwriter *w, const void *rec, size_t n, bool sample)
{
	if (rs->len + n > rs->cap) {
		rs->cap = (rs->cap + n) * 2;
		rs->buf = realloc(rs->buf, rs->cap);
		cr_assert_not_null(rs->buf);
	}
	rs->starts = realloc(rs->starts, (rs->nr + 1) * sizeof(*rs->starts));
	cr_assert_not_null(rs->starts);
	rs->starts[rs->nr++] = rs->len;
	memcpy(rs->buf + rs->len, rec, n);
	rs->len += n;
	rs->nr_samples += sample;
	cr_assert_eq(perfrec_pdwriter__write(w, rec, n), 0);
}

Test(recover, crashed_tmp_comes_back_with_every_whole_record)
{
	struct perf_event_attr a0 = make_attr(PERF_COUNT_SW_CPU_CLOCK), a1 = make_attr(PERF_COUNT_SW_DUMMY);
	const uint64_t ids0[] = { 11, 12 }, ids1[] = { 13, 14 };
	struct perfrec_pdreader_opts ro = { .sz = sizeof(ro) };
	struct perfrec_recover_opts opts = { .sz = sizeof(opts) };
	struct perfrec_recover_stats st;
	struct recs rs = { 0 };
	struct perfrec_pdwriter *w;
	struct perfrec_pdreader *r;
	struct perfrec_file_header h;
	const struct perf_event_header *rec;
	unsigned char one[256];
	char *dir = tmp_dir(), final[256], tmp[300], out[300];
	size_t n, at_checkpoint, got = 0, cut_rec, keep;
	uint64_t t = FIRST_TIME, off, on_disk;
	const void *body;
	size_t body_len;
	int fd, ret;

	snprintf(final, sizeof(final), "%s/host-1.data", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", final);
	snprintf(out, sizeof(out), "%s/host-1-recovered.data", dir);

	cr_assert_eq(perfrec_pdwriter__create(final, &w), 0);
	cr_assert_eq(perfrec_pdwriter__add_attr(w, &a0, ids0, 2, "cpu-clock"), 0);
	cr_assert_eq(perfrec_pdwriter__add_attr(w, &a1, ids1, 2, "dummy"), 0);
	n = make_comm(one, 13, "worker", t++);
	add_rec(&rs, w, one, n, false);
	n = make_mmap2(one, 13, "/usr/bin/worker", t++);
	add_rec(&rs, w, one, n, false);
	for (int i = 0; i < 500; i++) {
		n = make_sample(one, ids0[i % 2], 0x401000 + i, t++);
		add_rec(&rs, w, one, n, true);
	}
	cr_assert_eq(perfrec_pdwriter__checkpoint(w), 0);
	at_checkpoint = rs.nr;

	/* Enough after the checkpoint that the writer's buffer reaches the file. */
	for (int i = 0; i < 12000; i++) {
		if (i % 1000 == 0)
			n = make_comm(one, 14, i % 2000 ? "a-longer-comm" : "w2", t++);
		else
			n = make_sample(one, ids0[i % 2], 0x402000 + i, t++);
		add_rec(&rs, w, one, n, one[4] == PERF_RECORD_SAMPLE);
	}

	/* The crash: cut the file in the middle of a record that reached disk. */
	fd = open(tmp, O_RDWR | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	cr_assert_eq(pread(fd, &h, sizeof(h), 0), (ssize_t)sizeof(h));
	cr_assert_neq(h.data.size, 0, "checkpoint set data.size");
	cr_assert_eq(h.flags[0] | h.flags[1] | h.flags[2] | h.flags[3], 0, "a .tmp has no features");
	on_disk = (uint64_t)file_size(tmp) - h.data.offset;
	cr_assert_gt(on_disk, h.data.size, "records after the checkpoint reached the file");
	for (cut_rec = rs.nr - 1; cut_rec > 0 && rs.starts[cut_rec] + 16 > on_disk; cut_rec--)
		;
	cr_assert_gt(cut_rec, at_checkpoint + 100);
	keep = rs.starts[cut_rec];
	cr_assert_eq(ftruncate(fd, (off_t)(h.data.offset + keep + 13)), 0);
	close(fd);
	perfrec_pdwriter__free(w, false);
	cr_assert_eq(access(tmp, F_OK), 0, "the .tmp stays for recovery");

	ret = perfrec_recover__file(tmp, out, &opts, &st);
	cr_assert_eq(ret, 0, "recover: %d", ret);
	cr_assert_eq(st.records, cut_rec);
	cr_assert_eq(st.bytes, keep);
	cr_assert_eq(st.dropped_bytes, 13);
	{
		size_t samples = 0;

		for (size_t i = 0; i < cut_rec; i++)
			samples += ((struct perf_event_header *)(rs.buf + rs.starts[i]))->type == PERF_RECORD_SAMPLE;
		cr_assert_eq(st.samples, samples);
	}
	cr_assert_eq(access(tmp, F_OK), 0, "the source is left alone");
	cr_assert_eq(file_size(tmp), (off_t)(h.data.offset + keep + 13));
	{
		char otmp[320];

		snprintf(otmp, sizeof(otmp), "%s.tmp", out);
		cr_assert_neq(access(otmp, F_OK), 0, "published: no %s", otmp);
	}

	cr_assert_eq(perfrec_pdreader__open(out, &ro, &r), 0);
	cr_assert_eq(perfrec_pdreader__verify(r), 0, "verify: %s", perfrec_pdreader__error(r, NULL));
	cr_assert_eq(perfrec_pdreader__stats(r)->nr_records, cut_rec);
	cr_assert_eq(perfrec_pdreader__nr_attrs(r), 2);
	{
		const struct perfrec_pdreader_attr *ra0 = perfrec_pdreader__attr(r, 0), *ra1 = perfrec_pdreader__attr(r, 1);

		cr_assert_eq(memcmp(&ra0->attr, &a0, sizeof(a0)), 0);
		cr_assert_eq(memcmp(&ra1->attr, &a1, sizeof(a1)), 0);
		cr_assert_eq(ra0->nr_ids, 2);
		cr_assert_eq(ra1->nr_ids, 2);
		cr_assert_eq(memcmp(ra0->ids, ids0, sizeof(ids0)), 0);
		cr_assert_eq(memcmp(ra1->ids, ids1, sizeof(ids1)), 0);
		cr_assert_str_eq(ra0->name, "cpu-clock");
		cr_assert_str_eq(ra1->name, "dummy");
	}
	/* Byte for byte, the whole records before the cut and nothing else. */
	while ((ret = perfrec_pdreader__next(r, &rec, &off)) > 0) {
		cr_assert_leq(got + rec->size, keep);
		cr_assert_eq(memcmp(rec, rs.buf + got, rec->size), 0, "record at data byte %zu", got);
		got += rec->size;
	}
	cr_assert_eq(ret, 0);
	cr_assert_eq(got, keep);

	cr_assert_eq(perfrec_pdreader__feature(r, PERFREC_FEAT_HOSTNAME, &body, &body_len), 0);
	cr_assert_eq(perfrec_pdreader__feature(r, PERFREC_FEAT_BUILD_ID, &body, &body_len), 0);
	cr_assert_not_null(memmem(body, body_len, build_id, sizeof(build_id)), "worker's build id in BUILD_ID");
	cr_assert_not_null(memmem(body, body_len, "/usr/bin/worker", 15));
	{
		char text[256];

		cr_assert_gt(perfrec_pdreader__feature_text(r, PERFREC_FEAT_SAMPLE_TIME, text, sizeof(text)), 0);
		cr_assert_eq(perfrec_pdreader__feature(r, PERFREC_FEAT_SAMPLE_TIME, &body, &body_len), 0);
		cr_assert_eq(body_len, 16);
		cr_assert_eq(((const uint64_t *)body)[0], FIRST_TIME + 2, "first sample's time");
		/* The last whole sample before the cut. */
		for (size_t i = cut_rec; i-- > 0;) {
			const struct perf_event_header *hh = (const void *)(rs.buf + rs.starts[i]);

			if (hh->type == PERF_RECORD_SAMPLE) {
				cr_assert_eq(((const uint64_t *)body)[1], ((const uint64_t *)(hh + 1))[3]);
				break;
			}
		}
	}
	cr_assert_eq(perfrec_pdreader__feature(r, PERFREC_FEAT_CLOCK_DATA, NULL, NULL), -ENOENT,
		     "no wall-clock reference is known for a .tmp");
	cr_assert_eq(perfrec_pdreader__feature(r, PERFREC_FEAT_CLOCKID, NULL, NULL), 0);
	perfrec_pdreader__free(r);
	free(rs.buf);
	free(rs.starts);
	rm_dir(dir);
}

Test(recover, records_beyond_a_stale_checkpoint_count)
{
	/* Whole records past the checkpointed data.size count; a lost name comes from the attr. */
	struct perf_event_attr a0 = make_attr(PERF_COUNT_SW_TASK_CLOCK);
	const uint64_t id = 77;
	struct perfrec_recover_stats st;
	struct perfrec_pdwriter *w;
	struct perfrec_pdreader *r;
	struct perfrec_pdreader_opts ro = { .sz = sizeof(ro) };
	unsigned char one[128];
	char *dir = tmp_dir(), final[256], tmp[300], out[300];
	size_t n;

	snprintf(final, sizeof(final), "%s/x.data", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", final);
	snprintf(out, sizeof(out), "%s/x.out", dir);
	cr_assert_eq(perfrec_pdwriter__create(final, &w), 0);
	cr_assert_eq(perfrec_pdwriter__add_attr(w, &a0, &id, 1, NULL), 0);
	n = make_sample(one, id, 1, 5);
	cr_assert_eq(perfrec_pdwriter__write(w, one, n), 0);
	cr_assert_eq(perfrec_pdwriter__checkpoint(w), 0);
	/* Three more whole records after the checkpoint, appended straight to the file. */
	for (int i = 0; i < 3; i++) {
		n = make_sample(one, id, 2 + i, 6 + i);
		cr_assert_eq(pwrite(perfrec_pdwriter__fd(w), one, n, file_size(tmp)), (ssize_t)n);
	}
	perfrec_pdwriter__free(w, false);

	cr_assert_eq(perfrec_recover__file(tmp, out, NULL, &st), 0);
	cr_assert_eq(st.records, 4);
	cr_assert_eq(st.samples, 4);
	cr_assert_eq(st.dropped_bytes, 0);
	cr_assert_eq(perfrec_pdreader__open(out, &ro, &r), 0);
	cr_assert_eq(perfrec_pdreader__verify(r), 0, "verify: %s", perfrec_pdreader__error(r, NULL));
	cr_assert_eq(perfrec_pdreader__stats(r)->nr_samples, 4);
	cr_assert_str_eq(perfrec_pdreader__attr(r, 0)->name, "task-clock");
	perfrec_pdreader__free(r);
	rm_dir(dir);
}

Test(recover, a_bad_record_ends_the_copy_and_the_output_still_verifies)
{
	struct perf_event_attr a0 = make_attr(PERF_COUNT_SW_CPU_CLOCK);
	const uint64_t id = 5;
	struct perfrec_recover_stats st;
	struct perfrec_pdwriter *w;
	struct perfrec_pdreader *r;
	struct perfrec_pdreader_opts ro = { .sz = sizeof(ro) };
	unsigned char one[128];
	char *dir = tmp_dir(), final[256], tmp[300], out[300];
	size_t n;

	snprintf(final, sizeof(final), "%s/y.data", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", final);
	snprintf(out, sizeof(out), "%s/y.out", dir);
	cr_assert_eq(perfrec_pdwriter__create(final, &w), 0);
	cr_assert_eq(perfrec_pdwriter__add_attr(w, &a0, &id, 1, "cpu-clock"), 0);
	for (int i = 0; i < 2; i++) {
		n = make_sample(one, id, 1, 5 + i);
		cr_assert_eq(perfrec_pdwriter__write(w, one, n), 0);
	}
	n = make_sample(one, 999, 1, 9); /* a whole record with an id no attr has */
	cr_assert_eq(perfrec_pdwriter__write(w, one, n), 0);
	n = make_sample(one, id, 1, 10);
	cr_assert_eq(perfrec_pdwriter__write(w, one, n), 0);
	cr_assert_eq(perfrec_pdwriter__checkpoint(w), 0);
	perfrec_pdwriter__free(w, false);

	cr_assert_eq(perfrec_recover__file(tmp, out, NULL, &st), 0);
	cr_assert_eq(st.records, 2);
	cr_assert_eq(st.dropped_bytes, 2 * n);
	cr_assert_eq(perfrec_pdreader__open(out, &ro, &r), 0);
	cr_assert_eq(perfrec_pdreader__verify(r), 0, "verify: %s", perfrec_pdreader__error(r, NULL));
	perfrec_pdreader__free(r);
	rm_dir(dir);
}

struct bad_case {
	const char *what;
	int kind; /* 0 garbage, 1 empty, 2 header only, 3 missing, 4 header cut short */
	int want; /* 0: any negative errno */
};

static void make_bad(const struct bad_case *c, const char *dir, char *path, size_t sz)
{
	struct perfrec_pdwriter *w;
	char final[256];
	int fd;

	snprintf(path, sz, "%s/bad.data.tmp", dir);
	switch (c->kind) {
	case 0: {
		unsigned char junk[8192];
		uint32_t x = 12345;

		for (size_t i = 0; i < sizeof(junk); i++) {
			x = x * 1103515245 + 12345;
			junk[i] = (unsigned char)(x >> 16);
		}
		/* Even with the right magic the rest is nonsense. */
		memcpy(junk, "PERFILE2", 8);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		cr_assert_geq(fd, 0);
		cr_assert_eq(write(fd, junk, sizeof(junk)), (ssize_t)sizeof(junk));
		close(fd);
		break;
	}
	case 1:
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		cr_assert_geq(fd, 0);
		close(fd);
		break;
	case 2:
	case 4:
		snprintf(final, sizeof(final), "%s/bad.data", dir);
		cr_assert_eq(perfrec_pdwriter__create(final, &w), 0);
		perfrec_pdwriter__free(w, false);
		if (c->kind == 4)
			cr_assert_eq(truncate(path, 40), 0);
		break;
	case 3:
		break;
	}
}

Test(recover, unusable_sources_fail_cleanly_and_write_nothing)
{
	static const struct bad_case cases[] = {
		{ "random bytes after the magic", 0, 0 },
		{ "empty file", 1, -EBADMSG },
		{ "header only, no attrs (crash before the first data)", 2, -EBADMSG },
		{ "missing file", 3, -ENOENT },
		{ "header cut short", 4, -EBADMSG },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *dir = tmp_dir(), src[300], out[300];
		int ret;

		make_bad(&cases[i], dir, src, sizeof(src));
		snprintf(out, sizeof(out), "%s/out.data", dir);
		ret = perfrec_recover__file(src, out, NULL, NULL);
		if (cases[i].want)
			cr_expect_eq(ret, cases[i].want, "%s: got %d", cases[i].what, ret);
		else
			cr_expect_lt(ret, 0, "%s: got %d", cases[i].what, ret);
		cr_expect_neq(access(out, F_OK), 0, "%s: no output", cases[i].what);
		strcat(out, ".tmp");
		cr_expect_neq(access(out, F_OK), 0, "%s: no output tmp left", cases[i].what);
		rm_dir(dir);
	}
}

/* No "@dst.recovering-*" (or other stray file) beside the output: only @keep. */
static void expect_dir_holds(const char *dir, const char *const *keep, size_t nr_keep)
{
	char cmd[512], line[512];
	size_t n = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "ls -1 '%s'", dir);
	f = popen(cmd, "r");
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		bool known = false;

		line[strcspn(line, "\n")] = 0;
		for (size_t i = 0; i < nr_keep; i++)
			known |= !strcmp(line, keep[i]);
		cr_expect(known, "unexpected file %s/%s", dir, line);
		n++;
	}
	pclose(f);
	cr_expect_eq(n, nr_keep, "%zu files in %s, want %zu", n, dir, nr_keep);
}

Test(recover, a_tmp_killed_before_its_first_record_gives_enodata_and_no_file)
{
	/*
	 * A kill within the first second leaves header and attrs (424 bytes
	 * for perfrecd's two events) and maybe a cut record: recovering that
	 * published a file with data size 0, which perf refuses.
	 */
	struct perf_event_attr a0 = make_attr(PERF_COUNT_SW_CPU_CLOCK), a1 = make_attr(PERF_COUNT_SW_DUMMY);
	const uint64_t ids0[] = { 11, 12 }, ids1[] = { 13, 14 };
	static const char *const only_tmp[] = { "x.data.tmp" };
	struct perfrec_recover_stats st = { .records = 12345 };
	struct perfrec_pdwriter *w;
	unsigned char one[128];
	char *dir = tmp_dir(), final[256], tmp[300], out[300];
	off_t attrs_end;

	snprintf(final, sizeof(final), "%s/x.data", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", final);
	cr_assert_eq(perfrec_pdwriter__create(final, &w), 0);
	cr_assert_eq(perfrec_pdwriter__add_attr(w, &a0, ids0, 2, "cpu-clock"), 0);
	cr_assert_eq(perfrec_pdwriter__add_attr(w, &a1, ids1, 2, "dummy"), 0);
	cr_assert_eq(perfrec_pdwriter__checkpoint(w), 0);
	perfrec_pdwriter__free(w, false);
	attrs_end = file_size(tmp);
	cr_assert_gt(attrs_end, (off_t)sizeof(struct perfrec_file_header), "the .tmp holds its attrs");

	for (int cut = 0; cut < 2; cut++) {
		if (cut) {
			/* Then half of a first record reached the disk. */
			int fd = open(tmp, O_WRONLY | O_APPEND | O_CLOEXEC);

			cr_assert_geq(fd, 0);
			cr_assert_eq(write(fd, one, make_sample(one, 11, 1, 5) / 2), 28);
			close(fd);
		}
		/* Both the default name and the one the .tmp was heading for. */
		for (int named = 0; named < 2; named++) {
			snprintf(out, sizeof(out), named ? "%s/x.data" : "%s/x-recovered.data", dir);
			cr_expect_eq(perfrec_recover__file(tmp, out, NULL, &st), -ENODATA, "cut %d, %s", cut, out);
			cr_expect_eq(st.records, 12345, "stats only on success");
			expect_dir_holds(dir, only_tmp, 1);
		}
	}
	rm_dir(dir);
}

Test(recover, into_the_name_the_tmp_was_heading_for)
{
	/* `perfrecctl recover X.data.tmp -o X.data`: X.data.tmp is the source, not a temp file. */
	struct perf_event_attr a0 = make_attr(PERF_COUNT_SW_CPU_CLOCK);
	static const char *const both[] = { "z.data", "z.data.tmp" };
	const uint64_t id = 5;
	struct perfrec_pdreader_opts ro = { .sz = sizeof(ro) };
	struct perfrec_recover_stats st;
	struct perfrec_pdwriter *w;
	struct perfrec_pdreader *r;
	unsigned char one[128];
	char *dir = tmp_dir(), final[256], tmp[300];
	off_t tmp_size;

	snprintf(final, sizeof(final), "%s/z.data", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", final);
	cr_assert_eq(perfrec_pdwriter__create(final, &w), 0);
	cr_assert_eq(perfrec_pdwriter__add_attr(w, &a0, &id, 1, "cpu-clock"), 0);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(perfrec_pdwriter__write(w, one, make_sample(one, id, 1 + i, 5 + i)), 0);
	cr_assert_eq(perfrec_pdwriter__checkpoint(w), 0);
	perfrec_pdwriter__free(w, false);
	tmp_size = file_size(tmp);

	cr_assert_eq(perfrec_recover__file(tmp, final, NULL, &st), 0);
	cr_expect_eq(st.records, 3);
	cr_expect_eq(file_size(tmp), tmp_size, "the source is left alone");
	expect_dir_holds(dir, both, 2);
	cr_assert_eq(perfrec_pdreader__open(final, &ro, &r), 0);
	cr_expect_eq(perfrec_pdreader__verify(r), 0, "verify: %s", perfrec_pdreader__error(r, NULL));
	cr_expect_eq(perfrec_pdreader__stats(r)->nr_samples, 3);
	perfrec_pdreader__free(r);

	/* Again, over the file it made: replaced, the same records. */
	cr_assert_eq(perfrec_recover__file(tmp, final, NULL, &st), 0);
	cr_expect_eq(st.records, 3);
	expect_dir_holds(dir, both, 2);
	rm_dir(dir);
}

/*
 * Records the old walk let through because it checked only type and size
 * class, on which perf script stops: the copy must end before each, so the
 * output verifies and perf reads all of it.
 */
Test(recover, stops_before_records_perf_cannot_process)
{
	static const struct {
		const char *what;
		uint32_t type;     /* a whole sample retyped to this */
		bool comm_no_nul;  /* or a COMM whose comm fills it without a NUL */
	} cases[] = {
		{ "ID_INDEX whose count runs past it", PERFREC_RECORD_ID_INDEX, false },
		{ "THREAD_MAP whose entries run past it", PERFREC_RECORD_THREAD_MAP, false },
		{ "STAT_ROUND (perf script crashes)", PERFREC_RECORD_STAT_ROUND, false },
		{ "AUXTRACE without AUXTRACE_INFO", PERFREC_RECORD_AUXTRACE, false },
		{ "COMPRESSED2, unknown to perf 6.1", PERFREC_RECORD_COMPRESSED2, false },
		{ "COMM without a NUL-terminated comm", 0, true },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct perf_event_attr a0 = make_attr(PERF_COUNT_SW_CPU_CLOCK);
		const uint64_t id = 5;
		struct perfrec_pdreader_opts ro = { .sz = sizeof(ro) };
		struct perfrec_recover_stats st;
		struct perfrec_pdwriter *w;
		struct perfrec_pdreader *r;
		unsigned char one[128];
		char *dir = tmp_dir(), final[256], tmp[300], out[300];
		size_t n;

		snprintf(final, sizeof(final), "%s/y.data", dir);
		snprintf(tmp, sizeof(tmp), "%s.tmp", final);
		snprintf(out, sizeof(out), "%s/y.out", dir);
		cr_assert_eq(perfrec_pdwriter__create(final, &w), 0);
		cr_assert_eq(perfrec_pdwriter__add_attr(w, &a0, &id, 1, "cpu-clock"), 0);
		for (int k = 0; k < 2; k++) {
			n = make_sample(one, id, 1, 5 + k);
			cr_assert_eq(perfrec_pdwriter__write(w, one, n), 0);
		}
		if (cases[i].comm_no_nul) {
			n = make_comm(one, id, "0123456789abcde", 8);
			memset(one + 16, 'x', 16);
		} else {
			n = make_sample(one, id, 1, 8);
			memcpy(one, &cases[i].type, 4);
		}
		cr_assert_eq(perfrec_pdwriter__write(w, one, n), 0);
		n = make_sample(one, id, 1, 10);
		cr_assert_eq(perfrec_pdwriter__write(w, one, n), 0);
		cr_assert_eq(perfrec_pdwriter__checkpoint(w), 0);
		perfrec_pdwriter__free(w, false);

		cr_assert_eq(perfrec_recover__file(tmp, out, NULL, &st), 0, "%s", cases[i].what);
		cr_expect_eq(st.records, 2, "%s: %llu records copied", cases[i].what, (unsigned long long)st.records);
		cr_assert_eq(perfrec_pdreader__open(out, &ro, &r), 0);
		cr_expect_eq(perfrec_pdreader__verify(r), 0, "%s: verify: %s", cases[i].what, perfrec_pdreader__error(r, NULL));
		perfrec_pdreader__free(r);
		rm_dir(dir);
	}
}
