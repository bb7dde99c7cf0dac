// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The one line each view prints on stderr about what it wrote (summary.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "summary.h"

void view_summary_add(struct view_summary *v, uint64_t wall_ns)
{
	v->samples++;
	if (!wall_ns)
		return;
	if (!v->first_wall || wall_ns < v->first_wall)
		v->first_wall = wall_ns;
	if (wall_ns > v->last_wall)
		v->last_wall = wall_ns;
}

static void put_utc(char *buf, size_t len, uint64_t ns)
{
	time_t t = (time_t)(ns / 1000000000);
	struct tm tm;

	if (!gmtime_r(&t, &tm)) {
		snprintf(buf, len, "%" PRIu64 " ns", ns);
		return;
	}
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03uZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
		 tm.tm_hour, tm.tm_min, tm.tm_sec, (unsigned)(ns % 1000000000 / 1000000));
}

void view_summary_print(const char *cmd, const char *out, const char *what, const struct view_summary *v)
{
	char from[64], to[64], span[200] = "";

	if (v->first_wall) {
		put_utc(from, sizeof(from), v->first_wall);
		put_utc(to, sizeof(to), v->last_wall);
		snprintf(span, sizeof(span), ", %s to %s (%.1f s)", from, to,
			 (double)(v->last_wall - v->first_wall) / 1e9);
	}
	fprintf(stderr, "perfrecctl %s: wrote %s%s%s%s: %" PRIu64 " samples%s\n", cmd,
		!out || !strcmp(out, "-") ? "standard output" : out, what ? " (" : "", what ? what : "",
		what ? ")" : "", v->samples, span);
}
