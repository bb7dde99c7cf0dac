// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * What a killed run left in the output directory, put right at start
 * (leftovers_recover()): publications cut between manifest and
 * rename are completed, NAME.data.tmp files no live writer holds are
 * recovered (empty ones removed), missing manifests are written.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <perfrec/perfrec.h>

#include "config.h"
#include "log.h"
#include "manifest.h"
#include "leftovers.h"

/* Whether @name is one of ours ending in @suffix: "PREFIX-...SUFFIX". */
static bool our_file(const struct config *c, const char *name, const char *suffix)
{
	size_t plen = strlen(c->prefix), len = strlen(name), slen = strlen(suffix);

	return len > plen + 1 + slen && strncmp(name, c->prefix, plen) == 0 && name[plen] == '-' &&
	       strcmp(name + len - slen, suffix) == 0;
}


/*
 * Publication of @final stopped between its manifest and its rename: the
 * finished "@final.tmp" is renamed when its hash is the manifest's.
 * 1 when done, 0 when the manifest does not match (removed: the .tmp is
 * recovered instead), -errno on failure.
 */
static int complete_publication(const char *final, const char *tmp)
{
	char want[65], have[65];
	uint64_t size;
	int r;

	r = manifest_read_sha256(final, want);
	if (r == -ENOENT)
		return 0;
	if (r == 0)
		r = manifest_sha256(tmp, have, &size, NULL, NULL);
	if (r == 0 && strcmp(want, have) == 0) {
		if (rename(tmp, final) < 0)
			return -errno;
		return 1;
	}
	/* Not this file's manifest (or an unreadable one): it would lie. */
	{
		char *jp;

		if (asprintf(&jp, "%s.json", final) < 0)
			return -ENOMEM;
		unlink(jp);
		free(jp);
	}
	return 0;
}

/* A manifest read from the file itself, for files whose recording state is gone. */
static int manifest_from_file(const struct leftovers *lo, const char *path, bool recovered)
{
	struct manifest_info mi = {
		.path = path, .host = lo->hostname, .cfg = lo->cfg, .recovered = recovered,
	};
	int r = manifest_write_from_file(&mi);

	if (r < 0)
		log_error("Cannot write the manifest of %s: %s", path, strerror(-r));
	return r;
}

/*
 * Recover one "NAME.data.tmp" a killed run left: a .tmp with no record
 * (killed right after it was created) holds nothing and is removed; any
 * other is finished into NAME-recovered.data, its manifest read from the
 * result.  The source goes only once the result is published.
 */
static int recover_one(struct leftovers *lo, const char *src, const char *base, size_t baselen)
{
	struct perfrec_recover_opts ro = { .sz = sizeof(ro), .argc = lo->argc, .argv = lo->argv };
	struct perfrec_recover_stats st = { 0 };
	char *dst = NULL;
	struct stat sb;
	int r;

	/* Shorter than a header: created, never written (a kill, or a full disk). */
	if (stat(src, &sb) == 0 && (size_t)sb.st_size < sizeof(struct perfrec_file_header)) {
		log_notice("Removed %s: it holds no record (%lld bytes)", src, (long long)sb.st_size);
		unlink(src);
		return 0;
	}
	if (asprintf(&dst, "%s/%.*s-recovered.data", lo->cfg->directory, (int)baselen, base) < 0)
		return -ENOMEM;
	r = perfrec_recover__file(src, dst, &ro, &st);
	if (r == -ENODATA) {
		log_notice("Removed %s: it holds no record (its run stopped right after creating it)", src);
		unlink(src);
		free(dst);
		return 0;
	}
	if (r < 0) {
		/* The disk is full (a start on a full disk): try again when it has room. */
		bool later = r == -ENOSPC || r == -EDQUOT;

		log_error("Cannot recover %s: %s; leaving it in place%s", src, strerror(-r),
			  later ? " and trying again when the disk has room" : "");
		lo->pending |= later;
		free(dst);
		return r;
	}
	/* The manifest goes with the data; a crash here is finished by the orphan pass. */
	manifest_from_file(lo, dst, true);
	unlink(src);
	log_notice("Recovered %s from an interrupted run: %" PRIu64 " records, %" PRIu64
		   " samples, %" PRIu64 " bytes after the last whole record dropped",
		   dst, st.records, st.samples, st.dropped_bytes);
	lo->published(lo->userdata, dst, true);
	free(dst);
	return 1;
}

/*
 * What a killed run (or a full disk) left in the directory, put right:
 * stale "*.json.tmp" manifests removed; a publication cut between manifest
 * and rename completed; every other "NAME.data.tmp" not held by a live
 * writer recovered into NAME-recovered.data (or removed when empty); and a
 * published file without a manifest gets one read from the file.  A .tmp
 * the disk has no room to recover stays, and lo->pending says
 * to call again later (manager.c, once a file could be written).  Returns
 * how many files were published.
 */
int leftovers_recover(struct leftovers *lo)
{
	const struct config *c = lo->cfg;
	struct dirent *de;
	DIR *d;
	int n = 0;

	lo->pending = false;

	for (int pass = 0; pass < 2; pass++) {
		d = opendir(c->directory);
		if (!d)
			return -errno;
		while ((de = readdir(d))) {
			size_t len = strlen(de->d_name);
			char *path = NULL, *final = NULL;
			int r;

			if (asprintf(&path, "%s/%s", c->directory, de->d_name) < 0) {
				closedir(d);
				return -ENOMEM;
			}
			if (pass == 0 && our_file(c, de->d_name, ".json.tmp")) {
				log_notice("Removed %s: a manifest an interrupted run did not finish", path);
				unlink(path);
			} else if (pass == 0 && (our_file(c, de->d_name, "-recovered.data.tmp") ||
						 (strstr(de->d_name, ".data.recovering-") && our_file(c, de->d_name, "")))) {
				/* A recovery cut short; its source is still there. */
				unlink(path);
			} else if (pass == 0 && our_file(c, de->d_name, ".data.tmp") &&
				   perfrec_pdwriter__in_use(path) == 0) {
				/* (a .tmp a live writer holds, ours or another's, is left alone) */
				final = strndup(path, strlen(path) - 4);
				r = final ? complete_publication(final, path) : -ENOMEM;
				lo->pending |= r == -ENOSPC || r == -EDQUOT;
				if (r > 0) {
					log_notice("Published %s, whose publication an interrupted run did not finish",
						   final);
					lo->published(lo->userdata, final, false);
					n++;
				} else if (r == 0 && recover_one(lo, path, de->d_name, len - 9) > 0) {
					n++;
				}
			} else if (pass == 1 && our_file(c, de->d_name, ".data")) {
				/* A file published without its manifest (a run that died in between). */
				if (asprintf(&final, "%s.json", path) >= 0 && access(final, F_OK) < 0 &&
				    errno == ENOENT && manifest_from_file(lo, path, false) == 0)
					log_notice("Wrote the missing manifest of %s", path);
			}
			free(final);
			free(path);
		}
		closedir(d);
	}
	return n;
}
