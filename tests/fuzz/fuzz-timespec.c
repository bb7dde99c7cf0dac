// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libFuzzer target for the time parser (lib/timespec.c).  Besides no
 * out-of-bounds read under ASan, its promises are checked: every refusal
 * comes with a message, nothing is written on failure, and a time it
 * accepts formats (UTC, to the millisecond) into a text it reads back as
 * the same instant, in UTC and in a zone with DST.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <perfrec/timespec.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* 2026-11-23T12:00:00Z */
#define NOW (1795435200ULL * 1000000000ULL)

static void check(const char *s)
{
	char err[512], text[64], err2[512];
	uint64_t t = 7, back = 0, d = 7;
	int r = perfrec_timespec__parse(s, NOW, &t, err, sizeof(err));

	if (r < 0) {
		if ((r != -EINVAL && r != -ERANGE) || !err[0] || t != 7)
			abort();
	} else {
		if (perfrec_timespec__format(t, true, text, sizeof(text)) < 0)
			abort();
		if (perfrec_timespec__parse(text, NOW, &back, err2, sizeof(err2)) < 0)
			abort();
		if (back != t - t % 1000000)
			abort();
	}
	r = perfrec_timespec__parse_duration(s, &d, err, sizeof(err));
	if (r < 0 && (!err[0] || d != 7))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool zone_set;
	char *s = malloc(size + 1);

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = 0;
	if (!zone_set) {
		zone_set = true;
		setenv("TZ", "Europe/Berlin", 1);
		tzset();
	}
	check(s);
	free(s);
	return 0;
}
