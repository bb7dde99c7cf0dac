/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Build ids: read from ELF notes (files on disk, /sys/kernel/notes) and the
 * table of binaries a file's samples touch, written as HEADER_BUILD_ID.
 */
#ifndef PERFREC_BUILDID_H
#define PERFREC_BUILDID_H

#include <perfrec/format.h>

#define PERFREC_BUILD_ID_MAX 20

struct perfrec_pdwriter;

/* Read the GNU build id note of ELF file @path.  Returns its length (1..20). */
PERFREC_API int perfrec_buildid__read_elf(const char *path, uint8_t ret_id[PERFREC_BUILD_ID_MAX]);
/* Parse a raw note blob such as /sys/kernel/notes. */
PERFREC_API int perfrec_buildid__parse_notes(const void *buf, size_t len, uint8_t ret_id[PERFREC_BUILD_ID_MAX]);
/* Build id of the running kernel (/sys/kernel/notes under @sysfs or "/sys"). */
PERFREC_API int perfrec_buildid__kernel(const char *sysfs, uint8_t ret_id[PERFREC_BUILD_ID_MAX]);

/*
 * Table of DSOs: fed every MMAP2 record (synthesized or from the kernel),
 * every EXIT, and every sample; __add_feature() writes
 * HEADER_BUILD_ID with one entry per binary that has a build id and is
 * mapped by a process that has samples (plus the kernel), like perf's
 * post-pass but without rereading the file.  Its size follows the
 * processes alive and those sampled in the current file, not every
 * process ever seen.
 */
struct perfrec_buildid_table;

/*
 * An empty table the caller owns (perfrec_buildid_table__free()); 0 or
 * -ENOMEM.  Not thread-safe: one thread feeds a table.  A pdwriter with
 * perfrec_pdwriter__track() keeps one itself.
 */
PERFREC_API int perfrec_buildid_table__new(struct perfrec_buildid_table **ret_table);
/* Look at one record: MMAP2 with a build id, or a sample (pid noted). */
PERFREC_API void perfrec_buildid_table__note_mmap2(struct perfrec_buildid_table *t,
						   const struct perf_event_header *rec);
PERFREC_API void perfrec_buildid_table__note_sample_pid(struct perfrec_buildid_table *t, uint32_t pid,
							bool kernel);
PERFREC_API int perfrec_buildid_table__add_feature(struct perfrec_buildid_table *t,
						   struct perfrec_pdwriter *w);
/*
 * Look at a PERF_RECORD_EXIT: a process that exited is forgotten (its
 * binaries kept for the file if it was sampled) once later exits show that
 * no record of it can still be on its way.  Threads' exits are ignored.
 */
PERFREC_API void perfrec_buildid_table__note_exit(struct perfrec_buildid_table *t,
						  const struct perf_event_header *rec);
/*
 * A new file starts: forget everything, processes and binaries alike; the
 * file's synthesized state (every live process, the kernel) and its ring
 * records fill the table again.
 */
PERFREC_API void perfrec_buildid_table__reset_samples(struct perfrec_buildid_table *t);
/* Processes the table knows now (alive, or gone but not yet forgotten). */
PERFREC_API size_t perfrec_buildid_table__nr_processes(const struct perfrec_buildid_table *t);
PERFREC_API void perfrec_buildid_table__free(struct perfrec_buildid_table *t);

#endif
