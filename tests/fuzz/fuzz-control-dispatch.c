// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Fuzz target for the control socket end to end: the bytes of one client
 * go over a real unix socket into the daemon's control server (accept,
 * SO_PEERCRED, framing, parsing, permission, dispatch of every io.perfrec
 * and org.varlink.service method, replies, hang-up).  The recorder behind
 * it is replaced by stubs that refuse or do nothing, so what is fuzzed is
 * the server, not recording; fuzz-control covers the message layer alone.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "control.h"
#include "log.h"
#include "outfile.h"
#include "pipeout.h"
#include "recorder.h"
#include "snapshot.h"
#include "unwind-sink.h"

/* The daemon around the control server, reduced to answers. */
uint64_t now_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}
bool pipeout_enabled(const struct config *c) { (void)c; return false; }
/* Flight mode: Subscribe is refused and Rotate publishes a snapshot (stubbed). */
bool snapshot_flight_mode(const struct config *c) { (void)c; return true; }
uint64_t recorder_clock_ns(const struct recorder *rec) { (void)rec; return 1; }
int recorder_enable(struct recorder *rec) { (void)rec; return 0; }
int recorder_disable(struct recorder *rec) { (void)rec; return 0; }
int recorder_drain(struct recorder *rec) { (void)rec; return 0; }
int recorder_rotate(struct recorder *rec, char **ret_path) { (void)rec; *ret_path = NULL; return -ENOSYS; }
int recorder_snapshot(struct recorder *rec, int fd) { (void)rec; (void)fd; return -ENOSYS; }
int recorder_snapshot_spool(struct recorder *rec, bool pipe_mode, int *ret_fd) { (void)rec; (void)pipe_mode; (void)ret_fd; return -ENOSYS; }
int recorder_snapshot_publish(struct recorder *rec, char **ret_path) { (void)rec; *ret_path = NULL; return -ENOSYS; }
/* Streams are sinks of the recorder's drain (never added here: Subscribe is refused). */
void recorder_remove_sink(struct recorder *rec, struct sink *s) { (void)rec; (void)s; }
int recorder_add_output(struct recorder *rec, enum pipeline_output out, struct sink *s) { (void)rec; (void)out; (void)s; return -ENOSYS; }
struct outfile_source recorder_source(const struct recorder *rec, enum pipeline_output out) { (void)rec; (void)out; return (struct outfile_source){ 0 }; }
bool recorder_unwind_stats(const struct recorder *rec, struct unwind_sink_stats *ret) { (void)rec; (void)ret; return false; }
void recorder_jit_stats(const struct recorder *rec, struct jitsink_stats *ret) { (void)rec; memset(ret, 0, sizeof(*ret)); }
bool recorder_python_stats(const struct recorder *rec, struct python_stats *ret) { (void)rec; memset(ret, 0, sizeof(*ret)); return false; }

static struct config cfg;
static struct recorder rec;
static struct control *ctl;
static char path[108];

static void teardown(void)
{
	control_free(ctl);
	unlink(path);
	config_exit(&cfg);
}

static void setup(void)
{
	char err[256];

	snprintf(path, sizeof(path), "/tmp/fuzz-control-%d.sock", (int)getpid());
	config_init(&cfg);
	if (config_set(&cfg, "service", "socket", path, err, sizeof(err)) < 0 ||
	    config_set(&cfg, "service", "control-group", "", err, sizeof(err)) < 0)
		abort();
	log_max_level = LOG_CRIT;   /* one refusal per input would flood the output */
	if (control_open(&cfg, &rec, &ctl) < 0)
		abort();
	atexit(teardown);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char buf[65536];
	size_t off = 0;
	int fd;

	if (!ctl)
		setup();
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		abort();
	memcpy(sa.sun_path, path, strlen(path));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		abort();
	/* Feed the input in the pieces the socket takes, serving between them. */
	for (int pass = 0; pass < 64 && off < size; pass++) {
		ssize_t n = send(fd, data + off, size - off, MSG_NOSIGNAL);

		if (n > 0)
			off += (size_t)n;
		else if (n < 0 && errno != EAGAIN)
			break;
		control_process(ctl);
		while (recv(fd, buf, sizeof(buf), 0) > 0)
			;
	}
	shutdown(fd, SHUT_WR);
	for (int pass = 0; pass < 4; pass++) {
		control_process(ctl);
		while (recv(fd, buf, sizeof(buf), 0) > 0)
			;
	}
	close(fd);
	control_process(ctl);
	return 0;
}
