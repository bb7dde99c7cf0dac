// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The time parser of timespec.h: a small hand-written scanner over the few
 * forms an SRE types (ISO 8601, a local clock time, a relative offset), so
 * every refusal can say which part was wrong rather than "parse error".
 * Zoned times are computed with calendar arithmetic, not timegm(), so the
 * result never depends on the process's time zone; local times are matched
 * against the zone's offsets, and a time a clock change skips or repeats is
 * refused rather than guessed.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <perfrec/timespec.h>

#define NSEC 1000000000ULL
/* Largest whole second whose nanoseconds fit in 64 bits (2554-07-21). */
#define MAX_SECS (UINT64_MAX / NSEC - 1)

static int fail(char *err, size_t errsz, int r, const char *fmt, ...)
{
	va_list ap;

	if (errsz) {
		va_start(ap, fmt);
		vsnprintf(err, errsz, fmt, ap);
		va_end(ap);
	}
	return r;
}

static const char *skip_ws(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* Exactly @n digits at *p into *ret; advances. */
static bool digits(const char **p, int n, int *ret)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if (!isdigit((unsigned char)(*p)[i]))
			return false;
		v = v * 10 + ((*p)[i] - '0');
	}
	*p += n;
	*ret = v;
	return true;
}

/* One or two digits (hours may be written "9:05"). */
static bool digits12(const char **p, int *ret)
{
	if (!isdigit((unsigned char)**p))
		return false;
	if (isdigit((unsigned char)(*p)[1]))
		return digits(p, 2, ret);
	return digits(p, 1, ret);
}

static bool leap(int y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int days_in_month(int y, int m)
{
	static const int d[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };

	return m == 2 && leap(y) ? 29 : d[m - 1];
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's method). */
static int64_t days_from_civil(int y, int m, int d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

struct clock_time {
	int h, m, s;
	uint32_t ns;
	bool has_seconds;
};

/* HH:MM[:SS[.fraction]] at *p; advances.  0 or -EINVAL with @err set. */
static int parse_clock(const char **p, const char *whole, struct clock_time *ct, char *err, size_t errsz)
{
	const char *q = *p;

	*ct = (struct clock_time){ 0 };
	if (!digits12(&q, &ct->h) || *q != ':')
		return fail(err, errsz, -EINVAL, "'%s': expected a time of day HH:MM[:SS[.fraction]] at '%s'", whole, *p);
	q++;
	if (!digits(&q, 2, &ct->m))
		return fail(err, errsz, -EINVAL, "'%s': expected two digits of minutes at '%s'", whole, q);
	if (*q == ':') {
		q++;
		if (!digits(&q, 2, &ct->s))
			return fail(err, errsz, -EINVAL, "'%s': expected two digits of seconds at '%s'", whole, q);
		ct->has_seconds = true;
		if (*q == '.' || *q == ',') {
			int n = 0;
			uint32_t scale = 100000000;

			q++;
			while (isdigit((unsigned char)*q)) {
				if (++n > 9)
					return fail(err, errsz, -EINVAL,
						    "'%s': more than 9 digits of fractional seconds (nanoseconds are the finest)",
						    whole);
				ct->ns += (uint32_t)(*q - '0') * scale;
				scale /= 10;
				q++;
			}
			if (n == 0)
				return fail(err, errsz, -EINVAL, "'%s': expected digits after the decimal point", whole);
		}
	}
	if (ct->h > 23)
		return fail(err, errsz, -EINVAL, "'%s': hour %d is out of range (0-23)", whole, ct->h);
	if (ct->m > 59)
		return fail(err, errsz, -EINVAL, "'%s': minute %d is out of range (0-59)", whole, ct->m);
	if (ct->s > 59)
		return fail(err, errsz, -EINVAL, "'%s': second %d is out of range (0-59)", whole, ct->s);
	*p = q;
	return 0;
}

static int to_ns(int64_t secs, uint32_t ns, const char *whole, uint64_t *ret, char *err, size_t errsz)
{
	if (secs < 0)
		return fail(err, errsz, -ERANGE, "'%s' is before 1970", whole);
	if ((uint64_t)secs > MAX_SECS)
		return fail(err, errsz, -ERANGE, "'%s' is too far in the future", whole);
	*ret = (uint64_t)secs * NSEC + ns;
	return 0;
}

/* "+02:00 CEST" for instant @t in the local zone. */
static void zone_of(time_t t, char *buf, size_t sz)
{
	struct tm tm;
	long off;

	if (!localtime_r(&t, &tm)) {
		snprintf(buf, sz, "?");
		return;
	}
	off = tm.tm_gmtoff;
	snprintf(buf, sz, "%c%02ld:%02ld %s", off < 0 ? '-' : '+', labs(off) / 3600, labs(off) % 3600 / 60,
		 tm.tm_zone ? tm.tm_zone : "");
}

/*
 * The instants whose local time is @secs (the fields counted as if in
 * UTC), at most two, ascending: each UTC offset the zone uses within two
 * days of them is tried, and kept where the zone does use it at the
 * instant it gives.  Zone-agnostic: a DST change or a change of standard
 * offset alike yields none (a time skipped) or two (a time repeated).
 */
static int local_instants(int64_t secs, time_t ret[2])
{
	long offs[8];
	int nr_offs = 0, n = 0;

	for (int64_t d = -48 * 3600; d <= 48 * 3600; d += 1800) {
		time_t t = (time_t)(secs + d);
		struct tm tm;
		bool known = false;

		if (!localtime_r(&t, &tm))
			continue;
		for (int i = 0; i < nr_offs; i++)
			known |= offs[i] == tm.tm_gmtoff;
		if (!known && nr_offs < 8)
			offs[nr_offs++] = tm.tm_gmtoff;
	}
	for (int i = 0; i < nr_offs && n < 2; i++) {
		time_t t = (time_t)(secs - offs[i]);
		struct tm tm;

		if (!localtime_r(&t, &tm) || tm.tm_gmtoff != offs[i])
			continue;
		if (n == 1 && ret[0] == t)
			continue;
		ret[n++] = t;
	}
	if (n == 2 && ret[1] < ret[0]) {
		time_t x = ret[0];

		ret[0] = ret[1];
		ret[1] = x;
	}
	return n;
}

/*
 * A local date and time through the time zone.  A time the zone skips
 * (spring forward) or repeats (fall back) names no one instant: it is
 * refused, with the instants around it and how to say which one is meant,
 * the same way in every zone, rather than having mktime() guess.
 */
static int local_ns(int y, int mo, int d, const struct clock_time *ct, const char *whole, uint64_t *ret,
		    char *err, size_t errsz)
{
	int64_t secs = days_from_civil(y, mo, d) * 86400 + ct->h * 3600 + ct->m * 60 + ct->s;
	char a[64], b[64], za[32], zb[32];
	time_t t[2];
	int n = local_instants(secs, t);

	if (n == 1)
		return to_ns((int64_t)t[0], ct->ns, whole, ret, err, errsz);
	if (n == 2) {
		struct tm tm;

		gmtime_r(&t[0], &tm);
		strftime(a, sizeof(a), "%Y-%m-%dT%H:%M:%SZ", &tm);
		gmtime_r(&t[1], &tm);
		strftime(b, sizeof(b), "%Y-%m-%dT%H:%M:%SZ", &tm);
		zone_of(t[0], za, sizeof(za));
		zone_of(t[1], zb, sizeof(zb));
		return fail(err, errsz, -EINVAL,
			    "'%s' is ambiguous: the local time zone has %04d-%02d-%02d %02d:%02d:%02d twice, its clocks "
			    "going back at a daylight saving change: at %s (%s) and at %s (%s); add the offset to say which "
			    "(%04d-%02d-%02dT%02d:%02d:%02d%.6s or %04d-%02d-%02dT%02d:%02d:%02d%.6s) or give the time in UTC "
			    "with Z", whole, y, mo, d, ct->h, ct->m, ct->s, a, za, b, zb, y, mo, d, ct->h, ct->m, ct->s, za, y,
			    mo, d, ct->h, ct->m, ct->s, zb);
	}
	{
		/* The zone's offsets before and after the skipped span. */
		time_t before = (time_t)(secs - 86400), after = (time_t)(secs + 86400);

		zone_of(before, za, sizeof(za));
		zone_of(after, zb, sizeof(zb));
		if (!strcmp(za, zb))
			return fail(err, errsz, -ERANGE, "'%s' cannot be represented in the local time zone", whole);
		return fail(err, errsz, -EINVAL,
			    "'%s' does not exist in the local time zone: a daylight saving change skips %04d-%02d-%02d "
			    "%02d:%02d:%02d (its clocks go from %s to %s); add the offset meant (e.g. %04d-%02d-%02dT%02d:%02d:%02d%.6s) or give "
			    "the time in UTC with Z", whole, y, mo, d, ct->h, ct->m, ct->s, za, zb, y, mo, d, ct->h, ct->m,
			    ct->s, za);
	}
}

/* Z, z, +HH:MM, -HH:MM, +HHMM, +HH at *p into seconds east of UTC; 1 if found. */
static int parse_zone(const char **p, const char *whole, int *ret_off, char *err, size_t errsz)
{
	const char *q = *p;
	int sign, hh, mm = 0;

	if (*q == 'Z' || *q == 'z') {
		*p = q + 1;
		*ret_off = 0;
		return 1;
	}
	if (*q != '+' && *q != '-')
		return 0;
	sign = *q == '-' ? -1 : 1;
	q++;
	if (!digits(&q, 2, &hh))
		return fail(err, errsz, -EINVAL, "'%s': expected a zone offset +HH:MM at '%s'", whole, *p);
	if (*q == ':')
		q++;
	if (isdigit((unsigned char)*q) && !digits(&q, 2, &mm))
		return fail(err, errsz, -EINVAL, "'%s': expected two digits of offset minutes at '%s'", whole, *p);
	if (hh > 23 || mm > 59)
		return fail(err, errsz, -EINVAL, "'%s': zone offset %s is out of range", whole, *p);
	*ret_off = sign * (hh * 3600 + mm * 60);
	*p = q;
	return 1;
}

/* YYYY-MM-DD[(T| )HH:MM[:SS[.f]]][zone] */
static int parse_date_time(const char *s, const char *whole, uint64_t *ret, char *err, size_t errsz)
{
	const char *p = s;
	struct clock_time ct = { 0 };
	int y, mo, d, off = 0, r;
	bool has_time = false;

	if (!digits(&p, 4, &y) || *p != '-' || (p++, !digits(&p, 2, &mo)) || *p != '-' ||
	    (p++, !digits(&p, 2, &d)))
		return fail(err, errsz, -EINVAL, "'%s': expected a date YYYY-MM-DD", whole);
	if (mo < 1 || mo > 12)
		return fail(err, errsz, -EINVAL, "'%s': month %d is out of range (1-12)", whole, mo);
	if (d < 1 || d > days_in_month(y, mo))
		return fail(err, errsz, -EINVAL, "'%s': day %d is out of range for %04d-%02d", whole, d, y, mo);
	if (*p == 'T' || *p == 't' || *p == ' ') {
		p = *p == ' ' ? skip_ws(p) : p + 1;
		r = parse_clock(&p, whole, &ct, err, errsz);
		if (r < 0)
			return r;
		has_time = true;
	}
	r = parse_zone(&p, whole, &off, err, errsz);
	if (r < 0)
		return r;
	if (r > 0 && !has_time)
		return fail(err, errsz, -EINVAL, "'%s': a zone needs a time of day before it", whole);
	if (*skip_ws(p))
		return fail(err, errsz, -EINVAL, "'%s': unexpected '%s' after the %s", whole, skip_ws(p),
			    r > 0 ? "zone" : has_time ? "time" : "date");
	if (r == 0)
		return local_ns(y, mo, d, &ct, whole, ret, err, errsz);
	return to_ns(days_from_civil(y, mo, d) * 86400 + ct.h * 3600 + ct.m * 60 + ct.s - off, ct.ns, whole,
		     ret, err, errsz);
}

/* A clock time on the local day @day_offset days from @now_wall_ns's. */
static int parse_local_day(const char *p, int day_offset, uint64_t now_wall_ns, const char *whole,
			   uint64_t *ret, char *err, size_t errsz)
{
	time_t now = (time_t)(now_wall_ns / NSEC);
	struct clock_time ct = { 0 };
	struct tm tm;
	int r;

	p = skip_ws(p);
	if (*p) {
		r = parse_clock(&p, whole, &ct, err, errsz);
		if (r < 0)
			return r;
		if (*skip_ws(p))
			return fail(err, errsz, -EINVAL, "'%s': unexpected '%s' after the time", whole, skip_ws(p));
	}
	if (!localtime_r(&now, &tm))
		return fail(err, errsz, -ERANGE, "'%s': the current time has no local date", whole);
	/* Step whole days at noon, where no DST change lies, then take that date. */
	tm.tm_mday += day_offset;
	tm.tm_hour = 12;
	tm.tm_min = tm.tm_sec = 0;
	tm.tm_isdst = -1;
	if (mktime(&tm) == (time_t)-1)
		return fail(err, errsz, -ERANGE, "'%s': the day cannot be represented", whole);
	return local_ns(tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, &ct, whole, ret, err, errsz);
}

static const struct unit {
	const char *name;
	uint64_t ns;
} units[] = {
	{ "ns", 1 }, { "nsec", 1 },
	{ "us", 1000 }, { "usec", 1000 },
	{ "ms", 1000000 }, { "msec", 1000000 },
	{ "s", NSEC }, { "sec", NSEC }, { "secs", NSEC }, { "second", NSEC }, { "seconds", NSEC },
	{ "m", 60 * NSEC }, { "min", 60 * NSEC }, { "mins", 60 * NSEC }, { "minute", 60 * NSEC },
	{ "minutes", 60 * NSEC },
	{ "h", 3600 * NSEC }, { "hr", 3600 * NSEC }, { "hour", 3600 * NSEC }, { "hours", 3600 * NSEC },
	{ "d", 86400 * NSEC }, { "day", 86400 * NSEC }, { "days", 86400 * NSEC },
};

/* "1h30min", "2.5s", "10" (seconds, only when @bare_ok and alone). */
static int parse_span(const char *s, const char *whole, bool bare_ok, uint64_t *ret, char *err, size_t errsz)
{
	const char *p = skip_ws(s);
	uint64_t total = 0;
	int parts = 0;

	if (!*p)
		return fail(err, errsz, -EINVAL, "'%s': expected a duration such as 30s, 10min or 2h", whole);
	while (*p) {
		uint64_t whole_part = 0, frac_num = 0, frac_den = 1, unit_ns = 0, v;
		const char *num = p, *u;
		size_t ulen;

		if (!isdigit((unsigned char)*p))
			return fail(err, errsz, -EINVAL, "'%s': expected a number at '%s'", whole, p);
		while (isdigit((unsigned char)*p)) {
			if (whole_part > UINT64_MAX / 10 - 9)
				return fail(err, errsz, -ERANGE, "'%s': number too large", whole);
			whole_part = whole_part * 10 + (uint64_t)(*p++ - '0');
		}
		if (*p == '.') {
			p++;
			if (!isdigit((unsigned char)*p))
				return fail(err, errsz, -EINVAL, "'%s': expected digits after the decimal point", whole);
			while (isdigit((unsigned char)*p)) {
				if (frac_den < NSEC) {
					frac_num = frac_num * 10 + (uint64_t)(*p - '0');
					frac_den *= 10;
				}
				p++;
			}
		}
		p = skip_ws(p);
		u = p;
		while (isalpha((unsigned char)*p))
			p++;
		ulen = (size_t)(p - u);
		if (ulen == 0) {
			if (!bare_ok || parts > 0 || *skip_ws(p))
				return fail(err, errsz, -EINVAL,
					    "'%s': '%.*s' needs a unit (ns, us, ms, s, min, h or d)", whole,
					    (int)(p - num), num);
			unit_ns = NSEC;
		}
		for (size_t i = 0; ulen && i < sizeof(units) / sizeof(units[0]); i++)
			if (strlen(units[i].name) == ulen && !strncasecmp(u, units[i].name, ulen))
				unit_ns = units[i].ns;
		if (!unit_ns)
			return fail(err, errsz, -EINVAL, "'%s': unknown unit '%.*s' (use ns, us, ms, s, min, h or d)",
				    whole, (int)ulen, u);
		if (whole_part > UINT64_MAX / unit_ns)
			return fail(err, errsz, -ERANGE, "'%s': duration too long", whole);
		v = whole_part * unit_ns;
		/* frac_den <= 1e9 and unit_ns <= 86400e9: split to stay within 64 bits. */
		v += frac_num * (unit_ns / frac_den) + frac_num * (unit_ns % frac_den) / frac_den;
		if (v < whole_part * unit_ns || total > UINT64_MAX - v)
			return fail(err, errsz, -ERANGE, "'%s': duration too long", whole);
		total += v;
		parts++;
		p = skip_ws(p);
	}
	*ret = total;
	return 0;
}

static bool keyword(const char *p, const char *kw, const char **ret_rest)
{
	size_t n = strlen(kw);

	if (strncasecmp(p, kw, n) || isalnum((unsigned char)p[n]))
		return false;
	*ret_rest = p + n;
	return true;
}

/* "@1763906580.250": seconds since the epoch, as date(1) takes them (scripts, manifests). */
static int parse_epoch(const char *p, const char *whole, uint64_t *ret_wall_ns, char *err, size_t errsz)
{
	uint64_t secs = 0, ns = 0, scale = NSEC / 10;
	int n = 0;

	if (!isdigit((unsigned char)*p))
		return fail(err, errsz, -EINVAL, "'%s': expected seconds since the epoch after '@'", whole);
	for (; isdigit((unsigned char)*p); p++) {
		if (secs > (MAX_SECS - 9) / 10)
			return fail(err, errsz, -ERANGE, "'%s' is too far in the future", whole);
		secs = secs * 10 + (uint64_t)(*p - '0');
	}
	if (*p == '.') {
		for (p++; isdigit((unsigned char)*p); p++, scale /= 10) {
			if (++n > 9)
				return fail(err, errsz, -EINVAL,
					    "'%s': more than 9 digits of fractional seconds (nanoseconds are the finest)", whole);
			ns += (uint64_t)(*p - '0') * scale;
		}
		if (n == 0)
			return fail(err, errsz, -EINVAL, "'%s': expected digits after the decimal point", whole);
	}
	p = skip_ws(p);
	if (*p)
		return fail(err, errsz, -EINVAL, "'%s': unexpected '%s' after the seconds since the epoch", whole, p);
	*ret_wall_ns = secs * NSEC + ns;
	return 0;
}

int perfrec_timespec__parse(const char *s, uint64_t now_wall_ns, uint64_t *ret_wall_ns, char *err, size_t errsz)
{
	const char *p, *rest;
	uint64_t v = 0;
	int r;

	if (errsz)
		err[0] = 0;
	if (!s)
		return fail(err, errsz, -EINVAL, "no time given");
	p = skip_ws(s);
	if (!*p)
		return fail(err, errsz, -EINVAL, "empty time: expected e.g. 2026-11-23T14:03:00Z, 14:03 or -10min");
	if (keyword(p, "now", &rest)) {
		rest = skip_ws(rest);
		if (!*rest) {
			*ret_wall_ns = now_wall_ns;
			return 0;
		}
		if (*rest != '-' && *rest != '+')
			return fail(err, errsz, -EINVAL, "'%s': expected -DURATION or +DURATION after 'now'", s);
		p = rest;
	}
	if (*p == '-' || *p == '+') {
		r = parse_span(p + 1, s, false, &v, err, errsz);
		if (r < 0)
			return r;
		if (*p == '-') {
			if (v > now_wall_ns)
				return fail(err, errsz, -ERANGE, "'%s' is before 1970", s);
			*ret_wall_ns = now_wall_ns - v;
		} else {
			if (v > MAX_SECS * NSEC - now_wall_ns)
				return fail(err, errsz, -ERANGE, "'%s' is too far in the future", s);
			*ret_wall_ns = now_wall_ns + v;
		}
		return 0;
	}
	if (*p == '@')
		return parse_epoch(p + 1, s, ret_wall_ns, err, errsz);
	if (keyword(p, "yesterday", &rest))
		return parse_local_day(rest, -1, now_wall_ns, s, ret_wall_ns, err, errsz);
	if (keyword(p, "today", &rest))
		return parse_local_day(rest, 0, now_wall_ns, s, ret_wall_ns, err, errsz);
	if (isdigit((unsigned char)p[0]) && isdigit((unsigned char)p[1]) && isdigit((unsigned char)p[2]) &&
	    isdigit((unsigned char)p[3]) && p[4] == '-')
		return parse_date_time(p, s, ret_wall_ns, err, errsz);
	if (isdigit((unsigned char)p[0]) && (p[1] == ':' || (isdigit((unsigned char)p[1]) && p[2] == ':')))
		return parse_local_day(p, 0, now_wall_ns, s, ret_wall_ns, err, errsz);
	return fail(err, errsz, -EINVAL,
		    "cannot read '%s' as a time: expected ISO 8601 (2026-11-23T14:03:00Z), a local time "
		    "(14:03:30.250, yesterday 14:03, 2026-11-23 14:03) or a relative one (now, -10min, -2h)", s);
}

int perfrec_timespec__parse_duration(const char *s, uint64_t *ret_ns, char *err, size_t errsz)
{
	if (errsz)
		err[0] = 0;
	if (!s)
		return fail(err, errsz, -EINVAL, "no duration given");
	return parse_span(s, s, true, ret_ns, err, errsz);
}

int perfrec_timespec__format(uint64_t wall_ns, bool utc, char *buf, size_t sz)
{
	time_t t = (time_t)(wall_ns / NSEC);
	char date[32], zone[16];
	struct tm tm;
	int n;

	if (!(utc ? gmtime_r(&t, &tm) : localtime_r(&t, &tm)))
		return -ERANGE;
	strftime(date, sizeof(date), utc ? "%Y-%m-%dT%H:%M:%S" : "%Y-%m-%d %H:%M:%S", &tm);
	if (!utc)
		strftime(zone, sizeof(zone), "%Z", &tm);
	n = snprintf(buf, sz, "%s.%03u%s%s", date, (unsigned)(wall_ns % NSEC / 1000000), utc ? "Z" : " ",
		     utc ? "" : zone);
	if (n < 0 || (size_t)n >= sz)
		return -ENOSPC;
	return n;
}
