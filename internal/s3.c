// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The S3 client behind uploads and the fleet bucket reader (s3.h).  Requests
 * are plain libcurl transfers signed by libcurl's own AWS SigV4
 * (CURLOPT_AWS_SIGV4), so this file only builds URLs whose path and query
 * are already in SigV4's canonical form (RFC 3986 encoded, parameters
 * sorted): libcurl 7.88 signs the query string as it finds it.
 */
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <openssl/evp.h>

#include "digest.h"
#include "s3.h"

/*
 * libcurl is opened when first needed, not linked: it and the ~25 libraries
 * it pulls in (TLS, LDAP, Kerberos, SSH, IDN...) cost every start of the
 * daemon ~12 ms of CPU to map and relocate, a third of what the rest of a
 * start costs, on hosts most of which never upload.  It is never closed
 * (libcurl cannot be unloaded safely).
 */
#define LIBCURL_SONAME "libcurl.so.4"

static struct {
	void *handle;
	CURL *(*easy_init)(void);
	void (*easy_cleanup)(CURL *c);
	void (*easy_reset)(CURL *c);
	CURLcode (*easy_setopt)(CURL *c, CURLoption o, ...);
	CURLcode (*easy_perform)(CURL *c);
	CURLcode (*easy_getinfo)(CURL *c, CURLINFO i, ...);
	const char *(*easy_strerror)(CURLcode cc);
	struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
	void (*slist_free_all)(struct curl_slist *l);
} lc;

/* Longest error body kept for the message (S3 answers <Error><Code>...). */
#define ERROR_BODY_MAX 4096
/* A page of ListObjectsV2 is 1000 keys: well under this. */
#define LIST_PAGE_MAX (16u << 20)
/*
 * A listing follows continuation tokens only this far (S3 pages hold 1000
 * keys: ten million keys), never to a token it was given before, and only
 * while it advances: keys come in lexical order, so each page must bring
 * keys past the last one listed (or be one of a few empty pages).  A
 * server that hands out the same page again would otherwise be asked
 * forever.
 */
#define LIST_PAGES_MAX 10000u
#define LIST_EMPTY_PAGES_MAX 100u

struct s3_client {
	char *url, *region, *key_id, *secret;
	int (*abort_cb)(void *ctx);
	void *abort_ctx;
	CURL *curl;
	char error[512];
};

static void seterr(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!buf || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

/* Loads libcurl once; callers are single-threaded at that point (the
 * daemon's start, perfrecctl's main). */
static int load_libcurl(char *err, size_t errlen)
{
	void *h;

	if (lc.handle)
		return 0;
	h = dlopen(LIBCURL_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		seterr(err, errlen, "S3 needs libcurl (%s, Debian package libcurl4): %s", LIBCURL_SONAME, dlerror());
		return -ENOENT;
	}
#define SYM(f) \
	do { \
		*(void **)&lc.f = dlsym(h, "curl_" #f); \
		if (!lc.f) { \
			seterr(err, errlen, "%s has no curl_" #f ": too old for S3", LIBCURL_SONAME); \
			dlclose(h); \
			return -ENOENT; \
		} \
	} while (0)
	SYM(easy_init);
	SYM(easy_cleanup);
	SYM(easy_reset);
	SYM(easy_setopt);
	SYM(easy_perform);
	SYM(easy_getinfo);
	SYM(easy_strerror);
	SYM(slist_append);
	SYM(slist_free_all);
#undef SYM
	lc.handle = h;
	return 0;
}

void s3_client_free(struct s3_client *c)
{
	if (!c)
		return;
	if (c->curl)
		lc.easy_cleanup(c->curl);
	free(c->url);
	free(c->region);
	free(c->key_id);
	if (c->secret)
		explicit_bzero(c->secret, strlen(c->secret));
	free(c->secret);
	free(c);
}

int s3_client_new(const struct s3_opts *o, struct s3_client **ret, char *err, size_t errlen)
{
	struct s3_client *c;
	int r;

	if (!o || !o->url || !*o->url || (!o->key_id != !o->secret)) {
		seterr(err, errlen, "S3 client needs a URL, and a key id with its secret or neither");
		return -EINVAL;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->url = strdup(o->url);
	c->region = strdup(o->region ? o->region : "us-east-1");
	c->key_id = o->key_id ? strdup(o->key_id) : NULL;
	c->secret = o->secret ? strdup(o->secret) : NULL;
	c->abort_cb = o->abort_cb;
	c->abort_ctx = o->abort_ctx;
	r = -ENOMEM;
	if (!c->url || !c->region || (o->key_id && (!c->key_id || !c->secret)))
		goto fail;
	/* No trailing slash: keys are appended after one. */
	while (*c->url && c->url[strlen(c->url) - 1] == '/')
		c->url[strlen(c->url) - 1] = 0;
	r = load_libcurl(err, errlen);
	if (r < 0)
		goto fail;
	c->curl = lc.easy_init();
	if (!c->curl) {
		seterr(err, errlen, "Cannot initialize libcurl");
		r = -ENOMEM;
		goto fail;
	}
	*ret = c;
	return 0;
fail:
	s3_client_free(c);
	return r;
}

const char *s3_client_error(const struct s3_client *c)
{
	return c->error;
}

int s3_parse_utc(const char *s, uint64_t *ret_ns)
{
	struct tm tm = { 0 };
	uint64_t frac = 0, scale = 1000000000ULL;
	int n = 0;
	time_t t;

	if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
			 &tm.tm_min, &tm.tm_sec, &n) != 6 || n != 19)
		return -EINVAL;
	s += n;
	if (*s == '.') {
		s++;
		if (*s < '0' || *s > '9')
			return -EINVAL;
		for (; *s >= '0' && *s <= '9'; s++) {
			if (scale > 1) {
				scale /= 10;
				frac += (uint64_t)(*s - '0') * scale;
			}
		}
	}
	if (strcmp(s, "Z") != 0)
		return -EINVAL;
	if (tm.tm_year < 1970 || tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 ||
	    tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
		return -EINVAL;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	t = timegm(&tm);
	if (t < 0)
		return -EINVAL;
	*ret_ns = (uint64_t)t * 1000000000ULL + frac;
	return 0;
}

/* RFC 3986 percent-encoding as SigV4 wants it; '/' kept when @keep_slash. */
static int encode(FILE *f, const char *s, bool keep_slash)
{
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (isalnum(ch) || ch == '-' || ch == '_' || ch == '.' || ch == '~' || (keep_slash && ch == '/'))
			fputc(ch, f);
		else
			fprintf(f, "%%%02X", ch);
	}
	return 0;
}

/* "<url>/<encoded key>[?query]"; @query is already canonical. */
static char *object_url(const struct s3_client *c, const char *key, const char *query)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	if (!f)
		return NULL;
	fputs(c->url, f);
	fputc('/', f);
	encode(f, key, true);
	if (query)
		fprintf(f, "?%s", query);
	if (fclose(f) != 0) {
		free(out);
		return NULL;
	}
	return out;
}

/* The response body, up to @max bytes (the rest is an error: -EFBIG). */
struct body {
	char *buf;
	size_t len, max;
	bool too_big;
	/* GET to a file: a 2xx answer's body is written there and hashed
	 * instead (an error's body stays in buf for the message). */
	FILE *file;
	EVP_MD_CTX *sha;
	CURL *curl;
	int file_ok; /* 0 not known yet, 1 2xx, -1 error */
};

static size_t write_cb(char *data, size_t size, size_t n, void *user)
{
	struct body *b = user;
	size_t len = size * n;

	if (b->file && !b->file_ok) {
		long code = 0;

		lc.easy_getinfo(b->curl, CURLINFO_RESPONSE_CODE, &code);
		b->file_ok = code >= 200 && code <= 299 ? 1 : -1;
	}
	if (b->file && b->file_ok > 0) {
		if (fwrite(data, 1, len, b->file) != len)
			return 0;
		EVP_DigestUpdate(b->sha, data, len);
		b->len += len;
		return len;
	}
	if (b->len + len > b->max) {
		/* Keep what fits: an error body is still worth its first bytes. */
		b->too_big = true;
		len = b->max - b->len;
	}
	if (len) {
		char *nb = realloc(b->buf, b->len + len + 1);

		if (!nb)
			return 0;
		b->buf = nb;
		memcpy(b->buf + b->len, data, len);
		b->len += len;
		b->buf[b->len] = 0;
	}
	return size * n;
}

static size_t read_cb(char *buf, size_t size, size_t n, void *user)
{
	return fread(buf, size, n, user);
}

static int xfer_cb(void *user, curl_off_t a, curl_off_t b, curl_off_t c2, curl_off_t d)
{
	struct s3_client *c = user;

	return c->abort_cb ? c->abort_cb(c->abort_ctx) : 0;
}

/* The text of <@tag> in @xml (first one), entity-decoded, or NULL. */
static char *xml_text(const char *xml, const char *end, const char *tag)
{
	char open[64], close[64];
	const char *s, *e;
	char *out, *o;
	size_t ol, cl;

	snprintf(open, sizeof(open), "<%s>", tag);
	snprintf(close, sizeof(close), "</%s>", tag);
	ol = strlen(open);
	cl = strlen(close);
	s = memmem(xml, (size_t)(end - xml), open, ol);
	if (!s)
		return NULL;
	s += ol;
	e = memmem(s, (size_t)(end - s), close, cl);
	if (!e)
		return NULL;
	out = o = malloc((size_t)(e - s) + 1);
	if (!out)
		return NULL;
	while (s < e) {
		static const struct { const char *ent; char ch; } ents[] = {
			{ "&amp;", '&' }, { "&lt;", '<' }, { "&gt;", '>' }, { "&quot;", '"' }, { "&apos;", '\'' },
		};
		bool done = false;

		if (*s == '&') {
			for (size_t i = 0; i < sizeof(ents) / sizeof(ents[0]); i++) {
				size_t n = strlen(ents[i].ent);

				if ((size_t)(e - s) >= n && !memcmp(s, ents[i].ent, n)) {
					*o++ = ents[i].ch;
					s += n;
					done = true;
					break;
				}
			}
		}
		if (!done)
			*o++ = *s++;
	}
	*o = 0;
	return out;
}

/* "HTTP 403 SignatureDoesNotMatch: message" from an S3 error body. */
static void http_error(struct s3_client *c, const char *what, const char *url, long code,
		       const struct body *b)
{
	char *ec = b->buf ? xml_text(b->buf, b->buf + b->len, "Code") : NULL;
	char *em = b->buf ? xml_text(b->buf, b->buf + b->len, "Message") : NULL;

	snprintf(c->error, sizeof(c->error), "%s %s refused: HTTP %ld%s%s%s%s", what, url, code,
		 ec ? " " : "", ec ? ec : "", em ? ": " : "", em ? em : "");
	free(ec);
	free(em);
}

static int code_errno(long code)
{
	if (code == 401 || code == 403)
		return -EACCES;
	if (code == 404)
		return -ENOENT;
	return -EPROTO;
}

/*
 * One request.  @upload (may be NULL) is the body of a PUT of @upload_size
 * bytes; @hdrs are extra headers.  The answer's body goes to @b.
 */
static int perform(struct s3_client *c, const char *what, const char *url, FILE *upload,
		   uint64_t upload_size, struct curl_slist *hdrs, struct body *b)
{
	char err[CURL_ERROR_SIZE] = "";
	long code = 0;
	CURLcode cc;

	lc.easy_reset(c->curl);
	lc.easy_setopt(c->curl, CURLOPT_URL, url);
	if (upload) {
		lc.easy_setopt(c->curl, CURLOPT_UPLOAD, 1L);
		lc.easy_setopt(c->curl, CURLOPT_READFUNCTION, read_cb);
		lc.easy_setopt(c->curl, CURLOPT_READDATA, upload);
		lc.easy_setopt(c->curl, CURLOPT_INFILESIZE_LARGE, (curl_off_t)upload_size);
	}
	lc.easy_setopt(c->curl, CURLOPT_HTTPHEADER, hdrs);
	lc.easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, write_cb);
	lc.easy_setopt(c->curl, CURLOPT_WRITEDATA, b);
	lc.easy_setopt(c->curl, CURLOPT_ERRORBUFFER, err);
	lc.easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
	lc.easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT, 10L);
	/* Abort a stalled transfer: under 1 KiB/s for a minute. */
	lc.easy_setopt(c->curl, CURLOPT_LOW_SPEED_LIMIT, 1024L);
	lc.easy_setopt(c->curl, CURLOPT_LOW_SPEED_TIME, 60L);
	if (c->abort_cb) {
		lc.easy_setopt(c->curl, CURLOPT_NOPROGRESS, 0L);
		lc.easy_setopt(c->curl, CURLOPT_XFERINFOFUNCTION, xfer_cb);
		lc.easy_setopt(c->curl, CURLOPT_XFERINFODATA, c);
	}
	lc.easy_setopt(c->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	if (c->key_id) {
		char sig[160];

		snprintf(sig, sizeof(sig), "aws:amz:%s:s3", c->region);
		lc.easy_setopt(c->curl, CURLOPT_AWS_SIGV4, sig);
		lc.easy_setopt(c->curl, CURLOPT_USERNAME, c->key_id);
		lc.easy_setopt(c->curl, CURLOPT_PASSWORD, c->secret);
	}
	cc = lc.easy_perform(c->curl);
	if (cc != CURLE_OK) {
		snprintf(c->error, sizeof(c->error), "%s %s failed: %s", what, url, *err ? err : lc.easy_strerror(cc));
		return -EIO;
	}
	lc.easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &code);
	if (code < 200 || code > 299) {
		http_error(c, what, url, code, b);
		return code_errno(code);
	}
	return 0;
}

/* Content-MD5 (base64) and the hex SHA-256 of a whole file, in one read. */
static int hash_file(int fd, char md5_b64[32], char sha_hex[65], uint64_t *ret_size)
{
	unsigned char md5[EVP_MAX_MD_SIZE];
	EVP_MD_CTX *ctx[2] = { EVP_MD_CTX_new(), EVP_MD_CTX_new() };
	unsigned int ml = 0;
	int r;

	if (!ctx[0] || !ctx[1] || !EVP_DigestInit_ex(ctx[0], EVP_md5(), NULL) ||
	    !EVP_DigestInit_ex(ctx[1], EVP_sha256(), NULL)) {
		r = -ENOMEM;
		goto out;
	}
	r = digest_fd(fd, ctx, 2, ret_size, NULL, NULL);
	if (r < 0)
		goto out;
	if (!EVP_DigestFinal_ex(ctx[0], md5, &ml)) {
		r = -EIO;
		goto out;
	}
	EVP_EncodeBlock((unsigned char *)md5_b64, md5, (int)ml);
	r = digest_final_hex(ctx[1], sha_hex, 65);
out:
	EVP_MD_CTX_free(ctx[0]);
	EVP_MD_CTX_free(ctx[1]);
	return r;
}

int s3_fd_sha256(int fd, char ret_sha256[65], uint64_t *ret_size)
{
	char md5[32];

	return hash_file(fd, md5, ret_sha256, ret_size);
}

int s3_file_sha256(const char *path, char ret_sha256[65], uint64_t *ret_size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), r;

	if (fd < 0)
		return -errno;
	r = s3_fd_sha256(fd, ret_sha256, ret_size);
	close(fd);
	return r;
}

int s3_put_file(struct s3_client *c, const char *path, const char *key, const char *content_type,
		uint64_t *ret_size)
{
	char md5[32] = "", sha[65] = "", hdr[3][128], *url = NULL;
	struct body b = { .max = ERROR_BODY_MAX };
	struct curl_slist *hl = NULL;
	uint64_t size = 0;
	FILE *f;
	int r;

	c->error[0] = 0;
	f = fopen(path, "re");
	if (!f) {
		r = -errno;
		snprintf(c->error, sizeof(c->error), "Cannot open %s: %s", path, strerror(-r));
		return r;
	}
	r = hash_file(fileno(f), md5, sha, &size);
	if (r < 0) {
		snprintf(c->error, sizeof(c->error), "Cannot read %s: %s", path, strerror(-r));
		goto out;
	}
	url = object_url(c, key, NULL);
	if (!url) {
		r = -ENOMEM;
		goto out;
	}
	snprintf(hdr[0], sizeof(hdr[0]), "Content-MD5: %s", md5);
	snprintf(hdr[1], sizeof(hdr[1]), "x-amz-content-sha256: %s", sha);
	snprintf(hdr[2], sizeof(hdr[2]), "Content-Type: %s", content_type);
	for (int i = 0; i < 3; i++)
		hl = lc.slist_append(hl, hdr[i]);
	/* curl adds "Expect: 100-continue" to large PUTs; s3rver and some
	 * proxies stall on it. */
	hl = lc.slist_append(hl, "Expect:");
	r = perform(c, "PUT", url, f, size, hl, &b);
	if (r == 0 && ret_size)
		*ret_size = size;
out:
	lc.slist_free_all(hl);
	free(b.buf);
	free(url);
	fclose(f);
	return r;
}

/* Headers of a GET: the payload is empty, and S3 wants its hash declared. */
static struct curl_slist *get_headers(void)
{
	return lc.slist_append(NULL, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
}

int s3_get_fd(struct s3_client *c, const char *key, int fd, uint64_t *ret_size, char ret_sha256[65])
{
	struct body b = { .max = ERROR_BODY_MAX };
	struct curl_slist *hl = NULL;
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int ml = 0;
	char *url = object_url(c, key, NULL);
	int r = -ENOMEM, dfd = -1;

	c->error[0] = 0;
	b.curl = c->curl;
	b.sha = EVP_MD_CTX_new();
	if (!url || !b.sha || !EVP_DigestInit_ex(b.sha, EVP_sha256(), NULL))
		goto out;
	/* A stream of our own over a copy of @fd: the caller's stays open. */
	dfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (dfd < 0 || !(b.file = fdopen(dfd, "w"))) {
		r = -errno;
		if (dfd >= 0)
			close(dfd);
		snprintf(c->error, sizeof(c->error), "Cannot write the download of %s: %s", key, strerror(-r));
		goto out;
	}
	hl = get_headers();
	r = perform(c, "GET", url, NULL, 0, hl, &b);
	if (fclose(b.file) != 0 && r == 0) {
		r = -errno;
		snprintf(c->error, sizeof(c->error), "Cannot write the download of %s: %s", key, strerror(-r));
	}
	b.file = NULL;
	if (r < 0)
		goto out;
	EVP_DigestFinal_ex(b.sha, md, &ml);
	if (ret_sha256)
		for (unsigned int i = 0; i < ml; i++)
			sprintf(ret_sha256 + 2 * i, "%02x", md[i]);
	if (ret_size)
		*ret_size = b.len;
out:
	EVP_MD_CTX_free(b.sha);
	lc.slist_free_all(hl);
	free(b.buf);
	free(url);
	return r;
}

static int get_to_mem(struct s3_client *c, const char *what, const char *url, size_t max, char **ret,
		      size_t *ret_len)
{
	struct body b = { .max = max };
	struct curl_slist *hl = get_headers();
	int r;

	r = perform(c, what, url, NULL, 0, hl, &b);
	lc.slist_free_all(hl);
	if (r == 0 && b.too_big) {
		snprintf(c->error, sizeof(c->error), "%s %s: answer larger than %zu bytes", what, url, max);
		r = -EFBIG;
	}
	if (r == 0 && !b.buf)
		b.buf = calloc(1, 1);
	if (r == 0 && !b.buf)
		r = -ENOMEM;
	if (r < 0) {
		free(b.buf);
		return r;
	}
	*ret = b.buf;
	if (ret_len)
		*ret_len = b.len;
	return 0;
}

int s3_get_mem(struct s3_client *c, const char *key, size_t max, char **ret, size_t *ret_len)
{
	char *url = object_url(c, key, NULL);
	int r;

	c->error[0] = 0;
	if (!url)
		return -ENOMEM;
	r = get_to_mem(c, "GET", url, max, ret, ret_len);
	free(url);
	return r;
}

int s3_parse_list(const char *xml, struct s3_object **objs, size_t *nr, bool *truncated,
		  char **next_token)
{
	const char *end = xml + strlen(xml), *p = xml;
	char *t;

	if (!strstr(xml, "<ListBucketResult"))
		return -EBADMSG;
	while ((p = strstr(p, "<Contents>"))) {
		const char *ce = strstr(p, "</Contents>");
		struct s3_object o = { 0 };
		char *size, *mtime;

		if (!ce)
			return -EBADMSG;
		o.key = xml_text(p, ce, "Key");
		if (!o.key)
			return -EBADMSG;
		size = xml_text(p, ce, "Size");
		o.size = size ? strtoull(size, NULL, 10) : 0;
		free(size);
		mtime = xml_text(p, ce, "LastModified");
		if (!mtime || s3_parse_utc(mtime, &o.mtime_ns) < 0)
			o.mtime_ns = 0;
		free(mtime);
		{
			struct s3_object *nv = realloc(*objs, (*nr + 1) * sizeof(*nv));

			if (!nv) {
				free(o.key);
				return -ENOMEM;
			}
			*objs = nv;
		}
		(*objs)[(*nr)++] = o;
		p = ce;
	}
	t = xml_text(xml, end, "IsTruncated");
	*truncated = t && !strcmp(t, "true");
	free(t);
	*next_token = *truncated ? xml_text(xml, end, "NextContinuationToken") : NULL;
	if (*truncated && !*next_token)
		return -EBADMSG;
	return 0;
}

void s3_objects_free(struct s3_object *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i].key);
	free(v);
}

/* Has the listing been given @token before?  (@tokens: the ones followed.) */
static bool token_seen(char *const *tokens, size_t n, const char *token)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(tokens[i], token))
			return true;
	return false;
}

/* The query of one page: parameters in SigV4's sorted order, values encoded. */
static char *list_url(const struct s3_client *c, const char *prefix, const char *token)
{
	char *query = NULL, *url = NULL;
	size_t qlen = 0;
	FILE *f = open_memstream(&query, &qlen);

	if (!f)
		return NULL;
	if (token) {
		fputs("continuation-token=", f);
		encode(f, token, false);
		fputc('&', f);
	}
	fputs("list-type=2&prefix=", f);
	encode(f, prefix ? prefix : "", false);
	if (fclose(f) != 0 || asprintf(&url, "%s/?%s", c->url, query) < 0)
		url = NULL;
	free(query);
	return url;
}

/*
 * Did the page that appended @objs[@from..@nr) advance past *@last (the
 * greatest key listed before, NULL at first)?  Moves *@last along; an
 * empty page counts in *@empty.
 */
static bool list_advanced(const struct s3_object *objs, size_t from, size_t nr, const char **last,
			  unsigned *empty)
{
	bool moved = false;

	if (from == nr)
		return ++*empty <= LIST_EMPTY_PAGES_MAX;
	*empty = 0;
	for (size_t i = from; i < nr; i++)
		if (!*last || strcmp(objs[i].key, *last) > 0) {
			*last = objs[i].key;
			moved = true;
		}
	return moved;
}

int s3_list(struct s3_client *c, const char *prefix, struct s3_object **ret, size_t *ret_n)
{
	struct s3_object *objs = NULL;
	char **tokens = NULL, *token = NULL;
	size_t nr = 0, pages = 0;
	const char *last = NULL;
	unsigned empty = 0;
	int r;

	c->error[0] = 0;
	for (;;) {
		char *url = list_url(c, prefix, pages ? tokens[pages - 1] : NULL), *xml = NULL, **nt;
		bool truncated = false;
		size_t before = nr;

		if (!url) {
			r = -ENOMEM;
			break;
		}
		r = get_to_mem(c, "List", url, LIST_PAGE_MAX, &xml, NULL);
		if (r == 0) {
			r = s3_parse_list(xml, &objs, &nr, &truncated, &token);
			if (r == -EBADMSG)
				snprintf(c->error, sizeof(c->error), "List %s: the answer is not a ListObjectsV2 result", url);
		}
		free(xml);
		if (r == 0 && truncated && token_seen(tokens, pages, token)) {
			snprintf(c->error, sizeof(c->error),
				 "List %s: the server gave a continuation token again (page %zu, after %zu keys): "
				 "the listing does not advance; stopped", url, pages + 1, nr);
			r = -EPROTO;
		} else if (r == 0 && truncated && !list_advanced(objs, before, nr, &last, &empty)) {
			snprintf(c->error, sizeof(c->error),
				 "List %s: page %zu brings no key past those already listed: the listing does not "
				 "advance; stopped", url, pages + 1);
			r = -EPROTO;
		} else if (r == 0 && truncated && pages + 1 >= LIST_PAGES_MAX) {
			snprintf(c->error, sizeof(c->error), "List %s: more than %u pages (%zu keys); stopped", url,
				 LIST_PAGES_MAX, nr);
			r = -E2BIG;
		}
		free(url);
		if (r < 0 || !truncated)
			break;
		nt = realloc(tokens, (pages + 1) * sizeof(*tokens));
		if (!nt) {
			r = -ENOMEM;
			break;
		}
		tokens = nt;
		tokens[pages++] = token;
		token = NULL;
	}
	free(token);
	for (size_t i = 0; i < pages; i++)
		free(tokens[i]);
	free(tokens);
	if (r < 0) {
		s3_objects_free(objs, nr);
		return r;
	}
	*ret = objs;
	*ret_n = nr;
	return 0;
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = 0;
	return s;
}

int s3_read_credentials(const char *path, char **ret_key, char **ret_secret)
{
	char line[1024], *key = NULL, *secret = NULL;
	FILE *f = fopen(path, "re");

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *eq = strchr(line, '='), *k, *v;

		if (!eq)
			continue;
		*eq = 0;
		k = trim(line);
		v = trim(eq + 1);
		if (strcmp(k, "aws_access_key_id") == 0 || strcmp(k, "access-key") == 0) {
			free(key);
			key = strdup(v);
		} else if (strcmp(k, "aws_secret_access_key") == 0 || strcmp(k, "secret-key") == 0) {
			if (secret)
				explicit_bzero(secret, strlen(secret));
			free(secret);
			secret = strdup(v);
		}
	}
	explicit_bzero(line, sizeof(line));
	fclose(f);
	if (!key || !secret || !*key || !*secret) {
		free(key);
		free(secret);
		return -EINVAL;
	}
	*ret_key = key;
	*ret_secret = secret;
	return 0;
}

int s3_credentials(const char *path, char **ret_key, char **ret_secret)
{
	const char *ek = getenv("AWS_ACCESS_KEY_ID"), *es = getenv("AWS_SECRET_ACCESS_KEY");
	char *k, *s;

	if (path)
		return s3_read_credentials(path, ret_key, ret_secret);
	if (!ek || !es || !*ek || !*es) {
		*ret_key = *ret_secret = NULL;
		return 0;
	}
	k = strdup(ek);
	s = strdup(es);
	if (!k || !s) {
		free(k);
		free(s);
		return -ENOMEM;
	}
	*ret_key = k;
	*ret_secret = s;
	return 0;
}

/* Placeholders of key templates; a NULL value stops s3_key_prefix there. */
static int placeholder(const char *p, const char *host, const char *date, const char *file,
		       const char *prefix, const char **ret_val)
{
	static const char *const names[] = { "{host}", "{date}", "{file}", "{prefix}" };
	const char *vals[] = { host, date, file, prefix };

	for (size_t i = 0; i < 4; i++) {
		size_t n = strlen(names[i]);

		if (!strncmp(p, names[i], n)) {
			*ret_val = vals[i];
			return (int)n;
		}
	}
	return -EINVAL;
}

/* Expand @tmpl; with @partial, stop (successfully) at the first placeholder
 * without a value. */
static char *expand(const char *tmpl, const char *host, const char *date, const char *file,
		    const char *prefix, bool partial)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	if (!f)
		return NULL;
	for (const char *p = tmpl; *p; p++) {
		const char *v = NULL;
		int n;

		if (*p != '{') {
			fputc(*p, f);
			continue;
		}
		n = placeholder(p, host, date, file, prefix, &v);
		if (n < 0 || (!v && !partial)) {
			fclose(f);
			free(out);
			errno = EINVAL;
			return NULL;
		}
		if (!v)
			break;
		fputs(v, f);
		p += n - 1;
	}
	if (fclose(f) != 0) {
		free(out);
		return NULL;
	}
	return out;
}

char *s3_expand_key(const char *tmpl, const char *host, const char *prefix, const char *file,
		    int64_t when_sec)
{
	char date[16];
	struct tm tm;
	time_t t = (time_t)when_sec;

	gmtime_r(&t, &tm);
	strftime(date, sizeof(date), "%Y-%m-%d", &tm);
	return expand(tmpl, host, date, file, prefix, false);
}

char *s3_key_prefix(const char *tmpl, const char *host, const char *prefix)
{
	return expand(tmpl, host, NULL, NULL, prefix, true);
}
