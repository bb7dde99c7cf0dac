/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The event loop: rings, signals and timers in one epoll set.  Draining
 * comes first on every wakeup; everything else happens beside it.
 */
#ifndef PERFRECD_MANAGER_H
#define PERFRECD_MANAGER_H

#include <signal.h>

#include "config.h"
#include "recorder.h"

struct control;

struct manager {
	struct config *cfg;
	struct recorder rec;
	struct control *ctl;      /* control socket; NULL: none */
	int epfd, sigfd, timerfd;
	int dirfd;                /* holds the output directory's lock (dirlock.h); -1: none */
	bool stop;
	uint64_t start_usec;    /* when recording began: duration= counts from it */
	uint64_t deadline_usec; /* 0: none */
	struct uploader *uploader; /* upload.c; NULL: no upload-url */
	struct metrics *metrics;   /* metrics.c; NULL: no metrics-listen/-textfile */
	struct governor *gov;      /* governor.c; NULL: no max-overhead */
	uint64_t leftovers_retry_usec; /* next try at a leftover the full disk kept us from recovering */
	/* Builds a fresh configuration for SIGHUP (file + command line); 0 or
	 * -errno with a one-line reason in @err.  NULL: reload unsupported. */
	int (*reload)(struct config *ret_cfg, char *err, size_t errlen);
	int argc;
	char **argv;
};

/*
 * Block the signals the event loop takes through its signalfd (INT, TERM,
 * HUP, USR2, CHLD); their set into *ret_mask (may be NULL).  Called before
 * main() too, so none of them can meet its default action at start.
 */
void manager_block_signals(sigset_t *ret_mask);
int manager_init(struct manager *m, struct config *cfg, int argc, char **argv);
int manager_run(struct manager *m);
void manager_exit(struct manager *m);

#endif
