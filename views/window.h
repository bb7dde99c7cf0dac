/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Recorded files on a wall-clock time line, for `perfrecctl ls` and `cut`
 * (and whatever else reads "the files of a window": the flame graph, the
 * fleet bucket's downloads).  Inputs are paths: a directory stands for the
 * perf.data files in it (NAME.data, and NAME.data.tmp while being written),
 * a file for itself.  Each file's span comes from its manifest (NAME.json)
 * where there is one and from the file otherwise: its HEADER_CLOCK_DATA
 * (start) and last sample (end).  Not thread-safe; no global state.
 */
#ifndef PERFRECCTL_WINDOW_H
#define PERFRECCTL_WINDOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <perfrec/clockdata.h>
#include <perfrec/pdreader.h>

/* Coverage holes shorter than this are a rotation's seam, not a gap. */
#define WINDOW_GAP_NS 1000000000ULL

struct window_file {
	char *path;         /* as listed (a published .tmp: under its final name) */
	int fd;             /* -1, or the file as it was opened at listing, whatever its name became since */
	dev_t dev;          /* the file's identity: a rename does not change it */
	ino_t ino;
	bool in_progress;   /* NAME.data.tmp: being written, or left by a crash */
	bool being_written; /* in_progress and a live writer holds its lock (as perfrec_pdwriter__in_use()) */
	bool has_manifest;
	struct perfrec_clockdata clock;
	uint64_t start_wall; /* file start (clock data), ns since the epoch */
	uint64_t end_wall;   /* the manifest's end (file closed), else the last sample */
	uint64_t samples, lost, size;
	bool compressed;     /* PERF_RECORD_COMPRESSED inside */
	const char *mode;    /* "continuous", "flight" (a snapshot), "recovered" */
	char *error;         /* set: unreadable, with why; the other fields are unset */
	/* The spans feature of a flight-recorder snapshot: each CPU's samples (sample clock). */
	struct perfrec_cpu_span *spans;
	size_t nr_spans;
	char *label;         /* how to name it to the user, if not by path (a snapshot standing in for a file) */
};

/*
 * Whether CPU entry @i of @f's spans covers less than the others together
 * (by more than WINDOW_GAP_NS at either end, or no sample at all): a flight
 * recorder's history is shorter on a CPU whose ring was busier.
 */
bool window_cpu_short(const struct window_file *f, size_t i);

/*
 * Expand @paths (files and directories) into one entry per recorded file,
 * oldest first (unreadable ones last, with ->error).  Returns 0 and an array
 * the caller frees with window_files_free(), -errno if a path cannot be
 * read at all (a missing directory: -ENOENT).
 */
int window_scan(const char *const *paths, size_t n, struct window_file **ret, size_t *nret);
void window_files_free(struct window_file *files, size_t n);

/* Read one file into @f (path taken over); 0, or -errno with f->error set.  f->fd is -1. */
int window_file_load(struct window_file *f, char *path);
/* Release what @f holds (its fd too) and zero it, fd -1. */
void window_file_exit(struct window_file *f);

/*
 * Where to open @f from: its fd ("/proc/self/fd/N", into @buf) when it has
 * one, so a rename or an unlink since the listing does not matter; its
 * path otherwise.
 */
const char *window_file_source(const struct window_file *f, char *buf, size_t sz);

/*
 * A listing of recorded files taken while a daemon rotates and retention
 * removes: every file is opened as it is listed, a NAME.data.tmp renamed
 * meanwhile is found under its final name NAME.data (one entry per file,
 * by inode), and the directory is read again until a reading finds nothing
 * new, so a rename during a reading cannot hide a file.  Files meeting
 * [keep_from, keep_to) (or being written) keep their fd (keep set), so
 * what happens to their names after the listing does not change what is
 * read of them.  Names removed between being listed and being opened are
 * in gone[] with the start their name holds (0: not a perfrecd name).
 */
struct window_scan_opts {
	bool keep;
	uint64_t keep_from, keep_to;
};

struct window_gone {
	char *path;
	uint64_t start_wall;
};

struct window_listing {
	struct window_file *files; /* oldest first, unreadable ones last */
	size_t nr;
	struct window_gone *gone;
	size_t nr_gone;
};

int window_list(const char *const *paths, size_t n, const struct window_scan_opts *o, struct window_listing *ret);
void window_listing_free(struct window_listing *l);
/* Whether a live writer still holds @f (open as f->fd; false without one). */
bool window_file_held(const struct window_file *f);
/* Sort @files as window_scan() does. */
void window_files_sort(struct window_file *files, size_t n);
/* The wall-clock start perfrecd writes into a file name, or 0. */
uint64_t window_name_stamp_ns(const char *path);
/* The stamp of @wall_ns as perfrecd puts it in a file's name: "-20261123T140300.250Z-". */
void window_name_stamp(uint64_t wall_ns, char *buf, size_t sz);
/*
 * Read @name of @dir (open as @dfd) into @l, as window_list() does with
 * each name it lists: a .tmp published since it was listed is taken under
 * its final name, a file gone is added to l->gone.  For a test that does
 * between the listing and the opening what the daemon may do there.  1 if
 * the listing changed, 0 if not, -errno.
 */
int window_list_name(struct window_listing *l, int dfd, const char *dir, const char *name);

/*
 * The paths of the recorded files under @paths whose span overlaps
 * [@from_wall, @to_wall) (ns since the epoch), oldest first.  Returns 0 and
 * a NULL-terminated array (*nret entries) freed with window_strv_free(),
 * -errno as window_scan().  No file overlapping is not an error (*nret 0).
 */
int window_files(const char *const *paths, size_t n, uint64_t from_wall, uint64_t to_wall, char ***ret,
		 size_t *nret);
void window_strv_free(char **v);

/*
 * The time of record @rec of @r (a sample's time, or the sample_id time of
 * another kernel record): 1 with *ret_time (and *ret_cpu, may be NULL), 0
 * when the record carries none (user records, no sample_id_all).
 */
int window_record_time(const struct perfrec_pdreader *r, const struct perf_event_header *rec, uint64_t *ret_time,
		       uint32_t *ret_cpu);

/* The count of samples a LOST or LOST_SAMPLES record says were lost; 0 for others. */
uint64_t window_record_lost(const struct perf_event_header *h);

/*
 * A --from/--to/--at value, any time perfrec_timespec__parse() reads, into
 * wall-clock ns; on error the problem on stderr as "perfrecctl CMD: OPT:
 * what is wrong" and -EINVAL.  Every command that takes a time uses it.
 */
int window_parse_time(const char *cmd, const char *opt, const char *v, uint64_t *ret_wall_ns);

/*
 * The directory perfrecd records into: /etc/perfrecd/perfrecd.conf's
 * [output] directory, else /var/lib/perfrecd.  Owned by the caller; NULL
 * when out of memory.
 */
char *window_default_dir(void);
/* The config file window_default_dir() reads. */
const char *window_default_config(void);

#endif
