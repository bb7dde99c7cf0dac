// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * profile_walk(): the samples of perf.data files as symbolized stacks (see
 * profile.h).  Records are taken in time order (each round sorted, as
 * perf's ordered events do; see walk_file()), side-band ones fed to lib's
 * symbolizer, so each sample is resolved against the maps of its moment.
 * A callchain is split at its PERF_CONTEXT_* markers, as perf does: the
 * frames after PERF_CONTEXT_KERNEL are kernel addresses, after
 * PERF_CONTEXT_USER user ones; hypervisor and guest frames come out as
 * [unknown].  The first frame after each marker is where that context was
 * interrupted (the sampled ip, or the user ip of a sample taken in the
 * kernel), looked up as it is; every other frame is a return address and
 * is looked up one byte back, in the call instruction.
 */
#include <dirent.h>
#include <limits.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <linux/perf_event.h>
#include <perfrec/event.h>
#include <perfrec/pdreader.h>

#include "demangle.h"
#include "profile.h"
#include "symbolize.h"

#define MAX_INLINE 16

struct comm_ent {
	uint32_t tid;
	bool used;
	const char *comm;       /* interned */
};

struct cgroup_ent {
	uint64_t id;
	char *path;
	bool selected;          /* by o->select (--container, --pod, --unit), labelled once here */
};

struct walk {
	const struct profile_opts *o;
	struct symbolizer *sym;
	struct demangler *dm;   /* NULL: names as the binaries have them */
	profile_stack_fn fn;
	void *ctx;

	struct comm_ent *comms;
	size_t comms_cap, comms_used;
	struct cgroup_ent *cgroups;
	size_t nr_cgroups, cap_cgroups;

	struct pframe *frames;
	size_t cap_frames;

	/* Event names and comms handed to the callback live as long as the walk. */
	char **strs;
	size_t strs_cap, strs_used;

	/* per file */
	uint64_t unreadable;    /* samples too short for their attr, or of no known attr */
	bool have_clock;
	uint64_t wall_ns, clock_ns;
};

static uint32_t str_hash(const char *p)
{
	uint32_t h = 2166136261u;

	while (*p)
		h = (h ^ (uint8_t)*p++) * 16777619u;
	return h;
}

static const char *intern(struct walk *w, const char *str)
{
	size_t i, mask;

	if ((w->strs_used + 1) * 2 > w->strs_cap) {
		size_t ncap = w->strs_cap ? w->strs_cap * 2 : 64;
		char **n = calloc(ncap, sizeof(*n));

		if (!n)
			return NULL;
		for (size_t j = 0; j < w->strs_cap; j++) {
			if (!w->strs[j])
				continue;
			for (i = str_hash(w->strs[j]) & (ncap - 1); n[i]; i = (i + 1) & (ncap - 1))
				;
			n[i] = w->strs[j];
		}
		free(w->strs);
		w->strs = n;
		w->strs_cap = ncap;
	}
	mask = w->strs_cap - 1;
	for (i = str_hash(str) & mask; w->strs[i]; i = (i + 1) & mask)
		if (!strcmp(w->strs[i], str))
			return w->strs[i];
	w->strs[i] = strdup(str);
	if (w->strs[i])
		w->strs_used++;
	return w->strs[i];
}

static struct comm_ent *comm_slot(struct walk *w, uint32_t tid, bool create)
{
	size_t mask, i;

	if (create && (w->comms_used + 1) * 2 > w->comms_cap) {
		size_t ncap = w->comms_cap ? w->comms_cap * 2 : 256;
		struct comm_ent *n = calloc(ncap, sizeof(*n));

		if (!n)
			return NULL;
		for (size_t j = 0; j < w->comms_cap; j++) {
			if (!w->comms[j].used)
				continue;
			for (i = (w->comms[j].tid * 2654435761u) & (ncap - 1); n[i].used; i = (i + 1) & (ncap - 1))
				;
			n[i] = w->comms[j];
		}
		free(w->comms);
		w->comms = n;
		w->comms_cap = ncap;
	}
	if (!w->comms_cap)
		return NULL;
	mask = w->comms_cap - 1;
	for (i = (tid * 2654435761u) & mask; w->comms[i].used; i = (i + 1) & mask)
		if (w->comms[i].tid == tid)
			return &w->comms[i];
	if (!create)
		return NULL;
	w->comms[i].used = true;
	w->comms[i].tid = tid;
	w->comms_used++;
	return &w->comms[i];
}

static void note_comm(struct walk *w, const struct perf_event_header *h)
{
	const char *name = (const char *)h + 16;
	struct comm_ent *c;
	uint32_t tid;

	if (h->size <= 16 || !memchr(name, 0, h->size - 16))
		return;
	memcpy(&tid, (const char *)h + 12, 4);
	c = comm_slot(w, tid, true);
	if (c)
		c->comm = intern(w, name);
}

/* FORK: a new thread starts with its parent's comm. */
static void note_fork(struct walk *w, const struct perf_event_header *h)
{
	uint32_t v[4]; /* pid, ppid, tid, ptid */
	struct comm_ent *parent, *child;
	const char *comm;

	if (h->size < 8 + sizeof(v))
		return;
	memcpy(v, (const char *)h + 8, sizeof(v));
	parent = comm_slot(w, v[3], false);
	if (!parent)
		return;
	comm = parent->comm;
	child = comm_slot(w, v[2], true);
	if (child)
		child->comm = comm;
}

static void note_cgroup(struct walk *w, const struct perf_event_header *h)
{
	const char *path = (const char *)h + 16;
	uint64_t id;

	if (h->size <= 16 || !memchr(path, 0, h->size - 16))
		return;
	memcpy(&id, (const char *)h + 8, 8);
	if (w->nr_cgroups == w->cap_cgroups) {
		size_t n = w->cap_cgroups ? w->cap_cgroups * 2 : 32;
		struct cgroup_ent *c = reallocarray(w->cgroups, n, sizeof(*c));

		if (!c)
			return;
		w->cgroups = c;
		w->cap_cgroups = n;
	}
	w->cgroups[w->nr_cgroups].id = id;
	w->cgroups[w->nr_cgroups].path = strdup(path);
	w->cgroups[w->nr_cgroups].selected = true;
	if (cgroup_select_any(&w->o->select)) {
		struct cgroup_label l;

		cgroup_label_parse(path, &l);
		w->cgroups[w->nr_cgroups].selected = cgroup_select_matches(&w->o->select, path, &l);
	}
	if (w->cgroups[w->nr_cgroups].path)
		w->nr_cgroups++;
}

/* Cgroup @id as the latest CGROUP record named it, or NULL. */
static const struct cgroup_ent *cgroup_find(const struct walk *w, uint64_t id)
{
	for (size_t i = w->nr_cgroups; i-- > 0;)
		if (w->cgroups[i].id == id)
			return &w->cgroups[i];
	return NULL;
}

/* The sample's cgroup @cg is @want or below it. */
static bool cgroup_matches(const struct cgroup_ent *cg, const char *want)
{
	size_t n = strlen(want);

	while (n > 1 && want[n - 1] == '/')
		n--;
	return cg && !strncmp(cg->path, want, n) && (cg->path[n] == 0 || cg->path[n] == '/');
}

static int frames_reserve(struct walk *w, size_t need)
{
	struct pframe *f;
	size_t n = w->cap_frames ? w->cap_frames : 256;

	if (need <= w->cap_frames)
		return 0;
	while (n < need)
		n *= 2;
	f = reallocarray(w->frames, n, sizeof(*f));
	if (!f)
		return -ENOMEM;
	w->frames = f;
	w->cap_frames = n;
	return 0;
}

static const enum pframe_kind kinds[] = {
	[SYM_USER] = PFRAME_USER, [SYM_KERNEL] = PFRAME_KERNEL,
	[SYM_BPF] = PFRAME_BPF, [SYM_UNKNOWN] = PFRAME_UNKNOWN,
};

enum ctx { CTX_USER, CTX_KERNEL, CTX_OTHER };

/* Resolve @ip and append its frames (inlined ones first). */
static int add_frame(struct walk *w, size_t *nr, uint32_t pid, uint64_t ip, enum ctx c, bool ret_addr)
{
	struct sym_frame sf[MAX_INLINE];
	size_t n;

	if (frames_reserve(w, *nr + MAX_INLINE) < 0)
		return -ENOMEM;
	if (c == CTX_OTHER) {
		memset(sf, 0, sizeof(sf[0]));
		sf[0].name = "[unknown]";
		sf[0].kind = SYM_UNKNOWN;
		n = 1;
	} else {
		n = symbolizer__resolve(w->sym, pid, ip, c == CTX_KERNEL, ret_addr, sf, MAX_INLINE);
	}
	for (size_t i = 0; i < n; i++) {
		struct pframe *f = &w->frames[(*nr)++];

		*f = (struct pframe){
			.name = sf[i].name, .module = sf[i].module, .kind = kinds[sf[i].kind],
			.addr = ip, .file = sf[i].file, .line = sf[i].line, .inlined = sf[i].inlined,
			.map_start = sf[i].map_start, .map_end = sf[i].map_end, .map_pgoff = sf[i].map_pgoff,
			.build_id = sf[i].build_id, .build_id_len = sf[i].build_id_len,
		};
		if (!f->module && c == CTX_KERNEL)
			f->module = "[kernel.kallsyms]";
		/* As perf: user-space symbols demangled, the kernel's and BPF's as they are. */
		if (w->dm && f->kind == PFRAME_USER) {
			f->name = demangler__name(w->dm, sf[i].name);
			if (f->name != sf[i].name)
				f->system_name = sf[i].name;
		}
	}
	return 0;
}

static int do_sample(struct walk *w, const struct perfrec_pdreader_attr *a, const char *event,
		     const struct perf_event_header *h)
{
	const struct profile_opts *o = w->o;
	struct perfrec_sample s;
	struct pstack st;
	uint16_t cpumode = h->misc & PERF_RECORD_MISC_CPUMODE_MASK;
	enum ctx c = cpumode == PERF_RECORD_MISC_KERNEL ? CTX_KERNEL :
		     cpumode == PERF_RECORD_MISC_USER ? CTX_USER : CTX_OTHER;
	const struct cgroup_ent *cg = NULL;
	const struct comm_ent *ce;
	uint64_t wall = 0;
	size_t nr = 0;
	/* The first frame of each context is where it was interrupted. */
	bool first = true, context_ip = true;
	int r;

	if (perfrec_sample__parse(h, a->attr.sample_type, a->attr.read_format, &s) < 0) {
		w->unreadable++;  /* left out, and counted for the file's warning */
		return 0;
	}
	if (o->pid >= 0 && s.pid != (uint64_t)o->pid)
		return 0;
	ce = comm_slot(w, s.tid, false);
	if (o->comm && (!ce || !ce->comm || strcmp(ce->comm, o->comm)))
		return 0;
	if (a->attr.sample_type & PERF_SAMPLE_CGROUP)
		cg = cgroup_find(w, s.cgroup);
	if (o->cgroup && !cgroup_matches(cg, o->cgroup))
		return 0;
	if (cgroup_select_any(&o->select) && (!cg || !cg->selected))
		return 0;
	if (w->have_clock)
		wall = w->wall_ns + (s.time - w->clock_ns);
	if ((o->from_wall_ns || o->to_wall_ns) && w->have_clock &&
	    ((o->from_wall_ns && wall < o->from_wall_ns) || (o->to_wall_ns && wall >= o->to_wall_ns)))
		return 0;

	if (s.nr_callchain) {
		for (uint64_t i = 0; i < s.nr_callchain; i++) {
			uint64_t ip = s.callchain[i];

			if (ip >= PERF_CONTEXT_MAX) {
				c = ip == PERF_CONTEXT_KERNEL ? CTX_KERNEL :
				    ip == PERF_CONTEXT_USER ? CTX_USER : CTX_OTHER;
				context_ip = true;
				continue;
			}
			r = add_frame(w, &nr, s.pid, ip, c, !context_ip);
			if (r < 0)
				return r;
			first = false;
			context_ip = false;
		}
	}
	if (first) {
		r = add_frame(w, &nr, s.pid, s.ip, c, false);
		if (r < 0)
			return r;
	}
	st = (struct pstack){
		.event = event, .frames = w->frames, .nr_frames = nr, .period = s.period,
		.pid = s.pid, .tid = s.tid, .comm = ce ? ce->comm : NULL,
		.time = s.time, .wall_ns = wall,
		.cpu = (a->attr.sample_type & PERF_SAMPLE_CPU) ? s.cpu : UINT32_MAX,
		.cgroup = cg ? cg->path : NULL,
	};
	return w->fn(w->ctx, &st);
}

static const char *attr_event_name(const struct perfrec_pdreader_attr *a, char *buf, size_t sz)
{
	if (a->name)
		return a->name;
	if (a->attr.type == PERF_TYPE_SOFTWARE && a->attr.config == PERF_COUNT_SW_CPU_CLOCK)
		return "cpu-clock";
	if (a->attr.type == PERF_TYPE_SOFTWARE && a->attr.config == PERF_COUNT_SW_TASK_CLOCK)
		return "task-clock";
	snprintf(buf, sz, "event-%u:%llu", a->attr.type, (unsigned long long)a->attr.config);
	return buf;
}

/* A record held back until its round is sorted (a copy: the reader's may be scratch). */
struct qrec {
	uint64_t time, seq;
	struct perf_event_header *rec;
};

struct queue {
	struct qrec *v;
	size_t nr, cap;
	uint64_t seq;
	uint64_t max_time;      /* largest time queued so far */
	uint64_t limit;         /* flush up to here at the next round's end */
};

static int qrec_cmp(const void *a, const void *b)
{
	const struct qrec *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

struct file_ctx {
	struct perfrec_pdreader *r;
	size_t nr_attrs;
	bool all_ident;
	char name_buf[64];
};

static const struct perfrec_pdreader_attr *record_attr(const struct file_ctx *fc, const struct perf_event_header *h)
{
	uint64_t id;

	if (fc->nr_attrs == 1)
		return perfrec_pdreader__attr(fc->r, 0);
	if (fc->all_ident && perfrec_event__identifier(h, &id) == 0)
		return perfrec_pdreader__attr_by_id(fc->r, id);
	return NULL;
}

/* The record's time (sample or sample_id trailer); 0 when it has none. */
static uint64_t record_time(const struct file_ctx *fc, const struct perf_event_header *h)
{
	const struct perfrec_pdreader_attr *a = record_attr(fc, h);
	struct perfrec_sample s;
	struct perfrec_sample_id sid;

	if (!a || !(a->attr.sample_type & PERF_SAMPLE_TIME))
		return 0;
	if (h->type == PERF_RECORD_SAMPLE)
		return perfrec_sample__parse(h, a->attr.sample_type, a->attr.read_format, &s) == 0 ? s.time : 0;
	if (!a->attr.sample_id_all)
		return 0;
	return perfrec_sample_id__parse(h, a->attr.sample_type, &sid) == 0 ? sid.time : 0;
}

/* One record, in time order. */
static int process(struct walk *w, struct file_ctx *fc, const struct perf_event_header *h)
{
	const struct perfrec_pdreader_attr *a;
	const char *event;

	switch (h->type) {
	case PERF_RECORD_SAMPLE:
		break;
	case PERF_RECORD_COMM:
		note_comm(w, h);
		symbolizer__note_record(w->sym, h);
		return 0;
	case PERF_RECORD_FORK:
		note_fork(w, h);
		symbolizer__note_record(w->sym, h);
		return 0;
	case PERF_RECORD_CGROUP:
		note_cgroup(w, h);
		return 0;
	default:
		symbolizer__note_record(w->sym, h);
		return 0;
	}
	a = record_attr(fc, h);
	if (!a) {
		w->unreadable++;
		return 0;
	}
	event = intern(w, attr_event_name(a, fc->name_buf, sizeof(fc->name_buf)));
	if (!event)
		return -ENOMEM;
	if (w->o->event && strcmp(event, w->o->event))
		return 0;
	return do_sample(w, a, event, h);
}

/* Process queued records up to @limit (all with UINT64_MAX), as perf's ordered events do. */
static int flush(struct walk *w, struct file_ctx *fc, struct queue *q, uint64_t limit)
{
	size_t i, j = 0;
	int ret = 0;

	if (!q->nr)
		return 0;
	qsort(q->v, q->nr, sizeof(*q->v), qrec_cmp);
	for (i = 0; i < q->nr && q->v[i].time <= limit; i++) {
		if (!ret)
			ret = process(w, fc, q->v[i].rec);
		free(q->v[i].rec);
	}
	for (; i < q->nr; i++)
		q->v[j++] = q->v[i];
	q->nr = j;
	return ret;
}

static int enqueue(struct queue *q, const struct perf_event_header *h, uint64_t time)
{
	struct qrec *e;

	if (q->nr == q->cap) {
		size_t n = q->cap ? q->cap * 2 : 1024;
		struct qrec *v = reallocarray(q->v, n, sizeof(*v));

		if (!v)
			return -ENOMEM;
		q->v = v;
		q->cap = n;
	}
	e = &q->v[q->nr];
	e->rec = malloc(h->size);
	if (!e->rec)
		return -ENOMEM;
	memcpy(e->rec, h, h->size);
	e->time = time;
	e->seq = q->seq++;
	if (time > q->max_time)
		q->max_time = time;
	q->nr++;
	return 0;
}

/*
 * Records within a round are in per-CPU order, not time order: a process's
 * exec and mmaps can sit after its first samples from another CPU.  As perf
 * does, hold records back and, at each FINISHED_ROUND, process those up to
 * the largest time the previous round had seen, sorted.
 */
static int walk_file(struct walk *w, const char *path)
{
	struct perfrec_pdreader_opts ro = { .sz = sizeof(ro) };
	struct file_ctx fc = { 0 };
	struct queue q = { 0 };
	const struct perf_event_header *h;
	const void *data;
	size_t len;
	uint64_t off;
	int ret, r2;

	ret = perfrec_pdreader__open(path, &ro, &fc.r);
	if (ret < 0) {
		fprintf(stderr, "%s: cannot open: %s\n", path, strerror(-ret));
		return ret;
	}
	symbolizer__reset_maps(w->sym);
	if (perfrec_pdreader__feature(fc.r, PERFREC_FEAT_BUILD_ID, &data, &len) == 0 &&
	    symbolizer__add_build_ids(w->sym, data, len) < 0)
		fprintf(stderr, "%s: the build-id table is malformed; using its entries before the damage\n", path);
	w->have_clock = false;
	w->unreadable = 0;
	if (perfrec_pdreader__feature(fc.r, PERFREC_FEAT_CLOCK_DATA, &data, &len) == 0 && len >= 24) {
		memcpy(&w->wall_ns, (const char *)data + 8, 8);
		memcpy(&w->clock_ns, (const char *)data + 16, 8);
		w->have_clock = true;
	}
	/* A window the file's samples (SAMPLE_TIME: first, last) all miss: not walked at all. */
	if (w->have_clock && (w->o->from_wall_ns || w->o->to_wall_ns) &&
	    perfrec_pdreader__feature(fc.r, PERFREC_FEAT_SAMPLE_TIME, &data, &len) == 0 && len >= 16) {
		uint64_t first, last;

		memcpy(&first, data, 8);
		memcpy(&last, (const char *)data + 8, 8);
		first = w->wall_ns + (first - w->clock_ns);
		last = w->wall_ns + (last - w->clock_ns);
		if ((w->o->to_wall_ns && first >= w->o->to_wall_ns) || (w->o->from_wall_ns && last < w->o->from_wall_ns)) {
			perfrec_pdreader__free(fc.r);
			return 0;
		}
	}
	fc.nr_attrs = perfrec_pdreader__nr_attrs(fc.r);
	fc.all_ident = fc.nr_attrs > 0;
	for (size_t i = 0; i < fc.nr_attrs; i++)
		if (!(perfrec_pdreader__attr(fc.r, i)->attr.sample_type & PERF_SAMPLE_IDENTIFIER))
			fc.all_ident = false;

	while ((ret = perfrec_pdreader__next(fc.r, &h, &off)) > 0) {
		if (h->type == PERFREC_RECORD_FINISHED_ROUND) {
			ret = flush(w, &fc, &q, q.limit);
			q.limit = q.max_time;
		} else if (h->type == PERFREC_RECORD_HEADER_BUILD_ID) {
			symbolizer__add_build_ids(w->sym, h, h->size);
			ret = 0;
		} else if (h->type < PERFREC_RECORD_HEADER_ATTR) {
			ret = enqueue(&q, h, record_time(&fc, h));
		} else {
			ret = 0;
		}
		if (ret)
			break;
	}
	/* What the file holds up to its end or its damage still counts. */
	if (ret <= 0 && ret != -ENOMEM) {
		r2 = flush(w, &fc, &q, UINT64_MAX);
		if (r2)
			ret = r2;
	}
	for (size_t i = 0; i < q.nr; i++)
		free(q.v[i].rec);
	if (w->unreadable)
		fprintf(stderr, "%s: %llu damaged samples (too short for their event, or of no event the file declares) left out\n",
			path, (unsigned long long)w->unreadable);
	if (ret < 0 && ret != -ENOMEM) {
		uint64_t eoff;
		const char *msg = perfrec_pdreader__error(fc.r, &eoff);

		fprintf(stderr, "%s: damaged at offset %llu: %s\n", path, (unsigned long long)eoff,
			*msg ? msg : strerror(-ret));
	} else if (ret == -ENOMEM) {
		fprintf(stderr, "%s: out of memory\n", path);
	}
	free(q.v);
	perfrec_pdreader__free(fc.r);
	return ret;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A directory: its published *.data files, oldest (by name) first. */
static int walk_dir(struct walk *w, const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char **names = NULL;
	size_t nr = 0, cap = 0;
	int ret = 0;

	if (!d) {
		ret = -errno;
		fprintf(stderr, "%s: cannot open directory: %s\n", dir, strerror(-ret));
		return ret;
	}
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		char **n;

		if (l < 6 || strcmp(de->d_name + l - 5, ".data"))
			continue;
		if (nr == cap) {
			cap = cap ? cap * 2 : 16;
			n = reallocarray(names, cap, sizeof(*names));
			if (!n) {
				ret = -ENOMEM;
				break;
			}
			names = n;
		}
		if (asprintf(&names[nr], "%s/%s", dir, de->d_name) < 0) {
			ret = -ENOMEM;
			break;
		}
		nr++;
	}
	closedir(d);
	if (!ret)
		qsort(names, nr, sizeof(*names), name_cmp);
	for (size_t i = 0; i < nr && !ret; i++)
		ret = walk_file(w, names[i]);
	for (size_t i = 0; i < nr; i++)
		free(names[i]);
	free(names);
	return ret;
}

/*
 * Without --buildid-dir, the build-id cache perfrecd keeps by default in
 * its output directory: the first input that is, or sits in, a directory
 * with a .build-id inside.  @buf receives it; NULL when there is none.
 */
static const char *recordings_buildid_dir(const char *const *paths, size_t nr_paths, char *buf, size_t len)
{
	char bid[PATH_MAX + 16];
	struct stat st;

	for (size_t i = 0; i < nr_paths; i++) {
		const char *slash = strrchr(paths[i], '/');
		int n;

		if (stat(paths[i], &st) == 0 && S_ISDIR(st.st_mode))
			n = snprintf(buf, len, "%s", paths[i]);
		else
			n = slash ? snprintf(buf, len, "%.*s", (int)(slash - paths[i]), paths[i]) : snprintf(buf, len, ".");
		if (n < 0 || (size_t)n >= len || (size_t)snprintf(bid, sizeof(bid), "%s/.build-id", buf) >= sizeof(bid))
			continue;
		if (lstat(bid, &st) == 0 && S_ISDIR(st.st_mode))
			return buf;
	}
	return NULL;
}

int profile_walk(const char *const *paths, size_t nr_paths, const struct profile_opts *o,
		 profile_stack_fn fn, void *ctx)
{
	char bdir[PATH_MAX];
	struct symbolizer_opts so = {
		.sz = sizeof(so), .symfs = o->symfs, .no_debuginfod = o->no_debuginfod,
		.no_inline = o->no_inline,
		.buildid_dir = o->buildid_dir ? o->buildid_dir
					      : recordings_buildid_dir(paths, nr_paths, bdir, sizeof(bdir)),
	};
	struct walk w = { .o = o, .fn = fn, .ctx = ctx };
	int ret = symbolizer__new(&so, &w.sym);

	if (ret < 0) {
		fprintf(stderr, "Cannot set up the symbolizer: %s\n", strerror(-ret));
		return ret;
	}
	if (!o->no_demangle && !(w.dm = demangler__new())) {
		fprintf(stderr, "Cannot set up the demangler: %s\n", strerror(ENOMEM));
		symbolizer__free(w.sym);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nr_paths && !ret; i++) {
		struct stat st;

		if (stat(paths[i], &st) == 0 && S_ISDIR(st.st_mode))
			ret = walk_dir(&w, paths[i]);
		else
			ret = walk_file(&w, paths[i]);
	}
	symbolizer__free(w.sym);
	demangler__free(w.dm);
	free(w.comms);
	for (size_t i = 0; i < w.nr_cgroups; i++)
		free(w.cgroups[i].path);
	free(w.cgroups);
	free(w.frames);
	for (size_t i = 0; i < w.strs_cap; i++)
		free(w.strs[i]);
	free(w.strs);
	return ret;
}
