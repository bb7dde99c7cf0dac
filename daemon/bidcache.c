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
 * is on the cache's file system (as perf's cache does) and not set-id,
 * else copies written beside and renamed, so a reader never sees half a
 * binary.  The cache's size is the sum of its entries' sizes; past the
 * cap, the entries with the oldest ctime (when they entered) are removed,
 * the running kernel's kallsyms, which every file of this boot needs, last.
 *
 * Who may read it: a hard link shares the binary's inode and mode, so a
 * 0755 program in a 0700 directory would be anyone's through the cache.
 * The cache is therefore the daemon's user's and group's only, like the
 * recordings: DIR/.build-id and below are 0750 (an older cache's 0755
 * .build-id is tightened at start), copies lose the binary's bits for
 * others.  A link's mode is never changed: that would change the binary's.
 * And the cache is written with root's rights, in a directory someone may
 * share: DIR must be safe (safedir_open(): no symbolic link, not writable
 * by others), and every name below it is opened with openat() and
 * O_NOFOLLOW, so a planted .build-id link is refused, never followed.
 */
#include <dirent.h>
#include <grp.h>
#include <pwd.h>
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
#include <sys/statvfs.h>
#include <sys/types.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <linux/perf_event.h>
#include <perfrec/buildid.h>
#include <perfrec/pdreader.h>

#include "bidcache.h"
#include "config.h"
#include "drain.h"
#include "fsutil.h"
#include "vdso.h"
#include "log.h"
#include "safename.h"

#define QUEUE_LEN 1024
/* Binaries held open in the queue at most: fds are the recorder's too. */
#define MAX_HELD_FDS 64
#define BID_MAX PERFREC_BUILD_ID_MAX

struct job {
	bool kernel;            /* the running kernel's kallsyms, not a binary */
	bool made;              /* an entry made in the cache already (bidcache_note_entry()) */
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
	char *failed_dir;            /* the cache start() found unusable: not tried again */
	int bidfd;                   /* DIR/.build-id, opened safely (bc.dir's) */
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
} bc = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER, .bidfd = -1 };

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

/* .build-id/@h's first two digits, the directory of an entry: never a link.  -errno if it cannot be. */
static int open_sub(const char *h, bool create)
{
	char sub[3] = { h[0], h[1], 0 };
	int fd;

	if (create && mkdirat(bc.bidfd, sub, 0750) < 0 && errno != EEXIST)
		return -errno;
	fd = openat(bc.bidfd, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	/* O_DIRECTORY says ENOTDIR before O_NOFOLLOW's ELOOP: say it is a link. */
	return fd >= 0 ? fd : errno == ENOTDIR ? -ELOOP : -errno;
}

/* An entry @name in @sub and its upload marker; a kernel's is a directory with kallsyms in it. */
static int remove_entry(int sub, const char *name, bool kernel)
{
	char p[300];
	int r;

	if (kernel) {
		int kd = openat(sub, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

		if (kd >= 0) {
			unlinkat(kd, "kallsyms.uploaded", 0);
			r = unlinkat(kd, "kallsyms", 0) < 0 && errno != ENOENT ? -errno : 0;
			close(kd);
			if (r < 0)
				return r;
		}
		return unlinkat(sub, name, AT_REMOVEDIR) < 0 && errno != ENOENT ? -errno : 0;
	}
	snprintf(p, sizeof(p), "%s.uploaded", name);
	unlinkat(sub, p, 0);
	return unlinkat(sub, name, 0) < 0 && errno != ENOENT ? -errno : 0;
}

/*
 * The running kernel's kallsyms: every file of this boot needs it for its
 * kernel frames, so it goes last, however old (it is taken in first, and
 * on a busy host the binaries of a few minutes would push it out first);
 * only a cap too small for it alone removes it.  Another kernel's entry
 * goes by age like a binary.
 */
static bool in_use(const struct entry *e)
{
	uint8_t id[BID_MAX];
	int n;

	if (!e->kernel)
		return false;
	n = perfrec_buildid__kernel(NULL, id);
	return n == e->bid_len && !memcmp(id, e->bid, (size_t)n);
}

/* The oldest entry but the running kernel's; that one when it is all there is. */
static size_t oldest(void)
{
	size_t old = bc.nr_entries, kernel = 0;

	for (size_t i = 0; i < bc.nr_entries; i++) {
		const struct timespec *a = &bc.entries[i].ctime, *b;

		if (in_use(&bc.entries[i])) {
			kernel = i;
			continue;
		}
		b = old < bc.nr_entries ? &bc.entries[old].ctime : NULL;
		if (!b || a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec))
			old = i;
	}
	return old < bc.nr_entries ? old : kernel;
}

/* Remove the oldest entries until the cache fits its cap. */
static void evict(const char *dir, uint64_t max_bytes)
{
	while (bc.total > max_bytes && bc.nr_entries) {
		size_t old = oldest();
		char path[PATH_MAX], h[2 * BID_MAX + 1];
		int sub, r;

		entry_path(dir, bc.entries[old].bid, bc.entries[old].bid_len, path, sizeof(path));
		hex(bc.entries[old].bid, bc.entries[old].bid_len, h);
		sub = open_sub(h, false);
		r = sub < 0 ? sub : remove_entry(sub, h + 2, bc.entries[old].kernel);
		if (sub >= 0)
			close(sub);
		if (r < 0 && r != -ENOENT)
			log_warning("Build-id cache: cannot remove %s: %s", path, strerror(-r));
		else
			log_debug("Build-id cache: evicted %s", path);
		bc.total -= bc.entries[old].size;
		bc.entries[old] = bc.entries[--bc.nr_entries];
	}
}

/* What the cache holds already (a restart keeps it); half-written copies go. */
static void scan(void)
{
	int top = openat(bc.bidfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct dirent *de;
	DIR *d = top >= 0 ? fdopendir(top) : NULL;

	if (!d) {
		if (top >= 0)
			close(top);
		return;
	}
	while ((de = readdir(d))) {
		struct dirent *fe;
		DIR *s;
		int fd;

		if (strlen(de->d_name) != 2)
			continue;
		fd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
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

/* Worker: @in copied into @name under @sub through a temporary file of @mode (then renamed). */
static int copy_in(int in, int sub, const char *tmp, const char *name, mode_t mode, uint64_t max_bytes)
{
	struct stat st;
	int out, r;

	/* A name left by a crash; O_EXCL: nothing but our new file is written. */
	unlinkat(sub, tmp, 0);
	out = openat(sub, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0)
		return -errno;
	r = fchmod(out, mode) < 0 ? -errno : 0;
	if (!r)
		r = copy_fd(in, out);
	if (!r && (fstat(out, &st) < 0 || (uint64_t)st.st_size > max_bytes))
		r = -EFBIG;
	if (close(out) < 0 && !r)
		r = -errno;
	if (!r && renameat(sub, tmp, sub, name) < 0)
		r = -errno;
	if (r < 0)
		unlinkat(sub, tmp, 0);
	return r;
}

/* Worker: account for the entry @name under @sub, just added. */
static int added(const struct job *j, int sub, const char *name, const char *dir, uint64_t max_bytes)
{
	char path[PATH_MAX];
	struct stat st;

	if (fstatat(sub, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	entry_path(dir, j->bid, j->bid_len, path, sizeof(path));
	add_entry(j->bid, j->bid_len, j->kernel, (uint64_t)st.st_size, st.st_ctim);
	bc.added++;
	log_debug("Build-id cache: %s from pid %u (%s%s)", j->path, j->pid, path, j->kernel ? "/kallsyms" : "");
	evict(dir, max_bytes);
	return 0;
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
	char h[2 * BID_MAX + 1];
	uint8_t id[BID_MAX];
	struct stat st;
	int sub, kd = -1, in = -1, r, n = perfrec_buildid__kernel(NULL, id);

	if (n != j->bid_len || memcmp(id, j->bid, (size_t)n))
		return -ESRCH;   /* a file's map of another kernel: nothing here to copy */
	hex(j->bid, j->bid_len, h);
	sub = open_sub(h, true);
	if (sub < 0)
		return sub;
	if (mkdirat(sub, h + 2, 0750) < 0 && errno != EEXIST) {
		r = -errno;
		goto out;
	}
	kd = openat(sub, h + 2, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (kd < 0) {
		r = -errno;
		goto out;
	}
	if (fstatat(kd, "kallsyms", &st, AT_SYMLINK_NOFOLLOW) == 0) {
		r = -EEXIST;
		goto out;
	}
	in = open("/proc/kallsyms", O_RDONLY | O_CLOEXEC);
	r = in < 0 ? -errno : copy_in(in, kd, "kallsyms.tmp", "kallsyms", 0600, max_bytes);
	if (!r)
		r = added(j, kd, "kallsyms", dir, max_bytes);
out:
	if (in >= 0)
		close(in);
	if (kd >= 0)
		close(kd);
	close(sub);
	return r;
}

/* Worker: one binary into the cache (j->fd is closed).  Returns 0, -EEXIST if there, or -errno. */
static int take_in(const struct job *j, const char *dir, uint64_t max_bytes)
{
	char h[2 * BID_MAX + 1], tmp[2 * BID_MAX + 8], self[64];
	struct stat st;
	int in, sub, r;

	hex(j->bid, j->bid_len, h);
	sub = open_sub(h, true);
	if (sub < 0 || fstatat(sub, h + 2, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (j->fd >= 0)
			close(j->fd);
		if (sub >= 0)
			close(sub);
		return sub < 0 ? sub : -EEXIST;
	}
	in = j->fd >= 0 ? j->fd : open_binary(j);
	if (in < 0 || fstat(in, &st) < 0 || (uint64_t)st.st_size > max_bytes) {
		r = in < 0 ? in : -EFBIG;
		goto out;
	}
	/*
	 * A hard link costs nothing where the binary still has a name on our
	 * file system; it keeps the binary's mode, and only the cache's 0750
	 * directories keep others out.  Not of a setuid/setgid program or one
	 * with file capabilities: the link would keep that very program, with
	 * its privileges, runnable after an update replaced it.  A copy is no
	 * more readable than the binary was (a 0700 program stays its
	 * owner's), and others' bits and the set-id bits go.
	 */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", in);
	if (!(st.st_mode & (S_ISUID | S_ISGID)) && fgetxattr(in, "security.capability", NULL, 0) < 0 &&
	    linkat(AT_FDCWD, self, sub, h + 2, AT_SYMLINK_FOLLOW) == 0) {
		r = 0;
	} else {
		snprintf(tmp, sizeof(tmp), ".tmp-%s", h + 2);
		r = copy_in(in, sub, tmp, h + 2, st.st_mode & 0750, max_bytes);
	}
	if (!r)
		r = added(j, sub, h + 2, dir, max_bytes);
out:
	if (in >= 0)
		close(in);
	close(sub);
	return r;
}

/* Worker: an entry someone else made, counted (and the cap kept) like a copy. */
static int take_made(const struct job *j, const char *dir, uint64_t max_bytes)
{
	char h[2 * BID_MAX + 1];
	int sub, r;

	hex(j->bid, j->bid_len, h);
	sub = open_sub(h, false);
	if (sub < 0)
		return sub;
	r = added(j, sub, h + 2, dir, max_bytes);
	close(sub);
	return r;
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
		r = j.kernel ? take_in_kernel(&j, dir, max) : j.made ? take_made(&j, dir, max) : take_in(&j, dir, max);
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

/*
 * DIR/.build-id under the checked @dirfd: made 0750 if missing, and as
 * root handed to @uid/@gid; an existing one must be a directory of root's
 * or @uid's, not a link (one planted there would take root's writes
 * anywhere), and loses others' access, which a cache made before kept.
 * The fd, or -errno with the reason in @err.
 */
static int open_bid_dir(int dirfd, const char *dir, uid_t uid, gid_t gid, char *err, size_t errlen)
{
	bool made = mkdirat(dirfd, ".build-id", 0750) == 0;
	struct stat st;
	int fd, r;

	fd = openat(dirfd, ".build-id", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		if (fstatat(dirfd, ".build-id", &st, AT_SYMLINK_NOFOLLOW) < 0 || S_ISDIR(st.st_mode)) {
			snprintf(err, errlen, "%s/.build-id: %s", dir, strerror(-r));
			return r;
		}
		snprintf(err, errlen, "%s/.build-id is %s, not a directory: perfrecd does not write "
			 "through it (remove it)", dir, S_ISLNK(st.st_mode) ? "a symbolic link" : "a file");
		return S_ISLNK(st.st_mode) ? -ELOOP : -ENOTDIR;
	}
	if (made && geteuid() == 0 && fchown(fd, uid, gid) < 0)
		log_warning("Build-id cache: cannot hand %s/.build-id to uid %u: %m", dir, (unsigned)uid);
	if (fstat(fd, &st) < 0 || (st.st_uid != 0 && st.st_uid != uid)) {
		snprintf(err, errlen, "%s/.build-id is owned by uid %u, neither root nor the daemon's user (uid %u)",
			 dir, (unsigned)st.st_uid, (unsigned)uid);
		close(fd);
		return -EPERM;
	}
	if ((st.st_mode & 0027) && fchmod(fd, 0750) == 0)
		log_notice("Build-id cache: %s/.build-id was mode %04o; now 0750, so that only the daemon's "
			   "user and group reach the binaries in it", dir, (unsigned)(st.st_mode & 07777));
	return fd;
}

/* @dir's .build-id, checked and made as safedir_open() and open_bid_dir() say.  -errno, logged. */
static int open_cache(const char *dir, uid_t uid, gid_t gid)
{
	char err[PATH_MAX + 256] = "";
	int dfd, fd;

	dfd = safedir_open(dir, uid, gid, true, err, sizeof(err));
	fd = dfd < 0 ? dfd : open_bid_dir(dfd, dir, uid, gid, err, sizeof(err));
	if (dfd >= 0)
		close(dfd);
	if (fd < 0)
		log_error("Build-id cache %s is not usable: %s", dir, err);
	return fd;
}

int bidcache_prepare(const char *dir, const char *user, const char *group)
{
	uid_t uid = geteuid();
	gid_t gid = getegid();
	int fd;

	if (!dir || !*dir)
		return 0;
	if (user && *user) {
		struct passwd *pw = getpwnam(user);

		if (!pw)
			return log_error_errno(-ESRCH, "Build-id cache %s is not usable: no user '%s'", dir, user);
		uid = pw->pw_uid;
		gid = pw->pw_gid;
	}
	if (group && *group) {
		struct group *gr = getgrnam(group);

		if (!gr)
			return log_error_errno(-ESRCH, "Build-id cache %s is not usable: no group '%s'", dir, group);
		gid = gr->gr_gid;
	}
	fd = open_cache(dir, uid, gid);
	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

/* Under bc.lock: the cache at @dir, worker running. */
static int start(const char *dir, uint64_t max_bytes)
{
	int r;

	/* Once per directory: an unusable one is said once, not at every new binary. */
	if (bc.failed_dir && !strcmp(bc.failed_dir, dir))
		return -EPERM;
	free(bc.failed_dir);
	bc.failed_dir = NULL;
	r = open_cache(dir, geteuid(), getegid());
	if (r < 0) {
		bc.failed_dir = strdup(dir);
		return r;
	}
	bc.bidfd = r;
	bc.dir = strdup(dir);
	if (!bc.dir) {
		close(bc.bidfd);
		bc.bidfd = -1;
		return -ENOMEM;
	}
	bc.max_bytes = max_bytes ? max_bytes : BIDCACHE_DEFAULT_SIZE;
	scan();
	evict(dir, bc.max_bytes);
	bc.stop = false;
	r = -pthread_create(&bc.worker, NULL, worker, NULL);
	if (r < 0) {
		log_warning("Build-id cache: cannot start its thread: %s", strerror(-r));
		free(bc.dir);
		bc.dir = NULL;
		close(bc.bidfd);
		bc.bidfd = -1;
		return r;
	}
	bc.running = true;
	log_info("Build-id cache at %s (%llu entries, %llu of %llu bytes)", dir,
		 (unsigned long long)bc.nr_entries, (unsigned long long)bc.total,
		 (unsigned long long)bc.max_bytes);
	return 0;
}

uint64_t bidcache_budget(const char *dir, uint64_t bytes, unsigned percent)
{
	struct statvfs sv;
	uint64_t share;

	if (!percent || !dir || statvfs(dir, &sv) < 0)
		return bytes ? bytes : BIDCACHE_DEFAULT_SIZE;
	share = (uint64_t)sv.f_blocks * sv.f_frsize / 100 * percent;
	if (bytes && bytes < share)
		share = bytes;
	return share < (1ULL << 20) ? 1ULL << 20 : share;
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

void bidcache_note_entry(const char *dir, uint64_t max_bytes, const uint8_t *bid, uint8_t len)
{
	struct job *j;

	if (!dir || !*dir || !len || len > BID_MAX)
		return;
	pthread_mutex_lock(&bc.lock);
	if (bc.running && (strcmp(bc.dir, dir) || bc.max_bytes != (max_bytes ? max_bytes : BIDCACHE_DEFAULT_SIZE))) {
		pthread_mutex_unlock(&bc.lock);
		bidcache_clear();   /* a reload moved or resized it */
		pthread_mutex_lock(&bc.lock);
	}
	if ((!bc.running && start(dir, max_bytes) < 0) || bc.nr == QUEUE_LEN || !seen_add(bid, len)) {
		if (bc.running && bc.nr == QUEUE_LEN)
			bc.dropped++;
		goto out;
	}
	j = &bc.queue[(bc.head + bc.nr) % QUEUE_LEN];
	memset(j, 0, sizeof(*j));
	j->path = strdup("(JIT image)");
	if (!j->path)
		goto out;
	j->made = true;
	j->fd = -1;
	memcpy(j->bid, bid, len);
	j->bid_len = len;
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
	/* The cache's own: no link is followed, and no one else reads where entries went. */
	fd = open(marker, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
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
	if (bc.bidfd >= 0)
		close(bc.bidfd);
	bc.bidfd = -1;
	free(bc.failed_dir);
	bc.failed_dir = NULL;
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

static void bidcache_sink_record(struct sink *s, struct drain_rec *r)
{
	const struct config *const *cfg = s->ctx;

	if (r->h->type == PERF_RECORD_MMAP2)
		bidcache_note_mmap2((*cfg)->buildid_cache, (*cfg)->buildid_cache_size, r->h);
}

const struct sink_ops bidcache_sink_ops = { .record = bidcache_sink_record };
