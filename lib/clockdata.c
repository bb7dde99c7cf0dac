// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * HEADER_CLOCK_DATA decoding and the two conversions of clockdata.h.  The
 * body is perf's: u32 version, u32 clockid, u64 wall-clock ns, u64
 * clockid ns; later versions may append, so only the first 24 bytes count.
 * The conversions saturate instead of wrapping: a window reaching before a
 * clock's zero starts at zero, one past its end ends at UINT64_MAX.
 */
#include <errno.h>
#include <string.h>

#include <perfrec/clockdata.h>
#include <perfrec/pdreader.h>

int perfrec_clockdata__from_reader(const struct perfrec_pdreader *r, struct perfrec_clockdata *ret)
{
	struct perfrec_clockdata c;
	const unsigned char *d;
	const void *data;
	size_t len;
	int e;

	e = perfrec_pdreader__feature(r, PERFREC_FEAT_CLOCK_DATA, &data, &len);
	if (e < 0)
		return e;
	if (len < 24)
		return -EBADMSG;
	d = data;
	memcpy(&c.clockid, d + 4, 4);
	memcpy(&c.wall_ns, d + 8, 8);
	memcpy(&c.clock_ns, d + 16, 8);
	*ret = c;
	return 0;
}

uint64_t perfrec_clockdata__to_wall(const struct perfrec_clockdata *c, uint64_t sample_time)
{
	if (sample_time >= c->clock_ns)
		return sample_time - c->clock_ns > UINT64_MAX - c->wall_ns ? UINT64_MAX
									: c->wall_ns + (sample_time - c->clock_ns);
	return c->clock_ns - sample_time > c->wall_ns ? 0 : c->wall_ns - (c->clock_ns - sample_time);
}

uint64_t perfrec_clockdata__to_sample(const struct perfrec_clockdata *c, uint64_t wall_ns)
{
	if (wall_ns >= c->wall_ns)
		return wall_ns - c->wall_ns > UINT64_MAX - c->clock_ns ? UINT64_MAX
								     : c->clock_ns + (wall_ns - c->wall_ns);
	return c->wall_ns - wall_ns > c->clock_ns ? 0 : c->clock_ns - (c->wall_ns - wall_ns);
}
