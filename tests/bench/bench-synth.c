// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Times what perfrecd does at the start of every file: perfrec_synth__kernel
 * and perfrec_synth__tasks (with build ids, as the recorder asks) writing
 * through a pdwriter into a file in /tmp.  Prints the seconds it took, so
 * tests/bench/run.sh can set it next to perf record's start-up on the same
 * host.  Usage: bench-synth [OUTFILE]
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <perfrec/pdwriter.h>
#include <perfrec/synth.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static unsigned long nr_records;

static int emit(void *ctx, const struct perf_event_header *h)
{
	nr_records++;
	return perfrec_pdwriter__write(ctx, h, h->size);
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "/tmp/perfrec-bench-synth.data";
	struct perfrec_pdwriter_opts wo = { .sz = sizeof(wo), .owns_fd = true };
	struct perfrec_synth_opts so = { .sz = sizeof(so) };
	struct perfrec_pdwriter *w;
	double t0, t1;
	int fd, r;

	so.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			 PERF_SAMPLE_CPU;
	so.id = 1;
	so.time = 1;
	so.build_ids = true;
	t0 = now();
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || perfrec_pdwriter__new(fd, &wo, &w) < 0) {
		fprintf(stderr, "bench-synth: %s: %s\n", path, strerror(errno));
		return 1;
	}
	r = perfrec_synth__kernel(&so, emit, w);
	if (r < 0 && r != -EPERM)
		goto fail;
	r = perfrec_synth__tasks(&so, emit, w);
	if (r < 0)
		goto fail;
	t1 = now();
	perfrec_pdwriter__free(w, true);
	unlink(path);
	printf("%.3f\n", t1 - t0);
	fprintf(stderr, "bench-synth: %lu records\n", nr_records);
	return 0;
fail:
	fprintf(stderr, "bench-synth: synthesis: %s\n", strerror(-r));
	perfrec_pdwriter__free(w, true);
	unlink(path);
	return 1;
}
