// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * unwind=host, the recorder's side of it: the unwind sink's worker writes
 * the current file through struct host_out (its lock shared with the
 * draining thread), and what the file refused on the worker's thread is
 * accounted for on the draining one as the raw path accounts a refused
 * span.  See the top of recorder.c for the threads and when they meet.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "recorder.h"
#include "recorder-internal.h"

void recorder_out_lock(const struct recorder *rec)
{
	if (rec->host_out)
		pthread_mutex_lock(&rec->host_out->lock);
}

void recorder_out_unlock(const struct recorder *rec)
{
	if (rec->host_out)
		pthread_mutex_unlock(&rec->host_out->lock);
}

/* @h did not reach the file (@err); under ho->lock. */
void host_count_refused(struct host_out *ho, const struct perf_event_header *h, int err)
{
	uint64_t n = 0;

	if (h->type == PERF_RECORD_SAMPLE)
		ho->failed_samples++;
	else if (h->type == PERF_RECORD_LOST && h->size >= sizeof(*h) + 16)
		memcpy(&n, (const char *)(h + 1) + 8, 8);
	else if (h->type == PERF_RECORD_LOST_SAMPLES && h->size >= sizeof(*h) + 8)
		memcpy(&n, h + 1, 8);
	ho->failed_lost += n;
	ho->failed_bytes += h->size;
	if (!ho->err)
		ho->err = err;
}

/*
 * The unwind sink's emit, on its worker: one record into the current file.
 * A refused record is counted for the draining thread (recorder_host_failures()),
 * and the round goes on: one full write must not take the rest with it.
 */
static int host_emit(void *ctx, const struct perf_event_header *h)
{
	struct host_out *ho = ctx;
	struct recorder *rec;
	int r = -ENOSPC;

	/*
	 * Maps of data segments are there for unwinders that read
	 * .eh_frame_hdr through them (mmap_data, data_maps); the unwinder
	 * has had them, the file's readers unwind nothing: as in a -g file,
	 * they would only cost bytes (most of a file on a busy host).
	 */
	if (h->type == PERF_RECORD_MMAP2 && (h->misc & PERF_RECORD_MISC_MMAP_DATA))
		return 0;
	pthread_mutex_lock(&ho->lock);
	rec = ho->rec;
	if (rec->have_file && rec->cur.w)
		r = perfrec_pdwriter__write(rec->cur.w, h, h->size);
	if (r < 0)
		host_count_refused(ho, h, r);
	pthread_mutex_unlock(&ho->lock);
	return 0;
}

/* @*left taken off the counts of the rings, the first ones first (the ring is not known). */
static void take(uint64_t *count, uint64_t *left)
{
	uint64_t t = *left < *count ? *left : *count;

	*count -= t;
	*left -= t;
}

/*
 * Records the worker could not write, accounted for as the raw path
 * accounts a refused span (refuse_span()): samples become lost, the
 * kernel's LOST counts are not in the file after all, and both wait in
 * pending_dropped (their ring is not known here: the first ring's LOST
 * record reports them); the write error is logged once as any other.
 * Samples the unwinder could not rewrite (bad input, no memory) never
 * reach the file either: lost the same way.  True when writes failed.
 */
bool recorder_host_failures(struct recorder *rec)
{
	struct host_out *ho = rec->host_out;
	struct unwind_sink_stats st;
	uint64_t n, n0, lost, bytes;
	int err;

	if (!ho)
		return false;
	unwind_sink_stats(rec->unwind, &st);
	pthread_mutex_lock(&ho->lock);
	n = ho->failed_samples;
	lost = ho->failed_lost;
	bytes = ho->failed_bytes;
	err = ho->err;
	ho->failed_samples = ho->failed_lost = ho->failed_bytes = 0;
	ho->err = 0;
	pthread_mutex_unlock(&ho->lock);
	n += st.unwinder.dropped - ho->seen_dropped;
	ho->seen_dropped = st.unwinder.dropped;
	n0 = n;
	if (!n && !lost && !bytes)
		return false;
	if (rec->have_file) {
		uint64_t ns = n, nl = lost;

		rec->cur.samples -= n < rec->cur.samples ? n : rec->cur.samples;
		rec->cur.lost -= lost < rec->cur.lost ? lost : rec->cur.lost;
		for (size_t i = 0; i < rec->nr_rings; i++) {
			take(&rec->cur.cpu[i].samples, &ns);
			take(&rec->cur.cpu[i].lost, &nl);
		}
	}
	for (size_t i = 0; i < rec->nr_rings; i++)
		take(&rec->total[i].samples, &n0);
	rec->total[0].lost += n;
	rec->total[0].dropped += n;
	rec->pending_dropped[0] += n + lost;
	rec->dropped_bytes += bytes;
	if (err)
		recorder_note_write(rec, err);
	return bytes != 0;
}

/* The attr of an event by one of its ids (NULL: not ours). */
const struct perf_event_attr *recorder_attr_of(const struct recorder *rec, const struct drain_id *id)
{
	if (!id)
		return NULL;
	for (size_t i = 0; i < perfrec_evlist__nr_evsels(rec->evlist); i++) {
		const struct perfrec_evsel *ev = perfrec_evlist__evsel(rec->evlist, i);

		for (size_t j = 0; j < ev->nr_ids; j++)
			if (ev->ids[j] == id->id)
				return &ev->attr;
	}
	return NULL;
}

/*
 * unwind=host needs the user stacks of callchain=dwarf; it is refused
 * without them rather than implied, as perf refuses options that do not
 * go together: the stack size is a cost the user chooses.  Flight mode
 * writes no file; its history and snapshots keep the raw stacks.
 */
int recorder_open_unwind(struct recorder *rec)
{
	const struct config *c = rec->cfg;
	struct unwind_sink_opts uo = { 0 };
	int r;

	if (!c->unwind_host)
		return 0;
	if (!c->callchain || !c->dwarf)
		return log_error_errno(-EINVAL, "unwind=host unwinds DWARF stacks: it needs callchain=dwarf "
				       "(--call-graph dwarf)");
	if (rec->flight) {
		log_notice("unwind=host: flight mode writes no file; snapshots keep the raw DWARF stacks");
		return 0;
	}
	rec->host_out = calloc(1, sizeof(*rec->host_out));
	if (!rec->host_out)
		return -ENOMEM;
	pthread_mutex_init(&rec->host_out->lock, NULL);
	rec->host_out->rec = rec;
	r = unwind_sink_new(&uo, host_emit, rec->host_out, &rec->unwind);
	if (r < 0)
		return log_error_errno(r, "Cannot start the host unwinder: %s", strerror(-r));
	return 0;
}

/* The side-band event's attr: the synthesized records' trailers are laid out by it. */
const struct perf_event_attr *recorder_sideband_attr(const struct recorder *rec)
{
	for (size_t i = 0; i < perfrec_evlist__nr_evsels(rec->evlist); i++) {
		const struct perfrec_evsel *ev = perfrec_evlist__evsel(rec->evlist, i);

		if (ev->is_sideband)
			return &ev->attr;
	}
	return NULL;
}

bool recorder_unwind_stats(const struct recorder *rec, struct unwind_sink_stats *ret)
{
	if (!rec || !rec->unwind)
		return false;
	unwind_sink_stats(rec->unwind, ret);
	return true;
}
