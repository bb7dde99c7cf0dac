/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Logging to stderr: with sd-daemon "<N>" priority prefixes when stderr goes
 * to the journal (systemd sets JOURNAL_STREAM), plain "perfrecd: " text on a
 * terminal or file.  Log an error once, where it is handled.
 */
#ifndef PERFRECD_LOG_H
#define PERFRECD_LOG_H

#include <syslog.h>

extern int log_max_level; /* LOG_INFO by default; LOG_DEBUG with -v */

void log_open(void);
void log_msg(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Log and return @err (negative errno) in one statement. */
#define log_error_errno(err, ...) (log_msg(LOG_ERR, __VA_ARGS__), (err))

#define log_error(...) log_msg(LOG_ERR, __VA_ARGS__)
#define log_warning(...) log_msg(LOG_WARNING, __VA_ARGS__)
#define log_notice(...) log_msg(LOG_NOTICE, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
