// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Synthesis of PERF_RECORD_CGROUP for the cgroups that exist when a file
 * begins.  Samples carry PERF_SAMPLE_CGROUP, the 64-bit id of the task's
 * cgroup in the hierarchy the perf_event controller is bound to; the kernel
 * announces a cgroup with a CGROUP record only when it is created, so
 * without these records every cgroup older than the file would show up in
 * `perf report --sort cgroup` as a bare number.  The id of a cgroup
 * directory is the 8-byte file handle the kernel returns for it from
 * name_to_handle_at() (kernfs encodes the node id there, the same value
 * perf_event reports); the path is relative to the hierarchy's root, "/"
 * for the root itself, as the kernel writes it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <mntent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <linux/magic.h>

#include <perfrec/event.h>
#include <perfrec/synth.h>

#define ALIGN8(x) (((x) + 7) & ~(size_t)7)
/* Deeper trees are not walked: each level holds a directory fd open. */
#define MAX_DEPTH 64

struct cg_walk {
	uint64_t sample_type, id, time;
	size_t trailer;
	perfrec_synth_emit_fn emit;
	void *ctx;
	char path[PATH_MAX];        /* relative to the root, "/..." */
	uint64_t rec[(PERFREC_RECORD_MAX + 1) / 8];
};

int perfrec_synth__cgroup_root(const char *proc, char *buf, size_t sz)
{
	char mounts[PATH_MAX], line[4096];
	struct mntent me, *m;
	bool found_v1 = false, found_v2 = false;
	char v2[PATH_MAX] = "";
	FILE *f;
	int n;

	if (!buf || !sz)
		return -EINVAL;
	n = snprintf(mounts, sizeof(mounts), "%s/self/mounts", proc ? proc : "/proc");
	if (n < 0 || (size_t)n >= sizeof(mounts))
		return -ENAMETOOLONG;
	f = setmntent(mounts, "re");
	if (!f)
		return -errno;
	/*
	 * A v1 hierarchy with the perf_event controller wins: the kernel then
	 * reports that hierarchy's ids.  Otherwise the controller lives on the
	 * unified (cgroup2) hierarchy, wherever it is mounted.
	 */
	while ((m = getmntent_r(f, &me, line, sizeof(line)))) {
		if (!strcmp(m->mnt_type, "cgroup") && hasmntopt(m, "perf_event")) {
			n = snprintf(buf, sz, "%s", m->mnt_dir);
			found_v1 = n >= 0 && (size_t)n < sz;
			break;
		}
		if (!found_v2 && !strcmp(m->mnt_type, "cgroup2")) {
			n = snprintf(v2, sizeof(v2), "%s", m->mnt_dir);
			found_v2 = n >= 0 && (size_t)n < sizeof(v2);
		}
	}
	endmntent(f);
	if (found_v1)
		return 0;
	if (!found_v2)
		return -ENOENT;
	n = snprintf(buf, sz, "%s", v2);
	return n < 0 || (size_t)n >= sz ? -ENAMETOOLONG : 0;
}

/* The kernfs id of @name under @dirfd ("" with AT_EMPTY_PATH: @dirfd itself). */
static int cgroup_id(int dirfd, const char *name, uint64_t *ret_id)
{
	union {
		struct file_handle fh;
		char space[sizeof(struct file_handle) + 16];
	} h;
	int mount_id;

	h.fh.handle_bytes = 16;
	if (name_to_handle_at(dirfd, name, &h.fh, &mount_id, *name ? 0 : AT_EMPTY_PATH) < 0)
		return -errno;
	/* kernfs hands out exactly the 64-bit node id; anything else is not a cgroup fs. */
	if (h.fh.handle_bytes != 8)
		return -EOPNOTSUPP;
	memcpy(ret_id, h.fh.f_handle, 8);
	return 0;
}

static int emit_cgroup(struct cg_walk *w, uint64_t cgid, size_t path_len)
{
	struct perf_event_header *hdr = (struct perf_event_header *)w->rec;
	unsigned char *p = (unsigned char *)w->rec;
	struct perfrec_sample_id sid = { .time = w->time, .id = w->id };
	size_t body = ALIGN8(sizeof(*hdr) + 8 + path_len + 1);

	/* A record's size is a u16: a path that does not fit is left out. */
	if (body + w->trailer > PERFREC_RECORD_MAX)
		return 0;
	memset(p, 0, body);
	hdr->type = PERF_RECORD_CGROUP;
	hdr->misc = 0;
	memcpy(p + sizeof(*hdr), &cgid, 8);
	memcpy(p + sizeof(*hdr) + 8, w->path, path_len);
	perfrec_sample_id__write(p + body, w->sample_type, &sid);
	hdr->size = (uint16_t)(body + w->trailer);
	return w->emit(w->ctx, hdr);
}

/*
 * Emit the children of the directory @fd (whose path is w->path, @len
 * bytes, "" for the root), each before its own children.  Directories that
 * vanish meanwhile or cannot be read are skipped; only the callback's error
 * or running out of memory stops the walk.
 */
static int walk(struct cg_walk *w, int fd, size_t len, int depth)
{
	struct dirent *de;
	DIR *d;
	int r = 0;

	if (depth >= MAX_DEPTH)
		return 0;
	d = fdopendir(fd);
	if (!d) {
		r = errno == ENOMEM ? -ENOMEM : 0;
		close(fd);
		return r;
	}
	while ((de = readdir(d))) {
		size_t nl = strlen(de->d_name);
		uint64_t cgid;
		int sub;

		if (de->d_name[0] == '.' && (!de->d_name[1] || (de->d_name[1] == '.' && !de->d_name[2])))
			continue;
		if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
			continue;
		if (len + 1 + nl + 1 > sizeof(w->path))
			continue;
		if (cgroup_id(dirfd(d), de->d_name, &cgid) < 0)
			continue;
		sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (sub < 0)
			continue; /* gone, or not a directory after all */
		w->path[len] = '/';
		memcpy(w->path + len + 1, de->d_name, nl + 1);
		r = emit_cgroup(w, cgid, len + 1 + nl);
		if (r >= 0)
			r = walk(w, sub, len + 1 + nl, depth + 1);
		else
			close(sub);
		w->path[len] = '\0';
		if (r < 0)
			break;
	}
	closedir(d);
	return r;
}

int perfrec_synth__cgroups(const struct perfrec_synth_opts *opts, const char *root,
			   perfrec_synth_emit_fn emit, void *ctx)
{
	char found[PATH_MAX];
	struct cg_walk *w;
	struct statfs sf;
	uint64_t cgid;
	int fd, r;

	if (!opts || !PERFREC_OPTS_VALID(opts, perfrec_synth_opts) || !emit)
		return -EINVAL;
	if (!root) {
		r = perfrec_synth__cgroup_root(PERFREC_OPTS_GET(opts, proc, NULL), found, sizeof(found));
		if (r < 0)
			return r;
		root = found;
	}
	fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* Other filesystems have 8-byte handles too (ext4): check what it is. */
	if (fstatfs(fd, &sf) < 0 || (sf.f_type != CGROUP_SUPER_MAGIC && sf.f_type != CGROUP2_SUPER_MAGIC))
		r = -EOPNOTSUPP;
	else
		r = cgroup_id(fd, "", &cgid);
	if (r < 0) {
		close(fd);
		return r;
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		close(fd);
		return -ENOMEM;
	}
	w->sample_type = PERFREC_OPTS_GET(opts, sample_type, 0);
	w->id = PERFREC_OPTS_GET(opts, id, 0);
	w->time = PERFREC_OPTS_GET(opts, time, 0);
	w->trailer = perfrec_sample_id__size(w->sample_type);
	w->emit = emit;
	w->ctx = ctx;
	w->path[0] = '/';
	w->path[1] = '\0';
	r = emit_cgroup(w, cgid, 1);
	w->path[0] = '\0';
	if (r >= 0)
		r = walk(w, fd, 0, 0);
	else
		close(fd);
	free(w);
	return r < 0 ? r : 0;
}
