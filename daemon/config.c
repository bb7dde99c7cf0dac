// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Configuration: defaults, the INI file and value parsers.  The file format
 * is systemd's INI dialect as inih reads it (sections, key=value, # and ;
 * comments); sizes and durations use systemd's suffixes so an operator's
 * habits from unit files carry over.  Errors name the file, line and key.
 * A key set twice in one file, or two keys that contradict each other, is
 * an error too: the command line (config_set() over the loaded file) is
 * the one place where a later setting replaces an earlier one.
 */
#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <ini.h>
#include <inttypes.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <perfrec/cpumap.h>
#include <perfrec/evspec.h>

#include "config.h"

/*
 * An always-on recorder must bound itself, as journald does (10% of the file
 * system but at most 4G, 15% kept free but at most 4G): a file every 5 minutes, so that a file is the unit
 * of "what was this host doing at 14:03?"; a week of them at most; at most
 * 10% of the file system; and never the last 15% of it.  The README gives
 * what a day of this costs.
 */
#define DEFAULT_ROTATE_USEC (5 * 60 * 1000000ULL)
#define DEFAULT_MAX_AGE_USEC (7 * 86400 * 1000000ULL)
#define DEFAULT_MAX_BYTES_PERCENT 10
#define DEFAULT_MIN_FREE_PERCENT 15
/* Both shares at most this, so that a large disk is neither filled with a
 * month of profiles nor made to keep hundreds of GiB free for them. */
#define DEFAULT_SHARE_CAP (4ULL << 30)

void config_init(struct config *c)
{
	memset(c, 0, sizeof(*c));
	c->events[0] = strdup("cpu-clock");
	c->nr_events = 1;
	c->freq = 99;
	c->callchain = true;
	c->clockid = CLOCK_MONOTONIC;
	c->mmap_bytes = 512 * 1024;
	c->flush_usec = 1000000;
	c->checkpoint_usec = 5000000;
	c->directory = strdup("/var/lib/perfrecd");
	c->prefix = strdup("perfrecd");
	c->rotate_usec = DEFAULT_ROTATE_USEC;
	c->max_bytes = DEFAULT_SHARE_CAP;
	c->max_bytes_percent = DEFAULT_MAX_BYTES_PERCENT;
	c->max_age_usec = DEFAULT_MAX_AGE_USEC;
	c->min_free = DEFAULT_SHARE_CAP;
	c->min_free_percent = DEFAULT_MIN_FREE_PERCENT;
	c->history_usec = CONFIG_HISTORY_DEFAULT;
	c->history_max = 256ULL << 20;
	c->socket = strdup("/run/perfrecd/io.perfrec");
}

void config_clear_events(struct config *c)
{
	for (size_t i = 0; i < c->nr_events; i++)
		free(c->events[i]);
	c->nr_events = 0;
}

void config_exit(struct config *c)
{
	config_clear_events(c);
	free(c->cpus);
	free(c->offcpu_cgroup);
	free(c->directory);
	free(c->prefix);
	free(c->on_rotate);
	free(c->buildid_cache);
	free(c->user);
	free(c->group);
	free(c->socket);
	free(c->control_group);
	free(c->control_public_methods);
	free(c->upload_url);
	free(c->upload_region);
	free(c->upload_credentials);
	free(c->upload_key);
	for (size_t i = 0; i < c->nr_labels; i++)
		free(c->labels[i]);
	free(c->labels);
	free(c->metrics_listen);
	free(c->metrics_textfile);
	memset(c, 0, sizeof(*c));
}

int parse_size(const char *s, uint64_t *ret)
{
	static const struct { const char *suffix; uint64_t mult; } units[] = {
		{ "", 1 }, { "B", 1 }, { "K", 1ULL << 10 }, { "M", 1ULL << 20 },
		{ "G", 1ULL << 30 }, { "T", 1ULL << 40 },
	};
	char *end;
	unsigned long long v;

	while (isspace((unsigned char)*s))
		s++;
	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -ERANGE;
	while (isspace((unsigned char)*end))
		end++;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].suffix) != 0)
			continue;
		if (v > UINT64_MAX / units[i].mult)
			return -ERANGE;
		*ret = v * units[i].mult;
		return 0;
	}
	return -EINVAL;
}

/* One token of parse_size_or_percent(): a percentage or a size. */
static int parse_one_share(const char *s, uint64_t *bytes, unsigned *percent)
{
	const char *pct = strchr(s, '%');
	unsigned long v;
	char *end;

	if (!pct)
		return parse_size(s, bytes);
	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end != pct || pct[1] || v > 100)
		return -EINVAL;
	*percent = (unsigned)v;
	return 0;
}

int parse_size_or_percent(const char *s, uint64_t *ret_bytes, unsigned *ret_percent)
{
	uint64_t bytes = 0;
	unsigned percent = 0;
	bool have_size = false, have_pct = false;
	char tok[64];

	for (;;) {
		size_t n = 0;
		int r;

		while (isspace((unsigned char)*s))
			s++;
		if (!*s)
			break;
		while (*s && !isspace((unsigned char)*s))
			if (n < sizeof(tok) - 1)
				tok[n++] = *s++;
			else
				return -EINVAL;
		tok[n] = 0;
		if (strchr(tok, '%') ? have_pct : have_size)
			return -EINVAL;
		*(strchr(tok, '%') ? &have_pct : &have_size) = true;
		r = parse_one_share(tok, &bytes, &percent);
		if (r < 0)
			return r;
	}
	if (!have_size && !have_pct)
		return -EINVAL;
	/* A limit of 0 in either form is no limit at all. */
	if ((have_size && !bytes) || (have_pct && !percent))
		bytes = percent = 0;
	*ret_bytes = bytes;
	*ret_percent = percent;
	return 0;
}

const char *format_size_or_percent(uint64_t bytes, unsigned percent, char *buf, size_t len)
{
	if (percent && bytes)
		snprintf(buf, len, "%u%% %" PRIu64, percent, bytes);
	else if (percent)
		snprintf(buf, len, "%u%%", percent);
	else
		snprintf(buf, len, "%" PRIu64, bytes);
	return buf;
}

int parse_duration(const char *s, uint64_t *ret)
{
	static const struct { const char *suffix; uint64_t usec; } units[] = {
		{ "us", 1 }, { "usec", 1 }, { "ms", 1000 }, { "msec", 1000 },
		{ "s", 1000000 }, { "sec", 1000000 }, { "second", 1000000 }, { "seconds", 1000000 },
		{ "m", 60000000ULL }, { "min", 60000000ULL }, { "minute", 60000000ULL },
		{ "minutes", 60000000ULL }, { "h", 3600000000ULL }, { "hr", 3600000000ULL },
		{ "hour", 3600000000ULL }, { "hours", 3600000000ULL },
		{ "d", 86400000000ULL }, { "day", 86400000000ULL }, { "days", 86400000000ULL },
		{ "w", 604800000000ULL }, { "week", 604800000000ULL }, { "weeks", 604800000000ULL },
	};
	uint64_t total = 0;
	bool any = false;

	while (*s) {
		char unit[16];
		size_t n = 0;
		unsigned long long v;
		uint64_t mult = 0, frac, frac_den;
		unsigned __int128 part;
		char *end;

		while (isspace((unsigned char)*s))
			s++;
		if (!*s)
			break;
		if (!isdigit((unsigned char)*s))
			return -EINVAL;
		errno = 0;
		v = strtoull(s, &end, 10);
		if (errno)
			return -ERANGE;
		s = end;
		/*
		 * A fraction, as systemd's time spans and perf take it ("1.5",
		 * "0.25s", "1.5h"): kept to nanoseconds, truncated to the
		 * microsecond once the unit is known.
		 */
		frac = 0;
		frac_den = 1;
		if (*s == '.') {
			s++;
			if (!isdigit((unsigned char)*s))
				return -EINVAL;
			for (; isdigit((unsigned char)*s); s++)
				if (frac_den < 1000000000) {
					frac = frac * 10 + (uint64_t)(*s - '0');
					frac_den *= 10;
				}
		}
		while (isspace((unsigned char)*s))
			s++;
		while (isalpha((unsigned char)*s) && n < sizeof(unit) - 1)
			unit[n++] = *s++;
		unit[n] = 0;
		if (isalpha((unsigned char)*s))
			return -EINVAL;
		if (n == 0)
			mult = 1000000; /* bare number: seconds, as in systemd */
		for (size_t i = 0; n && i < sizeof(units) / sizeof(units[0]); i++)
			if (strcmp(unit, units[i].suffix) == 0)
				mult = units[i].usec;
		if (!mult)
			return -EINVAL;
		part = (unsigned __int128)v * mult + (unsigned __int128)frac * mult / frac_den;
		if (part > UINT64_MAX - total)
			return -ERANGE;
		total += (uint64_t)part;
		any = true;
	}
	if (!any)
		return -EINVAL;
	*ret = total;
	return 0;
}

int parse_bool(const char *s, bool *ret)
{
	static const char *const yes[] = { "1", "yes", "y", "true", "t", "on" };
	static const char *const no[] = { "0", "no", "n", "false", "f", "off" };

	for (size_t i = 0; i < 6; i++) {
		if (strcasecmp(s, yes[i]) == 0)
			return *ret = true, 0;
		if (strcasecmp(s, no[i]) == 0)
			return *ret = false, 0;
	}
	return -EINVAL;
}

static const struct { const char *name; int id; } clocks[] = {
	{ "monotonic", CLOCK_MONOTONIC }, { "monotonic_raw", CLOCK_MONOTONIC_RAW },
	{ "realtime", CLOCK_REALTIME }, { "boottime", CLOCK_BOOTTIME },
	{ "tai", CLOCK_TAI }, { "perf", -1 },
};

int parse_clockid(const char *s, int *ret)
{
	const char *name = strncasecmp(s, "CLOCK_", 6) == 0 ? s + 6 : s;

	for (size_t i = 0; i < sizeof(clocks) / sizeof(clocks[0]); i++)
		if (strcasecmp(name, clocks[i].name) == 0)
			return *ret = clocks[i].id, 0;
	return -EINVAL;
}

const char *clockid_name(int id)
{
	for (size_t i = 0; i < sizeof(clocks) / sizeof(clocks[0]); i++)
		if (clocks[i].id == id)
			return clocks[i].name;
	return "unknown";
}

/* A whole decimal number from @min to @max.  0 or -EINVAL. */
static int parse_long_in(const char *v, long min, long max, long *ret)
{
	char *end;
	long l;

	errno = 0;
	l = strtol(v, &end, 10);
	if (errno || end == v || *end || l < min || l > max)
		return -EINVAL;
	*ret = l;
	return 0;
}

static int set_string(char **dst, const char *v)
{
	char *s = strdup(v);

	if (!s)
		return -ENOMEM;
	free(*dst);
	*dst = s;
	return 0;
}

/* Split a comma/space separated event list and append each name. */
int config_add_events(struct config *c, const char *v, char *err, size_t errlen)
{
	char *copy = strdup(v), *save = NULL, *tok;
	int r = 0;

	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ", \t", &save); tok; tok = strtok_r(NULL, ", \t", &save)) {
		struct perfrec_evspec spec;
		char why[256] = "";

		if (c->nr_events >= CONFIG_MAX_EVENTS) {
			snprintf(err, errlen, "too many events (at most %d)", CONFIG_MAX_EVENTS);
			r = -E2BIG;
			break;
		}
		/* Checked here, so that a file's bad event is refused at its line. */
		r = perfrec_evspec__parse(tok, NULL, &spec, why, sizeof(why));
		if (r < 0) {
			if (why[0])
				snprintf(err, errlen, "events: %s", why);
			else
				snprintf(err, errlen, "events: '%s' is not an event", tok);
			r = -EINVAL;
			break;
		}
		c->events[c->nr_events] = strdup(tok);
		if (!c->events[c->nr_events]) {
			r = -ENOMEM;
			break;
		}
		c->nr_events++;
	}
	free(copy);
	return r;
}

/*
 * Keys whose value is one plain thing, checked and stored the same way; the
 * rest, with rules of their own, are config_set()'s if-blocks.  Errors read
 * "KEY: 'VALUE' is not WHAT".
 */
enum key_kind {
	KEY_BOOL,
	KEY_DURATION,    /* usec, at least min */
	KEY_SIZE,        /* bytes, at least min */
	KEY_STRING,
	KEY_STRING_OPT,  /* "" unsets it (NULL) */
};

/*
 * A string naming a user or group must name one that exists, so that
 * --check-config catches a typo instead of the start (or a reload) after it.
 */
enum key_names { NAMES_ANY, NAMES_USER, NAMES_GROUP };

static const struct simple_key {
	const char *section, *name;
	enum key_kind kind;
	size_t off;
	uint64_t min;
	const char *what;
	enum key_names names;
} simple_keys[] = {
#define K(sec, name, kind, field, min, what) { sec, name, kind, offsetof(struct config, field), min, what, NAMES_ANY }
#define KN(sec, name, kind, field, names) { sec, name, kind, offsetof(struct config, field), 0, NULL, names }
	K("record", "callchain", KEY_BOOL, callchain, 0, NULL),
	K("record", "context-switch", KEY_BOOL, context_switch, 0, NULL),
	K("record", "offcpu", KEY_BOOL, offcpu, 0, NULL),
	K("record", "offcpu-min", KEY_DURATION, offcpu_min_usec, 0, "a duration"),
	K("record", "offcpu-cgroup", KEY_STRING_OPT, offcpu_cgroup, 0, NULL),
	K("record", "flush-interval", KEY_DURATION, flush_usec, 1000, "a duration of at least 1ms"),
	K("record", "checkpoint-interval", KEY_DURATION, checkpoint_usec, 100000,
	  "a duration of at least 100ms"),
	K("record", "duration", KEY_DURATION, duration_usec, 0, "a duration"),
	K("output", "history", KEY_DURATION, history_usec, 0, "a duration (like 5min; 0: none)"),
	K("output", "history-max", KEY_SIZE, history_max, 1ULL << 20, "a size of at least 1M (like 256M)"),
	K("output", "on-rotate", KEY_STRING_OPT, on_rotate, 0, NULL),
	K("output", "buildid-cache", KEY_STRING_OPT, buildid_cache, 0, NULL),
	K("output", "buildid-cache-size", KEY_SIZE, buildid_cache_size, 1ULL << 20, "a size of at least 1M (like 2G)"),
	KN("service", "user", KEY_STRING_OPT, user, NAMES_USER),
	KN("service", "group", KEY_STRING_OPT, group, NAMES_GROUP),
	KN("service", "control-group", KEY_STRING, control_group, NAMES_GROUP),
	K("service", "control-public-methods", KEY_STRING, control_public_methods, 0, NULL),
#undef KN
#undef K
};

/* 0, or -ESRCH with @err naming the user or group that does not exist. */
static int check_name(enum key_names names, const char *key, const char *v, char *err, size_t errlen)
{
	if (!*v || names == NAMES_ANY)
		return 0;
	if (names == NAMES_USER ? !!getpwnam(v) : !!getgrnam(v))
		return 0;
	snprintf(err, errlen, "%s: no %s named '%s' on this system", key,
		 names == NAMES_USER ? "user" : "group", v);
	return -ESRCH;
}

/* 1: not a simple key; else 0 or -errno as config_set(). */
static int set_simple(struct config *c, const char *section, const char *key, const char *v,
		      char *err, size_t errlen)
{
	for (size_t i = 0; i < sizeof(simple_keys) / sizeof(simple_keys[0]); i++) {
		const struct simple_key *k = &simple_keys[i];
		void *field = (char *)c + k->off;
		uint64_t u;
		int r;

		if (strcmp(k->name, key) || strcmp(k->section, section))
			continue;
		r = check_name(k->names, key, v, err, errlen);
		if (r < 0)
			return r;
		switch (k->kind) {
		case KEY_BOOL:
			if (parse_bool(v, field) < 0) {
				snprintf(err, errlen, "%s: '%s' is not a boolean (yes/no)", key, v);
				return -EINVAL;
			}
			return 0;
		case KEY_DURATION:
		case KEY_SIZE:
			r = k->kind == KEY_DURATION ? parse_duration(v, &u) : parse_size(v, &u);
			if (r < 0 || u < k->min) {
				snprintf(err, errlen, "%s: '%s' is not %s", key, v, k->what);
				return -EINVAL;
			}
			*(uint64_t *)field = u;
			return 0;
		case KEY_STRING_OPT:
			if (!*v) {
				free(*(char **)field);
				*(char **)field = NULL;
				return 0;
			}
			return set_string(field, v);
		case KEY_STRING:
			return set_string(field, v);
		}
	}
	return 1;
}

#include "config-fleet.h"

/*
 * cpus=: a CPU list whose every CPU this host can have (the kernel's
 * "possible" CPUs, which include the offline and hot-pluggable ones), so
 * that 0-9999999 is refused at its line and not at the start.
 */
static int check_cpus(const char *v, char *err, size_t errlen)
{
	struct perfrec_cpumap *map = NULL, *possible = NULL;
	unsigned long highest = 0;
	int last = -1, r;

	/* The highest number written, for a message naming it. */
	for (const char *p = v; *p; ) {
		if (isdigit((unsigned char)*p)) {
			char *end;
			unsigned long n;

			errno = 0;
			n = strtoul(p, &end, 10);
			if (errno == ERANGE)
				n = ULONG_MAX;
			if (n > highest)
				highest = n;
			p = end;
		} else {
			p++;
		}
	}
	if (perfrec_cpumap__read("/sys/devices/system/cpu/possible", &possible) == 0 && possible->nr > 0)
		last = possible->cpus[possible->nr - 1];
	perfrec_cpumap__free(possible);
	if (last >= 0 && highest > (unsigned long)last) {
		if (highest == ULONG_MAX)
			snprintf(err, errlen, "cpus: '%s' names a CPU out of range: this host's CPUs are 0-%d", v, last);
		else
			snprintf(err, errlen, "cpus: CPU %lu is out of range: this host's CPUs are 0-%d", highest, last);
		return -ERANGE;
	}
	r = perfrec_cpumap__parse(v, &map);
	perfrec_cpumap__free(map);
	if (r == -EINVAL) {
		snprintf(err, errlen, "cpus: '%s' is not a CPU list (like 0-3,8, or all)", v);
		return r;
	}
	return r;
}

/*
 * The keys config_set() takes in its if-blocks and config_set_fleet(),
 * with their sections (simple_keys[] carry their own), for the messages
 * about a key it does not take.  tests/unit/test-config.c checks that each
 * is taken in its section and no other.
 */
static const struct { const char *section, *name; } other_keys[] = {
	{ "record", "events" }, { "record", "frequency" }, { "record", "period" },
	{ "record", "clockid" }, { "record", "cpus" }, { "record", "drain-priority" },
	{ "record", "mmap-size" }, { "record", "max-overhead" },
	{ "output", "directory" }, { "output", "rotate-size" }, { "output", "rotate-interval" },
	{ "output", "max-files" }, { "output", "max-bytes" }, { "output", "max-age" },
	{ "output", "min-free" }, { "output", "compress" }, { "output", "mode" },
	{ "output", "prefix" },
	{ "service", "socket" }, { "service", "metrics-listen" }, { "service", "metrics-textfile" },
	{ "upload", "upload-url" }, { "upload", "upload-region" }, { "upload", "upload-credentials" },
	{ "upload", "upload-key" },
};

#define NR_KEYS (sizeof(simple_keys) / sizeof(simple_keys[0]) + sizeof(other_keys) / sizeof(other_keys[0]))

/* Key @i of all keys, simple ones first; its section into *@ret_section. */
static const char *key_at(size_t i, const char **ret_section)
{
	size_t ns = sizeof(simple_keys) / sizeof(simple_keys[0]);

	*ret_section = i < ns ? simple_keys[i].section : other_keys[i - ns].section;
	return i < ns ? simple_keys[i].name : other_keys[i - ns].name;
}

size_t config_edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), row[64];

	if (la >= 64 || lb >= 64)
		return SIZE_MAX;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0];

		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);

			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			diag = up;
			row[j] = best;
		}
	}
	return row[lb];
}

/*
 * The message for a key config_set() does not take: the section it belongs
 * in when it is a key of another one, else the nearest key's name when the
 * key looks like a misspelling of it (at most 2 edits, and fewer than a
 * third of its letters, so that "foo" suggests nothing).
 */
static void explain_unknown(const char *section, const char *key, char *err, size_t errlen)
{
	const char *best = NULL, *best_section = NULL, *sec, *name;
	size_t best_d = SIZE_MAX, len = strlen(key);

	for (size_t i = 0; i < NR_KEYS; i++) {
		size_t d;

		name = key_at(i, &sec);
		if (strcmp(name, key) == 0) {
			snprintf(err, errlen, "key '%s' belongs in section [%s], not [%s]", key, sec, section);
			return;
		}
		d = config_edit_distance(key, name);
		if (d < best_d) {
			best_d = d;
			best = name;
			best_section = sec;
		}
	}
	if (strncmp(key, "label.", 6) == 0) {
		snprintf(err, errlen, "key '%s' belongs in section [output], not [%s]", key, section);
		return;
	}
	if (best && best_d <= 2 && best_d * 3 < len) {
		if (strcmp(best_section, section) == 0)
			snprintf(err, errlen, "unknown key '%s' in section [%s]; did you mean '%s'?", key, section, best);
		else
			snprintf(err, errlen, "unknown key '%s' in section [%s]; did you mean '%s' in section [%s]?",
				 key, section, best, best_section);
		return;
	}
	snprintf(err, errlen, "unknown key '%s' in section [%s]", key, section);
}

int config_set(struct config *c, const char *section, const char *key, const char *v,
	       char *err, size_t errlen)
{
	uint64_t u;
	int r;

	r = set_simple(c, section, key, v, err, errlen);
	if (r <= 0)
		return r;
#define IS(s, k) (strcmp(section, s) == 0 && strcmp(key, k) == 0)
	if (IS("record", "events")) {
		config_clear_events(c);
		r = config_add_events(c, v, err, errlen);
		if (r == 0 && c->nr_events == 0) {
			snprintf(err, errlen, "events: empty list");
			return -EINVAL;
		}
		return r;
	}
	if (IS("record", "frequency")) {
		if (parse_size(v, &u) < 0 || u == 0) {
			snprintf(err, errlen, "frequency: '%s' is not a positive number of Hz", v);
			return -EINVAL;
		}
		c->freq = u;
		c->period = 0;
		return 0;
	}
	if (IS("record", "period")) {
		if (parse_size(v, &u) < 0 || u == 0) {
			snprintf(err, errlen, "period: '%s' is not a positive number", v);
			return -EINVAL;
		}
		c->period = u;
		c->freq = 0;
		return 0;
	}
	if (IS("record", "clockid")) {
		if (parse_clockid(v, &c->clockid) < 0) {
			snprintf(err, errlen, "clockid: unknown clock '%s' (monotonic, monotonic_raw, realtime, boottime, tai, perf)", v);
			return -EINVAL;
		}
		return 0;
	}
	if (IS("record", "cpus")) {
		if (strcmp(v, "all") == 0 || !*v) {
			free(c->cpus);
			c->cpus = NULL;
			return 0;
		}
		r = check_cpus(v, err, errlen);
		if (r < 0)
			return r;
		return set_string(&c->cpus, v);
	}
	if (IS("record", "drain-priority")) {
		long l;

		if (parse_long_in(v, 0, 99, &l) < 0) {
			snprintf(err, errlen, "drain-priority: '%s' is not a real-time priority from 1 to 99 (0: none)", v);
			return -EINVAL;
		}
		c->drain_priority = (int)l;
		return 0;
	}
	if (IS("record", "mmap-size")) {
		if (parse_size(v, &u) < 0 || u < 4096 || (u & (u - 1))) {
			snprintf(err, errlen, "mmap-size: '%s' is not a power of two of at least 4K", v);
			return -EINVAL;
		}
		c->mmap_bytes = u;
		return 0;
	}
	if (IS("output", "directory")) {
		if (!*v) {
			snprintf(err, errlen, "directory: empty");
			return -EINVAL;
		}
		return set_string(&c->directory, v);
	}
	if (IS("output", "rotate-size")) {
		if (parse_size(v, &u) < 0) {
			snprintf(err, errlen, "%s: '%s' is not a size (like 256M)", key, v);
			return -EINVAL;
		}
		if (u && u < 64 * 1024) {
			snprintf(err, errlen, "rotate-size: '%s' is below the minimum of 64K", v);
			return -EINVAL;
		}
		c->rotate_bytes = u;
		return 0;
	}
	/*
	 * Both in bytes, as a share of the file system the directory is on
	 * (retention.c measures it when it applies them), or both, the smaller
	 * applying ("10% 4G").  A floor of 100% would never let a byte be
	 * written: refused.
	 */
	if (IS("output", "max-bytes") || IS("output", "min-free")) {
		bool floor = strcmp(key, "min-free") == 0;
		unsigned pct;

		if (parse_size_or_percent(v, &u, &pct) < 0 || (floor && pct == 100)) {
			snprintf(err, errlen, "%s: '%s' is not a size, a percentage of the file system "
				 "or both (like %s; 0: no limit)", key, v, floor ? "15% 4G; below 100%" : "10% 4G");
			return -EINVAL;
		}
		*(floor ? &c->min_free : &c->max_bytes) = u;
		*(floor ? &c->min_free_percent : &c->max_bytes_percent) = pct;
		return 0;
	}
	if (IS("output", "rotate-interval") || IS("output", "max-age")) {
		if (parse_duration(v, &u) < 0) {
			snprintf(err, errlen, "%s: '%s' is not a duration (like 10min)", key, v);
			return -EINVAL;
		}
		if (strcmp(key, "rotate-interval") == 0 && u && u < 100000) {
			snprintf(err, errlen, "rotate-interval: '%s' is below the minimum of 100ms", v);
			return -EINVAL;
		}
		*(strcmp(key, "rotate-interval") == 0 ? &c->rotate_usec : &c->max_age_usec) = u;
		return 0;
	}
	if (IS("output", "max-files")) {
		char *end;

		errno = 0;
		u = strtoull(v, &end, 10);
		if (errno || end == v || *end || *v == '-') {
			snprintf(err, errlen, "max-files: '%s' is not a number", v);
			return -EINVAL;
		}
		c->max_files = u;
		return 0;
	}
	if (IS("output", "compress")) {
		bool b;
		long l;

		/* A zstd level, or yes/no ("yes": level 3, perfrecd -z). */
		if (parse_long_in(v, 0, 19, &l) == 0) {
			c->compress_level = (int)l;
			return 0;
		}
		if (parse_bool(v, &b) == 0) {
			c->compress_level = b ? 3 : 0;
			return 0;
		}
		snprintf(err, errlen, "compress: '%s' is not a zstd level from 1 to 19 (0 or no: off)", v);
		return -EINVAL;
	}
	if (IS("output", "mode")) {
		if (strcmp(v, "continuous") && strcmp(v, "flight")) {
			snprintf(err, errlen, "mode: '%s' is neither continuous nor flight", v);
			return -EINVAL;
		}
		c->mode = strcmp(v, "flight") == 0 ? CONFIG_MODE_FLIGHT : CONFIG_MODE_CONTINUOUS;
		return 0;
	}
	if (IS("service", "socket")) {
		if (*v && v[0] != '/') {
			snprintf(err, errlen, "socket: '%s' must be an absolute path (or empty for none)", v);
			return -EINVAL;
		}
		return set_string(&c->socket, v);
	}
	if (IS("output", "prefix")) {
		if (!*v || strchr(v, '/')) {
			snprintf(err, errlen, "prefix: '%s' must be a non-empty name without '/'", v);
			return -EINVAL;
		}
		return set_string(&c->prefix, v);
	}
	r = config_set_fleet(c, section, key, v, err, errlen);
	if (r != -ENOENT)
		return r;
#undef IS
	explain_unknown(section, key, err, errlen);
	return -EINVAL;
}

/*
 * Reading the file.  inih parses each line, but the reader that hands it
 * the lines is ours, because inih's own has these faults:
 *   - it copies a line into a buffer of INI_MAX_LINE (200) bytes and takes
 *     the rest of a longer line as more lines, so line numbers after it are
 *     wrong and the tail of a value can parse as a key;
 *   - fgets() stops at a NUL byte without a word, dropping the rest of the
 *     line (frequency=9<NUL>9 was read as frequency=9);
 *   - an indented line is the continuation of the previous key, passed to
 *     the handler as the same key again (an indented event name after
 *     events= replaced the list);
 *   - after a syntax error it goes on, so an error in a later line was
 *     reported with the line number of the first, and "[record" reported
 *     the next key as unknown in section [].
 * So: one call, one line (inih's line numbers stay ours); indentation is
 * dropped; a line that is too long, holds a NUL, or does not parse ends the
 * load with a message of its own; the first error of any kind ends it.
 * Comments may be of any length (only their first byte reaches inih).
 */
#define LINE_MAX_CHARS (INI_MAX_LINE - 1)

struct seen_key {
	char *name;
	unsigned line;
};

struct load_ctx {
	struct config *c;
	/* the text: a FILE, or data/size */
	FILE *f;
	const char *data;
	size_t size, pos;
	unsigned line;            /* the line inih is parsing (1-based) */
	int err;                  /* the first error, -errno */
	unsigned err_line;        /* its line; 0: not about a line */
	char msg[320];
	struct seen_key *seen;    /* keys set so far, for duplicates */
	size_t nr_seen;
};

static void load_error(struct load_ctx *l, int err, unsigned line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void load_error(struct load_ctx *l, int err, unsigned line, const char *fmt, ...)
{
	va_list ap;

	if (l->err)
		return;
	l->err = err;
	l->err_line = line;
	va_start(ap, fmt);
	vsnprintf(l->msg, sizeof(l->msg), fmt, ap);
	va_end(ap);
}

static int next_char(struct load_ctx *l)
{
	if (l->f)
		return getc(l->f);
	return l->pos < l->size ? (unsigned char)l->data[l->pos++] : EOF;
}

/* What inih would refuse, said plainly.  0 or -EINVAL (recorded). */
static int check_syntax(struct load_ctx *l, const char *line)
{
	const char *end;

	if (!*line || *line == '#' || *line == ';')
		return 0;
	if (*line == '[') {
		end = strchr(line, ']');
		if (!end) {
			load_error(l, -EINVAL, l->line, "unterminated section header '%.60s' (no ']')", line);
			return -EINVAL;
		}
		for (end++; *end == ' ' || *end == '\t' || *end == '\r'; end++)
			;
		if (*end && *end != '#' && *end != ';') {
			load_error(l, -EINVAL, l->line, "text after the section header: '%.60s'", line);
			return -EINVAL;
		}
		return 0;
	}
	if (!strpbrk(line, "=:")) {
		load_error(l, -EINVAL, l->line, "syntax error: '%.60s' is neither [section] nor key=value", line);
		return -EINVAL;
	}
	return 0;
}

/* inih's reader: one line into @buf, without indentation; NULL ends the parse. */
static char *read_line(char *buf, int size, void *user)
{
	struct load_ctx *l = user;
	size_t n = 0, max = (size_t)size - 1;
	bool got = false, comment = false;
	int ch;

	if (l->err)
		return NULL;
	l->line++;
	while ((ch = next_char(l)) != EOF && ch != '\n') {
		got = true;
		if (ch == 0) {
			load_error(l, -EINVAL, l->line, "NUL byte in the line (not a text file?)");
			return NULL;
		}
		if (n == 0 && (ch == ' ' || ch == '\t'))
			continue;
		if (n == 0 && (ch == '#' || ch == ';'))
			comment = true;
		if (n == max) {
			if (comment)
				continue;
			load_error(l, -EINVAL, l->line, "line longer than %zu characters", max);
			return NULL;
		}
		buf[n++] = (char)ch;
	}
	if (l->f && ferror(l->f)) {
		load_error(l, errno ? -errno : -EIO, 0, "cannot read the config file: %s",
			   strerror(errno ? errno : EIO));
		return NULL;
	}
	if (!got && ch == EOF)
		return NULL;
	buf[n] = 0;
	/* A UTF-8 byte order mark, which inih would skip, must not hide a '['. */
	if (l->line == 1 && strncmp(buf, "\xEF\xBB\xBF", 3) == 0)
		memmove(buf, buf + 3, n - 3 + 1);
	return check_syntax(l, buf) < 0 ? NULL : buf;
}

/*
 * Keys set twice, and frequency= with period=, which replace each other in
 * config_set(): in one file, either is a mistake that the order of the
 * lines would otherwise settle in silence.  0 or -EINVAL (recorded).
 */
static int check_repeat(struct load_ctx *l, const char *name)
{
	static const char *const exclusive[][2] = { { "frequency", "period" } };
	struct seen_key *ns;

	for (size_t i = 0; i < l->nr_seen; i++) {
		const char *other = NULL;

		if (strcmp(l->seen[i].name, name) == 0) {
			load_error(l, -EINVAL, l->line, "duplicate key '%s' (already set on line %u)",
				   name, l->seen[i].line);
			return -EINVAL;
		}
		for (size_t j = 0; j < sizeof(exclusive) / sizeof(exclusive[0]); j++)
			for (int k = 0; k < 2; k++)
				if (strcmp(exclusive[j][k], name) == 0 &&
				    strcmp(exclusive[j][!k], l->seen[i].name) == 0)
					other = exclusive[j][!k];
		if (other) {
			load_error(l, -EINVAL, l->line, "%s= contradicts %s= on line %u (set one of them)",
				   name, other, l->seen[i].line);
			return -EINVAL;
		}
	}
	ns = realloc(l->seen, (l->nr_seen + 1) * sizeof(*ns));
	if (!ns)
		goto nomem;
	l->seen = ns;
	ns[l->nr_seen].name = strdup(name);
	if (!ns[l->nr_seen].name)
		goto nomem;
	ns[l->nr_seen++].line = l->line;
	return 0;
nomem:
	load_error(l, -ENOMEM, l->line, "%s", strerror(ENOMEM));
	return -ENOMEM;
}

static int ini_cb(void *user, const char *section, const char *name, const char *value)
{
	struct load_ctx *l = user;
	char msg[256] = "";
	int r;

	r = check_repeat(l, name);
	if (r < 0)
		return 0;
	r = config_set(l->c, section, name, value, msg, sizeof(msg));
	if (r < 0) {
		load_error(l, r, l->line, "%s", msg[0] ? msg : strerror(-r));
		return 0;
	}
	return 1;
}

static int load(struct load_ctx *l, const char *path, char *err, size_t errlen)
{
	int line = ini_parse_stream(read_line, l, ini_cb, l);

	for (size_t i = 0; i < l->nr_seen; i++)
		free(l->seen[i].name);
	free(l->seen);
	if (l->err && l->err_line) {
		snprintf(err, errlen, "%s:%u: %s", path, l->err_line, l->msg);
		return l->err;
	}
	if (l->err) {
		snprintf(err, errlen, "%s: %s", path, l->msg);
		return l->err;
	}
	/* What check_syntax() let through and inih did not take. */
	if (line != 0) {
		snprintf(err, errlen, "%s:%d: syntax error (expected [section] or key=value)", path, line);
		return -EINVAL;
	}
	return 0;
}

int config_load_data(struct config *c, const char *data, size_t size, const char *name,
		     char *err, size_t errlen)
{
	struct load_ctx l = { .c = c, .data = data, .size = size };

	return load(&l, name, err, errlen);
}

int config_load_string(struct config *c, const char *text, const char *name, char *err, size_t errlen)
{
	return config_load_data(c, text, strlen(text), name, err, errlen);
}

int config_load(struct config *c, const char *path, char *err, size_t errlen)
{
	struct load_ctx l = { .c = c };
	int r;

	l.f = fopen(path, "re");
	if (!l.f) {
		int e = errno;

		snprintf(err, errlen, "%s: cannot open config file: %s", path, strerror(e));
		return -e;
	}
	r = load(&l, path, err, errlen);
	fclose(l.f);
	return r;
}
