// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Tests of perfrecd's self-report metrics: the HTTP request parser (table
 * of well-formed, partial, wrong and hostile requests), the exposition
 * text (families typed before their samples, label escaping, upload
 * families only with upload on), whole HTTP responses, the atomic textfile,
 * and the loopback responder driven through metrics_process() with real
 * sockets: answers, 404, 400 for garbage, stalled clients dropped by
 * metrics_tick(), and the client limit.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "metrics.h"
#include "recorder.h"  /* now_usec() */

/* ------------------------------------------------------------ requests */

struct req_case {
	const char *what;
	const char *req;
	int status;
	bool head;
};

static const struct req_case req_cases[] = {
	{ "GET with headers", "GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: */*\r\n\r\n", 200, false },
	{ "HTTP/1.0 no headers", "GET /metrics HTTP/1.0\r\n\r\n", 200, false },
	{ "bare LF line ends", "GET /metrics HTTP/1.0\nHost: x\n\n", 200, false },
	{ "HEAD", "HEAD /metrics HTTP/1.1\r\n\r\n", 200, true },
	{ "query ignored", "GET /metrics?name[]=x HTTP/1.1\r\n\r\n", 200, false },
	{ "other path", "GET /foo HTTP/1.1\r\n\r\n", 404, false },
	{ "root", "GET / HTTP/1.1\r\n\r\n", 404, false },
	{ "longer path", "GET /metricsx HTTP/1.1\r\n\r\n", 404, false },
	{ "sub path", "GET /metrics/x HTTP/1.1\r\n\r\n", 404, false },
	{ "absolute URL", "GET http://127.0.0.1/metrics HTTP/1.1\r\n\r\n", 404, false },
	{ "POST", "POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 405, false },
	{ "lower-case get", "get /metrics HTTP/1.1\r\n\r\n", 405, false },
	{ "garbage line", "hello there\r\n\r\n", 400, false },
	{ "garbage line, no headers yet", "hello\r\n", 400, false },
	{ "no version", "GET /metrics\r\n\r\n", 400, false },
	{ "HTTP/2", "GET /metrics HTTP/2.0\r\n\r\n", 400, false },
	{ "version with junk", "GET /metrics HTTP/1.1x\r\n\r\n", 400, false },
	{ "double space", "GET  /metrics HTTP/1.1\r\n\r\n", 400, false },
	{ "control byte before line end", "GE\x01T /metrics", 400, false },
	{ "control byte in path", "GET /me\x01trics HTTP/1.1\r\n\r\n", 400, false },
	{ "high byte", "\xff\xfe", 400, false },
	{ "empty", "", 0, false },
	{ "partial request line", "GET /metr", 0, false },
	{ "headers not ended", "GET /metrics HTTP/1.1\r\nHost: x\r\n", 0, false },
	{ "one CRLF only", "GET /metrics HTTP/1.1\r\n", 0, false },
	{ "CR of the final CRLF only", "GET /metrics HTTP/1.1\r\n\r", 0, false },
};

Test(metrics, parses_requests)
{
	for (size_t i = 0; i < sizeof(req_cases) / sizeof(req_cases[0]); i++) {
		const struct req_case *c = &req_cases[i];
		bool head = !c->head;
		int status = metrics_http_parse(c->req, strlen(c->req), &head);

		cr_expect_eq(status, c->status, "%s: status %d, want %d", c->what, status, c->status);
		if (status == 200)
			cr_expect_eq(head, c->head, "%s: head %d", c->what, head);
	}
}

Test(metrics, refuses_requests_that_never_end)
{
	char buf[METRICS_MAX_REQUEST + 1];
	bool head;
	size_t n;

	/* a request line that fills the whole buffer without a line end */
	memset(buf, 'A', sizeof(buf));
	cr_expect_eq(metrics_http_parse(buf, METRICS_MAX_REQUEST - 1, &head), 0);
	cr_expect_eq(metrics_http_parse(buf, METRICS_MAX_REQUEST, &head), 400);
	cr_expect_eq(metrics_http_parse(buf, sizeof(buf), &head), 400);
	/* a good request line, then headers that never end */
	n = (size_t)snprintf(buf, sizeof(buf), "GET /metrics HTTP/1.1\r\nX: ");
	memset(buf + n, 'b', sizeof(buf) - n);
	cr_expect_eq(metrics_http_parse(buf, METRICS_MAX_REQUEST - 1, &head), 0);
	cr_expect_eq(metrics_http_parse(buf, METRICS_MAX_REQUEST, &head), 400);
}

/* ------------------------------------------------------------ exposition */

static char *labels[] = { "team=sre", "env=te\"st\\x\ny" };
static const struct metrics_event events[] = { { "cpu-clock", 499 }, { "page-faults", 0 } };

static struct metrics_values sample_values(void)
{
	struct metrics_values v = {
		.host = "h\"o\\st", .version = "6.1.0-perfrecd-0.1",
		.labels = labels, .nr_labels = 2, .start_time_sec = 1700000000.25,
		.samples = 12345, .lost = 7, .bytes_written = 987654, .dropped_bytes = 3,
		.files_published = 4, .nr_cpus = 2, .paused = true,
		.events = events, .nr_events = 2,
		.cpu_sec = 1.5, .rss_bytes = 8 << 20, .tracked_processes = 321,
	};
	return v;
}

static char *format(const struct metrics_values *v)
{
	char *text = NULL;
	size_t len = 0;

	cr_assert_eq(metrics_format(v, &text, &len), 0);
	cr_assert_eq(strlen(text), len);
	cr_assert(len > 0 && text[len - 1] == '\n', "exposition must end with a newline");
	return text;
}

/* Each "name value" must directly follow its family's HELP and TYPE lines. */
static void expect_family(const char *text, const char *name, const char *type, const char *sample)
{
	char want[512];
	const char *help = NULL;

	snprintf(want, sizeof(want), "# HELP %s ", name);
	help = strstr(text, want);
	cr_expect_not_null(help, "no HELP for %s", name);
	if (!help)
		return;
	snprintf(want, sizeof(want), "\n# TYPE %s %s\n%s\n", name, type, sample);
	cr_expect_not_null(strstr(help, want), "expected %s in:\n%s", want, text);
	/* one family, one HELP */
	snprintf(want, sizeof(want), "# HELP %s ", name);
	cr_expect_null(strstr(help + 1, want), "second HELP for %s", name);
}

Test(metrics, formats_every_family_typed_before_its_samples)
{
	struct metrics_values v = sample_values();
	char *text = format(&v);

	expect_family(text, "perfrecd_samples_total", "counter", "perfrecd_samples_total 12345");
	expect_family(text, "perfrecd_lost_total", "counter", "perfrecd_lost_total 7");
	expect_family(text, "perfrecd_bytes_written_total", "counter", "perfrecd_bytes_written_total 987654");
	expect_family(text, "perfrecd_dropped_bytes_total", "counter", "perfrecd_dropped_bytes_total 3");
	expect_family(text, "perfrecd_files_published_total", "counter", "perfrecd_files_published_total 4");
	expect_family(text, "perfrecd_cpu_seconds_total", "counter", "perfrecd_cpu_seconds_total 1.500000");
	expect_family(text, "perfrecd_resident_memory_bytes", "gauge", "perfrecd_resident_memory_bytes 8388608");
	expect_family(text, "perfrecd_tracked_processes", "gauge", "perfrecd_tracked_processes 321");
	expect_family(text, "perfrecd_paused", "gauge", "perfrecd_paused 1");
	expect_family(text, "perfrecd_cpus", "gauge", "perfrecd_cpus 2");
	expect_family(text, "perfrecd_start_time_seconds", "gauge", "perfrecd_start_time_seconds 1700000000.250");
	expect_family(text, "perfrecd_sampling_frequency_hertz", "gauge",
		      "perfrecd_sampling_frequency_hertz{event=\"cpu-clock\"} 499\n"
		      "perfrecd_sampling_frequency_hertz{event=\"page-faults\"} 0");
	free(text);
}

Test(metrics, escapes_label_values_and_prefixes_configured_labels)
{
	struct metrics_values v = sample_values();
	char *text = format(&v);

	expect_family(text, "perfrecd_info", "gauge",
		      "perfrecd_info{host=\"h\\\"o\\\\st\",version=\"6.1.0-perfrecd-0.1\","
		      "label_team=\"sre\",label_env=\"te\\\"st\\\\x\\ny\"} 1");
	free(text);
}

Test(metrics, unwind_families_only_when_unwinding_on_the_host)
{
	struct metrics_values v = sample_values();
	char *text = format(&v);

	cr_expect_null(strstr(text, "perfrecd_unwind_"), "unwind families without unwind=host:\n%s", text);
	free(text);
	v.have_unwind = true;
	v.unwind.unwinder.samples = 900;
	v.unwind.unwinder.unwound = 880;
	v.unwind.behind = 12;
	v.unwind.unwinder.dropped = 2;
	v.unwind.unwinder.elf_hits = 5000;
	v.unwind.unwinder.elf_opened = 7;
	v.unwind.unwinder.elf_bytes = 1 << 20;
	v.unwind.queued_bytes = 4096;
	v.unwind.trimmed = 600;
	v.unwind.trimmed_bytes = 3000000;
	v.unwind.trim_missed = 1;
	v.unwind.tables.by_tables = 870;
	v.unwind.tables.by_dwfl = 30;
	v.unwind.tables.fp_frames = 44;
	v.unwind.tables.cache.built = 9;
	v.unwind.tables.cache.loaded = 3;
	v.unwind.tables.cache.refused = 1;
	v.unwind.tables.cache.evicted = 2;
	v.unwind.tables.cache.bytes = 65536;
	text = format(&v);
	expect_family(text, "perfrecd_unwind_samples_total", "counter", "perfrecd_unwind_samples_total 900");
	expect_family(text, "perfrecd_unwind_unwound_total", "counter", "perfrecd_unwind_unwound_total 880");
	expect_family(text, "perfrecd_unwind_behind_total", "counter", "perfrecd_unwind_behind_total 12");
	expect_family(text, "perfrecd_unwind_dropped_total", "counter", "perfrecd_unwind_dropped_total 2");
	expect_family(text, "perfrecd_unwind_elf_cache_hits_total", "counter", "perfrecd_unwind_elf_cache_hits_total 5000");
	expect_family(text, "perfrecd_unwind_elf_opened_total", "counter", "perfrecd_unwind_elf_opened_total 7");
	expect_family(text, "perfrecd_unwind_elf_cached_bytes", "gauge", "perfrecd_unwind_elf_cached_bytes 1048576");
	expect_family(text, "perfrecd_unwind_queued_bytes", "gauge", "perfrecd_unwind_queued_bytes 4096");
	expect_family(text, "perfrecd_unwind_stacks_trimmed_total", "counter", "perfrecd_unwind_stacks_trimmed_total 600");
	expect_family(text, "perfrecd_unwind_stack_bytes_trimmed_total", "counter",
		      "perfrecd_unwind_stack_bytes_trimmed_total 3000000");
	expect_family(text, "perfrecd_unwind_stack_trim_missed_total", "counter", "perfrecd_unwind_stack_trim_missed_total 1");
	expect_family(text, "perfrecd_unwind_by_tables_total", "counter", "perfrecd_unwind_by_tables_total 870");
	expect_family(text, "perfrecd_unwind_by_libdwfl_total", "counter", "perfrecd_unwind_by_libdwfl_total 30");
	expect_family(text, "perfrecd_unwind_fp_frames_total", "counter", "perfrecd_unwind_fp_frames_total 44");
	expect_family(text, "perfrecd_unwind_tables_built_total", "counter", "perfrecd_unwind_tables_built_total 9");
	expect_family(text, "perfrecd_unwind_tables_loaded_total", "counter", "perfrecd_unwind_tables_loaded_total 3");
	expect_family(text, "perfrecd_unwind_tables_refused_total", "counter", "perfrecd_unwind_tables_refused_total 1");
	expect_family(text, "perfrecd_unwind_tables_evicted_total", "counter", "perfrecd_unwind_tables_evicted_total 2");
	expect_family(text, "perfrecd_unwind_table_bytes", "gauge", "perfrecd_unwind_table_bytes 65536");
	free(text);
}

/* What the JIT sink refused and left out is counted where operators look, not only in debug logs. */
Test(metrics, jit_families_count_what_was_left_out)
{
	struct metrics_values v = sample_values();
	char *text = format(&v);

	cr_expect_null(strstr(text, "perfrecd_jit_"), "JIT families without the JIT sink:\n%s", text);
	free(text);
	v.have_jit = true;
	v.jit = (struct jitsink_stats){ .procs = 3, .maps = 5, .images = 4, .image_syms = 900, .no_map = 1,
					.refused = 2, .maps_at_exit = 1, .roots_held = 6, .roots_refused = 7,
					.skipped = 8, .failed = 9, .over_memory = 10 };
	v.jit.perfmap = (struct perfmap_stats){ .bytes = 4096, .syms = 950, .over_limit = 11, .bad_lines = 12,
						.long_lines = 13, .cut_names = 14 };
	text = format(&v);
	expect_family(text, "perfrecd_jit_processes_total", "counter", "perfrecd_jit_processes_total 3");
	expect_family(text, "perfrecd_jit_mappings_named_total", "counter", "perfrecd_jit_mappings_named_total 5");
	expect_family(text, "perfrecd_jit_images_total", "counter", "perfrecd_jit_images_total 4");
	expect_family(text, "perfrecd_jit_image_symbols_total", "counter", "perfrecd_jit_image_symbols_total 900");
	expect_family(text, "perfrecd_jit_no_map_total", "counter", "perfrecd_jit_no_map_total 1");
	expect_family(text, "perfrecd_jit_maps_refused_total", "counter", "perfrecd_jit_maps_refused_total 2");
	expect_family(text, "perfrecd_jit_maps_at_exit_total", "counter", "perfrecd_jit_maps_at_exit_total 1");
	expect_family(text, "perfrecd_jit_roots_held", "gauge", "perfrecd_jit_roots_held 6");
	expect_family(text, "perfrecd_jit_roots_refused_total", "counter", "perfrecd_jit_roots_refused_total 7");
	expect_family(text, "perfrecd_jit_skipped_total", "counter", "perfrecd_jit_skipped_total 8");
	expect_family(text, "perfrecd_jit_failed_total", "counter", "perfrecd_jit_failed_total 9");
	expect_family(text, "perfrecd_jit_reads_over_memory_total", "counter", "perfrecd_jit_reads_over_memory_total 10");
	expect_family(text, "perfrecd_jit_map_bytes_total", "counter", "perfrecd_jit_map_bytes_total 4096");
	expect_family(text, "perfrecd_jit_map_symbols_total", "counter", "perfrecd_jit_map_symbols_total 950");
	expect_family(text, "perfrecd_jit_symbols_dropped_total", "counter", "perfrecd_jit_symbols_dropped_total 11");
	expect_family(text, "perfrecd_jit_bad_lines_total", "counter", "perfrecd_jit_bad_lines_total 12");
	expect_family(text, "perfrecd_jit_long_lines_total", "counter", "perfrecd_jit_long_lines_total 13");
	expect_family(text, "perfrecd_jit_cut_names_total", "counter", "perfrecd_jit_cut_names_total 14");
	free(text);
}

Test(metrics, upload_families_only_with_upload_on)
{
	struct metrics_values v = sample_values();
	char *text = format(&v);

	cr_expect_null(strstr(text, "perfrecd_upload"), "upload metrics without upload-url:\n%s", text);
	free(text);

	v.have_upload = true;
	v.upload = (struct upload_stats){ .successes = 10, .failures = 2, .backlog = 3, .bytes = 4096,
					  .removed_unsent = 1 };
	text = format(&v);
	expect_family(text, "perfrecd_upload_successes_total", "counter", "perfrecd_upload_successes_total 10");
	expect_family(text, "perfrecd_upload_failures_total", "counter", "perfrecd_upload_failures_total 2");
	expect_family(text, "perfrecd_upload_bytes_total", "counter", "perfrecd_upload_bytes_total 4096");
	expect_family(text, "perfrecd_upload_removed_unsent_total", "counter", "perfrecd_upload_removed_unsent_total 1");
	expect_family(text, "perfrecd_upload_backlog_files", "gauge", "perfrecd_upload_backlog_files 3");
	free(text);
}

Test(metrics, no_event_family_without_events)
{
	struct metrics_values v = sample_values();
	char *text;

	v.nr_events = 0;
	text = format(&v);
	cr_expect_null(strstr(text, "perfrecd_sampling_frequency_hertz"), "an empty family was declared");
	free(text);
}

/* ------------------------------------------------------------ responses */

struct resp_case {
	int status;
	bool head;
	const char *status_line;
};

static const struct resp_case resp_cases[] = {
	{ 200, false, "HTTP/1.0 200 OK\r\n" },
	{ 200, true, "HTTP/1.0 200 OK\r\n" },
	{ 404, false, "HTTP/1.0 404 Not Found\r\n" },
	{ 405, false, "HTTP/1.0 405 Method Not Allowed\r\n" },
	{ 400, false, "HTTP/1.0 400 Bad Request\r\n" },
};

static void check_response(const struct resp_case *c)
{
	const char *body = "some body\n";
	char *resp = NULL, *end;
	size_t len = 0, clen;
	const char *cl;

	cr_assert_eq(metrics_http_response(c->status, body, strlen(body), c->head, &resp, &len), 0);
	cr_expect_eq(strncmp(resp, c->status_line, strlen(c->status_line)), 0, "got %s", resp);
	end = strstr(resp, "\r\n\r\n");
	cr_assert_not_null(end);
	cl = strstr(resp, "Content-Length: ");
	cr_assert(cl && cl < end);
	clen = strtoul(cl + 16, NULL, 10);
	cr_expect_eq(clen, strlen(body), "Content-Length is the body's even for HEAD");
	cr_expect_eq(len, (size_t)(end + 4 - resp) + (c->head ? 0 : strlen(body)));
	if (!c->head)
		cr_expect_eq(memcmp(end + 4, body, strlen(body)), 0);
	cr_expect_eq(!!strstr(resp, "version=0.0.4"), c->status == 200);
	cr_expect_eq(!!strstr(resp, "Allow: GET, HEAD\r\n"), c->status == 405);
	cr_expect_not_null(strstr(resp, "Connection: close\r\n"));
	free(resp);
}

Test(metrics, builds_responses)
{
	for (size_t i = 0; i < sizeof(resp_cases) / sizeof(resp_cases[0]); i++)
		check_response(&resp_cases[i]);
}

/* ------------------------------------------------- textfile and server */

static char dir[64];
static struct config cfg;
/* What the manager would report of its recorder (the metrics_source). */
static struct fake_source {
	uint64_t samples, lost, files_published;
} src;

static void fake_collect(struct metrics *mx, void *userdata, struct metrics_values *v)
{
	const struct fake_source *f = userdata;
	struct metrics_event *ev = metrics_events(mx, 1);

	cr_assert_not_null(ev);
	ev->name = "cpu-clock";
	ev->freq = 99;
	v->events = ev;
	v->nr_events = 1;
	v->host = "testhost";
	v->samples = f->samples;
	v->lost = f->lost;
	v->files_published = f->files_published;
}

static const struct metrics_source fake = { .collect = fake_collect, .userdata = &src };

static void setup(void)
{
	strcpy(dir, "/tmp/test-metrics-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	memset(&cfg, 0, sizeof(cfg));
	memset(&src, 0, sizeof(src));
}

static void teardown(void)
{
	char cmd[128];

	free(cfg.metrics_textfile);
	free(cfg.metrics_listen);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_expect_eq(system(cmd), 0);
}

static char *slurp(const char *path)
{
	static char buf[16384];
	FILE *f = fopen(path, "re");
	size_t n;

	cr_assert_not_null(f, "%s missing", path);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

Test(metrics, nothing_configured_means_no_object, .init = setup, .fini = teardown)
{
	struct metrics *mx = (struct metrics *)&src;

	cr_expect_eq(metrics_open(&cfg, &fake, &mx), 0);
	cr_expect_null(mx);
	cr_expect_eq(metrics_fd(NULL), -1);
	metrics_process(NULL);
	metrics_tick(NULL, 1);
	cr_expect_eq(metrics_write_textfile(NULL), 0);
	metrics_free(NULL);
}

Test(metrics, textfile_replaced_atomically, .init = setup, .fini = teardown)
{
	struct metrics *mx = NULL;
	char path[128], tmp[140];
	const char *text;

	snprintf(path, sizeof(path), "%s/perfrecd.prom", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	cfg.metrics_textfile = strdup(path);
	cr_assert_eq(metrics_open(&cfg, &fake, &mx), 0);
	cr_assert_not_null(mx);
	cr_expect_eq(metrics_fd(mx), -1, "no listener without metrics-listen");

	/* an old file is replaced, the temporary one does not stay */
	FILE *f = fopen(path, "we");
	cr_assert_not_null(f);
	fputs("old\n", f);
	fclose(f);

	src.samples = 42;
	src.lost = 6;
	src.files_published = 9;
	cr_expect_eq(metrics_write_textfile(mx), 0);
	text = slurp(path);
	cr_expect_null(strstr(text, "old"));
	cr_expect_not_null(strstr(text, "\nperfrecd_samples_total 42\n"), "%s", text);
	cr_expect_not_null(strstr(text, "\nperfrecd_lost_total 6\n"), "%s", text);
	cr_expect_not_null(strstr(text, "\nperfrecd_files_published_total 9\n"), "%s", text);
	cr_expect_not_null(strstr(text, "perfrecd_info{host=\"testhost\""), "%s", text);
	cr_expect_not_null(strstr(text, "\nperfrecd_sampling_frequency_hertz{event=\"cpu-clock\"} 99\n"), "%s", text);
	cr_expect_eq(access(tmp, F_OK), -1, "%s left behind", tmp);

	/* a reload replaces the recorder: counters go on from where they were */
	metrics_carry(mx);
	src.samples = 1;
	src.lost = 0;
	cr_expect_eq(metrics_write_textfile(mx), 0);
	cr_expect_not_null(strstr(slurp(path), "\nperfrecd_samples_total 43\n"));

	/* tick writes at once the first time */
	unlink(path);
	metrics_tick(mx, 1000);
	cr_expect_eq(access(path, F_OK), 0, "metrics_tick did not write the textfile");

	metrics_free(mx);
}

Test(metrics, textfile_error_is_returned, .init = setup, .fini = teardown)
{
	struct metrics *mx = NULL;
	char path[128];

	snprintf(path, sizeof(path), "%s/no/such/dir/perfrecd.prom", dir);
	cfg.metrics_textfile = strdup(path);
	cr_assert_eq(metrics_open(&cfg, &fake, &mx), 0);
	cr_expect_eq(metrics_write_textfile(mx), -ENOENT);
	metrics_free(mx);
}

static int free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	cr_assert(fd >= 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	close(fd);
	return ntohs(sa.sin_port);
}

static struct metrics *open_server(int *ret_port)
{
	struct metrics *mx = NULL;
	char addr[64];
	int r;

	*ret_port = free_port();
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", *ret_port);
	cfg.metrics_listen = strdup(addr);
	r = metrics_open(&cfg, &fake, &mx);
	if (r == -EADDRINUSE)
		cr_skip_test("port %d was taken between probing and binding", *ret_port);
	cr_assert_eq(r, 0);
	cr_assert(metrics_fd(mx) >= 0);
	return mx;
}

static int connect_to(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				  .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	cr_assert(fd >= 0);
	cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

/* Drive the server until the client has the whole answer (EOF); bounded. */
static char *exchange(struct metrics *mx, int fd, const char *req, size_t req_len)
{
	static char buf[32768];
	size_t len = 0;

	if (req_len)
		cr_assert_eq(send(fd, req, req_len, MSG_NOSIGNAL), (ssize_t)req_len);
	for (int i = 0; i < 5000; i++) {
		ssize_t n;

		metrics_process(mx);
		n = recv(fd, buf + len, sizeof(buf) - 1 - len, MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
			break;  /* closed (a refused client sees a reset) */
		if (n > 0)
			len += (size_t)n;
		else
			usleep(1000);
	}
	buf[len] = 0;
	close(fd);
	return buf;
}

Test(metrics, serves_metrics_404_and_400_over_loopback, .init = setup, .fini = teardown)
{
	struct metrics *mx;
	const char *get = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
	const char *other = "GET /other HTTP/1.0\r\n\r\n";
	const char *garbage = "\x16\x03\x01\x02\x00garbage\r\n\r\n";
	char *resp;
	int port;

	src.files_published = 77;
	mx = open_server(&port);

	resp = exchange(mx, connect_to(port), get, strlen(get));
	cr_expect_eq(strncmp(resp, "HTTP/1.0 200 OK\r\n", 17), 0, "%s", resp);
	cr_expect_not_null(strstr(resp, "Content-Type: text/plain; version=0.0.4"));
	cr_expect_not_null(strstr(resp, "\nperfrecd_files_published_total 77\n"), "%s", resp);

	resp = exchange(mx, connect_to(port), other, strlen(other));
	cr_expect_eq(strncmp(resp, "HTTP/1.0 404 ", 13), 0, "%s", resp);

	resp = exchange(mx, connect_to(port), garbage, strlen(garbage));
	cr_expect_eq(strncmp(resp, "HTTP/1.0 400 ", 13), 0, "%s", resp);

	/* still serving after all that */
	resp = exchange(mx, connect_to(port), get, strlen(get));
	cr_expect_eq(strncmp(resp, "HTTP/1.0 200 OK\r\n", 17), 0, "%s", resp);
	metrics_free(mx);
}

Test(metrics, drops_stalled_clients_and_caps_their_number, .init = setup, .fini = teardown)
{
	struct metrics *mx;
	int fds[METRICS_MAX_CLIENTS + 1];
	const char *get = "GET /metrics HTTP/1.0\r\n\r\n";
	char *resp;
	char c;
	int port;

	mx = open_server(&port);
	/* fill every slot with a client that sends half a request */
	for (int i = 0; i < METRICS_MAX_CLIENTS; i++) {
		fds[i] = connect_to(port);
		cr_assert_eq(send(fds[i], "GET /met", 8, MSG_NOSIGNAL), 8);
	}
	for (int i = 0; i < 200; i++) {
		metrics_process(mx);
		usleep(1000);
	}
	/* one more is refused (closed at once), not queued forever */
	fds[METRICS_MAX_CLIENTS] = connect_to(port);
	resp = exchange(mx, fds[METRICS_MAX_CLIENTS], get, strlen(get));
	cr_expect_eq(resp[0], 0, "a client over the limit was served: %s", resp);

	/* long past the timeout: every stalled client is closed */
	metrics_tick(mx, now_usec() + 2 * METRICS_CLIENT_TIMEOUT_USEC);
	for (int i = 0; i < METRICS_MAX_CLIENTS; i++) {
		ssize_t n;

		for (int k = 0; k < 2000 && (n = recv(fds[i], &c, 1, MSG_DONTWAIT)) < 0; k++)
			usleep(1000);
		cr_expect_eq(n, 0, "stalled client %d not closed", i);
		close(fds[i]);
	}
	/* and the slots are free again */
	resp = exchange(mx, connect_to(port), get, strlen(get));
	cr_expect_eq(strncmp(resp, "HTTP/1.0 200 OK\r\n", 17), 0, "%s", resp);
	metrics_free(mx);
}
