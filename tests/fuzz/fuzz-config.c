// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Fuzz target for perfrecd's configuration parser: any text is parsed into
 * a fresh config; it must never crash, leak or read out of bounds, and on
 * failure must leave a message.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../daemon/config.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config c;
	char err[512] = "";
	char *text = malloc(size + 1);

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0;
	config_init(&c);
	if (config_load_string(&c, text, "fuzz.conf", err, sizeof(err)) < 0 && !err[0])
		abort();
	config_exit(&c);
	free(text);
	return 0;
}
