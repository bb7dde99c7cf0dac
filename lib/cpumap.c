// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * CPU lists in the kernel's syntax ("0-3,8,10-11"), as found in
 * /sys/devices/system/cpu/online and friends.  perfrecd opens its events on
 * every CPU of such a list, so parsing is strict: anything the kernel would
 * not write (reversed ranges, empty items, huge numbers) is rejected rather
 * than guessed at.  The resulting map is sorted and free of duplicates.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <perfrec/cpumap.h>

/* Far above any real machine; keeps a typo from allocating gigabytes. */
#define CPU_LIMIT 65536

#define ONLINE_PATH "/sys/devices/system/cpu/online"

static const char *skip_space(const char *p)
{
	while (*p && isspace((unsigned char)*p))
		p++;
	return p;
}

/* One decimal CPU number; leaves *pp after it.  No sign, no hex. */
static int parse_cpu(const char **pp, int *ret_cpu)
{
	const char *p = skip_space(*pp);
	long v = 0;

	if (!isdigit((unsigned char)*p))
		return -EINVAL;
	while (isdigit((unsigned char)*p)) {
		v = v * 10 + (*p - '0');
		if (v >= CPU_LIMIT)
			return -EINVAL;
		p++;
	}
	*pp = skip_space(p);
	*ret_cpu = (int)v;
	return 0;
}

int perfrec_cpumap__parse(const char *list, struct perfrec_cpumap **ret_map)
{
	/* A bitmap of seen CPUs makes dedup free and bounds the work. */
	unsigned char *seen = NULL;
	struct perfrec_cpumap *map = NULL;
	const char *p;
	int nr = 0, lo, hi, r, i;

	if (!list || !ret_map)
		return -EINVAL;
	p = skip_space(list);
	if (!*p)
		return -EINVAL;

	seen = calloc(CPU_LIMIT / 8, 1);
	if (!seen)
		return -ENOMEM;

	for (;;) {
		r = parse_cpu(&p, &lo);
		if (r < 0)
			goto out;
		hi = lo;
		if (*p == '-') {
			p++;
			r = parse_cpu(&p, &hi);
			if (r < 0)
				goto out;
			if (hi < lo) {
				r = -EINVAL;
				goto out;
			}
		}
		for (i = lo; i <= hi; i++) {
			if (!(seen[i / 8] & (1u << (i % 8)))) {
				seen[i / 8] |= 1u << (i % 8);
				nr++;
			}
		}
		if (*p == '\0')
			break;
		if (*p != ',') {
			r = -EINVAL;
			goto out;
		}
		p++;
	}

	map = malloc(sizeof(*map) + (size_t)nr * sizeof(map->cpus[0]));
	if (!map) {
		r = -ENOMEM;
		goto out;
	}
	map->nr = 0;
	/* Walking the bitmap yields the CPUs ascending and deduplicated. */
	for (i = 0; i < CPU_LIMIT; i++)
		if (seen[i / 8] & (1u << (i % 8)))
			map->cpus[map->nr++] = i;
	*ret_map = map;
	r = 0;
out:
	free(seen);
	return r;
}

int perfrec_cpumap__read(const char *path, struct perfrec_cpumap **ret_map)
{
	char buf[4096];
	size_t off = 0;
	ssize_t n;
	int fd, r;

	if (!ret_map)
		return -EINVAL;
	fd = open(path ? path : ONLINE_PATH, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* sysfs hands out the whole list in one read, but loop to be safe. */
	while (off < sizeof(buf) - 1) {
		n = read(fd, buf + off, sizeof(buf) - 1 - off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			close(fd);
			return r;
		}
		if (n == 0)
			break;
		off += (size_t)n;
	}
	close(fd);
	if (off == sizeof(buf) - 1)
		return -EFBIG;
	buf[off] = '\0';
	return perfrec_cpumap__parse(buf, ret_map);
}

int perfrec_cpumap__format(const struct perfrec_cpumap *map, char *buf, size_t len)
{
	size_t used = 0;
	int i = 0, n;

	if (!map || !buf || len == 0)
		return -EINVAL;
	buf[0] = '\0';
	while (i < map->nr) {
		int lo = map->cpus[i], hi = lo;

		while (i + 1 < map->nr && map->cpus[i + 1] == hi + 1)
			hi = map->cpus[++i];
		i++;
		if (lo == hi)
			n = snprintf(buf + used, len - used, "%s%d", used ? "," : "", lo);
		else
			n = snprintf(buf + used, len - used, "%s%d-%d", used ? "," : "", lo, hi);
		if (n < 0 || (size_t)n >= len - used) {
			buf[0] = '\0';
			return -ENOSPC;
		}
		used += (size_t)n;
	}
	return (int)used;
}

void perfrec_cpumap__free(struct perfrec_cpumap *map)
{
	free(map);
}
