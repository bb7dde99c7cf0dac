/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The unwind tables (unwtab.h) the host unwinder (lib/unwind.c) walks, one
 * per ELF file, shared by every process that maps it (private to
 * perfrecd; not exported).
 *
 * In memory: an LRU bounded in bytes and in count; a table evicted is
 * loaded or built again when used again (stats.evicted).  Every eviction
 * bumps unwtab_cache_generation(), so that a caller keeping a table's
 * pointer (a process's map) knows to ask again.
 *
 * On disk (when a directory is given, perfrecd's build-id cache): tables
 * of files with a build id go into DIR/.unwtab/<build id>.unwtab, so that a
 * restart loads them instead of building them.  The directory is made
 * 0700, and used only if it is ours and no one else can write to it.  A
 * table file that does not check (damaged, cut, another version or build
 * id) is removed, counted (stats.refused) and built again.  The files
 * together are bounded in bytes: past the bound the least recently used
 * go (stats.disk_evicted).
 *
 * Not thread-safe: the unwinder's.
 */
#ifndef PERFREC_UNWTAB_CACHE_H
#define PERFREC_UNWTAB_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "unwtab.h"

struct unwtab_cache;

#define UNWTAB_CACHE_DEFAULT_BYTES (256ULL << 20)
#define UNWTAB_CACHE_DEFAULT_COUNT 1024
#define UNWTAB_CACHE_DEFAULT_DISK_BYTES (512ULL << 20)
#define UNWTAB_CACHE_SUBDIR ".unwtab"

struct unwtab_cache_opts {
	const char *dir;          /* the build-id cache directory; NULL or "": memory only */
	uint64_t max_bytes;       /* tables in memory (0: UNWTAB_CACHE_DEFAULT_BYTES) */
	size_t max_tables;        /* ... and their count (0: UNWTAB_CACHE_DEFAULT_COUNT) */
	uint64_t max_disk_bytes;  /* table files on disk (0: UNWTAB_CACHE_DEFAULT_DISK_BYTES) */
};

struct unwtab_cache_stats {
	uint64_t hits;            /* look-ups the memory cache answered */
	uint64_t built;           /* tables built from an ELF file's CFI */
	uint64_t loaded;          /* tables loaded from disk */
	uint64_t saved;           /* tables written to disk */
	uint64_t refused;         /* table files refused (damaged, cut, foreign): removed, rebuilt */
	uint64_t no_cfi;          /* files without CFI: their code is walked by frame pointers */
	uint64_t failed;          /* files whose CFI made no table (bad, too big): libdwfl unwinds there */
	uint64_t evicted;         /* tables dropped from memory for the bounds */
	uint64_t disk_evicted;    /* table files removed for the disk bound */
	uint64_t disk_errors;     /* the directory could not be used, or a file not written */
	size_t tables;            /* in memory now */
	uint64_t bytes;           /* their sizes */
	uint64_t disk_bytes;      /* table files now (as far as this cache knows) */
};

/* 0, -EINVAL, -ENOMEM.  The directory is opened at the first table saved or loaded. */
int unwtab_cache_new(const struct unwtab_cache_opts *opts, struct unwtab_cache **ret);
void unwtab_cache_free(struct unwtab_cache *c);

/*
 * How to get at a file when its table is neither in memory nor on disk:
 * @open returns an fd of it (ours to close) or -errno; the cache builds
 * the table from it and checks that its build id is @build_id (when the
 * key is one).  -ENOENT from @open: the file is not to be had.
 */
typedef int (*unwtab_open_fn)(void *ctx, int attempt);

/*
 * The table of the file keyed @key (its build id in hex, or another unique
 * name for a file without one: then it is kept in memory only), looked up
 * in memory, then on disk, then built.  Returns 1 with *ret_table (valid
 * until the next call), 0 when the file has no table and will not get one
 * (*ret_table NULL; *ret_dwfl set when libdwfl may still unwind it: its
 * CFI did not make a table), -ENOENT when the file is not to be had, or
 * -ENOMEM.  @open is called with attempt 0, 1, ... while it returns fds
 * whose build id is not the one wanted.
 */
int unwtab_cache_get(struct unwtab_cache *c, const char *key, const uint8_t *build_id, size_t build_id_len,
		     unwtab_open_fn open, void *ctx, const struct unwtab **ret_table, bool *ret_dwfl);

/* Bumped by every eviction: table pointers handed out before may be gone. */
uint64_t unwtab_cache_generation(const struct unwtab_cache *c);

void unwtab_cache_stats(const struct unwtab_cache *c, struct unwtab_cache_stats *ret);

#endif
