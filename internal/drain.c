// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The drain (see drain.h).  A pass over a ring:
 *
 *   perfrec_ring__begin()          what the kernel has published
 *   perfrec_ring__next() ...       each record once: decoded, repaired if
 *                                  needed, given to every sink's record()
 *   perfrec_ring__iov() + write()  the walked bytes to every sink, as at
 *                                  most two segments of the mapping; a
 *                                  repaired record cuts the span (the ring
 *                                  is read-only to us): the bytes before it
 *                                  from the ring, it from the repaired copy
 *   perfrec_ring__commit()         tail moved only after every sink had them
 *
 * Nothing is allocated per record: a wrapped record sits in the ring's
 * scratch buffer, a repaired one in the drain's.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "drain.h"

struct drain {
	struct drain_opts opts;
	struct drain_id *ids; /* sorted by id */
	size_t nr_ids, cap_ids;
	/* the last sample's event: a ring's samples are mostly one event's */
	const struct drain_id *last_id;
	/* NULL slots are sinks removed during a pass, compacted after it */
	struct sink **sinks;
	size_t nr_sinks, cap_sinks;
	bool in_pass;
	size_t sideband_trailer;
	uint64_t repaired;          /* KSYMBOL/BPF_EVENT records whose trailer was moved */
	uint64_t user_chains_ended; /* samples whose user callchain held a PERF_CONTEXT value */
	unsigned char fixed[8192];  /* a sample with a 127-frame callchain, repaired */
};

static void say(const struct drain *d, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The owner's log (the daemon's journal, the record object's callback), or nothing. */
static void say(const struct drain *d, int level, const char *fmt, ...)
{
	char buf[320];
	va_list ap;

	if (!d->opts.log)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	d->opts.log(d->opts.log_ctx, level, buf);
}

int drain_new(const struct drain_opts *opts, struct drain **ret)
{
	struct drain *d = calloc(1, sizeof(*d));

	if (!d)
		return -ENOMEM;
	memcpy(&d->opts, opts, opts->sz < sizeof(d->opts) ? opts->sz : sizeof(d->opts));
	d->opts.sz = sizeof(d->opts);
	d->sideband_trailer = perfrec_sample_id__size(d->opts.sideband_sample_type);
	*ret = d;
	return 0;
}

void drain_free(struct drain *d)
{
	if (!d)
		return;
	free(d->ids);
	free(d->sinks);
	free(d);
}

static int cmp_id(const void *a, const void *b)
{
	const struct drain_id *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

int drain_add_ids(struct drain *d, const uint64_t *ids, size_t nr, uint64_t sample_type,
		  uint64_t read_format)
{
	if (d->nr_ids + nr > d->cap_ids) {
		size_t cap = (d->nr_ids + nr) * 2;
		struct drain_id *n = realloc(d->ids, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		d->ids = n;
		d->cap_ids = cap;
	}
	for (size_t i = 0; i < nr; i++) {
		struct drain_id *f = &d->ids[d->nr_ids++];

		*f = (struct drain_id){ .id = ids[i], .sample_type = sample_type, .read_format = read_format };
		sample_layout_init(&f->layout, sample_type, read_format);
	}
	qsort(d->ids, d->nr_ids, sizeof(*d->ids), cmp_id);
	d->last_id = NULL; /* moved */
	return 0;
}

int drain_add_evlist(struct drain *d, const struct perfrec_evlist *el)
{
	int e = 0;

	for (size_t i = 0; e == 0 && i < perfrec_evlist__nr_evsels(el); i++) {
		const struct perfrec_evsel *ev = perfrec_evlist__evsel(el, i);

		e = drain_add_ids(d, ev->ids, ev->nr_ids, ev->attr.sample_type, ev->attr.read_format);
	}
	return e;
}

/* Events may differ in layout (a tracepoint adds RAW): find by IDENTIFIER. */
const struct drain_id *drain_find_id(const struct drain *d, const struct perf_event_header *h)
{
	struct drain_id key;

	if (perfrec_event__identifier(h, &key.id) < 0)
		return NULL;
	return bsearch(&key, d->ids, d->nr_ids, sizeof(key), cmp_id);
}

/* drain_find_id() for a sample in a pass: the last one's event first. */
static const struct drain_id *find_sample_id(struct drain *d, const struct perf_event_header *h)
{
	const struct drain_id *f;
	struct drain_id key;

	if (perfrec_event__identifier(h, &key.id) < 0)
		return NULL;
	if (d->last_id && d->last_id->id == key.id)
		return d->last_id;
	f = bsearch(&key, d->ids, d->nr_ids, sizeof(key), cmp_id);
	if (f)
		d->last_id = f;
	return f;
}

int drain_add_sink(struct drain *d, struct sink *s)
{
	if (d->nr_sinks == d->cap_sinks) {
		size_t cap = d->cap_sinks ? d->cap_sinks * 2 : 4;
		struct sink **n = realloc(d->sinks, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		d->sinks = n;
		d->cap_sinks = cap;
	}
	d->sinks[d->nr_sinks++] = s;
	return 0;
}

static void compact_sinks(struct drain *d)
{
	size_t n = 0;

	for (size_t i = 0; i < d->nr_sinks; i++)
		if (d->sinks[i])
			d->sinks[n++] = d->sinks[i];
	d->nr_sinks = n;
}

void drain_remove_sink(struct drain *d, struct sink *s)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->nr_sinks; i++)
		if (d->sinks[i] == s)
			d->sinks[i] = NULL;
	/* During a pass the loops walk the array: close the gap after it. */
	if (!d->in_pass)
		compact_sinks(d);
}

void drain_replace_sink(struct drain *d, struct sink *old, struct sink *s)
{
	for (size_t i = 0; d && i < d->nr_sinks; i++)
		if (d->sinks[i] == old)
			d->sinks[i] = s;
}

uint64_t drain_repaired(const struct drain *d)
{
	return d->repaired + d->user_chains_ended;
}

/*
 * @h (a sample of event @f, when known) repaired into @buf (@bufsz bytes)
 * when the kernel got it wrong, which is returned (logged once per kind),
 * else @h as it is.
 */
static const struct perf_event_header *drain_repair(struct drain *d, const struct perf_event_header *h,
						    const struct drain_id *f, void *buf, size_t bufsz)
{
	if (h->type == PERF_RECORD_SAMPLE) {
		/* Only user callchains need it: nothing else for a sample. */
		if (!d->opts.callchain || !f || !sample_layout_end_user_chain(&f->layout, h, buf, bufsz))
			return h;
		/*
		 * Nothing a user can act on (any -g recording of code without frame
		 * pointers does it), so a debug line; status and metrics count it
		 * among the repaired records.
		 */
		if (!d->user_chains_ended++)
			say(d, LOG_DEBUG, "A user callchain held a value in the PERF_CONTEXT range (a frame-pointer walk "
				   "through a frame without one): such chains end before it");
		return buf;
	}
	if (h->type != PERF_RECORD_KSYMBOL && h->type != PERF_RECORD_BPF_EVENT)
		return h; /* the drain's common case: checked before anything else */
	if (!perfrec_event__repair_sideband(h, d->sideband_trailer, buf, bufsz))
		return h;
	if (!d->repaired++)
		say(d, LOG_NOTICE, "The kernel sized a %s record for more side-band events than wrote it "
			   "(another profiler is running): such records are written as they should have been",
			   h->type == PERF_RECORD_KSYMBOL ? "KSYMBOL" : "BPF_EVENT");
	return buf;
}

static const struct drain_id *rec_id(struct drain_rec *r)
{
	if (!r->looked_up) {
		r->id = drain_find_id(r->d, r->h);
		r->looked_up = true;
	}
	return r->id;
}

/*
 * A sample's pid and time.  IDENTIFIER, IP, TID and TIME are the first
 * fields of every sample layout, at offsets fixed by sample_type, so they
 * are read in place instead of parsing the whole sample (callchain,
 * registers, ...) once per record on the hot path.
 */
static void decode_sample(struct drain_rec *r)
{
	const unsigned char *p = (const unsigned char *)r->h;
	const struct drain_id *f = rec_id(r);
	const struct sample_layout *l;

	if (!f)
		return;
	l = &f->layout;
	if ((l->pid_off && l->pid_off + 8u > r->h->size) || (l->time_off && l->time_off + 8u > r->h->size))
		return;
	if (l->pid_off)
		memcpy(&r->pid, p + l->pid_off, sizeof(r->pid));
	if (l->time_off)
		memcpy(&r->time, p + l->time_off, sizeof(r->time));
	r->sample_ok = true;
	r->timed = true;
}

uint64_t drain_rec_time(struct drain_rec *r)
{
	const struct drain_id *f;
	struct perfrec_sample_id sid;

	if (r->timed)
		return r->time;
	r->timed = true;
	f = rec_id(r);
	if (f && r->h->type != PERF_RECORD_SAMPLE &&
	    perfrec_sample_id__parse(r->h, f->sample_type, &sid) == 0)
		r->time = sid.time;
	return r->time;
}

/* @f: the sample's event when the pass looked it up already */
static void decode(const struct drain *d, struct drain_rec *r, const struct perf_event_header *h, size_t idx,
		   const struct drain_id *f)
{
	*r = (struct drain_rec){ .h = h, .ring = idx, .d = d, .id = f, .looked_up = f != NULL };
	switch (h->type) {
	case PERF_RECORD_SAMPLE:
		decode_sample(r);
		break;
	case PERF_RECORD_LOST:
		if (h->size >= sizeof(struct drain_lost_event))
			r->lost = ((const struct drain_lost_event *)h)->lost;
		break;
	case PERF_RECORD_LOST_SAMPLES:
		if (h->size >= sizeof(struct drain_lost_samples_event))
			r->lost = ((const struct drain_lost_samples_event *)h)->lost;
		break;
	default:
		break;
	}
}

void drain_decode(const struct drain *d, const struct perf_event_header *h, struct drain_rec *ret)
{
	decode(d, ret, h, 0, NULL);
}

struct sink *drain_sink_of(const struct drain *d, const struct sink_ops *ops)
{
	for (size_t i = 0; d && i < d->nr_sinks; i++)
		if (d->sinks[i] && d->sinks[i]->ops == ops)
			return d->sinks[i];
	return NULL;
}

static void to_records(struct drain *d, struct drain_rec *r)
{
	for (size_t i = 0; i < d->nr_sinks; i++) {
		struct sink *s = d->sinks[i];

		if (s && s->ops->record)
			s->ops->record(s, r);
	}
}

static void to_writes(struct drain *d, size_t idx, const struct iovec *iov, int n)
{
	uint64_t bytes = 0;

	if (n <= 0)
		return;
	for (int i = 0; i < n; i++)
		bytes += iov[i].iov_len;
	for (size_t i = 0; i < d->nr_sinks; i++) {
		struct sink *s = d->sinks[i];

		/* A sink's failure is its own: the others still get the bytes. */
		if (s && s->ops->write && s->ops->write(s, idx, iov, n, bytes) < 0)
			s->refused_bytes += bytes;
	}
}

static void to_corrupt(struct drain *d, size_t idx)
{
	for (size_t i = 0; i < d->nr_sinks; i++) {
		struct sink *s = d->sinks[i];

		if (s && s->ops->corrupt)
			s->ops->corrupt(s, idx);
	}
}

uint64_t drain_ring(struct drain *d, struct perfrec_ring *ring, size_t idx)
{
	const struct perf_event_header *h, *fh;
	const struct drain_id *f;
	struct perfrec_ring_batch b;
	struct drain_rec r;
	struct iovec iov[2];
	uint64_t start;
	int rr;

	if (perfrec_ring__begin(ring, &b) <= 0) {
		/* An overwritten ring still needs its tail moved (ring.h). */
		perfrec_ring__commit(ring, &b);
		return 0;
	}
	start = b.start;
	d->in_pass = true;
	while ((rr = perfrec_ring__next(ring, &b, &h)) > 0) {
		/*
		 * A DWARF sample's last line (its stack copy's dyn_size, which
		 * the unwinding stage reads first) is 8 KiB away from the
		 * header: asked for now, it comes while the record is decoded.
		 */
		if (h->size > 256)
			__builtin_prefetch((const unsigned char *)h + h->size - 8);
		/* A sample's event, looked up once for the repair and the sinks. */
		f = h->type == PERF_RECORD_SAMPLE ? find_sample_id(d, h) : NULL;
		fh = drain_repair(d, h, f, d->fixed, sizeof(d->fixed));
		if (fh != h) {
			/* The records before it from the ring, it from the copy. */
			struct perfrec_ring_batch before = b;

			before.pos = b.pos - h->size;
			to_writes(d, idx, iov, perfrec_ring__iov(ring, &before, iov));
			decode(d, &r, fh, idx, f);
			to_records(d, &r);
			to_writes(d, idx, &(struct iovec){ (void *)fh, fh->size }, 1);
			b.start = b.pos;
			continue;
		}
		decode(d, &r, fh, idx, f);
		to_records(d, &r);
	}
	if (rr < 0) {
		say(d, LOG_WARNING, "Ring of CPU %d had a corrupt record; %" PRIu64 " bytes dropped", ring->cpu, b.skip);
		to_corrupt(d, idx);
	}
	to_writes(d, idx, iov, perfrec_ring__iov(ring, &b, iov));
	/* Every sink has had the bytes (or refused them): give them back. */
	perfrec_ring__commit(ring, &b);
	d->in_pass = false;
	compact_sinks(d);
	return b.pos + b.skip - start;
}

void drain_round(struct drain *d, uint64_t bytes)
{
	d->in_pass = true;
	for (size_t i = 0; i < d->nr_sinks; i++) {
		struct sink *s = d->sinks[i];

		if (s && s->ops->round)
			s->ops->round(s, bytes);
	}
	d->in_pass = false;
	compact_sinks(d);
}
