// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * `perfrecctl cut --from T --to T | --at T [--around D] [--container ID]
 * [--pod UID] [--unit NAME] [-o OUT] [-z] [--force] [--no-live]
 * [DIR|FILE...]`: one self-contained perf.data of a wall-clock window
 * [from, to), however many rotated files it spans; with --container,
 * --pod or --unit, only the samples of the cgroups they select (by the
 * labels internal/cgroup-label.c reads from the files' CGROUP records), the
 * side-band whole.
 *
 * Each file's samples are kept when their time, converted by that file's
 * HEADER_CLOCK_DATA, lies in the window.  Side-band records (COMM, MMAP2,
 * FORK, EXIT, CGROUP, KSYMBOL, BPF_EVENT, ...) are kept from the start of
 * every file used up to the window's end: each rotated file begins with
 * the state perfrecd synthesized from /proc, so the first file used plus
 * what happened since is every process's state at the window's start.
 * Attrs are merged by their ids (the same kernel events run across
 * rotations); an event whose frequency changed live stays one event; files
 * that cannot share a header (a different sample layout, another boot's
 * clock) are refused, naming the difference, but for raw DWARF samples of
 * the events another file holds host-unwound (a snapshot of an unwind=host
 * recording beside its files): that file is unwound here first.
 * Features come from the first file that has each; build ids, BPF
 * programs and BTF are the union; SAMPLE_TIME and the spans feature say
 * what the window really holds.
 *
 * Where the window reaches into the file being written and perfrecd
 * answers on its control socket, that file is replaced by a Snapshot of
 * it, which holds everything up to now; without a daemon the file is read
 * as far as it was checkpointed.
 *
 * Exit: 0 written; 1 nothing recorded in the window, files that cannot be
 * cut together, or an output that would not verify (nothing is left
 * behind); 2 usage, unparseable times, unreadable paths, I/O errors.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <perfrec/bpfmeta.h>
#include <perfrec/clockdata.h>
#include <perfrec/event.h>
#include <perfrec/pdreader.h>
#include <perfrec/pdwriter.h>
#include <perfrec/timespec.h>
#include <perfrec/unwind.h>

#include "cgroup-label.h"
#include "fsutil.h"
#include "cut.h"
#include "exitcode.h"
#include "unwind.h"
#include "window.h"

#define NSEC 1000000000ULL
/* Two files whose clock pairs disagree by more than this are from different boots. */
#define CLOCK_SKEW_NS (2 * NSEC)

struct out_attr {
	struct perf_event_attr attr;
	uint64_t *ids;
	size_t nr_ids;
	char *name;
	const char *first_path;
};

struct cut_cgroup {
	uint64_t id;
	bool selected;
};

struct cut {
	const struct cut_opts *opts;
	const char *out_path;
	uint64_t from, to;              /* wall ns, [from, to) */
	struct out_attr *attrs;
	size_t nr_attrs;
	uint32_t attr_size;             /* the largest of the inputs' */
	/* what was written */
	uint64_t samples, lost, dup_samples;
	bool has_time;
	uint64_t first_time, last_time; /* sample clock */
	struct perfrec_cpu_span *spans; /* index: cpu */
	size_t nr_spans;
	uint64_t seen_max;              /* largest sample time of the files before */
	bool seen_any;
	bool wrote_init;
	unsigned char *buildids;
	size_t buildids_len;
	struct perfrec_bpfmeta *bpf;     /* the union of the files' BPF programs and BTF */
	/* --container, --pod, --unit: only samples of the cgroups these select */
	struct cgroup_select select;
	struct cut_cgroup *cgroups;      /* as the inputs' CGROUP records name them */
	size_t nr_cgroups, cap_cgroups;
	uint64_t unselected;             /* samples of the window the selection left out */
};

static const char *base(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

static void fmt(uint64_t ns, bool utc, char *buf, size_t sz)
{
	if (perfrec_timespec__format(ns, utc, buf, sz) < 0)
		snprintf(buf, sz, "%" PRIu64 " ns", ns);
}

/* ------------------------------------------------------------------ attrs */

static bool has_id(const struct out_attr *o, uint64_t id)
{
	for (size_t i = 0; i < o->nr_ids; i++)
		if (o->ids[i] == id)
			return true;
	return false;
}

static int add_ids(struct out_attr *o, const uint64_t *ids, size_t n)
{
	uint64_t *v = realloc(o->ids, (o->nr_ids + n) * sizeof(*v));

	if (!v && n)
		return -ENOMEM;
	o->ids = v;
	for (size_t i = 0; i < n; i++)
		if (!has_id(o, ids[i]))
			o->ids[o->nr_ids++] = ids[i];
	return 0;
}

/* The first field in which two attrs differ, as "name (A vs B)", or NULL if only the rate does. */
static const char *attr_difference(const struct perf_event_attr *a, const struct perf_event_attr *b, char *buf,
				   size_t sz)
{
	struct perf_event_attr x = *a, y = *b;

#define DIFF(f)                                                                                          \
	if (x.f != y.f) {                                                                                \
		snprintf(buf, sz, #f " (0x%llx vs 0x%llx)", (unsigned long long)x.f, (unsigned long long)y.f); \
		return buf;                                                                              \
	}
	DIFF(type);
	DIFF(config);
	DIFF(sample_type);
	DIFF(read_format);
	DIFF(sample_id_all);
	DIFF(use_clockid);
	DIFF(clockid);
	/* The rate may change live (set-freq, the governor): the same events still. */
	x.sample_freq = y.sample_freq = 0;
	x.freq = y.freq = 0;
	x.size = y.size = 0;
	if (memcmp(&x, &y, sizeof(x))) {
		snprintf(buf, sz, "other attr fields (exclusion bits, flags)");
		return buf;
	}
	return NULL;
#undef DIFF
}

static int merge_attrs(struct cut *c, const struct window_file *f, const struct perfrec_pdreader *r)
{
	for (size_t i = 0; i < perfrec_pdreader__nr_attrs(r); i++) {
		const struct perfrec_pdreader_attr *a = perfrec_pdreader__attr(r, i);
		const char *name = a->name ? a->name : "(unnamed)";
		struct out_attr *o = NULL;
		char why[160];

		for (size_t k = 0; k < c->nr_attrs && !o; k++) {
			bool same_ids = false;

			for (size_t j = 0; j < a->nr_ids && !same_ids; j++)
				same_ids = has_id(&c->attrs[k], a->ids[j]);
			if (!same_ids && memcmp(&c->attrs[k].attr, &a->attr, sizeof(a->attr)))
				continue;
			if (attr_difference(&c->attrs[k].attr, &a->attr, why, sizeof(why))) {
				if (!same_ids)
					continue;
				fprintf(stderr, "perfrecctl cut: %s: event %s differs from %s's in %s; "
					"cut a window within one recording setup\n", f->path, name,
					c->attrs[k].first_path, why);
				return -EINVAL;
			}
			o = &c->attrs[k];
			if (o->attr.freq && a->attr.freq && o->attr.sample_freq != a->attr.sample_freq)
				fprintf(stderr, "perfrecctl cut: note: %s ran at %llu Hz in %s, %llu Hz in %s: "
					"kept as one event\n", name, (unsigned long long)o->attr.sample_freq,
					o->first_path, (unsigned long long)a->attr.sample_freq, base(f->path));
		}
		if (!o) {
			struct out_attr *v;

			/* perf finds every record's event by the id's position, the same in all attrs. */
			if (c->nr_attrs && (a->attr.sample_id_all != c->attrs[0].attr.sample_id_all ||
					    !(a->attr.sample_type & PERF_SAMPLE_IDENTIFIER) ||
					    !(c->attrs[0].attr.sample_type & PERF_SAMPLE_IDENTIFIER))) {
				fprintf(stderr, "perfrecctl cut: %s: event %s cannot share a file with %s's events "
					"(no PERF_SAMPLE_IDENTIFIER or a different sample_id_all)\n", f->path, name,
					c->attrs[0].first_path);
				return -EINVAL;
			}
			for (size_t k = 0; k < c->nr_attrs; k++)
				if (a->name && c->attrs[k].name && !strcmp(a->name, c->attrs[k].name))
					fprintf(stderr, "perfrecctl cut: note: %s in %s is not the %s of %s (%s); "
						"both are kept, as separate events\n", name, base(f->path), name,
						base(c->attrs[k].first_path),
						attr_difference(&c->attrs[k].attr, &a->attr, why, sizeof(why)) ?: "the rate");
			v = realloc(c->attrs, (c->nr_attrs + 1) * sizeof(*v));
			if (!v)
				return -ENOMEM;
			c->attrs = v;
			o = &c->attrs[c->nr_attrs++];
			memset(o, 0, sizeof(*o));
			o->attr = a->attr;
			o->name = a->name ? strdup(a->name) : NULL;
			o->first_path = f->path;
		}
		if (a->attr.size > c->attr_size && a->attr.size <= sizeof(a->attr))
			c->attr_size = a->attr.size;
		if (add_ids(o, a->ids, a->nr_ids) < 0)
			return -ENOMEM;
	}
	return 0;
}

/*
 * Whether events of @raw are the raw DWARF form of events of @other: an
 * attr of @raw with a user stack shares ids with one of @other (the same
 * kernel events), and with the user stack unwound, as
 * perfrec_unwinder__rewrite_attr() lays it out, it is that attr (as
 * attr_difference() compares them).  perfrecd with unwind=host publishes
 * files of that form while its snapshots keep the drained records raw.
 */
static bool raw_form_of(const struct perfrec_pdreader *raw, const struct perfrec_pdreader *other)
{
	char why[160];

	for (size_t i = 0; i < perfrec_pdreader__nr_attrs(raw); i++) {
		const struct perfrec_pdreader_attr *a = perfrec_pdreader__attr(raw, i);
		struct perf_event_attr na;

		if (!(a->attr.sample_type & PERF_SAMPLE_STACK_USER))
			continue;
		perfrec_unwinder__rewrite_attr(&a->attr, &na);
		for (size_t k = 0; k < perfrec_pdreader__nr_attrs(other); k++) {
			const struct perfrec_pdreader_attr *b = perfrec_pdreader__attr(other, k);
			bool shared = false;

			for (size_t j = 0; j < a->nr_ids && !shared; j++)
				for (size_t m = 0; m < b->nr_ids && !shared; m++)
					shared = a->ids[j] == b->ids[m];
			if (shared && !attr_difference(&na, &b->attr, why, sizeof(why)))
				return true;
		}
	}
	return false;
}

/*
 * Inputs holding raw DWARF samples of the events other inputs hold
 * unwound (a snapshot of an unwind=host recording beside its published
 * files) are unwound on this host, as `perfrecctl unwind` does, into a
 * temporary file read in their place, whose path goes into @tmps[i] (the
 * caller unlinks them): the events then merge.  0, or an exit code with
 * the problem said.
 */
static int unwind_raw_inputs(const struct window_file *const *used, struct perfrec_pdreader **readers, size_t n,
			     char **tmps)
{
	for (size_t i = 0; i < n; i++) {
		struct perfrec_pdreader_opts o = { .sz = sizeof(o) };
		struct perfrec_unwinder_stats st;
		const char *name = used[i]->label ? used[i]->label : base(used[i]->path);
		char tmpl[] = "/tmp/perfrecctl-cut-XXXXXX", src[32];
		size_t j;
		int fd, r;

		for (j = 0; j < n; j++)
			if (j != i && raw_form_of(readers[i], readers[j]))
				break;
		if (j == n)
			continue;
		fd = mkostemp(tmpl, O_CLOEXEC);
		if (fd < 0) {
			fprintf(stderr, "perfrecctl cut: cannot create a file to unwind %s into: %m\n", name);
			return EXIT_USAGE;
		}
		close(fd);
		tmps[i] = strdup(tmpl);
		if (!tmps[i]) {
			unlink(tmpl);
			return EXIT_USAGE;
		}
		r = unwind_file("cut", window_file_source(used[i], src, sizeof(src)), tmpl, &st);
		if (r) {
			fprintf(stderr, "perfrecctl cut: %s holds raw DWARF stacks of the events %s holds unwound, "
				"and cannot be unwound here to go with it\n", name, base(used[j]->path));
			return r;
		}
		fprintf(stderr, "perfrecctl cut: %s: raw DWARF stacks of the events %s holds unwound (unwind=host): "
			"unwound on this host, %llu samples, %llu with callers\n", name, base(used[j]->path),
			(unsigned long long)st.samples, (unsigned long long)st.unwound);
		perfrec_pdreader__free(readers[i]);
		readers[i] = NULL;
		r = perfrec_pdreader__open(tmpl, &o, &readers[i]);
		if (r < 0) {
			fprintf(stderr, "perfrecctl cut: cannot read back %s: %s\n", tmpl, strerror(-r));
			return EXIT_USAGE;
		}
	}
	return 0;
}

/* -------------------------------------------------------------- features */

/* BUILD_ID: the union of the files' entries (build_id_event records). */
static int merge_buildids(struct cut *c, const struct perfrec_pdreader *r)
{
	const unsigned char *d;
	const void *data;
	size_t len, off = 0;

	if (perfrec_pdreader__feature(r, PERFREC_FEAT_BUILD_ID, &data, &len) < 0)
		return 0;
	d = data;
	while (off + sizeof(struct perf_event_header) <= len) {
		struct perf_event_header h;
		bool seen = false;
		unsigned char *v;

		memcpy(&h, d + off, sizeof(h));
		if (h.size < sizeof(h) || h.size > len - off)
			break;
		for (size_t p = 0; p + sizeof(h) <= c->buildids_len && !seen;) {
			struct perf_event_header e;

			memcpy(&e, c->buildids + p, sizeof(e));
			seen = e.size == h.size && !memcmp(c->buildids + p, d + off, h.size);
			p += e.size;
		}
		if (!seen) {
			v = realloc(c->buildids, c->buildids_len + h.size);
			if (!v)
				return -ENOMEM;
			c->buildids = v;
			memcpy(c->buildids + c->buildids_len, d + off, h.size);
			c->buildids_len += h.size;
		}
		off += h.size;
	}
	return 0;
}

static int add_btf(void *ctx, uint32_t id, const void *data, uint32_t size)
{
	return perfrec_bpfmeta__add_btf(ctx, id, data, size);
}

/*
 * BPF_PROG_INFO and BPF_BTF: the union of the files' programs (a later
 * file's entry for a program replaces an earlier one's), so a program
 * loaded or unloaded while the window's files were written is named.
 * Body: {u32 nr; {u32 info_len, u32 data_len, u64 arrays, info, data}...}.
 */
static int merge_bpf(struct cut *c, const struct perfrec_pdreader *r)
{
	const unsigned char *d;
	const void *data;
	size_t len, off = 4;
	uint32_t nr;
	int e;

	if (!c->bpf) {
		e = perfrec_bpfmeta__new(&c->bpf);
		if (e < 0)
			return e;
	}
	if (perfrec_pdreader__feature(r, PERFREC_FEAT_BPF_PROG_INFO, &data, &len) == 0 &&
	    perfrec_bpfmeta__parse_prog_info(data, len, NULL, NULL) >= 0) {
		d = data;
		memcpy(&nr, d, 4);
		for (uint32_t i = 0; i < nr && len - off >= 16; i++) {
			uint32_t info_len, data_len;
			uint64_t arrays;

			memcpy(&info_len, d + off, 4);
			memcpy(&data_len, d + off + 4, 4);
			memcpy(&arrays, d + off + 8, 8);
			off += 16;
			if (info_len > len - off || data_len > len - off - info_len)
				break;
			e = perfrec_bpfmeta__add_prog_info(c->bpf, d + off, info_len, arrays, d + off + info_len,
							   data_len);
			if (e == -ENOMEM)
				return e;
			off += (size_t)info_len + data_len;
		}
	}
	if (perfrec_pdreader__feature(r, PERFREC_FEAT_BPF_BTF, &data, &len) == 0) {
		e = perfrec_bpfmeta__parse_btf(data, len, add_btf, c->bpf);
		if (e == -ENOMEM)
			return e;
	}
	return 0;
}

static int set_features(struct cut *c, struct perfrec_pdwriter *w, struct perfrec_pdreader **readers,
			const struct window_file *files, size_t n)
{
	struct {
		uint32_t version, clockid;
		uint64_t wall, clk;
	} cd = { 1, files[0].clock.clockid, files[0].clock.wall_ns, files[0].clock.clock_ns };
	uint64_t st[2] = { c->first_time, c->last_time };
	struct perfrec_spans_feature *sf;
	size_t nr = 0, len;
	int r;

	for (int f = 1; f < PERFREC_FEAT_BITS; f++) {
		if (f == PERFREC_FEAT_EVENT_DESC || f == PERFREC_FEAT_COMPRESSED || f == PERFREC_FEAT_BUILD_ID ||
		    f == PERFREC_FEAT_SAMPLE_TIME || f == PERFREC_FEAT_SPANS || f == PERFREC_FEAT_CLOCK_DATA ||
		    f == PERFREC_FEAT_BPF_PROG_INFO || f == PERFREC_FEAT_BPF_BTF)
			continue;
		for (size_t i = 0; i < n; i++) {
			const void *data;
			size_t dlen;

			if (perfrec_pdreader__feature(readers[i], f, &data, &dlen) < 0)
				continue;
			r = perfrec_pdwriter__set_feature(w, f, data, dlen);
			if (r < 0)
				return r;
			break;
		}
	}
	if (c->buildids_len) {
		r = perfrec_pdwriter__set_feature(w, PERFREC_FEAT_BUILD_ID, c->buildids, c->buildids_len);
		if (r < 0)
			return r;
	}
	r = perfrec_bpfmeta__add_features(c->bpf, w);
	if (r < 0)
		return r;
	/* The first file's clock pair holds for all: they share one boot's clock (checked). */
	r = perfrec_pdwriter__set_feature(w, PERFREC_FEAT_CLOCK_DATA, &cd, sizeof(cd));
	if (r < 0)
		return r;
	r = perfrec_pdwriter__set_feature(w, PERFREC_FEAT_SAMPLE_TIME, st, sizeof(st));
	if (r < 0)
		return r;
	for (size_t i = 0; i < c->nr_spans; i++)
		nr += c->spans[i].samples > 0;
	len = sizeof(*sf) + nr * sizeof(struct perfrec_cpu_span);
	sf = calloc(1, len);
	if (!sf)
		return -ENOMEM;
	sf->nr = (uint32_t)nr;
	sf->window_ns = c->to - c->from;
	sf->snapshot_time = perfrec_clockdata__to_sample(&files[0].clock, c->to);
	nr = 0;
	for (size_t i = 0; i < c->nr_spans; i++)
		if (c->spans[i].samples)
			((struct perfrec_cpu_span *)(sf + 1))[nr++] = c->spans[i];
	r = perfrec_pdwriter__set_feature(w, PERFREC_FEAT_SPANS, sf, len);
	free(sf);
	return r;
}

/* --------------------------------------------------------------- records */

static int note_span(struct cut *c, uint32_t cpu, uint64_t t)
{
	struct perfrec_cpu_span *s;

	if (cpu >= 4096)
		return 0;
	if (cpu >= c->nr_spans) {
		s = realloc(c->spans, (cpu + 1) * sizeof(*s));
		if (!s)
			return -ENOMEM;
		memset(s + c->nr_spans, 0, (cpu + 1 - c->nr_spans) * sizeof(*s));
		for (size_t i = c->nr_spans; i <= cpu; i++)
			s[i].cpu = (uint32_t)i;
		c->spans = s;
		c->nr_spans = cpu + 1;
	}
	s = &c->spans[cpu];
	if (!s->samples || t < s->first_time)
		s->first_time = t;
	if (!s->samples || t > s->last_time)
		s->last_time = t;
	s->samples++;
	return 0;
}

/*
 * A CGROUP record (u64 id, path): whether the selection takes that
 * cgroup's samples.  Later records of an id win (ids are inode numbers:
 * a cgroup removed and another made may share one).
 */
static int note_cgroup(struct cut *c, const struct perf_event_header *h)
{
	const char *path = (const char *)h + sizeof(*h) + 8;
	struct cgroup_label l;
	uint64_t id;

	if (h->size <= sizeof(*h) + 8 || !memchr(path, '\0', h->size - sizeof(*h) - 8))
		return 0;
	memcpy(&id, h + 1, 8);
	if (c->nr_cgroups == c->cap_cgroups) {
		size_t n = c->cap_cgroups ? c->cap_cgroups * 2 : 64;
		struct cut_cgroup *cg = reallocarray(c->cgroups, n, sizeof(*cg));

		if (!cg)
			return -ENOMEM;
		c->cgroups = cg;
		c->cap_cgroups = n;
	}
	cgroup_label_parse(path, &l);
	c->cgroups[c->nr_cgroups++] = (struct cut_cgroup){
		.id = id, .selected = cgroup_select_matches(&c->select, path, &l),
	};
	return 0;
}

/* Whether sample @h is of a cgroup the selection takes (not: no cgroup recorded). */
static bool sample_selected(const struct cut *c, const struct perfrec_pdreader *r, const struct perf_event_header *h)
{
	const struct perfrec_pdreader_attr *a = NULL;
	struct perfrec_sample s;
	uint64_t id;

	if (perfrec_event__identifier(h, &id) == 0)
		a = perfrec_pdreader__attr_by_id(r, id);
	if (!a && perfrec_pdreader__nr_attrs(r) == 1)
		a = perfrec_pdreader__attr(r, 0);
	if (!a || !(a->attr.sample_type & PERF_SAMPLE_CGROUP) ||
	    perfrec_sample__parse(h, a->attr.sample_type, a->attr.read_format, &s) < 0)
		return false;
	for (size_t i = c->nr_cgroups; i-- > 0;)
		if (c->cgroups[i].id == s.cgroup)
			return c->cgroups[i].selected;
	return false;
}

/* Copy what of @r belongs in the window; counts into @c and *ret_samples. */
static int copy_file(struct cut *c, const struct window_file *f, struct perfrec_pdreader *r,
		     struct perfrec_pdwriter *w, uint64_t *ret_samples)
{
	uint64_t from = perfrec_clockdata__to_sample(&f->clock, c->from);
	uint64_t to = perfrec_clockdata__to_sample(&f->clock, c->to);
	uint64_t off, t, file_max = 0, n = 0;
	const struct perf_event_header *h;
	bool last_round = false, file_any = false;
	uint32_t cpu;
	int e;

	/*
	 * The selection needs every cgroup's path before the first sample:
	 * a CGROUP record may come after samples of its cgroup in file order
	 * (readers sort by time; the rings and the synthesized records are
	 * written as they come), so they are read in a first pass.
	 */
	if (cgroup_select_any(&c->select)) {
		while ((e = perfrec_pdreader__next(r, &h, &off)) > 0)
			if (h->type == PERF_RECORD_CGROUP && note_cgroup(c, h) < 0)
				return -ENOMEM;
		if (e < 0)
			return e;
		perfrec_pdreader__rewind(r);
	}
	while ((e = perfrec_pdreader__next(r, &h, &off)) > 0) {
		int has_t = window_record_time(r, h, &t, &cpu);

		if (h->type == PERF_RECORD_SAMPLE) {
			if (has_t <= 0)
				continue;
			if (!file_any || t > file_max)
				file_max = t;
			file_any = true;
			if (t < from || t >= to)
				continue;
			if (cgroup_select_any(&c->select) && !sample_selected(c, r, h)) {
				c->unselected++;
				continue;
			}
			/* Overlapping inputs (a snapshot beside its published files): once. */
			if (c->seen_any && t <= c->seen_max) {
				c->dup_samples++;
				continue;
			}
			c->samples++;
			n++;
			if (!c->has_time || t < c->first_time)
				c->first_time = t;
			if (!c->has_time || t > c->last_time)
				c->last_time = t;
			c->has_time = true;
			if (note_span(c, cpu, t) < 0)
				return -ENOMEM;
		} else if (h->type == PERF_RECORD_LOST || h->type == PERF_RECORD_LOST_SAMPLES) {
			if (has_t > 0 && (t < from || t >= to))
				continue;
			c->lost += window_record_lost(h);
		} else if (h->type == PERFREC_RECORD_FINISHED_ROUND) {
			if (last_round)
				continue;
		} else if (h->type == PERFREC_RECORD_FINISHED_INIT) {
			if (c->wrote_init)
				continue;
			c->wrote_init = true;
		} else if (h->type >= PERFREC_RECORD_HEADER_ATTR) {
			/* Header records of pipe input and the like: the writer makes its own. */
			continue;
		} else if (has_t > 0 && t >= to) {
			/* Side-band after the window resolves nothing in it. */
			continue;
		}
		e = perfrec_pdwriter__write(w, h, h->size);
		if (e < 0)
			return e;
		last_round = h->type == PERFREC_RECORD_FINISHED_ROUND;
	}
	if (e < 0)
		return e;
	/* Each file's records end a round, so the next file's never mix with them. */
	if (!last_round) {
		struct perf_event_header round = { .type = PERFREC_RECORD_FINISHED_ROUND, .size = sizeof(round) };

		e = perfrec_pdwriter__write(w, &round, sizeof(round));
		if (e < 0)
			return e;
	}
	if (file_any && (!c->seen_any || file_max > c->seen_max)) {
		c->seen_max = file_max;
		c->seen_any = true;
	}
	*ret_samples = n;
	return 0;
}

/* ------------------------------------------------------------------ live */

/* The file of @l being written that the window [.., @to) reaches, or NULL. */
static struct window_file *find_live(struct window_listing *l, uint64_t to)
{
	struct window_file *live = NULL;

	for (size_t i = 0; i < l->nr; i++)
		if (!l->files[i].error && l->files[i].being_written && l->files[i].start_wall < to)
			live = &l->files[i];
	return live;
}

static struct window_file *find_stamp(struct window_listing *l, const char *stamp)
{
	for (size_t i = 0; i < l->nr; i++)
		if (!l->files[i].error && strstr(base(l->files[i].path), stamp))
			return &l->files[i];
	return NULL;
}

/* Wait (bounded) until @f's writer has let go of it: finished and published. */
static void wait_released(const struct window_file *f)
{
	for (int i = 0; i < 1000 && window_file_held(f); i++)
		usleep(10000);
}

/*
 * @l again, after perfrecd rotated: the file it listed as being written is
 * finished once its writer lets go, and newer files have begun.  A file of
 * the old listing that is gone from the new one (retention) is kept: the
 * listing holds it open.
 */
static int relist(const char *const *paths, size_t np, const struct window_scan_opts *so, struct window_listing *l,
		  const struct window_file *was_live)
{
	struct window_listing n;
	int r;

	wait_released(was_live);
	r = window_list(paths, np, so, &n);
	if (r < 0)
		return r;
	for (size_t i = 0; i < l->nr; i++) {
		struct window_file *f = &l->files[i], *v;
		bool found = false;

		for (size_t k = 0; k < n.nr && !found; k++)
			found = !n.files[k].error && n.files[k].dev == f->dev && n.files[k].ino == f->ino;
		if (found || f->fd < 0 || f->error)
			continue;
		v = realloc(n.files, (n.nr + 1) * sizeof(*v));
		if (!v) {
			window_listing_free(&n);
			return -ENOMEM;
		}
		n.files = v;
		n.files[n.nr++] = *f;
		memset(f, 0, sizeof(*f));
		f->fd = -1;
	}
	/* What was gone before is gone still: the new reading does not see it at all. */
	for (size_t i = 0; i < l->nr_gone; i++) {
		struct window_gone *v = realloc(n.gone, (n.nr_gone + 1) * sizeof(*v));

		if (!v) {
			window_listing_free(&n);
			return -ENOMEM;
		}
		n.gone = v;
		n.gone[n.nr_gone++] = l->gone[i];
		l->gone[i].path = NULL;
	}
	window_files_sort(n.files, n.nr);
	window_listing_free(l);
	*l = n;
	return 0;
}

/* The daemon's Snapshot into a new temporary file, loaded into @snap; its path, or NULL having said why. */
static char *take_snapshot(const struct cut_opts *o, struct window_file *snap, const char *live_name)
{
	char tmpl[] = "/tmp/perfrecctl-cut-XXXXXX";
	int fd, r;

	fd = mkostemp(tmpl, O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "perfrecctl cut: cannot create a file for the daemon's snapshot: %m\n");
		return NULL;
	}
	r = o->snapshot_into(fd, NULL);
	close(fd);
	if (r != 0) {
		fprintf(stderr, "perfrecctl cut: perfrecd gave no snapshot of %s\n", live_name);
		unlink(tmpl);
		return NULL;
	}
	r = window_file_load(snap, strdup(tmpl));
	if (r < 0 || !snap->path) {
		fprintf(stderr, "perfrecctl cut: the daemon's snapshot is unusable (%s)\n",
			snap->error ? snap->error : strerror(-r));
		window_file_exit(snap);
		unlink(tmpl);
		return NULL;
	}
	return strdup(tmpl);
}

/*
 * The file being written, replaced by a Snapshot of it from the daemon:
 * everything up to now rather than up to its last checkpoint.  When the
 * daemon rotated after the listing, the snapshot is of a newer file: the
 * files are listed again (the one listed as being written is whole by
 * then) and the snapshot stands in for the file it is of.  Returns the
 * snapshot's path (the caller unlinks it) or NULL, having said why.
 */
static char *live_snapshot(const struct cut_opts *o, struct window_listing *l, const char *const *paths, size_t np,
			   const struct window_scan_opts *so)
{
	struct window_file *live = find_live(l, o->to), snap;
	const char *sock = o->socket_path;
	char stamp[48], *path, *name;
	struct stat st;

	if (!live)
		return NULL;
	if (!sock || !o->snapshot_into || stat(sock, &st) < 0 || !S_ISSOCK(st.st_mode)) {
		fprintf(stderr, "perfrecctl cut: no perfrecd at %s: %s is read as far as it was checkpointed\n", sock,
			base(live->path));
		return NULL;
	}
	path = take_snapshot(o, &snap, base(live->path));
	if (!path)
		return NULL;
	/* Only a snapshot of a file of these paths stands in for it (the daemon may record elsewhere). */
	window_name_stamp(snap.clock.wall_ns, stamp, sizeof(stamp));
	if (!strstr(base(live->path), stamp)) {
		fprintf(stderr, "perfrecctl cut: perfrecd began another file after %s was listed: listing again\n",
			base(live->path));
		if (relist(paths, np, so, l, live) < 0 || !(live = find_stamp(l, stamp)) || !live->being_written) {
			if (!live)
				fprintf(stderr, "perfrecctl cut: perfrecd at %s is not writing into %s\n", sock,
					np == 1 ? paths[0] : "the paths given");
			window_file_exit(&snap);
			unlink(path);
			free(path);
			return NULL;
		}
	}
	name = strdup(base(live->path));
	fprintf(stderr, "perfrecctl cut: %s: its unpublished data from perfrecd's snapshot (up to now)\n",
		name ? name : "?");
	if (asprintf(&snap.label, "%s (its snapshot)", name ? name : "?") < 0)
		snap.label = NULL;
	free(name);
	window_file_exit(live);
	*live = snap;
	live->being_written = true; /* a whole file, read as one */
	return path;
}

/* ------------------------------------------------------------------- main */

/*
 * Coverage holes of the files used inside the window, on stderr.  One
 * before the oldest file listed (@first_is_oldest) is said to be so: what
 * was there, if anything, is no longer kept (retention).
 */
static void report_gaps(const struct cut *c, const struct window_file *const *used, size_t n, bool first_is_oldest)
{
	uint64_t covered = c->from;
	char a[64], b[64];

	for (size_t i = 0; i <= n; i++) {
		uint64_t next = i < n ? used[i]->start_wall : c->to;

		if (next > c->to)
			next = c->to;
		if (next > covered + WINDOW_GAP_NS) {
			fmt(covered, true, a, sizeof(a));
			fmt(next, true, b, sizeof(b));
			if (i == 0 && first_is_oldest)
				fprintf(stderr, "perfrecctl cut: gap in the window: %s .. %s (%.3f s): before the oldest file "
					"kept (%s): removed by retention, or nothing recorded\n", a, b,
					(double)(next - covered) / 1e9, base(used[0]->path));
			else
				fprintf(stderr, "perfrecctl cut: gap in the window: %s .. %s (%.3f s): nothing recorded\n",
					a, b, (double)(next - covered) / 1e9);
		}
		if (i < n && used[i]->end_wall > covered)
			covered = used[i]->end_wall;
		/* The daemon's snapshot of the file being written covers up to now. */
		if (i < n && used[i]->being_written && used[i]->label)
			covered = c->to;
	}
}

/* Whether no readable file of @files starts before @first. */
static bool first_is_oldest(const struct window_file *files, size_t n, const struct window_file *first)
{
	for (size_t i = 0; i < n; i++)
		if (!files[i].error && files[i].start_wall < first->start_wall)
			return false;
	return true;
}

static int nothing_recorded(const struct cut *c, const struct window_file *files, size_t n)
{
	char a[64], b[64], la[64], x[64], y[64];
	uint64_t lo = 0, hi = 0;
	bool any = false;

	fmt(c->from, true, a, sizeof(a));
	fmt(c->to, true, b, sizeof(b));
	fmt(c->from, false, la, sizeof(la));
	if (c->unselected) {
		fprintf(stderr, "perfrecctl cut: none of the %" PRIu64 " samples between %s and %s is of a cgroup "
			"--container/--pod/--unit select (perfrecctl pprof of the window labels them)\n",
			c->unselected, a, b);
		return EXIT_BAD;
	}
	for (size_t i = 0; i < n; i++) {
		if (files[i].error)
			continue;
		if (!any || files[i].start_wall < lo)
			lo = files[i].start_wall;
		if (!any || files[i].end_wall > hi)
			hi = files[i].end_wall;
		any = true;
	}
	if (!any) {
		fprintf(stderr, "perfrecctl cut: nothing recorded between %s and %s (local %s): no recorded files\n", a,
			b, la);
		return EXIT_BAD;
	}
	fmt(lo, true, x, sizeof(x));
	fmt(hi, true, y, sizeof(y));
	fprintf(stderr, "perfrecctl cut: nothing recorded between %s and %s (local %s); the files hold %s to %s\n", a,
		b, la, x, y);
	return EXIT_BAD;
}

/*
 * A new file beside @path, 0600 as perf's own perf.data (a cut shows every
 * process and the kernel's map), never through a link planted at the name:
 * output_file_publish() renames it over @path once it verifies.
 */
static int open_out(const char *path, bool force, int level, struct output_file *of, struct perfrec_pdwriter **ret)
{
	struct perfrec_pdwriter_opts wo = { .sz = sizeof(wo), .owns_fd = true, .compress_level = level };
	int r;

	r = output_file_open(of, path, force ? OUTPUT_REPLACE : 0, 0600);
	if (r == -EEXIST) {
		fprintf(stderr, "perfrecctl cut: %s exists; not overwritten without --force\n", path);
		return r;
	}
	if (r < 0) {
		fprintf(stderr, "perfrecctl cut: cannot write %s: %s\n", path, strerror(-r));
		return r;
	}
	r = perfrec_pdwriter__new(of->fd, &wo, ret);
	if (r < 0) {
		close(of->fd);
		output_file_discard(of);
		return r;
	}
	return 0;
}

static int verify_out(const char *path)
{
	struct perfrec_pdreader_opts o = { .sz = sizeof(o) };
	struct perfrec_pdreader *r;
	uint64_t off;
	int e;

	e = perfrec_pdreader__open(path, &o, &r);
	if (e < 0)
		return e;
	e = perfrec_pdreader__verify(r);
	if (e < 0) {
		/* Its offset is set by the call: not in the argument list, whose order is unspecified. */
		const char *why = perfrec_pdreader__error(r, &off);

		fprintf(stderr, "perfrecctl cut: the cut does not verify: %s at offset %llu\n", why,
			(unsigned long long)off);
	}
	perfrec_pdreader__free(r);
	return e;
}

/*
 * Files the window needs that retention removed between their listing and
 * their opening: their data is gone, and a cut without it would show a
 * hole where the files did hold samples.  Each one's span runs from the
 * start in its name to the start of the next file.  EXIT_BAD having named
 * them, or 0.
 */
static int check_gone(const struct cut *c, const struct window_listing *l)
{
	int rc = 0;

	for (size_t i = 0; i < l->nr_gone; i++) {
		uint64_t start = l->gone[i].start_wall, end = UINT64_MAX;
		char a[64], b[64];

		if (!start)
			continue;
		for (size_t k = 0; k < l->nr; k++)
			if (!l->files[k].error && l->files[k].start_wall > start && l->files[k].start_wall < end)
				end = l->files[k].start_wall;
		for (size_t k = 0; k < l->nr_gone; k++)
			if (l->gone[k].start_wall > start && l->gone[k].start_wall < end)
				end = l->gone[k].start_wall;
		if (start >= c->to || end <= c->from)
			continue;
		start = start > c->from ? start : c->from;
		end = end < c->to ? end : c->to;
		fmt(start, true, a, sizeof(a));
		fmt(end, true, b, sizeof(b));
		fprintf(stderr, "perfrecctl cut: %s was removed (retention) after it was listed, before it could be "
			"read: the window misses %s .. %s (%.3f s) that it held; nothing written (cut again for what is "
			"left)\n", base(l->gone[i].path), a, b, (double)(end - start) / 1e9);
		rc = EXIT_BAD;
	}
	return rc;
}

/*
 * A file being written read from disk, not from the daemon's snapshot,
 * ends at its last checkpoint: the rest of the window is in perfrecd, not
 * in the file.  Unless --no-live asked for what is on disk, that is no
 * window: EXIT_BAD having said what is missing, or 0.
 */
static int check_live_tail(const struct cut *c, const struct window_file *const *used, size_t n)
{
	char a[64], b[64];

	for (size_t i = 0; i < n; i++) {
		const struct window_file *f = used[i];

		if (!f->being_written || f->label || f->end_wall + WINDOW_GAP_NS >= c->to)
			continue;
		fmt(f->end_wall, true, a, sizeof(a));
		fmt(c->to, true, b, sizeof(b));
		fprintf(stderr, "perfrecctl cut: %s .. %s (%.3f s) of the window is recorded but not yet in %s, and "
			"perfrecd's snapshot of it could not be had: nothing written (cut again, or add --no-live for "
			"what is on disk)\n", a, b, (double)(c->to - f->end_wall) / 1e9, base(f->path));
		return EXIT_BAD;
	}
	return 0;
}

/*
 * The files of @files the window needs, opened (through the fd of the
 * listing) into @used and @readers.  0, or an exit code having said why.
 */
static int open_inputs(const struct cut *c, struct window_file *files, size_t nf, const struct window_file **used,
		       struct perfrec_pdreader **readers, size_t *ret_nu)
{
	size_t nu = 0;
	int r;

	for (size_t i = 0; i < nf; i++) {
		struct window_file *f = &files[i];
		struct perfrec_pdreader_opts o = { .sz = sizeof(o), .salvage = f->in_progress };
		char src[32];
		int64_t skew;

		if (f->error) {
			fprintf(stderr, "perfrecctl cut: skipped %s: %s\n", f->path, f->error);
			continue;
		}
		if (f->start_wall >= c->to || (f->end_wall < c->from && !f->being_written))
			continue;
		if (nu) {
			skew = (int64_t)(f->clock.wall_ns - f->clock.clock_ns) -
			       (int64_t)(used[0]->clock.wall_ns - used[0]->clock.clock_ns);
			if (skew > (int64_t)CLOCK_SKEW_NS || skew < -(int64_t)CLOCK_SKEW_NS) {
				fprintf(stderr, "perfrecctl cut: %s was recorded on another boot than %s (their clocks "
					"differ by %.1f s): cut a window within one boot\n", f->path, used[0]->path,
					(double)skew / 1e9);
				*ret_nu = nu;
				return EXIT_BAD;
			}
		}
		r = perfrec_pdreader__open(window_file_source(f, src, sizeof(src)), &o, &readers[nu]);
		if (r < 0) {
			/* Its span is known: it holds data of the window, and leaving it out would hide that. */
			fprintf(stderr, "perfrecctl cut: cannot read %s, which holds data of the window: %s; nothing "
				"written\n", f->path, strerror(-r));
			*ret_nu = nu;
			return EXIT_BAD;
		}
		used[nu++] = f;
	}
	*ret_nu = nu;
	return 0;
}

/* The files of @paths, listed for window [c->from, c->to), with the live part from the daemon. */
static int list_inputs(const struct cut *c, const char *const *paths, size_t np, bool live,
		       struct window_listing *l, char **ret_snap)
{
	struct window_scan_opts so = { .keep = true, .keep_from = c->from, .keep_to = c->to };
	struct rlimit rl;
	int r;

	/* The listing keeps every file of the window open: a long window is many files. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
	r = window_list(paths, np, &so, l);
	if (r < 0) {
		fprintf(stderr, "perfrecctl cut: cannot read %s: %s\n", np == 1 ? paths[0] : "the paths given",
			strerror(-r));
		return r;
	}
	*ret_snap = live ? live_snapshot(c->opts, l, paths, np, &so) : NULL;
	return 0;
}

/* The window on stderr, in UTC and local time, before the work starts. */
static void say_window(const struct cut *c)
{
	char a[64], b[64], la[64], lb[64];

	fmt(c->from, true, a, sizeof(a));
	fmt(c->to, true, b, sizeof(b));
	fmt(c->from, false, la, sizeof(la));
	fmt(c->to, false, lb, sizeof(lb));
	fprintf(stderr, "perfrecctl cut: window %s .. %s (local %s .. %s), %.3f s\n", a, b, la, lb,
		(double)(c->to - c->from) / 1e9);
}

/* The events, build ids and BPF programs of the @nu inputs, merged into @c: 0 or an exit status. */
static int merge_inputs(struct cut *c, const struct window_file **used, struct perfrec_pdreader **readers,
			size_t nu)
{
	for (size_t i = 0; i < nu; i++) {
		int r = merge_attrs(c, used[i], readers[i]);

		if (r == 0)
			r = merge_buildids(c, readers[i]);
		if (r == 0)
			r = merge_bpf(c, readers[i]);
		if (r < 0)
			return r == -ENOMEM ? EXIT_USAGE : EXIT_BAD;
	}
	return 0;
}

/* The merged events into the output. */
static int write_events(struct cut *c, struct perfrec_pdwriter *w)
{
	for (size_t i = 0; i < c->nr_attrs; i++) {
		int r;

		/* The writer takes one attr size: the largest, zero-extended (the reader did). */
		c->attrs[i].attr.size = c->attr_size;
		r = perfrec_pdwriter__add_attr(w, &c->attrs[i].attr, c->attrs[i].ids, c->attrs[i].nr_ids,
					       c->attrs[i].name);
		if (r < 0) {
			fprintf(stderr, "perfrecctl cut: cannot write the events: %s\n", strerror(-r));
			return r;
		}
	}
	return 0;
}

/*
 * The window's records of each input into the output (@tmp, for messages).
 * A damaged input gives what it has up to the damage; failing to write
 * is an error.
 */
static int copy_inputs(struct cut *c, const struct window_file **used, struct perfrec_pdreader **readers,
		       size_t nu, struct perfrec_pdwriter *w, const char *tmp)
{
	for (size_t i = 0; i < nu; i++) {
		uint64_t n = 0, off;
		int r = copy_file(c, used[i], readers[i], w, &n);

		if (r < 0) {
			if (r == -EBADMSG) {
				const char *why = perfrec_pdreader__error(readers[i], &off);

				fprintf(stderr, "perfrecctl cut: %s: %s at offset %llu; the rest of it is left out\n",
					used[i]->path, why, (unsigned long long)off);
			} else {
				fprintf(stderr, "perfrecctl cut: cannot write %s: %s\n", tmp, strerror(-r));
				return r;
			}
		}
		fprintf(stderr, "perfrecctl cut: used %s%s: %" PRIu64 " samples in the window\n",
			used[i]->label ? used[i]->label : base(used[i]->path),
			!used[i]->label && used[i]->being_written ? " (being written)" : "", n);
	}
	return 0;
}

/* What was written, once it is in place. */
static void say_written(const struct cut *c, size_t nu)
{
	char f[64], t[64];

	fmt(c->from, true, f, sizeof(f));
	fmt(c->to, true, t, sizeof(t));
	fprintf(stderr, "perfrecctl cut: wrote %s: %" PRIu64 " samples, %" PRIu64 " lost, from %zu file%s, "
		"window %s to %s\n", c->out_path, c->samples, c->lost, nu, nu == 1 ? "" : "s", f, t);
	if (c->dup_samples)
		fprintf(stderr, "perfrecctl cut: %" PRIu64 " samples found in two inputs were kept once\n",
			c->dup_samples);
}

/* Closes the @nf readers and removes the unwound copies of inputs (arrays may be NULL). */
static void free_inputs(struct perfrec_pdreader **readers, char **unwound, size_t nf)
{
	for (size_t i = 0; readers && i < nf; i++)
		perfrec_pdreader__free(readers[i]);
	free(readers);
	for (size_t i = 0; unwound && i < nf; i++) {
		if (unwound[i])
			unlink(unwound[i]);
		free(unwound[i]);
	}
	free(unwound);
}

static int run(struct cut *c, const char *const *paths, size_t np, bool force, int level, bool live)
{
	struct window_listing l = { 0 };
	struct window_file *files = NULL;
	const struct window_file **used = NULL;
	struct perfrec_pdreader **readers = NULL;
	struct perfrec_pdwriter *w = NULL;
	char **unwound = NULL;
	struct output_file of = { .fd = -1, .dirfd = -1 };
	char *snap = NULL;
	const char *tmp = NULL;
	size_t nf = 0, nu = 0;
	int r, rc = EXIT_USAGE;

	if (list_inputs(c, paths, np, live, &l, &snap) < 0)
		return EXIT_USAGE;
	files = l.files;
	nf = l.nr;
	say_window(c);
	used = calloc(nf + 1, sizeof(*used));
	readers = calloc(nf + 1, sizeof(*readers));
	unwound = calloc(nf + 1, sizeof(*unwound));
	if (!used || !readers || !unwound)
		goto out;
	rc = check_gone(c, &l);
	if (rc)
		goto out;
	rc = open_inputs(c, files, nf, used, readers, &nu);
	if (rc)
		goto out;
	if (nu == 0) {
		rc = nothing_recorded(c, files, nf);
		goto out;
	}
	rc = unwind_raw_inputs(used, readers, nu, unwound);
	if (rc)
		goto out;
	rc = merge_inputs(c, used, readers, nu);
	if (rc)
		goto out;
	r = open_out(c->out_path, force, level, &of, &w);
	tmp = of.tmp_path;
	if (r < 0) {
		rc = r == -EEXIST ? EXIT_BAD : EXIT_USAGE;
		goto out;
	}
	rc = EXIT_USAGE;
	if (write_events(c, w) < 0 || copy_inputs(c, used, readers, nu, w, tmp) < 0)
		goto out;
	rc = live ? check_live_tail(c, used, nu) : 0;
	if (rc)
		goto out;
	rc = EXIT_USAGE;
	report_gaps(c, used, nu, first_is_oldest(files, nf, used[0]));
	if (c->samples == 0) {
		rc = nothing_recorded(c, files, nf);
		goto out;
	}
	r = set_features(c, w, readers, *used, nu);
	if (r == 0)
		r = perfrec_pdwriter__finish(w);
	if (r < 0) {
		fprintf(stderr, "perfrecctl cut: cannot finish %s: %s\n", tmp, strerror(-r));
		goto out;
	}
	perfrec_pdwriter__free(w, false);
	w = NULL;
	if (verify_out(tmp) < 0) {
		rc = EXIT_BAD;
		goto out;
	}
	tmp = NULL;
	r = output_file_publish(&of);
	if (r < 0) {
		fprintf(stderr, "perfrecctl cut: cannot write %s: %s\n", c->out_path,
			r == -EEXIST ? "it appeared meanwhile; not overwritten without --force" : strerror(-r));
		goto out;
	}
	say_written(c, nu);
	rc = 0;
out:
	perfrec_pdwriter__free(w, false);
	output_file_discard(&of);
	free_inputs(readers, unwound, nf);
	free(used);
	window_listing_free(&l);
	if (snap)
		unlink(snap);
	free(snap);
	return rc;
}

int cut_write(const struct cut_opts *o, const char *const *paths, size_t nr_paths)
{
	struct cut c = { .opts = o, .out_path = o->out_path, .from = o->from, .to = o->to, .select = o->select };
	int rc;

	rc = run(&c, paths, nr_paths, o->force, o->level, o->live);
	for (size_t i = 0; i < c.nr_attrs; i++) {
		free(c.attrs[i].ids);
		free(c.attrs[i].name);
	}
	free(c.attrs);
	free(c.spans);
	free(c.cgroups);
	free(c.buildids);
	perfrec_bpfmeta__free(c.bpf);
	return rc;
}

int cut_check_gone(const struct window_listing *l, uint64_t from, uint64_t to)
{
	struct cut c = { .from = from, .to = to };

	return check_gone(&c, l);
}
