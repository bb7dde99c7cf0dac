// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Output choice for the recorder: a perf.data file (optionally with zstd
 * COMPRESSED records) or, with `-o -`, a pipe-mode stream on stdout.  A
 * stream cannot be rewritten, so everything a reader needs first (attrs,
 * host features) goes out before the data; rotation, publishing, retention
 * and recovery do not apply to it (the manager and recorder ask
 * pipeout_enabled()).
 */
#include <errno.h>
#include <signal.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "pipeout.h"

bool pipeout_enabled(const struct config *c)
{
	return c->directory && strcmp(c->directory, "-") == 0;
}

int pipeout_check(const struct config *c)
{
	if (!pipeout_enabled(c))
		return 0;
	/* A reader that goes away (perfrecd -o - | head) is an EPIPE we stop on, not a kill. */
	signal(SIGPIPE, SIG_IGN);
	if (isatty(STDOUT_FILENO))
		return log_error_errno(-ENOTTY, "Refusing to write perf data to a terminal: redirect stdout of "
				       "'perfrecd -o -' to a pipe or file (perfrecd -o - | perf report -i -)");
	if (c->compress_level)
		return log_error_errno(-EINVAL, "compress=%d cannot be used with -o -: perf 6.1 cannot "
				       "decompress pipe-mode input; record without compression", c->compress_level);
	return 0;
}

void pipeout_note_compression(const struct perfrec_pdwriter *w, const char *path,
			      struct perfrec_pdwriter_compress_stats *totals)
{
	struct perfrec_pdwriter_compress_stats st;

	perfrec_pdwriter__compress_stats(w, &st);
	if (!st.nr_frames)
		return;
	totals->bytes_in += st.bytes_in;
	totals->bytes_out += st.bytes_out;
	totals->nr_frames += st.nr_frames;
	totals->cpu_ns += st.cpu_ns;
	log_info("Compressed %s: %" PRIu64 " -> %" PRIu64 " bytes (ratio %.2f) in %" PRIu64
		 " COMPRESSED records, %.1f ms CPU", path, st.bytes_in, st.bytes_out,
		 (double)st.bytes_in / (double)st.bytes_out, st.nr_frames, (double)st.cpu_ns / 1e6);
}

void pipeout_compress_status(const struct perfrec_pdwriter_compress_stats *done,
			     const struct perfrec_pdwriter *cur, char *buf, size_t len)
{
	struct perfrec_pdwriter_compress_stats st;
	uint64_t in, out, ns;

	perfrec_pdwriter__compress_stats(cur, &st);
	in = done->bytes_in + st.bytes_in;
	out = done->bytes_out + st.bytes_out;
	ns = done->cpu_ns + st.cpu_ns;
	if (!out) {
		if (len)
			buf[0] = 0;
		return;
	}
	snprintf(buf, len, ", compressed %.1fx using %" PRIu64 " ms CPU", (double)in / (double)out, ns / 1000000);
}

int pipeout_new_writer(const struct config *c, const char *path, int argc, char **argv,
		       uint64_t clock_ns, uint64_t wall_ns, struct perfrec_pdwriter **ret_writer)
{
	struct perfrec_pdwriter_pipe_opts po = { .sz = sizeof(po) };
	struct perfrec_hostinfo_opts ho = { .sz = sizeof(ho) };
	struct perfrec_pdwriter *w = NULL;
	int r;

	if (!pipeout_enabled(c)) {
		r = perfrec_pdwriter__create(path, &w);
		if (r < 0)
			return r;
		r = perfrec_pdwriter__set_compress(w, c->compress_level);
		if (r < 0) {
			perfrec_pdwriter__free(w, true);
			return r;
		}
		*ret_writer = w;
		return 0;
	}
	r = perfrec_pdwriter__new_pipe(STDOUT_FILENO, &po, &w);
	if (r < 0)
		return r;
	/* Sample times are only known at the end: SAMPLE_TIME then trails the data. */
	ho.argc = argc;
	ho.argv = argv;
	ho.clockid = c->clockid;
	ho.clock_ns = clock_ns;
	ho.wall_ns = wall_ns;
	r = perfrec_hostinfo__add_features(w, &ho);
	if (r < 0)
		log_warning("Some host features could not be gathered for the stream: %s", strerror(-r));
	*ret_writer = w;
	return 0;
}
