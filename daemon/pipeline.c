// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The recorder's stages and where its outputs sit (see pipeline.h): host
 * unwinding (unwind-stage.h), then Python frames merged (pystage.h); a new
 * one is built in pipeline_new() and given its outputs in place_of().
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "pipeline.h"
#include "unwind-stage.h"

struct pipeline {
	struct drain *drain;
	struct unwind_stage *unwind;                 /* NULL: stacks as the rings hold them */
	struct pystage *py;                          /* NULL: no Python frames merged */
	struct stage *at[_PIPELINE_OUTPUT_MAX];      /* where each kind of output goes (NULL: the drain) */
	void (*lost)(void *owner, size_t ring, uint64_t samples);
	void *owner;
};

/*
 * The one decision of each output's stack form.  unwind=host with
 * callchain=dwarf puts every output behind the unwinder (open_unwind()
 * made it), so that the file, the history with its
 * snapshots and the live streams carry the same callchains and none keeps
 * 8 KiB raw stacks.
 */
static struct stage *place_of(const struct pipeline *p, const struct config *c, enum pipeline_output out)
{
	switch (out) {
	case PIPELINE_FILE:
	case PIPELINE_HISTORY:
	case PIPELINE_STREAM:
		/* Python frames in every output's stacks alike, behind the unwinder (it is in front) */
		if (p->py)
			return pystage_stage(p->py);
		return p->unwind ? unwind_stage_stage(p->unwind) : NULL;
	case PIPELINE_NOTES:
		/* MMAP2, KSYMBOL, BPF_EVENT: the same in either form, soonest from the drain */
		return NULL;
	default:
		return NULL;
	}
}

static void stage_lost(void *ctx, size_t ring, uint64_t samples)
{
	struct pipeline *p = ctx;

	if (p->lost)
		p->lost(p->owner, ring, samples);
}

/*
 * unwind= says what becomes of the user stacks callchain=dwarf copies;
 * frame-pointer callchains (-g) are walked by the kernel and have none,
 * so with callchain=yes or no it has nothing to do and is ignored, not
 * refused: -g must work whatever unwind= the config holds.  A value
 * other than the default was asked for, and is named as ignored, as
 * max-overhead= is with period=.
 */
static int open_unwind(struct pipeline *p, const struct pipeline_opts *opts)
{
	const struct config *c = opts->cfg;
	struct unwind_stage_opts uo = { .sz = sizeof(uo), .evlist = opts->evlist, .lost = stage_lost, .ctx = p };
	int r;

	if (!c->callchain || !c->dwarf) {
		if (!config_key_is_default(c, "record", "unwind"))
			log_notice("unwind=%s is ignored: it applies to the user stacks of callchain=dwarf "
				   "(--call-graph dwarf), and callchain=%s copies none",
				   c->unwind_host ? "host" : "file", c->callchain ? "yes" : "no");
		return 0;
	}
	if (!c->unwind_host)
		return 0;
	/* Tables of the binaries beside the binaries: a restart loads them. */
	uo.table_dir = c->buildid_cache;
	r = unwind_stage_new(&uo, &p->unwind);
	if (r < 0)
		return log_error_errno(r, "Cannot start the host unwinder: %s", strerror(-r));
	/* The stage takes what the drain walks; its outputs hang off it. */
	r = drain_add_sink(p->drain, &unwind_stage_stage(p->unwind)->sink);
	if (r < 0)
		return log_error_errno(r, "Cannot start the host unwinder: %s", strerror(-r));
	return 0;
}

/*
 * Python frames merged into the callchains the outputs get: after the
 * unwinder when there is one (it makes the user chains), else right on
 * the drain; its records keep the layout of what feeds it.
 */
static int open_py(struct pipeline *p, const struct pipeline_opts *opts)
{
	struct pystage_opts o = { .sz = sizeof(o), .py = opts->py, .take = opts->py_take };
	const struct perfrec_evlist *el = opts->evlist;
	struct stage *up = p->unwind ? unwind_stage_stage(p->unwind) : NULL;
	int r;

	if (!opts->py)
		return 0;
	o.layout = up ? up->drain : p->drain;
	for (size_t i = 0; el && i < perfrec_evlist__nr_evsels(el); i++) {
		const struct perfrec_evsel *ev = perfrec_evlist__evsel(el, i);

		if (!ev->is_sideband)
			continue;
		o.sideband_sample_type = ev->attr.sample_type;
		o.sideband_ids = ev->ids;
		o.sideband_cpus = ev->cpus;
		o.nr_sideband_ids = ev->nr_ids;
	}
	r = pystage_new(&o, &p->py);
	if (r < 0)
		return log_error_errno(r, "Cannot merge Python frames: %s", strerror(-r));
	r = up ? stage_add_sink(up, &pystage_stage(p->py)->sink) : drain_add_sink(p->drain, &pystage_stage(p->py)->sink);
	if (r < 0)
		return log_error_errno(r, "Cannot merge Python frames: %s", strerror(-r));
	return 0;
}

int pipeline_new(const struct pipeline_opts *opts, struct pipeline **ret)
{
	struct pipeline *p = calloc(1, sizeof(*p));
	int r;

	if (!p)
		return -ENOMEM;
	p->drain = opts->drain;
	p->lost = opts->lost;
	p->owner = opts->owner;
	r = open_unwind(p, opts);
	if (r == 0)
		r = open_py(p, opts);
	if (r < 0) {
		pipeline_free(p);
		return r;
	}
	for (int i = 0; i < _PIPELINE_OUTPUT_MAX; i++)
		p->at[i] = place_of(p, opts->cfg, i);
	*ret = p;
	return 0;
}

void pipeline_free(struct pipeline *p)
{
	if (!p)
		return;
	if (p->py) {
		drain_remove_sink(p->drain, &pystage_stage(p->py)->sink);
		if (p->unwind)
			stage_remove_sink(unwind_stage_stage(p->unwind), &pystage_stage(p->py)->sink);
	}
	if (p->unwind)
		drain_remove_sink(p->drain, &unwind_stage_stage(p->unwind)->sink);
	/* the unwinder's worker emits into the python stage: stopped first */
	unwind_stage_free(p->unwind);
	pystage_free(p->py);
	free(p);
}

void pipeline_move(struct pipeline *p, void *owner)
{
	if (p)
		p->owner = owner;
}

void pipeline_replace(struct pipeline *p, struct sink *old, struct sink *s)
{
	if (!p)
		return;
	drain_replace_sink(p->drain, old, s);
	if (p->unwind)
		stage_replace_sink(unwind_stage_stage(p->unwind), old, s);
	if (p->py)
		stage_replace_sink(pystage_stage(p->py), old, s);
}

int pipeline_add(struct pipeline *p, enum pipeline_output out, struct sink *s)
{
	struct stage *st = p->at[out];

	return st ? stage_add_sink(st, s) : drain_add_sink(p->drain, s);
}

void pipeline_remove(struct pipeline *p, struct sink *s)
{
	if (!p)
		return;
	drain_remove_sink(p->drain, s);
	if (p->unwind)
		stage_remove_sink(unwind_stage_stage(p->unwind), s);
	if (p->py)
		stage_remove_sink(pystage_stage(p->py), s);
}

struct sink *pipeline_sink_of(const struct pipeline *p, const struct sink_ops *ops)
{
	struct sink *s;

	if (!p)
		return NULL;
	s = drain_sink_of(p->drain, ops);
	if (!s && p->unwind)
		s = stage_sink_of(unwind_stage_stage(p->unwind), ops);
	if (!s && p->py)
		s = stage_sink_of(pystage_stage(p->py), ops);
	return s;
}

bool pipeline_unwound(const struct pipeline *p, enum pipeline_output out)
{
	/* every stage there is sits behind the unwinder */
	return p && p->unwind && p->at[out];
}

int pipeline_sync(struct pipeline *p)
{
	return p && p->unwind ? unwind_stage_sync(p->unwind) : 0;
}

bool pipeline_state(struct pipeline *p, enum pipeline_output out, const struct perf_event_header *h)
{
	if (!pipeline_unwound(p, out) || h->type >= PERF_RECORD_MAX)
		return true;
	unwind_stage_state(p->unwind, h);
	/* The unwinder reads .eh_frame_hdr through them; an unwound output's readers unwind nothing. */
	return !(h->type == PERF_RECORD_MMAP2 && (h->misc & PERF_RECORD_MISC_MMAP_DATA));
}

bool pipeline_wants_state(const struct pipeline *p)
{
	return p && p->unwind;
}

bool pipeline_unwind_stats(const struct pipeline *p, struct unwind_sink_stats *ret)
{
	if (!p || !p->unwind)
		return false;
	unwind_stage_stats(p->unwind, ret);
	return true;
}

bool pipeline_py_stats(const struct pipeline *p, struct pystage_stats *ret)
{
	if (!p || !p->py)
		return false;
	pystage_get_stats(p->py, ret);
	return true;
}
