// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Tests of daemon/digest.c: one read of a file feeds several digests, whose
 * hex matches the published test vectors and OpenSSL's one-shot digest of
 * the same bytes; progress is reported every 64 chunks of 64 KiB; the fd's
 * offset is left alone; errors come back as -errno.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "digest.h"

/* A temporary file holding @len bytes of @data, opened read-only. */
static int file_with(const void *data, size_t len)
{
	char path[] = "/tmp/perfrec-test-digest.XXXXXX";
	int fd = mkstemp(path);

	cr_assert(fd >= 0);
	cr_assert_eq(write(fd, data, len), (ssize_t)len);
	unlink(path);
	return fd;
}

static EVP_MD_CTX *ctx_of(const EVP_MD *md)
{
	EVP_MD_CTX *c = EVP_MD_CTX_new();

	cr_assert(c && EVP_DigestInit_ex(c, md, NULL));
	return c;
}

static void count(void *ctx)
{
	(*(int *)ctx)++;
}

/* FIPS 180-2 and RFC 1321 vectors for "abc" and the empty message. */
static const struct {
	const char *msg, *sha256, *md5;
} vectors[] = {
	{ "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
	  "900150983cd24fb0d6963f7d28e17f72" },
	{ "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
	  "d41d8cd98f00b204e9800998ecf8427e" },
};

Test(digest, one_read_feeds_every_digest_with_the_known_vectors)
{
	for (size_t v = 0; v < sizeof(vectors) / sizeof(vectors[0]); v++) {
		EVP_MD_CTX *ctxs[2] = { ctx_of(EVP_sha256()), ctx_of(EVP_md5()) };
		char sha[DIGEST_HEX_MAX], md5[DIGEST_HEX_MAX];
		uint64_t size = 99;
		int fd = file_with(vectors[v].msg, strlen(vectors[v].msg));

		cr_assert_eq(digest_fd(fd, ctxs, 2, &size, NULL, NULL), 0);
		cr_assert_eq(size, strlen(vectors[v].msg));
		cr_assert_eq(digest_final_hex(ctxs[0], sha, sizeof(sha)), 0);
		cr_assert_eq(digest_final_hex(ctxs[1], md5, sizeof(md5)), 0);
		cr_assert_str_eq(sha, vectors[v].sha256, "\"%s\"", vectors[v].msg);
		cr_assert_str_eq(md5, vectors[v].md5, "\"%s\"", vectors[v].msg);
		EVP_MD_CTX_free(ctxs[0]);
		EVP_MD_CTX_free(ctxs[1]);
		close(fd);
	}
}

Test(digest, large_file_matches_one_shot_digest_reports_progress_keeps_offset)
{
	/* 144 chunks of 64 KiB and a partial one: two progress calls. */
	size_t len = 144 * 65536 + 12345;
	unsigned char *data = malloc(len), md[EVP_MAX_MD_SIZE];
	char want[DIGEST_HEX_MAX], got[DIGEST_HEX_MAX];
	unsigned int mdlen = 0;
	EVP_MD_CTX *ctx = ctx_of(EVP_sha256());
	uint64_t size = 0;
	int fd, calls = 0;

	cr_assert(data);
	for (size_t i = 0; i < len; i++)
		data[i] = (unsigned char)(i * 2654435761u >> 13);
	cr_assert(EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL));
	for (unsigned int i = 0; i < mdlen; i++)
		sprintf(want + 2 * i, "%02x", md[i]);
	fd = file_with(data, len);
	cr_assert_eq(lseek(fd, 7, SEEK_SET), 7);

	cr_assert_eq(digest_fd(fd, &ctx, 1, &size, count, &calls), 0);
	cr_assert_eq(size, len);
	cr_assert_eq(calls, 2);
	cr_assert_eq(lseek(fd, 0, SEEK_CUR), 7, "the fd's offset moved");
	cr_assert_eq(digest_final_hex(ctx, got, sizeof(got)), 0);
	cr_assert_str_eq(got, want);
	EVP_MD_CTX_free(ctx);
	free(data);
	close(fd);
}

Test(digest, errors_are_negative_errno)
{
	EVP_MD_CTX *ctx = ctx_of(EVP_sha256());
	char small[64] = "untouched";
	uint64_t size = 5;
	int dfd = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	cr_assert(dfd >= 0);
	cr_assert_eq(digest_fd(dfd, &ctx, 1, &size, NULL, NULL), -EISDIR);
	cr_assert_eq(size, 5, "the size was written on failure");
	cr_assert_eq(digest_fd(-1, &ctx, 1, &size, NULL, NULL), -EBADF);
	/* A SHA-256 needs 65 bytes of hex with its NUL. */
	cr_assert_eq(digest_final_hex(ctx, small, sizeof(small)), -ENOBUFS);
	cr_assert_str_eq(small, "untouched");
	EVP_MD_CTX_free(ctx);
	close(dfd);
}
