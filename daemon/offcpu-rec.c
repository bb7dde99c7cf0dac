// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Recorder wiring for off-CPU profiling.  The BPF program keeps summing
 * blocked time in the kernel between files, so a file's offcpu-time samples
 * are the blocking that ended while it was current; they are written at its
 * end, stamped with the end time, after the ring records and before the
 * features, as perf record --off-cpu does at the end of its session.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <perfrec/offcpu.h>
#include <perfrec/pdwriter.h>

#include "log.h"
#include "offcpu-rec.h"

struct offcpu_rec {
	struct perfrec_offcpu *offcpu;
	uint64_t lost_logged;  /* map-full losses already reported */
	uint64_t stacks_lost_logged; /* stack-map collisions already reported */
	struct perfrec_offcpu_copy_stats copies_logged; /* whole-stack counts already reported */
};

static void filter_opts(const struct config *cfg, struct perfrec_offcpu_opts *o)
{
	o->min_ns = cfg->offcpu_min_usec * 1000;
	o->cgroup_path = cfg->offcpu_cgroup;
	o->self_pid = getpid();
	/*
	 * Stacks as whole as the on-CPU samples': DWARF stacks unwound on the
	 * host.  Chosen at load: a reload keeps the form the program has.
	 */
	o->whole_stacks = cfg->callchain && cfg->dwarf && cfg->unwind_host;
}

int offcpu_rec_load(const struct config *cfg, struct offcpu_rec **ret, char *why, size_t why_len)
{
	struct perfrec_offcpu_opts o = { .sz = sizeof(o) };
	struct offcpu_rec *oc;
	int r;

	*ret = NULL;
	oc = calloc(1, sizeof(*oc));
	if (!oc)
		return -ENOMEM;
	filter_opts(cfg, &o);
	why[0] = 0;
	r = perfrec_offcpu__open(&o, &oc->offcpu, why, why_len);
	if (r < 0) {
		if (!why[0])
			snprintf(why, why_len, "%s", strerror(-r));
		free(oc);
		return r;
	}
	log_info("off-CPU profiling is on (blocks of at least %" PRIu64 "us%s%s%s)",
		 cfg->offcpu_min_usec, cfg->offcpu_cgroup ? " in cgroup " : "",
		 cfg->offcpu_cgroup ? cfg->offcpu_cgroup : "",
		 o.whole_stacks ? ", sampled blocks with whole user stacks" : "");
	*ret = oc;
	return 0;
}

int offcpu_rec_open(const struct config *cfg, struct offcpu_rec **ret)
{
	char why[256];
	int r;

	*ret = NULL;
	if (!cfg->offcpu)
		return 0;
	r = offcpu_rec_load(cfg, ret, why, sizeof(why));
	if (r == -ENOMEM)
		return r;
	if (r < 0)
		log_warning("off-CPU profiling is off: %s", why);
	return 0;
}

int offcpu_rec_set_filter(struct offcpu_rec *o, const struct config *cfg)
{
	struct perfrec_offcpu_opts opts = { .sz = sizeof(opts) };
	int r;

	if (!o)
		return 0;
	filter_opts(cfg, &opts);
	r = perfrec_offcpu__set_filter(o->offcpu, &opts);
	if (r == 0)
		log_info("off-CPU profiling now counts blocks of at least %" PRIu64 "us%s%s",
			 cfg->offcpu_min_usec, cfg->offcpu_cgroup ? " in cgroup " : "",
			 cfg->offcpu_cgroup ? cfg->offcpu_cgroup : "");
	return r;
}

int offcpu_rec_add_attr(const struct offcpu_rec *o, const struct perfrec_evlist *evlist,
			struct perfrec_pdwriter *w)
{
	const struct perfrec_evsel *first;
	struct perf_event_attr a;
	uint64_t id = OFFCPU_REC_ID;

	if (!o)
		return 0;
	perfrec_offcpu__attr(&a);
	/* Same trailer and clock as the kernel's attrs, or readers reject it. */
	first = perfrec_evlist__evsel(evlist, 0);
	if (first) {
		a.sample_id_all = first->attr.sample_id_all;
		a.use_clockid = first->attr.use_clockid;
		a.clockid = first->attr.clockid;
	}
	return perfrec_pdwriter__add_attr(w, &a, &id, 1, PERFREC_OFFCPU_EVENT_NAME);
}

static int emit(const struct perf_event_header *h, void *userdata)
{
	return perfrec_pdwriter__write(userdata, h, h->size);
}

/* What the blocks sampled for whole stacks became in this file. */
static void log_copies(struct offcpu_rec *o, const char *path)
{
	struct perfrec_offcpu_copy_stats s, *l = &o->copies_logged;

	perfrec_offcpu__copy_stats(o->offcpu, &s);
	if (s.copied == l->copied && s.whole == l->whole && s.kept_fp == l->kept_fp)
		return;
	log_debug("Off-CPU whole stacks in %s: %" PRIu64 " blocks copied, %" PRIu64 " summed unwound, %" PRIu64
		  " kept their frame-pointer stack (copies of exited or exec'd processes: %" PRIu64
		  ", dropped for room: %" PRIu64 ")", path, s.copied - l->copied, s.whole - l->whole,
		  s.kept_fp - l->kept_fp, s.gone - l->gone, s.evicted - l->evicted);
	if (s.ring_full > l->ring_full)
		log_notice("Off-CPU: %" PRIu64 " sampled blocks kept their frame-pointer stack: the ring of "
			   "stack copies was full", s.ring_full - l->ring_full);
	if (s.table_full > l->table_full)
		log_warning("Off-CPU: %" PRIu64 " sampled blocks not written: more distinct whole stacks "
			    "than one file holds", s.table_full - l->table_full);
	*l = s;
}

void offcpu_rec_write(struct offcpu_rec *o, struct perfrec_pdwriter *w, const char *path, uint64_t time)
{
	uint64_t lost;
	int r;

	if (!o || !w)
		return;
	r = perfrec_offcpu__drain(o->offcpu, OFFCPU_REC_ID, time, emit, w);
	if (r < 0)
		log_warning("Off-CPU samples not written to %s: %s", path, strerror(-r));
	else
		log_debug("%d off-CPU samples written to %s", r, path);
	lost = perfrec_offcpu__lost(o->offcpu);
	if (lost > o->lost_logged) {
		log_warning("Off-CPU map full: %" PRIu64 " blocking stacks not counted", lost - o->lost_logged);
		o->lost_logged = lost;
	}
	lost = perfrec_offcpu__lost_stacks(o->offcpu);
	if (lost > o->stacks_lost_logged) {
		log_notice("Off-CPU: %" PRIu64 " blocks recorded without their kernel or user stack "
			   "(another stack held its slot in the stack map)", lost - o->stacks_lost_logged);
		o->stacks_lost_logged = lost;
	}
	log_copies(o, path);
}

void offcpu_rec_close(struct offcpu_rec *o)
{
	if (!o)
		return;
	perfrec_offcpu__close(o->offcpu);
	free(o);
}
