// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A file's build ids and sample times, from its records (see track.h).
 * Cheap per record: a compare for the times, a hash lookup in the table.
 */
#include "track.h"

void track_sample(struct track *t, const struct perf_event_header *h, uint32_t pid, uint64_t time)
{
	if (time) {
		if (!t->first_time || time < t->first_time)
			t->first_time = time;
		if (time > t->last_time)
			t->last_time = time;
	}
	if (t->bids)
		perfrec_buildid_table__note_sample_pid(t->bids, pid,
			(h->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL);
}

void track_sideband(struct track *t, const struct perf_event_header *h)
{
	if (!t->bids)
		return;
	if (h->type == PERF_RECORD_MMAP2)
		perfrec_buildid_table__note_mmap2(t->bids, h);
	else if (h->type == PERF_RECORD_EXIT)
		perfrec_buildid_table__note_exit(t->bids, h);
}
