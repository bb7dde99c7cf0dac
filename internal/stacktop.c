// SPDX-License-Identifier: LGPL-2.1-or-later
/* Threads' stack tops for the drain (stacktop.h). */
#include "stacktop.h"

static struct stacktop_slot *slot_of(struct stacktops *t, uint32_t tid)
{
	return &t->slot[stacktop_index(tid)];
}

void stacktops_forget(struct stacktops *t, uint32_t tid)
{
	struct stacktop_slot *s = slot_of(t, tid);

	*s = (struct stacktop_slot){ .tid = tid, .top = 0, .forgotten = ++t->seq };
}

void stacktops_learn(struct stacktops *t, uint32_t tid, uint64_t top, uint64_t seq)
{
	struct stacktop_slot *s = slot_of(t, tid);

	/* Forgotten after the sample was queued: maybe another thread's now. */
	if (!top || s->forgotten > seq)
		return;
	if (s->tid != tid || !s->top) {
		s->tid = tid;
		s->top = top;
	} else if (top > s->top) {
		s->top = top;
	}
}

uint64_t stacktops_top(const struct stacktops *t, uint32_t tid)
{
	const struct stacktop_slot *s = slot_of((struct stacktops *)t, tid);

	return s->tid == tid ? s->top : 0;
}

uint64_t stacktops_keep(uint64_t top, uint64_t sp, uint64_t len)
{
	uint64_t keep;

	if (!top || top <= sp || top - sp > len)
		return 0;
	keep = ((top - sp + 7) & ~(uint64_t)7) + STACKTOP_SLACK;
	return keep < len ? keep : 0;
}
