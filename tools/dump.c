// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * `perfrecctl dump [--json] FILE`: a human (or JSON) summary of a perf.data
 * file: its features with decoded values, its attrs, record counts by type,
 * samples per event and per CPU, lost totals and the sampled time span.  All
 * decoding lives in lib/pdreader.c; this file only prints.  A damaged file is
 * still summarised up to its first problem, which is printed, and exits 1.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>
#include <perfrec/event.h>
#include <perfrec/pdreader.h>

#include "perfrecctl.h"

/*
 * PERFREC_FEAT_SPANS (flight-recorder snapshots): which span of time each
 * CPU's records cover.  Returns the entries (borrowed) and their count, or
 * -ENOENT / -EBADMSG.
 */
static int spans(const struct perfrec_pdreader *r, const struct perfrec_spans_feature **ret_hdr,
		 const struct perfrec_cpu_span **ret_cpus)
{
	const struct perfrec_spans_feature *hdr;
	const void *data;
	size_t len;
	int n = perfrec_pdreader__feature(r, PERFREC_FEAT_SPANS, &data, &len);

	if (n < 0)
		return n;
	hdr = data;
	if (len < sizeof(*hdr) || (len - sizeof(*hdr)) / sizeof(**ret_cpus) < hdr->nr)
		return -EBADMSG;
	*ret_hdr = hdr;
	*ret_cpus = (const struct perfrec_cpu_span *)(hdr + 1);
	return (int)hdr->nr;
}

static int spans_text(const struct perfrec_pdreader *r, char *buf, size_t len)
{
	const struct perfrec_spans_feature *hdr;
	const struct perfrec_cpu_span *c;
	uint64_t common_first = 0, common_last = UINT64_MAX;
	int n = spans(r, &hdr, &c);

	if (n < 0)
		return n;
	for (int i = 0; i < n; i++) {
		if (!c[i].samples)
			continue;
		if (c[i].first_time > common_first)
			common_first = c[i].first_time;
		if (c[i].last_time < common_last)
			common_last = c[i].last_time;
	}
	return snprintf(buf, len, "window %.3f s, snapshot at %llu, %d CPUs, covered by all %.3f s",
			(double)hdr->window_ns / 1e9, (unsigned long long)hdr->snapshot_time, n,
			common_last > common_first && common_last != UINT64_MAX ?
			(double)(common_last - common_first) / 1e9 : 0.0);
}

static int feature_text(const struct perfrec_pdreader *r, int f, char *buf, size_t len)
{
	return f == PERFREC_FEAT_SPANS ? spans_text(r, buf, len) : perfrec_pdreader__feature_text(r, f, buf, len);
}

static const char *feature_name(int f)
{
	return f == PERFREC_FEAT_SPANS ? "PERFREC_SPANS" : perfrec_pdreader__feature_name(f);
}

static void dump_text(struct perfrec_pdreader *r, const char *path, int vret)
{
	const struct perfrec_pdreader_stats *st = perfrec_pdreader__stats(r);
	const struct perfrec_file_header *h = perfrec_pdreader__header(r);
	char buf[1024];
	uint64_t off;

	printf("file: %s\n", path);
	printf("data: offset %llu, size %llu\n", (unsigned long long)h->data.offset,
	       (unsigned long long)h->data.size);
	printf("features:\n");
	for (int f = 1; f < PERFREC_FEAT_BITS; f++) {
		int n = feature_text(r, f, buf, sizeof(buf));

		if (n == -ENOENT)
			continue;
		printf("  %-14s %s\n", feature_name(f), n < 0 ? "(malformed)" : buf);
	}
	{
		const struct perfrec_spans_feature *sh;
		const struct perfrec_cpu_span *c;
		int n = spans(r, &sh, &c);

		for (int i = 0; i < n; i++)
			printf("    cpu %-4u %llu .. %llu (%.3f s, %llu samples)\n", c[i].cpu,
			       (unsigned long long)c[i].first_time, (unsigned long long)c[i].last_time,
			       (double)(c[i].last_time - c[i].first_time) / 1e9,
			       (unsigned long long)c[i].samples);
	}
	printf("events:\n");
	for (size_t i = 0; i < perfrec_pdreader__nr_attrs(r); i++) {
		const struct perfrec_pdreader_attr *a = perfrec_pdreader__attr(r, i);

		printf("  [%zu] %s: type %u, config 0x%llx, sample_type 0x%llx, %s %llu, %zu ids",
		       i, a->name ? a->name : "(no name)", a->attr.type, (unsigned long long)a->attr.config,
		       (unsigned long long)a->attr.sample_type, a->attr.freq ? "freq" : "period",
		       (unsigned long long)a->attr.sample_period, a->nr_ids);
		if (st->samples_per_attr)
			printf(", %llu samples", (unsigned long long)st->samples_per_attr[i]);
		printf("\n");
		if (a->nr_ids) {
			printf("      ids:");
			for (size_t j = 0; j < a->nr_ids && j < 16; j++)
				printf(" %llu", (unsigned long long)a->ids[j]);
			printf("%s\n", a->nr_ids > 16 ? " ..." : "");
		}
	}
	printf("records: %llu\n", (unsigned long long)st->nr_records);
	for (uint32_t t = 0; t < PERFREC_RECORD_USER_MAX; t++)
		if (st->by_type[t])
			printf("  %-18s %llu\n", perfrec_event__type_name(t), (unsigned long long)st->by_type[t]);
	printf("samples: %llu\n", (unsigned long long)st->nr_samples);
	for (size_t c = 0; c < st->nr_cpus; c++)
		if (st->samples_per_cpu[c])
			printf("  cpu %-4zu %llu\n", c, (unsigned long long)st->samples_per_cpu[c]);
	if (st->samples_other_cpu)
		printf("  cpu ?    %llu\n", (unsigned long long)st->samples_other_cpu);
	if (st->stack_samples)
		printf("user stacks: %llu samples, %llu bytes copied per sample, %llu of them filled\n",
		       (unsigned long long)st->stack_samples,
		       (unsigned long long)(st->stack_bytes / st->stack_samples),
		       (unsigned long long)(st->stack_dyn_bytes / st->stack_samples));
	printf("lost: %llu events (LOST), %llu samples (LOST_SAMPLES)\n",
	       (unsigned long long)st->lost, (unsigned long long)st->lost_samples);
	if (st->has_time)
		printf("time: first %llu, last %llu, span %.6f s\n", (unsigned long long)st->first_time,
		       (unsigned long long)st->last_time, (double)(st->last_time - st->first_time) / 1e9);
	if (vret < 0) {
		const char *msg = perfrec_pdreader__error(r, &off);

		printf("problem: %s at offset %llu\n", msg, (unsigned long long)off);
	}
}

static void dump_json(struct perfrec_pdreader *r, const char *path, int vret)
{
	const struct perfrec_pdreader_stats *st = perfrec_pdreader__stats(r);
	json_object *o = json_object_new_object(), *feats = json_object_new_object();
	json_object *evs = json_object_new_array(), *types = json_object_new_object();
	json_object *cpus = json_object_new_object();
	char buf[1024];
	uint64_t off;

	json_object_object_add(o, "file", json_object_new_string(path));
	for (int f = 1; f < PERFREC_FEAT_BITS; f++) {
		int n = feature_text(r, f, buf, sizeof(buf));

		if (n != -ENOENT)
			json_object_object_add(feats, feature_name(f),
					       n < 0 ? NULL : json_object_new_string(buf));
	}
	json_object_object_add(o, "features", feats);
	{
		const struct perfrec_spans_feature *sh;
		const struct perfrec_cpu_span *c;
		int n = spans(r, &sh, &c);
		json_object *arr = n >= 0 ? json_object_new_array() : NULL;

		for (int i = 0; i < n; i++) {
			json_object *e = json_object_new_object();

			json_object_object_add(e, "cpu", json_object_new_int64(c[i].cpu));
			json_object_object_add(e, "first_time", json_object_new_uint64(c[i].first_time));
			json_object_object_add(e, "last_time", json_object_new_uint64(c[i].last_time));
			json_object_object_add(e, "samples", json_object_new_uint64(c[i].samples));
			json_object_array_add(arr, e);
		}
		if (arr)
			json_object_object_add(o, "cpu_spans", arr);
	}
	for (size_t i = 0; i < perfrec_pdreader__nr_attrs(r); i++) {
		const struct perfrec_pdreader_attr *a = perfrec_pdreader__attr(r, i);
		json_object *e = json_object_new_object(), *ids = json_object_new_array();

		json_object_object_add(e, "name", a->name ? json_object_new_string(a->name) : NULL);
		json_object_object_add(e, "type", json_object_new_int64(a->attr.type));
		json_object_object_add(e, "config", json_object_new_uint64(a->attr.config));
		json_object_object_add(e, "sample_type", json_object_new_uint64(a->attr.sample_type));
		json_object_object_add(e, a->attr.freq ? "freq" : "period",
				       json_object_new_uint64(a->attr.sample_period));
		for (size_t j = 0; j < a->nr_ids; j++)
			json_object_array_add(ids, json_object_new_uint64(a->ids[j]));
		json_object_object_add(e, "ids", ids);
		json_object_object_add(e, "samples",
				       json_object_new_uint64(st->samples_per_attr ? st->samples_per_attr[i] : 0));
		json_object_array_add(evs, e);
	}
	json_object_object_add(o, "events", evs);
	json_object_object_add(o, "records", json_object_new_uint64(st->nr_records));
	for (uint32_t t = 0; t < PERFREC_RECORD_USER_MAX; t++)
		if (st->by_type[t])
			json_object_object_add(types, perfrec_event__type_name(t), json_object_new_uint64(st->by_type[t]));
	json_object_object_add(o, "records_by_type", types);
	json_object_object_add(o, "samples", json_object_new_uint64(st->nr_samples));
	for (size_t c = 0; c < st->nr_cpus; c++) {
		if (st->samples_per_cpu[c]) {
			snprintf(buf, sizeof(buf), "%zu", c);
			json_object_object_add(cpus, buf, json_object_new_uint64(st->samples_per_cpu[c]));
		}
	}
	json_object_object_add(o, "samples_per_cpu", cpus);
	json_object_object_add(o, "lost", json_object_new_uint64(st->lost));
	json_object_object_add(o, "stack_samples", json_object_new_uint64(st->stack_samples));
	json_object_object_add(o, "stack_bytes", json_object_new_uint64(st->stack_bytes));
	json_object_object_add(o, "stack_dyn_bytes", json_object_new_uint64(st->stack_dyn_bytes));
	json_object_object_add(o, "lost_samples", json_object_new_uint64(st->lost_samples));
	if (st->has_time) {
		json_object_object_add(o, "first_time", json_object_new_uint64(st->first_time));
		json_object_object_add(o, "last_time", json_object_new_uint64(st->last_time));
		json_object_object_add(o, "span_s",
				       json_object_new_double((double)(st->last_time - st->first_time) / 1e9));
	}
	if (vret < 0) {
		json_object *p = json_object_new_object();
		const char *msg = perfrec_pdreader__error(r, &off);

		json_object_object_add(p, "message", json_object_new_string(msg));
		json_object_object_add(p, "offset", json_object_new_uint64(off));
		json_object_object_add(o, "problem", p);
	}
	printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
}

int cmd_dump(int argc, char **argv)
{
	struct perfrec_pdreader_opts opts = { .sz = sizeof(opts) };
	struct perfrec_pdreader *r;
	const char *path = NULL;
	bool json = false;
	int ret;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			json = true;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			fprintf(stderr, "perfrecctl dump: unknown option '%s'\n", argv[i]);
			return perfrecctl_usage("dump");
		} else if (path) {
			fprintf(stderr, "perfrecctl dump: one file at a time\n");
			return perfrecctl_usage("dump");
		} else {
			path = argv[i];
		}
	}
	if (!path)
		return perfrecctl_usage("dump");
	/* "-": stdin, e.g. perfrecd -o - | perfrecctl dump - */
	ret = strcmp(path, "-") ? perfrec_pdreader__open(path, &opts, &r) : perfrec_pdreader__open_fd(0, &opts, &r);
	if (ret < 0) {
		fprintf(stderr, "%s: cannot open: %s\n", path, strerror(-ret));
		return EXIT_USAGE;
	}
	/* The verifier's walk is what gathers the counts. */
	ret = perfrec_pdreader__verify(r);
	if (ret < 0 && ret != -EBADMSG) {
		fprintf(stderr, "%s: cannot read: %s\n", path, strerror(-ret));
		perfrec_pdreader__free(r);
		return EXIT_USAGE;
	}
	if (json)
		dump_json(r, path, ret);
	else
		dump_text(r, path, ret);
	perfrec_pdreader__free(r);
	return ret < 0 ? EXIT_BAD : 0;
}
