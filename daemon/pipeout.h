/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Pipe-mode output (`perfrecd -o -`): the recording goes to stdout as one
 * perf pipe-mode stream (perf report -i -), and compression settings for
 * file output.  What the recorder and manager do differently for a stream
 * lives here so they only ask.
 */
#ifndef PERFRECD_PIPEOUT_H
#define PERFRECD_PIPEOUT_H

#include <stdbool.h>

#include <perfrec/perfrec.h>

#include "config.h"

/* Output is stdout (directory "-"). */
bool pipeout_enabled(const struct config *c);

/*
 * Whether the configuration can stream: stdout must not be a terminal and
 * compression is refused (perf 6.1 cannot decompress pipe-mode input).
 * Logs the problem and returns -errno.
 */
int pipeout_check(const struct config *c);

/*
 * The writer for a new output: a pipe-mode stream on stdout with the host
 * features set up front (perf shows them before any data), or the file
 * "@path.tmp" with compression as configured.  Returns 0 or -errno.
 */
int pipeout_new_writer(const struct config *c, const char *path, int argc, char **argv,
		       uint64_t clock_ns, uint64_t wall_ns, struct perfrec_pdwriter **ret_writer);

/*
 * After a writer's finish: add its compression counters to @totals and log
 * the file's ratio and the CPU time zstd took (nothing when uncompressed).
 */
void pipeout_note_compression(const struct perfrec_pdwriter *w, const char *path,
			      struct perfrec_pdwriter_compress_stats *totals);

/*
 * Compression so far (@done: finished files; @cur: the file in progress, or
 * NULL) as ", compressed RATIOx using N ms CPU" for status lines; "" when
 * nothing was compressed.
 */
void pipeout_compress_status(const struct perfrec_pdwriter_compress_stats *done,
			     const struct perfrec_pdwriter *cur, char *buf, size_t len);

#endif
