// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A reload frees the config's strings (manager.c: config_exit(), then
 * *m->cfg = nc) while the uploader thread may be shipping a file's
 * build-id entries.  Here a reload that moves buildid-cache= comes while
 * the first entry's PUT is held by a loopback stand-in for S3: the file
 * in flight must finish from the cache it began with (the old uploader
 * read the freed string: heap-use-after-free under ASan), and a file
 * published after the reload ships its entries from the new cache.
 */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <perfrec/pdwriter.h>

#include "config.h"
#include "upload.h"

#define MAX_REQS 32
#define WAIT_SEC 30

/* The stand-in: one request per connection, answered 200; bodies kept. */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int lfd, port;
	bool hold, held, released;
	size_t nr;
	struct { char path[512]; char body[16]; } req[MAX_REQS];
} srv = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER, .lfd = -1 };

static const uint8_t bid[2][20] = {
	{ 0xaa, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19 },
	{ 0xbb, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19 },
};

/* Read one request: its path, and up to 15 bytes of its body. */
static int read_request(int fd, char path[512], char *body, size_t blen)
{
	char buf[16384], *eoh, *cl;
	size_t n = 0, have, want = 0;
	ssize_t k;

	while (n < sizeof(buf) - 1 && (k = read(fd, buf + n, sizeof(buf) - 1 - n)) > 0) {
		n += (size_t)k;
		buf[n] = 0;
		if ((eoh = strstr(buf, "\r\n\r\n"))) {
			cl = strcasestr(buf, "\r\nContent-Length:");
			want = cl && cl < eoh ? strtoul(cl + 17, NULL, 10) : 0;
			have = n - (size_t)(eoh + 4 - buf);
			if (have >= want)
				break;
		}
	}
	eoh = strstr(buf, "\r\n\r\n");
	if (!eoh || sscanf(buf, "%*s %511s", path) != 1)
		return -EIO;
	snprintf(body, blen, "%.*s", (int)(n - (size_t)(eoh + 4 - buf)), eoh + 4);
	return 0;
}

static void *serve(void *arg)
{
	int fd;

	(void)arg;
	while ((fd = accept(srv.lfd, NULL, NULL)) >= 0) {
		static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
		char path[512] = "", body[16] = "";

		if (read_request(fd, path, body, sizeof(body)) == 0) {
			pthread_mutex_lock(&srv.lock);
			if (srv.nr < MAX_REQS) {
				snprintf(srv.req[srv.nr].path, sizeof(srv.req[0].path), "%s", path);
				snprintf(srv.req[srv.nr].body, sizeof(srv.req[0].body), "%s", body);
				srv.nr++;
			}
			/* The first build-id entry waits for the test's reload. */
			if (srv.hold && strstr(path, "/.build-id/")) {
				srv.hold = false;
				srv.held = true;
				pthread_cond_broadcast(&srv.cond);
				while (!srv.released)
					pthread_cond_wait(&srv.cond, &srv.lock);
			}
			pthread_mutex_unlock(&srv.lock);
			if (write(fd, ok, sizeof(ok) - 1) < 0)
				break;
		}
		close(fd);
	}
	return NULL;
}

static void start_server(pthread_t *t)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);

	srv.lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert(srv.lfd >= 0);
	cr_assert_eq(bind(srv.lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	cr_assert_eq(listen(srv.lfd, 8), 0);
	cr_assert_eq(getsockname(srv.lfd, (struct sockaddr *)&a, &len), 0);
	srv.port = ntohs(a.sin_port);
	cr_assert_eq(pthread_create(t, NULL, serve, NULL), 0);
}

/* @dir/.build-id/xx/yyyy... holding @what, for both build ids. */
static void fill_cache(const char *dir, const char *what)
{
	for (int i = 0; i < 2; i++) {
		char p[4096], h[41];
		int fd;

		for (int j = 0; j < 20; j++)
			sprintf(h + 2 * j, "%02x", bid[i][j]);
		snprintf(p, sizeof(p), "%s/.build-id", dir);
		mkdir(p, 0750);
		snprintf(p, sizeof(p), "%s/.build-id/%.2s", dir, h);
		mkdir(p, 0750);
		snprintf(p, sizeof(p), "%s/.build-id/%.2s/%s", dir, h, h + 2);
		fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		cr_assert(fd >= 0, "%s: %m", p);
		cr_assert_eq(write(fd, what, strlen(what)), (ssize_t)strlen(what));
		close(fd);
	}
}

/* A published file whose HEADER_BUILD_ID lists both build ids. */
static void publish(const char *path)
{
	struct perf_event_attr attr = { .size = sizeof(attr), .type = PERF_TYPE_SOFTWARE,
					.config = PERF_COUNT_SW_DUMMY, .sample_id_all = 1 };
	uint8_t feat[2][64] = { { 0 } };
	struct perfrec_pdwriter *w;
	uint64_t id = 1;
	int fd;

	for (int i = 0; i < 2; i++) {
		struct perf_event_header h = { .type = PERF_RECORD_MISC_USER, .misc = 1u << 15,
					       .size = sizeof(feat[i]) };

		memcpy(feat[i], &h, sizeof(h));
		memcpy(feat[i] + 12, bid[i], 20);
		feat[i][32] = 20;
		strcpy((char *)feat[i] + 36, "/usr/bin/x");
	}
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	cr_assert(fd >= 0, "%s: %m", path);
	cr_assert_eq(perfrec_pdwriter__new(fd, &(struct perfrec_pdwriter_opts){
		.sz = sizeof(struct perfrec_pdwriter_opts), .owns_fd = true }, &w), 0);
	cr_assert_eq(perfrec_pdwriter__add_attr(w, &attr, &id, 1, "dummy"), 0);
	cr_assert_eq(perfrec_pdwriter__set_feature(w, PERFREC_FEAT_BUILD_ID, feat, sizeof(feat)), 0);
	cr_assert_eq(perfrec_pdwriter__finish(w), 0);
	perfrec_pdwriter__free(w, false);
}

static void wait_uploaded(const char *path)
{
	char m[4096];

	snprintf(m, sizeof(m), "%s.uploaded", path);
	for (int i = 0; i < WAIT_SEC * 100 && access(m, F_OK) < 0; i++)
		nanosleep(&(struct timespec){ .tv_nsec = 10 * 1000 * 1000 }, NULL);
	cr_assert_eq(access(m, F_OK), 0, "%s never uploaded", path);
}

static void set_config(struct config *c, const char *dir, const char *url, const char *cache)
{
	char err[512] = "";

	config_init(c);
	cr_assert_eq(config_set(c, "output", "directory", dir, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(config_set(c, "output", "buildid-cache", cache, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(config_set(c, "upload", "upload-url", url, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(config_resolve_buildid_cache(c), 0);
}

/* The build-id objects stored among requests [from, to): their bodies, all @what. */
static void expect_entries_from(size_t from, size_t to, const char *what)
{
	unsigned n = 0;

	pthread_mutex_lock(&srv.lock);
	for (size_t i = from; i < to; i++)
		if (strstr(srv.req[i].path, "/.build-id/")) {
			n++;
			cr_expect_str_eq(srv.req[i].body, what, "%s came from the %s cache", srv.req[i].path,
					 srv.req[i].body);
		}
	pthread_mutex_unlock(&srv.lock);
	cr_expect_eq(n, 2, "%u build-id objects stored, not 2", n);
}

Test(upload_reload, buildid_cache_moved_while_shipping)
{
	char root[] = "/tmp/test-upload-reload-XXXXXX", out[256], old[256], new[256];
	char url[64], f1[512], f2[512], cmd[512];
	struct timespec ts;
	struct uploader *u = NULL;
	struct config c, nc;
	pthread_t t;
	size_t n1;

	unsetenv("AWS_ACCESS_KEY_ID");
	unsetenv("AWS_SECRET_ACCESS_KEY");
	cr_assert(mkdtemp(root));
	snprintf(out, sizeof(out), "%s/out", root);
	snprintf(old, sizeof(old), "%s/old", root);
	snprintf(new, sizeof(new), "%s/new", root);
	cr_assert_eq(mkdir(out, 0700) | mkdir(old, 0700) | mkdir(new, 0700), 0);
	fill_cache(old, "old");
	fill_cache(new, "new");
	start_server(&t);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/bucket", srv.port);

	set_config(&c, out, url, old);
	cr_assert_eq(uploader_new(&c, "host", &u), 0);
	srv.hold = true;
	snprintf(f1, sizeof(f1), "%s/perf-1.data", out);
	publish(f1);
	uploader_enqueue(u, f1);

	/* The reload comes while the first entry is on its way: as manager.c's reload(). */
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += WAIT_SEC;
	pthread_mutex_lock(&srv.lock);
	while (!srv.held && pthread_cond_timedwait(&srv.cond, &srv.lock, &ts) == 0)
		;
	pthread_mutex_unlock(&srv.lock);
	cr_assert(srv.held, "no build-id entry was shipped");
	set_config(&nc, out, url, new);
	config_exit(&c);
	c = nc;
	cr_assert_eq(uploader_set_buildid_cache(u, c.buildid_cache), 0);
	pthread_mutex_lock(&srv.lock);
	srv.released = true;
	pthread_cond_broadcast(&srv.cond);
	pthread_mutex_unlock(&srv.lock);

	wait_uploaded(f1);
	pthread_mutex_lock(&srv.lock);
	n1 = srv.nr;
	pthread_mutex_unlock(&srv.lock);
	/* Published after the reload: its entries from the new cache. */
	snprintf(f2, sizeof(f2), "%s/perf-2.data", out);
	publish(f2);
	uploader_enqueue(u, f2);
	wait_uploaded(f2);
	uploader_free(u);

	expect_entries_from(0, n1, "old");
	expect_entries_from(n1, srv.nr, "new");

	shutdown(srv.lfd, SHUT_RDWR);
	pthread_join(t, NULL);
	close(srv.lfd);
	config_exit(&c);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	cr_expect_eq(system(cmd), 0);
}
