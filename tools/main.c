// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * perfrecctl: the command-line client of perfrecd and the tool for its files.
 * This file only dispatches: it maps the first argument to a subcommand from
 * the table below, each implemented in its own file (verify.c, dump.c, ...),
 * so adding a family of commands means adding a file and a table row.
 */
#include <stdio.h>
#include <string.h>

#include "perfrecctl.h"
#include "version.h"

static const struct perfrecctl_cmd cmds[] = {
	{ "verify", "FILE...", "check perf.data files; exit 1 if any is unsound", cmd_verify },
	{ "dump", "[--json] FILE", "show features, attrs, record counts and sample stats of a perf.data file", cmd_dump },
	{ "recover", "FILE [-o OUT]", "rebuild a complete perf.data from a crashed recording's .tmp", cmd_recover },
	{ "decompress", "IN OUT", "write a copy of IN without COMPRESSED records (for readers such as perfparser); IN may be - (stdin)", cmd_decompress },
	{ "unwind", "IN [-o] OUT", "rewrite a raw DWARF recording (--call-graph dwarf) into callchains unwound on this host: small, and whole stacks in every reader", cmd_unwind },
	{ "compress", "[-l LEVEL] [--pipe] IN OUT", "copy IN with zstd COMPRESSED records at LEVEL (0..19, default 3); --pipe or OUT - writes pipe mode", cmd_compress },
	{ "ls", "[--json] [DIR|FILE...] | --bucket URL [--host NAME] [--label K=V]...", "list recorded files on a wall-clock time line, gaps shown (default: the output directory)", cmd_ls },
	{ "cut", "--from T --to T | --at T [--around D] [--container ID] [--pod UID] [--unit NAME] [-o OUT] [-z] [--force] [--no-live] [--archive FILE [--buildid-dir DIR]] [DIR|FILE... | --bucket URL [--host NAME] [--label K=V]...]", "write one perf.data of a time window across rotated files (and the daemon's unpublished data)", cmd_cut },
	{ "pprof", "[-e EVENT] [--pid N] [--comm C] [--cgroup CG] [--container ID] [--pod UID] [--unit NAME] [--from T --to T] [--buildid-dir DIR] [--symfs DIR] [--no-debuginfod] [--no-inline] [--no-demangle] [-o OUT.pb.gz] FILE|DIR...", "write the samples as a gzip'ed pprof profile (go tool pprof, Pyroscope, Parca)", cmd_pprof },
	{ "flamegraph", "[-e EVENT] [--from T --to T] [--pid N] [--comm C] [--cgroup G] [--container ID] [--pod UID] [--unit NAME] [--icicle] [--base FILE|DIR] [--base-from T --base-to T] [--folded] [--title S] [--symfs DIR] [--no-debuginfod] [--no-inline] [--no-demangle] [-o OUT.svg] FILE|DIR...",
	  "write an interactive SVG flame graph (one graph per event; differential with a base)", cmd_flamegraph },
	{ "folded", "[-e EVENT] [--from T --to T] [--pid N] [--comm C] [--cgroup G] [--container ID] [--pod UID] [--unit NAME] [--symfs DIR] [--no-debuginfod] [--no-inline] [--no-demangle] [--period] [-o OUT] FILE|DIR...",
	  "write folded stacks (a;b;c SAMPLES, kernel frames _[k]) for other flame graph tools", cmd_folded },
	{ "ping", "[--socket PATH] [--json]", "check that perfrecd answers on its control socket", cmd_ctl_simple },
	{ "status", "[--socket PATH] [--json]", "show perfrecd's counters, events, files, CPU time and RSS", cmd_ctl_simple },
	{ "rotate", "[--socket PATH] [--json]", "publish the current file now and start the next", cmd_ctl_simple },
	{ "snapshot", "[--socket PATH] [--json] [--force] FILE|-", "write a self-contained perf.data of the most recent data into FILE (- for stdout)", cmd_ctl_snapshot },
	{ "pause", "[--socket PATH] [--json]", "stop sampling (the current file stays open)", cmd_ctl_simple },
	{ "resume", "[--socket PATH] [--json]", "start sampling again", cmd_ctl_simple },
	{ "set-freq", "[--socket PATH] [--json] HZ", "change the sampling frequency live", cmd_ctl_set_freq },
	{ "stream", "[--socket PATH]", "write a live pipe-mode perf.data stream to stdout (| perf script -i -)", cmd_ctl_stream },
	{ "fetch", "--bucket URL [--host NAME] [--label K=V]... [--key TEMPLATE] [--region R] [--credentials FILE] --from T --to T -o DIR", "download the checked files of a window from the fleet bucket; prints their paths in time order", cmd_fetch },
	{ "bucket-ls", "--bucket URL [--host NAME] [--label K=V]... [--key TEMPLATE] [--region R] [--credentials FILE] [--json]", "list the files in the fleet bucket from their manifests", cmd_bucket_ls },
};

#define NR_CMDS (sizeof(cmds) / sizeof(cmds[0]))

static void help(FILE *f)
{
	fprintf(f, "usage: perfrecctl [--socket PATH] [--json] COMMAND [ARGS...]\n"
		"       perfrecctl --help | --version\n\ncommands:\n");
	for (size_t i = 0; i < NR_CMDS; i++)
		fprintf(f, "  %-8s %-16s %s\n", cmds[i].name, cmds[i].args, cmds[i].summary);
	fprintf(f, "\noptions:\n"
		"  --socket PATH  perfrecd's control socket (default $PERFRECD_SOCKET, else\n"
		"                 /run/perfrecd/io.perfrec)\n"
		"  --json         print the answer as JSON\n"
		"  --version      print the version\n"
		"\n`perfrecctl COMMAND --help` shows one command's usage.\n");
}

int main(int argc, char **argv)
{
	perfrecctl_set_commands(cmds, NR_CMDS);
	/* perfrecctl [--socket PATH] [--json] COMMAND ...: options before the command too. */
	perfrecctl_global_opts(&argc, &argv);
	if (argc < 2) {
		help(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		help(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("perfrecctl %s\n", PERFREC_VERSION);
		return 0;
	}
	for (size_t i = 0; i < NR_CMDS; i++) {
		if (strcmp(cmds[i].name, argv[1]))
			continue;
		if (argc > 2 && (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h"))) {
			printf("usage: perfrecctl %s %s\n  %s\n", cmds[i].name, cmds[i].args, cmds[i].summary);
			return 0;
		}
		return cmds[i].run(argc - 1, argv + 1);
	}
	fprintf(stderr, "perfrecctl: unknown command '%s'\n", argv[1]);
	help(stderr);
	return EXIT_USAGE;
}
