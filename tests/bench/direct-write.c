// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * What writing the bytes costs in the kernel, buffered against O_DIRECT:
 * the measurement behind tests/bench/README.md's note on issue 24's CPU
 * goal (the page-cache copy is the largest part of a plain recording's
 * cost, for perf as for perfrecd).  Not part of make bench: run by hand on
 * the file system the recordings go to.
 *
 *   direct-write DIRECT CHUNK MIB [FILE]
 *
 * writes MIB mebibytes in CHUNK-byte writes to FILE (./direct-write.out),
 * with O_DIRECT when DIRECT is 1, and prints the CPU time the writes took,
 * per byte and per 113-byte sample (a -g sample at 10 kHz).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static double cpu_seconds(void)
{
	struct rusage r;

	getrusage(RUSAGE_SELF, &r);
	return (double)(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
	       (double)(r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
}

int main(int argc, char **argv)
{
	const char *path = argc > 4 ? argv[4] : "direct-write.out";
	size_t chunk, total;
	double t0, t1;
	void *buf;
	int direct, fd;

	if (argc < 4) {
		fprintf(stderr, "usage: direct-write DIRECT CHUNK MIB [FILE]\n");
		return 2;
	}
	direct = atoi(argv[1]);
	chunk = strtoul(argv[2], NULL, 0);
	total = strtoul(argv[3], NULL, 0) << 20;
	/* O_DIRECT wants the buffer, the length and the offset aligned. */
	if (!chunk || chunk % 4096 || posix_memalign(&buf, 4096, chunk)) {
		fprintf(stderr, "direct-write: CHUNK must be a multiple of 4096\n");
		return 2;
	}
	memset(buf, 0x5a, chunk);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | (direct ? O_DIRECT : 0), 0600);
	if (fd < 0) {
		perror(path);
		return 1;
	}
	t0 = cpu_seconds();
	for (size_t off = 0; off < total; off += chunk)
		if (write(fd, buf, chunk) != (ssize_t)chunk) {
			perror("write");
			unlink(path);
			return 1;
		}
	t1 = cpu_seconds();
	printf("direct=%d chunk=%zu: %.3f s CPU for %zu MiB: %.2f ns a byte, %.1f ns per 113 bytes\n", direct,
	       chunk, t1 - t0, total >> 20, (t1 - t0) * 1e9 / (double)total, (t1 - t0) * 1e9 / (double)total * 113);
	close(fd);
	unlink(path);
	free(buf);
	return 0;
}
