// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Tests of perfrecctl's busiest containers and units (views/cgroup-summary.c):
 * two manifests' per-cgroup entries summed per container (across files and
 * cgroups) and per unit, busiest first, a container's scope not listed as a
 * unit, shares of the cgroup-tagged samples, and files without a manifest
 * or without cgroups left out.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "cgroup-summary.h"

#define ID "4f1c2a9e0b7d3c6a5e8f9012ab34cd56ef7890123456789abcdef0123456789a"
#define CRI "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define UID "1234abcd-5678-90ef-1234-567890abcdef"

static char dir[] = "/tmp/test-cgroup-summary.XXXXXX";

static char *manifest(const char *name, const char *body)
{
	char *p;
	FILE *f;

	cr_assert_geq(asprintf(&p, "%s/%s", dir, name), 0);
	f = fopen(p, "we");
	cr_assert_not_null(f);
	fputs(body, f);
	cr_assert_eq(fclose(f), 0);
	return p;
}

static void setup(void)
{
	cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_expect_eq(system(cmd), 0);
}

static const char one[] = "{\"cgroups\": ["
	"{\"id\": 1, \"path\": \"/system.slice/docker-" ID ".scope\", \"samples\": 100, \"runtime\": \"docker\","
	" \"container\": \"" ID "\", \"unit\": \"docker-" ID ".scope\", \"slice\": \"system.slice\"},"
	"{\"id\": 2, \"path\": \"/system.slice/nginx.service\", \"samples\": 50, \"unit\": \"nginx.service\","
	" \"slice\": \"system.slice\"},"
	"{\"id\": 3, \"path\": \"/\", \"samples\": 10}]}";
static const char two[] = "{\"cgroups\": ["
	"{\"id\": 4, \"path\": \"/kubepods.slice/x\", \"samples\": 120, \"runtime\": \"containerd\","
	" \"container\": \"" CRI "\", \"pod\": \"" UID "\", \"qos\": \"burstable\"},"
	"{\"id\": 5, \"path\": \"/system.slice/docker-" ID ".scope/sub\", \"samples\": 30, \"runtime\": \"docker\","
	" \"container\": \"" ID "\", \"unit\": \"docker-" ID ".scope\"},"
	"{\"id\": 6, \"path\": \"/system.slice/nginx.service\", \"samples\": 40, \"unit\": \"nginx.service\"}]}";

Test(cgroup_summary, containers_and_units_are_summed_busiest_first, .init = setup, .fini = teardown)
{
	char *a = manifest("a.data.json", one), *b = manifest("b.data.json", two);
	char *c = manifest("c.data.json", "{\"samples\": 5}"), *d, *text = NULL;
	struct cgroup_summary *s;
	json_object *j, *arr, *e;
	size_t len = 0;
	FILE *f;

	cr_assert_geq(asprintf(&d, "%s/missing.json", dir), 0);
	cr_assert_eq(cgroup_summary_new(&s), 0);
	cr_expect_eq(cgroup_summary_add_manifest(s, a), 0);
	cr_expect_eq(cgroup_summary_add_manifest(s, b), 0);
	cr_expect_eq(cgroup_summary_add_manifest(s, c), -ENOENT);
	cr_expect_eq(cgroup_summary_add_manifest(s, d), -ENOENT);
	cr_expect_eq(cgroup_summary_files(s), 2);

	j = cgroup_summary_json(s);
	cr_assert_not_null(j);
	cr_expect_eq(json_object_get_uint64(json_object_object_get(j, "samples")), 350);
	arr = json_object_object_get(j, "containers");
	cr_assert_eq(json_object_array_length(arr), 2, "%s", json_object_to_json_string(j));
	e = json_object_array_get_idx(arr, 0);
	cr_expect_str_eq(json_object_get_string(json_object_object_get(e, "container")), ID);
	cr_expect_str_eq(json_object_get_string(json_object_object_get(e, "runtime")), "docker");
	cr_expect_eq(json_object_get_uint64(json_object_object_get(e, "samples")), 130);
	cr_expect_null(json_object_object_get(e, "pod"));
	e = json_object_array_get_idx(arr, 1);
	cr_expect_str_eq(json_object_get_string(json_object_object_get(e, "pod")), UID);
	cr_expect_str_eq(json_object_get_string(json_object_object_get(e, "qos")), "burstable");
	cr_expect_eq(json_object_get_uint64(json_object_object_get(e, "samples")), 120);
	arr = json_object_object_get(j, "units");
	cr_assert_eq(json_object_array_length(arr), 1, "a container's scope is not a unit here: %s",
		     json_object_to_json_string(j));
	e = json_object_array_get_idx(arr, 0);
	cr_expect_str_eq(json_object_get_string(json_object_object_get(e, "unit")), "nginx.service");
	cr_expect_eq(json_object_get_uint64(json_object_object_get(e, "samples")), 90);
	json_object_put(j);

	f = open_memstream(&text, &len);
	cr_assert_not_null(f);
	cgroup_summary_print(s, f, "heading", "", 1);
	fclose(f);
	cr_expect_str_eq(text, "heading\nbusiest containers: 4f1c2a9e0b7d (docker) 130 samples 37.1%\n"
			       "busiest units: nginx.service 90 samples 25.7%\n");
	free(text);
	cgroup_summary_free(s);
	free(a);
	free(b);
	free(c);
	free(d);
}

Test(cgroup_summary, nothing_is_printed_without_containers_or_units)
{
	struct cgroup_summary *s;
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	cr_assert_eq(cgroup_summary_new(&s), 0);
	f = open_memstream(&text, &len);
	cgroup_summary_print(s, f, "heading", "", 5);
	fclose(f);
	cr_expect_str_eq(text, "");
	free(text);
	cgroup_summary_free(s);
}
