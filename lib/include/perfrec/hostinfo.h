/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Host description for the feature sections of a perf.data file: hostname,
 * OS release, version, arch, CPUs, CPU description and id, memory, command
 * line, CPU/NUMA/memory topology, PMU mappings, caches, sample time, clock
 * id and clock data.  (EVENT_DESC comes from the writer, BUILD_ID from the
 * build id table.)  Thread-safe as the writer it is given allows: one
 * thread per writer.
 */
#ifndef PERFREC_HOSTINFO_H
#define PERFREC_HOSTINFO_H

#include <perfrec/format.h>

struct perfrec_pdwriter;

struct perfrec_hostinfo_opts {
	size_t sz;
	int argc;               /* HEADER_CMDLINE */
	char *const *argv;
	int clockid;            /* HEADER_CLOCKID and CLOCK_DATA; -1: neither */
	uint64_t clock_ns;      /* a clockid time ... */
	uint64_t wall_ns;       /* ... and the wall-clock time taken with it */
	uint64_t first_sample_time, last_sample_time; /* SAMPLE_TIME; 0,0: omit */
	const char *sysfs;      /* roots, for tests; NULL: "/sys", "/proc" */
	const char *proc;
	/*
	 * Who records: HEADER_VERSION reads "6.1.0-<program>-libperfrec-<ver>"
	 * and CMDLINE falls back to it when /proc/self/exe cannot be read.
	 * NULL (or an older opts): "perfrecd", as perfrecd itself writes.
	 */
	const char *program;
};

/* Set every feature listed above on @w.  Returns 0 or -errno. */
PERFREC_API int perfrec_hostinfo__add_features(struct perfrec_pdwriter *w,
					       const struct perfrec_hostinfo_opts *opts);

/*
 * The version string perfrecd writes in HEADER_VERSION (parses as >= 6.1);
 * a static string.  With opts->program another program's name stands in
 * place of "perfrecd" in the file.
 */
PERFREC_API const char *perfrec_hostinfo__version(void);

#endif
