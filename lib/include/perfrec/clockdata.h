/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The recording's clock and the wall clock: a file's HEADER_CLOCK_DATA is a
 * pair (wall ns, sample-clock ns) read together at the file's start, and the
 * samples' times are on the sample clock (CLOCK_MONOTONIC by default).  A
 * time on one clock becomes a time on the other by the offset of that pair;
 * the file's name (its start in UTC, to the millisecond, taken when it was
 * created) is not precise enough for a window cut to the sample.
 *
 * Both clocks advance at the same rate (the sample clock is not
 * CLOCK_MONOTONIC_RAW unless asked for), so the error over a file's life is
 * NTP's slew of the wall clock since the pair was read: microseconds.
 */
#ifndef PERFREC_CLOCKDATA_H
#define PERFREC_CLOCKDATA_H

#include <perfrec/common.h>

struct perfrec_pdreader;

struct perfrec_clockdata {
	uint32_t clockid;  /* of the samples' times (CLOCK_MONOTONIC, ...) */
	uint64_t wall_ns;  /* CLOCK_REALTIME, ns since the epoch */
	uint64_t clock_ns; /* the sample clock at the same moment */
};

/*
 * The clock data of the file @r reads: 0 and *ret, -ENOENT when the file has
 * none (perf record without -k), -EBADMSG when the feature is too short.
 */
PERFREC_API int perfrec_clockdata__from_reader(const struct perfrec_pdreader *r, struct perfrec_clockdata *ret);

/* A sample time as wall-clock ns (0 if it would fall before the epoch). */
PERFREC_API uint64_t perfrec_clockdata__to_wall(const struct perfrec_clockdata *c, uint64_t sample_time);

/* A wall-clock time on the sample clock (0 if before the clock's zero). */
PERFREC_API uint64_t perfrec_clockdata__to_sample(const struct perfrec_clockdata *c, uint64_t wall_ns);

#endif
