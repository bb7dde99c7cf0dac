/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The build-id cache kept while recording (see bidcache.c): each binary an
 * executable MMAP2 names, copied (or hard-linked) by build id into
 * DIR/.build-id/xx/yyyy..., perf's layout, so that perf report
 * (--buildid-dir DIR, buildid.dir) and perfrecctl still find binaries that
 * were deleted, or lived in a container, once their processes are gone.
 * The cache is bounded in size; the oldest entries go first.
 */
#ifndef PERFRECD_BIDCACHE_H
#define PERFRECD_BIDCACHE_H

#include <stdbool.h>
#include <stdint.h>

#include <perfrec/format.h>

#include "sink.h"

#define BIDCACHE_DEFAULT_SIZE (1ULL << 30)

/*
 * Check the cache directory @dir (NULL or "": none) before privileges are
 * dropped: no symbolic link on the way, not writable by other users, owned
 * by root or @user; make it, and its .build-id, 0750 for @user/@group
 * (NULL or "": as we are) if missing.  0, or -errno, logged.
 */
int bidcache_prepare(const char *dir, const char *user, const char *group);

/*
 * Look at one record: an executable MMAP2 with a build id not yet in the
 * cache at @dir (NULL or "": no cache; nothing happens) is queued for a
 * worker thread that copies the binary while its process lives (through
 * /proc/PID/map_files, else /proc/PID/root).  @max_bytes bounds the
 * cache (0: BIDCACHE_DEFAULT_SIZE).  Cheap: a hash lookup on the caller's
 * thread; the copy never blocks it.  The cache is process-wide: a change of
 * @dir (a reload) starts over with the new one.
 */
void bidcache_note_mmap2(const char *dir, uint64_t max_bytes, const struct perf_event_header *rec);

/*
 * An entry perfrecd made in the cache at @dir itself (a JIT image,
 * jitsink.h): counted against @max_bytes and evicted oldest first like
 * the binaries copied in (the worker keeps that account).  Cheap: queued.
 */
void bidcache_note_entry(const char *dir, uint64_t max_bytes, const uint8_t *bid, uint8_t len);

/*
 * The cache fed by the drain: a sink (sink.h) whose record() notes each
 * MMAP2 with bidcache_note_mmap2(), its ctx pointing at the recording's
 * config pointer (const struct config **: a reload swaps the config).
 */
extern const struct sink_ops bidcache_sink_ops;

/*
 * The cache's cap in bytes for buildid-cache-size=: @bytes, @percent of
 * the file system holding @dir, or the smaller of both when both are set
 * (at least 1 MiB; both 0: BIDCACHE_DEFAULT_SIZE).
 */
uint64_t bidcache_budget(const char *dir, uint64_t bytes, unsigned percent);

/*
 * Ship the cache entries published file @path needs beside it: for each
 * build id of its HEADER_BUILD_ID table that @dir holds, @put(@ctx, entry
 * path, key) with the key of the file (@file_key) whose last component is
 * replaced by ".build-id/xx/yyyy...", so that the file's directory in the
 * store is a build-id dir for perf --buildid-dir.  Once per build id and
 * directory: a marker beside the entry remembers the key it went to.
 * Returns 0, -errno when @path cannot be read, or @put's first error.
 */
int bidcache_ship_entries(const char *dir, const char *path, const char *file_key,
			  int (*put)(void *ctx, const char *entry, const char *key), void *ctx);

/*
 * Wait until every queued copy is done (tests, shutdown).  Returns the
 * number of binaries the cache took in since it started.
 */
unsigned bidcache_sync(void);

/*
 * Keep the worker from taking jobs (@hold) or let it go again: tests use it
 * to have a process gone before its binary's turn comes.
 */
void bidcache_hold(bool hold);

/* Stop the worker and forget everything (tests, exit); the files stay. */
void bidcache_clear(void);

#endif
