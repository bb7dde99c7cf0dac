/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The fleet keys of perfrecd's configuration (issue 8): [upload] upload-url,
 * upload-region, upload-credentials, upload-key; [output] label.NAME; [service]
 * metrics-listen, metrics-textfile; [record] max-overhead.  Included by
 * config.c only (so that the config fuzzer sees these keys too); the section
 * is not checked for these keys because each name is unique.
 */
#ifndef PERFRECD_CONFIG_FLEET_H
#define PERFRECD_CONFIG_FLEET_H

#include <arpa/inet.h>

/* "label.NAME": NAME is [A-Za-z0-9_]+ so it is a valid JSON and Prometheus name. */
static int fleet_set_label(struct config *c, const char *name, const char *v, char *err, size_t errlen)
{
	size_t n = strlen(name);
	char *s, **nl;

	if (!n || strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") != n) {
		snprintf(err, errlen, "label.%s: label names are letters, digits and '_'", name);
		return -EINVAL;
	}
	if (asprintf(&s, "%s=%s", name, v) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < c->nr_labels; i++)
		if (strncmp(c->labels[i], name, n) == 0 && c->labels[i][n] == '=') {
			free(c->labels[i]);
			c->labels[i] = s;
			return 0;
		}
	nl = realloc(c->labels, (c->nr_labels + 1) * sizeof(*nl));
	if (!nl) {
		free(s);
		return -ENOMEM;
	}
	c->labels = nl;
	c->labels[c->nr_labels++] = s;
	return 0;
}

static int fleet_set_opt_string(char **dst, const char *v)
{
	if (!*v) {
		free(*dst);
		*dst = NULL;
		return 0;
	}
	return set_string(dst, v);
}

/* Returns -ENOENT for a key that is not one of these. */
static int config_set_fleet(struct config *c, const char *section, const char *key, const char *v,
			    char *err, size_t errlen)
{
	/* Each in the section the documentation puts it in, like every other key. */
#define IN(s, k) (strcmp(section, s) == 0 && strcmp(key, k) == 0)
	if (strcmp(section, "output") == 0 && strncmp(key, "label.", 6) == 0)
		return fleet_set_label(c, key + 6, v, err, errlen);
	if (IN("upload", "upload-url")) {
		if (*v && strncmp(v, "http://", 7) != 0 && strncmp(v, "https://", 8) != 0) {
			snprintf(err, errlen, "upload-url: '%s' is not an http:// or https:// URL", v);
			return -EINVAL;
		}
		return fleet_set_opt_string(&c->upload_url, v);
	}
	if (IN("upload", "upload-region"))
		return fleet_set_opt_string(&c->upload_region, v);
	if (IN("upload", "upload-credentials"))
		return fleet_set_opt_string(&c->upload_credentials, v);
	if (IN("upload", "upload-key")) {
		const char *p = v;

		/* Only the known placeholders, so a typo fails at start, not per file. */
		while ((p = strchr(p, '{'))) {
			if (strncmp(p, "{host}", 6) && strncmp(p, "{date}", 6) && strncmp(p, "{file}", 6) &&
			    strncmp(p, "{prefix}", 8)) {
				snprintf(err, errlen, "upload-key: unknown placeholder in '%s' (use {host} {date} {file} {prefix})", v);
				return -EINVAL;
			}
			p++;
		}
		if (!strstr(v, "{file}") && *v) {
			snprintf(err, errlen, "upload-key: '%s' lacks {file}, so every file would get the same key", v);
			return -EINVAL;
		}
		return fleet_set_opt_string(&c->upload_key, v);
	}
	if (IN("service", "metrics-listen")) {
		const char *colon = strrchr(v, ':');
		char host[64];
		struct in_addr a;
		char *end;
		long port;

		if (!*v)
			return fleet_set_opt_string(&c->metrics_listen, v);
		if (!colon || (size_t)(colon - v) >= sizeof(host))
			goto bad_listen;
		memcpy(host, v, (size_t)(colon - v));
		host[colon - v] = 0;
		port = strtol(colon + 1, &end, 10);
		if (*end || port < 1 || port > 65535 || inet_pton(AF_INET, host, &a) != 1 ||
		    (ntohl(a.s_addr) >> 24) != 127)
			goto bad_listen;
		return fleet_set_opt_string(&c->metrics_listen, v);
bad_listen:
		snprintf(err, errlen, "metrics-listen: '%s' is not a loopback 127.x.y.z:PORT", v);
		return -EINVAL;
	}
	if (IN("service", "metrics-textfile")) {
		if (*v && v[0] != '/') {
			snprintf(err, errlen, "metrics-textfile: '%s' is not an absolute path", v);
			return -EINVAL;
		}
		return fleet_set_opt_string(&c->metrics_textfile, v);
	}
	if (IN("record", "max-overhead")) {
		char *end;
		double d;

		if (!*v) {
			c->max_overhead = 0;
			return 0;
		}
		errno = 0;
		d = strtod(v, &end);
		if (end != v && *end == '%' && !end[1] && errno == 0 && d > 0 && d <= 100) {
			c->max_overhead = d / 100;
			return 0;
		}
		snprintf(err, errlen, "max-overhead: '%s' is not a percentage above 0 and at most 100 (like 1%%)", v);
		return -EINVAL;
	}
#undef IN
	return -ENOENT;
}

#endif
