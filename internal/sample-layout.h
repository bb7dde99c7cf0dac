/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Where the fields a drain needs sit in a PERF_RECORD_SAMPLE, worked out
 * once per (sample_type, read_format) instead of walking every sample
 * (lib/event.c).  Private to perfrecd and libperfrec: a drain looks inside
 * a sample only at these offsets, the rest of it is a byte copy.
 *
 * Every reader here accepts and rejects exactly the records
 * perfrec_sample__parse() does (tests/unit/test-event-layout.c checks it
 * for random layouts and records); a layout this cannot describe with
 * fixed offsets (PERF_FORMAT_GROUP reads, RAW before the tail) falls back
 * to that parse.
 */
#ifndef PERFREC_SAMPLE_LAYOUT_H
#define PERFREC_SAMPLE_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <perfrec/event.h>

struct sample_layout {
	uint64_t sample_type, read_format;
	/* byte offsets from the record's start, 0 when the field is absent */
	uint32_t pid_off, time_off, chain_off;
	/*
	 * Bytes the record needs: up to the callchain's nr (or the end of
	 * the fixed fields without one), and after the chain's entries the
	 * fixed fields parse() also requires.
	 */
	uint32_t head_len, tail_len;
	bool fixed; /* false: the offsets above are not fixed, use parse() */
};

void sample_layout_init(struct sample_layout *l, uint64_t sample_type, uint64_t read_format);

/*
 * The callchain of @h (nr entries at *ret_chain, unaligned reads only),
 * when the record is whole as perfrec_sample__parse() sees it.  Returns
 * 0, -ENOENT without PERF_SAMPLE_CALLCHAIN, -EINVAL for a short record.
 */
int sample_layout_chain(const struct sample_layout *l, const struct perf_event_header *h,
			const uint64_t **ret_chain, uint64_t *ret_nr);

/* perfrec_sample__end_user_chain() for a record laid out as @l. */
size_t sample_layout_end_user_chain(const struct sample_layout *l, const struct perf_event_header *h,
				    void *buf, size_t bufsz);

#endif
