/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The recorder's pipeline: the stages between its drain and its outputs,
 * and which output sits behind which, decided here and nowhere else.
 *
 *   ring -> drain -> [unwind stage] -> [python stage] -> file sink      (filesink.c, recorder.c)
 *                                                    -> cgroup counts  (manifest-cgroup.c)
 *                                                    -> history sink   (snapshot.c)
 *                                                    -> stream sinks   (control.c)
 *                                                    -> JIT sink       (jitsink.c)
 *                -> build-id cache feed (bidcache.c), BPF notes (bpf-meta.c)
 *
 * Each output's sink is added with its kind (pipeline_add()); the
 * pipeline puts it behind the stages that kind gets, or straight on the
 * drain.  An output asks pipeline_unwound() what form its stacks take, to
 * declare its attrs accordingly (outfile.h).  Stages hand on records a
 * round or more later than the drain sees them: pipeline_sync() empties
 * them before an output begins, ends or is read (a snapshot).
 */
#ifndef PERFRECD_PIPELINE_H
#define PERFRECD_PIPELINE_H

#include <stdbool.h>

#include <perfrec/perfrec.h>

#include "config.h"
#include "drain.h"
#include "pystage.h"
#include "sink.h"
#include "unwind-sink.h"

enum pipeline_output {
	PIPELINE_FILE,     /* the file being recorded (continuous mode) */
	PIPELINE_HISTORY,  /* the flight history: snapshots, flight snapshots */
	PIPELINE_STREAM,   /* live subscribers */
	PIPELINE_NOTES,    /* consumers of side-band records only (build-id cache, BPF programs) */
	_PIPELINE_OUTPUT_MAX,
};

struct pipeline;

struct pywalk;

struct pipeline_opts {
	const struct config *cfg;
	struct drain *drain;                  /* borrowed: what the stages and outputs hang off */
	const struct perfrec_evlist *evlist;  /* borrowed */
	/* @samples of ring @ring came into a stage and never out of it (lost); on the draining thread */
	void (*lost)(void *owner, size_t ring, uint64_t samples);
	void *owner;
	/* the walker of Python frames (pywalk.h), borrowed: a python stage merges them (NULL: none) */
	struct pywalk *py;
	/* how the python stage takes a sample's walk (NULL: pywalk_take(); tests give theirs) */
	const struct pywalk_rec *(*py_take)(struct pywalk *pw, uint32_t cpu, uint32_t tid, uint64_t time);
};

/* The stages @opts->cfg asks for.  0, or -errno (logged). */
int pipeline_new(const struct pipeline_opts *opts, struct pipeline **ret);
/* Stop the stages (their sinks are their owners').  NULL is fine. */
void pipeline_free(struct pipeline *p);
/* The owner moved (recorder_move()): @owner for the lost callback. */
void pipeline_move(struct pipeline *p, void *owner);
/* @s in @old's place, wherever @old is (its owner moved). */
void pipeline_replace(struct pipeline *p, struct sink *old, struct sink *s);

/* Put @s, an output of kind @out, where that kind goes.  0 or -ENOMEM. */
int pipeline_add(struct pipeline *p, enum pipeline_output out, struct sink *s);
/* Take @s off wherever it is (a no-op if nowhere); allowed inside its own callbacks. */
void pipeline_remove(struct pipeline *p, struct sink *s);
/* The first output sink with @ops (NULL: none). */
struct sink *pipeline_sink_of(const struct pipeline *p, const struct sink_ops *ops);
/* Whether output @out gets its samples unwound (else as the rings hold them). */
bool pipeline_unwound(const struct pipeline *p, enum pipeline_output out);

/* Every stage idle and what it held emitted to its outputs.  0 or -ENOMEM. */
int pipeline_sync(struct pipeline *p);
/*
 * A record of an output @out's synthesized state: fed to the stages in
 * front of @out that keep state, with every stage idle (after
 * pipeline_sync()).  False when the record is theirs only and not for
 * the output (the unwinder's maps of data segments).
 */
bool pipeline_state(struct pipeline *p, enum pipeline_output out, const struct perf_event_header *h);
/* Whether any stage needs the state of the processes that exist (an output without a file seeds them). */
bool pipeline_wants_state(const struct pipeline *p);
/* The unwinding stage's counters (false: none). */
bool pipeline_unwind_stats(const struct pipeline *p, struct unwind_sink_stats *ret);
/* The python stage's counters (false: none). */
bool pipeline_py_stats(const struct pipeline *p, struct pystage_stats *ret);

#endif
