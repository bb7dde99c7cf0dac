// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * varlink framing, call parsing and checking, and reply building for the
 * control socket (see varlink.h).  Nothing here does I/O or touches the
 * recorder, so every byte a client can send reaches this file first and the
 * fuzzer (tests/fuzz/fuzz-control.c) covers it whole.
 */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "varlink.h"

/* Kept identical to daemon/io.perfrec.varlink (test-varlink checks). */
const char varlink_interface_description[] =
	"# perfrecd's control interface: a host-wide profiler recording perf.data files.\n"
	"# Callers outside control-group may only call control-public-methods= (by\n"
	"# default Ping and Status, plus org.varlink.service.GetInfo and\n"
	"# GetInterfaceDescription); anything else answers PermissionDenied.\n"
	"interface io.perfrec\n"
	"\n"
	"# One CPU's ring (counts since the daemon started).\n"
	"type CpuStatus (\n"
	"  cpu: int,\n"
	"  samples: int,\n"
	"  lost: int,\n"
	"  bytes: int\n"
	")\n"
	"\n"
	"# One sampling event and its current rate (frequency in Hz, or period).\n"
	"type EventStatus (\n"
	"  name: string,\n"
	"  frequency: int,\n"
	"  period: int\n"
	")\n"
	"\n"
	"# Answers at once; for liveness checks.\n"
	"method Ping() -> (pong: bool)\n"
	"\n"
	"# Counters and state.  The counters count from when the events were\n"
	"# opened (counted_sec ago: at start, or at the last reload that reopened\n"
	"# them) and the rates are averages over that span.  current_file is the\n"
	"# file being written as it is on disk (NAME.tmp until published).\n"
	"method Status() -> (\n"
	"  pid: int,\n"
	"  uptime_sec: float,\n"
	"  paused: bool,\n"
	"  mode: string,\n"
	"  samples: int,\n"
	"  lost: int,\n"
	"  bytes: int,\n"
	"  counted_sec: float,\n"
	"  samples_per_sec: float,\n"
	"  bytes_per_sec: float,\n"
	"  cpus: []CpuStatus,\n"
	"  events: []EventStatus,\n"
	"  files_published: int,\n"
	"  current_file: ?string,\n"
	"  cpu_time_sec: float,\n"
	"  rss_bytes: int,\n"
	"  subscribers: int\n"
	")\n"
	"\n"
	"# Finish the current file and start the next; returns the published file\n"
	"# (flight mode: publishes a snapshot into the output directory).\n"
	"method Rotate() -> (file: string)\n"
	"\n"
	"# Write a self-contained perf.data of the most recent data into the file\n"
	"# descriptor passed with SCM_RIGHTS alongside this call (a regular file is\n"
	"# written from offset 0; a pipe or socket gets pipe mode, copied out without\n"
	"# blocking the daemon).  The reply comes once the last byte is delivered; a\n"
	"# reader that takes nothing for 10 s gets io.perfrec.Failed.\n"
	"method Snapshot() -> (samples: int)\n"
	"\n"
	"# Stop and restart sampling; the current file stays open.\n"
	"method Pause() -> ()\n"
	"method Resume() -> ()\n"
	"\n"
	"# Change the sampling frequency of every sampling event live; the next\n"
	"# file's attrs carry it.\n"
	"method SetFrequency(frequency: int) -> (frequency: int)\n"
	"\n"
	"# After the reply, the connection carries a perf pipe-mode stream of\n"
	"# everything recorded from now on (attrs, synthesized state, then records\n"
	"# as they are drained) until the client closes it or perfrecd ends it.\n"
	"# perfrecd ends a stream after a whole record, with an end marker (a\n"
	"# record header of size 0, which no record has) followed by a varlink\n"
	"# message: io.perfrec.Failed (reason) when the stream was cut short -- its\n"
	"# reader took nothing for 10 s, fell 64 MiB behind, or a reload changed\n"
	"# the events -- or a reply (reason) when perfrecd stopped.  A stream that\n"
	"# ends without the marker was cut (perfrecd killed).\n"
	"method Subscribe() -> ()\n"
	"\n"
	"error InvalidRequest (reason: string)\n"
	"error MessageTooLarge (limit: int)\n"
	"error PermissionDenied (method: string)\n"
	"error NoFileDescriptor ()\n"
	"error NotSupported (reason: string)\n"
	"error Failed (reason: string)\n"
	;

struct method_def {
	const char *iface;
	const char *name;
	enum varlink_method_id id;
};

static const struct method_def methods[] = {
	{ "org.varlink.service", "GetInfo", VL_GET_INFO },
	{ "org.varlink.service", "GetInterfaceDescription", VL_GET_INTERFACE_DESCRIPTION },
	{ VARLINK_INTERFACE, "Ping", VL_PING },
	{ VARLINK_INTERFACE, "Status", VL_STATUS },
	{ VARLINK_INTERFACE, "Rotate", VL_ROTATE },
	{ VARLINK_INTERFACE, "Snapshot", VL_SNAPSHOT },
	{ VARLINK_INTERFACE, "Pause", VL_PAUSE },
	{ VARLINK_INTERFACE, "Resume", VL_RESUME },
	{ VARLINK_INTERFACE, "SetFrequency", VL_SET_FREQUENCY },
	{ VARLINK_INTERFACE, "Subscribe", VL_SUBSCRIBE },
};

int varlink_frame(const char *buf, size_t len)
{
	size_t scan = len < VARLINK_MAX_MESSAGE ? len : VARLINK_MAX_MESSAGE;
	const char *nul = memchr(buf, 0, scan);

	if (nul)
		return (int)(nul - buf) + 1;
	/* VARLINK_MAX_MESSAGE bytes without a NUL can only grow into a too-large message. */
	return len >= VARLINK_MAX_MESSAGE ? -EMSGSIZE : 0;
}

static int fail(const char *error, const char *param, const char **ret_error, const char **ret_param, int r)
{
	*ret_error = error;
	*ret_param = param;
	return r;
}

/* Parameters each method takes; anything else is InvalidParameter. */
static int check_params(const struct varlink_call *c, const char **ret_error, const char **ret_param)
{
	struct json_object *v;

	/* The name of an unknown parameter outlives the parameters (freed on failure). */
	static char unknown[128];

	json_object_object_foreach(c->params, key, val) {
		(void)val;
		if (c->id == VL_SET_FREQUENCY && !strcmp(key, "frequency"))
			continue;
		if (c->id == VL_GET_INTERFACE_DESCRIPTION && !strcmp(key, "interface"))
			continue;
		snprintf(unknown, sizeof(unknown), "%s", key);
		return fail(VL_ERR_INVALID_PARAMETER, unknown, ret_error, ret_param, -EINVAL);
	}
	switch (c->id) {
	case VL_SET_FREQUENCY:
		if (!json_object_object_get_ex(c->params, "frequency", &v) ||
		    !json_object_is_type(v, json_type_int) || json_object_get_int64(v) <= 0)
			return fail(VL_ERR_INVALID_PARAMETER, "frequency", ret_error, ret_param, -EINVAL);
		break;
	case VL_GET_INTERFACE_DESCRIPTION:
		if (!json_object_object_get_ex(c->params, "interface", &v) ||
		    !json_object_is_type(v, json_type_string))
			return fail(VL_ERR_INVALID_PARAMETER, "interface", ret_error, ret_param, -EINVAL);
		if (strcmp(json_object_get_string(v), VARLINK_INTERFACE) &&
		    strcmp(json_object_get_string(v), "org.varlink.service"))
			return fail(VL_ERR_INTERFACE_NOT_FOUND, "interface", ret_error, ret_param, -ENOENT);
		break;
	default:
		break;
	}
	return 0;
}

int varlink_parse(const char *msg, size_t len, struct varlink_call *ret,
		  const char **ret_error, const char **ret_param)
{
	struct json_tokener *tok;
	struct json_object *root, *m, *p, *v;
	const char *method, *dot;
	int r = -EINVAL;

	memset(ret, 0, sizeof(*ret));
	*ret_error = NULL;
	*ret_param = NULL;
	if (len >= VARLINK_MAX_MESSAGE)
		return fail(VL_ERR_MESSAGE_TOO_LARGE, NULL, ret_error, ret_param, -EMSGSIZE);
	if (memchr(msg, 0, len))
		return fail(VL_ERR_INVALID_REQUEST, NULL, ret_error, ret_param, -EBADMSG);
	tok = json_tokener_new_ex(64);
	if (!tok)
		return fail(VL_ERR_FAILED, NULL, ret_error, ret_param, -ENOMEM);
	root = json_tokener_parse_ex(tok, msg, (int)len);
	/* Trailing bytes after the object, or an unfinished object: not one message. */
	if (!root || json_tokener_get_error(tok) != json_tokener_success ||
	    json_tokener_get_parse_end(tok) != len) {
		json_object_put(root);
		json_tokener_free(tok);
		return fail(VL_ERR_INVALID_REQUEST, NULL, ret_error, ret_param, -EBADMSG);
	}
	json_tokener_free(tok);
	if (!json_object_is_type(root, json_type_object) ||
	    !json_object_object_get_ex(root, "method", &m) || !json_object_is_type(m, json_type_string)) {
		r = fail(VL_ERR_INVALID_REQUEST, "method", ret_error, ret_param, -EBADMSG);
		goto out;
	}
	if (json_object_object_get_ex(root, "oneway", &v)) {
		if (!json_object_is_type(v, json_type_boolean)) {
			r = fail(VL_ERR_INVALID_REQUEST, "oneway", ret_error, ret_param, -EBADMSG);
			goto out;
		}
		ret->oneway = json_object_get_boolean(v);
	}
	if (json_object_object_get_ex(root, "more", &v) && json_object_get_boolean(v)) {
		/* No method of ours streams replies; Subscribe streams perf data instead. */
		r = fail(VL_ERR_INVALID_REQUEST, "more", ret_error, ret_param, -EBADMSG);
		goto out;
	}
	method = json_object_get_string(m);
	dot = strrchr(method, '.');
	ret->name = NULL;
	if (dot) {
		size_t ilen = (size_t)(dot - method);
		bool iface_known = false;

		for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++) {
			if (strlen(methods[i].iface) != ilen || strncmp(methods[i].iface, method, ilen))
				continue;
			iface_known = true;
			if (!strcmp(methods[i].name, dot + 1)) {
				ret->id = methods[i].id;
				ret->name = methods[i].name;
				break;
			}
		}
		if (!ret->name && !iface_known) {
			r = fail(VL_ERR_INTERFACE_NOT_FOUND, "interface", ret_error, ret_param, -ENOENT);
			goto out;
		}
	}
	if (!ret->name) {
		r = fail(VL_ERR_METHOD_NOT_FOUND, "method", ret_error, ret_param, -ENOENT);
		goto out;
	}
	if (json_object_object_get_ex(root, "parameters", &p) && !json_object_is_type(p, json_type_null)) {
		if (!json_object_is_type(p, json_type_object)) {
			r = fail(VL_ERR_INVALID_REQUEST, "parameters", ret_error, ret_param, -EBADMSG);
			goto out;
		}
		ret->params = json_object_get(p);
	} else {
		ret->params = json_object_new_object();
		if (!ret->params) {
			r = fail(VL_ERR_FAILED, NULL, ret_error, ret_param, -ENOMEM);
			goto out;
		}
	}
	r = check_params(ret, ret_error, ret_param);
	if (r < 0) {
		json_object_put(ret->params);
		ret->params = NULL;
	}
out:
	json_object_put(root);
	return r;
}

void varlink_call_done(struct varlink_call *c)
{
	if (!c)
		return;
	json_object_put(c->params);
	c->params = NULL;
}

bool varlink_is_public(const char *name, const char *public_list)
{
	size_t n = strlen(name);
	const char *p = public_list ? public_list : VARLINK_DEFAULT_PUBLIC;

	while (*p) {
		size_t l = strcspn(p, ", ");

		if (l == n && !strncmp(p, name, n))
			return true;
		p += l;
		p += strspn(p, ", ");
	}
	return false;
}

static char *finish(struct json_object *o, size_t *ret_len)
{
	const char *s;
	char *out = NULL;
	size_t n;

	if (!o)
		return NULL;
	s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	if (s) {
		n = strlen(s) + 1;
		out = malloc(n);
		if (out) {
			memcpy(out, s, n);
			*ret_len = n;
		}
	}
	json_object_put(o);
	return out;
}

char *varlink_reply(struct json_object *params, size_t *ret_len)
{
	struct json_object *o = json_object_new_object();

	if (!o) {
		json_object_put(params);
		return NULL;
	}
	json_object_object_add(o, "parameters", params ? params : json_object_new_object());
	return finish(o, ret_len);
}

char *varlink_error(const char *error, struct json_object *params, size_t *ret_len)
{
	struct json_object *o = json_object_new_object();

	if (!o) {
		json_object_put(params);
		return NULL;
	}
	json_object_object_add(o, "error", json_object_new_string(error));
	json_object_object_add(o, "parameters", params ? params : json_object_new_object());
	return finish(o, ret_len);
}

char *varlink_error_param(const char *error, const char *param, size_t *ret_len)
{
	struct json_object *p = json_object_new_object();

	if (p && param)
		json_object_object_add(p, "parameter", json_object_new_string(param));
	return varlink_error(error, p, ret_len);
}
