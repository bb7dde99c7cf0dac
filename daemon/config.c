// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Configuration: defaults, the INI file and value parsers.  The file format
 * is systemd's INI dialect as inih reads it (sections, key=value, # and ;
 * comments); sizes and durations use systemd's suffixes so an operator's
 * habits from unit files carry over.  Errors name the file, line and key.
 */
#include <ctype.h>
#include <errno.h>
#include <ini.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"

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
		if (c->nr_events >= CONFIG_MAX_EVENTS) {
			snprintf(err, errlen, "too many events (at most %d)", CONFIG_MAX_EVENTS);
			r = -E2BIG;
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

static const struct simple_key {
	const char *section, *name;
	enum key_kind kind;
	size_t off;
	uint64_t min;
	const char *what;
} simple_keys[] = {
#define K(sec, name, kind, field, min, what) { sec, name, kind, offsetof(struct config, field), min, what }
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
	K("service", "user", KEY_STRING_OPT, user, 0, NULL),
	K("service", "group", KEY_STRING_OPT, group, 0, NULL),
	K("service", "control-group", KEY_STRING, control_group, 0, NULL),
	K("service", "control-public-methods", KEY_STRING, control_public_methods, 0, NULL),
#undef K
};

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
	if (IS("output", "rotate-size") || IS("output", "max-bytes")) {
		if (parse_size(v, &u) < 0) {
			snprintf(err, errlen, "%s: '%s' is not a size (like 256M)", key, v);
			return -EINVAL;
		}
		if (strcmp(key, "rotate-size") == 0 && u && u < 64 * 1024) {
			snprintf(err, errlen, "rotate-size: '%s' is below the minimum of 64K", v);
			return -EINVAL;
		}
		*(strcmp(key, "rotate-size") == 0 ? &c->rotate_bytes : &c->max_bytes) = u;
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
	snprintf(err, errlen, "unknown key '%s' in section [%s]", key, section);
	return -EINVAL;
}

struct load_ctx {
	struct config *c;
	char msg[256];
	int err;
};

static int ini_cb(void *user, const char *section, const char *name, const char *value)
{
	struct load_ctx *l = user;
	char msg[256] = "";
	int r;

	r = config_set(l->c, section, name, value, msg, sizeof(msg));
	if (r < 0 && !l->err) {
		l->err = r;
		snprintf(l->msg, sizeof(l->msg), "%s", msg[0] ? msg : strerror(-r));
	}
	return r < 0 ? 0 : 1;
}

static int finish_load(struct load_ctx *l, int line, const char *path, char *err, size_t errlen)
{
	if (line > 0 && l->err) {
		snprintf(err, errlen, "%s:%d: %s", path, line, l->msg);
		return l->err;
	}
	if (line != 0) {
		snprintf(err, errlen, "%s:%d: syntax error (expected [section] or key=value)", path, line);
		return -EINVAL;
	}
	return 0;
}

int config_load_string(struct config *c, const char *text, const char *name, char *err, size_t errlen)
{
	struct load_ctx l = { .c = c };

	return finish_load(&l, ini_parse_string(text, ini_cb, &l), name, err, errlen);
}

int config_load(struct config *c, const char *path, char *err, size_t errlen)
{
	struct load_ctx l = { .c = c };
	FILE *f;
	int line;

	f = fopen(path, "re");
	if (!f) {
		int e = errno;

		snprintf(err, errlen, "%s: cannot open config file: %s", path, strerror(e));
		return -e;
	}
	line = ini_parse_file(f, ini_cb, &l);
	fclose(f);
	return finish_load(&l, line, path, err, errlen);
}
