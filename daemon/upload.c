// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The uploader thread.  The recorder only appends paths to a queue under a
 * mutex; the thread takes the oldest, PUTs "<file>.json" (the manifest, if
 * present) and "<file>" to <upload-url>/<key>, and on success creates
 * "<file>.uploaded".  The marker is the durable record: a file that was
 * stored but whose marker was not written is uploaded again after a crash
 * (same key, same bytes: an idempotent overwrite, never a second object).
 * Failures back off exponentially (1 s doubling to 5 min) with full jitter,
 * so a fleet does not hammer a recovering server in lockstep.
 */
#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <openssl/evp.h>

#include "bidcache.h"
#include "log.h"
#include "upload.h"

/*
 * libcurl is opened when uploads are configured, not linked: it and the
 * ~25 libraries it pulls in (TLS, LDAP, Kerberos, SSH, IDN...) cost every
 * start of the daemon ~12 ms of CPU to map and relocate, a third of what
 * the rest of a start costs, on hosts most of which never upload.  It is
 * never closed (libcurl cannot be unloaded safely).
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

static int load_libcurl(void)
{
	void *h;

	if (lc.handle)
		return 0;
	h = dlopen(LIBCURL_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		log_error("Uploads need libcurl (%s, Debian package libcurl4): %s", LIBCURL_SONAME, dlerror());
		return -ENOENT;
	}
#define SYM(f) \
	do { \
		*(void **)&lc.f = dlsym(h, "curl_" #f); \
		if (!lc.f) { \
			log_error("%s has no curl_" #f ": too old for uploads", LIBCURL_SONAME); \
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

#define BACKOFF_MIN_MS 1000ULL
#define BACKOFF_MAX_MS (300ULL * 1000)
#define STOP_GRACE_SEC 10

struct uploader {
	const struct config *cfg;
	char *host, *url, *region, *key_id, *secret, *key_tmpl, *prefix;
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop;
	bool backing_off; /* the last attempt failed: the server is away */
	char **queue;   /* oldest first; queue[0] is in flight while busy */
	size_t nr, alloc;
	struct upload_stats st;
	CURL *curl;
};

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

char *upload_expand_key(const char *tmpl, const char *host, const char *prefix,
			const char *file, int64_t when_sec)
{
	char date[16], *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	struct tm tm;
	time_t t = (time_t)when_sec;

	if (!f)
		return NULL;
	gmtime_r(&t, &tm);
	strftime(date, sizeof(date), "%Y-%m-%d", &tm);
	for (const char *p = tmpl; *p; p++) {
		const char *v = NULL;
		size_t n = 0;

		if (*p != '{') {
			fputc(*p, f);
			continue;
		}
		if (strncmp(p, "{host}", 6) == 0)
			v = host, n = 6;
		else if (strncmp(p, "{date}", 6) == 0)
			v = date, n = 6;
		else if (strncmp(p, "{file}", 6) == 0)
			v = file, n = 6;
		else if (strncmp(p, "{prefix}", 8) == 0)
			v = prefix, n = 8;
		if (!v) {
			fclose(f);
			free(out);
			errno = EINVAL;
			return NULL;
		}
		fputs(v, f);
		p += n - 1;
	}
	if (fclose(f) != 0) {
		free(out);
		return NULL;
	}
	return out;
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

int upload_read_credentials(const char *path, char **ret_key, char **ret_secret)
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
			free(secret);
			secret = strdup(v);
		}
	}
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

/* Content-MD5 (base64) and the hex SHA-256 of a whole file, in one read. */
static int hash_file(int fd, char md5_b64[32], char sha_hex[65], uint64_t *ret_size)
{
	unsigned char buf[65536], md5[EVP_MAX_MD_SIZE], sha[EVP_MAX_MD_SIZE];
	EVP_MD_CTX *m = EVP_MD_CTX_new(), *s = EVP_MD_CTX_new();
	unsigned int ml = 0, sl = 0;
	uint64_t size = 0;
	ssize_t n;
	int r = 0;

	if (!m || !s || !EVP_DigestInit_ex(m, EVP_md5(), NULL) || !EVP_DigestInit_ex(s, EVP_sha256(), NULL)) {
		r = -ENOMEM;
		goto out;
	}
	while ((n = pread(fd, buf, sizeof(buf), (off_t)size)) > 0) {
		EVP_DigestUpdate(m, buf, (size_t)n);
		EVP_DigestUpdate(s, buf, (size_t)n);
		size += (uint64_t)n;
	}
	if (n < 0) {
		r = -errno;
		goto out;
	}
	EVP_DigestFinal_ex(m, md5, &ml);
	EVP_DigestFinal_ex(s, sha, &sl);
	EVP_EncodeBlock((unsigned char *)md5_b64, md5, (int)ml);
	for (unsigned int i = 0; i < sl; i++)
		sprintf(sha_hex + 2 * i, "%02x", sha[i]);
	*ret_size = size;
out:
	EVP_MD_CTX_free(m);
	EVP_MD_CTX_free(s);
	return r;
}

static size_t read_cb(char *buf, size_t size, size_t n, void *user)
{
	return fread(buf, size, n, user);
}

static size_t discard_cb(char *buf, size_t size, size_t n, void *user)
{
	return size * n;
}

static int abort_cb(void *user, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
	struct uploader *u = user;

	/* A plain read of a bool: worst case the abort comes one callback late. */
	return __atomic_load_n(&u->stop, __ATOMIC_RELAXED);
}

/* PUT one file; 0 on a 2xx answer. */
static int put_file(struct uploader *u, const char *path, const char *key, const char *ctype)
{
	char md5[32] = "", sha[65] = "", hdr[3][128], *url = NULL, err[CURL_ERROR_SIZE] = "";
	struct curl_slist *hl = NULL;
	uint64_t size = 0;
	long code = 0;
	FILE *f;
	CURLcode cc;
	int r;

	f = fopen(path, "re");
	if (!f)
		return -errno;
	r = hash_file(fileno(f), md5, sha, &size);
	if (r < 0)
		goto out;
	if (asprintf(&url, "%s/%s", u->url, key) < 0) {
		url = NULL;
		r = -ENOMEM;
		goto out;
	}
	snprintf(hdr[0], sizeof(hdr[0]), "Content-MD5: %s", md5);
	snprintf(hdr[1], sizeof(hdr[1]), "x-amz-content-sha256: %s", sha);
	snprintf(hdr[2], sizeof(hdr[2]), "Content-Type: %s", ctype);
	for (int i = 0; i < 3; i++)
		hl = lc.slist_append(hl, hdr[i]);
	/* curl adds "Expect: 100-continue" to large PUTs; s3rver and some
	 * proxies stall on it. */
	hl = lc.slist_append(hl, "Expect:");

	lc.easy_reset(u->curl);
	lc.easy_setopt(u->curl, CURLOPT_URL, url);
	lc.easy_setopt(u->curl, CURLOPT_UPLOAD, 1L);
	lc.easy_setopt(u->curl, CURLOPT_READFUNCTION, read_cb);
	lc.easy_setopt(u->curl, CURLOPT_READDATA, f);
	lc.easy_setopt(u->curl, CURLOPT_INFILESIZE_LARGE, (curl_off_t)size);
	lc.easy_setopt(u->curl, CURLOPT_HTTPHEADER, hl);
	lc.easy_setopt(u->curl, CURLOPT_WRITEFUNCTION, discard_cb);
	lc.easy_setopt(u->curl, CURLOPT_ERRORBUFFER, err);
	lc.easy_setopt(u->curl, CURLOPT_NOSIGNAL, 1L);
	lc.easy_setopt(u->curl, CURLOPT_CONNECTTIMEOUT, 10L);
	/* Abort a stalled transfer: under 1 KiB/s for a minute. */
	lc.easy_setopt(u->curl, CURLOPT_LOW_SPEED_LIMIT, 1024L);
	lc.easy_setopt(u->curl, CURLOPT_LOW_SPEED_TIME, 60L);
	lc.easy_setopt(u->curl, CURLOPT_NOPROGRESS, 0L);
	lc.easy_setopt(u->curl, CURLOPT_XFERINFOFUNCTION, abort_cb);
	lc.easy_setopt(u->curl, CURLOPT_XFERINFODATA, u);
	lc.easy_setopt(u->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	if (u->key_id) {
		char sig[160];

		snprintf(sig, sizeof(sig), "aws:amz:%s:s3", u->region);
		lc.easy_setopt(u->curl, CURLOPT_AWS_SIGV4, sig);
		lc.easy_setopt(u->curl, CURLOPT_USERNAME, u->key_id);
		lc.easy_setopt(u->curl, CURLOPT_PASSWORD, u->secret);
	}
	cc = lc.easy_perform(u->curl);
	if (cc != CURLE_OK) {
		log_warning("Upload of %s to %s failed: %s", path, url, *err ? err : lc.easy_strerror(cc));
		r = -EIO;
		goto out;
	}
	lc.easy_getinfo(u->curl, CURLINFO_RESPONSE_CODE, &code);
	if (code < 200 || code > 299) {
		log_warning("Upload of %s to %s refused: HTTP %ld", path, url, code);
		r = -EIO;
		goto out;
	}
	pthread_mutex_lock(&u->lock);
	u->st.successes++;
	u->st.bytes += size;
	pthread_mutex_unlock(&u->lock);
	r = 0;
out:
	lc.slist_free_all(hl);
	free(url);
	fclose(f);
	return r;
}

static int touch_marker(const char *path)
{
	char *m = NULL;
	int fd;

	if (asprintf(&m, "%s.uploaded", path) < 0)
		return -ENOMEM;
	fd = open(m, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	free(m);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

/* Ship one published file and its manifest; 0, -ENOENT (file gone) or -EIO. */
/* bidcache_ship_entries()'s put: a cache entry is an opaque binary. */
static int put_build_id(void *u, const char *entry, const char *key)
{
	return put_file(u, entry, key, "application/octet-stream");
}

static int ship(struct uploader *u, const char *path)
{
	const char *file = base_name(path);
	char *key = NULL, *mpath = NULL, *mkey = NULL;
	struct stat sb;
	int r;

	if (stat(path, &sb) < 0)
		return -errno;
	key = upload_expand_key(u->key_tmpl, u->host, u->prefix, file, (int64_t)sb.st_mtime);
	if (!key)
		return -ENOMEM;
	r = -ENOMEM;
	if (asprintf(&mpath, "%s.json", path) < 0 || asprintf(&mkey, "%s.json", key) < 0)
		goto out;
	/* The binaries it needs first (bidcache.c), so the file never lacks them. */
	r = bidcache_ship_entries(u->cfg->buildid_cache, path, key, put_build_id, u);
	if (r < 0)
		goto out;
	/* The manifest first: an object without its manifest is never seen by a
	 * consumer that keys on manifests. */
	if (access(mpath, R_OK) == 0) {
		r = put_file(u, mpath, mkey, "application/json");
		if (r < 0)
			goto out;
	}
	r = put_file(u, path, key, "application/octet-stream");
	if (r == 0) {
		r = touch_marker(path);
		if (r < 0)
			log_error("Uploaded %s but cannot write its .uploaded marker: %s", path, strerror(-r));
		else
			log_info("Uploaded %s as %s", path, key);
	}
out:
	free(key);
	free(mkey);
	free(mpath);
	return r;
}

static uint64_t jitter_ms(uint64_t max)
{
	uint64_t x = 0;

	if (getrandom(&x, sizeof(x), GRND_NONBLOCK) != sizeof(x))
		x = (uint64_t)rand();
	return max ? x % max + 1 : 0;
}

static void *run(void *arg)
{
	struct uploader *u = arg;
	uint64_t backoff = BACKOFF_MIN_MS;

	pthread_mutex_lock(&u->lock);
	while (!u->stop) {
		char *path;
		int r;

		if (!u->nr) {
			pthread_cond_wait(&u->cond, &u->lock);
			continue;
		}
		path = strdup(u->queue[0]);
		pthread_mutex_unlock(&u->lock);
		r = path ? ship(u, path) : -ENOMEM;
		pthread_mutex_lock(&u->lock);
		if (r == 0 || r == -ENOENT) {
			/* queue[0] is still this path: only this thread removes entries
			 * at the head (forget_missing skips index 0). */
			free(u->queue[0]);
			memmove(u->queue, u->queue + 1, (u->nr - 1) * sizeof(*u->queue));
			u->nr--;
			backoff = BACKOFF_MIN_MS;
			u->backing_off = false;
			pthread_cond_broadcast(&u->cond);
		} else if (!u->stop) {
			struct timespec ts;
			uint64_t wait = jitter_ms(backoff);

			u->st.failures++;
			u->backing_off = true;
			pthread_cond_broadcast(&u->cond);
			log_debug("Retrying uploads in %" PRIu64 " ms", wait);
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += (time_t)(wait / 1000);
			ts.tv_nsec += (long)(wait % 1000) * 1000000;
			if (ts.tv_nsec >= 1000000000) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000;
			}
			while (!u->stop && pthread_cond_timedwait(&u->cond, &u->lock, &ts) == 0)
				;
			u->backing_off = false;
			backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
		}
		free(path);
	}
	pthread_mutex_unlock(&u->lock);
	return NULL;
}

static int push(struct uploader *u, const char *path)
{
	char *p;

	for (size_t i = 0; i < u->nr; i++)
		if (strcmp(u->queue[i], path) == 0)
			return 0;
	if (u->nr == u->alloc) {
		size_t na = u->alloc ? u->alloc * 2 : 16;
		char **q = realloc(u->queue, na * sizeof(*q));

		if (!q)
			return -ENOMEM;
		u->queue = q;
		u->alloc = na;
	}
	p = strdup(path);
	if (!p)
		return -ENOMEM;
	u->queue[u->nr++] = p;
	return 0;
}

void uploader_enqueue(struct uploader *u, const char *path)
{
	if (!u)
		return;
	pthread_mutex_lock(&u->lock);
	if (push(u, path) < 0)
		log_error("Cannot queue %s for upload: out of memory; it is uploaded after a restart", path);
	pthread_cond_broadcast(&u->cond);
	pthread_mutex_unlock(&u->lock);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Published files of our prefix without a marker, oldest (by name) first. */
static int scan_spool(struct uploader *u)
{
	const char *dir = u->cfg->directory;
	size_t plen = strlen(u->prefix);
	char **names = NULL;
	size_t n = 0, alloc = 0;
	struct dirent *de;
	DIR *d = opendir(dir);
	int r = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		char *p = NULL, *m = NULL;

		if (len <= plen + 6 || strncmp(de->d_name, u->prefix, plen) != 0 ||
		    de->d_name[plen] != '-' || strcmp(de->d_name + len - 5, ".data") != 0)
			continue;
		if (asprintf(&m, "%s/%s.uploaded", dir, de->d_name) < 0)
			break;
		if (access(m, F_OK) == 0) {
			free(m);
			continue;
		}
		free(m);
		if (asprintf(&p, "%s/%s", dir, de->d_name) < 0)
			break;
		if (n == alloc) {
			char **nn = realloc(names, (alloc = alloc ? alloc * 2 : 16) * sizeof(*nn));

			if (!nn) {
				free(p);
				break;
			}
			names = nn;
		}
		names[n++] = p;
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), cmp_str);
	for (size_t i = 0; i < n; i++) {
		if (push(u, names[i]) < 0)
			r = -ENOMEM;
		free(names[i]);
	}
	free(names);
	if (n)
		log_info("Upload spool: %zu published file%s not uploaded yet", n, n == 1 ? "" : "s");
	return r;
}

int uploader_new(const struct config *cfg, const char *host, struct uploader **ret)
{
	struct uploader *u = calloc(1, sizeof(*u));
	const char *ek = getenv("AWS_ACCESS_KEY_ID"), *es = getenv("AWS_SECRET_ACCESS_KEY");
	int r = -ENOMEM;

	if (!u)
		return -ENOMEM;
	pthread_mutex_init(&u->lock, NULL);
	pthread_cond_init(&u->cond, NULL);
	u->cfg = cfg;
	u->host = strdup(host);
	u->url = strdup(cfg->upload_url);
	u->region = strdup(cfg->upload_region ? cfg->upload_region : "us-east-1");
	u->key_tmpl = strdup(cfg->upload_key ? cfg->upload_key : "{host}/{date}/{file}");
	u->prefix = strdup(cfg->prefix);
	if (!u->host || !u->url || !u->region || !u->key_tmpl || !u->prefix)
		goto fail;
	/* No trailing slash: keys are appended after one. */
	while (*u->url && u->url[strlen(u->url) - 1] == '/')
		u->url[strlen(u->url) - 1] = 0;
	if (cfg->upload_credentials) {
		r = upload_read_credentials(cfg->upload_credentials, &u->key_id, &u->secret);
		if (r < 0) {
			log_error("Cannot read upload credentials from %s: %s", cfg->upload_credentials,
				  r == -EINVAL ? "no access key id and secret access key in it" : strerror(-r));
			goto fail;
		}
	} else if (ek && es && *ek && *es) {
		u->key_id = strdup(ek);
		u->secret = strdup(es);
		if (!u->key_id || !u->secret)
			goto fail;
	} else {
		log_notice("No upload credentials (upload-credentials= or AWS_ACCESS_KEY_ID/"
			   "AWS_SECRET_ACCESS_KEY): uploading unsigned");
	}
	r = load_libcurl();
	if (r < 0)
		goto fail;
	u->curl = lc.easy_init();
	if (!u->curl) {
		log_error("Cannot initialize libcurl for uploads");
		r = -ENOMEM;
		goto fail;
	}
	scan_spool(u);
	r = -pthread_create(&u->thread, NULL, run, u);
	if (r < 0) {
		log_error("Cannot start the upload thread: %s", strerror(-r));
		goto fail;
	}
	u->started = true;
	*ret = u;
	return 0;
fail:
	uploader_free(u);
	return r;
}

char **uploader_pending(struct uploader *u)
{
	char **v;

	if (!u)
		return calloc(1, sizeof(char *));
	pthread_mutex_lock(&u->lock);
	v = calloc(u->nr + 1, sizeof(*v));
	for (size_t i = 0; v && i < u->nr; i++)
		v[i] = strdup(u->queue[i]);
	pthread_mutex_unlock(&u->lock);
	return v;
}

void uploader_forget_missing(struct uploader *u)
{
	if (!u)
		return;
	pthread_mutex_lock(&u->lock);
	/* Index 0 may be in flight: the thread finds it gone itself (-ENOENT). */
	for (size_t i = 1; i < u->nr;) {
		if (access(u->queue[i], F_OK) < 0 && errno == ENOENT) {
			log_warning("%s was removed before it was uploaded: the disk limits (max-bytes, min-free) needed the space",
				    u->queue[i]);
			u->st.removed_unsent++;
			free(u->queue[i]);
			memmove(u->queue + i, u->queue + i + 1, (u->nr - i - 1) * sizeof(*u->queue));
			u->nr--;
		} else {
			i++;
		}
	}
	pthread_mutex_unlock(&u->lock);
}

void uploader_get_stats(struct uploader *u, struct upload_stats *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (!u)
		return;
	pthread_mutex_lock(&u->lock);
	*ret = u->st;
	ret->backlog = u->nr;
	pthread_mutex_unlock(&u->lock);
}

void uploader_free(struct uploader *u)
{
	if (!u)
		return;
	if (u->started) {
		struct timespec ts;

		/* At stop, give the queue (typically the file just finished) a few
		 * seconds while the server answers; what is left stays spooled. */
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += STOP_GRACE_SEC;
		pthread_mutex_lock(&u->lock);
		while (u->nr && !u->backing_off && pthread_cond_timedwait(&u->cond, &u->lock, &ts) == 0)
			;
		__atomic_store_n(&u->stop, true, __ATOMIC_RELAXED);
		pthread_cond_broadcast(&u->cond);
		pthread_mutex_unlock(&u->lock);
		pthread_join(u->thread, NULL);
	}
	if (u->curl)
		lc.easy_cleanup(u->curl);
	for (size_t i = 0; i < u->nr; i++)
		free(u->queue[i]);
	free(u->queue);
	free(u->host);
	free(u->url);
	free(u->region);
	free(u->key_tmpl);
	free(u->prefix);
	free(u->key_id);
	if (u->secret)
		explicit_bzero(u->secret, strlen(u->secret));
	free(u->secret);
	pthread_mutex_destroy(&u->lock);
	pthread_cond_destroy(&u->cond);
	free(u);
}
