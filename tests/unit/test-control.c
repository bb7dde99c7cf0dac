// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests of the control server's limits (daemon/control.c) over a real
 * unix socket, with clients of other uids made by connecting under
 * seteuid() (SO_PEERCRED records the effective uid): connections per uid
 * and the reserve root keeps, the byte budget of a uid's partial requests
 * and the memory given back, the idle timeout, refusals logged at a
 * bounded rate, no spinning when out of file descriptors, and what an unprivileged peer may call under the default
 * configuration.  The recorder behind the server is never reached: only
 * Ping and refused calls are made.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "control.h"
#include "log.h"

#define NOBODY 65534
#define OTHER 65533

static struct config cfg;
static struct recorder rec;
static struct control *ctl;
static char path[108];

static void start(bool default_group)
{
	char err[256];

	if (geteuid() != 0)
		cr_skip_test("needs root to connect as other users");
	log_max_level = LOG_CRIT;
	snprintf(path, sizeof(path), "/tmp/test-control-%d.sock", (int)getpid());
	config_init(&cfg);
	cr_assert_eq(config_set(&cfg, "service", "socket", path, err, sizeof(err)), 0, "%s", err);
	if (!default_group)
		cr_assert_eq(config_set(&cfg, "service", "control-group", "", err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(control_open(&cfg, &rec, &ctl), 0);
	cr_assert_not_null(ctl);
}

static void stop(void)
{
	control_free(ctl);
	ctl = NULL;
	config_exit(&cfg);
}

static void serve(int passes)
{
	for (int i = 0; i < passes; i++) {
		struct pollfd p = { .fd = control_fd(ctl), .events = POLLIN };

		poll(&p, 1, 5);
		control_process(ctl);
	}
}

static int connect_as(uid_t uid)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	cr_assert_eq(seteuid(uid), 0);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	strcpy(sa.sun_path, path);
	cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0, "connect: %m");
	cr_assert_eq(seteuid(0), 0);
	return fd;
}

/* The next reply on @fd (the server served meanwhile); NULL when the server hung up. */
static char *call(int fd, const char *msg)
{
	static char buf[65536];
	size_t len = 0;

	cr_assert_eq(send(fd, msg, strlen(msg) + 1, MSG_NOSIGNAL), (ssize_t)strlen(msg) + 1);
	for (int i = 0; i < 2000; i++) {
		ssize_t n;

		control_process(ctl);
		n = recv(fd, buf + len, sizeof(buf) - 1 - len, MSG_DONTWAIT);
		if (n == 0)
			return NULL;
		if (n > 0) {
			len += (size_t)n;
			if (memchr(buf, 0, len))
				return buf;
		} else {
			struct pollfd p = { .fd = control_fd(ctl), .events = POLLIN };

			poll(&p, 1, 1);
		}
	}
	cr_assert_fail("no reply to %s", msg);
	return NULL;
}

/* Whether the server closed @fd (after serving a few passes). */
static bool closed_by_server(int fd)
{
	char b;
	ssize_t n;

	serve(4);
	n = recv(fd, &b, 1, MSG_DONTWAIT);
	/* Closed with our bytes unread, the socket says ECONNRESET. */
	return n == 0 || (n < 0 && errno != EAGAIN);
}

static const char ping[] = "{\"method\":\"io.perfrec.Ping\"}";

Test(control, each_uid_gets_its_share_and_root_the_reserve, .fini = stop)
{
	struct control_limits l = CONTROL_LIMITS_DEFAULT;
	struct control_stats st;
	int nobody[6], other[6], root[3];

	start(false);
	l.max_clients = 8;
	l.reserved = 2;
	l.max_per_uid = 4;
	control_set_limits(ctl, &l);
	for (int i = 0; i < 6; i++) {
		nobody[i] = connect_as(NOBODY);
		serve(2);
	}
	for (int i = 0; i < 6; i++) {
		cr_expect_eq(closed_by_server(nobody[i]), i >= 4, "nobody's connection %d", i);
		other[i] = connect_as(OTHER);
		serve(2);
	}
	/* 6 of 8 for unprivileged users: 4 of them nobody's, 2 left for the other uid. */
	for (int i = 0; i < 6; i++)
		cr_expect_eq(closed_by_server(other[i]), i >= 2, "the other uid's connection %d", i);
	control_stats(ctl, &st);
	cr_assert_eq(st.clients, 6);
	cr_assert_eq(st.unprivileged, 6);
	for (int i = 0; i < 2; i++) {
		root[i] = connect_as(0);
		cr_assert_not_null(call(root[i], ping), "root is refused with the reserve free");
	}
	root[2] = connect_as(0);
	cr_assert(closed_by_server(root[2]), "past max_clients even root waits");
	cr_assert_not_null(strstr(call(nobody[0], ping), "\"pong\":true"));
	for (int i = 0; i < 6; i++) {
		close(nobody[i]);
		close(other[i]);
	}
	serve(4);
	control_stats(ctl, &st);
	cr_assert_eq(st.clients, 2);
	cr_assert_eq(st.unprivileged, 0);
	cr_assert_geq(st.refused, 7);
	for (int i = 0; i < 3; i++)
		close(root[i]);
}

Test(control, partial_requests_are_held_to_the_uid_budget_and_freed, .fini = stop)
{
	struct control_limits l = CONTROL_LIMITS_DEFAULT;
	struct control_stats st;
	static char partial[60000];
	int fds[16], alive = 0;

	start(false);
	l.max_uid_bytes = 256 * 1024;
	control_set_limits(ctl, &l);
	memcpy(partial, "{\"method\":\"io.perfrec.Ping\",\"x\":\"", 33);
	memset(partial + 33, 'a', sizeof(partial) - 33);
	for (int i = 0; i < 16; i++) {
		fds[i] = connect_as(NOBODY);
		send(fds[i], partial, sizeof(partial), MSG_NOSIGNAL);
		serve(8);
	}
	control_stats(ctl, &st);
	cr_assert_leq(st.buffered_bytes, l.max_uid_bytes, "%zu bytes buffered", st.buffered_bytes);
	cr_assert_lt(st.unprivileged, 16, "every partial request kept");
	for (int i = 0; i < 16; i++)
		alive += !closed_by_server(fds[i]);
	cr_assert_eq((size_t)alive, st.unprivileged);
	cr_assert_geq(alive, 1, "the budget holds at least one whole request");
	for (int i = 0; i < 16; i++)
		close(fds[i]);
	serve(4);
	control_stats(ctl, &st);
	cr_assert_eq(st.clients, 0);
	cr_assert_eq(st.buffered_bytes, 0, "buffers of closed clients are freed");
}

Test(control, answered_clients_hold_no_buffers, .fini = stop)
{
	struct control_stats st;
	int fd;

	start(false);
	fd = connect_as(NOBODY);
	for (int i = 0; i < 10; i++)
		cr_assert_not_null(call(fd, ping));
	serve(2);
	control_stats(ctl, &st);
	cr_assert_eq(st.clients, 1);
	cr_assert_eq(st.buffered_bytes, 0, "an idle client keeps %zu bytes", st.buffered_bytes);
	close(fd);
}

Test(control, connections_without_a_complete_request_time_out, .fini = stop)
{
	struct control_limits l = CONTROL_LIMITS_DEFAULT;
	struct control_stats st;
	uint64_t t0;
	int idle, partial, active;

	start(false);
	l.idle_usec = 10 * 1000000ULL;
	control_set_limits(ctl, &l);
	t0 = now_usec();
	idle = connect_as(NOBODY);
	partial = connect_as(NOBODY);
	send(partial, ping, 5, MSG_NOSIGNAL);
	serve(4);
	control_sweep(ctl, t0 + l.idle_usec / 2);
	control_stats(ctl, &st);
	cr_assert_eq(st.clients, 2, "closed before the idle timeout");
	active = connect_as(0);
	cr_assert_not_null(call(active, ping));
	control_sweep(ctl, now_usec() + l.idle_usec + 1000000);
	control_stats(ctl, &st);
	cr_assert_eq(st.clients, 0, "%zu idle clients kept past the timeout", st.clients);
	cr_assert(closed_by_server(idle));
	cr_assert(closed_by_server(partial));
	cr_assert(closed_by_server(active));
	close(idle);
	close(partial);
	close(active);
}

Test(control, refusals_are_counted_and_logged_at_a_bounded_rate, .fini = stop)
{
	static const char pause_call[] = "{\"method\":\"io.perfrec.Pause\"}";
	struct control_stats st;
	int fd;

	start(false);
	fd = connect_as(NOBODY);
	for (int i = 0; i < 500; i++) {
		char *r = call(fd, pause_call);

		cr_assert_not_null(r);
		cr_assert_not_null(strstr(r, "PermissionDenied"), "%s", r);
	}
	control_stats(ctl, &st);
	cr_assert_eq(st.refused, 500);
	cr_assert_leq(st.refusals_logged, 50, "%llu of 500 refusals logged one by one",
		      (unsigned long long)st.refusals_logged);
	cr_assert_geq(st.refusals_logged, 1, "the first refusals are logged");
	close(fd);
}

/* With no control group configured, only root may change anything. */
Test(control, the_default_configuration_refuses_others_every_privileged_method, .fini = stop)
{
	static const char *const refused[] = { "Pause", "Resume", "Rotate", "SetFrequency", "Snapshot", "Subscribe" };
	char msg[128];
	int fd;

	start(true);
	fd = connect_as(NOBODY);
	cr_assert_not_null(strstr(call(fd, ping), "\"pong\":true"));
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		char *r;

		snprintf(msg, sizeof(msg), "{\"method\":\"io.perfrec.%s\",\"parameters\":{%s}}", refused[i],
			 strcmp(refused[i], "SetFrequency") ? "" : "\"frequency\":99");
		r = call(fd, msg);
		cr_assert_not_null(r, "%s: hung up", refused[i]);
		cr_assert_not_null(strstr(r, "io.perfrec.PermissionDenied"), "%s answered %s", refused[i], r);
	}
	close(fd);
}

/* Out of fds, a connection waits in the queue: the server must not spin on it. */
Test(control, out_of_fds_the_listening_socket_rests_instead_of_spinning, .fini = stop)
{
	struct rlimit rl, low;
	struct control_stats st;
	struct pollfd p;
	int dummies[256], n = 0, a, b;

	start(false);
	getrlimit(RLIMIT_NOFILE, &rl);
	low = rl;
	low.rlim_cur = 64;
	cr_assert_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
	while (n < 256 && (dummies[n] = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0)
		n++;
	cr_assert(n > 3 && n < 256);
	close(dummies[--n]);
	close(dummies[--n]);
	close(dummies[--n]);
	a = connect_as(NOBODY);
	b = connect_as(NOBODY);
	serve(4);   /* a takes the last fd, b cannot be accepted */
	control_stats(ctl, &st);
	cr_assert_eq(st.clients, 1);
	p = (struct pollfd){ .fd = control_fd(ctl), .events = POLLIN };
	cr_assert_eq(poll(&p, 1, 0), 0, "the server would spin on a connection it cannot accept");
	close(dummies[--n]);
	control_sweep(ctl, now_usec() + 1000000);
	serve(4);
	control_stats(ctl, &st);
	cr_assert_eq(st.clients, 2, "accepting did not resume");
	close(a);
	close(b);
	while (n)
		close(dummies[--n]);
	setrlimit(RLIMIT_NOFILE, &rl);
}

/*
 * A reader that is taking its replies is not stalled, whatever clock the
 * sweep is given: a deadline computed from a time before the last bytes
 * moved (as a sweep with the pass's clock read before its writes) must not
 * wrap round into "stalled for ages".
 */
Test(control, a_reader_making_progress_is_never_stalled, .fini = stop)
{
	static char calls[32 * 1024];
	struct control_limits l = CONTROL_LIMITS_DEFAULT;
	struct control_stats st;
	char buf[4096];
	uint64_t t0;
	int fd;

	start(false);
	/*
	 * The client reads nothing while its replies pile up, and each
	 * control_process() sweeps with the real clock: on a machine slow
	 * enough that filling took stall_usec (10 s, seen in a 37.8-s run
	 * under load) the client was dropped as stalled before any check.  A
	 * day is never reached here, and the wrap round this test is about
	 * still lands ages past it.
	 */
	l.stall_usec = 24 * 3600 * 1000000ULL;
	control_set_limits(ctl, &l);
	fd = connect_as(0);
	/* Calls in big blocks; replies pile up unread until the socket is
	 * full and the server holds some back. */
	for (size_t off = 0; off + sizeof(ping) <= sizeof(calls); off += sizeof(ping))
		memcpy(calls + off, ping, sizeof(ping));
	for (int i = 0; i < 400; i++) {
		(void)!send(fd, calls, sizeof(calls) - sizeof(calls) % sizeof(ping), MSG_NOSIGNAL | MSG_DONTWAIT);
		serve(1);
	}
	control_stats(ctl, &st);
	cr_assert_gt(st.buffered_bytes, 0, "no replies held back: the test tests nothing");
	/* Take some: bytes move now, after t0. */
	t0 = now_usec();
	cr_assert_gt(recv(fd, buf, sizeof(buf), MSG_DONTWAIT), 0);
	serve(4);
	control_stats(ctl, &st);
	cr_assert_gt(st.buffered_bytes, 0, "no replies left waiting: the test tests nothing");
	control_sweep(ctl, t0);
	control_stats(ctl, &st);
	cr_assert_eq(st.clients, 1, "a reader that took bytes after the sweep's clock was dropped as stalled");
	cr_assert_not(closed_by_server(fd));
	close(fd);
}
