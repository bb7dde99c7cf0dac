/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What a killed run left in the output directory, put right
 * (leftovers.c).  The recorder calls in (recorder_recover_leftovers());
 * what follows a publication is handed in as @published, so this module
 * never calls back into the recorder's file.
 */
#ifndef PERFRECD_LEFTOVERS_H
#define PERFRECD_LEFTOVERS_H

#include <stdbool.h>

struct recorder;

/* @path was published (@recovered: from a killed run's .tmp). */
typedef void (*leftovers_published_fn)(struct recorder *rec, const char *path, bool recovered);

/* See recorder_recover_leftovers() (recorder.h).  Returns how many files were published. */
int leftovers_recover(struct recorder *rec, leftovers_published_fn published);

#endif
