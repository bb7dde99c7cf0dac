// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests of views/cut-archive.c's links for hotspot: a JIT image
 * (a build-id table entry named /perfrec-jit/NAME whose entry the archive
 * carries) gets perfrec-jit/NAME/BUILDID -> ../../.build-id/xx/yyyy, which
 * unpacked opens the entry, as hotspot's perfparser opens it; an entry
 * that is not there, a binary of another name, or a name that would put
 * the link elsewhere (the table is the file's: anyone's) gets none, and
 * nothing lands outside the directory the archive is unpacked in.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <perfrec/pdwriter.h>

#include "cut-archive.h"

static char dir[] = "/tmp/test-cut-archive-XXXXXX";

static void setup(void)
{
	cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(cut_archive, .init = setup, .fini = teardown);

struct ent {
	unsigned char id;   /* the build id: 20 times this byte */
	const char *name;
	bool cached;        /* its entry is in the cache */
};

static void id_hex(unsigned char id, char out[41])
{
	for (int i = 0; i < 20; i++)
		snprintf(out + 2 * i, 3, "%02x", id);
}

/* A perf.data of no records whose HEADER_BUILD_ID holds @e; the cached entries under dir/cache. */
static void make_input(const struct ent *e, size_t n)
{
	struct perfrec_pdwriter_opts wo = { .sz = sizeof(wo), .owns_fd = true };
	struct perf_event_attr a = { .size = 128, .type = PERF_TYPE_SOFTWARE, .sample_period = 100000,
				     .sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME };
	unsigned char bids[4096] = { 0 };
	struct perfrec_pdwriter *w;
	char path[256], h[41];
	size_t nb = 0;
	uint64_t id = 1;
	int fd;

	snprintf(path, sizeof(path), "%s/cut.data", dir);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(perfrec_pdwriter__new(fd, &wo, &w), 0);
	cr_assert_eq(perfrec_pdwriter__add_attr(w, &a, &id, 1, "cpu-clock"), 0);
	for (size_t i = 0; i < n; i++) {
		struct perf_event_header hd = { .type = 0, .misc = 1u << 15, .size = 36 + 64 };

		cr_assert_lt(strlen(e[i].name), 64);
		memcpy(bids + nb, &hd, sizeof(hd));
		memset(bids + nb + 12, e[i].id, 20);
		bids[nb + 32] = 20;
		memcpy(bids + nb + 36, e[i].name, strlen(e[i].name));
		nb += hd.size;
		if (e[i].cached) {
			char cmd[512];

			id_hex(e[i].id, h);
			snprintf(cmd, sizeof(cmd), "mkdir -p %s/cache/.build-id/%.2s && echo %s >%s/cache/.build-id/%.2s/%s",
				 dir, h, e[i].name, dir, h, h + 2);
			cr_assert_eq(system(cmd), 0);
		}
	}
	cr_assert_eq(perfrec_pdwriter__set_feature(w, PERFREC_FEAT_BUILD_ID, bids, nb), 0);
	cr_assert_eq(perfrec_pdwriter__finish(w), 0);
	perfrec_pdwriter__free(w, false);
}

static int archive(void)
{
	char data[256], out[256], cache[256];
	const char *dirs[] = { cache };
	struct cut_archive_opts o = { .data_path = data, .archive_path = out, .cache_dirs = dirs, .nr_cache_dirs = 1 };

	snprintf(data, sizeof(data), "%s/cut.data", dir);
	snprintf(out, sizeof(out), "%s/cut.tar", dir);
	snprintf(cache, sizeof(cache), "%s/cache", dir);
	return cut_archive(&o);
}

/* What `tar tvf` says of the archive's members, "TYPE NAME[ -> TARGET]" a line, sorted. */
static char *listing(void)
{
	static char out[4096];
	char cmd[512];
	FILE *p;
	size_t n;

	snprintf(cmd, sizeof(cmd), "tar tvf %s/cut.tar | awk '{ t = substr($1, 1, 1); $1 = $2 = $3 = $4 = $5 = \"\"; "
		 "sub(/^ +/, \"\"); print t, $0 }' | sort", dir);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = 0;
	cr_assert_eq(pclose(p), 0);
	return out;
}

Test(cut_archive, jit_images_get_the_link_perfparser_opens)
{
	const struct ent e[] = {
		{ 0x11, "/perfrec-jit/jit-100-7f0000001000-3000.so", true },
		{ 0x22, "/perfrec-jit/jit-200-7f0000002000-1000.so", false },   /* not in the cache: no link */
		{ 0x33, "/usr/bin/node", true },                                 /* not a JIT image */
	};
	char expect[1024], h1[41], h3[41], cmd[512];

	make_input(e, 3);
	cr_assert_eq(archive(), 0);
	id_hex(0x11, h1);
	id_hex(0x33, h3);
	snprintf(expect, sizeof(expect),
		 "- .build-id/%.2s/%s\n- .build-id/%.2s/%s\n- cut.data\n"
		 "l perfrec-jit/jit-100-7f0000001000-3000.so/%s -> ../../.build-id/%.2s/%s\n",
		 h1, h1 + 2, h3, h3 + 2, h1, h1, h1 + 2);
	cr_expect_str_eq(listing(), expect);
	/* Unpacked, the link opens the image's entry, where perfparser --debug DIR looks. */
	snprintf(cmd, sizeof(cmd), "mkdir %s/x && tar xf %s/cut.tar -C %s/x && "
		 "grep -qx /perfrec-jit/jit-100-7f0000001000-3000.so %s/x/perfrec-jit/jit-100-7f0000001000-3000.so/%s",
		 dir, dir, dir, dir, h1);
	cr_expect_eq(system(cmd), 0, "the link does not open the JIT image's entry");
}

/* The table is the file's, whoever wrote it: names that would put a link elsewhere get none. */
Test(cut_archive, hostile_names_make_no_link)
{
	const struct ent e[] = {
		{ 0x44, "/perfrec-jit/..", true },
		{ 0x55, "/perfrec-jit/../../../tmp/x", true },
		{ 0x66, "/perfrec-jit/a/b", true },
		{ 0x77, "/perfrec-jit/", true },
		{ 0x88, "/perfrec-jitx/y", true },
	};
	char cmd[256];

	make_input(e, 5);
	cr_assert_eq(archive(), 0);
	cr_expect_null(strstr(listing(), "\nl "), "%s", listing());
	cr_expect_neq(listing()[0], 'l', "%s", listing());
	snprintf(cmd, sizeof(cmd), "test \"$(tar tf %s/cut.tar | grep -c '^\\.build-id/')\" = 5", dir);
	cr_expect_eq(system(cmd), 0, "the entries themselves are not all in: %s", listing());
}
