// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * `perfrecctl recover FILE [-o OUT]`: turns the "X.data.tmp" a crashed
 * perfrecd left behind (or any damaged perf.data) into a complete file that
 * perf and hotspot read, keeping every whole record.  Default OUT for
 * "X.data.tmp" is "X-recovered.data", for anything else "FILE.recovered";
 * `-o X.data` finishes the file under the name it was being written for.
 * Exit 0 on success, 1 when the file cannot be recovered or holds no whole
 * record (no OUT is written then), 2 on usage errors.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <perfrec/recover.h>

#include "perfrecctl.h"

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

/* "X.data.tmp" -> "X-recovered.data"; anything else -> "FILE.recovered". */
static char *default_out(const char *in)
{
	size_t n = strlen(in);
	char *out;

	if (ends_with(in, ".data.tmp") && n > strlen(".data.tmp")) {
		size_t stem = n - strlen(".data.tmp");

		out = malloc(stem + sizeof("-recovered.data"));
		if (out) {
			memcpy(out, in, stem);
			strcpy(out + stem, "-recovered.data");
		}
		return out;
	}
	out = malloc(n + sizeof(".recovered"));
	if (out) {
		memcpy(out, in, n);
		strcpy(out + n, ".recovered");
	}
	return out;
}

int cmd_recover(int argc, char **argv)
{
	struct perfrec_recover_opts opts = { .sz = sizeof(opts), .argc = argc, .argv = argv };
	struct perfrec_recover_stats st;
	const char *in = NULL, *out = NULL;
	char *def = NULL;
	int r;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) {
			if (++i >= argc || out) {
				fprintf(stderr, "perfrecctl recover: -o needs one output file\n");
				return perfrecctl_usage("recover");
			}
			out = argv[i];
		} else if (argv[i][0] == '-' && argv[i][1]) {
			fprintf(stderr, "perfrecctl recover: unknown option '%s'\n", argv[i]);
			return perfrecctl_usage("recover");
		} else if (in) {
			fprintf(stderr, "perfrecctl recover: one FILE at a time\n");
			return perfrecctl_usage("recover");
		} else {
			in = argv[i];
		}
	}
	if (!in)
		return perfrecctl_usage("recover");
	if (!out) {
		def = default_out(in);
		if (!def) {
			fprintf(stderr, "perfrecctl recover: out of memory\n");
			return EXIT_BAD;
		}
		out = def;
	}
	r = perfrec_recover__file(in, out, &opts, &st);
	if (r < 0) {
		if (r == -EBADMSG)
			fprintf(stderr, "%s: cannot recover: no usable perf.data header or attrs\n", in);
		else if (r == -ENODATA)
			fprintf(stderr, "%s: nothing to recover: no whole record after the header and attrs (%s not written)\n",
				in, out);
		else if (r == -EBUSY)
			fprintf(stderr, "%s: a running perfrecd is still writing it; it is not a leftover (%s not written)\n",
				in, out);
		else if (r == -EPROTO)
			fprintf(stderr, "%s: cannot recover: the file written would not pass verify (%s not written)\n",
				in, out);
		else
			fprintf(stderr, "%s: cannot recover into %s: %s\n", in, out, strerror(-r));
		free(def);
		return EXIT_BAD;
	}
	printf("Recovered %llu records (%llu samples) into %s; %llu bytes after the last whole record dropped\n",
	       (unsigned long long)st.records, (unsigned long long)st.samples, out,
	       (unsigned long long)st.dropped_bytes);
	/* The source stays (recovery never destroys its input), but perfrecd would redo it. */
	if (ends_with(in, ".data.tmp"))
		printf("%s is left in place: remove it once %s is checked, or perfrecd recovers it again at its next start\n",
		       in, out);
	free(def);
	return 0;
}
