/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Shipping published files to S3-compatible object storage.  One thread
 * with its own curl handle PUTs each published file (and its JSON manifest)
 * through internal/s3.c (AWS SigV4 signing, Content-MD5 and the payload's SHA-256),
 * retrying with exponential backoff and jitter.  The spool is the output
 * directory itself: a published file without a "<file>.uploaded" marker is
 * still to be shipped, so a restart finds the backlog again.
 */
#ifndef PERFRECD_UPLOAD_H
#define PERFRECD_UPLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

struct uploader;

struct upload_stats {
	uint64_t successes;      /* objects stored (data files and manifests) */
	uint64_t failures;       /* failed attempts (each retry counts) */
	uint64_t backlog;        /* files waiting, including the one in flight */
	uint64_t bytes;          /* payload bytes stored */
	uint64_t removed_unsent; /* removed locally before upload (disk limit) */
};

/*
 * Start the uploader for @cfg (upload-url set) and enqueue every published
 * file in the output directory that has no ".uploaded" marker.  @host and
 * what the thread needs of @cfg are copied: @cfg is not read after this
 * (a reload frees its strings).  Returns 0 and *ret, or -errno with the
 * reason logged.
 */
int uploader_new(const struct config *cfg, const char *host, struct uploader **ret);
/*
 * A reload's buildid-cache= (NULL: none), copied: the files shipped from
 * now on send their build-id entries from it (see ship() for those queued
 * before).  0 or -ENOMEM (the previous cache stays).
 */
int uploader_set_buildid_cache(struct uploader *u, const char *dir);
/* Queue a published file (path is copied).  Never blocks on the network. */
void uploader_enqueue(struct uploader *u, const char *path);
/* NULL-terminated, heap-allocated copy of the paths not yet uploaded
 * (free each and the array). */
char **uploader_pending(struct uploader *u);
/* Drop queued paths whose file is gone (removed by the disk limit before
 * they were shipped): each is counted and logged. */
void uploader_forget_missing(struct uploader *u);
void uploader_get_stats(struct uploader *u, struct upload_stats *ret);
/* Stop the thread (an upload in flight is aborted; it stays in the spool). */
void uploader_free(struct uploader *u);

#endif
