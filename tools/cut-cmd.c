// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * `perfrecctl cut --from T --to T | --at T [--around D] [--container ID]
 * [--pod UID] [--unit NAME] [-o OUT] [-z] [--force] [--no-live]
 * [DIR|FILE... | --bucket URL [--host NAME] [--label K=V]...]`: the
 * command's arguments, the default directory and the bucket's files; the
 * cut itself is views/cut.c's cut_write().
 */
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <perfrec/timespec.h>

#include "cut.h"
#include "perfrecctl.h"
#include "window.h"

#define NSEC 1000000000ULL

static void fmt(uint64_t ns, bool utc, char *buf, size_t sz)
{
	if (perfrec_timespec__format(ns, utc, buf, sz) < 0)
		snprintf(buf, sz, "%" PRIu64 " ns", ns);
}

/* The files fetch_window() put in @dir, then @dir. */
static void remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.')
			unlinkat(dirfd(d), e->d_name, 0);
	if (d)
		closedir(d);
	rmdir(dir);
}

static int parse_time_arg(const char *opt, const char *v, uint64_t now, uint64_t *ret)
{
	(void)now;
	return window_parse_time("cut", opt, v, ret);
}

int cmd_cut(int argc, char **argv)
{
	struct cut_opts c = { .out_path = "perf.data", .live = true };
	const char **paths = calloc((size_t)argc + 1, sizeof(*paths));
	char **bargv = calloc((size_t)argc + 2, sizeof(*bargv));
	char bucket_dir[] = "/tmp/perfrecctl-cut-XXXXXX";
	bool bucket = false, have_dir = false;
	int bargc = 1;
	const char *from_s = NULL, *to_s = NULL, *at_s = NULL, *around_s = NULL;
	uint64_t now, at = 0, around = 30 * NSEC;
	struct timespec ts;
	char *def = NULL;
	size_t np = 0;
	int rc;

	if (!paths || !bargv) {
		free(paths);
		free(bargv);
		return EXIT_USAGE;
	}
	bargv[0] = argv[0];
	for (int i = 1; i < argc; i++) {
		const char *o = argv[i];
		const char **slot = !strcmp(o, "--from") ? &from_s : !strcmp(o, "--to") ? &to_s
				   : !strcmp(o, "--at") ? &at_s : !strcmp(o, "--around") ? &around_s
				   : !strcmp(o, "-o") || !strcmp(o, "--output") ? &c.out_path : NULL;

		if (perfrecctl_is_bucket_opt(o)) {
			/* --bucket URL [--host H] [--label K=V]...: for fetch_window() */
			if (i + 1 >= argc) {
				fprintf(stderr, "perfrecctl cut: %s needs a value\n", o);
				goto usage;
			}
			bucket |= !strcmp(o, "--bucket");
			bargv[bargc++] = argv[i++];
			bargv[bargc++] = argv[i];
		} else if (slot) {
			if (++i >= argc) {
				fprintf(stderr, "perfrecctl cut: %s needs a value\n", o);
				goto usage;
			}
			*slot = argv[i];
		} else if (!strcmp(o, "--container") || !strcmp(o, "--pod") || !strcmp(o, "--unit")) {
			if (++i >= argc || !*argv[i]) {
				fprintf(stderr, "perfrecctl cut: %s needs a value\n", o);
				goto usage;
			}
			*(o[2] == 'c' ? &c.select.container : o[2] == 'p' ? &c.select.pod : &c.select.unit) = argv[i];
		} else if (!strcmp(o, "-z")) {
			c.level = 3;
		} else if (!strcmp(o, "--force") || !strcmp(o, "-f")) {
			c.force = true;
		} else if (!strcmp(o, "--no-live")) {
			c.live = false;
		} else if (o[0] == '-' && o[1]) {
			fprintf(stderr, "perfrecctl cut: unknown option '%s'\n", o);
			goto usage;
		} else {
			paths[np++] = o;
		}
	}
	if (!!at_s == !!(from_s || to_s) || (from_s && !to_s) || (to_s && !from_s) || (around_s && !at_s)) {
		fprintf(stderr, "perfrecctl cut: give --from and --to, or --at (with --around)\n");
		goto usage;
	}
	if (bargc > 1 && !bucket) {
		fprintf(stderr, "perfrecctl cut: %s goes with --bucket URL\n", bargv[1]);
		goto usage;
	}
	if (bucket && np) {
		fprintf(stderr, "perfrecctl cut: give --bucket or files, not both ('%s')\n", paths[0]);
		goto usage;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	now = (uint64_t)ts.tv_sec * NSEC + (uint64_t)ts.tv_nsec;
	rc = EXIT_USAGE;
	if (at_s) {
		char err[256];

		if (parse_time_arg("--at", at_s, now, &at) < 0)
			goto out;
		if (around_s && perfrec_timespec__parse_duration(around_s, &around, err, sizeof(err)) < 0) {
			fprintf(stderr, "perfrecctl cut: --around: %s\n", err);
			goto out;
		}
		c.from = at > around ? at - around : 0;
		c.to = at + around;
	} else if (parse_time_arg("--from", from_s, now, &c.from) < 0 || parse_time_arg("--to", to_s, now, &c.to) < 0) {
		goto out;
	}
	if (c.to <= c.from) {
		char a[64], b[64];

		fmt(c.from, true, a, sizeof(a));
		fmt(c.to, true, b, sizeof(b));
		fprintf(stderr, "perfrecctl cut: the window ends (%s) before it starts (%s)\n", b, a);
		goto out;
	}
	if (bucket) {
		/* The fleet's files of the window, downloaded and checked, then cut as local ones. */
		size_t nr = 0;

		if (!mkdtemp(bucket_dir)) {
			fprintf(stderr, "perfrecctl cut: cannot make a directory for the bucket's files: %m\n");
			goto out;
		}
		have_dir = true;
		rc = perfrecctl_fetch_window("cut", bargc, bargv, c.from, c.to, bucket_dir, &nr);
		if (rc)
			goto out;
		paths[np++] = bucket_dir;
		c.live = false;
	} else if (np == 0) {
		def = perfrecctl_recordings_dir("cut");
		paths[np++] = def;
	}
	c.socket_path = perfrecctl_socket_path();
	c.snapshot_into = perfrecctl_snapshot_into;
	rc = cut_write(&c, paths, np);
out:
	if (have_dir)
		remove_dir(bucket_dir);
	free(def);
	free(paths);
	free(bargv);
	return rc;
usage:
	free(paths);
	free(bargv);
	return perfrecctl_usage("cut");
}
