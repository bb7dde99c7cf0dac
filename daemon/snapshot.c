// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Flight-recorder snapshots (see snapshot.h).  The rings are drained
 * continuously, as in continuous mode, into a per-CPU time-indexed history
 * rather than relying on write_backward overwrite rings: a busy CPU's ring
 * wraps long before an idle one's, so only user-space chunks evicted by time
 * give every CPU the same window.
 *
 * Symbolization: the /proc state of live processes is synthesized at
 * snapshot time (stamped before the oldest record), and the maps, comms and
 * forks the kernel reported are kept in the history's side-band store when
 * their chunk leaves the window, so exited processes and maps that predate
 * the window resolve too.
 *
 * Draining does not stop for long while a snapshot is written: every few
 * MiB the rings are drained into the (frozen, append-only) history.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <perfrec/bpfmeta.h>
#include <perfrec/pdreader.h>

#include "history.h"
#include "log.h"
#include "pipeout.h"
#include "recorder.h"
#include "snapshot.h"
#include "track.h"

/* Drain the rings after this many bytes of snapshot output. */
#define DRAIN_EVERY_BYTES (4u << 20)

bool snapshot_flight_mode(const struct config *c)
{
	return c->mode == CONFIG_MODE_FLIGHT;
}

uint64_t snapshot_window_ns(const struct config *c)
{
	if (c->history_usec != CONFIG_HISTORY_DEFAULT)
		return c->history_usec * 1000;
	return snapshot_flight_mode(c) ? CONFIG_FLIGHT_HISTORY_MIN * 60 * 1000000000ULL : 0;
}

/*
 * The history is a sink of the drain: every drained record is kept with
 * its time, per ring, whatever else happens to it (a full disk).
 */
struct snapshot {
	struct sink sink;
	struct history *history;
	uint64_t *last;  /* per ring: time of the last record kept */
	size_t nr_rings;
	int clockid;
	uint64_t dropped; /* records not kept for want of memory */
};

static const struct sink_ops history_sink_ops;

static struct snapshot *of(const struct recorder *rec)
{
	struct sink *s = pipeline_sink_of(rec->pipe, &history_sink_ops);

	return s ? s->ctx : NULL;
}

static void history_record(struct sink *sk, struct drain_rec *r)
{
	struct snapshot *sn = sk->ctx;
	uint64_t t = drain_rec_time(r);

	/* A record without a time keeps its place in the ring's order. */
	if (t < sn->last[r->ring])
		t = sn->last[r->ring];
	sn->last[r->ring] = t;
	if (history_add(sn->history, r->ring, r->h, t) < 0)
		sn->dropped++;
}

static void history_round(struct sink *sk, uint64_t bytes)
{
	struct snapshot *sn = sk->ctx;

	(void)bytes;
	history_trim(sn->history, recording_clock_ns(sn->clockid));
}

static const struct sink_ops history_sink_ops = { .record = history_record, .round = history_round };

/* The JIT sink's MMAP2 naming an image, after the kernel's it follows (jitsink.h). */
static int history_take(void *ctx, size_t ring, const struct perf_event_header *h, uint64_t time)
{
	struct snapshot *sn = ctx;

	if (ring >= sn->nr_rings)
		return -EINVAL;
	if (time < sn->last[ring])
		time = sn->last[ring];
	sn->last[ring] = time;
	if (history_add(sn->history, ring, h, time) < 0) {
		sn->dropped++;
		return -ENOMEM;
	}
	return 0;
}

/*
 * The JIT sink behind the history's, so that its MMAP2s come after the
 * kernel's they follow, and into the history too; in flight mode it
 * keeps what a snapshot of the window may need of processes that exited.
 */
static int hook_jit(struct recorder *rec, struct snapshot *sn, uint64_t window)
{
	recorder_remove_sink(rec, &rec->jit.sink);
	rec->jit.history = history_take;
	rec->jit.history_ctx = sn;
	rec->jit.keep_exited_ns = snapshot_flight_mode(rec->cfg) ? window : 0;
	return recorder_add_output(rec, PIPELINE_HISTORY, &rec->jit.sink);
}

static void snapshot_free(struct snapshot *sn)
{
	if (!sn)
		return;
	history_free(sn->history);
	free(sn->last);
	free(sn);
}

int snapshot_open(struct recorder *rec)
{
	struct history_opts ho = { 0 };
	struct snapshot *sn;
	int r;

	ho.window_ns = snapshot_window_ns(rec->cfg);
	if (snapshot_flight_mode(rec->cfg) && pipeout_enabled(rec->cfg))
		return log_error_errno(-EINVAL, "mode=flight writes snapshot files; it cannot stream to stdout (-o -)");
	if (!ho.window_ns && snapshot_flight_mode(rec->cfg))
		return log_error_errno(-EINVAL, "mode=flight needs a history: history= must not be 0");
	if (!ho.window_ns)
		return 0;
	ho.nr_cpus = rec->nr_rings;
	ho.max_bytes = rec->cfg->history_max;
	sn = calloc(1, sizeof(*sn));
	if (!sn)
		return -ENOMEM;
	sn->sink = (struct sink){ .ops = &history_sink_ops, .ctx = sn };
	sn->nr_rings = rec->nr_rings;
	sn->clockid = rec->cfg->clockid;
	r = history_new(&ho, &sn->history);
	if (r < 0) {
		snapshot_free(sn);
		return log_error_errno(r, "Cannot set up the history: %s", strerror(-r));
	}
	sn->last = calloc(rec->nr_rings, sizeof(*sn->last));
	r = sn->last ? recorder_add_output(rec, PIPELINE_HISTORY, &sn->sink) : -ENOMEM;
	if (r == 0)
		r = hook_jit(rec, sn, ho.window_ns);
	if (r < 0) {
		recorder_remove_sink(rec, &sn->sink);
		rec->jit.history = NULL;
		snapshot_free(sn);
	}
	return r;
}

bool snapshot_has_history(const struct recorder *rec)
{
	return of(rec) != NULL;
}

void snapshot_stats(const struct recorder *rec, struct snapshot_stats *ret)
{
	struct snapshot *sn = of(rec);

	memset(ret, 0, sizeof(*ret));
	if (!sn)
		return;
	ret->window_ns = snapshot_window_ns(rec->cfg);
	ret->max_bytes = rec->cfg->history_max;
	ret->memory_bytes = history_memory(sn->history);
	history_evictions(sn->history, &ret->evicted_chunks, &ret->evicted_by_cap);
	ret->dropped = sn->dropped;
	ret->oldest_time = history_oldest(sn->history);
}

void snapshot_close(struct recorder *rec)
{
	struct snapshot *sn = of(rec);

	if (!sn)
		return;
	recorder_remove_sink(rec, &sn->sink);
	rec->jit.history = NULL;
	rec->jit.history_ctx = NULL;
	snapshot_free(sn);
}

struct snap {
	struct recorder *rec;
	struct history *history;
	struct perfrec_pdwriter *w;
	struct track track;     /* build ids and sample times of what it writes; its table is ours */
	uint64_t since_drain;
	uint64_t max_time;      /* records newer than the snapshot are left for the next */
	struct perfrec_cpu_span *span; /* the CPU being written */
	uint64_t samples;
	int err;
};

static int emit(void *ctx, const struct perf_event_header *h)
{
	struct snap *s = ctx;
	int r;

	if (h->type != PERF_RECORD_SAMPLE)
		track_sideband(&s->track, h);
	r = perfrec_pdwriter__write(s->w, h, h->size);
	if (r < 0)
		return r;
	s->since_drain += h->size;
	if (s->since_drain >= DRAIN_EVERY_BYTES) {
		/* Keep the rings flowing; the frozen history only grows meanwhile. */
		s->since_drain = 0;
		recorder_drain(s->rec);
	}
	return 0;
}

static int emit_timed(void *ctx, const struct perf_event_header *h, uint64_t t)
{
	struct snap *s = ctx;
	struct drain_rec dr;

	if (t > s->max_time)
		return 0;
	if (h->type == PERF_RECORD_SAMPLE) {
		drain_decode(s->rec->drain, h, &dr);
		track_sample(&s->track, h, dr.pid, t);
		s->samples++;
		if (s->span) {
			if (!s->span->samples || t < s->span->first_time)
				s->span->first_time = t;
			if (t > s->span->last_time)
				s->span->last_time = t;
			s->span->samples++;
		}
	}
	return emit(ctx, h);
}

struct sb_rec {
	uint64_t time;
	const struct perf_event_header *rec;
};

static int collect_sb(void *ctx, const struct perf_event_header *h, uint64_t t)
{
	struct sb_list { struct sb_rec *v; size_t n, cap; } *l = ctx;

	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 1024;
		struct sb_rec *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = (struct sb_rec){ t, h };
	return 0;
}

static int cmp_sb(const void *a, const void *b)
{
	const struct sb_rec *x = a, *y = b;

	return x->time < y->time ? -1 : x->time > y->time;
}

/*
 * The side-band store (sorted by time) and every CPU's list, merged by time
 * and cut into rounds of ROUND_BYTES with FINISHED_ROUND: a reader never
 * has to hold the whole snapshot to order it, and since the output is in
 * time order no record is older than a round already flushed.
 */
#define ROUND_BYTES (2u << 20)

static int merge(struct recorder *rec, struct snap *s, struct perfrec_cpu_span *spans, uint64_t min_time)
{
	static const struct perf_event_header round = {
		.type = PERFREC_RECORD_FINISHED_ROUND, .size = sizeof(round),
	};
	struct sb_list { struct sb_rec *v; size_t n, cap; } sb = { 0 };
	size_t n = rec->nr_rings, sbi = 0;
	struct history_cursor *cur = calloc(n, sizeof(*cur));
	struct sb_rec *pend = calloc(n, sizeof(*pend));
	uint64_t in_round = 0;
	int r = 0;

	if (!cur || !pend) {
		r = -ENOMEM;
		goto out;
	}
	r = history_foreach_sideband(s->history, collect_sb, &sb);
	if (r < 0)
		goto out;
	if (sb.n)
		qsort(sb.v, sb.n, sizeof(*sb.v), cmp_sb);
	for (size_t i = 0; i < n; i++) {
		history_cursor_init(s->history, i, min_time, &cur[i]);
		if (history_cursor_next(&cur[i], &pend[i].rec, &pend[i].time) <= 0 || pend[i].time > s->max_time)
			pend[i].rec = NULL;
	}
	for (;;) {
		size_t best = SIZE_MAX;
		uint64_t bt = UINT64_MAX;

		/* A handful of CPUs: a linear pick beats a heap's bookkeeping. */
		for (size_t i = 0; i < n; i++)
			if (pend[i].rec && pend[i].time < bt) {
				bt = pend[i].time;
				best = i;
			}
		if (sbi < sb.n && sb.v[sbi].time <= bt) {
			s->span = NULL;
			r = emit_timed(s, sb.v[sbi].rec, sb.v[sbi].time);
			in_round += sb.v[sbi].rec->size;
			sbi++;
		} else if (best != SIZE_MAX) {
			s->span = &spans[best];
			r = emit_timed(s, pend[best].rec, pend[best].time);
			in_round += pend[best].rec->size;
			/* Records newer than the snapshot (drained meanwhile) wait for the next. */
			if (history_cursor_next(&cur[best], &pend[best].rec, &pend[best].time) <= 0 ||
			    pend[best].time > s->max_time)
				pend[best].rec = NULL;
		} else {
			break;
		}
		if (r < 0)
			goto out;
		if (in_round >= ROUND_BYTES) {
			in_round = 0;
			r = perfrec_pdwriter__write(s->w, &round, sizeof(round));
			if (r < 0)
				goto out;
		}
	}
	s->span = NULL;
	r = perfrec_pdwriter__write(s->w, &round, sizeof(round));
out:
	free(sb.v);
	free(cur);
	free(pend);
	return r;
}

/* The oldest record the history holds (@now if none): the snapshot's state goes before it. */
static uint64_t history_oldest_record(const struct history *h, size_t nr_rings, uint64_t now)
{
	uint64_t oldest = UINT64_MAX;
	struct history_span hs;

	history_sideband_span(h, &hs);
	if (hs.records && hs.first_time < oldest)
		oldest = hs.first_time;
	for (size_t i = 0; i < nr_rings; i++) {
		history_span(h, i, &hs);
		if (hs.records && hs.first_time < oldest)
			oldest = hs.first_time;
	}
	return oldest == UINT64_MAX || oldest > now ? now : oldest;
}

/* PERFREC_FEAT_SPANS for @rec's rings, their spans zero (merge() fills them). */
static struct perfrec_spans_feature *new_spans(const struct recorder *rec, uint64_t window, uint64_t now,
					       size_t *ret_len)
{
	size_t len = sizeof(struct perfrec_spans_feature) + rec->nr_rings * sizeof(struct perfrec_cpu_span);
	struct perfrec_spans_feature *sf = calloc(1, len);

	if (!sf)
		return NULL;
	sf->nr = (uint32_t)rec->nr_rings;
	sf->window_ns = window;
	sf->snapshot_time = now;
	for (size_t i = 0; i < rec->nr_rings; i++)
		((struct perfrec_cpu_span *)(sf + 1))[i].cpu = (uint32_t)perfrec_evlist__ring_cpu(rec->evlist, i);
	*ret_len = len;
	return sf;
}

static void log_spans(const struct perfrec_spans_feature *sf)
{
	for (size_t i = 0; i < sf->nr; i++) {
		const struct perfrec_cpu_span *cs = (const struct perfrec_cpu_span *)(sf + 1) + i;

		log_debug("  snapshot CPU %u: %" PRIu64 " samples, %.3f s", cs->cpu, cs->samples,
			  cs->samples ? (double)(cs->last_time - cs->first_time) / 1e9 : 0.0);
	}
}

static int write_snapshot(struct recorder *rec, struct perfrec_pdwriter *w)
{
	struct outfile_source src = recorder_source(rec, PIPELINE_HISTORY);
	struct snap s = { .rec = rec, .history = of(rec)->history, .w = w };
	struct outfile_begin_opts bo = { .sz = sizeof(bo), .what = "the snapshot", .emit = emit, .ctx = &s };
	struct outfile_features_opts eo = { .sz = sizeof(eo), .what = "the snapshot" };
	struct perfrec_spans_feature *sf = NULL;
	struct recorder_stamp at;
	uint64_t now, window, min_time = 0;
	size_t sf_len = 0;
	int r;

	/* The CLOCK_DATA pair read together, not the wall time after the merge. */
	at = recorder_stamp(rec);
	now = at.clock_ns;
	window = snapshot_window_ns(rec->cfg);
	history_trim(s.history, now);
	if (window && now > window)
		min_time = now - window;
	s.max_time = now;

	r = perfrec_buildid_table__new(&s.track.bids);
	if (r < 0)
		return r;
	sf = new_spans(rec, window, now, &sf_len);
	if (!sf) {
		r = -ENOMEM;
		goto out;
	}
	/* Synthesized state must sort before every record the snapshot holds. */
	bo.time = history_oldest_record(s.history, rec->nr_rings, now);
	bo.time = bo.time > 1 ? bo.time - 1 : bo.time;
	history_freeze(s.history, true);
	/*
	 * The history holds no KSYMBOL for the BPF programs loaded before its
	 * oldest records: outfile_begin() synthesizes them, as for any file.
	 */
	r = outfile_begin(&src, w, &bo);
	if (r < 0)
		goto out;
	r = merge(rec, &s, (struct perfrec_cpu_span *)(sf + 1), min_time);
	if (r < 0)
		goto out;
	/* Its JIT mappings' images into the cache now: their processes may be gone by the time it is read. */
	jitsink_write_images(&rec->jit);

	eo.clock_ns = at.clock_ns;
	eo.wall_ns = at.wall_ns;
	eo.first_sample_time = s.track.first_time;
	eo.last_sample_time = s.track.last_time;
	eo.buildids = s.track.bids;
	outfile_add_features(&src, w, &eo);
	r = perfrec_pdwriter__set_feature(w, PERFREC_FEAT_SPANS, sf, sf_len);
	if (r < 0)
		goto out;
	r = perfrec_pdwriter__finish(w);
	if (r >= 0)
		r = s.samples > INT32_MAX ? INT32_MAX : (int)s.samples;
out:
	history_freeze(s.history, false);
	history_trim(s.history, recorder_clock_ns(rec));
	perfrec_buildid_table__free(s.track.bids);
	if (r >= 0)
		log_spans(sf);
	free(sf);
	return r;
}

/*
 * Continuous mode without a history: the snapshot is a finished copy of the
 * file in progress (checkpointed first, so everything drained so far is in
 * it), read back through the reader so compressed files copy too.
 */
static int copy_current(struct recorder *rec, struct perfrec_pdwriter *w)
{
	struct perfrec_pdreader *rd = NULL;
	struct outfile_features_opts eo;
	struct outfile_source src;
	const struct perf_event_header *h;
	uint64_t off, since_drain = 0, samples = 0;
	char *tmp = NULL;
	int r;

	/*
	 * Read as a .tmp is salvaged: up to its checkpoint, and COMPRESSED
	 * records (compress=, on by default) sized as the writer makes them,
	 * since HEADER_COMPRESSED is written only when the file is finished.
	 */
	const struct perfrec_pdreader_opts ro = { .sz = sizeof(ro), .salvage = true };

	r = recorder_checkpoint(rec, &tmp);
	if (r < 0)
		return r;
	r = perfrec_pdreader__open(tmp, &ro, &rd);
	free(tmp);
	if (r < 0)
		return r;
	/* The file's records hold its state already: only its attrs, as it has them (unwound or not). */
	src = recorder_source(rec, PIPELINE_FILE);
	r = outfile_add_attrs(&src, w);
	if (r < 0)
		goto out;
	while ((r = perfrec_pdreader__next(rd, &h, &off)) > 0) {
		r = perfrec_pdwriter__write(w, h, h->size);
		if (r < 0)
			goto out;
		if (h->type == PERF_RECORD_SAMPLE)
			samples++;
		since_drain += h->size;
		if (since_drain >= DRAIN_EVERY_BYTES) {
			/* Appends land past the checkpointed size the reader stops at. */
			since_drain = 0;
			recorder_drain(rec);
		}
	}
	if (r < 0)
		goto out;
	jitsink_write_images(&rec->jit);
	/* Ends as the file will: its times and build ids. */
	eo = recorder_features_opts(rec);
	eo.what = "the snapshot";
	outfile_add_features(&src, w, &eo);
	r = perfrec_pdwriter__finish(w);
	if (r >= 0)
		r = samples > INT32_MAX ? INT32_MAX : (int)samples;
out:
	perfrec_pdreader__free(rd);
	return r;
}

static int snapshot_into(struct recorder *rec, int fd, bool pipe_mode)
{
	struct perfrec_pdwriter *w = NULL;
	int r;

	if (pipe_mode) {
		struct perfrec_pdwriter_pipe_opts o = { .sz = sizeof(o) };

		r = perfrec_pdwriter__new_pipe(fd, &o, &w);
	} else {
		/*
		 * Plain, whatever compress= says: the client opens this file
		 * directly, with readers (hotspot 1.3) that cannot decompress.
		 */
		struct perfrec_pdwriter_opts o = { .sz = sizeof(o) };

		r = perfrec_pdwriter__new(fd, &o, &w);
	}
	if (r < 0)
		return r;
	r = of(rec) ? write_snapshot(rec, w) : copy_current(rec, w);
	perfrec_pdwriter__free(w, false);
	return r;
}

int recorder_snapshot(struct recorder *rec, int fd)
{
	struct stat st;

	if (!of(rec) && !rec->have_file)
		return -ENODATA;
	recorder_flush(rec);
	if (fstat(fd, &st) < 0)
		return -errno;
	return snapshot_into(rec, fd, !S_ISREG(st.st_mode));
}

/*
 * The spool lives on disk beside the recordings when it can (a snapshot may
 * be as large as the history), unlinked from the start so nothing is left
 * behind; in memory otherwise.
 */
static int spool_open(const struct recorder *rec)
{
	int fd = -1;

	if (!pipeout_enabled(rec->cfg) && rec->cfg->directory)
		fd = open(rec->cfg->directory, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0)
		fd = memfd_create("perfrecd-snapshot", MFD_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int recorder_snapshot_spool(struct recorder *rec, bool pipe_mode, int *ret_fd)
{
	int fd, r;

	if (!of(rec) && !rec->have_file)
		return -ENODATA;
	recorder_flush(rec);
	fd = spool_open(rec);
	if (fd < 0)
		return fd;
	r = snapshot_into(rec, fd, pipe_mode);
	if (r < 0) {
		close(fd);
		return r;
	}
	*ret_fd = fd;
	return r;
}

int recorder_snapshot_publish(struct recorder *rec, char **ret_path)
{
	struct perfrec_pdwriter *w = NULL;
	struct recfile o = { 0 };
	struct timespec ts;
	char *path;
	int r;

	if (!of(rec)) {
		log_error("Snapshot refused: no history is kept (set history= or mode=flight)");
		return -ENODATA;
	}
	recorder_flush(rec);
	clock_gettime(CLOCK_REALTIME, &ts);
	/* Named like rotated files, so retention counts snapshots too. */
	path = recorder_file_name(rec, (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec,
				  recorder_take_seq(rec), "-snapshot");
	if (!path)
		return -ENOMEM;
	r = perfrec_pdwriter__create(path, &w);
	if (r >= 0 && rec->cfg->compress_level)
		r = perfrec_pdwriter__set_compress(w, rec->cfg->compress_level);
	if (r >= 0)
		r = write_snapshot(rec, w);
	if (r >= 0) {
		o.f.samples = (uint64_t)r;
		o.start_wall_ns = (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
		r = recorder_publish(rec, w, path, &o);
	} else {
		log_error("Cannot write snapshot %s: %s", path, strerror(-r));
	}
	perfrec_pdwriter__free(w, true);
	if (r < 0) {
		free(path);
		return r;
	}
	log_info("Wrote snapshot %s: %" PRIu64 " samples, history %" PRIu64 " KiB in memory",
		 path, o.f.samples, history_memory(of(rec)->history) / 1024);
	if (ret_path)
		*ret_path = path;
	else
		free(path);
	return 0;
}
