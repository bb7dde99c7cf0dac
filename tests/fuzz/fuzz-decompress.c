// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libFuzzer target for `perfrecctl decompress IN OUT` (tools/decompress.c,
 * the reader in normal mode, the zstd frames, the writer): every input is a
 * file to decompress.  Besides no out-of-bounds read under ASan, the promise
 * is checked: decompress succeeds exactly when the verifier accepts the
 * input, and then what it wrote verifies; when it fails it leaves no output.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <perfrec/pdreader.h>

#include "perfrecctl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* usage.c's; decompress.c calls it only for a wrong argument count. */
int perfrecctl_usage(const char *name)
{
	(void)name;
	abort();
}

static char dir[] = "/tmp/fuzz-decompress-XXXXXX";
static char in_path[64], out_path[64];

static bool verifies(const uint8_t *data, size_t size)
{
	struct perfrec_pdreader_opts ro = { .sz = sizeof(ro) };
	struct perfrec_pdreader *r;
	bool ok;

	if (perfrec_pdreader__open_mem(data, size, &ro, &r) < 0)
		abort();
	ok = perfrec_pdreader__verify(r) == 0;
	perfrec_pdreader__free(r);
	return ok;
}

static void remove_dir(void)
{
	unlink(in_path);
	unlink(out_path);
	rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *argv[] = { "decompress", in_path, out_path, NULL };
	bool sound = verifies(data, size);
	int fd, rc;

	if (!in_path[0]) {
		if (!mkdtemp(dir) || atexit(remove_dir))
			abort();
		snprintf(in_path, sizeof(in_path), "%s/in.data", dir);
		snprintf(out_path, sizeof(out_path), "%s/out.data", dir);
	}
	fd = open(in_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size))
		abort();
	close(fd);

	rc = cmd_decompress(3, argv);
	if (rc == 0 && !sound)
		abort(); /* decompressed an input verify rejects */
	if (rc != 0 && access(out_path, F_OK) == 0)
		abort(); /* a failed decompress left its output */
	if (rc == 0) {
		struct perfrec_pdreader_opts ro = { .sz = sizeof(ro) };
		struct perfrec_pdreader *r;

		if (perfrec_pdreader__open(out_path, &ro, &r) < 0 || perfrec_pdreader__verify(r) < 0)
			abort(); /* (run() checks this too; a second look from outside) */
		perfrec_pdreader__free(r);
	}
	unlink(out_path);
	return 0;
}
