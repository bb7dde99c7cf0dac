/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The recorder: owns the events, their rings, the drain over them
 * (drain.h) and the pipeline of stages after it (pipeline.h).  Its own
 * sink, the file sink, counts what reaches it and, in continuous mode,
 * writes it into the current file, which it starts (outfile.h), finishes
 * and publishes.  Other outputs add their sinks with their kind
 * (recorder_add_output(): snapshot.c's history, control-transfer.c's streams), and
 * the pipeline puts each where its kind goes.  One thread drives it; the
 * event loop in manager.c calls in.
 */
#ifndef PERFRECD_RECORDER_H
#define PERFRECD_RECORDER_H

#include <stdbool.h>
#include <stdint.h>

#include <perfrec/perfrec.h>

#include "config.h"
#include "drain.h"
#include "filesink.h"
#include "outfile.h"
#include "jitsink.h"
#include "pipeline.h"
#include "pytrack.h"
#include "pywalk.h"
#include "sink.h"
#include "track.h"
#include "unwind-sink.h"

/* A file the recorder writes: the current one, or one waiting to be published. */
struct recfile {
	struct filesink_file f; /* its writer, tracking and counts (filesink.h) */
	char *path;             /* final name */
	uint64_t seq;
	uint64_t start_wall_ns;
	uint64_t start_clock_ns;
	uint64_t last_checkpoint_usec;
	uint64_t start_usec;    /* monotonic, for rotate-interval */
	uint64_t freq_min, freq_max; /* frequencies seen (recorder_note_freq(); 0: not governed) */
	struct cgroup_counts *cgroups; /* for the manifest (NULL: it reads the file) */
	/* behind the unwinding stage: its counters at the file's start and end, for its manifest */
	bool unwound;
	struct unwind_sink_stats unwind_start, unwind_end;
};

struct recorder {
	const struct config *cfg;
	int argc;
	char **argv;
	struct perfrec_cpumap *cpus;
	struct perfrec_evspec *specs;
	size_t nr_specs;
	struct perfrec_evlist *evlist;
	size_t nr_rings;
	struct perfrec_buildid_table *buildids;
	/* one pass over each ring feeds every sink (drain.h) */
	struct drain *drain;
	/*
	 * the recorder's own sink: counts (per ring since start, refused
	 * spans, pending LOST), and the current file in continuous mode;
	 * its track takes the maps and exits of every file into buildids
	 */
	struct filesink fsink;
	bool flight;               /* mode=flight: no file, the history sink keeps records */
	uint64_t sideband_id;
	uint64_t sideband_sample_type;
	bool stdout_gone;          /* a write to stdout (-o -) failed with EPIPE */
	char hostname[256];
	uint64_t seq;
	struct recfile cur;
	bool have_file;
	/* a finished file the disk refused (recorder.c stall_file()); retried */
	struct recfile stalled;
	bool have_stalled;
	uint64_t files_published;
	bool write_error_logged;
	uint64_t write_error_usec; /* when the last write-error episode began (0: none) */
	int nr_open_failures;
	const uint64_t *sideband_ids; /* per ring: the side-band event's id (for those LOST records) */
	uint64_t retry_start_usec;  /* no file (disk full): next attempt to start one */
	/* a killed run's .tmp the disk had no room to recover: kept, retried (leftovers.c) */
	bool leftovers_pending;
	/* min-free: the file system is below the floor, records are refused (recorder.c check_floor()) */
	bool below_floor;
	uint64_t floor_check_usec;  /* when it was last measured */
	/* monotonic: when the first file began; rotate-interval's grid starts there */
	uint64_t rotate_anchor_usec;
	/* zstd totals over finished files (compress=): bytes in/out, CPU ns */
	struct perfrec_pdwriter_compress_stats compress;
	/* published files are queued here; borrowed from the manager (NULL: upload-url unset) */
	struct uploader *uploader;
	uint64_t cur_freq;        /* frequency now (recorder_note_freq(); 0: as configured) */
	/* bpf-meta.c: BPF programs of the current file, for its BPF features (NULL: none) */
	struct perfrec_bpfmeta *bpfmeta;
	/* _text and _etext, read once while privileged (0: synth reads them) */
	uint64_t kernel_text, kernel_etext;
	struct offcpu_rec *offcpu; /* off-CPU profiling (offcpu-rec.h; NULL: off) */
	struct pywalk *py;         /* Python frames at the sample (pywalk.h; NULL: off) */
	struct pytrack *pytrack;   /* the CPython processes it walks (pytrack.h) */
	/* the stages between the drain and the outputs, the file sink among them (pipeline.h) */
	struct pipeline *pipe;
	/* consumers of records beside the file (pipeline.h's kinds): */
	struct sink cgroup_sink;   /* the current file's cgroup counts (manifest-cgroup.h) */
	struct sink bidcache_sink; /* the build-id cache (bidcache.h) */
	struct sink bpf_sink;      /* BPF programs that come and go (bpfmeta) */
	struct jitsink jit;        /* JIT mappings named by images in the build-id cache (jitsink.h) */
};

/* With unwind=host: the unwinding stage's counters (false: not unwinding on the host). */
bool recorder_unwind_stats(const struct recorder *rec, struct unwind_sink_stats *ret);
/* Python frames: tracked processes, walks, merges (false: python= off or not loaded). */
bool recorder_python_stats(const struct recorder *rec, struct python_stats *ret);
/* What the JIT sink followed, named and left out (jitsink.h). */
void recorder_jit_stats(const struct recorder *rec, struct jitsink_stats *ret);

/* Parse events, open them (disabled) and map the rings.  Logs its errors. */
int recorder_open(struct recorder *rec, const struct config *cfg, int argc, char **argv);
/*
 * recorder_open() for a reload: records off-CPU time with @offcpu (NULL:
 * none), which it then owns, instead of loading a BPF program, which the
 * daemon can no longer do once it dropped its privileges.  Likewise the
 * walk of Python frames @py (NULL: none), attached to the new events.
 */
int recorder_reopen(struct recorder *rec, const struct config *cfg, int argc, char **argv,
		    struct offcpu_rec *offcpu, struct pywalk *py);
/*
 * A moment in the recording's clock and the wall-clock time read with it:
 * a file's CLOCK_DATA pair, by which readers put its samples in wall time.
 */
struct recorder_stamp {
	uint64_t clock_ns, wall_ns;
};
/* Now, both clocks read back to back. */
struct recorder_stamp recorder_stamp(const struct recorder *rec);

/*
 * Start a new output file: attrs, synthesized state, FINISHED_INIT.  The
 * synthesized records are stamped @at's clock (NULL: now), which must not
 * be later than any ring record the file will get; its wall time is the
 * file's start (its name, and the CLOCK_DATA pair with the clock).
 */
int recorder_start_file(struct recorder *rec, const struct recorder_stamp *at);
/*
 * The name of an output file started at @wall_ns, number @seq, in the
 * output directory: PREFIX-HOST-STAMP-SEQ@suffix.data, so retention counts
 * every kind.  NULL: no memory.
 */
char *recorder_file_name(const struct recorder *rec, uint64_t wall_ns, uint64_t seq, const char *suffix);
/* The next file number, taken. */
uint64_t recorder_take_seq(struct recorder *rec);
/* The current time in the recording's clock. */
uint64_t recorder_clock_ns(const struct recorder *rec);

/*
 * What output @out of this recording begins with (outfile_begin()):
 * its attrs say its stacks' form (pipeline_unwound()); borrowed from @rec.
 */
struct outfile_source recorder_source(const struct recorder *rec, enum pipeline_output out);
int recorder_enable(struct recorder *rec);
int recorder_disable(struct recorder *rec);
/*
 * One pass over every ring into every sink (drain.h); FINISHED_ROUND if
 * anything was written.  0, or the -errno of a file write that failed.
 */
int recorder_drain(struct recorder *rec);
/*
 * The events sample at @hz now (0: as configured): the manifest of the
 * current file reports the range it ran at (the overhead governor calls it).
 */
void recorder_note_freq(struct recorder *rec, uint64_t hz);
/* Samples drained so far not of the idle task (pid 0): the governor's measure. */
uint64_t recorder_busy_samples(const struct recorder *rec);
/* -o -: whether the reader of stdout closed it (the stream is cut; the run ends). */
bool recorder_output_closed(const struct recorder *rec);
/*
 * Add @s, an output of kind @out, where that kind sits (pipeline_add()):
 * it gets every record drained from now on, in the form its kind takes.
 */
int recorder_add_output(struct recorder *rec, enum pipeline_output out, struct sink *s);
/* Take @s off (allowed inside its own callbacks). */
void recorder_remove_sink(struct recorder *rec, struct sink *s);
/*
 * recorder_drain(), then every stage emptied into its outputs: before an
 * output is read (a snapshot of the history) or begins.
 */
int recorder_flush(struct recorder *rec);
/*
 * Move the recorder @src into @dst (a reload's new recorder into place):
 * what points into the struct is pointed at @dst.  @src is left empty.
 */
void recorder_move(struct recorder *dst, struct recorder *src);
/*
 * Checkpoint the file in progress now, so that a reader of its *ret_tmp
 * (its ".tmp" name, owned by the caller) sees everything drained so far.
 * 0, -ENODATA (no file in progress) or -errno.
 */
int recorder_checkpoint(struct recorder *rec, char **ret_tmp);
/* The features of the file in progress now (outfile_add_features()): its times and build ids. */
struct outfile_features_opts recorder_features_opts(const struct recorder *rec);
/* Refresh the header's data size if the checkpoint interval has passed. */
int recorder_maybe_checkpoint(struct recorder *rec, uint64_t now_usec);
/* Drain, write features, publish.  *ret_path (optional) gets the file name. */
int recorder_finish_file(struct recorder *rec, char **ret_path);
/* Whether rotate-size or rotate-interval says the current file is done. */
bool recorder_rotation_due(const struct recorder *rec, uint64_t now_usec);
/*
 * When rotate-interval ends the current file (monotonic usec; 0: never):
 * files start on a grid, the first file's start plus whole intervals, so
 * the time a rotation takes does not push the next one later.
 */
uint64_t recorder_rotation_deadline(const struct recorder *rec);
/* Finish the current file and start the next with no record lost between. */
int recorder_rotate(struct recorder *rec, char **ret_path);
/*
 * Put right what a killed run left in the directory: finish interrupted
 * publications, recover NAME.data.tmp files no live writer holds (empty
 * ones are removed), write missing manifests.  Returns how many files were
 * published.
 */
int recorder_recover_leftovers(struct recorder *rec);
/*
 * Publish @w, finished and made by perfrec_pdwriter__create(@path): its
 * manifest (counts from @o) first, then the rename; then upload, retention
 * and the on-rotate hook.  A file is never published without its manifest.
 * 0 or -errno (logged; the file then stays "@path.tmp").
 */
int recorder_publish(struct recorder *rec, struct perfrec_pdwriter *w, const char *path,
		     const struct recfile *o);
void recorder_close(struct recorder *rec);

uint64_t now_usec(void);
/* Now on @clockid (the "perf" clock, -1, reads as CLOCK_MONOTONIC). */
uint64_t recording_clock_ns(int clockid);

#endif
