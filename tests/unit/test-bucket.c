// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Tests of the fleet bucket's selection logic, without a network: manifests
 * as the daemon writes them parsed into objects, objects matched by host
 * and labels, their spans against a window (inclusive at both ends), and
 * the gaps of a window per host: small separations between rotated files
 * are not gaps, a lagging host (data not uploaded, or nothing past some
 * time) is (views/bucket.c).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bucket.h"

#define S 1000000000ULL
/* 2026-11-23T14:03:00Z */
#define T0 (1795442580ULL * S)

/* A manifest as daemon/manifest.c writes it (trimmed of fields not read). */
static char *manifest(const char *host, const char *start, const char *end, const char *labels)
{
	char *s = NULL;

	cr_assert_geq(asprintf(&s,
			       "{\n  \"file\": \"perfrecd-%s-x.data\",\n  \"host\": \"%s\",\n"
			       "  \"start\": %s,\n  \"end\": %s,\n  \"recovered\": false,\n"
			       "  \"samples\": 1500,\n  \"lost\": 3,\n  \"size\": 65536,\n"
			       "  \"sha256\": \"%s\",\n  \"labels\": %s\n}\n",
			       host, host, start, end,
			       "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", labels), 0);
	return s;
}

Test(bucket, manifest_parses_into_an_object)
{
	char *m = manifest("web-1", "\"2026-11-23T14:03:00.250000Z\"", "\"2026-11-23T14:03:02.000001Z\"",
			   "{ \"team\": \"sre\", \"dc\": \"fra\" }");
	struct bucket_object o;

	cr_assert_eq(bucket_manifest_parse(m, "fleet/web-1/2026-11-23/perfrecd-web-1-x.data.json", &o), 0);
	cr_expect_str_eq(o.key, "fleet/web-1/2026-11-23/perfrecd-web-1-x.data");
	cr_expect_str_eq(o.file, "perfrecd-web-1-x.data");
	cr_expect_str_eq(o.host, "web-1");
	cr_expect_eq(o.start_ns, T0 + 250000000);
	cr_expect_eq(o.end_ns, T0 + 2 * S + 1000);
	cr_expect_eq(o.samples, 1500);
	cr_expect_eq(o.lost, 3);
	cr_expect_eq(o.size, 65536);
	cr_expect_str_eq(o.sha256, "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08");
	/* Labels as KEY=VALUE, sorted. */
	cr_assert_not_null(o.labels[0]);
	cr_expect_str_eq(o.labels[0], "dc=fra");
	cr_assert_not_null(o.labels[1]);
	cr_expect_str_eq(o.labels[1], "team=sre");
	cr_expect_null(o.labels[2]);
	cr_expect_not(o.uploaded);
	cr_expect_null(o.path);
	bucket_object_exit(&o);
	free(m);
}

Test(bucket, manifests_without_what_selection_needs_are_refused)
{
	static const struct {
		const char *json, *key;
	} cases[] = {
		{ "not json", "a.json" },
		{ "[1,2]", "a.json" },
		/* start null: a recovered file without clock data cannot be placed in time */
		{ "{\"host\":\"a\",\"start\":null,\"end\":\"2026-11-23T14:03:00Z\",\"sha256\":\"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\"}", "a.json" },
		{ "{\"host\":\"a\",\"start\":\"2026-11-23T14:03:00Z\",\"end\":\"2026-11-23T14:03:00Z\"}", "a.json" },
		{ "{\"host\":\"a\",\"start\":\"2026-11-23T14:03:00Z\",\"end\":\"2026-11-23T14:03:00Z\",\"sha256\":\"abc\"}", "a.json" },
		{ "{\"start\":\"2026-11-23T14:03:00Z\",\"end\":\"2026-11-23T14:03:00Z\",\"sha256\":\"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\"}", "a.json" },
		/* ends before it starts */
		{ "{\"host\":\"a\",\"start\":\"2026-11-23T14:03:01Z\",\"end\":\"2026-11-23T14:03:00Z\",\"sha256\":\"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\"}", "a.json" },
		/* a good manifest under a key that is not "<data key>.json" */
		{ "{\"host\":\"a\",\"start\":\"2026-11-23T14:03:00Z\",\"end\":\"2026-11-23T14:03:00Z\",\"sha256\":\"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\"}", "a.data" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct bucket_object o;

		cr_expect_eq(bucket_manifest_parse(cases[i].json, cases[i].key, &o), -EBADMSG, "case %zu accepted", i);
	}
}

/* A manifest whose file, size and host are as given; the rest as perfrecd writes it. */
static char *forged(const char *file_json, const char *size, const char *host)
{
	char *s = NULL;

	cr_assert_geq(asprintf(&s,
			       "{\"file\": %s, \"host\": \"%s\", \"start\": \"2026-11-23T14:03:00Z\","
			       " \"end\": \"2026-11-23T14:03:01Z\", \"size\": %s, \"sha256\":"
			       " \"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\"}",
			       file_json, host, size), 0);
	return s;
}

/*
 * The bucket is someone else's input: a file name that would forge a line
 * of fetch's output, pass for an option, climb out of the directory or
 * hide, and a size no recording has, are refused, not shown or created.
 */
Test(bucket, forged_names_and_sizes_are_refused)
{
	static const char *const bad_files[] = {
		"\"N\\nfetched INJECTED.data\"", "\"-rf\"", "\"-rf.data\"", "\"../x.data\"", "\"a/b.data\"",
		"\".hidden.data\"", "\".data\"", "\"x.data\\u001b[2J\"", "\"esc\\u001b.data\"", "\"x.json\"",
		"\"\"", "\"tab\\t.data\"", "\"sp ace.data\"", "\"caf\u00e9.data\"",
	};
	struct bucket_object o;
	char *m, *longname;

	for (size_t i = 0; i < sizeof(bad_files) / sizeof(bad_files[0]); i++) {
		m = forged(bad_files[i], "10", "h1");
		cr_expect_eq(bucket_manifest_parse(m, "h1/d/k.data.json", &o), -EINVAL, "file %s accepted", bad_files[i]);
		free(m);
	}
	/* No file in the manifest: the key's last part, under the same rules. */
	cr_expect_eq(bucket_manifest_parse("{\"host\":\"h\",\"start\":\"2026-11-23T14:03:00Z\",\"end\":"
					   "\"2026-11-23T14:03:00Z\",\"sha256\":\"9f86d081884c7d659a2feaa0c55ad015a3bf"
					   "4f1b2b0b822cd15d6c15b0f00a08\"}", "h/d/-rf.json", &o), -EINVAL);
	cr_assert_geq(asprintf(&longname, "\"%0*d.data\"", BUCKET_NAME_MAX, 7), 0);
	m = forged(longname, "10", "h1");
	cr_expect_eq(bucket_manifest_parse(m, "h1/d/k.data.json", &o), -EINVAL, "a name over NAME_MAX's margin");
	free(m);
	free(longname);
	m = forged("\"perfrecd-h1-20261123T140300.000Z-000001.data\"", "18446744073709551615", "h1");
	cr_expect_eq(bucket_manifest_parse(m, "h1/d/k.data.json", &o), -ERANGE, "a size of 2^64-1 accepted");
	free(m);
	m = forged("\"perfrecd-h1-x.data\"", "10", "h\\nforged");
	cr_expect_eq(bucket_manifest_parse(m, "h1/d/k.data.json", &o), -EBADMSG, "a host with a newline accepted");
	free(m);
	/* What perfrecd names its files passes: rotated, snapshot, recovered. */
	m = forged("\"perfrecd-web_1.example-20261123T140300.000Z-000001.data\"", "1099511627776", "web_1.example");
	cr_assert_eq(bucket_manifest_parse(m, "h1/d/k.data.json", &o), 0);
	cr_expect_str_eq(o.file, "perfrecd-web_1.example-20261123T140300.000Z-000001.data");
	bucket_object_exit(&o);
	free(m);
	cr_expect(bucket_file_name_ok("perfrecd-h1-20261123T140300.000Z-000001-recovered.data"));
}

Test(bucket, names_print_escaped)
{
	cr_expect_str_eq(bucket_esc("N\nfetched INJECTED.data"), "N\\nfetched INJECTED.data");
	cr_expect_str_eq(bucket_esc("\x1b[2J\\\t\x7f\xc3\xa9"), "\\x1b[2J\\\\\\t\\x7f\\xc3\\xa9");
	cr_expect_str_eq(bucket_esc("plain-key.data"), "plain-key.data");
}

static struct bucket_object obj(const char *host, uint64_t start, uint64_t end, bool uploaded,
				const char *l1, const char *l2)
{
	struct bucket_object o = { .host = (char *)host, .key = (char *)host, .start_ns = start, .end_ns = end,
				   .uploaded = uploaded };
	static char *labels[16][3];
	static size_t n;
	char **l = labels[n++ % 16];

	l[0] = (char *)l1;
	l[1] = l1 ? (char *)l2 : NULL;
	l[2] = NULL;
	o.labels = l;
	return o;
}

Test(bucket, host_and_every_label_must_match)
{
	struct bucket_object a = obj("a", 0, 1, true, "dc=fra", "team=sre");
	struct bucket_object b = obj("b", 0, 1, true, NULL, NULL);
	static const char *const sre[] = { "team=sre", NULL };
	static const char *const sre_fra[] = { "team=sre", "dc=fra", NULL };
	static const char *const sre_ams[] = { "team=sre", "dc=ams", NULL };
	static const char *const prefix_only[] = { "team=s", NULL };

	cr_expect(bucket_object_matches(&a, NULL, NULL));
	cr_expect(bucket_object_matches(&a, "a", NULL));
	cr_expect_not(bucket_object_matches(&a, "b", NULL));
	cr_expect_not(bucket_object_matches(&a, "", NULL));
	cr_expect(bucket_object_matches(&a, NULL, sre));
	cr_expect(bucket_object_matches(&a, "a", sre_fra));
	cr_expect_not(bucket_object_matches(&a, "a", sre_ams));
	cr_expect_not(bucket_object_matches(&a, NULL, prefix_only));
	cr_expect(bucket_object_matches(&b, "b", NULL));
	cr_expect_not(bucket_object_matches(&b, NULL, sre));
}

Test(bucket, spans_overlap_windows_inclusively)
{
	struct bucket_object o = obj("a", 10 * S, 20 * S, true, NULL, NULL);
	static const struct {
		uint64_t from, to;
		bool overlaps;
	} cases[] = {
		{ 0, 9 * S, false }, { 0, 10 * S, true }, { 12 * S, 13 * S, true }, { 0, 30 * S, true },
		{ 20 * S, 30 * S, true }, { 20 * S + 1, 30 * S, false }, { 15 * S, 15 * S, true },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		cr_expect_eq(bucket_object_overlaps(&o, cases[i].from, cases[i].to), cases[i].overlaps, "case %zu", i);
}

Test(bucket, the_listing_rules_out_objects_outside_the_window)
{
	const uint64_t slack = BUCKET_SLACK_NS;
	static const char *const rot = "fleet/a/2026-11-23/perfrecd-a-20261123T140300.000Z-000001.data";
	static const char *const snap = "fleet/a/2026-11-23/perfrecd-a-20261123T150000.000Z-000009-snapshot.data";
	static const char *const rec = "fleet/a/2026-11-23/perfrecd-a-20261123T150000.000Z-000009-recovered.data";
	const struct {
		const char *key;
		uint64_t mtime, from, to;
		bool may;
	} cases[] = {
		/* stored within the window, or later: maybe */
		{ rot, T0 + 60 * S, T0, T0 + 60 * S, true },
		{ rot, 0, T0, T0 + S, true },
		/* stored before the window began: no, unless within the slack */
		{ rot, T0 + 60 * S, T0 + 60 * S + slack + 1, T0 + 99999 * S, false },
		{ rot, T0 + 60 * S, T0 + 60 * S + slack, T0 + 99999 * S, true },
		/* a rotated file named after the window's end: no, unless within the slack */
		{ rot, T0 + 60 * S, T0 - 99999 * S, T0 - slack - 1, false },
		{ rot, T0 + 60 * S, T0 - 99999 * S, T0 - slack, true },
		/* a snapshot holds history from before its name's time */
		{ snap, T0 + 3600 * S, T0 - 600 * S, T0 - 599 * S, true },
		{ rec, T0 + 3600 * S, T0 - 600 * S, T0 - 599 * S, true },
		{ "fleet/a/other.data", T0, T0 - 600 * S, T0 - 599 * S, true },
		{ "fleet/a/x-20261323T140300.000Z-000001.data", T0, T0 - 600 * S, T0 - 599 * S, true },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		cr_expect_eq(bucket_key_may_overlap(cases[i].key, cases[i].mtime, cases[i].from, cases[i].to),
			     cases[i].may, "case %zu: %s", i, cases[i].key);
}

Test(bucket, keys_name_their_host_by_the_template)
{
	static const struct {
		const char *tmpl, *key, *host;
	} cases[] = {
		{ "{host}/{date}/{file}", "web-1/2026-11-23/f.data.json", "web-1" },
		{ "fleet/{host}/{date}/{file}", "fleet/db.2/2026-11-23/f.data.json", "db.2" },
		{ "fleet/{host}-{file}", "fleet/a-b-f.data.json", "a" },
		{ "fleet/{host}/{date}/{file}", "other/a/2026-11-23/f.data.json", NULL },
		{ "fleet/{host}/{date}/{file}", "fleet//2026-11-23/f.data.json", NULL },
		{ "{date}/{host}/{file}", "2026-11-23/a/f.data.json", NULL }, /* {host} not first: unknown */
		{ "fleet/{host}{file}", "fleet/af.data.json", NULL },       /* nothing ends the name */
		{ "fleet/{file}", "fleet/f.data.json", NULL },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *h = bucket_key_host(cases[i].tmpl, cases[i].key);

		if (cases[i].host) {
			cr_assert_not_null(h, "%s in %s", cases[i].key, cases[i].tmpl);
			cr_expect_str_eq(h, cases[i].host);
		} else {
			cr_expect_null(h, "%s in %s gave %s", cases[i].key, cases[i].tmpl, h);
		}
		free(h);
	}
}

Test(bucket, objects_sort_by_start_then_host)
{
	struct bucket_object v[] = {
		obj("b", 5 * S, 6 * S, true, NULL, NULL),
		obj("a", 7 * S, 8 * S, true, NULL, NULL),
		obj("a", 5 * S, 6 * S, true, NULL, NULL),
	};

	bucket_sort(v, 3);
	cr_expect(v[0].start_ns == 5 * S && !strcmp(v[0].host, "a"));
	cr_expect(v[1].start_ns == 5 * S && !strcmp(v[1].host, "b"));
	cr_expect(v[2].start_ns == 7 * S);
}

struct gap_case {
	const char *name;
	const char *hosts[4]; /* NULL-terminated; hosts[0] NULL: every host of the objects */
	uint64_t from, to;
	struct { const char *host; uint64_t from, to; } want[4];
	size_t nr_want;
};

static void check_gaps(const struct bucket_object *objs, size_t nr, const struct gap_case *c)
{
	struct bucket_gap *g = NULL;
	size_t ng = 0;

	cr_assert_eq(bucket_gaps(objs, nr, c->hosts[0] ? c->hosts : NULL, c->from, c->to, S, &g, &ng), 0, "%s",
		     c->name);
	cr_expect_eq(ng, c->nr_want, "%s: %zu gaps, want %zu", c->name, ng, c->nr_want);
	for (size_t i = 0; i < ng && i < c->nr_want; i++) {
		if (c->want[i].host)
			cr_expect(g[i].host && !strcmp(g[i].host, c->want[i].host), "%s: gap %zu host %s", c->name, i,
				  g[i].host ? g[i].host : "(null)");
		else
			cr_expect_null(g[i].host, "%s: gap %zu host", c->name, i);
		cr_expect_eq(g[i].from_ns, c->want[i].from, "%s: gap %zu from %llu", c->name, i,
			     (unsigned long long)g[i].from_ns);
		cr_expect_eq(g[i].to_ns, c->want[i].to, "%s: gap %zu to %llu", c->name, i,
			     (unsigned long long)g[i].to_ns);
	}
	for (size_t i = 0; i < ng; i++)
		free(g[i].host);
	free(g);
}

Test(bucket, gaps_are_the_window_parts_no_object_of_a_host_covers)
{
	/*
	 * Host a: files 10-12 s, 12.2-14 s (0.2 s apart: adjacent), 20-22 s
	 * (a stop of 6 s), and 22.1-30 s whose data is not uploaded yet.
	 * Host b: 0-40 s, in one file listed out of order.
	 */
	const struct bucket_object objs[] = {
		obj("b", 0, 40 * S, true, NULL, NULL),
		obj("a", 20 * S, 22 * S, true, NULL, NULL),
		obj("a", 10 * S, 12 * S, true, NULL, NULL),
		obj("a", 12 * S + S / 5, 14 * S, true, NULL, NULL),
		obj("a", 22 * S + S / 10, 30 * S, false, NULL, NULL),
	};
	const struct gap_case cases[] = {
		{ "covered", { "a" }, 10 * S, 14 * S, { { 0 } }, 0 },
		{ "small separation", { "a" }, 11 * S, 13 * S, { { 0 } }, 0 },
		{ "stopped daemon", { "a" }, 11 * S, 21 * S, { { "a", 14 * S, 20 * S } }, 1 },
		{ "lagging upload", { "a" }, 21 * S, 35 * S, { { "a", 22 * S, 35 * S } }, 1 },
		{ "before the first", { "a" }, 5 * S, 11 * S, { { "a", 5 * S, 10 * S } }, 1 },
		{ "host with nothing", { "c" }, 5 * S, 11 * S, { { "c", 5 * S, 11 * S } }, 1 },
		{ "point in a gap", { "a" }, 16 * S, 16 * S, { { "a", 16 * S, 16 * S } }, 1 },
		{ "every host", { NULL }, 11 * S, 35 * S,
		  { { "a", 14 * S, 20 * S }, { "a", 22 * S, 35 * S } }, 2 },
		{ "every host, b short", { NULL }, 30 * S, 45 * S,
		  { { "a", 30 * S, 45 * S }, { "b", 40 * S, 45 * S } }, 2 },
		/* the fleet that matched, one of it silent in the window */
		{ "named hosts", { "b", "c" }, 30 * S, 45 * S,
		  { { "b", 40 * S, 45 * S }, { "c", 30 * S, 45 * S } }, 2 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		check_gaps(objs, sizeof(objs) / sizeof(objs[0]), &cases[i]);
}

Test(bucket, gaps_of_an_empty_bucket)
{
	const struct gap_case any = { "nothing at all", { NULL }, 5 * S, 9 * S, { { NULL, 5 * S, 9 * S } }, 1 };
	const struct gap_case host = { "nothing for a", { "a" }, 5 * S, 9 * S, { { "a", 5 * S, 9 * S } }, 1 };
	const struct bucket_object pending[] = { obj("a", 0, 10 * S, false, NULL, NULL) };

	check_gaps(NULL, 0, &any);
	check_gaps(NULL, 0, &host);
	/* Only a manifest whose data is not there: still nothing. */
	check_gaps(pending, 1, &any);
}
