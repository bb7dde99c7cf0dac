// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests of /proc synthesis: against the real /proc (the test's own
 * process, a named thread it starts, its executable mapping, the kernel map
 * from kallsyms) and against fake proc trees in a temporary directory, where
 * the exact records are known.  Records are decoded here with the offsets
 * perf_event.h documents, independently of lib/synth.c's structs.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <perfrec/buildid.h>
#include <perfrec/event.h>
#include <perfrec/synth.h>

#include "kallsyms.h"

#define ST (PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER)
#define TIME 123456789012ULL
#define ID 0xabcdef42ULL

/* Every record the callback saw, copied (the pointer is only lent). */
struct collect {
	struct perf_event_header **recs;
	size_t nr, cap;
	size_t fail_at; /* return -ECANCELED on this call (1-based); 0: never */
};

static int collect_cb(void *ctx, const struct perf_event_header *rec)
{
	struct collect *c = ctx;

	if (c->fail_at && c->nr + 1 == c->fail_at) {
		c->nr++;
		return -ECANCELED;
	}
	cr_assert(c->fail_at == 0 || c->nr < c->fail_at, "callback called after it failed");
	if (c->nr == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 256;
		c->recs = realloc(c->recs, c->cap * sizeof(*c->recs));
		cr_assert_not_null(c->recs);
	}
	c->recs[c->nr] = malloc(rec->size);
	cr_assert_not_null(c->recs[c->nr]);
	memcpy(c->recs[c->nr], rec, rec->size);
	c->nr++;
	return 0;
}

static void collect_free(struct collect *c)
{
	for (size_t i = 0; i < c->nr && c->recs; i++)
		if (!c->fail_at || i + 1 < c->fail_at)
			free(c->recs[i]);
	free(c->recs);
}

/* --- decoding by documented offsets ------------------------------------- */

static uint32_t u32_at(const void *rec, size_t off)
{
	uint32_t v;

	memcpy(&v, (const char *)rec + off, 4);
	return v;
}

static uint64_t u64_at(const void *rec, size_t off)
{
	uint64_t v;

	memcpy(&v, (const char *)rec + off, 8);
	return v;
}

/* The string at @off, checked to end (NUL, 8-aligned) before the trailer. */
static const char *str_at(const struct perf_event_header *rec, size_t off)
{
	const char *s = (const char *)rec + off;
	size_t body = rec->size - perfrec_sample_id__size(ST);
	size_t len = strnlen(s, body - off);

	cr_assert_lt(off + len, body, "string not NUL-terminated before the trailer");
	cr_assert_eq((off + len + 1 + 7) / 8 * 8, body, "string padding is not to the next 8 bytes");
	return s;
}

struct mmap2 {
	uint32_t pid, tid;
	uint64_t start, len, pgoff;
	uint32_t maj, min;
	uint64_t ino;
	uint8_t build_id_size;
	const uint8_t *build_id;
	uint32_t prot, flags;
	const char *name;
};

static struct mmap2 decode_mmap2(const struct perf_event_header *rec)
{
	struct mmap2 m = {0};

	cr_assert_eq(rec->type, PERF_RECORD_MMAP2);
	m.pid = u32_at(rec, 8);
	m.tid = u32_at(rec, 12);
	m.start = u64_at(rec, 16);
	m.len = u64_at(rec, 24);
	m.pgoff = u64_at(rec, 32);
	m.maj = u32_at(rec, 40);
	m.min = u32_at(rec, 44);
	m.ino = u64_at(rec, 48);
	m.build_id_size = *((const uint8_t *)rec + 40);
	m.build_id = (const uint8_t *)rec + 44;
	m.prot = u32_at(rec, 64);
	m.flags = u32_at(rec, 68);
	m.name = str_at(rec, 72);
	return m;
}

/* Size rules and the trailer every record must carry. */
static void check_common(const struct perf_event_header *rec, uint32_t pid, uint32_t tid)
{
	struct perfrec_sample_id sid;

	cr_assert_eq(rec->size % 8, 0, "record size %u not a multiple of 8", rec->size);
	/* header.size is a u16: an overflow would show as a tiny size. */
	cr_assert_geq(rec->size, sizeof(*rec) + 8 + perfrec_sample_id__size(ST));
	cr_assert_eq(perfrec_sample_id__parse(rec, ST, &sid), 0);
	/* A FORK a nanosecond before the rest, as it happened (hotspot's order, lib/synth.c). */
	cr_assert_eq(sid.time, rec->type == PERF_RECORD_FORK ? TIME - 1 : TIME);
	cr_assert_eq(sid.id, ID);
	cr_assert_eq(sid.pid, pid, "trailer pid %u, want %u", sid.pid, pid);
	cr_assert_eq(sid.tid, tid, "trailer tid %u, want %u", sid.tid, tid);
	cr_assert_eq(sid.cpu, 0);
}

static struct perfrec_synth_opts make_opts(const char *proc, bool build_ids)
{
	struct perfrec_synth_opts o = {
		.sz = sizeof(o), .sample_type = ST, .id = ID, .time = TIME,
		.proc = proc, .build_ids = build_ids,
	};

	return o;
}

/* --- the real /proc ------------------------------------------------------ */

struct thr {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pid_t tid;
	bool done;
};

static void *thread_main(void *arg)
{
	struct thr *t = arg;

	pthread_setname_np(pthread_self(), "synth-thr");
	pthread_mutex_lock(&t->lock);
	t->tid = gettid();
	pthread_cond_broadcast(&t->cond);
	while (!t->done)
		pthread_cond_wait(&t->cond, &t->lock);
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

/* Start of the executable mapping of our own binary, per /proc/self/maps. */
static uint64_t own_exec_start(char *exe, size_t size)
{
	char line[PATH_MAX + 256];
	ssize_t n;
	FILE *f;

	n = readlink("/proc/self/exe", exe, size - 1);
	cr_assert_gt(n, 0);
	exe[n] = '\0';
	f = fopen("/proc/self/maps", "re");
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end;
		char perms[5], path[PATH_MAX] = "";

		if (sscanf(line, "%llx-%llx %4s %*s %*s %*s %4095s", &start, &end, perms, path) >= 3 &&
		    perms[2] == 'x' && !strcmp(path, exe)) {
			fclose(f);
			return start;
		}
	}
	fclose(f);
	cr_assert_fail("no executable mapping of %s in /proc/self/maps", exe);
	return 0;
}

Test(synth, tasks_from_real_proc_include_self_thread_and_binary)
{
	struct thr t = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, false };
	struct perfrec_synth_opts o = make_opts(NULL, true);
	struct collect c = {0};
	char comm[64] = "", exe[PATH_MAX];
	uint8_t exe_id[PERFREC_BUILD_ID_MAX];
	uint32_t me = (uint32_t)getpid();
	bool own_comm = false, thr_fork = false, thr_comm = false, own_map = false;
	uint64_t exe_start;
	int exe_id_len, fd;
	ssize_t n;
	pthread_t th;

	fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	n = read(fd, comm, sizeof(comm) - 1);
	close(fd);
	cr_assert_gt(n, 0);
	comm[strcspn(comm, "\n")] = '\0';
	exe_start = own_exec_start(exe, sizeof(exe));
	exe_id_len = perfrec_buildid__read_elf(exe, exe_id);

	cr_assert_eq(pthread_create(&th, NULL, thread_main, &t), 0);
	pthread_mutex_lock(&t.lock);
	while (!t.tid)
		pthread_cond_wait(&t.cond, &t.lock);
	pthread_mutex_unlock(&t.lock);

	cr_assert_eq(perfrec_synth__tasks(&o, collect_cb, &c), 0);

	pthread_mutex_lock(&t.lock);
	t.done = true;
	pthread_cond_broadcast(&t.cond);
	pthread_mutex_unlock(&t.lock);
	pthread_join(th, NULL);

	cr_assert_gt(c.nr, 3);
	for (size_t i = 0; i < c.nr; i++) {
		const struct perf_event_header *r = c.recs[i];

		cr_assert_eq(r->size % 8, 0);
		if (r->type == PERF_RECORD_COMM && u32_at(r, 8) == me) {
			uint32_t tid = u32_at(r, 12);

			check_common(r, me, tid);
			if (tid == me) {
				cr_expect_str_eq(str_at(r, 16), comm);
				own_comm = true;
			} else if (tid == (uint32_t)t.tid) {
				cr_expect_str_eq(str_at(r, 16), "synth-thr");
				/* FORK comes first so readers know the thread. */
				cr_assert(thr_fork, "thread COMM before its FORK");
				thr_comm = true;
			}
		} else if (r->type == PERF_RECORD_FORK && u32_at(r, 8) == me &&
			   u32_at(r, 16) == (uint32_t)t.tid) {
			check_common(r, me, (uint32_t)t.tid);
			cr_expect_eq(u32_at(r, 12), me, "ppid");
			cr_expect_eq(u32_at(r, 20), me, "ptid");
			cr_expect_eq(u64_at(r, 24), TIME - 1);
			thr_fork = true;
		} else if (r->type == PERF_RECORD_MMAP2 && u32_at(r, 8) == me) {
			struct mmap2 m = decode_mmap2(r);

			check_common(r, me, me);
			cr_assert(m.prot & PROT_EXEC);
			cr_assert_eq(r->misc & PERF_RECORD_MISC_CPUMODE_MASK, PERF_RECORD_MISC_USER);
			if (!strcmp(m.name, exe) && m.start == exe_start) {
				own_map = true;
				if (exe_id_len > 0) {
					cr_expect(r->misc & PERF_RECORD_MISC_MMAP_BUILD_ID);
					cr_expect_eq(m.build_id_size, exe_id_len);
					cr_expect_eq(memcmp(m.build_id, exe_id, (size_t)exe_id_len), 0);
				}
			}
		}
	}
	cr_expect(own_comm, "no COMM for our own pid %u (%s)", me, comm);
	cr_expect(thr_fork, "no FORK for thread %d", t.tid);
	cr_expect(thr_comm, "no COMM for thread %d", t.tid);
	cr_expect(own_map, "no MMAP2 of %s at %#lx", exe, (unsigned long)exe_start);
	collect_free(&c);
}

/* --- fake trees ---------------------------------------------------------- */

static void put_file(const char *dir, const char *rel, const char *text)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	f = fopen(path, "we");
	cr_assert_not_null(f, "%s", path);
	fputs(text, f);
	fclose(f);
}

static void put_dir(const char *dir, const char *rel)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	cr_assert_eq(mkdir(path, 0755), 0, "%s", path);
}

static char *make_tmp(void)
{
	char *d = strdup("/tmp/test-synth-XXXXXX");

	cr_assert_not_null(mkdtemp(d));
	return d;
}

static void rm_tree(const char *dir)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_expect_eq(system(cmd), 0);
}

/*
 * A user process 100 with an odd comm and two threads, a kernel thread 2,
 * a process 300 that vanished (no stat), and non-pid entries.
 */
static void make_fake_tasks(const char *d)
{
	put_dir(d, "100");
	put_file(d, "100/stat", "100 (my (odd) prog) S 1 100 100 0 -1 4194560 120 0 0 0\n");
	put_file(d, "100/comm", "my (odd) prog\n");
	put_file(d, "100/maps",
		 "55d0c0000000-55d0c0001000 r--p 00000000 fe:00 1234                       /usr/bin/fake\n"
		 "55d0c0001000-55d0c0005000 r-xp 00001000 fe:00 1234                       /usr/bin/fake\n"
		 "55d0c0005000-55d0c0006000 rw-p 00005000 fe:00 1234                       /usr/bin/fake\n"
		 "7f0000000000-7f0000002000 rwxp 00000000 00:00 0 \n"
		 "7f0000010000-7f0000012000 r-xs 00002000 08:01 99                         /dev/shm/with space (deleted)\n"
		 "7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0                          [vdso]");
	put_dir(d, "100/task");
	put_dir(d, "100/task/100");
	put_file(d, "100/task/100/comm", "my (odd) prog\n");
	put_dir(d, "100/task/101");
	put_file(d, "100/task/101/comm", "worker\n");
	put_dir(d, "100/task/103"); /* a workqueue-style name, longer than task->comm */
	put_file(d, "100/task/103/comm", "kworker/1:1-mm_percpu_wq\n");
	put_dir(d, "100/task/102"); /* exited: no comm */
	put_dir(d, "2");
	put_file(d, "2/stat", "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0\n");
	put_file(d, "2/comm", "kthreadd\n");
	put_file(d, "2/maps", "");
	put_dir(d, "2/task");
	put_dir(d, "2/task/2");
	put_file(d, "2/task/2/comm", "kthreadd\n");
	put_dir(d, "300");
	put_dir(d, "self");
	put_dir(d, "12ab");
	put_file(d, "uptime", "1.0 1.0\n");
}

struct want {
	uint32_t type;
	uint16_t misc;
	uint32_t pid, tid;   /* COMM, FORK (pid/tid), MMAP2 */
	uint32_t ppid, ptid; /* FORK */
	const char *str;     /* COMM comm, MMAP2 filename */
	uint64_t start, len, pgoff, ino;
	uint32_t maj, min, prot, flags;
};

static void check_want(const struct perf_event_header *r, const struct want *w, size_t i)
{
	cr_assert_eq(r->type, w->type, "record %zu: type %u, want %u", i, r->type, w->type);
	cr_assert_eq(r->misc, w->misc, "record %zu: misc %#x, want %#x", i, r->misc, w->misc);
	check_common(r, w->pid, w->tid);
	switch (w->type) {
	case PERF_RECORD_COMM:
		cr_assert_eq(u32_at(r, 8), w->pid);
		cr_assert_eq(u32_at(r, 12), w->tid);
		cr_assert_str_eq(str_at(r, 16), w->str);
		break;
	case PERF_RECORD_FORK:
		cr_assert_eq(r->size, 32 + perfrec_sample_id__size(ST));
		cr_assert_eq(u32_at(r, 8), w->pid);
		cr_assert_eq(u32_at(r, 12), w->ppid);
		cr_assert_eq(u32_at(r, 16), w->tid);
		cr_assert_eq(u32_at(r, 20), w->ptid);
		cr_assert_eq(u64_at(r, 24), TIME - 1);
		break;
	case PERF_RECORD_MMAP2: {
		struct mmap2 m = decode_mmap2(r);

		cr_assert_eq(m.pid, w->pid);
		cr_assert_eq(m.tid, w->tid);
		cr_assert_eq(m.start, w->start, "record %zu start %#lx", i, (unsigned long)m.start);
		cr_assert_eq(m.len, w->len, "record %zu len %#lx", i, (unsigned long)m.len);
		cr_assert_eq(m.pgoff, w->pgoff);
		cr_assert_eq(m.maj, w->maj);
		cr_assert_eq(m.min, w->min);
		cr_assert_eq(m.ino, w->ino);
		cr_assert_eq(u64_at(r, 56), 0, "ino_generation");
		cr_assert_eq(m.prot, w->prot);
		cr_assert_eq(m.flags, w->flags);
		cr_assert_str_eq(m.name, w->str);
		break;
	}
	default:
		cr_assert_fail("unexpected type %u", w->type);
	}
}

Test(synth, tasks_from_fake_proc_are_exactly_perfs_records)
{
	static const struct want want100[] = {
		{ PERF_RECORD_FORK, PERF_RECORD_MISC_FORK_EXEC, 100, 100, 1, 1, .str = NULL },
		{ PERF_RECORD_COMM, 0, 100, 100, .str = "my (odd) prog" },
		{ PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER, 100, 100, .str = "/usr/bin/fake",
		  .start = 0x55d0c0001000, .len = 0x4000, .pgoff = 0x1000, .maj = 0xfe, .min = 0,
		  .ino = 1234, .prot = PROT_READ | PROT_EXEC, .flags = MAP_PRIVATE },
		{ PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER, 100, 100, .str = "//anon",
		  .start = 0x7f0000000000, .len = 0x2000, .prot = PROT_READ | PROT_WRITE | PROT_EXEC,
		  .flags = MAP_PRIVATE },
		{ PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER, 100, 100, .str = "/dev/shm/with space (deleted)",
		  .start = 0x7f0000010000, .len = 0x2000, .pgoff = 0x2000, .maj = 8, .min = 1, .ino = 99,
		  .prot = PROT_READ | PROT_EXEC, .flags = MAP_SHARED },
		{ PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER, 100, 100, .str = "[vdso]",
		  .start = 0x7ffd00000000, .len = 0x2000, .prot = PROT_READ | PROT_EXEC, .flags = MAP_PRIVATE },
		{ PERF_RECORD_FORK, PERF_RECORD_MISC_FORK_EXEC, 100, 101, 100, 100, .str = NULL },
		{ PERF_RECORD_COMM, 0, 100, 101, .str = "worker" },
		{ PERF_RECORD_FORK, PERF_RECORD_MISC_FORK_EXEC, 100, 103, 100, 100, .str = NULL },
		{ PERF_RECORD_COMM, 0, 100, 103, .str = "kworker/1:1-mm_" },
	};
	static const struct want want2[] = {
		{ PERF_RECORD_FORK, PERF_RECORD_MISC_FORK_EXEC, 2, 2, 0, 0, .str = NULL },
		{ PERF_RECORD_COMM, 0, 2, 2, .str = "kthreadd" },
	};
	char *d = make_tmp();
	/* Build ids on: the binaries do not exist, so the maj/min form stays. */
	struct perfrec_synth_opts o = make_opts(d, true);
	struct collect c = {0};
	size_t n100 = 0, n2 = 0;
	unsigned seen_threads = 0;

	make_fake_tasks(d);
	cr_assert_eq(perfrec_synth__tasks(&o, collect_cb, &c), 0);
	cr_assert_eq(c.nr, 12, "got %zu records", c.nr);
	/* Processes come in readdir order; within one, the order is fixed. */
	for (size_t i = 0; i < c.nr; i++) {
		uint32_t pid = u32_at(c.recs[i], 8);

		if (pid == 100) {
			size_t w = n100++;

			cr_assert_lt(w, 10);
			/* Threads come in readdir order, each as FORK then COMM. */
			if (w >= 6) {
				uint32_t tid = u32_at(c.recs[i], w % 2 ? 12 : 16);

				w = (tid == 101 ? 6 : 8) + (w % 2);
				seen_threads |= 1u << (w - 6);
			}
			check_want(c.recs[i], &want100[w], i);
		} else if (pid == 2) {
			cr_assert_lt(n2, 2);
			check_want(c.recs[i], &want2[n2++], i);
		} else {
			cr_assert_fail("record %zu for unexpected pid %u", i, pid);
		}
	}
	cr_assert_eq(n100, 10);
	cr_assert_eq(seen_threads, 0xf, "each thread's FORK and COMM once");
	cr_assert_eq(n2, 2);
	collect_free(&c);
	rm_tree(d);
	free(d);
}

Test(synth, overlong_filename_is_truncated_to_fit_a_record)
{
	char *d = make_tmp();
	struct perfrec_synth_opts o = make_opts(d, false);
	struct collect c = {0};
	char *maps = malloc(8192);
	size_t len;
	struct mmap2 m;

	cr_assert_not_null(maps);
	len = (size_t)sprintf(maps, "400000-401000 r-xp 00000000 fe:00 7 /");
	memset(maps + len, 'a', 6000);
	maps[len + 6000] = '\n';
	maps[len + 6001] = '\0';
	put_dir(d, "400");
	put_file(d, "400/stat", "400 (long) R 1 400 400 0 -1 0 0\n");
	put_file(d, "400/comm", "long\n");
	put_file(d, "400/maps", maps);
	cr_assert_eq(perfrec_synth__tasks(&o, collect_cb, &c), 0);
	cr_assert_eq(c.nr, 3);
	m = decode_mmap2(c.recs[2]);
	cr_assert_eq(strlen(m.name), PATH_MAX - 1);
	cr_assert_eq(m.start, 0x400000);
	check_common(c.recs[2], 400, 400);
	collect_free(&c);
	free(maps);
	rm_tree(d);
	free(d);
}

Test(synth, callback_error_stops_synthesis_and_propagates)
{
	char *d = make_tmp();
	struct perfrec_synth_opts o = make_opts(d, false);

	make_fake_tasks(d);
	put_file(d, "kallsyms", "ffffffff81000000 T _text\nffffffff81200000 T _etext\n");
	put_file(d, "modules", "foo 16384 0 - Live 0xffffffffc0000000\nbar 8192 1 foo, Live 0xffffffffc0010000 (OE)\n");
	/* Fail on the first, a middle and the last record. */
	for (size_t at = 1; at <= 10; at += 4) {
		struct collect c = { .fail_at = at };

		cr_assert_eq(perfrec_synth__tasks(&o, collect_cb, &c), -ECANCELED, "fail_at %zu", at);
		cr_assert_eq(c.nr, at, "callback kept being called");
		collect_free(&c);
	}
	for (size_t at = 1; at <= 3; at++) {
		struct collect c = { .fail_at = at };

		cr_assert_eq(perfrec_synth__kernel(&o, collect_cb, &c), -ECANCELED);
		cr_assert_eq(c.nr, at);
		collect_free(&c);
	}
	{
		struct collect c = { .fail_at = 1 };

		cr_assert_eq(perfrec_synth__marker(PERFREC_RECORD_FINISHED_INIT, collect_cb, &c), -ECANCELED);
		collect_free(&c);
	}
	rm_tree(d);
	free(d);
}

Test(synth, marker_is_a_bare_header)
{
	static const uint32_t types[] = { PERFREC_RECORD_FINISHED_INIT, PERFREC_RECORD_FINISHED_ROUND };

	for (size_t i = 0; i < 2; i++) {
		struct collect c = {0};

		cr_assert_eq(perfrec_synth__marker(types[i], collect_cb, &c), 0);
		cr_assert_eq(c.nr, 1);
		cr_assert_eq(c.recs[0]->type, types[i]);
		cr_assert_eq(c.recs[0]->size, 8);
		cr_assert_eq(c.recs[0]->misc, 0);
		collect_free(&c);
	}
}

/* --- kernel --------------------------------------------------------------- */


Test(synth, kernel_map_from_real_kallsyms_starts_at_text)
{
	struct perfrec_synth_opts o = make_opts(NULL, true);
	struct collect c = {0};
	uint64_t text = test_kallsyms_addr("_text");
	struct mmap2 m;

	if (!text)
		cr_skip_test("/proc/kallsyms shows no _text address (kptr_restrict or not root)");
	cr_assert_eq(perfrec_synth__kernel(&o, collect_cb, &c), 0);
	cr_assert_geq(c.nr, 1);
	check_common(c.recs[0], (uint32_t)-1, 0);
	m = decode_mmap2(c.recs[0]);
	cr_assert_str_eq(m.name, "[kernel.kallsyms]_text");
	cr_assert_eq(m.start, text);
	cr_assert_eq(m.pgoff, text);
	cr_assert_eq(m.pid, (uint32_t)-1);
	cr_assert_eq(c.recs[0]->misc & PERF_RECORD_MISC_CPUMODE_MASK, PERF_RECORD_MISC_KERNEL);
	cr_assert_gt(m.len, 0);
	cr_assert_geq(m.start + m.len, m.start, "kernel map wraps the address space");
	for (size_t i = 1; i < c.nr; i++) {
		struct mmap2 mod = decode_mmap2(c.recs[i]);

		check_common(c.recs[i], (uint32_t)-1, 0);
		cr_assert_eq(c.recs[i]->misc & PERF_RECORD_MISC_CPUMODE_MASK, PERF_RECORD_MISC_KERNEL);
		cr_assert_gt(mod.len, 0);
	}
	{
		uint8_t id[PERFREC_BUILD_ID_MAX];
		int n = perfrec_buildid__kernel(NULL, id);

		if (n > 0) {
			cr_assert(c.recs[0]->misc & PERF_RECORD_MISC_MMAP_BUILD_ID);
			cr_assert_eq(m.build_id_size, n);
			cr_assert_eq(memcmp(m.build_id, id, (size_t)n), 0);
		}
	}
	collect_free(&c);
}

Test(synth, kernel_and_modules_from_fake_proc)
{
	char *d = make_tmp();
	struct perfrec_synth_opts o = make_opts(d, false);
	struct collect c = {0};
	struct mmap2 m;

	put_dir(d, "sys");
	put_dir(d, "sys/kernel");
	put_file(d, "sys/kernel/osrelease", "0.0.0-no-such-release\n");
	put_file(d, "kallsyms",
		 "0000000000000000 A fixed_percpu_data\n"
		 "ffffffff81000000 T _stext\n"
		 "ffffffff81000000 T _text\n"
		 "ffffffff81000010 t _textx\n"
		 "ffffffff81234000 T _etext\n"
		 "ffffffffc0000000 t foo_init\t[foo]\n");
	put_file(d, "modules",
		 "foo 16384 0 - Live 0xffffffffc0000000\n"
		 "bar_baz 8192 1 foo, Live 0xffffffffc0010000 (OE)\n"
		 "hidden 4096 0 - Live 0x0000000000000000\n");
	cr_assert_eq(perfrec_synth__kernel(&o, collect_cb, &c), 0);
	cr_assert_eq(c.nr, 3);
	m = decode_mmap2(c.recs[0]);
	cr_assert_str_eq(m.name, "[kernel.kallsyms]_text");
	cr_assert_eq(m.start, 0xffffffff81000000ULL);
	cr_assert_eq(m.pgoff, 0xffffffff81000000ULL);
	cr_assert_eq(m.len, 0x234000);
	cr_assert_eq(m.maj, 0);
	cr_assert_eq(m.ino, 0);
	cr_assert_eq(c.recs[0]->misc, PERF_RECORD_MISC_KERNEL);
	m = decode_mmap2(c.recs[1]);
	cr_assert_str_eq(m.name, "[foo]");
	cr_assert_eq(m.start, 0xffffffffc0000000ULL);
	cr_assert_eq(m.len, 16384);
	cr_assert_eq(m.pgoff, 0);
	m = decode_mmap2(c.recs[2]);
	cr_assert_str_eq(m.name, "[bar_baz]");
	cr_assert_eq(m.start, 0xffffffffc0010000ULL);
	cr_assert_eq(m.len, 8192);
	for (size_t i = 0; i < c.nr; i++)
		check_common(c.recs[i], (uint32_t)-1, 0);
	collect_free(&c);

	/* kptr_restrict: addresses read as zeros, nothing is emitted. */
	put_file(d, "kallsyms", "0000000000000000 T _text\n0000000000000000 T _etext\n");
	c = (struct collect){0};
	cr_assert_eq(perfrec_synth__kernel(&o, collect_cb, &c), -EPERM);
	cr_assert_eq(c.nr, 0);
	collect_free(&c);
	rm_tree(d);
	free(d);
}

Test(synth, kernel_text_of_the_real_kernel_is_what_kallsyms_says)
{
	struct perfrec_synth_opts o = make_opts(NULL, false);
	uint64_t text = test_kallsyms_addr("_text"), etext = test_kallsyms_addr("_etext"), t = 0, e = 0;

	if (!text || !etext)
		cr_skip_test("/proc/kallsyms shows no _text/_etext address (kptr_restrict or not root)");
	/* Root: on x86-64 this takes the /proc/iomem path, which must agree. */
	cr_assert_eq(perfrec_synth__kernel_text(&o, &t, &e), 0);
	cr_assert_eq(t, text, "_text %#" PRIx64 " != kallsyms' %#" PRIx64, t, text);
	cr_assert_eq(e, etext, "_etext %#" PRIx64 " != kallsyms' %#" PRIx64, e, etext);
}

Test(synth, kernel_text_size_comes_from_iomem_else_from_kallsyms)
{
	char *d = make_tmp();
	struct perfrec_synth_opts o = make_opts(d, false);
	struct collect c = {0};
	uint64_t t = 0, e = 0;

	put_file(d, "kallsyms",
		 "0000000000000000 A fixed_percpu_data\n"
		 "ffffffff81000000 T _text\n"
		 "ffffffff81234000 T _etext\n");
	/* iomem hidden (no CAP_SYS_ADMIN: zeros): _etext from kallsyms. */
	put_file(d, "iomem", "00000000-00000000 : Reserved\n  00000000-00000000 : Kernel code\n");
	cr_assert_eq(perfrec_synth__kernel_text(&o, &t, &e), 0);
	cr_assert_eq(t, 0xffffffff81000000ULL);
	cr_assert_eq(e, 0xffffffff81234000ULL);
#if defined(__x86_64__)
	/* Shown: "Kernel code" is __pa(_text)..__pa(_etext)-1, kallsyms is not read for _etext. */
	put_file(d, "iomem",
		 "00000000-00000fff : Reserved\n"
		 "01000000-7ffdffff : System RAM\n"
		 "  01000000-01555fff : Kernel code\n"
		 "  02400000-02e0cfff : Kernel rodata\n");
	put_file(d, "kallsyms", "ffffffff81000000 T _text\n");
	cr_assert_eq(perfrec_synth__kernel_text(&o, &t, &e), 0);
	cr_assert_eq(t, 0xffffffff81000000ULL);
	cr_assert_eq(e, 0xffffffff81556000ULL);
	cr_assert_eq(perfrec_synth__kernel(&o, collect_cb, &c), 0);
	cr_assert_eq(c.nr, 1);
	cr_assert_eq(decode_mmap2(c.recs[0]).len, 0x556000);
	collect_free(&c);
#endif
	/* Hidden addresses: -EPERM, as perfrec_synth__kernel(). */
	put_file(d, "kallsyms", "0000000000000000 T _text\n0000000000000000 T _etext\n");
	cr_assert_eq(perfrec_synth__kernel_text(&o, &t, &e), -EPERM);
	cr_assert_eq(perfrec_synth__kernel_text(&o, NULL, &e), -EINVAL);
	rm_tree(d);
	free(d);
}

Test(synth, kernel_bounds_given_by_the_caller_spare_kallsyms)
{
	char *d = make_tmp();
	struct perfrec_synth_opts o = make_opts(d, false);
	struct collect c = {0};
	struct mmap2 m;

	/* No kallsyms at all: only the caller's bounds can make the map. */
	o.kernel_text = 0xffffffff91000000ULL;
	o.kernel_etext = 0xffffffff92000000ULL;
	cr_assert_eq(perfrec_synth__kernel(&o, collect_cb, &c), 0);
	cr_assert_eq(c.nr, 1);
	m = decode_mmap2(c.recs[0]);
	cr_assert_str_eq(m.name, "[kernel.kallsyms]_text");
	cr_assert_eq(m.start, 0xffffffff91000000ULL);
	cr_assert_eq(m.pgoff, 0xffffffff91000000ULL);
	cr_assert_eq(m.len, 0x1000000);
	collect_free(&c);
	/* Bounds that make no range are not used: kallsyms is read (and is missing). */
	o.kernel_etext = o.kernel_text;
	c = (struct collect){0};
	cr_assert_eq(perfrec_synth__kernel(&o, collect_cb, &c), -ENOENT);
	cr_assert_eq(c.nr, 0);
	collect_free(&c);
	rm_tree(d);
	free(d);
}

/* A recording of some processes carries their state only. */
Test(synth, pid_filter_keeps_only_the_listed_processes)
{
	static const uint32_t only100[] = { 100 }, only2[] = { 2, 999 }, none[] = { 999 };
	static const struct {
		const uint32_t *pids;
		size_t nr;
		size_t want_recs;   /* records in all */
		uint32_t want_pid;  /* the one pid they are all about; 0: any */
	} t[] = {
		{ only100, 1, 10, 100 },
		{ only2, 2, 2, 2 },
		{ none, 1, 0, 0 },
		{ NULL, 3, 12, 0 },   /* no list: nr_pids ignored, every process */
		{ only100, 0, 12, 0 }, /* empty list: every process */
	};
	char *d = make_tmp();

	make_fake_tasks(d);
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct perfrec_synth_opts o = make_opts(d, false);
		struct collect c = {0};

		o.pids = t[i].pids;
		o.nr_pids = t[i].nr;
		cr_assert_eq(perfrec_synth__tasks(&o, collect_cb, &c), 0);
		cr_assert_eq(c.nr, t[i].want_recs, "case %zu: %zu records", i, c.nr);
		for (size_t k = 0; t[i].want_pid && k < c.nr; k++)
			cr_assert_eq(u32_at(c.recs[k], 8), t[i].want_pid, "case %zu record %zu", i, k);
		collect_free(&c);
	}
	rm_tree(d);
	free(d);
}
