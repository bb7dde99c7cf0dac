// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Tests of recorder_snapshot(), the call the control socket's Snapshot
 * makes, on a real recorder (cpu-clock on every CPU; skipped where events
 * cannot be opened): flight-mode snapshots into a file and into a pipe,
 * continuous mode with a history reaching back before the current file,
 * and continuous mode without one copying the file in progress.  Every
 * result is read back and checked by the library's reader.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <perfrec/pdreader.h>

#include "recorder.h"
#include "snapshot.h"
#include "recorder-busy.h"

static char dir[] = "/tmp/test-snapshot.XXXXXX";
static struct config cfg;
static struct recorder rec;

static void set(const char *section, const char *key, const char *value)
{
	char err[256] = "";

	cr_assert_eq(config_set(&cfg, section, key, value, err, sizeof(err)), 0, "%s", err);
}

static void open_recorder(const char *mode, const char *history)
{
	cr_assert_not_null(mkdtemp(dir));
	config_init(&cfg);
	set("output", "directory", dir);
	set("record", "frequency", "999");
	set("output", "mode", mode);
	if (history)
		set("output", "history", history);
	if (geteuid() != 0)
		cr_skip_test("needs root for system-wide perf_event_open");
	if (recorder_open(&rec, &cfg, 0, NULL) < 0)
		cr_skip_test("cannot open cpu-clock on every CPU here");
	cr_assert_eq(snapshot_open(&rec), 0);
	cr_assert_eq(recorder_enable(&rec), 0);
}

static void teardown(void)
{
	char cmd[128];

	snapshot_close(&rec);
	recorder_close(&rec);
	config_exit(&cfg);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	(void)!system(cmd);
}

static void busy(int ms)
{
	busy_draining(&rec, ms);
}

static int snapshot_file(const char *name, struct perfrec_pdreader **ret)
{
	char path[256];
	int fd, n;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	n = recorder_snapshot(&rec, fd);
	close(fd);
	cr_assert_gt(n, 0, "snapshot failed or empty: %d", n);
	cr_assert_eq(perfrec_pdreader__open(path, NULL, ret), 0);
	cr_assert_eq(perfrec_pdreader__verify(*ret), 0, "snapshot does not verify: %s",
		     perfrec_pdreader__error(*ret, NULL));
	cr_assert_eq(perfrec_pdreader__stats(*ret)->nr_samples, (uint64_t)n,
		     "returned %d samples, the file holds %llu", n,
		     (unsigned long long)perfrec_pdreader__stats(*ret)->nr_samples);
	return n;
}

TestSuite(snapshot, .fini = teardown);

Test(snapshot, flight_snapshot_into_a_file_has_spans_and_a_second_follows)
{
	struct perfrec_pdreader *r1, *r2;
	const struct perfrec_spans_feature *sf;
	const struct perfrec_cpu_span *cs;
	const void *data;
	size_t len;
	uint64_t last1;

	open_recorder("flight", "10s");
	busy(300);
	snapshot_file("a.data", &r1);
	cr_assert_eq(perfrec_pdreader__feature(r1, PERFREC_FEAT_SPANS, &data, &len), 0);
	sf = data;
	cr_assert_eq(sf->nr, rec.nr_rings);
	cr_assert_eq(len, sizeof(*sf) + sf->nr * sizeof(*cs));
	cr_assert_eq(sf->window_ns, 10000000000ULL);
	cs = (const struct perfrec_cpu_span *)(sf + 1);
	for (uint32_t i = 0; i < sf->nr; i++)
		if (cs[i].samples) {
			cr_assert_leq(cs[i].first_time, cs[i].last_time);
			cr_assert_leq(cs[i].last_time, sf->snapshot_time);
		}
	cr_assert(perfrec_pdreader__stats(r1)->has_time);
	last1 = perfrec_pdreader__stats(r1)->last_time;
	/* Flight mode writes no file of its own. */
	cr_assert_not(rec.have_file);

	busy(200);
	snapshot_file("b.data", &r2);
	cr_assert_gt(perfrec_pdreader__stats(r2)->last_time, last1, "the second snapshot reaches no later");
	cr_assert_leq(perfrec_pdreader__stats(r2)->first_time, perfrec_pdreader__stats(r1)->first_time + 1000000000ULL);
	perfrec_pdreader__free(r1);
	perfrec_pdreader__free(r2);
}

struct slurp {
	int fd;
	char *buf;
	size_t len;
};

static void *reader(void *arg)
{
	struct slurp *s = arg;
	char tmp[65536];
	ssize_t n;

	while ((n = read(s->fd, tmp, sizeof(tmp))) > 0) {
		s->buf = realloc(s->buf, s->len + (size_t)n);
		memcpy(s->buf + s->len, tmp, (size_t)n);
		s->len += (size_t)n;
	}
	return NULL;
}

Test(snapshot, flight_snapshot_into_a_pipe_is_a_pipe_mode_stream)
{
	struct slurp s = { 0 };
	struct perfrec_pdreader *r;
	pthread_t t;
	int p[2], n;

	open_recorder("flight", "10s");
	busy(200);
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	s.fd = p[0];
	cr_assert_eq(pthread_create(&t, NULL, reader, &s), 0);
	n = recorder_snapshot(&rec, p[1]);
	close(p[1]);
	pthread_join(t, NULL);
	close(p[0]);
	cr_assert_gt(n, 0);
	cr_assert_geq(s.len, 16);
	cr_assert_eq(perfrec_pdreader__open_mem(s.buf, s.len, NULL, &r), 0);
	cr_assert(perfrec_pdreader__is_pipe(r));
	cr_assert_eq(perfrec_pdreader__verify(r), 0, "%s", perfrec_pdreader__error(r, NULL));
	cr_assert_eq(perfrec_pdreader__stats(r)->nr_samples, (uint64_t)n);
	perfrec_pdreader__free(r);
	free(s.buf);
}

Test(snapshot, continuous_history_reaches_before_the_current_file)
{
	struct perfrec_pdreader *r;
	uint64_t file_start;

	open_recorder("continuous", "10s");
	cr_assert_eq(recorder_start_file(&rec, NULL), 0);
	busy(300);
	cr_assert_eq(recorder_rotate(&rec, NULL), 0);
	file_start = rec.cur.start_clock_ns;
	busy(100);
	snapshot_file("c.data", &r);
	cr_assert_lt(perfrec_pdreader__stats(r)->first_time, file_start,
		     "the snapshot starts at %llu, not before the current file (%llu)",
		     (unsigned long long)perfrec_pdreader__stats(r)->first_time,
		     (unsigned long long)file_start);
	cr_assert_eq(perfrec_pdreader__feature(r, PERFREC_FEAT_SPANS, &(const void *){ NULL }, &(size_t){ 0 }), 0);
	perfrec_pdreader__free(r);
	recorder_finish_file(&rec, NULL);
}

Test(snapshot, continuous_without_history_copies_the_file_in_progress)
{
	struct perfrec_pdreader *r;
	int n;

	open_recorder("continuous", NULL);
	cr_assert_not(snapshot_has_history(&rec));
	cr_assert_eq(recorder_start_file(&rec, NULL), 0);
	busy(300);
	n = snapshot_file("d.data", &r);
	/* Exactly what the file in progress holds after the snapshot's drain. */
	cr_assert_eq((uint64_t)n, rec.cur.f.samples);
	cr_assert_eq(perfrec_pdreader__feature(r, PERFREC_FEAT_HOSTNAME, &(const void *){ NULL }, &(size_t){ 0 }), 0);
	perfrec_pdreader__free(r);
	recorder_finish_file(&rec, NULL);
}

Test(snapshot, refuses_without_history_or_file)
{
	int fd;

	open_recorder("continuous", NULL);
	fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	cr_assert_eq(recorder_snapshot(&rec, fd), -ENODATA);
	close(fd);
}
