// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Tests of lib/event.c's repair of KSYMBOL and
 * BPF_EVENT records that some kernels size for the sample_id trailers of
 * every side-band event on a CPU while writing only one.
 */
#include <string.h>

#include <criterion/criterion.h>
#include <linux/perf_event.h>

#include <perfrec/event.h>

#define TRAILER 32

/* A KSYMBOL for @name with a 32-byte trailer of 0x11.., then @junk stale bytes of 0xee. */
static size_t ksymbol(unsigned char *buf, const char *name, size_t junk)
{
	size_t name_len = (strlen(name) + 1 + 7) & ~(size_t)7, body = 24 + name_len;
	struct perf_event_header h = { .type = PERF_RECORD_KSYMBOL, .size = (uint16_t)(body + TRAILER + junk) };
	uint64_t addr = 0xffffffffc0021000ull;
	uint32_t len = 19;

	memset(buf, 0, body);
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + 8, &addr, 8);
	memcpy(buf + 16, &len, 4);
	memcpy(buf + 24, name, strlen(name));
	memset(buf + body, 0x11, TRAILER);
	memset(buf + body + TRAILER, 0xee, junk);
	return body + TRAILER;
}

Test(sideband, inflated_ksymbol_is_cut_to_body_and_trailer)
{
	static const char *const names[] = { "bpf_prog_62efe59b7d4f5ea1", "bpf_prog_3f3fc3766c8ee4df_perfrec_hot", "x" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		unsigned char rec[512], out[512], want[512];
		size_t good = ksymbol(want, names[i], 0);

		ksymbol(rec, names[i], 64);
		cr_assert_eq(perfrec_event__repair_sideband((void *)rec, TRAILER, out, sizeof(out)), good, "%s", names[i]);
		cr_assert_arr_eq(out, want, good, "%s: the repaired record differs", names[i]);
		/* A record as a correct kernel writes it needs nothing. */
		cr_assert_eq(perfrec_event__repair_sideband((void *)want, TRAILER, out, sizeof(out)), 0);
		/* Nor does one whose trailer is larger than we think (no stale bytes). */
		cr_assert_eq(perfrec_event__repair_sideband((void *)rec, TRAILER + 64, out, sizeof(out)), 0);
		/* A buffer too small for the result is left alone. */
		cr_assert_eq(perfrec_event__repair_sideband((void *)rec, TRAILER, out, good - 1), 0);
	}
}

Test(sideband, inflated_bpf_event_is_cut_and_other_records_are_not)
{
	unsigned char rec[128], out[128];
	struct perf_event_header h = { .type = PERF_RECORD_BPF_EVENT, .size = 24 + TRAILER + 32 };

	memset(rec, 0x22, sizeof(rec));
	memcpy(rec, &h, sizeof(h));
	memset(rec + 24, 0x11, TRAILER);
	cr_assert_eq(perfrec_event__repair_sideband((void *)rec, TRAILER, out, sizeof(out)), 24 + TRAILER);
	cr_assert_eq(((struct perf_event_header *)out)->size, 24 + TRAILER);
	cr_assert_eq(((struct perf_event_header *)out)->type, PERF_RECORD_BPF_EVENT);
	cr_assert_arr_eq(out + 8, rec + 8, 16 + TRAILER);

	h.type = PERF_RECORD_MMAP2;
	memcpy(rec, &h, sizeof(h));
	cr_assert_eq(perfrec_event__repair_sideband((void *)rec, TRAILER, out, sizeof(out)), 0);
}

Test(sideband, ksymbol_without_a_terminated_name_is_left_alone)
{
	unsigned char rec[64];
	struct perf_event_header h = { .type = PERF_RECORD_KSYMBOL, .size = sizeof(rec) };
	unsigned char out[128];

	memset(rec, 'a', sizeof(rec));
	memcpy(rec, &h, sizeof(h));
	cr_assert_eq(perfrec_event__repair_sideband((void *)rec, TRAILER, out, sizeof(out)), 0);
}
