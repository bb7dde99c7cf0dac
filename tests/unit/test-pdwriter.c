// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Tests of the PERFILE2 writer: a round trip through our reader (attrs, ids,
 * names, records written with write and writev, features, a checkpoint read
 * back as a partial file), the tmp-then-rename publication, -ENOSPC from a
 * full device, and perf itself (the real oracle) reading what we wrote.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <perfrec/event.h>
#include <perfrec/pdreader.h>
#include <perfrec/pdwriter.h>

#include "featbuf.h"

#define SAMPLE_TYPE (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | \
		     PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD)

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
	a.disabled = 1;
	return a;
}

/* A SAMPLE laid out for SAMPLE_TYPE; returns its size. */
static size_t make_sample(void *buf, uint64_t id, uint64_t ip, uint32_t pid, uint64_t time, uint32_t cpu)
{
	uint64_t body[6] = { id, ip, (uint64_t)pid | ((uint64_t)pid << 32), time, cpu, 100000 };
	struct perf_event_header h = { .type = PERF_RECORD_SAMPLE, .size = sizeof(h) + sizeof(body) };

	memcpy(buf, &h, sizeof(h));
	memcpy((char *)buf + sizeof(h), body, sizeof(body));
	return h.size;
}

/* A COMM with a sample_id trailer for SAMPLE_TYPE; returns its size. */
static size_t make_comm(void *buf, uint64_t id, uint32_t pid, const char *comm, uint64_t time)
{
	struct perfrec_sample_id sid = { .pid = pid, .tid = pid, .time = time, .id = id };
	size_t n = (strlen(comm) + 1 + 7) & ~(size_t)7;
	size_t tr = perfrec_sample_id__size(SAMPLE_TYPE);
	struct perf_event_header h = { .type = PERF_RECORD_COMM, .size = (uint16_t)(sizeof(h) + 8 + n + tr) };
	char *p = buf;

	memset(buf, 0, h.size);
	memcpy(p, &h, sizeof(h));
	memcpy(p + 8, &pid, 4);
	memcpy(p + 12, &pid, 4);
	memcpy(p + 16, comm, strlen(comm));
	perfrec_sample_id__write(p + 16 + n, SAMPLE_TYPE, &sid);
	return h.size;
}

static char *tmp_path(void)
{
	char *p = strdup("/tmp/test-pdwriter-XXXXXX");
	int fd = mkstemp(p);

	cr_assert_geq(fd, 0);
	close(fd);
	return p;
}

static int count_records(struct perfrec_pdreader *r, size_t *ret_bytes)
{
	const struct perf_event_header *rec;
	uint64_t off;
	int n = 0, ret;

	*ret_bytes = 0;
	while ((ret = perfrec_pdreader__next(r, &rec, &off)) > 0) {
		n++;
		*ret_bytes += rec->size;
	}
	cr_assert_eq(ret, 0, "next: %d %s", ret, perfrec_pdreader__error(r, NULL));
	return n;
}

Test(pdwriter, round_trip_through_reader_incl_checkpoint)
{
	struct perfrec_pdwriter_opts wo = { .sz = sizeof(wo), .owns_fd = true };
	struct perfrec_pdreader_opts ro = { .sz = sizeof(ro) };
	struct perf_event_attr a0 = make_attr(PERF_COUNT_SW_CPU_CLOCK), a1 = make_attr(PERF_COUNT_SW_DUMMY);
	const uint64_t ids0[] = { 11, 12 }, ids1[] = { 13 };
	unsigned char recs[4096], rec[256];
	struct perfrec_pdwriter *w;
	struct perfrec_pdreader *r;
	size_t len = 0, at_checkpoint, bytes, n;
	const struct perf_event_header *rec_p;
	struct featbuf fb;
	uint64_t nrcpus = 0x0000000200000004ULL, off;
	char text[256];
	char *path = tmp_path();
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	cr_assert_geq(fd, 0);
	cr_assert_eq(perfrec_pdwriter__new(fd, &wo, &w), 0);
	cr_assert_eq(perfrec_pdwriter__add_attr(w, &a0, ids0, 2, "cpu-clock"), 0);
	cr_assert_eq(perfrec_pdwriter__add_attr(w, &a1, ids1, 1, "dummy:u"), 0);

	/* COMM via write, then samples via writev (one iovec per record). */
	n = make_comm(rec, 13, 42, "worker", 1000);
	memcpy(recs + len, rec, n);
	len += n;
	cr_assert_eq(perfrec_pdwriter__write(w, rec, n), 0);
	cr_assert_eq(perfrec_pdwriter__add_attr(w, &a0, ids0, 0, "late"), -EBUSY);
	{
		struct iovec iov[3];
		unsigned char s[3][64];

		for (int i = 0; i < 3; i++) {
			iov[i].iov_base = s[i];
			iov[i].iov_len = make_sample(s[i], ids0[i % 2], 0x400000 + i, 42, 2000 + i, i % 2);
			memcpy(recs + len, s[i], iov[i].iov_len);
			len += iov[i].iov_len;
		}
		cr_assert_eq(perfrec_pdwriter__writev(w, iov, 3), 0);
	}
	cr_assert_eq(perfrec_pdwriter__data_size(w), len);
	cr_assert_eq(perfrec_pdwriter__checkpoint(w), 0);
	at_checkpoint = len;

	/* The checkpointed file is readable up to here and has no features. */
	cr_assert_eq(perfrec_pdreader__open(path, &ro, &r), 0);
	cr_expect_eq(perfrec_pdreader__header(r)->data.size, at_checkpoint);
	cr_expect_eq(perfrec_pdreader__header(r)->flags[0], 0);
	cr_expect_eq(perfrec_pdreader__verify(r), 0, "%s", perfrec_pdreader__error(r, NULL));
	cr_expect_eq(count_records(r, &bytes), 4);
	cr_expect_eq(bytes, at_checkpoint);
	perfrec_pdreader__free(r);

	for (int i = 0; i < 5; i++) {
		n = make_sample(rec, ids1[0], 0x500000 + i, 43, 3000 + i, 1);
		memcpy(recs + len, rec, n);
		len += n;
		cr_assert_eq(perfrec_pdwriter__write(w, rec, n), 0);
	}
	featbuf_init(&fb);
	featbuf_string(&fb, "testhost");
	cr_assert_eq(featbuf_err(&fb), 0);
	cr_assert_eq(perfrec_pdwriter__set_feature(w, PERFREC_FEAT_HOSTNAME, fb.buf, fb.len), 0);
	featbuf_exit(&fb);
	cr_assert_eq(perfrec_pdwriter__set_feature(w, PERFREC_FEAT_NRCPUS, &nrcpus, 8), 0);
	cr_assert_eq(perfrec_pdwriter__finish(w), 0);
	cr_expect_neq(perfrec_pdwriter__write(w, rec, n), 0, "writes after finish must fail");
	perfrec_pdwriter__free(w, false);

	cr_assert_eq(perfrec_pdreader__open(path, &ro, &r), 0);
	cr_assert_eq(perfrec_pdreader__verify(r), 0, "%s", perfrec_pdreader__error(r, NULL));
	cr_expect_eq(perfrec_pdreader__stats(r)->nr_samples, 8);
	cr_expect_eq(perfrec_pdreader__stats(r)->samples_per_attr[0], 3);
	cr_expect_eq(perfrec_pdreader__stats(r)->samples_per_attr[1], 5);
	cr_assert_eq(perfrec_pdreader__nr_attrs(r), 2);
	cr_expect_eq(memcmp(&perfrec_pdreader__attr(r, 0)->attr, &a0, sizeof(a0)), 0);
	cr_expect_eq(memcmp(&perfrec_pdreader__attr(r, 1)->attr, &a1, sizeof(a1)), 0);
	cr_assert_eq(perfrec_pdreader__attr(r, 0)->nr_ids, 2);
	cr_expect_eq(perfrec_pdreader__attr(r, 0)->ids[1], 12);
	cr_expect_eq(perfrec_pdreader__attr(r, 1)->ids[0], 13);
	cr_expect_str_eq(perfrec_pdreader__attr(r, 0)->name, "cpu-clock");
	cr_expect_str_eq(perfrec_pdreader__attr(r, 1)->name, "dummy:u");
	cr_expect_eq(perfrec_pdreader__attr_by_id(r, 13), perfrec_pdreader__attr(r, 1));
	cr_expect_null(perfrec_pdreader__attr_by_id(r, 14));
	cr_expect_eq(perfrec_pdreader__feature_text(r, PERFREC_FEAT_HOSTNAME, text, sizeof(text)), 8);
	cr_expect_str_eq(text, "testhost");
	cr_expect_gt(perfrec_pdreader__feature_text(r, PERFREC_FEAT_NRCPUS, text, sizeof(text)), 0);
	cr_expect_str_eq(text, "4 available, 2 online");
	cr_expect_eq(perfrec_pdreader__feature(r, PERFREC_FEAT_EVENT_DESC, NULL, NULL), 0);
	cr_expect_eq(perfrec_pdreader__feature(r, PERFREC_FEAT_CMDLINE, NULL, NULL), -ENOENT);
	cr_expect_eq(perfrec_pdreader__header(r)->data.size, len);
	cr_expect_eq(perfrec_pdreader__header(r)->data.offset % 8, 0);

	/* Records come back byte for byte, in order. */
	bytes = 0;
	while (perfrec_pdreader__next(r, &rec_p, &off) > 0) {
		cr_assert_leq(bytes + rec_p->size, len);
		cr_expect_eq(memcmp(rec_p, recs + bytes, rec_p->size), 0, "record at %zu differs", bytes);
		bytes += rec_p->size;
	}
	cr_expect_eq(bytes, len);
	perfrec_pdreader__free(r);
	unlink(path);
	free(path);
}

Test(pdwriter, large_writes_bypass_the_buffer_and_stay_in_order)
{
	struct perfrec_pdwriter_opts wo = { .sz = sizeof(wo), .owns_fd = true };
	struct perfrec_pdreader_opts ro = { .sz = sizeof(ro) };
	struct perf_event_attr a = make_attr(PERF_COUNT_SW_CPU_CLOCK);
	const uint64_t id = 7;
	const size_t per = 56, nr = 12000; /* 672000 bytes: more than the buffer */
	unsigned char *big = malloc(per * nr);
	struct perfrec_pdwriter *w;
	struct perfrec_pdreader *r;
	const struct perf_event_header *rec;
	char *path = tmp_path();
	uint64_t off, expect_time = 0;
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	size_t i = 0, done = 0;

	cr_assert(big);
	for (i = 0; i < nr; i++)
		cr_assert_eq(make_sample(big + i * per, id, 0x1000 + i, 1, i, 0), per);
	cr_assert_eq(perfrec_pdwriter__new(fd, &wo, &w), 0);
	cr_assert_eq(perfrec_pdwriter__add_attr(w, &a, &id, 1, "cpu-clock"), 0);
	/* Small write, one huge writev of two segments, small ones, a medium one, small ones. */
	cr_assert_eq(perfrec_pdwriter__write(w, big, per * 10), 0);
	done = 10;
	{
		struct iovec iov[2] = {
			{ big + done * per, per * 3000 },
			{ big + (done + 3000) * per, per * 5000 },
		};

		cr_assert_eq(perfrec_pdwriter__writev(w, iov, 2), 0);
		done += 8000;
	}
	/* Buffered bytes, then a medium write (22400 bytes) that goes behind them. */
	for (; done < 8100; done++)
		cr_assert_eq(perfrec_pdwriter__write(w, big + done * per, per), 0);
	cr_assert_eq(perfrec_pdwriter__write(w, big + done * per, per * 400), 0);
	done += 400;
	for (; done < nr; done++)
		cr_assert_eq(perfrec_pdwriter__write(w, big + done * per, per), 0);
	cr_assert_eq(perfrec_pdwriter__data_size(w), per * nr);
	cr_assert_eq(perfrec_pdwriter__finish(w), 0);
	perfrec_pdwriter__free(w, false);

	cr_assert_eq(perfrec_pdreader__open(path, &ro, &r), 0);
	cr_assert_eq(perfrec_pdreader__verify(r), 0, "%s", perfrec_pdreader__error(r, NULL));
	i = 0;
	while (perfrec_pdreader__next(r, &rec, &off) > 0) {
		struct perfrec_sample s;

		cr_assert_eq(perfrec_sample__parse(rec, SAMPLE_TYPE, 0, &s), 0);
		cr_assert_eq(s.time, expect_time, "record %zu has time %llu", i, (unsigned long long)s.time);
		expect_time++;
		i++;
	}
	cr_expect_eq(i, nr);
	perfrec_pdreader__free(r);
	unlink(path);
	free(path);
	free(big);
}

Test(pdwriter, publish_renames_tmp_and_leaves_no_tmp)
{
	char dir[] = "/tmp/test-pdwriter-dir-XXXXXX", path[256], tmp[300];
	struct perf_event_attr a = make_attr(PERF_COUNT_SW_CPU_CLOCK);
	struct perfrec_pdwriter *w, *w2;
	struct stat st;
	uint64_t id = 1;

	cr_assert(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/a.data", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	cr_assert_eq(perfrec_pdwriter__create(path, &w), 0);
	cr_expect_eq(stat(tmp, &st), 0);
	cr_expect_eq(st.st_mode & 0777, 0640);
	cr_expect_neq(stat(path, &st), 0, "final name must not exist before publish");
	cr_expect_eq(perfrec_pdwriter__create(path, &w2), -EEXIST, "a second writer must not clobber the tmp");
	cr_assert_eq(perfrec_pdwriter__add_attr(w, &a, &id, 1, "cpu-clock"), 0);
	cr_expect_eq(perfrec_pdwriter__publish(w), -EBUSY, "publish before finish");
	cr_assert_eq(perfrec_pdwriter__finish(w), 0);
	cr_assert_eq(perfrec_pdwriter__publish(w), 0);
	perfrec_pdwriter__free(w, true);
	cr_expect_eq(stat(path, &st), 0);
	cr_expect_neq(stat(tmp, &st), 0, "tmp must be gone");

	/* An unpublished writer keeps its tmp unless told to discard it. */
	snprintf(path, sizeof(path), "%s/b.data", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	cr_assert_eq(perfrec_pdwriter__create(path, &w), 0);
	perfrec_pdwriter__free(w, false);
	cr_expect_eq(stat(tmp, &st), 0);
	unlink(tmp);
	cr_assert_eq(perfrec_pdwriter__create(path, &w), 0);
	perfrec_pdwriter__free(w, true);
	cr_expect_neq(stat(tmp, &st), 0);

	snprintf(path, sizeof(path), "%s/a.data", dir);
	unlink(path);
	rmdir(dir);
}

Test(pdwriter, full_device_returns_enospc)
{
	struct perfrec_pdwriter_opts wo = { .sz = sizeof(wo), .owns_fd = true };
	struct perf_event_attr a = make_attr(PERF_COUNT_SW_CPU_CLOCK);
	static unsigned char big[300 * 1024];
	struct perfrec_pdwriter *w;
	char *path = tmp_path();
	int fd, full = open("/dev/full", O_WRONLY | O_CLOEXEC);
	uint64_t id = 1;
	struct stat st;

	if (full < 0)
		cr_skip_test("no /dev/full");
	cr_expect_eq(perfrec_pdwriter__new(full, NULL, &w), -ENOSPC);

	/* A writer whose file fills up mid-data: swap /dev/full in under it. */
	fd = open(path, O_WRONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	cr_assert_eq(perfrec_pdwriter__new(fd, &wo, &w), 0);
	cr_assert_eq(perfrec_pdwriter__add_attr(w, &a, &id, 1, "cpu-clock"), 0);
	cr_assert_eq(perfrec_pdwriter__write(w, big, 64), 0);
	cr_assert_eq(perfrec_pdwriter__checkpoint(w), 0);
	cr_assert_geq(dup2(full, fd), 0);
	cr_expect_eq(perfrec_pdwriter__write(w, big, sizeof(big)), -ENOSPC);
	cr_expect_eq(perfrec_pdwriter__write(w, big, 64), 0, "small writes are only buffered");
	cr_expect_eq(perfrec_pdwriter__checkpoint(w), -ENOSPC);
	cr_expect_eq(perfrec_pdwriter__finish(w), -ENOSPC);
	perfrec_pdwriter__free(w, false);
	close(full);
	/* What reached the file before the device filled is intact. */
	cr_assert_eq(stat(path, &st), 0);
	cr_expect_geq(st.st_size, 104 + 64);
	unlink(path);
	free(path);
}

/* Run @cmd with stdout+stderr into @out; returns the exit status or -1. */
static int run_capture(const char *cmd, char *out, size_t sz)
{
	FILE *p = popen(cmd, "r");
	size_t n;
	int st;

	if (!p)
		return -1;
	n = fread(out, 1, sz - 1, p);
	out[n] = 0;
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

Test(pdwriter, perf_reads_what_we_write)
{
	struct perf_event_attr a = make_attr(PERF_COUNT_SW_CPU_CLOCK);
	struct perfrec_pdwriter_opts wo = { .sz = sizeof(wo), .owns_fd = true };
	const uint64_t ids[] = { 101, 102 };
	const int nr_samples = 7;
	unsigned char rec[256];
	struct perfrec_pdwriter *w;
	static char out[1 << 16];
	char cmd[512], *path;
	int fd;

	if (access("/usr/bin/perf", X_OK) != 0)
		cr_skip_test("/usr/bin/perf is not installed");
	path = tmp_path();
	fd = open(path, O_WRONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	cr_assert_eq(perfrec_pdwriter__new(fd, &wo, &w), 0);
	cr_assert_eq(perfrec_pdwriter__add_attr(w, &a, ids, 2, "cpu-clock"), 0);
	cr_assert_eq(perfrec_pdwriter__write(w, rec, make_comm(rec, ids[0], 4242, "perfrec-test", 1000)), 0);
	for (int i = 0; i < nr_samples; i++)
		cr_assert_eq(perfrec_pdwriter__write(w, rec, make_sample(rec, ids[i % 2], 0xffffffff81000000ULL + i,
									   4242, 2000 + i * 1000, i % 2)), 0);
	cr_assert_eq(perfrec_pdwriter__finish(w), 0);
	perfrec_pdwriter__free(w, false);

	snprintf(cmd, sizeof(cmd), "/usr/bin/perf report -f -i %s --stats 2>&1", path);
	cr_expect_eq(run_capture(cmd, out, sizeof(out)), 0, "perf report --stats failed:\n%s", out);
	{
		const char *at = strstr(out, "SAMPLE events:");

		cr_assert(at, "no SAMPLE count from perf:\n%s", out);
		cr_expect_eq(strtol(at + strlen("SAMPLE events:"), NULL, 10), nr_samples,
			     "perf --stats did not count %d samples:\n%s", nr_samples, out);
	}
	cr_expect(!strcasestr(out, "failed") && !strcasestr(out, "error") && !strcasestr(out, "incompatible"),
		  "perf complained:\n%s", out);

	snprintf(cmd, sizeof(cmd), "/usr/bin/perf report -f --header-only -I -i %s 2>&1", path);
	cr_expect_eq(run_capture(cmd, out, sizeof(out)), 0, "perf report --header-only failed:\n%s", out);
	cr_expect(strstr(out, "event : name = cpu-clock"), "EVENT_DESC name missing:\n%s", out);
	cr_expect(strstr(out, "101, 102"), "EVENT_DESC ids missing:\n%s", out);
	unlink(path);
	free(path);
}
