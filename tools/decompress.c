// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * `perfrecctl decompress IN OUT` and `perfrecctl compress [-l LEVEL] [--pipe]
 * IN OUT`: copy a perf.data through libperfrec's reader and writer, changing
 * only how the records are carried.  decompress hands readers that do not
 * know PERF_RECORD_COMPRESSED (Debian 12's hotspot/perfparser) a plain copy;
 * compress writes zstd COMPRESSED records at LEVEL (1..19, default 3), or
 * none at level 0; --pipe (or OUT "-", stdout) writes the pipe-mode stream
 * instead of a seekable file.  IN may be a file, a pipe-mode file or "-"
 * (stdin).  Attrs, ids, names and features are carried over; the writer makes
 * EVENT_DESC and HEADER_COMPRESSED itself.  The input must pass verify
 * (nothing is written otherwise) and so must a file written.  Exit 0 done, 1
 * the input is not sound perf data (or the copy would not be), 2 usage or
 * I/O errors.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <perfrec/compress.h>
#include <perfrec/pdreader.h>
#include <perfrec/pdwriter.h>

#include "fsutil.h"
#include "perfrecctl.h"
#include "readback.h"

static int open_input(const char *path, struct perfrec_pdreader **ret)
{
	struct perfrec_pdreader_opts opts = { .sz = sizeof(opts) };

	if (!strcmp(path, "-"))
		return perfrec_pdreader__open_fd(STDIN_FILENO, &opts, ret);
	return perfrec_pdreader__open(path, &opts, ret);
}

/*
 * The output: stdout for "-", else a new 0600 file beside @path (perf data
 * shows every process; perf writes perf.data 0600), never through a link
 * planted at the name, renamed over it once it verifies; an existing FIFO
 * or device of ours is written as it is.
 */
static int open_output(const char *path, bool pipe, int level, struct output_file *of,
		       struct perfrec_pdwriter **ret)
{
	struct perfrec_pdwriter_pipe_opts po = { .sz = sizeof(po), .owns_fd = true, .compress_level = level };
	struct perfrec_pdwriter_opts wo = { .sz = sizeof(wo), .owns_fd = true, .compress_level = level };
	int r;

	*of = (struct output_file){ .fd = -1, .dirfd = -1 };
	if (!strcmp(path, "-")) {
		po.owns_fd = false;
		if (isatty(STDOUT_FILENO))
			return -ENOTTY;
		return perfrec_pdwriter__new_pipe(STDOUT_FILENO, &po, ret);
	}
	r = output_file_open(of, path, OUTPUT_REPLACE | OUTPUT_STREAM, 0600);
	if (r < 0)
		return r;
	r = pipe ? perfrec_pdwriter__new_pipe(of->fd, &po, ret) : perfrec_pdwriter__new(of->fd, &wo, ret);
	if (r < 0) {
		close(of->fd);
		output_file_discard(of);
	}
	return r;
}

/* Copy @in to @out.  Returns 0, EXIT_BAD (input unsound) or EXIT_USAGE (I/O). */
static int transcode(const char *cmd, const char *in_path, struct perfrec_pdreader *in,
		     const char *out_path, struct perfrec_pdwriter *out)
{
	const struct perf_event_header *rec;
	uint64_t off;
	int r;

	for (size_t i = 0; i < perfrec_pdreader__nr_attrs(in); i++) {
		const struct perfrec_pdreader_attr *a = perfrec_pdreader__attr(in, i);

		r = perfrec_pdwriter__add_attr(out, &a->attr, a->ids, a->nr_ids, a->name);
		if (r < 0) {
			fprintf(stderr, "perfrecctl %s: %s: attr %zu cannot be copied: %s\n", cmd, in_path, i, strerror(-r));
			return EXIT_BAD;
		}
	}
	for (int f = 1; f < PERFREC_FEAT_BITS; f++) {
		const void *data;
		size_t len;

		/* The writer derives these from what it writes. */
		if (f == PERFREC_FEAT_EVENT_DESC || f == PERFREC_FEAT_COMPRESSED)
			continue;
		if (perfrec_pdreader__feature(in, f, &data, &len) < 0)
			continue;
		r = perfrec_pdwriter__set_feature(out, f, data, len);
		if (r < 0) {
			fprintf(stderr, "perfrecctl %s: %s: %s\n", cmd, out_path, strerror(-r));
			return EXIT_USAGE;
		}
	}
	while ((r = perfrec_pdreader__next(in, &rec, &off)) > 0) {
		/* Pipe input: the writer makes its own attr and feature records. */
		if (rec->type == PERFREC_RECORD_HEADER_ATTR || rec->type == PERFREC_RECORD_HEADER_FEATURE)
			continue;
		r = perfrec_pdwriter__write(out, rec, rec->size);
		if (r < 0) {
			fprintf(stderr, "perfrecctl %s: cannot write %s: %s\n", cmd, out_path, strerror(-r));
			return EXIT_USAGE;
		}
	}
	if (r < 0) {
		fprintf(stderr, "perfrecctl %s: %s: %s at offset %llu\n", cmd, in_path,
			perfrec_pdreader__error(in, &off), (unsigned long long)off);
		return EXIT_BAD;
	}
	r = perfrec_pdwriter__finish(out);
	if (r < 0) {
		fprintf(stderr, "perfrecctl %s: cannot finish %s: %s\n", cmd, out_path, strerror(-r));
		return EXIT_USAGE;
	}
	return 0;
}

/* Say why the input @in is refused (the reader's error and offset), free it: EXIT_BAD. */
static int refuse_input(const char *cmd, const char *in_path, struct perfrec_pdreader *in,
			const char *fallback, const char *why)
{
	uint64_t off;
	const char *msg = perfrec_pdreader__error(in, &off);

	fprintf(stderr, "perfrecctl %s: %s: %s at offset %llu%s\n", cmd, in_path, msg[0] ? msg : fallback,
		(unsigned long long)off, why);
	perfrec_pdreader__free(in);
	return EXIT_BAD;
}


static int run(const char *cmd, const char *in_path, const char *out_path, bool pipe, int level)
{
	struct perfrec_pdreader *in = NULL;
	struct perfrec_pdwriter *out = NULL;
	struct output_file of;
	int r, rc;

	r = open_input(in_path, &in);
	if (r < 0) {
		fprintf(stderr, "perfrecctl %s: cannot open %s: %s\n", cmd, in_path, strerror(-r));
		return EXIT_USAGE;
	}
	if (perfrec_pdreader__header(in)->magic != PERFREC_MAGIC2 || (!perfrec_pdreader__is_pipe(in) &&
	    perfrec_pdreader__nr_attrs(in) == 0 && perfrec_pdreader__error(in, NULL)[0]))
		return refuse_input(cmd, in_path, in, "not perf data", "");
	/*
	 * Only sound input: a copy of a file perf or perfparser refuse would
	 * be refused too, or worse, pass for sound once re-encoded.
	 */
	if (perfrec_pdreader__verify(in) < 0)
		return refuse_input(cmd, in_path, in, "cannot be verified", " (perfrecctl verify rejects it)");
	r = open_output(out_path, pipe, level, &of, &out);
	if (r < 0) {
		fprintf(stderr, "perfrecctl %s: cannot write %s: %s\n", cmd, out_path,
			r == -ENOTTY ? "refusing to write perf data to a terminal" : strerror(-r));
		perfrec_pdreader__free(in);
		return EXIT_USAGE;
	}
	rc = transcode(cmd, in_path, in, out_path, out);
	perfrec_pdwriter__free(out, false);
	perfrec_pdreader__free(in);
	/* A stream (FIFO, device) is not read back; a file is, before it gets its name. */
	if (rc == 0 && of.tmp)
		rc = readback_verifies(cmd, of.tmp_path);
	if (rc == 0 && of.tmp && (r = output_file_publish(&of)) < 0) {
		fprintf(stderr, "perfrecctl %s: cannot write %s: %s\n", cmd, out_path, strerror(-r));
		rc = EXIT_USAGE;
	}
	output_file_discard(&of); /* no half copy left looking like a result */
	return rc;
}

int cmd_decompress(int argc, char **argv)
{
	if (argc != 3)
		return perfrecctl_usage("decompress");
	return run("decompress", argv[1], argv[2], false, 0);
}

int cmd_compress(int argc, char **argv)
{
	const char *paths[2];
	int level = 3, np = 0;
	bool pipe = false;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--pipe")) {
			pipe = true;
		} else if (!strcmp(argv[i], "-l") || !strcmp(argv[i], "--level")) {
			char *end;
			long v;

			if (++i >= argc)
				return perfrecctl_usage("compress");
			errno = 0;
			v = strtol(argv[i], &end, 10);
			if (errno || *end || end == argv[i] || v < 0 || v > 19) {
				fprintf(stderr, "perfrecctl compress: bad level '%s': expected 0 (none) to 19\n", argv[i]);
				return EXIT_USAGE;
			}
			level = (int)v;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			fprintf(stderr, "perfrecctl compress: unknown option '%s'\n", argv[i]);
			return perfrecctl_usage("compress");
		} else if (np < 2) {
			paths[np++] = argv[i];
		} else {
			return perfrecctl_usage("compress");
		}
	}
	if (np != 2)
		return perfrecctl_usage("compress");
	return run("compress", paths[0], paths[1], pipe, level);
}
