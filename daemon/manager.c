// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * perfrecd's event loop.  Ring fds wake us when a ring passes its
 * watermark; a periodic timer drains anyway so that data reaches the disk
 * within flush-interval even on an idle host; signals arrive through a
 * signalfd so that handlers never run in the middle of a drain.
 */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <systemd/sd-daemon.h>
#include <inttypes.h>
#include <unistd.h>

#include "bidcache.h"
#include "control.h"
#include "dirlock.h"
#include "governor.h"
#include "hook.h"
#include "log.h"
#include "manager.h"
#include "metrics.h"
#include "offcpu-rec.h"
#include "pipeout.h"
#include "privs.h"
#include "safename.h"
#include "snapshot.h"
#include "upload.h"

enum { TAG_SIGNAL = -1, TAG_TIMER = -2, TAG_CONTROL = -3 };
enum { TAG_METRICS = -16 };

/* systemctl status shows STATUS=; refreshing it costs one datagram. */
#define STATUS_INTERVAL_USEC (5 * 1000000ULL)

static int watch_rings(struct manager *m, int op);

/* The output directory's lock, or a refusal that names who holds it. */
static int lock_directory(const char *dir, int *ret_fd)
{
	pid_t holder;
	int r = dirlock_take(dir, ret_fd, &holder);

	if (r == -EBUSY && holder > 0)
		return log_error_errno(r, "Output directory %s is in use by another perfrecd (PID %d); "
				       "one recorder per directory", dir, (int)holder);
	if (r == -EBUSY)
		return log_error_errno(r, "Output directory %s is in use by another perfrecd; "
				       "one recorder per directory", dir);
	if (r < 0)
		return log_error_errno(r, "Cannot lock output directory %s: %s", dir, strerror(-r));
	return 0;
}
static void set_drain_priority(int prio);
static void set_flush_timer(struct manager *m);
static bool streq(const char *a, const char *b);

/* The recorder with its sinks: the flight history when a window is set. */
static int open_recorder(struct recorder *rec, const struct config *cfg, int argc, char **argv)
{
	int r = recorder_open(rec, cfg, argc, argv);

	return r < 0 ? r : snapshot_open(rec);
}

static void close_recorder(struct recorder *rec)
{
	snapshot_close(rec);
	recorder_close(rec);
}

/* The governor as Status shows it: m->gov, which a reload may replace. */
static bool status_governor(void *userdata, struct governor_status *ret)
{
	const struct manager *m = userdata;

	return governor_status(m->gov, ret);
}

/* The numbers metrics.c exports, of the recorder running now (metrics_source). */
static void collect_metrics(struct metrics *mx, void *userdata, struct metrics_values *v)
{
	const struct manager *m = userdata;
	const struct recorder *rec = &m->rec;
	size_t n = rec->evlist ? perfrec_evlist__nr_evsels(rec->evlist) : 0;
	struct metrics_event *events = metrics_events(mx, n);

	v->host = rec->hostname;
	for (size_t i = 0; rec->fsink.total && i < rec->nr_rings; i++) {
		v->samples += rec->fsink.total[i].samples;
		v->lost += rec->fsink.total[i].lost + rec->fsink.total[i].lost_samples;
		v->bytes_written += rec->fsink.total[i].bytes;
	}
	v->dropped_bytes = rec->fsink.dropped_bytes;
	v->files_published = rec->files_published;
	v->nr_cpus = rec->nr_rings;
	v->paused = control_paused(m->ctl);
	for (size_t i = 0; events && i < n; i++) {
		const struct perfrec_evsel *ev = perfrec_evlist__evsel(rec->evlist, i);

		if (ev->is_sideband)
			continue;
		events[v->nr_events].name = ev->name;
		events[v->nr_events].freq = ev->attr.freq ? ev->attr.sample_freq : 0;
		v->nr_events++;
	}
	v->events = events;
	if (m->uploader) {
		v->have_upload = true;
		uploader_get_stats(m->uploader, &v->upload);
	}
	v->tracked_processes = perfrec_buildid_table__nr_processes(rec->buildids);
	v->have_unwind = recorder_unwind_stats(rec, &v->unwind);
	v->have_jit = true;
	recorder_jit_stats(rec, &v->jit);
	v->have_python = recorder_python_stats(rec, &v->python);
}

void manager_block_signals(sigset_t *ret_mask)
{
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGUSR2);
	sigaddset(&mask, SIGCHLD);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	if (ret_mask)
		*ret_mask = mask;
}

/* buildid-cache-size= in bytes, for the cache's file system. */
static void set_buildid_cache_budget(struct config *cfg)
{
	if (cfg->buildid_cache)
		cfg->buildid_cache_size = bidcache_budget(cfg->buildid_cache, cfg->buildid_cache_size,
							  cfg->buildid_cache_size_percent);
}

/*
 * The build-id cache of @cfg made ready, and its cap in bytes.  One asked
 * for by path must be usable (or the start or reload is refused); the
 * default one, in the output directory, is turned off with a warning
 * when it cannot be had, as recording matters more.
 */
static int prepare_buildid_cache(struct config *cfg)
{
	char why[PATH_MAX + 256] = "";
	int r;

	/*
	 * The default one is only checked here: its .build-id is made with
	 * the first binary it takes, so that a start refused later (an event
	 * that cannot open) leaves the output directory as it found it.
	 */
	if (cfg->buildid_cache_auto)
		r = safedir_check(cfg->buildid_cache, why, sizeof(why));
	else
		r = bidcache_prepare(cfg->buildid_cache, cfg->user, cfg->group);
	if (r < 0 && cfg->buildid_cache_auto) {
		log_warning("The build-id cache is off: %s cannot hold it%s%s (set buildid-cache= to a private "
			    "directory to keep the binaries the files reference)", cfg->buildid_cache,
			    why[0] ? ": " : "", why);
		free(cfg->buildid_cache);
		cfg->buildid_cache = NULL;
		return 0;
	}
	if (r < 0)
		return r;
	set_buildid_cache_budget(cfg);
	return 0;
}

int manager_init(struct manager *m, struct config *cfg, int argc, char **argv)
{
	struct epoll_event ev = { .events = EPOLLIN };
	sigset_t mask;
	int r;

	memset(m, 0, sizeof(*m));
	m->cfg = cfg;
	m->argc = argc;
	m->argv = argv;
	m->epfd = m->sigfd = m->timerfd = m->dirfd = -1;

	r = pipeout_enabled(cfg) ? pipeout_check(cfg) : privs_prepare_directory(cfg->directory, cfg->user, cfg->group);
	if (r < 0)
		return r;
	if (!pipeout_enabled(cfg)) {
		r = lock_directory(cfg->directory, &m->dirfd);
		if (r < 0)
			return r;
	}
	/* Still root: a cache made now is the daemon user's. */
	r = prepare_buildid_cache(cfg);
	if (r < 0)
		return r;

	manager_block_signals(&mask);
	m->sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	m->epfd = epoll_create1(EPOLL_CLOEXEC);
	m->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (m->sigfd < 0 || m->epfd < 0 || m->timerfd < 0)
		return log_error_errno(-errno, "Cannot set up the event loop: %m");

	/* Calibrates on a busy loop of its own: before our events are open. */
	r = governor_new(cfg, &m->gov);
	if (r < 0)
		return log_error_errno(r, "Cannot set up the overhead governor: %s", strerror(-r));
	r = open_recorder(&m->rec, cfg, argc, argv);
	if (r < 0)
		return r;

	ev.data.u64 = (uint64_t)(int64_t)TAG_SIGNAL;
	epoll_ctl(m->epfd, EPOLL_CTL_ADD, m->sigfd, &ev);
	ev.data.u64 = (uint64_t)(int64_t)TAG_TIMER;
	epoll_ctl(m->epfd, EPOLL_CTL_ADD, m->timerfd, &ev);
	r = watch_rings(m, EPOLL_CTL_ADD);
	if (r < 0)
		return log_error_errno(r, "Cannot watch the rings: %s", strerror(-r));
	/* Before dropping privileges: the socket's directory may need root. */
	r = control_open(cfg, &m->rec, &m->ctl);
	if (r < 0)
		return r;
	control_set_status_source(m->ctl, &(struct control_status_source){ .governor = status_governor, .userdata = m });
	ev.data.u64 = (uint64_t)(int64_t)TAG_CONTROL;
	if (m->ctl && epoll_ctl(m->epfd, EPOLL_CTL_ADD, control_fd(m->ctl), &ev) < 0)
		return log_error_errno(-errno, "Cannot watch the control socket: %m");
	/* Also before dropping privileges: a port below 1024 needs them. */
	r = metrics_open(cfg, &(struct metrics_source){ .collect = collect_metrics, .userdata = m }, &m->metrics);
	if (r < 0)
		return r;
	ev.data.u64 = (uint64_t)(int64_t)TAG_METRICS;
	if (metrics_fd(m->metrics) >= 0 && epoll_ctl(m->epfd, EPOLL_CTL_ADD, metrics_fd(m->metrics), &ev) < 0)
		return log_error_errno(-errno, "Cannot watch the metrics socket: %m");

	set_drain_priority(cfg->drain_priority);
	/* Events open, rings mapped: from here on only what rotation needs. */
	r = privs_drop(cfg->user, cfg->group, pipeout_enabled(cfg) ? NULL : cfg->directory);
	if (r < 0)
		return r;
	set_flush_timer(m);
	return 0;
}

/*
 * drain-priority=: the main thread, which drains the rings, runs SCHED_FIFO
 * so it drains the moment the kernel wakes it, ahead of the busy tasks it
 * records: on a saturated host a wake-up can otherwise wait milliseconds
 * for a CPU, longer than a small ring lasts at high rates.  Threads and
 * hooks started later (the uploader, on-rotate) get the normal scheduler
 * back (SCHED_RESET_ON_FORK), and the kernel's real-time throttling still
 * leaves other tasks their share.  Needs CAP_SYS_NICE: without it perfrecd
 * says so and drains at normal priority.
 */
static void set_drain_priority(int prio)
{
	struct sched_param sp = { .sched_priority = prio };

	if (!prio)
		return;
	if (sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &sp) < 0)
		log_warning("Cannot drain at real-time priority %d (drain-priority=): %m; "
			    "draining at normal priority (under systemd, set CPUSchedulingPolicy=fifo instead)", prio);
	else
		log_info("Draining at SCHED_FIFO priority %d", prio);
}

static int watch_rings(struct manager *m, int op)
{
	struct epoll_event ev = { .events = EPOLLIN };

	for (size_t i = 0; i < m->rec.nr_rings; i++) {
		ev.data.u64 = i;
		if (epoll_ctl(m->epfd, op, perfrec_evlist__ring_fd(m->rec.evlist, i), &ev) < 0 && op == EPOLL_CTL_ADD)
			return -errno;
	}
	return 0;
}

static bool streq(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static void set_flush_timer(struct manager *m)
{
	struct itimerspec its = { 0 };

	its.it_interval.tv_sec = m->cfg->flush_usec / 1000000;
	its.it_interval.tv_nsec = (m->cfg->flush_usec % 1000000) * 1000;
	its.it_value = its.it_interval;
	timerfd_settime(m->timerfd, 0, &its, NULL);
}

/* duration= counts from the start of recording, also when a reload changes it. */
static void set_deadline(struct manager *m)
{
	m->deadline_usec = m->cfg->duration_usec ? m->start_usec + m->cfg->duration_usec : 0;
}

/*
 * What the CONFIG_APPLY_NOW keys need done once m->cfg holds the new
 * configuration; the others are read as the daemon goes (retention,
 * rotation, on-rotate, the methods anyone may call...).
 */
static void apply_now(struct manager *m)
{
	governor_reload(&m->gov, m->cfg, &m->rec, !control_paused(m->ctl));
	set_flush_timer(m);
	set_deadline(m);
	/* A text file of metrics asked for anew: metrics-listen= is unchanged (restart), so unset. */
	if (!m->metrics && m->cfg->metrics_textfile &&
	    metrics_open(m->cfg, &(struct metrics_source){ .collect = collect_metrics, .userdata = m },
			 &m->metrics) < 0)
		log_error("Cannot write metrics into %s; going on without", m->cfg->metrics_textfile);
	/* buildid-cache= (a next-file key): the uploader thread keeps its own copy. */
	if (uploader_set_buildid_cache(m->uploader, m->cfg->buildid_cache) < 0)
		log_error("Out of memory: uploads go on shipping build-id entries from the previous cache");
}

/*
 * Off-CPU profiling under the new configuration @nc: *ret is the program
 * the recorder goes on with (NULL: none).  Loading one needs CAP_BPF or
 * CAP_SYS_ADMIN, which perfrecd dropped after its start, so the program
 * loaded then is kept across reloads, even those that reopen the events,
 * and offcpu-min= and offcpu-cgroup= are set in it in place; turning
 * offcpu= on is tried, and refused with the reason when it cannot load.
 * A refusal leaves everything as it was; undo_offcpu() takes back a
 * success when the reload is refused later.
 */
static int reload_offcpu(struct manager *m, const struct config *nc, struct offcpu_rec **ret,
			 char *err, size_t len)
{
	char why[256];
	int r;

	*ret = nc->offcpu ? m->rec.offcpu : NULL;
	if (!nc->offcpu)
		return 0;
	if (!m->cfg->offcpu) {
		r = offcpu_rec_load(nc, ret, why, sizeof(why));
		if (r < 0)
			snprintf(err, len, "offcpu=yes cannot take effect in a reload (%s): perfrecd gave up "
				 "the privileges BPF needs after its start; restart perfrecd to turn "
				 "off-CPU profiling on", why);
		return r;
	}
	if (!*ret) {
		log_warning("off-CPU profiling stays off: it could not be loaded at start; restart perfrecd to try again");
		return 0;
	}
	if (!config_changed(m->cfg, nc, CONFIG_APPLY_OFFCPU))
		return 0;
	r = offcpu_rec_set_filter(*ret, nc);
	if (r < 0)
		snprintf(err, len, "offcpu-cgroup=%s: %s", nc->offcpu_cgroup ? nc->offcpu_cgroup : "",
			 strerror(-r));
	return r;
}

/* A reload refused after reload_offcpu() said yes: the old program and filter. */
static void undo_offcpu(struct manager *m, struct offcpu_rec *oc)
{
	if (oc && oc != m->rec.offcpu)
		offcpu_rec_close(oc);
	else if (oc)
		offcpu_rec_set_filter(oc, m->cfg);
}

static void refuse_reload(struct manager *m, struct config *nc, struct offcpu_rec *oc)
{
	undo_offcpu(m, oc);
	config_exit(nc);
	sd_notify(0, "READY=1");
}

/* A new output directory: prepared and locked, or the reload is refused. */
static int reload_directory(struct manager *m, const struct config *nc)
{
	int fd = -1, r;

	if (pipeout_enabled(nc) || streq(nc->directory, m->cfg->directory))
		return 0;
	r = privs_prepare_directory(nc->directory, nc->user, nc->group);
	if (r < 0)
		log_error("Reload refused: output directory %s is not usable; "
			  "still recording with the previous configuration", nc->directory);
	else if ((r = lock_directory(nc->directory, &fd)) < 0)
		log_error("Reload refused: still recording into %s", m->cfg->directory);
	if (r < 0)
		return r;
	if (m->dirfd >= 0)
		close(m->dirfd);
	m->dirfd = fd;
	return 0;
}

/*
 * New events: the new ones open before the old ones close, so nothing
 * goes unrecorded: the old file is finished with everything the old rings
 * held (and the off-CPU time until now), the new file starts with the new
 * events' first records.  @oc: the off-CPU program to go on with.
 */
static void reload_events(struct manager *m, struct config *nc, struct offcpu_rec *oc)
{
	struct recorder nrec;
	struct recorder_stamp t0;
	int r;

	r = recorder_reopen(&nrec, nc, m->argc, m->argv, oc, m->rec.py);
	if (r >= 0)
		r = snapshot_open(&nrec);
	if (r < 0) {
		log_error("Reload refused: the new events cannot be opened; still recording with the previous configuration");
		nrec.offcpu = NULL;     /* oc: undo_offcpu()'s */
		nrec.py = NULL;         /* still the running recorder's */
		close_recorder(&nrec);
		refuse_reload(m, nc, oc);
		return;
	}
	t0 = recorder_stamp(&nrec);
	recorder_enable(&nrec);
	nrec.files_published = m->rec.files_published;
	recorder_disable(&m->rec);
	recorder_finish_file(&m->rec, NULL);
	nrec.files_published = m->rec.files_published;
	metrics_carry(m->metrics);
	nrec.seq = m->rec.seq;
	watch_rings(m, EPOLL_CTL_DEL);
	/* The program goes on in the new recorder: not unloaded with the old one. */
	if (oc && oc == m->rec.offcpu)
		m->rec.offcpu = NULL;
	/* So does the walk of Python frames, handed over or (python=no now) let go. */
	if (m->rec.py && m->rec.py == nrec.py)
		m->rec.py = NULL;
	close_recorder(&m->rec);
	config_exit(m->cfg);
	*m->cfg = *nc;
	recorder_move(&m->rec, &nrec);
	m->rec.cfg = m->cfg;
	m->rec.uploader = m->uploader;
	apply_now(m);
	if (watch_rings(m, EPOLL_CTL_ADD) < 0)
		log_error("Cannot watch the new rings: %m; draining on the timer only");
	if (!snapshot_flight_mode(m->cfg))
		recorder_start_file(&m->rec, &t0);
	log_info("Configuration reloaded; events reopened");
	sd_notify(0, "READY=1");
}

/*
 * A key set up once at start (config_keys[].applies is
 * CONFIG_APPLY_RESTART: a socket, the user, the uploader...): changed,
 * it refuses the reload, naming it, rather than being taken and ignored.
 */
static bool refuse_restart_keys(struct manager *m, struct config *nc)
{
	const struct config_key *k = config_changed_key(m->cfg, nc, CONFIG_APPLY_RESTART);

	if (!k)
		return false;
	log_error("Reload refused: [%s] %s= takes effect only at start (%s); restart perfrecd to change it; "
		  "still recording with the previous configuration", k->section, k->name,
		  k->why_restart ? k->why_restart : "it is set up once");
	refuse_reload(m, nc, NULL);
	return true;
}

/*
 * SIGHUP: build the new configuration; a bad one is refused and the old one
 * keeps recording, as systemd refuses a bad reload.  How each changed key
 * applies is its config_keys[] row's: at once (apply_now()), from the next
 * file (read when one begins; a new directory is prepared and locked
 * here), in the off-CPU program's filter, or by reopening the events
 * (reload_events()).  Nothing configured is dropped quietly: what cannot
 * apply without a restart refuses the reload and says so.
 */
static void reload(struct manager *m)
{
	struct offcpu_rec *oc = NULL;
	struct config nc;
	char err[512] = "";
	int r;

	if (!m->reload) {
		log_notice("SIGHUP: this perfrecd cannot reload; ignoring");
		return;
	}
	sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%" PRIu64, now_usec());
	r = m->reload(&nc, err, sizeof(err));
	if (r < 0) {
		log_error("Reload refused: %s; still recording with the previous configuration", err);
		sd_notify(0, "READY=1");
		return;
	}
	if (refuse_restart_keys(m, &nc))
		return;
	if (streq(nc.buildid_cache, m->cfg->buildid_cache))
		set_buildid_cache_budget(&nc);
	else if (prepare_buildid_cache(&nc) < 0) {
		log_error("Reload refused: build-id cache %s is not usable; still recording with the previous "
			  "configuration", nc.buildid_cache);
		refuse_reload(m, &nc, NULL);
		return;
	}
	r = reload_offcpu(m, &nc, &oc, err, sizeof(err));
	if (r < 0) {
		log_error("Reload refused: %s; still recording with the previous configuration", err);
		refuse_reload(m, &nc, NULL);
		return;
	}
	if (reload_directory(m, &nc) < 0) {
		refuse_reload(m, &nc, oc);
		return;
	}
	if (config_changed(m->cfg, &nc, CONFIG_APPLY_REOPEN)) {
		reload_events(m, &nc, oc);
		return;
	}
	config_exit(m->cfg);
	*m->cfg = nc;
	apply_now(m);
	log_info("Configuration reloaded");
	sd_notify(0, "READY=1");
}

static void handle_signals(struct manager *m)
{
	struct signalfd_siginfo si;
	char *path = NULL;

	while (read(m->sigfd, &si, sizeof(si)) == sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGINT:
		case SIGTERM:
			log_info("Received %s, finishing the current file", strsignal(si.ssi_signo));
			m->stop = true;
			break;
		case SIGUSR2:
			if (pipeout_enabled(m->cfg)) {
				log_info("Ignoring SIGUSR2: a stream to stdout (-o -) does not rotate");
				break;
			}
			if (snapshot_flight_mode(m->cfg)) {
				recorder_snapshot_publish(&m->rec, NULL);
				break;
			}
			if (recorder_rotate(&m->rec, &path) == 0)
				log_debug("Rotated on SIGUSR2");
			free(path);
			path = NULL;
			break;
		case SIGCHLD:
			hook_reap();
			break;
		case SIGHUP:
			reload(m);
			break;
		}
	}
}

/* One-line summary for systemd's STATUS= (shown by systemctl status). */
static void notify_status(struct manager *m)
{
	uint64_t samples = 0, lost = 0;
	char zs[96], gs[128];

	for (size_t i = 0; i < m->rec.nr_rings; i++) {
		samples += m->rec.fsink.total[i].samples;
		lost += m->rec.fsink.total[i].lost + m->rec.fsink.total[i].lost_samples;
	}
	pipeout_compress_status(&m->rec.compress, m->rec.have_file ? m->rec.cur.f.w : NULL, zs, sizeof(zs));
	governor_status_line(m->gov, gs, sizeof(gs));
	sd_notifyf(0, "STATUS=Recording %zu CPUs: %" PRIu64 " samples, %" PRIu64
		   " lost, %" PRIu64 " files published%s%s", m->rec.nr_rings, samples, lost,
		   m->rec.files_published, zs, gs);
}

/* Uploads, leftovers of a killed run, the events on, the first file. */
static int start_recording(struct manager *m)
{
	struct recorder_stamp t0;
	int r;

	if (m->cfg->upload_url && !pipeout_enabled(m->cfg)) {
		r = uploader_new(m->cfg, m->rec.hostname, &m->uploader);
		if (r < 0)
			return r;
		m->rec.uploader = m->uploader;
	}
	if (!pipeout_enabled(m->cfg))
		recorder_recover_leftovers(&m->rec);

	/* Stamp the synthesized state before enabling: every ring record is newer. */
	t0 = recorder_stamp(&m->rec);
	r = recorder_enable(&m->rec);
	if (r < 0)
		return r;
	/* Flight mode writes nothing until a snapshot is asked for. */
	r = snapshot_flight_mode(m->cfg) ? 0 : recorder_start_file(&m->rec, &t0);
	/* A reader of stdout that left already ends the run cleanly in the loop. */
	if (r < 0 && !recorder_output_closed(&m->rec) && pipeout_enabled(m->cfg))
		return r;
	/*
	 * A full disk at start costs samples, not the daemon, as it does later:
	 * the loop tries again (manage_file()) and the samples drained until a
	 * file opens are its LOST records.
	 */
	if (r < 0 && !pipeout_enabled(m->cfg))
		log_warning("Recording without a file until %s has room: the samples meanwhile are counted as lost",
			    m->cfg->directory);
	return 0;
}

/*
 * A killed run's .tmp the full disk kept us from recovering: again once a
 * file could be started (there is room), and every LEFTOVERS_RETRY_USEC
 * while writes succeed, in case the disk filled again meanwhile.  The
 * rings wait during a recovery; what they overflow is counted lost.
 */
#define LEFTOVERS_RETRY_USEC (10 * 1000000ULL)

static void retry_leftovers(struct manager *m, uint64_t now, bool force)
{
	if (!m->rec.leftovers_pending || pipeout_enabled(m->cfg) || !m->rec.have_file ||
	    (!force && (now < m->leftovers_retry_usec || m->rec.write_error_logged)))
		return;
	m->leftovers_retry_usec = now + LEFTOVERS_RETRY_USEC;
	recorder_recover_leftovers(&m->rec);
}

/* After a pass: a file started again after a full disk, rotated, checkpointed. */
static uint64_t manage_file(struct manager *m, bool drained, uint64_t now)
{
	if (!m->rec.have_file && drained && !snapshot_flight_mode(m->cfg) &&
	    now >= m->rec.retry_start_usec) {
		/* The last file could not be started (disk full?): try again. */
		if (recorder_start_file(&m->rec, NULL) == 0) {
			log_notice("Recording again into %s.tmp", m->rec.cur.path);
			retry_leftovers(m, now, true);
		}
	} else if (recorder_rotation_due(&m->rec, now)) {
		char *path = NULL;

		recorder_rotate(&m->rec, &path);
		free(path);
		now = now_usec();
	} else {
		retry_leftovers(m, now, false);
	}
	recorder_maybe_checkpoint(&m->rec, now);
	return now;
}

int manager_run(struct manager *m)
{
	uint64_t watchdog_usec = 0, last_ping = 0, last_status = now_usec();
	struct epoll_event evs[64];
	int r;

	r = start_recording(m);
	if (r < 0)
		return r;
	m->start_usec = now_usec();
	set_deadline(m);
	log_info("Recording %zu CPU%s into %s", m->rec.nr_rings, m->rec.nr_rings == 1 ? "" : "s",
		 pipeout_enabled(m->cfg) ? "stdout" : m->cfg->directory);
	sd_notify(0, "READY=1");
	notify_status(m);
	if (sd_watchdog_enabled(0, &watchdog_usec) <= 0)
		watchdog_usec = 0;

	while (!m->stop) {
		int timeout = -1, n;
		bool drain = false, metrics_ready = false;
		uint64_t now, rotate_at = recorder_rotation_deadline(&m->rec), wake = m->deadline_usec;

		/* The flush timer may be longer than rotate-interval: wake for both. */
		if (rotate_at && (!wake || rotate_at < wake))
			wake = rotate_at;
		if (wake) {
			now = now_usec();
			if (m->deadline_usec && now >= m->deadline_usec)
				break;
			timeout = now >= wake ? 0 : (int)((wake - now + 999) / 1000);
		}
		n = epoll_wait(m->epfd, evs, 64, timeout);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return log_error_errno(-errno, "epoll_wait failed: %m");
		}
		for (int i = 0; i < n; i++) {
			int64_t tag = (int64_t)evs[i].data.u64;

			if (tag == TAG_SIGNAL) {
				handle_signals(m);
			} else if (tag == TAG_TIMER) {
				uint64_t ticks;

				(void)!read(m->timerfd, &ticks, sizeof(ticks));
				drain = true;
			} else if (tag == TAG_METRICS) {
				metrics_ready = true;
			} else {
				drain = true;
			}
		}
		if (drain)
			recorder_drain(&m->rec);
		/* Control I/O only after the drain, bounded per pass (control.c). */
		control_process(m->ctl);
		if (metrics_ready)
			metrics_process(m->metrics);
		if (recorder_output_closed(&m->rec)) {
			log_info("The reader of stdout went away; stopping");
			break;
		}
		/* One clock read per pass: each is a system call on some VMs' clocksources. */
		now = manage_file(m, drain, now_usec());
		/* Ping at half the watchdog interval; the timer guarantees we wake. */
		if (watchdog_usec && now - last_ping >= watchdog_usec / 2) {
			last_ping = now;
			sd_notify(0, "WATCHDOG=1");
		}
		if (now - last_status >= STATUS_INTERVAL_USEC) {
			last_status = now;
			notify_status(m);
		}
		metrics_tick(m->metrics, now);
		governor_tick(m->gov, &m->rec, now);
	}
	sd_notify(0, "STOPPING=1");
	recorder_disable(&m->rec);
	r = recorder_finish_file(&m->rec, NULL);
	metrics_write_textfile(m->metrics);
	return r == -ENOENT ? 0 : r;
}

void manager_exit(struct manager *m)
{
	control_free(m->ctl);
	metrics_free(m->metrics);
	m->metrics = NULL;
	governor_free(m->gov);
	m->gov = NULL;
	close_recorder(&m->rec);
	uploader_free(m->uploader);
	m->uploader = NULL;
	if (m->epfd >= 0)
		close(m->epfd);
	if (m->sigfd >= 0)
		close(m->sigfd);
	if (m->timerfd >= 0)
		close(m->timerfd);
	if (m->dirfd >= 0)
		close(m->dirfd);
}
