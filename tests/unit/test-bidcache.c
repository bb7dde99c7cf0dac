// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests for the daemon's build-id cache: this test binary, named by an
 * MMAP2 of this process, is taken in once under perf's layout with the same
 * bytes; a wrong build id, a non-executable mapping or no cache directory
 * take nothing; past the size cap the oldest entries go, the newest stay;
 * half-written copies left by a crash are removed at start.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <signal.h>
#include <sys/stat.h>
#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/perf_event.h>
#include <perfrec/buildid.h>

#include "bidcache.h"

struct self {
	char path[PATH_MAX];
	uint64_t start, end;
	uint8_t bid[PERFREC_BUILD_ID_MAX];
	int bid_len;
	char hex[41];
};

static void self_exe(struct self *m)
{
	char line[PATH_MAX + 128];
	ssize_t n = readlink("/proc/self/exe", m->path, sizeof(m->path) - 1);
	FILE *f = fopen("/proc/self/maps", "re");
	bool found = false;

	cr_assert(n > 0 && f);
	m->path[n] = 0;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long long s, e;
		char perms[8];

		if (sscanf(line, "%llx-%llx %7s", &s, &e, perms) == 3 && perms[2] == 'x' && strstr(line, m->path)) {
			m->start = s;
			m->end = e;
			found = true;
		}
	}
	fclose(f);
	cr_assert(found);
	m->bid_len = perfrec_buildid__read_elf(m->path, m->bid);
	cr_assert_gt(m->bid_len, 0);
	for (int i = 0; i < m->bid_len; i++)
		sprintf(m->hex + 2 * i, "%02x", m->bid[i]);
}

static struct perf_event_header *mmap2(uint8_t *buf, const struct self *m, const uint8_t *bid, uint32_t prot)
{
	struct perf_event_header *h = (void *)buf;
	uint32_t pid = (uint32_t)getpid();
	uint64_t len = m->end - m->start, zero = 0;
	size_t l = strlen(m->path) + 1;

	memset(buf, 0, 72 + l + 8);
	h->type = PERF_RECORD_MMAP2;
	h->misc = PERF_RECORD_MISC_USER | PERF_RECORD_MISC_MMAP_BUILD_ID;
	memcpy(buf + 8, &pid, 4);
	memcpy(buf + 12, &pid, 4);
	memcpy(buf + 16, &m->start, 8);
	memcpy(buf + 24, &len, 8);
	memcpy(buf + 32, &zero, 8);
	buf[40] = (uint8_t)m->bid_len;
	memcpy(buf + 44, bid, (size_t)m->bid_len);
	memcpy(buf + 64, &prot, 4);
	memcpy(buf + 72, m->path, l);
	h->size = (uint16_t)((72 + l + 7) & ~7ul);
	return h;
}

static bool same_file(const char *a, const char *b)
{
	char cmd[2 * PATH_MAX + 32];

	snprintf(cmd, sizeof(cmd), "cmp -s '%s' '%s'", a, b);
	return system(cmd) == 0;
}

static char *mkcache(void)
{
	static char dir[64];

	strcpy(dir, "/tmp/test-bidcache-XXXXXX");
	cr_assert(mkdtemp(dir));
	return dir;
}

static void rm_cache(const char *dir)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

Test(bidcache, own_binary_taken_in_once_in_perf_layout)
{
	struct self m;
	uint8_t buf[PATH_MAX + 128];
	char *dir = mkcache(), entry[256];

	self_exe(&m);
	bidcache_note_mmap2(dir, 0, mmap2(buf, &m, m.bid, PROT_READ | PROT_EXEC));
	cr_assert_eq(bidcache_sync(), 1);
	snprintf(entry, sizeof(entry), "%s/.build-id/%.2s/%s", dir, m.hex, m.hex + 2);
	cr_assert(same_file(entry, m.path), "%s is not a copy of %s", entry, m.path);
	/* Seen again (another process, another file): nothing more to do. */
	bidcache_note_mmap2(dir, 0, mmap2(buf, &m, m.bid, PROT_READ | PROT_EXEC));
	cr_assert_eq(bidcache_sync(), 1);
	/* A restart finds it there and does not copy it again. */
	bidcache_clear();
	bidcache_note_mmap2(dir, 0, mmap2(buf, &m, m.bid, PROT_READ | PROT_EXEC));
	cr_assert_eq(bidcache_sync(), 0);
	bidcache_clear();
	rm_cache(dir);
}

Test(bidcache, nothing_for_wrong_build_id_data_mapping_or_no_dir)
{
	struct self m;
	uint8_t buf[PATH_MAX + 128], wrong[PERFREC_BUILD_ID_MAX];
	char *dir = mkcache(), top[128];
	struct stat st;

	self_exe(&m);
	memcpy(wrong, m.bid, sizeof(wrong));
	wrong[3] ^= 0x55;
	bidcache_note_mmap2(dir, 0, mmap2(buf, &m, wrong, PROT_READ | PROT_EXEC));
	bidcache_note_mmap2(dir, 0, mmap2(buf, &m, m.bid, PROT_READ | PROT_WRITE));
	cr_assert_eq(bidcache_sync(), 0, "a binary whose build id is not the record's was taken in");
	bidcache_clear();
	bidcache_note_mmap2(NULL, 0, mmap2(buf, &m, m.bid, PROT_READ | PROT_EXEC));
	bidcache_note_mmap2("", 0, mmap2(buf, &m, m.bid, PROT_READ | PROT_EXEC));
	cr_assert_eq(bidcache_sync(), 0);
	snprintf(top, sizeof(top), "%s/.build-id/%.2s/%s", dir, m.hex, m.hex + 2);
	cr_assert_neq(stat(top, &st), 0, "%s was written", top);
	rm_cache(dir);
}

static void put(const char *dir, const char *sub, const char *name, size_t size)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/.build-id", dir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/.build-id/%s", dir, sub);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/.build-id/%s/%s", dir, sub, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, (off_t)size), 0);
	close(fd);
}

static bool exists(const char *dir, const char *sub, const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/.build-id/%s/%s", dir, sub, name);
	return access(path, F_OK) == 0;
}

Test(bidcache, oldest_entries_go_past_the_cap)
{
	struct self m;
	uint8_t buf[PATH_MAX + 128];
	char *dir = mkcache();
	struct stat st;
	const size_t fake = 100000;

	self_exe(&m);
	cr_assert_eq(stat(m.path, &st), 0);
	/* Older, then newer; and a copy a crash left half-written. */
	put(dir, "11", "11111111111111111111111111111111111111", fake);
	put(dir, "22", "22222222222222222222222222222222222222", fake);
	put(dir, "22", ".tmp-2222", 10);
	bidcache_note_mmap2(dir, 2 * fake + (uint64_t)st.st_size - 1, mmap2(buf, &m, m.bid, PROT_READ | PROT_EXEC));
	cr_assert_eq(bidcache_sync(), 1);
	cr_assert(!exists(dir, "11", "11111111111111111111111111111111111111"), "the oldest entry is still there");
	cr_assert(exists(dir, "22", "22222222222222222222222222222222222222"), "a newer entry went");
	cr_assert(exists(dir, (char[]){ m.hex[0], m.hex[1], 0 }, m.hex + 2), "the new entry is not there");
	cr_assert(!exists(dir, "22", ".tmp-2222"), "a half-written copy stayed");
	bidcache_clear();
	rm_cache(dir);
}

Test(bidcache, a_copy_is_no_more_readable_than_its_binary)
{
	struct self m;
	uint8_t buf[PATH_MAX + 128];
	char dir[] = "/dev/shm/test-bidcache-XXXXXX", entry[256];
	struct stat st, orig;

	self_exe(&m);
	/* /dev/shm is a tmpfs: no hard link from the build tree, a real copy. */
	if (!mkdtemp(dir))
		cr_skip_test("no /dev/shm to make a copy on another file system");
	cr_assert_eq(stat(m.path, &orig), 0);
	cr_assert_eq(chmod(m.path, 0700), 0);
	bidcache_note_mmap2(dir, 0, mmap2(buf, &m, m.bid, PROT_READ | PROT_EXEC));
	cr_assert_eq(bidcache_sync(), 1);
	chmod(m.path, orig.st_mode & 07777);
	snprintf(entry, sizeof(entry), "%s/.build-id/%.2s/%s", dir, m.hex, m.hex + 2);
	cr_assert_eq(stat(entry, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0700, "a 0700 binary's copy has mode %o", st.st_mode & 0777);
	bidcache_clear();
	rm_cache(dir);
}

Test(bidcache, binary_of_a_process_gone_before_its_turn_still_gets_in)
{
	char bin[] = "/tmp/test-bidcache-bin-XXXXXX", *dir = mkcache(), entry[256], maps[64], line[512];
	uint8_t buf[PATH_MAX + 128];
	struct self m = { 0 };
	FILE *f;
	pid_t child;
	int fd, status;

	/* A copy of sleep(1) of our own, run, then killed and deleted. */
	fd = mkstemp(bin);
	cr_assert_geq(fd, 0);
	close(fd);
	snprintf(line, sizeof(line), "cp /bin/sleep '%s' && chmod 0755 '%s'", bin, bin);
	cr_assert_eq(system(line), 0);
	child = fork();
	cr_assert_geq(child, 0);
	if (!child) {
		execl(bin, bin, "100", (char *)NULL);
		_exit(127);
	}
	/* Its executable mapping, once exec is done. */
	snprintf(maps, sizeof(maps), "/proc/%d/maps", (int)child);
	for (int tries = 0; tries < 1000 && !m.start; tries++) {
		f = fopen(maps, "re");
		while (f && fgets(line, sizeof(line), f)) {
			unsigned long long s, e;
			char perms[8];

			if (sscanf(line, "%llx-%llx %7s", &s, &e, perms) == 3 && perms[2] == 'x' && strstr(line, bin)) {
				m.start = s;
				m.end = e;
				break;
			}
		}
		if (f)
			fclose(f);
		if (!m.start)
			usleep(10000);
	}
	cr_assert(m.start, "%s never mapped its binary", bin);
	snprintf(m.path, sizeof(m.path), "%s", bin);
	m.bid_len = perfrec_buildid__read_elf(bin, m.bid);
	cr_assert_gt(m.bid_len, 0);
	for (int i = 0; i < m.bid_len; i++)
		sprintf(m.hex + 2 * i, "%02x", m.bid[i]);

	bidcache_hold(true);
	{
		struct perf_event_header *h = mmap2(buf, &m, m.bid, PROT_READ | PROT_EXEC);
		uint32_t pid = (uint32_t)child;

		memcpy(buf + 8, &pid, 4);
		memcpy(buf + 12, &pid, 4);
		bidcache_note_mmap2(dir, 0, h);
	}
	kill(child, SIGKILL);
	cr_assert_eq(waitpid(child, &status, 0), child);
	cr_assert_eq(unlink(bin), 0);
	bidcache_hold(false);
	cr_assert_eq(bidcache_sync(), 1, "the binary of a process gone before its turn was not taken in");
	snprintf(entry, sizeof(entry), "%s/.build-id/%.2s/%s", dir, m.hex, m.hex + 2);
	cr_assert(same_file(entry, "/bin/sleep"), "%s is not the binary", entry);
	bidcache_clear();
	rm_cache(dir);
}

static struct perf_event_header *kernel_mmap2(uint8_t *buf, const uint8_t *bid, int bid_len)
{
	struct perf_event_header *h = (void *)buf;
	static const char name[] = "[kernel.kallsyms]_text";
	uint32_t pid = UINT32_MAX, prot = PROT_READ | PROT_EXEC;
	uint64_t start = 0xffffffff81000000ull, len = 0x1000000;

	memset(buf, 0, 72 + sizeof(name) + 8);
	h->type = PERF_RECORD_MMAP2;
	h->misc = PERF_RECORD_MISC_KERNEL | PERF_RECORD_MISC_MMAP_BUILD_ID;
	memcpy(buf + 8, &pid, 4);
	memcpy(buf + 12, &pid, 4);
	memcpy(buf + 16, &start, 8);
	memcpy(buf + 24, &len, 8);
	memcpy(buf + 32, &start, 8);
	buf[40] = (uint8_t)bid_len;
	memcpy(buf + 44, bid, (size_t)bid_len);
	memcpy(buf + 64, &prot, 4);
	memcpy(buf + 72, name, sizeof(name));
	h->size = (uint16_t)((72 + sizeof(name) + 7) & ~7ul);
	return h;
}

Test(bidcache, the_running_kernels_kallsyms_in_perf_layout_and_no_other_kernels)
{
	uint8_t buf[256], id[PERFREC_BUILD_ID_MAX], other[PERFREC_BUILD_ID_MAX];
	char *dir = mkcache(), hex[41], path[256], line[512];
	int n = perfrec_buildid__kernel(NULL, id);
	bool text = false;
	struct stat st;
	FILE *f;

	if (n <= 0)
		cr_skip_test("the running kernel has no build id (/sys/kernel/notes)");
	memcpy(other, id, sizeof(other));
	other[1] ^= 0x42;
	bidcache_note_mmap2(dir, 0, kernel_mmap2(buf, other, n));
	cr_assert_eq(bidcache_sync(), 0, "another kernel's kallsyms was taken in");
	bidcache_note_mmap2(dir, 0, kernel_mmap2(buf, id, n));
	cr_assert_eq(bidcache_sync(), 1);
	for (int i = 0; i < n; i++)
		sprintf(hex + 2 * i, "%02x", id[i]);
	snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s/kallsyms", dir, hex, hex + 2);
	cr_assert_eq(stat(path, &st), 0, "no %s", path);
	cr_assert_eq(st.st_mode & 0777, 0600, "kallsyms is %o, it gives KASLR away", st.st_mode & 0777);
	f = fopen(path, "re");
	cr_assert(f);
	while (!text && fgets(line, sizeof(line), f))
		text = strstr(line, " _text\n") != NULL;
	fclose(f);
	cr_assert(text, "the copy has no _text line");
	/* A restart counts it and does not copy it again. */
	bidcache_clear();
	bidcache_note_mmap2(dir, 0, kernel_mmap2(buf, id, n));
	cr_assert_eq(bidcache_sync(), 0);
	bidcache_clear();
	rm_cache(dir);
}

/*
 * The running kernel's kallsyms is taken in first and needed by every file
 * of this boot: a busy host's binaries past the cap push older binaries
 * out before it, though it is the oldest entry.
 */
Test(bidcache, the_running_kernels_entry_is_never_evicted)
{
	const uint8_t bid[20] = { 0x11 };
	uint8_t buf[PATH_MAX + 128], id[PERFREC_BUILD_ID_MAX];
	char *dir = mkcache(), hex[2 * PERFREC_BUILD_ID_MAX + 1], path[256];
	int n = perfrec_buildid__kernel(NULL, id);
	const size_t fake = 100000;
	struct stat st, ks;
	struct self m;

	if (n <= 0)
		cr_skip_test("the running kernel has no build id (/sys/kernel/notes)");
	for (int i = 0; i < n; i++)
		sprintf(hex + 2 * i, "%02x", id[i]);
	bidcache_note_mmap2(dir, 0, kernel_mmap2(buf, id, n));
	cr_assert_eq(bidcache_sync(), 1);
	snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s/kallsyms", dir, hex, hex + 2);
	cr_assert_eq(stat(path, &ks), 0, "no %s", path);
	/* A newer entry, then a binary that does not fit beside both. */
	put(dir, "11", "00000000000000000000000000000000000000", fake);
	bidcache_note_entry(dir, 0, bid, 20);
	cr_assert_eq(bidcache_sync(), 2);
	self_exe(&m);
	cr_assert_eq(stat(m.path, &st), 0);
	bidcache_note_mmap2(dir, (uint64_t)ks.st_size + (uint64_t)st.st_size + fake / 2,
			    mmap2(buf, &m, m.bid, PROT_READ | PROT_EXEC));
	cr_assert_eq(bidcache_sync(), 1);   /* a new cap: the cache started over, counting what it holds */
	cr_assert(exists(dir, (char[]){ m.hex[0], m.hex[1], 0 }, m.hex + 2), "the new entry is not there");
	cr_assert_eq(stat(path, &ks), 0, "the running kernel's kallsyms was evicted");
	cr_assert(!exists(dir, "11", "00000000000000000000000000000000000000"), "the cap was not kept");
	bidcache_clear();
	rm_cache(dir);
}

/* Can uid/gid 65534 (nobody) open @path for reading?  Asked of a child that becomes nobody. */
static bool nobody_reads(const char *path)
{
	pid_t pid = fork();
	int st = 0;

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0)
			_exit(2);
		_exit(open(path, O_RDONLY | O_CLOEXEC) >= 0 ? 0 : 1);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) != 2, "cannot become nobody");
	return WEXITSTATUS(st) == 0;
}

static mode_t mode_of(const char *path)
{
	struct stat st;

	cr_assert_eq(lstat(path, &st), 0, "no %s", path);
	return st.st_mode & 07777;
}

/*
 * Issue 28 item 10: a hard link keeps the binary's mode, so the cache's
 * directories must keep others out: a 0755 program in a 0700 directory was
 * readable by nobody through a 0755 cache.  The cache (made here: it did
 * not exist) and everything below are 0750, and user nobody can read no entry.
 */
Test(bidcache, others_reach_no_entry)
{
	struct self m;
	uint8_t buf[PATH_MAX + 128];
	char *top = mkcache(), dir[128], path[256];

	if (geteuid() != 0)
		cr_skip_test("needs root to try as nobody");
	self_exe(&m);
	/* Reachable by all down to the cache, as /var/cache is. */
	cr_assert_eq(chmod(top, 0755), 0);
	snprintf(dir, sizeof(dir), "%s/cache", top);
	bidcache_note_mmap2(dir, 0, mmap2(buf, &m, m.bid, PROT_READ | PROT_EXEC));
	cr_assert_eq(bidcache_sync(), 1);
	snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s", dir, m.hex, m.hex + 2);
	cr_assert(same_file(path, m.path));
	cr_expect(!nobody_reads(path), "nobody reads %s", path);
	/* 0750 (0700 under a stricter umask): nothing for others, no writing for the group. */
	cr_expect_eq(mode_of(dir) & 0027, 0, "%s is %o", dir, mode_of(dir));
	snprintf(path, sizeof(path), "%s/.build-id", dir);
	cr_expect_eq(mode_of(path) & 0027, 0, "%s is %o", path, mode_of(path));
	snprintf(path, sizeof(path), "%s/.build-id/%.2s", dir, m.hex);
	cr_expect_eq(mode_of(path) & 0027, 0, "%s is %o", path, mode_of(path));
	bidcache_clear();
	rm_cache(top);
}

/* Nothing exists under @dir but what is listed ("" for nothing). */
static char *listing(const char *dir)
{
	static char out[1024];
	char cmd[256];
	FILE *f;
	size_t n;

	snprintf(cmd, sizeof(cmd), "cd '%s' && find . -mindepth 1 | sort | tr '\\n' ' '", dir);
	f = popen(cmd, "r");
	cr_assert(f);
	n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = 0;
	pclose(f);
	return out;
}

/*
 * Issue 28 item 10: a .build-id link (or a .build-id/xx link) planted in
 * the cache made root's daemon create directories and hard links in a
 * root-only directory.  Neither is followed: nothing appears there.
 */
Test(bidcache, planted_links_are_not_followed)
{
	struct self m;
	uint8_t buf[PATH_MAX + 128];
	char *dir = mkcache(), target[] = "/tmp/test-bidcache-target-XXXXXX", path[256];

	self_exe(&m);
	cr_assert(mkdtemp(target));
	snprintf(path, sizeof(path), "%s/.build-id", dir);
	cr_assert_eq(symlink(target, path), 0);
	bidcache_note_mmap2(dir, 0, mmap2(buf, &m, m.bid, PROT_READ | PROT_EXEC));
	cr_expect_eq(bidcache_sync(), 0, "taken in through a planted .build-id");
	cr_expect_str_eq(listing(target), "", "the daemon wrote through .build-id");
	bidcache_clear();

	/* One level down: .build-id is real, its xx is the link. */
	cr_assert_eq(unlink(path), 0);
	cr_assert_eq(mkdir(path, 0750), 0);
	snprintf(path, sizeof(path), "%s/.build-id/%.2s", dir, m.hex);
	cr_assert_eq(symlink(target, path), 0);
	bidcache_note_mmap2(dir, 0, mmap2(buf, &m, m.bid, PROT_READ | PROT_EXEC));
	cr_expect_eq(bidcache_sync(), 0, "taken in through a planted .build-id/%.2s", m.hex);
	cr_expect_str_eq(listing(target), "", "the daemon wrote through .build-id/%.2s", m.hex);
	bidcache_clear();
	rm_cache(dir);
	rm_cache(target);
}

/*
 * Issue 28 item 10: a cache directory others may write (0777, /tmp) or a
 * symbolic link is refused, at start as in the configuration check; so is
 * one another user owns.
 */
Test(bidcache, unsafe_cache_directories_are_refused)
{
	struct self m;
	uint8_t buf[PATH_MAX + 128];
	char *dir = mkcache(), path[256], link[256];

	self_exe(&m);
	snprintf(path, sizeof(path), "%s/open", dir);
	cr_assert_eq(mkdir(path, 0777), 0);
	cr_assert_eq(chmod(path, 0777), 0);
	cr_expect_lt(bidcache_prepare(path, NULL, NULL), 0, "a 0777 cache was taken");
	bidcache_note_mmap2(path, 0, mmap2(buf, &m, m.bid, PROT_READ | PROT_EXEC));
	cr_expect_eq(bidcache_sync(), 0, "a 0777 cache was written");
	cr_expect_str_eq(listing(path), "");
	bidcache_clear();
	cr_expect_lt(bidcache_prepare("/tmp", NULL, NULL), 0, "/tmp was taken as a cache");
	cr_assert_eq(chmod(path, 0700), 0);
	snprintf(link, sizeof(link), "%s/link", dir);
	cr_assert_eq(symlink(path, link), 0);
	cr_expect_lt(bidcache_prepare(link, NULL, NULL), 0, "a symbolic link was taken as a cache");
	bidcache_note_mmap2(link, 0, mmap2(buf, &m, m.bid, PROT_READ | PROT_EXEC));
	cr_expect_eq(bidcache_sync(), 0, "a cache was written through a symbolic link");
	cr_expect_str_eq(listing(path), "");
	bidcache_clear();
	if (geteuid() == 0) {
		cr_assert_eq(chown(path, 65534, 65534), 0);
		cr_expect_lt(bidcache_prepare(path, NULL, NULL), 0, "a cache of nobody's was taken by root");
	}
	cr_expect_eq(bidcache_prepare(dir, NULL, NULL), 0, "a private cache was refused");
	rm_cache(dir);
}

/*
 * A hard link to a setuid program would keep that program, privileges and
 * all, runnable through the cache after an update replaced it: such a
 * binary is copied, without its set-id bits.
 */
Test(bidcache, a_setuid_binary_is_copied_without_its_bits)
{
	struct self m;
	uint8_t buf[PATH_MAX + 128];
	char *dir = mkcache(), entry[256];
	struct stat st, orig;

	if (geteuid() != 0)
		cr_skip_test("needs root to make the test binary setuid root");
	self_exe(&m);
	cr_assert_eq(stat(m.path, &orig), 0);
	cr_assert_eq(chmod(m.path, 04755), 0);
	bidcache_note_mmap2(dir, 0, mmap2(buf, &m, m.bid, PROT_READ | PROT_EXEC));
	cr_assert_eq(bidcache_sync(), 1);
	chmod(m.path, orig.st_mode & 07777);
	snprintf(entry, sizeof(entry), "%s/.build-id/%.2s/%s", dir, m.hex, m.hex + 2);
	cr_assert_eq(stat(entry, &st), 0);
	cr_expect_neq(st.st_ino, orig.st_ino, "the setuid binary was hard-linked");
	cr_expect_eq(st.st_mode & 07777, 0750, "the copy has mode %o", st.st_mode & 07777);
	cr_expect(same_file(entry, m.path));
	bidcache_clear();
	rm_cache(dir);
}

/* A JIT image the cache's owner wrote itself counts against the cap like a copy. */
Test(bidcache, an_entry_made_in_place_is_counted_and_evicted)
{
	const uint8_t bid[20] = { 0x33 };
	uint8_t buf[PATH_MAX + 128];
	char *dir = mkcache();
	const size_t fake = 100000;
	uint64_t cap;
	struct self m;
	struct stat st;

	self_exe(&m);
	cr_assert_eq(stat(m.path, &st), 0);
	cap = (uint64_t)st.st_size + fake + fake / 2;
	put(dir, "11", "11111111111111111111111111111111111111", fake);
	bidcache_note_mmap2(dir, cap, mmap2(buf, &m, m.bid, PROT_READ | PROT_EXEC));
	cr_assert_eq(bidcache_sync(), 1);
	cr_assert(exists(dir, "11", "11111111111111111111111111111111111111"));
	/* made after the cache started: only the note tells it */
	put(dir, "33", "00000000000000000000000000000000000000", fake);
	bidcache_note_entry(dir, cap, bid, 20);
	cr_assert_eq(bidcache_sync(), 2, "the entry made in place was not counted");
	cr_assert(!exists(dir, "11", "11111111111111111111111111111111111111"), "the cap was not kept");
	cr_assert(exists(dir, "33", "00000000000000000000000000000000000000"), "the newest entry went");
	/* noted twice, counted once */
	bidcache_note_entry(dir, cap, bid, 20);
	cr_assert_eq(bidcache_sync(), 2);
	bidcache_clear();
	rm_cache(dir);
}
