// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The merge of a walk of Python frames into a callchain (see pymerge.h):
 * which eval frame runs which group of the walk, and the chain with each
 * matched eval frame replaced by its group's frames.
 */
#include <string.h>

#include <linux/perf_event.h>

#include "pymerge.h"

/* Frames of @w that may be read: its count is the walker's, kept within the record. */
static size_t walk_len(const struct pywalk_rec *w)
{
	return w->nr < PYWALK_MAX_FRAMES ? w->nr : PYWALK_MAX_FRAMES;
}

static bool in_eval(uint64_t ip, uint64_t lo, uint64_t hi)
{
	/* a return address may be the byte after a call at the very end */
	return ip >= lo && ip <= hi;
}

/* The walk's groups (innermost first): the index of each one's last frame; how many are whole. */
static size_t split_groups(const struct pywalk_rec *w, uint16_t *ends)
{
	size_t k = 0;

	for (size_t i = 0; i < walk_len(w); i++)
		if (w->frames[i].flags & PYWALK_F_ENTRY)
			ends[k++] = (uint16_t)i;
	return k;
}

/* Pairs of (eval frame's index in the chain, group): -1 where not matched. */
struct match {
	int group_of[PYMERGE_MAX_CHAIN];   /* by chain index */
	uint16_t evals[PYMERGE_MAX_CHAIN]; /* the eval frames' chain indices, innermost first */
	size_t nr_eval, nr_groups, matched;
};

/*
 * Which eval frame runs which group: from the root for a whole walk, from
 * the leaf (only when the sample's ip is in the eval loop) for a cut one.
 */
static void match_groups(const uint64_t *chain, size_t nr, uint64_t lo, uint64_t hi,
			 const struct pywalk_rec *w, size_t k, struct match *m)
{
	uint16_t *evals = m->evals;
	size_t n = 0, user = nr, pairs;
	bool whole = !(w->flags & (PYWALK_TORN | PYWALK_TRUNCATED));

	/* all of them: the scan below stops where the user part ends */
	for (size_t i = 0; i < nr; i++)
		m->group_of[i] = -1;
	for (size_t i = 0; i < nr; i++) {
		if (chain[i] == PERF_CONTEXT_USER && user == nr)
			user = i + 1;
		else if (i >= user && chain[i] >= PERF_CONTEXT_MAX)
			break;
		else if (i >= user && in_eval(chain[i], lo, hi))
			evals[n++] = (uint16_t)i;
	}
	/* frames after the last entry frame belong to a group read only in part */
	if (whole && k && !(w->frames[walk_len(w) - 1].flags & PYWALK_F_ENTRY))
		whole = false;
	m->nr_eval = n;
	m->nr_groups = k;
	pairs = n < k ? n : k;
	if (whole) {
		for (size_t j = 0; j < pairs; j++)
			m->group_of[evals[n - 1 - j]] = (int)(k - 1 - j);
	} else if (n && evals[0] == user) {
		for (size_t j = 0; j < pairs; j++)
			m->group_of[evals[j]] = (int)j;
	} else {
		pairs = 0;
	}
	m->matched = pairs;
}

/* Group @g's frames' addresses into @out (innermost first); 0 if one cannot be named. */
static size_t group_addrs(const struct pywalk_rec *w, const uint16_t *ends, int g,
			  uint64_t (*addr)(void *ctx, const struct pywalk_frame *f), void *ctx, uint64_t *out)
{
	size_t first = g ? ends[g - 1] + 1u : 0, n = 0;

	for (size_t i = first; i <= ends[g]; i++) {
		uint64_t a = addr(ctx, &w->frames[i]);

		if (!a)
			return 0;
		out[n++] = a;
	}
	return n;
}

size_t pymerge_chain(const uint64_t *chain, size_t nr, uint64_t lo, uint64_t hi, const struct pywalk_rec *w,
		     uint64_t (*addr)(void *ctx, const struct pywalk_frame *f), void *ctx, uint64_t *out, bool *ret_partial)
{
	static __thread struct match m;
	uint16_t ends[PYWALK_MAX_FRAMES];
	uint64_t frames[PYWALK_MAX_FRAMES];
	size_t k, n = 0, merged = 0;

	*ret_partial = false;
	if (nr > PYMERGE_MAX_CHAIN || (w->flags & PYWALK_NO_TSTATE) || !walk_len(w))
		return 0;
	k = split_groups(w, ends);
	match_groups(chain, nr, lo, hi, w, k, &m);
	*ret_partial = m.matched < m.nr_eval || m.matched < m.nr_groups ||
		       (w->flags & (PYWALK_TORN | PYWALK_TRUNCATED));
	if (!m.matched)
		return 0;
	for (size_t i = 0; i < nr; i++) {
		size_t g = 0;

		if (m.group_of[i] >= 0)
			g = group_addrs(w, ends, m.group_of[i], addr, ctx, frames);
		if (!g) {
			out[n++] = chain[i];
			continue;
		}
		memcpy(out + n, frames, g * sizeof(*frames));
		n += g;
		merged++;
	}
	if (merged < m.matched)
		*ret_partial = true;
	return merged ? n : 0;
}
