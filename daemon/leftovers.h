/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What a killed run left in the output directory, put right
 * (leftovers.c).  The recorder calls in (recorder_recover_leftovers());
 * it gets what it needs in struct leftovers, so this module neither calls
 * back into the recorder's file nor includes its header.
 */
#ifndef PERFRECD_LEFTOVERS_H
#define PERFRECD_LEFTOVERS_H

#include <stdbool.h>

struct config;

/* What the recovery needs of the recorder, and what it tells it. */
struct leftovers {
	const struct config *cfg;
	const char *hostname;            /* for the manifests */
	int argc;                        /* the cmdline of recovered files' headers */
	char **argv;
	/* @path was published (@recovered: from a killed run's .tmp) */
	void (*published)(void *userdata, const char *path, bool recovered);
	void *userdata;
	bool pending;                    /* out: a .tmp waits for room on the disk */
};

/* See recorder_recover_leftovers() (recorder.h).  Returns how many files were published. */
int leftovers_recover(struct leftovers *lo);

#endif
