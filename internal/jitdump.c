// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * jitdump files (perfmap.h's perfmap_feed_jitdump()): perf's binary
 * format for JIT runtimes (tools/perf/util/jitdump.h documents it): a
 * header, then records of a fixed prefix (id, total size, time).  Only
 * the symbols are wanted: JIT_CODE_LOAD gives one (its name follows the
 * fixed fields, the code bytes after it), JIT_CODE_MOVE moves one.  A
 * record is taken into the map's line buffer as far as needed and the
 * rest skipped as it streams by, so a record of any size costs its
 * fixed part only, whatever the runtime claims.
 */
#include <stdlib.h>
#include <string.h>

#include "perfmap.h"

#define JITDUMP_MAGIC 0x4A695444u
#define HEADER_SIZE 40          /* magic, version, total_size, elf_mach, pad, pid, timestamp, flags */
#define HEADER_MAX 4096         /* a header claiming more is no jitdump */
#define PREFIX 16               /* id, total_size, timestamp */
#define LOAD_FIXED (PREFIX + 40) /* pid, tid, vma, code_addr, code_size, code_index */
#define MOVE_SIZE (PREFIX + 48)  /* pid, tid, vma, old_code_addr, new_code_addr, code_size, code_index */
#define MOVE_LOOKBACK 65536     /* symbols searched for a moved one's name */

enum { JIT_CODE_LOAD = 0, JIT_CODE_MOVE = 1 };

static uint32_t u32_at(const char *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static uint64_t u64_at(const char *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static void code_load(struct perfmap *m, const char *r, size_t len)
{
	uint64_t addr = u64_at(r + PREFIX + 16), size = u64_at(r + PREFIX + 24);
	const char *name = r + LOAD_FIXED;
	size_t n = strnlen(name, len - LOAD_FIXED);

	if (!size || size > PERFMAP_SIZE_MAX || addr + size < addr || !n) {
		m->st.bad_lines++;
		return;
	}
	/* not terminated within what was taken (the name was longer): perfmap_add_sym() cuts it */
	perfmap_add_sym(m, addr, size, name, n);
}

static void code_move(struct perfmap *m, const char *r)
{
	uint64_t old = u64_at(r + PREFIX + 16), addr = u64_at(r + PREFIX + 24), size = u64_at(r + PREFIX + 32);
	size_t stop = m->nr_syms > MOVE_LOOKBACK ? m->nr_syms - MOVE_LOOKBACK : 0;

	if (!size || size > PERFMAP_SIZE_MAX || addr + size < addr) {
		m->st.bad_lines++;
		return;
	}
	for (size_t i = m->nr_syms; i > stop; i--) {
		const struct perfmap_sym *s = &m->syms[i - 1];

		if (s->start == old) {
			/* the name is copied first: adding may move the names */
			char name[PERFMAP_NAME_MAX + 1];

			strcpy(name, perfmap_sym_name(m, s));
			perfmap_add_sym(m, addr, size, name, strlen(name));
			return;
		}
	}
	m->st.bad_lines++;   /* a move of code it never loaded (or long ago) */
}

/* The record (or header) in the buffer is complete as far as it is needed. */
static void taken(struct perfmap *m)
{
	const char *r = m->line;

	if (!m->jd_header) {
		uint32_t size = u32_at(r + 8);

		if (u32_at(r) != JITDUMP_MAGIC || size < HEADER_SIZE || size > HEADER_MAX) {
			m->jd_bad = true;   /* another byte order, another format */
			m->st.bad_lines++;
			return;
		}
		m->jd_header = true;
		m->jd_skip = size - HEADER_SIZE;
		return;
	}
	if (m->jd_need == PREFIX) {
		uint32_t id = u32_at(r), size = u32_at(r + 4);

		m->st.lines++;
		if (size < PREFIX) {
			m->jd_bad = true;   /* no way to the next record */
			m->st.bad_lines++;
			return;
		}
		if (id == JIT_CODE_LOAD && size > LOAD_FIXED) {
			m->jd_need = size < LOAD_FIXED + PERFMAP_NAME_MAX + 1 ? size : LOAD_FIXED + PERFMAP_NAME_MAX + 1;
			m->jd_skip = size - m->jd_need;
			return;
		}
		if (id == JIT_CODE_MOVE && size >= MOVE_SIZE) {
			m->jd_need = MOVE_SIZE;
			m->jd_skip = size - MOVE_SIZE;
			return;
		}
		m->jd_skip = size - PREFIX;   /* debug info, unwinding info, close: not wanted */
		return;
	}
	if (u32_at(r) == JIT_CODE_LOAD)
		code_load(m, r, m->jd_need);
	else
		code_move(m, r);
}

void perfmap_feed_jitdump(struct perfmap *m, const uint8_t *buf, size_t len)
{
	const char *p = (const char *)buf, *end = p + len;

	if (!m->jitdump)
		m->jitdump = true;
	m->st.bytes += len;
	while (p < end && !m->jd_bad) {
		size_t n;

		/* a record's rest is skipped once what was needed of it is taken */
		if (m->jd_skip && !m->line_len) {
			n = (uint64_t)(end - p) < m->jd_skip ? (size_t)(end - p) : (size_t)m->jd_skip;
			m->jd_skip -= n;
			p += n;
			continue;
		}
		if (!m->line && !(m->line = malloc(LOAD_FIXED + PERFMAP_NAME_MAX + 1))) {
			m->jd_bad = true;
			return;
		}
		if (!m->line_len && !m->jd_need)
			m->jd_need = m->jd_header ? PREFIX : HEADER_SIZE;
		n = m->jd_need - m->line_len;
		if (n > (size_t)(end - p))
			n = end - p;
		memcpy(m->line + m->line_len, p, n);
		m->line_len += n;
		p += n;
		if (m->line_len < m->jd_need)
			return;
		{
			size_t need = m->jd_need;

			taken(m);
			/* taken() asked for more of the same record, or it is done */
			if (m->jd_need == need)
				m->jd_need = 0, m->line_len = 0;
		}
	}
}
