// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The overhead governor behind max-overhead=.  Once a second it measures
 * what recording cost: perfrecd's own CPU time (getrusage, every thread)
 * plus the samples that interrupted something times the per-sample cost in
 * the kernel, which our own CPU time does not show.  Samples of the idle
 * task cost no one anything and are not counted, so the overhead follows the
 * load.  That cost is calibrated at start by sampling a busy loop of our own
 * and seeing how much longer it takes; it varies a lot (a few microseconds
 * on bare metal, tens in a VM where every timer costs an exit), so no
 * constant fits everywhere.  Over budget, the frequency drops in proportion;
 * well under, it rises back towards the configured frequency.  Every change
 * is logged with its reason and numbers.
 */
#include <errno.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "governor.h"
#include "log.h"
#include "recorder.h"

/* Used when calibration cannot run (no self-sampling event): conservative,
 * about what a sample with a callchain costs in a VM. */
#define FALLBACK_SAMPLE_COST_SEC 20e-6
#define PERIOD_USEC 1000000ULL
/*
 * Decisions look at up to WINDOW periods since the last change, and wait for
 * MIN_PERIODS of them: a rotation (synthesis, SHA-256 of the file) costs a
 * burst of our own CPU that, judged on one second, would send the rate to the
 * floor and back.  When sampling alone is far over budget (EMERGENCY times:
 * the configured rate on a busy host) one period is enough.
 */
#define WINDOW 10
#define MIN_PERIODS 5
#define EMERGENCY 4.0

struct governor {
	struct governor_policy pol;
	double max_overhead;     /* the configured fraction */
	long nr_cpus;
	double sample_cost_sec;
	bool calibrated;
	uint64_t cur;            /* frequency the events run at */
	uint64_t lo, hi;         /* lowest and highest since start */
	uint64_t changes;
	bool settle;             /* the last period straddled a change: skip it */
	bool off;                /* turned off by a reload; kept for its calibration */
	struct governor_measure win[WINDOW]; /* periods since the last change, newest last */
	size_t nr_win;
	/* the period being measured */
	uint64_t t0_usec;
	double cpu0;
	uint64_t samples0;
	/* last measurement, for status */
	double overhead, own, sampling;
	double sample_rate;
};

double governor_overhead(const struct governor_measure *m)
{
	if (!(m->wall_sec > 0))
		return 0;
	return (m->own_cpu_sec + (double)m->samples * m->sample_cost_sec) / m->wall_sec;
}

static uint64_t clamp_freq(const struct governor_policy *p, double f)
{
	uint64_t lo = p->min_freq < p->max_freq ? p->min_freq : p->max_freq;

	if (!(f >= (double)lo))
		return lo;
	if (f >= (double)p->max_freq)
		return p->max_freq;
	return (uint64_t)f;
}

uint64_t governor_decide(const struct governor_policy *p, const struct governor_measure *m, uint64_t cur,
			 enum governor_why *ret_why)
{
	double u = governor_overhead(m), f = (double)cur;
	enum governor_why why = GOVERNOR_KEEP;
	uint64_t next = cur;

	if (m->wall_sec > 0 && p->budget > 0) {
		if (u > p->budget) {
			/* Overhead scales with the rate; aim inside, not at the edge. */
			next = clamp_freq(p, f * GOVERNOR_TARGET * p->budget / u);
			if (next < cur)
				why = GOVERNOR_LOWER;
		} else if (u < GOVERNOR_RAISE_BELOW * p->budget && cur < p->max_freq) {
			double k = u > 0 ? GOVERNOR_TARGET * p->budget / u : GOVERNOR_MAX_RAISE;

			if (k > GOVERNOR_MAX_RAISE)
				k = GOVERNOR_MAX_RAISE;
			next = clamp_freq(p, f * k + 0.999);
			if (next > cur)
				why = GOVERNOR_RAISE;
		}
	}
	/* Outside the bounds (a smaller ceiling now): back inside, whatever u says. */
	if (why == GOVERNOR_KEEP) {
		next = clamp_freq(p, f);
		why = next < cur ? GOVERNOR_LOWER : next > cur ? GOVERNOR_RAISE : GOVERNOR_KEEP;
	}
	if (ret_why)
		*ret_why = why;
	return next;
}

/* ------------------------------------------------------------ measuring */

static double clock_sec(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double own_cpu_sec(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) < 0)
		return 0;
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static volatile uint64_t spin_sink;

/* A few frames deep, like the code being profiled, so callchains cost alike. */
__attribute__((noinline)) static uint64_t spin_leaf(uint64_t x, unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	spin_sink = x;
	return x;
}

__attribute__((noinline)) static uint64_t spin(unsigned long n)
{
	return spin_leaf(spin_sink, n) + 1;
}

/* Samples in the ring since the last call; the ring is emptied. */
static uint64_t ring_samples(struct perf_event_mmap_page *pg, size_t data_size)
{
	const unsigned char *data = (const unsigned char *)pg + pg->data_offset;
	uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE), tail = pg->data_tail, n = 0;

	while (tail + sizeof(struct perf_event_header) <= head) {
		struct perf_event_header h;
		size_t off = tail % data_size;

		/* A header never straddles the end: records are 8-byte aligned. */
		memcpy(&h, data + off, sizeof(h));
		if (h.size < sizeof(h))
			break;
		if (h.type == PERF_RECORD_SAMPLE)
			n++;
		else if (h.type == PERF_RECORD_LOST && off + 24 <= data_size) {
			uint64_t lost;

			memcpy(&lost, data + off + 16, 8);
			n += lost;
		}
		tail += h.size;
	}
	/* Pairs with the kernel's read of data_tail before it writes. */
	__atomic_store_n(&pg->data_tail, head, __ATOMIC_RELEASE);
	return n;
}

/*
 * Whether hard interrupt time is accounted apart from tasks
 * (CONFIG_IRQ_TIME_ACCOUNTING): then /proc/stat's irq column grows.  Without
 * it, the time a sample's interrupt takes is charged to the task it hit.
 */
static bool irq_time_accounted(void)
{
	unsigned long long v[6] = { 0 };
	FILE *f = fopen("/proc/stat", "re");
	int n;

	if (!f)
		return true;
	n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]);
	fclose(f);
	return n != 6 || v[5] != 0;
}

/* spin(@n): its wall time in *@wall, its thread CPU time added to *@cpu. */
static void timed_spin(unsigned long n, double *wall, double *cpu)
{
	double w = clock_sec(CLOCK_MONOTONIC), c = clock_sec(CLOCK_THREAD_CPUTIME_ID);

	spin(n);
	*cpu += clock_sec(CLOCK_THREAD_CPUTIME_ID) - c;
	*wall = clock_sec(CLOCK_MONOTONIC) - w;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/*
 * The cost of one sample: spin the same work with a cpu-clock sampling event
 * on this thread off and on, in short alternating chunks.  The kernel's work
 * per sample shows as longer chunks.  Where interrupts are charged to the
 * task they hit, thread CPU time shows it and is all we use: it does not see
 * other tasks.  Where interrupt time is accounted apart
 * (CONFIG_IRQ_TIME_ACCOUNTING) only wall time shows it; that also grows when
 * another task runs in between, so that estimate takes the fastest chunks
 * (the lower quartile) and the larger of the two wins: an overestimate only
 * lowers the frequency further than needed.
 */
static int calibrate(bool callchain, uint32_t stack_user, uint64_t freq, double *ret_cost)
{
	enum { ROUNDS = 24 };
	/* Room for a chunk's samples even when each carries a stack copy. */
	const size_t PAGES = stack_user ? 256 : 16;
	struct perf_event_attr a = {
		.size = sizeof(a),
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.freq = 1,
		.sample_freq = freq,
		.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
			       PERF_SAMPLE_PERIOD | (callchain ? PERF_SAMPLE_CALLCHAIN : 0),
		.disabled = 1,
	};
	/*
	 * DWARF callchains: the kernel copies the user registers and stack
	 * into each sample, which is most of what such a sample costs; the
	 * calibration must pay it too (and what the drain then writes
	 * shows in its own CPU time, as for any sample).
	 */
	if (callchain && stack_user) {
		a.sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
		a.sample_regs_user = PERFREC_REGS_USER_X86_64;
		a.sample_stack_user = stack_user;
		a.exclude_callchain_user = 1;
	}
	double w_off[ROUNDS], w_on[ROUNDS], cpu_off = 0, cpu_on = 0, t;
	size_t psz = (size_t)sysconf(_SC_PAGESIZE), len = (1 + PAGES) * psz;
	uint64_t samples = 0;
	unsigned long n = 1000;
	void *map;
	int fd, r = 0;

	fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -errno;
	map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		r = -errno;
		goto out_fd;
	}
	/* Work for about 4 ms per chunk, so a chunk holds some samples. */
	for (;;) {
		t = clock_sec(CLOCK_THREAD_CPUTIME_ID);
		spin(n);
		t = clock_sec(CLOCK_THREAD_CPUTIME_ID) - t;
		if (t >= 0.004 || n > (1UL << 40))
			break;
		n = t > 0.0005 ? (unsigned long)((double)n * 0.004 / t) + 1 : n * 8;
	}
	/* Let the kernel settle the event's period before counting. */
	ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	spin(n);
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	ring_samples(map, PAGES * psz);
	for (int i = 0; i < ROUNDS; i++) {
		timed_spin(n, &w_off[i], &cpu_off);
		ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
		timed_spin(n, &w_on[i], &cpu_on);
		ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
		samples += ring_samples(map, PAGES * psz);
	}
	if (samples < ROUNDS) {
		r = -ENODATA;
		goto out;
	}
	qsort(w_off, ROUNDS, sizeof(double), cmp_double);
	qsort(w_on, ROUNDS, sizeof(double), cmp_double);
	{
		double per_chunk = (double)samples / ROUNDS;
		double by_cpu = (cpu_on - cpu_off) / (double)samples;
		double by_wall = (w_on[ROUNDS / 4] - w_off[ROUNDS / 4]) / per_chunk;
		double cost = by_cpu > by_wall || !irq_time_accounted() ? by_cpu : by_wall;

		log_debug("Overhead governor: calibration: %.0f samples, %.1f us per sample by CPU time, %.1f by wall time",
			  (double)samples, by_cpu * 1e6, by_wall * 1e6);

		/* Below 100 ns is noise, not a measurement. */
		*ret_cost = cost > 100e-9 ? cost : 100e-9;
	}
out:
	munmap(map, len);
out_fd:
	close(fd);
	return r;
}

static uint64_t events_freq(struct recorder *rec)
{
	for (size_t i = 0; rec->evlist && i < perfrec_evlist__nr_evsels(rec->evlist); i++) {
		const struct perfrec_evsel *ev = perfrec_evlist__evsel(rec->evlist, i);

		if (!ev->is_sideband && ev->attr.freq && ev->attr.type != PERF_TYPE_TRACEPOINT)
			return ev->attr.sample_freq;
	}
	return 0;
}

int governor_new(const struct config *cfg, struct governor **ret)
{
	struct governor *g;
	uint64_t cal_freq;
	int r;

	*ret = NULL;
	if (!(cfg->max_overhead > 0))
		return 0;
	if (!cfg->freq) {
		log_notice("max-overhead= is ignored: the events sample by period, and only a frequency can be governed");
		return 0;
	}
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->nr_cpus = sysconf(_SC_NPROCESSORS_ONLN);
	if (g->nr_cpus < 1)
		g->nr_cpus = 1;
	g->max_overhead = cfg->max_overhead;
	g->pol.budget = cfg->max_overhead * (double)g->nr_cpus;
	g->pol.max_freq = config_freq(cfg);
	g->pol.min_freq = GOVERNOR_MIN_FREQ;
	g->cur = g->lo = g->hi = config_freq(cfg);
	/* Enough samples per chunk to see, no more than the kernel allows. */
	cal_freq = config_freq(cfg) > 1000 ? config_freq(cfg) : 1000;
	if (perfrec_evlist__max_sample_rate() > 0 && cal_freq > (uint64_t)perfrec_evlist__max_sample_rate())
		cal_freq = (uint64_t)perfrec_evlist__max_sample_rate();
	r = calibrate(cfg->callchain, cfg->dwarf ? (uint32_t)cfg->stack_size : 0, cal_freq,
		      &g->sample_cost_sec);
	g->calibrated = r >= 0;
	if (r < 0) {
		g->sample_cost_sec = FALLBACK_SAMPLE_COST_SEC;
		log_notice("Overhead governor: cannot calibrate the cost of a sample (%s); assuming %.1f us",
			   strerror(-r), g->sample_cost_sec * 1e6);
	}
	log_info("Overhead governor: budget %.2f%% of %ld CPUs (%.4f CPU-s/s), %.1f us per sample (%s), between %u and %" PRIu64 " Hz",
		 g->max_overhead * 100, g->nr_cpus, g->pol.budget, g->sample_cost_sec * 1e6,
		 g->calibrated ? "calibrated" : "assumed", GOVERNOR_MIN_FREQ, g->pol.max_freq);
	*ret = g;
	return 0;
}

void governor_free(struct governor *g)
{
	free(g);
}

void governor_reload(struct governor **gp, const struct config *cfg, struct recorder *rec, bool enabled)
{
	struct governor *g = *gp;
	uint64_t live = events_freq(rec);
	bool want = cfg->max_overhead > 0 && cfg->freq;
	int r;

	/* A lower max-frequency= holds at once, for a rate set live too. */
	if (cfg->max_freq > 0 && live > (uint64_t)cfg->max_freq) {
		r = perfrec_evlist__set_freq(rec->evlist, (uint64_t)cfg->max_freq, 0);
		if (r < 0) {
			log_error("The events stay at %" PRIu64 " Hz, above max-frequency=%d Hz: %s", live,
				  cfg->max_freq, strerror(-r));
		} else {
			log_notice("Sampling at %" PRIu64 " Hz is above max-frequency=%d Hz: lowered to it",
				   live, cfg->max_freq);
			live = (uint64_t)cfg->max_freq;
		}
	}
	if (g && !g->off && !want) {
		if (live && live != config_freq(cfg)) {
			r = perfrec_evlist__set_freq(rec->evlist, config_freq(cfg), 0);
			if (r < 0)
				log_error("Overhead governor off, but the events stay at %" PRIu64 " Hz: %s", live, strerror(-r));
			else
				log_info("Overhead governor off: %" PRIu64 " -> %" PRIu64 " Hz", live, config_freq(cfg));
		} else {
			log_info("Overhead governor off");
		}
		g->off = true;
		recorder_note_freq(rec, 0);
	}
	if (!want) {
		if (cfg->max_overhead > 0)
			log_notice("max-overhead= is ignored: the events sample by period, and only a frequency can be governed");
		return;
	}
	if (!g) {
		if (enabled)
			recorder_disable(rec);
		r = governor_new(cfg, gp);
		if (enabled)
			recorder_enable(rec);
		if (r < 0 || !*gp) {
			log_error("Cannot start the overhead governor: %s", strerror(r < 0 ? -r : EINVAL));
			return;
		}
		g = *gp;
	}
	/* Events kept open (or reopened at frequency=): govern from where they run. */
	g->off = false;
	g->max_overhead = cfg->max_overhead;
	g->pol.budget = cfg->max_overhead * (double)g->nr_cpus;
	g->pol.max_freq = config_freq(cfg);
	g->cur = live ? live : config_freq(cfg);
	g->nr_win = 0;
	g->settle = true;
	g->t0_usec = 0;
	recorder_note_freq(rec, g->cur);
	log_info("Overhead governor: budget %.2f%% of %ld CPUs, up to %" PRIu64 " Hz, now %" PRIu64 " Hz",
		 g->max_overhead * 100, g->nr_cpus, g->pol.max_freq, g->cur);
}

/* What a measure @m says of the overhead, shown in status. */
static void note_overhead(struct governor *g, const struct governor_measure *m)
{
	g->overhead = governor_overhead(m);
	g->own = m->own_cpu_sec / m->wall_sec;
	g->sampling = g->overhead - g->own;
	g->sample_rate = (double)m->samples / m->wall_sec;
}

/*
 * Add the period @m to the window.  Too few periods to decide on (and no
 * emergency): false.  Else true, with @m the window's sum once it holds
 * enough periods.
 */
static bool take_window(struct governor *g, struct governor_measure *m)
{
	if (g->nr_win == WINDOW)
		memmove(g->win, g->win + 1, (WINDOW - 1) * sizeof(g->win[0]));
	else
		g->nr_win++;
	g->win[g->nr_win - 1] = *m;
	if (g->nr_win < MIN_PERIODS &&
	    !((double)m->samples * m->sample_cost_sec / m->wall_sec > EMERGENCY * g->pol.budget)) {
		note_overhead(g, m);
		return false;
	}
	if (g->nr_win >= MIN_PERIODS) {
		m->wall_sec = m->own_cpu_sec = 0;
		m->samples = 0;
		for (size_t i = 0; i < g->nr_win; i++) {
			m->wall_sec += g->win[i].wall_sec;
			m->own_cpu_sec += g->win[i].own_cpu_sec;
			m->samples += g->win[i].samples;
		}
	}
	note_overhead(g, m);
	return true;
}

void governor_tick(struct governor *g, struct recorder *rec, uint64_t now)
{
	struct governor_measure m;
	enum governor_why why;
	uint64_t next, live;
	double cpu;
	int r;

	if (!g || g->off)
		return;
	recorder_note_freq(rec, g->cur);
	if (!g->t0_usec) {
		g->t0_usec = now;
		g->cpu0 = own_cpu_sec();
		g->samples0 = recorder_busy_samples(rec);
		return;
	}
	if (now - g->t0_usec < PERIOD_USEC)
		return;
	cpu = own_cpu_sec();
	m.wall_sec = (double)(now - g->t0_usec) / 1e6;
	m.own_cpu_sec = cpu - g->cpu0;
	m.samples = recorder_busy_samples(rec) - g->samples0;
	m.sample_cost_sec = g->sample_cost_sec;
	g->t0_usec = now;
	g->cpu0 = cpu;
	g->samples0 = recorder_busy_samples(rec);

	/* Someone else (SetFrequency, a reload) set the rate: that is the new ceiling. */
	live = events_freq(rec);
	if (live && live != g->cur) {
		log_info("Overhead governor: the frequency was set to %" PRIu64 " Hz from outside; governing up to that",
			 live);
		g->pol.max_freq = live;
		g->cur = live;
		g->settle = true;
		g->nr_win = 0;
		recorder_note_freq(rec, live);
		return;
	}
	if (g->settle) {
		/* Part of that period ran at the old rate. */
		g->settle = false;
		return;
	}
	if (!take_window(g, &m))
		return;
	next = governor_decide(&g->pol, &m, g->cur, &why);
	if (why == GOVERNOR_KEEP)
		return;
	r = perfrec_evlist__set_freq(rec->evlist, next, 0);
	if (r < 0) {
		log_debug("Overhead governor: cannot set %" PRIu64 " Hz: %s", next, strerror(-r));
		return;
	}
	log_info("Overhead governor: %" PRIu64 " -> %" PRIu64 " Hz: overhead %.2f%% of all CPUs is %s the budget of %.2f%% "
		 "(own CPU %.2f%%, sampling %.2f%%: %.0f samples/s at %.1f us)",
		 g->cur, next, g->overhead / (double)g->nr_cpus * 100,
		 why == GOVERNOR_LOWER ? "over" : "well under", g->max_overhead * 100,
		 g->own / (double)g->nr_cpus * 100, g->sampling / (double)g->nr_cpus * 100, g->sample_rate,
		 g->sample_cost_sec * 1e6);
	g->cur = next;
	g->changes++;
	g->settle = true;
	g->nr_win = 0;
	if (next < g->lo)
		g->lo = next;
	if (next > g->hi)
		g->hi = next;
	recorder_note_freq(rec, next);
}

bool governor_status(const struct governor *g, struct governor_status *ret)
{
	if (!g || g->off)
		return false;
	*ret = (struct governor_status){
		.freq = g->cur,
		.max_freq = g->pol.max_freq,
		.min_freq_seen = g->lo,
		.max_freq_seen = g->hi,
		.changes = g->changes,
		.budget_percent = g->max_overhead * 100,
		.overhead_percent = g->overhead / (double)g->nr_cpus * 100,
		.own_cpu_percent = g->own / (double)g->nr_cpus * 100,
		.sampling_percent = g->sampling / (double)g->nr_cpus * 100,
		.samples_per_sec = g->sample_rate,
		.sample_cost_usec = g->sample_cost_sec * 1e6,
		.calibrated = g->calibrated,
	};
	return true;
}

void governor_status_line(const struct governor *g, char *buf, size_t len)
{
	struct governor_status st;

	if (!len)
		return;
	buf[0] = 0;
	if (governor_status(g, &st))
		snprintf(buf, len, ", governor at %" PRIu64 " of %" PRIu64 " Hz, overhead %.2f%% of %.2f%%", st.freq,
			 st.max_freq, st.overhead_percent, st.budget_percent);
}
