// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * stderr logging.  Under systemd each line starts with the sd-daemon
 * priority prefix ("<3>" for errors), which journald turns into the
 * message's priority; elsewhere lines read "perfrecd: ..." so they make
 * sense next to other tools' output.  One write() per line keeps lines
 * whole when several processes share stderr.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

int log_max_level = LOG_INFO;
static bool use_prefix;

void log_open(void)
{
	use_prefix = getenv("JOURNAL_STREAM") != NULL;
}

void log_msg(int level, const char *fmt, ...)
{
	char buf[2048];
	int n;
	va_list ap;

	if (level > log_max_level)
		return;
	if (use_prefix)
		n = snprintf(buf, sizeof(buf), "<%d>", level);
	else
		n = snprintf(buf, sizeof(buf), "perfrecd: ");
	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof(buf) - n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 2)
		n = sizeof(buf) - 2;
	buf[n++] = '\n';
	(void)!write(STDERR_FILENO, buf, n);
}
