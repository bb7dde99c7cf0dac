// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Tests of PERF_RECORD_CGROUP synthesis: finding the hierarchy perf_event
 * reports from a mounts table, walking a real cgroup fs with cgroups made
 * by the test, whose ids are checked against the directories' inode numbers
 * (on 64-bit kernels a kernfs node's id is its inode number, which is also
 * what the kernel puts in samples and in its own CGROUP records), and the
 * records in a file through the reader's verifier.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <perfrec/event.h>
#include <perfrec/pdreader.h>
#include <perfrec/pdwriter.h>
#include <perfrec/synth.h>

#define ST (PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER)
#define TIME 987654321012ULL
#define ID 0x5151ULL

struct got {
	size_t nr;
	char *path[4096];
	uint64_t id[4096];
	int fail_at;        /* >0: return -EIO from this call on (1-based) */
	bool bad;           /* a record was malformed */
	char why[128];
};

static int collect(void *ctx, const struct perf_event_header *h)
{
	struct got *g = ctx;
	const char *p = (const char *)h;
	size_t trailer = perfrec_sample_id__size(ST);
	struct perfrec_sample_id sid;

	if (g->fail_at && (int)g->nr + 1 >= g->fail_at)
		return -EIO;
	if (h->type != PERF_RECORD_CGROUP || h->size % 8 || h->size < 8 + 8 + 8 + trailer ||
	    !memchr(p + 16, '\0', h->size - 16 - trailer)) {
		g->bad = true;
		snprintf(g->why, sizeof(g->why), "type %u size %u", h->type, h->size);
		return 0;
	}
	if (perfrec_sample_id__parse(h, ST, &sid) < 0 || sid.time != TIME || sid.id != ID) {
		g->bad = true;
		snprintf(g->why, sizeof(g->why), "trailer wrong");
		return 0;
	}
	if (g->nr < 4096) {
		memcpy(&g->id[g->nr], p + 8, 8);
		g->path[g->nr] = strdup(p + 16);
	}
	g->nr++;
	return 0;
}

static void got_free(struct got *g)
{
	for (size_t i = 0; i < g->nr && i < 4096; i++)
		free(g->path[i]);
}

static long find(const struct got *g, const char *path)
{
	for (size_t i = 0; i < g->nr && i < 4096; i++)
		if (g->path[i] && !strcmp(g->path[i], path))
			return (long)i;
	return -1;
}

static struct perfrec_synth_opts opts(void)
{
	struct perfrec_synth_opts o = { .sz = sizeof(o), .sample_type = ST, .id = ID, .time = TIME };

	return o;
}

/* --- the mounts table --------------------------------------------------- */

struct mounts_case {
	const char *table;
	int ret;
	const char *want;
};

static void write_mounts(const char *proc, const char *table)
{
	char p[PATH_MAX];
	FILE *f;

	snprintf(p, sizeof(p), "%s/self", proc);
	cr_assert_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/self/mounts", proc);
	f = fopen(p, "w");
	cr_assert_not_null(f);
	fputs(table, f);
	fclose(f);
}

Test(synth_cgroup, the_root_is_the_perf_event_hierarchy_else_cgroup2)
{
	static const struct mounts_case cases[] = {
		{ "proc /proc proc rw 0 0\ncgroup2 /sys/fs/cgroup cgroup2 rw,nsdelegate 0 0\n", 0, "/sys/fs/cgroup" },
		{ "cgroup /sys/fs/cgroup/cpu cgroup rw,cpu 0 0\n"
		  "cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n", 0, "/sys/fs/cgroup/unified" },
		{ "cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n"
		  "cgroup /sys/fs/cgroup/perf_event cgroup rw,nosuid,perf_event 0 0\n", 0, "/sys/fs/cgroup/perf_event" },
		{ "cgroup2 /mnt/my\\040cg cgroup2 rw 0 0\n", 0, "/mnt/my cg" },
		{ "proc /proc proc rw 0 0\ntmpfs /sys/fs/cgroup tmpfs rw 0 0\n", -ENOENT, NULL },
		{ "", -ENOENT, NULL },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char proc[] = "/tmp/test-synth-cgroup.XXXXXX", buf[PATH_MAX], cmd[PATH_MAX + 16];
		int r;

		cr_assert_not_null(mkdtemp(proc));
		write_mounts(proc, cases[i].table);
		memset(buf, 0, sizeof(buf));
		r = perfrec_synth__cgroup_root(proc, buf, sizeof(buf));
		cr_expect_eq(r, cases[i].ret, "case %zu: %d, want %d", i, r, cases[i].ret);
		if (cases[i].want)
			cr_expect_str_eq(buf, cases[i].want, "case %zu", i);
		snprintf(cmd, sizeof(cmd), "rm -rf %s", proc);
		cr_assert_eq(system(cmd), 0);
	}
}

Test(synth_cgroup, a_root_too_long_for_the_buffer_is_refused)
{
	char proc[] = "/tmp/test-synth-cgroup.XXXXXX", buf[8], cmd[PATH_MAX + 16];

	cr_assert_not_null(mkdtemp(proc));
	write_mounts(proc, "cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n");
	cr_expect_eq(perfrec_synth__cgroup_root(proc, buf, sizeof(buf)), -ENAMETOOLONG);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", proc);
	cr_assert_eq(system(cmd), 0);
}

Test(synth_cgroup, a_directory_that_is_not_a_cgroup_fs_is_refused)
{
	struct perfrec_synth_opts o = opts();
	struct got g = { 0 };
	char dir[] = "/tmp/test-synth-cgroup.XXXXXX";

	cr_assert_not_null(mkdtemp(dir));
	cr_expect_eq(perfrec_synth__cgroups(&o, dir, collect, &g), -EOPNOTSUPP);
	cr_expect_eq(g.nr, 0);
	cr_expect_eq(perfrec_synth__cgroups(&o, "/nonexistent/cgroup", collect, &g), -ENOENT);
	cr_expect_eq(perfrec_synth__cgroups(NULL, dir, collect, &g), -EINVAL);
	cr_expect_eq(perfrec_synth__cgroups(&o, dir, NULL, &g), -EINVAL);
	rmdir(dir);
}

/* --- a real cgroup fs --------------------------------------------------- */

struct tree {
	char root[PATH_MAX];
	char a[PATH_MAX + 256], ab[PATH_MAX + 256];
	char rel_a[64], rel_ab[128];
};

static void make_tree(struct tree *t)
{
	if (geteuid() != 0)
		cr_skip_test("needs root to create cgroups");
	if (perfrec_synth__cgroup_root(NULL, t->root, sizeof(t->root)) < 0)
		cr_skip_test("no cgroup hierarchy for perf_event is mounted");
	snprintf(t->rel_a, sizeof(t->rel_a), "/perfrec-test-%d", (int)getpid());
	snprintf(t->rel_ab, sizeof(t->rel_ab), "%s/inner", t->rel_a);
	snprintf(t->a, sizeof(t->a), "%s%s", t->root, t->rel_a);
	snprintf(t->ab, sizeof(t->ab), "%s%s", t->root, t->rel_ab);
	if (mkdir(t->a, 0755) < 0)
		cr_skip_test("cannot create a cgroup under %s: %s", t->root, strerror(errno));
	cr_assert_eq(mkdir(t->ab, 0755), 0, "mkdir %s: %s", t->ab, strerror(errno));
}

static void remove_tree(const struct tree *t)
{
	rmdir(t->ab);
	rmdir(t->a);
}

static uint64_t ino(const char *path)
{
	struct stat st;

	cr_assert_eq(stat(path, &st), 0, "stat %s", path);
	return st.st_ino;
}

Test(synth_cgroup, every_cgroup_is_named_with_its_kernel_id_parents_first)
{
	struct perfrec_synth_opts o = opts();
	struct got g = { 0 };
	struct tree t;
	long ia, iab;
	int r;

	make_tree(&t);
	r = perfrec_synth__cgroups(&o, NULL, collect, &g);
	remove_tree(&t);
	cr_assert_eq(r, 0, "synthesis: %s", strerror(-r));
	cr_assert_not(g.bad, "malformed record: %s", g.why);
	cr_assert_geq(g.nr, 3);
	cr_expect_str_eq(g.path[0], "/", "the root comes first as \"/\"");
	ia = find(&g, t.rel_a);
	iab = find(&g, t.rel_ab);
	cr_assert_geq(ia, 0, "%s not synthesized", t.rel_a);
	cr_assert_geq(iab, 0, "%s not synthesized", t.rel_ab);
	cr_expect_lt(ia, iab, "a parent must come before its child");
	cr_expect_neq(g.id[ia], g.id[iab]);
	for (size_t i = 1; i < g.nr && i < 4096; i++)
		cr_expect(g.path[i][0] == '/' && strcmp(g.path[i], "/") && !strstr(g.path[i], "//"),
			  "path %s not relative to the root", g.path[i]);
	got_free(&g);
}

Test(synth_cgroup, ids_match_the_inode_numbers_of_the_cgroup_directories)
{
	struct perfrec_synth_opts o = opts();
	struct got g = { 0 };
	uint64_t want_root, want_a, want_ab;
	struct tree t;
	long ia, iab;
	int r;

	if (sizeof(long) != 8)
		cr_skip_test("kernfs ids equal inode numbers only on 64-bit kernels");
	make_tree(&t);
	want_root = ino(t.root);
	want_a = ino(t.a);
	want_ab = ino(t.ab);
	r = perfrec_synth__cgroups(&o, t.root, collect, &g);
	remove_tree(&t);
	cr_assert_eq(r, 0, "synthesis: %s", strerror(-r));
	ia = find(&g, t.rel_a);
	iab = find(&g, t.rel_ab);
	cr_assert(ia >= 0 && iab >= 0);
	cr_expect_eq(g.id[0], want_root, "root id %llu, inode %llu",
		     (unsigned long long)g.id[0], (unsigned long long)want_root);
	cr_expect_eq(g.id[ia], want_a, "id %llu, inode %llu", (unsigned long long)g.id[ia],
		     (unsigned long long)want_a);
	cr_expect_eq(g.id[iab], want_ab);
	got_free(&g);
}

Test(synth_cgroup, the_callbacks_error_stops_the_walk)
{
	struct perfrec_synth_opts o = opts();
	struct got g = { .fail_at = 2 };
	struct tree t;
	int r;

	make_tree(&t);
	r = perfrec_synth__cgroups(&o, NULL, collect, &g);
	remove_tree(&t);
	cr_expect_eq(r, -EIO);
	cr_expect_eq(g.nr, 1, "records after the error: %zu", g.nr);
	got_free(&g);
}

/* --- the records in a file, through the verifier ------------------------ */

struct raw {
	unsigned char *buf;
	size_t len, nr;
};

static int append(void *ctx, const struct perf_event_header *h)
{
	struct raw *r = ctx;

	r->buf = realloc(r->buf, r->len + h->size);
	cr_assert_not_null(r->buf);
	memcpy(r->buf + r->len, h, h->size);
	r->len += h->size;
	r->nr++;
	return 0;
}

/* A file with one attr (ST, id ID) whose data is @recs. */
static unsigned char *file_of(const struct raw *recs, size_t *ret_len)
{
	struct perfrec_pdwriter_opts wo = { .sz = sizeof(wo), .owns_fd = true };
	struct perf_event_attr a = { .size = sizeof(a), .type = PERF_TYPE_SOFTWARE,
				     .sample_type = ST, .sample_id_all = 1, .sample_period = 1 };
	const uint64_t ids[] = { ID };
	struct perfrec_pdwriter *w;
	int fd = memfd_create("cg", MFD_CLOEXEC);
	unsigned char *buf;
	off_t len;

	cr_assert_geq(fd, 0);
	cr_assert_eq(perfrec_pdwriter__new(fd, &wo, &w), 0);
	cr_assert_eq(perfrec_pdwriter__add_attr(w, &a, ids, 1, "dummy"), 0);
	cr_assert_eq(perfrec_pdwriter__write(w, recs->buf, recs->len), 0);
	cr_assert_eq(perfrec_pdwriter__finish(w), 0);
	len = lseek(fd, 0, SEEK_END);
	buf = malloc((size_t)len);
	cr_assert_not_null(buf);
	cr_assert_eq(pread(fd, buf, (size_t)len, 0), len);
	perfrec_pdwriter__free(w, false);
	*ret_len = (size_t)len;
	return buf;
}

Test(synth_cgroup, the_records_pass_the_verifier_and_a_path_without_nul_does_not)
{
	struct perfrec_synth_opts o = opts();
	struct perfrec_pdreader *rd = NULL;
	struct perfrec_file_header hdr;
	struct raw recs = { 0 };
	unsigned char *file;
	size_t len, trailer = perfrec_sample_id__size(ST);
	uint16_t size;
	int r = perfrec_synth__cgroups(&o, NULL, append, &recs);

	if (r == -ENOENT || r == -EOPNOTSUPP || r == -EACCES)
		cr_skip_test("no readable cgroup hierarchy: %s", strerror(-r));
	cr_assert_eq(r, 0, "synthesis: %s", strerror(-r));
	file = file_of(&recs, &len);

	cr_assert_eq(perfrec_pdreader__open_mem(file, len, NULL, &rd), 0);
	cr_expect_eq(perfrec_pdreader__verify(rd), 0, "%s", perfrec_pdreader__error(rd, NULL));
	cr_expect_eq(perfrec_pdreader__stats(rd)->by_type[PERF_RECORD_CGROUP], recs.nr);
	perfrec_pdreader__free(rd);

	/* The first record is the root's: fill its path up to the trailer. */
	memcpy(&hdr, file, sizeof(hdr));
	memcpy(&size, file + hdr.data.offset + 6, 2);
	memset(file + hdr.data.offset + 16, 'x', size - 16 - trailer);
	cr_assert_eq(perfrec_pdreader__open_mem(file, len, NULL, &rd), 0);
	cr_expect_eq(perfrec_pdreader__verify(rd), -EBADMSG);
	cr_expect(strstr(perfrec_pdreader__error(rd, NULL), "CGROUP"), "error: %s",
		  perfrec_pdreader__error(rd, NULL));
	perfrec_pdreader__free(rd);
	free(file);
	free(recs.buf);
}
