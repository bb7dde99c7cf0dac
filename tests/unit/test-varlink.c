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

#include "control.h"
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
	const char *name;       /* the method called */
} cases[] = {
	{ "{\"method\":\"io.perfrec.Ping\"}", 0, NULL, "Ping" },
	{ "{\"method\":\"io.perfrec.Status\",\"parameters\":{}}", 0, NULL, "Status" },
	{ "{\"method\":\"io.perfrec.SetFrequency\",\"parameters\":{\"frequency\":99}}", 0, NULL, "SetFrequency" },
	{ "{\"method\":\"org.varlink.service.GetInfo\"}", 0, NULL, "GetInfo" },
	{ "{\"method\":\"org.varlink.service.GetInterfaceDescription\",\"parameters\":{\"interface\":\"io.perfrec\"}}", 0, NULL, "GetInterfaceDescription" },
	{ "{\"method\":\"io.perfrec.Subscribe\",\"oneway\":false}", 0, NULL, "Subscribe" },
	{ "", -EBADMSG, VL_ERR_INVALID_REQUEST, NULL },
	{ "garbage", -EBADMSG, VL_ERR_INVALID_REQUEST, NULL },
	{ "{\"method\":\"io.perfrec.Ping\"", -EBADMSG, VL_ERR_INVALID_REQUEST, NULL },
	{ "{\"method\":\"io.perfrec.Ping\"} {}", -EBADMSG, VL_ERR_INVALID_REQUEST, NULL },
	{ "[1,2]", -EBADMSG, VL_ERR_INVALID_REQUEST, NULL },
	{ "{\"method\":7}", -EBADMSG, VL_ERR_INVALID_REQUEST, NULL },
	{ "{\"method\":\"io.perfrec.Ping\",\"parameters\":[]}", -EBADMSG, VL_ERR_INVALID_REQUEST, NULL },
	{ "{\"method\":\"io.perfrec.Ping\",\"more\":true}", -EBADMSG, VL_ERR_INVALID_REQUEST, NULL },
	{ "{\"method\":\"io.perfrec.Nope\"}", -ENOENT, VL_ERR_METHOD_NOT_FOUND, NULL },
	{ "{\"method\":\"Ping\"}", -ENOENT, VL_ERR_METHOD_NOT_FOUND, NULL },
	{ "{\"method\":\"com.example.Ping\"}", -ENOENT, VL_ERR_INTERFACE_NOT_FOUND, NULL },
	{ "{\"method\":\"io.perfrec.SetFrequency\"}", -EINVAL, VL_ERR_INVALID_PARAMETER, NULL },
	{ "{\"method\":\"io.perfrec.SetFrequency\",\"parameters\":{\"frequency\":\"99\"}}", -EINVAL, VL_ERR_INVALID_PARAMETER, NULL },
	{ "{\"method\":\"io.perfrec.SetFrequency\",\"parameters\":{\"frequency\":-5}}", -EINVAL, VL_ERR_INVALID_PARAMETER, NULL },
	{ "{\"method\":\"io.perfrec.Ping\",\"parameters\":{\"x\":1}}", -EINVAL, VL_ERR_INVALID_PARAMETER, NULL },
	{ "{\"method\":\"org.varlink.service.GetInterfaceDescription\",\"parameters\":{\"interface\":\"x.y\"}}", -ENOENT, VL_ERR_INTERFACE_NOT_FOUND, NULL },
};

Test(varlink, parses_calls_and_names_each_error)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct varlink_call c;
		const char *err, *param;
		int r = varlink_parse(cases[i].msg, strlen(cases[i].msg), control_methods, control_nr_methods,
				      &c, &err, &param);

		cr_assert_eq(r, cases[i].ret, "%s: %d", cases[i].msg, r);
		if (cases[i].error) {
			cr_assert_str_eq(err, cases[i].error, "%s", cases[i].msg);
			cr_assert_null(c.params);
		} else {
			cr_assert_str_eq(c.method->name, cases[i].name, "%s", cases[i].msg);
			cr_assert_str_eq(c.name, cases[i].name, "%s", cases[i].msg);
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

	cr_assert_eq(varlink_parse(msg, strlen(msg), control_methods, control_nr_methods, &c, &err, &param), -EINVAL);
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

	cr_assert_eq(varlink_parse("{}\0{}", 5, control_methods, control_nr_methods, &c, &err, &param), -EBADMSG);
	cr_assert_eq(varlink_parse("{}", VARLINK_MAX_MESSAGE, control_methods, control_nr_methods, &c, &err, &param),
		     -EMSGSIZE);
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

/*
 * The description says what the table serves: every io.perfrec row is a
 * "method NAME(" of io.perfrec.varlink, and every method there is a row.
 */
Test(varlink, described_methods_are_the_served_ones)
{
	size_t described = 0, rows = 0;

	for (const char *p = varlink_interface_description; (p = strstr(p, "\nmethod ")); p++) {
		char name[64];
		bool found = false;

		cr_assert_eq(sscanf(p, "\nmethod %63[A-Za-z](", name), 1, "%.40s", p);
		for (size_t i = 0; i < control_nr_methods; i++)
			found = found || (!strcmp(control_methods[i].interface, VARLINK_INTERFACE) &&
					  !strcmp(control_methods[i].name, name));
		cr_expect(found, "method %s is described but not served", name);
		described++;
	}
	for (size_t i = 0; i < control_nr_methods; i++) {
		char want[80];

		if (strcmp(control_methods[i].interface, VARLINK_INTERFACE))
			continue;
		snprintf(want, sizeof(want), "\nmethod %s(", control_methods[i].name);
		cr_expect_not_null(strstr(varlink_interface_description, want),
				   "method %s is served but not described", control_methods[i].name);
		rows++;
	}
	cr_expect_eq(described, rows);
	cr_expect_gt(rows, 0);
}

/* A method is its row: a table of one gives its parameter checks and nothing else. */
Test(varlink, a_row_is_a_method)
{
	static const struct varlink_method one[] = {
		{ .interface = "com.example", .name = "Add",
		  .params = { { "a", VL_PARAM_POSITIVE_INT }, { "b", VL_PARAM_POSITIVE_INT } } },
	};
	static const struct { const char *msg; int ret; const char *error, *param; } calls[] = {
		{ "{\"method\":\"com.example.Add\",\"parameters\":{\"a\":1,\"b\":2}}", 0, NULL, NULL },
		{ "{\"method\":\"com.example.Add\",\"parameters\":{\"a\":1}}", -EINVAL, VL_ERR_INVALID_PARAMETER, "b" },
		{ "{\"method\":\"com.example.Add\",\"parameters\":{\"a\":1,\"b\":0}}", -EINVAL, VL_ERR_INVALID_PARAMETER, "b" },
		{ "{\"method\":\"com.example.Add\",\"parameters\":{\"a\":1,\"b\":2,\"c\":3}}", -EINVAL, VL_ERR_INVALID_PARAMETER, "c" },
		{ "{\"method\":\"com.example.Sub\"}", -ENOENT, VL_ERR_METHOD_NOT_FOUND, "method" },
		{ "{\"method\":\"io.perfrec.Ping\"}", -ENOENT, VL_ERR_INTERFACE_NOT_FOUND, "interface" },
	};

	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
		struct varlink_call c;
		const char *err, *param;
		int r = varlink_parse(calls[i].msg, strlen(calls[i].msg), one, 1, &c, &err, &param);

		cr_expect_eq(r, calls[i].ret, "%s: %d", calls[i].msg, r);
		if (r == 0)
			cr_expect_eq(c.method, &one[0]);
		else {
			cr_expect_str_eq(err, calls[i].error, "%s", calls[i].msg);
			cr_expect_str_eq(param, calls[i].param, "%s", calls[i].msg);
		}
		varlink_call_done(&c);
	}
}

/* The default of control-public-methods= names methods that exist, so a renamed one cannot drop out of it. */
Test(varlink, default_public_methods_are_served)
{
	const char *p = VARLINK_DEFAULT_PUBLIC;

	while (*p) {
		size_t n = strcspn(p, ", ");
		bool found = false;

		for (size_t i = 0; i < control_nr_methods; i++)
			found = found || (strlen(control_methods[i].name) == n && !strncmp(control_methods[i].name, p, n));
		cr_expect(found, "control-public-methods= default names %.*s, which is not served", (int)n, p);
		p += n;
		p += strspn(p, ", ");
	}
}
