// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The record object: the whole job of a recording behind start and stop,
 * on the same lower layer perfrecd drives (evlist for the events and rings,
 * outfile for beginning and ending its files as perfrecd begins and ends
 * its outputs, pdwriter with tracking for the file, its build ids and
 * sample times) and through the same drain (drain.h): the object is that
 * drain with one file sink, perfrecd's (filesink.h).
 * The drain walks and repairs the records, the file sink writes each pass
 * into the pdwriter followed by FINISHED_ROUND.  One drain thread per
 * recording polls the rings; a mutex makes the drain, rotate, snapshot and
 * stop take turns on the writer and the rings, which are not thread-safe
 * themselves.
 *
 * With unwind_host the file sink sits behind the host unwinding stage
 * (unwind-stage.h) instead of on the drain, as perfrecd's file does with
 * unwind=host: DWARF samples go to its worker and come back as callchain
 * samples, emitted on the drain thread at a later pass; before a file ends
 * or is copied the stage is synced (flush()), so each file holds exactly
 * what was drained for it, unwound.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <perfrec/event.h>
#include <perfrec/hostinfo.h>
#include <perfrec/pdwriter.h>
#include <perfrec/record.h>
#include <perfrec/synth.h>

#include "drain.h"
#include "filesink.h"
#include "outfile.h"
#include "unwind-stage.h"

#define DEFAULT_EVENTS "cpu-clock"
#define MAX_EVENTS 32
/* A pass at least this often even when no watermark woke us. */
#define POLL_MS 100
#define COPY_BUF (256u * 1024)

struct perfrec_record {
	struct perfrec_evlist *el;
	struct filesink_file file;   /* the file being written (w NULL: none, a rotate failed) */
	char *path;

	int clockid;                 /* -1: the perf clock */
	uint64_t start_clock_ns, start_wall_ns;
	uint64_t sideband_type;      /* side-band attr sample_type, for synthesis */
	uint64_t sideband_id;
	uint32_t *pids;              /* the processes synthesized; NULL: all */
	size_t nr_pids;
	bool synth_all;
	int compress_level;
	uint32_t stack_user;         /* DWARF callchains: user stack bytes per sample (0: none) */
	bool unwind_host;

	/* with unwind_host: the stage the file sink sits behind (NULL: on the drain) */
	struct unwind_stage *unwind;
	struct unwind_sink_stats unwind_start; /* its counters when the current file began */

	char *program;
	int argc;
	char **argv;
	perfrec_record_msg_fn msg;
	void *msg_ctx;

	struct drain *drain;
	struct filesink fsink;       /* the drain's only sink: ring bytes into file */
	int pass_err;                /* the first failed write into the file in this pass */

	pthread_mutex_t lock;        /* the writer and the rings */
	pthread_t thread;
	bool thread_started;
	int stop_fd;                 /* eventfd: the drain thread ends */
	int err;                     /* first drain error, under lock */
};

static void say(const struct perfrec_record *r, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void say(const struct perfrec_record *r, int err, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	if (!r->msg)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	r->msg(r->msg_ctx, err, buf);
}

/*
 * libbpf's rule: fields past an older struct's sz take defaults; bytes past
 * ours must be zero, or the caller asks for something we cannot do.
 */
static int check_opts(const struct perfrec_record_opts *o)
{
	const unsigned char *p = (const unsigned char *)o;

	if (!o)
		return 0;
	if (o->sz < sizeof(size_t))
		return -EINVAL;
	for (size_t i = sizeof(*o); i < o->sz; i++)
		if (p[i])
			return -E2BIG;
	return 0;
}

static const struct {
	const char *name;
	int clockid;
} clocks[] = {
	{ "monotonic", CLOCK_MONOTONIC },
	{ "monotonic_raw", CLOCK_MONOTONIC_RAW },
	{ "boottime", CLOCK_BOOTTIME },
	{ "realtime", CLOCK_REALTIME },
	{ "tai", CLOCK_TAI },
	{ "perf", -1 },
};

static int parse_clock(const char *name, int *ret)
{
	if (!name) {
		*ret = CLOCK_MONOTONIC;
		return 0;
	}
	for (size_t i = 0; i < sizeof(clocks) / sizeof(clocks[0]); i++)
		if (!strcmp(clocks[i].name, name)) {
			*ret = clocks[i].clockid;
			return 0;
		}
	return -EINVAL;
}

static uint64_t now_ns(int clockid)
{
	struct timespec ts;

	if (clockid < 0 || clock_gettime(clockid, &ts) < 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int parse_events(struct perfrec_record *r, const char *list, struct perfrec_evspec *specs,
			size_t *ret_nr)
{
	char *copy = strdup(list ? list : DEFAULT_EVENTS), *save = NULL, *tok;
	size_t nr = 0;
	int e = 0;

	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char why[160] = "";

		if (nr == MAX_EVENTS) {
			say(r, -E2BIG, "more than %d events", MAX_EVENTS);
			e = -E2BIG;
			break;
		}
		e = perfrec_evspec__parse(tok, NULL, &specs[nr], why, sizeof(why));
		if (e < 0) {
			say(r, e, "event \"%s\": %s", tok, *why ? why : strerror(-e));
			break;
		}
		nr++;
	}
	free(copy);
	if (!e && !nr) {
		say(r, -EINVAL, "no event given");
		e = -EINVAL;
	}
	*ret_nr = nr;
	return e;
}

static void open_failed(void *ctx, const char *event, int cpu, int err)
{
	struct perfrec_record *r = ctx;

	say(r, -err, "%s on CPU %d: %s%s", event, cpu, strerror(err),
	    err == EACCES || err == EPERM ?
	    " (kernel.perf_event_paranoid, or CAP_PERFMON missing)" : "");
}

/* The thread group of @tid, from /proc/<tid>/status. */
static int tgid_of(int32_t tid, uint32_t *ret)
{
	char path[64], line[256];
	FILE *f;
	int e = -ESRCH;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	f = fopen(path, "re");
	if (!f)
		return -ESRCH;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %u", ret) == 1) {
			e = 0;
			break;
		}
	fclose(f);
	return e;
}

/*
 * The processes whose state goes into the file: the target's, and all for
 * the whole host or a cgroup (whose members can come from anywhere).
 */
static int target_pids(struct perfrec_record *r, const struct perfrec_evlist_opts *eo)
{
	switch (eo->target) {
	case PERFREC_TARGET_PROCESS:
		r->pids = malloc(sizeof(*r->pids));
		if (!r->pids)
			return -ENOMEM;
		r->pids[0] = (uint32_t)eo->pid;
		r->nr_pids = 1;
		return 0;
	case PERFREC_TARGET_THREADS:
		r->pids = calloc(eo->nr_tids, sizeof(*r->pids));
		if (!r->pids)
			return -ENOMEM;
		for (size_t i = 0; i < eo->nr_tids; i++) {
			uint32_t tg;

			/* A thread that is gone is refused by the open anyway. */
			if (tgid_of(eo->tids[i], &tg) < 0)
				continue;
			r->pids[r->nr_pids++] = tg;
		}
		return 0;
	default:
		r->synth_all = true;
		return 0;
	}
}

/* What the record object's files begin with and end with (outfile.h). */
static void outfile_said(void *ctx, int level, const char *msg)
{
	say(ctx, 0, "%s", msg);
}

static const struct outfile_hooks record_hooks = { .say = outfile_said };

static struct outfile_source source_of(struct perfrec_record *r)
{
	return (struct outfile_source){
		.evlist = r->el, .hooks = &record_hooks, .hooks_ctx = r,
		.pids = r->pids, .nr_pids = r->nr_pids, .only_pids = !r->synth_all,
		.program = r->program, .argc = r->argc, .argv = r->argv, .clockid = r->clockid,
		.sideband_sample_type = r->sideband_type, .sideband_id = r->sideband_id,
		.data_maps = r->stack_user != 0, .unwound = r->unwind != NULL,
	};
}

/*
 * A synthesized record of a new file: the unwinder learns the state from
 * it too (the stage is idle: flush() ran, or nothing was drained yet).
 * The maps of data segments are the unwinder's only, as the stage leaves
 * the drained ones out: readers of an unwound file unwind nothing.
 */
static int synth_emit(void *ctx, const struct perf_event_header *h)
{
	struct perfrec_record *r = ctx;

	if (r->unwind && h->type < PERF_RECORD_MAX) {
		unwind_stage_state(r->unwind, h);
		if (h->type == PERF_RECORD_MMAP2 && (h->misc & PERF_RECORD_MISC_MMAP_DATA))
			return 0;
	}
	return perfrec_pdwriter__write(r->file.w, h, h->size);
}

/*
 * A new file at @path: its writer (tracking build ids and sample times),
 * then the way every output begins (outfile_begin()): attrs, the state
 * before now, FINISHED_INIT.
 */
static int start_file(struct perfrec_record *r, const char *path)
{
	struct outfile_source src = source_of(r);
	struct outfile_begin_opts bo = { .sz = sizeof(bo), .what = path, .emit = synth_emit, .ctx = r };
	int e;

	/* Its counts start over (the sink's totals and losses not yet reported go on). */
	r->file = (struct filesink_file){ 0 };
	e = perfrec_pdwriter__create(path, &r->file.w);
	if (e < 0) {
		say(r, e, "%s.tmp: %s", path, strerror(-e));
		return e;
	}
	free(r->path);
	r->path = strdup(path);
	if (!r->path)
		return -ENOMEM;
	if (r->compress_level) {
		e = perfrec_pdwriter__set_compress(r->file.w, r->compress_level);
		if (e < 0)
			return e;
	}
	e = perfrec_pdwriter__track(r->file.w);
	if (e < 0)
		return e;
	/*
	 * Stamped with the start: every ring record is newer, so readers
	 * apply this state first.  The perf clock cannot be read here; time 0
	 * sorts before everything as well.
	 */
	r->start_wall_ns = now_ns(CLOCK_REALTIME);
	r->start_clock_ns = now_ns(r->clockid);
	bo.time = r->start_clock_ns;
	if (r->unwind)
		unwind_stage_stats(r->unwind, &r->unwind_start);
	return outfile_begin(&src, r->file.w, &bo);
}

/* Features (the writer's tracking adds build ids and sample times), finish, rename.  Frees the writer. */
static int end_file(struct perfrec_record *r)
{
	struct outfile_source src = source_of(r);
	struct outfile_features_opts fo = {
		.sz = sizeof(fo), .what = r->path, .clock_ns = r->start_clock_ns, .wall_ns = r->start_wall_ns,
	};
	int e;

	outfile_add_features(&src, r->file.w, &fo);
	e = perfrec_pdwriter__finish(r->file.w);
	if (e == 0)
		e = perfrec_pdwriter__publish(r->file.w);
	if (e < 0)
		say(r, e, "%s: %s", r->path, strerror(-e));
	perfrec_pdwriter__free(r->file.w, false);
	r->file.w = NULL;
	return e;
}

/*
 * The file sink (filesink.h) writes the drain's bytes into the writer,
 * whose tracking takes the build ids and sample times from them.  With no
 * file (a rotate failed) the bytes are refused and their samples reported
 * lost in the next file; the rings keep flowing.  Every failed write is
 * the pass's error (drain()).
 */
static int file_wrote(void *ctx, int err)
{
	struct perfrec_record *r = ctx;

	if (err < 0 && !r->pass_err)
		r->pass_err = err;
	return err;
}

static const struct filesink_hooks file_hooks = { .wrote = file_wrote };

/* What the drain says (a repair, a corrupt ring) goes to the msg callback. */
static void drain_said(void *ctx, int level, const char *msg)
{
	say(ctx, 0, "%s", msg);
}

/*
 * Samples the stage took in and never handed on (the unwinder could not
 * rewrite them): lost, reported in the file as perfrecd reports them, by
 * a PERF_RECORD_LOST (filesink_lose()).
 */
static void stage_lost(void *ctx, size_t ring, uint64_t samples)
{
	struct perfrec_record *r = ctx;

	filesink_lose(&r->fsink, ring, samples);
}

/* The host unwinding stage on the drain, the file sink behind it (daemon/pipeline.c's place_of()). */
static int open_unwind(struct perfrec_record *r)
{
	struct unwind_stage_opts uo = { .sz = sizeof(uo), .evlist = r->el, .lost = stage_lost, .ctx = r };
	int e;

	e = unwind_stage_new(&uo, &r->unwind);
	if (e < 0) {
		say(r, e, "starting the host unwinder: %s", strerror(-e));
		return e;
	}
	e = drain_add_sink(r->drain, &unwind_stage_stage(r->unwind)->sink);
	if (e == 0)
		e = stage_add_sink(unwind_stage_stage(r->unwind), &r->fsink.sink);
	return e;
}

/* The drain over every ring, its ids, and the file sink (behind the unwinder with unwind_host). */
static int open_drain(struct perfrec_record *r, bool callchain)
{
	const struct perfrec_evsel *sb = perfrec_evlist__evsel(r->el, 0);
	struct drain_opts o = {
		.sz = sizeof(o), .sideband_sample_type = sb->attr.sample_type, .callchain = callchain,
		.log = drain_said, .log_ctx = r,
	};
	struct filesink_opts fo = {
		.sz = sizeof(fo), .evlist = r->el,
		.sideband_sample_type = sb->attr.sample_type, .sideband_id = sb->nr_ids ? sb->ids[0] : 0,
		.sideband_ids = sb->nr_ids == perfrec_evlist__nr_rings(r->el) ? sb->ids : NULL,
		.clockid = r->clockid, .hooks = &file_hooks, .hooks_ctx = r,
	};
	int e;

	r->sideband_type = sb->attr.sample_type;
	r->sideband_id = sb->nr_ids ? sb->ids[0] : 0;
	e = drain_new(&o, &r->drain);
	if (e == 0)
		e = drain_add_evlist(r->drain, r->el);
	if (e == 0)
		e = filesink_init(&r->fsink, &fo);
	if (e < 0)
		return e;
	r->fsink.file = &r->file;
	if (r->unwind_host)
		return open_unwind(r);
	return drain_add_sink(r->drain, &r->fsink.sink);
}

/* One pass over every ring, then the round.  Locked.  The pass's first write error. */
static int drain(struct perfrec_record *r)
{
	uint64_t bytes = 0;
	int e;

	for (size_t i = 0; i < perfrec_evlist__nr_rings(r->el); i++)
		bytes += drain_ring(r->drain, perfrec_evlist__ring(r->el, i), i);
	drain_round(r->drain, bytes);
	e = filesink_take_err(&r->fsink);
	if (!e)
		e = r->pass_err;
	r->pass_err = 0;
	return e;
}

/*
 * A pass, then whatever the unwinding stage still holds of what was
 * drained, into the file: before the file ends, is copied or gives way to
 * the next, so that it holds exactly what was drained for it.  Locked.
 */
static int flush(struct perfrec_record *r)
{
	int e = drain(r), e2;

	if (!r->unwind)
		return e;
	e2 = unwind_stage_sync(r->unwind);
	if (!e2)
		e2 = filesink_take_err(&r->fsink);
	if (!e2)
		e2 = r->pass_err;
	r->pass_err = 0;
	return e ? e : e2;
}

/*
 * What perfrecd counts of falling behind, told for the file that ends:
 * samples the worker was too far behind for kept only their sampled ip
 * (unwind-sink.h); those it could not rewrite are in the file as lost.
 */
static void unwind_note(struct perfrec_record *r)
{
	struct unwind_sink_stats now;

	if (!r->unwind)
		return;
	unwind_stage_stats(r->unwind, &now);
	if (now.behind > r->unwind_start.behind)
		say(r, 0, "%s: %llu samples kept only their sampled ip: the host unwinder fell behind",
		    r->path, (unsigned long long)(now.behind - r->unwind_start.behind));
	if (now.unwinder.dropped > r->unwind_start.unwinder.dropped)
		say(r, 0, "%s: %llu samples the host unwinder could not rewrite, recorded as lost",
		    r->path, (unsigned long long)(now.unwinder.dropped - r->unwind_start.unwinder.dropped));
}

static void note_err(struct perfrec_record *r, int e)
{
	if (e < 0 && !r->err) {
		r->err = e;
		say(r, e, "writing %s.tmp: %s", r->path, strerror(-e));
	}
}

static void *drain_thread(void *arg)
{
	struct perfrec_record *r = arg;
	size_t n = perfrec_evlist__nr_rings(r->el);
	struct pollfd *pfd = calloc(n + 1, sizeof(*pfd));

	if (!pfd) {
		pthread_mutex_lock(&r->lock);
		note_err(r, -ENOMEM);
		pthread_mutex_unlock(&r->lock);
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		pfd[i] = (struct pollfd){ .fd = perfrec_evlist__ring_fd(r->el, i), .events = POLLIN };
	pfd[n] = (struct pollfd){ .fd = r->stop_fd, .events = POLLIN };
	for (;;) {
		int p = poll(pfd, n + 1, POLL_MS);

		if (p < 0 && errno != EINTR)
			break;
		if (pfd[n].revents)
			break;
		/*
		 * A ring of a process target hangs up when every task on it
		 * exited: drain it as usual, but stop polling it or poll()
		 * would return at once forever.
		 */
		for (size_t i = 0; i < n; i++)
			if (pfd[i].revents & (POLLHUP | POLLERR))
				pfd[i].fd = -pfd[i].fd - 1;
		pthread_mutex_lock(&r->lock);
		note_err(r, drain(r));
		pthread_mutex_unlock(&r->lock);
	}
	free(pfd);
	return NULL;
}

static bool on_drain_thread(const struct perfrec_record *r)
{
	return r->thread_started && pthread_equal(pthread_self(), r->thread);
}

static void record_free(struct perfrec_record *r)
{
	if (!r)
		return;
	/* Never published: the .tmp goes, nothing is left behind. */
	perfrec_pdwriter__free(r->file.w, true);
	drain_free(r->drain);
	/* Its worker borrows the events' attrs: stopped before they go. */
	unwind_stage_free(r->unwind);
	filesink_exit(&r->fsink);
	perfrec_evlist__free(r->el);
	if (r->stop_fd >= 0)
		close(r->stop_fd);
	pthread_mutex_destroy(&r->lock);
	for (int i = 0; r->argv && i < r->argc; i++)
		free(r->argv[i]);
	free(r->argv);
	free(r->program);
	free(r->pids);
	free(r->path);
	free(r);
}

static int copy_args(struct perfrec_record *r, const struct perfrec_record_opts *o)
{
	const char *prog = PERFREC_OPTS_GET(o, program, (const char *)NULL);
	int argc = PERFREC_OPTS_GET(o, argc, 0);
	char *const *argv = PERFREC_OPTS_GET(o, argv, (char *const *)NULL);

	r->program = strdup(prog ? prog : program_invocation_short_name);
	if (!r->program)
		return -ENOMEM;
	if (argc <= 0 || !argv)
		return 0;
	r->argv = calloc((size_t)argc + 1, sizeof(*r->argv));
	if (!r->argv)
		return -ENOMEM;
	for (int i = 0; i < argc; i++) {
		r->argv[i] = strdup(argv[i] ? argv[i] : "");
		if (!r->argv[i])
			return -ENOMEM;
		r->argc = i + 1;
	}
	return 0;
}

/*
 * The events @opts asks for, on the CPUs it names, opened (disabled) with
 * their rings into r->el; whether they carry callchains in *ret_callchain.
 * What is wrong is said through the msg callback.
 */
static int open_events(struct perfrec_record *r, const struct perfrec_record_opts *opts,
		       const struct perfrec_evspec *specs, size_t nr_specs, bool *ret_callchain)
{
	struct perfrec_evlist_opts eo = { .sz = sizeof(eo) };
	struct perfrec_cpumap *cpus = NULL;
	const char *cpulist;
	int e;

	cpulist = PERFREC_OPTS_GET(opts, cpus, (const char *)NULL);
	e = cpulist ? perfrec_cpumap__parse(cpulist, &cpus) : perfrec_cpumap__read(NULL, &cpus);
	if (e < 0) {
		say(r, e, cpulist ? "CPU list \"%s\": %s" : "%sonline CPUs: %s", cpulist ? cpulist : "",
		    strerror(-e));
		goto out;
	}

	eo.freq = PERFREC_OPTS_GET(opts, freq, (uint64_t)0);
	eo.period = PERFREC_OPTS_GET(opts, period, (uint64_t)0);
	if (!eo.freq && !eo.period)
		eo.freq = 1000;
	eo.callchain = PERFREC_OPTS_GET(opts, callchain, false);
	eo.stack_user = r->stack_user;
	eo.clockid = r->clockid;
	eo.mmap_pages = PERFREC_OPTS_GET(opts, mmap_pages, (size_t)0);
	eo.target = PERFREC_OPTS_GET(opts, target, PERFREC_TARGET_CPUS);
	eo.pid = PERFREC_OPTS_GET(opts, pid, 0);
	if (eo.target == PERFREC_TARGET_PROCESS && !eo.pid)
		eo.pid = getpid();
	eo.tids = PERFREC_OPTS_GET(opts, tids, (const int32_t *)NULL);
	eo.nr_tids = PERFREC_OPTS_GET(opts, nr_tids, (size_t)0);
	eo.cgroup = PERFREC_OPTS_GET(opts, cgroup, (const char *)NULL);
	e = perfrec_evlist__new(cpus, specs, nr_specs, &eo, &r->el);
	if (e < 0 && (eo.target < PERFREC_TARGET_CPUS || eo.target > PERFREC_TARGET_CGROUP)) {
		say(r, e, "target %d: not one of PERFREC_TARGET_*", eo.target);
		goto out;
	}
	if (e < 0) {
		int max = perfrec_evlist__max_sample_rate();

		if (eo.freq && max > 0 && eo.freq > (uint64_t)max)
			say(r, e, "frequency %llu above kernel.perf_event_max_sample_rate (%d)",
			    (unsigned long long)eo.freq, max);
		else
			say(r, e, "bad target, ring size (%zu pages, a power of 2) or sampling options",
			    eo.mmap_pages);
		goto out;
	}
	e = target_pids(r, &eo);
	if (e < 0)
		goto out;
	e = perfrec_evlist__open(r->el, open_failed, r);
	if (e < 0) {
		if (e == -ESRCH)
			say(r, e, "process %d: no such process", (int)eo.pid);
		else if (e == -ENOENT && eo.target == PERFREC_TARGET_CGROUP)
			say(r, e, "cgroup %s: %s", eo.cgroup, strerror(-e));
		goto out;
	}
	*ret_callchain = eo.callchain;
out:
	perfrec_cpumap__free(cpus);
	return e;
}

/*
 * DWARF callchains and host unwinding, checked before anything opens.
 * unwind_host is refused without DWARF stacks rather than implying them,
 * as perfrecd refuses unwind=host without callchain=dwarf: the stack size
 * is a cost the caller chooses.
 */
static int read_stack_opts(struct perfrec_record *r, const struct perfrec_record_opts *opts)
{
	bool callchain = PERFREC_OPTS_GET(opts, callchain, false);

	r->stack_user = PERFREC_OPTS_GET(opts, stack_user, (uint32_t)0);
	r->unwind_host = PERFREC_OPTS_GET(opts, unwind_host, false);
	if (r->stack_user && (r->stack_user % 8 || r->stack_user > PERFREC_STACK_USER_MAX)) {
		say(r, -EINVAL, "stack_user %u: not a multiple of 8 up to %u", r->stack_user,
		    PERFREC_STACK_USER_MAX);
		return -EINVAL;
	}
	if (r->stack_user && !callchain) {
		say(r, -EINVAL, "stack_user %u asks for DWARF callchains: it needs callchain", r->stack_user);
		return -EINVAL;
	}
	if (r->unwind_host && (!callchain || !r->stack_user)) {
		say(r, -EINVAL, "unwind_host unwinds DWARF stacks: it needs callchain and stack_user "
		    "(DWARF callchains, as perf record --call-graph dwarf)");
		return -EINVAL;
	}
	return 0;
}

int perfrec_record__start(const char *path, const struct perfrec_record_opts *opts,
			  struct perfrec_record **ret_record)
{
	struct perfrec_evspec specs[MAX_EVENTS];
	struct perfrec_record *r;
	const char *clock;
	size_t nr_specs = 0;
	bool callchain = false;
	int e;

	if (!path || !*path || !ret_record)
		return -EINVAL;
	e = check_opts(opts);
	if (e < 0) {
		/* The callback itself may be among the bytes not understood: stay quiet. */
		return e;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->stop_fd = -1;
	pthread_mutex_init(&r->lock, NULL);
	r->msg = PERFREC_OPTS_GET(opts, msg, (perfrec_record_msg_fn)NULL);
	r->msg_ctx = PERFREC_OPTS_GET(opts, msg_ctx, (void *)NULL);
	r->compress_level = PERFREC_OPTS_GET(opts, compress_level, 0);
	if (r->compress_level < 0 || r->compress_level > 19) {
		say(r, -EINVAL, "compress_level %d: not 0..19", r->compress_level);
		e = -EINVAL;
		goto fail;
	}
	clock = PERFREC_OPTS_GET(opts, clock, (const char *)NULL);
	e = parse_clock(clock, &r->clockid);
	if (e < 0) {
		say(r, e, "clock \"%s\": not monotonic, monotonic_raw, boottime, realtime, tai or perf", clock);
		goto fail;
	}
	e = read_stack_opts(r, opts);
	if (e < 0)
		goto fail;
	e = copy_args(r, opts);
	if (e < 0)
		goto fail;
	e = parse_events(r, PERFREC_OPTS_GET(opts, events, (const char *)NULL), specs, &nr_specs);
	if (e < 0)
		goto fail;

	e = open_events(r, opts, specs, nr_specs, &callchain);
	if (e < 0)
		goto fail;
	e = open_drain(r, callchain);
	if (e < 0)
		goto fail;

	e = start_file(r, path);
	if (e < 0)
		goto fail;
	r->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (r->stop_fd < 0) {
		e = -errno;
		goto fail;
	}
	e = perfrec_evlist__enable(r->el);
	if (e < 0) {
		say(r, e, "enabling the events: %s", strerror(-e));
		goto fail;
	}
	e = -pthread_create(&r->thread, NULL, drain_thread, r);
	if (e < 0)
		goto fail;
	r->thread_started = true;
	*ret_record = r;
	return 0;
fail:
	record_free(r);
	return e;
}

int perfrec_record__stop(struct perfrec_record *r)
{
	uint64_t one = 1;
	int e, e2;

	if (!r)
		return -EINVAL;
	if (on_drain_thread(r))
		return -EDEADLK;
	if (write(r->stop_fd, &one, sizeof(one)) < 0)
		return -errno;
	pthread_join(r->thread, NULL);
	r->thread_started = false;

	e = perfrec_evlist__disable(r->el);
	pthread_mutex_lock(&r->lock);
	if (r->file.w) {
		/* What the events wrote before they were disabled. */
		note_err(r, flush(r));
		unwind_note(r);
		e2 = end_file(r);
		if (!e)
			e = e2;
	}
	if (r->err)
		e = r->err;
	pthread_mutex_unlock(&r->lock);
	record_free(r);
	return e;
}

int perfrec_record__rotate(struct perfrec_record *r, const char *new_path)
{
	int e, e2;

	if (!r || !new_path || !*new_path)
		return -EINVAL;
	if (on_drain_thread(r))
		return -EDEADLK;
	pthread_mutex_lock(&r->lock);
	note_err(r, flush(r));
	/* No file after a failed rotate: only the new one to start. */
	if (r->file.w)
		unwind_note(r);
	e = r->file.w ? end_file(r) : 0;
	/* The events still run: a new file takes them whatever became of the old one. */
	e2 = start_file(r, new_path);
	if (e2 < 0) {
		say(r, e2, "starting %s: %s", new_path, strerror(-e2));
		perfrec_pdwriter__free(r->file.w, true);
		r->file.w = NULL;
		if (!e)
			e = e2;
	}
	r->err = 0;
	pthread_mutex_unlock(&r->lock);
	return e;
}

/* Copy the data section written so far (on file since the checkpoint) into @to. */
static int copy_data(struct perfrec_record *r, struct perfrec_pdwriter *to)
{
	struct perfrec_file_header fh;
	unsigned char *buf;
	uint64_t off, left;
	char self[64];
	int fd, e = 0;

	/* The writer's fd is write-only: read the same file through another. */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", perfrec_pdwriter__fd(r->file.w));
	fd = open(self, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	buf = malloc(COPY_BUF);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	if (pread(fd, &fh, sizeof(fh), 0) != (ssize_t)sizeof(fh))
		e = -EIO;
	off = fh.data.offset;
	left = e ? 0 : fh.data.size;
	while (left && !e) {
		size_t want = left < COPY_BUF ? (size_t)left : COPY_BUF;
		ssize_t n = pread(fd, buf, want, (off_t)off);

		if (n <= 0) {
			e = n < 0 ? -errno : -EIO;
			break;
		}
		e = perfrec_pdwriter__write(to, buf, (size_t)n);
		off += (uint64_t)n;
		left -= (uint64_t)n;
	}
	free(buf);
	close(fd);
	return e;
}

int perfrec_record__snapshot(struct perfrec_record *r, const char *path)
{
	struct perfrec_pdwriter *cur;
	int e;

	if (!r || !path || !*path)
		return -EINVAL;
	if (on_drain_thread(r))
		return -EDEADLK;
	/* Compressed data would need its frames' feature: not copied. */
	if (r->compress_level)
		return -EOPNOTSUPP;
	pthread_mutex_lock(&r->lock);
	cur = r->file.w;
	if (!cur) {
		e = -EBADFD;
		goto out;
	}
	note_err(r, flush(r));
	/* Everything so far on the file, the header saying how much. */
	e = perfrec_pdwriter__checkpoint(cur);
	if (e < 0)
		goto out;
	e = perfrec_pdwriter__create(path, &r->file.w);
	if (e < 0) {
		r->file.w = cur;
		say(r, e, "%s.tmp: %s", path, strerror(-e));
		goto out;
	}
	e = perfrec_pdwriter__track(r->file.w);
	if (e == 0) {
		struct outfile_source src = source_of(r);

		e = outfile_add_attrs(&src, r->file.w);
	}
	if (e == 0) {
		struct perfrec_pdwriter *copy = r->file.w;

		r->file.w = cur;
		e = copy_data(r, copy);
		r->file.w = copy;
	}
	if (e == 0) {
		char *keep = r->path;

		r->path = (char *)path;
		e = end_file(r);
		r->path = keep;
	} else {
		perfrec_pdwriter__free(r->file.w, true);
	}
	r->file.w = cur;
out:
	pthread_mutex_unlock(&r->lock);
	return e;
}
