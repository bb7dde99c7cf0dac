/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Decoding and encoding of the variable parts of kernel records: the sample
 * body (PERF_RECORD_SAMPLE) and the sample_id trailer that sample_id_all adds
 * to every other record.  Both depend on the attr's sample_type (and
 * read_format) and are laid out in the order perf_event.h documents.
 */
#ifndef PERFREC_EVENT_H
#define PERFREC_EVENT_H

#include <perfrec/format.h>

/* The fields of a sample_id trailer (and of a sample's fixed prefix). */
struct perfrec_sample_id {
	uint32_t pid, tid;
	uint64_t time;
	uint64_t id;
	uint64_t stream_id;
	uint32_t cpu, res;
};

/* A decoded PERF_RECORD_SAMPLE.  Pointers borrow from the record. */
struct perfrec_sample {
	uint64_t id;          /* IDENTIFIER or ID */
	uint64_t ip;
	uint32_t pid, tid;
	uint64_t time;
	uint64_t addr;
	uint64_t stream_id;
	uint32_t cpu;
	uint64_t period;
	uint64_t nr_callchain;
	const uint64_t *callchain;
	uint32_t raw_size;
	const void *raw;
	/*
	 * PERF_SAMPLE_CGROUP: the task's cgroup id (0 when absent, or when a
	 * variable-size field this parser does not walk precedes it).
	 */
	uint64_t cgroup;
	/*
	 * PERF_SAMPLE_REGS_USER (perfrec_sample__parse_attr() only): the ABI
	 * (PERF_SAMPLE_REGS_ABI_*, 0: no user registers, e.g. a kernel
	 * thread), then one u64 per bit of the attr's sample_regs_user.
	 */
	uint64_t regs_abi;
	uint64_t regs_mask;
	uint32_t nr_regs;
	const uint64_t *regs;
	/*
	 * PERF_SAMPLE_STACK_USER (perfrec_sample__parse_attr() only): the
	 * copy's room (the attr's sample_stack_user, or less when the record
	 * would pass 64 KiB) and how many bytes from the user stack pointer
	 * the kernel could actually copy (<= stack_size).
	 */
	uint64_t stack_size;
	const void *stack;
	uint64_t stack_dyn_size;
};

/* Bytes the sample_id trailer takes for @sample_type. */
PERFREC_API size_t perfrec_sample_id__size(uint64_t sample_type);

/*
 * Some kernels (seen on 6.18) size a KSYMBOL or BPF_EVENT record for the
 * sample_id trailers of every side-band event open on the CPU (another
 * profiler's too) but write only the one of the event it is for, right
 * after the body; the record then ends in stale bytes where readers look
 * for the trailer.  When @h is such a record (@trailer_len: its event's
 * trailer size), copy it into @buf (@bufsz bytes) as a correct kernel would
 * have written it, the trailer at its end, and return its new size; return
 * 0 when @h needs no repair (or does not fit in @buf).
 */
PERFREC_API size_t perfrec_event__repair_sideband(const struct perf_event_header *h, size_t trailer_len,
						  void *buf, size_t bufsz);

/* Write the trailer for @sid into @buf (perfrec_sample_id__size() bytes). */
PERFREC_API void perfrec_sample_id__write(void *buf, uint64_t sample_type,
					  const struct perfrec_sample_id *sid);

/*
 * Parse the sample_id trailer at the end of a non-sample record.  Returns 0,
 * or -EINVAL when the record is too short to hold it.
 */
PERFREC_API int perfrec_sample_id__parse(const struct perf_event_header *rec,
					 uint64_t sample_type,
					 struct perfrec_sample_id *ret_sid);

/*
 * Decode a PERF_RECORD_SAMPLE laid out for @sample_type / @read_format.
 * Returns 0, or -EINVAL when a field would run past the record's end.
 * Fields not in sample_type are left zero, and so are register sets,
 * user stacks and what follows them (their sizes need the attr's masks:
 * perfrec_sample__parse_attr()).
 */
PERFREC_API int perfrec_sample__parse(const struct perf_event_header *rec,
				      uint64_t sample_type, uint64_t read_format,
				      struct perfrec_sample *ret_sample);

/*
 * Decode a PERF_RECORD_SAMPLE laid out for @attr, including the register
 * sets and the user stack copy that need the attr's masks (DWARF
 * callchains), and CGROUP after them.  Returns 0, or -EINVAL when a field
 * would run past the record's end or a stack's dyn_size passes its size.
 */
PERFREC_API int perfrec_sample__parse_attr(const struct perf_event_header *rec,
					   const struct perf_event_attr *attr,
					   struct perfrec_sample *ret_sample);

/*
 * A frame-pointer walk of user stacks copies whatever it finds, and a
 * value in the PERF_CONTEXT range (>= (u64)-4095, e.g. -1 from a frame
 * that was never set up) reads to perf as a context marker it does not
 * know: garbage frames, or a chain thrown away.  When @h is a SAMPLE laid
 * out for @sample_type / @read_format whose user chain (after
 * PERF_CONTEXT_USER) holds such a value, copy it into @buf (@bufsz bytes)
 * with the user chain ended before that value and the rest of the sample
 * unchanged, and return the copy's size; return 0 when @h needs nothing
 * (or does not fit in @buf).
 */
PERFREC_API size_t perfrec_sample__end_user_chain(const struct perf_event_header *h, uint64_t sample_type,
						  uint64_t read_format, void *buf, size_t bufsz);

/*
 * The id of any record when every attr carries PERF_SAMPLE_IDENTIFIER: the
 * first u64 of a sample, the last u64 of other kernel records.  Returns 0
 * and writes *ret_id, or -ENOENT for records that carry none.
 */
PERFREC_API int perfrec_event__identifier(const struct perf_event_header *rec,
					  uint64_t *ret_id);

/* A short name for a record type ("SAMPLE", "MMAP2", "FINISHED_ROUND"...). */
PERFREC_API const char *perfrec_event__type_name(uint32_t type);

#endif
