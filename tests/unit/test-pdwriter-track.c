// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A tracking writer (perfrec_pdwriter__track) keeps the build-id table and
 * the sample times itself: records written through it, whole or split
 * across iovecs, end up in HEADER_BUILD_ID and SAMPLE_TIME at finish.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <perfrec/pdreader.h>
#include <perfrec/pdwriter.h>

#define ST (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME)
#define ID 7

static const uint8_t BID[20] = { 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16 };

/* A sample of @pid at @time: header, id, ip, pid/tid, time. */
static void make_sample(uint64_t rec[5], uint32_t pid, uint64_t time)
{
	struct perf_event_header h = {
		.type = PERF_RECORD_SAMPLE, .misc = PERF_RECORD_MISC_USER, .size = 40,
	};

	memcpy(&rec[0], &h, 8);
	rec[1] = ID;
	rec[2] = 0x401000;
	rec[3] = (uint64_t)pid | (uint64_t)pid << 32;
	rec[4] = time;
}

/* An MMAP2 with a build id for @pid, trailer for ST (pid/tid, time, id). */
static size_t make_mmap2(uint64_t *rec, uint32_t pid, const char *name)
{
	unsigned char *b = (unsigned char *)rec;
	size_t nlen = strlen(name) + 1, size = (72 + nlen + 7) / 8 * 8 + 24;
	struct perf_event_header h = {
		.type = PERF_RECORD_MMAP2, .misc = PERF_RECORD_MISC_USER | PERF_RECORD_MISC_MMAP_BUILD_ID,
		.size = (uint16_t)size,
	};
	uint64_t start = 0x400000, len = 0x10000, id = ID;

	memset(b, 0, size);
	memcpy(b, &h, 8);
	memcpy(b + 8, &pid, 4);
	memcpy(b + 12, &pid, 4);
	memcpy(b + 16, &start, 8);
	memcpy(b + 24, &len, 8);
	b[40] = sizeof(BID);
	memcpy(b + 44, BID, sizeof(BID));
	memcpy(b + 72, name, nlen);
	memcpy(b + size - 24, &pid, 4);
	memcpy(b + size - 20, &pid, 4);
	memcpy(b + size - 8, &id, 8);
	return size;
}

static char *tmp_file(void)
{
	char *p = strdup("/tmp/test-pdwriter-track-XXXXXX");
	int fd = mkstemp(p);

	cr_assert_geq(fd, 0);
	close(fd);
	return p;
}

/* Write a file (tracking or not) and return its path. */
static char *write_file(bool track)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr), .type = PERF_TYPE_SOFTWARE, .config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_type = ST, .sample_id_all = 1,
	};
	uint64_t id = ID, mm[40], s1[5], s2[5], s3[5];
	struct perfrec_pdwriter *w;
	char *path = tmp_file();
	size_t mlen;
	int fd = open(path, O_RDWR | O_TRUNC | O_CLOEXEC);
	struct perfrec_pdwriter_opts o = { .sz = sizeof(o), .owns_fd = true };

	cr_assert_geq(fd, 0);
	cr_assert_eq(perfrec_pdwriter__new(fd, &o, &w), 0);
	cr_assert_eq(perfrec_pdwriter__add_attr(w, &attr, &id, 1, "cpu-clock"), 0);
	if (track)
		cr_assert_eq(perfrec_pdwriter__track(w), 0);
	mlen = make_mmap2(mm, 42, "/usr/bin/tracked");
	make_sample(s1, 42, 3000);
	make_sample(s2, 42, 1000);
	make_sample(s3, 42, 2000);
	cr_assert_eq(perfrec_pdwriter__write(w, mm, mlen), 0);
	{
		/* Two records in one write, the second split as a ring wrap splits it. */
		unsigned char both[80];
		struct iovec iov[2];

		memcpy(both, s1, 40);
		memcpy(both + 40, s2, 40);
		iov[0] = (struct iovec){ both, 52 };
		iov[1] = (struct iovec){ both + 52, 28 };
		cr_assert_eq(perfrec_pdwriter__writev(w, iov, 2), 0);
	}
	cr_assert_eq(perfrec_pdwriter__write(w, s3, 40), 0);
	if (track) {
		uint64_t first = 0, last = 0;

		cr_assert_eq(perfrec_pdwriter__sample_times(w, &first, &last), 0);
		cr_assert_eq(first, 1000);
		cr_assert_eq(last, 3000);
		/* Too late to start tracking once data was written. */
		cr_assert_eq(perfrec_pdwriter__track(w), 0, "already on: no-op");
	}
	cr_assert_eq(perfrec_pdwriter__finish(w), 0);
	perfrec_pdwriter__free(w, false);
	return path;
}

Test(pdwriter_track, build_ids_and_sample_times_come_from_the_records)
{
	char *path = write_file(true);
	struct perfrec_pdreader *r;
	const void *body;
	size_t len;
	uint64_t t[2];

	cr_assert_eq(perfrec_pdreader__open(path, NULL, &r), 0);
	cr_assert_eq(perfrec_pdreader__feature(r, PERFREC_FEAT_SAMPLE_TIME, &body, &len), 0,
		     "no SAMPLE_TIME");
	cr_assert_eq(len, sizeof(t));
	memcpy(t, body, sizeof(t));
	cr_assert_eq(t[0], 1000, "first sample time %llu", (unsigned long long)t[0]);
	cr_assert_eq(t[1], 3000, "last sample time %llu", (unsigned long long)t[1]);
	cr_assert_eq(perfrec_pdreader__feature(r, PERFREC_FEAT_BUILD_ID, &body, &len), 0, "no BUILD_ID");
	cr_assert_not_null(memmem(body, len, "/usr/bin/tracked", 17), "sampled binary not in BUILD_ID");
	cr_assert_not_null(memmem(body, len, BID, sizeof(BID)), "its build id not in BUILD_ID");
	perfrec_pdreader__free(r);
	unlink(path);
	free(path);
}

Test(pdwriter_track, off_by_default)
{
	char *path = write_file(false);
	struct perfrec_pdreader *r;
	const void *body;
	size_t len;

	cr_assert_eq(perfrec_pdreader__open(path, NULL, &r), 0);
	cr_assert_eq(perfrec_pdreader__feature(r, PERFREC_FEAT_SAMPLE_TIME, &body, &len), -ENOENT);
	cr_assert_eq(perfrec_pdreader__feature(r, PERFREC_FEAT_BUILD_ID, &body, &len), -ENOENT);
	perfrec_pdreader__free(r);
	unlink(path);
	free(path);
}

Test(pdwriter_track, only_before_data)
{
	struct perfrec_pdwriter *w;
	char *path = tmp_file();
	int fd = open(path, O_RDWR | O_CLOEXEC);
	struct perfrec_pdwriter_opts o = { .sz = sizeof(o), .owns_fd = true };
	uint64_t s[5], a, b;

	cr_assert_eq(perfrec_pdwriter__new(fd, &o, &w), 0);
	make_sample(s, 1, 5);
	cr_assert_eq(perfrec_pdwriter__sample_times(w, &a, &b), -ENODATA);
	cr_assert_eq(perfrec_pdwriter__write(w, s, sizeof(s)), 0);
	cr_assert_eq(perfrec_pdwriter__track(w), -EBUSY);
	cr_assert_eq(perfrec_pdwriter__track(NULL), -EINVAL);
	perfrec_pdwriter__free(w, true);
	unlink(path);
	free(path);
}
