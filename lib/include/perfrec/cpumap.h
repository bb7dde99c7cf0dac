/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CPU lists: parse the kernel's list syntax ("0-3,8,10-11") and read the
 * online CPUs from sysfs.
 */
#ifndef PERFREC_CPUMAP_H
#define PERFREC_CPUMAP_H

#include <perfrec/common.h>

struct perfrec_cpumap {
	int nr;
	int cpus[]; /* ascending, no duplicates */
};

/*
 * Parse a CPU list such as "0-3,8,10-11" (whitespace and a trailing newline
 * allowed).  Returns 0 and a heap map the caller frees with
 * perfrec_cpumap__free(), or -EINVAL on a malformed list (empty, reversed
 * range, garbage, CPU >= 65536), -ENOMEM.
 */
PERFREC_API int perfrec_cpumap__parse(const char *list, struct perfrec_cpumap **ret_map);

/* Read @path (a sysfs cpu list file; NULL: /sys/devices/system/cpu/online). */
PERFREC_API int perfrec_cpumap__read(const char *path, struct perfrec_cpumap **ret_map);

/* Format @map back into list syntax into @buf; returns length or -ENOSPC. */
PERFREC_API int perfrec_cpumap__format(const struct perfrec_cpumap *map, char *buf, size_t len);

/* Free a map from __parse() or __read(); NULL is fine. */
PERFREC_API void perfrec_cpumap__free(struct perfrec_cpumap *map);

#endif
