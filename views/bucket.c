// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The fleet bucket read back (bucket.h).  The uploader stores each published
 * file as "<key>" and, first, its manifest as "<key>.json"; the manifests
 * are the index: one ListObjectsV2 of the narrowest prefix the key template
 * allows (up to {host} filled in when a host is asked for), one small GET per
 * manifest, and then only the data objects whose span meets the window are
 * downloaded.  A manifest whose data object is not listed is an upload in
 * progress or lagging: it is not data yet, and its span stays a gap.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include <perfrec/buildid.h>

#include "bucket.h"
#include "cut-archive.h"
#include "fsutil.h"
#include "s3.h"

/* A manifest is a few KiB; anything near this is not one. */
#define MANIFEST_MAX (1u << 20)

void bucket_object_exit(struct bucket_object *o)
{
	if (!o)
		return;
	free(o->key);
	free(o->file);
	free(o->host);
	for (size_t i = 0; o->labels && o->labels[i]; i++)
		free(o->labels[i]);
	free(o->labels);
	free(o->path);
	free(o->manifest);
	memset(o, 0, sizeof(*o));
}

bool bucket_file_name_ok(const char *name)
{
	static const char ok[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-+@:=,~";
	size_t n = name ? strlen(name) : 0;

	return n > 5 && n <= BUCKET_NAME_MAX && strspn(name, ok) == n && name[0] != '-' && name[0] != '.' &&
	       strcmp(name + n - 5, ".data") == 0;
}

const char *bucket_esc(const char *s)
{
	static char bufs[8][256 * 4 + 8];
	static unsigned next;
	char *b = bufs[next++ % 8], *p = b;
	size_t i;

	for (i = 0; s && s[i] && i < 256; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '\\')
			p += sprintf(p, "\\\\");
		else if (c == '\n')
			p += sprintf(p, "\\n");
		else if (c == '\t')
			p += sprintf(p, "\\t");
		else if (c < 0x20 || c > 0x7e)
			p += sprintf(p, "\\x%02x", c);
		else
			*p++ = (char)c;
	}
	strcpy(p, s && s[i] ? "..." : "");
	return b;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static const char *get_string(json_object *root, const char *name)
{
	json_object *v;

	if (!json_object_object_get_ex(root, name, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

static uint64_t get_u64(json_object *root, const char *name)
{
	json_object *v;

	if (!json_object_object_get_ex(root, name, &v) || !json_object_is_type(v, json_type_int))
		return 0;
	return json_object_get_uint64(v);
}

int bucket_manifest_parse(const char *json, const char *manifest_key, struct bucket_object *ret)
{
	struct bucket_object o = { 0 };
	json_object *root = json_tokener_parse(json), *labels;
	const char *host, *start, *end, *sha, *file;
	size_t klen = strlen(manifest_key), nl = 0;
	int r = -EBADMSG;

	if (!root || !json_object_is_type(root, json_type_object))
		goto out;
	host = get_string(root, "host");
	start = get_string(root, "start");
	end = get_string(root, "end");
	sha = get_string(root, "sha256");
	file = get_string(root, "file");
	if (!host || !*host || !sha || strlen(sha) != 64 || strspn(sha, "0123456789abcdef") != 64 ||
	    klen <= 5 || strcmp(manifest_key + klen - 5, ".json") != 0)
		goto out;
	if (s3_parse_utc(start, &o.start_ns) < 0 || s3_parse_utc(end, &o.end_ns) < 0 ||
	    o.end_ns < o.start_ns)
		goto out;
	memcpy(o.sha256, sha, 65);
	o.size = get_u64(root, "size");
	if (o.size > BUCKET_SIZE_MAX) {
		r = -ERANGE;
		goto out;
	}
	/* The host names gaps and lines of bucket-ls; a key template may hold it. */
	for (const char *h = host; *h; h++)
		if ((unsigned char)*h < 0x20 || *h == 0x7f || *h == '/')
			goto out;
	o.samples = get_u64(root, "samples");
	o.lost = get_u64(root, "lost");
	r = -ENOMEM;
	o.key = strndup(manifest_key, klen - 5);
	o.host = strdup(host);
	if (file) {
		o.file = strdup(file);
	} else {
		const char *slash = strrchr(o.key ? o.key : "", '/');

		o.file = strdup(slash ? slash + 1 : o.key ? o.key : "");
	}
	if (o.file && !bucket_file_name_ok(o.file)) {
		r = -EINVAL;
		goto out;
	}
	if (!json_object_object_get_ex(root, "labels", &labels) || !json_object_is_type(labels, json_type_object))
		labels = NULL;
	o.labels = calloc((labels ? (size_t)json_object_object_length(labels) : 0) + 1, sizeof(char *));
	if (!o.key || !o.host || !o.file || !o.labels)
		goto out;
	if (labels) {
		json_object_object_foreach(labels, k, v) {
			if (!json_object_is_type(v, json_type_string))
				continue;
			if (asprintf(&o.labels[nl], "%s=%s", k, json_object_get_string(v)) < 0) {
				o.labels[nl] = NULL;
				goto out;
			}
			nl++;
		}
		qsort(o.labels, nl, sizeof(char *), cmp_str);
	}
	*ret = o;
	memset(&o, 0, sizeof(o));
	r = 0;
out:
	bucket_object_exit(&o);
	json_object_put(root);
	return r;
}

bool bucket_object_matches(const struct bucket_object *obj, const char *host, const char *const *labels)
{
	if (host && strcmp(obj->host, host) != 0)
		return false;
	for (size_t i = 0; labels && labels[i]; i++) {
		bool found = false;

		for (size_t j = 0; obj->labels && obj->labels[j] && !found; j++)
			found = strcmp(obj->labels[j], labels[i]) == 0;
		if (!found)
			return false;
	}
	return true;
}

bool bucket_object_overlaps(const struct bucket_object *obj, uint64_t from_ns, uint64_t to_ns)
{
	return obj->start_ns <= to_ns && obj->end_ns >= from_ns;
}

/* The start a rotated file's name says, or 0 for other names. */
static uint64_t name_start_ns(const char *key)
{
	const char *base = strrchr(key, '/');
	char tail[8];
	size_t len;
	struct tm tm = { 0 };
	unsigned ms = 0, seq = 0;
	int n = 0;
	time_t t;

	base = base ? base + 1 : key;
	len = strlen(base);
	/* "-YYYYMMDDTHHMMSS.mmmZ-NNNNNN.data": 33 characters at the end. */
	if (len < 33 || base[len - 33] != '-')
		return 0;
	if (sscanf(base + len - 32, "%4d%2d%2dT%2d%2d%2d.%3uZ-%6u%5s%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
		   &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ms, &seq, tail, &n) != 9 || n != 32 ||
	    strcmp(tail, ".data") != 0 || tm.tm_year < 1970 || tm.tm_mon < 1 || tm.tm_mon > 12 ||
	    tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
		return 0;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	t = timegm(&tm);
	return t > 0 ? (uint64_t)t * 1000000000ULL + ms * 1000000ULL : 0;
}

bool bucket_key_may_overlap(const char *data_key, uint64_t mtime_ns, uint64_t from_ns, uint64_t to_ns)
{
	uint64_t start = name_start_ns(data_key);

	if (mtime_ns && mtime_ns + BUCKET_SLACK_NS < from_ns)
		return false;
	if (start && start > to_ns + BUCKET_SLACK_NS)
		return false;
	return true;
}

static int cmp_obj(const void *a, const void *b)
{
	const struct bucket_object *x = a, *y = b;
	int c;

	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	c = strcmp(x->host, y->host);
	return c ? c : strcmp(x->key, y->key);
}

void bucket_sort(struct bucket_object *objs, size_t nr)
{
	if (nr)
		qsort(objs, nr, sizeof(*objs), cmp_obj);
}

static int add_gap(struct bucket_gap **gaps, size_t *nr, const char *host, uint64_t from, uint64_t to)
{
	struct bucket_gap *ng = realloc(*gaps, (*nr + 1) * sizeof(*ng));

	if (!ng)
		return -ENOMEM;
	*gaps = ng;
	ng[*nr] = (struct bucket_gap){ .host = host ? strdup(host) : NULL, .from_ns = from, .to_ns = to };
	if (host && !ng[*nr].host)
		return -ENOMEM;
	(*nr)++;
	return 0;
}

/* The gaps of one host: a sweep over its objects in start order. */
static int host_gaps(const struct bucket_object *objs, size_t nr, const char *host, uint64_t from,
		     uint64_t to, uint64_t min, struct bucket_gap **gaps, size_t *nr_gaps)
{
	const struct bucket_object **v = calloc(nr + 1, sizeof(*v));
	uint64_t covered = from; /* [from, covered) is covered */
	size_t n = 0;
	int r = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < nr; i++)
		if (objs[i].uploaded && !strcmp(objs[i].host, host) && bucket_object_overlaps(&objs[i], from, to))
			v[n++] = &objs[i];
	/* @objs need not be sorted: order this host's by start (insertion sort, few objects). */
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && v[j - 1]->start_ns > v[j]->start_ns; j--) {
			const struct bucket_object *t = v[j];

			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	if (!n) {
		/* Nothing at all: the whole window, however short. */
		r = add_gap(gaps, nr_gaps, host, from, to);
		free(v);
		return r;
	}
	for (size_t i = 0; i < n && r == 0 && covered < to; i++) {
		if (v[i]->start_ns > covered && v[i]->start_ns - covered >= min)
			r = add_gap(gaps, nr_gaps, host, covered, v[i]->start_ns);
		if (v[i]->end_ns > covered)
			covered = v[i]->end_ns;
	}
	if (r == 0 && covered < to && to - covered >= min)
		r = add_gap(gaps, nr_gaps, host, covered, to);
	free(v);
	return r;
}

int bucket_gaps(const struct bucket_object *objs, size_t nr, const char *const *hosts, uint64_t from_ns,
		uint64_t to_ns, uint64_t gap_min_ns, struct bucket_gap **ret_gaps, size_t *ret_nr)
{
	struct bucket_gap *gaps = NULL;
	const char **own = NULL;
	size_t nr_gaps = 0, nh = 0;
	int r = 0;

	if (!gap_min_ns)
		gap_min_ns = BUCKET_GAP_MIN_NS;
	if (!hosts) {
		/* Every host with data, by name. */
		own = calloc(nr + 1, sizeof(*own));
		if (!own)
			return -ENOMEM;
		for (size_t i = 0; i < nr; i++) {
			size_t j;

			if (!objs[i].uploaded)
				continue;
			for (j = 0; j < nh && strcmp(own[j], objs[i].host); j++)
				;
			if (j == nh)
				own[nh++] = objs[i].host;
		}
		qsort(own, nh, sizeof(*own), cmp_str);
		if (!nh)
			r = add_gap(&gaps, &nr_gaps, NULL, from_ns, to_ns);
		hosts = own;
	}
	for (size_t i = 0; hosts[i] && r == 0; i++)
		r = host_gaps(objs, nr, hosts[i], from_ns, to_ns, gap_min_ns, &gaps, &nr_gaps);
	free(own);
	if (r < 0) {
		for (size_t i = 0; i < nr_gaps; i++)
			free(gaps[i].host);
		free(gaps);
		return r;
	}
	*ret_gaps = gaps;
	*ret_nr = nr_gaps;
	return 0;
}

void bucket_result_exit(struct bucket_result *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nr; i++)
		bucket_object_exit(&r->objs[i]);
	free(r->objs);
	for (size_t i = 0; i < r->nr_gaps; i++)
		free(r->gaps[i].host);
	free(r->gaps);
	memset(r, 0, sizeof(*r));
}

/* --- the network side --- */

static int cmp_s3obj(const void *a, const void *b)
{
	return strcmp(((const struct s3_object *)a)->key, ((const struct s3_object *)b)->key);
}

static int open_bucket(const struct bucket_opts *o, struct s3_client **ret)
{
	struct s3_opts so = { .sz = sizeof(so), .url = o->url, .region = o->region };
	char *key = NULL, *secret = NULL, err[512] = "";
	int r;

	r = s3_credentials(o->credentials, &key, &secret);
	if (r < 0) {
		fprintf(stderr, "perfrecctl: cannot read credentials from %s: %s\n", o->credentials,
			r == -EINVAL ? "no access key id and secret access key in it" : strerror(-r));
		return r;
	}
	so.key_id = key;
	so.secret = secret;
	r = s3_client_new(&so, ret, err, sizeof(err));
	if (r < 0)
		fprintf(stderr, "perfrecctl: %s\n", *err ? err : strerror(-r));
	free(key);
	if (secret)
		explicit_bzero(secret, strlen(secret));
	free(secret);
	return r;
}

/*
 * The host a key names, by its template: the characters where {host} stands,
 * up to the literal that follows it.  NULL when the template has no {host}
 * right after its literal start, or nothing after it to end the name.
 */
char *bucket_key_host(const char *tmpl, const char *key)
{
	char *lit = s3_key_prefix(tmpl, NULL, NULL), *host = NULL;
	size_t ll;
	char sep;
	const char *end;

	if (!lit)
		return NULL;
	ll = strlen(lit);
	if (strncmp(tmpl + ll, "{host}", 6) != 0 || strncmp(key, lit, ll) != 0)
		goto out;
	sep = tmpl[ll + 6];
	if (!sep || sep == '{')
		goto out;
	end = strchr(key + ll, sep);
	if (end && end > key + ll)
		host = strndup(key + ll, (size_t)(end - key - ll));
out:
	free(lit);
	return host;
}

/* Hosts by name: those whose manifests were read, and the newest manifest
 * of each host known only from its keys. */
struct host_seen {
	char *host;
	const char *newest; /* manifest key, borrowed from the listing */
	uint64_t newest_ns;
	bool read;          /* one of its manifests was read */
};

struct hosts_seen {
	struct host_seen *v;
	size_t nr;
};

static struct host_seen *host_seen_get(struct hosts_seen *hs, const char *host)
{
	struct host_seen *nv;

	for (size_t i = 0; i < hs->nr; i++)
		if (!strcmp(hs->v[i].host, host))
			return &hs->v[i];
	nv = realloc(hs->v, (hs->nr + 1) * sizeof(*nv));
	if (!nv)
		return NULL;
	hs->v = nv;
	nv[hs->nr] = (struct host_seen){ .host = strdup(host) };
	if (!nv[hs->nr].host)
		return NULL;
	return &nv[hs->nr++];
}

static void hosts_seen_exit(struct hosts_seen *hs)
{
	for (size_t i = 0; i < hs->nr; i++)
		free(hs->v[i].host);
	free(hs->v);
}

/*
 * GET and parse the manifest @key; keep it in @res if it matches.  0 (also
 * for a manifest skipped with a message) or -ENOMEM.
 */
static int read_one(const struct bucket_opts *o, struct s3_client *c, const char *key,
		    const struct s3_object *keys, size_t nkeys, struct hosts_seen *hs, struct bucket_result *res)
{
	struct bucket_object obj, *nv;
	struct host_seen *h;
	struct s3_object probe;
	char *json = NULL;
	int r;

	r = s3_get_mem(c, key, MANIFEST_MAX, &json, NULL);
	if (r < 0) {
		fprintf(stderr, "perfrecctl: skipping manifest %s: %s\n", bucket_esc(key), bucket_esc(s3_client_error(c)));
		return r == -ENOMEM ? r : 0;
	}
	r = bucket_manifest_parse(json, key, &obj);
	if (r == 0) {
		obj.manifest = json;
		json = NULL;
	}
	free(json);
	if (r == -EINVAL || r == -ERANGE) {
		/* Made by someone, not by perfrecd: refused, and counted so the command fails. */
		fprintf(stderr, "perfrecctl: refusing %s: %s\n", bucket_esc(key),
			r == -EINVAL ? "its file is not a name perfrecd gives (a plain NAME.data of letters, digits and ._-+@:=,~)"
				     : "its size is beyond any recorded file's");
		res->nr_bad++;
		return 0;
	}
	if (r < 0) {
		if (r != -ENOMEM)
			fprintf(stderr, "perfrecctl: skipping %s: not a perfrecd manifest with host, start, end and sha256\n",
				bucket_esc(key));
		return r == -ENOMEM ? r : 0;
	}
	h = host_seen_get(hs, obj.host);
	if (!h) {
		bucket_object_exit(&obj);
		return -ENOMEM;
	}
	h->read = true;
	if (!bucket_object_matches(&obj, o->host, o->labels)) {
		bucket_object_exit(&obj);
		return 0;
	}
	probe.key = obj.key;
	obj.uploaded = bsearch(&probe, keys, nkeys, sizeof(*keys), cmp_s3obj) != NULL;
	nv = realloc(res->objs, (res->nr + 1) * sizeof(*nv));
	if (!nv) {
		bucket_object_exit(&obj);
		return -ENOMEM;
	}
	res->objs = nv;
	res->objs[res->nr++] = obj;
	return 0;
}

/*
 * Every manifest under the template's prefix that matches host and labels,
 * parsed, with uploaded set from the listing.  With a @window (from, to),
 * only the manifests of objects that may overlap it are read, and of each
 * host the key template names whose manifests were all passed over, the
 * newest: a host that matches but stopped uploading before the window is
 * in the result (outside the window), so its gap shows.  Manifests that
 * cannot be read or parsed are named and skipped: one bad object does not
 * hide the rest of the fleet.
 */
static int read_manifests(const struct bucket_opts *o, struct s3_client *c, const uint64_t *window,
			  struct bucket_result *res)
{
	const char *tmpl = o->key_template ? o->key_template : "{host}/{date}/{file}";
	struct hosts_seen hs = { 0 };
	struct s3_object *keys = NULL;
	size_t nkeys = 0;
	char *prefix = s3_key_prefix(tmpl, o->host, NULL);
	int r;

	if (!prefix) {
		fprintf(stderr, "perfrecctl: bad key template '%s': known are {host} {date} {file} {prefix}\n",
			bucket_esc(tmpl));
		return errno == ENOMEM ? -ENOMEM : -EINVAL;
	}
	r = s3_list(c, prefix, &keys, &nkeys);
	if (r < 0) {
		fprintf(stderr, "perfrecctl: cannot list the bucket: %s\n", bucket_esc(s3_client_error(c)));
		goto out;
	}
	/* Sorted for the lookups of data keys; servers list in this order anyway. */
	qsort(keys, nkeys, sizeof(*keys), cmp_s3obj);
	for (size_t i = 0; i < nkeys && r == 0; i++) {
		const char *k = keys[i].key;
		size_t kl = strlen(k);

		if (kl <= 5 || strcmp(k + kl - 5, ".json") != 0)
			continue;
		if (window) {
			struct s3_object probe, *data;
			char *dkey = strndup(k, kl - 5), *host;
			bool may;

			if (!dkey) {
				r = -ENOMEM;
				break;
			}
			probe.key = dkey;
			data = bsearch(&probe, keys, nkeys, sizeof(*keys), cmp_s3obj);
			may = bucket_key_may_overlap(dkey, data ? data->mtime_ns : keys[i].mtime_ns, window[0], window[1]);
			free(dkey);
			if (!may) {
				host = bucket_key_host(tmpl, k);
				if (host && (!o->host || !strcmp(host, o->host))) {
					struct host_seen *h = host_seen_get(&hs, host);

					if (!h)
						r = -ENOMEM;
					else if (keys[i].mtime_ns >= h->newest_ns) {
						h->newest = k;
						h->newest_ns = keys[i].mtime_ns;
					}
				}
				free(host);
				continue;
			}
		}
		r = read_one(o, c, k, keys, nkeys, &hs, res);
	}
	/* Hosts passed over entirely: their newest manifest says if they match. */
	for (size_t i = 0; i < hs.nr && r == 0; i++)
		if (!hs.v[i].read && hs.v[i].newest)
			r = read_one(o, c, hs.v[i].newest, keys, nkeys, &hs, res);
	bucket_sort(res->objs, res->nr);
out:
	hosts_seen_exit(&hs);
	s3_objects_free(keys, nkeys);
	free(prefix);
	return r;
}

int bucket_list(const struct bucket_opts *o, struct bucket_result *ret)
{
	struct bucket_result res = { 0 };
	struct s3_client *c = NULL;
	int r;

	r = open_bucket(o, &c);
	if (r < 0)
		return r;
	r = read_manifests(o, c, NULL, &res);
	s3_client_free(c);
	if (r < 0) {
		bucket_result_exit(&res);
		return r;
	}
	for (size_t i = 0; i < res.nr; i++)
		res.nr_pending += !res.objs[i].uploaded;
	*ret = res;
	return 0;
}

/*
 * A local copy already checked: reuse it instead of downloading again.  Only
 * a regular file of ours, opened without following a link: whatever else
 * is at the name is replaced by the download.
 */
static bool have_copy(const char *path, const char *sha)
{
	char hex[65] = "";
	struct stat st;
	uint64_t size;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	bool same;

	if (fd < 0)
		return false;
	same = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
	       s3_fd_sha256(fd, hex, &size) == 0 && strcmp(hex, sha) == 0;
	close(fd);
	return same;
}

/*
 * The manifest beside its file, as in the host's output directory, so the
 * fetched directory reads like the original (perfrecctl ls, a person).
 * Written whole, new, 0600, and renamed over a copy already there.
 */
static int write_manifest(const struct bucket_object *obj, const char *dest)
{
	struct output_file of;
	char *path = NULL;
	int r;

	if (!obj->manifest)
		return 0;
	if (asprintf(&path, "%s.json", dest) < 0)
		return -ENOMEM;
	r = output_file_open(&of, path, OUTPUT_REPLACE, 0600);
	if (r == 0) {
		r = write_all(of.fd, obj->manifest, strlen(obj->manifest));
		if (close(of.fd) < 0 && r == 0)
			r = -errno;
		if (r < 0)
			output_file_discard(&of);
		else
			r = output_file_publish(&of);
	}
	if (r < 0)
		fprintf(stderr, "perfrecctl: cannot write %s: %s\n", path, strerror(-r));
	free(path);
	return r;
}

/*
 * Download one object to a new file beside "<dir>/<file>" (O_EXCL,
 * O_NOFOLLOW, 0600: nothing planted in @dir is followed or reused), check
 * it, then rename it to "<dir>/<file>": a copy that fails its check never
 * carries the name a reader would open.  0, or -EBADMSG (hash), -errno;
 * named on stderr.
 */
static int fetch_one(const struct bucket_opts *o, struct s3_client *c, struct bucket_object *obj,
		     const char *dir)
{
	struct output_file of;
	char *dest = NULL, got[65] = "";
	int r;

	/* bucket_manifest_parse() checked it; a name is never taken from elsewhere. */
	if (!bucket_file_name_ok(obj->file))
		return -EBADMSG;
	if (asprintf(&dest, "%s/%s", dir, obj->file) < 0)
		return -ENOMEM;
	if (have_copy(dest, obj->sha256)) {
		obj->path = dest;
		/* The data is what matters; a manifest not written was named. */
		write_manifest(obj, dest);
		return 0;
	}
	r = output_file_open(&of, dest, OUTPUT_REPLACE, 0600);
	if (r < 0) {
		fprintf(stderr, "perfrecctl: cannot create a file beside %s: %s\n", dest, strerror(-r));
		goto out;
	}
	r = s3_get_fd(c, obj->key, of.fd, NULL, got);
	if (close(of.fd) < 0 && r == 0)
		r = -errno;
	if (r < 0) {
		fprintf(stderr, "perfrecctl: %s; not used\n", bucket_esc(s3_client_error(c)));
		output_file_discard(&of);
		goto out;
	}
	if (strcmp(got, obj->sha256) != 0) {
		fprintf(stderr, "perfrecctl: %s/%s: SHA-256 mismatch: its manifest says %s, the object has %s; not used\n",
			o->url, bucket_esc(obj->key), obj->sha256, got);
		output_file_discard(&of);
		r = -EBADMSG;
		goto out;
	}
	r = output_file_publish(&of);
	if (r < 0) {
		fprintf(stderr, "perfrecctl: cannot put %s in place: %s\n", dest, strerror(-r));
		goto out;
	}
	obj->path = dest;
	dest = NULL;
	write_manifest(obj, obj->path);
out:
	free(dest);
	return r;
}

/*
 * One shipped cache entry @key into @dest (made O_EXCL beside it, 0600).
 * The bucket is someone else's input: an ELF entry is kept only if it
 * carries the build id @hex its name says (a kernel's kallsyms has none to
 * check; it gives symbols only).  0, or -errno (a 404 too: not shipped).
 */
static int fetch_entry(struct s3_client *c, const char *key, const char *dest, const char *hex)
{
	uint8_t id[PERFREC_BUILD_ID_MAX];
	struct output_file of;
	int r = output_file_open(&of, dest, 0, 0600), n;

	if (r < 0)
		return r;
	r = s3_get_fd(c, key, of.fd, NULL, NULL);
	if (close(of.fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && (n = perfrec_buildid__read_elf(of.tmp_path, id)) > 0) {
		char got[2 * PERFREC_BUILD_ID_MAX + 1];

		for (int i = 0; i < n; i++)
			snprintf(got + 2 * i, 3, "%02x", id[i]);
		if (strcmp(got, hex)) {
			fprintf(stderr, "perfrecctl: %s holds build id %s, not its name's; not used\n", bucket_esc(key),
				got);
			r = -EBADMSG;
		}
	}
	if (r < 0) {
		output_file_discard(&of);
		return r;
	}
	return output_file_publish(&of);
}

/*
 * The cache entries @obj's file names that its host shipped beside it, into
 * @dir/.build-id/: a binary's file, else a kernel's directory with its
 * kallsyms.  What is not in the bucket is left for the caller to name.
 */
static void fetch_entries(struct s3_client *c, const struct bucket_object *obj, const char *dir)
{
	const char *slash = strrchr(obj->key, '/');
	int keydir = slash ? (int)(slash - obj->key + 1) : 0;
	char *ids = NULL;

	if (!obj->path || cut_archive_buildids(obj->path, &ids) < 0)
		return;
	for (const char *h = ids; *h; h += strlen(h) + 1) {
		char key[1024], dest[PATH_MAX], sub[PATH_MAX];
		struct stat st;

		snprintf(sub, sizeof(sub), "%s/.build-id", dir);
		mkdir(sub, 0700);
		snprintf(sub, sizeof(sub), "%s/.build-id/%.2s", dir, h);
		mkdir(sub, 0700);
		if (snprintf(dest, sizeof(dest), "%s/%s", sub, h + 2) >= (int)sizeof(dest) || lstat(dest, &st) == 0)
			continue;   /* from another file of the window */
		/* Room kept for "/kallsyms". */
		if (snprintf(key, sizeof(key) - 10, "%.*s.build-id/%.2s/%s", keydir, obj->key, h, h + 2) >=
			    (int)sizeof(key) - 10 ||
		    fetch_entry(c, key, dest, h) == 0 || mkdir(dest, 0700) < 0)
			continue;
		strcat(key, "/kallsyms");
		if (snprintf(sub, sizeof(sub), "%s/kallsyms", dest) >= (int)sizeof(sub) || fetch_entry(c, key, sub, "") < 0)
			rmdir(dest);
	}
	free(ids);
}

int bucket_fetch(const struct bucket_opts *o, uint64_t from_ns, uint64_t to_ns, const char *dir,
		 struct bucket_result *ret)
{
	struct bucket_result all = { 0 }, res = { 0 };
	struct s3_client *c = NULL;
	const char **hosts = NULL;
	size_t nh = 0;
	int r;

	if (from_ns > to_ns)
		return -EINVAL;
	r = open_bucket(o, &c);
	if (r < 0)
		return r;
	r = read_manifests(o, c, (const uint64_t[]){ from_ns, to_ns }, &all);
	if (r < 0)
		goto out;
	res.objs = calloc(all.nr + 1, sizeof(*res.objs));
	if (!res.objs) {
		r = -ENOMEM;
		goto out;
	}
	/* Manifests refused while reading (forged names, sizes) count as rejected. */
	res.nr_bad = all.nr_bad;
	for (size_t i = 0; i < all.nr; i++) {
		struct bucket_object *obj = &all.objs[i];

		if (!bucket_object_overlaps(obj, from_ns, to_ns))
			continue;
		if (!obj->uploaded) {
			res.nr_pending++;
			continue;
		}
		r = fetch_one(o, c, obj, dir);
		if (r == -ENOMEM)
			goto out;
		if (r < 0) {
			res.nr_bad++;
			continue;
		}
		if (o->sz > offsetof(struct bucket_opts, buildids) && o->buildids)
			fetch_entries(c, obj, dir);
		/* Moved over: the result owns it now. */
		res.objs[res.nr++] = *obj;
		memset(obj, 0, sizeof(*obj));
	}
	/* Gaps for every host that matched, with data in the window or not. */
	hosts = calloc(all.nr + 2, sizeof(*hosts));
	if (!hosts) {
		r = -ENOMEM;
		goto out;
	}
	if (o->host) {
		hosts[nh++] = o->host;
	} else {
		for (size_t i = 0; i < all.nr + res.nr; i++) {
			const char *h = i < all.nr ? all.objs[i].host : res.objs[i - all.nr].host;
			size_t j;

			if (!h)
				continue; /* moved to res: counted there */
			for (j = 0; j < nh && strcmp(hosts[j], h); j++)
				;
			if (j == nh)
				hosts[nh++] = h;
		}
		qsort(hosts, nh, sizeof(*hosts), cmp_str);
	}
	r = bucket_gaps(res.objs, res.nr, nh ? hosts : NULL, from_ns, to_ns, o->gap_min_ns, &res.gaps, &res.nr_gaps);
out:
	free(hosts);
	s3_client_free(c);
	/* Entries moved out were zeroed: exit frees only what stayed. */
	bucket_result_exit(&all);
	if (r < 0) {
		bucket_result_exit(&res);
		return r;
	}
	*ret = res;
	return 0;
}
