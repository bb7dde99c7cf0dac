// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * `perfrecctl cut --from T --to T | --at T [--around D] [--container ID]
 * [--pod UID] [--unit NAME] [-o OUT] [-z] [--force] [--no-live]
 * [--archive FILE [--buildid-dir DIR]]
 * [DIR|FILE... | --bucket URL [--host NAME] [--label K=V]...]`: the
 * command's arguments, the default directory and the bucket's files; the
 * cut itself is views/cut.c's cut_write().
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <perfrec/timespec.h>

#include "cut-archive.h"
#include "cut.h"
#include "perfrecctl.h"
#include "window.h"

#define NSEC 1000000000ULL

static void fmt(uint64_t ns, bool utc, char *buf, size_t sz)
{
	if (perfrec_timespec__format(ns, utc, buf, sz) < 0)
		snprintf(buf, sz, "%" PRIu64 " ns", ns);
}

/*
 * What fetch_window() put in @at's @name, then it: files, and for
 * --archive .build-id/xx/yyyy[/kallsyms].  Ours alone (mkdtemp()), no link
 * followed; three levels at most.
 */
static void remove_tree(int at, const char *name, int depth)
{
	int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;

	if (fd >= 0 && !d)
		close(fd);
	while (d && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && unlinkat(dirfd(d), e->d_name, 0) < 0 &&
		    errno == EISDIR && depth < 3)
			remove_tree(dirfd(d), e->d_name, depth + 1);
	if (d)
		closedir(d);
	unlinkat(at, name, AT_REMOVEDIR);
}

static void remove_dir(const char *dir)
{
	remove_tree(AT_FDCWD, dir, 0);
}

static int parse_time_arg(const char *opt, const char *v, uint64_t now, uint64_t *ret)
{
	(void)now;
	return window_parse_time("cut", opt, v, ret);
}

/* The command line of cut, before the window is worked out. */
struct cut_args {
	const char **paths;
	size_t np;
	char **bargv;           /* "cut" then --bucket and its options, for perfrecctl_fetch_window() */
	int bargc;
	const char *from_s, *to_s, *at_s, *around_s;
	const char *archive, *buildid_dir;   /* --archive, --buildid-dir */
	bool bucket;
};

/* Options into @a and @c; -EINVAL, said on stderr, for a usage error. */
static int parse_cut_args(int argc, char **argv, struct cut_opts *c, struct cut_args *a)
{
	for (int i = 1; i < argc; i++) {
		const char *o = argv[i];
		const char **slot = !strcmp(o, "--from") ? &a->from_s : !strcmp(o, "--to") ? &a->to_s
				   : !strcmp(o, "--at") ? &a->at_s : !strcmp(o, "--around") ? &a->around_s
				   : !strcmp(o, "-o") || !strcmp(o, "--output") ? &c->out_path
				   : !strcmp(o, "--archive") ? &a->archive : !strcmp(o, "--buildid-dir") ? &a->buildid_dir : NULL;

		if (perfrecctl_is_bucket_opt(o)) {
			/* --bucket URL [--host H] [--label K=V]...: for fetch_window() */
			if (i + 1 >= argc) {
				fprintf(stderr, "perfrecctl cut: %s needs a value\n", o);
				return -EINVAL;
			}
			a->bucket |= !strcmp(o, "--bucket");
			a->bargv[a->bargc++] = argv[i++];
			a->bargv[a->bargc++] = argv[i];
		} else if (slot) {
			if (++i >= argc) {
				fprintf(stderr, "perfrecctl cut: %s needs a value\n", o);
				return -EINVAL;
			}
			*slot = argv[i];
		} else if (!strcmp(o, "--container") || !strcmp(o, "--pod") || !strcmp(o, "--unit")) {
			if (++i >= argc || !*argv[i]) {
				fprintf(stderr, "perfrecctl cut: %s needs a value\n", o);
				return -EINVAL;
			}
			*(o[2] == 'c' ? &c->select.container : o[2] == 'p' ? &c->select.pod : &c->select.unit) = argv[i];
		} else if (!strcmp(o, "-z")) {
			c->level = 3;
		} else if (!strcmp(o, "--force") || !strcmp(o, "-f")) {
			c->force = true;
		} else if (!strcmp(o, "--no-live")) {
			c->live = false;
		} else if (o[0] == '-' && o[1]) {
			fprintf(stderr, "perfrecctl cut: unknown option '%s'\n", o);
			return -EINVAL;
		} else {
			a->paths[a->np++] = o;
		}
	}
	if (!!a->at_s == !!(a->from_s || a->to_s) || (a->from_s && !a->to_s) || (a->to_s && !a->from_s) ||
	    (a->around_s && !a->at_s)) {
		fprintf(stderr, "perfrecctl cut: give --from and --to, or --at (with --around)\n");
		return -EINVAL;
	}
	if (a->buildid_dir && !a->archive) {
		fprintf(stderr, "perfrecctl cut: --buildid-dir goes with --archive FILE\n");
		return -EINVAL;
	}
	if (a->bargc > 1 && !a->bucket) {
		fprintf(stderr, "perfrecctl cut: %s goes with --bucket URL\n", a->bargv[1]);
		return -EINVAL;
	}
	if (a->bucket && a->np) {
		fprintf(stderr, "perfrecctl cut: give --bucket or files, not both ('%s')\n", a->paths[0]);
		return -EINVAL;
	}
	return 0;
}

/* c->from and c->to from --from/--to or --at/--around; -EINVAL, said on stderr, if bad. */
static int cut_window(struct cut_opts *c, const struct cut_args *a)
{
	uint64_t now, at = 0, around = 30 * NSEC;
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	now = (uint64_t)ts.tv_sec * NSEC + (uint64_t)ts.tv_nsec;
	if (a->at_s) {
		char err[256];

		if (parse_time_arg("--at", a->at_s, now, &at) < 0)
			return -EINVAL;
		if (a->around_s && perfrec_timespec__parse_duration(a->around_s, &around, err, sizeof(err)) < 0) {
			fprintf(stderr, "perfrecctl cut: --around: %s\n", err);
			return -EINVAL;
		}
		c->from = at > around ? at - around : 0;
		c->to = at + around;
	} else if (parse_time_arg("--from", a->from_s, now, &c->from) < 0 ||
		   parse_time_arg("--to", a->to_s, now, &c->to) < 0) {
		return -EINVAL;
	}
	if (c->to <= c->from) {
		char f[64], t[64];

		fmt(c->from, true, f, sizeof(f));
		fmt(c->to, true, t, sizeof(t));
		fprintf(stderr, "perfrecctl cut: the window ends (%s) before it starts (%s)\n", t, f);
		return -EINVAL;
	}
	return 0;
}

/* A directory's own, else a file's directory: where perfrecd keeps its cache by default. */
static char *dir_of(const char *path)
{
	struct stat st;
	const char *slash = strrchr(path, '/');

	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return strdup(path);
	return slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
}

/*
 * --archive: the cut and the build-id cache entries it needs in one tar,
 * from --buildid-dir, then the cache of each input's directory.
 */
static int write_archive(const struct cut_opts *c, const struct cut_args *a)
{
	struct cut_archive_opts ao = { .data_path = c->out_path, .archive_path = a->archive, .force = c->force };
	const char **dirs = calloc(a->np + 1, sizeof(*dirs));
	int rc = EXIT_USAGE;

	if (!dirs)
		return rc;
	if (a->buildid_dir)
		dirs[ao.nr_cache_dirs++] = a->buildid_dir;
	for (size_t i = 0; i < a->np; i++)
		if (!(dirs[ao.nr_cache_dirs++] = dir_of(a->paths[i])))
			goto out;
	ao.cache_dirs = dirs;
	rc = cut_archive(&ao);
out:
	for (size_t i = a->buildid_dir ? 1 : 0; i < ao.nr_cache_dirs; i++)
		free((char *)dirs[i]);
	free(dirs);
	return rc;
}

int cmd_cut(int argc, char **argv)
{
	struct cut_opts c = { .out_path = "perf.data", .live = true };
	struct cut_args a = {
		.paths = calloc((size_t)argc + 1, sizeof(*a.paths)),
		.bargv = calloc((size_t)argc + 2, sizeof(*a.bargv)),
		.bargc = 1,
	};
	char bucket_dir[] = "/tmp/perfrecctl-cut-XXXXXX";
	bool have_dir = false;
	char *def = NULL;
	int rc;

	if (!a.paths || !a.bargv) {
		free(a.paths);
		free(a.bargv);
		return EXIT_USAGE;
	}
	a.bargv[0] = argv[0];
	if (parse_cut_args(argc, argv, &c, &a) < 0) {
		free(a.paths);
		free(a.bargv);
		return perfrecctl_usage("cut");
	}
	rc = EXIT_USAGE;
	if (cut_window(&c, &a) < 0)
		goto out;
	if (a.archive && !c.force && access(a.archive, F_OK) == 0) {
		fprintf(stderr, "perfrecctl cut: %s exists (--force replaces it)\n", a.archive);
		goto out;
	}
	if (a.bucket) {
		/* The fleet's files of the window, downloaded and checked, then cut as local ones. */
		size_t nr = 0;

		if (!mkdtemp(bucket_dir)) {
			fprintf(stderr, "perfrecctl cut: cannot make a directory for the bucket's files: %m\n");
			goto out;
		}
		have_dir = true;
		rc = perfrecctl_fetch_window("cut", a.bargc, a.bargv, c.from, c.to, bucket_dir, !!a.archive, &nr);
		if (rc)
			goto out;
		a.paths[a.np++] = bucket_dir;
		c.live = false;
	} else if (a.np == 0) {
		def = perfrecctl_recordings_dir("cut");
		a.paths[a.np++] = def;
	}
	c.socket_path = perfrecctl_socket_path();
	c.snapshot_into = perfrecctl_snapshot_into;
	rc = cut_write(&c, a.paths, a.np);
	if (!rc && a.archive)
		rc = write_archive(&c, &a);
out:
	if (have_dir)
		remove_dir(bucket_dir);
	free(def);
	free(a.paths);
	free(a.bargv);
	return rc;
}
