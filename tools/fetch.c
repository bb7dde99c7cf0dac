// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * `perfrecctl fetch` and `perfrecctl bucket-ls`: the fleet bucket from the
 * command line (bucket.h does the work).  fetch downloads, checked, the
 * files of a host and window that [upload] stored and prints their local
 * paths in time order, one a line, for `perfrecctl cut` or perf; the gaps
 * of the window (lagging uploads among them) go to stderr.  bucket-ls shows
 * the manifests without downloading data.  Exit codes: 0 done (gaps are
 * reported, not failures), 1 an object was rejected or the window holds
 * nothing, 2 usage or the bucket cannot be read.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <json-c/json.h>

#include <perfrec/timespec.h>

#include "bucket.h"
#include "window.h"
#include "perfrecctl.h"
#include "s3.h"

static int parse_time(const char *cmd, const char *opt, const char *s, uint64_t *ret_ns)
{
	return window_parse_time(cmd, opt, s, ret_ns);
}

static void fmt_utc(uint64_t ns, char buf[40])
{
	time_t t = (time_t)(ns / 1000000000ULL);
	struct tm tm;
	char frac[16];

	gmtime_r(&t, &tm);
	strftime(buf, 40, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(frac, sizeof(frac), ".%03uZ", (unsigned)(ns % 1000000000ULL / 1000000));
	strncat(buf, frac, 39 - strlen(buf));
}

/* Options shared by fetch and bucket-ls; labels point into argv. */
struct bucket_args {
	struct bucket_opts o;
	const char **labels;
	size_t nr_labels;
	const char *from, *to, *out;
	bool json;
};

enum { OPT_BUCKET = 256, OPT_HOST, OPT_LABEL, OPT_KEY, OPT_REGION, OPT_CREDS, OPT_FROM, OPT_TO, OPT_JSON };

static const struct option long_opts[] = {
	{ "bucket", required_argument, NULL, OPT_BUCKET },
	{ "host", required_argument, NULL, OPT_HOST },
	{ "label", required_argument, NULL, OPT_LABEL },
	{ "key", required_argument, NULL, OPT_KEY },
	{ "region", required_argument, NULL, OPT_REGION },
	{ "credentials", required_argument, NULL, OPT_CREDS },
	{ "from", required_argument, NULL, OPT_FROM },
	{ "to", required_argument, NULL, OPT_TO },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "output", required_argument, NULL, 'o' },
	{ 0 },
};

/* Parse argv into @a; 0 or EXIT_USAGE (message printed). */
static int parse_args(const char *cmd, int argc, char **argv, struct bucket_args *a)
{
	int c;

	memset(a, 0, sizeof(*a));
	a->o.sz = sizeof(a->o);
	a->labels = calloc((size_t)argc + 1, sizeof(*a->labels));
	if (!a->labels)
		return EXIT_USAGE;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "o:", long_opts, NULL)) != -1) {
		switch (c) {
		case OPT_BUCKET: a->o.url = optarg; break;
		case OPT_HOST: a->o.host = optarg; break;
		case OPT_LABEL:
			if (!strchr(optarg, '=') || optarg[0] == '=') {
				fprintf(stderr, "perfrecctl %s: --label wants KEY=VALUE, not '%s'\n", cmd, optarg);
				return EXIT_USAGE;
			}
			a->labels[a->nr_labels++] = optarg;
			break;
		case OPT_KEY: a->o.key_template = optarg; break;
		case OPT_REGION: a->o.region = optarg; break;
		case OPT_CREDS: a->o.credentials = optarg; break;
		case OPT_FROM: a->from = optarg; break;
		case OPT_TO: a->to = optarg; break;
		case OPT_JSON: a->json = true; break;
		case 'o': a->out = optarg; break;
		default:
			fprintf(stderr, "perfrecctl %s: unknown option or missing value: '%s'\n", cmd, argv[optind - 1]);
			return perfrecctl_usage(cmd);
		}
	}
	if (optind < argc) {
		fprintf(stderr, "perfrecctl %s: unexpected argument '%s'\n", cmd, argv[optind]);
		return perfrecctl_usage(cmd);
	}
	if (!a->o.url) {
		fprintf(stderr, "perfrecctl %s: --bucket URL is required (the upload-url= of [upload])\n", cmd);
		return perfrecctl_usage(cmd);
	}
	a->o.labels = a->nr_labels ? a->labels : NULL;
	return 0;
}

/* The window's gaps on stderr: a host whose uploads lag shows here, not as silence. */
static void print_gaps(const struct bucket_result *res)
{
	for (size_t i = 0; i < res->nr_gaps; i++) {
		const struct bucket_gap *g = &res->gaps[i];
		char f[40], t[40];

		fmt_utc(g->from_ns, f);
		fmt_utc(g->to_ns, t);
		fprintf(stderr, "gap%s%s: %s to %s (%.3f s): not in the bucket (not recorded, or not uploaded yet)\n",
			g->host ? " for host " : "", g->host ? bucket_esc(g->host) : "", f, t,
			(double)(g->to_ns - g->from_ns) / 1e9);
	}
}

int cmd_fetch(int argc, char **argv)
{
	struct bucket_result res = { 0 };
	struct bucket_args a;
	uint64_t from, to;
	char fs[40], ts[40];
	struct stat st;
	int r, rc = 0;

	r = parse_args("fetch", argc, argv, &a);
	if (r)
		goto out_args;
	if (!a.from || !a.to || !a.out) {
		fprintf(stderr, "perfrecctl fetch: --from, --to and -o DIR are required\n");
		r = perfrecctl_usage("fetch");
		goto out_args;
	}
	if (parse_time("fetch", "--from", a.from, &from) < 0 || parse_time("fetch", "--to", a.to, &to) < 0) {
		r = EXIT_USAGE;
		goto out_args;
	}
	if (from > to) {
		fprintf(stderr, "perfrecctl fetch: --from %s is after --to %s\n", a.from, a.to);
		r = EXIT_USAGE;
		goto out_args;
	}
	if (stat(a.out, &st) < 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "perfrecctl fetch: %s is not a directory\n", a.out);
		r = EXIT_USAGE;
		goto out_args;
	}
	r = bucket_fetch(&a.o, from, to, a.out, &res);
	if (r < 0) {
		r = EXIT_USAGE;
		goto out_args;
	}
	fmt_utc(from, fs);
	fmt_utc(to, ts);
	for (size_t i = 0; i < res.nr; i++)
		printf("%s\n", res.objs[i].path);
	if (!res.nr) {
		fprintf(stderr, "perfrecctl fetch: nothing in the bucket between %s and %s%s%s\n", fs, ts,
			a.o.host ? " for host " : "", a.o.host ? a.o.host : "");
		rc = EXIT_BAD;
	} else {
		uint64_t bytes = 0;

		for (size_t i = 0; i < res.nr; i++)
			bytes += res.objs[i].size;
		fprintf(stderr, "fetched %zu file%s (%" PRIu64 " bytes) of the window %s to %s into %s\n", res.nr,
			res.nr == 1 ? "" : "s", bytes, fs, ts, a.out);
	}
	print_gaps(&res);
	if (res.nr_pending)
		fprintf(stderr, "%zu file%s of the window not uploaded yet (manifest stored, data not)\n",
			res.nr_pending, res.nr_pending == 1 ? "" : "s");
	if (res.nr_bad) {
		fprintf(stderr, "perfrecctl fetch: %zu object%s rejected (see above)\n", res.nr_bad,
			res.nr_bad == 1 ? "" : "s");
		rc = EXIT_BAD;
	}
	r = rc;
	bucket_result_exit(&res);
out_args:
	free(a.labels);
	return r;
}

static json_object *object_json(const struct bucket_object *o)
{
	json_object *j = json_object_new_object(), *labels = json_object_new_object();
	char s[40], e[40];

	fmt_utc(o->start_ns, s);
	fmt_utc(o->end_ns, e);
	json_object_object_add(j, "key", json_object_new_string(o->key));
	json_object_object_add(j, "file", json_object_new_string(o->file));
	json_object_object_add(j, "host", json_object_new_string(o->host));
	for (size_t i = 0; o->labels && o->labels[i]; i++) {
		const char *eq = strchr(o->labels[i], '=');
		char *k = strndup(o->labels[i], (size_t)(eq - o->labels[i]));

		if (k)
			json_object_object_add(labels, k, json_object_new_string(eq + 1));
		free(k);
	}
	json_object_object_add(j, "labels", labels);
	json_object_object_add(j, "start", json_object_new_string(s));
	json_object_object_add(j, "end", json_object_new_string(e));
	json_object_object_add(j, "start_ns", json_object_new_uint64(o->start_ns));
	json_object_object_add(j, "end_ns", json_object_new_uint64(o->end_ns));
	json_object_object_add(j, "size", json_object_new_uint64(o->size));
	json_object_object_add(j, "samples", json_object_new_uint64(o->samples));
	json_object_object_add(j, "lost", json_object_new_uint64(o->lost));
	json_object_object_add(j, "sha256", json_object_new_string(o->sha256));
	json_object_object_add(j, "uploaded", json_object_new_boolean(o->uploaded));
	return j;
}

void bucket_ls_print(FILE *f, const struct bucket_result *res, bool json)
{
	if (json) {
		json_object *arr = json_object_new_array();

		for (size_t i = 0; i < res->nr; i++)
			json_object_array_add(arr, object_json(&res->objs[i]));
		fprintf(f, "%s\n", json_object_to_json_string_ext(arr, JSON_C_TO_STRING_PRETTY |
								    JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(arr);
		return;
	}
	fprintf(f, "%-24s %-24s %-16s %10s %12s  %s\n", "START (UTC)", "END (UTC)", "HOST", "SAMPLES", "BYTES", "KEY");
	for (size_t i = 0; i < res->nr; i++) {
		const struct bucket_object *o = &res->objs[i];
		char s[40], e[40];

		fmt_utc(o->start_ns, s);
		fmt_utc(o->end_ns, e);
		/* What the bucket says is someone's input: escaped, one object a line. */
		fprintf(f, "%-24s %-24s %-16s %10" PRIu64 " %12" PRIu64 "  %s%s", s, e, bucket_esc(o->host),
			o->samples, o->size, bucket_esc(o->key), o->uploaded ? "" : " (not uploaded yet)");
		for (size_t j = 0; o->labels && o->labels[j]; j++)
			fprintf(f, "%s%s", j ? "," : " [", bucket_esc(o->labels[j]));
		fprintf(f, "%s\n", o->labels && o->labels[0] ? "]" : "");
	}
}

int cmd_bucket_ls(int argc, char **argv)
{
	struct bucket_result res = { 0 };
	struct bucket_args a;
	int r;

	r = parse_args("bucket-ls", argc, argv, &a);
	if (r)
		goto out;
	if (a.from || a.to || a.out) {
		fprintf(stderr, "perfrecctl bucket-ls: --from, --to and -o belong to fetch\n");
		r = perfrecctl_usage("bucket-ls");
		goto out;
	}
	a.json = a.json || perfrecctl_json_output();
	r = bucket_list(&a.o, &res);
	if (r < 0) {
		r = EXIT_USAGE;
		goto out;
	}
	bucket_ls_print(stdout, &res, a.json);
	r = 0;
	if (res.nr_bad) {
		fprintf(stderr, "perfrecctl bucket-ls: %zu object%s refused (see above)\n", res.nr_bad,
			res.nr_bad == 1 ? "" : "s");
		r = EXIT_BAD;
	}
	bucket_result_exit(&res);
out:
	free(a.labels);
	return r;
}

bool perfrecctl_is_bucket_opt(const char *arg)
{
	for (const struct option *o = long_opts; o->name; o++)
		if (o->val >= OPT_BUCKET && o->val <= OPT_CREDS && arg[0] == '-' && arg[1] == '-' &&
		    !strcmp(arg + 2, o->name))
			return true;
	return false;
}

int perfrecctl_fetch_window(const char *cmd, int argc, char **argv, uint64_t from, uint64_t to, const char *dir,
			    bool buildids, size_t *ret_nr)
{
	struct bucket_result res = { 0 };
	struct bucket_args a;
	int r;

	r = parse_args(cmd, argc, argv, &a);
	if (r)
		goto out;
	a.o.buildids = buildids;
	r = bucket_fetch(&a.o, from, to, dir, &res);
	if (r < 0) {
		r = EXIT_USAGE;
		goto out;
	}
	fprintf(stderr, "fetched %zu file%s of the window from %s\n", res.nr, res.nr == 1 ? "" : "s", a.o.url);
	print_gaps(&res);
	if (res.nr_pending)
		fprintf(stderr, "%zu file%s of the window not uploaded yet (manifest stored, data not)\n",
			res.nr_pending, res.nr_pending == 1 ? "" : "s");
	if (res.nr_bad)
		fprintf(stderr, "perfrecctl %s: %zu object%s rejected (see above): the window has a hole there\n", cmd,
			res.nr_bad, res.nr_bad == 1 ? "" : "s");
	*ret_nr = res.nr;
	bucket_result_exit(&res);
	r = 0;
out:
	free(a.labels);
	return r;
}
