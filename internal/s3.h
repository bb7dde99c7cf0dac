/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A small S3 client shared inside libperfrec (hidden, not exported): the
 * daemon's uploader PUTs with it, perfrecctl lists and GETs the fleet bucket
 * with it, so both sign, address and authenticate requests the same way.
 * libcurl is dlopen()ed on the first s3_client_new() (see s3.c for why) and
 * signs with AWS SigV4 when credentials are given.  Like the rest of lib/,
 * it prints nothing: each failing call returns -errno and leaves a one-line
 * reason in s3_client_error().
 *
 * A client is one curl handle: use it from one thread at a time.
 */
#ifndef PERFREC_S3_H
#define PERFREC_S3_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct s3_client;

struct s3_opts {
	size_t sz;
	/* The bucket's URL (path style http://host:port/bucket or virtual-host
	 * style https://bucket.s3.amazonaws.com); keys go after one '/'. */
	const char *url;
	const char *region; /* NULL: us-east-1 */
	/* Both or neither: NULL signs nothing (a public or anonymous bucket). */
	const char *key_id;
	const char *secret;
	/* Called during transfers; a nonzero return aborts the transfer. */
	int (*abort_cb)(void *ctx);
	void *abort_ctx;
};

struct s3_object {
	char *key;
	uint64_t size;
	uint64_t mtime_ns; /* LastModified, ns since the epoch; 0 if not given */
};

/*
 * Make a client (copies everything in @o).  0 and *ret, or -ENOENT (no
 * usable libcurl), -ENOMEM; @err (may be NULL) receives the reason.
 */
int s3_client_new(const struct s3_opts *o, struct s3_client **ret, char *err, size_t errlen);
void s3_client_free(struct s3_client *c);
/* The reason the last failing call failed; owned by @c, valid until its next call. */
const char *s3_client_error(const struct s3_client *c);

/*
 * PUT the file at @path as @key with Content-MD5 and its SHA-256.  0 and
 * *ret_size (may be NULL) on a 2xx answer; -errno otherwise: -EIO transport,
 * -EACCES 401/403, -ENOENT 404, -EPROTO other HTTP answers.
 */
int s3_put_file(struct s3_client *c, const char *path, const char *key, const char *content_type,
		uint64_t *ret_size);
/* The hex SHA-256 and size of the file at @path (what PUT declares). 0 or -errno. */
int s3_file_sha256(const char *path, char ret_sha256[65], uint64_t *ret_size);
/* The same of the file open at @fd, read from its current offset. */
int s3_fd_sha256(int fd, char ret_sha256[65], uint64_t *ret_size);
/*
 * GET @key, written to @fd (a new file the caller made, and removes on
 * failure: see output_file_open()); @fd stays open.  On success *ret_size
 * and the hex SHA-256 of what was written (either may be NULL).  Errors as
 * s3_put_file().
 */
int s3_get_fd(struct s3_client *c, const char *key, int fd, uint64_t *ret_size, char ret_sha256[65]);
/* GET @key into memory (NUL-terminated, at most @max bytes else -EFBIG);
 * *ret is the caller's to free. */
int s3_get_mem(struct s3_client *c, const char *key, size_t max, char **ret, size_t *ret_len);
/*
 * ListObjectsV2 of every key under @prefix (may be "" or NULL), following
 * continuation tokens.  *ret is an array of *ret_n objects in the server's
 * (lexical) order; free with s3_objects_free().
 */
int s3_list(struct s3_client *c, const char *prefix, struct s3_object **ret, size_t *ret_n);
void s3_objects_free(struct s3_object *v, size_t n);

/*
 * Parse one ListObjectsV2 answer: append its <Contents> to *objs and *nr (grown
 * with realloc), set *truncated and *next_token (heap, or NULL).  0 or
 * -EBADMSG (not a ListBucketResult) / -ENOMEM.  Exposed for tests.
 */
int s3_parse_list(const char *xml, struct s3_object **objs, size_t *nr, bool *truncated,
		  char **next_token);

/*
 * An S3 / manifest time, ISO 8601 UTC: "2026-11-23T14:03:00.123Z" (the
 * fraction optional, up to ns; the Z required).  0 and *ret_ns (ns since the
 * epoch) or -EINVAL.
 */
int s3_parse_utc(const char *s, uint64_t *ret_ns);

/*
 * Credentials file: "name = value" lines, aws_access_key_id and
 * aws_secret_access_key (an AWS CLI credentials file) or access-key and
 * secret-key.  0 and both heap strings, -EINVAL if either is missing, or
 * -errno of the open.
 */
int s3_read_credentials(const char *path, char **ret_key, char **ret_secret);

/*
 * The credentials of [upload]: from @path when not NULL (as
 * s3_read_credentials()), else AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY
 * when both are set, else none: 0 with both NULL (sign nothing).
 */
int s3_credentials(const char *path, char **ret_key, char **ret_secret);

/*
 * Expand an object key template: {host} {date} (UTC YYYY-MM-DD of
 * @when_sec) {file} {prefix}.  A heap string, or NULL with errno ENOMEM or
 * EINVAL (an unknown {name}).
 */
char *s3_expand_key(const char *tmpl, const char *host, const char *prefix, const char *file,
		    int64_t when_sec);
/*
 * The longest key prefix every key of @tmpl shares, for listing: the
 * template up to its first placeholder, with {host} filled in when @host is
 * not NULL (and {prefix} when @prefix is not NULL).  Heap string or NULL
 * (ENOMEM, EINVAL).
 */
char *s3_key_prefix(const char *tmpl, const char *host, const char *prefix);

#endif
