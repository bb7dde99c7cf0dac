/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The control socket: a unix stream socket speaking varlink (varlink.c)
 * for perfrecctl and any other varlink client.  It lives in its own epoll
 * set, registered as one fd in the manager's loop, and is served only after
 * the rings are drained, with bounded work per pass: no client, however
 * slow, stalled or numerous, holds up the recorder.
 *
 * Clients are identified with SO_PEERCRED and SO_PEERGROUPS (the peer's
 * groups when it connected): root and members of control-group= may call
 * everything, others only control-public-methods=.
 */
#ifndef PERFRECD_CONTROL_H
#define PERFRECD_CONTROL_H

#include <stdint.h>

#include "config.h"
#include "governor.h"
#include "recorder.h"
#include "varlink.h"

struct control;

/* Per-client output caps: a reply queue (ordinary clients) and a Subscribe stream. */
#define CONTROL_MAX_OUT (1U << 20)
#define CONTROL_MAX_STREAM_MIB 64
#define CONTROL_MAX_STREAM ((size_t)CONTROL_MAX_STREAM_MIB << 20)

/*
 * What keeps one local user from crowding out the others, and all of them
 * from crowding out root.  Root and members of control-group (privileged)
 * count only against max_clients, and reserved of those are theirs alone;
 * every other uid is held to max_per_uid connections and max_uid_bytes of
 * buffers (partial requests, pending replies), and all of them together to
 * max_unprivileged_bytes.  A connection over a limit is closed at once,
 * logged at a bounded rate.
 */
struct control_limits {
	size_t max_clients;
	size_t reserved;
	size_t max_per_uid;
	size_t max_uid_bytes;
	size_t max_unprivileged_bytes;
	/* A connection without a complete message for this long is closed
	 * (not one that streams, awaits a snapshot or has replies pending). */
	uint64_t idle_usec;
	/* Output (replies, stream, snapshot) that did not move for this long: dropped. */
	uint64_t stall_usec;
};

#define CONTROL_LIMITS_DEFAULT { \
	.max_clients = 4096, .reserved = 64, .max_per_uid = 64, \
	.max_uid_bytes = 1U << 20, .max_unprivileged_bytes = 16U << 20, \
	.idle_usec = 30 * 1000000ULL, .stall_usec = 10 * 1000000ULL, \
}

/* Counters for tests and the log. */
struct control_stats {
	size_t clients, unprivileged;
	size_t buffered_bytes;     /* input and output buffers held now */
	uint64_t refused;          /* calls and connections refused, clients dropped by a limit */
	uint64_t refusals_logged;  /* of those, logged one by one (the rest as a count) */
};

/*
 * Take the socket from systemd (LISTEN_FDS: the fd named "control", or the
 * only one) or create cfg->socket.  Returns 0 and *ret (NULL when the socket
 * is disabled with socket= empty) or -errno, logged.
 */
int control_open(const struct config *cfg, struct recorder *rec, struct control **ret);
/*
 * What a Status reply shows of modules the control socket does not own,
 * asked afresh on each call (the manager may replace them on a reload).
 * Each callback may be NULL: that part is left out.
 */
struct control_status_source {
	/* The overhead governor's state; false: none governs. */
	bool (*governor)(void *userdata, struct governor_status *ret);
	void *userdata;
};
/* Set where Status gets those parts; none until it is called. */
void control_set_status_source(struct control *ctl, const struct control_status_source *src);
/* The fd to poll for readability: the control epoll set. */
int control_fd(const struct control *ctl);
/* Whether a client paused sampling (Pause, until Resume); false for NULL. */
bool control_paused(const struct control *ctl);
/* Serve whatever is ready, bounded; call after the drain of each pass. */
void control_process(struct control *ctl);
/*
 * Close what has timed out as of @now_usec (idle connections, stalled
 * readers), drop the closed clients and give their memory back, and log
 * how many refusals went unlogged.  control_process() calls it each pass.
 */
void control_sweep(struct control *ctl, uint64_t now_usec);
/* Replace the limits (CONTROL_LIMITS_DEFAULT from control_open()). */
void control_set_limits(struct control *ctl, const struct control_limits *lim);
void control_stats(const struct control *ctl, struct control_stats *ret);
/* Close every client, and remove the socket if we created it. */
void control_free(struct control *ctl);

/* The io.perfrec and org.varlink.service methods the socket serves (varlink.h). */
extern const struct varlink_method control_methods[];
extern const size_t control_nr_methods;

#endif
