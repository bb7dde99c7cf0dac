// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libFuzzer target for unwind tables (internal/unwtab.h).  The first byte says
 * what the rest is:
 *   0: a table file as unwtab_load() reads it, with the build id it names;
 *   1: the same with its checksum made right first, so that the checks of
 *      the rows are reached, and a table that loads is then walked by
 *      unwtab_unwind() over a stack made of the input's own bytes;
 *   2: an ELF file for unwtab_build_fd() (the seeds are small programs
 *      with .eh_frame and .debug_frame), whose table, if any, must have
 *      sorted rows of known kinds and survive a save and load.
 * Whatever the input, no crash, no leak, and only the documented errors.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "unwtab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Where the header keeps the build id's length, the build id and the checksum. */
#define OFF_BID_LEN 16
#define OFF_BID 24
#define OFF_SUM 56

static char dir[] = "/tmp/fuzz-unwtab-XXXXXX";
static int dirfd_ = -1;

static uint64_t fnv1a(const uint8_t *p, size_t len, size_t skip_at)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++) {
		h ^= i >= skip_at && i < skip_at + 8 ? 0 : p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static int find(void *ctx, uint64_t pc, const struct unwtab_row **row)
{
	if (pc >= 0x400000 && pc < 0x800000)
		return unwtab_find_row(ctx, 0x400000, pc, row);
	return pc >= 0x800000 && pc < 0x900000 ? 0 : -ENOENT;
}

static void walk(const struct unwtab *t, const uint8_t *data, size_t size)
{
	struct unwtab_frame fr[64];
	struct unwtab_result res;
	uint64_t base = 0x7ffd0000;
	struct unwtab_regs regs = { .sp = base, .bp = base + 64, .bp_valid = true };

	for (size_t i = 0; i < t->nr_rows && i < 16; i++) {
		regs.ip = 0x400000 + t->rows[i].start + (i & 1);
		if (unwtab_unwind(&regs, data, size, find, (void *)t, fr, 64, &res) < 0 || !res.nr_frames ||
		    res.nr_frames > 64)
			abort();
		regs.ip = 0x800010;
		if (unwtab_unwind(&regs, data, size, find, (void *)t, fr, 64, &res) < 0 || !res.nr_frames)
			abort();
	}
}

static void table(const uint8_t *data, size_t size, bool fix_sum)
{
	uint8_t *buf = malloc(size ? size : 1);
	struct unwtab *t = NULL;
	size_t bid_len = 20;
	int r;

	memcpy(buf, data, size);
	if (size > OFF_BID + 20)
		bid_len = buf[OFF_BID_LEN] % 21;
	if (fix_sum && size >= OFF_SUM + 8) {
		uint64_t sum = fnv1a(buf, size, OFF_SUM);

		memcpy(buf + OFF_SUM, &sum, 8);
	}
	r = unwtab_parse(buf, size, size > OFF_BID + 20 ? buf + OFF_BID : (const uint8_t *)"", bid_len, &t);
	if (r == 0) {
		for (size_t i = 1; i < t->nr_rows; i++)
			if (t->rows[i].start <= t->rows[i - 1].start)
				abort();
		walk(t, data, size);
		unwtab_free(t);
	} else if (r != -EBADMSG && r != -E2BIG && r != -ENOMEM) {
		abort();
	}
	free(buf);
}

static void elf(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz-unwtab", MFD_CLOEXEC), r;
	struct unwtab *t = NULL, *l = NULL;
	char name[UNWTAB_NAME_MAX];

	if (fd < 0 || write(fd, data, size) != (ssize_t)size)
		abort();
	r = unwtab_build_fd(fd, NULL, &t);
	close(fd);
	if (r < 0) {
		if (r != -EINVAL && r != -ENOENT && r != -ENODATA && r != -EBADMSG && r != -EFBIG && r != -E2BIG)
			abort();
		return;
	}
	for (size_t i = 0; i < t->nr_rows; i++)
		if ((i && t->rows[i].start <= t->rows[i - 1].start) ||
		    (t->rows[i].kind & UNWTAB_KIND_MASK) >= UNWTAB_NR_KINDS)
			abort();
	unwtab_file_name(t->build_id, t->build_id_len, name);
	unlinkat(dirfd_, name, 0);
	if (unwtab_save(t, dirfd_) < 0 || unwtab_load(dirfd_, t->build_id, t->build_id_len, &l) < 0 ||
	    l->nr_rows != t->nr_rows || (t->nr_rows && memcmp(l->rows, t->rows, t->nr_rows * sizeof(*t->rows))))
		abort();
	unlinkat(dirfd_, name, 0);
	unwtab_free(l);
	unwtab_free(t);
}

static void cleanup(void)
{
	char cmd[64];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (dirfd_ < 0) {
		if (!mkdtemp(dir) || (dirfd_ = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
			abort();
		atexit(cleanup);
	}
	if (!size)
		return 0;
	switch (data[0] % 3) {
	case 0:
		table(data + 1, size - 1, false);
		break;
	case 1:
		table(data + 1, size - 1, true);
		break;
	default:
		elf(data + 1, size - 1);
		break;
	}
	return 0;
}
