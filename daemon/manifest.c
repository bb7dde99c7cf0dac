// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Manifest writer.  The JSON is built with json-c and written to
 * "<file>.json.tmp", fsynced and renamed, so a consumer (or the uploader)
 * never sees half a manifest.  Host identity comes from /etc/machine-id and
 * /proc/sys/kernel/random/boot_id; the kernel release from uname().
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>
#include <openssl/evp.h>

#include <perfrec/pdreader.h>

#include "digest.h"
#include "fsutil.h"
#include "manifest.h"
#include "manifest-cgroup.h"

int manifest_sha256(const char *path, char hex[65], uint64_t *ret_size,
		    void (*progress)(void *ctx), void *progress_ctx)
{
	EVP_MD_CTX *ctx = NULL;
	uint64_t size;
	int fd = open(path, O_RDONLY | O_CLOEXEC), r;

	if (fd < 0)
		return -errno;
	ctx = EVP_MD_CTX_new();
	if (!ctx || !EVP_DigestInit_ex(ctx, EVP_sha256(), NULL)) {
		r = -ENOMEM;
		goto out;
	}
	r = digest_fd(fd, &ctx, 1, &size, progress, progress_ctx);
	if (r < 0)
		goto out;
	r = digest_final_hex(ctx, hex, 65);
	if (r == 0)
		*ret_size = size;
out:
	EVP_MD_CTX_free(ctx);
	close(fd);
	return r;
}

static int fsync_dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir = slash ? strndup(path, (size_t)(slash - path)) : strdup(".");
	int fd, r = 0;

	if (!dir)
		return -ENOMEM;
	fd = open(*dir ? dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(dir);
	if (fd < 0)
		return -errno;
	if (fsync(fd) < 0)
		r = -errno;
	close(fd);
	return r;
}

/* First line of a small file, or NULL. */
static json_object *first_line(const char *path)
{
	char buf[128];
	FILE *f = fopen(path, "re");

	if (!f)
		return NULL;
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return NULL;
	}
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
	return json_object_new_string(buf);
}

static json_object *utc(uint64_t ns)
{
	char buf[40], frac[16];
	time_t t = (time_t)(ns / 1000000000ULL);
	struct tm tm;

	if (!ns)
		return NULL;
	gmtime_r(&t, &tm);
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(frac, sizeof(frac), ".%06" PRIu64 "Z", (uint64_t)(ns % 1000000000ULL / 1000));
	strncat(buf, frac, sizeof(buf) - strlen(buf) - 1);
	return json_object_new_string(buf);
}

/* The recorded events, each with its frequency (as recorded and configured) or period. */
static json_object *events_json(const struct manifest_info *mi)
{
	const struct config *c = mi->cfg;
	json_object *evs = json_object_new_array();

	for (size_t i = 0; evs && c && i < c->nr_events; i++) {
		json_object *e = json_object_new_object();

		json_object_object_add(e, "name", json_object_new_string(c->events[i]));
		if (c->freq) {
			json_object_object_add(e, "frequency", json_object_new_uint64(mi->freq ? mi->freq : c->freq));
			json_object_object_add(e, "configured_frequency", json_object_new_uint64(c->freq));
			if (mi->freq_min)
				json_object_object_add(e, "min_frequency", json_object_new_uint64(mi->freq_min));
			if (mi->freq_max)
				json_object_object_add(e, "max_frequency", json_object_new_uint64(mi->freq_max));
		} else {
			json_object_object_add(e, "period", json_object_new_uint64(c->period));
		}
		json_object_array_add(evs, e);
	}
	return evs;
}

static json_object *cpus_json(const struct manifest_info *mi)
{
	json_object *cpus = json_object_new_array();

	for (size_t i = 0; cpus && i < mi->nr_cpus; i++) {
		json_object *o = json_object_new_object();

		json_object_object_add(o, "cpu", json_object_new_int(mi->cpus[i].cpu));
		json_object_object_add(o, "samples", json_object_new_uint64(mi->cpus[i].samples));
		json_object_object_add(o, "lost", json_object_new_uint64(mi->cpus[i].lost));
		json_object_object_add(o, "dropped", json_object_new_uint64(mi->cpus[i].dropped));
		json_object_array_add(cpus, o);
	}
	return cpus;
}

/* The configured "name=value" labels as an object. */
static json_object *labels_json(const struct config *c)
{
	json_object *labels = json_object_new_object();

	for (size_t i = 0; labels && c && i < c->nr_labels; i++) {
		const char *eq = strchr(c->labels[i], '=');
		char *name = eq ? strndup(c->labels[i], (size_t)(eq - c->labels[i])) : NULL;

		if (name)
			json_object_object_add(labels, name, json_object_new_string(eq + 1));
		free(name);
	}
	return labels;
}

/*
 * @text and a newline into "<path>.json", atomically: "<path>.json.tmp",
 * fsync, rename, fsync of the directory.  It gets the mode, owner and group
 * of the data file at @like (0640 as the data, not 0644: a manifest names
 * the host, its cgroups and its labels); made new, never through a link.
 * 0 or -errno.
 */
static int write_json_file(const char *path, const char *like, const char *text)
{
	char *tmp = NULL, *dst = NULL;
	int r, fd = -1;

	if (asprintf(&tmp, "%s.json.tmp", path) < 0) {
		tmp = NULL;
		r = -ENOMEM;
		goto out;
	}
	if (asprintf(&dst, "%s.json", path) < 0) {
		dst = NULL;
		r = -ENOMEM;
		goto out;
	}
	/* One left by a crash is ours (the directory is the daemon's): made anew. */
	if (unlink(tmp) < 0 && errno != ENOENT) {
		r = -errno;
		goto out;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		r = -errno;
		goto out;
	}
	r = copy_access(fd, like);
	if (r == 0)
		r = write_all(fd, text, strlen(text));
	if (r == 0)
		r = write_all(fd, "\n", 1);
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	if (r == 0 && rename(tmp, dst) < 0)
		r = -errno;
	if (r < 0) {
		unlink(tmp);
		goto out;
	}
	/* The data file is renamed next: its manifest's name must be durable first. */
	r = fsync_dir_of(dst);
out:
	if (fd >= 0)
		close(fd);
	free(tmp);
	free(dst);
	return r;
}

int manifest_write(const struct manifest_info *mi)
{
	json_object *root = json_object_new_object(), *cgroups = NULL;
	const char *base = strrchr(mi->path, '/');
	const struct config *c = mi->cfg;
	char hex[65] = "";
	struct utsname un;
	uint64_t size = 0;
	int r;

	if (!root)
		return -ENOMEM;
	r = manifest_sha256(mi->data_path ? mi->data_path : mi->path, hex, &size, mi->progress,
			    mi->progress_ctx);
	if (r < 0)
		goto out;
	json_object_object_add(root, "file", json_object_new_string(base ? base + 1 : mi->path));
	json_object_object_add(root, "host", json_object_new_string(mi->host));
	json_object_object_add(root, "machine_id", first_line("/etc/machine-id"));
	json_object_object_add(root, "boot_id", first_line("/proc/sys/kernel/random/boot_id"));
	if (uname(&un) == 0)
		json_object_object_add(root, "kernel", json_object_new_string(un.release));
	json_object_object_add(root, "start", utc(mi->start_wall_ns));
	json_object_object_add(root, "end", utc(mi->end_wall_ns));
	json_object_object_add(root, "recovered", json_object_new_boolean(mi->recovered));
	json_object_object_add(root, "events", events_json(mi));
	json_object_object_add(root, "callchain", json_object_new_boolean(c && c->callchain));
	if (c && c->callchain)
		json_object_object_add(root, "callchain_mode", json_object_new_string(c->dwarf ? "dwarf" : "fp"));
	if (c && c->callchain && c->dwarf)
		json_object_object_add(root, "stack_size", json_object_new_uint64(c->stack_size));
	if (c && c->callchain && c->dwarf) {
		/* Where the stacks were unwound: in this file's reader, or already by perfrecd. */
		struct json_object *u = json_object_new_object();

		json_object_object_add(u, "mode", json_object_new_string(c->unwind_host ? "host" : "file"));
		if (mi->unwind) {
			json_object_object_add(u, "samples", json_object_new_uint64(mi->unwind->samples));
			json_object_object_add(u, "unwound", json_object_new_uint64(mi->unwind->unwound));
			json_object_object_add(u, "behind", json_object_new_uint64(mi->unwind->behind));
			json_object_object_add(u, "dropped", json_object_new_uint64(mi->unwind->dropped));
			json_object_object_add(u, "stacks_trimmed", json_object_new_uint64(mi->unwind->trimmed));
			json_object_object_add(u, "stack_trim_missed", json_object_new_uint64(mi->unwind->trim_missed));
		}
		json_object_object_add(root, "unwind", u);
	}
	json_object_object_add(root, "cpus", cpus_json(mi));
	json_object_object_add(root, "samples", json_object_new_uint64(mi->samples));
	json_object_object_add(root, "lost", json_object_new_uint64(mi->lost));
	/* Part of lost: samples recorded but refused by a full disk (LOST records in the file). */
	json_object_object_add(root, "dropped", json_object_new_uint64(mi->dropped));
	json_object_object_add(root, "size", json_object_new_uint64(size));
	json_object_object_add(root, "sha256", json_object_new_string(hex));
	/*
	 * As counted while the file was written, else from the file; null
	 * when neither works: unknown, not "none".
	 */
	if ((!mi->cgroups || cgroup_counts_json(mi->cgroups, &cgroups) < 0) &&
	    manifest_cgroups(mi->data_path ? mi->data_path : mi->path, &cgroups) < 0)
		cgroups = NULL;
	json_object_object_add(root, "cgroups", cgroups);
	json_object_object_add(root, "labels", labels_json(c));

	r = write_json_file(mi->path, mi->data_path ? mi->data_path : mi->path,
			    json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY |
								 JSON_C_TO_STRING_NOSLASHESCAPE));
out:
	json_object_put(root);
	return r;
}

int manifest_write_from_file(const struct manifest_info *mi)
{
	struct perfrec_pdreader_opts ro = { .sz = sizeof(ro) };
	const struct perfrec_pdreader_stats *st;
	struct manifest_info m = *mi;
	struct manifest_cpu *cpus = NULL;
	struct perfrec_pdreader *rd = NULL;
	const void *cd;
	size_t cdlen;
	int r;

	r = perfrec_pdreader__open(mi->data_path ? mi->data_path : mi->path, &ro, &rd);
	if (r < 0)
		return r;
	r = perfrec_pdreader__verify(rd);
	if (r < 0)
		goto out;
	st = perfrec_pdreader__stats(rd);
	m.samples = st->nr_samples;
	m.lost = st->lost + st->lost_samples;
	m.freq = m.freq_min = m.freq_max = 0;
	m.cgroups = NULL;
	m.start_wall_ns = m.end_wall_ns = 0;
	/* HEADER_CLOCK_DATA: version, clockid, wall ns, clock ns at the file's start. */
	if (perfrec_pdreader__feature(rd, PERFREC_FEAT_CLOCK_DATA, &cd, &cdlen) == 0 && cdlen >= 24) {
		uint64_t wall, clk;

		memcpy(&wall, (const char *)cd + 8, 8);
		memcpy(&clk, (const char *)cd + 16, 8);
		m.start_wall_ns = wall;
		if (st->has_time && st->last_time >= clk)
			m.end_wall_ns = wall + (st->last_time - clk);
		else
			m.end_wall_ns = wall;
	}
	if (st->nr_cpus) {
		size_t n = 0;

		cpus = calloc(st->nr_cpus, sizeof(*cpus));
		if (!cpus) {
			r = -ENOMEM;
			goto out;
		}
		for (size_t i = 0; i < st->nr_cpus; i++)
			if (st->samples_per_cpu[i])
				cpus[n++] = (struct manifest_cpu){ .cpu = (int)i, .samples = st->samples_per_cpu[i] };
		m.cpus = cpus;
		m.nr_cpus = n;
	} else {
		m.cpus = NULL;
		m.nr_cpus = 0;
	}
	perfrec_pdreader__free(rd);
	rd = NULL;
	r = manifest_write(&m);
out:
	perfrec_pdreader__free(rd);
	free(cpus);
	return r;
}

int manifest_read_sha256(const char *path, char hex[65])
{
	json_object *root, *v;
	char *jp;
	int r = -EBADMSG;

	if (asprintf(&jp, "%s.json", path) < 0)
		return -ENOMEM;
	root = json_object_from_file(jp);
	free(jp);
	if (!root)
		return errno == ENOENT ? -ENOENT : -EBADMSG;
	if (json_object_object_get_ex(root, "sha256", &v) && json_object_is_type(v, json_type_string) &&
	    json_object_get_string_len(v) == 64) {
		memcpy(hex, json_object_get_string(v), 65);
		r = 0;
	}
	json_object_put(root);
	return r;
}
