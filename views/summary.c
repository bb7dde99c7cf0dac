// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The one line each view prints on stderr about what it wrote (summary.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <perfrec/timespec.h>

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

void view_summary_print(const char *cmd, const char *out, const char *what, const struct view_summary *v)
{
	char from[64], to[64], span[200] = "";

	if (v->first_wall) {
		perfrec_timespec__format(v->first_wall, true, from, sizeof(from));
		perfrec_timespec__format(v->last_wall, true, to, sizeof(to));
		snprintf(span, sizeof(span), ", %s to %s (%.1f s)", from, to,
			 (double)(v->last_wall - v->first_wall) / 1e9);
	}
	fprintf(stderr, "perfrecctl %s: wrote %s%s%s%s: %" PRIu64 " samples%s\n", cmd,
		!out || !strcmp(out, "-") ? "standard output" : out, what ? " (" : "", what ? what : "",
		what ? ")" : "", v->samples, span);
}
