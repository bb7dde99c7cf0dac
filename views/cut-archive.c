// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A cut carried to another machine.  `perf archive` writes a tar of the
 * build-id cache entries a perf.data needs, named relative to the cache
 * (.build-id/xx/yyyy... and what they point to), to be unpacked with
 * `tar xf X -C ~/.debug`, perf's default cache, where `perf report` finds
 * them by build id.  perfrecd's cache has the same layout, with the entry a
 * regular file (perf's "old style" entry, which perf still reads as it is)
 * or, for a kernel, a directory holding kallsyms: so the same members,
 * copied from it, make the same ~/.debug.  The cut itself goes in first,
 * under its own name: one file to carry, unpacked beside the entries.
 *
 * Every build id the cut names is looked for, and one that no cache holds
 * is said, with the file it is of: the names it would have given are
 * missing on the other side, and the user should know which.  The caches
 * are perfrecd's and may sit where others can write (a --buildid-dir): a
 * link there is refused, never followed, so the archive, which its maker
 * may carry anywhere, holds nothing the cache did not hold itself.
 *
 * hotspot's perfparser does not look entries up by build id alone: it
 * finds a file by the name it was mapped as, under each --debug directory,
 * as NAME/BUILDID.  For a JIT image perfrecd made (mapped as
 * /perfrec-jit/jit-PID-START-LEN.so, named nowhere else), perfrecd links
 * DIR/perfrec-jit/jit-....so/BUILDID to the entry beside its cache; the
 * archive carries those links too, made anew from the build-id table
 * (relative, to the entry the archive holds), so `hotspot-perfparser
 * --debug ~/.debug` names JIT frames on the other side as on this one.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/perf_event.h>
#include <perfrec/buildid.h>
#include <perfrec/format.h>
#include <perfrec/pdreader.h>

#include "cut-archive.h"
#include "exitcode.h"
#include "fsutil.h"
#include "tar.h"

#define BID_MAX PERFREC_BUILD_ID_MAX

struct bid {
	uint8_t id[BID_MAX], len;
	bool added;           /* its entry is in the archive */
	char name[256];       /* the file it is of, for messages */
};

struct bids {
	struct bid *v;
	size_t nr, cap;
};

static int bids_add(struct bids *b, const uint8_t *id, uint8_t len, const char *name, size_t name_max)
{
	struct bid *e;

	if (!len || len > BID_MAX)
		return 0;
	for (size_t i = 0; i < b->nr; i++)
		if (b->v[i].len == len && !memcmp(b->v[i].id, id, len))
			return 0;
	if (b->nr == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 64;
		struct bid *v = realloc(b->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		b->v = v;
		b->cap = cap;
	}
	e = &b->v[b->nr++];
	memcpy(e->id, id, len);
	e->len = len;
	snprintf(e->name, sizeof(e->name), "%.*s", (int)strnlen(name, name_max), name);
	return 0;
}

/* HEADER_BUILD_ID's entries: header, pid, build_id[24] (length in byte 20 with misc bit 15), name. */
static int header_bids(const struct perfrec_pdreader *r, struct bids *b)
{
	const uint8_t *p, *end;
	const void *data;
	size_t len;
	int ret = 0;

	if (perfrec_pdreader__feature(r, PERFREC_FEAT_BUILD_ID, &data, &len) < 0)
		return 0;
	for (p = data, end = p + len; (size_t)(end - p) >= 36 && !ret;) {
		struct perf_event_header h;

		memcpy(&h, p, sizeof(h));
		if (h.size < 36 || h.size > (size_t)(end - p))
			break;
		ret = bids_add(b, p + 12, (h.misc & (1u << 15)) ? p[32] : BID_MAX, (const char *)p + 36, h.size - 36);
		p += h.size;
	}
	return ret;
}

/* MMAP2 records of the build-id form (size byte 40, id at 44, name at 72), as symbolize.c reads them. */
static int record_bids(struct perfrec_pdreader *r, struct bids *b)
{
	const struct perf_event_header *rec;
	uint64_t off;
	int n, ret = 0;

	while (!ret && (n = perfrec_pdreader__next(r, &rec, &off)) > 0) {
		const uint8_t *p = (const uint8_t *)rec;

		if (rec->type != PERF_RECORD_MMAP2 || !(rec->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) || rec->size < 73)
			continue;
		if (p[40] && p[40] <= BID_MAX)
			ret = bids_add(b, p + 44, p[40], (const char *)p + 72, rec->size - 72u);
	}
	return ret ? ret : n < 0 ? n : 0;
}

static void hex(const struct bid *e, char out[2 * BID_MAX + 1])
{
	for (unsigned i = 0; i < e->len; i++)
		snprintf(out + 2 * i, 3, "%02x", e->id[i]);
}

/* @name in @dirfd, a regular file, into @t as @member.  -ELOOP for a link. */
static int add_file(struct tar *t, int dirfd, const char *name, const char *member)
{
	struct stat st;
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	int r;

	if (fd < 0)
		return -errno;
	r = fstat(fd, &st) < 0 ? -errno : S_ISREG(st.st_mode) ? 0 : -EINVAL;
	if (!r)
		r = tar_add(t, member, fd, (st.st_mode & 0640) | 0600, st.st_mtime);
	close(fd);
	return r;
}

/* A directory entry (a kernel's): its regular files, not the upload markers. */
static int add_dir(struct tar *t, int dfd, const char *member)
{
	DIR *d = fdopendir(dfd);
	struct dirent *de;
	int r = 0, nr = 0;

	if (!d) {
		close(dfd);
		return -errno;
	}
	while (!r && (de = readdir(d))) {
		size_t n = strlen(de->d_name);
		char m[512];

		if (de->d_name[0] == '.' || (n > 9 && !strcmp(de->d_name + n - 9, ".uploaded")))
			continue;
		snprintf(m, sizeof(m), "%s/%s", member, de->d_name);
		r = add_file(t, dirfd(d), de->d_name, m);
		if (r == -ELOOP || r == -EINVAL)
			r = 0;   /* not a regular file: nothing perf reads there */
		else if (!r)
			nr++;
	}
	closedir(d);
	return r ? r : nr ? 0 : -ENOENT;
}

/*
 * @e's entry in cache @dir into @t: 0 added, -ENOENT not there, -ELOOP a
 * link on the way (refused), or another -errno (the archive's failure).
 */
static int add_entry(struct tar *t, const char *dir, const struct bid *e)
{
	char h[2 * BID_MAX + 1], sub[3], member[64];
	int fd, bfd = -1, sfd = -1, r;
	struct stat st;

	hex(e, h);
	memcpy(sub, h, 2);
	sub[2] = 0;
	snprintf(member, sizeof(member), ".build-id/%s/%s", sub, h + 2);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0)
		bfd = openat(fd, ".build-id", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (bfd >= 0)
		sfd = openat(bfd, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sfd < 0) {
		r = errno == ENOTDIR ? -ELOOP : errno == ENOENT ? -ENOENT : -errno;
		goto out;
	}
	if (fstatat(sfd, h + 2, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		r = -errno;
	} else if (S_ISLNK(st.st_mode)) {
		r = -ELOOP;
	} else if (S_ISDIR(st.st_mode)) {
		int dfd = openat(sfd, h + 2, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

		r = dfd < 0 ? -errno : add_dir(t, dfd, member);
	} else {
		r = add_file(t, sfd, h + 2, member);
	}
out:
	if (sfd >= 0)
		close(sfd);
	if (bfd >= 0)
		close(bfd);
	if (fd >= 0)
		close(fd);
	return r == -EINVAL ? -ENOENT : r;
}

/* Every build id of @b from the first cache holding it; the missing ones said and counted. */
static int add_entries(struct tar *t, const struct cut_archive_opts *o, struct bids *b, size_t *ret_missing)
{
	size_t missing = 0;

	for (size_t i = 0; i < b->nr; i++) {
		const struct bid *e = &b->v[i];
		char h[2 * BID_MAX + 1];
		bool link = false;
		int r = -ENOENT;

		for (size_t d = 0; d < o->nr_cache_dirs && (r == -ENOENT || r == -ELOOP); d++) {
			r = add_entry(t, o->cache_dirs[d], e);
			link |= r == -ELOOP;
		}
		if (r == -ENOENT || r == -ELOOP) {
			hex(e, h);
			fprintf(stderr, "perfrecctl cut: build id %s (%s) %s: not in the archive\n", h,
				*e->name ? e->name : "?",
				link ? "is a symbolic link in the cache, not followed" : "is in no build-id cache");
			missing++;
		} else if (r < 0) {
			return r;
		}
		b->v[i].added = r == 0;
	}
	*ret_missing = missing;
	return 0;
}

#define JIT_DIR "perfrec-jit"

/*
 * For each JIT image in the archive (its file /perfrec-jit/NAME, one
 * component), perfrec-jit/NAME/BUILDID -> ../../.build-id/xx/yyyy...:
 * what perfparser opens.  A name that makes no safe member is skipped,
 * said; *@ret_links: how many were written.
 */
static int add_links(struct tar *t, const struct bids *b, time_t mtime, size_t *ret_links)
{
	size_t links = 0;

	for (size_t i = 0; i < b->nr; i++) {
		const struct bid *e = &b->v[i];
		const char *n = e->name + strlen("/" JIT_DIR "/");
		char h[2 * BID_MAX + 1], member[512], target[128];
		int r;

		if (!e->added || strncmp(e->name, "/" JIT_DIR "/", strlen("/" JIT_DIR "/")))
			continue;
		hex(e, h);
		snprintf(member, sizeof(member), JIT_DIR "/%s/%s", n, h);
		snprintf(target, sizeof(target), "../../.build-id/%.2s/%s", h, h + 2);
		r = strchr(n, '/') ? -EINVAL : tar_add_symlink(t, member, target, mtime);
		if (r == -EINVAL) {
			fprintf(stderr, "perfrecctl cut: build id %s (%s): no link for hotspot under that name\n", h,
				e->name);
			continue;
		}
		if (r < 0)
			return r;
		links++;
	}
	*ret_links = links;
	return 0;
}

static bool gzip_name(const char *path)
{
	size_t n = strlen(path);

	return (n > 3 && !strcmp(path + n - 3, ".gz")) || (n > 4 && !strcmp(path + n - 4, ".tgz"));
}

/* The build ids the cut names: its HEADER_BUILD_ID, then its MMAP2 records'. */
static int cut_bids(const char *path, struct bids *b, int *ret_data_fd)
{
	struct perfrec_pdreader_opts ro = { .sz = sizeof(ro) };
	struct perfrec_pdreader *r = NULL;
	int ret;

	ret = perfrec_pdreader__open(path, &ro, &r);
	if (ret < 0)
		return ret;
	ret = header_bids(r, b);
	if (!ret)
		ret = record_bids(r, b);
	perfrec_pdreader__free(r);
	if (ret < 0)
		return ret;
	*ret_data_fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	return *ret_data_fd < 0 ? -errno : 0;
}

int cut_archive_buildids(const char *path, char **ret)
{
	struct perfrec_pdreader_opts ro = { .sz = sizeof(ro) };
	struct perfrec_pdreader *r = NULL;
	struct bids b = { 0 };
	char *out;
	int ret_r = perfrec_pdreader__open(path, &ro, &r);

	if (ret_r < 0)
		return ret_r;
	ret_r = header_bids(r, &b);
	perfrec_pdreader__free(r);
	out = ret_r ? NULL : calloc(b.nr * (2 * BID_MAX + 1) + 1, 1);
	if (out) {
		char *p = out;

		for (size_t i = 0; i < b.nr; i++) {
			hex(&b.v[i], p);
			p += strlen(p) + 1;
		}
		*ret = out;
	}
	free(b.v);
	return ret_r ? ret_r : out ? 0 : -ENOMEM;
}

int cut_archive(const struct cut_archive_opts *o)
{
	const char *base = strrchr(o->data_path, '/') ? strrchr(o->data_path, '/') + 1 : o->data_path;
	struct output_file of = { .fd = -1 };
	struct bids b = { 0 };
	struct tar *t = NULL;
	size_t missing = 0, links = 0;
	struct stat st = { 0 };
	int data = -1, r;

	r = cut_bids(o->data_path, &b, &data);
	if (r < 0) {
		fprintf(stderr, "perfrecctl cut: cannot read %s for its build ids: %s\n", o->data_path, strerror(-r));
		goto out;
	}
	r = output_file_open(&of, o->archive_path, o->force ? OUTPUT_REPLACE : 0, 0600);
	if (r < 0) {
		fprintf(stderr, "perfrecctl cut: cannot write %s: %s%s\n", o->archive_path, strerror(-r),
			r == -EEXIST ? " (--force replaces it)" : "");
		goto out;
	}
	r = tar_open(of.fd, gzip_name(o->archive_path), &t);
	if (r < 0) {
		close(of.fd);
		of.fd = -1;
	} else {
		of.fd = -1;   /* tar_close() closes it */
		r = fstat(data, &st) < 0 ? -errno : tar_add(t, base, data, 0600, st.st_mtime);
	}
	if (!r)
		r = add_entries(t, o, &b, &missing);
	if (!r)
		r = add_links(t, &b, st.st_mtime, &links);
	if (t) {
		int c = tar_close(t);

		r = r ? r : c;
	}
	if (!r)
		r = output_file_publish(&of);
	else
		output_file_discard(&of);
	if (r < 0) {
		fprintf(stderr, "perfrecctl cut: cannot write %s: %s\n", o->archive_path, strerror(-r));
		goto out;
	}
	fprintf(stderr, "perfrecctl cut: archive %s: %s and %zu of %zu build-id cache entr%s%s", o->archive_path, base,
		b.nr - missing, b.nr, b.nr == 1 ? "y" : "ies", missing ? " (the missing ones are named above)" : "");
	if (links)
		fprintf(stderr, ", %zu JIT image link%s for hotspot", links, links == 1 ? "" : "s");
	fputc('\n', stderr);
out:
	if (data >= 0)
		close(data);
	free(b.v);
	return r < 0 ? EXIT_USAGE : 0;
}
