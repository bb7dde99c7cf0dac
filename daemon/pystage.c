// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Python frames merged into callchains (see pystage.h): samples in, the
 * same samples out with the eval loop's frames replaced by the Python
 * frames they ran, each process's region named by an MMAP2 emitted before
 * its first such sample of the file.  All on the draining thread.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <linux/perf_event.h>

#include <perfrec/event.h>

#include "drain.h"
#include "jitsink.h"
#include "log.h"
#include "pymerge.h"
#include "pystage.h"

struct pyps {
	uint32_t pid;
	int err;                   /* setup failed: its samples pass unchanged (0: usable) */
	struct pystage_proc_setup s;
	uint64_t map_seq;          /* the jitsink's file_seq its MMAP2 went out for (0: none) */
	uint64_t map_time;         /* that MMAP2's time: samples no newer stay native (emit_map()) */
	uint64_t map_failed_seq;   /* the file_seq its MMAP2 could not be made for (the jitsink's bounds) */
	uint64_t gone_round;       /* exited: freed once this round is over (0: lives) */
};

struct pystage {
	struct stage stage;        /* first: its sink is what upstream feeds */
	struct pystage_opts o;
	struct pyps **procs;       /* sorted by pid */
	size_t nr_procs;
	struct jitsink *js;        /* of the sample being merged */
	struct pyps *cur;          /* its process */
	uint64_t rounds;           /* rounds begun: the first is 1 */
	size_t nr_gone;            /* of procs, exited ones waiting for their round */
	uint64_t chain[PYMERGE_MAX_CHAIN + PYWALK_MAX_FRAMES];
	uint8_t rec[65536];
	struct pystage_stats st;
};

static int cmp_pid(const void *key, const void *el)
{
	uint32_t pid = *(const uint32_t *)key, other = (*(struct pyps *const *)el)->pid;

	return pid < other ? -1 : pid > other;
}

static struct pyps **proc_slot(struct pystage *ps, uint32_t pid)
{
	return bsearch(&pid, ps->procs, ps->nr_procs, sizeof(*ps->procs), cmp_pid);
}

/*
 * What a process needs, through /proc: its layout, its eval loop, its
 * memory.  @ctx is the walker: the layout its tracker (pytrack.c)
 * detected when it added @pid, so the draining thread does not open and
 * parse the interpreter's file again; looked up afresh only for a process
 * the walker no longer knows.
 */
static int default_setup(void *ctx, pid_t pid, struct pystage_proc_setup *ret)
{
	struct pyproc_info *info = malloc(sizeof(*info));
	int r;

	if (!info)
		return -ENOMEM;
	r = pywalk_process_info(ctx, pid, info);
	if (r < 0)
		r = pyproc_detect("/proc", pid, info);
	if (r == 0 && info->status != PYPROC_OK)
		r = -EPROTO;
	if (r == 0)
		r = pyname_eval_range(pid, info, &ret->eval_lo, &ret->eval_hi);
	if (r == 0)
		r = pyname_cache_open(pid, info, &ret->names);
	free(info);
	return r;
}

static void proc_free(struct pyps *p)
{
	if (p)
		pyname_cache_free(p->s.names);
	free(p);
}

/* @pid's state, set up on first sight (a failure is kept: its samples pass). */
static struct pyps *proc_get(struct pystage *ps, uint32_t pid)
{
	struct pyps **slot = proc_slot(ps, pid), *p;
	size_t at = 0;

	if (slot)
		return *slot;
	if (ps->nr_procs >= PYSTAGE_MAX_PROCS) {
		ps->st.procs_refused++;
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	p->err = ps->o.setup(ps->o.ctx, (pid_t)pid, &p->s);
	if (p->err == 0 && (!p->s.names || p->s.eval_hi <= p->s.eval_lo))
		p->err = -EINVAL;
	if (p->err) {
		log_debug("Python frames: pid %u not merged: %s", pid, strerror(-p->err));
		ps->st.procs_failed++;
		/* gone already (a sample drained after its exit): not kept past the next round */
		if (p->err == -ENOENT || p->err == -ESRCH) {
			p->gone_round = ps->rounds + 1;
			ps->nr_gone++;
		}
	} else {
		ps->st.procs++;
	}
	while (at < ps->nr_procs && ps->procs[at]->pid < pid)
		at++;
	memmove(ps->procs + at + 1, ps->procs + at, (ps->nr_procs - at) * sizeof(*ps->procs));
	ps->procs[at] = p;
	ps->nr_procs++;
	return p;
}

/* An exec: its code objects (and maybe its interpreter) are gone. */
static void proc_drop(struct pystage *ps, uint32_t pid)
{
	struct pyps **slot = proc_slot(ps, pid);
	size_t at;

	if (!slot)
		return;
	at = (size_t)(slot - ps->procs);
	ps->nr_gone -= !!(*slot)->gone_round;
	proc_free(*slot);
	memmove(ps->procs + at, ps->procs + at + 1, (ps->nr_procs - at - 1) * sizeof(*ps->procs));
	ps->nr_procs--;
}

/*
 * An exit: the drain takes the rings one after the other, so samples
 * the process took before it exited may still come from rings drained
 * after the one with its EXIT, in this round or the next.  Its state
 * stays until the next round is over, then goes (forget_gone()).
 */
static void proc_exited(struct pystage *ps, uint32_t pid)
{
	struct pyps **slot = proc_slot(ps, pid);

	if (!slot || (*slot)->gone_round)
		return;
	(*slot)->gone_round = ps->rounds + 1;
	ps->nr_gone++;
}

static void forget_gone(struct pystage *ps)
{
	size_t k = 0;

	if (!ps->nr_gone)
		return;
	for (size_t i = 0; i < ps->nr_procs; i++) {
		struct pyps *p = ps->procs[i];

		if (p->gone_round && p->gone_round <= ps->rounds) {
			proc_free(p);
			ps->nr_gone--;
		} else {
			ps->procs[k++] = p;
		}
	}
	ps->nr_procs = k;
}

static void note_sideband(struct pystage *ps, const struct perf_event_header *h)
{
	const struct { struct perf_event_header h; uint32_t pid, tid; } *c = (const void *)h;
	const struct { struct perf_event_header h; uint32_t pid, ppid, tid, ptid; } *e = (const void *)h;

	if (h->type == PERF_RECORD_EXIT && h->size >= sizeof(*e) && e->pid == e->tid)
		proc_exited(ps, e->pid);
	else if (h->type == PERF_RECORD_COMM && (h->misc & PERF_RECORD_MISC_COMM_EXEC) &&
		 h->size >= sizeof(*c) && c->pid == c->tid)
		proc_drop(ps, c->pid);
}

/* The address of @code's frames in the current process (0: it cannot be named). */
static uint64_t code_addr(void *ctx, const struct pywalk_frame *f)
{
	struct pystage *ps = ctx;
	struct pyps *p = ps->cur;
	struct pyname_code c;
	char name[512];
	bool fresh;
	int slot = pyname_lookup(p->s.names, f->code, f->instr, &c, &fresh);
	uint64_t base;

	if (slot < 0) {
		ps->st.names_failed++;
		return 0;
	}
	base = PYSTAGE_REGION_BASE + ((uint64_t)slot + 1) * PYSTAGE_SLOT;
	if (fresh) {
		pyname_format(&c, name, sizeof(name));
		/* not in the image (over its bounds): perf says [unknown] in the region, as is true */
		jitsink_synth_sym(ps->js, p->pid, base, PYSTAGE_SLOT, name);
	}
	return base + PYSTAGE_SLOT / 2;
}

/* The side-band id for records of CPU @cpu. */
static uint64_t sideband_id(const struct pystage *ps, uint32_t cpu)
{
	for (size_t i = 0; ps->o.sideband_cpus && i < ps->o.nr_sideband_ids; i++)
		if (ps->o.sideband_cpus[i] == (int)cpu)
			return ps->o.sideband_ids[i];
	return ps->o.nr_sideband_ids ? ps->o.sideband_ids[0] : 0;
}

/*
 * The region's MMAP2 before the first sample of @p in this file, a
 * nanosecond before the sample so that readers sorting by time apply it
 * first.  0, or -errno: then the sample is not merged.
 *
 * The first sample merged is the first drained, not the oldest: the drain
 * takes the rings one after the other, so a ring read later in the pass
 * (another CPU, another thread of the process) can still hold older
 * samples of it.  Those must not carry region addresses (merge_sample()):
 * in time order they come before the MMAP2, and hotspot's perfparser
 * keeps the location it made of an address it could not map for that
 * pid and address for the rest of the file, so one such sample left
 * every later sample through the same code objects unnamed.
 */
static int emit_map(struct pystage *ps, struct pyps *p, size_t ring, const struct perfrec_sample *s)
{
	struct perfrec_sample_id sid = {
		.pid = s->pid, .tid = s->tid, .time = s->time ? s->time - 1 : 0, .cpu = s->cpu,
	};
	uint8_t trailer[64], rec[sizeof(struct perf_event_header) + 256];
	size_t tl = perfrec_sample_id__size(ps->o.sideband_sample_type);
	int size;

	if (p->map_seq == ps->js->file_seq)
		return 0;
	/* not asked again for every sample of the file: each ask is counted there */
	if (p->map_failed_seq == ps->js->file_seq || tl > sizeof(trailer))
		return -ENOSPC;
	sid.id = sid.stream_id = sideband_id(ps, s->cpu);
	perfrec_sample_id__write(trailer, ps->o.sideband_sample_type, &sid);
	size = jitsink_synth_map(ps->js, p->pid, s->tid, PYSTAGE_REGION_BASE, PYSTAGE_REGION_LEN, "py", trailer, tl,
				 rec, sizeof(rec));
	if (size < 0) {
		p->map_failed_seq = ps->js->file_seq;
		return size;
	}
	stage_emit(&ps->stage, ring, (const struct perf_event_header *)rec);
	p->map_seq = ps->js->file_seq;
	p->map_time = sid.time;
	ps->st.maps++;
	return 0;
}

/* @h with its chain (at @chain_at, @old_nr entries) replaced by @nr entries of ps->chain, into ps->rec. */
static const struct perf_event_header *rewrite(struct pystage *ps, const struct perf_event_header *h,
					       size_t chain_at, size_t old_nr, size_t nr)
{
	size_t tail_at = chain_at + 8 + old_nr * 8, size = h->size - old_nr * 8 + nr * 8;
	struct perf_event_header *out = (void *)ps->rec;
	uint64_t n = nr;

	if (size > UINT16_MAX || tail_at > h->size)
		return NULL;
	memcpy(ps->rec, h, chain_at);
	memcpy(ps->rec + chain_at, &n, 8);
	memcpy(ps->rec + chain_at + 8, ps->chain, nr * 8);
	memcpy(ps->rec + chain_at + 8 + nr * 8, (const uint8_t *)h + tail_at, h->size - tail_at);
	out->size = (uint16_t)size;
	return out;
}

/*
 * The sample's own ip (PERF_SAMPLE_IP, right after IDENTIFIER) where its
 * chain's first user frame was an eval frame replaced: the innermost
 * Python frame, so that readers that take a sample's own symbol from its
 * ip (perf report's self column) name the Python function that ran, as
 * those that take it from the chain do.
 */
static void rewrite_ip(struct pystage *ps, uint64_t sample_type, const uint64_t *old, size_t old_nr)
{
	size_t at = sizeof(struct perf_event_header) + (sample_type & PERF_SAMPLE_IDENTIFIER ? 8 : 0);
	uint64_t ip;

	if (!(sample_type & PERF_SAMPLE_IP))
		return;
	memcpy(&ip, ps->rec + at, 8);
	for (size_t i = 0; i + 1 < old_nr; i++)
		if (old[i] == PERF_CONTEXT_USER) {
			/* everything before it is unchanged: the same index in the new chain */
			if (old[i + 1] == ip && ps->chain[i + 1] != ip)
				memcpy(ps->rec + at, &ps->chain[i + 1], 8);
			return;
		}
}

/* The sample merged, or NULL: it goes on as it came. */
static const struct perf_event_header *merge_sample(struct pystage *ps, size_t ring, const struct perf_event_header *h)
{
	const struct drain_id *id = drain_find_id(ps->o.layout, h);
	const uint64_t need = PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU;
	const struct pywalk_rec *w;
	struct perfrec_sample s;
	struct sink *jsink;
	bool partial;
	size_t n;

	if (!id || (id->sample_type & need) != need ||
	    perfrec_sample__parse(h, id->sample_type, id->read_format, &s) < 0 || !s.nr_callchain)
		return NULL;
	ps->st.samples++;
	w = ps->o.take(ps->o.py, s.cpu, s.tid, s.time);
	if (!w || w->pid != s.pid || w->tid != s.tid) {
		ps->st.not_joined += !w;
		ps->st.unmerged += !!w;
		return NULL;
	}
	jsink = stage_sink_of(&ps->stage, &jitsink_ops);
	ps->js = jsink ? jsink->ctx : NULL;
	ps->cur = proc_get(ps, s.pid);
	/* (its region refused in this file: its names would name nothing) */
	if (!ps->js || !ps->cur || ps->cur->err || ps->cur->map_failed_seq == ps->js->file_seq) {
		ps->st.no_image += !ps->js || (ps->cur && !ps->cur->err);
		ps->st.unmerged++;
		return NULL;
	}
	/* older than its region's MMAP2 in this file (a ring drained after it: emit_map()) */
	if (ps->cur->map_seq == ps->js->file_seq && s.time <= ps->cur->map_time) {
		ps->st.before_map++;
		ps->st.unmerged++;
		return NULL;
	}
	n = pymerge_chain(s.callchain, s.nr_callchain, ps->cur->s.eval_lo, ps->cur->s.eval_hi, w, code_addr, ps,
			  ps->chain, &partial);
	ps->st.mismatched += partial;
	if (!n || emit_map(ps, ps->cur, ring, &s) < 0) {
		ps->st.no_image += n > 0;
		ps->st.unmerged++;
		return NULL;
	}
	h = rewrite(ps, h, (size_t)((const uint8_t *)s.callchain - (const uint8_t *)h) - 8, s.nr_callchain, n);
	if (h)
		rewrite_ip(ps, id->sample_type, s.callchain, s.nr_callchain);
	ps->st.merged += !!h;
	ps->st.unmerged += !h;
	return h;
}

static void in_record(struct sink *sk, struct drain_rec *r)
{
	struct pystage *ps = sk->ctx;
	const struct perf_event_header *h = NULL;

	if (r->h->type == PERF_RECORD_SAMPLE && stage_has_sinks(&ps->stage))
		h = merge_sample(ps, r->ring, r->h);
	else if (r->h->type == PERF_RECORD_EXIT || r->h->type == PERF_RECORD_COMM)
		note_sideband(ps, r->h);
	stage_emit(&ps->stage, r->ring, h ? h : r->h);
}

static void in_corrupt(struct sink *sk, size_t ring)
{
	struct pystage *ps = sk->ctx;

	stage_corrupt(&ps->stage, ring);
}

static void in_round(struct sink *sk, uint64_t bytes)
{
	struct pystage *ps = sk->ctx;

	(void)bytes;
	stage_round(&ps->stage);
	forget_gone(ps);
	ps->rounds++;
}

static const struct sink_ops pystage_ops = {
	.record = in_record, .corrupt = in_corrupt, .round = in_round,
};

int pystage_new(const struct pystage_opts *opts, struct pystage **ret)
{
	struct pystage *ps;

	if (!opts || !opts->layout || !ret)
		return -EINVAL;
	ps = calloc(1, sizeof(*ps));
	if (!ps)
		return -ENOMEM;
	ps->o = *opts;
	if (!ps->o.take)
		ps->o.take = pywalk_take;
	if (!ps->o.setup) {
		ps->o.setup = default_setup;
		ps->o.ctx = ps->o.py;
	}
	ps->procs = calloc(PYSTAGE_MAX_PROCS, sizeof(*ps->procs));
	if (!ps->procs) {
		pystage_free(ps);
		return -ENOMEM;
	}
	stage_init(&ps->stage, &pystage_ops, ps, opts->layout);
	ps->rounds = 1;
	*ret = ps;
	return 0;
}

void pystage_free(struct pystage *ps)
{
	if (!ps)
		return;
	for (size_t i = 0; i < ps->nr_procs; i++)
		proc_free(ps->procs[i]);
	free(ps->procs);
	stage_exit(&ps->stage);
	free(ps);
}

struct stage *pystage_stage(struct pystage *ps)
{
	return &ps->stage;
}

void pystage_get_stats(const struct pystage *ps, struct pystage_stats *ret)
{
	*ret = ps->st;
}
