// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests for `perfrecctl cut --container/--pod/--unit` (views/cut.c,
 * tools/cut-cmd.c) on a file built with the writer: samples of a pod's
 * container, a docker container and a service, with the pod's CGROUP
 * record written after its first samples (as a reader sorting by time
 * still resolves them, and the recorder's rings can write them): each
 * selection keeps exactly its cgroup's samples, the side-band whole; a
 * selection nothing matches exits 1, says so and writes nothing.  The
 * daemon's snapshot is stubbed out (--no-live).
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

#include "perfrecctl.h"
#include "unwind.h"
#include "window.h"

#include "cut-standins.h"

#define ST (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | \
	    PERF_SAMPLE_CGROUP)
#define S 1000000000ULL
#define W0 (1000000000ULL * S)
#define C0 (1000ULL * S)
#define EV_ID 7

#define CRI "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define DOCKER "4f1c2a9e0b7d3c6a5e8f9012ab34cd56ef7890123456789abcdef0123456789a"
#define UID "1234abcd-5678-90ef-1234-567890abcdef"
#define POD_CG "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234abcd_5678_90ef_1234_567890abcdef" \
	       ".slice/cri-containerd-" CRI ".scope"

enum { CG_POD = 11, CG_DOCKER = 12, CG_NGINX = 13 };

static char dir[] = "/tmp/test-cut-cgroup-XXXXXX";

static void setup(void)
{
	cr_assert_not_null(mkdtemp(strcpy(dir, "/tmp/test-cut-cgroup-XXXXXX")));
}

static void teardown(void)
{
	char cmd[80];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_expect_eq(system(cmd), 0);
}

static void put_cgroup(struct perfrec_pdwriter *w, uint64_t id, const char *path, uint64_t t)
{
	uint64_t rec[64] = { 0 };
	struct perf_event_header *h = (struct perf_event_header *)rec;
	struct perfrec_sample_id sid = { .time = t, .id = EV_ID };
	size_t body = (sizeof(*h) + 8 + strlen(path) + 1 + 7) & ~(size_t)7;

	h->type = PERF_RECORD_CGROUP;
	memcpy(rec + 1, &id, 8);
	memcpy(rec + 2, path, strlen(path));
	perfrec_sample_id__write((char *)rec + body, ST, &sid);
	h->size = (uint16_t)(body + perfrec_sample_id__size(ST));
	cr_assert_eq(perfrec_pdwriter__write(w, rec, h->size), 0);
}

static void put_sample(struct perfrec_pdwriter *w, uint64_t t, uint64_t cgroup)
{
	/* id, ip, pid|tid, time, cpu|res, cgroup */
	uint64_t rec[7] = { 0, EV_ID, 0x1000, 42 | (uint64_t)42 << 32, t, 1, cgroup };
	struct perf_event_header *h = (struct perf_event_header *)rec;

	h->type = PERF_RECORD_SAMPLE;
	h->misc = PERF_RECORD_MISC_USER;
	h->size = sizeof(rec);
	cr_assert_eq(perfrec_pdwriter__write(w, rec, h->size), 0);
}

/* Pod samples at 1..3 s (its CGROUP record after the first), docker 4..5 s, nginx 6 s. */
static char *make_file(void)
{
	struct perfrec_pdwriter_opts wo = { .sz = sizeof(wo), .owns_fd = true };
	struct { uint32_t version, clockid; uint64_t wall, clk; } cd = { 1, CLOCK_MONOTONIC, W0, C0 };
	const uint64_t id = EV_ID;
	struct perf_event_attr a;
	struct perfrec_pdwriter *w;
	char *path;
	int fd;

	cr_assert_neq(asprintf(&path, "%s/a.data", dir), -1);
	memset(&a, 0, sizeof(a));
	a.size = 128;
	a.type = PERF_TYPE_SOFTWARE;
	a.sample_type = ST;
	a.sample_id_all = 1;
	a.use_clockid = 1;
	a.clockid = CLOCK_MONOTONIC;
	a.sample_period = 100000;
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(perfrec_pdwriter__new(fd, &wo, &w), 0);
	cr_assert_eq(perfrec_pdwriter__add_attr(w, &a, &id, 1, "cpu-clock"), 0);
	put_cgroup(w, CG_DOCKER, "/system.slice/docker-" DOCKER ".scope", C0);
	put_cgroup(w, CG_NGINX, "/system.slice/nginx.service", C0);
	put_sample(w, C0 + 1 * S, CG_POD);
	put_cgroup(w, CG_POD, POD_CG, C0);
	put_sample(w, C0 + 2 * S, CG_POD);
	put_sample(w, C0 + 3 * S, CG_POD);
	put_sample(w, C0 + 4 * S, CG_DOCKER);
	put_sample(w, C0 + 5 * S, CG_DOCKER);
	put_sample(w, C0 + 6 * S, CG_NGINX);
	cr_assert_eq(perfrec_pdwriter__set_feature(w, PERFREC_FEAT_CLOCK_DATA, &cd, sizeof(cd)), 0);
	cr_assert_eq(perfrec_pdwriter__finish(w), 0);
	perfrec_pdwriter__free(w, false);
	return path;
}

/* `cut --no-live --from W0 --to W0+10s @sel @val -o OUT FILE`: exit code, stderr into *ret_err. */
static int run_cut(const char *sel, const char *val, const char *out, const char *in, char **ret_err)
{
	char from[64], to[64], errpath[80];
	char *argv[] = { "cut", "--no-live", "--from", from, "--to", to, (char *)sel, (char *)val,
			 "-o", (char *)out, (char *)in, NULL };
	int saved, fd, rc;
	FILE *f;
	long n;

	/* W0 and W0 + 10 s */
	snprintf(from, sizeof(from), "2001-09-09T01:46:40Z");
	snprintf(to, sizeof(to), "2001-09-09T01:46:50Z");
	snprintf(errpath, sizeof(errpath), "%s/stderr", dir);
	fflush(stderr);
	saved = dup(2);
	fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	dup2(fd, 2);
	close(fd);
	rc = cmd_cut(11, argv);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	f = fopen(errpath, "re");
	cr_assert_not_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	*ret_err = calloc(1, (size_t)n + 1);
	cr_assert_eq(fread(*ret_err, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	return rc;
}

/* The sample times (in s after C0) and CGROUP records of @path. */
static void read_out(const char *path, char *times, size_t sz, size_t *ret_cgroups)
{
	struct perfrec_pdreader_opts o = { .sz = sizeof(o) };
	const struct perf_event_header *h;
	struct perfrec_pdreader *r;
	uint64_t off, t;
	size_t n = 0;

	times[0] = '\0';
	*ret_cgroups = 0;
	cr_assert_eq(perfrec_pdreader__open(path, &o, &r), 0, "no output %s", path);
	while (perfrec_pdreader__next(r, &h, &off) > 0) {
		if (h->type == PERF_RECORD_CGROUP)
			(*ret_cgroups)++;
		if (h->type == PERF_RECORD_SAMPLE && window_record_time(r, h, &t, NULL) > 0)
			n += (size_t)snprintf(times + n, sz - n, "%s%llu", n ? " " : "",
					      (unsigned long long)((t - C0) / S));
	}
	perfrec_pdreader__free(r);
}

TestSuite(cut_cgroup, .init = setup, .fini = teardown);

Test(cut_cgroup, each_selection_keeps_exactly_its_cgroups_samples)
{
	static const struct { const char *sel, *val, *times; } cases[] = {
		{ "--pod", UID, "1 2 3" },
		{ "--pod", "1234abcd_5678", "1 2 3" },
		{ "--container", CRI, "1 2 3" },
		{ "--container", "4f1c2a", "4 5" },
		{ "--unit", "nginx", "6" },
		{ "--unit", "system.slice", "4 5 6" },
		{ "--unit", "kubepods.slice", "1 2 3" },
	};
	char *in = make_file(), out[80], times[64], *err;
	size_t cgroups;

	snprintf(out, sizeof(out), "%s/out.data", dir);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		unlink(out);
		cr_assert_eq(run_cut(cases[i].sel, cases[i].val, out, in, &err), 0, "%s %s: %s", cases[i].sel,
			     cases[i].val, err);
		read_out(out, times, sizeof(times), &cgroups);
		cr_expect_str_eq(times, cases[i].times, "%s %s: samples at %s s, want %s", cases[i].sel, cases[i].val,
				 times, cases[i].times);
		cr_expect_eq(cgroups, 3, "%s %s: the side-band is kept whole", cases[i].sel, cases[i].val);
		free(err);
	}
	free(in);
}

Test(cut_cgroup, a_selection_nothing_matches_writes_nothing_and_says_so)
{
	char *in = make_file(), out[80], *err;
	struct stat st;

	snprintf(out, sizeof(out), "%s/none.data", dir);
	cr_expect_eq(run_cut("--container", "ffff", out, in, &err), EXIT_BAD);
	cr_expect(strstr(err, "none of the 6 samples"), "%s", err);
	cr_expect_neq(stat(out, &st), 0, "an output was written");
	free(err);
	free(in);
}
