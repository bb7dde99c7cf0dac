// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * perfrecctl's usage line of a command, which every command prints on a
 * usage error.  The table of commands is main.c's; it is handed over here
 * at the start rather than reached from the command files, so that main.c
 * calls the commands and the commands call this file, never back.
 */
#include <stdio.h>
#include <string.h>

#include "perfrecctl.h"

static const struct perfrecctl_cmd *commands;
static size_t nr_commands;

void perfrecctl_set_commands(const struct perfrecctl_cmd *cmds, size_t nr)
{
	commands = cmds;
	nr_commands = nr;
}

int perfrecctl_usage(const char *name)
{
	for (size_t i = 0; i < nr_commands; i++) {
		if (!strcmp(commands[i].name, name)) {
			fprintf(stderr, "usage: perfrecctl %s %s\n  %s\n", commands[i].name, commands[i].args,
				commands[i].summary);
			break;
		}
	}
	return EXIT_USAGE;
}
