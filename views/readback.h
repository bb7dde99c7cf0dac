/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A command that writes a perf.data (perfrecctl unwind, decompress) reads
 * it back before publishing it: what it wrote must verify as its input
 * did, or it is a bug, reported and not published.
 */
#ifndef PERFRECCTL_READBACK_H
#define PERFRECCTL_READBACK_H

/*
 * Read @path back and verify it (perfrec_pdreader__verify()).  Problems go
 * to stderr as "perfrecctl CMD: ...".  Returns 0, EXIT_USAGE when it
 * cannot be read, EXIT_BAD when it does not verify (exitcode.h).
 */
int readback_verifies(const char *cmd, const char *path);

#endif
