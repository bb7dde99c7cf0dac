// SPDX-License-Identifier: LGPL-2.1-or-later
/* Reading back what a command wrote (see readback.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <perfrec/pdreader.h>

#include "exitcode.h"
#include "readback.h"

int readback_verifies(const char *cmd, const char *path)
{
	struct perfrec_pdreader_opts opts = { .sz = sizeof(opts) };
	struct perfrec_pdreader *r;
	uint64_t off = 0;
	int ret;

	ret = perfrec_pdreader__open(path, &opts, &r);
	if (ret < 0) {
		fprintf(stderr, "perfrecctl %s: cannot read back %s: %s\n", cmd, path, strerror(-ret));
		return EXIT_USAGE;
	}
	ret = perfrec_pdreader__verify(r);
	if (ret < 0) {
		const char *why = ret == -EBADMSG ? perfrec_pdreader__error(r, &off) : strerror(-ret);

		fprintf(stderr, "perfrecctl %s: %s as written does not verify: %s at offset %llu\n", cmd, path, why,
			ret == -EBADMSG ? (unsigned long long)off : 0ULL);
	}
	perfrec_pdreader__free(r);
	return ret < 0 ? EXIT_BAD : 0;
}
