/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * JIT images: the symbols a JIT runtime announced for one executable
 * mapping of its process (perfmap.h) made into a small ELF file with a
 * build id, so that a recording names that code from a build-id cache
 * alone, after the process, its perf map and its /tmp are gone, on any
 * machine: perf report (an old-style DIR/.build-id/xx/yyyy entry),
 * hotspot's perfparser and perfrecd's own symbolizer read it like any
 * other binary.
 *
 * The image stands for the mapping as a whole, at offset 0 (the MMAP2
 * that points at it has pgoff 0): one PT_LOAD at address 0 and file
 * offset 0 spanning the mapping, a .text of that size that is NOBITS
 * (the code is not kept: the file stays a few bytes per symbol), a
 * .symtab of STT_FUNC symbols at their offsets in the mapping, and a
 * .note.gnu.build-id.  Address == file offset everywhere, so readers
 * that turn a symbol's address into a file offset (perf: p_vaddr -
 * p_offset, or sh_addr - sh_offset) and those that report the file at
 * the mapping's start (libdwfl) agree.
 */
#ifndef PERFREC_JITIMAGE_H
#define PERFREC_JITIMAGE_H

#include <stddef.h>
#include <stdint.h>

#define JITIMAGE_BID_LEN 20

struct jitimage_sym {
	uint64_t off;       /* from the mapping's start */
	uint64_t size;
	const char *name;   /* NUL-terminated, borrowed */
};

/*
 * The ELF image of @n symbols (each within [0, @map_len), sorted by
 * @off or not) for a mapping of @map_len bytes, with build id @bid, in
 * a buffer the caller frees.  0, -EINVAL (a symbol outside the mapping,
 * @map_len 0) or -ENOMEM.
 */
int jitimage_build(const struct jitimage_sym *syms, size_t n, uint64_t map_len,
		   const uint8_t bid[JITIMAGE_BID_LEN], void **ret_buf, size_t *ret_len);

/*
 * Store @len bytes of @buf as the entry of @bid under the build-id
 * directory @bidfd (DIR/.build-id, checked by its owner): xx/yyyy...,
 * made through a new file of mode @mode (O_CREAT|O_EXCL|O_NOFOLLOW)
 * renamed into place without replacing anything.  0, -EEXIST (an entry
 * is there already; left alone) or -errno.
 */
int jitimage_store(int bidfd, const uint8_t bid[JITIMAGE_BID_LEN], const void *buf, size_t len,
		   unsigned mode);

/*
 * jitimage_store(), but an entry of @bid already there (a regular file)
 * is replaced atomically (rename): the image of a mapping written again
 * with more of its symbols (a later snapshot).  -EEXIST if the entry is
 * not a regular file.
 */
int jitimage_replace(int bidfd, const uint8_t bid[JITIMAGE_BID_LEN], const void *buf, size_t len,
		     unsigned mode);

/* @bid as the path under a build-id directory: "xx/yyyy..." (2 + 1 + 38 + NUL). */
void jitimage_bid_path(const uint8_t bid[JITIMAGE_BID_LEN], char out[2 * JITIMAGE_BID_LEN + 2]);

#endif
