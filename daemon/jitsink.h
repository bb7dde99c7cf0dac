/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * JIT frames named from the recording alone (issue 26): a sink (sink.h)
 * behind the file that sees each anonymous executable MMAP2 (JIT code,
 * perf's "//anon"), follows the perf map of that process while it lives
 * (perfmap.h, incrementally, bounded) and, for the file being recorded
 * and the flight history (snapshots):
 *
 *   - right after that MMAP2 (same trailer, one nanosecond later, so that
 *     every reader applies it last) writes an MMAP2 of the same range
 *     naming /perfrec-jit/jit-PID-START-LEN.so with pgoff 0 and a build
 *     id (PERF_RECORD_MISC_MMAP_BUILD_ID), which the file's build-id
 *     table then carries too;
 *   - when the file ends, writes each such mapping's image (jitimage.h:
 *     the symbols of the perf map within it) into the build-id cache
 *     under that build id; a snapshot writes those it holds, again when
 *     more symbols are known since (jitsink_write_images()).
 *
 * The build id cannot be a hash of the image: the MMAP2 must be in the
 * file before the samples it explains (readers apply records in time
 * order), and the runtime announces its functions after that.  It is a
 * hash of a random per-file salt, the pid and the range: unique, and
 * never reused for other contents.
 *
 * A process without a perf map when first seen has its root held open
 * (perfmap_root_hold(), JITSINK_MAX_ROOTS of them) until its map opens:
 * the JVM writes its map only as it exits, when /proc/PID/root is gone,
 * and it is read through that root when the EXIT comes.
 *
 * Bounded: processes followed, mappings per process and per-process
 * symbols and name bytes (perfmap limits), bytes read per pass; what is
 * left out is counted in struct jitsink_stats.  All on the draining
 * thread; not thread-safe.
 */
#ifndef PERFRECD_JITSINK_H
#define PERFRECD_JITSINK_H

#include <stdbool.h>
#include <stdint.h>

#include <linux/perf_event.h>

#include "config.h"
#include "perfmap.h"
#include "sink.h"

#define JITSINK_MAX_PROCS 1024
#define JITSINK_MAX_MAPS 1024   /* per process and file */
/* Roots held of processes without a perf map yet (each an fd: the JVM writes its map at exit) */
#define JITSINK_MAX_ROOTS 256
/* Symbol tables of all processes together (each: 256 Ki symbols, 16 MiB of names at most) */
#define JITSINK_MEM_MAX (128ull << 20)

struct jitsink_stats {
	uint64_t procs;        /* processes whose JIT maps were followed */
	uint64_t maps;         /* synthetic MMAP2s written */
	uint64_t images;       /* images written into the cache */
	uint64_t image_syms;   /* symbols in them */
	uint64_t no_map;       /* JIT mappings of processes without a readable perf map */
	uint64_t skipped;      /* mappings or processes over the bounds, or no time to order them by */
	uint64_t failed;       /* images that could not be written */
	uint64_t over_memory;  /* reads left out: JITSINK_MEM_MAX reached */
	uint64_t roots_held;   /* now: roots held open of processes without a perf map yet */
	uint64_t roots_refused; /* processes whose root was not held: JITSINK_MAX_ROOTS reached */
	uint64_t maps_at_exit; /* perf maps read through a held root once the process was gone */
	uint64_t refused;      /* processes whose perf map or jitdump was refused (a link, a FIFO, not theirs) */
	struct perfmap_stats perfmap; /* summed over processes that ended (jitsink_stats(): and those followed) */
};

struct jitsink_opts {
	/* the side-band event's sample_type: where an MMAP2's time is */
	uint64_t sideband_sample_type;
	/* write @h into the current file (and note its build id); 0 or -errno */
	int (*emit)(void *ctx, const struct perf_event_header *h);
	void *ctx;
	/* bounds of each process's perf map (0 fields: 256 Ki symbols, 16 MiB of names, 1 MiB a read) */
	struct perfmap_limits limits;
};

struct jitmap;
struct jitproc;

struct jitsink {
	struct sink sink;          /* first: the drain's handle */
	const struct config *const *cfg; /* the recording's config pointer (a reload swaps it) */
	struct jitsink_opts o;
	uint8_t salt[16];          /* of the current file */
	struct jitproc **procs;
	size_t nr_procs;
	uint64_t next_read_ns;
	/* a second output: the flight history, its MMAP2 in the ring of the record it follows */
	int (*history)(void *ctx, size_t ring, const struct perf_event_header *h, uint64_t time);
	void *history_ctx;
	size_t ring;               /* the ring of the record being noted */
	uint64_t newest;           /* the newest record time seen */
	/*
	 * Flight mode: no file ends, snapshots come any time; processes that
	 * exited are kept (their symbols, their mappings' build ids) this
	 * long past their exit for the snapshots whose window holds their
	 * samples.  0: until the file ends.
	 */
	uint64_t keep_exited_ns;
	uint64_t file_seq;         /* counts files begun: a synthetic mapping's MMAP2 is once per file */
	uint64_t synth_seq;        /* synthetic mappings made: each one's build id its own */
	struct jitsink_stats st;
};

/* Ready, with no file yet; @cfg borrowed for the sink's life. */
void jitsink_init(struct jitsink *js, const struct config *const *cfg, const struct jitsink_opts *o);
/* Free everything (the cache's files stay).  NULL-safe. */
void jitsink_exit(struct jitsink *js);
/* The owner moved the struct: its sink's ctx follows. */
void jitsink_moved(struct jitsink *js);

/* A new file begins: a new salt, no mapping of it yet. */
void jitsink_file_begin(struct jitsink *js);
/*
 * The current file ends (every record of it seen): read what the perf
 * maps gained, write the images of its mappings into the cache, forget
 * processes that exited.
 */
void jitsink_file_end(struct jitsink *js);

/*
 * A snapshot is being written: read what the perf maps gained and write
 * the image of every mapping known now into the cache, each written
 * before replaced if more of its symbols are known now; nothing forgotten.
 */
void jitsink_write_images(struct jitsink *js);

/* The counters since start, the perf maps of the processes followed now included. */
void jitsink_get_stats(const struct jitsink *js, struct jitsink_stats *ret);

/*
 * Add @s's counters into @t (roots_held, a gauge, stays @t's): totals across
 * a reload.  Inline: the metrics sum them without linking the sink.
 */
static inline void jitsink_stats_add(struct jitsink_stats *t, const struct jitsink_stats *s)
{
	t->procs += s->procs;
	t->maps += s->maps;
	t->images += s->images;
	t->image_syms += s->image_syms;
	t->no_map += s->no_map;
	t->skipped += s->skipped;
	t->failed += s->failed;
	t->over_memory += s->over_memory;
	t->roots_refused += s->roots_refused;
	t->maps_at_exit += s->maps_at_exit;
	t->refused += s->refused;
	perfmap_stats_add(&t->perfmap, &s->perfmap);
}

/*
 * Synthetic mappings (issue 27): code that has no mapping of its own in
 * the process (Python functions, one address per code object) given a
 * range the process cannot map, named like a JIT mapping: an MMAP2 of
 * /perfrec-jit/KIND-PID-START-LEN.so with a build id of this file, and an
 * image of the symbols given (jitsink_synth_sym()) written into the cache
 * with the JIT images, at the file's end and at snapshots.  The caller
 * emits the MMAP2 itself, before the first sample that uses the range, in
 * every output that gets such samples, once per file (file_seq changes).
 * Its process's perf map is not looked for on its account.
 *
 * jitsink_synth_map(): the MMAP2 of [@start, @start + @len) of @pid
 * (@tid in its body), ending in @trailer (@trailer_len bytes: the
 * side-band event's sample_id for the caller's reader), into @buf (@cap
 * bytes); @kind (static) starts the file name.  Its size, or -ENOENT (no
 * build-id cache: no image could be written), -ENOSPC (over the bounds,
 * counted in skipped), -EINVAL.
 */
int jitsink_synth_map(struct jitsink *js, uint32_t pid, uint32_t tid, uint64_t start, uint64_t len,
		      const char *kind, const void *trailer, size_t trailer_len, void *buf, size_t cap);
/*
 * A symbol @name at [@start, @start + @size) of @pid's synthetic mappings,
 * for their images from now on (every later file's too, while @pid
 * lives).  @name holds no newline.  0, or -ENOENT (no cache), -ENOSPC (the
 * perf map limits or JITSINK_MEM_MAX), -EINVAL, -ENAMETOOLONG.
 */
int jitsink_synth_sym(struct jitsink *js, uint32_t pid, uint64_t start, uint64_t size, const char *name);

/* A record of the file's synthesized state, as if drained. */
void jitsink_note(struct jitsink *js, const struct perf_event_header *h);

extern const struct sink_ops jitsink_ops;

#endif
