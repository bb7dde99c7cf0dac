/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What a file's records say about what it needs beside them: the build
 * ids of the binaries its sampled processes mapped (HEADER_BUILD_ID) and
 * the time its samples span (HEADER_SAMPLE_TIME).  Noted here, once, for
 * every writer of a file: the writer's own tracking (pdwriter.c's
 * __track()), the file sink (filesink.c) and perfrecd's snapshots
 * (daemon/snapshot.c), each with the records it writes.
 */
#ifndef PERFREC_TRACK_H
#define PERFREC_TRACK_H

#include <stdint.h>

#include <perfrec/buildid.h>
#include <perfrec/format.h>

struct track {
	struct perfrec_buildid_table *bids; /* borrowed (NULL: times only) */
	uint64_t first_time, last_time;     /* of the samples noted (0, 0: none with a time) */
};

/* A sample @h of @pid at @time (0: it carries none); its cpumode says kernel or user. */
void track_sample(struct track *t, const struct perf_event_header *h, uint32_t pid, uint64_t time);
/* Any other record: an MMAP2 names a binary, an EXIT ends a process (buildid.h). */
void track_sideband(struct track *t, const struct perf_event_header *h);

#endif
