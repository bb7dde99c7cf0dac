// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Tests of the manifest's cgroup part (the paths' labels themselves are
 * test-cgroup-label.c's): the per-cgroup counts of a file written here
 * with known CGROUP records and samples, with their labels, including samples of an attr without PERF_SAMPLE_CGROUP (not
 * counted) and a cgroup id no record names (counted, without a path).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <json-c/json.h>

#include <perfrec/event.h>
#include <perfrec/pdwriter.h>

#include "manifest-cgroup.h"

/* --- counting from a file ------------------------------------------------ */

#define CG_ST (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CGROUP)
#define OTHER_ST (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME)

/* When set, every record written is also counted here, as the recorder does. */
static struct cgroup_counts *counts;

static void put_cgroup(struct perfrec_pdwriter *w, uint64_t cgid, const char *path)
{
	uint64_t rec[64] = { 0 };
	struct perf_event_header *h = (struct perf_event_header *)rec;
	struct perfrec_sample_id sid = { .time = 1, .id = 21 };
	size_t body = (sizeof(*h) + 8 + strlen(path) + 1 + 7) & ~(size_t)7;

	h->type = PERF_RECORD_CGROUP;
	memcpy((char *)rec + 8, &cgid, 8);
	memcpy((char *)rec + 16, path, strlen(path));
	perfrec_sample_id__write((char *)rec + body, CG_ST, &sid);
	h->size = (uint16_t)(body + perfrec_sample_id__size(CG_ST));
	cr_assert_eq(perfrec_pdwriter__write(w, rec, h->size), 0);
	if (counts)
		cr_assert_eq(cgroup_counts_note_cgroup(counts, h), 0);
}

static void put_sample(struct perfrec_pdwriter *w, uint64_t id, bool with_cgroup, uint64_t cgid)
{
	uint64_t rec[8] = { 0 };
	struct perf_event_header *h = (struct perf_event_header *)rec;

	h->type = PERF_RECORD_SAMPLE;
	rec[1] = id;
	rec[2] = ((uint64_t)7 << 32) | 7; /* pid, tid */
	rec[3] = 100;                     /* time */
	rec[4] = cgid;
	h->size = (uint16_t)(with_cgroup ? 40 : 32);
	cr_assert_eq(perfrec_pdwriter__write(w, rec, h->size), 0);
	if (counts)
		cr_assert_eq(cgroup_counts_note_sample(counts, h, with_cgroup ? CG_ST : OTHER_ST, 0), 0);
}

static char *write_file(void)
{
	struct perfrec_pdwriter_opts wo = { .sz = sizeof(wo), .owns_fd = true };
	struct perf_event_attr a;
	const uint64_t cg_ids[] = { 21, 22 }, other_ids[] = { 31 };
	struct perfrec_pdwriter *w;
	char *path = strdup("/tmp/test-manifest-cgroup.XXXXXX");
	int fd;

	cr_assert_not_null(path);
	fd = mkostemp(path, O_CLOEXEC);
	cr_assert_geq(fd, 0);
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.sample_period = 1000;
	a.sample_id_all = 1;
	a.sample_type = CG_ST;
	cr_assert_eq(perfrec_pdwriter__new(fd, &wo, &w), 0);
	cr_assert_eq(perfrec_pdwriter__add_attr(w, &a, cg_ids, 2, "cpu-clock"), 0);
	a.sample_type = OTHER_ST;
	cr_assert_eq(perfrec_pdwriter__add_attr(w, &a, other_ids, 1, "offcpu-time"), 0);
	put_cgroup(w, 1, "/");
	put_cgroup(w, 500, "/system.slice/nginx.service");
	put_cgroup(w, 700, "/idle.slice");           /* no samples: not listed */
	for (int i = 0; i < 5; i++)
		put_sample(w, cg_ids[i % 2], true, 500);
	for (int i = 0; i < 3; i++)
		put_sample(w, 21, true, 1);
	for (int i = 0; i < 2; i++)
		put_sample(w, 22, true, 600);          /* no CGROUP record */
	for (int i = 0; i < 4; i++)
		put_sample(w, 31, false, 0);           /* attr without cgroups */
	cr_assert_eq(perfrec_pdwriter__finish(w), 0);
	perfrec_pdwriter__free(w, false);
	return path;
}

static json_object *field(json_object *o, const char *key)
{
	json_object *v = NULL;

	json_object_object_get_ex(o, key, &v);
	return v;
}

Test(manifest_cgroup, samples_are_counted_per_cgroup_most_first)
{
	char *path = write_file();
	json_object *arr = NULL, *e;
	int r = manifest_cgroups(path, &arr);

	unlink(path);
	free(path);
	cr_assert_eq(r, 0, "manifest_cgroups: %s", strerror(-r));
	cr_assert_eq(json_object_array_length(arr), 3, "%s", json_object_to_json_string(arr));

	e = json_object_array_get_idx(arr, 0);
	cr_expect_eq(json_object_get_uint64(field(e, "id")), 500);
	cr_expect_str_eq(json_object_get_string(field(e, "path")), "/system.slice/nginx.service");
	cr_expect_eq(json_object_get_uint64(field(e, "samples")), 5);
	cr_expect_str_eq(json_object_get_string(field(e, "unit")), "nginx.service");
	cr_expect_str_eq(json_object_get_string(field(e, "slice")), "system.slice");
	cr_expect_null(field(e, "container"));
	cr_expect_null(field(e, "runtime"));

	e = json_object_array_get_idx(arr, 1);
	cr_expect_eq(json_object_get_uint64(field(e, "id")), 1);
	cr_expect_str_eq(json_object_get_string(field(e, "path")), "/");
	cr_expect_eq(json_object_get_uint64(field(e, "samples")), 3);
	cr_expect_null(field(e, "unit"));

	e = json_object_array_get_idx(arr, 2);
	cr_expect_eq(json_object_get_uint64(field(e, "id")), 600);
	cr_expect_null(field(e, "path"), "an id without a CGROUP record has no path");
	cr_expect_eq(json_object_get_uint64(field(e, "samples")), 2);
	json_object_put(arr);
}

Test(manifest_cgroup, counts_kept_while_writing_equal_the_files_own)
{
	json_object *from_file = NULL, *kept = NULL;
	char *path;
	int r;

	cr_assert_eq(cgroup_counts_new(&counts), 0);
	path = write_file();
	r = manifest_cgroups(path, &from_file);
	unlink(path);
	free(path);
	cr_assert_eq(r, 0, "manifest_cgroups: %s", strerror(-r));
	cr_assert_eq(cgroup_counts_json(counts, &kept), 0);
	cr_assert_eq(json_object_array_length(kept), 3);
	cr_expect_str_eq(json_object_to_json_string(kept), json_object_to_json_string(from_file));
	json_object_put(kept);
	json_object_put(from_file);
	cgroup_counts_free(counts);
	counts = NULL;
}

Test(manifest_cgroup, an_unreadable_file_is_an_error_not_an_empty_list)
{
	json_object *arr = NULL;

	cr_expect_eq(manifest_cgroups("/nonexistent/file.data", &arr), -ENOENT);
	cr_expect_null(arr);
}
