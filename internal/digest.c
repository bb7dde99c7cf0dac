// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Digests of whole files (digest.h).  Reads go in 64 KiB chunks with
 * pread(), so the caller's file offset is left alone and the same fd can be
 * handed to libcurl afterwards.
 */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "digest.h"

/* 64 chunks of 64 KiB: ~3 ms of hashing between two calls of the progress callback. */
#define CHUNK (64 * 1024)
#define PROGRESS_CHUNKS 64

int digest_fd(int fd, EVP_MD_CTX *const *ctxs, size_t n, uint64_t *ret_size,
	      void (*progress)(void *ctx), void *progress_ctx)
{
	unsigned char buf[CHUNK];
	unsigned int chunks = 0;
	uint64_t size = 0;
	ssize_t got;

	while ((got = pread(fd, buf, sizeof(buf), (off_t)size)) != 0) {
		if (got < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (size_t i = 0; i < n; i++)
			if (!EVP_DigestUpdate(ctxs[i], buf, (size_t)got))
				return -EIO;
		size += (uint64_t)got;
		if (progress && ++chunks % PROGRESS_CHUNKS == 0)
			progress(progress_ctx);
	}
	*ret_size = size;
	return 0;
}

int digest_final_hex(EVP_MD_CTX *ctx, char *hex, size_t hexlen)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int len = 0;

	if ((size_t)EVP_MD_CTX_get_size(ctx) * 2 + 1 > hexlen)
		return -ENOBUFS;
	if (!EVP_DigestFinal_ex(ctx, md, &len))
		return -EIO;
	for (unsigned int i = 0; i < len; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	hex[2 * len] = 0;
	return 0;
}
