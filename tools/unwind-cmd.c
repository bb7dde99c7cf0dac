// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * `perfrecctl unwind IN [-o] OUT`: the command's arguments and the
 * unwinder's counters it prints; the rewrite is views/unwind.c's
 * unwind_file().
 */
#include <stdio.h>
#include <string.h>

#include <perfrec/unwind.h>

#include "perfrecctl.h"
#include "unwind-internal.h"
#include "unwind.h"

int cmd_unwind(int argc, char **argv)
{
	struct perfrec_unwinder_table_stats ts;
	struct perfrec_unwinder_stats st;
	const char *paths[2] = { NULL, NULL };
	int np = 0, rc;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-o") && i + 1 < argc && !paths[1])
			paths[1] = argv[++i];
		else if (argv[i][0] == '-' && argv[i][1])
			return perfrecctl_usage("unwind");
		else if (np == 0)
			paths[np++] = argv[i];
		else if (np == 1 && !paths[1])
			paths[np++] = argv[i];
		else
			return perfrecctl_usage("unwind");
	}
	if (!paths[0] || !paths[1])
		return perfrecctl_usage("unwind");
	rc = unwind_file("unwind", paths[0], paths[1], &st);
	if (rc)
		return rc;
	fprintf(stderr, "perfrecctl unwind: %llu samples, %llu with callers, %.1f user frames each; "
		"ELF cache: %llu files opened, %llu hits (%.1f%%), %zu open (%.1f MiB), %llu evicted; "
		"%llu maps without a matching file (%llu files refused: not x86_64 executables or shared objects); "
		"%llu unwind sessions built, %llu dropped for the bounds\n",
		(unsigned long long)st.samples, (unsigned long long)st.unwound,
		st.samples ? (double)st.frames / (double)st.samples : 0.0,
		(unsigned long long)st.elf_opened, (unsigned long long)st.elf_hits,
		st.elf_opened + st.elf_hits ? 100.0 * (double)st.elf_hits / (double)(st.elf_opened + st.elf_hits) : 0.0,
		st.elves, (double)st.elf_bytes / (1 << 20), (unsigned long long)st.elf_evicted,
		(unsigned long long)st.elf_missing, (unsigned long long)st.elf_refused,
		(unsigned long long)st.sessions, (unsigned long long)st.sessions_evicted);
	unwind_file_table_stats(&ts);
	fprintf(stderr, "perfrecctl unwind: %llu samples by unwind tables, %llu by libdwfl; %llu frames by tables, "
		"%llu by frame pointers; %llu tables built (%llu files without CFI, %llu left to libdwfl)\n",
		(unsigned long long)ts.by_tables, (unsigned long long)ts.by_dwfl,
		(unsigned long long)ts.table_frames, (unsigned long long)ts.fp_frames,
		(unsigned long long)ts.cache.built, (unsigned long long)ts.cache.no_cfi,
		(unsigned long long)ts.cache.failed);
	return 0;
}
