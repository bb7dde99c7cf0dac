// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libFuzzer target for the PERFILE2 reader: every input is opened in normal
 * and in salvage mode, verified, its records iterated and its samples parsed
 * against their attrs, and its features decoded, so any out-of-bounds read or
 * unbounded allocation on hostile files shows up under ASan.
 */
#include <stddef.h>
#include <stdint.h>

#include <perfrec/event.h>
#include <perfrec/pdreader.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void exercise(const uint8_t *data, size_t size, bool salvage)
{
	struct perfrec_pdreader_opts opts = { .sz = sizeof(opts), .salvage = salvage };
	const struct perf_event_header *rec;
	struct perfrec_pdreader *r;
	char text[256];
	uint64_t off;
	int n = 0;

	if (perfrec_pdreader__open_mem(data, size, &opts, &r) < 0)
		return;
	perfrec_pdreader__verify(r);
	perfrec_pdreader__error(r, &off);
	for (int f = 0; f < PERFREC_FEAT_BITS; f++)
		perfrec_pdreader__feature_text(r, f, text, sizeof(text));
	perfrec_pdreader__rewind(r);
	while (perfrec_pdreader__next(r, &rec, &off) > 0 && n++ < 100000) {
		const struct perfrec_pdreader_attr *a = perfrec_pdreader__attr(r, 0);
		struct perfrec_sample s;
		uint64_t id;

		if (perfrec_event__identifier(rec, &id) == 0 && perfrec_pdreader__attr_by_id(r, id))
			a = perfrec_pdreader__attr_by_id(r, id);
		if (a && rec->type == PERF_RECORD_SAMPLE)
			perfrec_sample__parse_attr(rec, &a->attr, &s);
	}
	perfrec_pdreader__free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	exercise(data, size, false);
	exercise(data, size, true);
	return 0;
}
