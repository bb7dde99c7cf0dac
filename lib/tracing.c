// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Tracing data in perf's layout (format "0.6", as perf record writes it):
 *
 *   "\x17\x08\x44tracing" | "0.6\0" | u8 big-endian | u8 sizeof(long) |
 *   u32 page size |
 *   "header_page\0" u64 size, contents | "header_event\0" u64 size, contents |
 *   u32 nr of ftrace formats (0 here) |
 *   u32 nr of subsystems; per subsystem: "name\0", u32 nr of formats,
 *     per format: u64 size, contents |
 *   u32 size, /proc/kallsyms (0: perf resolves kernel symbols otherwise) |
 *   u32 size, printk_formats | u64 size, saved_cmdlines (0: COMM records name tasks)
 *
 * Every number is in the host's byte order, which the endianness byte
 * declares.  perf parses the formats with libtraceevent to print a raw
 * payload's fields (prev_comm=... next_comm=...).
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <perfrec/tracing.h>

#include "featbuf.h"

#define TRACEFS_DEFAULT "/sys/kernel/tracing"
#define TRACEFS_DEBUGFS "/sys/kernel/debug/tracing"
/* Format files are a few KiB; printk_formats some tens. */
#define TRACEFS_FILE_MAX (16u << 20)

struct tp {
	char *subsys, *name;
};

static const char *tracefs_root(const struct perfrec_tracing_opts *opts)
{
	const char *root = PERFREC_OPTS_GET(opts, tracefs, NULL);
	struct stat st;

	if (root)
		return root;
	if (stat(TRACEFS_DEFAULT "/events", &st) == 0)
		return TRACEFS_DEFAULT;
	return TRACEFS_DEBUGFS;
}

/*
 * tracefs files say they are empty to stat(2): read until EOF.  A missing
 * file is -ENOENT; @optional ones come back empty instead.
 */
static int read_all(const char *root, const char *rel, bool optional, struct featbuf *out)
{
	char path[4096];
	int fd, r;

	r = snprintf(path, sizeof(path), "%s/%s", root, rel);
	if (r < 0 || (size_t)r >= sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return optional ? 0 : -errno;
	for (;;) {
		unsigned char chunk[8192];
		ssize_t n = read(fd, chunk, sizeof(chunk));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = optional ? 0 : -errno;
			break;
		}
		if (n == 0) {
			r = 0;
			break;
		}
		if (out->len + (size_t)n > TRACEFS_FILE_MAX) {
			r = -EFBIG;
			break;
		}
		featbuf_put(out, chunk, (size_t)n);
	}
	close(fd);
	return r < 0 ? r : featbuf_err(out);
}

/* "NAME\0", then u64 size and the file's contents. */
static int put_named_file(struct featbuf *fb, const char *root, const char *rel, const char *name)
{
	struct featbuf f;
	int r;

	featbuf_init(&f);
	r = read_all(root, rel, false, &f);
	if (r == 0) {
		featbuf_put(fb, name, strlen(name) + 1);
		featbuf_u64(fb, f.len);
		featbuf_put(fb, f.buf, f.len);
	}
	featbuf_exit(&f);
	return r;
}

static int cmp_tp(const void *a, const void *b)
{
	const struct tp *x = a, *y = b;
	int c = strcmp(x->subsys, y->subsys);

	return c ? c : strcmp(x->name, y->name);
}

/* "subsys:name[:mods]" into its two parts; the same checks as evspec. */
static int split_name(const char *s, struct tp *ret)
{
	const char *c1 = strchr(s, ':'), *c2;
	size_t nlen;

	if (!c1 || c1 == s)
		return -EINVAL;
	c2 = strchr(c1 + 1, ':');
	nlen = c2 ? (size_t)(c2 - c1 - 1) : strlen(c1 + 1);
	if (!nlen)
		return -EINVAL;
	ret->subsys = strndup(s, (size_t)(c1 - s));
	ret->name = strndup(c1 + 1, nlen);
	if (!ret->subsys || !ret->name)
		return -ENOMEM;
	/* Path components, never a way out of tracefs. */
	if (strchr(ret->subsys, '/') || strchr(ret->name, '/') || ret->subsys[0] == '.' || ret->name[0] == '.')
		return -EINVAL;
	return 0;
}

static int put_events(struct featbuf *fb, const char *root, struct tp *tps, size_t nr)
{
	size_t nr_sys = 0;
	int r;

	qsort(tps, nr, sizeof(*tps), cmp_tp);
	for (size_t i = 0; i < nr; i++)
		nr_sys += i == 0 || strcmp(tps[i].subsys, tps[i - 1].subsys);
	featbuf_u32(fb, (uint32_t)nr_sys);
	for (size_t i = 0; i < nr;) {
		size_t end = i, count_at;
		uint32_t count = 0;

		while (end < nr && !strcmp(tps[end].subsys, tps[i].subsys))
			end++;
		featbuf_put(fb, tps[i].subsys, strlen(tps[i].subsys) + 1);
		count_at = fb->len;
		featbuf_u32(fb, 0);
		for (size_t j = i; j < end; j++) {
			struct featbuf f;
			char rel[4096];

			if (j > i && !strcmp(tps[j].name, tps[j - 1].name))
				continue; /* "sched:sched_switch" and "sched:sched_switch:k" */
			r = snprintf(rel, sizeof(rel), "events/%s/%s/format", tps[j].subsys, tps[j].name);
			if (r < 0 || (size_t)r >= sizeof(rel))
				return -ENAMETOOLONG;
			featbuf_init(&f);
			r = read_all(root, rel, false, &f);
			if (r == 0) {
				featbuf_u64(fb, f.len);
				featbuf_put(fb, f.buf, f.len);
			}
			featbuf_exit(&f);
			if (r < 0)
				return r == -ENOTDIR ? -ENOENT : r;
			count++;
		}
		if (fb->len >= count_at + 4)
			featbuf_patch_u32(fb, count_at, count);
		i = end;
	}
	return featbuf_err(fb);
}

int perfrec_tracing__data(const char *const *tracepoints, size_t nr,
			  const struct perfrec_tracing_opts *opts,
			  void **ret_data, size_t *ret_len)
{
	static const unsigned char magic[10] = { 0x17, 0x08, 0x44, 't', 'r', 'a', 'c', 'i', 'n', 'g' };
	const char *root;
	struct tp *tps = NULL;
	struct featbuf fb, pf;
	unsigned char b[2];
	long page;
	int r = 0;

	if ((nr && !tracepoints) || !ret_data || !ret_len ||
	    !PERFREC_OPTS_VALID(opts, struct perfrec_tracing_opts))
		return -EINVAL;
	root = tracefs_root(opts);
	featbuf_init(&fb);
	featbuf_init(&pf);
	tps = calloc(nr ? nr : 1, sizeof(*tps));
	if (!tps) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < nr && r == 0; i++)
		r = tracepoints[i] ? split_name(tracepoints[i], &tps[i]) : -EINVAL;
	if (r < 0)
		goto out;

	featbuf_put(&fb, magic, sizeof(magic));
	featbuf_put(&fb, "0.6", 4);
	b[0] = __BYTE_ORDER == __BIG_ENDIAN;
	b[1] = (unsigned char)sizeof(long);
	featbuf_put(&fb, b, 2);
	page = sysconf(_SC_PAGESIZE);
	featbuf_u32(&fb, page > 0 ? (uint32_t)page : 4096);
	r = put_named_file(&fb, root, "events/header_page", "header_page");
	if (r == 0)
		r = put_named_file(&fb, root, "events/header_event", "header_event");
	if (r < 0)
		goto out;
	featbuf_u32(&fb, 0); /* ftrace's own formats: none recorded */
	r = put_events(&fb, root, tps, nr);
	if (r < 0)
		goto out;
	featbuf_u32(&fb, 0); /* kallsyms */
	/* printk formats name the strings of trace_printk()-style fields. */
	r = read_all(root, "printk_formats", true, &pf);
	if (r < 0)
		goto out;
	featbuf_u32(&fb, (uint32_t)pf.len);
	featbuf_put(&fb, pf.buf, pf.len);
	featbuf_u64(&fb, 0); /* saved_cmdlines */
	r = featbuf_err(&fb);
	if (r < 0)
		goto out;
	*ret_data = fb.buf;
	*ret_len = fb.len;
	fb.buf = NULL;
out:
	if (r == -ENOTDIR)
		r = -ENOENT;
	for (size_t i = 0; tps && i < nr; i++) {
		free(tps[i].subsys);
		free(tps[i].name);
	}
	free(tps);
	featbuf_exit(&pf);
	featbuf_exit(&fb);
	return r;
}
