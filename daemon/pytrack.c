/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Feeding the walk of Python frames with the processes that run CPython
 * (pytrack.h).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "drain.h"
#include "log.h"
#include "pytrack.h"

/* The head of a PERF_RECORD_MMAP2, before its file name. */
struct mmap2_head {
	struct perf_event_header header;
	uint32_t pid, tid;
	uint64_t start, len, pgoff;
	uint32_t maj, min;
	uint64_t ino, ino_generation;
	uint32_t prot, flags;
};

/* PERF_RECORD_EXIT and PERF_RECORD_COMM: both start with pid, tid (EXIT: pid, ppid, tid). */
struct exit_head {
	struct perf_event_header header;
	uint32_t pid, ppid, tid, ptid;
};

struct comm_head {
	struct perf_event_header header;
	uint32_t pid, tid;
};

bool pytrack_python_name(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	/* python, python3, python3.12, python3.13t; libpython3.12.so.1.0 */
	if (!strncmp(base, "libpython", 9))
		return !!strstr(base, ".so");
	if (strncmp(base, "python", 6))
		return false;
	for (const char *p = base + 6; *p && *p != ' '; p++)
		if (!isdigit((unsigned char)*p) && *p != '.' && *p != 'd' && *p != 'm' && *p != 't')
			return false;
	return true;
}

int pytrack_new(struct pywalk *pw, const char *proc, struct pytrack **ret)
{
	struct pytrack *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	t->pw = pw;
	snprintf(t->proc, sizeof(t->proc), "%s", proc ? proc : "/proc");
	t->sink = (struct sink){ .ops = &pytrack_sink_ops, .ctx = t };
	*ret = t;
	return 0;
}

void pytrack_free(struct pytrack *t)
{
	if (!t)
		return;
	free(t->procs);
	free(t);
}

/* Where @pid is in the sorted list, or would go. */
static size_t pid_pos(const struct pytrack *t, pid_t pid, bool *found)
{
	size_t lo = 0, hi = t->nr_procs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->procs[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = lo < t->nr_procs && t->procs[lo].pid == pid;
	return lo;
}

static bool tracked(const struct pytrack *t, pid_t pid)
{
	bool found;

	pid_pos(t, pid, &found);
	return found;
}

static int track(struct pytrack *t, pid_t pid, uint64_t since)
{
	bool found;
	size_t at = pid_pos(t, pid, &found);
	struct pytrack_proc *p;

	if (found)
		return 0;
	p = realloc(t->procs, (t->nr_procs + 1) * sizeof(*p));
	if (!p)
		return -ENOMEM;
	t->procs = p;
	memmove(p + at + 1, p + at, (t->nr_procs - at) * sizeof(*p));
	p[at] = (struct pytrack_proc){ .pid = pid, .since = since };
	t->nr_procs++;
	return 0;
}

/*
 * @pid's EXIT or exec at @time: its walks end, unless the record is older
 * than the one it was added at.  Such a record ended an earlier program
 * of the pid, drained after the newer one's MMAP2 from another ring: a
 * shell that execs python right after it was exec'd itself (unshare -m
 * sh -c '...; exec python'), the exec of sh on one CPU, python's on the
 * other; taken for python's end it left python unwalked for its life.
 */
static void untrack(struct pytrack *t, pid_t pid, uint64_t time)
{
	bool found;
	size_t at = pid_pos(t, pid, &found);

	if (!found)
		return;
	if (time && t->procs[at].since && time <= t->procs[at].since) {
		log_debug("Python frames: pid %d: an exit or exec older than its interpreter's MMAP2, not its end",
			  (int)pid);
		t->st.stale++;
		return;
	}
	memmove(t->procs + at, t->procs + at + 1, (t->nr_procs - at - 1) * sizeof(*t->procs));
	t->nr_procs--;
	pywalk_remove_process(t->pw, pid);
	t->st.removed++;
}

/* Detect @pid and, a CPython, hand it to the walker; @time: of the record that says so (0: none). */
static void look_at(struct pytrack *t, pid_t pid, uint64_t time)
{
	struct pyproc_info *info;

	if (tracked(t, pid))
		return;
	/* PATH_MAX inside: not for the stack of a drain callback. */
	info = malloc(sizeof(*info));
	if (!info)
		return;
	if (pyproc_detect_cached(t->proc, pid, &t->cache, info) < 0) {
		free(info);
		return;     /* gone already */
	}
	pyproc_count(&t->st.found, info->status);
	if (info->status == PYPROC_OK) {
		int r = t->nr_procs >= PYTRACK_MAX_PROCS ? -E2BIG :
			pywalk_add_process(t->pw, pid, info);

		if (r == 0 && track(t, pid, time) < 0) {
			pywalk_remove_process(t->pw, pid);
			r = -ENOMEM;
		}
		if (r < 0)
			t->st.refused++;
		else
			t->st.added++;
	}
	free(info);
}

/* Whether /proc/PID/maps names an interpreter (the cheap test before detecting). */
static bool maps_python(const struct pytrack *t, pid_t pid)
{
	char p[96], line[PATH_MAX + 128];
	bool yes = false;
	FILE *f;

	snprintf(p, sizeof(p), "%s/%d/maps", t->proc, (int)pid);
	f = fopen(p, "re");
	if (!f)
		return false;
	while (!yes && fgets(line, sizeof(line), f)) {
		char *path = strchr(line, '/');
		char perms[5];

		if (!path || sscanf(line, "%*x-%*x %4s", perms) != 1 || perms[2] != 'x')
			continue;
		path[strcspn(path, "\n")] = '\0';
		yes = pytrack_python_name(path);
	}
	fclose(f);
	return yes;
}

void pytrack_scan(struct pytrack *t)
{
	DIR *d = opendir(t->proc);
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (*end || pid <= 0 || pid > INT32_MAX)
			continue;
		if (maps_python(t, (pid_t)pid))
			look_at(t, (pid_t)pid, 0);
	}
	closedir(d);
}

static void note_mmap2(struct pytrack *t, const struct perf_event_header *h, uint64_t time)
{
	const struct mmap2_head *m = (const void *)h;
	const char *name = (const char *)h + sizeof(*m);
	size_t room;

	if (h->size <= sizeof(*m) || !(m->prot & PROT_EXEC) || !m->pid || m->pid == UINT32_MAX ||
	    (h->misc & PERF_RECORD_MISC_CPUMODE_MASK) != PERF_RECORD_MISC_USER)
		return;
	room = h->size - sizeof(*m);
	if (!memchr(name, '\0', room) || !pytrack_python_name(name))
		return;
	look_at(t, (pid_t)m->pid, time);
}

void pytrack_note(struct pytrack *t, const struct perf_event_header *h, uint64_t time)
{
	if (!t || !t->pw)
		return;
	if (h->type == PERF_RECORD_MMAP2) {
		note_mmap2(t, h, time);
	} else if (h->type == PERF_RECORD_EXIT && h->size >= sizeof(struct exit_head)) {
		const struct exit_head *e = (const void *)h;

		if (e->pid == e->tid)
			untrack(t, (pid_t)e->pid, time);
	} else if (h->type == PERF_RECORD_COMM && h->size >= sizeof(struct comm_head) &&
		   (h->misc & PERF_RECORD_MISC_COMM_EXEC)) {
		const struct comm_head *c = (const void *)h;

		/* Another image: its MMAP2s, which follow, say whether it is a python. */
		untrack(t, (pid_t)c->pid, time);
	}
}

void pytrack_get_stats(const struct pytrack *t, struct pytrack_stats *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (!t)
		return;
	*ret = t->st;
	ret->tracked = t->nr_procs;
	ret->cache_hits = t->cache.hits;
	ret->cache_misses = t->cache.misses;
}

static void pytrack_record(struct sink *s, struct drain_rec *r)
{
	pytrack_note(s->ctx, r->h, drain_rec_time(r));
}

const struct sink_ops pytrack_sink_ops = {
	.record = pytrack_record,
};
