/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Metadata of BPF programs, so readers can name samples that land in JITed
 * BPF code: PERF_RECORD_KSYMBOL (one per JITed function) and
 * PERF_RECORD_BPF_EVENT (PROG_LOAD) synthesized for the programs loaded
 * before a file starts, and the HEADER_BPF_PROG_INFO / HEADER_BPF_BTF feature
 * sections with each program's bpf_prog_info (and its arrays) and BTF, in
 * the layout perf writes.  Programs loaded while recording arrive from the
 * kernel as ring records; perfrec_bpfmeta__note_record() fetches their info
 * when their BPF_EVENT passes by, so it can go into the same file's features.
 *
 * A collection (struct perfrec_bpfmeta) is driven by one thread.
 */
#ifndef PERFREC_BPFMETA_H
#define PERFREC_BPFMETA_H

#include <perfrec/event.h>
#include <perfrec/pdwriter.h>
#include <perfrec/synth.h>

#define PERFREC_BPF_TAG_SIZE 8

/*
 * Bits of the "arrays" word of a HEADER_BPF_PROG_INFO entry: which of the
 * variable-length parts of bpf_prog_info follow in its data, in this order,
 * each padded to 8 bytes (perf's enum perf_bpil_array).
 */
enum perfrec_bpf_array {
	PERFREC_BPF_JITED_INSNS = 0,
	PERFREC_BPF_XLATED_INSNS,
	PERFREC_BPF_MAP_IDS,
	PERFREC_BPF_JITED_KSYMS,
	PERFREC_BPF_JITED_FUNC_LENS,
	PERFREC_BPF_FUNC_INFO,
	PERFREC_BPF_LINE_INFO,
	PERFREC_BPF_JITED_LINE_INFO,
	PERFREC_BPF_PROG_TAGS,
	PERFREC_BPF_NR_ARRAYS,
};

struct perfrec_bpfmeta;

/* An empty collection.  Returns 0 or -ENOMEM. */
PERFREC_API int perfrec_bpfmeta__new(struct perfrec_bpfmeta **ret_meta);
PERFREC_API void perfrec_bpfmeta__free(struct perfrec_bpfmeta *m);

/* Forget every program and BTF collected (a new file begins). */
PERFREC_API void perfrec_bpfmeta__reset(struct perfrec_bpfmeta *m);

/*
 * Fetch the info (and BTF) of every loaded program not yet held: needs
 * CAP_SYS_ADMIN, so a daemon calls it before dropping privileges, which
 * lets later files carry the features of programs loaded before it began.
 * Returns the number of programs held, or -EPERM/-EACCES.
 */
PERFREC_API int perfrec_bpfmeta__collect(struct perfrec_bpfmeta *m);

/*
 * The addresses of _text and _etext, where the last __collect() read
 * kallsyms (it does when the id walk is refused or found programs with
 * trampolines, dispatchers or struct_ops images) and saw both: for
 * perfrec_synth_opts.kernel_text/kernel_etext, sparing the kernel map a
 * second pass over kallsyms.  Returns false when not known.
 */
PERFREC_API bool perfrec_bpfmeta__kernel_text(const struct perfrec_bpfmeta *m,
					      uint64_t *ret_text, uint64_t *ret_etext);

/*
 * For every JITed BPF program loaded now: one KSYMBOL (type BPF, named as
 * kallsyms names it) per JITed function and then one BPF_EVENT PROG_LOAD,
 * with the sample_id trailer of opts (pid -1, tid 0, cpu 0, opts->time).
 * Programs are found by libbpf's id walk; without the privilege for it,
 * the programs held (from __collect() or the ring) that kallsyms still
 * shows are used, plus the BPF symbols the ring reported, plus any other
 * "[bpf]" symbol of kallsyms (its length: up to the next one, at most a
 * page).  Programs and symbols no longer loaded are forgotten, so the
 * features written after this describe the new file.  Returns the number
 * of programs emitted, -EPERM/-EACCES when nothing could be looked at, or
 * the callback's error.
 */
PERFREC_API int perfrec_bpfmeta__synthesize(struct perfrec_bpfmeta *m,
					    const struct perfrec_synth_opts *opts,
					    perfrec_synth_emit_fn emit, void *ctx);

/*
 * Look at a record from the ring: a KSYMBOL of type BPF is remembered (or
 * forgotten when unregistered) so later files can synthesize it; for a
 * BPF_EVENT PROG_LOAD of a program not yet held, its info and BTF are
 * fetched now, while it is (probably) still loaded.  Other records and
 * NULL @m are ignored.  Returns 1 when a program was added, 0 when nothing
 * was, -errno when fetching failed (-ENOENT: already unloaded; -EPERM:
 * no CAP_SYS_ADMIN; both harmless, the ring's KSYMBOLs still name it).
 */
PERFREC_API int perfrec_bpfmeta__note_record(struct perfrec_bpfmeta *m,
					     const struct perf_event_header *rec);

/* Programs and BTF objects held. */
PERFREC_API size_t perfrec_bpfmeta__nr_progs(const struct perfrec_bpfmeta *m);
PERFREC_API size_t perfrec_bpfmeta__nr_btfs(const struct perfrec_bpfmeta *m);

/*
 * Add a program as stored in HEADER_BPF_PROG_INFO: @info (@info_len bytes,
 * at most sizeof(struct bpf_prog_info)) whose array fields named in
 * @arrays hold offsets into @data.  Copies; a program id already held is
 * replaced.  -EINVAL when an array runs past @data_len, -E2BIG for an
 * over-long info.
 */
PERFREC_API int perfrec_bpfmeta__add_prog_info(struct perfrec_bpfmeta *m, const void *info,
					       uint32_t info_len, uint64_t arrays,
					       const void *data, uint32_t data_len);

/* Add a BTF object (raw .BTF bytes) by id; copies; an id held is kept. */
PERFREC_API int perfrec_bpfmeta__add_btf(struct perfrec_bpfmeta *m, uint32_t id,
					 const void *data, uint32_t size);

/*
 * Set HEADER_BPF_PROG_INFO and HEADER_BPF_BTF on @w from what is held (an
 * empty collection gives both with a zero count, as perf writes them;
 * nothing is set for a NULL @m).  Returns 0 or -errno.
 */
PERFREC_API int perfrec_bpfmeta__add_features(const struct perfrec_bpfmeta *m,
					      struct perfrec_pdwriter *w);

/* --- encodings (pure) --------------------------------------------------- */

/*
 * "bpf_prog_<16 hex digits of tag>[_<short_name>]" as kallsyms shows BPF
 * functions.  Returns the length written (snprintf semantics).
 */
PERFREC_API int perfrec_bpfmeta__prog_name(char *buf, size_t sz,
					   const uint8_t tag[PERFREC_BPF_TAG_SIZE],
					   const char *short_name);

/*
 * A PERF_RECORD_KSYMBOL (register, type BPF) for [addr, addr + len) named
 * @name, with the trailer for @sample_type/@sid, into @buf.  Returns the
 * record's size, -ENOSPC when @sz is too small, -E2BIG past a record's
 * 64 KiB.
 */
PERFREC_API int perfrec_bpfmeta__encode_ksymbol(void *buf, size_t sz, uint64_t addr, uint32_t len,
						const char *name, uint64_t sample_type,
						const struct perfrec_sample_id *sid);

/* A PERF_RECORD_BPF_EVENT PROG_LOAD of program @id; as above. */
PERFREC_API int perfrec_bpfmeta__encode_bpf_event(void *buf, size_t sz, uint32_t id,
						  const uint8_t tag[PERFREC_BPF_TAG_SIZE],
						  uint64_t sample_type,
						  const struct perfrec_sample_id *sid);

/* --- reading the feature sections ---------------------------------------- */

/* One entry of HEADER_BPF_PROG_INFO, as a reader sees it.  Borrowed. */
struct perfrec_bpf_prog_desc {
	uint32_t id, type, btf_id;
	uint8_t tag[PERFREC_BPF_TAG_SIZE];
	char name[17];          /* bpf_prog_info.name, NUL-terminated */
	uint64_t arrays;
	uint32_t nr_funcs;      /* JITed functions (jited_ksyms), 0 if absent */
	const uint8_t *ksyms;   /* nr_funcs unaligned u64 addresses, or NULL */
	const uint8_t *lens;    /* nr_funcs unaligned u32 lengths, or NULL */
};

typedef int (*perfrec_bpf_prog_fn)(void *ctx, const struct perfrec_bpf_prog_desc *prog);
typedef int (*perfrec_bpf_btf_fn)(void *ctx, uint32_t id, const void *data, uint32_t size);

/*
 * Walk a HEADER_BPF_PROG_INFO body, checking it as perf's reader would
 * trust it (info no longer than the bpf_prog_info perf knows, every array
 * named in "arrays" inside its data).  @fn may be NULL.  Returns the number
 * of entries, -EBADMSG for a malformed body, or @fn's error.
 */
PERFREC_API int perfrec_bpfmeta__parse_prog_info(const void *data, size_t len,
						 perfrec_bpf_prog_fn fn, void *ctx);

/* Walk a HEADER_BPF_BTF body ({u32 nr; {u32 id, u32 size, bytes}...}); same returns. */
PERFREC_API int perfrec_bpfmeta__parse_btf(const void *data, size_t len,
					   perfrec_bpf_btf_fn fn, void *ctx);

/*
 * One line describing a BPF_PROG_INFO or BPF_BTF feature body ("2 programs:
 * bpf_prog_<tag>_<name> (id 7) ...", "1 BTF objects: 12 (345 bytes)"),
 * cut to @sz.  Returns the length written, -EBADMSG for a malformed body,
 * -EINVAL for another feature.
 */
PERFREC_API int perfrec_bpfmeta__feature_text(int feat, const void *data, size_t len,
					      char *buf, size_t sz);

#endif
