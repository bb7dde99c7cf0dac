// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A ustar writer: each member a 512-byte header (POSIX.1-1988 ustar, which
 * GNU tar, bsdtar, busybox and Python's tarfile all read) and its data
 * padded to 512 bytes, the archive ended by two zero blocks.  Regular
 * files (the build-id cache entries and the perf.data an archive carries)
 * and relative symbolic links that stay inside the archive (the
 * perfrec-jit/NAME/BUILDID links hotspot's perfparser finds JIT images by).
 * Owner 0, no user or group name: whoever unpacks it owns what comes out.
 *
 * Compression goes through zlib, which perfrecctl links already for pprof:
 * gzip is on every system `tar xf` runs on, where zstd or bzip2 may not
 * be.  Uncompressed, zlib's transparent mode ("T") writes the bytes as
 * they are, so both forms take the same path.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "tar.h"

#define BLOCK 512
#define NAME_LEN 100
#define PREFIX_LEN 155
/* The size field's 11 octal digits. */
#define MAX_SIZE ((1ULL << 33) - 1)

struct tar {
	gzFile gz;
	int err;              /* the first failure, -errno */
};

struct ustar {
	char name[NAME_LEN], mode[8], uid[8], gid[8], size[12], mtime[12], chksum[8], typeflag;
	char linkname[100], magic[6], version[2], uname[32], gname[32], devmajor[8], devminor[8];
	char prefix[PREFIX_LEN], pad[12];
};
_Static_assert(sizeof(struct ustar) == BLOCK, "a ustar header is one block");

int tar_open(int fd, bool gzip, struct tar **ret)
{
	struct tar *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	t->gz = gzdopen(fd, gzip ? "wb6" : "wbT");
	if (!t->gz) {
		free(t);
		return -ENOMEM;
	}
	*ret = t;
	return 0;
}

bool tar_name_ok(const char *name)
{
	size_t len = strlen(name);
	const char *c = name;

	if (!len || len > NAME_LEN + PREFIX_LEN || name[0] == '/')
		return false;
	for (const char *p = name; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return false;
	/* Each component: not empty (nor the last: no trailing '/'), not "." nor "..". */
	for (;;) {
		const char *s = strchr(c, '/');
		size_t n = s ? (size_t)(s - c) : strlen(c);

		if (!n || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		if (!s)
			break;
		c = s + 1;
	}
	if (len <= NAME_LEN)
		return true;
	/* Split at a '/' with at most 155 bytes before it and 100 after. */
	for (size_t i = len - 1; i > 0; i--)
		if (name[i] == '/' && i <= PREFIX_LEN && len - i - 1 <= NAME_LEN)
			return true;
	return false;
}

static int put(struct tar *t, const void *buf, size_t len)
{
	if (t->err)
		return t->err;
	if (len && gzwrite(t->gz, buf, (unsigned)len) != (int)len)
		t->err = errno ? -errno : -EIO;
	return t->err;
}

/* @v in @len - 1 octal digits and a NUL, as ustar's numeric fields are. */
static void octal(char *f, size_t len, uint64_t v)
{
	f[len - 1] = 0;
	for (size_t i = len - 1; i > 0; i--, v >>= 3)
		f[i - 1] = (char)('0' + (v & 7));
}

static void header(struct ustar *h, const char *name, mode_t mode, uint64_t size, time_t mtime, char type,
		   const char *link)
{
	size_t len = strlen(name);
	unsigned sum = 0;

	memset(h, 0, sizeof(*h));
	if (len <= NAME_LEN) {
		memcpy(h->name, name, len);
	} else {
		size_t i = len - 1;

		while (!(name[i] == '/' && i <= PREFIX_LEN && len - i - 1 <= NAME_LEN))
			i--;   /* tar_name_ok() said there is one */
		memcpy(h->prefix, name, i);
		memcpy(h->name, name + i + 1, len - i - 1);
	}
	octal(h->mode, sizeof(h->mode), mode & 07777);
	octal(h->uid, sizeof(h->uid), 0);
	octal(h->gid, sizeof(h->gid), 0);
	octal(h->size, sizeof(h->size), size);
	octal(h->mtime, sizeof(h->mtime), mtime < 0 ? 0 : (uint64_t)mtime & MAX_SIZE);
	h->typeflag = type;
	if (link)
		memcpy(h->linkname, link, strlen(link));   /* tar_link_ok(): it fits */
	memcpy(h->magic, "ustar", 6);
	memcpy(h->version, "00", 2);
	/* The checksum is taken with its own field as spaces. */
	memset(h->chksum, ' ', sizeof(h->chksum));
	for (size_t i = 0; i < sizeof(*h); i++)
		sum += ((unsigned char *)h)[i];
	octal(h->chksum, sizeof(h->chksum) - 1, sum);   /* six digits, NUL, and the space stays */
}

int tar_add(struct tar *t, const char *name, int fd, mode_t mode, time_t mtime)
{
	static const char zero[BLOCK];
	char buf[65536];
	struct ustar h;
	struct stat st;
	uint64_t left;

	if (t->err)
		return t->err;
	if (!tar_name_ok(name))
		return -EINVAL;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if ((uint64_t)st.st_size > MAX_SIZE)
		return -EFBIG;
	header(&h, name, mode, (uint64_t)st.st_size, mtime, '0', NULL);
	if (put(t, &h, sizeof(h)) < 0)
		return t->err;
	/* The size is in the header already: a file that changes length now spoils the archive. */
	for (left = (uint64_t)st.st_size; left;) {
		ssize_t n = pread(fd, buf, left < sizeof(buf) ? left : sizeof(buf), st.st_size - (off_t)left);

		if (n <= 0) {
			t->err = n < 0 ? -errno : -EIO;
			return t->err;
		}
		if (put(t, buf, (size_t)n) < 0)
			return t->err;
		left -= (uint64_t)n;
	}
	if (pread(fd, buf, 1, st.st_size) > 0)
		t->err = -EIO;
	return put(t, zero, (BLOCK - (size_t)(st.st_size % BLOCK)) % BLOCK);
}

bool tar_link_ok(const char *name, const char *target)
{
	size_t len = strlen(target), up = 0, depth = 0;
	const char *c = target;
	bool plain = false;

	if (!tar_name_ok(name) || !len || len >= sizeof(((struct ustar *)0)->linkname) || target[0] == '/')
		return false;
	for (const char *p = name; *p; p++)
		depth += *p == '/';
	for (const char *p = target; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return false;
	/* ".." components first, no more of them than @name has directories, then plain ones. */
	for (;;) {
		const char *s = strchr(c, '/');
		size_t n = s ? (size_t)(s - c) : strlen(c);

		if (!n || (n == 1 && c[0] == '.'))
			return false;
		if (n == 2 && c[0] == '.' && c[1] == '.') {
			if (plain || ++up > depth)
				return false;
		} else {
			plain = true;
		}
		if (!s)
			return plain;
		c = s + 1;
	}
}

int tar_add_symlink(struct tar *t, const char *name, const char *target, time_t mtime)
{
	struct ustar h;

	if (t->err)
		return t->err;
	if (!tar_link_ok(name, target))
		return -EINVAL;
	header(&h, name, 0777, 0, mtime, '2', target);
	return put(t, &h, sizeof(h));
}

int tar_close(struct tar *t)
{
	static const char end[2 * BLOCK];
	int r;

	if (!t)
		return 0;
	put(t, end, sizeof(end));
	r = gzclose(t->gz);
	if (!t->err && r != Z_OK)
		t->err = r == Z_ERRNO && errno ? -errno : -EIO;
	r = t->err;
	free(t);
	return r;
}
