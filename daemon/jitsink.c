// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * JIT frames named from the recording alone (jitsink.h): anonymous
 * executable mappings followed to their process's perf map, their MMAP2s
 * doubled by ones naming an image, the images written when the file ends.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <linux/perf_event.h>
#include <openssl/evp.h>

#include "bidcache.h"
#include "drain.h"
#include "jitimage.h"
#include "jitsink.h"
#include "log.h"

/* How often the perf maps of live processes are read while recording. */
#define READ_EVERY_NS (200 * 1000000ull)
/* Reads of one map when the file ends: what it gained since the last pass. */
#define FINAL_READS 16
/* A process without a perf map (yet: runtimes write it when they start JIT-ing) is looked at again this often. */
#define REOPEN_EVERY_NS (1000 * 1000000ull)
/*
 * Where the images' names lead in the cache too, in the layout of perf's
 * ~/.debug (DIR/NAME/BUILDID): hotspot's perfparser finds a file by its
 * MMAP2 name and build id there (--debug DIR), not under .build-id.
 */
#define LINK_DIR "perfrec-jit"

struct jitmap {
	uint64_t start, len;
	const char *kind;       /* its name's prefix: "jit", or a synthetic mapping's (static) */
	uint8_t bid[JITIMAGE_BID_LEN];
	size_t written;         /* symbols in its image in the cache (0: none written) */
};

struct jitproc {
	uint32_t pid;
	bool exited;
	bool refused;           /* its map or dump was refused (counted once) */
	uint64_t exit_time;     /* of its EXIT or exec record */
	uint64_t next_open_ns;  /* no perf map yet: when to look again */
	uint64_t since;         /* the time of the record it was first seen by (0: none) */
	struct perfmap pm;
	struct perfmap_root root; /* held while it has no perf map (fd -1: none) */
	struct perfmap dump;    /* its jitdump, once its marker MMAP2 names one */
	struct perfmap synth;   /* symbols of its synthetic mappings (jitsink_synth_sym()) */
	bool synth_only;        /* seen only for those: its perf map not looked for */
	struct jitmap *maps;    /* of the current file */
	size_t nr_maps, cap_maps;
	size_t no_map_counted;  /* of them, counted in st.no_map (each snapshot looks again) */
};

/* MMAP2 as the kernel lays it out, up to the file name. */
struct mmap2_head {
	struct perf_event_header header;
	uint32_t pid, tid;
	uint64_t start, len, pgoff;
	uint8_t build_id_size, reserved[3];
	uint8_t build_id[20];
	uint32_t prot, flags;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static const char *cache_dir(const struct jitsink *js)
{
	const struct config *c = js->cfg ? *js->cfg : NULL;

	return c && c->buildid_cache && *c->buildid_cache ? c->buildid_cache : NULL;
}

/* Its root is not needed any more (its map is open, or it is gone). */
static void root_drop(struct jitsink *js, struct jitproc *p)
{
	if (p->root.fd < 0)
		return;
	perfmap_root_drop(&p->root);
	js->st.roots_held--;
}

/* No perf map yet: its root held, for a map written as it exits. */
static void root_hold(struct jitsink *js, struct jitproc *p)
{
	if (js->st.roots_held >= JITSINK_MAX_ROOTS) {
		js->st.roots_refused++;
		return;
	}
	if (perfmap_root_hold(&p->root, (pid_t)p->pid) == 0)
		js->st.roots_held++;
}

static void proc_free(struct jitsink *js, struct jitproc *p)
{
	root_drop(js, p);
	perfmap_stats_add(&js->st.perfmap, &p->pm.st);
	perfmap_stats_add(&js->st.perfmap, &p->dump.st);
	perfmap_exit(&p->pm);
	perfmap_exit(&p->dump);
	perfmap_exit(&p->synth);
	free(p->maps);
	free(p);
}

static struct jitproc *proc_find(struct jitsink *js, uint32_t pid)
{
	for (size_t i = 0; i < js->nr_procs; i++)
		if (js->procs[i]->pid == pid && !js->procs[i]->exited)
			return js->procs[i];
	return NULL;
}

/* A map there but not to be read (a link, a FIFO, another user's): counted once a process. */
static void note_refused(struct jitsink *js, struct jitproc *p, int r)
{
	if (r == -ENOENT || p->refused)
		return;
	p->refused = true;
	js->st.refused++;
}

/* Its perf map opened, else its root held (the JVM writes its map as it exits). */
static void proc_follow(struct jitsink *js, struct jitproc *p)
{
	int r = perfmap_open(&p->pm, (pid_t)p->pid);

	p->synth_only = false;
	if (r < 0 && r != -ENOENT)
		log_debug("JIT symbols: no perf map of pid %u to follow: %s", p->pid, strerror(-r));
	note_refused(js, p, r);
	if (r < 0)
		root_hold(js, p);
}

/*
 * The process's state, its perf map opened on first sight (it exists from
 * the runtime's start) when @follow: not for synthetic mappings only.
 */
static struct jitproc *proc_get(struct jitsink *js, uint32_t pid, uint64_t time, bool follow)
{
	struct jitproc *p = proc_find(js, pid), **grown;

	if (p) {
		if (follow && p->synth_only)
			proc_follow(js, p);
		return p;
	}
	if (js->nr_procs >= JITSINK_MAX_PROCS)
		return NULL;
	p = calloc(1, sizeof(*p));
	grown = reallocarray(js->procs, js->nr_procs + 1, sizeof(*grown));
	if (!p || !grown) {
		free(p);
		return NULL;
	}
	js->procs = grown;
	p->pid = pid;
	p->since = time;
	p->root.fd = -1;
	perfmap_init(&p->pm, &js->o.limits);
	perfmap_init(&p->dump, &js->o.limits);
	perfmap_init(&p->synth, &js->o.limits);
	p->synth_only = true;
	if (follow)
		proc_follow(js, p);
	js->procs[js->nr_procs++] = p;
	js->st.procs++;
	return p;
}

/* What the processes' symbol tables take, all told. */
static uint64_t mem_used(const struct jitsink *js)
{
	uint64_t n = 0;

	for (size_t i = 0; i < js->nr_procs; i++)
		n += (js->procs[i]->pm.syms_cap + js->procs[i]->dump.syms_cap + js->procs[i]->synth.syms_cap) *
			     sizeof(struct perfmap_sym) +
		     js->procs[i]->pm.names_cap + js->procs[i]->dump.names_cap + js->procs[i]->synth.names_cap;
	return n;
}

/*
 * Read what the map gained; a map not there yet (the runtime writes it
 * late) is looked for again.  Past JITSINK_MEM_MAX for all processes
 * together nothing more is read (one read's worth over, at most).
 */
static void proc_read(struct jitsink *js, struct jitproc *p, unsigned passes)
{
	struct perfmap *both[] = { &p->pm, &p->dump };
	int r;

	if (p->pm.fd < 0 && !p->exited && !p->synth_only) {
		uint64_t now = now_ns();

		if (now < p->next_open_ns)
			;
		else if ((r = perfmap_open(&p->pm, (pid_t)p->pid)) < 0) {
			note_refused(js, p, r);
			p->next_open_ns = now + REOPEN_EVERY_NS;
		} else {
			log_debug("JIT symbols: following the perf map of pid %u", p->pid);
			root_drop(js, p);
		}
	}
	for (size_t k = 0; k < 2; k++)
		for (unsigned i = 0; i < passes && both[k]->fd >= 0; i++) {
			if (mem_used(js) > JITSINK_MEM_MAX) {
				js->st.over_memory++;
				break;
			}
			if (perfmap_read(both[k]) <= 0)
				break;
		}
}

/*
 * @nonce (0: none) tells apart mappings of the same pid and range in one
 * file: a synthetic mapping's range is the same in every process, and a
 * process that execs gets a new one for other code.
 */
static void make_bid(const struct jitsink *js, uint32_t pid, uint64_t start, uint64_t len, uint64_t nonce,
		     uint8_t out[JITIMAGE_BID_LEN])
{
	uint8_t in[sizeof(js->salt) + 4 + 16 + 8], md[EVP_MAX_MD_SIZE];
	unsigned n = 0;

	memcpy(in, js->salt, sizeof(js->salt));
	memcpy(in + 16, &pid, 4);
	memcpy(in + 20, &start, 8);
	memcpy(in + 28, &len, 8);
	memcpy(in + 36, &nonce, 8);
	if (!EVP_Digest(in, nonce ? sizeof(in) : sizeof(in) - 8, md, &n, EVP_sha1(), NULL) || n < JITIMAGE_BID_LEN)
		memset(md, 0, sizeof(md));  /* never happens with OpenSSL's own SHA-1 */
	memcpy(out, md, JITIMAGE_BID_LEN);
}

/* What the MMAP2 of @m calls its file; unique in a file (a mapping with a build id). */
/*
 * A synthetic region (a kind but "jit") lies at the same address in every program a
 * pid execs: its name carries the start of its build id too, since
 * perfparser finds build ids by name and would name one program's frames
 * by the other's image.
 */
static void map_name(uint32_t pid, const struct jitmap *m, char *buf, size_t len)
{
	if (m->kind && strcmp(m->kind, "jit"))
		snprintf(buf, len, "/" LINK_DIR "/%s-%u-%" PRIx64 "-%" PRIx64 "-%02x%02x%02x%02x.so", m->kind, pid,
			 m->start, m->len, m->bid[0], m->bid[1], m->bid[2], m->bid[3]);
	else
		snprintf(buf, len, "/" LINK_DIR "/%s-%u-%" PRIx64 "-%" PRIx64 ".so", m->kind ? m->kind : "jit", pid,
			 m->start, m->len);
}

/* The trailer's time field (sample_id_all), or NULL if it has none. */
static uint8_t *trailer_time(const struct jitsink *js, uint8_t *rec, size_t size)
{
	uint64_t st = js->o.sideband_sample_type;
	size_t n = 0, at;

	if (!(st & PERF_SAMPLE_TIME))
		return NULL;
	n += !!(st & PERF_SAMPLE_TID) + 1 + !!(st & PERF_SAMPLE_ID) + !!(st & PERF_SAMPLE_STREAM_ID) +
	     !!(st & PERF_SAMPLE_CPU) + !!(st & PERF_SAMPLE_IDENTIFIER);
	if (size < sizeof(struct perf_event_header) + 8 * n)
		return NULL;
	at = size - 8 * n + ((st & PERF_SAMPLE_TID) ? 8 : 0);
	return rec + at;
}

/* A side-band record's time (0: it carries none). */
static uint64_t rec_time(const struct jitsink *js, const struct perf_event_header *h)
{
	const uint8_t *t = trailer_time(js, (uint8_t *)(uintptr_t)h, h->size);
	uint64_t v = 0;

	if (t)
		memcpy(&v, t, 8);
	return v;
}

/* Into the file, and the history if there is one: 0 if either took it. */
static int emit_both(struct jitsink *js, const struct perf_event_header *h, uint64_t time)
{
	int r = js->o.emit(js->o.ctx, h), rh;

	if (!js->history)
		return r;
	rh = js->history(js->history_ctx, js->ring, h, time);
	return r == 0 ? 0 : rh;
}

/*
 * The MMAP2 naming @m's image, from the kernel's @h: same pid, range,
 * prot, flags and trailer, pgoff 0, the image's name and build id, one
 * nanosecond later.
 */
/*
 * The MMAP2 naming @m's image into @rec (@cap bytes): @in's header, pid,
 * tid, prot and flags, pgoff 0, the image's name and build id, then
 * @trailer_len bytes of @trailer.  Its size, or -ENOSPC.
 */
static int make_map_rec(const struct mmap2_head *in, const struct jitmap *m, const void *trailer,
			size_t trailer_len, uint8_t *rec, size_t cap)
{
	struct mmap2_head out;
	size_t name_len;
	char name[128];

	map_name(in->pid, m, name, sizeof(name));
	name_len = (strlen(name) + 1 + 7) & ~(size_t)7;
	if (sizeof(out) + name_len + trailer_len > cap)
		return -ENOSPC;
	out = *in;
	out.header.misc |= PERF_RECORD_MISC_MMAP_BUILD_ID;
	out.header.size = (uint16_t)(sizeof(out) + name_len + trailer_len);
	out.pgoff = 0;
	out.build_id_size = JITIMAGE_BID_LEN;
	memset(out.reserved, 0, sizeof(out.reserved));
	memcpy(out.build_id, m->bid, JITIMAGE_BID_LEN);
	memset(rec, 0, out.header.size);
	memcpy(rec, &out, sizeof(out));
	memcpy(rec + sizeof(out), name, strlen(name));
	if (trailer_len)
		memcpy(rec + sizeof(out) + name_len, trailer, trailer_len);
	return out.header.size;
}

static int emit_map(struct jitsink *js, const struct perf_event_header *h, const struct jitmap *m)
{
	const struct mmap2_head *in = (const void *)h;
	const uint8_t *src = (const uint8_t *)h;
	size_t name_len, name_end;
	uint8_t rec[sizeof(struct mmap2_head) + 128 + 64];
	uint8_t *t;
	uint64_t time;
	int size;

	name_len = strnlen((const char *)src + sizeof(*in), h->size - sizeof(*in));
	name_end = sizeof(*in) + ((name_len + 1 + 7) & ~(size_t)7);
	if (name_end > h->size || h->size - name_end > 64)
		return -EINVAL;
	size = make_map_rec(in, m, src + name_end, h->size - name_end, rec, sizeof(rec));
	if (size < 0)
		return size;
	t = trailer_time(js, rec, (size_t)size);
	if (!t)
		return -ENODATA;
	memcpy(&time, t, 8);
	time++;
	memcpy(t, &time, 8);
	return emit_both(js, (const struct perf_event_header *)rec, time);
}

static bool is_jit_mmap2(const struct perf_event_header *h)
{
	static const char *const anon[] = { "//anon", "/dev/zero", "/anon_hugepage" };
	const struct mmap2_head *m = (const void *)h;
	const char *name = (const char *)h + sizeof(*m);

	if (h->type != PERF_RECORD_MMAP2 || h->size <= sizeof(*m) + 7 ||
	    (h->misc & PERF_RECORD_MISC_CPUMODE_MASK) != PERF_RECORD_MISC_USER)
		return false;
	if (!(m->prot & PROT_EXEC) || !m->len || m->pid == UINT32_MAX || !m->pid)
		return false;
	/* what perf takes for anonymous memory too (shared, huge pages), maybe " (deleted)" */
	for (size_t i = 0; i < sizeof(anon) / sizeof(anon[0]); i++) {
		size_t n = strlen(anon[i]);

		if (!strncmp(name, anon[i], n) && (name[n] == '\0' || name[n] == ' '))
			return true;
	}
	return false;
}

/* Room for a new mapping of @p in this file, its build id made (not counted in yet: nr_maps). */
static struct jitmap *map_new(struct jitsink *js, struct jitproc *p, uint64_t start, uint64_t len,
			      const char *kind)
{
	struct jitmap *m;

	if (p->nr_maps >= JITSINK_MAX_MAPS)
		return NULL;
	if (p->nr_maps == p->cap_maps) {
		size_t cap = p->cap_maps ? 2 * p->cap_maps : 8;

		m = reallocarray(p->maps, cap, sizeof(*m));
		if (!m)
			return NULL;
		p->maps = m;
		p->cap_maps = cap;
	}
	m = &p->maps[p->nr_maps];
	*m = (struct jitmap){ .start = start, .len = len, .kind = kind };
	/* a synthetic mapping's own: its range is no process's alone */
	make_bid(js, p->pid, start, len, strcmp(kind, "jit") ? ++js->synth_seq : 0, m->bid);
	return m;
}

static void note_mmap2(struct jitsink *js, const struct perf_event_header *h)
{
	const struct mmap2_head *in = (const void *)h;
	struct jitproc *p;
	struct jitmap *m;

	if (!cache_dir(js) || !js->o.emit)
		return;
	p = proc_get(js, in->pid, rec_time(js, h), true);
	if (!p) {
		js->st.skipped++;
		return;
	}
	for (size_t i = 0; i < p->nr_maps; i++)
		if (p->maps[i].start == in->start && p->maps[i].len == in->len) {
			/* the same range again (mprotect): its image stays the one to name */
			if (emit_map(js, h, &p->maps[i]) == 0)
				js->st.maps++;
			return;
		}
	m = map_new(js, p, in->start, in->len, "jit");
	if (!m) {
		js->st.skipped++;
		return;
	}
	if (emit_map(js, h, m) < 0) {
		js->st.skipped++;
		return;
	}
	p->nr_maps++;
	js->st.maps++;
}

static void note_exit(struct jitsink *js, const struct perf_event_header *h)
{
	const struct { struct perf_event_header h; uint32_t pid, ppid, tid, ptid; } *e = (const void *)h;
	struct jitproc *p;
	int r;

	if (h->size < sizeof(*e) || e->pid != e->tid || !(p = proc_find(js, e->pid)))
		return;
	/* a map written as it exited (the JVM's DumpPerfMapAtExit): through the root held */
	if (p->pm.fd < 0 && p->root.fd >= 0 && (r = perfmap_open_root(&p->pm, &p->root)) < 0)
		note_refused(js, p, r);
	else if (p->pm.fd >= 0 && p->root.fd >= 0) {
		js->st.maps_at_exit++;
		log_debug("JIT symbols: reading the perf map pid %u wrote as it exited", p->pid);
	}
	root_drop(js, p);
	/* what it wrote last: the open fd reads it even once the file is deleted */
	proc_read(js, p, FINAL_READS);
	p->exited = true;
	p->exit_time = rec_time(js, h);
}

/*
 * A jitdump's marker: the runtime maps its dump (.../jit-PID.dump)
 * executable so that perf sees where it is; the dump is followed from
 * then on, beside the perf map.
 */
static void note_marker(struct jitsink *js, const struct perf_event_header *h)
{
	const struct mmap2_head *in = (const void *)h;
	const char *name = (const char *)h + sizeof(*in), *base;
	size_t n = strnlen(name, h->size - sizeof(*in));
	struct jitproc *p;
	int r;

	if (h->type != PERF_RECORD_MMAP2 || h->size <= sizeof(*in) || n == h->size - sizeof(*in) ||
	    (h->misc & PERF_RECORD_MISC_CPUMODE_MASK) != PERF_RECORD_MISC_USER || !(in->prot & PROT_EXEC) ||
	    !in->pid || in->pid == UINT32_MAX || n < 10 || strcmp(name + n - 5, ".dump"))
		return;
	base = strrchr(name, '/');
	if (!base || strncmp(base + 1, "jit-", 4) || !cache_dir(js))
		return;
	p = proc_get(js, in->pid, rec_time(js, h), true);
	if (!p || p->dump.fd >= 0)
		return;
	r = perfmap_open_jitdump(&p->dump, (pid_t)in->pid, name);
	note_refused(js, p, r);
	if (r < 0)
		log_debug("JIT symbols: cannot follow the jitdump of pid %u: %s", in->pid, strerror(-r));
	else
		log_debug("JIT symbols: following %s of pid %u", name, in->pid);
}

/*
 * An exec: the program whose maps the process followed is gone with its
 * address space; what it mapped in this file keeps its images, what the
 * new program maps is another process's to the sink.
 */
static void note_exec(struct jitsink *js, const struct perf_event_header *h)
{
	const struct { struct perf_event_header h; uint32_t pid, tid; } *c = (const void *)h;
	struct jitproc *p;

	uint64_t t;

	if (!(h->misc & PERF_RECORD_MISC_COMM_EXEC) || h->size < sizeof(*c) || c->pid != c->tid ||
	    !(p = proc_find(js, c->pid)))
		return;
	/*
	 * The drain takes the rings one after the other: the exec that
	 * started this very program (on another CPU) may come after the maps
	 * it made.  Only an exec later than what the process was first seen
	 * by ends it.
	 */
	t = rec_time(js, h);
	if (t && p->since && t <= p->since)
		return;
	root_drop(js, p);
	proc_read(js, p, FINAL_READS);
	p->exited = true;
	p->exit_time = t;
}

void jitsink_note(struct jitsink *js, const struct perf_event_header *h)
{
	if (is_jit_mmap2(h))
		note_mmap2(js, h);
	else if (h->type == PERF_RECORD_MMAP2)
		note_marker(js, h);
	else if (h->type == PERF_RECORD_EXIT)
		note_exit(js, h);
	else if (h->type == PERF_RECORD_COMM)
		note_exec(js, h);
}

static void jitsink_record(struct sink *s, struct drain_rec *r)
{
	struct jitsink *js = s->ctx;

	/* only flight mode ages processes out by record time */
	if (js->keep_exited_ns) {
		uint64_t t = drain_rec_time(r);

		if (t > js->newest)
			js->newest = t;
	}
	js->ring = r->ring;
	jitsink_note(js, r->h);
}

/* Flight mode: processes exited longer ago than any snapshot reaches go (keep_exited_ns). */
static void forget_exited(struct jitsink *js)
{
	size_t k = 0;

	for (size_t i = 0; i < js->nr_procs; i++) {
		struct jitproc *p = js->procs[i];

		if (p->exited && p->exit_time + js->keep_exited_ns < js->newest)
			proc_free(js, p);
		else
			js->procs[k++] = p;
	}
	js->nr_procs = k;
}

static void jitsink_round(struct sink *s, uint64_t bytes)
{
	struct jitsink *js = s->ctx;
	uint64_t now;

	if (!js->nr_procs)
		return;
	now = now_ns();
	if (now < js->next_read_ns)
		return;
	js->next_read_ns = now + READ_EVERY_NS;
	if (js->keep_exited_ns)
		forget_exited(js);
	for (size_t i = 0; i < js->nr_procs; i++)
		if (!js->procs[i]->exited)
			proc_read(js, js->procs[i], 1);
}

const struct sink_ops jitsink_ops = { .record = jitsink_record, .round = jitsink_round };

void jitsink_init(struct jitsink *js, const struct config *const *cfg, const struct jitsink_opts *o)
{
	memset(js, 0, sizeof(*js));
	js->cfg = cfg;
	js->o = *o;
	/* a process's share of JITSINK_MEM_MAX, read a bounded step at a time */
	if (!js->o.limits.max_syms)
		js->o.limits.max_syms = 256u << 10;
	if (!js->o.limits.max_name_bytes)
		js->o.limits.max_name_bytes = 16u << 20;
	if (!js->o.limits.read_budget)
		js->o.limits.read_budget = 1u << 20;
	js->sink = (struct sink){ .ops = &jitsink_ops, .ctx = js };
	jitsink_file_begin(js);
}

void jitsink_moved(struct jitsink *js)
{
	js->sink.ctx = js;
}

void jitsink_exit(struct jitsink *js)
{
	if (!js)
		return;
	for (size_t i = 0; i < js->nr_procs; i++)
		proc_free(js, js->procs[i]);
	free(js->procs);
	js->procs = NULL;
	js->nr_procs = 0;
}

void jitsink_get_stats(const struct jitsink *js, struct jitsink_stats *ret)
{
	*ret = js->st;
	for (size_t i = 0; i < js->nr_procs; i++) {
		perfmap_stats_add(&ret->perfmap, &js->procs[i]->pm.st);
		perfmap_stats_add(&ret->perfmap, &js->procs[i]->dump.st);
	}
}

void jitsink_file_begin(struct jitsink *js)
{
	js->file_seq++;
	if (getrandom(js->salt, sizeof(js->salt), GRND_NONBLOCK) != (ssize_t)sizeof(js->salt)) {
		/* no entropy yet (early boot): time and pid still make it this file's */
		uint64_t t = now_ns();
		uint32_t pid = (uint32_t)getpid();

		memcpy(js->salt, &t, 8);
		memcpy(js->salt + 8, &pid, 4);
	}
	for (size_t i = 0; i < js->nr_procs; i++)
		js->procs[i]->nr_maps = js->procs[i]->no_map_counted = 0;
}

/* @s's name, from whichever of @p's tables holds it. */
static const char *sym_name(const struct jitproc *p, const struct perfmap_sym *s)
{
	const struct perfmap *t = s >= p->pm.syms && s < p->pm.syms + p->pm.nr_syms ? &p->pm :
				  s >= p->dump.syms && s < p->dump.syms + p->dump.nr_syms ? &p->dump : &p->synth;

	return perfmap_sym_name(t, s);
}

static int by_start_then_latest(const void *a, const void *b)
{
	const struct perfmap_sym *x = *(const struct perfmap_sym *const *)a, *y = *(const struct perfmap_sym *const *)b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq > y->seq ? -1 : x->seq < y->seq;
}

/*
 * The symbols of @p's map within @m, one per start address (the latest
 * line for it: code moved or replaced), as offsets into the mapping.
 */
static size_t map_syms(const struct jitproc *p, const struct jitmap *m, const struct perfmap_sym **tmp,
		       struct jitimage_sym *out)
{
	const struct perfmap *all[] = { &p->pm, &p->dump, &p->synth };
	size_t n = 0, k = 0;

	for (size_t t = 0; t < 3; t++)
		for (size_t i = 0; i < all[t]->nr_syms; i++) {
			const struct perfmap_sym *s = &all[t]->syms[i];

			if (s->start >= m->start && s->start - m->start < m->len &&
			    s->size <= m->len - (s->start - m->start))
				tmp[n++] = s;
		}
	qsort(tmp, n, sizeof(*tmp), by_start_then_latest);
	for (size_t i = 0; i < n; i++) {
		if (i && tmp[i]->start == tmp[i - 1]->start)
			continue;
		out[k++] = (struct jitimage_sym){
			.off = tmp[i]->start - m->start, .size = tmp[i]->size, .name = sym_name(p, tmp[i]),
		};
	}
	return k;
}

/* An open directory @name under @dirfd, made 0750 if missing; never through a link. */
static int open_subdir(int dirfd, const char *name)
{
	int fd;

	if (mkdirat(dirfd, name, 0750) < 0 && errno != EEXIST)
		return -errno;
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* DIR/perfrec-jit/jit-....so/BUILDID -> ../../.build-id/xx/yyyy: the entry under its MMAP2 name. */
static int link_image(int linkfd, uint32_t pid, const struct jitmap *m)
{
	char name[128], hex[2 * JITIMAGE_BID_LEN + 1], path[2 * JITIMAGE_BID_LEN + 2], target[128];
	int fd, r;

	map_name(pid, m, name, sizeof(name));
	fd = open_subdir(linkfd, strrchr(name, '/') + 1);
	if (fd < 0)
		return fd;
	jitimage_bid_path(m->bid, path);
	memcpy(hex, path, 2);
	memcpy(hex + 2, path + 3, sizeof(hex) - 2);
	snprintf(target, sizeof(target), "../../.build-id/%s", path);
	r = symlinkat(target, fd, hex) < 0 && errno != EEXIST ? -errno : 0;
	close(fd);
	return r;
}

static int write_image(struct jitsink *js, int bidfd, int linkfd, const struct jitproc *p,
		       struct jitmap *m, const struct perfmap_sym **tmp, struct jitimage_sym *syms)
{
	size_t n = map_syms(p, m, tmp, syms), len;
	void *buf;
	int r;

	if (!n || n <= m->written)
		return 0;   /* nothing (new) known in it: perf says [unknown] as it would have */
	r = jitimage_build(syms, n, m->len, m->bid, &buf, &len);
	if (r == 0) {
		/* an earlier snapshot's image of it, with fewer symbols, gives way */
		r = m->written ? jitimage_replace(bidfd, m->bid, buf, len, 0640)
			       : jitimage_store(bidfd, m->bid, buf, len, 0640);
		free(buf);
	}
	if (r == -EEXIST)
		r = 0;
	if (r == 0)
		m->written = n;
	if (r == 0)
		bidcache_note_entry(cache_dir(js), (*js->cfg)->buildid_cache_size, m->bid, JITIMAGE_BID_LEN);
	if (r == 0 && linkfd >= 0)
		r = link_image(linkfd, p->pid, m);
	if (r == 0) {
		js->st.images++;
		js->st.image_syms += n;
	}
	return r;
}

/*
 * Links whose entry the cache evicted go, and the directories they
 * leave empty: the links stay as many as the images.
 */
static void prune_links(int linkfd)
{
	int top = dup(linkfd);
	DIR *d = top >= 0 ? fdopendir(top) : NULL;
	struct dirent *de;

	if (!d) {
		if (top >= 0)
			close(top);
		return;
	}
	while ((de = readdir(d))) {
		struct dirent *le;
		struct stat st;
		DIR *sub;
		int fd;

		if (de->d_name[0] == '.')
			continue;
		fd = openat(linkfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		sub = fd >= 0 ? fdopendir(fd) : NULL;
		if (!sub) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		while ((le = readdir(sub)))
			if (le->d_name[0] != '.' && fstatat(dirfd(sub), le->d_name, &st, 0) < 0 && errno == ENOENT)
				unlinkat(dirfd(sub), le->d_name, 0);
		closedir(sub);
		unlinkat(linkfd, de->d_name, AT_REMOVEDIR);  /* only if empty */
	}
	closedir(d);
}

static void write_images(struct jitsink *js, const char *dir)
{
	const struct perfmap_sym **tmp = NULL;
	struct jitimage_sym *syms = NULL;
	size_t cap = 0;
	int dfd, bidfd, linkfd;

	/* bidcache_prepare() made and checked it; a link planted since is not followed */
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	bidfd = dfd < 0 ? -errno : openat(dfd, ".build-id", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (bidfd < 0) {
		log_warning("JIT symbols: cannot open %s/.build-id: %s", dir, strerror(errno));
		if (dfd >= 0)
			close(dfd);
		return;
	}
	linkfd = open_subdir(dfd, LINK_DIR);
	close(dfd);
	for (size_t i = 0; i < js->nr_procs; i++) {
		struct jitproc *p = js->procs[i];

		if (!p->nr_maps)
			continue;
		if (p->pm.fd < 0 && !p->pm.nr_syms && p->dump.fd < 0 && !p->dump.nr_syms && !p->synth.nr_syms) {
			js->st.no_map += p->nr_maps - p->no_map_counted;
			p->no_map_counted = p->nr_maps;
			continue;
		}
		if (p->pm.nr_syms + p->dump.nr_syms + p->synth.nr_syms > cap) {
			free(tmp);
			free(syms);
			cap = p->pm.nr_syms + p->dump.nr_syms + p->synth.nr_syms;
			tmp = calloc(cap, sizeof(*tmp));
			syms = calloc(cap, sizeof(*syms));
			if (!tmp || !syms) {
				js->st.failed += p->nr_maps;
				cap = 0;
				continue;
			}
		}
		for (size_t j = 0; j < p->nr_maps; j++)
			if (write_image(js, bidfd, linkfd, p, &p->maps[j], tmp, syms) < 0)
				js->st.failed++;
	}
	free(tmp);
	free(syms);
	close(bidfd);
	if (linkfd >= 0) {
		prune_links(linkfd);
		close(linkfd);
	}
}

void jitsink_write_images(struct jitsink *js)
{
	const char *dir = cache_dir(js);

	for (size_t i = 0; i < js->nr_procs; i++)
		if (js->procs[i]->nr_maps && !js->procs[i]->exited)
			proc_read(js, js->procs[i], FINAL_READS);
	if (dir)
		write_images(js, dir);
}

void jitsink_file_end(struct jitsink *js)
{
	const char *dir = cache_dir(js);
	size_t k = 0;

	for (size_t i = 0; i < js->nr_procs; i++)
		if (js->procs[i]->nr_maps)
			proc_read(js, js->procs[i], FINAL_READS);
	if (dir)
		write_images(js, dir);
	if (js->st.maps)
		log_debug("JIT symbols: %" PRIu64 " mappings named, %" PRIu64 " images (%" PRIu64
			  " symbols), %" PRIu64 " without a perf map, %" PRIu64 " skipped, %" PRIu64
			  " failed, %" PRIu64 " reads over the memory cap",
			  js->st.maps, js->st.images, js->st.image_syms, js->st.no_map, js->st.skipped,
			  js->st.failed, js->st.over_memory);
	for (size_t i = 0; i < js->nr_procs; i++) {
		struct jitproc *p = js->procs[i];

		p->nr_maps = p->no_map_counted = 0;
		if (p->exited)
			proc_free(js, p);
		else
			js->procs[k++] = p;
	}
	js->nr_procs = k;
}

int jitsink_synth_map(struct jitsink *js, uint32_t pid, uint32_t tid, uint64_t start, uint64_t len,
		      const char *kind, const void *trailer, size_t trailer_len, void *buf, size_t cap)
{
	struct mmap2_head head = {
		.header = { .type = PERF_RECORD_MMAP2, .misc = PERF_RECORD_MISC_USER },
		.pid = pid, .tid = tid, .start = start, .len = len,
		.prot = PROT_READ | PROT_EXEC, .flags = MAP_PRIVATE,
	};
	struct jitproc *p;
	struct jitmap *m = NULL;
	int size;

	if (!cache_dir(js))
		return -ENOENT;
	if (!len || !kind || !pid || pid == UINT32_MAX)
		return -EINVAL;
	p = proc_get(js, pid, 0, false);
	if (!p) {
		js->st.skipped++;
		return -ENOSPC;
	}
	for (size_t i = 0; i < p->nr_maps && !m; i++)
		if (p->maps[i].start == start && p->maps[i].len == len)
			m = &p->maps[i];
	if (!m && !(m = map_new(js, p, start, len, kind))) {
		js->st.skipped++;
		return -ENOSPC;
	}
	size = make_map_rec(&head, m, trailer, trailer_len, buf, cap);
	if (size < 0)
		return size;
	/* one of this file's now (a second call for it names the same image) */
	if (m == &p->maps[p->nr_maps]) {
		p->nr_maps++;
		js->st.maps++;
	}
	return size;
}

int jitsink_synth_sym(struct jitsink *js, uint32_t pid, uint64_t start, uint64_t size, const char *name)
{
	struct jitproc *p;
	char line[1024];
	size_t before;
	int n;

	if (!cache_dir(js))
		return -ENOENT;
	if (strchr(name, '\n'))
		return -EINVAL;
	p = proc_get(js, pid, 0, false);
	if (!p)
		return -ENOSPC;
	if (mem_used(js) > JITSINK_MEM_MAX) {
		js->st.over_memory++;
		return -ENOSPC;
	}
	/* a perf map's line: the same bounds and counts as a runtime's own */
	n = snprintf(line, sizeof(line), "%" PRIx64 " %" PRIx64 " %s\n", start, size, name);
	if (n < 0 || (size_t)n >= sizeof(line))
		return -ENAMETOOLONG;
	before = p->synth.nr_syms;
	perfmap_feed(&p->synth, line, (size_t)n);
	return p->synth.nr_syms > before ? 0 : -ENOSPC;
}
