// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The recorder's accounting on a full disk, on a real recorder (cpu-clock
 * on CPU 0 with DWARF stacks, raw or unwound by the sink's worker with
 * unwind=host; skipped where events cannot be opened).  The disk is made
 * full with RLIMIT_FSIZE (writes past the limit fail with EFBIG, as a full
 * disk's with ENOSPC) and the free-space floor (min-free) is forced by
 * raising it past any disk, so every step comes in the order the test
 * chooses.  Whatever the order, the daemon's totals and each manifest must
 * say what the files hold: each sample is either in a file or counted
 * lost, and reported there in a PERF_RECORD_LOST.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <json-c/json.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <perfrec/pdreader.h>

#include "recorder.h"
#include "recorder-busy.h"

static char dir[] = "/tmp/test-recorder-full-disk.XXXXXX";
static struct config cfg;
static struct recorder rec;
static bool opened;
static struct rlimit fsize0;
static pid_t children[200];
static size_t nr_children;

static void set(const char *section, const char *key, const char *value)
{
	char err[256] = "";

	cr_assert_eq(config_set(&cfg, section, key, value, err, sizeof(err)), 0, "%s", err);
}

static void open_recorder(const char *callchain, const char *unwind)
{
	cpu_set_t cpus;

	cr_assert_not_null(mkdtemp(dir));
	config_init(&cfg);
	set("output", "directory", dir);
	set("output", "max-bytes", "0");
	set("output", "min-free", "0");
	/*
	 * Plain records: the byte budgets below (a synthesis that does not fit
	 * the writer's buffer, a 64 KiB disk) are sized for them.  A full disk
	 * under the default compression is test-defaults' (e2e).
	 */
	set("output", "compress", "0");
	set("record", "frequency", "4000");
	set("record", "cpus", "0");
	set("record", "callchain", callchain);
	set("record", "unwind", unwind);
	if (geteuid() != 0)
		cr_skip_test("needs root for system-wide perf_event_open");
	/* The samples come from this thread, on the one CPU recorded. */
	CPU_ZERO(&cpus);
	CPU_SET(0, &cpus);
	cr_assert_eq(sched_setaffinity(0, sizeof(cpus), &cpus), 0);
	if (recorder_open(&rec, &cfg, 0, NULL) < 0)
		cr_skip_test("cannot open cpu-clock with DWARF stacks on CPU 0 here");
	opened = true;
	cr_assert_eq(pipeline_unwound(rec.pipe, PIPELINE_FILE), !strcmp(unwind, "host"),
		     "unwind=%s, and the file %s behind the unwinder", unwind,
		     pipeline_unwound(rec.pipe, PIPELINE_FILE) ? "sits" : "does not sit");
	cr_assert_eq(recorder_enable(&rec), 0);
	cr_assert_eq(getrlimit(RLIMIT_FSIZE, &fsize0), 0);
	/* Writes past the limit fail with EFBIG rather than kill the process. */
	signal(SIGXFSZ, SIG_IGN);
}

static void teardown(void)
{
	char cmd[128];

	for (size_t i = 0; i < nr_children; i++) {
		kill(children[i], SIGKILL);
		waitpid(children[i], NULL, 0);
	}
	setrlimit(RLIMIT_FSIZE, &fsize0);
	if (opened)
		recorder_close(&rec);
	config_exit(&cfg);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	(void)!system(cmd);
}

static void busy(int ms)
{
	busy_draining(&rec, ms);
}

/* A disk that takes no more than @bytes of any file (RLIM_INFINITY: no limit). */
static void disk_limit(rlim_t bytes)
{
	struct rlimit l = { .rlim_cur = bytes, .rlim_max = fsize0.rlim_max };

	if (bytes > fsize0.rlim_max)
		l.rlim_cur = fsize0.rlim_max;
	cr_assert_eq(setrlimit(RLIMIT_FSIZE, &l), 0);
}

static uint64_t json_u64(struct json_object *o, const char *key)
{
	struct json_object *v;

	cr_assert(json_object_object_get_ex(o, key, &v), "manifest has no \"%s\"", key);
	return (uint64_t)json_object_get_int64(v);
}

struct held {
	uint64_t samples, lost, dropped;
	int files;
};

/* Every published file read back: each agrees with its manifest; their sums. */
static struct held files_hold(void)
{
	struct held h = { 0 };
	struct dirent *e;
	DIR *d = opendir(dir);

	cr_assert_not_null(d);
	while ((e = readdir(d))) {
		const struct perfrec_pdreader_stats *st;
		struct perfrec_pdreader *r;
		struct json_object *m;
		size_t n = strlen(e->d_name);
		char path[512];
		uint64_t lost;

		cr_assert(n < 4 || strcmp(e->d_name + n - 4, ".tmp"), "%s left unpublished", e->d_name);
		if (n < 5 || strcmp(e->d_name + n - 5, ".data"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		cr_assert_eq(perfrec_pdreader__open(path, NULL, &r), 0);
		cr_assert_eq(perfrec_pdreader__verify(r), 0, "%s does not verify: %s", path,
			     perfrec_pdreader__error(r, NULL));
		st = perfrec_pdreader__stats(r);
		lost = st->lost + st->lost_samples;
		snprintf(path, sizeof(path), "%s/%s.json", dir, e->d_name);
		m = json_object_from_file(path);
		cr_assert_not_null(m, "%s: no manifest", path);
		cr_expect_eq(json_u64(m, "samples"), st->nr_samples, "%s: the manifest says %llu samples, the file holds %llu",
			     e->d_name, (unsigned long long)json_u64(m, "samples"), (unsigned long long)st->nr_samples);
		cr_expect_eq(json_u64(m, "lost"), lost, "%s: the manifest says %llu lost, the file holds %llu",
			     e->d_name, (unsigned long long)json_u64(m, "lost"), (unsigned long long)lost);
		h.samples += st->nr_samples;
		h.lost += lost;
		h.dropped += json_u64(m, "dropped");
		h.files++;
		json_object_put(m);
		perfrec_pdreader__free(r);
	}
	closedir(d);
	return h;
}

static void totals(uint64_t *ret_samples, uint64_t *ret_lost)
{
	*ret_samples = *ret_lost = 0;
	for (size_t i = 0; i < rec.nr_rings; i++) {
		*ret_samples += rec.fsink.total[i].samples;
		*ret_lost += rec.fsink.total[i].lost + rec.fsink.total[i].lost_samples;
	}
}

TestSuite(recorder_full_disk, .fini = teardown);

/* The daemon's totals against what the files hold (files_hold()). */
static void check_totals(void)
{
	uint64_t samples, lost;
	struct held h = files_hold();

	totals(&samples, &lost);
	cr_log_info("files: %llu samples, %llu lost (%llu refused by the disk); daemon: %llu samples, %llu lost",
		    (unsigned long long)h.samples, (unsigned long long)h.lost, (unsigned long long)h.dropped,
		    (unsigned long long)samples, (unsigned long long)lost);
	cr_assert_gt(h.files, 0);
	cr_assert_gt(h.dropped, 0, "no manifest counts samples the disk refused");
	cr_assert_eq(samples, h.samples, "the daemon counted %llu samples, the files hold %llu",
		     (unsigned long long)samples, (unsigned long long)h.samples);
	cr_assert_eq(lost, h.lost, "the daemon counted %llu lost, the files report %llu",
		     (unsigned long long)lost, (unsigned long long)h.lost);
}

/*
 * unwind=host, in the order that lost counts: refusals of what the
 * unwinding stage hands on (a checkpoint syncs it), then of what the
 * draining thread refuses (below min-free), then space returns.
 */
Test(recorder_full_disk, refusals_of_the_worker_then_of_the_drain_are_all_counted_once)
{
	struct unwind_sink_stats st;
	char *tmp = NULL;

	open_recorder("dwarf", "host");
	cr_assert_eq(recorder_start_file(&rec, NULL), 0);
	busy(300);
	/*
	 * The disk fills: the worker's writes are refused once its buffer must
	 * go out.  Samples come as fast as this CPU is given to the test, so
	 * until that has happened (bounded), not for a fixed time.
	 */
	disk_limit(64 << 10);
	for (int i = 0; i < 100 && !rec.fsink.dropped_bytes; i++) {
		busy(100);
		/* A checkpoint syncs the worker: what it could not write is settled. */
		(void)recorder_checkpoint(&rec, &tmp);
		free(tmp);
		tmp = NULL;
	}
	cr_assert_gt(rec.fsink.dropped_bytes, 0, "no write of the unwound records was refused");
	cr_assert_lt(recorder_checkpoint(&rec, &tmp), 0, "a checkpoint succeeded on a full disk");
	free(tmp);
	/* Below the floor: the draining thread refuses what it drains, the file stays. */
	cfg.min_free = UINT64_MAX;
	recorder_maybe_checkpoint(&rec, now_usec());
	cr_assert(rec.below_floor, "min-free did not apply");
	busy(300);
	/* Space returns. */
	cfg.min_free = 0;
	disk_limit(RLIM_INFINITY);
	busy(150); /* past the floor's measuring interval */
	recorder_maybe_checkpoint(&rec, now_usec());
	cr_assert_not(rec.below_floor);
	busy(200);
	cr_assert(recorder_unwind_stats(&rec, &st));
	cr_assert_gt(st.unwinder.samples, 0, "the worker unwound nothing");
	cr_assert_eq(recorder_finish_file(&rec, NULL), 0);
	check_totals();
}

/*
 * A rotation on the full disk: the old file stalls, the new one cannot
 * start (its synthesis does not fit), and what the rings gave it while it
 * was synthesized goes down with it.  Space returns: a file starts, the
 * stalled one is published.
 */
static void start_fails_on_a_full_disk(const char *callchain, const char *unwind)
{
	/*
	 * Processes enough that a file's synthesized state (their maps) does
	 * not fit the writer's buffer: its synthesis needs the disk.
	 */
	for (nr_children = 0; nr_children < sizeof(children) / sizeof(children[0]); nr_children++) {
		pid_t p = fork();

		cr_assert_geq(p, 0);
		if (p == 0) {
			pause();
			_exit(0);
		}
		children[nr_children] = p;
	}
	open_recorder(callchain, unwind);
	cr_assert_eq(recorder_start_file(&rec, NULL), 0);
	busy(300);
	disk_limit(64 << 10);
	busy(100);
	recorder_rotate(&rec, NULL);
	cr_assert(rec.have_stalled, "the file the disk cut short did not stall");
	cr_assert_not(rec.have_file, "a file started on a full disk");
	busy(200);
	disk_limit(RLIM_INFINITY);
	cr_assert_eq(recorder_start_file(&rec, NULL), 0);
	busy(200);
	/* (publishes the stalled file too) */
	cr_assert_eq(recorder_finish_file(&rec, NULL), 0);
	cr_assert_not(rec.have_stalled, "the stalled file was not published once space returned");
	check_totals();
}

/*
 * Written by the draining thread: the samples drained while the state is
 * synthesized (small, with frame-pointer chains) go into the writer's
 * buffer, accepted, before the state needs the disk.
 */
Test(recorder_full_disk, a_file_that_cannot_start_loses_what_it_was_given)
{
	start_fails_on_a_full_disk("yes", "file");
}

/* Unwound: they wait for the worker, which finds no file. */
Test(recorder_full_disk, a_file_that_cannot_start_loses_what_it_was_given_unwound)
{
	start_fails_on_a_full_disk("dwarf", "host");
}
