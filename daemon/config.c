// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Configuration: the table of keys (config_keys[]: each key's parser,
 * printer and default), the INI file and value parsers.  The file format
 * is systemd's INI dialect as inih reads it (sections, key=value, # and ;
 * comments); sizes and durations use systemd's suffixes so an operator's
 * habits from unit files carry over.  Errors name the file, line and key.
 * A key set twice in one file, or two keys that contradict each other, is
 * an error too: the command line (config_set() over the loaded file) is
 * the one place where a later setting replaces an earlier one.
 */
#include <arpa/inet.h>
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
#include <unistd.h>

#include <perfrec/cpumap.h>
#include <perfrec/evspec.h>

#include "config.h"
#include "safename.h"
#include "varlink.h"

void config_clear_events(struct config *c)
{
	for (size_t i = 0; i < c->nr_events; i++)
		free(c->events[i]);
	c->nr_events = 0;
}

/*
 * The unsigned decimal number at *@s, after spaces: *@s moves past it.
 * -EINVAL when there is no digit, -ERANGE when it does not fit.
 */
static int leading_number(const char **s, unsigned long long *ret)
{
	char *end;

	while (isspace((unsigned char)**s))
		(*s)++;
	if (!isdigit((unsigned char)**s))
		return -EINVAL;
	errno = 0;
	*ret = strtoull(*s, &end, 10);
	if (errno)
		return -ERANGE;
	*s = end;
	return 0;
}

int parse_size(const char *s, uint64_t *ret)
{
	static const struct { const char *suffix; uint64_t mult; } units[] = {
		{ "", 1 }, { "B", 1 }, { "K", 1ULL << 10 }, { "M", 1ULL << 20 },
		{ "G", 1ULL << 30 }, { "T", 1ULL << 40 },
	};
	const char *end = s;
	unsigned long long v;
	int r = leading_number(&end, &v);

	if (r < 0)
		return r;
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
		int r;

		while (isspace((unsigned char)*s))
			s++;
		if (!*s)
			break;
		r = leading_number(&s, &v);
		if (r < 0)
			return r;
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
 * The keys.  Each row of config_keys[] below is one key: its section and
 * name, its type (how a value is parsed, printed and freed), the field it
 * sets, the limits its type checks, a check of its own, its default as the
 * file would write it, and one line of documentation.  config_init(),
 * config_set(), config_print() (perfrecd --check-config), config_exit()
 * and the "did you mean" messages all read this table, as systemd's
 * per-key tables drive its unit-file parser; tests/unit/test-config.c holds
 * the man page and the shipped file to it.
 */

/* Duration @usec exactly, in the largest unit that divides it (1.5s: 1500ms). */
static const char *format_usec(uint64_t usec, char *buf, size_t len)
{
	if (usec % 1000000 == 0)
		snprintf(buf, len, "%" PRIu64 "s", usec / 1000000);
	else if (usec % 1000 == 0)
		snprintf(buf, len, "%" PRIu64 "ms", usec / 1000);
	else
		snprintf(buf, len, "%" PRIu64 "us", usec);
	return buf;
}

#define FIELD(c, k, type) ((type *)((char *)(c) + (k)->off))
#define CFIELD(c, k, type) ((const type *)((const char *)(c) + (k)->off))

static int bad_value(const struct config_key *k, const char *v, char *err, size_t errlen)
{
	snprintf(err, errlen, "%s: '%s' is not %s", k->name, v, k->what);
	return -EINVAL;
}

/* --- types: parse, print, free ---------------------------------------- */

static int parse_bool_key(const struct config_key *k, struct config *c, const char *v, char *err, size_t errlen)
{
	return parse_bool(v, FIELD(c, k, bool)) < 0 ? bad_value(k, v, err, errlen) : 0;
}

static void print_bool_key(const struct config_key *k, const struct config *c, FILE *f)
{
	fputs(*CFIELD(c, k, bool) ? "yes" : "no", f);
}

/* callchain=: yes or fp (frame pointers), dwarf (user stacks copied, as perf's --call-graph), no. */
static int parse_callchain(const struct config_key *k, struct config *c, const char *v, char *err, size_t errlen)
{
	bool dwarf = strcmp(v, "dwarf") == 0;

	if (dwarf || strcmp(v, "fp") == 0) {
		c->callchain = true;
	} else if (parse_bool(v, &c->callchain) < 0) {
		return bad_value(k, v, err, errlen);
	}
	c->dwarf = dwarf;
	return 0;
}

static void print_callchain(const struct config_key *k, const struct config *c, FILE *f)
{
	fputs(!c->callchain ? "no" : c->dwarf ? "dwarf" : "yes", f);
}

/* unwind=: file (raw stacks, the reader unwinds) or host (perfrecd unwinds while recording). */
static int parse_unwind(const struct config_key *k, struct config *c, const char *v, char *err, size_t errlen)
{
	if (strcmp(v, "host") != 0 && strcmp(v, "file") != 0)
		return bad_value(k, v, err, errlen);
	c->unwind_host = strcmp(v, "host") == 0;
	return 0;
}

static void print_unwind(const struct config_key *k, const struct config *c, FILE *f)
{
	fputs(c->unwind_host ? "host" : "file", f);
}

/* stack-size=: a multiple of 8 that fits a sample record's u16 size with the rest. */
static int parse_stack_size(const struct config_key *k, struct config *c, const char *v, char *err, size_t errlen)
{
	uint64_t u;

	if (parse_size(v, &u) < 0 || u == 0 || u % 8 || u > 65528)
		return bad_value(k, v, err, errlen);
	c->stack_size = u;
	return 0;
}

/*
 * Below k->min: a key where 0 is "off" says the minimum (a small value is
 * likely a slip of the unit); the others say what they take.
 */
static int below_min(const struct config_key *k, const char *v, const char *min, char *err, size_t errlen)
{
	if (!k->zero_is_off)
		return bad_value(k, v, err, errlen);
	snprintf(err, errlen, "%s: '%s' is below the minimum of %s", k->name, v, min);
	return -EINVAL;
}

/* A duration of at least k->min (or 0, with k->zero_is_off). */
static int parse_duration_key(const struct config_key *k, struct config *c, const char *v, char *err, size_t errlen)
{
	char min[32];
	uint64_t u;

	if (parse_duration(v, &u) < 0)
		return bad_value(k, v, err, errlen);
	if (u < k->min && !(k->zero_is_off && u == 0))
		return below_min(k, v, format_usec(k->min, min, sizeof(min)), err, errlen);
	*FIELD(c, k, uint64_t) = u;
	return 0;
}

static void print_duration_key(const struct config_key *k, const struct config *c, FILE *f)
{
	char buf[32];

	fputs(format_usec(*CFIELD(c, k, uint64_t), buf, sizeof(buf)), f);
}

/* history=: a duration, or empty for the mode's default (CONFIG_HISTORY_DEFAULT). */
static int parse_history(const struct config_key *k, struct config *c, const char *v, char *err, size_t errlen)
{
	if (!*v) {
		*FIELD(c, k, uint64_t) = CONFIG_HISTORY_DEFAULT;
		return 0;
	}
	return parse_duration_key(k, c, v, err, errlen);
}

static void print_history(const struct config_key *k, const struct config *c, FILE *f)
{
	if (*CFIELD(c, k, uint64_t) == CONFIG_HISTORY_DEFAULT && c->mode == CONFIG_MODE_FLIGHT)
		fprintf(f, "%dmin", CONFIG_FLIGHT_HISTORY_MIN);
	else if (*CFIELD(c, k, uint64_t) == CONFIG_HISTORY_DEFAULT)
		fputs("0", f);
	else
		print_duration_key(k, c, f);
}

/* A size of at least k->min (or 0, with k->zero_is_off). */
static int parse_size_key(const struct config_key *k, struct config *c, const char *v, char *err, size_t errlen)
{
	char min[32];
	uint64_t u;

	if (parse_size(v, &u) < 0)
		return bad_value(k, v, err, errlen);
	if (u < k->min && !(k->zero_is_off && u == 0)) {
		snprintf(min, sizeof(min), "%" PRIu64 "K", k->min / 1024);
		return below_min(k, v, min, err, errlen);
	}
	*FIELD(c, k, uint64_t) = u;
	return 0;
}

static void print_u64(const struct config_key *k, const struct config *c, FILE *f)
{
	fprintf(f, "%" PRIu64, *CFIELD(c, k, uint64_t));
}

/* A ring size: a power of two of at least k->min, shown in K. */
static int parse_pow2_size(const struct config_key *k, struct config *c, const char *v, char *err, size_t errlen)
{
	uint64_t u;

	/* auto: 0, sized when the events open (config_ring_bytes()) */
	if (strcmp(v, "auto") == 0) {
		*FIELD(c, k, uint64_t) = 0;
		return 0;
	}
	if (parse_size(v, &u) < 0 || u < k->min || (u & (u - 1)))
		return bad_value(k, v, err, errlen);
	*FIELD(c, k, uint64_t) = u;
	return 0;
}

static void print_kib(const struct config_key *k, const struct config *c, FILE *f)
{
	if (*CFIELD(c, k, uint64_t) == 0) {
		fputs("auto", f);
		return;
	}
	fprintf(f, "%" PRIu64 "K", *CFIELD(c, k, uint64_t) / 1024);
}

/* A whole number from 0 up. */
static int parse_count(const struct config_key *k, struct config *c, const char *v, char *err, size_t errlen)
{
	unsigned long long u;
	char *end;

	errno = 0;
	u = strtoull(v, &end, 10);
	if (errno || end == v || *end || *v == '-')
		return bad_value(k, v, err, errlen);
	*FIELD(c, k, uint64_t) = u;
	return 0;
}

/* A whole number from k->min to k->max, into an int. */
static int parse_int_key(const struct config_key *k, struct config *c, const char *v, char *err, size_t errlen)
{
	long l;

	if (parse_long_in(v, (long)k->min, (long)k->max, &l) < 0)
		return bad_value(k, v, err, errlen);
	*FIELD(c, k, int) = (int)l;
	return 0;
}

static void print_int(const struct config_key *k, const struct config *c, FILE *f)
{
	fprintf(f, "%d", *CFIELD(c, k, int));
}

/*
 * frequency= and period= (k->aux: the other one's field): each is a
 * positive number and replaces the other, so only the one in use is shown.
 */
static int parse_rate(const struct config_key *k, struct config *c, const char *v, char *err, size_t errlen)
{
	uint64_t u;

	if (parse_size(v, &u) < 0 || u == 0)
		return bad_value(k, v, err, errlen);
	*FIELD(c, k, uint64_t) = u;
	*(uint64_t *)((char *)c + k->aux) = 0;
	return 0;
}

static bool rate_in_use(const struct config_key *k, const struct config *c)
{
	/* frequency= is in use unless period= is (both 0 only in a zeroed struct). */
	return *CFIELD(c, k, uint64_t) || (k->off == offsetof(struct config, freq) && !c->period);
}

/*
 * Space limits (parse_size_or_percent()), in bytes (k->off), as a share of
 * the file system the directory is on (k->aux; retention.c measures it
 * when it applies them), or both, the smaller applying ("10% 4G").  A
 * share above k->max is refused: a floor of 100% would never let a byte
 * be written.
 */
static int parse_share(const struct config_key *k, struct config *c, const char *v, char *err, size_t errlen)
{
	uint64_t u;
	unsigned pct;

	if (parse_size_or_percent(v, &u, &pct) < 0 || pct > k->max)
		return bad_value(k, v, err, errlen);
	*FIELD(c, k, uint64_t) = u;
	*(unsigned *)((char *)c + k->aux) = pct;
	return 0;
}

static void print_share(const struct config_key *k, const struct config *c, FILE *f)
{
	char buf[64];

	fputs(format_size_or_percent(*CFIELD(c, k, uint64_t), *(const unsigned *)((const char *)c + k->aux),
				     buf, sizeof(buf)), f);
}

/* A string, checked by the key's own check (which sees "" too). */
static int parse_string_key(const struct config_key *k, struct config *c, const char *v, char *err, size_t errlen)
{
	int r = k->check ? k->check(k, v, err, errlen) : 0;

	return r < 0 ? r : set_string(FIELD(c, k, char *), v);
}

/* The same, where "" unsets it (NULL) without a check, or restores a default that is not "". */
static int parse_string_opt(const struct config_key *k, struct config *c, const char *v, char *err, size_t errlen)
{
	if (!*v && k->def && *k->def)
		return set_string(FIELD(c, k, char *), k->def);
	if (!*v) {
		free(*FIELD(c, k, char *));
		*FIELD(c, k, char *) = NULL;
		return 0;
	}
	return parse_string_key(k, c, v, err, errlen);
}

static void print_string(const struct config_key *k, const struct config *c, FILE *f)
{
	const char *s = *CFIELD(c, k, char *);

	fputs(s ? s : "", f);
}

static void free_string(const struct config_key *k, struct config *c)
{
	free(*FIELD(c, k, char *));
	*FIELD(c, k, char *) = NULL;
}

/* control-group= unset: the group perfrecd where it exists (control.c). */
static void print_control_group(const struct config_key *k, const struct config *c, FILE *f)
{
	const char *s = *CFIELD(c, k, char *);

	fputs(s ? s : "(perfrecd if it exists)", f);
}

static int check_cpus(const char *v, char *err, size_t errlen);

/* cpus=: "all" (or empty) is NULL. */
static int parse_cpus(const struct config_key *k, struct config *c, const char *v, char *err, size_t errlen)
{
	int r;

	if (strcmp(v, "all") == 0 || !*v) {
		free_string(k, c);
		return 0;
	}
	r = check_cpus(v, err, errlen);
	return r < 0 ? r : set_string(FIELD(c, k, char *), v);
}

static void print_cpus(const struct config_key *k, const struct config *c, FILE *f)
{
	const char *s = *CFIELD(c, k, char *);

	fputs(s ? s : "all", f);
}

/* events=: the list replaces the one before; it may not be empty. */
static int parse_events(const struct config_key *k, struct config *c, const char *v, char *err, size_t errlen)
{
	int r;

	config_clear_events(c);
	r = config_add_events(c, v, err, errlen);
	if (r == 0 && c->nr_events == 0) {
		snprintf(err, errlen, "events: empty list");
		return -EINVAL;
	}
	return r;
}

static void print_events(const struct config_key *k, const struct config *c, FILE *f)
{
	for (size_t i = 0; i < c->nr_events; i++)
		fprintf(f, "%s%s", i ? "," : "", c->events[i]);
}

static void free_events(const struct config_key *k, struct config *c)
{
	config_clear_events(c);
}

static int parse_clock(const struct config_key *k, struct config *c, const char *v, char *err, size_t errlen)
{
	return parse_clockid(v, FIELD(c, k, int)) < 0 ? bad_value(k, v, err, errlen) : 0;
}

static void print_clock(const struct config_key *k, const struct config *c, FILE *f)
{
	fputs(clockid_name(*CFIELD(c, k, int)), f);
}

/*
 * compress=: a zstd level, or yes/no ("yes": level 1, as perfrecd -z and
 * perf record -z: 92% of level 3's ratio on callchain records for about two
 * thirds of its CPU, which is most of what the shipped default costs).
 */
static int parse_compress(const struct config_key *k, struct config *c, const char *v, char *err, size_t errlen)
{
	bool b;
	long l;

	if (parse_long_in(v, 0, 19, &l) == 0) {
		*FIELD(c, k, int) = (int)l;
		return 0;
	}
	if (parse_bool(v, &b) == 0) {
		*FIELD(c, k, int) = b ? 1 : 0;
		return 0;
	}
	return bad_value(k, v, err, errlen);
}

static int parse_mode(const struct config_key *k, struct config *c, const char *v, char *err, size_t errlen)
{
	if (strcmp(v, "continuous") && strcmp(v, "flight")) {
		snprintf(err, errlen, "%s: '%s' is neither continuous nor flight", k->name, v);
		return -EINVAL;
	}
	*FIELD(c, k, int) = strcmp(v, "flight") == 0 ? CONFIG_MODE_FLIGHT : CONFIG_MODE_CONTINUOUS;
	return 0;
}

static void print_mode(const struct config_key *k, const struct config *c, FILE *f)
{
	fputs(*CFIELD(c, k, int) == CONFIG_MODE_FLIGHT ? "flight" : "continuous", f);
}

/* max-overhead=: a percentage above 0 and at most 100, kept as a fraction; empty: none. */
static int parse_overhead(const struct config_key *k, struct config *c, const char *v, char *err, size_t errlen)
{
	char *end;
	double d;

	if (!*v) {
		*FIELD(c, k, double) = 0;
		return 0;
	}
	errno = 0;
	d = strtod(v, &end);
	if (end == v || *end != '%' || end[1] || errno || !(d > 0 && d <= 100))
		return bad_value(k, v, err, errlen);
	*FIELD(c, k, double) = d / 100;
	return 0;
}

static void print_overhead(const struct config_key *k, const struct config *c, FILE *f)
{
	if (*CFIELD(c, k, double) > 0)
		fprintf(f, "%g%%", *CFIELD(c, k, double) * 100);
}

/*
 * label.NAME=VALUE: NAME is [A-Za-z0-9_]+ so it is a valid JSON and
 * Prometheus name; kept as "NAME=VALUE", a later one of a NAME replacing
 * the earlier.  config_set() hands the key without its "label.".
 */
static int set_label(struct config *c, const char *name, const char *v, char *err, size_t errlen)
{
	size_t n = strlen(name);
	char *s, **nl;

	if (!n || strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") != n) {
		snprintf(err, errlen, "label.%s: label names are letters, digits and '_'", name);
		return -EINVAL;
	}
	if (asprintf(&s, "%s=%s", name, v) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < c->nr_labels; i++)
		if (strncmp(c->labels[i], name, n) == 0 && c->labels[i][n] == '=') {
			free(c->labels[i]);
			c->labels[i] = s;
			return 0;
		}
	nl = realloc(c->labels, (c->nr_labels + 1) * sizeof(*nl));
	if (!nl) {
		free(s);
		return -ENOMEM;
	}
	c->labels = nl;
	c->labels[c->nr_labels++] = s;
	return 0;
}

static void free_labels(const struct config_key *k, struct config *c)
{
	for (size_t i = 0; i < c->nr_labels; i++)
		free(c->labels[i]);
	free(c->labels);
	c->labels = NULL;
	c->nr_labels = 0;
}

/* --- checks of single keys -------------------------------------------- */

/* A user or group must exist, so that --check-config catches a typo instead of the start. */
static int check_user_or_group(const struct config_key *k, const char *v, char *err, size_t errlen)
{
	bool user = strcmp(k->name, "user") == 0;

	if (!*v || (user ? !!getpwnam(v) : !!getgrnam(v)))
		return 0;
	snprintf(err, errlen, "%s: no %s named '%s' on this system", k->name, user ? "user" : "group", v);
	return -ESRCH;
}

static int check_not_empty(const struct config_key *k, const char *v, char *err, size_t errlen)
{
	if (*v)
		return 0;
	snprintf(err, errlen, "%s: empty", k->name);
	return -EINVAL;
}

/* A path: absolute, or (for keys that take it) empty for none. */
static int check_absolute(const struct config_key *k, const char *v, char *err, size_t errlen)
{
	return !*v || v[0] == '/' ? 0 : bad_value(k, v, err, errlen);
}

/*
 * A name, made part of file names, upload keys and the hook's environment:
 * a host name's characters only, so that no '/' leaves the directory and
 * no "$(...)" or line break reaches a shell or a listing.
 */
static int check_file_name(const struct config_key *k, const char *v, char *err, size_t errlen)
{
	return safename_ok(v) ? 0 : bad_value(k, v, err, errlen);
}

/*
 * A directory the daemon writes with root's rights into, where names are
 * its own (the build-id cache): a symbolic link, or one other users may
 * write (0777, /tmp), is refused here as at start (which also checks who
 * owns it, once user= is known).
 */
static int check_private_dir(const struct config_key *k, const char *v, char *err, size_t errlen)
{
	char why[PATH_MAX + 256];

	if (v[0] != '/')
		return bad_value(k, v, err, errlen);
	if (safedir_check(v, why, sizeof(why)) < 0) {
		snprintf(err, errlen, "%s: '%s' is not safe: %s", k->name, v, why);
		return -EPERM;
	}
	return 0;
}

/* buildid-cache=: yes, no, or a private directory as check_private_dir() wants. */
static int check_buildid_cache(const struct config_key *k, const char *v, char *err, size_t errlen)
{
	if (!strcmp(v, "yes") || !strcmp(v, "no"))
		return 0;
	return check_private_dir(k, v, err, errlen);
}

int config_resolve_buildid_cache(struct config *c)
{
	const char *opt = c->buildid_cache_opt;
	char cwd[PATH_MAX], *dir = NULL;

	c->buildid_cache_auto = false;
	if (opt && !strcmp(opt, "yes")) {
		/* The output directory is the cache: perf --buildid-dir DIR report -i DIR/FILE. */
		if (c->directory && strcmp(c->directory, "-")) {
			if (c->directory[0] == '/')
				dir = strdup(c->directory);
			else if (!getcwd(cwd, sizeof(cwd)) || asprintf(&dir, "%s/%s", cwd, c->directory) < 0)
				dir = NULL;
			if (!dir)
				return -ENOMEM;
		}
		c->buildid_cache_auto = dir != NULL;
	} else if (opt && *opt && strcmp(opt, "no")) {
		dir = strdup(opt);
		if (!dir)
			return -ENOMEM;
	}
	free(c->buildid_cache);
	c->buildid_cache = dir;
	return 0;
}

static int check_url(const struct config_key *k, const char *v, char *err, size_t errlen)
{
	return strncmp(v, "http://", 7) == 0 || strncmp(v, "https://", 8) == 0 ? 0 : bad_value(k, v, err, errlen);
}

/* Only the known placeholders, so a typo fails at start, not per file. */
static int check_upload_key(const struct config_key *k, const char *v, char *err, size_t errlen)
{
	for (const char *p = v; (p = strchr(p, '{')); p++)
		if (strncmp(p, "{host}", 6) && strncmp(p, "{date}", 6) && strncmp(p, "{file}", 6) &&
		    strncmp(p, "{prefix}", 8)) {
			snprintf(err, errlen, "upload-key: unknown placeholder in '%s' (use {host} {date} {file} {prefix})", v);
			return -EINVAL;
		}
	if (!strstr(v, "{file}")) {
		snprintf(err, errlen, "upload-key: '%s' lacks {file}, so every file would get the same key", v);
		return -EINVAL;
	}
	return 0;
}

/* A loopback 127.x.y.z:PORT: the metrics are no one else's business. */
static int check_loopback(const struct config_key *k, const char *v, char *err, size_t errlen)
{
	const char *colon = strrchr(v, ':');
	char host[64];
	struct in_addr a;
	char *end;
	long port;

	if (!colon || (size_t)(colon - v) >= sizeof(host))
		return bad_value(k, v, err, errlen);
	memcpy(host, v, (size_t)(colon - v));
	host[colon - v] = 0;
	port = strtol(colon + 1, &end, 10);
	if (*end || port < 1 || port > 65535 || inet_pton(AF_INET, host, &a) != 1 ||
	    (ntohl(a.s_addr) >> 24) != 127)
		return bad_value(k, v, err, errlen);
	return 0;
}

static const struct config_type {
	config_parse_fn *parse;
	config_print_fn *print;
	void (*free)(const struct config_key *k, struct config *c); /* NULL: nothing to free */
} t_bool = { parse_bool_key, print_bool_key, NULL },
  t_callchain = { parse_callchain, print_callchain, NULL },
  t_stack_size = { parse_stack_size, print_u64, NULL },
  t_unwind = { parse_unwind, print_unwind, NULL },
  t_duration = { parse_duration_key, print_duration_key, NULL },
  t_history = { parse_history, print_history, NULL },
  t_size = { parse_size_key, print_u64, NULL },
  t_ring = { parse_pow2_size, print_kib, NULL },
  t_count = { parse_count, print_u64, NULL },
  t_int = { parse_int_key, print_int, NULL },
  t_rate = { parse_rate, print_u64, NULL },
  t_share = { parse_share, print_share, NULL },
  t_string = { parse_string_key, print_string, free_string },
  t_string_opt = { parse_string_opt, print_string, free_string },
  t_control_group = { parse_string_key, print_control_group, free_string },
  t_cpus = { parse_cpus, print_cpus, free_string },
  t_events = { parse_events, print_events, free_events },
  t_clock = { parse_clock, print_clock, NULL },
  t_compress = { parse_compress, print_int, NULL },
  t_mode = { parse_mode, print_mode, NULL },
  t_overhead = { parse_overhead, print_overhead, NULL },
  t_label = { NULL, NULL, free_labels };  /* config_set() and config_print() do label.NAME */

#define F(field) offsetof(struct config, field)
/* section, name, type, field, default, one line; then the type's limits and a check, if any */
#define KEY(sec_, name_, type_, field_, def_, doc_, ...) \
	{ .section = sec_, .name = name_, .type = &type_, .off = F(field_), .def = def_, .doc = doc_, __VA_ARGS__ }

const struct config_key config_keys[] = {
	KEY("record", "events", t_events, events, "cpu-clock",
	    "events to sample, as perf names them, separated by commas", .applies = CONFIG_APPLY_REOPEN),
	KEY("record", "frequency", t_rate, freq, "99", "samples per second on each CPU (perf record -F)",
	    .what = "a positive number of Hz", .aux = F(period), .applies = CONFIG_APPLY_REOPEN),
	KEY("record", "max-frequency", t_int, max_freq, "10000",
	    "highest frequency sampled: frequency= above it is capped, set-freq above it refused",
	    .min = 1, .max = 100000000, .what = "a positive number of Hz", .applies = CONFIG_APPLY_NOW),
	KEY("record", "period", t_rate, period, NULL, "a sample every N events instead (perf record -c)",
	    .what = "a positive number", .aux = F(freq), .applies = CONFIG_APPLY_REOPEN),
	KEY("record", "callchain", t_callchain, callchain, "dwarf",
	    "record callchains: yes (frame pointers), dwarf (user stacks copied for unwinding) or no",
	    .what = "yes (frame pointers), dwarf or no", .applies = CONFIG_APPLY_REOPEN),
	KEY("record", "stack-size", t_stack_size, stack_size, "8192",
	    "bytes of user stack copied per sample with callchain=dwarf",
	    .what = "a multiple of 8 from 8 to 65528 bytes", .applies = CONFIG_APPLY_REOPEN),
	KEY("record", "unwind", t_unwind, unwind_host, "host",
	    "with callchain=dwarf: file (raw stacks, the reader unwinds) or host (perfrecd unwinds, small files)",
	    .what = "file or host", .applies = CONFIG_APPLY_REOPEN),
	KEY("record", "clockid", t_clock, clockid, "monotonic", "clock of the timestamps",
	    .what = "a clock (monotonic, monotonic_raw, realtime, boottime, tai, perf)",
	    .applies = CONFIG_APPLY_REOPEN),
	KEY("record", "cpus", t_cpus, cpus, "all", "CPUs to record, as a list (0-3,8) or all",
	    .applies = CONFIG_APPLY_REOPEN),
	KEY("record", "mmap-size", t_ring, mmap_bytes, "auto",
	    "ring buffer size per CPU; auto: 512K, with callchain=dwarf 0.25 s of samples (512K to 4M)",
	    .min = 4096, .what = "auto or a power of two of at least 4K", .applies = CONFIG_APPLY_REOPEN),
	KEY("record", "drain-priority", t_int, drain_priority, "0",
	    "SCHED_FIFO priority of the draining thread (0: normal scheduling)",
	    .min = 0, .max = 99, .what = "a real-time priority from 1 to 99 (0: none)",
	    .applies = CONFIG_APPLY_RESTART,
	    .why_restart = "real-time scheduling needs CAP_SYS_NICE, given up after the start"),
	KEY("record", "flush-interval", t_duration, flush_usec, "1s", "data reaches the file at least this often",
	    .min = 1000, .what = "a duration of at least 1ms", .applies = CONFIG_APPLY_NOW),
	KEY("record", "checkpoint-interval", t_duration, checkpoint_usec, "5s",
	    "the file's header is refreshed this often", .min = 100000, .what = "a duration of at least 100ms",
	    .applies = CONFIG_APPLY_NOW),
	KEY("record", "context-switch", t_bool, context_switch, "no", "record context switches",
	    .what = "a boolean (yes/no)", .applies = CONFIG_APPLY_REOPEN),
	/* offcpu=: the files' attrs change (reopened); its filter is set in place */
	KEY("record", "offcpu", t_bool, offcpu, "no", "record off-CPU time (BPF)", .what = "a boolean (yes/no)",
	    .applies = CONFIG_APPLY_REOPEN),
	KEY("record", "python", t_bool, python, "yes",
	    "Python functions in the samples of CPython processes (BPF walk of their frames)",
	    .what = "a boolean (yes/no)", .applies = CONFIG_APPLY_RESTART,
	    .why_restart = "loading its BPF program needs CAP_BPF and CAP_PERFMON, given up after the start"),
	KEY("record", "offcpu-min", t_duration, offcpu_min_usec, "0", "shorter blocks are not off-CPU time",
	    .what = "a duration", .applies = CONFIG_APPLY_OFFCPU),
	KEY("record", "offcpu-cgroup", t_string_opt, offcpu_cgroup, "",
	    "off-CPU time of this cgroup v2 path only (empty: all)", .applies = CONFIG_APPLY_OFFCPU),
	KEY("record", "max-overhead", t_overhead, max_overhead, "",
	    "keep recording under this share of all CPUs by lowering the frequency (empty: no governor)",
	    .what = "a percentage above 0 and at most 100 (like 1%)", .applies = CONFIG_APPLY_NOW),
	KEY("record", "duration", t_duration, duration_usec, "0", "stop after this long (0: when stopped)",
	    .what = "a duration", .applies = CONFIG_APPLY_NOW),
	KEY("output", "directory", t_string, directory, "/var/lib/perfrecd", "where the files go (-: stdout)",
	    .check = check_not_empty, .applies = CONFIG_APPLY_NEXT_FILE),
	KEY("output", "prefix", t_string, prefix, "perfrecd", "first part of the file names",
	    .what = "a non-empty name of A-Z a-z 0-9 . _ - not beginning with . or -", .check = check_file_name,
	    .applies = CONFIG_APPLY_NEXT_FILE),
	/*
	 * An always-on recorder bounds itself, as journald does: a file every
	 * 5 minutes, so that a file is the unit of "what was this host doing
	 * at 14:03?"; a week of them at most; at most 10% of the file system
	 * and never the last 15% of it, each share at most 4G, so that a
	 * large disk is neither filled with a month of profiles nor made to
	 * keep hundreds of GiB free for them.  The README gives what a day of
	 * this costs.
	 */
	KEY("output", "rotate-size", t_size, rotate_bytes, "0", "a new file when one reaches this size (0: never)",
	    .min = 64 * 1024, .zero_is_off = true, .what = "a size (like 256M)", .applies = CONFIG_APPLY_NOW),
	KEY("output", "rotate-interval", t_duration, rotate_usec, "5min", "a new file this often (0: never)",
	    .min = 100000, .zero_is_off = true, .what = "a duration (like 10min)",
	    .applies = CONFIG_APPLY_NOW),
	KEY("output", "max-files", t_count, max_files, "0", "keep at most this many published files (0: no limit)",
	    .what = "a number", .applies = CONFIG_APPLY_NOW),
	KEY("output", "max-bytes", t_share, max_bytes, "10% 4G", "published files take at most this much space",
	    .aux = F(max_bytes_percent), .max = 100,
	    .what = "a size, a percentage of the file system or both (like 10% 4G; 0: no limit)",
	    .applies = CONFIG_APPLY_NOW),
	KEY("output", "max-age", t_duration, max_age_usec, "7d", "published files older than this go (0: never)",
	    .what = "a duration (like 10min)", .applies = CONFIG_APPLY_NOW),
	KEY("output", "min-free", t_share, min_free, "15% 4G", "space kept free on the file system",
	    .aux = F(min_free_percent), .max = 99,
	    .what = "a size, a percentage of the file system or both (like 15% 4G; below 100%; 0: no limit)",
	    .applies = CONFIG_APPLY_NOW),
	KEY("output", "on-rotate", t_string_opt, on_rotate, "", "command run with each published file",
	    .applies = CONFIG_APPLY_NOW),
	KEY("output", "buildid-cache", t_string_opt, buildid_cache_opt, "yes",
	    "directory of the binaries the files reference, in perf's .build-id layout (yes: the output "
	    "directory; no: none)",
	    .what = "yes, no or an absolute path", .check = check_buildid_cache,
	    .applies = CONFIG_APPLY_NEXT_FILE),
	KEY("output", "buildid-cache-size", t_share, buildid_cache_size, "2% 1G",
	    "the build-id cache's cap; the oldest entries go", .aux = F(buildid_cache_size_percent), .max = 100,
	    .what = "a size, a percentage of the file system or both (like 2% 1G)",
	    .applies = CONFIG_APPLY_NOW),
	KEY("output", "compress", t_compress, compress_level, "yes", "zstd level of the records (0 or no: off; yes: 1)",
	    .what = "a zstd level from 1 to 19 (0 or no: off)", .applies = CONFIG_APPLY_NEXT_FILE),
	KEY("output", "mode", t_mode, mode, "continuous", "continuous: files; flight: snapshots on demand",
	    .what = "continuous or flight", .applies = CONFIG_APPLY_REOPEN),
	KEY("output", "history", t_history, history_usec, "",
	    "how far back a snapshot reaches (empty: 5min in flight mode, else 0)",
	    .what = "a duration (like 5min; 0: none)", .applies = CONFIG_APPLY_REOPEN),
	KEY("output", "history-max", t_size, history_max, "256M", "memory cap of the history",
	    .min = 1ULL << 20, .what = "a size of at least 1M (like 256M)", .applies = CONFIG_APPLY_REOPEN),
	KEY("output", "label.", t_label, labels, NULL, "label.NAME=VALUE goes into manifests and metrics",
	    .applies = CONFIG_APPLY_NOW),
	KEY("service", "user", t_string_opt, user, "", "user to switch to after opening the events",
	    .check = check_user_or_group, .applies = CONFIG_APPLY_RESTART,
	    .why_restart = "perfrecd switched users after the start, for good"),
	KEY("service", "group", t_string_opt, group, "", "group owning the files (empty: the user's)",
	    .check = check_user_or_group, .applies = CONFIG_APPLY_RESTART,
	    .why_restart = "perfrecd switched groups after the start, for good"),
	KEY("service", "socket", t_string, socket, "/run/perfrecd/io.perfrec", "the control socket (empty: none)",
	    .what = "an absolute path (or empty for none)", .check = check_absolute,
	    .applies = CONFIG_APPLY_RESTART,
	    .why_restart = "the control socket is made at start, before privileges are given up"),
	KEY("service", "control-group", t_control_group, control_group, NULL,
	    "members may call every control method (unset: perfrecd if it exists; empty: none)",
	    .check = check_user_or_group, .applies = CONFIG_APPLY_RESTART,
	    .why_restart = "the control socket is made with its group at start"),
	KEY("service", "control-public-methods", t_string, control_public_methods, VARLINK_DEFAULT_PUBLIC,
	    "control methods anyone may call", .applies = CONFIG_APPLY_NOW),
	KEY("service", "metrics-listen", t_string_opt, metrics_listen, "",
	    "serve metrics on this loopback address:port (empty: no)",
	    .what = "a loopback 127.x.y.z:PORT", .check = check_loopback, .applies = CONFIG_APPLY_RESTART,
	    .why_restart = "the port is bound at start, before privileges are given up"),
	KEY("service", "metrics-textfile", t_string_opt, metrics_textfile, "",
	    "write metrics into this *.prom file (empty: no)", .what = "an absolute path", .check = check_absolute,
	    .applies = CONFIG_APPLY_NOW),
	KEY("upload", "upload-url", t_string_opt, upload_url, "", "S3 bucket URL to upload files to (empty: none)",
	    .what = "an http:// or https:// URL", .check = check_url, .applies = CONFIG_APPLY_RESTART,
	    .why_restart = "the uploader is made with it"),
	KEY("upload", "upload-region", t_string_opt, upload_region, "us-east-1", "the bucket's region",
	    .applies = CONFIG_APPLY_RESTART,
	    .why_restart = "the uploader is made with it"),
	KEY("upload", "upload-credentials", t_string_opt, upload_credentials, "",
	    "credentials file (empty: the environment)", .applies = CONFIG_APPLY_RESTART,
	    .why_restart = "the uploader reads them when it is made"),
	KEY("upload", "upload-key", t_string_opt, upload_key, "{host}/{date}/{file}", "object key template",
	    .check = check_upload_key, .applies = CONFIG_APPLY_RESTART,
	    .why_restart = "the uploader is made with it"),
};
#undef KEY
#undef F

const size_t config_nr_keys = sizeof(config_keys) / sizeof(config_keys[0]);

/* A family of keys (label.NAME) ends in '.'. */
static bool is_family(const struct config_key *k)
{
	return k->name[strlen(k->name) - 1] == '.';
}

static bool key_matches(const struct config_key *k, const char *key)
{
	return is_family(k) ? strncmp(key, k->name, strlen(k->name)) == 0 : strcmp(key, k->name) == 0;
}

/* Sets every key to its default; a default that does not parse is a bug here. */
void config_init(struct config *c)
{
	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < config_nr_keys; i++) {
		const struct config_key *k = &config_keys[i];
		char err[256];

		if (k->def && k->type->parse(k, c, k->def, err, sizeof(err)) < 0)
			abort();
	}
}

void config_exit(struct config *c)
{
	for (size_t i = 0; i < config_nr_keys; i++)
		if (config_keys[i].type->free)
			config_keys[i].type->free(&config_keys[i], c);
	free(c->buildid_cache);
	memset(c, 0, sizeof(*c));
}

/* The same label.NAME=VALUE set, in the same order (as the files write them). */
static bool labels_equal(const struct config *a, const struct config *b)
{
	if (a->nr_labels != b->nr_labels)
		return false;
	for (size_t i = 0; i < a->nr_labels; i++)
		if (strcmp(a->labels[i], b->labels[i]) != 0)
			return false;
	return true;
}

/* @k's value in @c as config_print() writes it (NULL: no memory). */
static char *key_value(const struct config_key *k, const struct config *c)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	k->type->print(k, c, f);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

uint64_t config_ring_bytes(const struct config *c)
{
	uint64_t rate, want, bytes = CONFIG_RING_MIN;

	if (c->mmap_bytes)
		return c->mmap_bytes;
	if (!c->callchain || !c->dwarf)
		return CONFIG_RING_MIN;
	rate = config_freq(c) ? config_freq(c) : 1000;
	want = (c->stack_size + CONFIG_RING_DWARF_EXTRA) * rate / 4;
	while (bytes < want && bytes < CONFIG_RING_AUTO_MAX)
		bytes <<= 1;
	return bytes;
}

const struct config_key *config_changed_key(const struct config *a, const struct config *b,
					    enum config_apply how)
{
	for (size_t i = 0; i < config_nr_keys; i++) {
		const struct config_key *k = &config_keys[i];
		char *va, *vb;
		bool differ;

		if (k->applies != how)
			continue;
		if (k->type == &t_label)
			differ = !labels_equal(a, b);
		else {
			va = key_value(k, a);
			vb = key_value(k, b);
			/* Out of memory: say changed, the safe side (a reopen, a refusal). */
			differ = !va || !vb || strcmp(va, vb) != 0;
			free(va);
			free(vb);
		}
		if (differ)
			return k;
	}
	return NULL;
}

bool config_key_is_default(const struct config *c, const char *section, const char *name)
{
	const struct config_key *k = NULL;
	struct config d;
	char *v, *dv;
	bool same;

	for (size_t i = 0; i < config_nr_keys && !k; i++)
		if (strcmp(config_keys[i].section, section) == 0 && strcmp(config_keys[i].name, name) == 0 &&
		    !is_family(&config_keys[i]))
			k = &config_keys[i];
	if (!k)
		return false;
	config_init(&d);
	v = key_value(k, c);
	dv = key_value(k, &d);
	same = v && dv && strcmp(v, dv) == 0;
	free(v);
	free(dv);
	config_exit(&d);
	return same;
}

static const char *const apply_names[_CONFIG_APPLY_MAX] = {
	[CONFIG_APPLY_NOW] = "now",
	[CONFIG_APPLY_NEXT_FILE] = "next-file",
	[CONFIG_APPLY_REOPEN] = "reopen",
	[CONFIG_APPLY_OFFCPU] = "offcpu-filter",
	[CONFIG_APPLY_RESTART] = "restart",
};

const char *config_apply_to_string(enum config_apply how)
{
	return (unsigned)how < _CONFIG_APPLY_MAX ? apply_names[how] : NULL;
}

void config_print_keys(FILE *f)
{
	for (size_t i = 0; i < config_nr_keys; i++) {
		const struct config_key *k = &config_keys[i];
		const char *how = config_apply_to_string(k->applies);

		fprintf(f, "%s %s%s %s\n", k->section, k->name, is_family(k) ? "*" : "", how ? how : "unset");
	}
}

void config_print(const struct config *c, bool docs, FILE *f)
{
	const char *section = NULL;

	for (size_t i = 0; i < config_nr_keys; i++) {
		const struct config_key *k = &config_keys[i];

		if (!section || strcmp(section, k->section)) {
			fprintf(f, "%s[%s]\n", section ? "\n" : "", k->section);
			section = k->section;
		}
		if (k->type == &t_rate && !rate_in_use(k, c))
			continue;
		if (docs)
			fprintf(f, "# %s\n", k->doc);
		if (k->type == &t_label) {
			for (size_t j = 0; j < c->nr_labels; j++)
				fprintf(f, "%s%s\n", k->name, c->labels[j]);
			continue;
		}
		fprintf(f, "%s=", k->name);
		k->type->print(k, c, f);
		fputc('\n', f);
	}
}

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
	const struct config_key *best = NULL;
	size_t best_d = SIZE_MAX, len = strlen(key);

	for (size_t i = 0; i < config_nr_keys; i++) {
		const struct config_key *k = &config_keys[i];
		size_t d;

		if (key_matches(k, key)) {
			snprintf(err, errlen, "key '%s' belongs in section [%s], not [%s]", key, k->section, section);
			return;
		}
		d = is_family(k) ? SIZE_MAX : config_edit_distance(key, k->name);
		if (d < best_d) {
			best_d = d;
			best = k;
		}
	}
	if (best && best_d <= 2 && best_d * 3 < len) {
		if (strcmp(best->section, section) == 0)
			snprintf(err, errlen, "unknown key '%s' in section [%s]; did you mean '%s'?", key, section, best->name);
		else
			snprintf(err, errlen, "unknown key '%s' in section [%s]; did you mean '%s' in section [%s]?",
				 key, section, best->name, best->section);
		return;
	}
	snprintf(err, errlen, "unknown key '%s' in section [%s]", key, section);
}

int config_set(struct config *c, const char *section, const char *key, const char *v,
	       char *err, size_t errlen)
{
	for (size_t i = 0; i < config_nr_keys; i++) {
		const struct config_key *k = &config_keys[i];

		if (strcmp(k->section, section) || !key_matches(k, key))
			continue;
		if (k->type == &t_label)
			return set_label(c, key + strlen(k->name), v, err, errlen);
		return k->type->parse(k, c, v, err, errlen);
	}
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

/* The key that key @name replaces when set (frequency= and period=), or NULL. */
static const char *replaced_key(const char *name)
{
	const struct config_key *k = NULL;

	for (size_t i = 0; i < config_nr_keys && !k; i++)
		if (strcmp(config_keys[i].name, name) == 0 && config_keys[i].type == &t_rate)
			k = &config_keys[i];
	for (size_t i = 0; k && i < config_nr_keys; i++)
		if (config_keys[i].type == &t_rate && config_keys[i].off == k->aux)
			return config_keys[i].name;
	return NULL;
}

/*
 * Keys set twice, and keys that replace each other in config_set()
 * (frequency= and period=): in one file, either is a mistake that the
 * order of the lines would otherwise settle in silence.  0 or -EINVAL
 * (recorded).
 */
static int check_repeat(struct load_ctx *l, const char *name)
{
	const char *other = replaced_key(name);
	struct seen_key *ns;

	for (size_t i = 0; i < l->nr_seen; i++) {
		if (strcmp(l->seen[i].name, name) == 0) {
			load_error(l, -EINVAL, l->line, "duplicate key '%s' (already set on line %u)",
				   name, l->seen[i].line);
			return -EINVAL;
		}
		if (other && strcmp(l->seen[i].name, other) == 0) {
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
