// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests of the jitdump parser (internal/perfmap.c): a jitdump's JIT_CODE_LOAD records
 * become symbols and its JIT_CODE_MOVE ones move them, whatever pieces
 * the file arrives in; code bytes and other records are skipped; a file
 * of another format or byte order, or a record that cannot be stepped
 * over, ends the reading, counted.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "perfmap.h"

struct dump {
	uint8_t b[1 << 16];
	size_t len;
};

static void put(struct dump *d, const void *p, size_t n)
{
	cr_assert_leq(d->len + n, sizeof(d->b));
	memcpy(d->b + d->len, p, n);
	d->len += n;
}

static void put32(struct dump *d, uint32_t v) { put(d, &v, 4); }
static void put64(struct dump *d, uint64_t v) { put(d, &v, 8); }

static void header(struct dump *d, uint32_t magic)
{
	put32(d, magic);
	put32(d, 1);         /* version */
	put32(d, 40);        /* total_size */
	put32(d, 62);        /* EM_X86_64 */
	put32(d, 0);
	put32(d, 1234);      /* pid */
	put64(d, 1);         /* timestamp */
	put64(d, 0);         /* flags */
}

static void load(struct dump *d, uint64_t addr, uint64_t size, const char *name, size_t code)
{
	size_t n = strlen(name) + 1;

	put32(d, 0);
	put32(d, (uint32_t)(16 + 40 + n + code));
	put64(d, 2);
	put32(d, 1234);
	put32(d, 1234);
	put64(d, addr);      /* vma */
	put64(d, addr);      /* code_addr */
	put64(d, size);
	put64(d, 7);         /* code_index */
	put(d, name, n);
	for (size_t i = 0; i < code; i++)
		put(d, "\xcc", 1);
}

static void move(struct dump *d, uint64_t from, uint64_t to, uint64_t size)
{
	put32(d, 1);
	put32(d, 16 + 48);
	put64(d, 3);
	put32(d, 1234);
	put32(d, 1234);
	put64(d, to);
	put64(d, from);
	put64(d, to);
	put64(d, size);
	put64(d, 7);
}

static void other(struct dump *d, uint32_t id, uint32_t size)
{
	put32(d, id);
	put32(d, size);
	put64(d, 4);
	for (uint32_t i = 16; i < size; i++)
		put(d, "\0", 1);
}

static struct dump *sample(void)
{
	struct dump *d = calloc(1, sizeof(*d));

	header(d, 0x4A695444);
	load(d, 0x7f0000001000, 0x100, "JS:*fibonacciRecurse /w/a.js:1:26", 4000);
	other(d, 2, 300);   /* debug info */
	other(d, 4, 64);    /* unwinding info */
	load(d, 0x7f0000002000, 0x80, "py::hot_loop:/w/b.py", 17);
	move(d, 0x7f0000001000, 0x7f0000009000, 0x100);
	return d;
}

static void check(const struct perfmap *m)
{
	cr_assert_eq(m->nr_syms, 3, "%zu symbols", m->nr_syms);
	cr_assert_eq(m->syms[0].start, 0x7f0000001000);
	cr_assert_eq(m->syms[0].size, 0x100);
	cr_assert_str_eq(perfmap_sym_name(m, &m->syms[0]), "JS:*fibonacciRecurse /w/a.js:1:26");
	cr_assert_str_eq(perfmap_sym_name(m, &m->syms[1]), "py::hot_loop:/w/b.py");
	cr_assert_eq(m->syms[2].start, 0x7f0000009000);
	cr_assert_str_eq(perfmap_sym_name(m, &m->syms[2]), "JS:*fibonacciRecurse /w/a.js:1:26");
	cr_assert_eq(m->st.lines, 5);
	cr_assert_eq(m->st.bad_lines, 0);
}

Test(jitdump, loads_and_moves_in_one_piece_or_byte_by_byte)
{
	struct dump *d = sample();
	struct perfmap m;

	perfmap_init(&m, NULL);
	perfmap_feed_jitdump(&m, d->b, d->len);
	check(&m);
	perfmap_exit(&m);
	perfmap_init(&m, NULL);
	for (size_t i = 0; i < d->len; i++)
		perfmap_feed_jitdump(&m, d->b + i, 1);
	check(&m);
	perfmap_exit(&m);
	free(d);
}

Test(jitdump, another_format_or_byte_order_is_not_read)
{
	struct dump *d = calloc(1, sizeof(*d));
	struct perfmap m;

	header(d, 0x4454694A);   /* the other byte order */
	load(d, 0x1000, 0x10, "f", 0);
	perfmap_init(&m, NULL);
	perfmap_feed_jitdump(&m, d->b, d->len);
	cr_assert_eq(m.nr_syms, 0);
	cr_assert(m.jd_bad);
	perfmap_exit(&m);
	free(d);
}

Test(jitdump, bad_records_are_counted_and_a_broken_size_ends_it)
{
	struct dump *d = calloc(1, sizeof(*d));
	struct perfmap m;

	header(d, 0x4A695444);
	load(d, 0x1000, 0, "empty", 0);
	load(d, UINT64_MAX - 4, 0x10, "wraps", 0);
	move(d, 0x5000, 0x6000, 0x10);        /* of code never loaded */
	load(d, 0x2000, 0x10, "good", 0);
	other(d, 9, 16);
	put32(d, 0);
	put32(d, 8);                          /* smaller than its own prefix */
	put64(d, 0);
	load(d, 0x3000, 0x10, "after", 0);
	perfmap_init(&m, NULL);
	perfmap_feed_jitdump(&m, d->b, d->len);
	cr_assert_eq(m.nr_syms, 1);
	cr_assert_str_eq(perfmap_sym_name(&m, &m.syms[0]), "good");
	cr_assert_eq(m.st.bad_lines, 4);
	cr_assert(m.jd_bad);
	perfmap_exit(&m);
	free(d);
}

Test(jitdump, a_huge_record_is_skipped_not_held)
{
	struct dump *d = calloc(1, sizeof(*d));
	struct perfmap m;
	uint8_t zeros[4096] = { 0 };
	char longname[3000];

	header(d, 0x4A695444);
	/* a record claiming 3 GiB of code: only its fixed part is taken */
	put32(d, 0);
	put32(d, 0xC0000000u);
	put64(d, 2);
	perfmap_init(&m, NULL);
	perfmap_feed_jitdump(&m, d->b, d->len);
	for (int i = 0; i < 100; i++)
		perfmap_feed_jitdump(&m, zeros, sizeof(zeros));
	cr_assert_eq(m.nr_syms, 0);
	cr_assert_geq(m.jd_skip, 0xC0000000u - 16 - 100 * sizeof(zeros) - 1024 - 64);
	perfmap_exit(&m);

	/* a name longer than a name may be: cut, counted */
	d->len = 0;
	header(d, 0x4A695444);
	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	load(d, 0x1000, 0x10, longname, 5);
	load(d, 0x2000, 0x10, "next", 5);
	perfmap_init(&m, NULL);
	perfmap_feed_jitdump(&m, d->b, d->len);
	cr_assert_eq(m.nr_syms, 2);
	cr_assert_eq(strlen(perfmap_sym_name(&m, &m.syms[0])), PERFMAP_NAME_MAX);
	cr_assert_str_eq(perfmap_sym_name(&m, &m.syms[1]), "next");
	cr_assert_eq(m.st.cut_names, 1);
	perfmap_exit(&m);
	free(d);
}
