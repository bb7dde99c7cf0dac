// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Following a live process's perf map (perfmap.h): opened inside its
 * root, read incrementally, parsed line by line into a bounded table;
 * and its jitdump, into a table of its own (the end of this file).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "perfmap.h"

/* A line longer than this is no perf map line: skipped whole, counted. */
#define LINE_MAX_BYTES 4096
#define READ_CHUNK (64 * 1024)

void perfmap_init(struct perfmap *m, const struct perfmap_limits *lim)
{
	memset(m, 0, sizeof(*m));
	m->fd = -1;
	if (lim)
		m->lim = *lim;
	if (!m->lim.max_syms)
		m->lim.max_syms = 1u << 20;
	if (!m->lim.max_name_bytes)
		m->lim.max_name_bytes = 64u << 20;
	if (!m->lim.read_budget)
		m->lim.read_budget = 4u << 20;
	/* offsets into the names are 32-bit */
	if (m->lim.max_name_bytes > UINT32_MAX)
		m->lim.max_name_bytes = UINT32_MAX;
}

void perfmap_exit(struct perfmap *m)
{
	if (!m)
		return;
	if (m->fd >= 0)
		close(m->fd);
	free(m->line);
	free(m->syms);
	free(m->names);
	perfmap_init(m, &m->lim);
}

/* Hex digits with an optional 0x, at least one; advances *@p.  false: none or overflow. */
static bool parse_hex(const char **p, const char *end, uint64_t *ret)
{
	const char *s = *p;
	uint64_t v = 0;
	int n = 0;

	if (end - s > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') && isxdigit((unsigned char)s[2]))
		s += 2;
	for (; s < end && isxdigit((unsigned char)*s); s++, n++) {
		if (v >> 60)
			return false;
		v = v << 4 | (uint64_t)(isdigit((unsigned char)*s) ? *s - '0' : (tolower((unsigned char)*s) - 'a' + 10));
	}
	if (!n)
		return false;
	*p = s;
	*ret = v;
	return true;
}

/* The length of the valid UTF-8 sequence at @s (1..4), or 0. */
static size_t utf8_len(const unsigned char *s, const unsigned char *end)
{
	size_t n = *s >= 0xf0 && *s <= 0xf4 ? 4 : *s >= 0xe0 ? 3 : *s >= 0xc2 && *s < 0xe0 ? 2 : 0;

	if (!n || (size_t)(end - s) < n)
		return 0;
	for (size_t i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	/* overlong 3- and 4-byte forms, surrogates and beyond U+10FFFF */
	if ((n == 3 && s[0] == 0xe0 && s[1] < 0xa0) || (n == 3 && s[0] == 0xed && s[1] >= 0xa0) ||
	    (n == 4 && s[0] == 0xf0 && s[1] < 0x90) || (n == 4 && s[0] == 0xf4 && s[1] >= 0x90))
		return 0;
	return n;
}

/*
 * Copy the name into the table: control bytes and invalid UTF-8 become
 * '?' (names reach terminals, JSON and protobuf strings), cut at
 * PERFMAP_NAME_MAX.  false: the table is full.
 */
static bool add_name(struct perfmap *m, const char *s, size_t len, uint32_t *ret)
{
	size_t need;
	char *d;

	if (len > PERFMAP_NAME_MAX) {
		len = PERFMAP_NAME_MAX;
		m->st.cut_names++;
	}
	need = m->names_len + len + 1;
	if (need > m->lim.max_name_bytes)
		return false;
	if (need > m->names_cap) {
		size_t cap = m->names_cap ? m->names_cap * 2 : 4096;

		while (cap < need)
			cap *= 2;
		if (cap > m->lim.max_name_bytes)
			cap = m->lim.max_name_bytes;
		d = realloc(m->names, cap);
		if (!d)
			return false;
		m->names = d;
		m->names_cap = cap;
	}
	d = m->names + m->names_len;
	for (size_t i = 0; i < len;) {
		const unsigned char *u = (const unsigned char *)s + i;
		size_t n = *u < 0x80 ? 1 : utf8_len(u, (const unsigned char *)s + len);

		if (n > 1) {
			memcpy(d, u, n);
			d += n;
			i += n;
			continue;
		}
		*d++ = *u < 0x20 || *u >= 0x7f ? '?' : (char)*u;
		i++;
	}
	*d++ = '\0';
	*ret = (uint32_t)m->names_len;
	m->names_len = d - m->names;
	return true;
}

static void add_sym(struct perfmap *m, uint64_t start, uint64_t size, const char *name, size_t len)
{
	struct perfmap_sym *s;
	uint32_t off;

	if (m->nr_syms >= m->lim.max_syms) {
		m->st.over_limit++;
		return;
	}
	if (m->nr_syms == m->syms_cap) {
		size_t cap = m->syms_cap ? m->syms_cap * 2 : 256;

		if (cap > m->lim.max_syms)
			cap = m->lim.max_syms;
		s = reallocarray(m->syms, cap, sizeof(*s));
		if (!s) {
			m->st.over_limit++;
			return;
		}
		m->syms = s;
		m->syms_cap = cap;
	}
	if (!add_name(m, name, len, &off)) {
		m->st.over_limit++;
		return;
	}
	m->syms[m->nr_syms++] = (struct perfmap_sym){
		.start = start, .size = size, .name = off, .seq = (uint32_t)m->st.syms,
	};
	m->st.syms++;
}

/* One whole line without its newline: "START SIZE NAME". */
static void parse_line(struct perfmap *m, const char *s, size_t len)
{
	const char *p = s, *end = s + len;
	uint64_t start, size;

	m->st.lines++;
	if (len && end[-1] == '\r')
		end--;
	if (!parse_hex(&p, end, &start) || p == end || *p != ' ')
		goto bad;
	while (p < end && *p == ' ')
		p++;
	if (!parse_hex(&p, end, &size) || p == end || *p != ' ')
		goto bad;
	p++;
	/* a range that wraps, is empty or is no function's */
	if (!size || size > PERFMAP_SIZE_MAX || start + size < start || p == end)
		goto bad;
	add_sym(m, start, size, p, end - p);
	return;
bad:
	m->st.bad_lines++;
}

/* Keep the tail after the last newline for the next feed; bounded. */
static void keep_partial(struct perfmap *m, const char *s, size_t len)
{
	if (m->line_skip)
		return;
	if (m->line_len + len > LINE_MAX_BYTES) {
		m->line_skip = true;
		m->line_len = 0;
		m->st.long_lines++;
		return;
	}
	if (!m->line) {
		m->line = malloc(LINE_MAX_BYTES);
		if (!m->line) {
			/* no memory: this line is lost like a long one */
			m->line_skip = true;
			m->st.long_lines++;
			return;
		}
	}
	memcpy(m->line + m->line_len, s, len);
	m->line_len += len;
}

void perfmap_feed(struct perfmap *m, const char *buf, size_t len)
{
	if (m->jitdump) {
		perfmap_feed_jitdump(m, (const uint8_t *)buf, len);
		return;
	}
	const char *p = buf, *end = buf + len;

	m->st.bytes += len;
	while (p < end) {
		const char *nl = memchr(p, '\n', end - p);

		if (!nl) {
			keep_partial(m, p, end - p);
			return;
		}
		if (m->line_skip) {
			m->line_skip = false;
		} else if (m->line_len) {
			keep_partial(m, p, nl - p);
			if (!m->line_skip)
				parse_line(m, m->line, m->line_len);
			m->line_skip = false;
		} else if (nl - p > LINE_MAX_BYTES) {
			m->st.long_lines++;
		} else {
			parse_line(m, p, nl - p);
		}
		m->line_len = 0;
		p = nl + 1;
	}
}

int perfmap_nspid(pid_t pid)
{
	char path[64], line[256];
	int nspid = -ENOENT;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *last, *e;
		long v;

		if (strncmp(line, "NSpid:", 6))
			continue;
		line[strcspn(line, "\n")] = '\0';
		last = strrchr(line, '\t');
		last = last ? last + 1 : line + 6;
		errno = 0;
		v = strtol(last, &e, 10);
		nspid = errno || e == last || *e || v <= 0 || v > INT_MAX ? -EINVAL : (int)v;
		break;
	}
	fclose(f);
	return nspid;
}

/* The process's real and effective uid from /proc/PID/status. */
static int proc_uids(pid_t pid, uid_t *ruid, uid_t *euid)
{
	char path[64], line[256];
	unsigned long r, e;
	int ret = -ENOENT;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Uid: %lu %lu", &r, &e) == 2) {
			*ruid = (uid_t)r;
			*euid = (uid_t)e;
			ret = 0;
			break;
		}
	fclose(f);
	return ret;
}

static int check_file(int fd, uid_t uid, uid_t uid2)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if (st.st_nlink != 1)
		return -EPERM;
	if (uid != (uid_t)-1 && st.st_uid != uid && st.st_uid != uid2)
		return -EPERM;
	return 0;
}

static int openat2_in_root(int rootfd, const char *name, uint64_t resolve)
{
	struct open_how how = {
		/* O_NONBLOCK: a FIFO planted at the name must not hang the open */
		.flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | resolve,
	};
	long fd = syscall(SYS_openat2, rootfd, name, &how, sizeof(how));

	return fd < 0 ? -errno : (int)fd;
}

static int open_in_root(int rootfd, int nspid)
{
	char name[64];

	snprintf(name, sizeof(name), "tmp/perf-%d.map", nspid);
	return openat2_in_root(rootfd, name, RESOLVE_NO_SYMLINKS);
}

int perfmap_open_at(int rootfd, int nspid, uid_t uid)
{
	int fd = open_in_root(rootfd, nspid), r;

	if (fd < 0)
		return fd;
	r = check_file(fd, uid, uid);
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

/* @fd, the file just opened in a root, taken as @m's (checked to be @euid's or @ruid's regular file). */
static int adopt(struct perfmap *m, int fd, uid_t euid, uid_t ruid)
{
	int r = check_file(fd, euid, ruid);

	if (r < 0) {
		close(fd);
		return r;
	}
	if (m->fd >= 0)
		close(m->fd);
	m->fd = fd;
	m->off = 0;
	m->line_len = 0;
	m->line_skip = false;
	return 0;
}

int perfmap_root_hold(struct perfmap_root *r, pid_t pid)
{
	char path[64];
	int ret;

	r->fd = -1;
	ret = perfmap_nspid(pid);
	if (ret < 0)
		return ret;
	r->nspid = ret;
	ret = proc_uids(pid, &r->ruid, &r->euid);
	if (ret < 0)
		return ret;
	snprintf(path, sizeof(path), "/proc/%d/root", (int)pid);
	r->fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return r->fd < 0 ? -errno : 0;
}

void perfmap_root_drop(struct perfmap_root *r)
{
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
}

int perfmap_open_root(struct perfmap *m, const struct perfmap_root *r)
{
	int fd;

	if (r->fd < 0)
		return -EBADF;
	fd = open_in_root(r->fd, r->nspid);
	return fd < 0 ? fd : adopt(m, fd, r->euid, r->ruid);
}

/* @name (relative to the root) opened in @pid's root, checked to be its user's regular file. */
static int open_proc_file(struct perfmap *m, pid_t pid, const char *name, uint64_t resolve)
{
	char path[64];
	uid_t ruid = 0, euid = 0;
	int rootfd, fd, r;

	r = proc_uids(pid, &ruid, &euid);
	if (r < 0)
		return r;
	snprintf(path, sizeof(path), "/proc/%d/root", (int)pid);
	rootfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return -errno;
	fd = openat2_in_root(rootfd, name, resolve);
	close(rootfd);
	return fd < 0 ? fd : adopt(m, fd, euid, ruid);
}

int perfmap_open(struct perfmap *m, pid_t pid)
{
	char name[64];
	int nspid = perfmap_nspid(pid);

	if (nspid < 0)
		return nspid;
	snprintf(name, sizeof(name), "tmp/perf-%d.map", nspid);
	return open_proc_file(m, pid, name, RESOLVE_NO_SYMLINKS);
}

int perfmap_open_jitdump(struct perfmap *m, pid_t pid, const char *path)
{
	int r;

	if (path[0] != '/' || strlen(path) >= PATH_MAX)
		return -EINVAL;
	/* its directory is the runtime's choice (cwd, ~/.debug/jit/...): links there stay in the root */
	r = open_proc_file(m, pid, path + 1, 0);
	if (r == 0) {
		m->jitdump = true;
		m->jd_bad = m->jd_header = false;
		m->jd_need = 0;
		m->jd_skip = 0;
	}
	return r;
}

ssize_t perfmap_read(struct perfmap *m)
{
	char buf[READ_CHUNK];
	size_t total = 0;
	struct stat st;

	if (m->fd < 0)
		return -EBADF;
	if (fstat(m->fd, &st) < 0)
		return -errno;
	if ((uint64_t)st.st_size < m->off) {
		/* rewritten from scratch: its lines come again (duplicates resolve by order) */
		m->st.restarts++;
		m->off = 0;
		m->line_len = 0;
		m->line_skip = false;
		m->jd_bad = m->jd_header = false;
		m->jd_need = 0;
		m->jd_skip = 0;
	}
	while (total < m->lim.read_budget) {
		size_t want = m->lim.read_budget - total < sizeof(buf) ? m->lim.read_budget - total : sizeof(buf);
		ssize_t n = pread(m->fd, buf, want, (off_t)m->off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return total ? (ssize_t)total : -errno;
		}
		if (n == 0)
			break;
		m->off += n;
		total += n;
		perfmap_feed(m, buf, n);
	}
	return (ssize_t)total;
}

/*
 * --- jitdumps (perfmap_feed_jitdump()) ---
 * perf's binary format for JIT runtimes (tools/perf/util/jitdump.h documents it): a
 * header, then records of a fixed prefix (id, total size, time).  Only
 * the symbols are wanted: JIT_CODE_LOAD gives one (its name follows the
 * fixed fields, the code bytes after it), JIT_CODE_MOVE moves one.  A
 * record is taken into the map's line buffer as far as needed and the
 * rest skipped as it streams by, so a record of any size costs its
 * fixed part only, whatever the runtime claims.
 */
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
	/* not terminated within what was taken (the name was longer): add_sym() cuts it */
	add_sym(m, addr, size, name, n);
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
			add_sym(m, addr, size, name, strlen(name));
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
