// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests for `perfrecctl cut` and the window module (views/cut.c
 * and window.c, tools/cut-cmd.c and ls.c) on files built with the writer, whose
 * every record time is known: the window's edges (from included, to not),
 * which side-band records stay, attrs merged across files or refused with
 * the difference named, files of another boot refused, samples two inputs
 * share kept once, build ids merged, the spans and SAMPLE_TIME features,
 * and an empty window; and `ls` of a flight-recorder snapshot whose spans
 * feature shows CPUs covering less than the others.  The daemon's snapshot
 * is stubbed out (--no-live).
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

#include <json-c/json.h>
#include <linux/bpf.h>
#include <perfrec/bpfmeta.h>
#include <perfrec/timespec.h>

#include <perfrec/event.h>
#include <perfrec/pdreader.h>
#include <perfrec/pdwriter.h>

#include "perfrecctl.h"
#include "unwind.h"
#include "window.h"

#include "cut-standins.h"

/* ls.c's, as far as the tests here reach. */
bool perfrecctl_json_output(void)
{
	return false;
}
int cmd_bucket_ls(int argc, char **argv)
{
	(void)argc, (void)argv;
	return EXIT_USAGE;
}

#define SAMPLE_TYPE (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | \
		     PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD)
#define S 1000000000ULL
/* File A's clock pair: wall 2001-09-09T01:46:40Z is sample clock 1000 s. */
#define W0 (1000000000ULL * S)
#define C0 (1000ULL * S)
#define PID 4242

static char dir[] = "/tmp/test-cut-XXXXXX";

static void setup(void)
{
	cr_assert_not_null(mkdtemp(strcpy(dir, "/tmp/test-cut-XXXXXX")));
}

static void teardown(void)
{
	char cmd[64];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_expect_eq(system(cmd), 0);
}

struct rec {
	int type; /* PERF_RECORD_SAMPLE or _COMM */
	uint64_t time;
	uint64_t ip;
};

struct file_spec {
	const char *name;
	uint64_t wall, clk;         /* clock pair */
	uint64_t freq;              /* 0: period 100000 */
	uint64_t sample_type;       /* 0: SAMPLE_TYPE */
	uint64_t id;
	const struct rec *recs;
	size_t nr_recs;
	const char *const *buildids; /* file names of BUILD_ID entries, NULL-terminated */
	const uint32_t *bpf_ids;     /* BPF programs (and BTF ids + 100) in its features, 0-terminated */
};

static size_t put_sample(unsigned char *p, const struct file_spec *fs, const struct rec *r)
{
	uint64_t body[6] = { fs->id, r->ip, (uint64_t)PID | ((uint64_t)PID << 32), r->time, 1, 100000 };
	struct perf_event_header h = { .type = PERF_RECORD_SAMPLE, .misc = PERF_RECORD_MISC_USER,
				       .size = sizeof(h) + sizeof(body) };

	memcpy(p, &h, sizeof(h));
	memcpy(p + sizeof(h), body, sizeof(body));
	return h.size;
}

static size_t put_comm(unsigned char *p, const struct file_spec *fs, const struct rec *r)
{
	struct perfrec_sample_id sid = { .pid = PID, .tid = PID, .time = r->time, .id = fs->id, .cpu = 1 };
	size_t tr = perfrec_sample_id__size(SAMPLE_TYPE);
	struct perf_event_header h = { .type = PERF_RECORD_COMM, .size = (uint16_t)(sizeof(h) + 8 + 16 + tr) };
	uint32_t pid = PID;

	memset(p, 0, h.size);
	memcpy(p, &h, sizeof(h));
	memcpy(p + 8, &pid, 4);
	memcpy(p + 12, &pid, 4);
	snprintf((char *)p + 16, 16, "c%llu", (unsigned long long)(r->ip));
	perfrec_sample_id__write(p + 8 + 8 + 16, SAMPLE_TYPE, &sid);
	return h.size;
}

static char *make_file(const struct file_spec *fs)
{
	struct perfrec_pdwriter_opts wo = { .sz = sizeof(wo), .owns_fd = true };
	struct { uint32_t version, clockid; uint64_t wall, clk; } cd = { 1, CLOCK_MONOTONIC, fs->wall, fs->clk };
	struct perf_event_attr a;
	struct perfrec_pdwriter *w;
	unsigned char buf[256], bids[1024];
	size_t nb = 0;
	char *path;
	int fd;

	cr_assert_neq(asprintf(&path, "%s/%s", dir, fs->name), -1);
	memset(&a, 0, sizeof(a));
	a.size = 128;
	a.type = PERF_TYPE_SOFTWARE;
	a.sample_type = fs->sample_type ? fs->sample_type : SAMPLE_TYPE;
	a.sample_id_all = 1;
	a.use_clockid = 1;
	a.clockid = CLOCK_MONOTONIC;
	a.freq = fs->freq != 0;
	a.sample_period = fs->freq ? fs->freq : 100000;
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	cr_assert_geq(fd, 0);
	cr_assert_eq(perfrec_pdwriter__new(fd, &wo, &w), 0);
	cr_assert_eq(perfrec_pdwriter__add_attr(w, &a, &fs->id, 1, "cpu-clock"), 0);
	for (size_t i = 0; i < fs->nr_recs; i++) {
		size_t n = fs->recs[i].type == PERF_RECORD_SAMPLE ? put_sample(buf, fs, &fs->recs[i])
								  : put_comm(buf, fs, &fs->recs[i]);

		cr_assert_eq(perfrec_pdwriter__write(w, buf, n), 0);
	}
	cr_assert_eq(perfrec_pdwriter__set_feature(w, PERFREC_FEAT_CLOCK_DATA, &cd, sizeof(cd)), 0);
	cr_assert_eq(perfrec_pdwriter__set_feature(w, PERFREC_FEAT_HOSTNAME, "\10\0\0\0host\0\0\0\0", 12), 0);
	for (size_t i = 0; fs->buildids && fs->buildids[i]; i++) {
		struct perf_event_header h = { .type = 0, .size = 8 + 4 + 24 + 20 };

		memset(bids + nb, 0, h.size);
		memcpy(bids + nb, &h, sizeof(h));
		snprintf((char *)bids + nb + 36, 20, "%s", fs->buildids[i]);
		nb += h.size;
	}
	if (nb)
		cr_assert_eq(perfrec_pdwriter__set_feature(w, PERFREC_FEAT_BUILD_ID, bids, nb), 0);
	if (fs->bpf_ids) {
		struct perfrec_bpfmeta *m;

		cr_assert_eq(perfrec_bpfmeta__new(&m), 0);
		for (size_t i = 0; fs->bpf_ids[i]; i++) {
			struct bpf_prog_info info = { .type = 1, .id = fs->bpf_ids[i] };

			snprintf(info.name, sizeof(info.name), "prog%u", fs->bpf_ids[i]);
			cr_assert_eq(perfrec_bpfmeta__add_prog_info(m, &info, sizeof(info), 0, NULL, 0), 0);
			cr_assert_eq(perfrec_bpfmeta__add_btf(m, fs->bpf_ids[i] + 100, "BTF!", 4), 0);
		}
		cr_assert_eq(perfrec_bpfmeta__add_features(m, w), 0);
		perfrec_bpfmeta__free(m);
	}
	cr_assert_eq(perfrec_pdwriter__finish(w), 0);
	perfrec_pdwriter__free(w, false);
	return path;
}

static char *iso(uint64_t wall)
{
	static char buf[4][64];
	static int k;
	char *b = buf[k++ % 4];

	cr_assert_gt(perfrec_timespec__format(wall, true, b, 64), 0);
	/* full nanoseconds: the format stops at milliseconds */
	snprintf(b + 20, 44, "%09lluZ", (unsigned long long)(wall % S));
	return b;
}

/* Run `cut` with @args; its stderr into *ret_err (owned). */
static int run_cut(char **ret_err, const char *const *args)
{
	char *argv[32] = { "cut", "--no-live" };
	char errpath[64], *text;
	int argc = 2, saved, fd, rc;
	FILE *f;
	long n;

	for (size_t i = 0; args[i]; i++)
		argv[argc++] = (char *)args[i];
	snprintf(errpath, sizeof(errpath), "%s/stderr", dir);
	fflush(stderr);
	saved = dup(2);
	fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	dup2(fd, 2);
	close(fd);
	rc = cmd_cut(argc, argv);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	f = fopen(errpath, "re");
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	text = calloc(1, (size_t)n + 1);
	cr_assert_eq(fread(text, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*ret_err = text;
	return rc;
}

struct seen {
	size_t samples, comms;
	uint64_t times[16];
	uint64_t comm_times[16];
};

static struct perfrec_pdreader *read_out(const char *path, struct seen *s)
{
	struct perfrec_pdreader_opts o = { .sz = sizeof(o) };
	const struct perf_event_header *h;
	struct perfrec_pdreader *r;
	uint64_t off, t;

	memset(s, 0, sizeof(*s));
	cr_assert_eq(perfrec_pdreader__open(path, &o, &r), 0, "no output %s", path);
	cr_assert_eq(perfrec_pdreader__verify(r), 0, "%s", perfrec_pdreader__error(r, &off));
	perfrec_pdreader__rewind(r);
	while (perfrec_pdreader__next(r, &h, &off) > 0) {
		if (window_record_time(r, h, &t, NULL) <= 0)
			continue;
		if (h->type == PERF_RECORD_SAMPLE && s->samples < 16)
			s->times[s->samples++] = t;
		else if (h->type == PERF_RECORD_COMM && s->comms < 16)
			s->comm_times[s->comms++] = t;
	}
	return r;
}

TestSuite(cut, .init = setup, .fini = teardown);

Test(cut, keeps_samples_in_from_to_and_side_band_up_to_the_end)
{
	static const struct rec recs[] = {
		{ PERF_RECORD_COMM, C0 + S / 2, 1 },      { PERF_RECORD_SAMPLE, C0 + 1 * S, 0x10 },
		{ PERF_RECORD_COMM, C0 + 3 * S / 2, 2 },  { PERF_RECORD_SAMPLE, C0 + 2 * S, 0x20 },
		{ PERF_RECORD_SAMPLE, C0 + 3 * S, 0x30 }, { PERF_RECORD_SAMPLE, C0 + 4 * S, 0x40 },
		{ PERF_RECORD_COMM, C0 + 9 * S / 2, 3 },  { PERF_RECORD_SAMPLE, C0 + 5 * S, 0x50 },
	};
	struct file_spec a = { "a.data", W0, C0, 99, 0, 7, recs, 8, NULL, NULL };
	char *pa = make_file(&a), *err, out[80];
	const char *args[] = { "--from", iso(W0 + 2 * S), "--to", iso(W0 + 4 * S), "-o", out, pa, NULL };
	const struct perfrec_spans_feature *sf;
	const struct perfrec_cpu_span *sp;
	struct perfrec_pdreader *r;
	const uint64_t *st;
	const void *d;
	struct seen s;
	size_t len;

	snprintf(out, sizeof(out), "%s/out.data", dir);
	cr_assert_eq(run_cut(&err, args), 0, "%s", err);
	r = read_out(out, &s);
	/* [from, to): the sample at "to" is not in it */
	cr_expect_eq(s.samples, 2);
	cr_expect_eq(s.times[0], C0 + 2 * S);
	cr_expect_eq(s.times[1], C0 + 3 * S);
	/* side-band before the window stays, after it goes */
	cr_expect_eq(s.comms, 2);
	cr_expect_eq(s.comm_times[1], C0 + 3 * S / 2);
	cr_assert_eq(perfrec_pdreader__feature(r, PERFREC_FEAT_SAMPLE_TIME, &d, &len), 0);
	st = d;
	cr_expect_eq(st[0], C0 + 2 * S);
	cr_expect_eq(st[1], C0 + 3 * S);
	cr_assert_eq(perfrec_pdreader__feature(r, PERFREC_FEAT_SPANS, &d, &len), 0);
	sf = d;
	sp = (const void *)(sf + 1);
	cr_assert_eq(sf->nr, 1);
	cr_expect_eq(sf->window_ns, 2 * S);
	cr_expect_eq(sp->cpu, 1);
	cr_expect_eq(sp->samples, 2);
	cr_expect_eq(sp->first_time, C0 + 2 * S);
	cr_expect_eq(sp->last_time, C0 + 3 * S);
	cr_expect_eq(perfrec_pdreader__feature(r, PERFREC_FEAT_HOSTNAME, &d, &len), 0);
	cr_expect(strstr(err, "wrote ") && strstr(err, ": 2 samples, 0 lost, from 1 file"), "%s", err);
	perfrec_pdreader__free(r);
	free(err);
	free(pa);
}

Test(cut, joins_files_of_one_recording_by_their_own_clocks)
{
	/* B started 10 s later on the same clock; its samples at 1011..1013 s. */
	static const struct rec ra[] = { { PERF_RECORD_SAMPLE, C0 + 1 * S, 1 }, { PERF_RECORD_SAMPLE, C0 + 2 * S, 2 } };
	static const struct rec rb[] = { { PERF_RECORD_SAMPLE, C0 + 11 * S, 3 }, { PERF_RECORD_SAMPLE, C0 + 12 * S, 4 } };
	static const char *const ba[] = { "/bin/a", NULL }, *const bb[] = { "/bin/a", "/bin/b", NULL };
	/* The frequency changed live between the files: the same event (id 7). */
	struct file_spec a = { "a.data", W0, C0, 99, 0, 7, ra, 2, ba, NULL };
	struct file_spec b = { "b.data", W0 + 10 * S + 123, C0 + 10 * S + 123, 49, 0, 7, rb, 2, bb, NULL };
	char *pa = make_file(&a), *pb = make_file(&b), *err, out[80], **files = NULL;
	const char *args[] = { "--from", iso(W0 + 2 * S), "--to", iso(W0 + 12 * S), "-o", out, dir, NULL };
	const char *paths[] = { dir };
	struct perfrec_pdreader *r;
	const void *d;
	struct seen s;
	size_t len, n = 0;

	char junk[80];
	FILE *jf;

	/* An unreadable file among them is named and skipped; the cut goes ahead. */
	snprintf(junk, sizeof(junk), "%s/c.data", dir);
	jf = fopen(junk, "we");
	fputs("not perf data at all", jf);
	fclose(jf);
	snprintf(out, sizeof(out), "%s/out.dat", dir); /* not .data: not an input of the next cut */
	cr_assert_eq(run_cut(&err, args), 0, "%s", err);
	cr_expect(strstr(err, "skipped ") && strstr(err, "/c.data: not perf data"), "%s", err);
	r = read_out(out, &s);
	cr_expect_eq(s.samples, 2);
	cr_expect_eq(s.times[0], C0 + 2 * S);
	cr_expect_eq(s.times[1], C0 + 11 * S);
	cr_expect_eq(perfrec_pdreader__nr_attrs(r), 1);
	cr_expect(strstr(err, "kept as one event"), "%s", err);
	cr_expect(strstr(err, "used a.data: 1 samples") && strstr(err, "used b.data: 1 samples"), "%s", err);
	/* the hole between A's last sample (1002 s) and B's start is named */
	cr_expect(strstr(err, "gap in the window: "), "%s", err);
	/* build ids: the union, each once */
	cr_assert_eq(perfrec_pdreader__feature(r, PERFREC_FEAT_BUILD_ID, &d, &len), 0);
	cr_expect_eq(len, 2 * 56);
	perfrec_pdreader__free(r);
	free(err);

	/* window_files(): the files a window needs, oldest first */
	cr_assert_eq(window_files(paths, 1, W0 + 11 * S, W0 + 20 * S, &files, &n), 0);
	cr_assert_eq(n, 1);
	cr_expect_str_eq(files[0], pb);
	window_strv_free(files);
	cr_assert_eq(window_files(paths, 1, W0, W0 + 20 * S, &files, &n), 0);
	cr_assert_eq(n, 2);
	cr_expect_str_eq(files[0], pa);
	cr_expect_str_eq(files[1], pb);
	cr_expect_null(files[2]);
	window_strv_free(files);
	cr_assert_eq(window_files(paths, 1, W0 + 30 * S, W0 + 40 * S, &files, &n), 0);
	cr_expect_eq(n, 0);
	window_strv_free(files);
	free(pa);
	free(pb);
}

Test(cut, refuses_files_that_cannot_share_a_header)
{
	static const struct rec ra[] = { { PERF_RECORD_SAMPLE, C0 + 1 * S, 1 } };
	static const struct rec rb[] = { { PERF_RECORD_SAMPLE, C0 + 11 * S, 3 } };
	struct file_spec a = { "a.data", W0, C0, 99, 0, 7, ra, 1, NULL, NULL };
	/* the same event id with another sample layout */
	struct file_spec b = { "b.data", W0 + 10 * S, C0 + 10 * S, 99, SAMPLE_TYPE | PERF_SAMPLE_ADDR, 7, rb, 1, NULL, NULL };
	char *pa = make_file(&a), *pb = make_file(&b), *err, out[80];
	const char *args[] = { "--from", iso(W0), "--to", iso(W0 + 20 * S), "-o", out, pa, pb, NULL };

	snprintf(out, sizeof(out), "%s/out.data", dir);
	cr_expect_eq(run_cut(&err, args), EXIT_BAD);
	cr_expect(strstr(err, "differs from") && strstr(err, "sample_type"), "%s", err);
	cr_expect_neq(access(out, F_OK), 0, "output left behind");
	free(err);
	free(pa);
	free(pb);
}

Test(cut, refuses_files_of_another_boot)
{
	static const struct rec ra[] = { { PERF_RECORD_SAMPLE, C0 + 1 * S, 1 } };
	static const struct rec rb[] = { { PERF_RECORD_SAMPLE, 6 * S, 3 } };
	struct file_spec a = { "a.data", W0, C0, 99, 0, 7, ra, 1, NULL, NULL };
	/* 10 s later, but its clock restarted near zero: a reboot */
	struct file_spec b = { "b.data", W0 + 10 * S, 5 * S, 99, 0, 8, rb, 1, NULL, NULL };
	char *pa = make_file(&a), *pb = make_file(&b), *err, out[80];
	const char *args[] = { "--from", iso(W0), "--to", iso(W0 + 20 * S), "-o", out, pa, pb, NULL };

	snprintf(out, sizeof(out), "%s/out.data", dir);
	cr_expect_eq(run_cut(&err, args), EXIT_BAD);
	cr_expect(strstr(err, "another boot"), "%s", err);
	cr_expect_neq(access(out, F_OK), 0, "output left behind");
	free(err);
	free(pa);
	free(pb);
}

Test(cut, samples_two_inputs_share_are_kept_once)
{
	static const struct rec ra[] = { { PERF_RECORD_SAMPLE, C0 + 1 * S, 1 }, { PERF_RECORD_SAMPLE, C0 + 2 * S, 2 } };
	/* a snapshot overlapping A, and one sample more */
	static const struct rec rb[] = { { PERF_RECORD_SAMPLE, C0 + 2 * S, 2 }, { PERF_RECORD_SAMPLE, C0 + 3 * S, 3 } };
	struct file_spec a = { "a.data", W0, C0, 99, 0, 7, ra, 2, NULL, NULL };
	struct file_spec b = { "b.data", W0 + S / 2, C0 + S / 2, 99, 0, 7, rb, 2, NULL, NULL };
	char *pa = make_file(&a), *pb = make_file(&b), *err, out[80];
	const char *args[] = { "--from", iso(W0), "--to", iso(W0 + 20 * S), "-o", out, pa, pb, NULL };
	struct seen s;

	snprintf(out, sizeof(out), "%s/out.data", dir);
	cr_assert_eq(run_cut(&err, args), 0, "%s", err);
	perfrec_pdreader__free(read_out(out, &s));
	cr_expect_eq(s.samples, 3);
	cr_expect(strstr(err, "1 samples found in two inputs were kept once"), "%s", err);
	free(err);
	free(pa);
	free(pb);
}

Test(cut, an_empty_window_says_what_the_files_hold)
{
	static const struct rec ra[] = { { PERF_RECORD_SAMPLE, C0 + 1 * S, 1 }, { PERF_RECORD_SAMPLE, C0 + 2 * S, 2 } };
	struct file_spec a = { "a.data", W0, C0, 99, 0, 7, ra, 2, NULL, NULL };
	char *pa = make_file(&a), *err, out[80];
	const char *args[] = { "--at", iso(W0 + 100 * S), "--around", "10s", "-o", out, pa, NULL };
	const char *bad[] = { "--from", "12:61", "--to", "now", "-o", out, pa, NULL };

	snprintf(out, sizeof(out), "%s/out.data", dir);
	cr_expect_eq(run_cut(&err, args), EXIT_BAD);
	cr_expect(strstr(err, "nothing recorded between 2001-09-09T01:48:10.000Z and 2001-09-09T01:48:30.000Z"),
		  "%s", err);
	cr_expect(strstr(err, "the files hold 2001-09-09T01:46:40.000Z to 2001-09-09T01:46:42.000Z"), "%s", err);
	cr_expect_neq(access(out, F_OK), 0, "output left behind");
	free(err);
	cr_expect_eq(run_cut(&err, bad), EXIT_USAGE);
	cr_expect(strstr(err, "--from: '12:61': minute 61 is out of range"), "%s", err);
	free(err);
	free(pa);
}

/* Run `ls` with @args; its stdout into *ret_out (owned). */
static int run_ls(char **ret_out, const char *const *args)
{
	char *argv[16] = { "ls" }, path[64], *text;
	int argc = 1, saved, fd, rc;
	FILE *f;
	long n;

	for (size_t i = 0; args[i]; i++)
		argv[argc++] = (char *)args[i];
	snprintf(path, sizeof(path), "%s/stdout", dir);
	fflush(stdout);
	saved = dup(1);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	dup2(fd, 1);
	close(fd);
	rc = cmd_ls(argc, argv);
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	f = fopen(path, "re");
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	text = calloc(1, (size_t)n + 1);
	cr_assert_eq(fread(text, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*ret_out = text;
	return rc;
}

Test(cut, ls_shows_the_cpus_a_snapshot_covers_less_of)
{
	static const struct rec ra[] = { { PERF_RECORD_SAMPLE, C0 + 1 * S, 1 }, { PERF_RECORD_SAMPLE, C0 + 9 * S, 2 } };
	struct file_spec a = { "snap.data", W0, C0, 99, 0, 7, ra, 2, NULL, NULL };
	struct {
		struct perfrec_spans_feature h;
		struct perfrec_cpu_span c[3];
	} sp = { { .nr = 3, .window_ns = 10 * S, .snapshot_time = C0 + 10 * S },
		 { { .cpu = 0, .first_time = C0 + 1 * S, .last_time = C0 + 9 * S, .samples = 800 },
		   { .cpu = 1, .first_time = C0 + 6 * S, .last_time = C0 + 9 * S, .samples = 300 },
		   { .cpu = 2, .samples = 0 } } };
	struct perfrec_pdwriter_opts wo = { .sz = sizeof(wo), .owns_fd = true };
	struct perfrec_pdreader_opts ro = { .sz = sizeof(ro) };
	const char *text_args[] = { dir, NULL }, *json_args[] = { "--json", dir, NULL };
	char *pa = make_file(&a), *out, *b;
	struct perfrec_pdreader *r;
	struct perfrec_pdwriter *w;
	const struct perf_event_header *h;
	uint64_t off;
	int fd;

	/* Add the spans feature to a copy: rewrite the file through reader and writer. */
	cr_assert_eq(perfrec_pdreader__open(pa, &ro, &r), 0);
	cr_assert_neq(asprintf(&b, "%s/flight.data", dir), -1);
	fd = open(b, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	cr_assert_eq(perfrec_pdwriter__new(fd, &wo, &w), 0);
	cr_assert_eq(perfrec_pdwriter__add_attr(w, &perfrec_pdreader__attr(r, 0)->attr, perfrec_pdreader__attr(r, 0)->ids,
						 1, "cpu-clock"), 0);
	while (perfrec_pdreader__next(r, &h, &off) > 0)
		cr_assert_eq(perfrec_pdwriter__write(w, h, h->size), 0);
	for (int f = 1; f < PERFREC_FEAT_BITS; f++) {
		const void *d;
		size_t len;

		if (f != PERFREC_FEAT_EVENT_DESC && perfrec_pdreader__feature(r, f, &d, &len) == 0)
			cr_assert_eq(perfrec_pdwriter__set_feature(w, f, d, len), 0);
	}
	cr_assert_eq(perfrec_pdwriter__set_feature(w, PERFREC_FEAT_SPANS, &sp, sizeof(sp)), 0);
	cr_assert_eq(perfrec_pdwriter__finish(w), 0);
	perfrec_pdwriter__free(w, false);
	perfrec_pdreader__free(r);
	unlink(pa);

	cr_assert_eq(run_ls(&out, text_args), 0);
	cr_expect(strstr(out, " flight "), "%s", out);
	cr_expect(strstr(out, "   cpu 1: covers only 2001-09-09T01:46:46.000Z .. 2001-09-09T01:46:49.000Z\n"), "%s", out);
	cr_expect(strstr(out, "   cpu 2: no samples in this file\n"), "%s", out);
	cr_expect_null(strstr(out, "cpu 0:"), "%s", out);
	free(out);
	cr_assert_eq(run_ls(&out, json_args), 0);
	{
		json_object *root = json_tokener_parse(out), *files, *f0, *cpus, *c1, *v;

		cr_assert_not_null(root, "%s", out);
		cr_assert(json_object_object_get_ex(root, "files", &files));
		f0 = json_object_array_get_idx(files, 0);
		cr_expect_str_eq(json_object_get_string(json_object_object_get(f0, "mode")), "flight");
		cr_assert(json_object_object_get_ex(f0, "cpus", &cpus));
		cr_assert_eq(json_object_array_length(cpus), 3);
		c1 = json_object_array_get_idx(cpus, 1);
		cr_expect(json_object_object_get_ex(c1, "short", &v) && json_object_get_boolean(v));
		cr_expect_str_eq(json_object_get_string(json_object_object_get(c1, "start")), "2001-09-09T01:46:46.000Z");
		cr_expect(!json_object_get_boolean(json_object_object_get(json_object_array_get_idx(cpus, 0), "short")));
		json_object_put(root);
	}
	free(out);
	free(b);
	free(pa);
}

static int note_prog(void *ctx, const struct perfrec_bpf_prog_desc *p)
{
	uint32_t *seen = ctx;

	seen[p->id < 8 ? p->id : 0]++;
	return 0;
}

Test(cut, bpf_programs_of_every_file_are_named)
{
	static const struct rec ra[] = { { PERF_RECORD_SAMPLE, C0 + 1 * S, 1 } };
	static const struct rec rb[] = { { PERF_RECORD_SAMPLE, C0 + 11 * S, 3 } };
	/* program 1 was unloaded and program 3 loaded between the files */
	static const uint32_t pa_ids[] = { 1, 2, 0 }, pb_ids[] = { 2, 3, 0 };
	struct file_spec a = { "a.data", W0, C0, 99, 0, 7, ra, 1, NULL, pa_ids };
	struct file_spec b = { "b.data", W0 + 10 * S, C0 + 10 * S, 99, 0, 7, rb, 1, NULL, pb_ids };
	char *pa = make_file(&a), *pb = make_file(&b), *err, out[80];
	const char *args[] = { "--from", iso(W0), "--to", iso(W0 + 20 * S), "-o", out, pa, pb, NULL };
	struct perfrec_pdreader *r;
	uint32_t seen[8] = { 0 };
	const void *d;
	struct seen s;
	size_t len;

	snprintf(out, sizeof(out), "%s/out.data", dir);
	cr_assert_eq(run_cut(&err, args), 0, "%s", err);
	r = read_out(out, &s);
	cr_assert_eq(perfrec_pdreader__feature(r, PERFREC_FEAT_BPF_PROG_INFO, &d, &len), 0);
	cr_expect_eq(perfrec_bpfmeta__parse_prog_info(d, len, note_prog, seen), 3);
	cr_expect(seen[1] == 1 && seen[2] == 1 && seen[3] == 1, "programs seen: %u %u %u", seen[1], seen[2], seen[3]);
	cr_assert_eq(perfrec_pdreader__feature(r, PERFREC_FEAT_BPF_BTF, &d, &len), 0);
	cr_expect_eq(perfrec_bpfmeta__parse_btf(d, len, NULL, NULL), 3);
	perfrec_pdreader__free(r);
	free(err);
	free(pa);
	free(pb);
}
