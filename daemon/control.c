// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The control socket server (see control.h): listening socket (created or
 * from systemd), clients with bounded input and output buffers, permission
 * checks, and the io.perfrec methods on top of the recorder.  Parsing and
 * checking of messages is varlink.c's; this file does I/O and acts.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "control.h"
#include "ctlsock.h"
#include "filecopy.h"
#include "governor.h"
#include "outfile.h"
#include "log.h"
#include "pipeout.h"
#include "snapshot.h"
#include "varlink.h"

#define TAG_LISTEN UINT64_MAX
#define STR_(x) #x
#define STR(x) STR_(x)
/* Per pass: at most this many events, and this much of a snapshot per reader. */
#define MAX_EVENTS 128
#define XFER_PER_PASS (4U << 20)
/* An input buffer starts this small and doubles up to VARLINK_MAX_MESSAGE. */
#define IN_MIN 4096
/* Replies pending past this: read no further calls until they are taken. */
#define OUT_HIGH (64 * 1024)
/* Refusals logged per interval; the rest are counted and the count logged. */
#define REFUSAL_BURST 20
#define REFUSAL_INTERVAL_USEC (10 * 1000000ULL)
/* Out of file descriptors: try accepting again after this long. */
#define ACCEPT_PAUSE_USEC (100 * 1000ULL)
/* Freed buffers worth handing back to the system. */
#define TRIM_BYTES (1U << 20)

/*
 * What an epoll event points at: a client's socket or the file a snapshot
 * is being copied into.  Each struct below starts with its kind.
 */
enum watch { WATCH_CLIENT = 1, WATCH_SNAPSHOT };

/* A snapshot being copied from its spool into the client's fd at the reader's pace. */
struct transfer {
	enum watch kind;
	struct client *c;
	int spool, target;        /* -1 when no transfer is under way */
	struct file_copy *fc;     /* into a regular file: copied by a thread (filecopy.h) */
	off_t off, size;
	int samples;
	bool is_socket, is_fifo;
	bool watched;             /* target in the epoll set (not every fd polls) */
	bool oneway;              /* no reply at the end */
	uint64_t moved_usec;      /* last time the reader took bytes */
};

/* One unprivileged uid: what its clients hold together. */
struct peer {
	struct peer *next;
	uid_t uid;
	size_t clients, bytes;
};

struct client {
	enum watch kind;
	struct control *ctl;
	struct client *prev, *next;
	int fd;
	struct ucred cred;
	bool privileged;
	struct peer *peer;        /* NULL for privileged clients (not limited per uid) */
	char *in;
	size_t in_len, in_cap;
	char *out;
	size_t out_len, out_off, out_cap;
	size_t charged;           /* in_cap + out_cap as counted in peer and control */
	uint64_t out_moved_usec;  /* last time output drained (or queued into empty) */
	uint64_t request_usec;    /* connected, or last complete message */
	int passed_fd;            /* from SCM_RIGHTS, for Snapshot; -1 */
	struct perfrec_pdwriter *sub; /* Subscribe stream */
	struct sink sink;             /* ... fed by the recorder's drain while sub is set */
	const struct perfrec_evlist *sub_evlist; /* the events its attrs describe */
	/*
	 * A stream, in stream offsets (bytes since its start): out[0] is at
	 * out_base; complete ends the last whole record queued; cut is the
	 * first record boundary at or after the bytes sent.  Only whole
	 * records are sent, so a stream can always end at cut, and end_why
	 * (set by the sink when it refuses bytes) says why it ends.
	 */
	uint64_t out_base, complete, cut;
	uint64_t data_start;      /* where the pipe header starts (after the reply) */
	const char *end_why;
	bool ending;              /* the stream's end marker is queued: close once sent */
	struct transfer xfer;
	uint32_t events;          /* registered in epoll */
	bool parse_more;          /* whole messages wait in the input buffer */
	bool dead;                /* drop at the end of this pass */
};

struct control {
	const struct config *cfg;
	struct recorder *rec;
	struct control_status_source status_src;
	struct control_limits lim;
	int epfd, listen_fd;
	char *created_path;       /* socket we created (removed at exit) */
	bool have_gid;
	gid_t gid;
	struct client *clients;
	struct peer *peers;
	size_t nr_clients, nr_unprivileged, nr_subscribers;
	size_t buffered, unprivileged_bytes, freed_since_trim;
	bool paused;
	uint64_t start_usec;
	uint64_t refused, refusals_logged;
	uint64_t rl_begin, rl_suppressed;
	uint64_t accept_paused_until; /* out of fds: the listening socket rests until then */
	/* The recorder's events as last seen, and since when (a reload reopens them). */
	const struct perfrec_evlist *evlist;
	uint64_t evlist_usec;
	unsigned rl_shown;
};

static void client_drop(struct client *c, const char *why);
static void stream_end(struct client *c, const char *why, bool failed);
static void flush_out(struct client *c);

/* ---------------------------------------------------------------- setup */

int control_open(const struct config *cfg, struct recorder *rec, struct control **ret)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = TAG_LISTEN };
	struct control *ctl;
	int r;

	*ret = NULL;
	if (!cfg->socket || !*cfg->socket)
		return 0;
	ctl = calloc(1, sizeof(*ctl));
	if (!ctl)
		return -ENOMEM;
	ctl->cfg = cfg;
	ctl->rec = rec;
	ctl->lim = (struct control_limits)CONTROL_LIMITS_DEFAULT;
	ctl->epfd = ctl->listen_fd = -1;
	ctl->start_usec = now_usec();
	ctlsock_raise_nofile();
	r = ctlsock_group(cfg, &ctl->have_gid, &ctl->gid);
	if (r < 0)
		goto fail;
	ctl->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (ctl->epfd < 0) {
		r = log_error_errno(-errno, "Cannot create the control epoll set: %m");
		goto fail;
	}
	r = ctlsock_activated();
	if (r == -ENOENT)
		r = ctlsock_create(cfg->socket, ctl->have_gid, ctl->gid, &ctl->created_path);
	else if (r >= 0)
		fcntl(r, F_SETFL, fcntl(r, F_GETFL) | O_NONBLOCK);
	if (r < 0)
		goto fail;
	ctl->listen_fd = r;
	if (epoll_ctl(ctl->epfd, EPOLL_CTL_ADD, ctl->listen_fd, &ev) < 0) {
		r = log_error_errno(-errno, "Cannot watch the control socket: %m");
		goto fail;
	}
	log_info("Control socket %s%s", ctl->created_path ? ctl->created_path : "from systemd",
		 ctl->have_gid ? "" : " (no control group: only root may change anything)");
	*ret = ctl;
	return 0;
fail:
	control_free(ctl);
	return r;
}

int control_fd(const struct control *ctl)
{
	return ctl ? ctl->epfd : -EBADF;
}

bool control_paused(const struct control *ctl)
{
	return ctl && ctl->paused;
}

void control_set_status_source(struct control *ctl, const struct control_status_source *src)
{
	if (ctl)
		ctl->status_src = *src;
}

void control_free(struct control *ctl)
{
	if (!ctl)
		return;
	/* Streams end at a record boundary with the reason, as far as the
	 * readers take it now: we do not wait for them. */
	for (struct client *c = ctl->clients; c; c = c->next)
		if (c->sub && !c->dead) {
			stream_end(c, "perfrecd stopped", false);
			flush_out(c);
		}
	while (ctl->clients)
		client_drop(ctl->clients, NULL);
	if (ctl->listen_fd >= 0)
		close(ctl->listen_fd);
	if (ctl->epfd >= 0)
		close(ctl->epfd);
	if (ctl->created_path) {
		unlink(ctl->created_path);
		free(ctl->created_path);
	}
	free(ctl);
}

/* -------------------------------------------------------------- clients */

/*
 * Refusals (calls, connections, clients dropped by a limit) come as fast as
 * a user can send them: log REFUSAL_BURST per interval and count the rest,
 * so the log says how many without becoming the denial of service itself.
 */
static void refusals_roll(struct control *ctl, uint64_t now)
{
	if (now - ctl->rl_begin < REFUSAL_INTERVAL_USEC)
		return;
	if (ctl->rl_suppressed)
		log_notice("%" PRIu64 " more refusals of control clients in the last %llu s were not logged",
			   ctl->rl_suppressed, (unsigned long long)((now - ctl->rl_begin) / 1000000));
	ctl->rl_begin = now;
	ctl->rl_shown = 0;
	ctl->rl_suppressed = 0;
}

static void refusal(struct control *ctl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void refusal(struct control *ctl, const char *fmt, ...)
{
	int saved_errno = errno; /* for a %m in @fmt */
	char buf[256];
	va_list ap;

	ctl->refused++;
	refusals_roll(ctl, now_usec());
	if (ctl->rl_shown >= REFUSAL_BURST) {
		ctl->rl_suppressed++;
		return;
	}
	ctl->rl_shown++;
	ctl->refusals_logged++;
	errno = saved_errno;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	log_notice("%s", buf);
}

static bool peer_in_group(int fd, const struct ucred *cred, gid_t gid)
{
	gid_t groups[256];
	socklen_t len = sizeof(groups);

	if (cred->gid == gid)
		return true;
	/* SO_PEERGROUPS: the peer's supplementary groups when it connected,
	 * race-free unlike reading /proc/PID/status later. */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0)
		return false;
	for (size_t i = 0; i < len / sizeof(gid_t); i++)
		if (groups[i] == gid)
			return true;
	return false;
}

static struct peer *peer_get(struct control *ctl, uid_t uid)
{
	struct peer *p;

	for (p = ctl->peers; p; p = p->next)
		if (p->uid == uid)
			return p;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->uid = uid;
	p->next = ctl->peers;
	ctl->peers = p;
	return p;
}

/* Forget a uid that has no connection left (or never got one). */
static void peer_unused(struct control *ctl, struct peer *p)
{
	if (!p || p->clients)
		return;
	for (struct peer **pp = &ctl->peers; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	free(p);
}

static void peer_put(struct control *ctl, struct peer *p)
{
	p->clients--;
	peer_unused(ctl, p);
}

/* Count the client's buffers (after any change to their capacity). */
static void client_charge(struct client *c)
{
	struct control *ctl = c->ctl;
	size_t now = c->in_cap + c->out_cap;

	ctl->buffered = ctl->buffered - c->charged + now;
	if (c->peer) {
		c->peer->bytes = c->peer->bytes - c->charged + now;
		ctl->unprivileged_bytes = ctl->unprivileged_bytes - c->charged + now;
	}
	if (now < c->charged)
		ctl->freed_since_trim += c->charged - now;
	c->charged = now;
}

static void in_release(struct client *c)
{
	free(c->in);
	c->in = NULL;
	c->in_len = c->in_cap = 0;
	client_charge(c);
}

static void out_release(struct client *c)
{
	free(c->out);
	c->out = NULL;
	c->out_len = c->out_off = c->out_cap = 0;
	client_charge(c);
}

static void xfer_close(struct client *c)
{
	struct transfer *x = &c->xfer;

	/* Explicitly: the client shares the target's open file, so closing
	 * our fd alone would leave it registered. */
	if (x->watched)
		epoll_ctl(c->ctl->epfd, EPOLL_CTL_DEL, x->target, NULL);
	if (x->target >= 0)
		close(x->target);
	if (x->spool >= 0)
		close(x->spool);
	x->target = x->spool = -1;
	x->watched = false;
	if (x->fc) {
		epoll_ctl(c->ctl->epfd, EPOLL_CTL_DEL, file_copy_fd(x->fc), NULL);
		file_copy_release(x->fc);
		x->fc = NULL;
	}
}

static void client_drop(struct client *c, const char *why)
{
	struct control *ctl = c->ctl;

	if (why)
		log_debug("Control client pid %d uid %u dropped: %s", (int)c->cred.pid, (unsigned)c->cred.uid, why);
	if (c->prev)
		c->prev->next = c->next;
	else
		ctl->clients = c->next;
	if (c->next)
		c->next->prev = c->prev;
	ctl->nr_clients--;
	if (c->sub) {
		ctl->nr_subscribers--;
		recorder_remove_sink(ctl->rec, &c->sink);
		perfrec_pdwriter__free(c->sub, false);
	}
	xfer_close(c);
	close(c->fd);
	if (c->passed_fd >= 0)
		close(c->passed_fd);
	in_release(c);
	out_release(c);
	if (c->peer) {
		ctl->nr_unprivileged--;
		peer_put(ctl, c->peer);
	}
	free(c);
}

/* Why a new connection is refused, or NULL to take it. */
static const char *admit(struct control *ctl, bool privileged, struct peer *p)
{
	const struct control_limits *l = &ctl->lim;

	if (ctl->nr_clients >= l->max_clients)
		return "all connections are taken";
	if (privileged)
		return NULL;
	if (ctl->nr_unprivileged + l->reserved >= l->max_clients)
		return "the connections for unprivileged users are taken";
	if (p->clients >= l->max_per_uid)
		return "too many connections from this user";
	return NULL;
}

static void accept_clients(struct control *ctl)
{
	/* Bounded per pass; the listening socket stays readable for the rest. */
	for (int i = 0; i < 64; i++) {
		struct epoll_event ev = { .events = EPOLLIN };
		socklen_t len = sizeof(struct ucred);
		struct ucred cred;
		struct peer *p = NULL;
		struct client *c;
		const char *why;
		bool privileged;
		int fd = accept4(ctl->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
				/* The connection stays queued and the socket readable: stop
				 * watching it for a while rather than spin on it. */
				struct epoll_event off = { .events = 0, .data.u64 = TAG_LISTEN };

				refusal(ctl, "Cannot accept a control client: %m");
				epoll_ctl(ctl->epfd, EPOLL_CTL_MOD, ctl->listen_fd, &off);
				ctl->accept_paused_until = now_usec() + ACCEPT_PAUSE_USEC;
			} else if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED) {
				refusal(ctl, "Cannot accept a control client: %m");
			}
			return;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
			close(fd);
			continue;
		}
		privileged = cred.uid == 0 || (ctl->have_gid && peer_in_group(fd, &cred, ctl->gid));
		if (!privileged) {
			p = peer_get(ctl, cred.uid);
			if (!p) {
				close(fd);
				return;
			}
		}
		why = admit(ctl, privileged, p);
		c = why ? NULL : calloc(1, sizeof(*c));
		if (!c) {
			refusal(ctl, "Refused a control connection from uid %u pid %d: %s", (unsigned)cred.uid,
				(int)cred.pid, why ? why : "out of memory");
			close(fd);
			peer_unused(ctl, p);
			continue;
		}
		c->kind = WATCH_CLIENT;
		c->ctl = ctl;
		c->fd = fd;
		c->cred = cred;
		c->privileged = privileged;
		c->passed_fd = -1;
		c->xfer = (struct transfer){ .kind = WATCH_SNAPSHOT, .c = c, .spool = -1, .target = -1 };
		c->request_usec = now_usec();
		c->events = ev.events;
		ev.data.ptr = c;
		if (epoll_ctl(ctl->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
			free(c);
			close(fd);
			peer_unused(ctl, p);
			continue;
		}
		if (p) {
			c->peer = p;
			p->clients++;
			ctl->nr_unprivileged++;
		}
		c->next = ctl->clients;
		if (c->next)
			c->next->prev = c;
		ctl->clients = c;
		ctl->nr_clients++;
	}
}

static bool xfer_active(const struct client *c)
{
	return c->xfer.spool >= 0 || c->xfer.fc;
}

/* No further calls are read while a snapshot is delivered or replies pile up. */
static bool client_blocked(const struct client *c)
{
	return xfer_active(c) || c->out_len - c->out_off >= OUT_HIGH;
}

/* How far the output may be sent: a stream only up to its last whole record. */
static size_t out_limit(const struct client *c)
{
	return c->sub || c->ending ? (size_t)(c->complete - c->out_base) : c->out_len;
}

/*
 * The size of the stream's unit at stream offset @at: the rest of the
 * Subscribe reply, the pipe header, then records; 0 if its header is not
 * queued yet.  @at is a boundary, at or after out_base.
 */
static size_t unit_size(const struct client *c, uint64_t at)
{
	struct perf_event_header h;
	size_t i = (size_t)(at - c->out_base);

	if (at < c->data_start)
		return (size_t)(c->data_start - at);
	if (at == c->data_start)
		return sizeof(struct perfrec_pipe_file_header);
	if (i + sizeof(h) > c->out_len)
		return 0;
	memcpy(&h, c->out + i, sizeof(h));
	/* pdwriter writes only whole records of a valid size: a smaller one
	 * never completes, and the stream stalls rather than go out torn. */
	if (h.size < sizeof(h))
		return 0;
	/* HEADER_TRACING_DATA is followed by its data, padded to 8 bytes: one unit. */
	if (h.type == PERFREC_RECORD_HEADER_TRACING_DATA && h.size >= sizeof(h) + 8) {
		uint32_t len;

		if (i + sizeof(h) + 4 > c->out_len)
			return 0;
		memcpy(&len, c->out + i + sizeof(h), 4);
		return h.size + (((size_t)len + 7) & ~(size_t)7);
	}
	return h.size;
}

/* Move complete past the whole records just queued. */
static void stream_scan(struct client *c)
{
	uint64_t end = c->out_base + c->out_len;

	for (;;) {
		size_t n = unit_size(c, c->complete);

		if (!n || c->complete + n > end)
			break;
		c->complete += n;
	}
}

static void update_events(struct client *c)
{
	uint32_t ev = 0;

	/* A subscriber's input is no longer read: it sends nothing we need. */
	if (!c->sub && !c->ending && !client_blocked(c) && c->in_len < VARLINK_MAX_MESSAGE)
		ev |= EPOLLIN;
	if (out_limit(c) > c->out_off)
		ev |= EPOLLOUT;
	if (ev != c->events) {
		struct epoll_event e = { .events = ev, .data.ptr = c };

		epoll_ctl(c->ctl->epfd, EPOLL_CTL_MOD, c->fd, &e);
		c->events = ev;
	}
}

static void flush_out(struct client *c)
{
	size_t limit = out_limit(c);

	while (c->out_off < limit) {
		ssize_t n = send(c->fd, c->out + c->out_off, limit - c->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			c->dead = true;
			return;
		}
		c->out_off += (size_t)n;
		c->out_moved_usec = now_usec();
	}
	/* Walk cut over what was sent, while its headers are still queued
	 * (an ended stream needs no cut: its end is queued). */
	while (c->sub && c->cut < c->out_base + c->out_off) {
		size_t n = unit_size(c, c->cut);

		if (!n)
			break;
		c->cut += n;
	}
	if (c->out_off == c->out_len) {
		if (c->ending) {
			/* The end marker was taken: the stream is over. */
			c->dead = true;
			return;
		}
		/* A subscriber's buffer refills at once; anyone else's waits for the next call. */
		if (c->sub) {
			c->out_base += c->out_len;
			c->out_off = c->out_len = 0;
		} else {
			out_release(c);
		}
		c->parse_more = c->in_len > 0;
	}
	update_events(c);
}

/* Queue bytes, whatever the cap; false (and the client marked dead) without memory. */
static bool queue_raw(struct client *c, const void *buf, size_t len)
{
	/* Nothing was waiting for the reader: its time to take this starts now. */
	if (c->out_off == out_limit(c))
		c->out_moved_usec = now_usec();
	if (c->out_off == c->out_len) {
		c->out_base += c->out_len;
		c->out_off = c->out_len = 0;
	}
	if (c->out_len + len > c->out_cap) {
		size_t ncap;
		char *n;

		if (c->out_off) {
			memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
			c->out_base += c->out_off;
			c->out_len -= c->out_off;
			c->out_off = 0;
		}
		ncap = c->out_cap ? c->out_cap : 4096;
		while (ncap < c->out_len + len)
			ncap *= 2;
		if (ncap != c->out_cap) {
			n = realloc(c->out, ncap);
			if (!n) {
				c->dead = true;
				return false;
			}
			c->out = n;
			c->out_cap = ncap;
			client_charge(c);
		}
	}
	memcpy(c->out + c->out_len, buf, len);
	c->out_len += len;
	return true;
}

/*
 * Queue bytes; false past the client's cap: a client that does not read
 * its replies is dropped, a stream is ended by its writer (stream_write()) with
 * the reason in end_why.
 */
static bool queue_out(struct client *c, const void *buf, size_t len)
{
	size_t cap = c->sub ? CONTROL_MAX_STREAM : CONTROL_MAX_OUT;

	if (c->dead || c->ending)
		return false;
	if (c->out_len - c->out_off + len > cap) {
		if (c->sub) {
			c->end_why = "its reader fell " STR(CONTROL_MAX_STREAM_MIB) " MiB behind";
			return false;
		}
		log_notice("Control client pid %d uid %u does not read its replies; dropping it",
			   (int)c->cred.pid, (unsigned)c->cred.uid);
		c->dead = true;
		return false;
	}
	return queue_raw(c, buf, len);
}

/* Takes @msg (from varlink_*(..., &len): call that first, then pass len). */
static void send_msg(struct client *c, char *msg, size_t len)
{
	if (!msg) {
		c->dead = true;
		return;
	}
	queue_out(c, msg, len);
	free(msg);
}

static void reply(struct client *c, struct json_object *params)
{
	size_t len = 0;
	char *m = varlink_reply(params, &len);

	send_msg(c, m, len);
}

static void reply_error(struct client *c, const char *error, const char *key, const char *value)
{
	struct json_object *p = json_object_new_object();
	size_t len = 0;
	char *m;

	if (p && key)
		json_object_object_add(p, key, json_object_new_string(value));
	m = varlink_error(error, p, &len);
	send_msg(c, m, len);
}

/* ------------------------------------------------------------ snapshots */

/*
 * A snapshot into a pipe or a socket is spooled first (snapshot.c) and
 * copied out here without ever waiting: the reader takes it at its own
 * pace, bounded per pass, and one that takes nothing for stall_usec or
 * goes away ends the transfer with an error reply and a log line.  The
 * reply (the sample count) comes when the last byte was taken.
 */
static void xfer_finish(struct client *c, int err, const char *why)
{
	struct transfer *x = &c->xfer;
	char reason[160];

	if (err < 0) {
		snprintf(reason, sizeof(reason), "%s after %lld of %lld bytes", why ? why : strerror(-err),
			 (long long)x->off, (long long)x->size);
		log_notice("Snapshot for uid %u pid %d not delivered: %s", (unsigned)c->cred.uid,
			   (int)c->cred.pid, reason);
	} else {
		log_info("Snapshot written for uid %u pid %d: %d samples", (unsigned)c->cred.uid,
			 (int)c->cred.pid, x->samples);
	}
	xfer_close(c);
	if (!x->oneway) {
		if (err < 0) {
			reply_error(c, VL_ERR_FAILED, "reason", reason);
		} else {
			struct json_object *p = json_object_new_object();

			json_object_object_add(p, "samples", json_object_new_int(x->samples));
			reply(c, p);
		}
	}
	c->parse_more = c->in_len > 0;
	update_events(c);
}

/* A copy into a regular file (its thread's): note its progress, and its end. */
static void file_copy_poll(struct client *c)
{
	struct transfer *x = &c->xfer;
	off_t off = file_copy_progress(x->fc);
	int err;

	if (off != x->off) {
		x->off = off;
		x->moved_usec = now_usec();
	}
	if (file_copy_done(x->fc, &err))
		xfer_finish(c, err, NULL);
}

/* Copy what the reader takes now; never waits. */
static void xfer_pump(struct client *c)
{
	static char buf[64 * 1024];
	struct transfer *x = &c->xfer;
	size_t budget = x->watched ? XFER_PER_PASS : SIZE_MAX;

	if (x->fc) {
		file_copy_poll(c);
		return;
	}
	while (x->off < x->size && budget) {
		size_t want = (size_t)(x->size - x->off);
		ssize_t n;

		if (want > sizeof(buf))
			want = sizeof(buf);
		if (want > budget)
			want = budget;
		if (x->is_fifo) {
			loff_t off = x->off;

			/* SPLICE_F_NONBLOCK: a full pipe is EAGAIN, whatever the fd's own flags. */
			n = splice(x->spool, &off, x->target, NULL, want, SPLICE_F_NONBLOCK);
		} else {
			struct pollfd pfd = { .fd = x->target, .events = POLLOUT };

			/* Without a non-blocking write for this kind of fd, write only
			 * what poll promises room for. */
			if (!x->is_socket && (poll(&pfd, 1, 0) <= 0 || !(pfd.revents & POLLOUT))) {
				if (pfd.revents & (POLLERR | POLLHUP)) {
					xfer_finish(c, -EPIPE, "the reader went away");
					return;
				}
				break;
			}
			if (!x->is_socket && want > PIPE_BUF)
				want = PIPE_BUF;
			n = pread(x->spool, buf, want, x->off);
			if (n <= 0) {
				xfer_finish(c, n < 0 ? -errno : -EIO, n < 0 ? NULL : "the spool ended early");
				return;
			}
			n = x->is_socket ? send(x->target, buf, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL)
					 : write(x->target, buf, (size_t)n);
		}
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			xfer_finish(c, -errno, errno == EPIPE || errno == ECONNRESET ? "the reader went away" : NULL);
			return;
		}
		if (n == 0)
			break;
		x->off += n;
		budget -= (size_t)n;
		x->moved_usec = now_usec();
	}
	if (x->off >= x->size)
		xfer_finish(c, 0, NULL);
}

/*
 * Into a regular file: a write there may wait as long as its file system
 * does (frozen, a dead server), so a thread copies the spool while the
 * loop goes on; the reply comes when it is done, or the transfer fails
 * after stall_usec without progress.  Takes @spool and c->passed_fd.
 */
static int file_copy_begin(struct control *ctl, struct client *c, int spool, bool oneway)
{
	struct transfer *x = &c->xfer;
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = x };
	int r;

	r = file_copy_start(spool, c->passed_fd, x->size, &x->fc);
	c->passed_fd = -1;
	if (r == -EBUSY)
		log_notice("Snapshot for uid %u pid %d refused: %d snapshots are still being written into files",
			   (unsigned)c->cred.uid, (int)c->cred.pid, FILE_COPY_MAX);
	if (r < 0)
		return r;
	x->off = 0;
	x->oneway = oneway;
	x->moved_usec = now_usec();
	/* Not watched: the copy's own end is what the loop waits for. */
	x->watched = false;
	epoll_ctl(ctl->epfd, EPOLL_CTL_ADD, file_copy_fd(x->fc), &ev);
	update_events(c);
	file_copy_poll(c);
	return 0;
}

/* Takes c->passed_fd.  Returns 0 when the transfer started (reply at its end), or -errno. */
static int xfer_start(struct control *ctl, struct client *c, bool oneway)
{
	struct transfer *x = &c->xfer;
	struct epoll_event ev = { .events = EPOLLOUT, .data.ptr = x };
	struct stat st;
	int r, spool = -1;

	if (fstat(c->passed_fd, &st) < 0)
		return -errno;
	r = recorder_snapshot_spool(ctl->rec, !S_ISREG(st.st_mode), &spool);
	if (r < 0)
		return r;
	x->samples = r;
	x->size = lseek(spool, 0, SEEK_END);
	if (x->size < 0) {
		r = -errno;
		close(spool);
		return r;
	}
	if (S_ISREG(st.st_mode))
		return file_copy_begin(ctl, c, spool, oneway);
	x->spool = spool;
	x->target = c->passed_fd;
	c->passed_fd = -1;
	x->off = 0;
	x->is_socket = S_ISSOCK(st.st_mode);
	x->is_fifo = S_ISFIFO(st.st_mode);
	x->oneway = oneway;
	x->moved_usec = now_usec();
	/* Files that do not poll (/dev/null) never make a writer wait. */
	x->watched = epoll_ctl(ctl->epfd, EPOLL_CTL_ADD, x->target, &ev) == 0;
	update_events(c);
	xfer_pump(c);
	return 0;
}

/* -------------------------------------------------------------- methods */

#define J_ADD(o, k, v) json_object_object_add(o, k, v)

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
	J_ADD(o, "unwind", u);
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
		const struct cpu_stats *s = &rec->total[i];

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
	return o;
}

static int stream_sink(void *ctx, const struct iovec *iov, int iovcnt)
{
	struct client *c = ctx;
	int r = 0;

	for (int i = 0; i < iovcnt && r == 0; i++)
		if (!queue_out(c, iov[i].iov_base, iov[i].iov_len))
			r = -ENOBUFS;
	stream_scan(c);
	return r;
}

/*
 * End a stream after a whole record (see below which), then an end
 * marker -- a record header of size 0, which no record has -- and a
 * varlink message saying why: io.perfrec.Failed with the reason when the
 * stream was cut short (@failed), a reply with the reason when perfrecd
 * simply stopped.  The client is closed once the reader took it all, or
 * when it takes nothing for the stall time.
 */
static void stream_end(struct client *c, const char *why, bool failed)
{
	struct control *ctl = c->ctl;
	const struct perf_event_header mark = { 0 };
	struct json_object *p = json_object_new_object();
	size_t len = 0;
	char *m;

	if (failed)
		log_notice("Stream to uid %u pid %d cut short: %s", (unsigned)c->cred.uid, (int)c->cred.pid, why);
	else
		log_info("Stream to uid %u pid %d ended: %s", (unsigned)c->cred.uid, (int)c->cred.pid, why);
	recorder_remove_sink(ctl->rec, &c->sink);
	perfrec_pdwriter__free(c->sub, false);
	c->sub = NULL;
	ctl->nr_subscribers--;
	/* Cut short, the reader still gets every whole record queued (it may
	 * just be slow); perfrecd stopping does not wait: the record being
	 * sent is finished, the rest dropped. */
	c->out_len = (size_t)((failed ? c->complete : c->cut) - c->out_base);
	c->ending = true;
	if (p)
		json_object_object_add(p, "reason", json_object_new_string(why));
	m = failed ? varlink_error(VL_ERR_FAILED, p, &len) : varlink_reply(p, &len);
	if (!m || !queue_raw(c, &mark, sizeof(mark)) || !queue_raw(c, m, len))
		c->dead = true;
	free(m);
	/* The reader gets the stall time afresh to take the end. */
	c->out_moved_usec = now_usec();
	c->complete = c->out_base + c->out_len;
	if (!c->dead)
		update_events(c);
}

/*
 * Each live subscriber is a sink of the recorder's drain (sink.h): every
 * drained byte, and a FINISHED_ROUND after every pass that drained any.
 * A stream that cannot take them (its reader fell behind) ends; the drain
 * and the other sinks go on.
 */
static int stream_write(struct sink *s, size_t ring, const struct iovec *iov, int n, uint64_t bytes)
{
	struct client *c = s->ctx;
	int r;

	(void)ring;
	(void)bytes;
	if (!c->sub || c->dead)
		return -EPIPE;
	r = perfrec_pdwriter__writev(c->sub, iov, n);
	if (r < 0)
		stream_end(c, c->end_why ? c->end_why : strerror(-r), true);
	return r;
}

static void stream_round(struct sink *s, uint64_t bytes)
{
	static const struct perf_event_header round = {
		.type = PERFREC_RECORD_FINISHED_ROUND, .size = sizeof(round),
	};
	struct client *c = s->ctx;
	int r;

	if (!bytes || !c->sub || c->dead)
		return;
	/* A lone FINISHED_ROUND written on its own flushes the stream. */
	r = perfrec_pdwriter__write(c->sub, &round, sizeof(round));
	if (r < 0)
		stream_end(c, c->end_why ? c->end_why : strerror(-r), true);
}

static const struct sink_ops stream_sink_ops = { .write = stream_write, .round = stream_round };

static int subscribe(struct control *ctl, struct client *c)
{
	struct perfrec_pdwriter_pipe_opts po = { .sz = sizeof(po), .sink = stream_sink, .sink_ctx = c };
	struct outfile_features_opts fo = { .sz = sizeof(fo), .what = "a stream" };
	struct recorder *rec = ctl->rec;
	struct outfile_source src = recorder_source(rec, PIPELINE_STREAM);
	struct outfile_begin_opts bo = { .sz = sizeof(bo), .what = "a stream" };
	int r;

	/* Records drained before now went elsewhere; everything newer than this comes here. */
	bo.time = recorder_clock_ns(rec);
	recorder_drain(rec);
	/* The stream starts after the reply, queued already; the reply is whole. */
	c->data_start = c->complete = c->cut = c->out_base + c->out_len;
	c->sub_evlist = rec->evlist;
	r = perfrec_pdwriter__new_pipe(-1, &po, &c->sub);
	if (r < 0)
		return r;
	fo.clock_ns = bo.time;
	fo.wall_ns = (uint64_t)time(NULL) * 1000000000ULL;
	/* Features go ahead of the records in a stream: set before the first write. */
	r = outfile_add_attrs(&src, c->sub);
	if (r >= 0)
		outfile_add_features(&src, c->sub, &fo);
	if (r >= 0)
		r = outfile_synthesize(&src, c->sub, &bo);
	c->sink = (struct sink){ .ops = &stream_sink_ops, .ctx = c };
	if (r >= 0)
		r = recorder_add_output(rec, PIPELINE_STREAM, &c->sink);
	if (r < 0) {
		perfrec_pdwriter__free(c->sub, false);
		c->sub = NULL;
		return r;
	}
	ctl->nr_subscribers++;
	return 0;
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
	reply(c, p);
}

static void method_get_interface_description(struct client *c, const struct varlink_call *vc)
{
	struct json_object *p = json_object_new_object();

	J_ADD(p, "description", json_object_new_string(
		strcmp(json_object_get_string(json_object_object_get(vc->params, "interface")), VARLINK_INTERFACE)
		? "interface org.varlink.service\n" : varlink_interface_description));
	reply(c, p);
}

static void method_ping(struct client *c, const struct varlink_call *vc)
{
	struct json_object *p = json_object_new_object();

	J_ADD(p, "pong", json_object_new_boolean(true));
	reply(c, p);
}

static void method_status(struct client *c, const struct varlink_call *vc)
{
	reply(c, status(c->ctl));
}

static void method_rotate(struct client *c, const struct varlink_call *vc)
{
	struct control *ctl = c->ctl;
	struct json_object *p;
	char *path = NULL;
	int r;

	if (pipeout_enabled(ctl->cfg)) {
		reply_error(c, VL_ERR_NOT_SUPPORTED, "reason", "a stream to stdout (-o -) does not rotate");
		return;
	}
	r = snapshot_flight_mode(ctl->cfg) ? recorder_snapshot_publish(ctl->rec, &path)
					   : recorder_rotate(ctl->rec, &path);
	if (r < 0 || !path) {
		reply_error(c, VL_ERR_FAILED, "reason", r < 0 ? strerror(-r) : "no file was published");
	} else {
		p = json_object_new_object();
		J_ADD(p, "file", json_object_new_string(path));
		reply(c, p);
	}
	free(path);
}

static void method_snapshot(struct client *c, const struct varlink_call *vc)
{
	struct control *ctl = c->ctl;
	struct stat st;
	int r;

	if (c->passed_fd < 0) {
		reply_error(c, VL_ERR_NO_FD, NULL, NULL);
		return;
	}
	if (fstat(c->passed_fd, &st) < 0 || (!S_ISREG(st.st_mode) && isatty(c->passed_fd))) {
		close(c->passed_fd);
		c->passed_fd = -1;
		reply_error(c, VL_ERR_NOT_SUPPORTED, "reason", "a snapshot is binary perf data; not into a terminal");
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
		reply_error(c, VL_ERR_FAILED, "reason", r == -EBUSY
			    ? "too many snapshots are still being written into files that take no bytes"
			    : strerror(-r));
	}
}

static void pause_or_resume(struct client *c, bool pause)
{
	struct control *ctl = c->ctl;
	int r = pause ? recorder_disable(ctl->rec) : recorder_enable(ctl->rec);

	if (r < 0) {
		reply_error(c, VL_ERR_FAILED, "reason", strerror(-r));
		return;
	}
	ctl->paused = pause;
	log_info("Sampling %s by uid %u pid %d", ctl->paused ? "paused" : "resumed",
		 (unsigned)c->cred.uid, (int)c->cred.pid);
	reply(c, NULL);
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
		send_msg(c, m, len);
		log_notice("SetFrequency by uid %u pid %d refused: %s", (unsigned)c->cred.uid, (int)c->cred.pid, why);
		return;
	}
	if (r < 0) {
		reply_error(c, VL_ERR_FAILED, "reason", strerror(-r));
		return;
	}
	log_info("Sampling frequency set to %" PRId64 " Hz by uid %u pid %d", hz,
		 (unsigned)c->cred.uid, (int)c->cred.pid);
	p = json_object_new_object();
	J_ADD(p, "frequency", json_object_new_int64(hz));
	reply(c, p);
}

static void method_subscribe(struct client *c, const struct varlink_call *vc)
{
	int r;

	if (snapshot_flight_mode(c->ctl->cfg)) {
		reply_error(c, VL_ERR_NOT_SUPPORTED, "reason", "flight mode streams nothing; use Snapshot");
		return;
	}
	reply(c, NULL);
	r = subscribe(c->ctl, c);
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

static void call(struct control *ctl, struct client *c, const struct varlink_call *vc)
{
	if (!c->privileged && !varlink_is_public(vc->name, ctl->cfg->control_public_methods)) {
		refusal(ctl, "Refused %s to uid %u pid %d: not root and not in the control group",
			vc->name, (unsigned)c->cred.uid, (int)c->cred.pid);
		reply_error(c, VL_ERR_PERMISSION_DENIED, "method", vc->name);
		return;
	}
	vc->method->handle(c, vc);
}

/* Handle the whole messages in the input buffer, as far as the client takes replies. */
static void handle_input(struct control *ctl, struct client *c)
{
	size_t off = 0;

	c->parse_more = false;
	while (!c->dead && !c->sub && !c->ending && off < c->in_len) {
		struct varlink_call vc;
		const char *err, *param;
		int n;

		if (client_blocked(c)) {
			c->parse_more = true;
			break;
		}
		n = varlink_frame(c->in + off, c->in_len - off);
		if (n == 0)
			break;
		if (n < 0) {
			/* We cannot find where the next message starts: say why and hang up. */
			struct json_object *p = json_object_new_object();
			size_t len = 0;
			char *m;

			J_ADD(p, "limit", json_object_new_int(VARLINK_MAX_MESSAGE));
			m = varlink_error(VL_ERR_MESSAGE_TOO_LARGE, p, &len);
			send_msg(c, m, len);
			flush_out(c);
			c->dead = true;
			break;
		}
		c->request_usec = now_usec();
		if (varlink_parse(c->in + off, (size_t)n - 1, control_methods, control_nr_methods,
				  &vc, &err, &param) < 0) {
			size_t len = 0;
			char *m = varlink_error_param(err, param, &len);

			send_msg(c, m, len);
		} else {
			bool oneway = vc.oneway;
			size_t before = c->out_len;

			call(ctl, c, &vc);
			/* A snapshot under way replies (or not) when it ends. */
			if (oneway && !vc.method->upgrade && !xfer_active(c))
				c->out_len = before;
			varlink_call_done(&vc);
		}
		off += (size_t)n;
	}
	if (off == c->in_len) {
		in_release(c);
	} else if (off) {
		memmove(c->in, c->in + off, c->in_len - off);
		c->in_len -= off;
	}
	if (!c->dead)
		update_events(c);
}

/*
 * Room for the next read: the input buffer grows by doubling, and an
 * unprivileged client's growth is charged to its uid.  -EDQUOT: over the
 * uid's (or all unprivileged users') budget.
 */
static int in_reserve(struct client *c)
{
	const struct control_limits *l = &c->ctl->lim;
	size_t cap, more;
	char *n;

	if (c->in_len < c->in_cap)
		return 0;
	if (c->in_cap >= VARLINK_MAX_MESSAGE)
		return -ENOBUFS;
	cap = c->in_cap ? c->in_cap * 2 : IN_MIN;
	if (cap > VARLINK_MAX_MESSAGE)
		cap = VARLINK_MAX_MESSAGE;
	more = cap - c->in_cap;
	if (c->peer && (c->peer->bytes + more > l->max_uid_bytes ||
			c->ctl->unprivileged_bytes + more > l->max_unprivileged_bytes))
		return -EDQUOT;
	n = realloc(c->in, cap);
	if (!n)
		return -ENOMEM;
	c->in = n;
	c->in_cap = cap;
	client_charge(c);
	return 0;
}

static void read_client(struct control *ctl, struct client *c)
{
	char cbuf[CMSG_SPACE(sizeof(int) * 4)];
	struct iovec iov;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	ssize_t n;
	int r;

	r = in_reserve(c);
	if (r == -EDQUOT) {
		refusal(ctl, "Dropped control client uid %u pid %d: its user's unanswered input reached the limit of %zu KiB",
			(unsigned)c->cred.uid, (int)c->cred.pid, ctl->lim.max_uid_bytes / 1024);
		c->dead = true;
		return;
	}
	if (r < 0) {
		c->dead = r != -ENOBUFS;
		return;
	}
	iov.iov_base = c->in + c->in_len;
	iov.iov_len = c->in_cap - c->in_len;
	n = recvmsg(c->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0) {
		if (errno != EAGAIN && errno != EINTR)
			c->dead = true;
		return;
	}
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
			/* One fd per client at a time: the newest one is for the next Snapshot. */
			if (c->passed_fd >= 0)
				close(c->passed_fd);
			c->passed_fd = fd;
		}
	}
	if (n == 0) {
		c->dead = true;
		return;
	}
	c->in_len += (size_t)n;
	handle_input(ctl, c);
}

void control_sweep(struct control *ctl, uint64_t now)
{
	const struct control_limits *l;

	if (!ctl)
		return;
	l = &ctl->lim;
	for (struct client *c = ctl->clients, *next; c; c = next) {
		next = c->next;
		/*
		 * Stalled: nothing taken for stall_usec though there was something
		 * to take.  Bytes that moved after @now (a clock read before this
		 * pass's writes) are progress, not a difference that wraps round.
		 */
		if (!c->dead && out_limit(c) > c->out_off && now > c->out_moved_usec &&
		    now - c->out_moved_usec > l->stall_usec) {
			if (c->sub) {
				char why[64];

				snprintf(why, sizeof(why), "its reader took nothing for %llu s",
					 (unsigned long long)(l->stall_usec / 1000000));
				stream_end(c, why, true);
			} else {
				log_notice("Control client pid %d uid %u stalled; dropping it",
					   (int)c->cred.pid, (unsigned)c->cred.uid);
				c->dead = true;
			}
		}
		if (!c->dead && c->xfer.fc)
			file_copy_poll(c);
		if (!c->dead && xfer_active(c) && now > c->xfer.moved_usec && now - c->xfer.moved_usec > l->stall_usec) {
			char why[96];

			snprintf(why, sizeof(why), c->xfer.fc ? "the file took nothing for %llu s (a hung file system?)"
				 : "its reader took nothing for %llu s", (unsigned long long)(l->stall_usec / 1000000));
			xfer_finish(c, -ETIMEDOUT, why);
		}
		if (!c->dead && !c->sub && !c->ending && !xfer_active(c) && c->out_len == c->out_off &&
		    now > c->request_usec && now - c->request_usec > l->idle_usec) {
			refusal(ctl, "Closed control client uid %u pid %d: no complete request for %llu s",
				(unsigned)c->cred.uid, (int)c->cred.pid, (unsigned long long)(l->idle_usec / 1000000));
			c->dead = true;
		}
		if (c->dead)
			client_drop(c, "closed");
	}
	if (ctl->accept_paused_until && now >= ctl->accept_paused_until) {
		struct epoll_event on = { .events = EPOLLIN, .data.u64 = TAG_LISTEN };

		epoll_ctl(ctl->epfd, EPOLL_CTL_MOD, ctl->listen_fd, &on);
		ctl->accept_paused_until = 0;
	}
	/* Buffers of clients gone (a flood of partial requests) go back to the system. */
	if (ctl->freed_since_trim >= TRIM_BYTES) {
		malloc_trim(0);
		ctl->freed_since_trim = 0;
	}
	refusals_roll(ctl, now);
}

void control_process(struct control *ctl)
{
	struct epoll_event evs[MAX_EVENTS];
	int n;

	if (!ctl)
		return;
	n = epoll_wait(ctl->epfd, evs, MAX_EVENTS, 0);
	for (int i = 0; i < n; i++) {
		struct client *c;

		if (evs[i].data.u64 == TAG_LISTEN) {
			accept_clients(ctl);
			continue;
		}
		if (*(enum watch *)evs[i].data.ptr == WATCH_SNAPSHOT) {
			c = ((struct transfer *)evs[i].data.ptr)->c;
			if (!c->dead && xfer_active(c))
				xfer_pump(c);
			continue;
		}
		c = evs[i].data.ptr;
		if (c->dead)
			continue;
		if (evs[i].events & EPOLLIN)
			read_client(ctl, c);
		else if (evs[i].events & (EPOLLHUP | EPOLLERR))
			c->dead = true;
		if (c->sub && (evs[i].events & (EPOLLHUP | EPOLLERR)))
			c->dead = true;
	}
	if (ctl->evlist != ctl->rec->evlist) {
		/* A reload reopened the events: a stream's attrs no longer describe them. */
		for (struct client *c = ctl->clients; c; c = c->next)
			if (c->sub && !c->dead && c->sub_evlist != ctl->rec->evlist)
				stream_end(c, "the configuration was reloaded with other events; subscribe again", true);
		ctl->evlist_usec = ctl->evlist ? now_usec() : ctl->start_usec;
		ctl->evlist = ctl->rec->evlist;
	}
	for (struct client *c = ctl->clients; c; c = c->next) {
		if (!c->dead && out_limit(c) > c->out_off)
			flush_out(c);
		if (!c->dead && xfer_active(c) && !c->xfer.watched)
			xfer_pump(c);
		if (!c->dead && c->parse_more)
			handle_input(ctl, c);
	}
	control_sweep(ctl, now_usec());
}

void control_set_limits(struct control *ctl, const struct control_limits *lim)
{
	ctl->lim = *lim;
}

void control_stats(const struct control *ctl, struct control_stats *ret)
{
	*ret = (struct control_stats){
		.clients = ctl->nr_clients,
		.unprivileged = ctl->nr_unprivileged,
		.buffered_bytes = ctl->buffered,
		.refused = ctl->refused,
		.refusals_logged = ctl->refusals_logged,
	};
}
