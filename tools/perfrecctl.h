/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * perfrecctl internals: the subcommand table main.c dispatches on, and the
 * entry point of each subcommand family (one file per family: verify.c,
 * dump.c, and later the control-socket commands).  Each entry point gets
 * argv with argv[0] = the subcommand name and returns the process exit code:
 * 0 success, 1 the thing checked is bad / the request failed, 2 usage error
 * or cannot open.
 */
#ifndef PERFRECCTL_H
#define PERFRECCTL_H

#define EXIT_BAD 1
#define EXIT_USAGE 2

struct perfrecctl_cmd {
	const char *name;
	const char *args;    /* usage synopsis after the name */
	const char *summary; /* one line for --help */
	int (*run)(int argc, char **argv);
};

int cmd_verify(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_recover(int argc, char **argv);
int cmd_decompress(int argc, char **argv);
int cmd_compress(int argc, char **argv);
/* flamegraph-cmd.c */
int cmd_flamegraph(int argc, char **argv);
int cmd_folded(int argc, char **argv);
/* ctl.c: commands for a running perfrecd (exit 3: no daemon, 4: permission denied) */
int cmd_ctl_simple(int argc, char **argv);
int cmd_ctl_set_freq(int argc, char **argv);
int cmd_ctl_snapshot(int argc, char **argv);
int cmd_ctl_stream(int argc, char **argv);
/* Take leading --socket PATH / --json off argv (argv[0] kept in front). */
int perfrecctl_global_opts(int *argc, char ***argv);

/* Print "usage: perfrecctl NAME ARGS" for @name to stderr; returns EXIT_USAGE. */
int perfrecctl_usage(const char *name);

#endif
