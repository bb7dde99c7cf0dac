// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests of the control socket's varlink layer (daemon/varlink.c):
 * framing of NUL-terminated messages, call parsing and checking with the
 * error each bad message earns, the public-method list, reply building,
 * and the served interface description matching daemon/io.perfrec.varlink.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "varlink.h"

Test(varlink, frames_split_at_the_first_nul)
{
	static const char two[] = "{\"a\":1}\0{\"b\":2}";
	char *big = calloc(1, VARLINK_MAX_MESSAGE + 10);

	cr_assert_eq(varlink_frame(two, sizeof(two)), 8);
	cr_assert_eq(varlink_frame(two + 8, sizeof(two) - 8), (int)sizeof(two) - 8);
	cr_assert_eq(varlink_frame("{\"a\"", 4), 0, "no NUL yet: wait for more");
	memset(big, 'x', VARLINK_MAX_MESSAGE);
	cr_assert_eq(varlink_frame(big, VARLINK_MAX_MESSAGE - 1), 0);
	cr_assert_eq(varlink_frame(big, VARLINK_MAX_MESSAGE), -EMSGSIZE);
	big[VARLINK_MAX_MESSAGE - 1] = 0;
	cr_assert_eq(varlink_frame(big, VARLINK_MAX_MESSAGE + 5), VARLINK_MAX_MESSAGE);
	free(big);
}

static const struct {
	const char *msg;
	int ret;
	const char *error;      /* NULL: accepted */
	enum varlink_method_id id;
} cases[] = {
	{ "{\"method\":\"io.perfrec.Ping\"}", 0, NULL, VL_PING },
	{ "{\"method\":\"io.perfrec.Status\",\"parameters\":{}}", 0, NULL, VL_STATUS },
	{ "{\"method\":\"io.perfrec.SetFrequency\",\"parameters\":{\"frequency\":99}}", 0, NULL, VL_SET_FREQUENCY },
	{ "{\"method\":\"org.varlink.service.GetInfo\"}", 0, NULL, VL_GET_INFO },
	{ "{\"method\":\"org.varlink.service.GetInterfaceDescription\",\"parameters\":{\"interface\":\"io.perfrec\"}}", 0, NULL, VL_GET_INTERFACE_DESCRIPTION },
	{ "{\"method\":\"io.perfrec.Subscribe\",\"oneway\":false}", 0, NULL, VL_SUBSCRIBE },
	{ "", -EBADMSG, VL_ERR_INVALID_REQUEST, 0 },
	{ "garbage", -EBADMSG, VL_ERR_INVALID_REQUEST, 0 },
	{ "{\"method\":\"io.perfrec.Ping\"", -EBADMSG, VL_ERR_INVALID_REQUEST, 0 },
	{ "{\"method\":\"io.perfrec.Ping\"} {}", -EBADMSG, VL_ERR_INVALID_REQUEST, 0 },
	{ "[1,2]", -EBADMSG, VL_ERR_INVALID_REQUEST, 0 },
	{ "{\"method\":7}", -EBADMSG, VL_ERR_INVALID_REQUEST, 0 },
	{ "{\"method\":\"io.perfrec.Ping\",\"parameters\":[]}", -EBADMSG, VL_ERR_INVALID_REQUEST, 0 },
	{ "{\"method\":\"io.perfrec.Ping\",\"more\":true}", -EBADMSG, VL_ERR_INVALID_REQUEST, 0 },
	{ "{\"method\":\"io.perfrec.Nope\"}", -ENOENT, VL_ERR_METHOD_NOT_FOUND, 0 },
	{ "{\"method\":\"Ping\"}", -ENOENT, VL_ERR_METHOD_NOT_FOUND, 0 },
	{ "{\"method\":\"com.example.Ping\"}", -ENOENT, VL_ERR_INTERFACE_NOT_FOUND, 0 },
	{ "{\"method\":\"io.perfrec.SetFrequency\"}", -EINVAL, VL_ERR_INVALID_PARAMETER, 0 },
	{ "{\"method\":\"io.perfrec.SetFrequency\",\"parameters\":{\"frequency\":\"99\"}}", -EINVAL, VL_ERR_INVALID_PARAMETER, 0 },
	{ "{\"method\":\"io.perfrec.SetFrequency\",\"parameters\":{\"frequency\":-5}}", -EINVAL, VL_ERR_INVALID_PARAMETER, 0 },
	{ "{\"method\":\"io.perfrec.Ping\",\"parameters\":{\"x\":1}}", -EINVAL, VL_ERR_INVALID_PARAMETER, 0 },
	{ "{\"method\":\"org.varlink.service.GetInterfaceDescription\",\"parameters\":{\"interface\":\"x.y\"}}", -ENOENT, VL_ERR_INTERFACE_NOT_FOUND, 0 },
};

Test(varlink, parses_calls_and_names_each_error)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct varlink_call c;
		const char *err, *param;
		int r = varlink_parse(cases[i].msg, strlen(cases[i].msg), &c, &err, &param);

		cr_assert_eq(r, cases[i].ret, "%s: %d", cases[i].msg, r);
		if (cases[i].error) {
			cr_assert_str_eq(err, cases[i].error, "%s", cases[i].msg);
			cr_assert_null(c.params);
		} else {
			cr_assert_eq(c.id, cases[i].id, "%s", cases[i].msg);
			cr_assert(json_object_is_type(c.params, json_type_object));
		}
		varlink_call_done(&c);
	}
}

/* The offending name must stay readable after the parameters are freed (the fuzzer found this). */
Test(varlink, unknown_parameter_is_named_after_the_call_is_freed)
{
	static const char msg[] = "{\"method\":\"org.varlink.service.GetInterfaceDescription\","
				  "\"parameters\":{\"intdrface\":\"io.perfrec\"}}";
	struct varlink_call c;
	const char *err, *param;
	size_t len = 0;
	char *reply;

	cr_assert_eq(varlink_parse(msg, strlen(msg), &c, &err, &param), -EINVAL);
	cr_assert_str_eq(err, VL_ERR_INVALID_PARAMETER);
	cr_assert_str_eq(param, "intdrface");
	reply = varlink_error_param(err, param, &len);
	cr_assert_not_null(strstr(reply, "\"parameter\":\"intdrface\""), "%s", reply);
	free(reply);
}

Test(varlink, embedded_nul_and_oversized_messages_are_refused)
{
	struct varlink_call c;
	const char *err, *param;

	cr_assert_eq(varlink_parse("{}\0{}", 5, &c, &err, &param), -EBADMSG);
	cr_assert_eq(varlink_parse("{}", VARLINK_MAX_MESSAGE, &c, &err, &param), -EMSGSIZE);
	cr_assert_str_eq(err, VL_ERR_MESSAGE_TOO_LARGE);
}

Test(varlink, public_list_matches_whole_names)
{
	cr_assert(varlink_is_public("Ping", NULL));
	cr_assert(varlink_is_public("GetInterfaceDescription", NULL));
	cr_assert_not(varlink_is_public("Snapshot", NULL));
	cr_assert_not(varlink_is_public("Pin", NULL));
	cr_assert(varlink_is_public("Rotate", "Ping, Rotate"));
	cr_assert_not(varlink_is_public("Ping", ""));
}

Test(varlink, replies_are_nul_terminated_json)
{
	struct json_object *p = json_object_new_object(), *o, *v;
	size_t len = 0;
	char *s;

	json_object_object_add(p, "file", json_object_new_string("/a/b"));
	s = varlink_reply(p, &len);
	cr_assert_not_null(s);
	cr_assert_eq(s[len - 1], 0);
	cr_assert_eq(strlen(s) + 1, len);
	o = json_tokener_parse(s);
	cr_assert(json_object_object_get_ex(o, "parameters", &v));
	cr_assert_str_eq(json_object_get_string(json_object_object_get(v, "file")), "/a/b");
	json_object_put(o);
	free(s);
	s = varlink_error_param(VL_ERR_INVALID_PARAMETER, "frequency", &len);
	o = json_tokener_parse(s);
	cr_assert_str_eq(json_object_get_string(json_object_object_get(o, "error")), VL_ERR_INVALID_PARAMETER);
	cr_assert_str_eq(json_object_get_string(json_object_object_get(json_object_object_get(o, "parameters"), "parameter")), "frequency");
	json_object_put(o);
	free(s);
}

Test(varlink, served_description_is_the_documented_file)
{
	FILE *f = fopen("daemon/io.perfrec.varlink", "re");
	char buf[16384];
	size_t n;

	if (!f)
		cr_skip_test("daemon/io.perfrec.varlink not found (run from the repository root)");
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	cr_assert_str_eq(varlink_interface_description, buf);
}
