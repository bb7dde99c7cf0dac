// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * `perfrecctl cut` and `ls` while perfrecd rotates and retention removes
 * (views/cut.c and window.c, tools/ls.c and cut-cmd.c): what the daemon
 * does between the listing of a directory and the reading of its files is
 * done here, deterministically, by the stand-in for the daemon's Snapshot
 * call, which cut makes exactly there.  A cut either holds every sample
 * its files held in the window, or fails saying what is missing; `ls`
 * never calls a file a live writer holds a leftover of an earlier boot.
 *
 * Files are written as perfrecd writes them: NAME.data.tmp through
 * perfrec_pdwriter__create() (its lock held while "the daemon" writes
 * it), checkpointed, finished with its clock data and published by
 * rename.  Sample times are on CLOCK_MONOTONIC around now, so a .tmp
 * without clock data is placed as a live one is.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <perfrec/pdwriter.h>

#include "cut.h"
#include "perfrecctl.h"
#include "window.h"

#define S 1000000000ULL
#define MS 1000000ULL
#define SAMPLE_TYPE (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | \
		     PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD)
#define ID 7

static char dir[] = "/tmp/test-cut-race-XXXXXX";
static char sock_path[96];
static int sock_fd = -1;
/* The clocks when the test began: wall = monotonic + OFF. */
static uint64_t W, M;

/* What "the daemon" does when cut asks for its snapshot: write it into @fd. */
static void (*on_snapshot)(int fd);

/* perfrecctl's usage.c, ctl.c and fetch.c, as far as cut-cmd.c and ls.c call them. */
int perfrecctl_usage(const char *name)
{
	(void)name;
	return EXIT_USAGE;
}
const char *perfrecctl_socket_path(void)
{
	return sock_path;
}
int perfrecctl_snapshot_into(int fd, uint64_t *ret_samples)
{
	(void)ret_samples;
	if (!on_snapshot)
		return 3;
	on_snapshot(fd);
	return 0;
}
char *perfrecctl_recordings_dir(const char *cmd)
{
	(void)cmd;
	return window_default_dir();
}
bool perfrecctl_is_bucket_opt(const char *arg)
{
	return !strcmp(arg, "--bucket");
}
int perfrecctl_fetch_window(const char *cmd, int argc, char **argv, uint64_t from, uint64_t to, const char *d,
			    bool buildids, size_t *ret_nr)
{
	(void)cmd, (void)argc, (void)argv, (void)from, (void)to, (void)d, (void)buildids, (void)ret_nr;
	return EXIT_USAGE;
}
bool perfrecctl_json_output(void)
{
	return false;
}
int cmd_bucket_ls(int argc, char **argv)
{
	(void)argc, (void)argv;
	return EXIT_USAGE;
}

static uint64_t now_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * S + (uint64_t)ts.tv_nsec;
}

static void setup(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	cr_assert_not_null(mkdtemp(strcpy(dir, "/tmp/test-cut-race-XXXXXX")));
	/* Something answers at the socket path: cut then asks it for the live part. */
	snprintf(sock_path, sizeof(sock_path), "%s/sock", dir);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
	sock_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(sock_fd, 0);
	cr_assert_eq(bind(sock_fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	M = now_ns(CLOCK_MONOTONIC);
	W = now_ns(CLOCK_REALTIME);
	on_snapshot = NULL;
}

static void teardown(void)
{
	char cmd[80];

	close(sock_fd);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_expect_eq(system(cmd), 0);
}

TestSuite(race, .init = setup, .fini = teardown);

/* A file as perfrecd names it: its start (wall) in the name, then its number. */
struct dfile {
	char *path; /* NAME.data */
	struct perfrec_pdwriter *w;
	uint64_t wall0, clk0;
};

static void add_attr(struct perfrec_pdwriter *w)
{
	struct perf_event_attr a;
	uint64_t id = ID;

	memset(&a, 0, sizeof(a));
	a.size = 128;
	a.type = PERF_TYPE_SOFTWARE;
	a.sample_type = SAMPLE_TYPE;
	a.sample_id_all = 1;
	a.use_clockid = 1;
	a.clockid = CLOCK_MONOTONIC;
	a.sample_period = 100000;
	cr_assert_eq(perfrec_pdwriter__add_attr(w, &a, &id, 1, "cpu-clock"), 0);
}

/* Samples every 10 ms of [@t0, @t1) on the sample clock. */
static size_t put_samples(struct perfrec_pdwriter *w, uint64_t t0, uint64_t t1)
{
	size_t n = 0;

	for (uint64_t t = t0; t < t1; t += 10 * MS, n++) {
		uint64_t body[6] = { ID, 0x1000 + n, 4242 | (4242ULL << 32), t, 1, 100000 };
		struct perf_event_header h = { .type = PERF_RECORD_SAMPLE, .misc = PERF_RECORD_MISC_USER,
					       .size = sizeof(h) + sizeof(body) };
		unsigned char buf[sizeof(h) + sizeof(body)];

		memcpy(buf, &h, sizeof(h));
		memcpy(buf + sizeof(h), body, sizeof(body));
		cr_assert_eq(perfrec_pdwriter__write(w, buf, sizeof(buf)), 0);
	}
	return n;
}

/* Begin file @seq at wall @wall0 (sample clock @clk0): NAME.data.tmp, held by its writer. */
static void begin(struct dfile *f, uint64_t wall0, uint64_t clk0, int seq)
{
	char stamp[48];

	window_name_stamp(wall0, stamp, sizeof(stamp));
	f->wall0 = wall0;
	f->clk0 = clk0;
	cr_assert_neq(asprintf(&f->path, "%s/perfrec-host%s%06d.data", dir, stamp, seq), -1);
	cr_assert_eq(perfrec_pdwriter__create(f->path, &f->w), 0);
	add_attr(f->w);
}

static void set_clock(struct perfrec_pdwriter *w, uint64_t wall0, uint64_t clk0)
{
	struct { uint32_t version, clockid; uint64_t wall, clk; } cd = { 1, CLOCK_MONOTONIC, wall0, clk0 };

	cr_assert_eq(perfrec_pdwriter__set_feature(w, PERFREC_FEAT_CLOCK_DATA, &cd, sizeof(cd)), 0);
}

/* Finish and publish @f (NAME.data.tmp -> NAME.data), and let go of it. */
static void publish(struct dfile *f)
{
	set_clock(f->w, f->wall0, f->clk0);
	cr_assert_eq(perfrec_pdwriter__finish(f->w), 0);
	cr_assert_eq(perfrec_pdwriter__publish(f->w), 0);
	perfrec_pdwriter__free(f->w, false);
	f->w = NULL;
}

static void end(struct dfile *f)
{
	perfrec_pdwriter__free(f->w, false);
	free(f->path);
}

/* A snapshot of a file begun at @wall0/@clk0 holding samples [@t0, @t1), into @fd. */
static void write_snapshot(int fd, uint64_t wall0, uint64_t clk0, uint64_t t0, uint64_t t1)
{
	struct perfrec_pdwriter_opts wo = { .sz = sizeof(wo) };
	struct perfrec_pdwriter *w;

	cr_assert_eq(perfrec_pdwriter__new(fd, &wo, &w), 0);
	add_attr(w);
	put_samples(w, t0, t1);
	set_clock(w, wall0, clk0);
	cr_assert_eq(perfrec_pdwriter__finish(w), 0);
	perfrec_pdwriter__free(w, false);
}

/* Run @argv[0] (cut or ls) on @args; its stderr and stdout into *ret_out (owned). */
static int run_cmd(int (*cmd)(int, char **), const char *const *args, char **ret_out)
{
	char *argv[16], path[80], *text;
	int argc = 0, saved[2], fd, rc;
	FILE *f;
	long n;

	for (size_t i = 0; args[i]; i++)
		argv[argc++] = (char *)args[i];
	snprintf(path, sizeof(path), "%s/output", dir);
	fflush(stdout);
	fflush(stderr);
	saved[0] = dup(1);
	saved[1] = dup(2);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	dup2(fd, 1);
	dup2(fd, 2);
	close(fd);
	rc = cmd(argc, argv);
	fflush(stdout);
	fflush(stderr);
	dup2(saved[0], 1);
	dup2(saved[1], 2);
	close(saved[0]);
	close(saved[1]);
	f = fopen(path, "re");
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	text = calloc(1, (size_t)n + 1);
	cr_assert_eq(fread(text, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	unlink(path);
	*ret_out = text;
	return rc;
}

static char *iso(uint64_t wall)
{
	static char buf[4][64];
	static int k;
	char *b = buf[k++ % 4];

	snprintf(b, 64, "@%llu.%09llu", (unsigned long long)(wall / S), (unsigned long long)(wall % S));
	return b;
}

/* The samples of the cut @path, and the smallest and largest time. */
static size_t count_samples(const char *path, uint64_t *ret_first, uint64_t *ret_last)
{
	struct perfrec_pdreader_opts o = { .sz = sizeof(o) };
	const struct perf_event_header *h;
	struct perfrec_pdreader *r;
	uint64_t off, t;
	size_t n = 0;

	cr_assert_eq(perfrec_pdreader__open(path, &o, &r), 0, "no output %s", path);
	cr_assert_eq(perfrec_pdreader__verify(r), 0, "%s", perfrec_pdreader__error(r, &off));
	perfrec_pdreader__rewind(r);
	*ret_first = UINT64_MAX;
	*ret_last = 0;
	while (perfrec_pdreader__next(r, &h, &off) > 0) {
		if (h->type != PERF_RECORD_SAMPLE || window_record_time(r, h, &t, NULL) <= 0)
			continue;
		n++;
		*ret_first = t < *ret_first ? t : *ret_first;
		*ret_last = t > *ret_last ? t : *ret_last;
	}
	perfrec_pdreader__free(r);
	return n;
}

/*
 * The recording of these tests, on the sample clock (M: when the test
 * began): A [M-6s, M-4s) published; B from M-4s, being written, on disk
 * up to M-3s.  C is the file after B.
 */
static struct dfile A, B, C;

static void record_a_and_b(void)
{
	begin(&A, W - 6 * S, M - 6 * S, 1);
	put_samples(A.w, M - 6 * S, M - 4 * S);
	publish(&A);
	begin(&B, W - 4 * S, M - 4 * S, 2);
	put_samples(B.w, M - 4 * S, M - 3 * S);
	cr_assert_eq(perfrec_pdwriter__checkpoint(B.w), 0);
}

/* The daemon rotates: B gets [M-3s, M-2s), is finished and published; C begins and takes [M-2s, M-1s). */
static void rotate(int fd)
{
	put_samples(B.w, M - 3 * S, M - 2 * S);
	publish(&B);
	begin(&C, W - 2 * S, M - 2 * S, 3);
	put_samples(C.w, M - 2 * S, M - 1 * S);
	cr_assert_eq(perfrec_pdwriter__checkpoint(C.w), 0);
	write_snapshot(fd, C.wall0, C.clk0, M - 2 * S, M - 1 * S);
}

/* The window [W-5s, now) of the recording, cut: 0 and all its samples, or a failure that says why. */
static void expect_whole_or_refused(int rc, const char *out, const char *path, size_t want, uint64_t first,
				    uint64_t last)
{
	uint64_t f, l;
	size_t n;

	if (rc != 0) {
		cr_expect(strstr(out, "nothing written"), "cut failed without saying what is missing:\n%s", out);
		return;
	}
	n = count_samples(path, &f, &l);
	cr_expect_eq(n, want, "the cut exited 0 with %zu samples of the %zu its files held:\n%s", n, want, out);
	cr_expect_eq(f, first, "first sample %llu, want %llu", (unsigned long long)f, (unsigned long long)first);
	cr_expect_eq(l, last, "last sample %llu, want %llu", (unsigned long long)l, (unsigned long long)last);
}

Test(race, a_rotation_between_listing_and_reading_loses_nothing)
{
	char out[96], *text;
	const char *args[] = { "cut", "--from", iso(W - 5 * S), "--to", "now", "-o", out, dir, NULL };
	int rc;

	snprintf(out, sizeof(out), "%s/cut.data", dir);
	record_a_and_b();
	on_snapshot = rotate;
	rc = run_cmd(cmd_cut, args, &text);
	/* A's last 100, B's 200, C's 100 (from the snapshot). */
	expect_whole_or_refused(rc, text, out, 400, M - 5 * S, M - 1 * S - 10 * MS);
	cr_expect_eq(rc, 0, "%s", text);
	free(text);
	end(&A);
	end(&B);
	end(&C);
}

/* Retention removes A while the cut runs: the listing holds it open, and reads it whole. */
static void remove_a(int fd)
{
	cr_assert_eq(unlink(A.path), 0);
	write_snapshot(fd, B.wall0, B.clk0, M - 4 * S, M - 2 * S);
}

Test(race, a_file_removed_after_listing_is_read_whole)
{
	char out[96], *text;
	const char *args[] = { "cut", "--from", iso(W - 5 * S), "--to", "now", "-o", out, dir, NULL };
	int rc;

	snprintf(out, sizeof(out), "%s/cut.data", dir);
	record_a_and_b();
	on_snapshot = remove_a;
	rc = run_cmd(cmd_cut, args, &text);
	expect_whole_or_refused(rc, text, out, 300, M - 5 * S, M - 2 * S - 10 * MS);
	cr_expect_eq(rc, 0, "%s", text);
	free(text);
	end(&A);
	end(&B);
}

/*
 * Between reading the directory and opening a name: a .tmp published is
 * found under its final name, a file removed is named with the span the
 * window misses, and the cut fails rather than show a hole.
 */
Test(race, names_gone_between_readdir_and_open)
{
	struct window_listing l = { 0 };
	char *tmpname, *aname;
	int dfd;

	record_a_and_b();
	put_samples(B.w, M - 3 * S, M - 2 * S);
	publish(&B);
	tmpname = strdup(strrchr(B.path, '/') + 1);
	tmpname = realloc(tmpname, strlen(tmpname) + 5);
	strcat(tmpname, ".tmp");
	aname = strrchr(A.path, '/') + 1;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert_geq(dfd, 0);
	/* Listed as B.data.tmp; published before it was opened. */
	cr_expect_eq(window_list_name(&l, dfd, dir, tmpname), 1);
	cr_assert_eq(l.nr, 1);
	cr_expect_str_eq(l.files[0].path, B.path);
	cr_expect(!l.files[0].in_progress && !l.files[0].error, "%s", l.files[0].error ?: "in progress");
	cr_expect_eq(l.files[0].samples, 200);
	/* Listed as A.data; removed by retention before it was opened. */
	cr_assert_eq(unlink(A.path), 0);
	cr_expect_eq(window_list_name(&l, dfd, dir, aname), 0);
	cr_assert_eq(l.nr_gone, 1);
	cr_expect_str_eq(l.gone[0].path, A.path);
	cr_expect_eq(l.gone[0].start_wall, W - 6 * S - (W - 6 * S) % MS);
	close(dfd);
	/* A window inside A: refused; one after A: A does not matter. */
	cr_expect_eq(cut_check_gone(&l, W - 5 * S, W), EXIT_BAD);
	cr_expect_eq(cut_check_gone(&l, W - 3 * S, W), 0);
	window_listing_free(&l);
	free(tmpname);
	end(&A);
	end(&B);
}

/*
 * ls while the daemon writes: samples newer than any clock ls read before
 * walking the file (it grew meanwhile) do not make the file a leftover of
 * an earlier boot while its writer holds it; a .tmp nobody holds with such
 * samples still is one.
 */
Test(race, ls_never_calls_the_file_being_written_a_leftover)
{
	const char *args[] = { "ls", dir, NULL };
	struct dfile f;
	char *text;

	begin(&f, W, M, 1);
	put_samples(f.w, M + 5 * S, M + 6 * S);
	cr_assert_eq(perfrec_pdwriter__checkpoint(f.w), 0);
	cr_assert_eq(run_cmd(cmd_ls, args, &text), 0);
	cr_expect(!strstr(text, "earlier boot") && !strstr(text, "unreadable"), "%s", text);
	cr_expect(strstr(text, "(being written)"), "%s", text);
	free(text);
	/* Its writer gone without publishing it: a leftover, and from another boot. */
	perfrec_pdwriter__free(f.w, false);
	f.w = NULL;
	cr_assert_eq(run_cmd(cmd_ls, args, &text), 0);
	cr_expect(strstr(text, "earlier boot"), "%s", text);
	free(text);
	end(&f);
}

/*
 * A window reaching back past the oldest file kept (retention removed the
 * older ones before the cut listed them) is cut from what is kept, and the
 * gap at its start is named as such, not as a time nothing was recorded.
 */
Test(race, a_gap_before_the_oldest_file_kept_is_named)
{
	char out[96], *text;
	const char *args[] = { "cut", "--no-live", "--from", iso(W - 8 * S), "--to", iso(W - 3 * S), "-o", out, dir,
			       NULL };
	uint64_t f, l;

	snprintf(out, sizeof(out), "%s/cut.data", dir);
	record_a_and_b();
	cr_assert_eq(run_cmd(cmd_cut, args, &text), 0, "%s", text);
	cr_expect(strstr(text, "gap in the window: ") && strstr(text, "before the oldest file kept (") &&
		  strstr(text, strrchr(A.path, '/') + 1), "%s", text);
	cr_expect_eq(count_samples(out, &f, &l), 300, "%s", text);
	free(text);
	end(&A);
	end(&B);
}

/*
 * A .tmp listed the moment perfrecd created it, its lock taken but no
 * header written yet: being written, empty, not unreadable.
 */
Test(race, ls_of_a_file_just_begun_is_not_unreadable)
{
	const char *args[] = { "ls", dir, NULL };
	char path[160], stamp[48], *text;
	int fd;

	window_name_stamp(W, stamp, sizeof(stamp));
	snprintf(path, sizeof(path), "%s/perfrec-host%s000001.data.tmp", dir, stamp);
	fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0640);
	cr_assert_geq(fd, 0);
	cr_assert_eq(flock(fd, LOCK_EX | LOCK_NB), 0);
	cr_assert_eq(run_cmd(cmd_ls, args, &text), 0);
	cr_expect(!strstr(text, "unreadable") && strstr(text, "(being written)"), "%s", text);
	free(text);
	close(fd);
}
