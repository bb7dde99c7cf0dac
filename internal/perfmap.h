/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A live process's perf map (/tmp/perf-PID.map, "START SIZE NAME" per
 * line, hex, as node --perf-basic-prof, python3.12 -X perf and the JVM's
 * perfmap agents write it), followed while the process lives: the file
 * only grows, so each read takes what was appended since the last one,
 * whole lines only (a line still being written waits for its newline).
 *
 * Everything in it is the process's to choose, and perfrecd reads it with
 * more privileges than the process has: it is opened inside the process's
 * own root (/proc/PID/root, so a container's /tmp is the one its runtime
 * wrote to) with no symbolic link followed on the way (openat2
 * RESOLVE_IN_ROOT|RESOLVE_NO_SYMLINKS), must be a regular file owned by
 * the process's user with a single link (a FIFO would block, a hard link
 * could name a file the process may not read), and every figure is
 * bounded: symbols, name bytes, line length and bytes read per call, with
 * what was skipped counted.  Not thread-safe; one object per process.
 */
#ifndef PERFREC_PERFMAP_H
#define PERFREC_PERFMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* A symbol longer than this is cut (and counted); perf's own limit is near. */
#define PERFMAP_NAME_MAX 1024
/* A range larger than this is absurd for one function: the line is refused. */
#define PERFMAP_SIZE_MAX (256ULL << 20)

struct perfmap_limits {
	size_t max_syms;       /* symbols kept (0: 1<<20) */
	size_t max_name_bytes; /* bytes of names kept (0: 64 MiB) */
	size_t read_budget;    /* bytes read per perfmap_read() (0: 4 MiB) */
};

struct perfmap_stats {
	uint64_t bytes;       /* read from the file (or fed) */
	uint64_t lines;       /* whole lines seen */
	uint64_t syms;        /* lines that became symbols */
	uint64_t bad_lines;   /* not "START SIZE NAME", zero or absurd ranges */
	uint64_t long_lines;  /* longer than a line may be: skipped whole */
	uint64_t cut_names;   /* names cut to PERFMAP_NAME_MAX */
	uint64_t over_limit;  /* good lines dropped: max_syms or max_name_bytes reached */
	uint64_t restarts;    /* the file shrank (replaced, truncated): read again from 0 */
};

/* @s added into @t (inline: the metrics sum them without the parser). */
static inline void perfmap_stats_add(struct perfmap_stats *t, const struct perfmap_stats *s)
{
	t->bytes += s->bytes;
	t->lines += s->lines;
	t->syms += s->syms;
	t->bad_lines += s->bad_lines;
	t->long_lines += s->long_lines;
	t->cut_names += s->cut_names;
	t->over_limit += s->over_limit;
	t->restarts += s->restarts;
}

struct perfmap_sym {
	uint64_t start, size;
	uint32_t name;        /* offset of its NUL-terminated name in the names */
	uint32_t seq;         /* order of arrival: a later line for the same range wins */
};

struct perfmap {
	int fd;               /* -1: not open (perfmap_feed() only) */
	/* a jitdump rather than a perf map: binary records */
	bool jitdump;
	bool jd_bad;          /* not a jitdump, or one of another byte order: read no further */
	bool jd_header;       /* its header was read */
	size_t jd_need;       /* bytes the record (or header) being read is taken into the buffer */
	uint64_t jd_skip;     /* bytes of it still to skip (its code) */
	uint64_t off;         /* bytes of the file consumed */
	char *line;           /* the partial line after the last newline */
	size_t line_len;
	bool line_skip;       /* in a line too long: skip to its newline */
	struct perfmap_sym *syms;
	size_t nr_syms, syms_cap;
	char *names;
	size_t names_len, names_cap;
	struct perfmap_limits lim;
	struct perfmap_stats st;
};

/* An empty map with @lim (NULL: defaults); nothing to fail. */
void perfmap_init(struct perfmap *m, const struct perfmap_limits *lim);
/* Close and free; the object may be init'ed again.  NULL-safe. */
void perfmap_exit(struct perfmap *m);

/*
 * The innermost pid of @pid (the last field of NSpid in
 * /proc/PID/status: the pid its runtime sees and names the file by).
 * Returns it, or -errno.
 */
int perfmap_nspid(pid_t pid);

/*
 * Open tmp/perf-@nspid.map under the directory @rootfd as its root, with
 * the checks above (-ELOOP: a symbolic link on the way; -EINVAL: not a
 * regular file; -EPERM: not @uid's or more than one link).  @uid
 * (uid_t)-1: any owner.  Returns the fd (O_CLOEXEC) or -errno.
 */
int perfmap_open_at(int rootfd, int nspid, uid_t uid);

/*
 * Open the perf map of live process @pid into @m (closing one it had):
 * through /proc/PID/root, named by its innermost pid, owned by its
 * effective or real uid.  0 or -errno (-ENOENT: it writes none).
 */
int perfmap_open(struct perfmap *m, pid_t pid);

/*
 * A process's root held open (O_PATH) while it lives, with what names
 * and owns its perf map: runtimes that write the map only as they exit
 * (the JVM's -XX:+DumpPerfMapAtExit) do so when /proc/PID/root is about
 * to go, and it is read through this once the process is gone.
 */
struct perfmap_root {
	int fd;               /* -1: none held */
	int nspid;
	uid_t ruid, euid;
};

/* Hold @pid's root into @r (fd -1 on failure).  0 or -errno. */
int perfmap_root_hold(struct perfmap_root *r, pid_t pid);
/* Close it (fd -1).  Safe on one not held. */
void perfmap_root_drop(struct perfmap_root *r);
/* perfmap_open() through a root held earlier: the process may be gone.  0 or -errno. */
int perfmap_open_root(struct perfmap *m, const struct perfmap_root *r);

/*
 * Read what the file gained since the last call, at most
 * lim.read_budget bytes, and parse its whole lines.  Returns the bytes
 * read (0: nothing new) or -errno; a file that shrank is read again from
 * its start (stats.restarts).
 */
ssize_t perfmap_read(struct perfmap *m);

/* Parse @len more bytes of the map as if read from the file (tests, fuzzing). */
void perfmap_feed(struct perfmap *m, const char *buf, size_t len);

/*
 * Parse @len more bytes of a jitdump (perf's format: node --perf-prof,
 * python -X perf_jit, JVM agents) into @m, which perfmap_init() made and
 * the dump keeps for itself: each JIT_CODE_LOAD a symbol, each
 * JIT_CODE_MOVE one at the new address with the moved code's name; code
 * bytes and other records are skipped, never held.  The same limits and
 * counts as a perf map's.
 */
void perfmap_feed_jitdump(struct perfmap *m, const uint8_t *buf, size_t len);

/*
 * Open the jitdump @path (as the process @pid named it in its marker
 * MMAP2) into @m, inside the process's root: symbolic links on the way
 * resolve within it, the file itself is no link and is a regular file of
 * the process's uid with one link.  0 or -errno.
 */
int perfmap_open_jitdump(struct perfmap *m, pid_t pid, const char *path);

static inline const char *perfmap_sym_name(const struct perfmap *m, const struct perfmap_sym *s)
{
	return m->names + s->name;
}

#endif
