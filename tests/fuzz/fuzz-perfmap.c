// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libFuzzer target for the perf map parser (internal/perfmap.c): a live
 * process writes the map, so any bytes.  Besides no out-of-bounds access
 * under ASan, its promises are checked: the limits hold, every symbol is
 * a non-empty range that does not wrap, every name is a terminated string
 * without control bytes, and the file read in pieces (as it grows) gives
 * exactly what it gives read at once.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "perfmap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct perfmap *m)
{
	if (m->nr_syms > m->lim.max_syms || m->names_len > m->lim.max_name_bytes)
		abort();
	for (size_t i = 0; i < m->nr_syms; i++) {
		const struct perfmap_sym *s = &m->syms[i];
		const char *name = perfmap_sym_name(m, s);
		size_t len;

		if (!s->size || s->size > PERFMAP_SIZE_MAX || s->start + s->size < s->start)
			abort();
		if (s->name >= m->names_len)
			abort();
		len = strnlen(name, m->names_len - s->name);
		if (len == m->names_len - s->name || !len || len > PERFMAP_NAME_MAX)
			abort();
		for (size_t j = 0; j < len; j++)
			if ((unsigned char)name[j] < 0x20 || name[j] == 0x7f)
				abort();
	}
}

static bool same(const struct perfmap *a, const struct perfmap *b)
{
	if (a->nr_syms != b->nr_syms || a->names_len != b->names_len)
		return false;
	if (a->nr_syms && memcmp(a->syms, b->syms, a->nr_syms * sizeof(*a->syms)))
		return false;
	return !a->names_len || !memcmp(a->names, b->names, a->names_len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* small limits, so that the fuzzer reaches them */
	struct perfmap_limits lim = { .max_syms = 64, .max_name_bytes = 4096 };
	struct perfmap whole, pieces;
	size_t step;

	if (!size)
		return 0;
	step = data[0] % 17 + 1;
	data++, size--;
	perfmap_init(&whole, &lim);
	perfmap_init(&pieces, &lim);
	perfmap_feed(&whole, (const char *)data, size);
	for (size_t i = 0; i < size; i += step)
		perfmap_feed(&pieces, (const char *)data + i, size - i < step ? size - i : step);
	check(&whole);
	check(&pieces);
	if (!same(&whole, &pieces) || memcmp(&whole.st, &pieces.st, sizeof(whole.st)))
		abort();
	perfmap_exit(&whole);
	perfmap_exit(&pieces);
	return 0;
}
