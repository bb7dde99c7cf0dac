// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The busiest containers and units of recorded files (cgroup-summary.h).
 * Manifests hold one entry per cgroup with its labels; entries of the same
 * container (its scope and the cgroups below it, across files) or unit are
 * summed.  A host has tens to a few thousand of them: a linear search.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup-summary.h"

struct busy {
	char *runtime, *name, *pod, *qos, *slice; /* name: the container id or the unit */
	uint64_t samples;
};

struct list {
	struct busy *v;
	size_t nr, cap;
};

struct cgroup_summary {
	struct list containers, units;
	uint64_t samples;       /* every cgroup-tagged sample of the manifests */
	size_t files;
};

int cgroup_summary_new(struct cgroup_summary **ret)
{
	*ret = calloc(1, sizeof(**ret));
	return *ret ? 0 : -ENOMEM;
}

static void list_free(struct list *l)
{
	for (size_t i = 0; i < l->nr; i++) {
		free(l->v[i].runtime);
		free(l->v[i].name);
		free(l->v[i].pod);
		free(l->v[i].qos);
		free(l->v[i].slice);
	}
	free(l->v);
}

void cgroup_summary_free(struct cgroup_summary *s)
{
	if (!s)
		return;
	list_free(&s->containers);
	list_free(&s->units);
	free(s);
}

size_t cgroup_summary_files(const struct cgroup_summary *s)
{
	return s->files;
}

static const char *str(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : NULL;
}

static int dup_opt(char **dst, const char *v)
{
	if (!v)
		return 0;
	*dst = strdup(v);
	return *dst ? 0 : -ENOMEM;
}

/* The entry for @name (and @runtime) in @l, made from @e when new. */
static int add(struct list *l, const char *runtime, const char *name, json_object *e, uint64_t n)
{
	struct busy *b;

	for (size_t i = 0; i < l->nr; i++) {
		b = &l->v[i];
		if (!strcmp(b->name, name) && !strcmp(b->runtime ? b->runtime : "", runtime ? runtime : "")) {
			b->samples += n;
			return 0;
		}
	}
	if (l->nr == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;

		b = reallocarray(l->v, cap, sizeof(*b));
		if (!b)
			return -ENOMEM;
		l->v = b;
		l->cap = cap;
	}
	b = &l->v[l->nr];
	*b = (struct busy){ .samples = n };
	if (dup_opt(&b->name, name) < 0 || dup_opt(&b->runtime, runtime) < 0 || dup_opt(&b->pod, str(e, "pod")) < 0 ||
	    dup_opt(&b->qos, str(e, "qos")) < 0 || dup_opt(&b->slice, str(e, "slice")) < 0) {
		l->nr++;   /* freed with the list */
		return -ENOMEM;
	}
	l->nr++;
	return 0;
}

int cgroup_summary_add_manifest(struct cgroup_summary *s, const char *json_path)
{
	json_object *root = json_object_from_file(json_path), *arr;
	int r = 0;

	if (!root)
		return -ENOENT;
	if (!json_object_object_get_ex(root, "cgroups", &arr) || !json_object_is_type(arr, json_type_array)) {
		json_object_put(root);
		return -ENOENT;
	}
	for (size_t i = 0; i < json_object_array_length(arr) && r == 0; i++) {
		json_object *e = json_object_array_get_idx(arr, i), *v;
		const char *container = str(e, "container"), *unit = str(e, "unit");
		uint64_t n = json_object_object_get_ex(e, "samples", &v) ? (uint64_t)json_object_get_int64(v) : 0;

		s->samples += n;
		if (container)
			r = add(&s->containers, str(e, "runtime"), container, e, n);
		else if (unit)
			r = add(&s->units, NULL, unit, e, n);
	}
	json_object_put(root);
	if (r == 0)
		s->files++;
	return r;
}

static int by_samples(const void *pa, const void *pb)
{
	const struct busy *a = pa, *b = pb;

	if (a->samples != b->samples)
		return a->samples > b->samples ? -1 : 1;
	return strcmp(a->name, b->name);
}

/* Busiest first (qsort() wants an array even of none: the lists may have none). */
static void sort(const struct cgroup_summary *s)
{
	if (s->containers.nr)
		qsort(s->containers.v, s->containers.nr, sizeof(struct busy), by_samples);
	if (s->units.nr)
		qsort(s->units.v, s->units.nr, sizeof(struct busy), by_samples);
}

static double share(const struct cgroup_summary *s, uint64_t n)
{
	return s->samples ? 100.0 * (double)n / (double)s->samples : 0;
}

void cgroup_summary_print(const struct cgroup_summary *s, FILE *f, const char *heading, const char *indent,
			  size_t top)
{
	sort(s);
	if (heading && (s->containers.nr || s->units.nr))
		fprintf(f, "%s\n", heading);
	if (s->containers.nr) {
		fprintf(f, "%sbusiest containers:", indent);
		for (size_t i = 0; i < s->containers.nr && i < top; i++) {
			const struct busy *b = &s->containers.v[i];

			/* 12 hex digits, as docker ps shows them; names (nspawn) whole */
			fprintf(f, "%s %.12s (%s", i ? ";" : "", b->name, b->runtime && *b->runtime ? b->runtime : "?");
			if (b->pod)
				fprintf(f, ", pod %s%s%s", b->pod, b->qos ? " " : "", b->qos ? b->qos : "");
			fprintf(f, ") %" PRIu64 " samples %.1f%%", b->samples, share(s, b->samples));
		}
		fputc('\n', f);
	}
	if (s->units.nr) {
		fprintf(f, "%sbusiest units:", indent);
		for (size_t i = 0; i < s->units.nr && i < top; i++) {
			const struct busy *b = &s->units.v[i];

			fprintf(f, "%s %s %" PRIu64 " samples %.1f%%", i ? ";" : "", b->name, b->samples,
				share(s, b->samples));
		}
		fputc('\n', f);
	}
}

static void put(json_object *o, const char *key, const char *v)
{
	if (v && *v)
		json_object_object_add(o, key, json_object_new_string(v));
}

static json_object *list_json(const struct list *l, bool units)
{
	json_object *a = json_object_new_array();

	for (size_t i = 0; a && i < l->nr; i++) {
		const struct busy *b = &l->v[i];
		json_object *o = json_object_new_object();

		if (!o) {
			json_object_put(a);
			return NULL;
		}
		if (units) {
			put(o, "unit", b->name);
			put(o, "slice", b->slice);
		} else {
			put(o, "runtime", b->runtime);
			put(o, "container", b->name);
			put(o, "pod", b->pod);
			put(o, "qos", b->qos);
		}
		json_object_object_add(o, "samples", json_object_new_uint64(b->samples));
		json_object_array_add(a, o);
	}
	return a;
}

json_object *cgroup_summary_json(const struct cgroup_summary *s)
{
	json_object *o = json_object_new_object(), *c, *u;

	sort(s);
	c = list_json(&s->containers, false);
	u = list_json(&s->units, true);
	if (!o || !c || !u) {
		json_object_put(o);
		json_object_put(c);
		json_object_put(u);
		return NULL;
	}
	json_object_object_add(o, "containers", c);
	json_object_object_add(o, "units", u);
	json_object_object_add(o, "samples", json_object_new_uint64(s->samples));
	json_object_object_add(o, "files", json_object_new_uint64(s->files));
	return o;
}
