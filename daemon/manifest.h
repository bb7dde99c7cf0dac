/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The JSON manifest written beside each published file ("<file>.json") so a
 * fleet's central store can find and trust files without opening them:
 * which host and boot, when, what was recorded at what frequency, samples
 * and lost per CPU, size and SHA-256 of the file, and the configured labels.
 */
#ifndef PERFRECD_MANIFEST_H
#define PERFRECD_MANIFEST_H

#include <stdint.h>

#include "config.h"
#include "manifest-cgroup.h"

struct manifest_cpu {
	int cpu;
	uint64_t samples, lost;
	uint64_t dropped; /* of lost: refused by the disk */
};

struct manifest_unwind {
	uint64_t samples;  /* DWARF samples unwound on the host */
	uint64_t unwound;  /* ... with at least one caller found */
	uint64_t behind;   /* written with their sampled ip only: the unwinder was behind */
	uint64_t dropped;  /* could not be rewritten: not in the file */
	uint64_t trimmed;  /* queued only up to their thread's stack top (unwind-sink.h) */
	uint64_t trim_missed; /* walks that wanted a word past such a copy */
};

struct manifest_info {
	const char *path;          /* the published file (its final name) */
	const char *data_path;     /* where its bytes are now, to hash (NULL: @path) */
	const char *host;
	uint64_t start_wall_ns, end_wall_ns; /* 0: unknown (a recovered file) */
	const struct config *cfg;  /* events, frequency, labels */
	uint64_t freq;             /* frequency the file was recorded at (governor) */
	uint64_t freq_min, freq_max; /* lowest and highest while it was recorded (governor; 0: none) */
	const struct manifest_cpu *cpus;
	size_t nr_cpus;
	uint64_t samples, lost;
	uint64_t dropped;          /* of lost: samples the disk refused (full disk) */
	int recovered;
	/* unwind=host: what the unwinder did with this file's samples (NULL: not counted) */
	const struct manifest_unwind *unwind;
	/* counted while the file was written (manifest-cgroup.h); NULL: read the file */
	const struct cgroup_counts *cgroups;
	/*
	 * Called every few MiB while the file is read back for its hash, so
	 * the caller can keep draining its rings (NULL: none).
	 */
	void (*progress)(void *ctx);
	void *progress_ctx;
};

/*
 * Write "<path>.json" atomically (tmp, fsync, rename, fsync of the
 * directory), so that once it returns 0 the manifest survives a crash and
 * the data file may take its final name.  0 or -errno.
 */
int manifest_write(const struct manifest_info *mi);

/*
 * The manifest of a file whose recording state is gone (recovered from a
 * .tmp, or published by a run that died before its manifest): samples,
 * lost and per-CPU counts and the time span are read from the file itself,
 * so the manifest says what the file holds.  @mi supplies path, host, cfg,
 * recovered; the counts in it are ignored.  0 or -errno (-EBADMSG: the file
 * is not sound, no manifest written).
 */
int manifest_write_from_file(const struct manifest_info *mi);

/* "<path>.json"'s "sha256" into @hex (65 bytes).  0 or -errno (-ENOENT: none). */
int manifest_read_sha256(const char *path, char hex[65]);

/*
 * Hex SHA-256 of a file into @hex (65 bytes) and its size, calling
 * @progress (if not NULL) every few MiB.  0 or -errno.
 */
int manifest_sha256(const char *path, char hex[65], uint64_t *ret_size,
		    void (*progress)(void *ctx), void *progress_ctx);

#endif
