// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * `perfrecctl ls [--json] [DIR|FILE...]`: the recorded files on a time
 * line, oldest first: each file's wall-clock span (UTC and local), samples,
 * lost, size, compression and mode, the file still being written marked as
 * such, and every hole in coverage longer than a rotation's seam shown as a
 * gap line, so "was anything recorded at 14:03?" has an answer at a glance;
 * then the busiest containers and units of the files (cgroup-summary.h).
 * Unreadable files are listed with the reason.  Without paths: the
 * configured output directory.  Exit 0 listed, 2 usage or a path that
 * cannot be read.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>
#include <perfrec/timespec.h>

#include "cgroup-summary.h"
#include "perfrecctl.h"
#include "window.h"

static void human_size(uint64_t b, char *buf, size_t sz)
{
	static const char *units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)b;
	int u = 0;

	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	snprintf(buf, sz, u ? "%.1f %s" : "%.0f %s", v, units[u]);
}

static const char *file_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

static json_object *jtime(uint64_t ns, bool utc)
{
	char buf[64];

	if (perfrec_timespec__format(ns, utc, buf, sizeof(buf)) < 0)
		return NULL;
	return json_object_new_string(buf);
}

static void print_gap(uint64_t from, uint64_t to)
{
	char a[64], b[64];

	perfrec_timespec__format(from, true, a, sizeof(a));
	perfrec_timespec__format(to, true, b, sizeof(b));
	printf("-- gap: %s .. %s (%.3f s): nothing recorded\n", a, b, (double)(to - from) / 1e9);
}

/*
 * The busiest containers and units of the listed files, from their
 * manifests (files without one, such as the one being written, are not
 * counted).  NULL without memory.
 */
static struct cgroup_summary *summarize(const struct window_file *files, size_t n)
{
	struct cgroup_summary *s;

	if (cgroup_summary_new(&s) < 0)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		char *jp;
		int r;

		if (files[i].error || !files[i].has_manifest || asprintf(&jp, "%s.json", files[i].path) < 0)
			continue;
		r = cgroup_summary_add_manifest(s, jp);
		free(jp);
		if (r == -ENOMEM) {
			cgroup_summary_free(s);
			return NULL;
		}
	}
	return s;
}

static void print_text(const struct window_file *files, size_t n)
{
	uint64_t covered = 0;
	bool any = false;

	printf("%-24s  %-24s  %-33s  %8s  %6s  %10s  %-5s  %-10s  %s\n", "START (UTC)", "END (UTC)", "LOCAL",
	       "SAMPLES", "LOST", "SIZE", "COMPR", "MODE", "FILE");
	for (size_t i = 0; i < n; i++) {
		const struct window_file *f = &files[i];
		char s[64], e[64], ls[64], le[64], sz[32];

		if (f->error) {
			printf("unreadable: %s: %s\n", f->path, f->error);
			continue;
		}
		if (any && f->start_wall > covered + WINDOW_GAP_NS)
			print_gap(covered, f->start_wall);
		perfrec_timespec__format(f->start_wall, true, s, sizeof(s));
		perfrec_timespec__format(f->end_wall, true, e, sizeof(e));
		perfrec_timespec__format(f->start_wall, false, ls, sizeof(ls));
		perfrec_timespec__format(f->end_wall, false, le, sizeof(le));
		human_size(f->size, sz, sizeof(sz));
		/* local: "2026-11-23 15:03:00.250 .. 15:03:02.250 CET" */
		{
			char local[96];

			snprintf(local, sizeof(local), "%.23s..%s", ls, le + 11);
			printf("%-24s  %-24s  %-33s  %8" PRIu64 "  %6" PRIu64 "  %10s  %-5s  %-10s  %s%s\n", s, e, local,
			       f->samples, f->lost, sz, f->compressed ? "zstd" : "none", f->mode, file_name(f->path),
			       f->being_written ? " (being written)"
			       : f->in_progress ? " (unfinished: its writer is gone; perfrecctl recover)" : "");
		}
		for (size_t k = 0; k < f->nr_spans; k++) {
			const struct perfrec_cpu_span *sp = &f->spans[k];

			if (!window_cpu_short(f, k))
				continue;
			if (!sp->samples) {
				printf("   cpu %u: no samples in this file\n", sp->cpu);
				continue;
			}
			perfrec_timespec__format(perfrec_clockdata__to_wall(&f->clock, sp->first_time), true, s, sizeof(s));
			perfrec_timespec__format(perfrec_clockdata__to_wall(&f->clock, sp->last_time), true, e, sizeof(e));
			printf("   cpu %u: covers only %s .. %s\n", sp->cpu, s, e);
		}
		if (!any || f->end_wall > covered)
			covered = f->end_wall;
		any = true;
	}
	if (!any) {
		printf("(no recorded files)\n");
	} else {
		struct cgroup_summary *cs = summarize(files, n);

		if (cs)
			cgroup_summary_print(cs, stdout, NULL, "", 5);
		cgroup_summary_free(cs);
	}
}

static void print_json(const struct window_file *files, size_t n)
{
	json_object *root = json_object_new_object(), *fa = json_object_new_array(), *ga = json_object_new_array(),
		    *ua = json_object_new_array();
	uint64_t covered = 0;
	bool any = false;

	for (size_t i = 0; i < n; i++) {
		const struct window_file *f = &files[i];
		json_object *o = json_object_new_object();

		json_object_object_add(o, "path", json_object_new_string(f->path));
		if (f->error) {
			json_object_object_add(o, "error", json_object_new_string(f->error));
			json_object_array_add(ua, o);
			continue;
		}
		if (any && f->start_wall > covered + WINDOW_GAP_NS) {
			json_object *g = json_object_new_object();

			json_object_object_add(g, "start", jtime(covered, true));
			json_object_object_add(g, "end", jtime(f->start_wall, true));
			json_object_object_add(g, "start_ns", json_object_new_uint64(covered));
			json_object_object_add(g, "end_ns", json_object_new_uint64(f->start_wall));
			json_object_object_add(g, "seconds", json_object_new_double((double)(f->start_wall - covered) / 1e9));
			json_object_array_add(ga, g);
		}
		json_object_object_add(o, "file", json_object_new_string(file_name(f->path)));
		json_object_object_add(o, "in_progress", json_object_new_boolean(f->in_progress));
		json_object_object_add(o, "being_written", json_object_new_boolean(f->being_written));
		json_object_object_add(o, "start", jtime(f->start_wall, true));
		json_object_object_add(o, "end", jtime(f->end_wall, true));
		json_object_object_add(o, "start_local", jtime(f->start_wall, false));
		json_object_object_add(o, "end_local", jtime(f->end_wall, false));
		json_object_object_add(o, "start_ns", json_object_new_uint64(f->start_wall));
		json_object_object_add(o, "end_ns", json_object_new_uint64(f->end_wall));
		json_object_object_add(o, "samples", json_object_new_uint64(f->samples));
		json_object_object_add(o, "lost", json_object_new_uint64(f->lost));
		json_object_object_add(o, "size", json_object_new_uint64(f->size));
		json_object_object_add(o, "compression", json_object_new_string(f->compressed ? "zstd" : "none"));
		json_object_object_add(o, "mode", json_object_new_string(f->mode));
		json_object_object_add(o, "manifest", json_object_new_boolean(f->has_manifest));
		if (f->nr_spans) {
			json_object *cs = json_object_new_array();

			for (size_t k = 0; k < f->nr_spans; k++) {
				const struct perfrec_cpu_span *sp = &f->spans[k];
				uint64_t w0 = perfrec_clockdata__to_wall(&f->clock, sp->first_time);
				uint64_t w1 = perfrec_clockdata__to_wall(&f->clock, sp->last_time);
				json_object *c = json_object_new_object();

				json_object_object_add(c, "cpu", json_object_new_int((int)sp->cpu));
				json_object_object_add(c, "samples", json_object_new_uint64(sp->samples));

				json_object_object_add(c, "start", sp->samples ? jtime(w0, true) : NULL);
				json_object_object_add(c, "end", sp->samples ? jtime(w1, true) : NULL);
				json_object_object_add(c, "short", json_object_new_boolean(window_cpu_short(f, k)));
				json_object_array_add(cs, c);
			}
			json_object_object_add(o, "cpus", cs);
		}
		json_object_array_add(fa, o);
		if (!any || f->end_wall > covered)
			covered = f->end_wall;
		any = true;
	}
	json_object_object_add(root, "files", fa);
	json_object_object_add(root, "gaps", ga);
	json_object_object_add(root, "unreadable", ua);
	{
		struct cgroup_summary *cs = summarize(files, n);

		/* "busiest": {"containers": [...], "units": [...], ...}: cgroup-summary.h */
		if (cs)
			json_object_object_add(root, "busiest", cgroup_summary_json(cs));
		cgroup_summary_free(cs);
	}
	printf("%s\n", json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(root);
}

int cmd_ls(int argc, char **argv)
{
	const char **paths = calloc((size_t)argc + 1, sizeof(*paths));
	struct window_file *files = NULL;
	bool json = perfrecctl_json_output();
	char *def = NULL;
	size_t np = 0, nf = 0;
	int r;

	if (!paths)
		return EXIT_USAGE;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--bucket")) {
			/* The fleet's files: the manifests in the bucket, not a directory. */
			free(paths);
			return cmd_bucket_ls(argc, argv);
		}
	}
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			json = true;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			fprintf(stderr, "perfrecctl ls: unknown option '%s'\n", argv[i]);
			free(paths);
			return perfrecctl_usage("ls");
		} else {
			paths[np++] = argv[i];
		}
	}
	if (np == 0) {
		def = perfrecctl_recordings_dir("ls");
		paths[np++] = def;
	}
	r = window_scan(paths, np, &files, &nf);
	if (r < 0) {
		fprintf(stderr, "perfrecctl ls: cannot read %s: %s\n", np == 1 ? paths[0] : "the paths given",
			strerror(-r));
		free(def);
		free(paths);
		return EXIT_USAGE;
	}
	if (json)
		print_json(files, nf);
	else
		print_text(files, nf);
	window_files_free(files, nf);
	free(def);
	free(paths);
	return 0;
}
