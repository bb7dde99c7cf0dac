// SPDX-License-Identifier: LGPL-2.1-or-later
/* Growing an appended-to array (see array.h). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "array.h"

int array_reserve(void **arrayp, size_t *capp, size_t need, size_t size, size_t min)
{
	size_t cap = *capp;
	void *p;

	if (need <= cap)
		return 0;
	/* Doubling keeps appending n elements O(n) in copies overall. */
	cap = cap > SIZE_MAX / 2 ? SIZE_MAX : cap * 2;
	if (cap < min)
		cap = min;
	if (cap < need)
		cap = need;
	if (size && cap > SIZE_MAX / size)
		return -ENOMEM;
	p = realloc(*arrayp, cap * size);
	if (!p)
		return -ENOMEM;
	*arrayp = p;
	*capp = cap;
	return 0;
}
