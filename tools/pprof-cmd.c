// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * `perfrecctl pprof [-e EVENT] [--pid N] [--comm C] [--cgroup CG]
 * [--container ID] [--pod UID] [--unit NAME] [--from T --to T] [-o OUT.pb.gz] FILE|DIR...`:
 * the command's arguments and its output file; the profile is
 * views/pprof.c's pprof_write().
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsutil.h"
#include "perfrecctl.h"
#include "pprof.h"
#include "window.h"

static const struct option lopts[] = {
	{ "event", required_argument, NULL, 'e' },
	{ "pid", required_argument, NULL, 'p' },
	{ "comm", required_argument, NULL, 'c' },
	{ "cgroup", required_argument, NULL, 'G' },
	{ "container", required_argument, NULL, 'C' },
	{ "pod", required_argument, NULL, 'P' },
	{ "unit", required_argument, NULL, 'U' },
	{ "from", required_argument, NULL, 'F' },
	{ "to", required_argument, NULL, 'T' },
	{ "output", required_argument, NULL, 'o' },
	{ "symfs", required_argument, NULL, 's' },
	{ "buildid-dir", required_argument, NULL, 'B' },
	{ "no-debuginfod", no_argument, NULL, 'N' },
	{ "no-inline", no_argument, NULL, 'I' },
	{ "no-demangle", no_argument, NULL, 'M' },
	{}
};

int cmd_pprof(int argc, char **argv)
{
	struct profile_opts o = { .pid = -1 };
	const char *out = "profile.pb.gz";
	struct output_file of;
	struct view_summary sum = { 0 };
	int c, fd, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, "e:o:", lopts, NULL)) != -1) {
		char *end;

		switch (c) {
		case 'e': o.event = optarg; break;
		case 'p':
			errno = 0;
			o.pid = strtoll(optarg, &end, 10);
			if (errno || *end || o.pid < 0) {
				fprintf(stderr, "perfrecctl pprof: --pid wants a process id, not '%s'\n", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'c': o.comm = optarg; break;
		case 'G': o.cgroup = optarg; break;
		case 'C':
		case 'P':
		case 'U':
			if (!*optarg) {
				fprintf(stderr, "perfrecctl pprof: --%s wants a value, not ''\n",
					c == 'C' ? "container" : c == 'P' ? "pod" : "unit");
				return EXIT_USAGE;
			}
			*(c == 'C' ? &o.select.container : c == 'P' ? &o.select.pod : &o.select.unit) = optarg;
			break;
		case 'F':
		case 'T':
			if (window_parse_time("pprof", c == 'F' ? "--from" : "--to", optarg,
					      c == 'F' ? &o.from_wall_ns : &o.to_wall_ns) < 0)
				return EXIT_USAGE;
			break;
		case 'o': out = optarg; break;
		case 's': o.symfs = optarg; break;
		case 'B': o.buildid_dir = optarg; break;
		case 'N': o.no_debuginfod = true; break;
		case 'I': o.no_inline = true; break;
		case 'M': o.no_demangle = true; break;
		default:
			return perfrecctl_usage("pprof");
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "perfrecctl pprof: no FILE or DIR given\n");
		return perfrecctl_usage("pprof");
	}
	/*
	 * Written beside and renamed: a failed run leaves no half profile.  New
	 * and 0600, never through a link planted at the name: a profile names
	 * every process's functions.
	 */
	r = output_file_open(&of, out, OUTPUT_REPLACE | OUTPUT_STREAM, 0600);
	if (r < 0) {
		fprintf(stderr, "perfrecctl pprof: cannot create %s: %s\n", out, strerror(-r));
		return EXIT_USAGE;
	}
	fd = of.fd;
	r = pprof_write((const char *const *)argv + optind, (size_t)(argc - optind), &o, fd, &sum);
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && sum.samples == 0) {
		fprintf(stderr, "perfrecctl pprof: no samples%s%s in the input\n",
			o.event ? " of event " : "", o.event ? o.event : "");
		r = -ENODATA;
	}
	if (r == 0)
		r = output_file_publish(&of);
	output_file_discard(&of);
	if (r < 0) {
		if (r != -ENODATA)
			fprintf(stderr, "perfrecctl pprof: %s not written: %s\n", out, strerror(-r));
		return EXIT_BAD;
	}
	view_summary_print("pprof", out, o.event, &sum);
	return 0;
}
