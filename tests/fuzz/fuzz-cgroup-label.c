// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libFuzzer target for the cgroup path labeller (internal/cgroup-label.c): the
 * paths come from files, so any bytes.  Besides no out-of-bounds access
 * under ASan, its promises are checked: every label is a terminated
 * string in its buffer, a pod UID is written with '-' only, and each label
 * the path yields selects that path again (the views' --container, --pod
 * and --unit find what ls and pprof show).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup-label.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void terminated(const char *s, size_t sz)
{
	if (!memchr(s, '\0', sz))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *path = malloc(size + 1);
	struct cgroup_label l;

	if (!path)
		return 0;
	memcpy(path, data, size);
	path[size] = '\0';
	cgroup_label_parse(path, &l);
	terminated(l.runtime, sizeof(l.runtime));
	terminated(l.container, sizeof(l.container));
	terminated(l.pod, sizeof(l.pod));
	terminated(l.qos, sizeof(l.qos));
	terminated(l.unit, sizeof(l.unit));
	terminated(l.slice, sizeof(l.slice));
	if (strchr(l.pod, '_'))
		abort();
	if (l.container[0] && !cgroup_select_matches(&(struct cgroup_select){ .container = l.container }, path, &l))
		abort();
	if (l.pod[0] && !cgroup_select_matches(&(struct cgroup_select){ .pod = l.pod }, path, &l))
		abort();
	/* a unit cut to the buffer is no longer a component of the path */
	if (l.unit[0] && strlen(l.unit) < CGROUP_NAME_MAX - 1 &&
	    !cgroup_select_matches(&(struct cgroup_select){ .unit = l.unit }, path, &l))
		abort();
	if (l.slice[0] && strlen(l.slice) < CGROUP_NAME_MAX - 1 &&
	    !cgroup_select_matches(&(struct cgroup_select){ .unit = l.slice }, path, &l))
		abort();
	free(path);
	return 0;
}
