// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libFuzzer target for crash recovery: every input is a "X.data.tmp" as a
 * killed recorder (or a damaged disk) could leave it, recovered into X.data
 * (the name it was heading for) by perfrec_recover__file().  Besides no
 * out-of-bounds read under ASan, the promise is checked: on success the
 * file written passes the verifier; on failure nothing is left beside the
 * source (no output, no temporary file).
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <perfrec/pdreader.h>
#include <perfrec/recover.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[] = "/tmp/fuzz-recover-XXXXXX";
static char src[64], dst[64];

/* Files in the directory other than the source. */
static int others(void)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int n = 0;

	if (!d)
		abort();
	while ((de = readdir(d)))
		n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..") && strcmp(de->d_name, "x.data.tmp");
	closedir(d);
	return n;
}

static void remove_dir(void)
{
	unlink(src);
	unlink(dst);
	rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct perfrec_pdreader_opts ro = { .sz = sizeof(ro) };
	struct perfrec_recover_stats st;
	struct perfrec_pdreader *r;
	int fd, ret;

	if (!src[0]) {
		if (!mkdtemp(dir) || atexit(remove_dir))
			abort();
		snprintf(src, sizeof(src), "%s/x.data.tmp", dir);
		snprintf(dst, sizeof(dst), "%s/x.data", dir);
	}
	fd = open(src, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size))
		abort();
	close(fd);

	ret = perfrec_recover__file(src, dst, NULL, &st);
	if (ret < 0) {
		if (others())
			abort(); /* a failed recovery left a file behind */
		return 0;
	}
	if (st.records == 0 || perfrec_pdreader__open(dst, &ro, &r) < 0)
		abort(); /* published a file without records, or none at all */
	if (perfrec_pdreader__verify(r) < 0) {
		fprintf(stderr, "recovered file does not verify: %s\n", perfrec_pdreader__error(r, NULL));
		abort();
	}
	perfrec_pdreader__free(r);
	unlink(dst);
	if (others())
		abort();
	return 0;
}
