// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Every file starts with the kernel's maps, which perfrec_synth__kernel
 * finds by reading all of /proc/kallsyms: 100k+ lines that the kernel
 * formats one by one.  Done after the events are enabled, as each file's
 * synthesis is, that read is sampled at the full rate with callchains (its
 * CPU cost grows several times over at 50 kHz) and on a busy host takes
 * long enough for the rings to overflow before the first drain.  The
 * kernel's maps do not change while it runs, except when a module is
 * loaded or unloaded; so they are read once before the events are enabled
 * and replayed into each file with the file's start time in their
 * sample_id trailer, and read again only when /proc/modules (a few lines)
 * has changed.  The daemon has one thread; the cache is process-wide.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <perfrec/event.h>

#include "kcache.h"

static struct {
	bool valid;
	int result;           /* what perfrec_synth__kernel returned */
	uint64_t sample_type, id;
	uint64_t modules;     /* hash of /proc/modules when read */
	unsigned char *buf;
	size_t len, cap;
} kc;

/* FNV-1a of /proc/modules; 0 when it cannot be read (no modules support). */
static uint64_t modules_hash(void)
{
	uint64_t h = 1469598103934665603ULL;
	char buf[4096];
	ssize_t n;
	int fd = open("/proc/modules", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		for (ssize_t i = 0; i < n; i++)
			h = (h ^ (unsigned char)buf[i]) * 1099511628211ULL;
	close(fd);
	return h;
}

static int append(void *ctx, const struct perf_event_header *h)
{
	(void)ctx;
	if (h->size > kc.cap - kc.len) {
		size_t cap = kc.cap ? kc.cap : 16384;
		unsigned char *p;

		while (h->size > cap - kc.len)
			cap *= 2;
		p = realloc(kc.buf, cap);
		if (!p)
			return -ENOMEM;
		kc.buf = p;
		kc.cap = cap;
	}
	memcpy(kc.buf + kc.len, h, h->size);
	kc.len += h->size;
	return 0;
}

void kcache_fill(const struct perfrec_synth_opts *so)
{
	uint64_t modules = modules_hash();

	/* Resuming after a pause (control, governor) enables again: keep a good cache. */
	if (kc.valid && kc.sample_type == so->sample_type && kc.id == so->id && kc.modules == modules)
		return;
	kc.valid = false;
	kc.len = 0;
	kc.modules = modules;
	kc.result = perfrec_synth__kernel(so, append, NULL);
	if (kc.result < 0 && kc.result != -EPERM)
		return; /* kcache_emit will synthesize directly and report it */
	kc.sample_type = so->sample_type;
	kc.id = so->id;
	kc.valid = true;
}

int kcache_emit(const struct perfrec_synth_opts *so, perfrec_synth_emit_fn emit, void *ctx)
{
	size_t tsize = perfrec_sample_id__size(so->sample_type);
	unsigned char rec[65536];

	if (!kc.valid || kc.sample_type != so->sample_type || kc.id != so->id ||
	    kc.modules != modules_hash())
		return perfrec_synth__kernel(so, emit, ctx);
	for (size_t off = 0; off < kc.len; ) {
		const struct perf_event_header *h = (const void *)(kc.buf + off);
		struct perfrec_sample_id sid;
		int r;

		memcpy(rec, h, h->size);
		off += h->size;
		/* The file's start time, as if synthesized for this file now. */
		if ((so->sample_type & PERF_SAMPLE_TIME) && h->type < PERF_RECORD_MAX && h->size >= sizeof(*h) + tsize &&
		    perfrec_sample_id__parse((const void *)rec, so->sample_type, &sid) == 0) {
			sid.time = so->time;
			perfrec_sample_id__write(rec + h->size - tsize, so->sample_type, &sid);
		}
		r = emit(ctx, (const void *)rec);
		if (r < 0)
			return r;
	}
	return kc.result;
}

void kcache_clear(void)
{
	free(kc.buf);
	memset(&kc, 0, sizeof(kc));
}
