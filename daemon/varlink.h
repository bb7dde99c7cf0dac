/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The varlink wire protocol as perfrecd's control socket speaks it, without
 * any I/O: splitting a byte stream into NUL-terminated messages, parsing a
 * call ({"method": "...", "parameters": {...}}), checking a call against the
 * method table (known method, parameter types, who may call it) and
 * building replies.  Pure functions over buffers, so the fuzzer and the
 * unit tests drive them without a daemon; control.c does the sockets.
 */
#ifndef PERFRECD_VARLINK_H
#define PERFRECD_VARLINK_H

#include <stdbool.h>
#include <stddef.h>

#include <json-c/json.h>

/* Largest message accepted, terminating NUL included. */
#define VARLINK_MAX_MESSAGE (64 * 1024)

#define VARLINK_INTERFACE "io.perfrec"
/* The default of control-public-methods=: what any local user may call. */
#define VARLINK_DEFAULT_PUBLIC "Ping,Status,GetInfo,GetInterfaceDescription"

/* Error names (org.varlink.service ones are the protocol's own). */
#define VL_ERR_INVALID_PARAMETER "org.varlink.service.InvalidParameter"
#define VL_ERR_METHOD_NOT_FOUND "org.varlink.service.MethodNotFound"
#define VL_ERR_INTERFACE_NOT_FOUND "org.varlink.service.InterfaceNotFound"
#define VL_ERR_INVALID_REQUEST "io.perfrec.InvalidRequest"
#define VL_ERR_MESSAGE_TOO_LARGE "io.perfrec.MessageTooLarge"
#define VL_ERR_PERMISSION_DENIED "io.perfrec.PermissionDenied"
#define VL_ERR_FAILED "io.perfrec.Failed"
#define VL_ERR_NOT_SUPPORTED "io.perfrec.NotSupported"
#define VL_ERR_NO_FD "io.perfrec.NoFileDescriptor"

struct client;             /* the server's connection (control-internal.h) */
struct varlink_call;

/* What a parameter must be.  Every parameter a method lists is required. */
enum varlink_param_kind {
	VL_PARAM_NONE,
	VL_PARAM_POSITIVE_INT,     /* an int above 0 */
	VL_PARAM_INTERFACE,        /* a string naming an interface of the table (else InterfaceNotFound) */
};

#define VARLINK_MAX_PARAMS 2

/*
 * One method: a row of the server's table (control-methods.c), from
 * which parsing, checking and dispatch come.  A new method is a row and
 * its handler.
 */
struct varlink_method {
	const char *interface;     /* "io.perfrec" or "org.varlink.service" */
	const char *name;          /* short name, as control-public-methods= lists it */
	struct {
		const char *name;
		enum varlink_param_kind kind;
	} params[VARLINK_MAX_PARAMS]; /* what it takes; anything else is InvalidParameter */
	bool upgrade;              /* the connection carries other data after the reply,
				    * so a oneway call gets the reply all the same */
	/* Acts and replies (or not, until later); the call is checked already. */
	void (*handle)(struct client *c, const struct varlink_call *vc);
};

struct varlink_call {
	const struct varlink_method *method; /* the row called, in the table given to varlink_parse() */
	const char *name;          /* method->name ("Status"), static */
	struct json_object *params; /* owned; never NULL (an empty object) */
	bool oneway;               /* the caller wants no reply */
};

/*
 * Find the end of the first message in @buf: returns its length including
 * the NUL (> 0), 0 when no NUL has arrived yet, or -EMSGSIZE when a
 * message is (or already must be) larger than VARLINK_MAX_MESSAGE.
 */
int varlink_frame(const char *buf, size_t len);

/*
 * Parse and check one message (@msg, @len bytes, NUL not included) against
 * the @nr_methods rows of @methods (which outlive the call).  On success
 * fills @ret (free with varlink_call_done()) and returns 0.  On failure
 * returns -errno and sets *ret_error to the error name to reply with and
 * *ret_param (may stay NULL) to the offending parameter's name.
 */
int varlink_parse(const char *msg, size_t len, const struct varlink_method *methods, size_t nr_methods,
		  struct varlink_call *ret, const char **ret_error, const char **ret_param);
void varlink_call_done(struct varlink_call *c);

/*
 * Whether a caller outside the control group may call @name (a short
 * method name): @public is a comma-separated list of short names.
 */
bool varlink_is_public(const char *name, const char *public_list);

/*
 * Replies as NUL-terminated strings (malloc'ed; *ret_len counts the NUL).
 * @params is consumed (may be NULL: {}).  NULL on ENOMEM.
 */
char *varlink_reply(struct json_object *params, size_t *ret_len);
char *varlink_error(const char *error, struct json_object *params, size_t *ret_len);
/* An error whose parameters are {"parameter": @param} (varlink's InvalidParameter). */
char *varlink_error_param(const char *error, const char *param, size_t *ret_len);

/* The io.perfrec interface definition: daemon/io.perfrec.varlink as built in. */
extern const char varlink_interface_description[];

#endif
