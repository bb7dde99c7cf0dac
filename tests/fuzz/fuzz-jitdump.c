// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libFuzzer target for the jitdump parser (internal/perfmap.c): a live
 * process writes the dump, so any bytes.  Besides no out-of-bounds access
 * under ASan, its promises are checked: the limits hold, every symbol is
 * a non-empty range that does not wrap with a terminated name without
 * control bytes, the buffer holds no more than a record's fixed part and
 * a name, and the dump read in pieces (as it grows) gives exactly what it
 * gives read at once.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "perfmap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct perfmap *m)
{
	if (m->nr_syms > m->lim.max_syms || m->names_len > m->lim.max_name_bytes || m->line_len > 56 + PERFMAP_NAME_MAX + 1)
		abort();
	for (size_t i = 0; i < m->nr_syms; i++) {
		const struct perfmap_sym *s = &m->syms[i];
		const char *name = perfmap_sym_name(m, s);
		size_t len;

		if (!s->size || s->size > PERFMAP_SIZE_MAX || s->start + s->size < s->start || s->name >= m->names_len)
			abort();
		len = strnlen(name, m->names_len - s->name);
		if (len == m->names_len - s->name || !len || len > PERFMAP_NAME_MAX)
			abort();
		for (size_t j = 0; j < len; j++)
			if ((unsigned char)name[j] < 0x20 || name[j] == 0x7f)
				abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct perfmap_limits lim = { .max_syms = 64, .max_name_bytes = 4096 };
	/* the magic and a sane header size given, so the fuzzer reaches the records */
	static const uint8_t head[12] = { 0x44, 0x54, 0x69, 0x4a, 1, 0, 0, 0, 40, 0, 0, 0 };
	struct perfmap whole, pieces;
	size_t step;

	if (!size)
		return 0;
	step = data[0] % 23 + 1;
	data++, size--;
	perfmap_init(&whole, &lim);
	perfmap_init(&pieces, &lim);
	if (size && (data[0] & 1)) {
		perfmap_feed_jitdump(&whole, head, sizeof(head));
		perfmap_feed_jitdump(&pieces, head, sizeof(head));
	}
	perfmap_feed_jitdump(&whole, data, size);
	for (size_t i = 0; i < size; i += step)
		perfmap_feed_jitdump(&pieces, data + i, size - i < step ? size - i : step);
	check(&whole);
	check(&pieces);
	if (whole.nr_syms != pieces.nr_syms || whole.names_len != pieces.names_len ||
	    (whole.nr_syms && memcmp(whole.syms, pieces.syms, whole.nr_syms * sizeof(*whole.syms))) ||
	    (whole.names_len && memcmp(whole.names, pieces.names, whole.names_len)) ||
	    memcmp(&whole.st, &pieces.st, sizeof(whole.st)) || whole.jd_bad != pieces.jd_bad)
		abort();
	perfmap_exit(&whole);
	perfmap_exit(&pieces);
	return 0;
}
