// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Fuzz target for perfrecd's configuration parser: any bytes (NULs too,
 * which the loader refuses) are parsed into a fresh config; it must never
 * crash, leak or read out of bounds, on failure must leave a message that
 * names the file, and on success never holds both a frequency and a period.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config c;
	char err[512] = "";
	int r;

	config_init(&c);
	/* Exactly @size bytes, unterminated: a read past the end is caught. */
	r = config_load_data(&c, (const char *)data, size, "fuzz.conf", err, sizeof(err));
	if (r < 0 && strncmp(err, "fuzz.conf", 9) != 0)
		abort();
	if (r == 0 && c.freq && c.period)
		abort();
	config_exit(&c);
	return 0;
}
