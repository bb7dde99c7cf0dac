/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The user side of the walk of Python frames at the sample (pywalk.h):
 * loads lib/bpf/pywalk.bpf.c, attaches it to the sampling events, keeps
 * its map of processes, and reads its ring into per-CPU queues of walks
 * which pywalk_take() joins to samples.
 *
 * A queue holds the walks of one CPU in time order, waiting for the
 * samples they were taken for; the pipeline reads a CPU's samples later
 * than the kernel wrote them, so a queue must span that lag: it grows up
 * to QUEUE_MAX walks, past which the oldest are pushed out (unjoined).
 * Queues are made on the first walk of their CPU, and each walk takes
 * only the bytes of its frames; past QUEUED_MAX bytes on all CPUs, a
 * CPU's oldest walk makes room for its new one.
 *
 * The kernel has no way to take a program off a perf event but closing
 * the event: pywalk_free() empties the map of processes, so the program
 * stops walking at once, and the events' owner closes them.
 */
#include <errno.h>
#include <linux/types.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/perf_event.h>

#include "perfrec/common.h"
#include "pywalk.h"
#include "../lib/bpf/pywalk-abi.h"
#include "pywalk.skel.h"

#define RING_BYTES (4u << 20)
#define QUEUE_MIN 64
#define QUEUE_MAX 16384
/* Bytes of walks queued on all CPUs together, at most. */
#define QUEUED_MAX (32u << 20)

/* The record the program writes is struct pywalk_rec, cut after its frames. */
_Static_assert(sizeof(struct pywalk_abi_rec) == sizeof(struct pywalk_rec), "pywalk_rec");
_Static_assert(offsetof(struct pywalk_abi_rec, frames) == offsetof(struct pywalk_rec, frames),
	       "pywalk_rec.frames");
_Static_assert(offsetof(struct pywalk_abi_rec, nr) == offsetof(struct pywalk_rec, nr), "nr");
_Static_assert(sizeof(struct pywalk_abi_frame) == sizeof(struct pywalk_frame), "frame");
_Static_assert(PYWALK_ABI_MAX_FRAMES == PYWALK_MAX_FRAMES, "max frames");
_Static_assert(PYWALK_ABI_TRUNCATED == PYWALK_TRUNCATED && PYWALK_ABI_TORN == PYWALK_TORN &&
	       PYWALK_ABI_NO_TSTATE == PYWALK_NO_TSTATE && PYWALK_ABI_F_ENTRY == PYWALK_F_ENTRY,
	       "flags");
_Static_assert(PYWALK_ABI_OFF_NONE == PYPROC_OFF_NONE, "none");

#define REC_HEAD offsetof(struct pywalk_rec, frames)

/* The walks of one CPU, oldest first, a ring of pointers. */
struct walkq {
	struct pywalk_rec **w;
	size_t head, len, cap;
};

/* A process added, with its layout (pywalk_process_info()). */
struct known {
	pid_t pid;
	struct pyproc_info *info;
};

struct pywalk {
	struct pywalk_bpf *skel;
	struct ring_buffer *ring;
	struct walkq *q;
	size_t nr_cpus;
	/* take() on the pipeline's thread, add/remove on the drain's, stats on any */
	pthread_mutex_t lock;
	size_t queued;          /* bytes of the walks in the queues */
	struct known *known;    /* the processes added, by pid */
	size_t nr_known;
	struct pywalk_stats st;
	struct pywalk_rec out;  /* what pywalk_take() returned last */
};

static int silent_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return 0;
}

static struct pywalk_rec *q_at(const struct walkq *q, size_t i)
{
	return q->w[(q->head + i) % q->cap];
}

static size_t rec_len(const struct pywalk_rec *w)
{
	return REC_HEAD + (size_t)w->nr * sizeof(struct pywalk_frame);
}

static void q_pop(struct pywalk *pw, struct walkq *q)
{
	pw->queued -= rec_len(q->w[q->head]);
	free(q->w[q->head]);
	q->head = (q->head + 1) % q->cap;
	q->len--;
}

static int q_grow(struct walkq *q)
{
	size_t cap = q->cap ? q->cap * 2 : QUEUE_MIN;
	struct pywalk_rec **w = calloc(cap, sizeof(*w));

	if (!w)
		return -ENOMEM;
	for (size_t i = 0; i < q->len; i++)
		w[i] = q_at(q, i);
	free(q->w);
	q->w = w;
	q->head = 0;
	q->cap = cap;
	return 0;
}

/* Queues W in time order (the ring is, per CPU, but for nested programs). */
static void q_push(struct pywalk *pw, struct walkq *q, struct pywalk_rec *w)
{
	size_t i;

	while (q->len && (q->len == QUEUE_MAX || pw->queued + rec_len(w) > QUEUED_MAX)) {
		q_pop(pw, q);
		pw->st.unjoined++;
	}
	if ((q->len == q->cap && q_grow(q) < 0) || pw->queued + rec_len(w) > QUEUED_MAX) {
		free(w);
		pw->st.unjoined++;
		return;
	}
	pw->queued += rec_len(w);
	for (i = q->len; i > 0 && q_at(q, i - 1)->time > w->time; i--)
		q->w[(q->head + i) % q->cap] = q_at(q, i - 1);
	q->w[(q->head + i) % q->cap] = w;
	q->len++;
}

static int take_record(void *ctx, void *data, size_t size)
{
	const struct pywalk_rec *r = data;
	struct pywalk *pw = ctx;
	struct pywalk_rec *w;
	size_t len;

	if (size < REC_HEAD)
		return 0;
	len = REC_HEAD + (size_t)r->nr * sizeof(struct pywalk_frame);
	if (r->nr > PYWALK_MAX_FRAMES || size < len || r->cpu >= pw->nr_cpus)
		return 0;
	w = malloc(len);
	if (!w)
		return 0;
	memcpy(w, r, len);
	pw->st.walks++;
	pw->st.torn += !!(w->flags & PYWALK_TORN);
	pw->st.truncated += !!(w->flags & PYWALK_TRUNCATED);
	q_push(pw, &pw->q[w->cpu], w);
	return 0;
}

int pywalk_attach(struct pywalk *pw, const int *fds, size_t nr)
{
	int prog;

	if (!pw || (nr && !fds))
		return -EINVAL;
	prog = bpf_program__fd(pw->skel->progs.pywalk);
	for (size_t i = 0; i < nr; i++)
		if (ioctl(fds[i], PERF_EVENT_IOC_SET_BPF, prog) < 0)
			return -errno;
	return 0;
}

int pywalk_open(const struct pywalk_opts *opts, struct pywalk **ret)
{
	size_t max_procs = PERFREC_OPTS_GET(opts, max_procs, 0);
	const int *fds = PERFREC_OPTS_GET(opts, fds, NULL);
	size_t nr_fds = PERFREC_OPTS_GET(opts, nr_fds, 0);
	struct pywalk *pw;
	int r, cpus;

	if (!PERFREC_OPTS_VALID(opts, struct pywalk_opts) || (nr_fds && !fds) || !ret)
		return -EINVAL;
	cpus = libbpf_num_possible_cpus();
	if (cpus <= 0)
		return cpus < 0 ? cpus : -EINVAL;
	pw = calloc(1, sizeof(*pw));
	if (!pw)
		return -ENOMEM;
	pw->nr_cpus = (size_t)cpus;
	pthread_mutex_init(&pw->lock, NULL);
	pw->q = calloc(pw->nr_cpus, sizeof(*pw->q));
	libbpf_set_print(silent_print);
	pw->skel = pw->q ? pywalk_bpf__open() : NULL;
	if (!pw->skel) {
		r = pw->q ? -errno : -ENOMEM;
		goto fail;
	}
	r = bpf_map__set_max_entries(pw->skel->maps.procs, max_procs ? (uint32_t)max_procs : 4096);
	if (!r)
		r = bpf_map__set_max_entries(pw->skel->maps.walks, RING_BYTES);
	if (!r)
		r = pywalk_bpf__load(pw->skel);
	if (r < 0)
		goto fail;
	pw->ring = ring_buffer__new(bpf_map__fd(pw->skel->maps.walks), take_record, pw, NULL);
	if (!pw->ring) {
		r = -errno;
		goto fail;
	}
	r = pywalk_attach(pw, fds, nr_fds);
	if (r < 0)
		goto fail;
	*ret = pw;
	return 0;
fail:
	pywalk_free(pw);
	return r < 0 ? r : -EINVAL;
}

/* Every process out of the map: the program, still on the events, stops walking. */
static void forget_all(struct pywalk *pw)
{
	int fd = bpf_map__fd(pw->skel->maps.procs);
	uint32_t key;

	while (bpf_map_get_next_key(fd, NULL, &key) == 0)
		if (bpf_map_delete_elem(fd, &key) < 0)
			break;
}

void pywalk_free(struct pywalk *pw)
{
	if (!pw)
		return;
	if (pw->skel && pw->skel->maps.procs && bpf_map__fd(pw->skel->maps.procs) >= 0)
		forget_all(pw);
	ring_buffer__free(pw->ring);
	pywalk_bpf__destroy(pw->skel);
	for (size_t c = 0; pw->q && c < pw->nr_cpus; c++) {
		while (pw->q[c].len)
			q_pop(pw, &pw->q[c]);
		free(pw->q[c].w);
	}
	free(pw->q);
	for (size_t i = 0; i < pw->nr_known; i++)
		free(pw->known[i].info);
	free(pw->known);
	pthread_mutex_destroy(&pw->lock);
	free(pw);
}

/* The end of the frame's members the walk reads, or 0 when one is missing. */
static uint32_t frame_read(const struct pyproc_offsets *o, uint32_t instr_size)
{
	const uint32_t end[] = {
		o->frame_previous + 8, o->frame_code + 8, o->frame_instr + instr_size,
		o->frame_owner == PYPROC_OFF_NONE ? 0 : o->frame_owner + 1,
		o->frame_is_entry == PYPROC_OFF_NONE ? 0 : o->frame_is_entry + 1,
	};
	uint32_t max = 0;

	if (o->frame_previous == PYPROC_OFF_NONE || o->frame_code == PYPROC_OFF_NONE ||
	    o->frame_instr == PYPROC_OFF_NONE)
		return 0;
	for (size_t i = 0; i < sizeof(end) / sizeof(end[0]); i++)
		if (end[i] > max)
			max = end[i];
	return (max + 7) & ~7u;
}

static int to_abi(const struct pyproc_info *info, struct pywalk_abi_proc *p)
{
	const struct pyproc_offsets *o = &info->off;
	const uint32_t need[] = {
		o->runtime_interp_head, o->interp_threads_head, o->tstate_next,
		o->tstate_thread_id, o->tstate_frame,
	};

	if (info->status != PYPROC_OK || info->major != 3 || info->minor < 10 ||
	    info->minor > 13 || !info->runtime_addr)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++)
		if (need[i] > (1u << 20))
			return -EINVAL;
	/* 3.11-12 go through the cframe; 3.12+ need owner for the shims. */
	if ((info->minor == 11 || info->minor == 12) &&
	    o->cframe_current_frame == PYPROC_OFF_NONE)
		return -EINVAL;
	if (info->minor >= 12 && o->frame_owner == PYPROC_OFF_NONE)
		return -EINVAL;
	memset(p, 0, sizeof(*p));
	p->runtime = info->runtime_addr;
	p->minor = info->minor;
	p->instr_size = info->minor == 10 ? 4 : 8;
	p->frame_read = frame_read(o, p->instr_size);
	if (p->frame_read < 8 || p->frame_read > PYWALK_ABI_FRAME_READ)
		return -EINVAL;
	p->runtime_interp_head = o->runtime_interp_head;
	p->interp_threads_head = o->interp_threads_head;
	p->tstate_next = o->tstate_next;
	p->tstate_thread_id = o->tstate_thread_id;
	p->tstate_frame = o->tstate_frame;
	p->cframe_current_frame = info->minor == 11 || info->minor == 12 ?
		o->cframe_current_frame : PYWALK_ABI_OFF_NONE;
	p->frame_previous = o->frame_previous;
	p->frame_code = o->frame_code;
	p->frame_instr = o->frame_instr;
	p->frame_owner = o->frame_owner;
	p->frame_is_entry = info->minor == 11 ? o->frame_is_entry : PYWALK_ABI_OFF_NONE;
	return 0;
}

/* Where @pid is among the known processes, or would go; under the lock. */
static size_t known_pos(const struct pywalk *pw, pid_t pid, bool *found)
{
	size_t lo = 0, hi = pw->nr_known;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pw->known[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = lo < pw->nr_known && pw->known[lo].pid == pid;
	return lo;
}

/* @pid's layout noted (a copy), replacing an older one; under the lock. */
static int know(struct pywalk *pw, pid_t pid, const struct pyproc_info *info)
{
	bool found;
	size_t at = known_pos(pw, pid, &found);
	struct pyproc_info *copy = malloc(sizeof(*copy));
	struct known *k;

	if (!copy)
		return -ENOMEM;
	*copy = *info;
	if (found) {
		free(pw->known[at].info);
		pw->known[at].info = copy;
		return 0;
	}
	k = realloc(pw->known, (pw->nr_known + 1) * sizeof(*k));
	if (!k) {
		free(copy);
		return -ENOMEM;
	}
	pw->known = k;
	memmove(k + at + 1, k + at, (pw->nr_known - at) * sizeof(*k));
	k[at] = (struct known){ .pid = pid, .info = copy };
	pw->nr_known++;
	return 0;
}

static void forget(struct pywalk *pw, pid_t pid)
{
	bool found;
	size_t at = known_pos(pw, pid, &found);

	if (!found)
		return;
	free(pw->known[at].info);
	memmove(pw->known + at, pw->known + at + 1, (pw->nr_known - at - 1) * sizeof(*pw->known));
	pw->nr_known--;
}

int pywalk_add_process(struct pywalk *pw, pid_t pid, const struct pyproc_info *info)
{
	struct pywalk_abi_proc p;
	uint32_t key = (uint32_t)pid;
	bool fresh;
	int fd, r;

	if (!pw || !info || pid <= 0)
		return -EINVAL;
	r = to_abi(info, &p);
	if (r < 0)
		return r;
	fd = bpf_map__fd(pw->skel->maps.procs);
	r = bpf_map_update_elem(fd, &key, &p, BPF_NOEXIST) < 0 ? -errno : 0;
	fresh = r == 0;
	if (r == -EEXIST)
		r = bpf_map_update_elem(fd, &key, &p, BPF_EXIST) < 0 ? -errno : 0;
	pthread_mutex_lock(&pw->lock);
	if (r == 0 && know(pw, pid, info) < 0) {
		/* Walks the stage could not name are no use: none. */
		bpf_map_delete_elem(fd, &key);
		forget(pw, pid);
		r = -ENOMEM;
		fresh = false;
	}
	if (fresh)
		pw->st.procs++;
	else if (r == -E2BIG || r == -ENOMEM)
		pw->st.procs_refused++;
	pthread_mutex_unlock(&pw->lock);
	return r;
}

void pywalk_remove_process(struct pywalk *pw, pid_t pid)
{
	uint32_t key = (uint32_t)pid;
	bool gone;

	if (!pw || pid <= 0)
		return;
	gone = bpf_map_delete_elem(bpf_map__fd(pw->skel->maps.procs), &key) == 0;
	pthread_mutex_lock(&pw->lock);
	forget(pw, pid);
	if (gone && pw->st.procs)
		pw->st.procs--;
	pthread_mutex_unlock(&pw->lock);
}

int pywalk_process_info(struct pywalk *pw, pid_t pid, struct pyproc_info *ret)
{
	bool found;
	size_t at;

	if (!pw || !ret)
		return -EINVAL;
	pthread_mutex_lock(&pw->lock);
	at = known_pos(pw, pid, &found);
	if (found)
		*ret = *pw->known[at].info;
	pthread_mutex_unlock(&pw->lock);
	return found ? 0 : -ENOENT;
}

static uint64_t distance(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

static const struct pywalk_rec *take(struct pywalk *pw, uint32_t cpu, uint32_t tid, uint64_t time)
{
	size_t best = SIZE_MAX, drop = 0;
	uint64_t best_d = UINT64_MAX;
	struct walkq *q;

	if (!pw)
		return NULL;
	ring_buffer__consume(pw->ring);
	if (cpu >= pw->nr_cpus)
		return NULL;
	q = &pw->q[cpu];
	/* The walk of TID nearest the sample, either side, within the window. */
	for (size_t i = 0; i < q->len && q_at(q, i)->time <= time + PYWALK_JOIN_WINDOW_NS; i++) {
		const struct pywalk_rec *w = q_at(q, i);
		uint64_t d = distance(w->time, time);

		if (w->time <= time)
			drop = i + 1;
		if (w->tid == tid && d <= PYWALK_JOIN_WINDOW_NS && d < best_d) {
			best = i;
			best_d = d;
		}
	}
	/*
	 * Samples of a CPU come in time order: the walks before this one's,
	 * or no later than the sample when it has none, no sample will take.
	 */
	if (best != SIZE_MAX)
		drop = best + 1;
	for (size_t i = 0; i < drop; i++) {
		struct pywalk_rec *w = q_at(q, 0);

		if (i == best) {
			memcpy(&pw->out, w, rec_len(w));
			pw->st.joined++;
		} else {
			pw->st.unjoined++;
		}
		q_pop(pw, q);
	}
	return best == SIZE_MAX ? NULL : &pw->out;
}

const struct pywalk_rec *pywalk_take(struct pywalk *pw, uint32_t cpu, uint32_t tid, uint64_t time)
{
	const struct pywalk_rec *w;

	if (!pw)
		return NULL;
	pthread_mutex_lock(&pw->lock);
	w = take(pw, cpu, tid, time);
	pthread_mutex_unlock(&pw->lock);
	return w;
}

void pywalk_get_stats(const struct pywalk *pw, struct pywalk_stats *ret)
{
	uint64_t *lost;
	uint32_t zero = 0;

	memset(ret, 0, sizeof(*ret));
	if (!pw)
		return;
	pthread_mutex_lock((pthread_mutex_t *)&pw->lock);
	*ret = pw->st;
	pthread_mutex_unlock((pthread_mutex_t *)&pw->lock);
	lost = calloc(pw->nr_cpus, sizeof(*lost));
	if (lost && bpf_map__lookup_elem(pw->skel->maps.lost, &zero, sizeof(zero), lost,
					 pw->nr_cpus * sizeof(*lost), 0) == 0)
		for (size_t c = 0; c < pw->nr_cpus; c++)
			ret->ring_lost += lost[c];
	free(lost);
}
