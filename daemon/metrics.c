// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Self-report metrics (see metrics.h).  The numbers are the recorder's own
 * counters (no new bookkeeping on the drain path) and the uploader's stats,
 * handed over by the manager through a metrics_source, and the process's
 * CPU clock and resident set.  The HTTP side is one-shot
 * HTTP/1.0: read one request of at most METRICS_MAX_REQUEST bytes, answer,
 * close.  Sockets are non-blocking, a pass does a bounded amount of work,
 * and a client that does not finish within METRICS_CLIENT_TIMEOUT_USEC is
 * dropped, so a scraper (or anyone else on the host) cannot stall the
 * recorder.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <perfrec/perfrec.h>

#include "array.h"
#include "fsutil.h"
#include "log.h"
#include "metrics.h"

#define TAG_LISTEN UINT32_MAX
/* Per pass: at most this many epoll events and new connections. */
#define MAX_EVENTS 16
#define MAX_ACCEPTS 8

struct mclient {
	int fd;                   /* -1: slot free */
	char in[METRICS_MAX_REQUEST];
	size_t in_len;
	char *out;
	size_t out_len, out_off;
	uint64_t since_usec;      /* accepted at */
};

struct metrics {
	const struct config *cfg;
	struct metrics_source src;
	int epfd, listen_fd;
	struct mclient clients[METRICS_MAX_CLIENTS];
	uint64_t last_textfile_usec;
	bool textfile_failing;
	double start_time_sec;
	/* totals of recorders replaced by a reload */
	uint64_t base_samples, base_lost, base_bytes, base_dropped;
	struct jitsink_stats base_jit;
	struct metrics_event *events;
	size_t events_cap;
};

static uint64_t mono_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* ------------------------------------------------------------ pure parts */

static bool is_tchar(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* The request line alone: the status to answer. */
static int parse_request_line(const char *l, size_t len, bool *ret_head)
{
	const char *sp1, *sp2, *end = l + len;
	size_t mlen, plen;

	if (len && l[len - 1] == '\r')
		end--, len--;
	sp1 = memchr(l, ' ', len);
	if (!sp1 || sp1 == l)
		return 400;
	sp2 = memchr(sp1 + 1, ' ', (size_t)(end - sp1 - 1));
	if (!sp2 || sp2 == sp1 + 1)
		return 400;
	/* "HTTP/1.0" or "HTTP/1.1", nothing after it */
	if (end - sp2 - 1 != 8 || memcmp(sp2 + 1, "HTTP/1.", 7) != 0 || (sp2[8] != '0' && sp2[8] != '1'))
		return 400;
	mlen = (size_t)(sp1 - l);
	for (size_t i = 0; i < mlen; i++)
		if (!is_tchar(l[i]))
			return 400;
	plen = (size_t)(sp2 - sp1 - 1);
	for (size_t i = 0; i < plen; i++)
		if ((unsigned char)sp1[1 + i] <= ' ' || (unsigned char)sp1[1 + i] >= 0x7f)
			return 400;
	/* origin-form only; an absolute URL is some other resource */
	if (sp1[1] != '/')
		return plen > 7 && !memcmp(sp1 + 1, "http://", 7) ? 404 : 400;
	if (!((mlen == 3 && !memcmp(l, "GET", 3)) || (mlen == 4 && !memcmp(l, "HEAD", 4))))
		return 405;
	*ret_head = mlen == 4;
	/* "/metrics", optionally with a query (ignored) */
	if (plen >= 8 && !memcmp(sp1 + 1, "/metrics", 8) && (plen == 8 || sp1[9] == '?'))
		return 200;
	return 404;
}

int metrics_http_parse(const char *buf, size_t len, bool *ret_head)
{
	const char *nl, *p;
	bool head = false;
	int status;

	if (len > METRICS_MAX_REQUEST)
		return 400;
	nl = memchr(buf, '\n', len);
	if (!nl) {
		/* No request line yet: only printable ASCII may be on the way. */
		for (size_t i = 0; i < len; i++)
			if (((unsigned char)buf[i] < ' ' && buf[i] != '\r') || (unsigned char)buf[i] >= 0x7f)
				return 400;
		return len == METRICS_MAX_REQUEST ? 400 : 0;
	}
	status = parse_request_line(buf, (size_t)(nl - buf), &head);
	if (status == 400)
		return 400;     /* no need to wait for headers to say so */
	/* The headers end with an empty line; their content does not matter. */
	for (p = nl; p < buf + len; p++) {
		if (*p != '\n')
			continue;
		if (p + 1 < buf + len && p[1] == '\n')
			break;
		if (p + 2 < buf + len && p[1] == '\r' && p[2] == '\n')
			break;
	}
	if (p >= buf + len)
		return len >= METRICS_MAX_REQUEST ? 400 : 0;
	*ret_head = head;
	return status;
}

/* Label values escape backslash, double quote and newline (format 0.0.4). */
static void put_label_value(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\\\", f);
		else if (*s == '"')
			fputs("\\\"", f);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

static void family(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void counter(FILE *f, const char *name, const char *help, uint64_t v)
{
	family(f, name, "counter", help);
	fprintf(f, "%s %" PRIu64 "\n", name, v);
}

static void gauge(FILE *f, const char *name, const char *help, uint64_t v)
{
	family(f, name, "gauge", help);
	fprintf(f, "%s %" PRIu64 "\n", name, v);
}

/* unwind=host: how the unwinder's tables serve it (unwind-internal.h). */
static void unwind_table_metrics(FILE *f, const struct perfrec_unwinder_table_stats *t)
{
	counter(f, "perfrecd_unwind_by_tables_total", "DWARF samples unwound with the unwind tables alone.", t->by_tables);
	counter(f, "perfrecd_unwind_by_libdwfl_total", "DWARF samples unwound by libdwfl: a table said it could not go on, or a file's CFI made no table.", t->by_dwfl);
	counter(f, "perfrecd_unwind_fp_frames_total", "Frames found following the frame pointer through code without unwind tables (JIT code).", t->fp_frames);
	counter(f, "perfrecd_unwind_tables_built_total", "Unwind tables built from a binary's CFI.", t->cache.built);
	counter(f, "perfrecd_unwind_tables_loaded_total", "Unwind tables loaded from the build-id cache's .unwtab directory.", t->cache.loaded);
	counter(f, "perfrecd_unwind_tables_refused_total", "Unwind table files refused (damaged, cut, of another build id): removed and built again.", t->cache.refused);
	counter(f, "perfrecd_unwind_tables_evicted_total", "Unwind tables dropped from memory for its bound.", t->cache.evicted);
	gauge(f, "perfrecd_unwind_table_bytes", "Bytes of unwind tables in memory.", t->cache.bytes);
}

/* JIT frames named (jitsink.h): what it did, and what it left out or refused. */
static void jit_metrics(FILE *f, const struct jitsink_stats *j)
{
	counter(f, "perfrecd_jit_processes_total", "Processes with JIT mappings whose perf map was followed.", j->procs);
	counter(f, "perfrecd_jit_mappings_named_total", "MMAP2 records written naming a JIT mapping's image.", j->maps);
	counter(f, "perfrecd_jit_images_total", "JIT images written into the build-id cache.", j->images);
	counter(f, "perfrecd_jit_image_symbols_total", "Symbols in the JIT images written.", j->image_syms);
	counter(f, "perfrecd_jit_no_map_total", "JIT mappings of processes without a readable perf map: no image.", j->no_map);
	counter(f, "perfrecd_jit_maps_refused_total", "Processes whose perf map or jitdump was refused: a symbolic link, a FIFO, another user's file.", j->refused);
	counter(f, "perfrecd_jit_maps_at_exit_total", "Perf maps read through the root held once their process was gone (written at exit).", j->maps_at_exit);
	gauge(f, "perfrecd_jit_roots_held", "Roots of processes without a perf map yet held open now.", j->roots_held);
	counter(f, "perfrecd_jit_roots_refused_total", "Processes whose root was not held: the bound on roots held was reached.", j->roots_refused);
	counter(f, "perfrecd_jit_skipped_total", "JIT mappings or processes left out: over the bounds on processes and mappings.", j->skipped);
	counter(f, "perfrecd_jit_failed_total", "JIT images that could not be written.", j->failed);
	counter(f, "perfrecd_jit_reads_over_memory_total", "Perf map reads left out: the memory bound of all symbol tables was reached.", j->over_memory);
	counter(f, "perfrecd_jit_map_bytes_total", "Bytes read from perf maps and jitdumps.", j->perfmap.bytes);
	counter(f, "perfrecd_jit_map_symbols_total", "Perf map lines and jitdump records taken as symbols.", j->perfmap.syms);
	counter(f, "perfrecd_jit_symbols_dropped_total", "Good perf map lines dropped: a process's bound on symbols or name bytes was reached.", j->perfmap.over_limit);
	counter(f, "perfrecd_jit_bad_lines_total", "Perf map lines refused: not START SIZE NAME, or an absurd range.", j->perfmap.bad_lines);
	counter(f, "perfrecd_jit_long_lines_total", "Perf map lines longer than a line may be: skipped whole.", j->perfmap.long_lines);
	counter(f, "perfrecd_jit_cut_names_total", "Symbol names cut to their bound.", j->perfmap.cut_names);
}

/* Python frames (issue 27): processes found by outcome, walks, merges. */
static void python_metrics(FILE *f, const struct python_stats *p)
{
	fprintf(f, "# HELP perfrecd_python_processes_found_total Processes looked at for a CPython runtime, by outcome.\n"
		   "# TYPE perfrecd_python_processes_found_total counter\n");
	for (int s = 0; s < _PYPROC_STATUS_MAX; s++)
		fprintf(f, "perfrecd_python_processes_found_total{status=\"%s\"} %" PRIu64 "\n",
			pyproc_status_key(s), p->track.found.n[s]);
	gauge(f, "perfrecd_python_processes", "CPython processes whose frames are walked now.", p->track.tracked);
	counter(f, "perfrecd_python_walks_total", "Walks of Python frames read from the BPF ring.", p->walk.walks);
	counter(f, "perfrecd_python_walks_joined_total", "Walks joined to their sample.", p->walk.joined);
	counter(f, "perfrecd_python_walks_unjoined_total", "Walks no sample took (aged out).", p->walk.unjoined);
	counter(f, "perfrecd_python_walks_torn_total", "Walks cut at a read that failed or a chain that was not sane.", p->walk.torn);
	counter(f, "perfrecd_python_walks_lost_total", "Walks the BPF ring had no room for.", p->walk.ring_lost);
	counter(f, "perfrecd_python_samples_merged_total", "Samples with Python frames in place of the eval loop's.", p->stage.merged);
	counter(f, "perfrecd_python_samples_unmerged_total", "Samples with a walk of which nothing could be merged.", p->stage.unmerged);
	counter(f, "perfrecd_python_names_failed_total", "Python frames whose code object could not be named.", p->stage.names_failed);
}

int metrics_format(const struct metrics_values *v, char **ret, size_t *ret_len)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return -ENOMEM;

	family(f, "perfrecd_info", "gauge", "Constant 1, labelled with the host, the version and the configured label.NAME= labels.");
	fputs("perfrecd_info{host=\"", f);
	put_label_value(f, v->host ? v->host : "");
	fputs("\",version=\"", f);
	put_label_value(f, v->version ? v->version : "");
	fputc('"', f);
	for (size_t i = 0; i < v->nr_labels; i++) {
		const char *eq = strchr(v->labels[i], '=');

		if (!eq)
			continue;
		/* label.NAME is [A-Za-z0-9_]+ (config): "label_" makes it a valid,
		 * unclashing label name even when NAME starts with a digit. */
		fprintf(f, ",label_%.*s=\"", (int)(eq - v->labels[i]), v->labels[i]);
		put_label_value(f, eq + 1);
		fputc('"', f);
	}
	fputs("} 1\n", f);

	family(f, "perfrecd_start_time_seconds", "gauge", "When perfrecd started, in seconds since the Unix epoch.");
	fprintf(f, "perfrecd_start_time_seconds %.3f\n", v->start_time_sec);
	counter(f, "perfrecd_samples_total", "Samples drained from the rings since start.", v->samples);
	counter(f, "perfrecd_lost_total", "Records the kernel dropped (PERF_RECORD_LOST and LOST_SAMPLES) since start.", v->lost);
	counter(f, "perfrecd_bytes_written_total", "Bytes of records written to output files since start (before compression).", v->bytes_written);
	counter(f, "perfrecd_dropped_bytes_total", "Bytes of records drained but not written (output failing, e.g. disk full).", v->dropped_bytes);
	counter(f, "perfrecd_files_published_total", "Output files published (finished and renamed) since start.", v->files_published);
	gauge(f, "perfrecd_cpus", "CPUs being recorded (one ring each).", v->nr_cpus);
	gauge(f, "perfrecd_paused", "1 while sampling is paused over the control socket, else 0.", v->paused);
	if (v->nr_events) {
		family(f, "perfrecd_sampling_frequency_hertz", "gauge", "Sampling frequency each event runs at now; 0 when it samples by period.");
		for (size_t i = 0; i < v->nr_events; i++) {
			fputs("perfrecd_sampling_frequency_hertz{event=\"", f);
			put_label_value(f, v->events[i].name ? v->events[i].name : "");
			fprintf(f, "\"} %" PRIu64 "\n", v->events[i].freq);
		}
	}
	if (v->have_upload) {
		counter(f, "perfrecd_upload_successes_total", "Objects (data files and manifests) stored by the uploader.", v->upload.successes);
		counter(f, "perfrecd_upload_failures_total", "Failed upload attempts, each retry counted.", v->upload.failures);
		counter(f, "perfrecd_upload_bytes_total", "Payload bytes stored by the uploader.", v->upload.bytes);
		counter(f, "perfrecd_upload_removed_unsent_total", "Files removed locally before they were uploaded (disk limit).", v->upload.removed_unsent);
		gauge(f, "perfrecd_upload_backlog_files", "Published files waiting to be uploaded, including the one in flight.", v->upload.backlog);
	}
	if (v->have_unwind) {
		const struct unwind_sink_stats *u = &v->unwind;

		counter(f, "perfrecd_unwind_samples_total", "DWARF samples unwound on the host (unwind=host).", u->unwinder.samples);
		counter(f, "perfrecd_unwind_unwound_total", "Of those, samples with at least one caller found.", u->unwinder.unwound);
		counter(f, "perfrecd_unwind_behind_total", "Samples written with their sampled user ip only: the unwinder was too far behind.", u->behind);
		counter(f, "perfrecd_unwind_dropped_total", "DWARF samples the unwinder could not rewrite (bad input, no memory): not written.", u->unwinder.dropped);
		counter(f, "perfrecd_unwind_elf_cache_hits_total", "ELF lookups the unwinder's cache answered.", u->unwinder.elf_hits);
		counter(f, "perfrecd_unwind_elf_opened_total", "ELF files the unwinder opened (misses of its cache).", u->unwinder.elf_opened);
		counter(f, "perfrecd_unwind_sessions_total", "Times a process's executable maps were read into a new unwind session (once per change of its code maps).", u->unwinder.sessions);
		gauge(f, "perfrecd_unwind_elf_cached_bytes", "Sizes of the ELF files the unwinder keeps open.", u->unwinder.elf_bytes);
		gauge(f, "perfrecd_unwind_queued_bytes", "Bytes of records waiting for the unwinding worker.", u->queued_bytes);
		counter(f, "perfrecd_unwind_stacks_trimmed_total", "DWARF samples queued for the unwinder only up to their thread's known stack top.", u->trimmed);
		counter(f, "perfrecd_unwind_stack_bytes_trimmed_total", "Stack bytes the kernel copied above threads' known tops, not queued.", u->trimmed_bytes);
		counter(f, "perfrecd_unwind_stack_trim_missed_total", "Walks that wanted a word above a trimmed copy (the thread's top then forgotten).", u->trim_missed);
		unwind_table_metrics(f, &u->tables);
	}
	if (v->have_jit)
		jit_metrics(f, &v->jit);
	if (v->have_python)
		python_metrics(f, &v->python);
	family(f, "perfrecd_cpu_seconds_total", "counter", "CPU time perfrecd used (user and system, all threads), in seconds.");
	fprintf(f, "perfrecd_cpu_seconds_total %.6f\n", v->cpu_sec);
	gauge(f, "perfrecd_resident_memory_bytes", "Resident set size of perfrecd in bytes.", v->rss_bytes);
	gauge(f, "perfrecd_tracked_processes", "Processes perfrecd keeps state for now: those alive and those sampled in the current file.", v->tracked_processes);

	if (fclose(f) != 0 || !text) {
		free(text);
		return -ENOMEM;
	}
	*ret = text;
	*ret_len = len;
	return 0;
}

static const char *reason(int status)
{
	switch (status) {
	case 200: return "OK";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	default: return "Bad Request";
	}
}

int metrics_http_response(int status, const char *body, size_t body_len, bool head,
			  char **ret, size_t *ret_len)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return -ENOMEM;
	fprintf(f, "HTTP/1.0 %d %s\r\n"
		"Content-Type: %s\r\n"
		"Content-Length: %zu\r\n"
		"%s"
		"Connection: close\r\n\r\n",
		status, reason(status),
		status == 200 ? "text/plain; version=0.0.4; charset=utf-8" : "text/plain; charset=utf-8",
		body_len, status == 405 ? "Allow: GET, HEAD\r\n" : "");
	if (!head && body_len)
		fwrite(body, 1, body_len, f);
	if (fclose(f) != 0 || !text) {
		free(text);
		return -ENOMEM;
	}
	*ret = text;
	*ret_len = len;
	return 0;
}

/* ----------------------------------------------------------- collecting */

static uint64_t rss_bytes(void)
{
	long size, pages = 0;
	FILE *f = fopen("/proc/self/statm", "re");

	if (!f)
		return 0;
	if (fscanf(f, "%ld %ld", &size, &pages) != 2)
		pages = 0;
	fclose(f);
	return pages > 0 ? (uint64_t)pages * (uint64_t)sysconf(_SC_PAGESIZE) : 0;
}

static void collect(struct metrics *mx, struct metrics_values *v)
{
	struct timespec ts;

	memset(v, 0, sizeof(*v));
	mx->src.collect(mx, mx->src.userdata, v);
	v->version = perfrec_hostinfo__version();
	v->labels = mx->cfg->labels;
	v->nr_labels = mx->cfg->nr_labels;
	v->start_time_sec = mx->start_time_sec;
	v->samples += mx->base_samples;
	v->lost += mx->base_lost;
	v->bytes_written += mx->base_bytes;
	v->dropped_bytes += mx->base_dropped;
	if (v->have_jit)
		jitsink_stats_add(&v->jit, &mx->base_jit);
	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) == 0)
		v->cpu_sec = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	v->rss_bytes = rss_bytes();
}

struct metrics_event *metrics_events(struct metrics *mx, size_t n)
{
	return ARRAY_RESERVE(mx->events, mx->events_cap, n, 8) < 0 ? NULL : mx->events;
}

static int render(struct metrics *mx, char **ret, size_t *ret_len)
{
	struct metrics_values v;

	collect(mx, &v);
	return metrics_format(&v, ret, ret_len);
}

void metrics_carry(struct metrics *mx)
{
	struct metrics_values v;

	if (!mx)
		return;
	memset(&v, 0, sizeof(v));
	mx->src.collect(mx, mx->src.userdata, &v);
	mx->base_samples += v.samples;
	mx->base_lost += v.lost;
	mx->base_bytes += v.bytes_written;
	mx->base_dropped += v.dropped_bytes;
	jitsink_stats_add(&mx->base_jit, &v.jit);
}

/* ------------------------------------------------------------- textfile */

int metrics_write_textfile(struct metrics *mx)
{
	const char *path;
	char *text = NULL, *tmp = NULL;
	size_t len = 0;
	int fd = -1, r;

	if (!mx || !mx->cfg->metrics_textfile)
		return 0;
	path = mx->cfg->metrics_textfile;
	r = render(mx, &text, &len);
	if (r < 0)
		goto out;
	/* Same directory, so rename() is atomic; node_exporter's collector
	 * reads only *.prom, so it never sees the temporary file. */
	if (asprintf(&tmp, "%s.tmp", path) < 0) {
		tmp = NULL;
		r = -ENOMEM;
		goto out;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0) {
		r = -errno;
		goto out;
	}
	r = write_all(fd, text, len);
	if (r < 0)
		goto out;
	/*
	 * No fsync: this runs on the thread that drains the rings, every few
	 * seconds, and a flush can wait on a busy disk far longer than a ring
	 * lasts.  The file is rewritten from live counters each time; after a
	 * crash it may be short or stale until the next write, which a scraper
	 * of a restarting host already expects.
	 */
	if (close(fd) < 0) {
		r = -errno;
		fd = -1;
		goto out;
	}
	fd = -1;
	if (rename(tmp, path) < 0) {
		r = -errno;
		goto out;
	}
	r = 0;
out:
	if (fd >= 0)
		close(fd);
	if (r < 0 && tmp)
		unlink(tmp);
	if (r < 0 && !mx->textfile_failing)
		log_error("Cannot write the metrics textfile %s: %s", path, strerror(-r));
	else if (r == 0 && mx->textfile_failing)
		log_notice("Metrics textfile %s written again", path);
	mx->textfile_failing = r < 0;
	free(tmp);
	free(text);
	return r;
}

/* ----------------------------------------------------------------- HTTP */

static void client_close(struct metrics *mx, struct mclient *c)
{
	if (c->fd < 0)
		return;
	epoll_ctl(mx->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	free(c->out);
	c->fd = -1;
	c->out = NULL;
	c->in_len = c->out_len = c->out_off = 0;
}

/* Send what the socket takes; close when all is out or the peer is gone. */
static void client_flush(struct metrics *mx, struct mclient *c)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			struct epoll_event ev = { .events = EPOLLOUT, .data.u32 = (uint32_t)(c - mx->clients) };

			epoll_ctl(mx->epfd, EPOLL_CTL_MOD, c->fd, &ev);
			return;
		}
		if (n <= 0)
			break;
		c->out_off += (size_t)n;
	}
	/* Done (or the peer went away): end the one-shot exchange. */
	shutdown(c->fd, SHUT_WR);
	client_close(mx, c);
}

static void client_answer(struct metrics *mx, struct mclient *c, int status, bool head)
{
	char *body = NULL;
	size_t body_len = 0;
	int r;

	if (status == 200) {
		r = render(mx, &body, &body_len);
		if (r < 0) {
			client_close(mx, c);
			return;
		}
	} else {
		const char *msg = status == 404 ? "Not found: metrics are at /metrics\n" :
				  status == 405 ? "Only GET and HEAD are served\n" : "Bad request\n";

		body = strdup(msg);
		body_len = body ? strlen(body) : 0;
	}
	r = metrics_http_response(status, body, body_len, head, &c->out, &c->out_len);
	free(body);
	if (r < 0) {
		client_close(mx, c);
		return;
	}
	c->out_off = 0;
	client_flush(mx, c);
}

static void client_read(struct metrics *mx, struct mclient *c)
{
	bool head = false;
	ssize_t n;
	int status;

	if (c->out) {
		client_flush(mx, c);
		return;
	}
	/* One read per pass: bounded work, however much the client sends. */
	n = recv(c->fd, c->in + c->in_len, sizeof(c->in) - c->in_len, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (n <= 0) {
		client_close(mx, c);
		return;
	}
	c->in_len += (size_t)n;
	status = metrics_http_parse(c->in, c->in_len, &head);
	if (status)
		client_answer(mx, c, status, head);
}

static void accept_clients(struct metrics *mx)
{
	for (int k = 0; k < MAX_ACCEPTS; k++) {
		int fd = accept4(mx->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		struct mclient *c = NULL;
		struct epoll_event ev = { .events = EPOLLIN };

		if (fd < 0)
			return;
		for (size_t i = 0; i < METRICS_MAX_CLIENTS; i++)
			if (mx->clients[i].fd < 0) {
				c = &mx->clients[i];
				break;
			}
		/* Full: refuse at once rather than leave the listener readable
		 * (which would wake the loop on every pass). */
		if (!c) {
			close(fd);
			continue;
		}
		ev.data.u32 = (uint32_t)(c - mx->clients);
		if (epoll_ctl(mx->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
			close(fd);
			continue;
		}
		c->fd = fd;
		c->in_len = 0;
		c->since_usec = mono_usec();
	}
}

void metrics_process(struct metrics *mx)
{
	struct epoll_event evs[MAX_EVENTS];
	int n;

	if (!mx || mx->epfd < 0)
		return;
	n = epoll_wait(mx->epfd, evs, MAX_EVENTS, 0);
	for (int i = 0; i < n; i++) {
		uint32_t tag = evs[i].data.u32;

		if (tag == TAG_LISTEN)
			accept_clients(mx);
		else if (tag < METRICS_MAX_CLIENTS && mx->clients[tag].fd >= 0)
			client_read(mx, &mx->clients[tag]);
	}
}

void metrics_tick(struct metrics *mx, uint64_t now)
{
	if (!mx)
		return;
	for (size_t i = 0; i < METRICS_MAX_CLIENTS; i++)
		if (mx->clients[i].fd >= 0 && now - mx->clients[i].since_usec >= METRICS_CLIENT_TIMEOUT_USEC)
			client_close(mx, &mx->clients[i]);
	if (mx->cfg->metrics_textfile &&
	    (!mx->last_textfile_usec || now - mx->last_textfile_usec >= METRICS_TEXTFILE_INTERVAL_USEC)) {
		mx->last_textfile_usec = now;
		metrics_write_textfile(mx);
	}
}

/* ---------------------------------------------------------------- setup */

static int open_listener(struct metrics *mx, const char *addr)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = TAG_LISTEN };
	const char *colon = strrchr(addr, ':');
	char host[64];
	int one = 1;

	/* config.c accepted only a loopback 127.x.y.z:PORT */
	if (!colon || (size_t)(colon - addr) >= sizeof(host))
		return -EINVAL;
	memcpy(host, addr, (size_t)(colon - addr));
	host[colon - addr] = 0;
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		return -EINVAL;
	sa.sin_port = htons((uint16_t)atoi(colon + 1));

	mx->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (mx->epfd < 0)
		return -errno;
	mx->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (mx->listen_fd < 0)
		return -errno;
	setsockopt(mx->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(mx->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(mx->listen_fd, METRICS_MAX_CLIENTS) < 0 ||
	    epoll_ctl(mx->epfd, EPOLL_CTL_ADD, mx->listen_fd, &ev) < 0)
		return -errno;
	return 0;
}

int metrics_open(const struct config *cfg, const struct metrics_source *src, struct metrics **ret)
{
	struct metrics *mx;
	struct timespec ts;
	int r;

	*ret = NULL;
	if (!cfg->metrics_listen && !cfg->metrics_textfile)
		return 0;
	mx = calloc(1, sizeof(*mx));
	if (!mx)
		return log_error_errno(-ENOMEM, "Cannot set up metrics: out of memory");
	mx->cfg = cfg;
	mx->src = *src;
	mx->epfd = mx->listen_fd = -1;
	for (size_t i = 0; i < METRICS_MAX_CLIENTS; i++)
		mx->clients[i].fd = -1;
	clock_gettime(CLOCK_REALTIME, &ts);
	mx->start_time_sec = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	if (cfg->metrics_listen) {
		r = open_listener(mx, cfg->metrics_listen);
		if (r < 0) {
			metrics_free(mx);
			return log_error_errno(r, "Cannot listen for metrics on %s: %s", cfg->metrics_listen,
					       strerror(-r));
		}
		log_info("Serving metrics on http://%s/metrics", cfg->metrics_listen);
	}
	*ret = mx;
	return 0;
}

int metrics_fd(const struct metrics *mx)
{
	return mx && mx->listen_fd >= 0 ? mx->epfd : -1;
}

void metrics_free(struct metrics *mx)
{
	if (!mx)
		return;
	for (size_t i = 0; i < METRICS_MAX_CLIENTS; i++)
		client_close(mx, &mx->clients[i]);
	if (mx->listen_fd >= 0)
		close(mx->listen_fd);
	if (mx->epfd >= 0)
		close(mx->epfd);
	free(mx->events);
	free(mx);
}
