// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Symbolization of a perf.data file's addresses (see symbolize.h).
 *
 * State: a table of binaries (one per build id, or per path for maps that
 * carry none), each looked up at most once; per process a list of maps
 * pointing into it; the kernel's maps, kallsyms and BPF programs.  Binaries
 * are opened into their own Dwfl, reported at bias 0 so that a file offset
 * turns into a dwfl address through the ELF's PT_LOAD headers, whatever the
 * process's load address was.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <linux/perf_event.h>

#include <perfrec/buildid.h>

#include "buildid-internal.h"
#include "fsutil.h"
#include "symbolize.h"
#include "vdso.h"

#define UNKNOWN "[unknown]"
#define KERNEL_DSO "[kernel.kallsyms]"
#define VDSO_DSO VDSO_MAP_NAME
#define MAX_LOADS 16

struct load {
	uint64_t offset, filesz, vaddr;
};

struct dso {
	char *path;                  /* as the file names it */
	uint8_t bid[PERFREC_BUILD_ID_MAX];
	uint8_t bid_len;
	bool looked_up, found;
	Dwfl *dwfl;
	Dwfl_Module *mod;
	GElf_Addr bias;
	struct load loads[MAX_LOADS];
	unsigned nr_loads;
	/* functions by address (build_syms()); names borrowed from dwfl */
	struct fsym *syms;
	size_t nr_syms;
	/* compile units whose top-level address ranges are indexed (cu_index()) */
	struct cu_index *cus;
	size_t nr_cus, cap_cus;
};

/* An address range of one of a compile unit's top-level DIEs (a function). */
struct cu_range {
	Dwarf_Addr lo, hi;
	Dwarf_Die die;
};

struct cu_index {
	Dwarf_Off off;               /* the CU DIE's */
	struct cu_range *r;          /* sorted by lo, none overlapping */
	size_t nr;
	bool unusable;               /* imported units or overlaps: ask dwarf_getscopes() */
};

struct fsym {
	uint64_t addr, size;
	const char *name;
	uint8_t bind;           /* GLOBAL 2, WEAK 1, LOCAL 0 */
	int idx;                /* in the symbol table: ties keep its order */
};

struct map {
	uint64_t start, end, pgoff;
	struct dso *dso;
};

struct proc {
	uint32_t pid;
	bool used;
	bool sorted;
	struct map *maps;
	size_t nr, cap;
};

struct ksym {
	uint64_t addr, len;          /* len 0: up to the next symbol */
	const char *name;
	const char *module;          /* KERNEL_DSO or "[mod]" */
};

struct path_bid {
	char *path;
	uint8_t bid[PERFREC_BUILD_ID_MAX];
	uint8_t len;
};

#define ACACHE_FRAMES 16

struct aframe {
	const char *name, *file;
	unsigned line;
	bool inlined;
};

struct acache_ent {
	const struct dso *d;         /* NULL: empty slot */
	uint64_t a;
	size_t first;                /* in aframes */
	uint8_t n;                   /* 0: nothing there */
};

typedef void *(*dbgd_begin_fn)(void);
typedef int (*dbgd_find_fn)(void *, const unsigned char *, int, char **);
typedef void (*dbgd_end_fn)(void *);

struct symbolizer {
	struct symbolizer_opts o;
	char *home_debug;

	struct dso **dsos;
	size_t nr_dsos, cap_dsos;
	unsigned lookups, found;

	struct proc *procs;          /* open addressing by pid */
	size_t procs_cap, procs_used;

	struct path_bid *pbids;      /* HEADER_BUILD_ID */
	size_t nr_pbids, cap_pbids;

	/* the running vdso, for a file of the running kernel (running_vdso_dso()) */
	int vdso_state;              /* 0: not asked for this file, 1: yes, -1: no */
	struct dso *vdso;

	/* kernel */
	bool kernel_checked, kallsyms_ok;
	uint64_t file_kernel_text;   /* the file's kernel map pgoff (_text), 0: none */
	uint8_t kernel_bid[PERFREC_BUILD_ID_MAX]; /* from the kernel map's MMAP2 */
	uint8_t kernel_bid_len;
	struct ksym *kmods;          /* the file's module maps: name the module when kallsyms cannot */
	size_t nr_kmods, cap_kmods;
	struct ksym *ksyms;
	size_t nr_ksyms;
	char *kstrings;
	struct ksym *bpf;
	size_t nr_bpf, cap_bpf;
	bool bpf_sorted;

	/* resolved user addresses (addr_cached()) */
	struct acache_ent *acache;
	size_t acache_cap, acache_used;
	struct aframe *aframes;
	size_t nr_aframes, aframes_cap;

	/* strings made here (BPF names, interned module names) */
	char **strs;
	size_t nr_strs, cap_strs;

	void *dbgd_lib, *dbgd;
	bool dbgd_tried;
	dbgd_begin_fn dbgd_begin;
	dbgd_find_fn dbgd_find;
	dbgd_end_fn dbgd_end;
};

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	size_t n = *cap ? *cap : 16;
	void *q;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	q = reallocarray(*p, n, elem);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = n;
	return 0;
}

static const char *keep_str(struct symbolizer *s, const char *str)
{
	char *d;

	if (grow((void **)&s->strs, &s->cap_strs, s->nr_strs + 1, sizeof(*s->strs)) < 0)
		return NULL;
	d = strdup(str);
	if (d)
		s->strs[s->nr_strs++] = d;
	return d;
}

int symbolizer__new(const struct symbolizer_opts *opts, struct symbolizer **ret)
{
	struct symbolizer *s = calloc(1, sizeof(*s));
	const char *home;

	if (!s)
		return -ENOMEM;
	if (opts)
		memcpy(&s->o, opts, opts->sz < sizeof(s->o) ? opts->sz : sizeof(s->o));
	s->o.sz = sizeof(s->o);
	if (s->o.home_debug) {
		s->home_debug = strdup(s->o.home_debug);
	} else if ((home = getenv("HOME")) && *home) {
		if (asprintf(&s->home_debug, "%s/.debug", home) < 0)
			s->home_debug = NULL;
	}
	*ret = s;
	return 0;
}

static void dso_free(struct dso *d)
{
	if (!d)
		return;
	if (d->dwfl)
		dwfl_end(d->dwfl);
	free(d->syms);
	for (size_t i = 0; i < d->nr_cus; i++)
		free(d->cus[i].r);
	free(d->cus);
	free(d->path);
	free(d);
}

static void procs_clear(struct symbolizer *s)
{
	for (size_t i = 0; i < s->procs_cap; i++)
		free(s->procs[i].maps);
	free(s->procs);
	s->procs = NULL;
	s->procs_cap = s->procs_used = 0;
}

void symbolizer__free(struct symbolizer *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nr_dsos; i++)
		dso_free(s->dsos[i]);
	free(s->dsos);
	procs_clear(s);
	for (size_t i = 0; i < s->nr_pbids; i++)
		free(s->pbids[i].path);
	free(s->pbids);
	free(s->ksyms);
	free(s->kstrings);
	free(s->bpf);
	free(s->kmods);
	free(s->acache);
	free(s->aframes);
	for (size_t i = 0; i < s->nr_strs; i++)
		free(s->strs[i]);
	free(s->strs);
	if (s->dbgd)
		s->dbgd_end(s->dbgd);
	if (s->dbgd_lib)
		dlclose(s->dbgd_lib);
	free(s->home_debug);
	free(s);
}

void symbolizer__reset_maps(struct symbolizer *s)
{
	procs_clear(s);
	s->file_kernel_text = 0;
	s->kernel_bid_len = 0;
	s->nr_kmods = 0;
	s->kernel_checked = false;
	s->vdso_state = 0;
	s->nr_bpf = 0;
	for (size_t i = 0; i < s->nr_pbids; i++)
		free(s->pbids[i].path);
	s->nr_pbids = 0;
}

void symbolizer__stats(const struct symbolizer *s, unsigned *ret_lookups, unsigned *ret_found)
{
	*ret_lookups = s->lookups;
	*ret_found = s->found;
}

/* --- processes ---------------------------------------------------------- */

static struct proc *proc_find(struct symbolizer *s, uint32_t pid, bool create)
{
	size_t mask, i;

	if (create && (s->procs_used + 1) * 2 > s->procs_cap) {
		size_t ncap = s->procs_cap ? s->procs_cap * 2 : 64;
		struct proc *n = calloc(ncap, sizeof(*n));

		if (!n)
			return NULL;
		for (size_t j = 0; j < s->procs_cap; j++) {
			struct proc *p = &s->procs[j];

			if (!p->used)
				continue;
			for (i = (p->pid * 2654435761u) & (ncap - 1); n[i].used; i = (i + 1) & (ncap - 1))
				;
			n[i] = *p;
		}
		free(s->procs);
		s->procs = n;
		s->procs_cap = ncap;
	}
	if (!s->procs_cap)
		return NULL;
	mask = s->procs_cap - 1;
	for (i = (pid * 2654435761u) & mask; s->procs[i].used; i = (i + 1) & mask)
		if (s->procs[i].pid == pid)
			return &s->procs[i];
	if (!create)
		return NULL;
	s->procs[i].used = true;
	s->procs[i].pid = pid;
	s->procs[i].sorted = true;
	s->procs_used++;
	return &s->procs[i];
}

static struct dso *dso_get(struct symbolizer *s, const char *path, const uint8_t *bid, uint8_t bid_len)
{
	struct dso *d;

	for (size_t i = 0; i < s->nr_dsos; i++) {
		d = s->dsos[i];
		if (bid_len ? (d->bid_len == bid_len && !memcmp(d->bid, bid, bid_len))
			    : (!d->bid_len && !strcmp(d->path, path)))
			return d;
	}
	if (grow((void **)&s->dsos, &s->cap_dsos, s->nr_dsos + 1, sizeof(*s->dsos)) < 0)
		return NULL;
	d = calloc(1, sizeof(*d));
	if (!d || !(d->path = strdup(path))) {
		free(d);
		return NULL;
	}
	if (bid_len > PERFREC_BUILD_ID_MAX)
		bid_len = PERFREC_BUILD_ID_MAX;
	if (bid_len)
		memcpy(d->bid, bid, bid_len);
	d->bid_len = bid_len;
	s->dsos[s->nr_dsos++] = d;
	return d;
}

/* A new map replaces whatever it overlaps, as a later mmap() does. */
static void proc_add_map(struct symbolizer *s, uint32_t pid, uint64_t start, uint64_t len, uint64_t pgoff,
			 struct dso *d)
{
	struct proc *p = proc_find(s, pid, true);
	uint64_t end = start + len;
	size_t j = 0;

	if (!p || !len || end < start)
		return;
	for (size_t i = 0; i < p->nr; i++)
		if (p->maps[i].end <= start || p->maps[i].start >= end)
			p->maps[j++] = p->maps[i];
	p->nr = j;
	if (grow((void **)&p->maps, &p->cap, p->nr + 1, sizeof(*p->maps)) < 0)
		return;
	p->maps[p->nr++] = (struct map){ .start = start, .end = end, .pgoff = pgoff, .dso = d };
	p->sorted = false;
}

static int map_cmp(const void *a, const void *b)
{
	const struct map *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static const struct map *proc_map_at(struct proc *p, uint64_t addr)
{
	size_t lo = 0, hi;

	if (!p->sorted) {
		qsort(p->maps, p->nr, sizeof(*p->maps), map_cmp);
		p->sorted = true;
	}
	hi = p->nr;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->maps[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && addr < p->maps[lo - 1].end)
		return &p->maps[lo - 1];
	return NULL;
}

/* A new process (not a thread) starts with its parent's maps. */
static void proc_fork(struct symbolizer *s, uint32_t pid, uint32_t ppid)
{
	struct proc *parent = proc_find(s, ppid, false), *child;
	struct map *copy;
	size_t nr;

	if (!parent || !parent->nr || pid == ppid)
		return;
	nr = parent->nr;
	copy = malloc(nr * sizeof(*copy));
	if (!copy)
		return;
	memcpy(copy, parent->maps, nr * sizeof(*copy));
	child = proc_find(s, pid, true);  /* may move parent's slot */
	if (!child) {
		free(copy);
		return;
	}
	free(child->maps);
	child->maps = copy;
	child->nr = child->cap = nr;
	child->sorted = false;
}

static void proc_exec(struct symbolizer *s, uint32_t pid)
{
	struct proc *p = proc_find(s, pid, false);

	if (p)
		p->nr = 0;
}

/* --- records ------------------------------------------------------------ */

static const struct path_bid *pbid_find(const struct symbolizer *s, const char *path)
{
	for (size_t i = 0; i < s->nr_pbids; i++)
		if (!strcmp(s->pbids[i].path, path))
			return &s->pbids[i];
	return NULL;
}

int symbolizer__add_build_ids(struct symbolizer *s, const void *data, size_t len)
{
	const uint8_t *p = data, *end = p + len;

	while ((size_t)(end - p) >= BUILDID_ENTRY_HEAD) {
		struct perf_event_header h;
		const char *name;
		size_t nlen;
		uint8_t blen;

		memcpy(&h, p, sizeof(h));
		if (h.size < BUILDID_ENTRY_HEAD + 1 || h.size > (size_t)(end - p))
			return -EBADMSG;
		name = (const char *)p + BUILDID_ENTRY_HEAD;
		nlen = strnlen(name, h.size - BUILDID_ENTRY_HEAD);
		if (nlen == h.size - BUILDID_ENTRY_HEAD)
			return -EBADMSG;
		blen = (h.misc & BUILDID_MISC_BUILD_ID_SIZE) ? p[12 + 20] : 20;
		if (blen > PERFREC_BUILD_ID_MAX)
			blen = PERFREC_BUILD_ID_MAX;
		if (!grow((void **)&s->pbids, &s->cap_pbids, s->nr_pbids + 1, sizeof(*s->pbids))) {
			struct path_bid *e = &s->pbids[s->nr_pbids];

			e->path = strdup(name);
			if (e->path) {
				memcpy(e->bid, p + 12, blen);
				e->len = blen;
				s->nr_pbids++;
			}
		}
		p += h.size;
	}
	return p == end ? 0 : -EBADMSG;
}

static bool is_kernel_map_name(const char *name)
{
	return !strncmp(name, KERNEL_DSO, sizeof(KERNEL_DSO) - 1);
}

/* "[xfs]" for /lib/modules/.../xfs.ko(.xz) or [xfs], as perf names modules. */
static const char *module_name(const char *path, char buf[64])
{
	const char *b = strrchr(path, '/');
	size_t n;

	if (path[0] == '[')
		return path;
	b = b ? b + 1 : path;
	n = strcspn(b, ".");
	if (n > 64 - 3)
		n = 64 - 3;
	snprintf(buf, 64, "[%.*s]", (int)n, b);
	for (char *p = buf; *p; p++)
		if (*p == '-')
			*p = '_';
	return buf;
}

static void note_map(struct symbolizer *s, uint32_t pid, uint64_t start, uint64_t len, uint64_t pgoff,
		     const char *name, const uint8_t *bid, uint8_t bid_len)
{
	const struct path_bid *pb;
	struct dso *d;

	if (pid == UINT32_MAX) {
		/* The kernel's own map and its modules': symbols come from kallsyms. */
		char mod[64];
		const char *kept;

		if (is_kernel_map_name(name)) {
			s->file_kernel_text = pgoff;
			if (bid_len) {
				memcpy(s->kernel_bid, bid, bid_len);
				s->kernel_bid_len = bid_len;
			}
		} else if (len && !grow((void **)&s->kmods, &s->cap_kmods, s->nr_kmods + 1, sizeof(*s->kmods)) &&
			   (kept = keep_str(s, module_name(name, mod)))) {
			s->kmods[s->nr_kmods++] = (struct ksym){ .addr = start, .len = len, .name = kept, .module = kept };
		}
		return;
	}
	if (!bid_len && (pb = pbid_find(s, name))) {
		bid = pb->bid;
		bid_len = pb->len;
	}
	d = dso_get(s, name, bid, bid_len);
	if (d)
		proc_add_map(s, pid, start, len, pgoff, d);
}

void symbolizer__note_record(struct symbolizer *s, const struct perf_event_header *rec)
{
	const uint8_t *p = (const uint8_t *)rec;
	size_t size = rec->size;

	switch (rec->type) {
	case PERF_RECORD_MMAP: {
		/* header, pid, tid, addr, len, pgoff, filename */
		uint32_t pid;
		uint64_t v[3];
		const char *name = (const char *)p + 40;

		if (size <= 40 || !memchr(name, 0, size - 40))
			return;
		memcpy(&pid, p + 8, 4);
		memcpy(v, p + 16, sizeof(v));
		note_map(s, pid, v[0], v[1], v[2], name, NULL, 0);
		break;
	}
	case PERF_RECORD_MMAP2: {
		/* header, pid, tid, addr, len, pgoff, {maj,min,ino,gen | bid}, prot, flags, filename */
		uint32_t pid, prot;
		uint64_t v[3];
		const char *name = (const char *)p + 72;
		const uint8_t *bid = NULL;
		uint8_t bid_len = 0;

		if (size <= 72 || !memchr(name, 0, size - 72))
			return;
		memcpy(&pid, p + 8, 4);
		memcpy(v, p + 16, sizeof(v));
		memcpy(&prot, p + 64, 4);
		if (!(prot & 4 /* PROT_EXEC */) && pid != UINT32_MAX)
			return;
		/*
		 * The build-id form, unless its size says otherwise: some
		 * kernels (6.18 here) set the misc bit on records of the
		 * maj/min/ino form, whose first byte (maj) is then the "size".
		 * Those are found by path, as perf -B files are.
		 */
		if ((rec->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) && p[40] && p[40] <= PERFREC_BUILD_ID_MAX) {
			bid_len = p[40];
			bid = p + 44;
		}
		note_map(s, pid, v[0], v[1], v[2], name, bid, bid_len);
		break;
	}
	case PERF_RECORD_FORK: {
		uint32_t v[4]; /* pid, ppid, tid, ptid */

		if (size < 8 + sizeof(v))
			return;
		memcpy(v, p + 8, sizeof(v));
		proc_fork(s, v[0], v[1]);
		break;
	}
	case PERF_RECORD_COMM: {
		uint32_t pid;

		if (size < 16 || !(rec->misc & PERF_RECORD_MISC_COMM_EXEC))
			return;
		memcpy(&pid, p + 8, 4);
		proc_exec(s, pid);
		break;
	}
	case PERF_RECORD_KSYMBOL: {
		/* header, addr, len, ksym_type u16, flags u16, name */
		uint64_t addr;
		uint32_t len;
		uint16_t type, flags;
		const char *name = (const char *)p + 24;
		const char *kept;

		if (size <= 24 || !memchr(name, 0, size - 24))
			return;
		memcpy(&addr, p + 8, 8);
		memcpy(&len, p + 16, 4);
		memcpy(&type, p + 20, 2);
		memcpy(&flags, p + 22, 2);
		if (type != PERF_RECORD_KSYMBOL_TYPE_BPF || (flags & PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER))
			return;
		if (grow((void **)&s->bpf, &s->cap_bpf, s->nr_bpf + 1, sizeof(*s->bpf)) < 0 ||
		    !(kept = keep_str(s, name)))
			return;
		s->bpf[s->nr_bpf++] = (struct ksym){ .addr = addr, .len = len, .name = kept, .module = "[bpf]" };
		s->bpf_sorted = false;
		break;
	}
	default:
		break;
	}
}

/* --- finding binaries --------------------------------------------------- */

static void bid_hex(const uint8_t *bid, uint8_t len, char *out)
{
	for (uint8_t i = 0; i < len; i++)
		sprintf(out + 2 * i, "%02x", bid[i]);
	out[2 * len] = 0;
}

/*
 * Whether @path is the binary @d names: its build id, or for a map without
 * one any readable regular file (never a FIFO or a device: see
 * open_regular()).
 */
static bool bid_matches(const char *path, const struct dso *d)
{
	uint8_t id[PERFREC_BUILD_ID_MAX];
	int n, fd;

	if (!d->bid_len) {
		fd = open_regular(AT_FDCWD, path);
		if (fd < 0)
			return false;
		close(fd);
		return true;
	}
	n = perfrec_buildid__read_elf(path, id);
	return n == d->bid_len && !memcmp(id, d->bid, n);
}

/* <dir>/.build-id/xx/yyyy<suffix>, or the new layout's <...>/elf. */
static int try_cache(const struct dso *d, const char *dir, const char *suffix, char *out, size_t sz)
{
	char hex[2 * PERFREC_BUILD_ID_MAX + 1];

	if (!dir || !d->bid_len)
		return -ENOENT;
	bid_hex(d->bid, d->bid_len, hex);
	snprintf(out, sz, "%s/.build-id/%.2s/%s%s", dir, hex, hex + 2, suffix);
	if (bid_matches(out, d))
		return 0;
	if (!*suffix) {
		snprintf(out, sz, "%s/.build-id/%.2s/%s/elf", dir, hex, hex + 2);
		if (bid_matches(out, d))
			return 0;
	}
	return -ENOENT;
}

static int try_debuginfod(struct symbolizer *s, const struct dso *d, char *out, size_t sz)
{
	char *path = NULL;
	int fd;

	if (s->o.no_debuginfod || !d->bid_len || !getenv("DEBUGINFOD_URLS") || !*getenv("DEBUGINFOD_URLS"))
		return -ENOENT;
	if (!s->dbgd_tried) {
		s->dbgd_tried = true;
		s->dbgd_lib = dlopen("libdebuginfod.so.1", RTLD_NOW | RTLD_LOCAL);
		if (s->dbgd_lib) {
			s->dbgd_begin = (dbgd_begin_fn)dlsym(s->dbgd_lib, "debuginfod_begin");
			s->dbgd_find = (dbgd_find_fn)dlsym(s->dbgd_lib, "debuginfod_find_executable");
			s->dbgd_end = (dbgd_end_fn)dlsym(s->dbgd_lib, "debuginfod_end");
			if (s->dbgd_begin && s->dbgd_find && s->dbgd_end)
				s->dbgd = s->dbgd_begin();
		}
	}
	if (!s->dbgd)
		return -ENOENT;
	fd = s->dbgd_find(s->dbgd, d->bid, d->bid_len, &path);
	if (fd < 0) {
		/*
		 * Not found (-ENOENT) is an answer; anything else (refused,
		 * unreachable, timed out) says the servers are not there: the
		 * rest of the run does not wait on them binary after binary.
		 */
		if (fd != -ENOENT) {
			s->dbgd_end(s->dbgd);
			s->dbgd = NULL;
		}
		return fd;
	}
	close(fd);
	if (!path)
		return -ENOENT;
	snprintf(out, sz, "%s", path);
	free(path);
	return bid_matches(out, d) ? 0 : -ENOENT;
}

static int find_binary(struct symbolizer *s, const struct dso *d, char *out, size_t sz)
{
	const char *debug = s->o.debug_dir ? s->o.debug_dir : "/usr/lib/debug";

	if (d->path[0] == '/') {
		snprintf(out, sz, "%s%s", s->o.symfs ? s->o.symfs : "", d->path);
		if (bid_matches(out, d))
			return 0;
	}
	if (!try_cache(d, s->o.buildid_dir, "", out, sz) || !try_cache(d, s->home_debug, "", out, sz) ||
	    !try_cache(d, debug, ".debug", out, sz))
		return 0;
	return try_debuginfod(s, d, out, sz);
}

static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			  const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
			  char **debuginfo_file_name)
{
	/* The binary's own DWARF is used before this is asked; a separate .debug by build id only. */
	const unsigned char *bits;
	GElf_Addr vaddr;
	int n = dwfl_module_build_id(mod, &bits, &vaddr);
	char path[PATH_MAX], hex[2 * PERFREC_BUILD_ID_MAX + 1];
	int fd;

	if (n <= 0 || n > PERFREC_BUILD_ID_MAX)
		return -1;
	bid_hex(bits, (uint8_t)n, hex);
	snprintf(path, sizeof(path), "/usr/lib/debug/.build-id/%.2s/%s.debug", hex, hex + 2);
	fd = open_regular(AT_FDCWD, path);
	if (fd >= 0)
		*debuginfo_file_name = strdup(path);
	return fd;
}

static const Dwfl_Callbacks dwfl_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = find_debuginfo,
	.section_address = dwfl_offline_section_address,
};

static unsigned underscores(const char *n)
{
	unsigned u = 0;

	while (n[u] == '_')
		u++;
	return u;
}

static int fsym_cmp(const void *a, const void *b)
{
	const struct fsym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/*
	 * Of aliases, the one perf's symbol choice names: sized, global over
	 * weak over local, the fewest leading underscores, the longest name.
	 */
	if (!x->size != !y->size)
		return x->size ? -1 : 1;
	if (x->bind != y->bind)
		return x->bind > y->bind ? -1 : 1;
	if (underscores(x->name) != underscores(y->name))
		return underscores(x->name) < underscores(y->name) ? -1 : 1;
	if (strlen(x->name) != strlen(y->name))
		return strlen(x->name) > strlen(y->name) ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/*
 * The module's functions sorted by address, once: dwfl_module_addrinfo()
 * scans the whole symbol table (.symtab, .dynsym, .gnu_debugdata) on every
 * call.  NULL syms: fall back to it.
 */
static void build_syms(struct dso *d)
{
	int n = dwfl_module_getsymtab(d->mod);
	size_t cap = n > 0 ? (size_t)n : 0;

	if (n <= 0 || !(d->syms = calloc(cap, sizeof(*d->syms))))
		return;
	for (int i = 0; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		const char *name = dwfl_module_getsym_info(d->mod, i, &sym, &addr, NULL, NULL, NULL);
		int type = GELF_ST_TYPE(sym.st_info);

		/* Assembly entry points (ld.so's _start) are often NOTYPE. */
		if (!name || !*name || !addr || sym.st_shndx == SHN_UNDEF ||
		    (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE))
			continue;
		d->syms[d->nr_syms++] = (struct fsym){ addr, sym.st_size, name,
						       GELF_ST_BIND(sym.st_info) == STB_GLOBAL ? 2 :
						       GELF_ST_BIND(sym.st_info) == STB_WEAK ? 1 : 0, i };
	}
	qsort(d->syms, d->nr_syms, sizeof(*d->syms), fsym_cmp);
}

/* The function holding @a (sized symbols; a size-0 one only up to the next symbol). */
static const char *sym_at(const struct dso *d, uint64_t a)
{
	size_t lo = 0, hi = d->nr_syms;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->syms[mid].addr <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* lo - 1: the last starting at or before @a; nested or overlapping ones just before it. */
	for (size_t i = lo, k = 0; i-- > 0 && k < 16; k++) {
		const struct fsym *f = &d->syms[i];

		if (f->size ? a < f->addr + f->size : f->addr == d->syms[lo - 1].addr) {
			/* the first of its address: the global name of aliases */
			while (i > 0 && d->syms[i - 1].addr == f->addr && (!d->syms[i - 1].size || a < d->syms[i - 1].addr + d->syms[i - 1].size))
				f = &d->syms[--i];
			return f->name;
		}
	}
	return NULL;
}

/* --- the vdso ----------------------------------------------------------- */

static bool kernel_is_running_one(struct symbolizer *s);

/*
 * The dso of the running vdso, with its build id, when the file being read
 * was recorded on the running kernel (its kernel build id says so): the
 * maps of [vdso] without a build id (every one the kernel records) are
 * its.  NULL for a file of another kernel: those need the image by build
 * id, from a cache (vdso_open()).  Asked once per file.
 */
static struct dso *running_vdso_dso(struct symbolizer *s)
{
	uint8_t id[PERFREC_BUILD_ID_MAX];
	int n;

	if (!s->vdso_state) {
		s->vdso_state = -1;
		if (kernel_is_running_one(s) && (n = vdso_build_id(id)) > 0) {
			s->vdso = dso_get(s, VDSO_DSO, id, (uint8_t)n);
			if (s->vdso)
				s->vdso_state = 1;
		}
	}
	return s->vdso_state > 0 ? s->vdso : NULL;
}

/*
 * The vdso image of build id @d->bid: from a build-id cache, where perf
 * record (DIR/.build-id/xx/yyyy/vdso, a link to DIR/[vdso]/ID/) and
 * perfrecd (DIR/.build-id/xx/yyyy) leave it, else the running one if it is
 * that image.  The path into @path for messages.  An fd or -errno.
 */
static int vdso_open(struct symbolizer *s, const struct dso *d, char *path, size_t sz)
{
	const char *dirs[] = { s->o.buildid_dir, s->home_debug };

	if (!d->bid_len)
		return -ENOENT;
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (!try_cache(d, dirs[i], "/vdso", path, sz) || !try_cache(d, dirs[i], "", path, sz))
			return open_regular(AT_FDCWD, path);
	snprintf(path, sz, "%s", VDSO_DSO);
	return vdso_memfd(d->bid, d->bid_len);
}

/* --- loading binaries --------------------------------------------------- */

static bool is_vdso(const struct dso *d)
{
	return !strcmp(d->path, VDSO_DSO);
}

static void dso_load(struct symbolizer *s, struct dso *d)
{
	char path[PATH_MAX];
	GElf_Ehdr ehdr;
	size_t nphdr;
	Elf *elf;
	int fd;

	d->looked_up = true;
	s->lookups++;
	if (is_vdso(d)) {
		fd = vdso_open(s, d, path, sizeof(path));
	} else {
		if (d->path[0] != '/' && !d->bid_len)
			return;   /* //anon, [heap]: nothing on disk */
		if (find_binary(s, d, path, sizeof(path)) < 0)
			return;
		/* Checked again on this open: the path may have become a FIFO since. */
		fd = open_regular(AT_FDCWD, path);
	}
	if (fd < 0)
		return;
	d->dwfl = dwfl_begin(&dwfl_callbacks);
	if (!d->dwfl) {
		close(fd);
		return;
	}
	/* dwfl owns fd from here on. */
	d->mod = dwfl_report_elf(d->dwfl, d->path, path, fd, 0, true);
	dwfl_report_end(d->dwfl, NULL, NULL);
	if (!d->mod)
		return;
	elf = dwfl_module_getelf(d->mod, &d->bias);
	if (!elf || !gelf_getehdr(elf, &ehdr) || elf_getphdrnum(elf, &nphdr) < 0)
		return;
	for (size_t i = 0; i < nphdr && d->nr_loads < MAX_LOADS; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD)
			d->loads[d->nr_loads++] = (struct load){ ph.p_offset, ph.p_filesz, ph.p_vaddr };
	}
	build_syms(d);
	d->found = true;
	s->found++;
}

/* --- user addresses ----------------------------------------------------- */

static size_t acache_hash(const struct dso *d, uint64_t a)
{
	uint64_t h = (uint64_t)(uintptr_t)d * 0x9e3779b97f4a7c15ull ^ a * 0xff51afd7ed558ccdull;

	return (size_t)(h ^ (h >> 29));
}

/*
 * An inlined function's name: its linkage (mangled) name where it has one,
 * as the symbol table would name it out of line and as perf names inline
 * frames, so that the views demangle it into the qualified name
 * ("ns::Class<T>::method", not DW_AT_name's "method"); C functions have
 * none and keep DW_AT_name.
 */
static const char *die_name(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	Dwarf_Die origin;
	const char *n;

	if ((dwarf_attr_integrate(die, DW_AT_linkage_name, &a) ||
	     dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a)) && (n = dwarf_formstring(&a)))
		return n;
	n = dwarf_diename(die);

	if (n)
		return n;
	if (dwarf_attr_integrate(die, DW_AT_abstract_origin, &a) && dwarf_formref_die(&a, &origin))
		return dwarf_diename(&origin);
	return NULL;
}

/*
 * dwarf_getscopes() walks the whole compile unit, every function's DIE and
 * its ranges, for each address: on a profile with thousands of distinct
 * addresses in a large binary that was a third of the walk.  Its answer
 * that resolve_inlines() uses is the innermost DW_TAG_inlined_subroutine
 * holding the address (its array stops there and goes on with the abstract
 * origin's parents).  The same answer comes from indexing each compile
 * unit's top-level ranges once and walking down only the one function
 * that holds the address, through the DIEs libdw's scope walk would enter
 * (first child holding the address at each level, the same tags).  Where
 * that walk would do more (imported units, overlapping functions, an
 * abstract origin in another unit), dwarf_getscopes() answers instead.
 */
static int cu_range_cmp(const void *a, const void *b)
{
	const struct cu_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static bool may_have_scopes(int tag)
{
	switch (tag) {
	case DW_TAG_compile_unit: case DW_TAG_module: case DW_TAG_lexical_block:
	case DW_TAG_with_stmt: case DW_TAG_catch_block: case DW_TAG_try_block:
	case DW_TAG_entry_point: case DW_TAG_inlined_subroutine: case DW_TAG_subprogram:
	case DW_TAG_namespace: case DW_TAG_class_type: case DW_TAG_structure_type:
		return true;
	default:
		return false;
	}
}

static void cu_index_build(struct cu_index *ci, Dwarf_Die *cu)
{
	Dwarf_Die child;
	size_t cap = 0;

	if (dwarf_child(cu, &child) != 0)
		return;
	do {
		Dwarf_Addr base, lo, hi;
		ptrdiff_t off = 0;

		if (dwarf_tag(&child) == DW_TAG_imported_unit) {
			ci->unusable = true;
			return;
		}
		while ((off = dwarf_ranges(&child, off, &base, &lo, &hi)) > 0) {
			if (ci->nr == cap) {
				size_t n = cap ? cap * 2 : 64;
				struct cu_range *r = reallocarray(ci->r, n, sizeof(*r));

				if (!r) {
					ci->unusable = true;
					return;
				}
				ci->r = r;
				cap = n;
			}
			ci->r[ci->nr++] = (struct cu_range){ lo, hi, child };
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	qsort(ci->r, ci->nr, sizeof(*ci->r), cu_range_cmp);
	/* Two DIEs over one address: which one libdw's walk meets first is DIE order; let it decide. */
	for (size_t i = 1; i < ci->nr; i++)
		if (ci->r[i].lo < ci->r[i - 1].hi && ci->r[i].die.addr != ci->r[i - 1].die.addr)
			ci->unusable = true;
}

static struct cu_index *cu_index(struct dso *d, Dwarf_Die *cu)
{
	Dwarf_Off off = dwarf_dieoffset(cu);
	struct cu_index *ci;

	for (size_t i = 0; i < d->nr_cus; i++)
		if (d->cus[i].off == off)
			return &d->cus[i];
	if (grow((void **)&d->cus, &d->cap_cus, d->nr_cus + 1, sizeof(*d->cus)) < 0)
		return NULL;
	ci = &d->cus[d->nr_cus++];
	*ci = (struct cu_index){ .off = off };
	cu_index_build(ci, cu);
	return ci;
}

/*
 * The innermost inlined subroutine at @pc of @cu into *@ret: 1, 0 when
 * there is none, -1 when dwarf_getscopes() must answer.
 */
static int innermost_inline(struct dso *d, Dwarf_Die *cu, Dwarf_Addr pc, Dwarf_Die *ret)
{
	struct cu_index *ci = cu_index(d, cu);
	const struct cu_range *r = NULL;
	Dwarf_Die die, child, origin, origin_cu;
	Dwarf_Attribute at;
	size_t lo = 0, hi;
	bool found = false;

	if (!ci || ci->unusable)
		return -1;
	hi = ci->nr;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ci->r[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && pc < ci->r[lo - 1].hi)
		r = &ci->r[lo - 1];
	if (!r)
		return 0;
	die = r->die;
	while (may_have_scopes(dwarf_tag(&die)) && dwarf_haschildren(&die) > 0 && dwarf_child(&die, &child) == 0) {
		bool in = false;

		do {
			int tag = dwarf_tag(&child);

			if (tag == DW_TAG_imported_unit)
				return -1;
			if (dwarf_haspc(&child, pc) > 0) {
				in = true;
				if (tag == DW_TAG_inlined_subroutine) {
					*ret = child;
					found = true;
				}
				break;
			}
		} while (dwarf_siblingof(&child, &child) == 0);
		if (!in)
			break;
		die = child;
	}
	if (!found)
		return 0;
	/* dwarf_getscopes() fails without the abstract origin, and looks for it in this unit only. */
	if (!dwarf_attr(ret, DW_AT_abstract_origin, &at) || !dwarf_formref_die(&at, &origin))
		return 0;
	if (!dwarf_diecu(&origin, &origin_cu, NULL, NULL) || dwarf_dieoffset(&origin_cu) != ci->off)
		return -1;
	return 1;
}

/*
 * Inlined frames at @a: frames [0..n-1) are the inlined functions innermost
 * first, each with the source line where it is; the last is the function
 * that holds them, named @outer, at the call site of the outermost inline.
 */
static size_t resolve_inlines(struct dso *d, Dwarf_Addr a, const char *outer, struct sym_frame *f, size_t max)
{
	Dwarf_Addr bias;
	Dwarf_Die *cu = dwfl_module_addrdie(d->mod, a, &bias);
	Dwarf_Die *scopes = NULL, *owned = NULL, inl;
	Dwarf_Files *files = NULL;
	const char *file = NULL;
	int line = 0, nscopes;
	size_t n = 0;
	Dwfl_Line *l = dwfl_module_getsrc(d->mod, a);

	if (l)
		file = dwfl_lineinfo(l, NULL, &line, NULL, NULL, NULL);
	/* The one inline innermost_inline() finds, or all of dwarf_getscopes()'s scopes. */
	if (cu && (nscopes = innermost_inline(d, cu, a - bias, &inl)) > 0) {
		scopes = &inl;
	} else if (cu && nscopes < 0) {
		nscopes = dwarf_getscopes(cu, a - bias, &owned);
		scopes = owned;
	}
	if (!cu || nscopes <= 0) {
		f[0].name = outer;
		f[0].file = file;
		f[0].line = line > 0 ? (unsigned)line : 0;
		free(owned);
		return 1;
	}
	dwarf_getsrcfiles(cu, &files, NULL);
	for (int i = 0; i < nscopes && n + 1 < max; i++) {
		Dwarf_Attribute at;
		Dwarf_Word cfile = 0, cline = 0;
		int tag = dwarf_tag(&scopes[i]);

		if (tag == DW_TAG_subprogram)
			break;
		if (tag != DW_TAG_inlined_subroutine)
			continue;
		if (n)
			memset(&f[n], 0, sizeof(f[n]));
		f[n].name = die_name(&scopes[i]);
		if (!f[n].name)
			f[n].name = UNKNOWN;
		f[n].file = file;
		f[n].line = line > 0 ? (unsigned)line : 0;
		f[n].inlined = true;
		n++;
		/* The next frame out is at this inline's call site. */
		file = NULL;
		line = 0;
		if (dwarf_attr(&scopes[i], DW_AT_call_file, &at) && !dwarf_formudata(&at, &cfile) && files)
			file = dwarf_filesrc(files, cfile, NULL, NULL);
		if (dwarf_attr(&scopes[i], DW_AT_call_line, &at) && !dwarf_formudata(&at, &cline))
			line = (int)cline;
	}
	if (n)
		memset(&f[n], 0, sizeof(f[n]));
	f[n].name = outer;
	f[n].file = file;
	f[n].line = line > 0 ? (unsigned)line : 0;
	free(owned);
	return n + 1;
}

/* Names, inlined frames and lines at @a of @d's module; 0 when no symbol holds it. */
static size_t lookup_dwfl(struct symbolizer *s, struct dso *d, Dwarf_Addr a, struct sym_frame *f, size_t max)
{
	GElf_Off symoff;
	GElf_Sym sym;
	const char *name = d->syms ? sym_at(d, a) : dwfl_module_addrinfo(d->mod, a, &symoff, &sym, NULL, NULL, NULL);

	if (!name)
		return 0;
	if (s->o.no_inline || max < 2) {
		Dwfl_Line *l = dwfl_module_getsrc(d->mod, a);
		int line = 0;

		f[0].name = name;
		if (l) {
			f[0].file = dwfl_lineinfo(l, NULL, &line, NULL, NULL, NULL);
			f[0].line = line > 0 ? (unsigned)line : 0;
		}
		return 1;
	}
	return resolve_inlines(d, a, name, f, max);
}

/*
 * lookup_dwfl() once per (binary, address): dwfl_module_addrinfo() scans
 * the symbol table and DWARF scopes are walked per call, while a profile
 * asks for the same hot addresses thousands of times.
 */
static size_t addr_cached(struct symbolizer *s, struct dso *d, Dwarf_Addr a, struct sym_frame *f, size_t max)
{
	struct sym_frame tmp[ACACHE_FRAMES];
	struct acache_ent *e;
	size_t i, mask, n;

	if (max > ACACHE_FRAMES)
		max = ACACHE_FRAMES;
	if ((s->acache_used + 1) * 2 > s->acache_cap) {
		size_t ncap = s->acache_cap ? s->acache_cap * 2 : 4096;
		struct acache_ent *t = calloc(ncap, sizeof(*t));

		if (!t)
			return lookup_dwfl(s, d, a, f, max);
		for (size_t j = 0; j < s->acache_cap; j++) {
			struct acache_ent *o = &s->acache[j];

			if (!o->d)
				continue;
			for (i = acache_hash(o->d, o->a) & (ncap - 1); t[i].d; i = (i + 1) & (ncap - 1))
				;
			t[i] = *o;
		}
		free(s->acache);
		s->acache = t;
		s->acache_cap = ncap;
	}
	mask = s->acache_cap - 1;
	for (i = acache_hash(d, a) & mask; s->acache[i].d; i = (i + 1) & mask) {
		e = &s->acache[i];
		if (e->d != d || e->a != a)
			continue;
		n = e->n < max ? e->n : max;
		for (size_t k = 0; k < n; k++) {
			if (k)
				memset(&f[k], 0, sizeof(f[k]));
			f[k].name = s->aframes[e->first + k].name;
			f[k].file = s->aframes[e->first + k].file;
			f[k].line = s->aframes[e->first + k].line;
			f[k].inlined = s->aframes[e->first + k].inlined;
		}
		return n;
	}
	memcpy(tmp, f, sizeof(tmp[0]));
	n = lookup_dwfl(s, d, a, tmp, max);
	for (size_t k = 0; k < n; k++) {
		if (k)
			memset(&f[k], 0, sizeof(f[k]));
		f[k].name = tmp[k].name;
		f[k].file = tmp[k].file;
		f[k].line = tmp[k].line;
		f[k].inlined = tmp[k].inlined;
	}
	if (grow((void **)&s->aframes, &s->aframes_cap, s->nr_aframes + (n ? n : 1), sizeof(*s->aframes)) < 0)
		return n;
	e = &s->acache[i];
	e->d = d;
	e->a = a;
	e->n = (uint8_t)n;
	e->first = s->nr_aframes;
	for (size_t k = 0; k < n; k++)
		s->aframes[s->nr_aframes++] = (struct aframe){ tmp[k].name, tmp[k].file, tmp[k].line, tmp[k].inlined };
	s->acache_used++;
	return n;
}

static size_t resolve_user(struct symbolizer *s, uint32_t pid, uint64_t addr, struct sym_frame *f, size_t max)
{
	struct proc *p = proc_find(s, pid, false);
	const struct map *m = p ? proc_map_at(p, addr) : NULL;
	struct dso *d;
	uint64_t off;
	Dwarf_Addr a = 0;
	bool have = false;
	size_t n;

	if (!m)
		return 1;
	d = m->dso;
	/* A [vdso] map without a build id: the running vdso's, if the file is of this kernel. */
	if (!d->bid_len && is_vdso(d) && running_vdso_dso(s))
		d = running_vdso_dso(s);
	f[0].module = d->path;
	f[0].map_start = m->start;
	f[0].map_end = m->end;
	f[0].map_pgoff = m->pgoff;
	f[0].build_id = d->bid_len ? d->bid : NULL;
	f[0].build_id_len = d->bid_len;
	if (!d->looked_up)
		dso_load(s, d);
	if (!d->found)
		return 1;
	off = addr - m->start + m->pgoff;
	for (unsigned i = 0; i < d->nr_loads; i++) {
		if (off >= d->loads[i].offset && off < d->loads[i].offset + d->loads[i].filesz) {
			a = off - d->loads[i].offset + d->loads[i].vaddr + d->bias;
			have = true;
			break;
		}
	}
	if (!have)
		return 1;
	n = addr_cached(s, d, a, f, max);
	for (size_t i = 0; i < n; i++) {
		f[i].kind = SYM_USER;
		if (i) {
			f[i].module = f[0].module;
			f[i].map_start = f[0].map_start;
			f[i].map_end = f[0].map_end;
			f[i].map_pgoff = f[0].map_pgoff;
			f[i].build_id = f[0].build_id;
			f[i].build_id_len = f[0].build_id_len;
		}
	}
	return n ? n : 1;
}

/* --- kernel addresses --------------------------------------------------- */

static int ksym_cmp(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The file's kernel build id (its map's MMAP2, else its build-id table); 0: none. */
static int file_kernel_bid(const struct symbolizer *s, const uint8_t **ret)
{
	if (s->kernel_bid_len) {
		*ret = s->kernel_bid;
		return s->kernel_bid_len;
	}
	for (size_t i = 0; i < s->nr_pbids; i++) {
		if (is_kernel_map_name(s->pbids[i].path)) {
			*ret = s->pbids[i].bid;
			return s->pbids[i].len;
		}
	}
	return 0;
}

static bool kernel_is_running_one(struct symbolizer *s)
{
	uint8_t id[PERFREC_BUILD_ID_MAX];
	const uint8_t *fid;
	int n = perfrec_buildid__kernel(s->o.kernel_notes, id), fn = file_kernel_bid(s, &fid);

	return n > 0 && fn == n && !memcmp(fid, id, (size_t)n);
}

/*
 * Another kernel's symbols from a build-id cache, where perf record leaves
 * them: DIR/.build-id/xx/yyyy/kallsyms (a link to DIR/[kernel.kallsyms]/
 * <id>/), or that directory itself.  0 and the path, or -ENOENT.
 */
static int cached_kallsyms(const struct symbolizer *s, char *out, size_t sz)
{
	const char *dirs[] = { s->o.buildid_dir, s->home_debug };
	char hex[2 * PERFREC_BUILD_ID_MAX + 1];
	const uint8_t *fid;
	int n = file_kernel_bid(s, &fid);

	if (n <= 0)
		return -ENOENT;
	bid_hex(fid, (uint8_t)n, hex);
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		if (!dirs[i])
			continue;
		snprintf(out, sz, "%s/.build-id/%.2s/%s/kallsyms", dirs[i], hex, hex + 2);
		if (access(out, R_OK) == 0)
			return 0;
		snprintf(out, sz, "%s/[kernel.kallsyms]/%s/kallsyms", dirs[i], hex);
		if (access(out, R_OK) == 0)
			return 0;
	}
	return -ENOENT;
}

static int load_kallsyms(struct symbolizer *s, const char *path)
{
	int fd = open_regular(AT_FDCWD, path);   /* a cache entry may be a FIFO */
	FILE *f = fd >= 0 ? fdopen(fd, "re") : NULL;
	size_t cap = 0, scap = 0, slen = 0;
	char line[1024];
	uint64_t text = 0;

	if (!f) {
		int r = fd < 0 ? fd : -errno;

		if (fd >= 0)
			close(fd);
		return r;
	}
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a;
		char type, name[512], mod[256] = "";
		int k = sscanf(line, "%llx %c %511s [%255[^]]]", &a, &type, name, mod);
		size_t nl, ml;

		if (k < 3)
			continue;
		if (!strcmp(name, "_text"))
			text = a;
		if (type != 't' && type != 'T' && type != 'w' && type != 'W')
			continue;
		nl = strlen(name) + 1;
		ml = k == 4 ? strlen(mod) + 3 : 0;
		if (grow((void **)&s->ksyms, &cap, s->nr_ksyms + 1, sizeof(*s->ksyms)) < 0 ||
		    grow((void **)&s->kstrings, &scap, slen + nl + ml, 1) < 0)
			break;
		/* Offsets for now: kstrings moves as it grows. */
		s->ksyms[s->nr_ksyms].addr = a;
		s->ksyms[s->nr_ksyms].len = 0;
		s->ksyms[s->nr_ksyms].name = (const char *)(uintptr_t)slen;
		memcpy(s->kstrings + slen, name, nl);
		slen += nl;
		if (ml) {
			s->ksyms[s->nr_ksyms].module = (const char *)(uintptr_t)slen;
			snprintf(s->kstrings + slen, ml, "[%s]", mod);
			slen += ml;
		} else {
			s->ksyms[s->nr_ksyms].module = NULL;
		}
		s->nr_ksyms++;
	}
	fclose(f);
	/* Without kptr access every address reads 0: useless. */
	if (!text && s->nr_ksyms && !s->ksyms[s->nr_ksyms - 1].addr) {
		s->nr_ksyms = 0;
		return -EPERM;
	}
	for (size_t i = 0; i < s->nr_ksyms; i++) {
		struct ksym *k = &s->ksyms[i];

		k->name = s->kstrings + (uintptr_t)k->name;
		k->module = k->module ? s->kstrings + (uintptr_t)k->module : KERNEL_DSO;
		/* kallsyms is this boot's layout; the file's may differ by KASLR. */
		if (s->file_kernel_text && text)
			k->addr += s->file_kernel_text - text;
	}
	qsort(s->ksyms, s->nr_ksyms, sizeof(*s->ksyms), ksym_cmp);
	return 0;
}

static const struct ksym *ksym_at(const struct ksym *v, size_t nr, uint64_t addr)
{
	size_t lo = 0, hi = nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	if (v[lo - 1].len && addr >= v[lo - 1].addr + v[lo - 1].len)
		return NULL;
	return &v[lo - 1];
}

static size_t resolve_kernel(struct symbolizer *s, uint64_t addr, struct sym_frame *f)
{
	const struct ksym *k;
	char path[PATH_MAX];

	if (s->nr_bpf) {
		if (!s->bpf_sorted) {
			qsort(s->bpf, s->nr_bpf, sizeof(*s->bpf), ksym_cmp);
			s->bpf_sorted = true;
		}
		k = ksym_at(s->bpf, s->nr_bpf, addr);
		if (k) {
			f->name = k->name;
			f->module = k->module;
			f->kind = SYM_BPF;
			return 1;
		}
	}
	f->module = KERNEL_DSO;
	if (!s->kernel_checked) {
		s->kernel_checked = true;
		/* Names handed out for earlier files stay valid until __free(). */
		if (s->kstrings && !grow((void **)&s->strs, &s->cap_strs, s->nr_strs + 1, sizeof(*s->strs)))
			s->strs[s->nr_strs++] = s->kstrings;
		else
			free(s->kstrings);
		free(s->ksyms);
		s->ksyms = NULL;
		s->kstrings = NULL;
		s->nr_ksyms = 0;
		if (kernel_is_running_one(s))
			s->kallsyms_ok = load_kallsyms(s, s->o.kallsyms ? s->o.kallsyms : "/proc/kallsyms") == 0;
		else if (cached_kallsyms(s, path, sizeof(path)) == 0)
			s->kallsyms_ok = load_kallsyms(s, path) == 0;
		else
			s->kallsyms_ok = false;
	}
	if (!s->kallsyms_ok || !(k = ksym_at(s->ksyms, s->nr_ksyms, addr))) {
		/* Another kernel's address: at least its module, from the file's maps. */
		for (size_t i = 0; i < s->nr_kmods; i++)
			if (addr >= s->kmods[i].addr && addr - s->kmods[i].addr < s->kmods[i].len)
				f->module = s->kmods[i].module;
		return 1;
	}
	/* Past the last symbol of the core kernel or a module's last: not ours. */
	if (k == &s->ksyms[s->nr_ksyms - 1] && addr - k->addr > (1u << 20))
		return 1;
	f->name = k->name;
	f->module = k->module;
	f->kind = SYM_KERNEL;
	return 1;
}

size_t symbolizer__resolve(struct symbolizer *s, uint32_t pid, uint64_t addr, bool kernel,
			   bool return_addr, struct sym_frame *ret, size_t max)
{
	uint64_t a = return_addr && addr ? addr - 1 : addr;

	if (!max)
		return 0;
	memset(ret, 0, sizeof(*ret));
	ret->name = UNKNOWN;
	ret->kind = SYM_UNKNOWN;
	if (kernel)
		return resolve_kernel(s, a, ret);
	return resolve_user(s, pid, a, ret, max);
}
