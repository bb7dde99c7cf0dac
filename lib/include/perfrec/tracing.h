/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Tracing data: what perf needs to decode tracepoint samples' raw payloads
 * (the event formats from tracefs), in the layout perf record writes as
 * the HEADER_TRACING_DATA feature of a file and after a
 * PERF_RECORD_HEADER_TRACING_DATA record in a stream.
 */
#ifndef PERFREC_TRACING_H
#define PERFREC_TRACING_H

#include <stddef.h>

#include <perfrec/common.h>

struct perfrec_tracing_opts {
	size_t sz;
	/* tracefs root; NULL: /sys/kernel/tracing, else /sys/kernel/debug/tracing */
	const char *tracefs;
};

/*
 * Build the tracing data for @nr tracepoints named "subsys:name" (a
 * ":modifiers" suffix is ignored; a name given twice is written once):
 * the header_page and header_event formats, each tracepoint's format
 * grouped by subsystem, and the kernel's printk formats.  *@ret_data
 * (malloc'ed, the caller frees it) gets the unpadded bytes, *@ret_len their
 * number.  Returns 0, -EINVAL for a name that is not "subsys:name",
 * -ENOENT when tracefs or a tracepoint's format is missing, or -errno.
 */
PERFREC_API int perfrec_tracing__data(const char *const *tracepoints, size_t nr,
				      const struct perfrec_tracing_opts *opts,
				      void **ret_data, size_t *ret_len);

#endif
