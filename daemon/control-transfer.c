// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * What a control client takes at its own pace: a snapshot, spooled and
 * copied out, and a live stream of the recorder's records (a sink of its
 * drain).  Neither may hold up the drain.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "control-internal.h"
#include "filecopy.h"
#include "log.h"
#include "outfile.h"
#include "snapshot.h"
#include "varlink.h"

/* Per pass: at most this much of a snapshot per reader. */
#define XFER_PER_PASS (4U << 20)

void xfer_close(struct client *c)
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

/* ------------------------------------------------------------ snapshots */

/*
 * A snapshot into a pipe or a socket is spooled first (snapshot.c) and
 * copied out here without ever waiting: the reader takes it at its own
 * pace, bounded per pass, and one that takes nothing for stall_usec or
 * goes away ends the transfer with an error reply and a log line.  The
 * reply (the sample count) comes when the last byte was taken.
 */
void xfer_finish(struct client *c, int err, const char *why)
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
			client_reply_error(c, VL_ERR_FAILED, "reason", reason);
		} else {
			struct json_object *p = json_object_new_object();

			json_object_object_add(p, "samples", json_object_new_int(x->samples));
			client_reply(c, p);
		}
	}
	c->parse_more = c->in_len > 0;
	client_update_events(c);
}

/* A copy into a regular file (its thread's): note its progress, and its end. */
void xfer_copy_poll(struct client *c)
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
void xfer_pump(struct client *c)
{
	static char buf[64 * 1024];
	struct transfer *x = &c->xfer;
	size_t budget = x->watched ? XFER_PER_PASS : SIZE_MAX;

	if (x->fc) {
		xfer_copy_poll(c);
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
	client_update_events(c);
	xfer_copy_poll(c);
	return 0;
}

/* Takes c->passed_fd.  Returns 0 when the transfer started (reply at its end), or -errno. */
int xfer_start(struct control *ctl, struct client *c, bool oneway)
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
	client_update_events(c);
	xfer_pump(c);
	return 0;
}

/* ------------------------------------------------------------- streams */

static int stream_sink(void *ctx, const struct iovec *iov, int iovcnt)
{
	struct client *c = ctx;
	int r = 0;

	for (int i = 0; i < iovcnt && r == 0; i++)
		if (!client_queue(c, iov[i].iov_base, iov[i].iov_len))
			r = -ENOBUFS;
	client_stream_scan(c);
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
void stream_end(struct client *c, const char *why, bool failed)
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
	if (!m || !client_queue_raw(c, &mark, sizeof(mark)) || !client_queue_raw(c, m, len))
		c->dead = true;
	free(m);
	/* The reader gets the stall time afresh to take the end. */
	c->out_moved_usec = now_usec();
	c->complete = c->out_base + c->out_len;
	if (!c->dead)
		client_update_events(c);
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

int stream_subscribe(struct control *ctl, struct client *c)
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
