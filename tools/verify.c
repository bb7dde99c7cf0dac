// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * `perfrecctl verify FILE...`: runs the library's verifier over each file and
 * prints one line per file, "FILE: OK (N records, M samples)" or
 * "FILE: <problem> at offset N".  Exit 0 when all are sound, 1 when one is
 * not, 2 on usage errors or a file that cannot be opened.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <perfrec/pdreader.h>

#include "perfrecctl.h"

int cmd_verify(int argc, char **argv)
{
	int rc = 0;

	if (argc < 2)
		return perfrecctl_usage("verify");
	for (int i = 1; i < argc; i++) {
		struct perfrec_pdreader_opts opts = { .sz = sizeof(opts) };
		struct perfrec_pdreader *r;
		uint64_t off;
		int ret;

		if (argv[i][0] == '-' && argv[i][1]) {
			fprintf(stderr, "perfrecctl verify: unknown option '%s'\n", argv[i]);
			return perfrecctl_usage("verify");
		}
		/* "-": stdin (a pipe-mode stream, say) */
		ret = strcmp(argv[i], "-") ? perfrec_pdreader__open(argv[i], &opts, &r)
					   : perfrec_pdreader__open_fd(0, &opts, &r);
		if (ret < 0) {
			fprintf(stderr, "%s: cannot open: %s\n", argv[i], strerror(-ret));
			rc = EXIT_USAGE;
			continue;
		}
		ret = perfrec_pdreader__verify(r);
		if (ret == 0) {
			const struct perfrec_pdreader_stats *st = perfrec_pdreader__stats(r);

			printf("%s: OK (%llu records, %llu samples)\n", argv[i],
			       (unsigned long long)st->nr_records, (unsigned long long)st->nr_samples);
		} else if (ret == -EBADMSG) {
			const char *msg = perfrec_pdreader__error(r, &off);

			printf("%s: %s at offset %llu\n", argv[i], msg, (unsigned long long)off);
			if (rc == 0)
				rc = EXIT_BAD;
		} else {
			fprintf(stderr, "%s: cannot verify: %s\n", argv[i], strerror(-ret));
			rc = EXIT_USAGE;
		}
		perfrec_pdreader__free(r);
	}
	return rc;
}
