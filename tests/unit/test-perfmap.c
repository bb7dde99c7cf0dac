// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests of internal/perfmap.c: the perf map of a live process, read
 * as it grows (whole lines only, each byte once), with every limit
 * counted, and opened only where the process's own root says, never
 * through a symbolic link, into a FIFO or a file that is not its own.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "perfmap.h"

static void feed(struct perfmap *m, const char *s)
{
	perfmap_feed(m, s, strlen(s));
}

Test(perfmap, parses_lines_hex_with_or_without_0x)
{
	struct perfmap m;

	perfmap_init(&m, NULL);
	feed(&m, "7f0010 40 LazyCompile:*fib /w/a.js:1:13\n0x7f0100 0x10 py::hot:/w/b.py\n");
	cr_assert_eq(m.nr_syms, 2);
	cr_assert_eq(m.syms[0].start, 0x7f0010);
	cr_assert_eq(m.syms[0].size, 0x40);
	cr_assert_str_eq(perfmap_sym_name(&m, &m.syms[0]), "LazyCompile:*fib /w/a.js:1:13");
	cr_assert_eq(m.syms[1].start, 0x7f0100);
	cr_assert_eq(m.syms[1].size, 0x10);
	cr_assert_str_eq(perfmap_sym_name(&m, &m.syms[1]), "py::hot:/w/b.py");
	cr_assert_eq(m.st.lines, 2);
	cr_assert_eq(m.st.bad_lines, 0);
	perfmap_exit(&m);
}

Test(perfmap, a_partial_line_waits_for_its_newline)
{
	struct perfmap m;

	perfmap_init(&m, NULL);
	feed(&m, "1000 10 fir");
	cr_assert_eq(m.nr_syms, 0);
	feed(&m, "st\n2000 2");
	cr_assert_eq(m.nr_syms, 1);
	cr_assert_str_eq(perfmap_sym_name(&m, &m.syms[0]), "first");
	feed(&m, "0 second\r\n");
	cr_assert_eq(m.nr_syms, 2);
	cr_assert_eq(m.syms[1].size, 0x20);
	cr_assert_str_eq(perfmap_sym_name(&m, &m.syms[1]), "second");
	perfmap_exit(&m);
}

Test(perfmap, bad_and_absurd_lines_are_counted_not_kept)
{
	static const char *const bad[] = {
		"\n", "zzz 10 x\n", "1000 x\n", "1000 10\n", "1000 10 \n", "1000 0 empty\n",
		"ffffffffffffffff 10 wraps\n", "1000 7fffffffffff huge\n",
		"11112222333344445555 10 overflow\n", "1000\t10 tab\n",
	};
	struct perfmap m;

	perfmap_init(&m, NULL);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		feed(&m, bad[i]);
	cr_assert_eq(m.nr_syms, 0, "kept %zu", m.nr_syms);
	cr_assert_eq(m.st.bad_lines, sizeof(bad) / sizeof(bad[0]));
	feed(&m, "1000 10 good\n");
	cr_assert_eq(m.nr_syms, 1);
	perfmap_exit(&m);
}

Test(perfmap, a_long_line_is_skipped_whole_and_the_next_one_read)
{
	size_t len = 100000;
	char *big = malloc(len + 1);
	struct perfmap m;

	cr_assert_not_null(big);
	memset(big, 'a', len);
	memcpy(big, "1000 10 ", 8);
	big[len] = '\0';
	perfmap_init(&m, NULL);
	/* in pieces, as a growing file gives it */
	feed(&m, "2000 10 before\n");
	for (size_t i = 0; i < len; i += 1000)
		perfmap_feed(&m, big + i, 1000);
	feed(&m, "\n3000 10 after\n");
	cr_assert_eq(m.nr_syms, 2);
	cr_assert_str_eq(perfmap_sym_name(&m, &m.syms[1]), "after");
	cr_assert_eq(m.st.long_lines, 1);
	/* and in one piece */
	big[len - 1] = '\n';
	perfmap_feed(&m, big, len);
	feed(&m, "4000 10 last\n");
	cr_assert_eq(m.nr_syms, 3);
	cr_assert_eq(m.st.long_lines, 2);
	perfmap_exit(&m);
	free(big);
}

Test(perfmap, names_are_cleaned_and_cut)
{
	char line[3000];
	struct perfmap m;

	perfmap_init(&m, NULL);
	feed(&m, "1000 10 a\x01" "b\x7f" "c\xff" "d\xc3\xa9" "e\xe2\x82\n");
	cr_assert_str_eq(perfmap_sym_name(&m, &m.syms[0]), "a?b?c?d\xc3\xa9" "e??");
	snprintf(line, sizeof(line), "2000 10 %02000d\n", 7);
	feed(&m, line);
	cr_assert_eq(strlen(perfmap_sym_name(&m, &m.syms[1])), PERFMAP_NAME_MAX);
	cr_assert_eq(m.st.cut_names, 1);
	perfmap_exit(&m);
}

Test(perfmap, limits_hold_and_count_what_they_drop)
{
	struct perfmap_limits lim = { .max_syms = 100, .max_name_bytes = 1 << 20 };
	struct perfmap m;
	char line[64];

	perfmap_init(&m, &lim);
	for (int i = 0; i < 1000; i++) {
		snprintf(line, sizeof(line), "%x 10 f%d\n", 0x1000 + i * 16, i);
		feed(&m, line);
	}
	cr_assert_eq(m.nr_syms, 100);
	cr_assert_eq(m.st.over_limit, 900);
	perfmap_exit(&m);

	lim = (struct perfmap_limits){ .max_name_bytes = 64 };
	perfmap_init(&m, &lim);
	for (int i = 0; i < 100; i++)
		feed(&m, "1000 10 0123456789\n");
	cr_assert_leq(m.names_len, 64);
	cr_assert_eq(m.nr_syms, 5);
	cr_assert_eq(m.st.over_limit, 95);
	perfmap_exit(&m);
}

static char dir[] = "/tmp/test-perfmap-XXXXXX";

static int make_root(void)
{
	char p[128];

	cr_assert_not_null(mkdtemp(dir));
	snprintf(p, sizeof(p), "%s/tmp", dir);
	cr_assert_eq(mkdir(p, 0755), 0);
	return open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

static void put(const char *rel, const char *text)
{
	char p[128];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	fd = open(p, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0, "%s: %s", p, strerror(errno));
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static void cleanup_root(void)
{
	char cmd[160];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

Test(perfmap, reads_only_what_the_file_gained, .fini = cleanup_root)
{
	int root = make_root();
	struct perfmap m;

	perfmap_init(&m, NULL);
	put("tmp/perf-42.map", "1000 10 one\n2000 10 tw");
	m.fd = perfmap_open_at(root, 42, getuid());
	cr_assert_geq(m.fd, 0, "%s", strerror(-m.fd));
	cr_assert_eq(perfmap_read(&m), 22);
	cr_assert_eq(m.nr_syms, 1);
	cr_assert_eq(perfmap_read(&m), 0);
	put("tmp/perf-42.map", "o\n3000 10 three\n");
	cr_assert_eq(perfmap_read(&m), 16);
	cr_assert_eq(m.nr_syms, 3);
	cr_assert_str_eq(perfmap_sym_name(&m, &m.syms[1]), "two");
	cr_assert_eq(m.st.bytes, 38);
	/* rewritten shorter: read again from its start */
	cr_assert_eq(truncate(strcat(strcpy((char[128]){ 0 }, dir), "/tmp/perf-42.map"), 0), 0);
	put("tmp/perf-42.map", "4000 10 four\n");
	cr_assert_eq(perfmap_read(&m), 13);
	cr_assert_eq(m.st.restarts, 1);
	cr_assert_eq(m.nr_syms, 4);
	perfmap_exit(&m);
	close(root);
}

Test(perfmap, a_read_is_bounded_by_its_budget, .fini = cleanup_root)
{
	struct perfmap_limits lim = { .read_budget = 100 };
	int root = make_root();
	struct perfmap m;

	perfmap_init(&m, &lim);
	for (int i = 0; i < 50; i++)
		put("tmp/perf-7.map", "1000 10 abcdefgh\n");
	m.fd = perfmap_open_at(root, 7, (uid_t)-1);
	cr_assert_geq(m.fd, 0);
	cr_assert_eq(perfmap_read(&m), 100);
	cr_assert_eq(m.nr_syms, 5);
	while (perfmap_read(&m) > 0)
		;
	cr_assert_eq(m.nr_syms, 50);
	perfmap_exit(&m);
	close(root);
}

Test(perfmap, no_link_fifo_or_foreign_file_is_opened, .fini = cleanup_root)
{
	int root = make_root(), fd;
	char p[128], q[128];

	/* a symbolic link at the name, even to a file inside the root */
	put("secret", "1000 10 secret\n");
	snprintf(p, sizeof(p), "%s/tmp/perf-1.map", dir);
	cr_assert_eq(symlink("../secret", p), 0);
	cr_assert_eq(perfmap_open_at(root, 1, (uid_t)-1), -ELOOP);
	/* an absolute one resolves in the root, and is refused all the same */
	snprintf(p, sizeof(p), "%s/tmp/perf-2.map", dir);
	cr_assert_eq(symlink("/etc/shadow", p), 0);
	cr_assert_eq(perfmap_open_at(root, 2, (uid_t)-1), -ELOOP);
	/* a FIFO: refused at once, not waited on */
	snprintf(p, sizeof(p), "%s/tmp/perf-3.map", dir);
	cr_assert_eq(mkfifo(p, 0600), 0);
	cr_assert_eq(perfmap_open_at(root, 3, (uid_t)-1), -EINVAL);
	/* a hard link to a file of the process's choice */
	snprintf(p, sizeof(p), "%s/secret", dir);
	snprintf(q, sizeof(q), "%s/tmp/perf-4.map", dir);
	cr_assert_eq(link(p, q), 0);
	cr_assert_eq(perfmap_open_at(root, 4, (uid_t)-1), -EPERM);
	/* another user's file */
	put("tmp/perf-5.map", "1000 10 x\n");
	fd = perfmap_open_at(root, 5, getuid() + 1);
	cr_assert_eq(fd, -EPERM);
	fd = perfmap_open_at(root, 5, getuid());
	cr_assert_geq(fd, 0);
	close(fd);
	close(root);
}

Test(perfmap, a_symlinked_tmp_in_the_root_is_refused, .fini = cleanup_root)
{
	int root = make_root();
	char p[128];

	snprintf(p, sizeof(p), "%s/tmp", dir);
	cr_assert_eq(rmdir(p), 0);
	snprintf(p, sizeof(p), "%s/elsewhere", dir);
	cr_assert_eq(mkdir(p, 0700), 0);
	put("elsewhere/perf-9.map", "1000 10 x\n");
	snprintf(p, sizeof(p), "%s/tmp", dir);
	cr_assert_eq(symlink("elsewhere", p), 0);
	cr_assert_eq(perfmap_open_at(root, 9, (uid_t)-1), -ELOOP);
	close(root);
}

Test(perfmap, opens_a_live_process_map_through_its_root)
{
	char p[64];
	struct perfmap m;
	int fd, nspid = perfmap_nspid(getpid());

	cr_assert_gt(nspid, 0);
	snprintf(p, sizeof(p), "/tmp/perf-%d.map", nspid);
	unlink(p);
	perfmap_init(&m, NULL);
	cr_assert_eq(perfmap_open(&m, getpid()), -ENOENT);
	fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "5000 20 live\n", 13), 13);
	close(fd);
	cr_assert_eq(perfmap_open(&m, getpid()), 0);
	cr_assert_eq(perfmap_read(&m), 13);
	cr_assert_eq(m.nr_syms, 1);
	unlink(p);
	perfmap_exit(&m);
}

/*
 * A map written as the process exits (the JVM's DumpPerfMapAtExit) is
 * read through its root held while it lived: /proc/PID/root is gone then.
 */
Test(perfmap, a_map_written_at_exit_is_read_through_the_root_held)
{
	struct perfmap_root root;
	struct perfmap m;
	char p[64], path[64];
	int go[2], st;
	pid_t pid;

	cr_assert_eq(pipe(go), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		char c;
		int fd;

		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(2);
		snprintf(p, sizeof(p), "/tmp/perf-%d.map", (int)getpid());
		fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		_exit(fd >= 0 && write(fd, "7000 30 atexit\n", 15) == 15 ? 0 : 1);
	}
	close(go[0]);
	snprintf(p, sizeof(p), "/tmp/perf-%d.map", (int)pid);
	unlink(p);
	cr_assert_eq(perfmap_root_hold(&root, pid), 0);
	cr_assert_eq(write(go[1], "x", 1), 1);
	close(go[1]);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* gone: no root of it to open now */
	snprintf(path, sizeof(path), "/proc/%d/root", (int)pid);
	cr_assert_lt(open(path, O_PATH | O_CLOEXEC), 0);
	perfmap_init(&m, NULL);
	cr_assert_eq(perfmap_open(&m, pid), -ENOENT);
	cr_assert_eq(perfmap_open_root(&m, &root), 0);
	cr_assert_eq(perfmap_read(&m), 15);
	cr_assert_eq(m.nr_syms, 1);
	cr_assert_str_eq(perfmap_sym_name(&m, &m.syms[0]), "atexit");
	unlink(p);
	perfmap_root_drop(&root);
	cr_assert_eq(root.fd, -1);
	cr_assert_eq(perfmap_open_root(&m, &root), -EBADF);
	perfmap_exit(&m);
}
