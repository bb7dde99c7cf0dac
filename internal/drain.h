/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The drain: one pass over each ring per wakeup, feeding every sink
 * (sink.h).  It is the only code that walks ring records: it handles the
 * wrap (lib/ring.c copies a straddling record whole), looks up a record's
 * event by its IDENTIFIER at most once, decodes LOST and LOST_SAMPLES,
 * repairs what the kernel gets wrong (inflated side-band records, user
 * callchains holding a PERF_CONTEXT value) and hands each sink the records
 * one by one and the bytes as spans pointing into the ring, so the fast
 * path stays a writev straight from the mapping.  The ring's tail moves
 * only after every sink has had the bytes.
 *
 * It is libperfrec's and internal (not installed, not exported from the
 * shared library): perfrecd's recorder and the record object (record.c)
 * both record through it, each with its own sinks.
 */
#ifndef PERFREC_DRAIN_H
#define PERFREC_DRAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <perfrec/perfrec.h>

#include "sample-layout.h"
#include "sink.h"

/* How one event's records are laid out, found by their IDENTIFIER. */
struct drain_id {
	uint64_t id;
	uint64_t sample_type;
	uint64_t read_format;
	struct sample_layout layout; /* of sample_type and read_format */
};

/* PERF_RECORD_LOST and PERF_RECORD_LOST_SAMPLES as the kernel lays them out. */
struct drain_lost_event {
	struct perf_event_header header;
	uint64_t id;
	uint64_t lost;
};

struct drain_lost_samples_event {
	struct perf_event_header header;
	uint64_t lost;
};

/*
 * One record as the drain walked it; valid during the sink's record() call,
 * which may fill in what is decoded lazily (drain_rec_time()).
 */
struct drain_rec {
	const struct perf_event_header *h; /* whole, repaired if it needed it */
	size_t ring;
	uint32_t pid;        /* SAMPLE: its pid (0: the idle task or not recorded) */
	uint64_t time;       /* SAMPLE: its time; others: see drain_rec_time() */
	uint64_t lost;       /* LOST, LOST_SAMPLES: how many */
	bool sample_ok;      /* SAMPLE: pid and time decoded (its event is known) */
	/* the lookup, done at most once per record */
	const struct drain_id *id;
	bool looked_up, timed;
	const struct drain *d;
};

struct drain_opts {
	size_t sz;
	/* the side-band event's sample_type: the trailer of repaired KSYMBOL/BPF_EVENT */
	uint64_t sideband_sample_type;
	/* samples carry callchains: end user chains at a PERF_CONTEXT value */
	bool callchain;
	/*
	 * What the drain has to say (a repair, once per kind, at LOG_NOTICE; a
	 * corrupt ring at LOG_WARNING, syslog.h levels), @msg without a
	 * newline; NULL: nothing said.
	 */
	void (*log)(void *ctx, int level, const char *msg);
	void *log_ctx;
};

struct drain;

int drain_new(const struct drain_opts *opts, struct drain **ret);
void drain_free(struct drain *d);

/* Add @nr ids of an event laid out as @sample_type / @read_format. */
int drain_add_ids(struct drain *d, const uint64_t *ids, size_t nr, uint64_t sample_type,
		  uint64_t read_format);
/* The ids of every event of @el (opened), each with its event's layout. */
int drain_add_evlist(struct drain *d, const struct perfrec_evlist *el);
/* The layout of @h's event, NULL when it carries no known id. */
const struct drain_id *drain_find_id(const struct drain *d, const struct perf_event_header *h);

/*
 * Sinks get records in the order they were added.  @s is borrowed until
 * drain_remove_sink() (or drain_free()); removing one not added is a no-op.
 */
int drain_add_sink(struct drain *d, struct sink *s);
void drain_remove_sink(struct drain *d, struct sink *s);
/* @s in @old's place (its owner moved), in the same order. */
void drain_replace_sink(struct drain *d, struct sink *old, struct sink *s);

/*
 * One pass over @ring (index @idx among the rings): every record to every
 * sink's record(), the bytes to every write(), then the tail moved.  A
 * corrupt ring is logged, the sinks told (corrupt()), the rest of the pass
 * dropped.  Returns the bytes drained.
 */
uint64_t drain_ring(struct drain *d, struct perfrec_ring *ring, size_t idx);
/* After a pass over every ring: each sink's round() with the pass's @bytes. */
void drain_round(struct drain *d, uint64_t bytes);

/* Decode @h, a record read from elsewhere (the history), as the drain does. */
void drain_decode(const struct drain *d, const struct perf_event_header *h, struct drain_rec *ret);
/* The first sink added with @ops (NULL: none): a module finds its own sink. */
struct sink *drain_sink_of(const struct drain *d, const struct sink_ops *ops);

/* The time of any record: a sample's, a trailer's (0: none). */
uint64_t drain_rec_time(struct drain_rec *r);

/* Records repaired so far (inflated side-band records, user callchains). */
uint64_t drain_repaired(const struct drain *d);

#endif
