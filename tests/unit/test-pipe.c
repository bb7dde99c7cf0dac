// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Tests of pipe-mode output and input: the stream's layout byte by byte
 * (16-byte header, HEADER_ATTR with ids, HEADER_FEATURE records, the
 * end-of-features marker, then data), a sink callback and a real pipe fd
 * (which cannot seek) giving the same bytes, late features after the data,
 * a failing sink cutting the stream for good, the reader taking attrs, ids,
 * names and features from the records and verifying the stream, a stream
 * truncated mid-record, and perf itself reading the stream from stdin.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <perfrec/pdreader.h>
#include <perfrec/pdwriter.h>

#include "featbuf.h"

#define SAMPLE_TYPE (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | \
		     PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD)
#define NR_SAMPLES 3000

struct sink {
	unsigned char *buf;
	size_t len, cap;
	int calls;
	int fail_after; /* 0: never */
};

static int sink_fn(void *ctx, const struct iovec *iov, int iovcnt)
{
	struct sink *s = ctx;

	if (s->fail_after && ++s->calls > s->fail_after)
		return -EPIPE;
	for (int i = 0; i < iovcnt; i++) {
		if (s->len + iov[i].iov_len > s->cap) {
			s->cap = (s->len + iov[i].iov_len) * 2;
			s->buf = realloc(s->buf, s->cap);
			cr_assert(s->buf);
		}
		memcpy(s->buf + s->len, iov[i].iov_base, iov[i].iov_len);
		s->len += iov[i].iov_len;
	}
	return 0;
}

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
	return a;
}

static size_t make_sample(void *buf, uint64_t id, uint64_t ip, uint64_t time, uint32_t cpu)
{
	uint64_t body[6] = { id, ip, 9 | (9ull << 32), time, cpu, 100000 };
	struct perf_event_header h = { .type = PERF_RECORD_SAMPLE, .size = sizeof(h) + sizeof(body) };

	memcpy(buf, &h, sizeof(h));
	memcpy((char *)buf + sizeof(h), body, sizeof(body));
	return h.size;
}

static void set_string_feature(struct perfrec_pdwriter *w, int feat, const char *v)
{
	struct featbuf fb;

	featbuf_init(&fb);
	featbuf_string(&fb, v);
	cr_assert_eq(featbuf_err(&fb), 0);
	cr_assert_eq(perfrec_pdwriter__set_feature(w, feat, fb.buf, fb.len), 0);
	featbuf_exit(&fb);
}

static const uint64_t ids0[] = { 101, 102 }, ids1[] = { 201, 202 };

/* attrs, HOSTNAME before the data, NR_SAMPLES samples, OSRELEASE after. */
static void fill(struct perfrec_pdwriter *w)
{
	struct perf_event_attr a0 = make_attr(PERF_COUNT_SW_CPU_CLOCK), a1 = make_attr(PERF_COUNT_SW_DUMMY);
	unsigned char rec[64];

	cr_assert_eq(perfrec_pdwriter__add_attr(w, &a0, ids0, 2, "cpu-clock"), 0);
	cr_assert_eq(perfrec_pdwriter__add_attr(w, &a1, ids1, 2, "dummy"), 0);
	set_string_feature(w, PERFREC_FEAT_HOSTNAME, "pipehost");
	for (int i = 0; i < NR_SAMPLES; i++) {
		size_t n = make_sample(rec, ids0[i % 2], 0x400000 + (uint64_t)i, 5000 + (uint64_t)i, (uint32_t)(i % 2));

		cr_assert_eq(perfrec_pdwriter__write(w, rec, n), 0);
		if (i == 10)
			cr_assert_eq(perfrec_pdwriter__checkpoint(w), 0);
	}
	set_string_feature(w, PERFREC_FEAT_OSRELEASE, "9.9-late");
	cr_assert_eq(perfrec_pdwriter__add_attr(w, &a0, ids0, 2, "x"), -EBUSY);
	cr_assert_eq(perfrec_pdwriter__finish(w), 0);
	cr_assert_eq(perfrec_pdwriter__publish(w), -EINVAL, "a stream has nothing to publish");
}

static struct sink stream_via_sink(void)
{
	struct sink s = { 0 };
	struct perfrec_pdwriter_pipe_opts po = { .sz = sizeof(po), .sink = sink_fn, .sink_ctx = &s };
	struct perfrec_pdwriter *w;

	cr_assert_eq(perfrec_pdwriter__new_pipe(-1, &po, &w), 0);
	cr_assert_eq(perfrec_pdwriter__fd(w), -EBADF);
	fill(w);
	perfrec_pdwriter__free(w, false);
	return s;
}

Test(pipe, stream_layout_is_header_attrs_features_marker_then_data)
{
	struct sink s = stream_via_sink();
	struct perf_event_header h;
	uint64_t v[2], feat;
	size_t pos = 16;
	int nr_attr = 0, nr_samples = 0;
	bool marker = false, host_before_data = false, late_after_data = false, data_seen = false;

	cr_assert_geq(s.len, 16);
	memcpy(v, s.buf, 16);
	cr_assert_eq(v[0], PERFREC_MAGIC2);
	cr_assert_eq(v[1], 16, "pipe header size must be 16");
	while (pos < s.len) {
		cr_assert_leq(pos + 8, s.len);
		memcpy(&h, s.buf + pos, 8);
		cr_assert_geq(h.size, 8);
		cr_assert_leq(pos + h.size, s.len);
		switch (h.type) {
		case PERFREC_RECORD_HEADER_ATTR: {
			struct perf_event_attr a;
			uint64_t ids[2];

			cr_assert_not(data_seen, "attrs must precede data");
			cr_assert_eq(h.size, 8 + sizeof(a) + 16);
			memcpy(&a, s.buf + pos + 8, sizeof(a));
			memcpy(ids, s.buf + pos + 8 + sizeof(a), 16);
			cr_assert_eq(a.config, nr_attr == 0 ? PERF_COUNT_SW_CPU_CLOCK : PERF_COUNT_SW_DUMMY);
			cr_assert_eq(memcmp(ids, nr_attr == 0 ? ids0 : ids1, 16), 0);
			nr_attr++;
			break;
		}
		case PERFREC_RECORD_HEADER_FEATURE:
			memcpy(&feat, s.buf + pos + 8, 8);
			if (feat == PERFREC_FEAT_LAST_KNOWN + 1) {
				cr_assert_eq(h.size, 16);
				cr_assert_not(data_seen);
				marker = true;
			} else if (feat == PERFREC_FEAT_HOSTNAME) {
				cr_assert(memmem(s.buf + pos + 16, h.size - 16u, "pipehost", 8));
				host_before_data = !data_seen && !marker;
			} else if (feat == PERFREC_FEAT_OSRELEASE) {
				late_after_data = data_seen;
			}
			break;
		case PERF_RECORD_SAMPLE:
			cr_assert_eq(nr_attr, 2);
			data_seen = true;
			nr_samples++;
			break;
		default:
			break;
		}
		pos += h.size;
	}
	cr_assert_eq(pos, s.len);
	cr_assert_eq(nr_attr, 2);
	cr_assert(marker, "no end-of-features marker (perf report --header needs it)");
	cr_assert(host_before_data, "features set before the data must lead the stream");
	cr_assert(late_after_data, "a feature set after the data must follow it");
	cr_assert_eq(nr_samples, NR_SAMPLES);
	free(s.buf);
}

struct drain {
	int fd;
	struct sink s;
};

static void *drain_thread(void *arg)
{
	struct drain *d = arg;
	unsigned char b[8192];
	ssize_t n;
	struct iovec iov;

	while ((n = read(d->fd, b, sizeof(b))) > 0) {
		iov.iov_base = b;
		iov.iov_len = (size_t)n;
		sink_fn(&d->s, &iov, 1);
	}
	return NULL;
}

Test(pipe, a_pipe_fd_gets_the_same_bytes_as_the_sink)
{
	struct perfrec_pdwriter_pipe_opts po = { .sz = sizeof(po), .owns_fd = true };
	struct sink ref = stream_via_sink();
	struct drain d = { 0 };
	struct perfrec_pdwriter *w;
	pthread_t t;
	int p[2];

	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	d.fd = p[0];
	cr_assert_eq(pthread_create(&t, NULL, drain_thread, &d), 0);
	/* A pipe cannot seek: any pwrite/lseek in pipe mode would fail here. */
	cr_assert_eq(perfrec_pdwriter__new_pipe(p[1], &po, &w), 0);
	fill(w);
	perfrec_pdwriter__free(w, false); /* closes p[1]: the reader sees EOF */
	pthread_join(t, NULL);
	close(p[0]);
	cr_assert_eq(d.s.len, ref.len);
	cr_assert_eq(memcmp(d.s.buf, ref.buf, ref.len), 0);
	free(d.s.buf);
	free(ref.buf);
}

Test(pipe, reader_takes_attrs_ids_names_and_features_from_the_stream)
{
	struct perfrec_pdreader_opts ro = { .sz = sizeof(ro) };
	struct sink s = stream_via_sink();
	const struct perfrec_pdreader_stats *st;
	struct perfrec_pdreader *r;
	char text[64];

	cr_assert_eq(perfrec_pdreader__open_mem(s.buf, s.len, &ro, &r), 0);
	cr_assert(perfrec_pdreader__is_pipe(r));
	cr_assert_eq(perfrec_pdreader__nr_attrs(r), 2);
	cr_assert_eq(perfrec_pdreader__attr(r, 1)->attr.config, PERF_COUNT_SW_DUMMY);
	cr_assert_eq(perfrec_pdreader__attr(r, 0)->nr_ids, 2);
	cr_assert_str_eq(perfrec_pdreader__attr(r, 0)->name, "cpu-clock");
	cr_assert_eq(perfrec_pdreader__attr_by_id(r, 202), perfrec_pdreader__attr(r, 1));
	cr_assert_gt(perfrec_pdreader__feature_text(r, PERFREC_FEAT_HOSTNAME, text, sizeof(text)), 0);
	cr_assert_str_eq(text, "pipehost");
	cr_assert_gt(perfrec_pdreader__feature_text(r, PERFREC_FEAT_OSRELEASE, text, sizeof(text)), 0);
	cr_assert_str_eq(text, "9.9-late");
	cr_assert_eq(perfrec_pdreader__verify(r), 0, "%s", perfrec_pdreader__error(r, NULL));
	st = perfrec_pdreader__stats(r);
	cr_assert_eq(st->nr_samples, NR_SAMPLES);
	cr_assert_eq(st->samples_per_attr[0], NR_SAMPLES);
	cr_assert_eq(st->by_type[PERFREC_RECORD_HEADER_ATTR], 2);
	perfrec_pdreader__free(r);
	free(s.buf);
}

Test(pipe, a_stream_cut_mid_record_fails_verify_but_salvages)
{
	struct perfrec_pdreader_opts ro = { .sz = sizeof(ro) }, so = { .sz = sizeof(so), .salvage = true };
	struct sink s = stream_via_sink();
	struct perfrec_pdreader *r;
	size_t cut;

	/* Cut inside the last sample (the trailing feature record is 16 + a string). */
	cut = s.len - 84 - 20;
	cr_assert_eq(perfrec_pdreader__open_mem(s.buf, cut, &ro, &r), 0);
	cr_assert_eq(perfrec_pdreader__verify(r), -EBADMSG);
	cr_assert(strstr(perfrec_pdreader__error(r, NULL), "runs past end"), "%s", perfrec_pdreader__error(r, NULL));
	perfrec_pdreader__free(r);
	cr_assert_eq(perfrec_pdreader__open_mem(s.buf, cut, &so, &r), 0);
	cr_assert_eq(perfrec_pdreader__verify(r), 0, "%s", perfrec_pdreader__error(r, NULL));
	cr_assert_eq(perfrec_pdreader__stats(r)->nr_samples, NR_SAMPLES - 1);
	perfrec_pdreader__free(r);
	free(s.buf);
}

Test(pipe, a_failing_sink_cuts_the_stream_for_good)
{
	struct sink s = { .fail_after = 2 };
	struct perfrec_pdwriter_pipe_opts po = { .sz = sizeof(po), .sink = sink_fn, .sink_ctx = &s };
	struct perf_event_attr a = make_attr(PERF_COUNT_SW_CPU_CLOCK);
	struct perfrec_pdwriter *w;
	unsigned char rec[64];
	size_t n = make_sample(rec, 101, 1, 2, 0);
	int r = 0;

	cr_assert_eq(perfrec_pdwriter__new_pipe(-1, &po, &w), 0);
	cr_assert_eq(perfrec_pdwriter__add_attr(w, &a, ids0, 2, "cpu-clock"), 0);
	/* header, attr, then the marker fails */
	cr_assert_eq(perfrec_pdwriter__write(w, rec, n), -EPIPE);
	cr_assert_eq(perfrec_pdwriter__write(w, rec, n), -EPIPE, "errors must be sticky");
	for (int i = 0; i < 10000 && r == 0; i++)
		r = perfrec_pdwriter__write(w, rec, n);
	cr_assert_eq(r, -EPIPE);
	cr_assert_eq(perfrec_pdwriter__finish(w), -EPIPE);
	perfrec_pdwriter__free(w, false);
	free(s.buf);
}

Test(pipe, bad_arguments_and_oversized_attr_records)
{
	struct perfrec_pdwriter_pipe_opts po = { .sz = sizeof(po) };
	struct sink s = { 0 };
	struct perfrec_pdwriter_pipe_opts so = { .sz = sizeof(so), .sink = sink_fn, .sink_ctx = &s };
	struct perf_event_attr a = make_attr(PERF_COUNT_SW_CPU_CLOCK);
	struct perfrec_pdwriter *w;
	uint64_t *ids = calloc(9000, sizeof(uint64_t));
	unsigned char rec[64];

	cr_assert_eq(perfrec_pdwriter__new_pipe(-1, &po, &w), -EINVAL, "no fd and no sink");
	cr_assert_eq(perfrec_pdwriter__new_pipe(-1, &so, &w), 0);
	for (int i = 0; i < 9000; i++)
		ids[i] = (uint64_t)i + 1;
	cr_assert_eq(perfrec_pdwriter__add_attr(w, &a, ids, 9000, "big"), 0);
	cr_assert_eq(perfrec_pdwriter__write(w, rec, make_sample(rec, 1, 1, 1, 0)), -E2BIG,
		     "an attr record over 64 KiB cannot be streamed");
	perfrec_pdwriter__free(w, false);
	free(ids);
	free(s.buf);
}

Test(pipe, perf_reads_the_stream_from_stdin)
{
	struct sink s = stream_via_sink();
	char cmd[256], line[256];
	long samples = -1;
	FILE *p;
	int fd, rc;
	char path[] = "/tmp/test-pipe-XXXXXX";

	if (system("perf --version >/dev/null 2>&1") != 0)
		cr_skip_test("perf (linux-perf) is not installed");
	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, s.buf, s.len), (ssize_t)s.len);
	close(fd);
	snprintf(cmd, sizeof(cmd), "perf report -i - --stats < %s 2>%s.err", path, path);
	p = popen(cmd, "r");
	cr_assert(p);
	while (fgets(line, sizeof(line), p))
		if (strstr(line, "SAMPLE events:") && samples < 0)
			samples = strtol(strstr(line, ":") + 1, NULL, 10);
	rc = pclose(p);
	cr_assert_eq(WEXITSTATUS(rc), 0);
	cr_assert_eq(samples, NR_SAMPLES, "perf counted %ld samples", samples);
	snprintf(cmd, sizeof(cmd), "grep -Eiq 'warn|error|fail|invalid|unknown' %s.err", path);
	cr_assert_neq(system(cmd), 0, "perf complained on stderr");
	snprintf(cmd, sizeof(cmd), "%s.err", path);
	unlink(cmd);
	unlink(path);
	free(s.buf);
}

Test(pipe, each_finished_round_reaches_the_reader_at_once)
{
	struct sink s = { 0 };
	struct perfrec_pdwriter_pipe_opts po = { .sz = sizeof(po), .sink = sink_fn, .sink_ctx = &s };
	struct perf_event_attr a = make_attr(PERF_COUNT_SW_CPU_CLOCK);
	struct perf_event_header round = { .type = PERFREC_RECORD_FINISHED_ROUND, .size = 8 };
	struct perfrec_pdwriter *w;
	unsigned char rec[64];
	size_t n = make_sample(rec, 101, 1, 2, 0), before;

	cr_assert_eq(perfrec_pdwriter__new_pipe(-1, &po, &w), 0);
	cr_assert_eq(perfrec_pdwriter__add_attr(w, &a, ids0, 2, "cpu-clock"), 0);
	for (int i = 0; i < 10; i++)
		cr_assert_eq(perfrec_pdwriter__write(w, rec, n), 0);
	before = s.len;
	cr_assert_eq(perfrec_pdwriter__write(w, &round, sizeof(round)), 0);
	cr_assert_eq(s.len, before + 10 * n + sizeof(round),
		     "the pass (10 samples and its round) must be on the stream after its FINISHED_ROUND");
	perfrec_pdwriter__free(w, false);
	free(s.buf);
}

/*
 * Tracing data goes out as perf record sends it: after the end-of-features
 * marker, a 16-byte HEADER_TRACING_DATA record whose size field counts the
 * data padded to 8 bytes, the data, zeros, then the records; the reader
 * steps over the data and finds every sample.
 */
Test(pipe, tracing_data_follows_its_record_padded_and_the_reader_steps_over_it)
{
	static const char td[] = "\x17\x08\x44tracing0.6 and 13 more"; /* 31 bytes with the NUL */
	struct perfrec_pdwriter_pipe_opts po = { .sz = sizeof(po), .sink = sink_fn };
	struct perfrec_pdreader_opts ro = { .sz = sizeof(ro) };
	struct perf_event_attr a0 = make_attr(PERF_COUNT_SW_CPU_CLOCK);
	const struct perfrec_pdreader_stats *st;
	struct perfrec_pdwriter *w;
	struct perfrec_pdreader *r;
	struct perf_event_header h;
	struct sink s = { 0 };
	unsigned char rec[64];
	const void *body;
	size_t pos = 16, n, blen;
	uint32_t size;

	po.sink_ctx = &s;
	cr_assert_eq(perfrec_pdwriter__new_pipe(-1, &po, &w), 0);
	cr_assert_eq(perfrec_pdwriter__add_attr(w, &a0, ids0, 2, "cpu-clock"), 0);
	cr_assert_eq(perfrec_pdwriter__set_feature(w, PERFREC_FEAT_TRACING_DATA, td, sizeof(td)), 0);
	for (int i = 0; i < 10; i++) {
		n = make_sample(rec, ids0[i % 2], 0x400000, 5000 + (uint64_t)i, 0);
		cr_assert_eq(perfrec_pdwriter__write(w, rec, n), 0);
	}
	cr_assert_eq(perfrec_pdwriter__finish(w), 0);
	perfrec_pdwriter__free(w, false);

	/* Up to the end-of-features marker, then the tracing data. */
	for (;;) {
		uint64_t feat;

		memcpy(&h, s.buf + pos, sizeof(h));
		cr_assert_neq(h.type, PERFREC_RECORD_HEADER_TRACING_DATA, "tracing data before the marker");
		memcpy(&feat, s.buf + pos + 8, sizeof(feat));
		pos += h.size;
		if (h.type == PERFREC_RECORD_HEADER_FEATURE && feat == PERFREC_FEAT_LAST_KNOWN + 1)
			break;
	}
	memcpy(&h, s.buf + pos, sizeof(h));
	cr_assert_eq(h.type, PERFREC_RECORD_HEADER_TRACING_DATA);
	cr_assert_eq(h.size, 16, "the record's size covers only itself");
	memcpy(&size, s.buf + pos + 8, 4);
	cr_assert_eq(size, 32, "size %u: the data padded to 8 bytes", size);
	cr_assert_eq(memcmp(s.buf + pos + 16, td, sizeof(td)), 0);
	cr_assert_eq(s.buf[pos + 16 + sizeof(td)], 0, "padding is zeros");
	memcpy(&h, s.buf + pos + 16 + size, sizeof(h));
	cr_assert_eq(h.type, PERF_RECORD_SAMPLE, "records resume after the padded data");

	cr_assert_eq(perfrec_pdreader__open_mem(s.buf, s.len, &ro, &r), 0);
	cr_assert_eq(perfrec_pdreader__verify(r), 0, "%s", perfrec_pdreader__error(r, NULL));
	st = perfrec_pdreader__stats(r);
	cr_assert_eq(st->nr_samples, 10);
	cr_assert_eq(st->by_type[PERFREC_RECORD_HEADER_TRACING_DATA], 1);
	cr_assert_eq(perfrec_pdreader__feature(r, PERFREC_FEAT_TRACING_DATA, &body, &blen), 0);
	cr_assert_eq(blen, 32);
	cr_assert_eq(memcmp(body, td, sizeof(td)), 0);
	perfrec_pdreader__free(r);
	free(s.buf);
}
