// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Fuzz target for the metrics endpoint's HTTP request parser: any bytes a
 * local client sends to metrics-listen= go through metrics_http_parse(),
 * which must classify them (a status code or "need more") without reading
 * out of bounds, and whatever it answers must make a well-formed response.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size ? size : 1), *resp = NULL;
	bool head = false;
	size_t resp_len = 0;
	int st;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	st = metrics_http_parse(buf, size, &head);
	if (st > 0 && metrics_http_response(st, "x 1\n", 4, head, &resp, &resp_len) == 0) {
		if (!resp || resp_len < 12 || memcmp(resp, "HTTP/1.0 ", 9))
			abort();
		free(resp);
	}
	free(buf);
	return 0;
}
