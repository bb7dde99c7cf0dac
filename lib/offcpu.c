// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Off-CPU profiling in user space: loads lib/bpf/offcpu.bpf.c through its
 * generated skeleton (build/offcpu.skel.h), attaches it to sched_switch,
 * and at each file end turns the kernel's aggregated (thread, stacks) ->
 * blocked-ns map into "offcpu-time" samples.  Reasons BPF cannot be used
 * (no BTF, missing capabilities, an old kernel) come back as one line for
 * the daemon to log, because on-CPU recording must go on without it.
 *
 * Whole stacks (opts->whole_stacks): sampled blocks come through a ring
 * instead, as a copy of the user registers and stack when the thread
 * blocks and a wake record with the blocked time when it is back.  A
 * thread of ours ("offcpu-unwind") reads the ring, unwinds each copy at
 * once with a perfrec_unwinder of its own fed from /proc/PID/maps, keeps
 * the chain until the wake, and sums the blocks per thread and path for
 * the next drain.  The unwinder, the chains waiting and the maps cache
 * are used only while holding oc->reading (the thread, or a drain that
 * reads the ring last); the summed samples and the counts are under
 * oc->lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <stddef.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <perfrec/evlist.h>
#include <perfrec/offcpu.h>
#include <perfrec/unwind.h>

#include "offcpu.skel.h"

/* Layout of the BPF program's map key (struct offcpu_key there). */
struct perfrec_offcpu_key {
	uint32_t pid;
	uint32_t tid;
	int32_t kstack_id;
	int32_t ustack_id;
	uint32_t state;
	uint32_t cpu;
};

/* Ring records of the BPF program in whole-stack mode (struct ucopy, uwake there). */
#define COPY_STACK 8192
#define NR_PT_REGS 21
#define REC_COPY 1
#define REC_WAKE 2
struct perfrec_offcpu_copy {
	uint32_t kind, tid;
	uint64_t ts;
	uint32_t pid, pad;
	uint64_t start_time, exe_ino;
	uint64_t regs[NR_PT_REGS];
	uint64_t len;
	unsigned char stack[];
};

struct perfrec_offcpu_wake {
	uint32_t kind, tid;
	uint64_t ts, delta;
	uint32_t pid;
	int32_t kstack_id, ustack_id;
	uint32_t state, cpu, pad;
};

#define COPIES_RING (4u << 20)          /* ~500 copies of 8 KiB the thread has not read yet */
#define DEFAULT_COPIES_PER_SEC 256
/*
 * The ring is read this often (the program wakes the reader only when it
 * fills), and at each drain: soon enough that few processes exit between
 * a block and the reading of its copy, which then cannot be unwound.
 */
#define POLL_MS 20
#define COPY_GAP_NS (10 * 1000000ull)   /* one thread: one copy per 10 ms at most */
#define SPACE_TTL_NS 1000000000ull      /* a process's mappings, looked at again after that */
#define SPACE_FORGET_NS (60 * 1000000000ull) /* ... forgotten when not used for that */
#define MAPS_MAX (16u << 20)            /* /proc/PID/maps read at most */
#define PEND_BUCKETS 1024
/*
 * Unwound copies waiting for their thread to come back: a thread blocked
 * for hours keeps one, so the oldest go when there are this many (that
 * block then keeps its frame-pointer stack).
 */
#define PEND_MAX 4096

/* An unwound copy waiting for its wake record. */
struct pend {
	struct pend *hnext;              /* hash chain */
	struct pend *older, *newer;      /* age list */
	uint32_t tid;
	uint64_t ts;
	uint32_t nr;                     /* user frames (0: not unwound) */
	uint64_t frames[];
};
#define AGG_BUCKETS 4096
#define AGG_MAX 65536                   /* distinct whole-stack samples in one file */
#define SAMPLE_MAX (sizeof(struct perf_event_header) + 7 * 8 + 8 * 2 * (PERFREC_OFFCPU_MAX_STACK + 1))

/* A process whose mappings the unwinder got from /proc. */
struct space_seen {
	uint32_t pid;
	bool ok;
	uint64_t start_time, exe_ino; /* the process they are of */
	uint64_t maps_hash;           /* of /proc/PID/maps as fed */
	uint64_t checked;             /* when maps were last compared */
	uint64_t when;                /* last used */
};

/* A whole-stack sample, summed with the blocks of the same thread and path. */
struct agg_entry {
	struct agg_entry *next;
	uint64_t hash;
	uint64_t rec[];          /* the sample record; id and time set at drain */
};

struct perfrec_offcpu {
	struct offcpu_bpf *skel;
	/* Whole stacks: the copies ring, read and unwound by a thread of ours. */
	struct ring_buffer *ring;
	struct perfrec_unwinder *unwinder;
	pthread_t thread;
	bool thread_started;
	bool stop;                        /* __atomic */
	int kfd, ufd;
	struct space_seen *seen;
	size_t nr_seen, cap_seen;
	char *maps;
	size_t cap_maps;
	uint64_t *kips, *uips;
	uint64_t *dwarf, *out;            /* a copy dressed as a DWARF sample; a sample */
	struct pend *pend[PEND_BUCKETS];
	struct pend *oldest, *newest;
	size_t nr_pend;
	pthread_mutex_t reading;          /* held while the ring is read */
	/* Under lock: the samples waiting for the next drain, and the counts. */
	pthread_mutex_t lock;
	struct agg_entry *agg[AGG_BUCKETS];
	size_t nr_agg;
	uint64_t whole, kept_fp, gone, evicted, agg_full;
};

void perfrec_offcpu__attr(struct perf_event_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->type = PERF_TYPE_SOFTWARE;
	attr->config = PERF_COUNT_SW_BPF_OUTPUT;
	attr->size = sizeof(*attr);
	attr->sample_period = 1;
	attr->sample_type = PERFREC_OFFCPU_SAMPLE_TYPE;
	attr->disabled = 1;
}

size_t perfrec_offcpu__sample_size(const struct perfrec_offcpu_entry *e)
{
	size_t nr;

	if (e->nr_kernel > PERFREC_OFFCPU_MAX_STACK || e->nr_user > PERFREC_OFFCPU_MAX_STACK)
		return 0;
	/* Each non-empty stack is preceded by its PERF_CONTEXT_* marker. */
	nr = (e->nr_kernel ? e->nr_kernel + 1 : 0) + (e->nr_user ? e->nr_user + 1 : 0);
	/* header, id, ip, pid/tid, time, cpu/res, period, nr, ips */
	return sizeof(struct perf_event_header) + 7 * sizeof(uint64_t) + nr * sizeof(uint64_t);
}

int perfrec_offcpu__encode_sample(void *buf, size_t size, const struct perfrec_offcpu_entry *e,
				  uint64_t id, uint64_t time)
{
	size_t need = perfrec_offcpu__sample_size(e);
	struct perf_event_header *h = buf;
	uint64_t *p = (uint64_t *)(h + 1);
	uint64_t *nr;

	if (need == 0 || e->period == 0)
		return -EINVAL;
	if (size < need)
		return -ENOSPC;
	h->type = PERF_RECORD_SAMPLE;
	/* Where it blocked: user code is what the reader wants to see first. */
	h->misc = e->nr_user ? PERF_RECORD_MISC_USER : PERF_RECORD_MISC_KERNEL;
	h->size = (uint16_t)need;
	*p++ = id;
	*p++ = e->nr_user ? e->user[0] : e->nr_kernel ? e->kernel[0] : 0;
	*p++ = (uint64_t)e->pid | (uint64_t)e->tid << 32;
	*p++ = time;
	*p++ = (uint64_t)e->cpu;                 /* cpu, res = 0 */
	*p++ = e->period;
	nr = p++;
	*nr = 0;
	if (e->nr_kernel) {
		*p++ = PERF_CONTEXT_KERNEL;
		memcpy(p, e->kernel, e->nr_kernel * sizeof(uint64_t));
		p += e->nr_kernel;
		*nr += e->nr_kernel + 1;
	}
	if (e->nr_user) {
		*p++ = PERF_CONTEXT_USER;
		memcpy(p, e->user, e->nr_user * sizeof(uint64_t));
		p += e->nr_user;
		*nr += e->nr_user + 1;
	}
	return (int)need;
}

static int silent_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return 0;
}

static int cgroup_id_of(const char *path, uint64_t *ret_id)
{
	char buf[4096];
	struct stat st;

	if (path[0] != '/') {
		snprintf(buf, sizeof(buf), "/sys/fs/cgroup/%s", path);
		path = buf;
	}
	if (stat(path, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	/* On cgroup v2 the directory's inode number is the cgroup id. */
	*ret_id = st.st_ino;
	return 0;
}

/* Remove every stack of the map @fd. */
static void clear_stacks(int fd)
{
	uint32_t id, next;
	bool first = true;

	while (bpf_map_get_next_key(fd, first ? NULL : &id, &next) == 0) {
		if (!first)
			bpf_map_delete_elem(fd, &id);
		id = next;
		first = false;
	}
	if (!first)
		bpf_map_delete_elem(fd, &id);
}

/* Frames of stack @id, innermost first; a lookup miss (id < 0) is empty. */
static uint32_t read_stack(int fd, int32_t id, uint64_t *ips)
{
	uint32_t n = 0;

	if (id < 0)
		return 0;
	memset(ips, 0, PERFREC_OFFCPU_MAX_STACK * sizeof(uint64_t));
	if (bpf_map_lookup_elem(fd, &id, ips) < 0)
		return 0;
	while (n < PERFREC_OFFCPU_MAX_STACK && ips[n])
		n++;
	return n;
}

/*
 * Is the process the one that blocked: started when it did (not a reused
 * pid) and running the same executable (no exec since)?  Its mappings are
 * read now, at drain time; these two are what would make them another
 * program's.
 */
static bool same_process(const struct perfrec_offcpu_copy *c)
{
	char path[64], buf[1024], *p;
	unsigned long long start = 0;
	long tck = sysconf(_SC_CLK_TCK);
	struct stat st;
	ssize_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%" PRIu32 "/exe", c->pid);
	if (stat(path, &st) < 0 || (uint64_t)st.st_ino != c->exe_ino || tck <= 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%" PRIu32 "/stat", c->pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	n = (ssize_t)fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	if (n <= 0)
		return false;
	buf[n] = 0;
	/* Field 22, starttime in clock ticks; the comm before it may hold anything. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
			 &start) != 1)
		return false;
	return start == c->start_time / (1000000000ull / (unsigned long long)tck);
}

/* One line of /proc/PID/maps as the MMAP2 record perf would have written. */
static void feed_map_line(struct perfrec_offcpu *oc, uint32_t pid, const char *line)
{
	struct {
		struct perf_event_header h;
		uint32_t pid, tid;
		uint64_t addr, len, pgoff;
		uint32_t maj, min;
		uint64_t ino, ino_generation;
		uint32_t prot, flags;
		char name[PATH_MAX + 8];
	} m = { .h.type = PERF_RECORD_MMAP2, .h.misc = PERF_RECORD_MISC_USER, .pid = pid, .tid = pid };
	unsigned long long start, end, pgoff, ino;
	unsigned maj, min;
	char perms[8];
	int name_at = 0;
	size_t n;

	if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &pgoff, &maj, &min, &ino,
		   &name_at) < 7 || !name_at || line[name_at] != '/' || end <= start)
		return;
	/* Code, and readable files (their .eh_frame_hdr, as perf's mmap_data). */
	if (perms[2] != 'x' && perms[0] != 'r')
		return;
	n = strcspn(line + name_at, "\n");
	if (n > PATH_MAX)
		return;
	memcpy(m.name, line + name_at, n);
	memset(m.name + n, 0, 8);
	m.addr = start;
	m.len = end - start;
	m.pgoff = pgoff;
	m.maj = maj;
	m.min = min;
	m.ino = ino;
	m.prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[2] == 'x' ? PROT_EXEC : 0);
	m.flags = perms[3] == 's' ? MAP_SHARED : MAP_PRIVATE;
	m.h.size = (uint16_t)(offsetof(__typeof__(m), name) + ((n + 8) & ~(size_t)7));
	perfrec_unwinder__rewrite(oc->unwinder, &m.h, NULL, oc->out, SAMPLE_MAX);
}

/* @pid's /proc maps into oc->maps (NUL-terminated); false if they cannot be read. */
static bool read_maps(struct perfrec_offcpu *oc, uint32_t pid, size_t *ret_len)
{
	char path[64];
	size_t len = 0;
	ssize_t n = -1;
	int fd;

	snprintf(path, sizeof(path), "/proc/%" PRIu32 "/maps", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	for (;;) {
		if (oc->cap_maps - len < 4097) {
			size_t cap = oc->cap_maps ? 2 * oc->cap_maps : 65536;
			char *p = cap <= MAPS_MAX ? realloc(oc->maps, cap) : NULL;

			if (!p)
				break;
			oc->maps = p;
			oc->cap_maps = cap;
		}
		n = read(fd, oc->maps + len, oc->cap_maps - len - 1);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (!oc->maps || n != 0)
		return false;
	oc->maps[len] = 0;
	*ret_len = len;
	return true;
}

static uint64_t hash_bytes(const char *p, size_t len)
{
	uint64_t x = 1469598103934665603ull;

	for (size_t i = 0; i < len; i++) {
		x ^= (unsigned char)p[i];
		x *= 1099511628211ull;
	}
	return x;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The entry of @pid (entries not used for SPACE_FORGET_NS go), or NULL. */
static struct space_seen *space_seen(struct perfrec_offcpu *oc, uint32_t pid, uint64_t now)
{
	struct space_seen *found = NULL;

	for (size_t i = 0; i < oc->nr_seen;) {
		struct space_seen *s = &oc->seen[i];

		if (now - s->when >= SPACE_FORGET_NS) {
			*s = oc->seen[--oc->nr_seen];
			continue;
		}
		if (s->pid == pid)
			found = s;
		i++;
	}
	return found;
}

static struct space_seen *space_new(struct perfrec_offcpu *oc)
{
	if (oc->nr_seen == oc->cap_seen) {
		size_t cap = oc->cap_seen ? 2 * oc->cap_seen : 16;
		void *p = realloc(oc->seen, cap * sizeof(*oc->seen));

		if (!p)
			return NULL;
		oc->seen = p;
		oc->cap_seen = cap;
	}
	return &oc->seen[oc->nr_seen++];
}

/*
 * A copy of @pid's did not unwind: feed its maps again next time, in case
 * the unwinder forgot them (its bound on processes) or they changed.
 */
static void space_recheck(struct perfrec_offcpu *oc, uint32_t pid)
{
	struct space_seen *s = space_seen(oc, pid, now_ns());

	if (s)
		s->checked = s->maps_hash = 0;
}

/*
 * Give the unwinder @c's process's mappings as /proc has them now (looked
 * at again after SPACE_TTL_NS, so a library loaded since is seen, and fed
 * again only if they changed: a new space costs a new libdwfl session);
 * false when it is no longer the process that blocked (it exited, its pid
 * was reused, it exec'd; its space is then empty, and nothing is unwound
 * in it).  A copy is read moments after it was taken, while its thread is
 * blocked, so that is rare: a process exiting later keeps its stacks.
 */
static bool prepare_space(struct perfrec_offcpu *oc, const struct perfrec_offcpu_copy *c)
{
	struct {
		struct perf_event_header h;
		uint32_t pid, ppid, tid, ptid;
		uint64_t time;
	} exit_rec = { { PERF_RECORD_EXIT, 0, sizeof(exit_rec) }, c->pid, 0, c->pid, 0, 0 };
	uint64_t now = now_ns(), hash = 0;
	struct space_seen *s = space_seen(oc, c->pid, now);
	bool same = s && s->start_time == c->start_time && s->exe_ino == c->exe_ino;
	size_t len = 0;
	bool ok;

	if (same && now - s->checked < SPACE_TTL_NS) {
		s->when = now;
		return s->ok;
	}
	ok = same_process(c) && read_maps(oc, c->pid, &len);
	if (ok)
		hash = hash_bytes(oc->maps, len);
	if (ok && same && s->ok && s->maps_hash == hash) {
		s->when = s->checked = now;
		return true;
	}
	/* What the unwinder knew of this pid is older: forget it. */
	perfrec_unwinder__rewrite(oc->unwinder, &exit_rec.h, NULL, oc->out, SAMPLE_MAX);
	if (ok) {
		for (char *line = oc->maps, *end; *line; line = end + 1) {
			end = strchrnul(line, '\n');
			feed_map_line(oc, c->pid, line);
			if (!*end)
				break;
		}
		ok = same_process(c);
		if (!ok)
			perfrec_unwinder__rewrite(oc->unwinder, &exit_rec.h, NULL, oc->out, SAMPLE_MAX);
	}
	if (!s)
		s = space_new(oc);
	if (s)
		*s = (struct space_seen){ .pid = c->pid, .ok = ok, .start_time = c->start_time,
					  .exe_ino = c->exe_ino, .maps_hash = hash, .when = now, .checked = now };
	return ok;
}

/* The attr of the DWARF sample a copy is dressed as for the unwinder. */
static void dwarf_attr(struct perf_event_attr *a)
{
	perfrec_offcpu__attr(a);
	a->sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
	a->sample_regs_user = PERFREC_REGS_USER_X86_64;
	a->sample_stack_user = COPY_STACK;
}

/*
 * @c as the DWARF sample --call-graph dwarf would have written, with no
 * kernel chain: user registers (struct pt_regs reordered to perf's x86_64
 * numbering of PERFREC_REGS_USER_X86_64) and the stack copy.
 */
static void dwarf_sample(struct perfrec_offcpu *oc, const struct perfrec_offcpu_copy *c, size_t len)
{
	/* pt_regs index of AX BX CX DX SI DI BP SP IP FLAGS CS SS R8 ... R15 */
	static const uint8_t order[] = { 10, 5, 11, 12, 13, 14, 4, 19, 16, 18, 17, 20, 9, 8, 7, 6, 3, 2, 1, 0 };
	struct perf_event_header *h = (struct perf_event_header *)oc->dwarf;
	uint64_t *p = (uint64_t *)(h + 1);

	*p++ = 0;                                               /* id */
	*p++ = c->regs[16];                                     /* ip */
	*p++ = (uint64_t)c->pid | (uint64_t)c->tid << 32;
	*p++ = c->ts;
	*p++ = 0;                                               /* cpu */
	*p++ = 1;                                               /* period */
	*p++ = 0;                                               /* no kernel chain */
	*p++ = PERF_SAMPLE_REGS_ABI_64;
	for (size_t i = 0; i < sizeof(order); i++)
		*p++ = c->regs[order[i]];
	*p++ = len;
	memcpy(p, c->stack, len);
	p += len / 8;
	if (len)
		*p++ = len;
	h->type = PERF_RECORD_SAMPLE;
	h->misc = PERF_RECORD_MISC_USER;
	h->size = (uint16_t)((unsigned char *)p - (unsigned char *)h);
}

/* Record words that tell two samples apart: all but id, time and period. */
static bool agg_word(size_t i)
{
	return i != 1 && i != 4 && i != 6;
}

static uint64_t agg_hash(const uint64_t *rec)
{
	const struct perf_event_header *h = (const void *)rec;
	uint64_t x = 1469598103934665603ull;

	for (size_t i = 0; i < h->size / 8; i++)
		if (agg_word(i)) {
			x ^= rec[i];
			x *= 1099511628211ull;
		}
	return x;
}

static bool agg_same(const uint64_t *a, const uint64_t *b)
{
	const struct perf_event_header *h = (const void *)a;

	if (h->size != ((const struct perf_event_header *)b)->size)
		return false;
	for (size_t i = 0; i < h->size / 8; i++)
		if (agg_word(i) && a[i] != b[i])
			return false;
	return true;
}

/* Sum the sample in oc->out into its thread and path's entry. */
static void agg_add(struct perfrec_offcpu *oc, bool whole)
{
	const struct perf_event_header *h = (const void *)oc->out;
	uint64_t hash = agg_hash(oc->out);
	struct agg_entry **b = &oc->agg[hash % AGG_BUCKETS], *e;

	pthread_mutex_lock(&oc->lock);
	oc->whole += whole;
	oc->kept_fp += !whole;
	for (e = *b; e; e = e->next)
		if (e->hash == hash && agg_same(e->rec, oc->out)) {
			e->rec[6] += oc->out[6];
			goto out;
		}
	e = oc->nr_agg < AGG_MAX ? malloc(sizeof(*e) + h->size) : NULL;
	if (!e) {
		oc->agg_full++;
		goto out;
	}
	e->hash = hash;
	memcpy(e->rec, oc->out, h->size);
	e->next = *b;
	*b = e;
	oc->nr_agg++;
out:
	pthread_mutex_unlock(&oc->lock);
}

static uint32_t pend_bucket(uint32_t tid, uint64_t ts)
{
	return (uint32_t)((tid * 0x9e3779b97f4a7c15ull ^ ts) % PEND_BUCKETS);
}

/* Take @p out of the hash and the age list. */
static void pend_unlink(struct perfrec_offcpu *oc, struct pend *p)
{
	struct pend **b = &oc->pend[pend_bucket(p->tid, p->ts)];

	while (*b && *b != p)
		b = &(*b)->hnext;
	if (*b)
		*b = p->hnext;
	if (p->older)
		p->older->newer = p->newer;
	else
		oc->oldest = p->newer;
	if (p->newer)
		p->newer->older = p->older;
	else
		oc->newest = p->older;
	oc->nr_pend--;
}

static struct pend *pend_take(struct perfrec_offcpu *oc, uint32_t tid, uint64_t ts)
{
	struct pend *p;

	for (p = oc->pend[pend_bucket(tid, ts)]; p; p = p->hnext)
		if (p->tid == tid && p->ts == ts) {
			pend_unlink(oc, p);
			return p;
		}
	return NULL;
}

static void pend_add(struct perfrec_offcpu *oc, uint32_t tid, uint64_t ts, const uint64_t *frames, uint32_t nr)
{
	struct pend *p, **b;

	if (oc->nr_pend >= PEND_MAX) {
		p = oc->oldest;
		pend_unlink(oc, p);
		free(p);
		pthread_mutex_lock(&oc->lock);
		oc->evicted++;
		pthread_mutex_unlock(&oc->lock);
	}
	p = malloc(sizeof(*p) + nr * sizeof(uint64_t));
	if (!p)
		return;
	*p = (struct pend){ .tid = tid, .ts = ts, .nr = nr, .older = oc->newest };
	if (nr)
		memcpy(p->frames, frames, nr * sizeof(uint64_t));
	b = &oc->pend[pend_bucket(tid, ts)];
	p->hnext = *b;
	*b = p;
	if (oc->newest)
		oc->newest->newer = p;
	else
		oc->oldest = p;
	oc->newest = p;
	oc->nr_pend++;
}

/*
 * A copy, as its thread blocks: unwound now, while its process surely
 * exists, and kept until the thread is back.  Only a chain with a caller
 * is kept as whole (a lone ip is what the frame-pointer walk has too).
 */
static void on_copy(struct perfrec_offcpu *oc, const struct perfrec_offcpu_copy *c, size_t len)
{
	const struct perf_event_header *h = (const void *)oc->out;
	struct perf_event_attr a;
	uint32_t nr = 0;
	int r;

	if (prepare_space(oc, c)) {
		dwarf_attr(&a);
		dwarf_sample(oc, c, len);
		r = perfrec_unwinder__rewrite(oc->unwinder, (struct perf_event_header *)oc->dwarf, &a,
					      oc->out, SAMPLE_MAX);
		/*
		 * out: header, id ip tid time cpu period nr, then USER and the
		 * frames; with a caller (more than the ip) it was unwound.
		 */
		if (r > 0 && h->size >= 8 * 10 && oc->out[7] >= 3 &&
		    oc->out[7] <= PERFREC_OFFCPU_MAX_STACK + 1 && oc->out[8] == PERF_CONTEXT_USER)
			nr = (uint32_t)oc->out[7] - 1;
		if (!nr)
			space_recheck(oc, c->pid);
	} else {
		pthread_mutex_lock(&oc->lock);
		oc->gone++;
		pthread_mutex_unlock(&oc->lock);
	}
	pend_add(oc, c->tid, c->ts, nr ? &oc->out[9] : NULL, nr);
}

/*
 * The thread of a copy is back: its block summed with the unwound stack
 * where there is one, else with the frame-pointer stack the kernel noted
 * (never a guess).  Stack ids are read now, before a drain frees them.
 */
static void on_wake(struct perfrec_offcpu *oc, const struct perfrec_offcpu_wake *w)
{
	struct pend *p = pend_take(oc, w->tid, w->ts);
	struct perfrec_offcpu_entry e = { .pid = w->pid, .tid = w->tid, .cpu = w->cpu, .period = w->delta,
					  .kernel = oc->kips, .user = oc->uips };

	if (w->delta) {
		e.nr_kernel = read_stack(oc->kfd, w->kstack_id, oc->kips);
		if (p && p->nr) {
			e.user = p->frames;
			e.nr_user = p->nr;
		} else {
			e.nr_user = read_stack(oc->ufd, w->ustack_id, oc->uips);
		}
		if (perfrec_offcpu__encode_sample(oc->out, SAMPLE_MAX, &e, 0, 0) > 0)
			agg_add(oc, p && p->nr);
	}
	free(p);
}

static int take_record(void *ctx, void *data, size_t size)
{
	const struct perfrec_offcpu_copy *c = data;
	const struct perfrec_offcpu_wake *w = data;

	if (size >= sizeof(*c) && c->kind == REC_COPY)
		on_copy(ctx, c, c->len <= size - sizeof(*c) && c->len <= COPY_STACK ? c->len & ~7ull : 0);
	else if (size >= sizeof(*w) && w->kind == REC_WAKE)
		on_wake(ctx, w);
	return 0;
}

/*
 * Read what the ring holds.  The thread and a drain both do, one at a
 * time: the unwinder and the waiting copies are used under reading.
 */
static void read_ring(struct perfrec_offcpu *oc)
{
	pthread_mutex_lock(&oc->reading);
	ring_buffer__consume(oc->ring);
	pthread_mutex_unlock(&oc->reading);
}

/*
 * Every POLL_MS, or sooner when the program wakes us (records come with
 * no wakeup of their own: epoll alone would miss them).
 */
static void *copies_thread(void *arg)
{
	struct perfrec_offcpu *oc = arg;
	int efd = ring_buffer__epoll_fd(oc->ring);

	while (!__atomic_load_n(&oc->stop, __ATOMIC_ACQUIRE)) {
		struct epoll_event ev;

		epoll_wait(efd, &ev, 1, POLL_MS);
		read_ring(oc);
	}
	return NULL;
}

/* Before load: the program's switch and the ring's size (a page when off). */
static int whole_stacks_setup(struct perfrec_offcpu *oc, const struct perfrec_offcpu_opts *opts)
{
	uint32_t rate = PERFREC_OPTS_GET(opts, copies_per_sec, 0);

	if (!PERFREC_OPTS_GET(opts, whole_stacks, false))
		return 0;
	oc->skel->rodata->whole_stacks = true;
	oc->skel->rodata->copies_per_sec = rate ? rate : DEFAULT_COPIES_PER_SEC;
	oc->skel->rodata->copy_gap_ns = COPY_GAP_NS;
	oc->skel->rodata->copies_ring_bytes = COPIES_RING;
	return bpf_map__set_max_entries(oc->skel->maps.copies, COPIES_RING);
}

/*
 * After load: the ring's reader, the unwinder of its copies, and the
 * thread that runs them, so that a block is unwound soon after it ends,
 * while its process is most likely still there, and the ring is read
 * more often than files end.  The thread takes no signals.
 */
static int whole_stacks_open(struct perfrec_offcpu *oc)
{
	struct perfrec_unwinder_opts uo = { .sz = sizeof(uo) };
	sigset_t all, old;
	int r;

	if (!oc->skel->rodata->whole_stacks)
		return 0;
	oc->kfd = bpf_map__fd(oc->skel->maps.kstacks);
	oc->ufd = bpf_map__fd(oc->skel->maps.ustacks);
	oc->kips = calloc(PERFREC_OFFCPU_MAX_STACK, sizeof(uint64_t));
	oc->uips = calloc(PERFREC_OFFCPU_MAX_STACK, sizeof(uint64_t));
	oc->dwarf = calloc(1, SAMPLE_MAX + 256 + COPY_STACK);
	oc->out = calloc(1, 65536);
	if (!oc->kips || !oc->uips || !oc->dwarf || !oc->out)
		return -ENOMEM;
	oc->ring = ring_buffer__new(bpf_map__fd(oc->skel->maps.copies), take_record, oc, NULL);
	if (!oc->ring)
		return -errno;
	r = perfrec_unwinder__new(&uo, &oc->unwinder);
	if (r < 0)
		return r;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = -pthread_create(&oc->thread, NULL, copies_thread, oc);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	oc->thread_started = r == 0;
	if (r == 0)
		pthread_setname_np(oc->thread, "offcpu-unwind");
	return r;
}

static void agg_free(struct agg_entry *e)
{
	while (e) {
		struct agg_entry *next = e->next;

		free(e);
		e = next;
	}
}

static void whole_stacks_close(struct perfrec_offcpu *oc)
{
	if (oc->thread_started) {
		__atomic_store_n(&oc->stop, true, __ATOMIC_RELEASE);
		pthread_join(oc->thread, NULL);
	}
	ring_buffer__free(oc->ring);
	perfrec_unwinder__free(oc->unwinder);
	for (size_t i = 0; i < AGG_BUCKETS; i++)
		agg_free(oc->agg[i]);
	while (oc->oldest) {
		struct pend *p = oc->oldest;

		pend_unlink(oc, p);
		free(p);
	}
	free(oc->seen);
	free(oc->maps);
	free(oc->kips);
	free(oc->uips);
	free(oc->dwarf);
	free(oc->out);
}

/*
 * The whole-stack samples summed since the last drain, stamped @id and
 * @time; the table is taken under the lock and written outside it.
 */
static int drain_whole(struct perfrec_offcpu *oc, uint64_t id, uint64_t time,
		       perfrec_offcpu_emit_fn emit, void *userdata)
{
	struct agg_entry *list = NULL;
	int r = 0, count = 0;

	if (!oc->thread_started)
		return 0;
	/* The blocks that ended before this point are this file's. */
	read_ring(oc);
	pthread_mutex_lock(&oc->lock);
	for (size_t i = 0; i < AGG_BUCKETS; i++) {
		while (oc->agg[i]) {
			struct agg_entry *e = oc->agg[i];

			oc->agg[i] = e->next;
			e->next = list;
			list = e;
		}
	}
	oc->nr_agg = 0;
	pthread_mutex_unlock(&oc->lock);
	for (struct agg_entry *e = list; e && r >= 0; e = e->next) {
		e->rec[1] = id;
		e->rec[4] = time;
		r = emit((const struct perf_event_header *)e->rec, userdata);
		count++;
	}
	agg_free(list);
	return r < 0 ? r : count;
}

int perfrec_offcpu__open(const struct perfrec_offcpu_opts *opts, struct perfrec_offcpu **ret,
			 char *why, size_t why_len)
{
	const char *cg = PERFREC_OPTS_GET(opts, cgroup_path, NULL);
	struct perfrec_offcpu *oc;
	uint64_t cgid = 0;
	int r;

	if (!PERFREC_OPTS_VALID(opts, struct perfrec_offcpu_opts) || !ret)
		return -EINVAL;
	*ret = NULL;
	if (access("/sys/kernel/btf/vmlinux", R_OK) < 0) {
		r = -errno;
		snprintf(why, why_len, "the kernel has no BTF (/sys/kernel/btf/vmlinux: %s)",
			 strerror(-r));
		return r;
	}
	if (cg && cg[0]) {
		r = cgroup_id_of(cg, &cgid);
		if (r < 0) {
			snprintf(why, why_len, "cgroup %s: %s", cg, strerror(-r));
			return r;
		}
	}
	oc = calloc(1, sizeof(*oc));
	if (!oc)
		return -ENOMEM;
	pthread_mutex_init(&oc->lock, NULL);
	pthread_mutex_init(&oc->reading, NULL);
	/* libbpf would print to stderr; the library never prints. */
	libbpf_set_print(silent_print);
	oc->skel = offcpu_bpf__open();
	if (!oc->skel) {
		r = -errno;
		snprintf(why, why_len, "opening the BPF object failed: %s", strerror(-r));
		goto fail;
	}
	oc->skel->bss->min_ns = PERFREC_OPTS_GET(opts, min_ns, 0);
	oc->skel->bss->cgroup_id = cgid;
	oc->skel->rodata->self_tgid = (uint32_t)PERFREC_OPTS_GET(opts, self_pid, 0);
	r = whole_stacks_setup(oc, opts);
	if (r < 0) {
		snprintf(why, why_len, "setting up whole stacks failed: %s", strerror(-r));
		goto fail;
	}
	r = offcpu_bpf__load(oc->skel);
	if (r < 0) {
		snprintf(why, why_len, "loading the BPF program failed: %s%s", strerror(-r),
			 r == -EPERM ? " (needs CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN)" : "");
		goto fail;
	}
	r = whole_stacks_open(oc);
	if (r < 0) {
		snprintf(why, why_len, "opening the ring of stack copies failed: %s", strerror(-r));
		goto fail;
	}
	r = offcpu_bpf__attach(oc->skel);
	if (r < 0) {
		snprintf(why, why_len, "attaching to sched_switch failed: %s", strerror(-r));
		goto fail;
	}
	*ret = oc;
	return 0;
fail:
	perfrec_offcpu__close(oc);
	return r;
}

void perfrec_offcpu__close(struct perfrec_offcpu *oc)
{
	if (!oc)
		return;
	whole_stacks_close(oc);
	offcpu_bpf__destroy(oc->skel);
	pthread_mutex_destroy(&oc->lock);
	pthread_mutex_destroy(&oc->reading);
	free(oc);
}

int perfrec_offcpu__set_filter(struct perfrec_offcpu *oc, const struct perfrec_offcpu_opts *opts)
{
	const char *cg = PERFREC_OPTS_GET(opts, cgroup_path, NULL);
	uint64_t cgid = 0;
	int r;

	if (!oc || !oc->skel || !oc->skel->bss || !PERFREC_OPTS_VALID(opts, struct perfrec_offcpu_opts))
		return -EINVAL;
	if (cg && cg[0]) {
		r = cgroup_id_of(cg, &cgid);
		if (r < 0)
			return r;
	}
	/* The program reads both at every switch: a block ending now may see either. */
	oc->skel->bss->min_ns = PERFREC_OPTS_GET(opts, min_ns, 0);
	oc->skel->bss->cgroup_id = cgid;
	return 0;
}

uint64_t perfrec_offcpu__lost(const struct perfrec_offcpu *oc)
{
	return oc && oc->skel && oc->skel->bss ? oc->skel->bss->lost_full : 0;
}

uint64_t perfrec_offcpu__lost_stacks(const struct perfrec_offcpu *oc)
{
	return oc && oc->skel && oc->skel->bss ? oc->skel->bss->lost_stacks : 0;
}

void perfrec_offcpu__copy_stats(struct perfrec_offcpu *oc, struct perfrec_offcpu_copy_stats *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (!oc || !oc->skel || !oc->skel->bss)
		return;
	ret->copied = oc->skel->bss->copies_taken;
	ret->ring_full = oc->skel->bss->copies_lost;
	pthread_mutex_lock(&oc->lock);
	ret->whole = oc->whole;
	ret->kept_fp = oc->kept_fp;
	ret->gone = oc->gone;
	ret->evicted = oc->evicted;
	ret->table_full = oc->agg_full;
	pthread_mutex_unlock(&oc->lock);
}

int perfrec_offcpu__drain(struct perfrec_offcpu *oc, uint64_t id, uint64_t time,
			  perfrec_offcpu_emit_fn emit, void *userdata)
{
	uint64_t kips[PERFREC_OFFCPU_MAX_STACK], uips[PERFREC_OFFCPU_MAX_STACK];
	uint64_t rec[8 + 2 * (PERFREC_OFFCPU_MAX_STACK + 1) + 1];
	struct perfrec_offcpu_key key, next;
	int mfd, kfd, ufd, r, count = 0;
	void *prev = NULL;

	if (!oc || !emit)
		return -EINVAL;
	mfd = bpf_map__fd(oc->skel->maps.offcpu);
	kfd = bpf_map__fd(oc->skel->maps.kstacks);
	ufd = bpf_map__fd(oc->skel->maps.ustacks);
	/*
	 * Deleting the entry just emitted while walking would make the next
	 * get_next_key restart, so delete the previous one after stepping on.
	 */
	while (bpf_map_get_next_key(mfd, prev, &next) == 0) {
		struct perfrec_offcpu_entry e = { 0 };
		uint64_t total;

		if (prev)
			bpf_map_delete_elem(mfd, prev);
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(mfd, &key, &total) < 0 || total == 0)
			continue;
		e.pid = key.pid;
		e.tid = key.tid;
		e.cpu = key.cpu;
		e.period = total;
		e.kernel = kips;
		e.user = uips;
		e.nr_kernel = read_stack(kfd, key.kstack_id, kips);
		e.nr_user = read_stack(ufd, key.ustack_id, uips);
		r = perfrec_offcpu__encode_sample(rec, sizeof(rec), &e, id, time);
		if (r < 0)
			return r;
		r = emit((const struct perf_event_header *)rec, userdata);
		if (r < 0)
			return r;
		count++;
	}
	if (prev)
		bpf_map_delete_elem(mfd, prev);
	r = drain_whole(oc, id, time, emit, userdata);
	if (r < 0)
		return r;
	count += r;
	/*
	 * Free the stacks drained: never freed, the maps filled with every
	 * blocking stack the host ever had, and a new stack whose bucket was
	 * taken got no id, so a long-running recorder lost more stacks every
	 * hour.  A thread blocked across this point whose stack is freed here
	 * comes back with an id that reads empty (or, if another stack took
	 * that bucket meanwhile, that stack): one sample per such thread.
	 */
	clear_stacks(kfd);
	clear_stacks(ufd);
	return count;
}
