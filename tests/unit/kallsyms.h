/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * For unit tests that compare with the running kernel: look a symbol up in
 * the real /proc/kallsyms by a full scan, as perf does.
 */
#ifndef PERFREC_TEST_KALLSYMS_H
#define PERFREC_TEST_KALLSYMS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Is @name a symbol of kallsyms?  Its first address in @ret_addr (if given; 0 when hidden). */
static inline bool test_kallsyms_find(const char *name, uint64_t *ret_addr)
{
	char line[1024], sym[512];
	unsigned long long a;
	bool found = false;
	char type;
	FILE *f = fopen("/proc/kallsyms", "re");

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "%llx %c %511s", &a, &type, sym) == 3 && !strcmp(sym, name);
	fclose(f);
	if (found && ret_addr)
		*ret_addr = a;
	return found;
}

/* The first address of @name in kallsyms, 0 when it is missing or hidden. */
static inline uint64_t test_kallsyms_addr(const char *name)
{
	uint64_t addr = 0;

	test_kallsyms_find(name, &addr);
	return addr;
}

#endif
