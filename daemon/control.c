// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The control socket server (see control.h): listening socket (created or
 * from systemd), clients and their permissions and limits, reading calls
 * and dispatching them to control-methods.c, sweeping what timed out.
 * Parsing and checking of messages is varlink.c's; control-internal.h
 * says which part does what.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "control-internal.h"
#include "ctlsock.h"
#include "log.h"
#include "varlink.h"

#define TAG_LISTEN UINT64_MAX
/* Per pass: at most this many events. */
#define MAX_EVENTS 128
/* An input buffer starts this small and doubles up to VARLINK_MAX_MESSAGE. */
#define IN_MIN 4096
/* Refusals logged per interval; the rest are counted and the count logged. */
#define REFUSAL_BURST 20
#define REFUSAL_INTERVAL_USEC (10 * 1000000ULL)
/* Out of file descriptors: try accepting again after this long. */
#define ACCEPT_PAUSE_USEC (100 * 1000ULL)
/* Freed buffers worth handing back to the system. */
#define TRIM_BYTES (1U << 20)

static void client_drop(struct client *c, const char *why);

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
			client_flush(c);
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
	client_in_release(c);
	client_out_release(c);
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

static void call(struct control *ctl, struct client *c, const struct varlink_call *vc)
{
	if (!c->privileged && !varlink_is_public(vc->name, ctl->cfg->control_public_methods)) {
		refusal(ctl, "Refused %s to uid %u pid %d: not root and not in the control group",
			vc->name, (unsigned)c->cred.uid, (int)c->cred.pid);
		client_reply_error(c, VL_ERR_PERMISSION_DENIED, "method", vc->name);
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
			client_send_msg(c, m, len);
			client_flush(c);
			c->dead = true;
			break;
		}
		c->request_usec = now_usec();
		if (varlink_parse(c->in + off, (size_t)n - 1, control_methods, control_nr_methods,
				  &vc, &err, &param) < 0) {
			size_t len = 0;
			char *m = varlink_error_param(err, param, &len);

			client_send_msg(c, m, len);
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
		client_in_release(c);
	} else if (off) {
		memmove(c->in, c->in + off, c->in_len - off);
		c->in_len -= off;
	}
	if (!c->dead)
		client_update_events(c);
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
		if (!c->dead && client_out_limit(c) > c->out_off && now > c->out_moved_usec &&
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
			xfer_copy_poll(c);
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
		if (!c->dead && client_out_limit(c) > c->out_off)
			client_flush(c);
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

