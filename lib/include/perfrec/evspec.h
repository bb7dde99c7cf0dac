/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Event specifications: the names perf users write ("cpu-clock",
 * "cycles:u", "sched:sched_switch", "r01c2") turned into perf_event_attr
 * type/config/exclude bits.  Sampling settings are applied later by evlist.
 */
#ifndef PERFREC_EVSPEC_H
#define PERFREC_EVSPEC_H

#include <perfrec/format.h>

#define PERFREC_EVSPEC_NAME_MAX 128

struct perfrec_evspec {
	char name[PERFREC_EVSPEC_NAME_MAX]; /* as the user wrote it */
	struct perf_event_attr attr;       /* type, config, exclude_* set */
};

struct perfrec_evspec_opts {
	size_t sz;
	/* tracefs root; NULL: /sys/kernel/tracing, mounted there if absent. */
	const char *tracefs;
};

/*
 * Parse one event name.  Accepts software and hardware names (the same
 * spellings as perf), hardware cache events, "subsys:name" tracepoints
 * (id read from tracefs), raw "rNNNN", and ":u", ":k" modifiers.
 * Returns 0, -EINVAL for an unknown name or modifier (with @errbuf, if
 * given, holding a one-line reason), -ENOENT for an unknown tracepoint.
 */
PERFREC_API int perfrec_evspec__parse(const char *str, const struct perfrec_evspec_opts *opts,
				      struct perfrec_evspec *ret_spec,
				      char *errbuf, size_t errlen);

#endif
