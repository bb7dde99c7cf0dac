/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * perfrecd's own health in the Prometheus text exposition format (0.0.4):
 * what it recorded, lost, wrote, published and uploaded, its CPU time and
 * memory.  Served by a tiny one-shot HTTP/1.0 responder on a loopback port
 * (metrics-listen=) whose sockets live in an epoll set of their own,
 * registered as one fd in the manager's loop and served after the drain
 * with bounded work per pass, and/or written atomically to a file for
 * node_exporter's textfile collector (metrics-textfile=).
 */
#ifndef PERFRECD_METRICS_H
#define PERFRECD_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "jitsink.h"
#include "pytrack.h"
#include "unwind-sink.h"
#include "upload.h"

struct metrics;

/* Limits of the HTTP responder: nothing a client does costs more. */
#define METRICS_MAX_CLIENTS 16
#define METRICS_MAX_REQUEST 4096
#define METRICS_CLIENT_TIMEOUT_USEC (2 * 1000000ULL)
/* How often the textfile is rewritten (and at exit). */
#define METRICS_TEXTFILE_INTERVAL_USEC (5 * 1000000ULL)

struct metrics_event {
	const char *name;
	uint64_t freq;            /* Hz; 0: samples by period */
};

/* One snapshot of everything exported; strings are borrowed. */
struct metrics_values {
	const char *host;
	const char *version;
	char *const *labels;      /* "NAME=VALUE" from label.NAME= */
	size_t nr_labels;
	double start_time_sec;    /* wall clock, seconds since the epoch */
	uint64_t samples;
	uint64_t lost;            /* records the kernel dropped (LOST + LOST_SAMPLES) */
	uint64_t bytes_written;   /* record bytes handed to the output */
	uint64_t dropped_bytes;   /* drained but not written (disk full) */
	uint64_t files_published;
	size_t nr_cpus;
	bool paused;
	const struct metrics_event *events;
	size_t nr_events;
	bool have_upload;         /* upload-url set: upload.* below are meaningful */
	struct upload_stats upload;
	double cpu_sec;           /* CLOCK_PROCESS_CPUTIME_ID: all our threads */
	uint64_t rss_bytes;
	uint64_t tracked_processes; /* in the build-id table: bounded by the live ones */
	bool have_unwind;         /* unwind=host: unwind.* below are meaningful */
	struct unwind_sink_stats unwind;
	bool have_jit;            /* jit.* below are meaningful (the JIT sink runs) */
	struct jitsink_stats jit;
	bool have_python;         /* python.* below are meaningful (python=yes and the walk loaded) */
	struct python_stats python;
};

/*
 * Where the numbers come from: @collect fills what it knows into @v (zeroed
 * before) each time the text is made -- host, the counters of the recorder
 * running now, files_published, nr_cpus, paused, events, upload and
 * tracked_processes.  metrics.c adds what is its own: version, labels, start
 * time, CPU time, RSS and the counters of recorders a reload replaced.
 * @events may point into metrics_events(@mx, n).
 */
struct metrics_source {
	void (*collect)(struct metrics *mx, void *userdata, struct metrics_values *v);
	void *userdata;
};

/*
 * Set up what @cfg asks for: bind metrics-listen (before privileges are
 * dropped, so a low port works too).  @cfg is borrowed for the object's
 * life (a reload may change what it holds: the textfile path is read from
 * it each time).  *ret is NULL when neither metrics-listen nor
 * metrics-textfile is set.  0 or -errno, logged.
 */
int metrics_open(const struct config *cfg, const struct metrics_source *src, struct metrics **ret);
/* Scratch room for @n events, owned by @mx, valid until the next call; NULL
 * when out of memory (the events are then left out). */
struct metrics_event *metrics_events(struct metrics *mx, size_t n);
/* The fd the manager polls for readability; -1 when nothing listens. */
int metrics_fd(const struct metrics *mx);
/* Accept and serve what is ready, bounded; call after the drain of a pass. */
void metrics_process(struct metrics *mx);
/* Drop stalled clients; rewrite the textfile when its interval is up. */
void metrics_tick(struct metrics *mx, uint64_t now_usec);
/* Rewrite the textfile now (at exit, after the last file is finished). */
int metrics_write_textfile(struct metrics *mx);
/* The recorder is about to be replaced (reload): keep the totals the
 * source reports now, so that counters stay monotonic. */
void metrics_carry(struct metrics *mx);
void metrics_free(struct metrics *mx);

/* Pure parts, unit-tested. */

/*
 * Look at the bytes of a request received so far.  Returns 0 when more are
 * needed, else the HTTP status to answer: 200 (GET or HEAD of /metrics,
 * *ret_head telling which), 404 (another path), 405 (another method) or
 * 400 (malformed, or no end of headers within METRICS_MAX_REQUEST bytes).
 */
int metrics_http_parse(const char *buf, size_t len, bool *ret_head);
/* The exposition text for @v: heap string in *ret, length in *ret_len. */
int metrics_format(const struct metrics_values *v, char **ret, size_t *ret_len);
/* A whole HTTP/1.0 response (Connection: close); the body is left out for
 * HEAD.  0 or -ENOMEM. */
int metrics_http_response(int status, const char *body, size_t body_len, bool head,
			  char **ret, size_t *ret_len);

#endif
