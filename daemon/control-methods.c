// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The io.perfrec and org.varlink.service methods (control_methods[]) on
 * top of the recorder: what each call does and replies.  The transport
 * (control.c) has checked the call and the caller's permission.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "control-internal.h"
#include "governor.h"
#include "log.h"
#include "pipeout.h"
#include "snapshot.h"
#include "varlink.h"

/* "governor": {...} while one governs (control_status_source). */
static void status_governor(const struct control *ctl, struct json_object *o)
{
	struct governor_status st;
	struct json_object *j;

	if (!ctl->status_src.governor || !ctl->status_src.governor(ctl->status_src.userdata, &st) ||
	    !(j = json_object_new_object()))
		return;
	J_ADD(j, "frequency", json_object_new_int64((int64_t)st.freq));
	J_ADD(j, "max_frequency", json_object_new_int64((int64_t)st.max_freq));
	J_ADD(j, "min_frequency_seen", json_object_new_int64((int64_t)st.min_freq_seen));
	J_ADD(j, "max_frequency_seen", json_object_new_int64((int64_t)st.max_freq_seen));
	J_ADD(j, "changes", json_object_new_int64((int64_t)st.changes));
	J_ADD(j, "budget_percent", json_object_new_double(st.budget_percent));
	J_ADD(j, "overhead_percent", json_object_new_double(st.overhead_percent));
	J_ADD(j, "own_cpu_percent", json_object_new_double(st.own_cpu_percent));
	J_ADD(j, "sampling_percent", json_object_new_double(st.sampling_percent));
	J_ADD(j, "samples_per_sec", json_object_new_double(st.samples_per_sec));
	J_ADD(j, "sample_cost_usec", json_object_new_double(st.sample_cost_usec));
	J_ADD(j, "calibrated", json_object_new_boolean(st.calibrated));
	J_ADD(o, "governor", j);
}

/* How the unwinder's tables serve it (unwind-internal.h), into @u. */
static void unwind_table_status(const struct perfrec_unwinder_table_stats *t, struct json_object *u)
{
	J_ADD(u, "by_tables", json_object_new_int64((int64_t)t->by_tables));
	J_ADD(u, "by_libdwfl", json_object_new_int64((int64_t)t->by_dwfl));
	J_ADD(u, "table_frames", json_object_new_int64((int64_t)t->table_frames));
	J_ADD(u, "fp_frames", json_object_new_int64((int64_t)t->fp_frames));
	J_ADD(u, "tables", json_object_new_int64((int64_t)t->cache.tables));
	J_ADD(u, "table_bytes", json_object_new_int64((int64_t)t->cache.bytes));
	J_ADD(u, "tables_built", json_object_new_int64((int64_t)t->cache.built));
	J_ADD(u, "tables_loaded", json_object_new_int64((int64_t)t->cache.loaded));
	J_ADD(u, "tables_saved", json_object_new_int64((int64_t)t->cache.saved));
	J_ADD(u, "tables_refused", json_object_new_int64((int64_t)t->cache.refused));
	J_ADD(u, "tables_failed", json_object_new_int64((int64_t)t->cache.failed));
	J_ADD(u, "tables_no_cfi", json_object_new_int64((int64_t)t->cache.no_cfi));
	J_ADD(u, "tables_evicted", json_object_new_int64((int64_t)t->cache.evicted));
	J_ADD(u, "table_files_evicted", json_object_new_int64((int64_t)t->cache.disk_evicted));
	J_ADD(u, "table_disk_errors", json_object_new_int64((int64_t)t->cache.disk_errors));
	J_ADD(u, "table_disk_bytes", json_object_new_int64((int64_t)t->cache.disk_bytes));
	J_ADD(u, "tables_deferred", json_object_new_int64((int64_t)t->cache.deferred));
}

/* unwind=host: how the unwinding worker keeps up (absent otherwise). */
static void unwind_status(const struct recorder *rec, struct json_object *o)
{
	struct unwind_sink_stats st;
	struct json_object *u;

	if (!recorder_unwind_stats(rec, &st) || !(u = json_object_new_object()))
		return;
	J_ADD(u, "samples", json_object_new_int64((int64_t)st.unwinder.samples));
	J_ADD(u, "unwound", json_object_new_int64((int64_t)st.unwinder.unwound));
	J_ADD(u, "behind", json_object_new_int64((int64_t)st.behind));
	J_ADD(u, "dropped", json_object_new_int64((int64_t)st.unwinder.dropped));
	J_ADD(u, "elf_hits", json_object_new_int64((int64_t)st.unwinder.elf_hits));
	J_ADD(u, "elf_opened", json_object_new_int64((int64_t)st.unwinder.elf_opened));
	J_ADD(u, "elf_missing", json_object_new_int64((int64_t)st.unwinder.elf_missing));
	J_ADD(u, "elf_bytes", json_object_new_int64((int64_t)st.unwinder.elf_bytes));
	J_ADD(u, "sessions", json_object_new_int64((int64_t)st.unwinder.sessions));
	J_ADD(u, "live_sessions", json_object_new_int64((int64_t)st.unwinder.live_sessions));
	J_ADD(u, "sessions_evicted", json_object_new_int64((int64_t)st.unwinder.sessions_evicted));
	J_ADD(u, "spaces", json_object_new_int64((int64_t)st.unwinder.spaces));
	J_ADD(u, "spaces_evicted", json_object_new_int64((int64_t)st.unwinder.spaces_evicted));
	J_ADD(u, "elves", json_object_new_int64((int64_t)st.unwinder.elves));
	J_ADD(u, "elf_fds", json_object_new_int64((int64_t)st.unwinder.elf_fds));
	J_ADD(u, "elf_refused", json_object_new_int64((int64_t)st.unwinder.elf_refused));
	J_ADD(u, "queued_bytes", json_object_new_int64((int64_t)st.queued_bytes));
	J_ADD(u, "max_queued_bytes", json_object_new_int64((int64_t)st.max_queued_bytes));
	J_ADD(u, "stacks_trimmed", json_object_new_int64((int64_t)st.trimmed));
	J_ADD(u, "stack_bytes_trimmed", json_object_new_int64((int64_t)st.trimmed_bytes));
	J_ADD(u, "stack_trim_missed", json_object_new_int64((int64_t)st.trim_missed));
	unwind_table_status(&st.tables, u);
	J_ADD(o, "unwind", u);
}

/* JIT frames named (jitsink.h): what was done, left out and refused. */
static void jit_status(const struct recorder *rec, struct json_object *o)
{
	struct json_object *j = json_object_new_object();
	struct jitsink_stats st;

	if (!j)
		return;
	recorder_jit_stats(rec, &st);
#define JIT_ADD(name, v) J_ADD(j, name, json_object_new_int64((int64_t)(v)))
	JIT_ADD("processes", st.procs);
	JIT_ADD("mappings_named", st.maps);
	JIT_ADD("images", st.images);
	JIT_ADD("image_symbols", st.image_syms);
	JIT_ADD("no_map", st.no_map);
	JIT_ADD("maps_refused", st.refused);
	JIT_ADD("maps_at_exit", st.maps_at_exit);
	JIT_ADD("roots_held", st.roots_held);
	JIT_ADD("roots_refused", st.roots_refused);
	JIT_ADD("skipped", st.skipped);
	JIT_ADD("failed", st.failed);
	JIT_ADD("reads_over_memory", st.over_memory);
	JIT_ADD("map_bytes", st.perfmap.bytes);
	JIT_ADD("map_symbols", st.perfmap.syms);
	JIT_ADD("symbols_dropped", st.perfmap.over_limit);
	JIT_ADD("bad_lines", st.perfmap.bad_lines);
	JIT_ADD("long_lines", st.perfmap.long_lines);
	JIT_ADD("cut_names", st.perfmap.cut_names);
#undef JIT_ADD
	J_ADD(o, "jit", j);
}

/* Python frames (issue 27): processes tracked and why not, walks, merges. */
static void python_status(const struct recorder *rec, struct json_object *o)
{
	struct json_object *p = json_object_new_object(), *found = json_object_new_object();
	struct python_stats st;
	bool on = recorder_python_stats(rec, &st);

	if (!p || !found) {
		json_object_put(p);
		json_object_put(found);
		return;
	}
	J_ADD(p, "on", json_object_new_boolean(on));
#define PY_ADD(obj, name, v) J_ADD(obj, name, json_object_new_int64((int64_t)(v)))
	for (int s = 0; s < _PYPROC_STATUS_MAX; s++)
		PY_ADD(found, pyproc_status_key(s), st.track.found.n[s]);
	J_ADD(p, "found", found);
	PY_ADD(p, "processes", st.track.tracked);
	PY_ADD(p, "added", st.track.added);
	PY_ADD(p, "refused", st.track.refused);
	PY_ADD(p, "walks", st.walk.walks);
	PY_ADD(p, "walks_joined", st.walk.joined);
	PY_ADD(p, "walks_unjoined", st.walk.unjoined);
	PY_ADD(p, "walks_torn", st.walk.torn);
	PY_ADD(p, "walks_truncated", st.walk.truncated);
	PY_ADD(p, "walks_lost", st.walk.ring_lost);
	PY_ADD(p, "samples_merged", st.stage.merged);
	PY_ADD(p, "samples_not_joined", st.stage.not_joined);
	PY_ADD(p, "samples_mismatched", st.stage.mismatched);
	PY_ADD(p, "samples_unmerged", st.stage.unmerged);
	PY_ADD(p, "samples_before_map", st.stage.before_map);
	PY_ADD(p, "stale_ends", st.track.stale);
	PY_ADD(p, "names_failed", st.stage.names_failed);
	PY_ADD(p, "processes_failed", st.stage.procs_failed + st.stage.procs_refused);
#undef PY_ADD
	J_ADD(o, "python", p);
}

static struct json_object *status(struct control *ctl)
{
	struct recorder *rec = ctl->rec;
	struct json_object *o = json_object_new_object(), *cpus = json_object_new_array(),
			   *events = json_object_new_array();
	uint64_t samples = 0, lost = 0, bytes = 0, now = now_usec();
	double up = (double)(now - ctl->start_usec) / 1e6;
	/* The counters start when the events were opened: at start, or at a
	 * reload that reopened them; rates are over that same span. */
	double span = ctl->evlist == rec->evlist ? (double)(now - ctl->evlist_usec) / 1e6 : up;
	char *tmp = NULL;
	struct rusage ru;
	long pages = 0;
	FILE *f;

	for (size_t i = 0; i < rec->nr_rings; i++) {
		struct json_object *c = json_object_new_object();
		const struct filesink_counts *s = &rec->fsink.total[i];

		J_ADD(c, "cpu", json_object_new_int(perfrec_evlist__ring_cpu(rec->evlist, i)));
		J_ADD(c, "samples", json_object_new_int64((int64_t)s->samples));
		J_ADD(c, "lost", json_object_new_int64((int64_t)(s->lost + s->lost_samples)));
		J_ADD(c, "bytes", json_object_new_int64((int64_t)s->bytes));
		json_object_array_add(cpus, c);
		samples += s->samples;
		lost += s->lost + s->lost_samples;
		bytes += s->bytes;
	}
	for (size_t i = 0; i < perfrec_evlist__nr_evsels(rec->evlist); i++) {
		const struct perfrec_evsel *ev = perfrec_evlist__evsel(rec->evlist, i);
		struct json_object *e;

		if (ev->is_sideband)
			continue;
		e = json_object_new_object();
		J_ADD(e, "name", json_object_new_string(ev->name));
		J_ADD(e, "frequency", json_object_new_int64(ev->attr.freq ? (int64_t)ev->attr.sample_freq : 0));
		J_ADD(e, "period", json_object_new_int64(ev->attr.freq ? 0 : (int64_t)ev->attr.sample_period));
		json_object_array_add(events, e);
	}
	getrusage(RUSAGE_SELF, &ru);
	f = fopen("/proc/self/statm", "re");
	if (f) {
		long size;

		if (fscanf(f, "%ld %ld", &size, &pages) != 2)
			pages = 0;
		fclose(f);
	}
	J_ADD(o, "pid", json_object_new_int((int)getpid()));
	J_ADD(o, "uptime_sec", json_object_new_double(up));
	J_ADD(o, "paused", json_object_new_boolean(ctl->paused));
	J_ADD(o, "mode", json_object_new_string(snapshot_flight_mode(ctl->cfg) ? "flight" : "continuous"));
	J_ADD(o, "samples", json_object_new_int64((int64_t)samples));
	J_ADD(o, "lost", json_object_new_int64((int64_t)lost));
	J_ADD(o, "bytes", json_object_new_int64((int64_t)bytes));
	J_ADD(o, "counted_sec", json_object_new_double(span));
	J_ADD(o, "samples_per_sec", json_object_new_double(span > 0 ? (double)samples / span : 0));
	J_ADD(o, "bytes_per_sec", json_object_new_double(span > 0 ? (double)bytes / span : 0));
	J_ADD(o, "cpus", cpus);
	J_ADD(o, "events", events);
	/* The guard on the rate, and frequency= when it was capped to it. */
	J_ADD(o, "max_frequency", json_object_new_int64(ctl->cfg->max_freq));
	if (config_freq(ctl->cfg) != ctl->cfg->freq)
		J_ADD(o, "frequency_capped_from", json_object_new_int64((int64_t)ctl->cfg->freq));
	J_ADD(o, "files_published", json_object_new_int64((int64_t)rec->files_published));
	/* As it is on disk: the file being written is NAME.tmp until published. */
	if (rec->have_file && rec->cur.path && asprintf(&tmp, "%s.tmp", rec->cur.path) < 0)
		tmp = NULL;
	J_ADD(o, "current_file", tmp ? json_object_new_string(tmp) : NULL);
	free(tmp);
	/* Where the files are, absolute: perfrecctl ls and cut look there. */
	tmp = ctl->cfg->directory ? realpath(ctl->cfg->directory, NULL) : NULL;
	J_ADD(o, "directory", tmp ? json_object_new_string(tmp) : NULL);
	free(tmp);
	J_ADD(o, "cpu_time_sec", json_object_new_double((double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
						       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6));
	J_ADD(o, "rss_bytes", json_object_new_int64((int64_t)pages * sysconf(_SC_PAGESIZE)));
	J_ADD(o, "subscribers", json_object_new_int64((int64_t)ctl->nr_subscribers));
	status_governor(ctl, o);
	unwind_status(rec, o);
	jit_status(rec, o);
	python_status(rec, o);
	return o;
}

/*
 * The methods.  Each handler gets a call varlink_parse() has checked
 * against its row of control_methods[] (parameters there, of their
 * kinds) and call() has let through; it replies, or leaves the reply to
 * what it started (a snapshot's copy).
 */
static void method_get_info(struct client *c, const struct varlink_call *vc)
{
	struct json_object *p = json_object_new_object();

	J_ADD(p, "vendor", json_object_new_string("perfrec"));
	J_ADD(p, "product", json_object_new_string("perfrecd"));
	J_ADD(p, "version", json_object_new_string(perfrec_hostinfo__version()));
	J_ADD(p, "url", json_object_new_string("https://github.com/perfrec/perfrecd"));
	J_ADD(p, "interfaces", json_object_new_array());
	json_object_array_add(json_object_object_get(p, "interfaces"), json_object_new_string("org.varlink.service"));
	json_object_array_add(json_object_object_get(p, "interfaces"), json_object_new_string(VARLINK_INTERFACE));
	client_reply(c, p);
}

static void method_get_interface_description(struct client *c, const struct varlink_call *vc)
{
	struct json_object *p = json_object_new_object();

	J_ADD(p, "description", json_object_new_string(
		strcmp(json_object_get_string(json_object_object_get(vc->params, "interface")), VARLINK_INTERFACE)
		? "interface org.varlink.service\n" : varlink_interface_description));
	client_reply(c, p);
}

static void method_ping(struct client *c, const struct varlink_call *vc)
{
	struct json_object *p = json_object_new_object();

	J_ADD(p, "pong", json_object_new_boolean(true));
	client_reply(c, p);
}

static void method_status(struct client *c, const struct varlink_call *vc)
{
	client_reply(c, status(c->ctl));
}

static void method_rotate(struct client *c, const struct varlink_call *vc)
{
	struct control *ctl = c->ctl;
	struct json_object *p;
	char *path = NULL;
	int r;

	if (pipeout_enabled(ctl->cfg)) {
		client_reply_error(c, VL_ERR_NOT_SUPPORTED, "reason", "a stream to stdout (-o -) does not rotate");
		return;
	}
	r = snapshot_flight_mode(ctl->cfg) ? recorder_snapshot_publish(ctl->rec, &path)
					   : recorder_rotate(ctl->rec, &path);
	if (r < 0 || !path) {
		client_reply_error(c, VL_ERR_FAILED, "reason", r < 0 ? strerror(-r) : "no file was published");
	} else {
		p = json_object_new_object();
		J_ADD(p, "file", json_object_new_string(path));
		client_reply(c, p);
	}
	free(path);
}

static void method_snapshot(struct client *c, const struct varlink_call *vc)
{
	struct control *ctl = c->ctl;
	struct stat st;
	int r;

	if (c->passed_fd < 0) {
		client_reply_error(c, VL_ERR_NO_FD, NULL, NULL);
		return;
	}
	if (fstat(c->passed_fd, &st) < 0 || (!S_ISREG(st.st_mode) && isatty(c->passed_fd))) {
		close(c->passed_fd);
		c->passed_fd = -1;
		client_reply_error(c, VL_ERR_NOT_SUPPORTED, "reason", "a snapshot is binary perf data; not into a terminal");
		return;
	}
	/*
	 * Spooled, and copied out at the reader's pace: a pipe or socket
	 * from the loop, a regular file by a thread.  Nothing a client
	 * hands over may hold up the drain.
	 */
	r = xfer_start(ctl, c, vc->oneway);
	if (r < 0) {
		if (c->passed_fd >= 0)
			close(c->passed_fd);
		c->passed_fd = -1;
		client_reply_error(c, VL_ERR_FAILED, "reason", r == -EBUSY
			    ? "too many snapshots are still being written into files that take no bytes"
			    : strerror(-r));
	}
}

static void pause_or_resume(struct client *c, bool pause)
{
	struct control *ctl = c->ctl;
	int r = pause ? recorder_disable(ctl->rec) : recorder_enable(ctl->rec);

	if (r < 0) {
		client_reply_error(c, VL_ERR_FAILED, "reason", strerror(-r));
		return;
	}
	ctl->paused = pause;
	log_info("Sampling %s by uid %u pid %d", ctl->paused ? "paused" : "resumed",
		 (unsigned)c->cred.uid, (int)c->cred.pid);
	client_reply(c, NULL);
}

static void method_pause(struct client *c, const struct varlink_call *vc)
{
	pause_or_resume(c, true);
}

static void method_resume(struct client *c, const struct varlink_call *vc)
{
	pause_or_resume(c, false);
}

/*
 * Why @hz may not be set live, into @why; false when it may.  The kernel's
 * limit (kernel.perf_event_max_sample_rate) is where perf_event_open
 * fails; max-frequency= is lower by default: at 100 kHz on every CPU
 * a small host spends itself taking and draining samples.
 */
static bool frequency_refused(const struct config *cfg, int64_t hz, char *why, size_t len)
{
	int kmax = perfrec_evlist__max_sample_rate();

	if (hz <= 0)
		snprintf(why, len, "%" PRId64 " Hz is not a frequency", hz);
	else if (cfg->max_freq > 0 && hz > cfg->max_freq && (kmax <= 0 || cfg->max_freq <= kmax))
		snprintf(why, len, "%" PRId64 " Hz is outside 1 to %d Hz (max-frequency=, the host's guard: "
			 "more samples on every CPU would take the host; raise max-frequency= and reload to allow it)",
			 hz, cfg->max_freq);
	else if (kmax > 0 && hz > kmax)
		snprintf(why, len, "%" PRId64 " Hz is outside 1 to %d Hz "
			 "(the kernel's limit, kernel.perf_event_max_sample_rate)", hz, kmax);
	else
		return false;
	return true;
}

static void method_set_frequency(struct client *c, const struct varlink_call *vc)
{
	int64_t hz = json_object_get_int64(json_object_object_get(vc->params, "frequency"));
	struct json_object *p;
	char why[300];
	size_t len;
	char *m;
	int r;

	/* Refused as -F is, naming the range: perfrecctl shows the reason. */
	r = frequency_refused(c->ctl->cfg, hz, why, sizeof(why)) ? -ERANGE
		: perfrec_evlist__set_freq(c->ctl->rec->evlist, (uint64_t)hz, 0);
	if (r == -ERANGE || r == -EINVAL) {
		if (r == -EINVAL)
			snprintf(why, sizeof(why), "the events sample every N events (period=), not at a frequency; "
				 "set frequency= in the configuration and reload");
		p = json_object_new_object();
		J_ADD(p, "parameter", json_object_new_string("frequency"));
		J_ADD(p, "reason", json_object_new_string(why));
		len = 0;
		m = varlink_error(VL_ERR_INVALID_PARAMETER, p, &len);
		client_send_msg(c, m, len);
		log_notice("SetFrequency by uid %u pid %d refused: %s", (unsigned)c->cred.uid, (int)c->cred.pid, why);
		return;
	}
	if (r < 0) {
		client_reply_error(c, VL_ERR_FAILED, "reason", strerror(-r));
		return;
	}
	log_info("Sampling frequency set to %" PRId64 " Hz by uid %u pid %d", hz,
		 (unsigned)c->cred.uid, (int)c->cred.pid);
	p = json_object_new_object();
	J_ADD(p, "frequency", json_object_new_int64(hz));
	client_reply(c, p);
}

static void method_subscribe(struct client *c, const struct varlink_call *vc)
{
	int r;

	if (snapshot_flight_mode(c->ctl->cfg)) {
		client_reply_error(c, VL_ERR_NOT_SUPPORTED, "reason", "flight mode streams nothing; use Snapshot");
		return;
	}
	client_reply(c, NULL);
	r = stream_subscribe(c->ctl, c);
	if (r < 0) {
		log_warning("Cannot start a stream for pid %d: %s", (int)c->cred.pid, strerror(-r));
		c->dead = true;
		return;
	}
	log_info("Streaming to uid %u pid %d", (unsigned)c->cred.uid, (int)c->cred.pid);
}

/* Every method: a new one is a row here and its handler above (and io.perfrec.varlink). */
const struct varlink_method control_methods[] = {
	{ "org.varlink.service", "GetInfo", .handle = method_get_info },
	{ "org.varlink.service", "GetInterfaceDescription", { { "interface", VL_PARAM_INTERFACE } },
	  .handle = method_get_interface_description },
	{ VARLINK_INTERFACE, "Ping", .handle = method_ping },
	{ VARLINK_INTERFACE, "Status", .handle = method_status },
	{ VARLINK_INTERFACE, "Rotate", .handle = method_rotate },
	{ VARLINK_INTERFACE, "Snapshot", .handle = method_snapshot },
	{ VARLINK_INTERFACE, "Pause", .handle = method_pause },
	{ VARLINK_INTERFACE, "Resume", .handle = method_resume },
	{ VARLINK_INTERFACE, "SetFrequency", { { "frequency", VL_PARAM_POSITIVE_INT } },
	  .handle = method_set_frequency },
	/* The reply comes first, then the stream: a oneway call must not drop it. */
	{ VARLINK_INTERFACE, "Subscribe", .upgrade = true, .handle = method_subscribe },
};
const size_t control_nr_methods = sizeof(control_methods) / sizeof(control_methods[0]);
