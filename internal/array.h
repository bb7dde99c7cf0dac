/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Internal: growing an array that is appended to (not exported).  The loop
 * "full? double the capacity, realloc, keep the old one on failure" was
 * written by hand at each array; this is it once, with the overflow check
 * the copies left out.
 */
#ifndef PERFREC_ARRAY_H
#define PERFREC_ARRAY_H

#include <stddef.h>

/*
 * Make room for @need elements of @size bytes in *@arrayp, which has room
 * for *@capp now.  When @need is more, the array is reallocated to room for
 * the larger of @need, twice *@capp and @min, and *@capp says so.  0, or
 * -ENOMEM (also when the size in bytes would overflow) with *@arrayp and
 * *@capp unchanged, the array still valid.
 */
int array_reserve(void **arrayp, size_t *capp, size_t need, size_t size, size_t min);

/* array_reserve() for a typed pointer @array and its size_t capacity @cap. */
#define ARRAY_RESERVE(array, cap, need, min) \
	array_reserve((void **)&(array), &(cap), (need), sizeof(*(array)), (min))

#endif
