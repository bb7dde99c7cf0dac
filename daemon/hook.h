/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The on-rotate hook: a shell command started for every published file,
 * without the recorder ever waiting for it.  Running hooks are tracked in a
 * small fixed table so that they can be reaped (and only they: other
 * children are never waited for) and so that hooks which hang cannot make
 * the daemon fork without bound.
 */
#ifndef PERFRECD_HOOK_H
#define PERFRECD_HOOK_H

#include <stdbool.h>
#include <stdint.h>

#define HOOK_MAX_RUNNING 64

struct hook_info {
	const char *path; /* published file */
	const char *host;
	uint64_t start_wall_ns, end_wall_ns;
	uint64_t samples, lost;
	bool recovered;
};

/*
 * Start `/bin/sh -c '<command> "$PERFREC_FILE"'` (so the command gets the
 * path as its last argument) with PERFREC_FILE, PERFREC_HOST, PERFREC_START,
 * PERFREC_END (UTC ISO 8601 with milliseconds, 2026-11-23T14:03:00.123Z),
 * PERFREC_SAMPLES, PERFREC_LOST and PERFREC_RECOVERED (0/1), a fixed PATH,
 * and LANG, LC_ALL and TZ if the daemon has them: nothing else of the
 * daemon's environment.  stdin is /dev/null, stdout/stderr are inherited,
 * no other descriptor is; no capabilities and no_new_privs; the signal
 * mask is emptied and dispositions reset to default.  Returns the
 * pid, -EBUSY when HOOK_MAX_RUNNING hooks still run, or another -errno;
 * failures are logged.  Not thread-safe.
 */
int hook_run(const char *command, const struct hook_info *info);

/*
 * Reap finished hooks without blocking (waitpid WNOHANG on tracked pids
 * only) and log how each ended.  Returns the number reaped.
 */
int hook_reap(void);

/* Number of hooks started and not yet reaped. */
int hook_running(void);

#endif
