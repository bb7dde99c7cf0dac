// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Per-cgroup sample counts for the manifest.  The recorder counts its
 * files' records as it drains and writes them (cgroup_counts_*); a file it
 * did not write itself (a snapshot, a recovered .tmp) is read once,
 * sequentially, with libperfrec's reader.  PERF_RECORD_CGROUP records
 * (synthesized at the file's start, or written by the kernel when a cgroup
 * appears) map ids to paths, and every sample whose attr carries
 * PERF_SAMPLE_CGROUP is counted under its id, so the manifest agrees with
 * what `perf report --sort cgroup` shows for the same file.  Ids are kept
 * in a small open-addressing table because a file holds millions of samples
 * but only as many distinct cgroups as the host has.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <perfrec/event.h>
#include <perfrec/pdreader.h>

#include "cgroup-label.h"
#include "drain.h"
#include "manifest-cgroup.h"

struct slot {
	uint64_t id;
	uint64_t samples;
	char *path;
	bool used;
};

struct cgroup_counts {
	struct slot *slots;
	size_t cap, nr; /* cap: a power of 2 */
	bool failed;    /* out of memory once: the counts are incomplete */
	struct slot *last; /* the slot of the last sample: a CPU's samples come in runs of one cgroup */
};

static size_t hash64(uint64_t v)
{
	v ^= v >> 33;
	v *= 0xff51afd7ed558ccdULL;
	v ^= v >> 33;
	return (size_t)v;
}

static struct slot *lookup(struct cgroup_counts *t, uint64_t id)
{
	size_t i;

	if ((t->nr + 1) * 2 > t->cap) {
		size_t ncap = t->cap ? t->cap * 2 : 64;
		struct slot *ns = calloc(ncap, sizeof(*ns));

		if (!ns)
			return NULL;
		for (size_t j = 0; j < t->cap; j++) {
			if (!t->slots[j].used)
				continue;
			for (i = hash64(t->slots[j].id) & (ncap - 1); ns[i].used; i = (i + 1) & (ncap - 1))
				;
			ns[i] = t->slots[j];
		}
		free(t->slots);
		t->slots = ns;
		t->cap = ncap;
		t->last = NULL;
	}
	for (i = hash64(id) & (t->cap - 1); t->slots[i].used; i = (i + 1) & (t->cap - 1))
		if (t->slots[i].id == id)
			return &t->slots[i];
	t->slots[i].used = true;
	t->slots[i].id = id;
	t->nr++;
	return &t->slots[i];
}

static void table_free(struct cgroup_counts *t)
{
	for (size_t i = 0; i < t->cap; i++)
		free(t->slots[i].path);
	free(t->slots);
}

int cgroup_counts_new(struct cgroup_counts **ret)
{
	*ret = calloc(1, sizeof(**ret));
	return *ret ? 0 : -ENOMEM;
}

void cgroup_counts_free(struct cgroup_counts *t)
{
	if (!t)
		return;
	table_free(t);
	free(t);
}

/* CGROUP: header, u64 id, NUL-terminated path, sample_id trailer. */
int cgroup_counts_note_cgroup(struct cgroup_counts *t, const struct perf_event_header *h)
{
	const char *path = (const char *)h + sizeof(*h) + 8;
	size_t room;
	struct slot *s;
	uint64_t id;

	if (h->size <= sizeof(*h) + 8)
		return 0;
	room = h->size - sizeof(*h) - 8;
	if (!memchr(path, '\0', room))
		return 0;
	memcpy(&id, (const char *)h + sizeof(*h), 8);
	s = lookup(t, id);
	if (!s)
		goto nomem;
	free(s->path);
	s->path = strdup(path);
	if (!s->path)
		goto nomem;
	return 0;
nomem:
	t->failed = true;
	return -ENOMEM;
}

int cgroup_counts_note_sample(struct cgroup_counts *t, const struct perf_event_header *h,
			      uint64_t sample_type, uint64_t read_format)
{
	struct perfrec_sample smp;
	struct slot *s;

	if (!(sample_type & PERF_SAMPLE_CGROUP))
		return 0;
	if (!(sample_type & (PERF_SAMPLE_DATA_PAGE_SIZE | PERF_SAMPLE_CODE_PAGE_SIZE | PERF_SAMPLE_AUX))) {
		/* The kernel writes nothing after the cgroup then: it is the last 8 bytes. */
		if (h->size < sizeof(*h) + 8)
			return 0;
		memcpy(&smp.cgroup, (const unsigned char *)h + h->size - 8, 8);
	} else if (perfrec_sample__parse(h, sample_type, read_format, &smp) < 0) {
		return 0;
	}
	s = t->last && t->last->id == smp.cgroup ? t->last : lookup(t, smp.cgroup);
	if (!s) {
		t->failed = true;
		return -ENOMEM;
	}
	s->samples++;
	t->last = s;
	return 0;
}

/* A sample of the file @r: its attr by its id (or the only one). */
static int note_sample(struct cgroup_counts *t, struct perfrec_pdreader *r, const struct perf_event_header *h)
{
	const struct perfrec_pdreader_attr *a = NULL;
	uint64_t id;

	if (h->size >= sizeof(*h) + 8) {
		memcpy(&id, h + 1, 8);
		a = perfrec_pdreader__attr_by_id(r, id);
	}
	if (!a && perfrec_pdreader__nr_attrs(r) == 1)
		a = perfrec_pdreader__attr(r, 0);
	if (!a)
		return 0;
	return cgroup_counts_note_sample(t, h, a->attr.sample_type, a->attr.read_format);
}

static int by_samples(const void *pa, const void *pb)
{
	const struct slot *a = pa, *b = pb;

	if (a->samples != b->samples)
		return a->samples > b->samples ? -1 : 1;
	return a->id < b->id ? -1 : a->id > b->id;
}

static void add_label(json_object *o, const char *key, const char *v)
{
	if (v[0])
		json_object_object_add(o, key, json_object_new_string(v));
}

static json_object *entry(const struct slot *s)
{
	json_object *o = json_object_new_object();
	struct cgroup_label l;

	if (!o)
		return NULL;
	json_object_object_add(o, "id", json_object_new_uint64(s->id));
	if (s->path)
		json_object_object_add(o, "path", json_object_new_string(s->path));
	json_object_object_add(o, "samples", json_object_new_uint64(s->samples));
	cgroup_label_parse(s->path, &l);
	add_label(o, "runtime", l.runtime);
	add_label(o, "container", l.container);
	add_label(o, "pod", l.pod);
	add_label(o, "qos", l.qos);
	add_label(o, "unit", l.unit);
	add_label(o, "slice", l.slice);
	return o;
}

int cgroup_counts_json(const struct cgroup_counts *t, json_object **ret_array)
{
	struct slot *seen;
	json_object *arr;
	size_t n = 0;

	if (t->failed)
		return -ENOMEM;
	seen = calloc(t->nr ? t->nr : 1, sizeof(*seen));
	arr = json_object_new_array();
	if (!seen || !arr)
		goto nomem;
	for (size_t i = 0; i < t->cap; i++)
		if (t->slots[i].used && t->slots[i].samples)
			seen[n++] = t->slots[i];
	qsort(seen, n, sizeof(*seen), by_samples);
	for (size_t i = 0; i < n; i++) {
		json_object *o = entry(&seen[i]);

		if (!o)
			goto nomem;
		json_object_array_add(arr, o);
	}
	free(seen); /* shallow copies: the paths belong to the table */
	*ret_array = arr;
	return 0;
nomem:
	json_object_put(arr);
	free(seen);
	return -ENOMEM;
}

int manifest_cgroups(const char *path, json_object **ret_array)
{
	struct perfrec_pdreader_opts ro = { .sz = sizeof(ro) };
	const struct perf_event_header *h;
	struct perfrec_pdreader *r = NULL;
	struct cgroup_counts t = { 0 };
	uint64_t off;
	int ret;

	ret = perfrec_pdreader__open(path, &ro, &r);
	if (ret < 0)
		return ret;
	while ((ret = perfrec_pdreader__next(r, &h, &off)) > 0) {
		if (h->type == PERF_RECORD_CGROUP)
			ret = cgroup_counts_note_cgroup(&t, h);
		else if (h->type == PERF_RECORD_SAMPLE)
			ret = note_sample(&t, r, h);
		if (ret < 0)
			goto out;
	}
	if (ret == 0)
		ret = cgroup_counts_json(&t, ret_array);
out:
	table_free(&t);
	perfrec_pdreader__free(r);
	return ret;
}

static void counts_sink_record(struct sink *s, struct drain_rec *r)
{
	struct cgroup_counts *t = *(struct cgroup_counts **)s->ctx;

	if (!t)
		return;
	if (r->h->type == PERF_RECORD_SAMPLE && r->sample_ok)
		cgroup_counts_note_sample(t, r->h, r->id->sample_type, r->id->read_format);
	else if (r->h->type == PERF_RECORD_CGROUP)
		cgroup_counts_note_cgroup(t, r->h);
}

const struct sink_ops cgroup_counts_sink_ops = { .record = counts_sink_record };
