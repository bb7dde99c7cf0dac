// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The record path of perfrecd: events open per CPU, one ring per CPU,
 * drained pass by pass into the current perf.data file.
 *
 * The drain (drain.c) walks each ring once per pass and hands every record
 * to every sink.  The recorder's own sink is the library's file sink
 * (filesink.h, the record object's too): it counts what it needs (sample
 * counts and times, MMAP2 build ids, lost counts) and in continuous mode
 * writes the bytes into the current file as at most two segments straight
 * from the mapping.  After every pass that wrote something comes a
 * FINISHED_ROUND, which tells readers that nothing older than this pass
 * will follow.  What only perfrecd does beside it (min-free, a full disk
 * logged once, stalled files, checkpoints, manifests) stays here, through
 * its hooks (file_hooks).
 *
 * Stages may sit between the drain and the file sink (pipeline.h: host
 * unwinding); the file sink is the same behind them, called on the same
 * thread, and counts what reaches it.  The pipeline is synced (every
 * stage emptied into the file) before a file is synthesized, checkpointed
 * for a copy or finished, so each file gets exactly its own records.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <perfrec/bpfmeta.h>

#include "bidcache.h"
#include "bpfmeta-sink.h"
#include "manifest-cgroup.h"
#include "hook.h"
#include "jitsink.h"
#include "offcpu-rec.h"
#include "outfile.h"
#include "log.h"
#include "pipeline.h"
#include "pipeout.h"
#include "recorder.h"
#include "safename.h"
#include "retention.h"
#include "kcache.h"
#include "leftovers.h"
#include "manifest.h"
#include "upload.h"

uint64_t now_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

uint64_t recording_clock_ns(int clockid)
{
	struct timespec ts;

	/* "perf" clock (-1) is the kernel's local_clock, close to MONOTONIC. */
	clock_gettime(clockid < 0 ? CLOCK_MONOTONIC : clockid, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int recorder_note_write(struct recorder *rec, int r);
static void recorder_after_publish(struct recorder *rec, const char *path, const struct recfile *o,
				   bool recovered);

static void open_error(void *ctx, const char *event, int cpu, int err)
{
	struct recorder *rec = ctx;
	const char *why = strerror(err);

	rec->nr_open_failures++;
	if (err == ENOENT || err == EOPNOTSUPP)
		why = "not supported on this machine (no such PMU or event)";
	else if (err == EACCES || err == EPERM)
		why = "permission denied (needs CAP_PERFMON or root, or a lower kernel.perf_event_paranoid)";
	log_error("Cannot open event '%s' on CPU %d: %s", event, cpu, why);
}

static const struct filesink_hooks file_hooks;

static void drain_log(void *ctx, int level, const char *msg)
{
	log_msg(level, "%s", msg);
}

/* The drain over the rings, its ids, and the recorder's own sink first. */
static int open_drain(struct recorder *rec)
{
	struct drain_opts o = { .sz = sizeof(o), .callchain = rec->cfg->callchain, .log = drain_log };
	int r;

	for (size_t i = 0; i < perfrec_evlist__nr_evsels(rec->evlist); i++) {
		const struct perfrec_evsel *ev = perfrec_evlist__evsel(rec->evlist, i);

		if (ev->is_sideband) {
			rec->sideband_sample_type = ev->attr.sample_type;
			rec->sideband_id = ev->nr_ids ? ev->ids[0] : 0;
			rec->sideband_ids = ev->nr_ids == rec->nr_rings ? ev->ids : NULL;
		}
	}
	o.sideband_sample_type = rec->sideband_sample_type;
	r = drain_new(&o, &rec->drain);
	if (r == 0)
		r = drain_add_evlist(rec->drain, rec->evlist);
	if (r < 0)
		return r;
	return 0;
}

static void stage_lost(void *owner, size_t ring, uint64_t samples);

/*
 * The stages the config asks for, and the file sink where the file's kind
 * of output goes (pipeline.h decides).  Other outputs add theirs later.
 */
static int open_pipeline(struct recorder *rec)
{
	struct pipeline_opts po = {
		.cfg = rec->cfg, .drain = rec->drain, .evlist = rec->evlist,
		.lost = stage_lost, .owner = rec, .py = rec->py,
	};
	struct filesink_opts fo = {
		.sz = sizeof(fo), .evlist = rec->evlist,
		.sideband_sample_type = rec->sideband_sample_type, .sideband_id = rec->sideband_id,
		.sideband_ids = rec->sideband_ids, .clockid = rec->cfg->clockid,
		.count_only = rec->flight, .hooks = &file_hooks, .hooks_ctx = rec,
	};
	int r = pipeline_new(&po, &rec->pipe);

	if (r == 0)
		r = filesink_init(&rec->fsink, &fo);
	if (r < 0)
		return r;
	return pipeline_add(rec->pipe, PIPELINE_FILE, &rec->fsink.sink);
}

/*
 * The consumers that are not the file, each a sink where its kind goes:
 * cgroup counts behind the file (they count what it gets), the build-id
 * cache and the BPF programs on the side-band records.
 */
static int jit_emit(void *ctx, const struct perf_event_header *h);
static int open_pytrack(struct recorder *rec);

static int open_notes(struct recorder *rec)
{
	struct jitsink_opts jo = {
		.sideband_sample_type = rec->sideband_sample_type, .emit = jit_emit, .ctx = rec,
	};
	int r;

	rec->cgroup_sink = (struct sink){ .ops = &cgroup_counts_sink_ops, .ctx = &rec->cur.cgroups };
	rec->bidcache_sink = (struct sink){ .ops = &bidcache_sink_ops, .ctx = &rec->cfg };
	rec->bpf_sink = (struct sink){ .ops = &bpfmeta_sink_ops, .ctx = rec->bpfmeta };
	r = pipeline_add(rec->pipe, PIPELINE_FILE, &rec->cgroup_sink);
	if (r == 0)
		r = pipeline_add(rec->pipe, PIPELINE_NOTES, &rec->bidcache_sink);
	if (r == 0)
		r = pipeline_add(rec->pipe, PIPELINE_NOTES, &rec->bpf_sink);
	/*
	 * JIT mappings named in the file and the history (jitsink.h); with a
	 * history, snapshot_open() puts it behind the history's sink.
	 */
	jitsink_init(&rec->jit, &rec->cfg, &jo);
	if (r == 0)
		r = pipeline_add(rec->pipe, rec->flight ? PIPELINE_HISTORY : PIPELINE_FILE, &rec->jit.sink);
	if (r == 0)
		r = open_pytrack(rec);
	return r;
}

void recorder_note_freq(struct recorder *rec, uint64_t hz)
{
	rec->cur_freq = hz;
	if (!rec->have_file || !hz)
		return;
	if (!rec->cur.freq_min || hz < rec->cur.freq_min)
		rec->cur.freq_min = hz;
	if (hz > rec->cur.freq_max)
		rec->cur.freq_max = hz;
}

bool recorder_unwind_stats(const struct recorder *rec, struct unwind_sink_stats *ret)
{
	return rec && pipeline_unwind_stats(rec->pipe, ret);
}

bool recorder_python_stats(const struct recorder *rec, struct python_stats *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (!rec || !rec->py)
		return false;
	pywalk_get_stats(rec->py, &ret->walk);
	if (rec->pytrack)
		pytrack_get_stats(rec->pytrack, &ret->track);
	pipeline_py_stats(rec->pipe, &ret->stage);
	return true;
}

void recorder_jit_stats(const struct recorder *rec, struct jitsink_stats *ret)
{
	jitsink_get_stats(&rec->jit, ret);
}

uint64_t recorder_busy_samples(const struct recorder *rec)
{
	return rec->fsink.busy_samples;
}

bool recorder_output_closed(const struct recorder *rec)
{
	/* A cut stream fails every write, an empty one included, with its error. */
	/* The reader may leave before the stream's start is written (have_file false). */
	bool gone;

	if (!pipeout_enabled(rec->cfg))
		return false;
	gone = rec->stdout_gone || (rec->have_file && perfrec_pdwriter__write(rec->cur.f.w, NULL, 0) == -EPIPE);
	return gone;
}

int recorder_add_output(struct recorder *rec, enum pipeline_output out, struct sink *s)
{
	/* What the stages still hold was drained before @s came: not for it. */
	pipeline_sync(rec->pipe);
	return pipeline_add(rec->pipe, out, s);
}

void recorder_remove_sink(struct recorder *rec, struct sink *s)
{
	if (rec)
		pipeline_remove(rec->pipe, s);
}

void recorder_move(struct recorder *dst, struct recorder *src)
{
	*dst = *src;
	memset(src, 0, sizeof(*src));
	filesink_moved(&dst->fsink);
	dst->fsink.opts.hooks_ctx = dst;
	if (dst->fsink.file)
		dst->fsink.file = &dst->cur.f;
	dst->cgroup_sink.ctx = &dst->cur.cgroups;
	dst->bidcache_sink.ctx = &dst->cfg;
	pipeline_move(dst->pipe, dst);
	pipeline_replace(dst->pipe, &src->fsink.sink, &dst->fsink.sink);
	pipeline_replace(dst->pipe, &src->cgroup_sink, &dst->cgroup_sink);
	pipeline_replace(dst->pipe, &src->bidcache_sink, &dst->bidcache_sink);
	pipeline_replace(dst->pipe, &src->bpf_sink, &dst->bpf_sink);
	jitsink_moved(&dst->jit);
	dst->jit.o.ctx = dst;
	dst->jit.cfg = &dst->cfg;
	pipeline_replace(dst->pipe, &src->jit.sink, &dst->jit.sink);
}

/*
 * The host name is any UTS namespace's root's to choose, and goes into
 * file names, upload keys and the hook's environment: "a/../../x" must not
 * write beside the output directory, nor "$(cmd)" reach a shell.  Only a
 * host name's own characters are kept (the raw name is not logged either:
 * it may hold line breaks).
 */
static void read_host_name(char *out, size_t size)
{
	char raw[256] = "";

	if (gethostname(raw, sizeof(raw) - 1) < 0)
		raw[0] = 0;
	if (!safename_sanitize(raw, out, size))
		log_warning("The host name has characters other than A-Z a-z 0-9 . _ - (or begins with . or -): "
			    "files are named with '%s'", out);
}

/* The events on every CPU, as @cfg says, capped as perf record caps -F. */
static int open_events(struct recorder *rec, const struct config *cfg)
{
	struct perfrec_evlist_opts eo = { .sz = sizeof(eo) };
	int r, max_rate;

	max_rate = perfrec_evlist__max_sample_rate();
	if (cfg->freq && max_rate > 0 && cfg->freq > (uint64_t)max_rate)
		return log_error_errno(-EINVAL,
			"Frequency %" PRIu64 " Hz is above the kernel's limit of %d Hz (kernel.perf_event_max_sample_rate)",
			cfg->freq, max_rate);

	/* As perf record caps -F at the kernel's limit: warn, and record at the guard's rate. */
	if (config_freq(cfg) != cfg->freq)
		log_warning("frequency=%" PRIu64 " Hz is above max-frequency=%d Hz: sampling at %d Hz "
			    "(so many samples on every CPU would take the host; raise max-frequency= to allow it)",
			    cfg->freq, cfg->max_freq, cfg->max_freq);
	eo.freq = config_freq(cfg);
	eo.period = cfg->period;
	eo.callchain = cfg->callchain;
	eo.stack_user = cfg->callchain && cfg->dwarf ? (uint32_t)cfg->stack_size : 0;
	eo.clockid = cfg->clockid;
	/* mmap-size is a power of two >= 4K (config.c); pages follow. */
	eo.mmap_pages = config_ring_bytes(cfg) / (size_t)sysconf(_SC_PAGESIZE);
	if (eo.mmap_pages == 0)
		eo.mmap_pages = 1;
	eo.context_switch = cfg->context_switch;
	r = perfrec_evlist__new(rec->cpus, rec->specs, rec->nr_specs, &eo, &rec->evlist);
	if (r < 0)
		return log_error_errno(r, "Cannot set up events: %s", strerror(-r));
	r = perfrec_evlist__open(rec->evlist, open_error, rec);
	if ((r == -EPERM || r == -ENOMEM) && rec->nr_open_failures == 0)
		return log_error_errno(r, "Cannot map the ring buffers: %s (locked memory limit: kernel.perf_event_mlock_kb and RLIMIT_MEMLOCK; try a smaller mmap-size)",
				       strerror(-r));
	if (r < 0)
		return log_error_errno(r, "No event could be opened; nothing to record");
	return 0;
}

static int open_recorder(struct recorder *rec, const struct config *cfg, int argc, char **argv,
			 struct offcpu_rec *offcpu, struct pywalk *py, bool load_bpf);

int recorder_open(struct recorder *rec, const struct config *cfg, int argc, char **argv)
{
	return open_recorder(rec, cfg, argc, argv, NULL, NULL, true);
}

int recorder_reopen(struct recorder *rec, const struct config *cfg, int argc, char **argv,
		    struct offcpu_rec *offcpu, struct pywalk *py)
{
	return open_recorder(rec, cfg, argc, argv, offcpu, py, false);
}

/*
 * The walk of Python frames on the sampling events (python=): loaded at
 * start, while privileged; a reload hands the loaded one over (@py), to
 * attach to the new events.  Never fatal: without it, a notice says why
 * and recording goes on without Python frames.
 */
static void open_python(struct recorder *rec, struct pywalk *py, bool load)
{
	size_t n = perfrec_evlist__sample_fds(rec->evlist, NULL, 0);
	int *fds = calloc(n ? n : 1, sizeof(*fds));
	struct pywalk_opts o = { .sz = sizeof(o), .fds = fds, .nr_fds = n };
	int r;

	/* Not taken, a handed-over walk stays the old recorder's, which frees it. */
	rec->py = NULL;
	if (!rec->cfg->python || (!py && !load) || !fds) {
		free(fds);
		return;
	}
	rec->py = py;
	perfrec_evlist__sample_fds(rec->evlist, fds, n);
	r = py ? pywalk_attach(py, fds, n) : pywalk_open(&o, &rec->py);
	free(fds);
	if (r < 0) {
		log_notice("Python frames off: %s the BPF walk failed: %s%s; recording goes on without them",
			   py ? "attaching" : "loading", strerror(-r),
			   r == -EPERM ? " (needs CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN)" : "");
		rec->py = NULL;
	}
}

/* The CPython processes the walk looks at: those that run now, then as they start. */
static int open_pytrack(struct recorder *rec)
{
	int r;

	if (!rec->py)
		return 0;
	r = pytrack_new(rec->py, NULL, &rec->pytrack);
	if (r < 0)
		return r;
	pytrack_scan(rec->pytrack);
	log_debug("Python frames are on (%" PRIu64 " CPython processes running now)",
		 rec->pytrack->st.added);
	return pipeline_add(rec->pipe, PIPELINE_NOTES, &rec->pytrack->sink);
}

static int open_recorder(struct recorder *rec, const struct config *cfg, int argc, char **argv,
			 struct offcpu_rec *offcpu, struct pywalk *py, bool load_bpf)
{
	char err[256];
	int r;

	memset(rec, 0, sizeof(*rec));
	rec->cfg = cfg;
	rec->flight = cfg->mode == CONFIG_MODE_FLIGHT;
	rec->argc = argc;
	rec->argv = argv;
	read_host_name(rec->hostname, sizeof(rec->hostname));

	if (cfg->cpus)
		r = perfrec_cpumap__parse(cfg->cpus, &rec->cpus);
	else
		r = perfrec_cpumap__read(NULL, &rec->cpus);
	if (r < 0)
		return log_error_errno(r, "Invalid CPU list '%s': %s", cfg->cpus ? cfg->cpus : "(online)",
				       strerror(-r));

	rec->specs = calloc(cfg->nr_events, sizeof(*rec->specs));
	if (!rec->specs)
		return -ENOMEM;
	for (size_t i = 0; i < cfg->nr_events; i++) {
		err[0] = 0;
		r = perfrec_evspec__parse(cfg->events[i], NULL, &rec->specs[i], err, sizeof(err));
		if (r < 0)
			return log_error_errno(r, "Invalid event '%s': %s", cfg->events[i],
					       err[0] ? err : strerror(-r));
	}
	rec->nr_specs = cfg->nr_events;

	r = open_events(rec, cfg);
	if (r < 0)
		return r;

	rec->nr_rings = perfrec_evlist__nr_rings(rec->evlist);
	open_python(rec, py, load_bpf);
	r = open_drain(rec);
	if (r < 0)
		return r;
	r = open_pipeline(rec);
	if (r < 0)
		return r;
	r = perfrec_buildid_table__new(&rec->buildids);
	if (r < 0)
		return log_error_errno(r, "Cannot allocate build-id table: %s", strerror(-r));
	/* (flight mode: no file; each snapshot tracks what it writes) */
	rec->fsink.track = (struct track){ .bids = rec->flight ? NULL : rec->buildids };
	/* A reload hands over the program loaded at start: loading needs CAP_BPF, dropped since. */
	rec->offcpu = offcpu;
	r = load_bpf ? offcpu_rec_open(cfg, &rec->offcpu) : 0;
	if (r < 0)
		return r;
	/* While still privileged: the BPF programs loaded now (bpf-meta.c). */
	if (perfrec_bpfmeta__new(&rec->bpfmeta) == 0)
		perfrec_bpfmeta__collect(rec->bpfmeta);
	/*
	 * The kernel's text bounds for its map in every file: from bpf-meta's
	 * pass over kallsyms if it made one, else from /proc/iomem, which
	 * shows them only with CAP_SYS_ADMIN, held now and not later.  Either
	 * spares a pass over nearly all of kallsyms (lib/synth.c).
	 */
	if (!perfrec_bpfmeta__kernel_text(rec->bpfmeta, &rec->kernel_text, &rec->kernel_etext)) {
		struct perfrec_synth_opts so = { .sz = sizeof(so) };

		if (perfrec_synth__kernel_text(&so, &rec->kernel_text, &rec->kernel_etext) < 0)
			rec->kernel_text = rec->kernel_etext = 0;
	}
	return open_notes(rec);
}

static int seed_emit(void *ctx, const struct perf_event_header *h)
{
	struct recorder *rec = ctx;

	pipeline_state(rec->pipe, PIPELINE_HISTORY, h);
	/* JIT code of processes that already run: its MMAP2s naming images go into the history */
	if (h->type == PERF_RECORD_MMAP2)
		jitsink_note(&rec->jit, h);
	return 0;
}

/*
 * Without a file (flight mode) no output begins with the state of the
 * processes that already run, which the stages need (the unwinder: their
 * maps) and the JIT sink (their JIT mappings): they get it once, here,
 * while still idle.
 */
static void seed_stages(struct recorder *rec)
{
	struct outfile_source src = recorder_source(rec, PIPELINE_HISTORY);
	struct outfile_begin_opts bo = {
		.sz = sizeof(bo), .time = recorder_clock_ns(rec), .what = "the host unwinder",
		.emit = seed_emit, .ctx = rec,
	};
	int r;

	if (!rec->flight)
		return;
	r = outfile_synthesize(&src, NULL, &bo);
	if (r < 0)
		log_warning("The flight history starts without the state of running processes: %s", strerror(-r));
}

int recorder_enable(struct recorder *rec)
{
	struct outfile_source src = recorder_source(rec, PIPELINE_FILE);
	struct perfrec_synth_opts so = outfile_synth_opts(&src, 0);
	int r;

	/* Read the kernel maps while nothing samples us and no ring fills. */
	kcache_fill(&so);
	r = perfrec_evlist__enable(rec->evlist);

	if (r < 0)
		log_error("Cannot enable events: %s", strerror(-r));
	else
		seed_stages(rec);
	return r;
}

int recorder_disable(struct recorder *rec)
{
	return perfrec_evlist__disable(rec->evlist);
}

/*
 * Write errors (a full disk) cost data, not the daemon: log once per
 * episode.  A write into the writer's buffer can succeed while the disk is
 * still full, so the episode ends only when data is known to be on disk: a
 * checkpoint or a publish that succeeded (see write_ok()).  A disk with a
 * few free pages lets small writes through and refuses large ones, so
 * episodes can follow each other closely: one starting within
 * WRITE_ERROR_QUIET_USEC of the last is logged at debug level only.
 */
#define WRITE_ERROR_QUIET_USEC (60 * 1000000ULL)

static int recorder_note_write(struct recorder *rec, int r)
{
	/* Only stdout can be a pipe: its reader left (recorder_output_closed() ends the run). */
	if (r == -EPIPE) {
		rec->stdout_gone = true;
		return r;
	}
	if (r < 0 && !rec->write_error_logged) {
		uint64_t now = now_usec();
		bool quiet = rec->write_error_usec && now - rec->write_error_usec < WRITE_ERROR_QUIET_USEC;

		log_msg(quiet ? LOG_DEBUG : LOG_ERR,
			"Cannot write %s: %s; dropping data until writes succeed again (counted as lost)",
			rec->cur.path, strerror(-r));
		rec->write_error_logged = true;
		rec->write_error_usec = now;
	}
	return r;
}

/* Data known to be on disk again: true when that ends a write-error episode. */
static bool write_ok(struct recorder *rec, const char *path)
{
	if (!rec->write_error_logged)
		return false;
	log_msg(now_usec() - rec->write_error_usec < WRITE_ERROR_QUIET_USEC ? LOG_DEBUG : LOG_NOTICE,
		"Writing %s again", path);
	rec->write_error_logged = false;
	return true;
}

/* What the file sink leaves to perfrecd (filesink.h): min-free, a full disk logged once. */
static int file_admit(void *ctx)
{
	struct recorder *rec = ctx;

	return rec->below_floor ? -ENOSPC : 0;
}

static int file_wrote(void *ctx, int err)
{
	return recorder_note_write(ctx, err);
}

static void file_reported(void *ctx, uint64_t samples)
{
	struct recorder *rec = ctx;

	log_msg(rec->write_error_logged || now_usec() - rec->write_error_usec < WRITE_ERROR_QUIET_USEC ?
		LOG_DEBUG : LOG_NOTICE,
		"%s: %" PRIu64 " samples that the disk refused are recorded as lost", rec->cur.path, samples);
}

static const struct filesink_hooks file_hooks = {
	.admit = file_admit, .wrote = file_wrote, .reported = file_reported,
};

/* The file sink writes into the current file while there is one. */
static void set_have_file(struct recorder *rec, bool have)
{
	rec->have_file = have;
	rec->fsink.file = have ? &rec->cur.f : NULL;
}

static uint64_t drain_rings(struct recorder *rec);
static int retry_stalled(struct recorder *rec);

/*
 * The events are enabled before a file's state is synthesized (so nothing
 * between the two is missed), and synthesis can take longer than a ring
 * lasts at high rates on a loaded host: at 50 kHz with -g a 512 KiB ring
 * fills in about a quarter of a second.  So the rings are drained into the
 * file every few milliseconds while it is being synthesized.  No
 * FINISHED_ROUND is written until synthesis is over: the synthesized
 * records carry the file's start time, older than any ring record, so
 * readers, which sort each round by time, still apply them first.
 */
#define SYNTH_DRAIN_USEC 5000

/* While no file can be started (a full disk), try again at most this often. */
#define START_RETRY_USEC 1000000

static void drain_during_synth(struct recorder *rec, bool force)
{
	static unsigned calls;
	static uint64_t last;
	uint64_t now;

	if (!force && ++calls % 16)
		return;
	now = now_usec();
	if (!force && now - last < SYNTH_DRAIN_USEC)
		return;
	last = now;
	if (rec->have_file)
		drain_rings(rec);
}

/* The file's synthesized state, to the consumers beside it as if drained (open_notes()). */
static void note_synth(struct recorder *rec, const struct perf_event_header *h)
{
	struct sink *notes[] = { &rec->cgroup_sink, &rec->bidcache_sink };
	struct drain_rec dr;

	drain_decode(rec->drain, h, &dr);
	for (size_t i = 0; i < sizeof(notes) / sizeof(notes[0]); i++)
		notes[i]->ops->record(notes[i], &dr);
	if (!rec->flight)
		jitsink_note(&rec->jit, h);
}

/* The JIT sink's MMAP2s go into the current file, noted like its own records. */
static int jit_emit(void *ctx, const struct perf_event_header *h)
{
	struct recorder *rec = ctx;

	if (!rec->have_file)
		return -ENOENT;
	track_sideband(&rec->fsink.track, h);
	return recorder_note_write(rec, perfrec_pdwriter__write(rec->cur.f.w, h, h->size));
}

static int emit_synth(void *ctx, const struct perf_event_header *h)
{
	struct recorder *rec = ctx;
	int r;

	/* The stages start from the same state as the file (idle: recorder_start_file() synced them). */
	if (!pipeline_state(rec->pipe, PIPELINE_FILE, h)) {
		drain_during_synth(rec, false);
		return 0;
	}
	track_sideband(&rec->fsink.track, h);
	note_synth(rec, h);
	r = recorder_note_write(rec, perfrec_pdwriter__write(rec->cur.f.w, h, h->size));
	if (r == 0)
		drain_during_synth(rec, false);
	return r;
}

char *recorder_file_name(const struct recorder *rec, uint64_t wall_ns, uint64_t seq, const char *suffix)
{
	time_t secs = wall_ns / 1000000000;
	unsigned ms = (wall_ns / 1000000) % 1000;
	struct tm tm;
	char stamp[64];
	char *path;

	gmtime_r(&secs, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%S", &tm);
	if (asprintf(&path, "%s/%s-%s-%s.%03uZ-%06" PRIu64 "%s.data", rec->cfg->directory,
		     rec->cfg->prefix, rec->hostname, stamp, ms, seq, suffix) < 0)
		return NULL;
	return path;
}

uint64_t recorder_take_seq(struct recorder *rec)
{
	return ++rec->seq;
}

static char *make_path(struct recorder *rec, uint64_t wall_ns, uint64_t seq)
{
	if (pipeout_enabled(rec->cfg))
		return strdup("stdout");
	return recorder_file_name(rec, wall_ns, seq, "");
}

static void recfile_reset(struct recfile *o)
{
	perfrec_pdwriter__free(o->f.w, false);
	free(o->path);
	free(o->f.cpu);
	cgroup_counts_free(o->cgroups);
	memset(o, 0, sizeof(*o));
}

uint64_t recorder_clock_ns(const struct recorder *rec)
{
	return recording_clock_ns(rec->cfg->clockid);
}

struct recorder_stamp recorder_stamp(const struct recorder *rec)
{
	struct recorder_stamp s;

	s.wall_ns = recording_clock_ns(CLOCK_REALTIME);
	s.clock_ns = recording_clock_ns(rec->cfg->clockid);
	return s;
}

/* What perfrecd adds to every output (outfile.h): its kernel maps, off-CPU time, its log. */
static int hook_kernel(void *ctx, const struct perfrec_synth_opts *so, perfrec_synth_emit_fn emit, void *ectx)
{
	return kcache_emit(so, emit, ectx);
}

static int hook_add_attrs(void *ctx, const struct perfrec_evlist *el, struct perfrec_pdwriter *w)
{
	return offcpu_rec_add_attr(ctx, el, w);
}

static void hook_say(void *ctx, int level, const char *msg)
{
	log_msg(level, "%s", msg);
}

static const struct outfile_hooks outfile_hooks = {
	.kernel = hook_kernel, .add_attrs = hook_add_attrs, .say = hook_say,
};

struct outfile_source recorder_source(const struct recorder *rec, enum pipeline_output out)
{
	return (struct outfile_source){
		.evlist = rec->evlist, .specs = rec->specs, .nr_specs = rec->nr_specs,
		.hooks = &outfile_hooks, .hooks_ctx = rec->offcpu, .bpfmeta = rec->bpfmeta,
		.sideband_sample_type = rec->sideband_sample_type, .sideband_id = rec->sideband_id,
		.kernel_text = rec->kernel_text, .kernel_etext = rec->kernel_etext,
		.argc = rec->argc, .argv = rec->argv, .clockid = rec->cfg->clockid,
		.data_maps = rec->cfg->callchain && rec->cfg->dwarf,
		.unwound = pipeline_unwound(rec->pipe, out),
	};
}

static void synth_step(void *ctx)
{
	drain_during_synth(ctx, true);
}

/* A file's first records: attrs, state, FINISHED_INIT (outfile.c). */
static int begin_file(struct recorder *rec, struct recfile *o)
{
	struct outfile_source src = recorder_source(rec, PIPELINE_FILE);
	struct outfile_begin_opts bo = {
		.sz = sizeof(bo), .time = o->start_clock_ns, .what = o->path,
		.emit = emit_synth, .step = synth_step, .ctx = rec,
	};

	/*
	 * Nothing of an earlier file is still on its way: recorder_start_file()
	 * synced the pipeline, and its stages stay idle (pipeline_state()).
	 */
	o->unwound = pipeline_unwind_stats(rec->pipe, &o->unwind_start);
	set_have_file(rec, true);
	perfrec_buildid_table__reset_samples(rec->buildids);
	jitsink_file_begin(&rec->jit);
	return outfile_begin(&src, o->f.w, &bo);
}

/* The current file's outfile, but its writer (pipeout.c makes it). */
static int new_outfile(struct recorder *rec, struct recfile *o, const struct recorder_stamp *at)
{
	struct recorder_stamp now = at ? *at : recorder_stamp(rec);

	memset(o, 0, sizeof(*o));
	/* Taken only by a file that starts: a full disk does not burn numbers. */
	o->seq = rec->seq + 1;
	/*
	 * The pair read together: a rotation stamps the new file before it
	 * finishes the old one, which with host unwinding waits for the
	 * worker (tens of ms); a wall time read after that put every sample
	 * of the file as much later in wall time.
	 */
	o->start_wall_ns = now.wall_ns;
	o->start_clock_ns = now.clock_ns;
	o->f.cpu = calloc(rec->nr_rings, sizeof(*o->f.cpu));
	o->f.track.bids = rec->buildids;
	o->path = make_path(rec, o->start_wall_ns, o->seq);
	/* Without it (no memory) the manifest reads the published file instead. */
	if (!pipeout_enabled(rec->cfg) && cgroup_counts_new(&o->cgroups) < 0)
		o->cgroups = NULL;
	if (!o->f.cpu || !o->path) {
		recfile_reset(o);
		return -ENOMEM;
	}
	return 0;
}

int recorder_start_file(struct recorder *rec, const struct recorder_stamp *at)
{
	struct recfile *o = &rec->cur;
	int r;

	if (!rec->rotate_anchor_usec)
		rec->rotate_anchor_usec = now_usec();
	/* What the stages hold was drained for the file before (see the top). */
	pipeline_sync(rec->pipe);
	r = new_outfile(rec, o, at);
	if (r < 0)
		return r;
	r = pipeout_new_writer(rec->cfg, o->path, rec->argc, rec->argv, o->start_clock_ns,
			       o->start_wall_ns, &o->f.w);
	if (r < 0) {
		/* Retried every flush while the disk is full: say it once. */
		log_msg(rec->write_error_logged ? LOG_DEBUG : LOG_ERR, "Cannot create %s.tmp: %s",
			o->path, strerror(-r));
		rec->write_error_logged = true;
		rec->retry_start_usec = now_usec() + START_RETRY_USEC;
		recfile_reset(o);
		return r;
	}
	r = begin_file(rec, o);
	if (r < 0)
		goto fail;
	o->last_checkpoint_usec = o->start_usec = now_usec();
	rec->seq = o->seq;
	/* Samples that found no file (the disk was full) are this one's loss. */
	filesink_report_dropped(&rec->fsink);
	log_debug("Recording into %s.tmp", o->path);
	return 0;
fail:
	if (r == -EPIPE)
		rec->stdout_gone = true;
	log_msg(rec->write_error_logged || r == -EPIPE ? LOG_DEBUG : LOG_ERR, "Cannot start %s: %s", o->path, strerror(-r));
	rec->write_error_logged = true;
	/* Each attempt walks all of /proc: not on every drain while the disk is full. */
	rec->retry_start_usec = now_usec() + START_RETRY_USEC;
	/*
	 * Ring records drained during synthesis went down with the file:
	 * lost after all, as a refused span's, and reported in the next
	 * file (those still in a stage find no file and are refused there).
	 */
	filesink_lose_file(&rec->fsink, &o->f);
	perfrec_pdwriter__free(o->f.w, true);
	o->f.w = NULL;
	recfile_reset(o);
	set_have_file(rec, false);
	return r;
}

/*
 * Samples a stage took in and never handed on (the unwinder could not
 * rewrite them): lost, as the samples a full disk refuses, reported in
 * the file by a PERF_RECORD_LOST (filesink_report_dropped()).
 */
static void stage_lost(void *owner, size_t ring, uint64_t samples)
{
	struct recorder *rec = owner;

	filesink_lose(&rec->fsink, ring, samples);
}

/* One pass over every ring, without the round: the bytes drained. */
static uint64_t drain_rings(struct recorder *rec)
{
	uint64_t bytes = 0;

	for (size_t i = 0; i < rec->nr_rings; i++)
		bytes += drain_ring(rec->drain, perfrec_evlist__ring(rec->evlist, i), i);
	return bytes;
}

int recorder_drain(struct recorder *rec)
{
	filesink_take_err(&rec->fsink);
	drain_round(rec->drain, drain_rings(rec));
	return filesink_take_err(&rec->fsink);
}

int recorder_flush(struct recorder *rec)
{
	int r = recorder_drain(rec);
	int r2;

	pipeline_sync(rec->pipe);
	r2 = filesink_take_err(&rec->fsink);
	return r ? r : r2;
}

uint64_t recorder_rotation_deadline(const struct recorder *rec)
{
	const struct config *c = rec->cfg;
	uint64_t since;

	if (!rec->have_file || pipeout_enabled(c) || !c->rotate_usec)
		return 0;
	/*
	 * The grid point after the one this file started at.  A file starts
	 * after its rotation's drain and synthesis, a little past its grid
	 * point; counting from there (start + interval) added those delays to
	 * every file.  A file that started more than an interval late (a
	 * stalled disk) ends at the next grid point, not at a missed one.
	 */
	since = rec->cur.start_usec > rec->rotate_anchor_usec ? rec->cur.start_usec - rec->rotate_anchor_usec : 0;
	return rec->rotate_anchor_usec + (since / c->rotate_usec + 1) * c->rotate_usec;
}

bool recorder_rotation_due(const struct recorder *rec, uint64_t now)
{
	const struct config *c = rec->cfg;
	uint64_t deadline;
	bool full;

	if (!rec->have_file || pipeout_enabled(c))
		return false;
	full = c->rotate_bytes && perfrec_pdwriter__data_size(rec->cur.f.w) >= c->rotate_bytes;
	if (full)
		return true;
	deadline = recorder_rotation_deadline(rec);
	return deadline && now >= deadline;
}

static struct retention_opts retention_opts_of(const struct config *c)
{
	return (struct retention_opts){
		.dir = c->directory, .prefix = c->prefix, .max_files = c->max_files,
		.max_bytes = c->max_bytes, .max_bytes_percent = c->max_bytes_percent,
		.max_age_usec = c->max_age_usec,
		.min_free = c->min_free, .min_free_percent = c->min_free_percent,
	};
}

/* Retention over the published files; the file in progress is never a candidate. */
static void apply_retention(struct recorder *rec, const char *just_published)
{
	const char *keep[] = { just_published, NULL };
	const struct config *c = rec->cfg;
	struct retention_opts ro = retention_opts_of(c);
	bool disk_limit = c->max_bytes || c->max_bytes_percent || c->min_free || c->min_free_percent;

	if (!c->max_files && !disk_limit && !c->max_age_usec)
		return;
	if (rec->uploader) {
		/* Not-yet-uploaded files survive count and age limits; only the
		 * disk limit may take them (uploader_forget_missing counts that). */
		char **pending = uploader_pending(rec->uploader);

		ro.max_bytes = ro.min_free = 0;
		ro.max_bytes_percent = ro.min_free_percent = 0;
		if (pending && (ro.max_files || ro.max_age_usec)) {
			/* just_published is in the queue already. */
			retention_apply(&ro, (const char *const *)pending);
		}
		for (size_t i = 0; pending && pending[i]; i++)
			free(pending[i]);
		free(pending);
		ro = retention_opts_of(c);
		ro.max_files = ro.max_age_usec = 0;
		if (disk_limit)
			retention_apply(&ro, keep);
		uploader_forget_missing(rec->uploader);
		return;
	}
	retention_apply(&ro, keep);
}

/*
 * The manifest reads a published file back for its hash: ~0.7 s for a
 * 1 GiB file, longer than a ring lasts at high rates.  The rings keep
 * going into the file being recorded meanwhile (rotation publishes the old
 * file after the new one starts); with none (shutdown, recovery at start)
 * there is nothing to drain into and the rings wait.
 */
static void drain_while_hashing(void *ctx)
{
	struct recorder *rec = ctx;

	if (rec->have_file)
		recorder_drain(rec);
}

/* The manifest of @o, hashed from @data_path; frequency is what the events run at now. */
static int write_manifest(struct recorder *rec, const char *path, const char *data_path,
			  const struct recfile *o, uint64_t end_ns)
{
	struct manifest_info mi = {
		.path = path, .data_path = data_path, .host = rec->hostname, .cfg = rec->cfg,
		.start_wall_ns = o->start_wall_ns, .end_wall_ns = end_ns,
		.samples = o->f.samples, .lost = o->f.lost, .dropped = o->f.dropped,
		.freq = rec->cur_freq,
		.freq_min = o->freq_min ? o->freq_min : rec->cur_freq,
		.freq_max = o->freq_max ? o->freq_max : rec->cur_freq,
		.cgroups = o->cgroups,
		.progress = drain_while_hashing, .progress_ctx = rec,
	};
	const struct unwind_sink_stats *u0 = &o->unwind_start, *u1 = &o->unwind_end;
	struct manifest_unwind mu = {
		.samples = u1->unwinder.samples - u0->unwinder.samples,
		.unwound = u1->unwinder.unwound - u0->unwinder.unwound,
		.behind = u1->behind - u0->behind,
		.dropped = u1->unwinder.dropped - u0->unwinder.dropped,
		.trimmed = u1->trimmed - u0->trimmed,
		.trim_missed = u1->trim_missed - u0->trim_missed,
	};
	struct manifest_cpu *cpus = NULL;
	int r;

	if (o->unwound)
		mi.unwind = &mu;

	if (o->f.cpu && (cpus = calloc(rec->nr_rings, sizeof(*cpus)))) {
		for (size_t i = 0; i < rec->nr_rings; i++) {
			cpus[i].cpu = perfrec_evlist__ring_cpu(rec->evlist, i);
			cpus[i].samples = o->f.cpu[i].samples;
			cpus[i].lost = o->f.cpu[i].lost + o->f.cpu[i].lost_samples;
			cpus[i].dropped = o->f.cpu[i].dropped;
		}
		mi.cpus = cpus;
		mi.nr_cpus = rec->nr_rings;
	}
	r = manifest_write(&mi);
	free(cpus);
	return r;
}

/* What follows a publication: upload, retention, the on-rotate hook. */
static void recorder_after_publish(struct recorder *rec, const char *path, const struct recfile *o,
				   bool recovered)
{
	struct hook_info hi = {
		.path = path, .host = rec->hostname, .start_wall_ns = o ? o->start_wall_ns : 0,
		.end_wall_ns = recording_clock_ns(CLOCK_REALTIME), .samples = o ? o->f.samples : 0,
		.lost = o ? o->f.lost : 0, .recovered = recovered,
	};

	rec->files_published++;
	uploader_enqueue(rec->uploader, path);
	apply_retention(rec, path);
	if (rec->cfg->on_rotate)
		hook_run(rec->cfg->on_rotate, &hi);
}

/* A file leftovers.c published (it has no counts of its own). */
static void leftover_published(void *userdata, const char *path, bool recovered)
{
	recorder_after_publish(userdata, path, NULL, recovered);
}

int recorder_recover_leftovers(struct recorder *rec)
{
	struct leftovers lo = {
		.cfg = rec->cfg, .hostname = rec->hostname, .argc = rec->argc, .argv = rec->argv,
		.published = leftover_published, .userdata = rec,
	};
	int r = leftovers_recover(&lo);

	rec->leftovers_pending = lo.pending;
	return r;
}

/*
 * Publication is a small transaction, so that a file with its final name
 * always has its manifest beside it: the manifest is written (durably) from
 * the finished "NAME.tmp" first, then the data file is renamed to NAME.  A
 * crash between the two leaves NAME.json beside a finished NAME.tmp, which
 * the next start completes (complete_publication()).  If the manifest
 * cannot be written (a full disk), the file stays NAME.tmp and is recovered
 * by the next start: nothing is published without its manifest.
 */
int recorder_publish(struct recorder *rec, struct perfrec_pdwriter *w, const char *path,
		     const struct recfile *o)
{
	char *tmp = NULL;
	int r;

	if (asprintf(&tmp, "%s.tmp", path) < 0)
		return -ENOMEM;
	r = write_manifest(rec, path, tmp, o, recording_clock_ns(CLOCK_REALTIME));
	free(tmp);
	if (r < 0)
		return log_error_errno(r, "Cannot write the manifest of %s: %s; the file stays %s.tmp "
				       "until it can be published", path, strerror(-r), path);
	r = perfrec_pdwriter__publish(w);
	if (r < 0) {
		/* The manifest without its file is completed or undone at the next start. */
		return log_error_errno(r, "Cannot publish %s: %s", path, strerror(-r));
	}
	recorder_after_publish(rec, path, o, false);
	return 0;
}

/*
 * The free-space floor (min-free), measured this often: below it,
 * retention removes the oldest published files first; if that is not
 * enough (someone else fills the disk), records are dropped and counted as
 * lost, as on a full disk (the file sink refuses them: file_admit()),
 * until there is space again.
 */
#define FLOOR_CHECK_USEC 100000

static void check_floor(struct recorder *rec, uint64_t now)
{
	struct retention_opts ro = retention_opts_of(rec->cfg);
	uint64_t avail = 0, floor = 0;
	int r;

	if (pipeout_enabled(rec->cfg) || rec->flight ||
	    now - rec->floor_check_usec < FLOOR_CHECK_USEC)
		return;
	rec->floor_check_usec = now;
	r = retention_below_floor(&ro, &avail, &floor);
	if (r > 0) {
		apply_retention(rec, NULL);
		r = retention_below_floor(&ro, &avail, &floor);
	}
	if (r < 0 || (r > 0) == rec->below_floor)
		return;
	rec->below_floor = r > 0;
	if (rec->below_floor)
		log_error("%s has %" PRIu64 " bytes free, below min-free (%" PRIu64 " bytes), even without "
			  "the published files retention may remove: dropping data until there is space again "
			  "(counted as lost)",
			  rec->cfg->directory, avail, floor);
	else
		log_notice("%s has space above min-free again: recording into it again", rec->cfg->directory);
}

int recorder_maybe_checkpoint(struct recorder *rec, uint64_t now)
{
	int r;

	check_floor(rec, now);
	if (!rec->have_file || now - rec->cur.last_checkpoint_usec < rec->cfg->checkpoint_usec)
		return 0;
	rec->cur.last_checkpoint_usec = now;
	r = perfrec_pdwriter__checkpoint(rec->cur.f.w);
	if (r < 0)
		return recorder_note_write(rec, r);
	/* Files the full disk left unfinished are published now, not at the next start. */
	retry_stalled(rec);
	if (write_ok(rec, rec->cur.path))
		recorder_recover_leftovers(rec);
	return r;
}

/*
 * A file whose finish or publication failed (a full disk) is not given up:
 * its writer stays open with the bytes the disk has not taken yet, and
 * retry_stalled() finishes and publishes it once writes succeed again, so
 * nothing it holds is lost.  One is kept; a second one while the first
 * still waits, or one left at exit, is abandoned to recovery (its .tmp
 * holds everything up to its last checkpoint).
 */
static void abandon_file(struct recorder *rec, struct recfile *o)
{
	log_error("Giving up on finishing %s: what was recorded into it after its last checkpoint "
		  "(of %" PRIu64 " samples) may be lost; %s.tmp is recovered once writes succeed, "
		  "or at the next start", o->path, o->f.samples, o->path);
	recfile_reset(o);
}

static void stall_file(struct recorder *rec, struct recfile *o)
{
	if (rec->have_stalled) {
		abandon_file(rec, o);
		return;
	}
	rec->stalled = *o;
	memset(o, 0, sizeof(*o));
	rec->have_stalled = true;
}

static int publish_finished(struct recorder *rec, struct recfile *o);

/* Finish and publish the stalled file; 0 when done (or none), else -errno. */
static int retry_stalled(struct recorder *rec)
{
	struct recfile *o = &rec->stalled;
	int r;

	if (!rec->have_stalled)
		return 0;
	r = perfrec_pdwriter__finish(o->f.w);
	if (r == 0)
		r = publish_finished(rec, o);
	if (r < 0)
		return r;
	rec->have_stalled = false;
	recfile_reset(o);
	return 0;
}

/* Publish a finished file (recorder_publish()) and log it. */
static int publish_finished(struct recorder *rec, struct recfile *o)
{
	int r = recorder_publish(rec, o->f.w, o->path, o);

	if (r < 0)
		return r;
	log_info("Wrote %s: %" PRIu64 " samples, %" PRIu64 " lost, %" PRIu64 " bytes of records",
		 o->path, o->f.samples, o->f.lost, o->f.bytes);
	for (size_t i = 0; i < rec->nr_rings; i++)
		log_debug("  CPU %d: %" PRIu64 " samples, %" PRIu64 " lost",
			  perfrec_evlist__ring_cpu(rec->evlist, i), o->f.cpu[i].samples,
			  o->f.cpu[i].lost + o->f.cpu[i].lost_samples);
	return 0;
}

/*
 * Finish the current file and publish it, or, given @ret_finished, leave
 * the publication to the caller with the finished file's outfile moved
 * there (path NULL if nothing was finished).
 */
struct outfile_features_opts recorder_features_opts(const struct recorder *rec)
{
	const struct recfile *o = &rec->cur;

	return (struct outfile_features_opts){
		.sz = sizeof(struct outfile_features_opts), .what = o->path,
		.clock_ns = o->start_clock_ns, .wall_ns = o->start_wall_ns,
		.first_sample_time = o->f.track.first_time, .last_sample_time = o->f.track.last_time,
		.buildids = rec->buildids,
	};
}

int recorder_checkpoint(struct recorder *rec, char **ret_tmp)
{
	int r;

	if (!rec->have_file)
		return -ENODATA;
	/* A copy holds what was drained so far: written, not on its way. */
	pipeline_sync(rec->pipe);
	r = perfrec_pdwriter__checkpoint(rec->cur.f.w);
	if (r < 0)
		return r;
	if (asprintf(ret_tmp, "%s.tmp", rec->cur.path) < 0)
		return -ENOMEM;
	return 0;
}

static int finish_file(struct recorder *rec, char **ret_path, struct recfile *ret_finished)
{
	struct recfile *o = &rec->cur;
	struct outfile_source src = recorder_source(rec, PIPELINE_FILE);
	struct outfile_features_opts eo;
	int r;

	if (!rec->have_file)
		return -ENOENT;
	recorder_drain(rec);
	/* Everything drained for this file is in it before it ends. */
	pipeline_sync(rec->pipe);
	/* (samples a stage reported lost meanwhile are this file's) */
	filesink_report_dropped(&rec->fsink);
	pipeline_unwind_stats(rec->pipe, &o->unwind_end);
	/* before the build-id table is written: the images it names are in the cache */
	jitsink_file_end(&rec->jit);
	offcpu_rec_write(rec->offcpu, o->f.w, o->path, recording_clock_ns(rec->cfg->clockid));
	eo = recorder_features_opts(rec);
	outfile_add_features(&src, o->f.w, &eo);
	r = perfrec_pdwriter__finish(o->f.w);
	pipeout_note_compression(o->f.w, o->path, &rec->compress);
	if (pipeout_enabled(rec->cfg)) {
		log_info("Wrote the stream to stdout: %" PRIu64 " samples, %" PRIu64 " lost, %" PRIu64
			 " bytes of records%s", o->f.samples, o->f.lost, o->f.bytes, r < 0 ? " (cut short)" : "");
		recfile_reset(o);
		set_have_file(rec, false);
		/* The reader leaving (EPIPE) ends a stream; it is not a recording failure. */
		return r == -EPIPE ? 0 : r;
	}
	if (r < 0) {
		log_msg(rec->write_error_logged ? LOG_DEBUG : LOG_ERR,
			"Cannot finish %s: %s; it stays %s.tmp and is finished once writes succeed again",
			o->path, strerror(-r), o->path);
		rec->write_error_logged = true;
		set_have_file(rec, false);
		stall_file(rec, o);
		return r;
	}
	write_ok(rec, o->path);
	set_have_file(rec, false);
	if (ret_path) {
		*ret_path = strdup(o->path);
		if (!*ret_path)
			log_warning("Out of memory for the name of %s", o->path);
	}
	if (ret_finished) {
		*ret_finished = *o;
		memset(o, 0, sizeof(*o));
		return 0;
	}
	r = publish_finished(rec, o);
	if (r < 0)
		stall_file(rec, o);
	recfile_reset(o);
	return r;
}

int recorder_finish_file(struct recorder *rec, char **ret_path)
{
	int r = finish_file(rec, ret_path, NULL);

	retry_stalled(rec);
	return r;
}

int recorder_rotate(struct recorder *rec, char **ret_path)
{
	/*
	 * Everything the rings hold when this time is taken goes to the old
	 * file (finish drains them); whatever the kernel writes afterwards is
	 * newer than the new file's synthesized state.  The rings are only
	 * read again once the new file is ready, so no record is lost or
	 * written twice.
	 */
	struct recorder_stamp t = recorder_stamp(rec);
	struct recfile finished = { 0 };
	int r;

	/*
	 * Between the old file's last drain and the new file's first the
	 * rings only fill, so what can wait does: the old file's publication
	 * (its manifest reads all of it back for its hash, draining into the
	 * new file meanwhile), upload, retention and on-rotate hook follow
	 * once the new file records.
	 */
	r = finish_file(rec, ret_path, &finished);
	if (r < 0 && r != -ENOENT)
		log_warning("Rotation: the previous file was not published cleanly");
	r = recorder_start_file(rec, &t);
	if (finished.path && publish_finished(rec, &finished) < 0)
		stall_file(rec, &finished);
	recfile_reset(&finished);
	return r;
}

void recorder_close(struct recorder *rec)
{
	if (rec->have_stalled)
		abandon_file(rec, &rec->stalled);
	/* Its stages borrow the events' attrs and the sinks: first. */
	pipeline_free(rec->pipe);
	rec->pipe = NULL;
	if (rec->have_file) {
		perfrec_pdwriter__free(rec->cur.f.w, false);
		rec->cur.f.w = NULL;
		recfile_reset(&rec->cur);
	}
	offcpu_rec_close(rec->offcpu);
	pytrack_free(rec->pytrack);
	/* The stages that took walks are gone; the events close below. */
	pywalk_free(rec->py);
	drain_free(rec->drain);
	perfrec_bpfmeta__free(rec->bpfmeta);
	perfrec_evlist__free(rec->evlist);
	perfrec_buildid_table__free(rec->buildids);
	perfrec_cpumap__free(rec->cpus);
	free(rec->specs);
	filesink_exit(&rec->fsink);
	jitsink_exit(&rec->jit);
	memset(rec, 0, sizeof(*rec));
}
