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

/*
 * The served description is daemon/io.perfrec.varlink itself, copied in by
 * the assembler and NUL-terminated, so that the interface is written down
 * once (the Makefile rebuilds varlink.o when the file changes).  The path
 * is relative to the top of the tree, where every build runs.
 */
__asm__(
	"	.pushsection .rodata\n"
	"	.globl varlink_interface_description\n"
	"	.type varlink_interface_description, @object\n"
	"varlink_interface_description:\n"
	"	.incbin \"daemon/io.perfrec.varlink\"\n"
	"	.byte 0\n"
	"	.size varlink_interface_description, . - varlink_interface_description\n"
	"	.popsection\n");

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

static bool interface_known(const struct varlink_method *methods, size_t nr_methods, const char *iface, size_t len)
{
	for (size_t i = 0; i < nr_methods; i++)
		if (strlen(methods[i].interface) == len && !strncmp(methods[i].interface, iface, len))
			return true;
	return false;
}

/* The parameters the method's row lists, each of its kind, and no others. */
static int check_params(const struct varlink_call *c, const struct varlink_method *methods, size_t nr_methods,
			const char **ret_error, const char **ret_param)
{
	const struct varlink_method *m = c->method;
	struct json_object *v;

	/* The name of an unknown parameter outlives the parameters (freed on failure). */
	static char unknown[128];

	json_object_object_foreach(c->params, key, val) {
		bool listed = false;

		(void)val;
		for (size_t i = 0; i < VARLINK_MAX_PARAMS && m->params[i].name; i++)
			listed = listed || !strcmp(key, m->params[i].name);
		if (listed)
			continue;
		snprintf(unknown, sizeof(unknown), "%s", key);
		return fail(VL_ERR_INVALID_PARAMETER, unknown, ret_error, ret_param, -EINVAL);
	}
	for (size_t i = 0; i < VARLINK_MAX_PARAMS && m->params[i].name; i++) {
		const char *name = m->params[i].name;
		bool there = json_object_object_get_ex(c->params, name, &v);

		switch (m->params[i].kind) {
		case VL_PARAM_POSITIVE_INT:
			if (!there || !json_object_is_type(v, json_type_int) || json_object_get_int64(v) <= 0)
				return fail(VL_ERR_INVALID_PARAMETER, name, ret_error, ret_param, -EINVAL);
			break;
		case VL_PARAM_INTERFACE:
			if (!there || !json_object_is_type(v, json_type_string))
				return fail(VL_ERR_INVALID_PARAMETER, name, ret_error, ret_param, -EINVAL);
			if (!interface_known(methods, nr_methods, json_object_get_string(v),
					     strlen(json_object_get_string(v))))
				return fail(VL_ERR_INTERFACE_NOT_FOUND, name, ret_error, ret_param, -ENOENT);
			break;
		case VL_PARAM_NONE:
			break;
		}
	}
	return 0;
}

int varlink_parse(const char *msg, size_t len, const struct varlink_method *methods, size_t nr_methods,
		  struct varlink_call *ret, const char **ret_error, const char **ret_param)
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
	if (dot) {
		size_t ilen = (size_t)(dot - method);

		for (size_t i = 0; i < nr_methods && !ret->method; i++)
			if (strlen(methods[i].interface) == ilen && !strncmp(methods[i].interface, method, ilen) &&
			    !strcmp(methods[i].name, dot + 1))
				ret->method = &methods[i];
		if (!ret->method && !interface_known(methods, nr_methods, method, ilen)) {
			r = fail(VL_ERR_INTERFACE_NOT_FOUND, "interface", ret_error, ret_param, -ENOENT);
			goto out;
		}
	}
	if (!ret->method) {
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
	r = check_params(ret, methods, nr_methods, ret_error, ret_param);
	if (r < 0) {
		json_object_put(ret->params);
		ret->params = NULL;
	}
	ret->name = ret->method->name;
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
