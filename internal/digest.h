/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Message digests of whole files, for the manifest's SHA-256 and the
 * uploader's Content-MD5 and x-amz-content-sha256: one read of the file
 * feeds any number of OpenSSL digests, and a finished digest is spelled in
 * lowercase hex.
 */
#ifndef PERFREC_DIGEST_H
#define PERFREC_DIGEST_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/evp.h>

/* Room for the hex of any digest OpenSSL knows, with its NUL. */
#define DIGEST_HEX_MAX (2 * EVP_MAX_MD_SIZE + 1)

/*
 * Feed the whole of @fd, from offset 0 (pread: the fd's offset is neither
 * used nor moved), to each of the @n initialized @ctxs, calling @progress
 * (if not NULL) every few MiB so a caller can keep up with other work.
 * The file's size in bytes into @ret_size.  0 or -errno.
 */
int digest_fd(int fd, EVP_MD_CTX *const *ctxs, size_t n, uint64_t *ret_size,
	      void (*progress)(void *ctx), void *progress_ctx);

/*
 * Finish @ctx and write its digest as lowercase hex into @hex, which holds
 * @hexlen bytes (DIGEST_HEX_MAX fits any; 65 a SHA-256).  0, or -ENOBUFS
 * when @hex is too small (nothing written), -EIO when OpenSSL fails.
 */
int digest_final_hex(EVP_MD_CTX *ctx, char *hex, size_t hexlen);

#endif
