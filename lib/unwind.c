// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The host unwinder (see perfrec/unwind.h).  Three pieces:
 *
 * - Address spaces: per process, the code mappings from MMAP/MMAP2 (later
 *   ones, data too, cut earlier ones where they overlap, as mmap does), copied on
 *   FORK of a new process, emptied by COMM with exec, dropped at the
 *   leader's EXIT.  Each keeps a libdwfl session (Dwfl) built lazily from
 *   its executable mappings at the first sample after a change; the
 *   sessions are bounded (LRU), and so are the spaces themselves (an EXIT
 *   lost to a full ring would otherwise keep one for good).
 *
 * - ELF files: opened once per build id (or device + inode when the map
 *   has none), checked against what the map says, and taken only if they
 *   are x86_64 executables or shared objects (a process maps what it likes:
 *   libdwfl trusts the machine and layout its files claim).  One libelf
 *   handle per file, in an LRU bounded by count and bytes; sessions share
 *   it by reference.  A file nobody but root can change is read through a
 *   mapping, with no fd kept; any other file could be cut short or
 *   rewritten under a mapping (SIGBUS, or headers changing after they were
 *   checked), so it is read with pread() into libelf's own copies, through
 *   an fd kept while the handle lives: those fds are capped, and evicting
 *   one drops the sessions that use it.  A map whose file cannot be found,
 *   does not match or is refused is marked and not looked up again.
 *
 * - Unwinding: libdwfl's dwfl_getthread_frames() with our callbacks: the
 *   initial registers are the sample's regs_user (perf's x86_64 order mapped
 *   to DWARF numbers), and memory reads are served only from the sample's
 *   stack copy.  CFI comes from .eh_frame and .debug_frame of the mapped
 *   file.  Anything out of reach fails the read and ends the chain there.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <libelf.h>

#include <perfrec/event.h>
#include <perfrec/unwind.h>

#include "unwind-internal.h"
#include "unwtab-cache.h"
#include "vdso.h"

#define DEFAULT_MAX_ELVES 256
#define DEFAULT_MAX_ELF_BYTES (2ULL << 30)
/* Files read through an fd (see above); perfrecd's RLIMIT_NOFILE is 1024 or more. */
#define DEFAULT_MAX_ELF_FDS 64
/*
 * Their sizes together: what libelf reads of them is the daemon's own
 * memory (a mapping's pages are the page cache's).
 */
#define MAX_FD_BYTES (512ULL << 20)
#define DEFAULT_MAX_SPACES 64
/* Address spaces known (their maps), per session allowed. */
#define SPACES_PER_SESSION 64
#define FUSE_MAGIC 0x65735546
/* What libdw may inflate of a file's compressed sections, all of it at once. */
#define MAX_INFLATED (256ULL << 20)
#define DEFAULT_MAX_FRAMES 127
#define NR_BUCKETS 1024
#define BUILD_ID_MAX 20
#define KEY_MAX 64
/* Entries of the look-up memo (struct memo): 128 KiB. */
#define MEMO_BITS 12
/* Bytes of a sample's stack copy fetched into the cache before its walk (unwind_tables()). */
#define PREFETCH_STACK 4096

/* perf's x86_64 register numbers (PERF_REG_X86_*), as bits of sample_regs_user. */
enum { P_AX, P_BX, P_CX, P_DX, P_SI, P_DI, P_BP, P_SP, P_IP, P_R8 = 16 };

struct elf_entry {
	char key[KEY_MAX];
	Elf *elf;                /* our reference; each module using it holds another */
	Elf_Cmd cmd;             /* how it was read: ELF_C_READ_MMAP or ELF_C_READ */
	int fd;                  /* -1 when mapped; else closed by the last elf_end() */
	uint16_t e_type;
	uint64_t vaddr;          /* first PT_LOAD, aligned down, as libdwfl takes it */
	uint64_t vend;           /* end of the last PT_LOAD */
	uint64_t size;
	uint64_t dev, ino;       /* the file's, to know it again (unwind tables) */
	uint64_t last_use;
	struct elf_entry *next;  /* cache list */
};

struct map {
	uint64_t start, end, pgoff;
	uint32_t maj, min;
	uint64_t ino;
	uint8_t build_id[BUILD_ID_MAX];
	uint8_t build_id_len;
	bool exec;
	bool missing;            /* its file was not found or did not match */
	bool reported;           /* in the space's libdwfl session */
	uint8_t tab_state;       /* enum tab_state: what the unwind tables have for it */
	const struct unwtab *tab; /* TAB_TABLE: its table, valid while tab_gen is the cache's */
	uint64_t tab_bias, tab_gen;
	char *name;
};

/* A map's table (see table_find()). */
enum tab_state {
	TAB_UNKNOWN = 0,
	TAB_TABLE,               /* file-backed code with a table */
	TAB_FP,                  /* code without CFI (JIT, a file without any): frame pointers */
	TAB_STOP,                /* a file not to be had (missing, changed, refused): the chain ends there */
	TAB_DWFL,                /* a file whose CFI made no table: libdwfl's */
};

struct space {
	uint32_t pid;
	/*
	 * Which maps these are: a new value of the unwinder's counter when the
	 * space is made and whenever its maps change, so never one that a
	 * space freed before (the same pid again) had.  The memo's key.
	 */
	uint64_t epoch;
	struct map *maps;        /* the code maps, sorted by start, not overlapping */
	size_t nr, cap;
	Dwfl *dwfl;              /* NULL: not built (or dropped) */
	bool stale;              /* code maps changed or went, or dwfl was dropped: rebuild it */
	bool grown;              /* code maps were only added: report them to dwfl */
	uint64_t last_use;
	struct space *next;      /* hash chain */
};

/*
 * What table_find() answered for a pc of a space with the maps of @epoch
 * (0: empty).  Stacks go through the same return addresses over and over
 * (a program's main loop, its recursions, the same library calls), and
 * each answer is a search of the maps and one of a table's rows: the memo,
 * direct-mapped by pc and epoch, answers most frames without either.
 * @row points into a table of the cache (or at a sentinel row): every
 * entry goes when the cache evicts a table (its generation) or is
 * replaced (perfrec_unwinder__set_tables()).
 */
struct memo {
	uint64_t pc, epoch;
	const struct unwtab_row *row;
	int found;
};

/* What the callbacks read: the sample being unwound. */
struct current {
	const uint64_t *regs;
	uint64_t mask;
	const unsigned char *stack;
	uint64_t stack_len;
	uint64_t sp;
	uint64_t *frames;
	unsigned nr_frames, max_frames;
	const struct space *space;
	uint64_t prev_pc;        /* where the last frame was looked up */
	/* libdwfl goes on from the tables' last frame: its rsp, rbp and rip only (NULL: the sample's) */
	const struct unwtab_regs *from;
	/* libdwfl's last frame: its registers as libdwfl has them, for frame pointers past it */
	struct unwtab_regs last;
	bool last_ok;            /* its rsp known */
	bool last_caller;        /* its pc a return address */
	/* What of the stack copy the walk needed (perfrec_unwinder__on_reach()) */
	uint64_t high, missed;
	bool whole;              /* the tables' walk reached the stack's outermost frame */
};

/* A record waiting in the queue (perfrec_unwinder__push()). */
struct queued {
	size_t off;              /* in qbuf */
	const void *borrowed;    /* or here: the caller's (__push_borrowed()) */
	uint64_t time;
	const struct perf_event_attr *attr;
	int out;                 /* > 0: rewritten, at out_off in obuf */
	size_t out_off;
};

struct perfrec_unwinder {
	char proc[256];
	bool use_proc;
	size_t max_elves, max_spaces, max_elf_fds;
	Elf *host_elf;           /* an x86_64 header: the machine every session unwinds as */
	unsigned char host_ehdr[sizeof(Elf64_Ehdr)];
	const struct space *building;  /* whose session is being reported to */
	uint64_t max_elf_bytes;
	uint64_t fd_bytes;       /* sizes of the entries read through an fd */
	unsigned max_frames;
	uint64_t clock;
	struct space *buckets[NR_BUCKETS];
	struct elf_entry *elves;
	struct current cur;
	struct perfrec_unwinder_stats st;
	unsigned char *qbuf, *obuf;
	size_t qlen, qcap, olen, ocap;
	struct queued *q;
	size_t nq, qslots;
	uint64_t last_time;
	uint64_t frames[512];     /* max_frames is capped to this */
	/* the unwind tables (unwtab-cache.h): the first way, libdwfl only where they say */
	bool tables_off;
	struct unwtab_cache *tabs;
	struct perfrec_unwinder_table_stats tst;
	struct unwtab_frame tframes[512];
	struct unwtab_regs dwfl_from;  /* cur.from's */
	unsigned dwfl_base;            /* frames the tables found before libdwfl's */
	uint64_t epochs;               /* the last space epoch handed out */
	uint64_t memo_gen;             /* the table cache's generation the memo holds rows of */
	struct memo memo[1u << MEMO_BITS];
	perfrec_unwinder_reach_fn reach;
	void *reach_ctx;
};

/* --- ELF cache ----------------------------------------------------------- */

static void drop_sessions_using(struct perfrec_unwinder *u, const char *key);

static void elf_entry_free(struct perfrec_unwinder *u, struct elf_entry *e)
{
	if (!e)
		return;
	if (e->fd >= 0) {
		u->st.elf_fds--;
		u->fd_bytes -= e->size;
	}
	/* Modules still holding the handle close the fd with their last elf_end(). */
	if (elf_end(e->elf) == 0 && e->fd >= 0)
		close(e->fd);
	free(e);
}

static bool over_limits(const struct perfrec_unwinder *u, bool *fds_only)
{
	bool count = u->st.elves > u->max_elves || (u->st.elves > 1 && u->st.elf_bytes > u->max_elf_bytes);

	*fds_only = !count;
	return count || u->st.elf_fds > u->max_elf_fds || (u->st.elf_fds > 1 && u->fd_bytes > MAX_FD_BYTES);
}

/* Evict the least recently used entries (never @keep) until under every bound. */
static void evict_elves(struct perfrec_unwinder *u, const struct elf_entry *keep)
{
	bool fds_only;

	while (over_limits(u, &fds_only)) {
		struct elf_entry **pp, **oldest = NULL, *e;

		for (pp = &u->elves; *pp; pp = &(*pp)->next)
			if (*pp != keep && (!fds_only || (*pp)->fd >= 0) &&
			    (!oldest || (*pp)->last_use < (*oldest)->last_use))
				oldest = pp;
		if (!oldest)
			break;
		e = *oldest;
		*oldest = e->next;
		/* Its fd must not outlive the entry in sessions: they go with it. */
		if (e->fd >= 0)
			drop_sessions_using(u, e->key);
		u->st.elves--;
		u->st.elf_bytes -= e->size;
		u->st.elf_evicted++;
		elf_entry_free(u, e);
	}
}

/* Asked for every code map of every new process: hex by hand, not a snprintf() a byte. */
static void map_key(const struct map *m, char *key)
{
	static const char hex[] = "0123456789abcdef";

	if (m->build_id_len) {
		for (unsigned i = 0; i < m->build_id_len; i++) {
			key[2 * i] = hex[m->build_id[i] >> 4];
			key[2 * i + 1] = hex[m->build_id[i] & 15];
		}
		key[2 * m->build_id_len] = 0;
	} else {
		snprintf(key, KEY_MAX, "%x:%x:%" PRIu64, m->maj, m->min, m->ino);
	}
}

/* An x86_64 executable or shared object, as this host runs: all libdwfl may be shown. */
static bool host_ehdr(const Elf64_Ehdr *h)
{
	return memcmp(h->e_ident, ELFMAG, SELFMAG) == 0 && h->e_ident[EI_CLASS] == ELFCLASS64 &&
	       h->e_ident[EI_DATA] == ELFDATA2LSB && h->e_ident[EI_VERSION] == EV_CURRENT &&
	       h->e_machine == EM_X86_64 && h->e_version == EV_CURRENT &&
	       (h->e_type == ET_EXEC || h->e_type == ET_DYN) && h->e_ehsize == sizeof(Elf64_Ehdr) &&
	       h->e_phentsize == sizeof(Elf64_Phdr) && h->e_phnum > 0 && h->e_phnum < PN_XNUM;
}

/*
 * Whether only root can change the file at @fd: then a mapping of it
 * cannot be cut short (SIGBUS) or rewritten under us.  A FUSE file
 * system says what its owner likes about owners and sizes.
 */
static bool only_root_writes(int fd, const struct stat *st)
{
	struct statfs sf;

	return st->st_uid == 0 && !(st->st_mode & (S_IWGRP | S_IWOTH)) && fstatfs(fd, &sf) == 0 &&
	       (unsigned long)sf.f_type != FUSE_MAGIC;
}

/* The extent of @elf's PT_LOADs into @e; false if it has none that make sense. */
static bool load_extent(Elf *elf, struct elf_entry *e)
{
	size_t phnum;
	bool found = false;

	if (elf_getphdrnum(elf, &phnum) != 0)
		return false;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (ph.p_memsz > UINT64_MAX - ph.p_vaddr)
			return false;
		if (!found)
			e->vaddr = ph.p_vaddr & -(ph.p_align ? ph.p_align : 1);
		e->vend = ph.p_vaddr + ph.p_memsz;
		found = true;
	}
	return found && e->vend > e->vaddr;
}

/* The declared size of a GNU .zdebug section ("ZLIB", then 8 bytes big-endian), or 0. */
static uint64_t zdebug_size(Elf_Scn *scn)
{
	Elf_Data *d = elf_rawdata(scn, NULL);
	const unsigned char *b;
	uint64_t n = 0;

	if (!d || !d->d_buf || d->d_size < 12 || memcmp(d->d_buf, "ZLIB", 4) != 0)
		return 0;
	b = (const unsigned char *)d->d_buf + 4;
	for (int i = 0; i < 8; i++)
		n = n << 8 | b[i];
	return n;
}

/*
 * Whether what libdw would inflate of @elf's compressed sections (it does
 * so whole, at the size the file declares, when it reads the DWARF for
 * .debug_frame) stays under MAX_INFLATED: a few KiB of deflated zeros
 * would otherwise be gigabytes of the daemon's memory.
 */
static bool inflated_ok(Elf *elf)
{
	Elf_Scn *scn = NULL;
	uint64_t total = 0;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		shstrndx = 0;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;
		GElf_Shdr sh;
		GElf_Chdr ch;
		uint64_t n = 0;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		if (sh.sh_flags & SHF_COMPRESSED)
			n = gelf_getchdr(scn, &ch) ? ch.ch_size : 0;
		else if (shstrndx && (name = elf_strptr(elf, shstrndx, sh.sh_name)) && !strncmp(name, ".zdebug", 7))
			n = zdebug_size(scn);
		if (n > MAX_INFLATED - total)
			return false;
		total += n;
	}
	return true;
}

/*
 * Read the file at @fd (ours from now on) into @e if it is the one @m maps
 * and a host executable or shared object.  -ENOENT: not the file;
 * -EPERM: the file, but not one to unwind with (counted as refused).
 */
static int open_entry(struct perfrec_unwinder *u, int fd, const struct map *m, struct elf_entry *e)
{
	GElf_Ehdr eh;
	Elf64_Ehdr raw;
	struct stat st;
	bool mapped;
	int r = -EPERM;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		goto fail_enoent;
	if (!m->build_id_len &&
	    (major(st.st_dev) != m->maj || minor(st.st_dev) != m->min || (uint64_t)st.st_ino != m->ino))
		goto fail_enoent;
	/* Checked before libelf reads it, then again on the copy libdwfl will see. */
	if (pread(fd, &raw, sizeof(raw), 0) != (ssize_t)sizeof(raw) || !host_ehdr(&raw))
		goto fail;
	mapped = only_root_writes(fd, &st);
	e->cmd = mapped ? ELF_C_READ_MMAP : ELF_C_READ;
	e->elf = elf_begin(fd, e->cmd, NULL);
	if (!e->elf || elf_kind(e->elf) != ELF_K_ELF || !gelf_getehdr(e->elf, &eh) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_machine != EM_X86_64 || eh.e_type != raw.e_type ||
	    !load_extent(e->elf, e) || !inflated_ok(e->elf))
		goto fail;
	if (m->build_id_len) {
		const void *id;
		ssize_t n = dwelf_elf_gnu_build_id(e->elf, &id);

		if (n != m->build_id_len || memcmp(id, m->build_id, (size_t)n) != 0) {
			r = -ENOENT;
			goto fail;
		}
	}
	e->e_type = eh.e_type;
	e->size = (uint64_t)st.st_size;
	e->dev = (uint64_t)st.st_dev;
	e->ino = (uint64_t)st.st_ino;
	if (mapped) {
		/* The mapping holds the whole file: no fd needed past here. */
		elf_cntl(e->elf, ELF_C_FDDONE);
		close(fd);
		fd = -1;
	}
	e->fd = fd;
	return 0;
fail_enoent:
	r = -ENOENT;
fail:
	elf_end(e->elf);
	e->elf = NULL;
	close(fd);
	if (r == -EPERM)
		u->st.elf_refused++;
	return r;
}

/*
 * @path opened for reading if it is a regular file, -1 otherwise.  Nothing
 * else is opened: a map can name anything (a device, whose open() may
 * have effects; a FIFO, whose open() blocks the worker for good), and the
 * path can change between a look and an open.  An O_PATH open has no
 * effect on what it opens; the file it found is then reopened as itself.
 */
static int open_regular(const char *path)
{
	char self[64];
	struct stat st;
	int pfd = open(path, O_PATH | O_CLOEXEC), fd = -1;

	if (pfd < 0)
		return -1;
	if (fstat(pfd, &st) == 0 && S_ISREG(st.st_mode)) {
		snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
		fd = open(self, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	}
	close(pfd);
	return fd;
}

/* Where to look for @m's file of process @pid, in the order of @how (0, 1, 2): see find_elf(). */
static void map_path(const struct perfrec_unwinder *u, uint32_t pid, const struct map *m, int how,
		     char *path, size_t len)
{
	if (how == 0)
		snprintf(path, len, "%s/%u/map_files/%" PRIx64 "-%" PRIx64, u->proc, pid, m->start, m->end);
	else if (how == 1)
		snprintf(path, len, "%s/%u/root%s", u->proc, pid, m->name);
	else
		snprintf(path, len, "%s", m->name);
}

/* The cache entry for @m's file in process @pid, or NULL. */
static struct elf_entry *find_elf(struct perfrec_unwinder *u, uint32_t pid, const struct map *m)
{
	char key[KEY_MAX], path[PATH_MAX + 300];
	struct elf_entry *e;
	int r = -ENOENT;

	map_key(m, key);
	for (e = u->elves; e; e = e->next)
		if (strcmp(e->key, key) == 0) {
			e->last_use = ++u->clock;
			u->st.elf_hits++;
			return e;
		}
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	/*
	 * map_files sees deleted binaries and other mount namespaces; root
	 * sees the process's view of the path; the path itself serves files
	 * read after the process is gone.  Only a file that is the one the
	 * map named is taken.
	 */
	for (int how = 0; how < 3 && r == -ENOENT; how++) {
		int fd;

		if (how < 2 && !u->use_proc)
			continue;
		map_path(u, pid, m, how, path, sizeof(path));
		fd = open_regular(path);
		if (fd >= 0)
			r = open_entry(u, fd, m, e);
	}
	if (r < 0) {
		free(e);
		return NULL;
	}
	memcpy(e->key, key, sizeof(key));
	e->last_use = ++u->clock;
	e->next = u->elves;
	u->elves = e;
	u->st.elves++;
	u->st.elf_bytes += e->size;
	u->st.elf_opened++;
	if (e->fd >= 0) {
		u->st.elf_fds++;
		u->fd_bytes += e->size;
	}
	evict_elves(u, e);
	return e;
}

/* --- address spaces ------------------------------------------------------ */

static struct space *find_space(struct perfrec_unwinder *u, uint32_t pid, bool create)
{
	struct space **pp = &u->buckets[pid % NR_BUCKETS], *s;

	for (s = *pp; s; s = s->next)
		if (s->pid == pid)
			return s;
	if (!create)
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->pid = pid;
	s->epoch = ++u->epochs;
	s->last_use = ++u->clock;
	s->next = *pp;
	*pp = s;
	u->st.spaces++;
	return s;
}

static void drop_dwfl(struct perfrec_unwinder *u, struct space *s)
{
	if (s->dwfl) {
		dwfl_end(s->dwfl);
		s->dwfl = NULL;
		u->st.live_sessions--;
	}
}

static void clear_maps(struct space *s)
{
	for (size_t i = 0; i < s->nr; i++)
		free(s->maps[i].name);
	s->nr = 0;
	s->stale = true;
}

static void free_space(struct perfrec_unwinder *u, struct space *s)
{
	drop_dwfl(u, s);
	clear_maps(s);
	free(s->maps);
	free(s);
}

static void remove_space(struct perfrec_unwinder *u, uint32_t pid)
{
	struct space **pp = &u->buckets[pid % NR_BUCKETS];

	for (; *pp; pp = &(*pp)->next)
		if ((*pp)->pid == pid) {
			struct space *s = *pp;

			*pp = s->next;
			free_space(u, s);
			u->st.spaces--;
			return;
		}
}

/*
 * Forget the least recently used address space while there are more than
 * the sessions allow for: processes whose EXIT never came (lost to a full
 * ring) would otherwise pile up.  Forgotten, a live process's samples get
 * their ip alone until it maps again or forks.
 */
static void evict_spaces(struct perfrec_unwinder *u)
{
	while (u->st.spaces > u->max_spaces * SPACES_PER_SESSION) {
		struct space *oldest = NULL;

		for (size_t b = 0; b < NR_BUCKETS; b++)
			for (struct space *s = u->buckets[b]; s; s = s->next)
				if (!oldest || s->last_use < oldest->last_use)
					oldest = s;
		if (!oldest)
			return;
		remove_space(u, oldest->pid);
		u->st.spaces_evicted++;
	}
}

/* Drop every session (but the one being built) with a module read from the file @key names. */
static void drop_sessions_using(struct perfrec_unwinder *u, const char *key)
{
	char k[KEY_MAX];

	for (size_t b = 0; b < NR_BUCKETS; b++)
		for (struct space *s = u->buckets[b]; s; s = s->next) {
			if (!s->dwfl || s == u->building)
				continue;
			for (size_t i = 0; i < s->nr; i++) {
				if (!s->maps[i].exec || !s->maps[i].reported || s->maps[i].missing)
					continue;
				map_key(&s->maps[i], k);
				if (strcmp(k, key) == 0) {
					drop_dwfl(u, s);
					s->stale = true;
					u->st.sessions_evicted++;
					break;
				}
			}
		}
}

static int reserve(struct space *s, size_t n)
{
	if (s->nr + n > s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		struct map *m;

		while (cap < s->nr + n)
			cap *= 2;
		m = realloc(s->maps, cap * sizeof(*m));
		if (!m)
			return -ENOMEM;
		s->maps = m;
		s->cap = cap;
	}
	return 0;
}

/*
 * The first of @s's maps that ends past @addr (s->nr if none): the maps
 * are sorted and do not overlap, so their ends are sorted too.  A process
 * with malloc's arenas, thread stacks and the like has thousands of maps,
 * and each new one was a walk over all of them.
 */
static size_t first_ending_after(const struct space *s, uint64_t addr)
{
	size_t lo = 0, hi = s->nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->maps[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Map @nm (its name owned by the space from now on) over whatever it
 * overlaps.  The unwind session is rebuilt only when code maps are cut or
 * replaced; new code (the dynamic loader mapping a library, a dlopen) is
 * only added to it, and a data map (heap growth, a thread's stack,
 * malloc's arenas) that covers no code leaves it as it is, since the
 * session holds only the executable maps.  Rebuilding re-reads every
 * module's CFI, and a process that maps as it runs (or starts, one
 * library at a time) would otherwise pay that on nearly every sample.
 * A data map is not kept at all: all it does to unwinding is take the
 * place of code it overlaps (a pc there is in no code either way), and
 * with mmap_data every heap growth, arena and thread stack is one: python3
 * or node kept thousands, each with its name copied, to search through
 * and to copy at every fork.
 * Returns 1 when code was added, cut or replaced, 0 when it was a data map
 * over no code (what table_find() answers is the same), or -ENOMEM.
 */
static int add_map(struct space *s, struct map *nm)
{
	bool code_gone = false;
	size_t i;
	int r;

	r = reserve(s, 2);
	if (r < 0) {
		free(nm->name);
		return r;
	}
	/* The maps it overlaps, from the first that ends past its start. */
	for (i = first_ending_after(s, nm->start); i < s->nr && s->maps[i].start < nm->end;) {
		struct map *m = &s->maps[i];

		code_gone = true;
		if (m->start < nm->start && m->end > nm->end) {
			/* Split around the new one. */
			struct map tail = *m;

			tail.name = strdup(m->name);
			if (!tail.name) {
				free(nm->name);
				return -ENOMEM;
			}
			tail.pgoff += nm->end - m->start;
			tail.start = nm->end;
			m->end = nm->start;
			memmove(&s->maps[i + 2], &s->maps[i + 1], (s->nr - i - 1) * sizeof(*m));
			s->maps[i + 1] = tail;
			s->nr++;
			i += 2;
		} else if (m->start < nm->start) {
			m->end = nm->start;
			i++;
		} else if (m->end > nm->end) {
			m->pgoff += nm->end - m->start;
			m->start = nm->end;
			i++;
		} else {
			free(m->name);
			memmove(m, m + 1, (s->nr - i - 1) * sizeof(*m));
			s->nr--;
		}
	}
	if (!nm->exec) {
		if (code_gone)
			s->stale = true;
		return code_gone;
	}
	i = first_ending_after(s, nm->start);
	memmove(&s->maps[i + 1], &s->maps[i], (s->nr - i) * sizeof(*nm));
	s->maps[i] = *nm;
	s->nr++;
	if (code_gone)
		s->stale = true;
	else if (nm->exec)
		s->grown = true;
	return code_gone || nm->exec;
}

static int copy_space(struct perfrec_unwinder *u, uint32_t from, uint32_t to)
{
	struct space *src = find_space(u, from, false), *dst;
	int r;

	remove_space(u, to);
	if (!src || !src->nr)
		return 0;
	dst = find_space(u, to, true);
	if (!dst)
		return -ENOMEM;
	r = reserve(dst, src->nr);
	if (r < 0)
		return r;
	for (size_t i = 0; i < src->nr; i++) {
		dst->maps[i] = src->maps[i];
		dst->maps[i].name = strdup(src->maps[i].name);
		if (!dst->maps[i].name)
			return -ENOMEM;
		dst->nr = i + 1;
	}
	dst->stale = true;
	return 0;
}

/* Side-band bodies: fixed offsets after the header. */
static int note_mmap(struct perfrec_unwinder *u, const struct perf_event_header *h)
{
	const unsigned char *p = (const unsigned char *)(h + 1), *end = (const unsigned char *)h + h->size;
	bool v2 = h->type == PERF_RECORD_MMAP2;
	size_t fixed = v2 ? 4 + 4 + 8 * 3 + 24 + 4 + 4 : 4 + 4 + 8 * 3;
	struct map m = {0};
	uint32_t pid, prot = PROT_EXEC;
	size_t name_len;
	struct space *s;
	int r;

	if ((size_t)(end - p) <= fixed)
		return 0;
	memcpy(&pid, p, 4);
	memcpy(&m.start, p + 8, 8);
	memcpy(&m.end, p + 16, 8);
	memcpy(&m.pgoff, p + 24, 8);
	if (m.end > UINT64_MAX - m.start || !m.end)
		return 0;
	m.end += m.start;
	if (v2) {
		const unsigned char *q = p + 32;

		if (h->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
			m.build_id_len = q[0] <= BUILD_ID_MAX ? q[0] : BUILD_ID_MAX;
			memcpy(m.build_id, q + 4, m.build_id_len);
		} else {
			memcpy(&m.maj, q, 4);
			memcpy(&m.min, q + 4, 4);
			memcpy(&m.ino, q + 8, 8);
		}
		memcpy(&prot, q + 24, 4);
	}
	m.exec = v2 ? !!(prot & PROT_EXEC) : !(h->misc & PERF_RECORD_MISC_MMAP_DATA);
	if (pid == UINT32_MAX || (h->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL)
		return 0;
	/* A data map's name is never asked for (add_map() keeps only code). */
	if (m.exec) {
		name_len = strnlen((const char *)p + fixed, (size_t)(end - p) - fixed);
		m.name = strndup((const char *)p + fixed, name_len);
		if (!m.name)
			return -ENOMEM;
	}
	s = find_space(u, pid, true);
	if (!s) {
		free(m.name);
		return -ENOMEM;
	}
	/*
	 * The memo's answers for this space go when code changes (or when a
	 * failure may have cut a map already), not at every heap or stack map.
	 */
	r = add_map(s, &m);
	if (r != 0)
		s->epoch = ++u->epochs;
	return r < 0 ? r : 0;
}

static int apply_sideband(struct perfrec_unwinder *u, const struct perf_event_header *h)
{
	const unsigned char *p = (const unsigned char *)(h + 1);
	uint32_t pid, ppid, tid;

	switch (h->type) {
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
		return note_mmap(u, h);
	case PERF_RECORD_COMM:
		/* A new image: its mappings come next. */
		if (h->size >= sizeof(*h) + 8 && (h->misc & PERF_RECORD_MISC_COMM_EXEC)) {
			struct space *s;

			memcpy(&pid, p, 4);
			s = find_space(u, pid, false);
			if (s) {
				clear_maps(s);
				s->epoch = ++u->epochs;
			}
		}
		return 0;
	case PERF_RECORD_FORK:
		if (h->size < sizeof(*h) + 16)
			return 0;
		memcpy(&pid, p, 4);
		memcpy(&ppid, p + 4, 4);
		memcpy(&tid, p + 8, 4);
		/* A new process (not a thread) starts with its parent's mappings. */
		if (pid == tid && pid != ppid)
			return copy_space(u, ppid, pid);
		return 0;
	case PERF_RECORD_EXIT:
		if (h->size < sizeof(*h) + 16)
			return 0;
		memcpy(&pid, p, 4);
		memcpy(&tid, p + 8, 4);
		if (pid == tid)
			remove_space(u, pid);
		return 0;
	default:
		return 0;
	}
}

static int note_sideband(struct perfrec_unwinder *u, const struct perf_event_header *h)
{
	int r = apply_sideband(u, h);

	evict_spaces(u);
	return r;
}

/* --- libdwfl ------------------------------------------------------------- */

/*
 * The module's file is the cache entry report_map() left in its userdata:
 * libdwfl gets a reference to our handle, never a path to open.  The fd
 * (or -1) is closed by whoever ends the handle's last reference.
 */
static int cached_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
		      char **file_name, Elf **elfp)
{
	const struct elf_entry *e = *userdata;

	(void)mod; (void)modname; (void)base; (void)file_name;
	if (!e)
		return -1;
	*elfp = elf_begin(-1, e->cmd, e->elf);
	return *elfp ? e->fd : -1;
}

/* No separate debug files: the mapped file's own .eh_frame and .debug_frame. */
static int no_find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			     const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
			     char **debuginfo_file_name)
{
	(void)mod; (void)userdata; (void)modname; (void)base; (void)file_name;
	(void)debuglink_file; (void)debuglink_crc; (void)debuginfo_file_name;
	return -1;
}

static const Dwfl_Callbacks dwfl_callbacks = {
	.find_elf = cached_elf,
	.find_debuginfo = no_find_debuginfo,
};

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	(void)dwfl; (void)arg; (void)thread_argp;
	return 0;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	(void)dwfl; (void)tid;
	*thread_argp = arg;
	return true;
}

/* Only the stack copy: an address outside it fails, which ends the chain. */
static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	struct current *c = &((struct perfrec_unwinder *)arg)->cur;

	(void)dwfl;
	if (addr < c->sp || addr - c->sp > c->stack_len || c->stack_len - (addr - c->sp) < sizeof(*result)) {
		if (addr >= c->sp && !c->missed)
			c->missed = addr;
		return false;
	}
	memcpy(result, c->stack + (addr - c->sp), sizeof(*result));
	if (addr + sizeof(*result) > c->high)
		c->high = addr + sizeof(*result);
	return true;
}

/* What a walk of the tables read, into u->cur. */
static void note_reads(struct current *c, const struct unwtab_result *res)
{
	if (res->high > c->high)
		c->high = res->high;
	if (res->missed && !c->missed)
		c->missed = res->missed;
}

/* perf register @reg of the sample, 0 when the mask does not carry it. */
static uint64_t reg(const struct current *c, unsigned reg)
{
	return perfrec_user_reg(c->regs, c->mask, reg);
}

static bool set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	const struct current *c = &((struct perfrec_unwinder *)arg)->cur;
	/* DWARF numbering on x86_64: rax rdx rcx rbx rsi rdi rbp rsp r8..r15 rip. */
	static const unsigned from_perf[8] = { P_AX, P_DX, P_CX, P_BX, P_SI, P_DI, P_BP, P_SP };
	Dwarf_Word dw[17];

	if (c->from) {
		/* The rest is not known up there: left undefined, not guessed. */
		Dwarf_Word sp = c->from->sp, bp = c->from->bp;

		if (!dwfl_thread_state_registers(thread, 7, 1, &sp) ||
		    (c->from->bp_valid && !dwfl_thread_state_registers(thread, 6, 1, &bp)))
			return false;
		dwfl_thread_state_register_pc(thread, c->from->ip);
		return true;
	}

	for (unsigned i = 0; i < 8; i++)
		dw[i] = reg(c, from_perf[i]);
	for (unsigned i = 0; i < 8; i++)
		dw[8 + i] = reg(c, P_R8 + i);
	dw[16] = reg(c, P_IP);
	if (!dwfl_thread_state_registers(thread, 0, 17, dw))
		return false;
	dwfl_thread_state_register_pc(thread, dw[16]);
	return true;
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = next_thread,
	.get_thread = get_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

/* The map holding @pc, or NULL: the first ending past it, if it starts at or before it. */
static struct map *find_map(const struct space *s, uint64_t pc)
{
	size_t i = first_ending_after(s, pc);

	return i < s->nr && s->maps[i].start <= pc ? &s->maps[i] : NULL;
}

static bool in_exec_map(const struct space *s, uint64_t pc)
{
	const struct map *m = find_map(s, pc);

	return m && m->exec;
}

/*
 * Whether CFI covers @pc.  libdwfl falls back to walking frame pointers
 * where there is none (x86_64's ebl unwind), which on code built without
 * them is a guess: a frame found after a pc without CFI is not taken.
 */
static bool cfi_at(Dwfl *dwfl, uint64_t pc, bool *signal)
{
	Dwfl_Module *mod = dwfl_addrmodule(dwfl, pc);
	Dwarf_Frame *frame;
	Dwarf_Addr bias, start, end;
	Dwarf_CFI *cfi;

	*signal = false;
	if (!mod)
		return false;
	cfi = dwfl_module_eh_cfi(mod, &bias);
	if (!cfi || dwarf_cfi_addrframe(cfi, pc - bias, &frame) != 0) {
		cfi = dwfl_module_dwarf_cfi(mod, &bias);
		if (!cfi || dwarf_cfi_addrframe(cfi, pc - bias, &frame) != 0)
			return false;
	}
	if (dwarf_frame_info(frame, &start, &end, signal) < 0)
		*signal = false;
	free(frame);
	return true;
}

static bool has_cfi(Dwfl *dwfl, uint64_t pc)
{
	bool signal;

	return cfi_at(dwfl, pc, &signal);
}

static int frame_cb(Dwfl_Frame *state, void *arg)
{
	struct current *c = &((struct perfrec_unwinder *)arg)->cur;
	Dwarf_Addr pc;
	bool activation;

	if (!dwfl_frame_pc(state, &pc, &activation) || pc == 0)
		return DWARF_CB_ABORT;
	/*
	 * A caller outside every executable mapping is a return address read
	 * from garbage (or past a frame without CFI): the chain ends before
	 * it, never with a guess.
	 */
	if (c->nr_frames && !in_exec_map(c->space, pc))
		return DWARF_CB_ABORT;
	if (c->nr_frames && !has_cfi(dwfl_thread_dwfl(dwfl_frame_thread(state)), c->prev_pc))
		return DWARF_CB_ABORT;
	/*
	 * The call, not the instruction after it, as perf's unwinders report
	 * callers.  The first frame, when it is the tables' last, is a return
	 * address libdwfl takes for an interrupted pc: reported as libdwfl
	 * would have, the call, but for a signal frame's trampoline (whose
	 * caller is an interrupted pc: libdwfl reports both as they are).
	 */
	if (c->from && !c->nr_frames) {
		bool signal;

		activation = cfi_at(dwfl_thread_dwfl(dwfl_frame_thread(state)), pc - 1, &signal) && signal;
	}
	/* Where the chain may go on by frame pointers when libdwfl cannot (dwfl_rounds()). */
	c->last = (struct unwtab_regs){ .ip = pc };
	c->last_caller = !activation;
	c->last_ok = dwfl_frame_reg(state, 7, &c->last.sp) == 0;
	c->last.bp_valid = dwfl_frame_reg(state, 6, &c->last.bp) == 0;
	if (!activation)
		pc--;
	c->prev_pc = pc;
	c->frames[c->nr_frames++] = pc;
	return c->nr_frames < c->max_frames ? DWARF_CB_OK : DWARF_CB_ABORT;
}

static void evict_sessions(struct perfrec_unwinder *u)
{
	struct space *oldest = NULL;

	/* Counted as they come and go: the spaces are walked only to find the one to drop. */
	if (u->st.live_sessions <= u->max_spaces)
		return;
	for (size_t b = 0; b < NR_BUCKETS; b++)
		for (struct space *s = u->buckets[b]; s; s = s->next)
			if (s->dwfl && (!oldest || s->last_use < oldest->last_use))
				oldest = s;
	if (oldest) {
		drop_dwfl(u, oldest);
		oldest->stale = true;
		u->st.sessions_evicted++;
	}
}

/*
 * Anonymous code is JIT code (a [vdso] without a build id has frame
 * pointers).  The kernel names anonymous memory "//anon" in its records:
 * no file to look for.
 */
static bool jit_map(const struct map *m)
{
	if (!strcmp(m->name, "//anon"))
		return true;
	return m->name[0] != '/' && (strcmp(m->name, VDSO_MAP_NAME) || !m->build_id_len);
}

/*
 * Report @s->maps[@i] to the session if it is code with a file, not yet
 * there, and not another segment of a module already there (one module
 * per file and base).  True if a module was added.  The module's range is
 * worked out here from the checked file, as libdwfl would (the file's
 * offset 0 at start - pgoff, like perf; an ET_EXEC where its headers
 * say): a module reported again with the same name and range is the one
 * already there, where dwfl_report_elf() took that for a clash and
 * dropped the module in use.
 */
static bool report_map(struct perfrec_unwinder *u, struct space *s, size_t i)
{
	struct map *m = &s->maps[i];
	struct elf_entry *e;
	Dwfl_Module *mod;
	uint64_t base, low, high;
	Dwarf_Addr bias;
	void **userdata;

	/* JIT code ("//anon" too) is no file to look for: libdwfl's frame pointers walk it. */
	if (!m->exec || m->missing || m->reported || m->name[0] != '/' || jit_map(m) || m->pgoff > m->start)
		return false;
	m->reported = true;
	for (size_t j = 0; j < s->nr; j++)
		if (j != i && s->maps[j].reported && s->maps[j].exec && !s->maps[j].missing &&
		    s->maps[j].start - s->maps[j].pgoff == m->start - m->pgoff &&
		    strcmp(s->maps[j].name, m->name) == 0)
			return false;
	e = find_elf(u, s->pid, m);
	if (!e)
		goto missing;
	base = e->e_type == ET_EXEC ? e->vaddr : m->start - m->pgoff;
	if (__builtin_add_overflow(base, e->vend - e->vaddr, &high))
		goto missing;
	low = base;
	mod = dwfl_report_module(s->dwfl, m->name, low, high);
	if (!mod)
		goto missing;
	dwfl_module_info(mod, &userdata, NULL, NULL, NULL, NULL, NULL, NULL);
	*userdata = e;
	/* Taken now: the entry may be evicted before libdwfl would ask. */
	if (!dwfl_module_getelf(mod, &bias)) {
		*userdata = NULL;
		goto missing;
	}
	*userdata = NULL;
	return true;
missing:
	m->missing = true;
	u->st.elf_missing++;
	return false;
}

/* Add @s's new code maps to its session (see add_map()). */
static void grow_dwfl(struct perfrec_unwinder *u, struct space *s)
{
	s->grown = false;
	u->building = s;
	dwfl_report_begin_add(s->dwfl);
	for (size_t i = 0; i < s->nr; i++)
		report_map(u, s, i);
	dwfl_report_end(s->dwfl, NULL, NULL);
	u->building = NULL;
}

/* Build @s's session from its executable file mappings; false if none could be. */
static bool build_dwfl(struct perfrec_unwinder *u, struct space *s)
{
	size_t reported = 0;

	drop_dwfl(u, s);
	s->stale = s->grown = false;
	u->st.sessions++;
	s->dwfl = dwfl_begin(&dwfl_callbacks);
	if (!s->dwfl)
		return false;
	u->st.live_sessions++;
	for (size_t i = 0; i < s->nr; i++)
		s->maps[i].reported = false;
	u->building = s;
	dwfl_report_begin(s->dwfl);
	for (size_t i = 0; i < s->nr; i++)
		reported += report_map(u, s, i);
	dwfl_report_end(s->dwfl, NULL, NULL);
	u->building = NULL;
	/*
	 * The machine is ours to say, not the first module's: libdwfl sizes
	 * its frame state by it, and would otherwise hold that module's
	 * backend, which a later report can free.
	 */
	if (!reported || !dwfl_attach_state(s->dwfl, u->host_elf, (pid_t)s->pid, &thread_callbacks, u)) {
		drop_dwfl(u, s);
		return false;
	}
	evict_sessions(u);
	return true;
}

/* --- unwind tables ------------------------------------------------------ */

/*
 * What a file whose CFI made no table gets instead: a fallback row at
 * every pc, so that the walk hands such frames to libdwfl.
 */
static const struct unwtab_row dwfl_row = { .kind = UNWTAB_FALLBACK };
/*
 * And a file that is not to be had: its frame is the chain's last, as
 * with libdwfl (no module).  Its code is no JIT's: its frame pointers, if
 * any, are not followed on the strength of a file nobody could check.
 */
static const struct unwtab_row stop_row = { .kind = UNWTAB_OUTERMOST };

/* Which file table_open() looks for: the one find_elf() takes for @m. */
struct tab_open {
	struct perfrec_unwinder *u;
	uint32_t pid;
	const struct map *m;
	const struct elf_entry *e;
	bool looked;             /* find_elf() was asked */
};

/*
 * A copy of the file at @fd (closed) in memory of ours: the table builder
 * maps what it reads, and a file others can change could be cut short
 * under a mapping (SIGBUS) or rewritten as it is read.
 */
static int private_copy(int fd, uint64_t size)
{
	unsigned char buf[1 << 16];
	uint64_t off = 0;
	int mfd = size <= MAX_FD_BYTES ? memfd_create("perfrec-unwtab", MFD_CLOEXEC) : -1;

	while (mfd >= 0 && off < size) {
		ssize_t n = pread(fd, buf, sizeof(buf), (off_t)off);

		if (n <= 0)
			break;
		if (write(mfd, buf, (size_t)n) != n) {
			close(mfd);
			mfd = -1;
		}
		off += (uint64_t)n;
	}
	close(fd);
	return mfd >= 0 ? mfd : -ENOENT;
}

/*
 * unwtab_open_fn: the file find_elf() checked and took (its build id, a
 * host x86_64 ELF, sizes that make sense): its fd when it keeps one, else
 * found again where find_elf() looks, as the same device and inode.
 */
static int table_open(void *ctx, int attempt)
{
	struct tab_open *o = ctx;
	char path[PATH_MAX + 300];
	struct stat st;
	int fd;

	/*
	 * The vdso has no file: the kernel's image, this process's, if its
	 * build id is the map's (vdso.h).
	 */
	if (!strcmp(o->m->name, VDSO_MAP_NAME)) {
		if (attempt > 0 || !o->m->build_id_len)
			return -ESRCH;
		fd = vdso_memfd(o->m->build_id, o->m->build_id_len);
		return fd == -ENOENT ? -ESRCH : fd;
	}
	/* Only now: a table in memory or on disk needs no file. */
	if (!o->looked) {
		o->looked = true;
		o->e = find_elf(o->u, o->pid, o->m);
	}
	if (attempt > 2 || !o->e)
		return -ESRCH;
	if (o->e->fd >= 0) {
		if (attempt > 0)
			return -ESRCH;
		fd = fcntl(o->e->fd, F_DUPFD_CLOEXEC, 3);
		return fd < 0 ? -errno : private_copy(fd, o->e->size);
	}
	if (attempt < 2 && !o->u->use_proc)
		return -ENOENT;
	map_path(o->u, o->pid, o->m, attempt, path, sizeof(path));
	fd = open_regular(path);
	if (fd < 0)
		return -ENOENT;
	if (fstat(fd, &st) < 0 || (uint64_t)st.st_dev != o->e->dev || (uint64_t)st.st_ino != o->e->ino) {
		close(fd);
		return -ENOENT;
	}
	return only_root_writes(fd, &st) ? fd : private_copy(fd, (uint64_t)st.st_size);
}

/* What the tables have for @m of @s (its tab_* set, but after a failure for want of memory). */
static enum tab_state resolve_table(struct perfrec_unwinder *u, const struct space *s, struct map *m)
{
	struct tab_open o = { .u = u, .pid = s->pid, .m = m };
	const struct unwtab *t;
	char key[KEY_MAX];
	bool dwfl;
	int r;

	m->tab_state = TAB_FP;
	if (jit_map(m))
		return TAB_FP;
	m->tab_state = TAB_STOP;
	if (m->missing)
		return TAB_STOP;
	map_key(m, key);
	/*
	 * A table is built only from a file find_elf() checked and took (the
	 * checks libdwfl's sessions get), the one the map names by build id
	 * or device and inode; one kept by build id is that file's already.
	 */
	r = unwtab_cache_get(u->tabs, key, m->build_id, m->build_id_len, table_open, &o, &t, &dwfl);
	if (o.looked && !o.e) {
		m->missing = true;
		u->st.elf_missing++;
		/* memfd code that is no ELF file is a JIT's (double-mapped code) */
		if (!strncmp(m->name, "/memfd:", 7))
			m->tab_state = TAB_FP;
		return m->tab_state;
	}
	/* No memory, or no table built for now (the budget): libdwfl this time. */
	if (r == -ENOMEM || r == -EAGAIN) {
		m->tab_state = TAB_UNKNOWN;
		return TAB_DWFL;
	}
	if (r > 0 && unwtab_bias(t, m->start, m->pgoff, &m->tab_bias) == 0) {
		m->tab = t;
		m->tab_gen = unwtab_cache_generation(u->tabs);
		m->tab_state = TAB_TABLE;
	} else if (r > 0 || dwfl) {
		m->tab_state = TAB_DWFL;
	} else if (r == 0) {
		m->tab_state = TAB_FP;  /* a file without CFI */
	}
	return m->tab_state;
}

struct tab_walk {
	struct perfrec_unwinder *u;
	const struct space *s;
};

/* Forget every row the memo holds: the table cache evicted tables, or is another. */
static void memo_clear(struct perfrec_unwinder *u)
{
	memset(u->memo, 0, sizeof(u->memo));
	u->memo_gen = unwtab_cache_generation(u->tabs);
}

static struct memo *memo_slot(struct perfrec_unwinder *u, uint64_t pc, uint64_t epoch)
{
	uint64_t h = (pc ^ (epoch * 0x9e3779b97f4a7c15ull)) * 0xff51afd7ed558ccdull;

	return &u->memo[h >> (64 - MEMO_BITS)];
}

/* What table_find() answers, from the maps and the tables. */
static int table_find_maps(struct tab_walk *w, uint64_t pc, const struct unwtab_row **ret_row, bool *ret_stable);

/*
 * unwtab_find_fn over a process's maps: a file's table's row, none for JIT
 * code, or a sentinel's; from the memo when this space's maps were asked
 * for @pc before, else from the maps, and kept when the answer holds
 * until the maps change or the cache evicts (not a table deferred for now).
 */
static int table_find(void *ctx, uint64_t pc, const struct unwtab_row **ret_row)
{
	struct tab_walk *w = ctx;
	struct perfrec_unwinder *u = w->u;
	struct memo *e;
	bool stable;
	int r;

	/* With the tables off a map's answer changes as libdwfl finds its file or not. */
	if (u->tables_off)
		return table_find_maps(w, pc, ret_row, &stable);
	e = memo_slot(u, pc, w->s->epoch);
	if (e->pc == pc && e->epoch == w->s->epoch) {
		*ret_row = e->row;
		return e->found;
	}
	*ret_row = NULL;
	r = table_find_maps(w, pc, ret_row, &stable);
	/* Tables resolved for this look-up may have evicted others: rows held are gone. */
	if (unwtab_cache_generation(u->tabs) != u->memo_gen)
		memo_clear(u);
	if (stable)
		*e = (struct memo){ .pc = pc, .epoch = w->s->epoch, .row = *ret_row, .found = r };
	return r;
}

static int table_find_maps(struct tab_walk *w, uint64_t pc, const struct unwtab_row **ret_row, bool *ret_stable)
{
	struct map *m = find_map(w->s, pc);
	enum tab_state state;

	*ret_stable = true;
	if (!m || !m->exec)
		return -1;
	/*
	 * Tables off: frame pointers through JIT code (and memfd code that is
	 * no ELF file) between libdwfl's steps, libdwfl for the rest.
	 */
	if (w->u->tables_off)
		state = jit_map(m) || (m->missing && !strncmp(m->name, "/memfd:", 7)) ? TAB_FP :
			m->missing ? TAB_STOP : TAB_DWFL;
	else
		state = (enum tab_state)m->tab_state;
	/* A table evicted since is asked for again (loaded or built). */
	if (!w->u->tables_off &&
	    (state == TAB_UNKNOWN || (state == TAB_TABLE && m->tab_gen != unwtab_cache_generation(w->u->tabs)))) {
		state = resolve_table(w->u, w->s, m);
		/* Not had for now (no memory, over the build budget): asked again next time. */
		*ret_stable = m->tab_state != TAB_UNKNOWN;
	}
	switch (state) {
	case TAB_TABLE:
		return unwtab_find_row(m->tab, m->tab_bias, pc, ret_row);
	case TAB_DWFL:
		*ret_row = &dwfl_row;
		return 1;
	case TAB_STOP:
		*ret_row = &stop_row;
		return 1;
	default:
		return 0;
	}
}

/* Whether libdwfl, starting at @ip as a frame's pc, takes the row the tables stopped at (hand_over()). */
static bool dwfl_looks_up_alike(struct tab_walk *w, uint64_t ip)
{
	const struct unwtab_row *row, *before;

	return table_find(w, ip, &row) == 1 && table_find(w, ip - 1, &before) == 1 && row == before;
}

/*
 * A fallback row in the walk of @res: the frames before its frame into
 * u->frames, and u->cur set for libdwfl to go on from that frame with the
 * registers the tables know (unwind()).  From the start (the sample's
 * registers) when the row is the first frame's, or when libdwfl would
 * look the frame up elsewhere than the tables do: it takes its first pc
 * for an interrupted one, where a return address is looked up at the
 * call before it, so the two must fall in the same row.
 */
static void hand_over(struct perfrec_unwinder *u, struct tab_walk *w, const struct unwtab_result *res)
{
	unsigned k = res->nr_frames;

	if (k < 2 || !dwfl_looks_up_alike(w, res->at.ip))
		return;
	for (unsigned i = 0; i + 1 < k; i++) {
		u->frames[i] = i ? u->tframes[i].pc - 1 : u->tframes[i].pc;
		u->tst.fp_frames += u->tframes[i].how == UNWTAB_FROM_FP;
		u->tst.table_frames += u->tframes[i].how == UNWTAB_FROM_TABLE;
	}
	u->dwfl_from = res->at;
	u->dwfl_base = k - 1;
	u->cur.from = &u->dwfl_from;
	u->cur.frames = u->frames + u->dwfl_base;
	u->cur.max_frames = u->max_frames - u->dwfl_base;
}

/*
 * Unwind the sample in u->cur with the tables into u->frames: how many,
 * or 0 when libdwfl has to unwind it, from the start or from where a
 * fallback row stopped the tables (hand_over()).
 */
static unsigned unwind_tables(struct perfrec_unwinder *u, const struct space *sp)
{
	struct tab_walk w = { .u = u, .s = sp };
	struct unwtab_regs regs = {
		.ip = reg(&u->cur, P_IP), .sp = u->cur.sp, .bp = reg(&u->cur, P_BP),
		.bp_valid = !!(u->cur.mask & (1ULL << P_BP)),
	};
	struct unwtab_result res;

	/*
	 * The walk reads the stack copy a frame at a time, each read waiting
	 * for the row found with the last: the copy, written by the kernel and
	 * queued by another thread, is rarely in this CPU's cache.  Its first
	 * pages are asked for at once.
	 */
	for (size_t off = 0; off < u->cur.stack_len && off < PREFETCH_STACK; off += 64)
		__builtin_prefetch(u->cur.stack + off);
	if (unwtab_unwind(&regs, u->cur.stack, u->cur.stack_len, table_find, &w, u->tframes, u->max_frames,
			  &res) < 0)
		return 0;
	note_reads(&u->cur, &res);
	u->cur.whole = res.end == UNWTAB_END_OUTERMOST;
	if (res.end == UNWTAB_END_NEED_DWFL) {
		hand_over(u, &w, &res);
		return 0;
	}
	for (unsigned i = 0; i < res.nr_frames; i++) {
		/* The call, not the instruction after it, as frame_cb() gives callers. */
		u->frames[i] = i ? u->tframes[i].pc - 1 : u->tframes[i].pc;
		u->tst.fp_frames += u->tframes[i].how == UNWTAB_FROM_FP;
		u->tst.table_frames += u->tframes[i].how == UNWTAB_FROM_TABLE;
	}
	u->tst.by_tables++;
	return res.nr_frames;
}

int perfrec_unwinder__set_tables(struct perfrec_unwinder *u, const struct perfrec_unwinder_tables_opts *opts)
{
	struct unwtab_cache_opts co = { 0 };
	struct unwtab_cache *c;
	int r;

	if (!u || !opts)
		return -EINVAL;
	co.dir = opts->dir;
	co.max_bytes = opts->max_bytes;
	co.max_disk_bytes = opts->max_disk_bytes;
	co.build_ns_per_sec = opts->build_ns_per_sec;
	r = unwtab_cache_new(&co, &c);
	if (r < 0)
		return r;
	/* Maps may hold the old cache's tables: none has been looked up yet, or they all go. */
	for (size_t b = 0; b < NR_BUCKETS; b++)
		for (struct space *s = u->buckets[b]; s; s = s->next)
			for (size_t i = 0; i < s->nr; i++)
				s->maps[i].tab_state = TAB_UNKNOWN;
	unwtab_cache_free(u->tabs);
	u->tabs = c;
	u->tables_off = opts->off;
	memo_clear(u);
	return 0;
}

void perfrec_unwinder__on_reach(struct perfrec_unwinder *u, perfrec_unwinder_reach_fn fn, void *ctx)
{
	u->reach = fn;
	u->reach_ctx = ctx;
}

void perfrec_unwinder__table_stats(const struct perfrec_unwinder *u, struct perfrec_unwinder_table_stats *ret)
{
	*ret = u->tst;
	unwtab_cache_stats(u->tabs, &ret->cache);
}

/* --- samples ------------------------------------------------------------- */

void perfrec_unwinder__rewrite_attr(const struct perf_event_attr *in, struct perf_event_attr *out)
{
	*out = *in;
	if (!(in->sample_type & PERF_SAMPLE_STACK_USER))
		return;
	out->sample_type &= ~(uint64_t)(PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER);
	out->sample_type |= PERF_SAMPLE_CALLCHAIN;
	out->sample_regs_user = 0;
	out->sample_stack_user = 0;
	out->exclude_callchain_user = 0;
}

/* The chain where libdwfl found nothing: up to the frame it was to start from. */
static unsigned no_dwfl(struct perfrec_unwinder *u)
{
	if (u->cur.from) {
		u->cur.frames[0] = u->cur.from->ip - 1;
		return u->dwfl_base + 1;
	}
	u->frames[0] = reg(&u->cur, P_IP);
	return 1;
}

/*
 * Frames past libdwfl's last, from its registers there, when its pc is in
 * code without CFI (JIT code: libdwfl's chain ends at the first such
 * frame): the tables' walker follows the frame pointers while the chain
 * is consistent (unwtab-walk.c), counted as theirs.  True when it ended
 * at a file libdwfl is to go on from; *@n is the chain's length.
 */
static bool fp_past_dwfl(struct perfrec_unwinder *u, struct tab_walk *w, unsigned *n, struct unwtab_regs *ret_at)
{
	const struct current *c = &u->cur;
	uint64_t lookup = c->last_caller ? c->last.ip - 1 : c->last.ip;
	const struct unwtab_row *row;
	struct unwtab_result res;

	if (!c->last_ok || *n >= u->max_frames || table_find(w, lookup, &row) != 0)
		return false;
	if (unwtab_unwind_from(&c->last, c->sp, c->last_caller, c->stack, c->stack_len, table_find, w, u->tframes,
			       u->max_frames - *n + 1, &res) < 0)
		return false;
	note_reads(&u->cur, &res);
	if (res.nr_frames < 2)
		return false;
	/* Its first frame is libdwfl's last. */
	for (unsigned i = 1; i < res.nr_frames; i++) {
		u->frames[*n - 1 + i] = u->tframes[i].pc - 1;
		u->tst.fp_frames += u->tframes[i].how == UNWTAB_FROM_FP;
		u->tst.table_frames += u->tframes[i].how == UNWTAB_FROM_TABLE;
	}
	*n += res.nr_frames - 1;
	*ret_at = res.at;
	return res.end == UNWTAB_END_NEED_DWFL && dwfl_looks_up_alike(w, res.at.ip);
}

/*
 * libdwfl's unwinding of the sample in u->cur (from the start or where the
 * tables handed over), then in turns: frame pointers through code without
 * CFI where libdwfl stops, libdwfl again from the frame where they land in
 * a file (its first frame is then that one, again).  Each turn adds frames:
 * bounded by max_frames.
 */
static unsigned dwfl_rounds(struct perfrec_unwinder *u, struct space *sp, pid_t tid)
{
	struct tab_walk w = { .u = u, .s = sp };
	unsigned n;

	for (;;) {
		u->cur.nr_frames = 0;
		u->cur.last_ok = false;
		dwfl_getthread_frames(sp->dwfl, tid, frame_cb, u);
		if (!u->cur.nr_frames)
			return no_dwfl(u);
		n = u->dwfl_base + u->cur.nr_frames;
		if (!fp_past_dwfl(u, &w, &n, &u->dwfl_from))
			return n;
		u->dwfl_base = n - 1;
		u->cur.from = &u->dwfl_from;
		u->cur.frames = u->frames + u->dwfl_base;
		u->cur.max_frames = u->max_frames - u->dwfl_base;
	}
}

/* Unwind the sample into u->frames; returns how many. */
static unsigned unwind(struct perfrec_unwinder *u, const struct perfrec_sample *s)
{
	struct space *sp = find_space(u, s->pid, false);

	u->cur = (struct current){
		.regs = s->regs, .mask = s->regs_mask, .stack = s->stack,
		.stack_len = s->stack_dyn_size, .frames = u->frames, .max_frames = u->max_frames,
		.space = sp,
	};
	u->cur.sp = reg(&u->cur, P_SP);
	if (!sp || !sp->nr) {
		u->st.no_space++;
		u->frames[0] = reg(&u->cur, P_IP);
		return 1;
	}
	sp->last_use = ++u->clock;
	u->dwfl_base = 0;
	if (!u->tables_off) {
		unsigned n = unwind_tables(u, sp);

		if (n)
			return n;
		u->tst.by_dwfl++;
	}
	/*
	 * Without a session, one is built when the maps have changed since the
	 * last try (a new space's code comes as grown): maps no session could
	 * be built from are not tried again on every sample.
	 */
	if (sp->stale || (!sp->dwfl && sp->grown)) {
		if (!build_dwfl(u, sp))
			return no_dwfl(u);
	} else if (!sp->dwfl) {
		return no_dwfl(u);
	} else if (sp->grown) {
		grow_dwfl(u, sp);
	}
	return dwfl_rounds(u, sp, (pid_t)s->tid);
}

/*
 * Where a DWARF sample's parts lie: everything up to the chain is kept as
 * it is; the chain; RAW as it is; then REGS_USER and STACK_USER, dropped;
 * what follows (weight ... cgroup) as it is.
 */
struct layout {
	struct perfrec_sample s;
	const unsigned char *base, *chain_end, *regs_start, *stack_end;
	size_t prefix;
};

/* 1 and @l filled for a DWARF sample of @attr, 0 for anything else, -EINVAL if it does not parse. */
static int sample_layout(const struct perf_event_header *rec, const struct perf_event_attr *attr, struct layout *l)
{
	if (rec->type != PERF_RECORD_SAMPLE || !attr || !(attr->sample_type & PERF_SAMPLE_STACK_USER) ||
	    !(attr->sample_type & PERF_SAMPLE_REGS_USER))
		return 0;
	/* No CALLCHAIN in the attr: perfrecd always asks for it with stacks. */
	if (!(attr->sample_type & PERF_SAMPLE_CALLCHAIN) || perfrec_sample__parse_attr(rec, attr, &l->s) < 0 ||
	    !l->s.callchain)
		return -EINVAL;
	l->base = (const unsigned char *)rec;
	l->prefix = (size_t)((const unsigned char *)l->s.callchain - l->base) - sizeof(uint64_t);
	l->chain_end = (const unsigned char *)(l->s.callchain + l->s.nr_callchain);
	l->regs_start = l->s.raw ? (const unsigned char *)l->s.raw + l->s.raw_size : l->chain_end;
	l->stack_end = l->regs_start + 8 + (l->s.regs_abi ? (size_t)l->s.nr_regs * 8 : 0) + 8 +
		       (size_t)l->s.stack_size + (l->s.stack_size ? 8 : 0);
	if (l->stack_end > l->base + rec->size)
		return -EINVAL;
	return 1;
}

/* Write the sample of @l with @nr user frames (none: no PERF_CONTEXT_USER either). */
static int write_sample(const struct layout *l, const uint64_t *frames, unsigned nr, void *out, size_t outsz)
{
	const struct perf_event_header *rec = (const void *)l->base;
	uint64_t ctx = PERF_CONTEXT_USER, kern = l->s.nr_callchain, n = kern + (nr ? 1 + nr : 0);
	size_t len = l->prefix + 8 + (size_t)n * 8 + (size_t)(l->regs_start - l->chain_end) +
		     (size_t)(l->base + rec->size - l->stack_end);
	struct perf_event_header nh = *rec;
	unsigned char *o = out;

	if (len > outsz || len > PERFREC_RECORD_MAX)
		return -ENOBUFS;
	memcpy(o, l->base, l->prefix);
	memcpy(o + l->prefix, &n, 8);
	memcpy(o + l->prefix + 8, l->s.callchain, (size_t)kern * 8);
	o += l->prefix + 8 + (size_t)kern * 8;
	if (nr) {
		memcpy(o, &ctx, 8);
		memcpy(o + 8, frames, (size_t)nr * 8);
		o += 8 + (size_t)nr * 8;
	}
	memcpy(o, l->chain_end, (size_t)(l->regs_start - l->chain_end));
	o += l->regs_start - l->chain_end;
	memcpy(o, l->stack_end, (size_t)(l->base + rec->size - l->stack_end));
	nh.size = (uint16_t)len;
	memcpy(out, &nh, sizeof(nh));
	return (int)len;
}

int perfrec_unwinder__rewrite(struct perfrec_unwinder *u, const struct perf_event_header *rec,
			      const struct perf_event_attr *attr, void *out, size_t outsz)
{
	struct layout l;
	unsigned nr = 0;
	int r;

	if (!u || !rec)
		return -EINVAL;
	if (rec->type != PERF_RECORD_SAMPLE)
		return note_sideband(u, rec);
	r = sample_layout(rec, attr, &l);
	if (r <= 0)
		return r;
	u->st.samples++;
	if (l.s.regs_abi && l.s.regs && l.s.stack_size) {
		nr = unwind(u, &l.s);
		u->st.frames += nr;
		if (nr > 1)
			u->st.unwound++;
		if (u->reach && (u->cur.whole || u->cur.missed)) {
			struct perfrec_unwinder_reach rr = {
				.pid = l.s.pid, .tid = l.s.tid, .sp = u->cur.sp,
				.room = l.s.stack_size, .len = l.s.stack_dyn_size,
				.top = u->cur.whole ? u->cur.high : 0, .missed = u->cur.missed,
			};

			u->reach(u->reach_ctx, &rr);
		}
	} else if (l.s.regs_abi && l.s.regs) {
		/* Registers but no room for a stack: the sampled ip alone. */
		u->cur = (struct current){ .regs = l.s.regs, .mask = l.s.regs_mask };
		u->frames[0] = reg(&u->cur, P_IP);
		nr = 1;
		u->st.frames++;
	} else {
		u->st.no_user++;
	}
	return write_sample(&l, u->frames, nr, out, outsz);
}

int perfrec_unwinder__strip(const struct perf_event_header *rec, const struct perf_event_attr *attr,
			    void *out, size_t outsz)
{
	struct current c = {0};
	struct layout l;
	uint64_t ip;
	int r;

	if (!rec)
		return -EINVAL;
	r = sample_layout(rec, attr, &l);
	if (r <= 0)
		return r;
	if (!l.s.regs_abi || !l.s.regs)
		return write_sample(&l, NULL, 0, out, outsz);
	c.regs = l.s.regs;
	c.mask = l.s.regs_mask;
	ip = reg(&c, P_IP);
	return write_sample(&l, &ip, 1, out, outsz);
}

/* --- the queue ------------------------------------------------------------ */

static int grow(unsigned char **buf, size_t *cap, size_t need)
{
	size_t c = *cap ? *cap : 1 << 16;
	unsigned char *b;

	if (need <= *cap)
		return 0;
	while (c < need)
		c *= 2;
	b = realloc(*buf, c);
	if (!b)
		return -ENOMEM;
	*buf = b;
	*cap = c;
	return 0;
}

static uint64_t record_time(const struct perf_event_header *rec, const struct perf_event_attr *a, bool *ret_known)
{
	struct perfrec_sample_id sid;

	*ret_known = false;
	if (!a || !(a->sample_type & PERF_SAMPLE_TIME))
		return 0;
	/*
	 * A sample's time comes after fields of fixed sizes (identifier, ip,
	 * pid and tid): read where it is, not by parsing the whole sample,
	 * which perfrec_unwinder__rewrite() does once more.
	 */
	if (rec->type == PERF_RECORD_SAMPLE) {
		uint64_t st = a->sample_type, t;
		size_t off = sizeof(*rec) + 8 * (size_t)(!!(st & PERF_SAMPLE_IDENTIFIER) + !!(st & PERF_SAMPLE_IP) +
							 !!(st & PERF_SAMPLE_TID));

		if (rec->size < off + 8)
			return 0;
		memcpy(&t, (const unsigned char *)rec + off, 8);
		*ret_known = true;
		return t;
	}
	if (rec->type >= PERF_RECORD_MAX || !a->sample_id_all || perfrec_sample_id__parse(rec, a->sample_type, &sid) < 0)
		return 0;
	*ret_known = true;
	return sid.time;
}

static int push(struct perfrec_unwinder *u, const struct perf_event_header *rec,
		const struct perf_event_attr *attr, bool copy)
{
	bool known;
	uint64_t t;

	if (!u || !rec || rec->size < sizeof(*rec))
		return -EINVAL;
	if (copy && grow(&u->qbuf, &u->qcap, u->qlen + rec->size) < 0)
		return -ENOMEM;
	if (u->nq == u->qslots) {
		size_t n = u->qslots ? u->qslots * 2 : 1024;
		struct queued *q = realloc(u->q, n * sizeof(*q));

		if (!q)
			return -ENOMEM;
		u->q = q;
		u->qslots = n;
	}
	t = record_time(rec, attr, &known);
	if (!known)
		t = u->last_time;
	u->last_time = t;
	if (!copy) {
		u->q[u->nq++] = (struct queued){ .borrowed = rec, .time = t, .attr = attr };
		return 0;
	}
	memcpy(u->qbuf + u->qlen, rec, rec->size);
	u->q[u->nq++] = (struct queued){ .off = u->qlen, .time = t, .attr = attr };
	u->qlen += rec->size;
	return 0;
}

int perfrec_unwinder__push(struct perfrec_unwinder *u, const struct perf_event_header *rec,
			   const struct perf_event_attr *attr)
{
	return push(u, rec, attr, true);
}

int perfrec_unwinder__push_borrowed(struct perfrec_unwinder *u, const struct perf_event_header *rec,
				    const struct perf_event_attr *attr)
{
	return push(u, rec, attr, false);
}

static const struct perf_event_header *queued_record(const struct perfrec_unwinder *u, const struct queued *q)
{
	return q->borrowed ? q->borrowed : (const void *)(u->qbuf + q->off);
}

/* Whether queued record @i goes before @j: by time, then in push order. */
static bool before(const struct queued *q, size_t i, size_t j)
{
	return q[i].time < q[j].time || (q[i].time == q[j].time && i < j);
}

/* The end of the run of @src (in order) from @i. */
static size_t run_end(const struct queued *q, const size_t *src, size_t i, size_t n)
{
	for (i++; i < n && !before(q, src[i], src[i - 1]); i++)
		;
	return i;
}

/*
 * The indexes of the @n queued records in time order, in @a or @b (each
 * of @n entries): which one is returned.  A round is already a few runs
 * in order (one CPU's ring after another, each in time order): they are
 * found and merged two by two, O(n log runs), where qsort() took
 * O(n log n) and a malloc() per flush.
 */
static size_t *sort_queue(const struct queued *q, size_t n, size_t *a, size_t *b)
{
	for (size_t i = 0; i < n; i++)
		a[i] = i;
	for (;;) {
		size_t i = 0;

		if (run_end(q, a, 0, n) >= n)
			return a;
		while (i < n) {
			size_t lo = i, mid = run_end(q, a, i, n), hi = mid < n ? run_end(q, a, mid, n) : n;
			size_t x = lo, y = mid, k = lo;

			while (x < mid && y < hi)
				b[k++] = before(q, a[y], a[x]) ? a[y++] : a[x++];
			while (x < mid)
				b[k++] = a[x++];
			while (y < hi)
				b[k++] = a[y++];
			i = hi;
		}
		{
			size_t *t = a;

			a = b;
			b = t;
		}
	}
}

int perfrec_unwinder__flush(struct perfrec_unwinder *u, perfrec_unwinder_emit_fn emit, void *ctx)
{
	static _Thread_local _Alignas(8) unsigned char one[PERFREC_RECORD_MAX + 1];
	size_t *buf, *order;
	int r = 0;

	if (!u || !emit)
		return -EINVAL;
	if (!u->nq)
		return 0;
	buf = malloc(2 * u->nq * sizeof(*buf));
	if (!buf) {
		r = -ENOMEM;
		goto out;
	}
	order = sort_queue(u->q, u->nq, buf, buf + u->nq);
	u->olen = 0;
	for (size_t k = 0; k < u->nq; k++) {
		struct queued *q = &u->q[order[k]];
		const struct perf_event_header *rec = queued_record(u, q);
		int n = perfrec_unwinder__rewrite(u, rec, q->attr, one, sizeof(one));

		q->out = 0;
		if (n < 0) {
			/*
			 * A sample that cannot be rewritten cannot go out either:
			 * its layout is not the rewritten attr's.  Counted.
			 */
			if (rec->type == PERF_RECORD_SAMPLE) {
				q->out = -1;
				u->st.dropped++;
			}
			if (!r)
				r = n;
			continue;
		}
		if (n > 0) {
			if (grow(&u->obuf, &u->ocap, u->olen + (size_t)n) < 0) {
				if (!r)
					r = -ENOMEM;
				q->out = -1;
				u->st.dropped++;
				continue;
			}
			memcpy(u->obuf + u->olen, one, (size_t)n);
			q->out = n;
			q->out_off = u->olen;
			u->olen += (size_t)n;
		}
	}
	free(buf);
	for (size_t i = 0; i < u->nq; i++) {
		const struct queued *q = &u->q[i];
		int e;

		if (q->out < 0)
			continue;
		e = emit(ctx, q->out > 0 ? (const void *)(u->obuf + q->out_off) : queued_record(u, q));

		if (e < 0) {
			r = e;
			break;
		}
	}
out:
	u->nq = 0;
	u->qlen = 0;
	return r;
}

/* --- object -------------------------------------------------------------- */

int perfrec_unwinder__new(const struct perfrec_unwinder_opts *opts, struct perfrec_unwinder **ret)
{
	struct perfrec_unwinder *u;
	const char *proc;

	if (!ret || !PERFREC_OPTS_VALID(opts, struct perfrec_unwinder_opts))
		return -EINVAL;
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	proc = PERFREC_OPTS_GET(opts, proc, (const char *)NULL);
	if (!proc)
		proc = "/proc";
	u->use_proc = proc[0] != 0;
	if (strlen(proc) >= sizeof(u->proc)) {
		free(u);
		return -EINVAL;
	}
	strcpy(u->proc, proc);
	u->max_elves = PERFREC_OPTS_GET(opts, max_elves, (size_t)0);
	u->max_elf_bytes = PERFREC_OPTS_GET(opts, max_elf_bytes, (uint64_t)0);
	u->max_spaces = PERFREC_OPTS_GET(opts, max_spaces, (size_t)0);
	u->max_frames = PERFREC_OPTS_GET(opts, max_frames, 0u);
	if (!u->max_elves)
		u->max_elves = DEFAULT_MAX_ELVES;
	if (!u->max_elf_bytes)
		u->max_elf_bytes = DEFAULT_MAX_ELF_BYTES;
	if (!u->max_spaces)
		u->max_spaces = DEFAULT_MAX_SPACES;
	u->max_elf_fds = PERFREC_OPTS_GET(opts, max_elf_fds, (size_t)0);
	if (!u->max_elf_fds)
		u->max_elf_fds = DEFAULT_MAX_ELF_FDS;
	if (!u->max_frames)
		u->max_frames = DEFAULT_MAX_FRAMES;
	if (u->max_frames > sizeof(u->frames) / sizeof(u->frames[0]))
		u->max_frames = sizeof(u->frames) / sizeof(u->frames[0]);
	if (unwtab_cache_new(NULL, &u->tabs) < 0) {
		free(u);
		return -ENOMEM;
	}
	elf_version(EV_CURRENT);
	{
		Elf64_Ehdr h = {
			.e_ident = { ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64, ELFDATA2LSB, EV_CURRENT },
			.e_type = ET_DYN, .e_machine = EM_X86_64, .e_version = EV_CURRENT,
			.e_ehsize = sizeof(Elf64_Ehdr),
		};

		memcpy(u->host_ehdr, &h, sizeof(h));
		u->host_elf = elf_memory((char *)u->host_ehdr, sizeof(u->host_ehdr));
		if (!u->host_elf) {
			unwtab_cache_free(u->tabs);
			free(u);
			return -ENOMEM;
		}
	}
	*ret = u;
	return 0;
}

void perfrec_unwinder__free(struct perfrec_unwinder *u)
{
	if (!u)
		return;
	for (size_t b = 0; b < NR_BUCKETS; b++)
		while (u->buckets[b]) {
			struct space *s = u->buckets[b];

			u->buckets[b] = s->next;
			free_space(u, s);
		}
	while (u->elves) {
		struct elf_entry *e = u->elves;

		u->elves = e->next;
		elf_entry_free(u, e);
	}
	elf_end(u->host_elf);
	unwtab_cache_free(u->tabs);
	free(u->qbuf);
	free(u->obuf);
	free(u->q);
	free(u);
}

/* Called after every round: counters only, no walk over the spaces. */
void perfrec_unwinder__stats(const struct perfrec_unwinder *u, struct perfrec_unwinder_stats *ret)
{
	*ret = u ? u->st : (struct perfrec_unwinder_stats){0};
}
