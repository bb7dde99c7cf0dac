// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A build-id cache kept while recording.  perf record copies the binaries
 * its file references into ~/.debug at exit; a recorder that runs for
 * months must do it as it goes, or a container's binary, or one deleted
 * since, is gone by the time anyone reads the file.
 *
 * When to copy: when the MMAP2 is seen, not when the file is published.
 * By the publish, short-lived processes (a container's job, a build step)
 * have exited, and with them /proc/PID/map_files and /proc/PID/root, the
 * only ways to a deleted file or one in another mount namespace.  The
 * MMAP2 is drained within a flush interval of the mmap(), while the process
 * almost always still runs.  Copying every executable mapping's binary
 * once per build id costs one copy per distinct binary the host runs,
 * which the size cap bounds.
 *
 * The drain thread only looks the build id up in a hash set and queues a
 * job; a worker thread copies, so a large binary never stalls draining.
 * A full queue drops jobs (counted, logged once): the copy is a help to
 * readers, not part of the file.  Entries are hard links where the binary
 * is on the cache's file system (as perf's cache does), else copies
 * written beside and renamed, so a reader never sees half a binary.  The
 * cache's size is the sum of its entries' sizes; past the cap, the entries
 * with the oldest ctime (when they entered) are removed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <linux/perf_event.h>
#include <perfrec/buildid.h>
#include <perfrec/pdreader.h>

#include "bidcache.h"
#include "fsutil.h"
#include "vdso.h"
#include "log.h"

#define QUEUE_LEN 1024
/* Binaries held open in the queue at most: fds are the recorder's too. */
#define MAX_HELD_FDS 64
#define BID_MAX PERFREC_BUILD_ID_MAX

struct job {
	bool kernel;            /* the running kernel's kallsyms, not a binary */
	int fd;                 /* the binary, opened when queued; -1: open it when copying */
	uint32_t pid;
	uint64_t start, end;
	uint8_t bid[BID_MAX];
	uint8_t bid_len;
	char *path;
};

struct entry {
	uint8_t bid[BID_MAX];
	uint8_t bid_len;
	bool kernel;            /* a directory holding the kernel's kallsyms */
	uint64_t size;
	struct timespec ctime;
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;         /* jobs queued, or the worker idle / asked to stop */
	bool running, stop;
	pthread_t worker;
	char *dir;
	uint64_t max_bytes;

	struct job queue[QUEUE_LEN];
	size_t head, nr;
	unsigned held_fds;           /* queued jobs with fd >= 0 */
	bool hold;                   /* bidcache_hold(): the worker takes no job */
	bool busy;                   /* the worker holds a job */
	unsigned dropped;
	bool warned_drop, warned_copy;

	/* build ids in the cache or queued: the drain thread's only lookup */
	struct { uint8_t bid[BID_MAX + 1]; bool used; } *seen;
	size_t seen_cap, seen_used;

	/* the worker's own */
	struct entry *entries;
	size_t nr_entries, cap_entries;
	uint64_t total;
	unsigned added;
} bc = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

static void hex(const uint8_t *bid, uint8_t len, char out[2 * BID_MAX + 1])
{
	for (uint8_t i = 0; i < len; i++)
		sprintf(out + 2 * i, "%02x", bid[i]);
	out[2 * len] = 0;
}

static int unhex(const char *s, uint8_t *out, size_t max)
{
	size_t n = 0;

	while (s[0] && s[1] && n < max) {
		unsigned v;

		if (sscanf(s, "%2x", &v) != 1)
			return -EINVAL;
		out[n++] = (uint8_t)v;
		s += 2;
	}
	return *s ? -EINVAL : (int)n;
}

static size_t seen_hash(const uint8_t *k)
{
	size_t h = 14695981039346656037ull;

	for (unsigned i = 0; i <= k[0] && i <= BID_MAX; i++)
		h = (h ^ k[i]) * 1099511628211ull;
	return h;
}

/* Under bc.lock: add @bid to the set; false if it was there (or no memory). */
static bool seen_add(const uint8_t *bid, uint8_t len)
{
	uint8_t key[BID_MAX + 1] = { len };
	size_t i, mask;

	memcpy(key + 1, bid, len);
	if ((bc.seen_used + 1) * 2 > bc.seen_cap) {
		size_t ncap = bc.seen_cap ? bc.seen_cap * 2 : 1024;
		__typeof__(bc.seen) n = calloc(ncap, sizeof(*n));

		if (!n)
			return false;
		for (size_t j = 0; j < bc.seen_cap; j++) {
			if (!bc.seen[j].used)
				continue;
			for (i = seen_hash(bc.seen[j].bid) & (ncap - 1); n[i].used; i = (i + 1) & (ncap - 1))
				;
			n[i] = bc.seen[j];
		}
		free(bc.seen);
		bc.seen = n;
		bc.seen_cap = ncap;
	}
	mask = bc.seen_cap - 1;
	for (i = seen_hash(key) & mask; bc.seen[i].used; i = (i + 1) & mask)
		if (!memcmp(bc.seen[i].bid, key, sizeof(key)))
			return false;
	memcpy(bc.seen[i].bid, key, sizeof(key));
	bc.seen[i].used = true;
	bc.seen_used++;
	return true;
}

static int add_entry(const uint8_t *bid, uint8_t len, bool kernel, uint64_t size, struct timespec ctime)
{
	if (bc.nr_entries == bc.cap_entries) {
		size_t n = bc.cap_entries ? bc.cap_entries * 2 : 256;
		struct entry *e = reallocarray(bc.entries, n, sizeof(*e));

		if (!e)
			return -ENOMEM;
		bc.entries = e;
		bc.cap_entries = n;
	}
	memset(&bc.entries[bc.nr_entries], 0, sizeof(bc.entries[0]));
	memcpy(bc.entries[bc.nr_entries].bid, bid, len);
	bc.entries[bc.nr_entries].bid_len = len;
	bc.entries[bc.nr_entries].kernel = kernel;
	bc.entries[bc.nr_entries].size = size;
	bc.entries[bc.nr_entries].ctime = ctime;
	bc.nr_entries++;
	bc.total += size;
	return 0;
}

static void entry_path(const char *dir, const uint8_t *bid, uint8_t len, char *out, size_t sz)
{
	char h[2 * BID_MAX + 1];

	hex(bid, len, h);
	snprintf(out, sz, "%s/.build-id/%.2s/%s", dir, h, h + 2);
}

/* An entry and its upload marker; a kernel's is a directory with kallsyms in it. */
static int remove_entry(const char *path, bool kernel)
{
	char p[PATH_MAX + 32];
	int r;

	if (kernel) {
		snprintf(p, sizeof(p), "%s/kallsyms.uploaded", path);
		unlink(p);
		snprintf(p, sizeof(p), "%s/kallsyms", path);
		r = unlink(p);
		if ((r == 0 || errno == ENOENT) && rmdir(path) < 0 && errno != ENOENT)
			return -errno;
		return r < 0 && errno != ENOENT ? -errno : 0;
	}
	snprintf(p, sizeof(p), "%s.uploaded", path);
	unlink(p);
	return unlink(path) < 0 && errno != ENOENT ? -errno : 0;
}

/* Remove the oldest entries until the cache fits its cap. */
static void evict(const char *dir, uint64_t max_bytes)
{
	while (bc.total > max_bytes && bc.nr_entries) {
		size_t old = 0;
		char path[PATH_MAX];

		for (size_t i = 1; i < bc.nr_entries; i++) {
			const struct timespec *a = &bc.entries[i].ctime, *b = &bc.entries[old].ctime;

			if (a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec))
				old = i;
		}
		entry_path(dir, bc.entries[old].bid, bc.entries[old].bid_len, path, sizeof(path));
		if (remove_entry(path, bc.entries[old].kernel) < 0)
			log_warning("Build-id cache: cannot remove %s: %m", path);
		else
			log_debug("Build-id cache: evicted %s", path);
		bc.total -= bc.entries[old].size;
		bc.entries[old] = bc.entries[--bc.nr_entries];
	}
}

/* What the cache holds already (a restart keeps it); half-written copies go. */
static void scan(const char *dir)
{
	char top[PATH_MAX];
	DIR *d;
	struct dirent *de;

	snprintf(top, sizeof(top), "%s/.build-id", dir);
	d = opendir(top);
	if (!d)
		return;
	while ((de = readdir(d))) {
		struct dirent *fe;
		DIR *s;
		int fd;

		if (strlen(de->d_name) != 2)
			continue;
		fd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			continue;
		s = fdopendir(fd);
		if (!s) {
			close(fd);
			continue;
		}
		while ((fe = readdir(s))) {
			char name[2 * BID_MAX + 1];
			uint8_t bid[BID_MAX];
			struct stat st;
			int n;

			if (fe->d_name[0] == '.') {
				if (!strncmp(fe->d_name, ".tmp-", 5))
					unlinkat(dirfd(s), fe->d_name, 0);
				continue;
			}
			if (snprintf(name, sizeof(name), "%s%s", de->d_name, fe->d_name) >= (int)sizeof(name) ||
			    (n = unhex(name, bid, sizeof(bid))) <= 0 ||
			    fstatat(dirfd(s), fe->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
				continue;
			if (S_ISDIR(st.st_mode)) {
				/* A kernel's: its kallsyms is the entry. */
				char k[300];

				snprintf(k, sizeof(k), "%s/kallsyms.tmp", fe->d_name);
				unlinkat(dirfd(s), k, 0);
				snprintf(k, sizeof(k), "%s/kallsyms", fe->d_name);
				if (fstatat(dirfd(s), k, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
				    seen_add(bid, (uint8_t)n))
					add_entry(bid, (uint8_t)n, true, (uint64_t)st.st_size, st.st_ctim);
				continue;
			}
			if (S_ISREG(st.st_mode) && seen_add(bid, (uint8_t)n))
				add_entry(bid, (uint8_t)n, false, (uint64_t)st.st_size, st.st_ctim);
		}
		closedir(s);
	}
	closedir(d);
}

static int mkdirs(const char *dir, const char *h)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/.build-id/%.2s", dir, h);
	for (char *q = p + 1; *q; q++) {
		if (*q != '/')
			continue;
		*q = 0;
		if (mkdir(p, 0755) < 0 && errno != EEXIST)
			return -errno;
		*q = '/';
	}
	if (mkdir(p, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

static int copy_fd(int in, int out)
{
	for (;;) {
		ssize_t n = copy_file_range(in, NULL, out, NULL, 1 << 30, 0);

		if (n == 0)
			return 0;
		if (n > 0)
			continue;
		if (errno != EXDEV && errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
			return -errno;
		break;
	}
	/* copy_file_range() cannot do this pair: plain reads and writes. */
	for (;;) {
		char buf[65536];
		ssize_t n = read(in, buf, sizeof(buf)), done = 0;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : 0;
		while (done < n) {
			ssize_t w = write(out, buf + done, (size_t)(n - done));

			if (w < 0)
				return -errno;
			done += w;
		}
	}
}

/* The binary of @j, opened while its process lives, if its build id is @j's. */
static int open_binary(const struct job *j)
{
	char src[PATH_MAX + 64], self[64];
	uint8_t id[BID_MAX];

	if (!strcmp(j->path, VDSO_MAP_NAME))
		return vdso_memfd(j->bid, j->bid_len);   /* the kernel's: ours, if the ids match */

	/*
	 * map_files reaches any mapped file, deleted or in another mount
	 * namespace, but needs CAP_SYS_ADMIN (or CAP_CHECKPOINT_RESTORE), which
	 * perfrecd drops; exe (ptrace access: CAP_SYS_PTRACE) reaches the
	 * program itself, deleted or not; root reaches files that still have
	 * their name in the process's mount namespace.
	 */
	for (int how = 0; how < 3; how++) {
		int fd, n;

		if (how == 0)
			snprintf(src, sizeof(src), "/proc/%u/map_files/%llx-%llx", j->pid,
				 (unsigned long long)j->start, (unsigned long long)j->end);
		else if (how == 1)
			snprintf(src, sizeof(src), "/proc/%u/exe", j->pid);
		else
			snprintf(src, sizeof(src), "/proc/%u/root%s", j->pid, j->path);
		fd = open_regular(AT_FDCWD, src);   /* a FIFO there must not block the worker */
		if (fd < 0)
			continue;
		snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
		n = perfrec_buildid__read_elf(self, id);
		if (n == j->bid_len && !memcmp(id, j->bid, (size_t)n))
			return fd;
		close(fd);
	}
	return -ENOENT;
}

/*
 * Worker: the running kernel's kallsyms as DIR/.build-id/xx/yyyy/kallsyms,
 * where perf report (--buildid-dir) and the symbolizer look for another
 * kernel's symbols: a file read on another host, or after a reboot into
 * another kernel, still names its kernel frames.  Only when @j's build id
 * is the running kernel's; 0600: addresses give KASLR away.
 */
static int take_in_kernel(const struct job *j, const char *dir, uint64_t max_bytes)
{
	char h[2 * BID_MAX + 1], base[PATH_MAX], dst[PATH_MAX + 16], tmp[PATH_MAX + 16];
	uint8_t id[BID_MAX];
	struct stat st;
	int in, out, r, n = perfrec_buildid__kernel(NULL, id);

	if (n != j->bid_len || memcmp(id, j->bid, (size_t)n))
		return -ESRCH;   /* a file's map of another kernel: nothing here to copy */
	hex(j->bid, j->bid_len, h);
	entry_path(dir, j->bid, j->bid_len, base, sizeof(base));
	snprintf(dst, sizeof(dst), "%s/kallsyms", base);
	if (lstat(dst, &st) == 0)
		return -EEXIST;
	r = mkdirs(dir, h);
	if (r < 0)
		return r;
	if (mkdir(base, 0755) < 0 && errno != EEXIST)
		return -errno;
	in = open("/proc/kallsyms", O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	snprintf(tmp, sizeof(tmp), "%s/kallsyms.tmp", base);
	out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (out < 0) {
		r = -errno;
		close(in);
		return r;
	}
	r = copy_fd(in, out);
	close(in);
	if (close(out) < 0 && !r)
		r = -errno;
	if (!r && (lstat(tmp, &st) < 0 || (uint64_t)st.st_size > max_bytes))
		r = -EFBIG;
	if (!r && rename(tmp, dst) < 0)
		r = -errno;
	if (r < 0) {
		unlink(tmp);
		return r;
	}
	if (lstat(dst, &st) < 0)
		return -errno;
	add_entry(j->bid, j->bid_len, true, (uint64_t)st.st_size, st.st_ctim);
	bc.added++;
	log_debug("Build-id cache: the kernel's kallsyms as %s", dst);
	evict(dir, max_bytes);
	return 0;
}

/* Worker: one binary into the cache (j->fd is closed).  Returns 0, -EEXIST if there, or -errno. */
static int take_in(const struct job *j, const char *dir, uint64_t max_bytes)
{
	char h[2 * BID_MAX + 1], dst[PATH_MAX], tmp[PATH_MAX], self[64];
	struct stat st;
	int in, out, r;

	hex(j->bid, j->bid_len, h);
	entry_path(dir, j->bid, j->bid_len, dst, sizeof(dst));
	if (lstat(dst, &st) == 0) {
		if (j->fd >= 0)
			close(j->fd);
		return -EEXIST;
	}
	in = j->fd >= 0 ? j->fd : open_binary(j);
	if (in < 0)
		return in;
	if (fstat(in, &st) < 0 || (uint64_t)st.st_size > max_bytes) {
		close(in);
		return -EFBIG;
	}
	r = mkdirs(dir, h);
	if (r < 0) {
		close(in);
		return r;
	}
	/* A hard link costs nothing where the binary still has a name on our file system. */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", in);
	if (linkat(AT_FDCWD, self, AT_FDCWD, dst, AT_SYMLINK_FOLLOW) == 0)
		goto added;
	snprintf(tmp, sizeof(tmp), "%s/.build-id/%.2s/.tmp-%s", dir, h, h + 2);
	/* No more readable than the binary was: a 0700 program stays its owner's. */
	out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (out < 0) {
		r = -errno;
		close(in);
		return r;
	}
	r = fchmod(out, st.st_mode & 0755) < 0 ? -errno : 0;
	if (!r)
		r = copy_fd(in, out);
	if (close(out) < 0 && !r)
		r = -errno;
	if (!r && rename(tmp, dst) < 0)
		r = -errno;
	if (r < 0) {
		unlink(tmp);
		close(in);
		return r;
	}
added:
	close(in);
	if (lstat(dst, &st) < 0)
		return -errno;
	add_entry(j->bid, j->bid_len, false, (uint64_t)st.st_size, st.st_ctim);
	bc.added++;
	log_debug("Build-id cache: %s from pid %u (%s)", j->path, j->pid, dst);
	evict(dir, max_bytes);
	return 0;
}

static void *worker(void *arg)
{
	pthread_mutex_lock(&bc.lock);
	for (;;) {
		struct job j;
		char *dir;
		uint64_t max;
		int r;

		while ((!bc.nr || bc.hold) && !bc.stop)
			pthread_cond_wait(&bc.cond, &bc.lock);
		if (bc.stop)
			break;
		/*
		 * Newest first: a process just started may be gone in a
		 * second, while the synthesized backlog (every process alive
		 * when recording began) mostly stays; and a binary held open
		 * in its job is safe whenever it comes.
		 */
		j = bc.queue[(bc.head + bc.nr - 1) % QUEUE_LEN];
		bc.nr--;
		if (j.fd >= 0)
			bc.held_fds--;
		bc.busy = true;
		dir = bc.dir;
		max = bc.max_bytes;
		pthread_mutex_unlock(&bc.lock);
		/* bc.dir only changes with the worker stopped (bidcache_clear()). */
		r = j.kernel ? take_in_kernel(&j, dir, max) : take_in(&j, dir, max);
		pthread_mutex_lock(&bc.lock);
		if (r < 0 && r != -EEXIST && r != -ENOENT && r != -ESRCH && !bc.warned_copy) {
			bc.warned_copy = true;
			log_warning("Build-id cache: cannot copy %s into %s: %s (further failures at debug level)",
				    j.path, dir, strerror(-r));
		} else if (r < 0 && r != -EEXIST) {
			log_debug("Build-id cache: %s of pid %u not taken in: %s", j.path, j.pid, strerror(-r));
		}
		free(j.path);
		bc.busy = false;
		pthread_cond_broadcast(&bc.cond);
	}
	pthread_mutex_unlock(&bc.lock);
	return NULL;
}

/* Under bc.lock: the cache at @dir, worker running. */
static int start(const char *dir, uint64_t max_bytes)
{
	int r;

	bc.dir = strdup(dir);
	if (!bc.dir)
		return -ENOMEM;
	bc.max_bytes = max_bytes ? max_bytes : BIDCACHE_DEFAULT_SIZE;
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		log_warning("Build-id cache: cannot create %s: %m", dir);
	scan(dir);
	evict(dir, bc.max_bytes);
	bc.stop = false;
	r = -pthread_create(&bc.worker, NULL, worker, NULL);
	if (r < 0) {
		log_warning("Build-id cache: cannot start its thread: %s", strerror(-r));
		free(bc.dir);
		bc.dir = NULL;
		return r;
	}
	bc.running = true;
	log_info("Build-id cache at %s (%llu entries, %llu of %llu bytes)", dir,
		 (unsigned long long)bc.nr_entries, (unsigned long long)bc.total,
		 (unsigned long long)bc.max_bytes);
	return 0;
}

void bidcache_note_mmap2(const char *dir, uint64_t max_bytes, const struct perf_event_header *rec)
{
	const uint8_t *p = (const uint8_t *)rec;
	const char *name = (const char *)p + 72;
	struct job *j;
	uint32_t pid, prot;
	uint8_t len;
	bool kernel;

	if (!dir || !*dir || rec->type != PERF_RECORD_MMAP2 || rec->size <= 72 ||
	    !(rec->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) || !memchr(name, 0, rec->size - 72))
		return;
	memcpy(&pid, p + 8, 4);
	memcpy(&prot, p + 64, 4);
	len = p[40];
	kernel = pid == UINT32_MAX && !strncmp(name, "[kernel.kallsyms]", 17);
	if (!len || len > BID_MAX || (!kernel && (pid == UINT32_MAX || !pid || !(prot & PROT_EXEC) ||
					(name[0] != '/' && strcmp(name, VDSO_MAP_NAME)))))
		return;

	pthread_mutex_lock(&bc.lock);
	if (bc.running && (strcmp(bc.dir, dir) || bc.max_bytes != (max_bytes ? max_bytes : BIDCACHE_DEFAULT_SIZE))) {
		pthread_mutex_unlock(&bc.lock);
		bidcache_clear();   /* a reload moved or resized it */
		pthread_mutex_lock(&bc.lock);
	}
	if (!bc.running && start(dir, max_bytes) < 0)
		goto out;
	if (bc.nr == QUEUE_LEN) {
		bc.dropped++;
		if (!bc.warned_drop) {
			bc.warned_drop = true;
			log_warning("Build-id cache: more new binaries than its queue holds; some are not cached");
		}
		goto out;
	}
	if (!seen_add(p + 44, len))
		goto out;
	j = &bc.queue[(bc.head + bc.nr) % QUEUE_LEN];
	memset(j, 0, sizeof(*j));
	j->path = strdup(name);
	if (!j->path)
		goto out;
	j->pid = pid;
	memcpy(&j->start, p + 16, 8);
	memcpy(&j->end, p + 24, 8);
	j->end += j->start;
	memcpy(j->bid, p + 44, len);
	j->bid_len = len;
	j->kernel = kernel;
	/*
	 * Opened now, while the process surely lives (a few syscalls, once
	 * per new build id): the copy may come seconds later, behind others.
	 */
	j->fd = !kernel && bc.held_fds < MAX_HELD_FDS ? open_binary(j) : -1;
	if (j->fd >= 0)
		bc.held_fds++;
	else
		j->fd = -1;
	bc.nr++;
	pthread_cond_broadcast(&bc.cond);
out:
	pthread_mutex_unlock(&bc.lock);
}

/* Has @entry gone to @key already?  Its marker holds the last key it went to. */
static bool shipped(const char *entry, const char *key)
{
	char marker[PATH_MAX + 16], old[1024];
	ssize_t n;
	int fd;

	snprintf(marker, sizeof(marker), "%s.uploaded", entry);
	fd = open(marker, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, old, sizeof(old) - 1);
	close(fd);
	if (n <= 0)
		return false;
	old[n] = 0;
	return !strcmp(old, key);
}

static void mark_shipped(const char *entry, const char *key)
{
	char marker[PATH_MAX + 16];
	int fd;

	snprintf(marker, sizeof(marker), "%s.uploaded", entry);
	fd = open(marker, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return;   /* shipped again next time: harmless */
	if (write(fd, key, strlen(key)) < 0)
		log_debug("Build-id cache: cannot write %s: %m", marker);
	close(fd);
}

int bidcache_ship_entries(const char *dir, const char *path, const char *file_key,
			  int (*put)(void *ctx, const char *entry, const char *key), void *ctx)
{
	struct perfrec_pdreader_opts ro = { .sz = sizeof(ro) };
	struct perfrec_pdreader *r = NULL;
	const char *slash = strrchr(file_key, '/');
	int keydir = slash ? (int)(slash - file_key + 1) : 0;
	const uint8_t *p, *end;
	const void *data;
	size_t len;
	int ret;

	if (!dir || !*dir)
		return 0;
	ret = perfrec_pdreader__open(path, &ro, &r);
	if (ret < 0)
		return ret;
	if (perfrec_pdreader__feature(r, PERFREC_FEAT_BUILD_ID, &data, &len) < 0) {
		perfrec_pdreader__free(r);
		return 0;
	}
	/* Entries: header, pid, build_id[24] (length in byte 20 with misc bit 15), name. */
	for (p = data, end = p + len; (size_t)(end - p) >= 36 && !ret;) {
		struct perf_event_header h;
		char entry[PATH_MAX], hx[2 * BID_MAX + 1], *key = NULL;
		uint8_t blen;
		struct stat st;

		memcpy(&h, p, sizeof(h));
		if (h.size < 36 || h.size > (size_t)(end - p))
			break;
		blen = (h.misc & (1u << 15)) ? p[32] : BID_MAX;
		if (blen && blen <= BID_MAX) {
			bool kdir;

			entry_path(dir, p + 12, blen, entry, sizeof(entry));
			hex(p + 12, blen, hx);
			/* A kernel's entry is its directory's kallsyms. */
			kdir = lstat(entry, &st) == 0 && S_ISDIR(st.st_mode) && strlen(entry) + 10 < sizeof(entry);
			if (kdir)
				strcat(entry, "/kallsyms");
			if (lstat(entry, &st) == 0 && S_ISREG(st.st_mode)) {
				if (asprintf(&key, "%.*s.build-id/%.2s/%s%s", keydir, file_key, hx, hx + 2,
					     kdir ? "/kallsyms" : "") < 0) {
					ret = -ENOMEM;
					break;
				}
				if (!shipped(entry, key)) {
					ret = put(ctx, entry, key);
					if (!ret)
						mark_shipped(entry, key);
				}
				free(key);
			}
		}
		p += h.size;
	}
	perfrec_pdreader__free(r);
	return ret;
}

void bidcache_hold(bool hold)
{
	pthread_mutex_lock(&bc.lock);
	bc.hold = hold;
	pthread_cond_broadcast(&bc.cond);
	pthread_mutex_unlock(&bc.lock);
}

unsigned bidcache_sync(void)
{
	unsigned n;

	pthread_mutex_lock(&bc.lock);
	while (bc.running && !bc.hold && (bc.nr || bc.busy))
		pthread_cond_wait(&bc.cond, &bc.lock);
	n = bc.added;
	pthread_mutex_unlock(&bc.lock);
	return n;
}

void bidcache_clear(void)
{
	pthread_mutex_lock(&bc.lock);
	if (bc.running) {
		bc.stop = true;
		pthread_cond_broadcast(&bc.cond);
		pthread_mutex_unlock(&bc.lock);
		pthread_join(bc.worker, NULL);
		pthread_mutex_lock(&bc.lock);
		bc.running = false;
	}
	for (size_t i = 0; i < bc.nr; i++) {
		struct job *j = &bc.queue[(bc.head + i) % QUEUE_LEN];

		free(j->path);
		if (j->fd >= 0)
			close(j->fd);
	}
	bc.head = bc.nr = 0;
	bc.held_fds = 0;
	free(bc.dir);
	bc.dir = NULL;
	free(bc.seen);
	bc.seen = NULL;
	bc.seen_cap = bc.seen_used = 0;
	free(bc.entries);
	bc.entries = NULL;
	bc.nr_entries = bc.cap_entries = 0;
	bc.total = 0;
	bc.added = 0;
	bc.dropped = 0;
	bc.warned_drop = bc.warned_copy = false;
	pthread_mutex_unlock(&bc.lock);
}
