// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * `perfrecctl unwind IN [-o] OUT`: rewrite a raw DWARF recording (samples
 * with user registers and a stack copy, --call-graph dwarf) into the
 * callchain form, unwound on this host by libperfrec's unwinder, the one
 * perfrecd uses.  The copy is about as small as a frame-pointer file and
 * every reader shows its whole stacks without unwinding.  ELF files are
 * looked up as the unwinder does: through /proc while the processes live,
 * else by path, and only when their build id is the recorded one.  The
 * input must pass verify and so must the output.  Exit 0 done, 1 the input
 * is not sound perf data, 2 usage or I/O errors.  The work is
 * unwind_file() (unwind.h), which cut uses as well; the command's
 * arguments are tools/unwind-cmd.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <perfrec/event.h>
#include <perfrec/pdreader.h>
#include <perfrec/pdwriter.h>
#include <perfrec/unwind.h>

#include "fsutil.h"
#include "exitcode.h"
#include "readback.h"
#include "unwind-internal.h"
#include "unwind.h"

/* The attr a record belongs to: by its identifier, else the only one. */
static const struct perf_event_attr *record_attr(struct perfrec_pdreader *in, const struct perf_event_header *rec)
{
	const struct perfrec_pdreader_attr *a = NULL;
	uint64_t id;

	if (perfrec_event__identifier(rec, &id) == 0)
		a = perfrec_pdreader__attr_by_id(in, id);
	if (!a && perfrec_pdreader__nr_attrs(in) == 1)
		a = perfrec_pdreader__attr(in, 0);
	return a ? &a->attr : NULL;
}

struct emit_ctx {
	const char *cmd;
	struct perfrec_pdwriter *out;
	const char *out_path;
};

static int emit(void *ctx, const struct perf_event_header *rec)
{
	struct emit_ctx *e = ctx;

	/*
	 * Maps of data segments were there for unwinders reading
	 * .eh_frame_hdr (perf's mmap_data); with the stacks unwound they
	 * only cost bytes, as in a -g file.
	 */
	if (rec->type == PERF_RECORD_MMAP2 && (rec->misc & PERF_RECORD_MISC_MMAP_DATA))
		return 0;
	return perfrec_pdwriter__write(e->out, rec, rec->size);
}

/*
 * Flush what the unwinder queued; EXIT_* on failure.  A sample it could
 * not rewrite is named and the copy refused: the input verified, so that
 * is a bug or memory running out, not something to leave out quietly.
 */
static int flush(struct perfrec_unwinder *u, struct emit_ctx *e, const char *in_path)
{
	struct perfrec_unwinder_stats st;
	int r = perfrec_unwinder__flush(u, emit, e);

	if (r == 0)
		return 0;
	perfrec_unwinder__stats(u, &st);
	if (st.dropped) {
		fprintf(stderr, "perfrecctl %s: %s: %llu samples could not be rewritten: %s\n", e->cmd, in_path,
			(unsigned long long)st.dropped, strerror(-r));
		return r == -ENOMEM ? EXIT_USAGE : EXIT_BAD;
	}
	fprintf(stderr, "perfrecctl %s: cannot write %s: %s\n", e->cmd, e->out_path, strerror(-r));
	return EXIT_USAGE;
}

static int rewrite(const char *cmd, const char *in_path, struct perfrec_pdreader *in, const char *out_path,
		   struct perfrec_pdwriter *out, struct perfrec_unwinder *u)
{
	struct emit_ctx e = { .cmd = cmd, .out = out, .out_path = out_path };
	const struct perf_event_header *rec;
	uint64_t off;
	int r, rc;

	for (size_t i = 0; i < perfrec_pdreader__nr_attrs(in); i++) {
		const struct perfrec_pdreader_attr *a = perfrec_pdreader__attr(in, i);
		struct perf_event_attr na;

		perfrec_unwinder__rewrite_attr(&a->attr, &na);
		r = perfrec_pdwriter__add_attr(out, &na, a->ids, a->nr_ids, a->name);
		if (r < 0) {
			fprintf(stderr, "perfrecctl %s: %s: attr %zu cannot be copied: %s\n", cmd, in_path, i,
				strerror(-r));
			return EXIT_BAD;
		}
	}
	for (int f = 1; f < PERFREC_FEAT_BITS; f++) {
		const void *data;
		size_t len;

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
	/*
	 * The unwinder sees each round (up to FINISHED_ROUND) in time order
	 * and gives it back in file order: a process's FORK or MMAP2 on one
	 * CPU can come after its samples on another in the file.
	 */
	while ((r = perfrec_pdreader__next(in, &rec, &off)) > 0) {
		if (rec->type == PERFREC_RECORD_HEADER_ATTR || rec->type == PERFREC_RECORD_HEADER_FEATURE)
			continue;
		if (perfrec_unwinder__push(u, rec, record_attr(in, rec)) < 0) {
			fprintf(stderr, "perfrecctl %s: %s\n", cmd, strerror(ENOMEM));
			return EXIT_USAGE;
		}
		if (rec->type == PERFREC_RECORD_FINISHED_ROUND && (rc = flush(u, &e, in_path)))
			return rc;
	}
	if (r < 0) {
		const char *why = perfrec_pdreader__error(in, &off);

		fprintf(stderr, "perfrecctl %s: %s: %s at offset %llu\n", cmd, in_path, why, (unsigned long long)off);
		return EXIT_BAD;
	}
	rc = flush(u, &e, in_path);
	if (rc)
		return rc;
	r = perfrec_pdwriter__finish(out);
	if (r < 0) {
		fprintf(stderr, "perfrecctl %s: cannot finish %s: %s\n", cmd, out_path, strerror(-r));
		return EXIT_USAGE;
	}
	return 0;
}

static struct perfrec_unwinder_table_stats last_table_stats;

void unwind_file_table_stats(struct perfrec_unwinder_table_stats *ret)
{
	*ret = last_table_stats;
}

int unwind_file(const char *cmd, const char *in_path, const char *out_path, struct perfrec_unwinder_stats *ret_stats)
{
	struct perfrec_pdreader_opts ro = { .sz = sizeof(ro) };
	struct perfrec_pdwriter_opts wo = { .sz = sizeof(wo), .owns_fd = true };
	struct perfrec_unwinder_opts uo = { .sz = sizeof(uo) };
	struct perfrec_pdreader *in = NULL;
	struct perfrec_pdwriter *out = NULL;
	struct perfrec_unwinder *u = NULL;
	struct perfrec_unwinder_stats st;
	struct output_file of;
	uint64_t off;
	int r, rc;

	r = perfrec_pdreader__open(in_path, &ro, &in);
	if (r < 0) {
		fprintf(stderr, "perfrecctl %s: cannot open %s: %s\n", cmd, in_path, strerror(-r));
		return EXIT_USAGE;
	}
	if (perfrec_pdreader__verify(in) < 0) {
		/* Its offset is set by the call: not in the argument list, whose order is unspecified. */
		const char *why = perfrec_pdreader__error(in, &off);

		fprintf(stderr, "perfrecctl %s: %s: %s at offset %llu (perfrecctl verify rejects it)\n", cmd, in_path,
			why, (unsigned long long)off);
		perfrec_pdreader__free(in);
		return EXIT_BAD;
	}
	r = perfrec_unwinder__new(&uo, &u);
	if (r < 0) {
		fprintf(stderr, "perfrecctl %s: %s\n", cmd, strerror(-r));
		perfrec_pdreader__free(in);
		return EXIT_USAGE;
	}
	/*
	 * A new 0600 file beside @out_path (perf data shows every process; perf
	 * writes perf.data 0600), never through a link planted at the name,
	 * renamed over it once it verifies.
	 */
	r = output_file_open(&of, out_path, OUTPUT_REPLACE, 0600);
	if (r == 0) {
		r = perfrec_pdwriter__new(of.fd, &wo, &out);
		if (r < 0) {
			close(of.fd);
			output_file_discard(&of);
		}
	}
	if (r < 0) {
		fprintf(stderr, "perfrecctl %s: cannot write %s: %s\n", cmd, out_path, strerror(-r));
		perfrec_unwinder__free(u);
		perfrec_pdreader__free(in);
		return EXIT_USAGE;
	}
	rc = rewrite(cmd, in_path, in, out_path, out, u);
	perfrec_unwinder__stats(u, &st);
	perfrec_unwinder__table_stats(u, &last_table_stats);
	perfrec_pdwriter__free(out, false);
	perfrec_pdreader__free(in);
	perfrec_unwinder__free(u);
	if (rc == 0)
		rc = readback_verifies(cmd, of.tmp_path);
	if (rc == 0 && (r = output_file_publish(&of)) < 0) {
		fprintf(stderr, "perfrecctl %s: cannot write %s: %s\n", cmd, out_path, strerror(-r));
		rc = EXIT_USAGE;
	}
	output_file_discard(&of);
	if (rc)
		return rc;
	if (ret_stats)
		*ret_stats = st;
	return 0;
}
