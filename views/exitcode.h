/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The exit codes the views return and perfrecctl's commands exit with:
 * 0 success, EXIT_BAD the thing checked is bad or the request failed,
 * EXIT_USAGE a usage error or an input that cannot be opened.
 */
#ifndef PERFRECCTL_EXITCODE_H
#define PERFRECCTL_EXITCODE_H

#define EXIT_BAD 1
#define EXIT_USAGE 2

#endif
