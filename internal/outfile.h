/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Beginning an output of the recording: a rotated file, a snapshot, a
 * flight snapshot and a live stream all start the same way, here, so that
 * they carry the same attrs and the same state:
 *
 *   attrs           every event's, plus the off-CPU attr when it records
 *   tracing data    the formats of the tracepoints recorded
 *   state           kernel and module maps, tasks, BPF programs loaded,
 *                   cgroups, synthesized and stamped at a given time
 *   FINISHED_INIT
 *
 * and carry the same features (outfile_add_features()).
 *
 * What is not worth losing an output over is the same for all of them:
 * hidden kernel addresses, BPF programs that cannot be read, no cgroup
 * hierarchy.
 *
 * It is libperfrec's and internal, like the drain: perfrecd begins its
 * outputs here, and so does the record object (record.c) its files.  What
 * only perfrecd has (its kernel maps read while privileged, the off-CPU
 * attr, its log) comes in through struct outfile_hooks.
 */
#ifndef PERFREC_OUTFILE_H
#define PERFREC_OUTFILE_H

#include <stdint.h>

#include <perfrec/perfrec.h>

/* What an owner adds to every output it begins (any may be NULL). */
struct outfile_hooks {
	/* the kernel's maps (NULL: perfrec_synth__kernel() now) */
	int (*kernel)(void *ctx, const struct perfrec_synth_opts *so, perfrec_synth_emit_fn emit, void *emit_ctx);
	/* attrs beyond the events' (perfrecd: off-CPU time) */
	int (*add_attrs)(void *ctx, const struct perfrec_evlist *evlist, struct perfrec_pdwriter *w);
	/* what is worth saying (syslog.h @level), @msg without a newline */
	void (*say)(void *ctx, int level, const char *msg);
};

/* What beginning an output needs from the recording; all borrowed. */
struct outfile_source {
	const struct perfrec_evlist *evlist;
	const struct perfrec_evspec *specs;
	size_t nr_specs;
	const struct outfile_hooks *hooks; /* NULL: none */
	void *hooks_ctx;
	/* only_pids: the state of these processes only (none: no process at all); else every one */
	const uint32_t *pids;
	size_t nr_pids;
	bool only_pids;
	const char *program;               /* the recording program, for the features (NULL: perfrecd) */
	struct perfrec_bpfmeta *bpfmeta;   /* NULL: no BPF programs synthesized */
	uint64_t sideband_sample_type, sideband_id;
	uint64_t kernel_text, kernel_etext; /* read once while privileged (0: synth reads them) */
	int argc;                          /* perfrecd's command line, for CMDLINE */
	char **argv;
	int clockid;
	bool data_maps;                    /* MMAP_DATA maps too (DWARF unwinding reads .eh_frame_hdr there) */
	bool unwound;                      /* samples unwound on the host: attrs as perfrec_unwinder__rewrite_attr() */
};

struct outfile_begin_opts {
	size_t sz;
	uint64_t time;   /* the synthesized records' time (recording clock) */
	const char *what; /* the output, for log messages */
	/*
	 * Writes each synthesized record (NULL: straight into the writer);
	 * the caller notes what it needs (build ids) and may drain meanwhile.
	 */
	perfrec_synth_emit_fn emit;
	/* between the steps of synthesis (NULL: nothing): drain the rings */
	void (*step)(void *ctx);
	void *ctx;
};

/* Options for synthesizing this recording's state, every record stamped @time. */
struct perfrec_synth_opts outfile_synth_opts(const struct outfile_source *src, uint64_t time);
/* Attrs (the off-CPU one too) and tracing data on @w, before its first record. */
int outfile_add_attrs(const struct outfile_source *src, struct perfrec_pdwriter *w);
/*
 * Synthesized state and FINISHED_INIT into @w, which has its attrs (and
 * any features a stream sends ahead of its records).  0 or -errno.
 */
int outfile_synthesize(const struct outfile_source *src, struct perfrec_pdwriter *w,
		       const struct outfile_begin_opts *opts);
/* outfile_add_attrs() then outfile_synthesize(): how every output begins. */
int outfile_begin(const struct outfile_source *src, struct perfrec_pdwriter *w,
		  const struct outfile_begin_opts *opts);

/* An output's features: the time it covers and what it names. */
struct outfile_features_opts {
	size_t sz;
	const char *what;        /* the output, for log messages */
	uint64_t clock_ns, wall_ns; /* its start, on the recording's clock and the wall clock */
	uint64_t first_sample_time, last_sample_time;
	struct perfrec_buildid_table *buildids; /* of the processes it sampled (NULL: none yet) */
};

/*
 * The features every output carries: host description, build ids, BPF
 * programs.  A file or snapshot sets them at its end, a stream ahead of
 * its records.  Any of them missing costs its feature (logged), not the
 * output.
 */
void outfile_add_features(const struct outfile_source *src, struct perfrec_pdwriter *w,
		 const struct outfile_features_opts *opts);

#endif
