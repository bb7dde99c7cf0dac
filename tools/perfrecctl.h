/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * perfrecctl internals: the subcommand table main.c dispatches on, and the
 * entry point of each subcommand family (one file per family: verify.c,
 * dump.c, and later the control-socket commands).  Each entry point gets
 * argv with argv[0] = the subcommand name and returns the process exit code:
 * 0 success, 1 the thing checked is bad / the request failed, 2 usage error
 * or cannot open (exitcode.h).  The commands parse and print; what the
 * views of recorded files compute is views/'s (libperfrec-views.a).
 */
#ifndef PERFRECCTL_H
#define PERFRECCTL_H

#include <stdbool.h>
#include <stdio.h>

#include "exitcode.h"

#include <stdbool.h>
#include <stdint.h>

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
int cmd_unwind(int argc, char **argv);
int cmd_compress(int argc, char **argv);
int cmd_pprof(int argc, char **argv);
/* flamegraph-cmd.c */
int cmd_flamegraph(int argc, char **argv);
int cmd_folded(int argc, char **argv);
/* ctl.c: commands for a running perfrecd (exit 3: no daemon, 4: permission denied) */
int cmd_ctl_simple(int argc, char **argv);
int cmd_ctl_set_freq(int argc, char **argv);
int cmd_ctl_snapshot(int argc, char **argv);
int cmd_ctl_stream(int argc, char **argv);
/* fetch.c: the fleet bucket (exit 1: an object rejected or nothing in the window) */
int cmd_fetch(int argc, char **argv);
int cmd_bucket_ls(int argc, char **argv);
/* Print bucket_list()'s objects as a table or a JSON array (for `ls --bucket`). */
struct bucket_result;
void bucket_ls_print(FILE *f, const struct bucket_result *res, bool json);
/* The control socket in effect (--socket, $PERFRECD_SOCKET, the default). */
const char *perfrecctl_socket_path(void);
/*
 * Ask the daemon for a Snapshot written into @fd (a regular file).  Returns
 * 0 (*ret_samples: the samples in it, may be NULL) or an exit code with the
 * problem printed: 1 refused, 3 no daemon, 4 permission denied.
 */
int perfrecctl_snapshot_into(int fd, uint64_t *ret_samples);
/*
 * The directory of recordings for ls and cut when none is given: the one
 * the running perfrecd (on the control socket in effect) says it writes
 * to, else the [output] directory of the default config or
 * /var/lib/perfrecd, with a note on stderr, prefixed "perfrecctl @cmd:",
 * saying what was tried.  Owned by the caller; NULL without memory.
 */
char *perfrecctl_recordings_dir(const char *cmd);
/* Whether --json was given before the command. */
bool perfrecctl_json_output(void);
/* Whether @arg is one of the bucket's options (--bucket, --host, --label, ...), which take a value. */
bool perfrecctl_is_bucket_opt(const char *arg);
/*
 * For `cut --bucket`: parse the bucket options in @argv (argv[0] is the
 * command's name) and download the objects of the wall-clock window
 * [@from, @to] into @dir, checked against their manifests; gaps and
 * rejected objects are named on stderr; with @buildids the build-id cache
 * entries they name that were shipped beside them too, into @dir/.build-id
 * (cut --archive).  0 (*@ret_nr: files fetched) or an exit code, the
 * problem printed.
 */
int perfrecctl_fetch_window(const char *cmd, int argc, char **argv, uint64_t from, uint64_t to, const char *dir,
			    bool buildids, size_t *ret_nr);
/* ls.c, cut-cmd.c: looking back over recorded files */
int cmd_ls(int argc, char **argv);
int cmd_cut(int argc, char **argv);
/* Take leading --socket PATH / --json off argv (argv[0] kept in front). */
int perfrecctl_global_opts(int *argc, char ***argv);

/* usage.c: print "usage: perfrecctl NAME ARGS" for @name to stderr; returns EXIT_USAGE. */
int perfrecctl_usage(const char *name);
/* usage.c: the table perfrecctl_usage() looks @name up in (main.c's). */
void perfrecctl_set_commands(const struct perfrecctl_cmd *cmds, size_t nr);

#endif
