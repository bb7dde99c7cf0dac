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

#include "config.h"
#include "recorder.h"

struct control;

/* Per-client limits: a reply queue (ordinary clients) and a Subscribe stream. */
#define CONTROL_MAX_CLIENTS 4096
#define CONTROL_MAX_OUT (1U << 20)
#define CONTROL_MAX_STREAM (64U << 20)
/* A client whose pending output has not moved for this long is dropped. */
#define CONTROL_STALL_USEC (10 * 1000000ULL)

/*
 * Take the socket from systemd (LISTEN_FDS: the fd named "control", or the
 * only one) or create cfg->socket.  Returns 0 and *ret (NULL when the socket
 * is disabled with socket= empty) or -errno, logged.
 */
int control_open(const struct config *cfg, struct recorder *rec, struct control **ret);
/* The fd to poll for readability: the control epoll set. */
int control_fd(const struct control *ctl);
/* Whether a client paused sampling (Pause, until Resume); false for NULL. */
bool control_paused(const struct control *ctl);
/* Serve whatever is ready, bounded; call after the drain of each pass. */
void control_process(struct control *ctl);
/* Close every client, and remove the socket if we created it. */
void control_free(struct control *ctl);

#endif
