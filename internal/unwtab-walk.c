// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The unwinder over unwind tables (internal/unwtab.h): per frame, one call of
 * the caller's @find (which mapping, which row of its table); memory is
 * read only from the sample's stack copy.
 *
 * Where the code has no table (JIT code, anonymous executable memory, a
 * gap between FDEs) the frame-pointer chain is followed, but only while it
 * is consistent: rbp inside the stack copy, at or above the stack pointer,
 * each saved rbp above the last, and every return address in executable
 * memory.  Such frames are marked UNWTAB_FROM_FP.  A row the table could
 * not express ends the walk with UNWTAB_END_NEED_DWFL: the caller decides
 * (libdwfl), this code never guesses.
 */
#include <errno.h>
#include <string.h>

#include "unwtab.h"

struct walk {
	const uint8_t *stack;
	uint64_t base;
	size_t size;
	uint64_t high;   /* the end of the highest read */
	uint64_t missed; /* a read past the copy's end */
};

static bool read_u64(struct walk *w, uint64_t addr, uint64_t *v)
{
	if (addr < w->base || addr - w->base > w->size || w->size - (addr - w->base) < 8) {
		if (addr >= w->base && !w->missed)
			w->missed = addr;
		return false;
	}
	memcpy(v, w->stack + (addr - w->base), 8);
	if (addr + 8 > w->high)
		w->high = addr + 8;
	return true;
}

/* A step: -1 when the walk goes on with @st the caller's registers, else its end. */
#define STEP_OK (-1)

static int step_table(struct walk *w, const struct unwtab_row *row, struct unwtab_regs *st)
{
	uint64_t cfa, ra, bp = st->bp;
	unsigned kind = row->kind & UNWTAB_KIND_MASK;

	switch (kind) {
	case UNWTAB_OUTERMOST:
		return UNWTAB_END_OUTERMOST;
	case UNWTAB_CFA_SP:
		cfa = st->sp + (uint64_t)(int64_t)row->cfa_off;
		break;
	case UNWTAB_CFA_BP:
		if (!st->bp_valid)
			return UNWTAB_END_NO_INFO;
		cfa = st->bp + (uint64_t)(int64_t)row->cfa_off;
		break;
	case UNWTAB_PLT:
		cfa = st->sp + (uint64_t)(int64_t)row->cfa_off + ((st->ip & 15) >= (uint64_t)row->fp_off ? 8 : 0);
		break;
	default:
		return UNWTAB_END_NEED_DWFL;
	}
	/* The CFA is the caller's stack pointer: above ours, or this is not a call. */
	if (cfa <= st->sp)
		return UNWTAB_END_INCONSISTENT;
	if (!read_u64(w, cfa + (uint64_t)(int64_t)row->ra_off, &ra))
		return UNWTAB_END_STACK;
	/*
	 * The caller's rbp where the row says it was saved.  In an epilogue
	 * the rule outlives the pop (compilers note the CFA's moves, not the
	 * registers coming back), so the slot may lie below the stack
	 * pointer, outside the copy: then the caller's rbp is not known, as
	 * libdwfl takes it, and the walk goes on with the return address.
	 */
	if (kind != UNWTAB_PLT && row->fp_off)
		st->bp_valid = read_u64(w, cfa + (uint64_t)(int64_t)row->fp_off, &bp);
	if (row->kind & UNWTAB_FP_UNDEFINED)
		st->bp_valid = false;
	st->bp = bp;
	st->sp = cfa;
	st->ip = ra;
	return STEP_OK;
}

/* Code without a table: rbp points at the saved rbp, the return address above it. */
static int step_fp(struct walk *w, struct unwtab_regs *st)
{
	uint64_t next_bp, ra;

	if (!st->bp_valid || !st->bp)
		return UNWTAB_END_NO_INFO;
	if (st->bp < st->sp || st->bp > UINT64_MAX - 16)
		return UNWTAB_END_INCONSISTENT;
	if (!read_u64(w, st->bp, &next_bp) || !read_u64(w, st->bp + 8, &ra))
		return UNWTAB_END_STACK;
	st->sp = st->bp + 16;
	/* A chain that does not go up is not a chain: the caller's rbp is not known. */
	st->bp_valid = next_bp > st->bp;
	st->bp = next_bp;
	st->ip = ra;
	return STEP_OK;
}

/*
 * One frame up from @st, whose pc @find answered @found and @row for
 * (the ip, or a return address - 1).
 */
static int step(struct walk *w, int found, const struct unwtab_row *row, struct unwtab_regs *st,
		uint8_t *how)
{
	if (found < 0)
		return UNWTAB_END_NO_MAP;
	if (found > 0 && row && (row->kind & UNWTAB_KIND_MASK) != UNWTAB_GAP) {
		*how = UNWTAB_FROM_TABLE;
		return step_table(w, row, st);
	}
	*how = UNWTAB_FROM_FP;
	return step_fp(w, st);
}

int unwtab_unwind_from(const struct unwtab_regs *regs, uint64_t stack_base, bool caller, const void *stack,
		       size_t stack_size, unwtab_find_fn find, void *ctx, struct unwtab_frame *frames,
		       unsigned max_frames, struct unwtab_result *ret)
{
	struct walk w = { .stack = stack, .base = stack_base, .size = stack_size };
	const struct unwtab_row *row = NULL;
	struct unwtab_regs st;
	int end = UNWTAB_END_MAX_FRAMES, found;
	unsigned n = 0;

	if (!regs || !find || !frames || !max_frames || !ret || (stack_size && !stack))
		return -EINVAL;
	st = *regs;
	frames[n++] = (struct unwtab_frame){ .pc = st.ip, .how = UNWTAB_FROM_REGS };
	/*
	 * A caller's pc is after its call: it is looked up at the call, which
	 * may end the function.  Each pc is looked up once: the look-up that
	 * checks a caller's return address lands in code is the one its own
	 * step uses.
	 */
	found = n < max_frames ? find(ctx, caller ? st.ip - 1 : st.ip, &row) : 0;
	while (n < max_frames) {
		struct unwtab_regs next = st;
		uint8_t how;

		end = step(&w, found, row, &next, &how);
		if (end != STEP_OK)
			break;
		if (!next.ip) {
			end = UNWTAB_END_OUTERMOST;
			break;
		}
		found = find(ctx, next.ip - 1, &row);
		if (found < 0) {
			end = UNWTAB_END_NO_MAP;
			break;
		}
		st = next;
		frames[n++] = (struct unwtab_frame){ .pc = st.ip, .how = how };
		end = UNWTAB_END_MAX_FRAMES;
	}
	*ret = (struct unwtab_result){
		.nr_frames = n, .end = (enum unwtab_end)end, .at = st, .high = w.high, .missed = w.missed,
	};
	return 0;
}

int unwtab_unwind(const struct unwtab_regs *regs, const void *stack, size_t stack_size,
		  unwtab_find_fn find, void *ctx, struct unwtab_frame *frames, unsigned max_frames,
		  struct unwtab_result *ret)
{
	return unwtab_unwind_from(regs, regs ? regs->sp : 0, false, stack, stack_size, find, ctx, frames,
				  max_frames, ret);
}
