/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Times as people write them when they look back at an incident, turned
 * into wall-clock nanoseconds since the epoch (CLOCK_REALTIME):
 *
 *   2026-11-23T14:03:00Z, 2026-11-23T14:03:00.250+01:00   ISO 8601 with a zone
 *   2026-11-23 14:03, 2026-11-23T14:03:30                 a date and a local time
 *   14:03, 14:03:30, 14:03:30.250                         local time today
 *   yesterday 14:03, today 14:03                          local time that day
 *   now, -10min, -2h, +30s, now-1h30min                   relative to now
 *   @1763906580, @1763906580.250                          seconds since the epoch (date(1)'s @)
 *
 * Local times go through the process's time zone (TZ, localtime(3)); a
 * local time that does not exist (skipped by a DST change) is refused.
 * "14:03" is always today's, even when that is later than now: a time
 * never silently means another day.
 *
 * Durations (--around 30s): a number with a unit ns, us, ms, s, min, h, d
 * (also sec, m, hour(s), day(s)), several in a row (1h30min); a bare number
 * is seconds.
 *
 * Errors: -EINVAL with a message naming what was wrong in @err (always
 * NUL-terminated when @errsz > 0), -ERANGE for a time before 1970 or past
 * what 64-bit nanoseconds hold (year 2554).  Thread-safe if the time zone
 * is not changed meanwhile.
 */
#ifndef PERFREC_TIMESPEC_H
#define PERFREC_TIMESPEC_H

#include <perfrec/common.h>

/* Parse @s relative to @now_wall_ns; *ret_wall_ns written only on success. */
PERFREC_API int perfrec_timespec__parse(const char *s, uint64_t now_wall_ns, uint64_t *ret_wall_ns,
					char *err, size_t errsz);

/* Parse a duration such as "30s", "1.5s", "500ms", "2min", "1h30min". */
PERFREC_API int perfrec_timespec__parse_duration(const char *s, uint64_t *ret_ns, char *err, size_t errsz);

/*
 * Format @wall_ns as "2026-11-23T14:03:00.250Z" (@utc) or as local
 * "2026-11-23 15:03:00.250 CET".  Returns the length, -ENOSPC if @sz is too
 * small.
 */
PERFREC_API int perfrec_timespec__format(uint64_t wall_ns, bool utc, char *buf, size_t sz);

#endif
