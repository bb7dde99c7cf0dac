// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Finding CPython processes and their layout (internal/pyproc.h), against
 * the real interpreters of this machine: Debian's /usr/bin/python3 (a
 * static interpreter without DWARF: the table) and pyenv's 3.10-3.13
 * (libpython with DWARF).  Each runs a script that blocks in hot_leaf <-
 * middle <- outer <- <module>; the proof is walking those frames out of
 * the live process's memory with the offsets found, both the preferred
 * source's and the table's.  A runtime not installed is skipped with its
 * path; the ones that are installed are not.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pyproc.h"

static const char script[] =
	"import os, sys\n"
	"def hot_leaf(w, r):\n"
	"    os.write(w, b'r')\n"
	"    os.read(r, 1)\n"
	"def middle(w, r):\n"
	"    hot_leaf(w, r)\n"
	"def outer(w, r):\n"
	"    middle(w, r)\n"
	"outer(int(sys.argv[1]), int(sys.argv[2]))\n";

struct target {
	pid_t pid;
	int go;                 /* write end the target reads to finish */
	char dir[64];
	char script[128];
	char python[128];       /* what the target runs, in its namespace */
	char lib[128];          /* its copied libpython, if any */
};

static int write_file(const char *path, const char *text, const char *from, mode_t mode)
{
	int in = from ? open(from, O_RDONLY | O_CLOEXEC) : -1;
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	struct stat st;
	int r = -1;

	if (fd >= 0 && !from)
		r = write(fd, text, strlen(text)) == (ssize_t)strlen(text) ? 0 : -1;
	else if (fd >= 0 && in >= 0 && !fstat(in, &st))
		r = sendfile(fd, in, NULL, (size_t)st.st_size) == st.st_size ? 0 : -1;
	if (in >= 0)
		close(in);
	if (fd >= 0 && close(fd))
		r = -1;
	return r;
}

/*
 * In a mount namespace of its own, the target runs a copy of PYTHON from a
 * tmpfs over T's directory, which this namespace sees empty: only a look
 * through /proc/PID/root finds its interpreter and script.
 */
static void own_namespace(const char *python, struct target *t)
{
	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mount("tmpfs", t->dir, "tmpfs", 0, "mode=0700") ||
	    write_file(t->script, script, NULL, 0600) ||
	    write_file(t->python, NULL, python, 0700))
		_exit(126);
	if (t->lib[0]) {
		char from[PATH_MAX];

		/* pyenv's python3 finds it by RUNPATH, which LD_LIBRARY_PATH beats. */
		snprintf(from, sizeof(from), "%s", python);
		snprintf(strrchr(from, '/'), sizeof(from) - (size_t)(strrchr(from, '/') - from),
			 "/../lib%s", strrchr(t->lib, '/'));
		if (write_file(t->lib, NULL, from, 0600))
			_exit(126);
	}
}

/* Starts PYTHON on the script and waits (bounded) until it is in hot_leaf. */
static void start_target(const char *python, bool ns, const char *lib, struct target *t)
{
	int ready[2], go[2];
	char a1[16], a2[16];
	struct pollfd pfd;
	char c;
	FILE *f;

	strcpy(t->dir, "/tmp/test-pyproc.XXXXXX");
	cr_assert(mkdtemp(t->dir));
	snprintf(t->script, sizeof(t->script), "%s/target.py", t->dir);
	snprintf(t->python, sizeof(t->python), "%s", python);
	t->lib[0] = '\0';
	if (ns)
		snprintf(t->python, sizeof(t->python), "%s/python3", t->dir);
	if (ns && lib)
		snprintf(t->lib, sizeof(t->lib), "%s/%s", t->dir, lib);
	f = fopen(t->script, "wx");
	cr_assert(f);
	fputs(script, f);
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(pipe(ready), 0);
	cr_assert_eq(pipe(go), 0);
	t->pid = fork();
	cr_assert(t->pid >= 0);
	if (t->pid == 0) {
		char ldpath[128];
		char *env[] = { "PATH=/usr/bin:/bin", ldpath, NULL };

		snprintf(ldpath, sizeof(ldpath), "LD_LIBRARY_PATH=%s", t->dir);

		close(ready[0]);
		close(go[1]);
		snprintf(a1, sizeof(a1), "%d", ready[1]);
		snprintf(a2, sizeof(a2), "%d", go[0]);
		if (ns)
			own_namespace(python, t);
		execle(t->python, t->python, "-I", "-S", t->script, a1, a2, (char *)NULL, env);
		_exit(127);
	}
	close(ready[1]);
	close(go[0]);
	t->go = go[1];
	pfd = (struct pollfd){ .fd = ready[0], .events = POLLIN };
	cr_assert_eq(poll(&pfd, 1, 60000), 1, "%s did not reach hot_leaf", python);
	cr_assert_eq(read(ready[0], &c, 1), 1, "%s exited before hot_leaf", python);
	close(ready[0]);
}

static void stop_target(struct target *t)
{
	int st;

	if (write(t->go, "g", 1) != 1)
		kill(t->pid, SIGKILL);
	close(t->go);
	waitpid(t->pid, &st, 0);
	unlink(t->script);
	rmdir(t->dir);
}

/* _PyRuntime as nm and the maps see it: st_value + start of the mapping. */
static uint64_t oracle_runtime(pid_t pid, const char *path)
{
	char cmd[PATH_MAX + 64], line[PATH_MAX + 128], name[PATH_MAX];
	unsigned long long v = 0, start, off, base = 0;
	unsigned char eh[18] = { 0 };
	FILE *f;
	int fd;

	snprintf(cmd, sizeof(cmd), "nm -D --defined-only '%s'", path);
	f = popen(cmd, "r");
	cr_assert(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx %*s %4095s", &start, name) == 2 && !strcmp(name, "_PyRuntime"))
			v = start;
	pclose(f);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	cr_assert(fd >= 0 && read(fd, eh, sizeof(eh)) == sizeof(eh));
	close(fd);
	if (eh[16] != ET_DYN)
		return v;
	snprintf(cmd, sizeof(cmd), "/proc/%d/maps", (int)pid);
	f = fopen(cmd, "r");
	cr_assert(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx-%*x %*s %llx %*s %*u %4095s", &start, &off, name) == 3 &&
		    off == 0 && !strcmp(name, path) && !base)
			base = start;
	fclose(f);
	return v + base;
}

static void check_walk(int memfd, const struct pyproc_info *info, const struct target *t,
		       const char *what)
{
	static const char *const want[] = { "hot_leaf", "middle", "outer", "<module>" };
	struct pyproc_frame fr[16];
	int n = pyproc_walk(memfd, info, 0, fr, 16);

	cr_assert_geq(n, 4, "%s walk: %d frames", what, n);
	for (int i = 0; i < 4; i++) {
		cr_expect_str_eq(fr[i].name, want[i], "%s frame %d", what, i);
		cr_expect_str_eq(fr[i].file, t->script, "%s frame %d", what, i);
	}
	cr_expect_eq(fr[0].firstlineno, 2, "%s", what);
	cr_expect_eq(fr[3].firstlineno, 1, "%s", what);
	/* By thread: the main thread's native id is the pid (not in 3.10). */
	n = pyproc_walk(memfd, info, t->pid, fr, 16);
	if (info->minor >= 11)
		cr_expect_geq(n, 4, "%s walk of thread %d: %d frames", what, (int)t->pid, n);
	else
		cr_expect_eq(n, -ESRCH, "%s: 3.10 has no native thread ids", what);
	cr_expect_eq(pyproc_walk(memfd, info, 1, fr, 16), -ESRCH, "%s", what);
}

/* The 3.13 runtime's own _Py_DebugOffsets, read live, and damaged copies. */
static void check_debug_offsets(int memfd, const struct pyproc_info *info,
				const struct pyproc_offsets *table)
{
	uint8_t b[584], bad[584];
	struct pyproc_offsets o;

	cr_assert_eq(pread(memfd, b, sizeof(b), (off_t)info->runtime_addr), (ssize_t)sizeof(b));
	cr_assert_eq(memcmp(b, "xdebugpy", 8), 0, "no cookie at _PyRuntime");
	cr_assert_eq(pyproc_debug_offsets_parse(b, sizeof(b), 13, &o), 0);
	cr_expect_eq(memcmp(&o, table, sizeof(o)), 0, "_Py_DebugOffsets differ from the table");
	cr_expect_eq(pyproc_debug_offsets_parse(b, sizeof(b) - 1, 13, &o), -EPROTO);
	cr_expect_eq(pyproc_debug_offsets_parse(b, sizeof(b), 12, &o), -ENOENT);
	memcpy(bad, b, sizeof(b));
	bad[0] = 'X';
	cr_expect_eq(pyproc_debug_offsets_parse(bad, sizeof(bad), 13, &o), -EPROTO);
	memcpy(bad, b, sizeof(b));
	memset(bad + 184, 0x7f, 8);  /* thread_state.current_frame past its struct */
	cr_expect_eq(pyproc_debug_offsets_parse(bad, sizeof(bad), 13, &o), -EINVAL);
}

/* DWARF of FILE agrees with the table, field by field. */
static void check_dwarf(const char *file, unsigned minor, const struct pyproc_offsets *table)
{
	struct pyproc_offsets d;
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	Elf *elf;

	cr_assert(fd >= 0);
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	cr_assert_eq(pyproc_dwarf_offsets(elf, minor, &d), 0, "%s: no DWARF offsets", file);
	for (size_t i = 0; i < sizeof(d) / sizeof(uint32_t); i++)
		cr_expect_eq(((uint32_t *)&d)[i], ((const uint32_t *)table)[i],
			     "%s: field %zu: DWARF %u, table %u", file, i,
			     ((uint32_t *)&d)[i], ((const uint32_t *)table)[i]);
	elf_end(elf);
	close(fd);
}

static void run_python(const char *python, bool ns, const char *lib, unsigned minor, uint32_t hex,
		       enum pyproc_source source)
{
	struct pyproc_offsets table;
	struct pyproc_info info, tinfo;
	struct target t;
	char p[64];
	int memfd;

	if (access(python, X_OK)) {
		cr_skip("%s not installed", python);
		return;
	}
	start_target(python, ns, lib, &t);
	cr_assert_eq(pyproc_detect("/proc", t.pid, &info), 0);
	snprintf(p, sizeof(p), "/proc/%d/mem", (int)t.pid);
	memfd = open(p, O_RDONLY | O_CLOEXEC);
	cr_assert(memfd >= 0);
	cr_assert_eq(info.status, PYPROC_OK, "%s: %s", python, pyproc_status_name(info.status));
	cr_expect_eq(info.major, 3);
	cr_expect_eq(info.minor, minor);
	cr_expect_eq(info.hexversion, hex, "%s: %#x", python, info.hexversion);
	cr_expect_neq(info.code_type_addr, 0, "%s: no PyCode_Type", python);
	cr_expect_eq(info.source, source, "%s: offsets from %s", python,
		     pyproc_source_name(info.source));
	if (ns) {
		const char *want = t.lib[0] ? t.lib : t.python;

		cr_expect_str_eq(info.path, want);
		cr_expect_neq(access(want, F_OK), 0, "%s is visible outside", want);
	} else {
		cr_expect_eq(info.runtime_addr, oracle_runtime(t.pid, info.path), "%s", info.path);
	}
	check_walk(memfd, &info, &t, pyproc_source_name(info.source));
	cr_assert_eq(pyproc_table_offsets(3, minor, &table), 0);
	tinfo = info;
	tinfo.off = table;
	check_walk(memfd, &tinfo, &t, "table");
	if (minor == 13)
		check_debug_offsets(memfd, &info, &table);
	if (source == PYPROC_SRC_DWARF && !ns)
		check_dwarf(info.path, minor, &table);
	close(memfd);
	stop_target(&t);
}

static const char *pyenv(const char *v)
{
	static char path[PATH_MAX];
	const char *root = getenv("PYENV_ROOT");
	const char *home = getenv("HOME");

	if (root)
		snprintf(path, sizeof(path), "%s/versions/%s/bin/python3", root, v);
	else
		snprintf(path, sizeof(path), "%s/.pyenv/versions/%s/bin/python3",
			 home ? home : "/root", v);
	return path;
}

Test(pyproc, debian_python3)
{
	/* Static, stripped, no -dbg package: Py_Version, and the table. */
	run_python("/usr/bin/python3.11", false, NULL, 11, 0x030b02f0, PYPROC_SRC_TABLE);
}

Test(pyproc, pyenv_310) { run_python(pyenv("3.10.13"), false, NULL, 10, 0, PYPROC_SRC_DWARF); }
Test(pyproc, pyenv_311) { run_python(pyenv("3.11.7"), false, NULL, 11, 0x030b07f0, PYPROC_SRC_DWARF); }
Test(pyproc, pyenv_312) { run_python(pyenv("3.12.1"), false, NULL, 12, 0x030c01f0, PYPROC_SRC_DWARF); }
Test(pyproc, pyenv_313) { run_python(pyenv("3.13.0"), false, NULL, 13, 0x030d00f0, PYPROC_SRC_DWARF); }

/* A container's interpreter: the same, found beneath its root. */
Test(pyproc, debian_python3_own_mount_ns)
{
	run_python("/usr/bin/python3.11", true, NULL, 11, 0x030b02f0, PYPROC_SRC_TABLE);
}

Test(pyproc, pyenv_312_own_mount_ns)
{
	run_python(pyenv("3.12.1"), true, "libpython3.12.so.1.0", 12, 0x030c01f0, PYPROC_SRC_DWARF);
}

Test(pyproc, not_python)
{
	struct pyproc_counters c = { { 0 } };
	struct pyproc_info info;

	cr_assert_eq(pyproc_detect("/proc", getpid(), &info), 0);
	cr_expect_eq(info.status, PYPROC_NOT_PYTHON, "%s", pyproc_status_name(info.status));
	pyproc_count(&c, info.status);
	cr_expect_eq(c.n[PYPROC_NOT_PYTHON], 1);
	cr_expect_lt(pyproc_detect("/proc", 0x7ffffff0, &info), 0);
}

Test(pyproc, garbage_elf)
{
	static const char *const libs[] = { "3.10.13", "3.12.1" };
	unsigned char junk[4096];
	struct pyproc_elf pe;
	Elf *elf;

	elf_version(EV_CURRENT);
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (unsigned char)(i * 131 + 7);
	elf = elf_memory((char *)junk, sizeof(junk));
	pyproc_elf_scan(elf, "libpython3.12.so", &pe);
	cr_expect_eq(pe.status, PYPROC_BAD_ELF);
	elf_end(elf);
	pyproc_elf_scan(NULL, NULL, &pe);
	cr_expect_eq(pe.status, PYPROC_BAD_ELF);
	/* A real libpython cut short: its symbols are gone, so not one. */
	for (size_t l = 0; l < 2; l++) {
		char path[PATH_MAX];
		int fd;

		snprintf(path, sizeof(path), "%s", pyenv(libs[l]));
		strcpy(strstr(path, "/bin/python3"), "/lib/");
		strncat(path, l ? "libpython3.12.so.1.0" : "libpython3.10.so.1.0",
			sizeof(path) - strlen(path) - 1);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		cr_assert_eq(read(fd, junk, sizeof(junk)), (ssize_t)sizeof(junk));
		close(fd);
		elf = elf_memory((char *)junk, sizeof(junk));
		pyproc_elf_scan(elf, path, &pe);
		cr_expect_neq(pe.status, PYPROC_OK, "%s cut to 4 KiB", path);
		elf_end(elf);
	}
}

/* The fuzz seed: a small ELF with Py_Version and 3.13.0's own .PyRuntime. */
Test(pyproc, seed_elf_313)
{
	struct pyproc_offsets o, table;
	struct pyproc_elf pe;
	int fd = open("tests/fuzz/corpus/pyproc/elf-3.13-runtime", O_RDONLY | O_CLOEXEC);
	Elf *elf;

	cr_assert(fd >= 0);
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	pyproc_elf_scan(elf, "whatever", &pe);
	cr_assert_eq(pe.status, PYPROC_OK, "%s", pyproc_status_name(pe.status));
	cr_expect_eq(pe.minor, 13);
	cr_expect_eq(pe.hexversion, 0x030d00f0);
	cr_expect_eq(pe.elf_type, ET_DYN);
	cr_assert_eq(pyproc_elf_debug_offsets(elf, &pe, &o), 0);
	cr_assert_eq(pyproc_table_offsets(3, 13, &table), 0);
	cr_expect_eq(memcmp(&o, &table, sizeof(o)), 0);
	cr_expect_eq(pyproc_dwarf_offsets(elf, 13, &o), -ENOENT);
	/* A _Py_DebugOffsets of another release than Py_Version says. */
	pe.hexversion = 0x030d01f0;
	cr_expect_eq(pyproc_elf_debug_offsets(elf, &pe, &o), -EPROTO);
	elf_end(elf);
	close(fd);
}

/* An interpreter found whose version has no layout here: a status, counted. */
static void run_unsupported(const char *python, unsigned minor, enum pyproc_status want)
{
	struct pyproc_counters c = { { 0 } };
	struct pyproc_info info;
	struct target t;

	if (access(python, X_OK)) {
		cr_skip("%s not installed", python);
		return;
	}
	start_target(python, false, NULL, &t);
	cr_expect_eq(pyproc_detect("/proc", t.pid, &info), 0);
	stop_target(&t);
	cr_expect_eq(info.status, want, "%s: %s", python, pyproc_status_name(info.status));
	if (want == PYPROC_UNSUPPORTED)
		cr_expect_eq(info.minor, minor);
	pyproc_count(&c, info.status);
	cr_expect_eq(c.n[want], 1);
	cr_expect_eq(info.source, PYPROC_SRC_NONE);
}

Test(pyproc, pyenv_39_unsupported) { run_unsupported(pyenv("3.9.18"), 9, PYPROC_UNSUPPORTED); }
/* 3.6 has no _PyRuntime at all (3.7 brought it). */
Test(pyproc, pyenv_36_no_runtime) { run_unsupported(pyenv("3.6.15"), 6, PYPROC_NOT_PYTHON); }

/* A second process of the same python costs no parse, and finds the same (its own) layout. */
static void run_cached(const char *python)
{
	static struct pyproc_cache cache;
	struct pyproc_info plain, cached;
	struct target a, b;
	uint64_t misses;

	if (access(python, X_OK)) {
		cr_skip("%s not installed", python);
		return;
	}
	memset(&cache, 0, sizeof(cache));
	start_target(python, false, NULL, &a);
	start_target(python, false, NULL, &b);
	cr_assert_eq(pyproc_detect_cached("/proc", a.pid, &cache, &cached), 0);
	cr_assert_eq(cached.status, PYPROC_OK);
	cr_expect_eq(cache.hits, 0);
	misses = cache.misses;
	cr_expect_geq(misses, 1);
	cr_assert_eq(pyproc_detect_cached("/proc", b.pid, &cache, &cached), 0);
	cr_expect_eq(cache.misses, misses, "%s parsed again", python);
	cr_expect_eq(cache.hits, misses);
	cr_assert_eq(pyproc_detect("/proc", b.pid, &plain), 0);
	cr_expect_eq(cached.status, plain.status);
	cr_expect_eq(cached.source, plain.source);
	cr_expect_eq(cached.runtime_addr, plain.runtime_addr, "%s: %#llx, uncached %#llx", python,
		     (unsigned long long)cached.runtime_addr, (unsigned long long)plain.runtime_addr);
	cr_expect_eq(cached.code_type_addr, plain.code_type_addr);
	cr_expect_eq(memcmp(&cached.off, &plain.off, sizeof(plain.off)), 0);
	cr_expect_str_eq(cached.path, plain.path);
	stop_target(&a);
	stop_target(&b);
}

Test(pyproc, cache_debian_python3) { run_cached("/usr/bin/python3.11"); }
Test(pyproc, cache_pyenv_312) { run_cached(pyenv("3.12.1")); }
