/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Between the parts of the control socket server (control.h), which call
 * one another in one direction only:
 *
 *   control.c           the socket, clients, permissions and limits; reads
 *                       calls and dispatches them, sweeps and drops clients
 *     -> control-methods.c   the handlers of control_methods[]
 *     -> control-transfer.c  snapshots copied out, live streams (a sink)
 *     -> control-buffers.c   a client's buffers: counted, queued, sent
 *
 * control-methods.c calls the transfer and the buffers, control-transfer.c
 * only the buffers, and control-buffers.c none of them.
 */
#ifndef PERFRECD_CONTROL_INTERNAL_H
#define PERFRECD_CONTROL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "control.h"
#include "filecopy.h"
#include "varlink.h"

#define J_ADD(o, k, v) json_object_object_add(o, k, v)

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

/* A snapshot is being delivered (into a pipe, a socket or a file). */
static inline bool xfer_active(const struct client *c)
{
	return c->xfer.spool >= 0 || c->xfer.fc;
}

/* control-buffers.c */
void client_charge(struct client *c);
void client_in_release(struct client *c);
void client_out_release(struct client *c);
bool client_blocked(const struct client *c);
size_t client_out_limit(const struct client *c);
void client_stream_scan(struct client *c);
void client_update_events(struct client *c);
void client_flush(struct client *c);
bool client_queue_raw(struct client *c, const void *buf, size_t len);
bool client_queue(struct client *c, const void *buf, size_t len);
void client_send_msg(struct client *c, char *msg, size_t len);
void client_reply(struct client *c, struct json_object *params);
void client_reply_error(struct client *c, const char *error, const char *key, const char *value);

/* control-transfer.c: snapshots */
void xfer_close(struct client *c);
void xfer_finish(struct client *c, int err, const char *why);
void xfer_copy_poll(struct client *c);
void xfer_pump(struct client *c);
int xfer_start(struct control *ctl, struct client *c, bool oneway);
/* control-transfer.c: live streams */
void stream_end(struct client *c, const char *why, bool failed);
int stream_subscribe(struct control *ctl, struct client *c);

#endif
