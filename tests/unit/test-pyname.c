// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests of internal/pyname.c: code objects laid out in a file read
 * at the process's addresses (as /proc/PID/mem is) are named once, with
 * 3.11's offsets; garbage (a wrong type, a string that is not compact
 * ASCII, an address nothing maps) is an error that is cached, never a
 * crash; the cache is bounded; the eval loop is found in a real
 * interpreter's symbol table.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pyname.h"

#define CODE_TYPE 0x500000ull

static struct pyproc_info info;

/* A compact ASCII str at @at holding @s (state bits: compact, ascii). */
static void put_str(int fd, uint64_t at, const char *s, uint32_t state)
{
	int64_t len = (int64_t)strlen(s);

	cr_assert_eq(pwrite(fd, &len, 8, (off_t)at + 16), 8);
	cr_assert_eq(pwrite(fd, &state, 4, (off_t)at + 32), 4);
	cr_assert_eq(pwrite(fd, s, strlen(s), (off_t)at + info.off.unicode_ascii_data), (ssize_t)strlen(s));
}

/* A code object of @units code units of bytecode (its ob_size). */
static void put_code_sized(int fd, uint64_t at, uint64_t type, uint64_t name, uint64_t file, int32_t line,
			   int64_t units)
{
	cr_assert_eq(pwrite(fd, &units, 8, (off_t)at + 16), 8);
	cr_assert_eq(pwrite(fd, &type, 8, (off_t)at + 8), 8);
	cr_assert_eq(pwrite(fd, &name, 8, (off_t)at + info.off.code_name), 8);
	cr_assert_eq(pwrite(fd, &file, 8, (off_t)at + info.off.code_filename), 8);
	cr_assert_eq(pwrite(fd, &line, 4, (off_t)at + info.off.code_firstlineno), 4);
}

static void put_code(int fd, uint64_t at, uint64_t type, uint64_t name, uint64_t file, int32_t line)
{
	put_code_sized(fd, at, type, name, file, line, 10);
}

#define ASCII ((1u << 5) | (1u << 6))

/* A "process" of a few code objects: good ones, and garbage. */
static int make_mem(void)
{
	int fd = memfd_create("pyname", MFD_CLOEXEC);

	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, 0x20000), 0);
	memset(&info, 0, sizeof(info));
	info.status = PYPROC_OK;
	info.major = 3;
	info.minor = 11;
	info.code_type_addr = CODE_TYPE;
	cr_assert_eq(pyproc_table_offsets(3, 11, &info.off), 0);
	put_str(fd, 0x1000, "outer", ASCII);
	put_str(fd, 0x1100, "/w/prog.py", ASCII);
	put_str(fd, 0x1200, "Klass.hot_leaf", ASCII);
	put_str(fd, 0x1300, "bad\nname\x01", ASCII);
	put_str(fd, 0x1400, "caf\xc3\xa9", 1u << 5);          /* compact, not ASCII */
	put_code(fd, 0x2000, CODE_TYPE, 0x1000, 0x1100, 12);
	put_code(fd, 0x3000, CODE_TYPE, 0x1200, 0x1100, 40);
	put_code(fd, 0x4000, CODE_TYPE + 8, 0x1000, 0x1100, 1);   /* not a code object */
	put_code(fd, 0x5000, CODE_TYPE, 0x1300, 0x1100, 7);
	put_code(fd, 0x6000, CODE_TYPE, 0x1400, 0x1100, 7);
	put_code(fd, 0x7000, CODE_TYPE, 0x1fff8, 0x1100, 7);      /* name runs off the end */
	return fd;
}

Test(pyname, names_a_code_object)
{
	int fd = make_mem();
	struct pyname_code c;
	char sym[512];

	cr_assert_eq(pyname_read(fd, &info, 0x2000, &c), 0);
	cr_assert_str_eq(c.qualname, "outer");
	cr_assert_str_eq(c.file, "/w/prog.py");
	cr_assert_eq(c.firstlineno, 12);
	pyname_format(&c, sym, sizeof(sym));
	cr_assert_str_eq(sym, "py::outer (/w/prog.py:12)");
	cr_assert_eq(pyname_read(fd, &info, 0x5000, &c), 0);
	cr_assert_str_eq(c.qualname, "bad?name?", "control characters kept: \"%s\"", c.qualname);
	close(fd);
}

Test(pyname, garbage_is_an_error)
{
	int fd = make_mem();
	struct pyname_code c;

	cr_assert_eq(pyname_read(fd, &info, 0x4000, &c), -EPROTO, "a wrong type");
	cr_assert_eq(pyname_read(fd, &info, 0x6000, &c), -EPROTO, "a str that is not ASCII");
	cr_assert_eq(pyname_read(fd, &info, 0x7000, &c), -EFAULT, "a str past the end");
	cr_assert_eq(pyname_read(fd, &info, 0x40000000, &c), -EFAULT, "nothing mapped there");
	cr_assert_eq(pyname_read(fd, &info, UINT64_MAX - 8, &c), -EFAULT, "past off_t");
	cr_assert_eq(pyname_read(fd, &info, 0, &c), -EINVAL);
	close(fd);
}

Test(pyname, cache_names_once_and_remembers_failures)
{
	struct pyname_cache *pc;
	struct pyname_code c;
	struct pyname_stats st;
	bool fresh;
	int fd = make_mem();

	cr_assert_eq(pyname_cache_new(fd, &info, &pc), 0);
	cr_assert_eq(pyname_lookup(pc, 0x3000, 0, &c, &fresh), 0);
	cr_assert(fresh);
	cr_assert_str_eq(c.qualname, "Klass.hot_leaf");
	cr_assert_eq(pyname_lookup(pc, 0x2000, 0, &c, &fresh), 1);
	cr_assert(fresh);
	/* changed behind its back: a cached name is not read again */
	put_str(fd, 0x1000, "other", ASCII);
	memset(&c, 0, sizeof(c));
	cr_assert_eq(pyname_lookup(pc, 0x2000, 0, &c, &fresh), 1);
	cr_assert_not(fresh);
	cr_assert_eq(c.qualname[0], '\0');
	cr_assert_eq(pyname_lookup(pc, 0x4000, 0, &c, &fresh), -EPROTO);
	/* fixed since: still the cached error, no second read */
	put_code(fd, 0x4000, CODE_TYPE, 0x1000, 0x1100, 1);
	cr_assert_eq(pyname_lookup(pc, 0x4000, 0, &c, &fresh), -EPROTO);
	cr_assert_not(fresh);
	pyname_cache_stats(pc, &st);
	cr_assert_eq(st.named, 2);
	cr_assert_eq(st.failed, 1);
	pyname_cache_free(pc);
}

Test(pyname, cache_is_bounded)
{
	struct pyname_cache *pc;
	struct pyname_code c;
	struct pyname_stats st;
	bool fresh;
	int r;

	cr_assert_eq(pyname_cache_new(make_mem(), &info, &pc), 0);
	/* a process full of garbage addresses fills its own cache, no more */
	for (uint64_t i = 0; i < PYNAME_MAX_CODES; i++)
		cr_assert_eq(pyname_lookup(pc, 0x100000000ull + 64 * i, 0, &c, &fresh), -EFAULT);
	r = pyname_lookup(pc, 0x2000, 0, &c, &fresh);
	cr_assert_eq(r, -ENOSPC);
	pyname_cache_stats(pc, &st);
	cr_assert_eq(st.full, 1);
	cr_assert_eq(st.failed, PYNAME_MAX_CODES);
	pyname_cache_free(pc);
}

Test(pyname, eval_range_of_a_real_interpreter)
{
	const char *path = "/usr/bin/python3.11";
	uint64_t lo, hi;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		cr_skip("%s: not installed", path);
	cr_assert_eq(pyname_eval_range_fd(fd, &lo, &hi), 0);
	cr_assert_gt(hi - lo, 1000, "_PyEval_EvalFrameDefault is big: %lx-%lx", lo, hi);
	close(fd);
	fd = open("/bin/true", O_RDONLY | O_CLOEXEC);
	cr_assert_eq(pyname_eval_range_fd(fd, &lo, &hi), -ENOENT);
	close(fd);
}

Test(pyname, eval_range_of_this_process_python_less)
{
	struct pyproc_info self = { .status = PYPROC_OK };
	uint64_t lo, hi;

	snprintf(self.path, sizeof(self.path), "/proc/self/exe");
	/* a link last is not followed, as in a hostile process's root */
	cr_assert_lt(pyname_eval_range(getpid(), &self, &lo, &hi), 0);
}

Test(pyname, a_frame_that_ran_another_object_is_not_named_by_this_one)
{
	struct pyname_cache *pc;
	struct pyname_code c;
	struct pyname_stats st;
	bool fresh;
	int fd = make_mem();

	cr_assert_eq(pyname_cache_new(dup(fd), &info, &pc), 0);
	/* a frame 100 bytes into "outer" (10 code units): it ran it */
	cr_assert_eq(pyname_lookup(pc, 0x2000, 0x2000 + 100, &c, &fresh), 0);
	cr_assert(fresh);
	cr_assert_str_eq(c.qualname, "outer");
	/* outer freed, a bigger code object at its address: a frame deep in it gets a slot of its own */
	put_str(fd, 0x1800, "Klass.big_one", ASCII);
	put_code_sized(fd, 0x2000, CODE_TYPE, 0x1800, 0x1100, 70, 1000);
	cr_assert_eq(pyname_lookup(pc, 0x2000, 0x2000 + 1500, &c, &fresh), 1);
	cr_assert(fresh);
	cr_assert_str_eq(c.qualname, "Klass.big_one");
	cr_assert_eq(pyname_lookup(pc, 0x2000, 0x2000 + 100, &c, &fresh), 1);
	cr_assert_not(fresh);
	/* a frame past the end of what is there now ran something gone: no name, none kept */
	cr_assert_eq(pyname_lookup(pc, 0x3000, 0x3000 + 4000, &c, &fresh), -ESTALE);
	cr_assert_not(fresh);
	cr_assert_eq(pyname_lookup(pc, 0x3000, 0x3000 + 50, &c, &fresh), 2);
	cr_assert(fresh, "an object refused for another frame was kept");
	cr_assert_str_eq(c.qualname, "Klass.hot_leaf");
	cr_assert_eq(pyname_lookup(pc, 0x3000, 0x3000 - 8, &c, &fresh), -ESTALE, "an instruction before the object");
	pyname_cache_stats(pc, &st);
	cr_assert_eq(st.named, 3);
	cr_assert_eq(st.renamed, 1);
	cr_assert_eq(st.stale, 2);
	pyname_cache_free(pc);
	close(fd);
}

Test(pyname, python_3_10_frames_are_not_checked)
{
	struct pyname_cache *pc;
	struct pyname_code c;
	bool fresh;
	int fd = make_mem();

	/* 3.10's instruction is f_lasti, an index: nothing to hold it to */
	info.minor = 10;
	cr_assert_eq(pyname_cache_new(fd, &info, &pc), 0);
	cr_assert_eq(pyname_lookup(pc, 0x2000, 4000, &c, &fresh), 0);
	cr_assert(fresh);
	cr_assert_eq(c.span, 0);
	pyname_cache_free(pc);
}
