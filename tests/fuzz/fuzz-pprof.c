// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Fuzz target for perfrecctl pprof's input path: any bytes as a perf.data
 * file go through profile_walk() (round sorting, callchain splitting at
 * PERF_CONTEXT markers, the symbolizer fed whatever MMAP2, FORK, COMM,
 * KSYMBOL and build-id records the bytes hold) into the pprof tables and
 * the protobuf/gzip writer.  It must never crash, leak or read out of
 * bounds; binaries are not looked for (symfs points nowhere, no
 * debuginfod), so the run stays in memory.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pprof.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int out = -1, saved = -1;
	struct profile_opts o = { .pid = -1, .symfs = "/nonexistent-symfs", .no_debuginfod = true,
				  .buildid_dir = "/nonexistent-cache" };
	char path[64];
	const char *paths[1] = { path };
	struct view_summary n = { 0 };
	int fd;

	if (out < 0) {
		out = open("/dev/null", O_WRONLY | O_CLOEXEC);
		saved = fcntl(2, F_DUPFD_CLOEXEC, 3);
	}
	fd = memfd_create("fuzz-pprof", MFD_CLOEXEC);
	if (fd < 0 || out < 0 || saved < 0)
		abort();
	if (size && write(fd, data, size) != (ssize_t)size)
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	/* The walk names each damage on stderr; libFuzzer needs it for its report after. */
	fflush(stderr);
	dup2(out, 2);
	(void)pprof_write(paths, 1, &o, out, &n);
	fflush(stderr);
	dup2(saved, 2);
	close(fd);
	return 0;
}
