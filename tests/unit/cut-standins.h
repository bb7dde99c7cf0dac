/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * For the tests that link tools/cut-cmd.o (test-cut.c, test-cut-cgroup.c,
 * test-cut-unwind.c): perfrecctl's helpers (usage.c, ctl.c, fetch.c), as
 * far as the command calls them.  No daemon answers (the socket does not
 * exist, a snapshot fails) and the bucket is never reached (it is
 * test-bucket's and the e2e test-bucket's).
 */
#ifndef PERFREC_TEST_CUT_STANDINS_H
#define PERFREC_TEST_CUT_STANDINS_H

int perfrecctl_usage(const char *name)
{
	(void)name;
	return EXIT_USAGE;
}
const char *perfrecctl_socket_path(void)
{
	return "/nonexistent/perfrecd.sock";
}
int perfrecctl_snapshot_into(int fd, uint64_t *ret_samples)
{
	(void)fd;
	(void)ret_samples;
	return 3;
}
char *perfrecctl_recordings_dir(const char *cmd)
{
	(void)cmd;
	return window_default_dir();
}
bool perfrecctl_is_bucket_opt(const char *arg)
{
	return !strcmp(arg, "--bucket");
}
int perfrecctl_fetch_window(const char *cmd, int argc, char **argv, uint64_t from, uint64_t to, const char *dir,
			    bool buildids, size_t *ret_nr)
{
	(void)cmd, (void)argc, (void)argv, (void)from, (void)to, (void)dir, (void)buildids, (void)ret_nr;
	return EXIT_USAGE;
}

#endif
