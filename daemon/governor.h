/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The overhead governor (max-overhead=): keeps what recording costs the
 * host -- perfrecd's own CPU time plus the kernel's sampling cost, which is
 * not visible in our own CPU time -- under a budget of a fraction of all
 * CPUs by lowering the sampling frequency, and raises it back (never above
 * the configured frequency) when the load allows.  governor_decide() is the
 * pure decision, unit-tested; the rest measures and applies it.
 */
#ifndef PERFRECD_GOVERNOR_H
#define PERFRECD_GOVERNOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

struct recorder;

/* Never below this: a profile at fewer Hz is not worth recording. */
#define GOVERNOR_MIN_FREQ 10
/* Over budget: aim at this fraction of it, so one step lands inside. */
#define GOVERNOR_TARGET 0.8
/* Raise only below this fraction of the budget (hysteresis against flapping). */
#define GOVERNOR_RAISE_BELOW 0.5
/* At most this factor up per step: the load may come back. */
#define GOVERNOR_MAX_RAISE 2.0

struct governor_policy {
	double budget;      /* CPU-seconds per second allowed (fraction x online CPUs) */
	uint64_t max_freq;  /* the configured frequency: the ceiling */
	uint64_t min_freq;  /* the floor */
};

/* One measuring period. */
struct governor_measure {
	double wall_sec;        /* length of the period */
	double own_cpu_sec;     /* perfrecd's user+system time in it */
	uint64_t samples;       /* samples that interrupted something (not idle) */
	double sample_cost_sec; /* estimated kernel cost of one sample */
};

enum governor_why { GOVERNOR_KEEP, GOVERNOR_LOWER, GOVERNOR_RAISE };

/* Measured overhead in CPU-seconds per second (0 for an empty period). */
double governor_overhead(const struct governor_measure *m);

/*
 * The frequency for the next period at frequency @cur: lowered in proportion
 * when over budget (to GOVERNOR_TARGET of it), raised in proportion (at most
 * GOVERNOR_MAX_RAISE times) when under GOVERNOR_RAISE_BELOW of it, else @cur;
 * always within [min_freq, max_freq].  *ret_why (optional) says which.
 */
uint64_t governor_decide(const struct governor_policy *p, const struct governor_measure *m, uint64_t cur,
			 enum governor_why *ret_why);

struct governor;

/*
 * NULL in *ret when max-overhead is unset or the events sample by period.
 * Calibrates the per-sample cost (a fraction of a second of busy loop) and
 * logs the budget.  0 or -errno.
 */
int governor_new(const struct config *cfg, struct governor **ret);
void governor_free(struct governor *g);

/*
 * After a reload (SIGHUP), with @cfg the new configuration and @rec
 * recording with it: starts, retunes or turns off the governor in *@g.  Off,
 * the events go back to the configured frequency; the object stays, so that
 * turning it on again reuses the calibration.  Calibrating for the first time
 * pauses @rec's events for it (a fraction of a second) when @enabled says
 * they run: our own sampling would skew it.
 */
void governor_reload(struct governor **g, const struct config *cfg, struct recorder *rec, bool enabled);

/* Once per loop pass; measures and decides about once per second. */
void governor_tick(struct governor *g, struct recorder *rec, uint64_t now_usec);

/* ", governor at 123 of 20000 Hz, 0.41% of 0.50%" for sd_notify STATUS= ("" if @g is NULL). */
void governor_status_line(const struct governor *g, char *buf, size_t len);

/* The governor as a Status reply shows it; percentages are of all CPUs. */
struct governor_status {
	uint64_t freq, max_freq;          /* Hz now; the configured ceiling */
	uint64_t min_freq_seen, max_freq_seen;
	uint64_t changes;
	double budget_percent, overhead_percent, own_cpu_percent, sampling_percent;
	double samples_per_sec, sample_cost_usec;
	bool calibrated;
};

/* Fills *ret and returns true while @g governs; false (*ret untouched)
 * when @g is NULL or turned off. */
bool governor_status(const struct governor *g, struct governor_status *ret);

#endif
