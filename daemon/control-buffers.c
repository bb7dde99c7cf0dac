// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A control client's buffers: their bytes counted against the limits, and
 * output queued and sent without waiting.  A stream's output goes out only
 * in whole records (unit_size()), so that it can end at any record.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "control-internal.h"
#include "log.h"
#include "varlink.h"

#define STR_(x) #x
#define STR(x) STR_(x)
/* Replies pending past this: read no further calls until they are taken. */
#define OUT_HIGH (64 * 1024)

/* Count the client's buffers (after any change to their capacity). */
void client_charge(struct client *c)
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

void client_in_release(struct client *c)
{
	free(c->in);
	c->in = NULL;
	c->in_len = c->in_cap = 0;
	client_charge(c);
}

void client_out_release(struct client *c)
{
	free(c->out);
	c->out = NULL;
	c->out_len = c->out_off = c->out_cap = 0;
	client_charge(c);
}

bool client_blocked(const struct client *c)
{
	return xfer_active(c) || c->out_len - c->out_off >= OUT_HIGH;
}

/* How far the output may be sent: a stream only up to its last whole record. */
size_t client_out_limit(const struct client *c)
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
void client_stream_scan(struct client *c)
{
	uint64_t end = c->out_base + c->out_len;

	for (;;) {
		size_t n = unit_size(c, c->complete);

		if (!n || c->complete + n > end)
			break;
		c->complete += n;
	}
}

void client_update_events(struct client *c)
{
	uint32_t ev = 0;

	/* A subscriber's input is no longer read: it sends nothing we need. */
	if (!c->sub && !c->ending && !client_blocked(c) && c->in_len < VARLINK_MAX_MESSAGE)
		ev |= EPOLLIN;
	if (client_out_limit(c) > c->out_off)
		ev |= EPOLLOUT;
	if (ev != c->events) {
		struct epoll_event e = { .events = ev, .data.ptr = c };

		epoll_ctl(c->ctl->epfd, EPOLL_CTL_MOD, c->fd, &e);
		c->events = ev;
	}
}

void client_flush(struct client *c)
{
	size_t limit = client_out_limit(c);

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
			client_out_release(c);
		}
		c->parse_more = c->in_len > 0;
	}
	client_update_events(c);
}

/* Queue bytes, whatever the cap; false (and the client marked dead) without memory. */
bool client_queue_raw(struct client *c, const void *buf, size_t len)
{
	/* Nothing was waiting for the reader: its time to take this starts now. */
	if (c->out_off == client_out_limit(c))
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
bool client_queue(struct client *c, const void *buf, size_t len)
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
	return client_queue_raw(c, buf, len);
}

/* Takes @msg (from varlink_*(..., &len): call that first, then pass len). */
void client_send_msg(struct client *c, char *msg, size_t len)
{
	if (!msg) {
		c->dead = true;
		return;
	}
	client_queue(c, msg, len);
	free(msg);
}

void client_reply(struct client *c, struct json_object *params)
{
	size_t len = 0;
	char *m = varlink_reply(params, &len);

	client_send_msg(c, m, len);
}

void client_reply_error(struct client *c, const char *error, const char *key, const char *value)
{
	struct json_object *p = json_object_new_object();
	size_t len = 0;
	char *m;

	if (p && key)
		json_object_object_add(p, key, json_object_new_string(value));
	m = varlink_error(error, p, &len);
	client_send_msg(c, m, len);
}

