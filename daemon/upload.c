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
#include <dirent.h>
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

#include "fsutil.h"
#include "bidcache.h"
#include "log.h"
#include "s3.h"
#include "upload.h"

#define BACKOFF_MIN_MS 1000ULL
#define BACKOFF_MAX_MS (300ULL * 1000)
#define STOP_GRACE_SEC 10

struct uploader {
	char *host, *key_tmpl, *prefix;
	/*
	 * buildid-cache=, our own copy (NULL: none): a reload frees the
	 * config's strings while this thread may be shipping, so nothing of
	 * the config is read after uploader_new().  Under the lock; a reload
	 * replaces it (uploader_set_buildid_cache()).
	 */
	char *bidcache;
	pthread_t thread;
	bool started;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop;
	bool backing_off; /* the last attempt failed: the server is away */
	char **queue;   /* oldest first; queue[0] is in flight while busy */
	size_t nr, alloc;
	struct upload_stats st;
	struct s3_client *s3;
};

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

static int abort_cb(void *ctx)
{
	struct uploader *u = ctx;

	/* A plain read of a bool: worst case the abort comes one callback late. */
	return __atomic_load_n(&u->stop, __ATOMIC_RELAXED);
}

/* PUT one file; 0 on a 2xx answer. */
static int put_file(struct uploader *u, const char *path, const char *key, const char *ctype)
{
	uint64_t size = 0;
	int r = s3_put_file(u->s3, path, key, ctype, &size);

	if (r < 0) {
		/* A file removed meanwhile is not a failure of the server. */
		if (r == -ENOENT && access(path, F_OK) < 0)
			return -ENOENT;
		log_warning("Upload of %s failed: %s", path, s3_client_error(u->s3));
		return -EIO;
	}
	pthread_mutex_lock(&u->lock);
	u->st.successes++;
	u->st.bytes += size;
	pthread_mutex_unlock(&u->lock);
	return 0;
}

static int touch_marker(const char *path)
{
	char *m = NULL;
	int fd, r;

	if (asprintf(&m, "%s.uploaded", path) < 0)
		return -ENOMEM;
	/* As readable as the data file, no more (0640, not 0644); never through a link. */
	fd = open(m, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	free(m);
	if (fd < 0)
		return -errno;
	r = copy_access(fd, path);
	close(fd);
	return r;
}

/* Ship one published file and its manifest; 0, -ENOENT (file gone) or -EIO. */
/* bidcache_ship_entries()'s put: a cache entry is an opaque binary. */
static int put_build_id(void *u, const char *entry, const char *key)
{
	return put_file(u, entry, key, "application/octet-stream");
}

/*
 * The build-id cache a file ships its entries from: the one configured
 * when its turn comes, copied, so a reload meanwhile cannot free it under
 * us.  A file in flight during a reload finishes with the cache it began
 * with; files queued before the reload but not yet begun take the new
 * one, and their entries that only the old cache holds are not shipped
 * (the file itself still is, and the old cache stays on disk).
 */
static int bidcache_of_now(struct uploader *u, char **ret)
{
	int r = 0;

	pthread_mutex_lock(&u->lock);
	*ret = u->bidcache ? strdup(u->bidcache) : NULL;
	if (u->bidcache && !*ret)
		r = -ENOMEM;
	pthread_mutex_unlock(&u->lock);
	return r;
}

static int ship(struct uploader *u, const char *path)
{
	const char *file = base_name(path);
	char *key = NULL, *mpath = NULL, *mkey = NULL, *cache = NULL;
	struct stat sb;
	int r;

	if (stat(path, &sb) < 0)
		return -errno;
	key = s3_expand_key(u->key_tmpl, u->host, u->prefix, file, (int64_t)sb.st_mtime);
	if (!key)
		return -ENOMEM;
	r = -ENOMEM;
	if (asprintf(&mpath, "%s.json", path) < 0 || asprintf(&mkey, "%s.json", key) < 0)
		goto out;
	/* The binaries it needs first (bidcache.c), so the file never lacks them. */
	r = bidcache_of_now(u, &cache);
	if (r == 0)
		r = bidcache_ship_entries(cache, path, key, put_build_id, u);
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
	free(cache);
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
static int scan_spool(struct uploader *u, const char *dir)
{
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
	struct s3_opts so = { .sz = sizeof(so), .region = cfg->upload_region, .abort_cb = abort_cb };
	char *key_id = NULL, *secret = NULL, err[256] = "";
	int r = -ENOMEM;

	if (!u)
		return -ENOMEM;
	pthread_mutex_init(&u->lock, NULL);
	pthread_cond_init(&u->cond, NULL);
	u->host = strdup(host);
	u->key_tmpl = strdup(cfg->upload_key);
	u->prefix = strdup(cfg->prefix);
	u->bidcache = cfg->buildid_cache ? strdup(cfg->buildid_cache) : NULL;
	if (!u->host || !u->key_tmpl || !u->prefix || (cfg->buildid_cache && !u->bidcache))
		goto fail;
	r = s3_credentials(cfg->upload_credentials, &key_id, &secret);
	if (r < 0) {
		log_error("Cannot read upload credentials from %s: %s", cfg->upload_credentials,
			  r == -EINVAL ? "no access key id and secret access key in it" : strerror(-r));
		goto fail;
	}
	if (!key_id)
		log_notice("No upload credentials (upload-credentials= or AWS_ACCESS_KEY_ID/"
			   "AWS_SECRET_ACCESS_KEY): uploading unsigned");
	so.url = cfg->upload_url;
	so.key_id = key_id;
	so.secret = secret;
	so.abort_ctx = u;
	r = s3_client_new(&so, &u->s3, err, sizeof(err));
	if (r < 0) {
		log_error("Cannot set up uploads: %s", err);
		goto fail;
	}
	scan_spool(u, cfg->directory);
	r = -pthread_create(&u->thread, NULL, run, u);
	if (r < 0) {
		log_error("Cannot start the upload thread: %s", strerror(-r));
		goto fail;
	}
	u->started = true;
	*ret = u;
	r = 0;
	goto out;
fail:
	uploader_free(u);
out:
	free(key_id);
	if (secret)
		explicit_bzero(secret, strlen(secret));
	free(secret);
	return r;
}

int uploader_set_buildid_cache(struct uploader *u, const char *dir)
{
	char *d = NULL;

	if (!u)
		return 0;
	if (dir && !(d = strdup(dir)))
		return -ENOMEM;
	pthread_mutex_lock(&u->lock);
	free(u->bidcache);
	u->bidcache = d;
	pthread_mutex_unlock(&u->lock);
	return 0;
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
	s3_client_free(u->s3);
	for (size_t i = 0; i < u->nr; i++)
		free(u->queue[i]);
	free(u->queue);
	free(u->host);
	free(u->key_tmpl);
	free(u->prefix);
	free(u->bidcache);
	pthread_mutex_destroy(&u->lock);
	pthread_cond_destroy(&u->cond);
	free(u);
}
