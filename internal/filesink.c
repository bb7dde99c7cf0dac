// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The file sink (see filesink.h).  A span of a ring's records is counted
 * record by record as the drain walks it, then written, or refused, whole:
 * the ring's mark says where the counts stood at its start, so a refused
 * span takes back exactly its own samples and LOST counts.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <perfrec/event.h>
#include <perfrec/evlist.h>
#include <perfrec/pdwriter.h>

#include "drain.h"
#include "filesink.h"

static const struct sink_ops filesink_ops;

static struct filesink_file *cur_file(const struct filesink *fs)
{
	return fs->file && fs->file->w ? fs->file : NULL;
}

static int wrote(struct filesink *fs, int err)
{
	const struct filesink_hooks *h = fs->opts.hooks;

	return h && h->wrote ? h->wrote(fs->opts.hooks_ctx, err) : err;
}

int filesink_init(struct filesink *fs, const struct filesink_opts *opts)
{
	memset(fs, 0, sizeof(*fs));
	if (!opts || opts->sz < sizeof(*opts))
		return -EINVAL;
	fs->opts = *opts;
	fs->nr_rings = opts->evlist ? perfrec_evlist__nr_rings(opts->evlist) : opts->nr_rings;
	fs->sink = (struct sink){ .ops = &filesink_ops, .ctx = fs };
	fs->total = calloc(fs->nr_rings, sizeof(*fs->total));
	fs->marks = calloc(fs->nr_rings, sizeof(*fs->marks));
	fs->pending_dropped = calloc(fs->nr_rings, sizeof(*fs->pending_dropped));
	if (!fs->total || !fs->marks || !fs->pending_dropped) {
		filesink_exit(fs);
		return -ENOMEM;
	}
	return 0;
}

void filesink_exit(struct filesink *fs)
{
	if (!fs)
		return;
	free(fs->total);
	free(fs->marks);
	free(fs->pending_dropped);
	fs->total = NULL;
	fs->marks = NULL;
	fs->pending_dropped = NULL;
}

void filesink_moved(struct filesink *fs)
{
	fs->sink.ctx = fs;
}

int filesink_take_err(struct filesink *fs)
{
	int e = fs->pass_err;

	fs->pass_err = 0;
	return e;
}

/* Samples and the kernel's losses into the totals and the file's counts. */
static void filesink_record(struct sink *s, struct drain_rec *r)
{
	struct filesink *fs = s->ctx;
	struct filesink_file *f = cur_file(fs);
	struct filesink_counts *t = &fs->total[r->ring];
	const struct perf_event_header *h = r->h;

	switch (h->type) {
	case PERF_RECORD_SAMPLE:
		if (!r->sample_ok)
			return;
		t->samples++;
		if (r->pid)
			fs->busy_samples++;
		if (!f)
			return;
		if (f->cpu)
			f->cpu[r->ring].samples++;
		f->samples++;
		track_sample(&f->track, h, r->pid, r->time);
		break;
	case PERF_RECORD_MMAP2:
	case PERF_RECORD_EXIT:
		track_sideband(&fs->track, h);
		break;
	case PERF_RECORD_LOST:
	case PERF_RECORD_LOST_SAMPLES: {
		/* LOST: records the kernel dropped; LOST_SAMPLES: samples it could not make */
		bool records = h->type == PERF_RECORD_LOST;

		*(records ? &t->lost : &t->lost_samples) += r->lost;
		if (!f)
			break;
		if (f->cpu)
			*(records ? &f->cpu[r->ring].lost : &f->cpu[r->ring].lost_samples) += r->lost;
		f->lost += r->lost;
		break;
	}
	default:
		break;
	}
}

static struct span_mark span_mark(const struct filesink *fs, size_t ring)
{
	const struct filesink_counts *t = &fs->total[ring];

	return (struct span_mark){ t->samples, t->lost, t->lost_samples };
}

/*
 * The output refused a span of ring @ring's records that filesink_record()
 * counted since the ring's mark: its samples become lost, in the file's
 * counts and the totals, and the kernel's LOST/LOST_SAMPLES in it, counted
 * into the file, are not in the file after all.  All of them wait in
 * pending_dropped for a PERF_RECORD_LOST in the next file write that
 * succeeds (filesink_report_dropped()).
 */
static void refuse_span(struct filesink *fs, size_t ring)
{
	const struct span_mark *m = &fs->marks[ring];
	struct filesink_counts *t = &fs->total[ring];
	struct filesink_file *f = cur_file(fs);
	uint64_t n = t->samples - m->samples;
	uint64_t dl = t->lost - m->lost, dls = t->lost_samples - m->lost_samples;

	if (f) {
		if (f->cpu) {
			f->cpu[ring].samples -= n;
			f->cpu[ring].lost -= dl;
			f->cpu[ring].lost_samples -= dls;
		}
		f->samples -= n;
		f->lost -= dl + dls;
	}
	t->samples -= n;
	t->lost += n;
	t->dropped += n;
	fs->pending_dropped[ring] += n + dl + dls;
}

/*
 * The bytes of ring @ring's records counted since its mark, into the
 * file.  Without a file, or refused by the owner, they are refused as a
 * full disk would refuse them: the rings keep flowing, the loss is counted.
 */
static int filesink_write(struct sink *s, size_t ring, const struct iovec *iov, int n, uint64_t bytes)
{
	struct filesink *fs = s->ctx;
	const struct filesink_hooks *h = fs->opts.hooks;
	struct filesink_file *f = cur_file(fs);
	int r = 0;

	if (fs->opts.count_only)
		fs->total[ring].bytes += bytes;
	else if (!f)
		r = -ENOSPC;
	else if (h && h->admit)
		r = h->admit(fs->opts.hooks_ctx);
	if (r == 0 && f && !fs->opts.count_only)
		r = wrote(fs, perfrec_pdwriter__writev(f->w, iov, n));
	if (r < 0) {
		fs->dropped_bytes += bytes;
		refuse_span(fs, ring);
		if (f)
			fs->pass_err = r;
	} else if (!fs->opts.count_only) {
		if (f->cpu)
			f->cpu[ring].bytes += bytes;
		f->bytes += bytes;
		fs->total[ring].bytes += bytes;
		fs->pass_written += bytes;
	}
	fs->marks[ring] = span_mark(fs, ring);
	return r;
}

static void filesink_corrupt(struct sink *s, size_t ring)
{
	struct filesink *fs = s->ctx;
	struct filesink_file *f = cur_file(fs);

	if (f && f->cpu)
		f->cpu[ring].corrupt++;
	fs->total[ring].corrupt++;
}

/*
 * After each pass that wrote something: FINISHED_ROUND, and once a whole
 * pass is in the file, the samples refused before as lost.
 */
static void filesink_round(struct sink *s, uint64_t bytes)
{
	static const struct perf_event_header round = {
		.type = PERFREC_RECORD_FINISHED_ROUND, .size = sizeof(round),
	};
	struct filesink *fs = s->ctx;
	struct filesink_file *f = cur_file(fs);

	(void)bytes;
	if (!fs->pass_written || !f)
		return;
	fs->pass_written = 0;
	if (wrote(fs, perfrec_pdwriter__write(f->w, &round, sizeof(round))) == 0 && fs->pass_err == 0)
		filesink_report_dropped(fs);
}

static const struct sink_ops filesink_ops = {
	.record = filesink_record, .write = filesink_write, .corrupt = filesink_corrupt,
	.round = filesink_round,
};

static uint64_t clock_now(int clockid)
{
	struct timespec ts;

	/* "perf" clock (-1) is the kernel's local_clock, close to MONOTONIC. */
	clock_gettime(clockid < 0 ? CLOCK_MONOTONIC : clockid, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
}

/*
 * Samples refused, reported in the file once it takes writes again: one
 * PERF_RECORD_LOST per ring, attributed to the ring's side-band event (so
 * perf report's "lost" and --stats count them), stamped now.
 */
void filesink_report_dropped(struct filesink *fs)
{
	const struct filesink_opts *o = &fs->opts;
	size_t tlen = perfrec_sample_id__size(o->sideband_sample_type);
	_Alignas(8) unsigned char buf[sizeof(struct perf_event_header) + 16 + 64];
	struct filesink_file *f = cur_file(fs);
	uint64_t total = 0;

	if (!f || tlen > 64)
		return;
	for (size_t i = 0; i < fs->nr_rings; i++) {
		struct perf_event_header h = { .type = PERF_RECORD_LOST, .size = (uint16_t)(sizeof(h) + 16 + tlen) };
		struct perfrec_sample_id sid = {
			.pid = (uint32_t)-1, .tid = (uint32_t)-1, .time = clock_now(o->clockid),
			.cpu = o->evlist ? (uint32_t)perfrec_evlist__ring_cpu(o->evlist, i) : (uint32_t)i,
		};
		uint64_t n = fs->pending_dropped[i];

		if (!n)
			continue;
		sid.id = sid.stream_id = o->sideband_ids ? o->sideband_ids[i] : o->sideband_id;
		memcpy(buf, &h, sizeof(h));
		memcpy(buf + sizeof(h), &sid.id, 8);
		memcpy(buf + sizeof(h) + 8, &n, 8);
		perfrec_sample_id__write(buf + sizeof(h) + 16, o->sideband_sample_type, &sid);
		if (perfrec_pdwriter__write(f->w, buf, h.size) < 0)
			return;
		if (f->cpu) {
			f->cpu[i].lost += n;
			f->cpu[i].dropped += n;
		}
		f->lost += n;
		f->dropped += n;
		fs->pending_dropped[i] = 0;
		total += n;
	}
	if (total && o->hooks && o->hooks->reported)
		o->hooks->reported(o->hooks_ctx, total);
}

/* The ring's span mark moves with the totals: these are no part of a span not yet written. */
void filesink_lose(struct filesink *fs, size_t ring, uint64_t samples)
{
	fs->total[ring].lost += samples;
	fs->total[ring].dropped += samples;
	fs->marks[ring].lost += samples;
	fs->pending_dropped[ring] += samples;
}

/*
 * @f's samples are lost after all, as a refused span's, and reported in
 * the next file; the marks move with the totals, as in filesink_lose().
 */
void filesink_lose_file(struct filesink *fs, const struct filesink_file *f)
{
	for (size_t i = 0; f->cpu && i < fs->nr_rings; i++) {
		const struct filesink_counts *c = &f->cpu[i];
		struct filesink_counts *t = &fs->total[i];

		t->samples -= c->samples;
		t->lost += c->samples;
		t->dropped += c->samples;
		fs->marks[i].samples -= c->samples;
		fs->marks[i].lost += c->samples;
		fs->pending_dropped[i] += c->samples + c->lost + c->lost_samples;
	}
	fs->dropped_bytes += f->bytes;
}
