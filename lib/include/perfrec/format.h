/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The perf.data (PERFILE2) on-disk format: file header, sections, feature
 * bits and the user-space record types perf defines beyond the kernel's.
 * Facts from tools/perf/Documentation/perf.data-file-format.txt.
 */
#ifndef PERFREC_FORMAT_H
#define PERFREC_FORMAT_H

#include <linux/perf_event.h>
#include <perfrec/common.h>

#define PERFREC_MAGIC2 0x32454c4946524550ULL /* "PERFILE2" little endian */

struct perfrec_file_section {
	uint64_t offset;
	uint64_t size;
};

struct perfrec_file_header {
	uint64_t magic;
	uint64_t size;       /* sizeof(struct perfrec_file_header) */
	uint64_t attr_size;  /* sizeof(struct perf_event_attr) + 16 */
	struct perfrec_file_section attrs;
	struct perfrec_file_section data;
	struct perfrec_file_section event_types; /* unused, zero */
	uint64_t flags[4];   /* 256 feature bits */
};

/* Pipe-mode header: magic and its own size, nothing else. */
struct perfrec_pipe_file_header {
	uint64_t magic;
	uint64_t size;
};

/* In the attrs section each attr is followed by the section of its ids. */
struct perfrec_file_attr_ids {
	struct perfrec_file_section ids;
};

enum perfrec_feature {
	PERFREC_FEAT_RESERVED = 0,
	PERFREC_FEAT_TRACING_DATA = 1,
	PERFREC_FEAT_BUILD_ID = 2,
	PERFREC_FEAT_HOSTNAME = 3,
	PERFREC_FEAT_OSRELEASE = 4,
	PERFREC_FEAT_VERSION = 5,
	PERFREC_FEAT_ARCH = 6,
	PERFREC_FEAT_NRCPUS = 7,
	PERFREC_FEAT_CPUDESC = 8,
	PERFREC_FEAT_CPUID = 9,
	PERFREC_FEAT_TOTAL_MEM = 10,
	PERFREC_FEAT_CMDLINE = 11,
	PERFREC_FEAT_EVENT_DESC = 12,
	PERFREC_FEAT_CPU_TOPOLOGY = 13,
	PERFREC_FEAT_NUMA_TOPOLOGY = 14,
	PERFREC_FEAT_BRANCH_STACK = 15,
	PERFREC_FEAT_PMU_MAPPINGS = 16,
	PERFREC_FEAT_GROUP_DESC = 17,
	PERFREC_FEAT_AUXTRACE = 18,
	PERFREC_FEAT_STAT = 19,
	PERFREC_FEAT_CACHE = 20,
	PERFREC_FEAT_SAMPLE_TIME = 21,
	PERFREC_FEAT_MEM_TOPOLOGY = 22,
	PERFREC_FEAT_CLOCKID = 23,
	PERFREC_FEAT_DIR_FORMAT = 24,
	PERFREC_FEAT_BPF_PROG_INFO = 25,
	PERFREC_FEAT_BPF_BTF = 26,
	PERFREC_FEAT_COMPRESSED = 27,
	PERFREC_FEAT_CPU_PMU_CAPS = 28,
	PERFREC_FEAT_CLOCK_DATA = 29,
	PERFREC_FEAT_HYBRID_TOPOLOGY = 30,
	PERFREC_FEAT_PMU_CAPS = 31,
	PERFREC_FEAT_LAST_KNOWN = 31,
	/*
	 * perfrecd's own: the span of time each CPU's records cover in a
	 * flight-recorder snapshot.  The top bit, far from perf's numbering;
	 * perf and perfparser skip feature bits they do not know.  Body:
	 * struct perfrec_spans_feature then nr x struct perfrec_cpu_span.
	 */
	PERFREC_FEAT_SPANS = 255,
	PERFREC_FEAT_BITS = 256,
};

struct perfrec_spans_feature {
	uint32_t nr;           /* entries that follow */
	uint32_t reserved;
	uint64_t window_ns;    /* history window asked for (0: unbounded) */
	uint64_t snapshot_time;/* recording clock when the snapshot was taken */
};

struct perfrec_cpu_span {
	uint32_t cpu;
	uint32_t reserved;
	uint64_t first_time, last_time; /* of the CPU's samples written; 0,0: none */
	uint64_t samples;
};

/* User-space record types (perf's util/event.h), beyond the kernel's. */
enum perfrec_user_record_type {
	PERFREC_RECORD_HEADER_ATTR = 64,
	PERFREC_RECORD_HEADER_EVENT_TYPE = 65,
	PERFREC_RECORD_HEADER_TRACING_DATA = 66,
	PERFREC_RECORD_HEADER_BUILD_ID = 67,
	PERFREC_RECORD_FINISHED_ROUND = 68,
	PERFREC_RECORD_ID_INDEX = 69,
	PERFREC_RECORD_AUXTRACE_INFO = 70,
	PERFREC_RECORD_AUXTRACE = 71,
	PERFREC_RECORD_AUXTRACE_ERROR = 72,
	PERFREC_RECORD_THREAD_MAP = 73,
	PERFREC_RECORD_CPU_MAP = 74,
	PERFREC_RECORD_STAT_CONFIG = 75,
	PERFREC_RECORD_STAT = 76,
	PERFREC_RECORD_STAT_ROUND = 77,
	PERFREC_RECORD_EVENT_UPDATE = 78,
	PERFREC_RECORD_TIME_CONV = 79,
	PERFREC_RECORD_HEADER_FEATURE = 80,
	PERFREC_RECORD_COMPRESSED = 81,
	PERFREC_RECORD_FINISHED_INIT = 82,
	PERFREC_RECORD_COMPRESSED2 = 83,
	PERFREC_RECORD_USER_MAX = 84,
};

/* Largest record the format allows: header.size is a u16. */
#define PERFREC_RECORD_MAX 65535u

#endif
