// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Synthesis of the state that existed before recording began: the kernel
 * and module maps (from kallsyms and /proc/modules) and, for every task in
 * /proc, FORK + COMM records and the MMAP2 records of its executable
 * mappings, laid out as perf 6.1 writes them so its readers (and hotspot's
 * perfparser) rebuild the same process tree.  Each record carries the
 * sample_id trailer of the side-band attr with a real timestamp.  It runs on
 * hosts with tens of thousands of threads, so files are read with plain
 * open/read into buffers allocated once per call, directories are walked
 * once with openat() relative to their parent, and build ids are looked up
 * once per (device, inode).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <perfrec/buildid.h>
#include <perfrec/event.h>
#include <perfrec/synth.h>

#include "vdso.h"

/* task_struct flag the kernel reports in /proc/<pid>/stat: a kernel thread. */
#define PF_KTHREAD_FLAG 0x00200000u

#define ALIGN8(x) (((x) + 7) & ~(size_t)7)

/* PERF_RECORD_MMAP2 up to its filename (perf_event.h documents the layout). */
struct mmap2_head {
	struct perf_event_header header;
	uint32_t pid, tid;
	uint64_t start, len, pgoff;
	union {
		struct {
			uint32_t maj, min;
			uint64_t ino, ino_generation;
		};
		struct {
			uint8_t build_id_size;
			uint8_t reserved1;
			uint16_t reserved2;
			uint8_t build_id[20];
		};
	};
	uint32_t prot, flags;
};

_Static_assert(sizeof(struct mmap2_head) == 72, "MMAP2 layout");

struct comm_head {
	struct perf_event_header header;
	uint32_t pid, tid;
};

struct fork_body {
	struct perf_event_header header;
	uint32_t pid, ppid, tid, ptid;
	uint64_t time;
};

/* A build id looked up for one (dev, ino); len 0 caches "none". */
struct bid_entry {
	uint64_t ino;
	uint32_t maj, min;
	bool used;
	uint8_t len;
	uint8_t id[PERFREC_BUILD_ID_MAX];
};

#define BID_CACHE_SIZE 1024u /* entries, a power of 2 */
#define READ_BUF_SIZE 65536u

struct synth {
	uint64_t sample_type, id, time;
	bool build_ids;
	bool data_maps;
	const char *proc;
	const char *sysfs;
	uint64_t kernel_text, kernel_etext; /* from the caller, 0: read them */
	const uint32_t *pids;               /* borrowed; NULL: every process */
	size_t nr_pids;
	size_t trailer;
	perfrec_synth_emit_fn emit;
	void *ctx;
	/* The record being built: u64-aligned, and room for a full u16 size. */
	uint64_t rec[(PERFREC_RECORD_MAX + 1) / 8];
	char rbuf[READ_BUF_SIZE];
	struct bid_entry *bids; /* BID_CACHE_SIZE entries, or NULL */
	int piddir;             /* of the task whose maps are read */
	int vdso_id_len;        /* the running vdso's build id: -1 not read yet, 0 none */
	uint8_t vdso_id[PERFREC_BUILD_ID_MAX];
};

static int synth_new(const struct perfrec_synth_opts *opts, perfrec_synth_emit_fn emit,
		     void *ctx, struct synth **ret)
{
	struct synth *s;

	if (!opts || !PERFREC_OPTS_VALID(opts, perfrec_synth_opts) || !emit)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->sample_type = PERFREC_OPTS_GET(opts, sample_type, 0);
	s->id = PERFREC_OPTS_GET(opts, id, 0);
	s->time = PERFREC_OPTS_GET(opts, time, 0);
	s->proc = PERFREC_OPTS_GET(opts, proc, NULL);
	if (!s->proc)
		s->proc = "/proc";
	s->sysfs = PERFREC_OPTS_GET(opts, sysfs, NULL);
	if (!s->sysfs)
		s->sysfs = "/sys";
	s->build_ids = PERFREC_OPTS_GET(opts, build_ids, false);
	s->data_maps = PERFREC_OPTS_GET(opts, data_maps, false);
	s->kernel_text = PERFREC_OPTS_GET(opts, kernel_text, 0);
	s->kernel_etext = PERFREC_OPTS_GET(opts, kernel_etext, 0);
	s->pids = PERFREC_OPTS_GET(opts, pids, (const uint32_t *)NULL);
	s->nr_pids = PERFREC_OPTS_GET(opts, nr_pids, (size_t)0);
	if (!s->pids)
		s->nr_pids = 0;
	s->trailer = perfrec_sample_id__size(s->sample_type);
	s->emit = emit;
	s->ctx = ctx;
	s->piddir = -1;
	s->vdso_id_len = -1;
	*ret = s;
	return 0;
}

static void synth_free(struct synth *s)
{
	if (!s)
		return;
	free(s->bids);
	free(s);
}

/*
 * Append the sample_id trailer at @body_size (already 8-aligned) and hand
 * the record out.  The trailer names the task the record is about; cpu is
 * 0 as in perf's synthesized records, because several readers index per-CPU
 * arrays with it and (u32)-1 would be out of range.
 */
static int finish_at(struct synth *s, size_t body_size, uint32_t pid, uint32_t tid, uint64_t time)
{
	struct perf_event_header *h = (struct perf_event_header *)s->rec;
	struct perfrec_sample_id sid = {
		.pid = pid, .tid = tid, .time = time, .id = s->id, .cpu = 0,
	};

	perfrec_sample_id__write((unsigned char *)s->rec + body_size, s->sample_type, &sid);
	h->size = (uint16_t)(body_size + s->trailer);
	return s->emit(s->ctx, h);
}

static int finish(struct synth *s, size_t body_size, uint32_t pid, uint32_t tid)
{
	return finish_at(s, body_size, pid, tid, s->time);
}

/* Copy a NUL-terminated string of @len bytes after @off, padded to 8. */
static size_t put_string(struct synth *s, size_t off, const char *str, size_t len)
{
	size_t end = ALIGN8(off + len + 1);

	memcpy((char *)s->rec + off, str, len);
	memset((char *)s->rec + off + len, 0, end - off - len);
	return end;
}

static int emit_comm(struct synth *s, uint32_t pid, uint32_t tid, const char *comm, size_t len)
{
	struct comm_head *c = (struct comm_head *)s->rec;

	memset(c, 0, sizeof(*c));
	c->header.type = PERF_RECORD_COMM;
	c->pid = pid;
	c->tid = tid;
	return finish(s, put_string(s, sizeof(*c), comm, len), pid, tid);
}

/*
 * FORK for a task found in /proc.  Like perf, the leader's parent is its
 * PPid and every other thread's parent is its leader; FORK_EXEC tells perf's
 * reader not to copy the parent's maps, since the child's own MMAP2s follow.
 * It is stamped a nanosecond before the task's COMM and MMAP2s, as it
 * happened before them: hotspot's perfparser (1.3.0, Debian 12) applies,
 * at equal times, the MMAP2s first and then the FORK, which ignores
 * FORK_EXEC and replaces the child's maps with its parent's, so it named no
 * function of any process that ran before the recording began.
 */
static int emit_fork(struct synth *s, uint32_t pid, uint32_t tid, uint32_t ppid, uint32_t ptid)
{
	struct fork_body *f = (struct fork_body *)s->rec;

	memset(f, 0, sizeof(*f));
	f->header.type = PERF_RECORD_FORK;
	f->header.misc = PERF_RECORD_MISC_FORK_EXEC;
	f->pid = pid;
	f->ppid = ppid;
	f->tid = tid;
	f->ptid = ptid;
	f->time = s->time ? s->time - 1 : 0;
	return finish_at(s, sizeof(*f), pid, tid, f->time);
}

struct mmap2_args {
	uint16_t misc;
	uint32_t pid, tid;
	uint64_t start, len, pgoff;
	uint32_t maj, min;
	uint64_t ino;
	const uint8_t *build_id; /* NULL: the maj/min/ino form */
	uint8_t build_id_len;
	uint32_t prot, flags;
	const char *name;
	size_t name_len;
};

static int emit_mmap2(struct synth *s, const struct mmap2_args *a)
{
	struct mmap2_head *m = (struct mmap2_head *)s->rec;
	size_t name_len = a->name_len;

	/* Keeps the record far below the u16 size limit. */
	if (name_len > PATH_MAX - 1)
		name_len = PATH_MAX - 1;
	memset(m, 0, sizeof(*m));
	m->header.type = PERF_RECORD_MMAP2;
	m->header.misc = a->misc;
	m->pid = a->pid;
	m->tid = a->tid;
	m->start = a->start;
	m->len = a->len;
	m->pgoff = a->pgoff;
	if (a->build_id && a->build_id_len) {
		m->header.misc |= PERF_RECORD_MISC_MMAP_BUILD_ID;
		m->build_id_size = a->build_id_len;
		memcpy(m->build_id, a->build_id, a->build_id_len);
	} else {
		m->maj = a->maj;
		m->min = a->min;
		m->ino = a->ino;
	}
	m->prot = a->prot;
	m->flags = a->flags;
	return finish(s, put_string(s, sizeof(*m), a->name, name_len), a->pid, a->tid);
}

/* --- small readers ------------------------------------------------------ */

/* Read a small file relative to @dirfd, NUL-terminated.  Returns length. */
static ssize_t read_small(int dirfd, const char *path, char *buf, size_t size)
{
	ssize_t n, got = 0;
	int fd;

	fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while ((size_t)got < size - 1) {
		n = read(fd, buf + got, size - 1 - (size_t)got);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			n = -errno;
			close(fd);
			return n;
		}
		if (!n)
			break;
		got += n;
	}
	close(fd);
	buf[got] = '\0';
	return got;
}

/*
 * Line reader over an fd into the synth's read buffer.  Lines longer than
 * the buffer (impossible in the files we read) are skipped whole, so their
 * tail is never mistaken for a line of its own.
 */
struct lines {
	int fd;
	char *buf;
	size_t cap, off, len;
	bool eof;
};

static void lines_init(struct lines *l, int fd, char *buf, size_t cap)
{
	l->fd = fd;
	l->buf = buf;
	l->cap = cap;
	l->off = l->len = 0;
	l->eof = false;
}

/* Returns 1 and a NUL-terminated line (no '\n'), 0 at the end, or -errno. */
static int lines_next(struct lines *l, char **ret_line)
{
	bool discard = false;

	for (;;) {
		char *nl = memchr(l->buf + l->off, '\n', l->len - l->off);
		ssize_t n;

		if (nl) {
			char *line = l->buf + l->off;

			*nl = '\0';
			l->off = (size_t)(nl - l->buf) + 1;
			if (discard) {
				discard = false;
				continue;
			}
			*ret_line = line;
			return 1;
		}
		if (l->eof) {
			/* A last line without '\n'. */
			if (l->off < l->len && !discard && l->len < l->cap) {
				l->buf[l->len] = '\0';
				*ret_line = l->buf + l->off;
				l->off = l->len;
				return 1;
			}
			return 0;
		}
		if (l->off) {
			memmove(l->buf, l->buf + l->off, l->len - l->off);
			l->len -= l->off;
			l->off = 0;
		}
		if (l->len >= l->cap - 1) {
			discard = true;
			l->len = 0;
		}
		n = read(l->fd, l->buf + l->len, l->cap - 1 - l->len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (!n)
			l->eof = true;
		l->len += (size_t)n;
	}
}

static bool parse_hex(const char **p, uint64_t *ret)
{
	const char *q = *p;
	uint64_t v = 0;
	int digits = 0;

	while (isxdigit((unsigned char)*q)) {
		int d = isdigit((unsigned char)*q) ? *q - '0' : (tolower((unsigned char)*q) - 'a' + 10);

		v = (v << 4) | (uint64_t)d;
		q++;
		digits++;
	}
	if (!digits || digits > 16)
		return false;
	*p = q;
	*ret = v;
	return true;
}

static bool parse_dec(const char **p, uint64_t *ret)
{
	const char *q = *p;
	uint64_t v = 0;

	if (!isdigit((unsigned char)*q))
		return false;
	while (isdigit((unsigned char)*q)) {
		v = v * 10 + (uint64_t)(*q - '0');
		q++;
	}
	*p = q;
	*ret = v;
	return true;
}

static bool skip_char(const char **p, char c)
{
	if (**p != c)
		return false;
	(*p)++;
	return true;
}

static void skip_spaces(const char **p)
{
	while (**p == ' ' || **p == '\t')
		(*p)++;
}

/* --- build ids ---------------------------------------------------------- */

/*
 * The build id of the file mapped from (maj, min, ino), read through the
 * task's own root so binaries inside containers are found.  Every process
 * maps the same libc, so results (found or not) are cached per call.
 */
static int lookup_build_id(struct synth *s, uint32_t pid, const char *name,
			   uint32_t maj, uint32_t min, uint64_t ino, uint8_t id[PERFREC_BUILD_ID_MAX])
{
	char path[PATH_MAX + 64];
	struct bid_entry *e;
	uint64_t h;
	int n;

	if (!s->bids) {
		s->bids = calloc(BID_CACHE_SIZE, sizeof(*s->bids));
		if (!s->bids)
			return -ENOMEM;
	}
	h = (ino * 0x9e3779b97f4a7c15ULL) ^ ((uint64_t)maj << 20 | min);
	h ^= h >> 29;
	e = &s->bids[h & (BID_CACHE_SIZE - 1)];
	if (e->used && e->ino == ino && e->maj == maj && e->min == min) {
		memcpy(id, e->id, e->len);
		return e->len;
	}
	/* A miss simply replaces the slot: the cache bounds work, not memory. */
	if ((size_t)snprintf(path, sizeof(path), "%s/%u/root%s", s->proc, pid, name) >= sizeof(path))
		return 0;
	n = perfrec_buildid__read_elf(path, id);
	if (n < 0 || n > PERFREC_BUILD_ID_MAX)
		n = 0;
	e->used = true;
	e->ino = ino;
	e->maj = maj;
	e->min = min;
	e->len = (uint8_t)n;
	memcpy(e->id, id, (size_t)n);
	return n;
}

/*
 * The build id of a task's [vdso] map: the running vdso's when the image
 * mapped there is that one.  Readers need it to tell which image the
 * samples ran in (perf keeps vdsos by build id), and perfrecd's build-id
 * cache keeps the image under it.  The kernel holds one image per ABI
 * (64-bit, 32-bit, x32), so an ELF header the same as ours, read through
 * /proc/PID/mem (ptrace access, as the maps), says it is ours.  0: not
 * known (another ABI, or the header unreadable).
 */
static int vdso_map_build_id(struct synth *s, uint64_t start, uint64_t len, uint8_t id[PERFREC_BUILD_ID_MAX])
{
	unsigned char hdr[sizeof(ElfW(Ehdr))];
	const unsigned char *img;
	size_t ilen;
	ssize_t n;
	int fd;

	if (s->vdso_id_len < 0)
		s->vdso_id_len = vdso_build_id(s->vdso_id);
	img = vdso_image(&ilen);
	if (s->vdso_id_len <= 0 || !img || len < sizeof(hdr) || start > INT64_MAX || s->piddir < 0)
		return 0;
	fd = openat(s->piddir, "mem", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = pread(fd, hdr, sizeof(hdr), (off_t)start);
	close(fd);
	if (n != (ssize_t)sizeof(hdr) || memcmp(hdr, img, sizeof(hdr)))
		return 0;
	memcpy(id, s->vdso_id, (size_t)s->vdso_id_len);
	return s->vdso_id_len;
}

/* --- tasks -------------------------------------------------------------- */

/* One line of /proc/<pid>/maps; executable mappings become MMAP2 records. */
static int synth_map_line(struct synth *s, uint32_t pid, char *line)
{
	static const char anon[] = "//anon";
	const char *p = line, *perms, *name;
	uint64_t start, end, pgoff, maj, min, ino;
	uint8_t id[PERFREC_BUILD_ID_MAX];
	struct mmap2_args a = {0};
	size_t name_len;
	int n;

	if (!parse_hex(&p, &start) || !skip_char(&p, '-') || !parse_hex(&p, &end) ||
	    !skip_char(&p, ' '))
		return 0;
	perms = p;
	if (strnlen(perms, 4) < 4 || perms[4] != ' ')
		return 0;
	/*
	 * Only code matters for symbol resolution, as in perf's default;
	 * with data_maps, readable files too (their CFI index for unwinders).
	 */
	if (perms[2] != 'x' && !(s->data_maps && perms[0] == 'r'))
		return 0;
	p += 5;
	if (!parse_hex(&p, &pgoff) || !skip_char(&p, ' ') || !parse_hex(&p, &maj) ||
	    !skip_char(&p, ':') || !parse_hex(&p, &min) || !skip_char(&p, ' ') ||
	    !parse_dec(&p, &ino))
		return 0;
	skip_spaces(&p);
	name = p;
	name_len = strlen(name);
	if (perms[2] != 'x' && name[0] != '/')
		return 0;
	if (!name_len) {
		/* perf names anonymous executable memory (JIT code) like this. */
		name = anon;
		name_len = sizeof(anon) - 1;
	}
	if (end <= start)
		return 0;

	a.misc = PERF_RECORD_MISC_USER | (perms[2] == 'x' ? 0 : PERF_RECORD_MISC_MMAP_DATA);
	a.pid = pid;
	a.tid = pid;
	a.start = start;
	a.len = end - start;
	a.pgoff = pgoff;
	a.maj = (uint32_t)maj;
	a.min = (uint32_t)min;
	a.ino = ino;
	a.prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
		 (perms[2] == 'x' ? PROT_EXEC : 0);
	a.flags = perms[3] == 's' ? MAP_SHARED : MAP_PRIVATE;
	a.name = name;
	a.name_len = name_len;
	if (s->build_ids && name[0] == '/' && ino) {
		n = lookup_build_id(s, pid, name, a.maj, a.min, ino, id);
		if (n < 0)
			return n;
		if (n > 0) {
			a.build_id = id;
			a.build_id_len = (uint8_t)n;
		}
	} else if (s->build_ids && perms[2] == 'x' && !strcmp(name, VDSO_MAP_NAME)) {
		n = vdso_map_build_id(s, start, a.len, id);
		if (n > 0) {
			a.build_id = id;
			a.build_id_len = (uint8_t)n;
		}
	}
	return emit_mmap2(s, &a);
}

static int synth_maps(struct synth *s, int piddir, uint32_t pid)
{
	struct lines l;
	char *line;
	int fd, r = 0;

	/* Unreadable maps (gone, or not permitted) leave the task without maps. */
	fd = openat(piddir, "maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	lines_init(&l, fd, s->rbuf, sizeof(s->rbuf));
	s->piddir = piddir;
	/* A read error (ESRCH when the task exits mid-read) just ends the
	 * maps; only the callback's or an allocation's error is returned. */
	while (lines_next(&l, &line) > 0) {
		r = synth_map_line(s, pid, line);
		if (r < 0)
			break;
	}
	s->piddir = -1;
	close(fd);
	return r;
}

/* Read a comm file: up to 16 bytes in practice, without the newline. */
static ssize_t read_comm(int dirfd, const char *path, char *buf, size_t size)
{
	ssize_t n = read_small(dirfd, path, buf, size);

	if (n < 0)
		return n;
	while (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	/*
	 * The comm file of a workqueue worker appends the workqueue name
	 * ("kworker/1:1-mm_percpu_wq"); the kernel's own COMM records carry
	 * task->comm, at most TASK_COMM_LEN - 1 = 15 bytes, and perf cuts
	 * the same way, so one task gets one name whichever record names it.
	 */
	if (n > 15)
		buf[n = 15] = '\0';
	return n;
}

/*
 * PPid and flags from /proc/<pid>/stat.  The comm in parentheses may hold
 * any character, ')' included, so the fields are found after the last ')'.
 */
static int read_stat(int piddir, uint32_t *ret_ppid, uint64_t *ret_flags)
{
	char buf[1024];
	const char *p;
	uint64_t v = 0;
	ssize_t n;

	n = read_small(piddir, "stat", buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	p = strrchr(buf, ')');
	if (!p)
		return -EINVAL;
	p++;
	/* Fields 3..9: state ppid pgrp session tty_nr tpgid flags. */
	for (int field = 3; field <= 9; field++) {
		skip_spaces(&p);
		if (field == 3) {
			if (!*p)
				return -EINVAL;
			p++;
			continue;
		}
		if (*p == '-')
			p++;
		if (!parse_dec(&p, &v))
			return -EINVAL;
		if (field == 4)
			*ret_ppid = (uint32_t)v;
	}
	*ret_flags = v;
	return 0;
}

static bool all_digits(const char *name, uint32_t *ret)
{
	uint64_t v = 0;

	if (!*name)
		return false;
	for (const char *p = name; *p; p++) {
		if (!isdigit((unsigned char)*p))
			return false;
		v = v * 10 + (uint64_t)(*p - '0');
		if (v > INT32_MAX)
			return false;
	}
	*ret = (uint32_t)v;
	return true;
}

/* The threads other than the leader: FORK from the leader, then COMM. */
static int synth_threads(struct synth *s, int piddir, uint32_t pid)
{
	char comm[64], path[32];
	struct dirent *de;
	DIR *d;
	int fd, r = 0;

	fd = openat(piddir, "task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -ENOMEM;
	}
	while ((de = readdir(d))) {
		uint32_t tid;
		ssize_t n;

		if (!all_digits(de->d_name, &tid) || tid == pid)
			continue;
		snprintf(path, sizeof(path), "%u/comm", tid);
		/* A thread that exited since readdir is skipped. */
		n = read_comm(dirfd(d), path, comm, sizeof(comm));
		if (n < 0)
			continue;
		r = emit_fork(s, pid, tid, pid, pid);
		if (r < 0)
			break;
		r = emit_comm(s, pid, tid, comm, (size_t)n);
		if (r < 0)
			break;
	}
	closedir(d);
	return r;
}

/*
 * FORK and COMM of the leader, its maps, then its other threads.  A task
 * that cannot be read (it exited meanwhile, or /proc shows it oddly) is
 * skipped: synthesis is best effort per task.  Only the callback's errors
 * and allocation failures stop it.
 */
static int synth_process(struct synth *s, int procfd, const char *name, uint32_t pid)
{
	uint32_t ppid = 0;
	uint64_t flags = 0;
	char comm[64];
	ssize_t n;
	int piddir, r;

	piddir = openat(procfd, name, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (piddir < 0)
		return 0;
	r = read_stat(piddir, &ppid, &flags);
	if (r < 0) {
		r = 0;
		goto out;
	}
	n = read_comm(piddir, "comm", comm, sizeof(comm));
	if (n < 0) {
		r = 0;
		goto out;
	}
	r = emit_fork(s, pid, pid, ppid, ppid);
	if (r < 0)
		goto out;
	r = emit_comm(s, pid, pid, comm, (size_t)n);
	if (r < 0)
		goto out;
	/* Kernel threads have no user mappings. */
	if (!(flags & PF_KTHREAD_FLAG)) {
		r = synth_maps(s, piddir, pid);
		if (r < 0)
			goto out;
	}
	r = synth_threads(s, piddir, pid);
out:
	close(piddir);
	return r;
}

/* Whether @pid is one of the processes asked for (all when no list). */
static bool wanted(const struct synth *s, uint32_t pid)
{
	if (!s->nr_pids)
		return true;
	for (size_t i = 0; i < s->nr_pids; i++)
		if (s->pids[i] == pid)
			return true;
	return false;
}

int perfrec_synth__tasks(const struct perfrec_synth_opts *opts, perfrec_synth_emit_fn emit, void *ctx)
{
	struct synth *s = NULL;
	struct dirent *de;
	DIR *d = NULL;
	int procfd, r;

	r = synth_new(opts, emit, ctx, &s);
	if (r < 0)
		return r;
	procfd = open(s->proc, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (procfd < 0) {
		r = -errno;
		goto out;
	}
	d = fdopendir(procfd);
	if (!d) {
		r = -errno;
		close(procfd);
		goto out;
	}
	while ((de = readdir(d))) {
		uint32_t pid;

		if (!all_digits(de->d_name, &pid) || !wanted(s, pid))
			continue;
		r = synth_process(s, dirfd(d), de->d_name, pid);
		if (r < 0)
			goto out;
	}
	r = 0;
out:
	if (d)
		closedir(d);
	synth_free(s);
	return r;
}

/* --- kernel ------------------------------------------------------------- */

/*
 * The size of the kernel's text from /proc/iomem, 0 if not known.  On
 * x86-64 the "Kernel code" resource runs from __pa(_text) to
 * __pa(_etext) - 1 (arch/x86/kernel/setup.c), so _etext - _text is its
 * size, whatever the KASLR offset.  Without CAP_SYS_ADMIN the kernel shows
 * zeros, and other architectures bound the resource differently: there the
 * caller scans kallsyms for _etext.
 */
static uint64_t iomem_text_size(struct synth *s)
{
#if defined(__x86_64__)
	char path[PATH_MAX];
	struct lines l;
	char *line;
	int fd, r;
	uint64_t size = 0;

	snprintf(path, sizeof(path), "%s/iomem", s->proc);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	lines_init(&l, fd, s->rbuf, sizeof(s->rbuf));
	while ((r = lines_next(&l, &line)) > 0) {
		const char *p = line;
		uint64_t a, b;

		/* "  01000000-02276507 : Kernel code" */
		while (*p == ' ')
			p++;
		if (!parse_hex(&p, &a) || !skip_char(&p, '-') || !parse_hex(&p, &b) ||
		    strcmp(p, " : Kernel code"))
			continue;
		if (b > a)
			size = b - a + 1;
		break;
	}
	close(fd);
	return size;
#else
	(void)s;
	return 0;
#endif
}

/*
 * Addresses of _text and _etext.  _text is the first text symbol of
 * kallsyms, a few lines in; _etext is near the end of the core kernel's
 * symbols, nearly all of the file, which the kernel formats line by line
 * (~40 ms of its CPU on a 120,000-symbol kernel): taken from the caller or
 * /proc/iomem where they know it.
 */
static int read_kallsyms(struct synth *s, uint64_t *ret_text, uint64_t *ret_etext)
{
	char path[PATH_MAX];
	struct lines l;
	bool have_text = false, have_etext = false;
	uint64_t text_size;
	char *line;
	int fd, r = 0;

	*ret_etext = 0;
	if (s->kernel_text && s->kernel_etext > s->kernel_text) {
		*ret_text = s->kernel_text;
		*ret_etext = s->kernel_etext;
		return 0;
	}
	text_size = iomem_text_size(s);
	have_etext = text_size != 0;
	snprintf(path, sizeof(path), "%s/kallsyms", s->proc);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	lines_init(&l, fd, s->rbuf, sizeof(s->rbuf));
	while (!(have_text && have_etext) && (r = lines_next(&l, &line)) > 0) {
		const char *p = line;
		uint64_t addr;

		/* "ffffffff81000000 T _text" */
		if (!parse_hex(&p, &addr) || !skip_char(&p, ' ') || !*p || p[1] != ' ')
			continue;
		p += 2;
		if (!strcmp(p, "_text")) {
			*ret_text = addr;
			have_text = true;
		} else if (!strcmp(p, "_etext")) {
			*ret_etext = addr;
			have_etext = true;
		}
	}
	close(fd);
	if (r < 0)
		return r;
	if (have_text && text_size && *ret_text)
		*ret_etext = *ret_text + text_size;
	return have_text ? 0 : -ENOENT;
}

/* One loaded module and, once modules.dep is read, its file. */
struct module {
	char name[64];
	uint64_t size, addr;
	char *path; /* owned, or NULL: "[name]" */
};

/* Module names use '_' where file names may use '-'. */
static bool same_module_name(const char *a, const char *b, size_t blen)
{
	size_t i;

	for (i = 0; i < blen && a[i]; i++) {
		char x = a[i] == '-' ? '_' : a[i];
		char y = b[i] == '-' ? '_' : b[i];

		if (x != y)
			return false;
	}
	return i == blen && !a[i];
}

/*
 * Fill each module's path from /lib/modules/<release>/modules.dep, whose
 * lines start "kernel/dir/name.ko[.xz]:".  A module not found keeps the
 * "[name]" form, which perf's reader also accepts for a module map.
 */
static int find_module_paths(struct synth *s, struct module *mods, size_t nr)
{
	char rel[128], dir[256], path[PATH_MAX];
	struct lines l;
	char *line;
	ssize_t n;
	int fd, r;

	snprintf(path, sizeof(path), "%s/sys/kernel/osrelease", s->proc);
	n = read_small(AT_FDCWD, path, rel, sizeof(rel));
	if (n <= 0)
		return 0;
	while (n > 0 && rel[n - 1] == '\n')
		rel[--n] = '\0';
	snprintf(dir, sizeof(dir), "/lib/modules/%s", rel);
	snprintf(path, sizeof(path), "%s/modules.dep", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	lines_init(&l, fd, s->rbuf, sizeof(s->rbuf));
	while ((r = lines_next(&l, &line)) > 0) {
		char *colon = strchr(line, ':');
		const char *base, *dot;

		if (!colon)
			continue;
		*colon = '\0';
		base = strrchr(line, '/');
		base = base ? base + 1 : line;
		dot = strstr(base, ".ko");
		if (!dot)
			continue;
		for (size_t i = 0; i < nr; i++) {
			if (mods[i].path || !same_module_name(mods[i].name, base, (size_t)(dot - base)))
				continue;
			if (line[0] == '/')
				mods[i].path = strdup(line);
			else if (asprintf(&mods[i].path, "%s/%s", dir, line) < 0)
				mods[i].path = NULL;
			if (!mods[i].path) {
				close(fd);
				return -ENOMEM;
			}
		}
	}
	close(fd);
	return r < 0 ? r : 0;
}

/* Parse /proc/modules: "name size refcnt deps state 0xaddr [taints]". */
static int read_modules(struct synth *s, struct module **ret_mods, size_t *ret_nr)
{
	char path[PATH_MAX];
	struct module *mods = NULL;
	size_t nr = 0, cap = 0;
	struct lines l;
	char *line;
	int fd, r;

	*ret_mods = NULL;
	*ret_nr = 0;
	snprintf(path, sizeof(path), "%s/modules", s->proc);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		/* A kernel built without modules has no /proc/modules. */
		return errno == ENOENT ? 0 : -errno;
	lines_init(&l, fd, s->rbuf, sizeof(s->rbuf));
	while ((r = lines_next(&l, &line)) > 0) {
		const char *p = line, *name = line;
		struct module m = {0};
		size_t name_len;

		while (*p && *p != ' ')
			p++;
		name_len = (size_t)(p - name);
		if (!name_len || name_len >= sizeof(m.name))
			continue;
		memcpy(m.name, name, name_len);
		skip_spaces(&p);
		if (!parse_dec(&p, &m.size))
			continue;
		/* refcnt, deps, state: skip three fields. */
		for (int i = 0; i < 3; i++) {
			skip_spaces(&p);
			while (*p && *p != ' ')
				p++;
		}
		skip_spaces(&p);
		if (!skip_char(&p, '0') || !skip_char(&p, 'x') || !parse_hex(&p, &m.addr))
			continue;
		if (!m.addr || !m.size)
			continue;
		if (nr == cap) {
			struct module *n;

			cap = cap ? cap * 2 : 64;
			n = realloc(mods, cap * sizeof(*mods));
			if (!n) {
				r = -ENOMEM;
				break;
			}
			mods = n;
		}
		mods[nr++] = m;
	}
	close(fd);
	if (r < 0) {
		free(mods);
		return r;
	}
	*ret_mods = mods;
	*ret_nr = nr;
	return 0;
}

static void free_modules(struct module *mods, size_t nr)
{
	for (size_t i = 0; i < nr; i++)
		free(mods[i].path);
	free(mods);
}

/* Build id of a module from /sys/module/<name>/notes, as perf reads it. */
static int module_build_id(struct synth *s, const char *name, uint8_t id[PERFREC_BUILD_ID_MAX])
{
	char path[PATH_MAX];
	char buf[4096];
	ssize_t n;

	snprintf(path, sizeof(path), "%s/module/%s/notes/.note.gnu.build-id", s->sysfs, name);
	n = read_small(AT_FDCWD, path, buf, sizeof(buf));
	if (n <= 0)
		return 0;
	n = perfrec_buildid__parse_notes(buf, (size_t)n, id);
	return n > 0 && n <= PERFREC_BUILD_ID_MAX ? (int)n : 0;
}

static int emit_nothing(void *ctx, const struct perf_event_header *h)
{
	(void)ctx;
	(void)h;
	return 0;
}

int perfrec_synth__kernel_text(const struct perfrec_synth_opts *opts, uint64_t *ret_text, uint64_t *ret_etext)
{
	struct synth *s = NULL;
	uint64_t text = 0, etext = 0;
	int r;

	if (!ret_text || !ret_etext)
		return -EINVAL;
	r = synth_new(opts, emit_nothing, NULL, &s);
	if (r < 0)
		return r;
	r = read_kallsyms(s, &text, &etext);
	synth_free(s);
	if (r < 0)
		return r;
	if (!text)
		return -EPERM;
	*ret_text = text;
	*ret_etext = etext;
	return 0;
}

int perfrec_synth__kernel(const struct perfrec_synth_opts *opts, perfrec_synth_emit_fn emit, void *ctx)
{
	static const char kname[] = "[kernel.kallsyms]_text";
	struct synth *s = NULL;
	struct module *mods = NULL;
	size_t nr = 0;
	uint64_t text = 0, etext = 0;
	uint8_t id[PERFREC_BUILD_ID_MAX];
	struct mmap2_args a = {0};
	int r, n;

	r = synth_new(opts, emit, ctx, &s);
	if (r < 0)
		return r;
	r = read_kallsyms(s, &text, &etext);
	if (r < 0)
		goto out;
	/* kptr_restrict hides addresses as zeros: a map at 0 would be wrong. */
	if (!text) {
		r = -EPERM;
		goto out;
	}
	r = read_modules(s, &mods, &nr);
	if (r < 0)
		goto out;
	r = find_module_paths(s, mods, nr);
	if (r < 0)
		goto out;

	/*
	 * perf's reader recognises the kernel map by this name and takes pgoff
	 * as the address of _text for relocation; its length runs to _etext.
	 */
	a.misc = PERF_RECORD_MISC_KERNEL;
	a.pid = (uint32_t)-1;
	a.tid = 0;
	a.start = text;
	a.len = etext > text ? etext - text : ~0ULL - text;
	a.pgoff = text;
	a.prot = PROT_READ | PROT_EXEC;
	a.flags = MAP_PRIVATE;
	a.name = kname;
	a.name_len = sizeof(kname) - 1;
	if (s->build_ids) {
		n = perfrec_buildid__kernel(s->sysfs, id);
		if (n > 0 && n <= PERFREC_BUILD_ID_MAX) {
			a.build_id = id;
			a.build_id_len = (uint8_t)n;
		}
	}
	r = emit_mmap2(s, &a);
	if (r < 0)
		goto out;

	for (size_t i = 0; i < nr; i++) {
		char bracket[sizeof(mods[i].name) + 2];

		a.start = mods[i].addr;
		a.len = mods[i].size;
		a.pgoff = 0;
		a.build_id = NULL;
		a.build_id_len = 0;
		if (mods[i].path) {
			a.name = mods[i].path;
		} else {
			snprintf(bracket, sizeof(bracket), "[%s]", mods[i].name);
			a.name = bracket;
		}
		a.name_len = strlen(a.name);
		if (s->build_ids) {
			n = module_build_id(s, mods[i].name, id);
			if (n > 0) {
				a.build_id = id;
				a.build_id_len = (uint8_t)n;
			}
		}
		r = emit_mmap2(s, &a);
		if (r < 0)
			goto out;
	}
	r = 0;
out:
	free_modules(mods, nr);
	synth_free(s);
	return r;
}

int perfrec_synth__marker(uint32_t type, perfrec_synth_emit_fn emit, void *ctx)
{
	struct perf_event_header h = { .type = type, .misc = 0, .size = sizeof(h) };

	if (!emit)
		return -EINVAL;
	return emit(ctx, &h);
}
