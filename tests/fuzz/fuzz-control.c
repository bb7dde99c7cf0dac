// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Fuzz target for the control socket's message layer: arbitrary bytes, as
 * a client could send them, go through framing (varlink_frame), parsing and
 * checking (varlink_parse), the permission decision and the reply a refusal
 * or error would get.  Everything a client's bytes reach before the daemon
 * acts on a well-formed call; needs no root, no daemon.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "varlink.h"

/* The shape of the daemon's table (control-methods.c), without handlers: each kind of parameter. */
static const struct varlink_method methods[] = {
	{ .interface = "org.varlink.service", .name = "GetInfo" },
	{ .interface = "org.varlink.service", .name = "GetInterfaceDescription",
	  .params = { { "interface", VL_PARAM_INTERFACE } } },
	{ .interface = VARLINK_INTERFACE, .name = "Ping" },
	{ .interface = VARLINK_INTERFACE, .name = "Status" },
	{ .interface = VARLINK_INTERFACE, .name = "SetFrequency", .params = { { "frequency", VL_PARAM_POSITIVE_INT } } },
	{ .interface = VARLINK_INTERFACE, .name = "Subscribe", .upgrade = true },
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	size_t off = 0;

	while (off < size) {
		struct varlink_call c;
		const char *err, *param;
		char *reply;
		size_t len = 0;
		int n = varlink_frame(buf + off, size - off);

		if (n <= 0) {
			/* What is left is a partial message: parse it anyway, as if closed. */
			n = (int)(size - off) + 1;
		}
		if (varlink_parse(buf + off, (size_t)n - 1, methods, sizeof(methods) / sizeof(methods[0]),
				  &c, &err, &param) < 0) {
			if (!err)
				abort();
			reply = varlink_error_param(err, param, &len);
		} else {
			if (!c.params || !c.name || c.method < methods || c.method >= methods + 6)
				abort();
			reply = varlink_is_public(c.name, "Ping,Status") ? varlink_reply(json_object_get(c.params), &len)
				: varlink_error_param(VL_ERR_PERMISSION_DENIED, c.name, &len);
			varlink_call_done(&c);
		}
		if (!reply || reply[len - 1])
			abort();
		free(reply);
		off += (size_t)n;
	}
	return 0;
}
