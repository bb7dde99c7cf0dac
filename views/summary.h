/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What a view wrote, said in one line on stderr: the path, how many
 * samples went in and the wall-clock span they cover, so that a user
 * sees at once whether the output holds the moment asked for.
 */
#ifndef PERFRECCTL_SUMMARY_H
#define PERFRECCTL_SUMMARY_H

#include <stdint.h>

struct view_summary {
	uint64_t samples;
	uint64_t first_wall, last_wall; /* wall-clock ns; 0: no sample had clock data */
};

/* Count one sample at @wall_ns (0: its file has no clock data). */
void view_summary_add(struct view_summary *v, uint64_t wall_ns);

/*
 * "perfrecctl CMD: wrote OUT (WHAT): N samples, FROM to TO UTC (S s)";
 * @out NULL or "-" is standard output; @what may be NULL.
 */
void view_summary_print(const char *cmd, const char *out, const char *what, const struct view_summary *v);

#endif
