// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libFuzzer target for the merge of a walk of Python frames into a
 * callchain (internal/pymerge.c): a walk is what a BPF program read of a
 * process's memory, a chain what an unwinder made of its stack, so any
 * values.  Besides no out-of-bounds access under ASan, its promises are
 * checked: the chain grows by at most a walk's frames, and what is not a
 * Python frame is the input chain, in order, less only eval frames.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <linux/perf_event.h>

#include "pymerge.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define LO 0x1000
#define HI 0x1fff
#define PY_BASE 0x0200000000000000ull

/* Every seventh code object cannot be named. */
static uint64_t addr(void *ctx, const struct pywalk_frame *f)
{
	(void)ctx;
	return f->code % 7 ? PY_BASE | (f->code & 0xffff) : 0;
}

/* A chain entry of one byte: eval frames, natives, context markers. */
static uint64_t entry(uint8_t b)
{
	switch (b >> 6) {
	case 0: return LO + (b & 0x3f) * 64;     /* in the eval loop (HI + 1 included: 0x2000 at 64) */
	case 1: return 0x400000 + b;
	case 2: return b & 1 ? PERF_CONTEXT_USER : PERF_CONTEXT_KERNEL;
	default: return (b & 1) ? (uint64_t)-4095 + (b & 7) : 0xffffffff81000000ull + b;
	}
}

static bool is_py(uint64_t a)
{
	return a >> 56 == PY_BASE >> 56;
}

/*
 * The native entries of @out are @chain's, in order, less eval frames
 * only; at least one Python frame stands for each eval frame left out.
 */
static void check(const uint64_t *chain, size_t nr, const uint64_t *out, size_t n, const struct pywalk_rec *w)
{
	size_t j = 0, py = 0, gone = 0;

	if (n > nr + w->nr)
		abort();
	for (size_t i = 0; i < nr; i++) {
		while (j < n && is_py(out[j])) {
			j++;
			py++;
		}
		if (j < n && out[j] == chain[i]) {
			j++;
			continue;
		}
		if (chain[i] < LO || chain[i] > HI + 1)
			abort();
		gone++;
	}
	while (j < n && is_py(out[j])) {
		j++;
		py++;
	}
	if (j != n || !gone || py < gone)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct pywalk_rec w;
	static uint64_t chain[512], out[512 + PYWALK_MAX_FRAMES];
	size_t nr, n;
	bool partial;

	if (size < 4)
		return 0;
	memset(&w, 0, sizeof(w));
	w.flags = data[0] & 7;
	/* the count as the record says, frames as many as there are bytes */
	w.nr = (uint16_t)(data[1] | (data[2] & 1) << 8);
	nr = data[3] % 200;
	data += 4, size -= 4;
	for (size_t i = 0; i < PYWALK_MAX_FRAMES && i < size / 2; i++) {
		w.frames[i].code = 0x10000 + data[2 * i];
		w.frames[i].flags = data[2 * i + 1] & 1;
	}
	if (nr > size)
		nr = size;
	for (size_t i = 0; i < nr; i++)
		chain[i] = entry(data[size - 1 - i]);
	n = pymerge_chain(chain, nr, LO, HI, &w, addr, NULL, out, &partial);
	if (n) {
		struct pywalk_rec bounded = w;

		bounded.nr = w.nr < PYWALK_MAX_FRAMES ? w.nr : PYWALK_MAX_FRAMES;
		check(chain, nr, out, n, &bounded);
	}
	return 0;
}
