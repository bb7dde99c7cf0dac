// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Recovery of a perf.data file left behind by a crash.  The reader (salvage
 * mode) gives us the header, attrs, ids and whatever feature sections survive;
 * the records are walked here over our own mapping of the file, because a
 * checkpointed .tmp has more whole records after the data size its header
 * names, and those are exactly what a crash must not cost.  Each record is
 * checked by the verifier's own per-record check (perfrec_pdreader__
 * check_record); the walk stops at the first record that is cut or not sound.
 * The copy is a byte copy of the good prefix of the data section, then the
 * feature sections a finished file has.  A source without one whole record
 * gives no file at all (perf refuses data size 0), and the output is verified
 * before it takes its name, so recovery never publishes a file verify rejects.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <perfrec/buildid.h>
#include <perfrec/compress.h>
#include <perfrec/event.h>
#include <perfrec/hostinfo.h>
#include <perfrec/pdreader.h>
#include <perfrec/pdwriter.h>
#include <perfrec/recover.h>

#include "fsutil.h"

#define COPY_CHUNK (4u << 20) /* bounded write size; the mapping is the buffer */

struct walk {
	const unsigned char *buf;
	uint64_t pos, end;
	struct perfrec_pdreader *r;
	bool ident;        /* every attr has PERF_SAMPLE_IDENTIFIER */
	uint64_t first_time, last_time;
	bool has_time;
	struct perfrec_buildid_table *bt;
	struct perfrec_recover_stats st;
	/*
	 * The last point where no record was left half-decompressed: a
	 * COMPRESSED record whose last inner record continues in the next one
	 * cannot end the copy.
	 */
	uint64_t whole_pos;
	struct perfrec_recover_stats whole_st;
	uint64_t whole_first_time, whole_last_time;
	bool whole_has_time;
	_Alignas(8) unsigned char scratch[65536]; /* a record at an unaligned offset, copied aligned */
	/* COMPRESSED records (compress=): checked by what they hold */
	struct perfrec_decompress *dz;
	unsigned char *dbuf;    /* carried partial record + one record's output */
	size_t dcap, carry;
	uint64_t max_frame;     /* largest decompressed size of one record */
	bool compressed;
};

/* Decompression buffer of a .tmp, which has no HEADER_COMPRESSED yet. */
#define RECOVER_MMAP_LEN (528384u)

static bool sound_record(struct walk *wk, const struct perf_event_header *rec);

/*
 * A COMPRESSED record is sound when it continues the zstd stream and the
 * records inside are sound; a record cut at its end (one larger than a
 * compressed chunk) is carried into the next one, as perf does.
 */
static bool sound_compressed(struct walk *wk, const struct perf_event_header *rec)
{
	const void *fb;
	size_t flen, cap = RECOVER_MMAP_LEN, pos = 0;
	ssize_t n;

	if (perfrec_pdreader__feature(wk->r, PERFREC_FEAT_COMPRESSED, &fb, &flen) == 0 &&
	    flen >= sizeof(struct perfrec_compressed_feature)) {
		struct perfrec_compressed_feature cf;

		memcpy(&cf, fb, sizeof(cf));
		if (cf.mmap_len && cf.mmap_len <= (64u << 20))
			cap = cf.mmap_len;
	}
	if (!wk->dz && perfrec_decompress__new(&wk->dz) < 0)
		return false;
	if (wk->dcap < cap + 65536) {
		unsigned char *nb = realloc(wk->dbuf, cap + 65536);

		if (!nb)
			return false;
		wk->dbuf = nb;
		wk->dcap = cap + 65536;
	}
	n = perfrec_decompress__frame(wk->dz, rec + 1, rec->size - sizeof(*rec), wk->dbuf + wk->carry, cap);
	if (n <= 0)
		return false;
	if ((uint64_t)n > wk->max_frame)
		wk->max_frame = (uint64_t)n;
	n += (ssize_t)wk->carry;
	while ((size_t)n - pos >= sizeof(struct perf_event_header)) {
		struct perf_event_header h;

		memcpy(&h, wk->dbuf + pos, sizeof(h));
		if (h.size < sizeof(h) || h.type == PERFREC_RECORD_COMPRESSED)
			return false;
		if (h.size > (size_t)n - pos)
			break;
		memcpy(wk->scratch, wk->dbuf + pos, h.size);
		if (!sound_record(wk, (const struct perf_event_header *)wk->scratch))
			return false;
		pos += h.size;
	}
	wk->carry = (size_t)n - pos;
	memmove(wk->dbuf, wk->dbuf + pos, wk->carry);
	wk->compressed = true;
	return true;
}

static bool any_feature(const struct perfrec_file_header *h)
{
	return h->flags[0] | h->flags[1] | h->flags[2] | h->flags[3];
}

/* The attr a sample belongs to, as the verifier attributes it, or NULL. */
static const struct perfrec_pdreader_attr *sample_attr(const struct walk *wk, const struct perf_event_header *rec)
{
	struct perfrec_sample s;
	uint64_t id;

	if (wk->ident) {
		if (rec->size < 16)
			return NULL;
		memcpy(&id, rec + 1, 8);
		return perfrec_pdreader__attr_by_id(wk->r, id);
	}
	if (perfrec_pdreader__nr_attrs(wk->r) == 1)
		return perfrec_pdreader__attr(wk->r, 0);
	/* Several attrs without IDENTIFIER: only a shared layout with ID works. */
	for (size_t i = 1; i < perfrec_pdreader__nr_attrs(wk->r); i++) {
		const struct perf_event_attr *a = &perfrec_pdreader__attr(wk->r, i)->attr;
		const struct perf_event_attr *a0 = &perfrec_pdreader__attr(wk->r, 0)->attr;

		if (a->sample_type != a0->sample_type || a->read_format != a0->read_format ||
		    !(a->sample_type & PERF_SAMPLE_ID))
			return NULL;
	}
	{
		const struct perf_event_attr *a0 = &perfrec_pdreader__attr(wk->r, 0)->attr;

		if (!(a0->sample_type & PERF_SAMPLE_ID) ||
		    perfrec_sample__parse_attr(rec, a0, &s) < 0)
			return NULL;
	}
	return perfrec_pdreader__attr_by_id(wk->r, s.id);
}

/* Is @rec a record the verifier accepts?  Notes samples and MMAP2s. */
static bool sound_record(struct walk *wk, const struct perf_event_header *rec)
{
	if (rec->type == PERFREC_RECORD_COMPRESSED)
		return sound_compressed(wk, rec);
	if (perfrec_pdreader__check_record(wk->r, rec, wk->pos) < 0)
		return false;
	if (rec->type == PERF_RECORD_SAMPLE) {
		const struct perfrec_pdreader_attr *a = sample_attr(wk, rec);
		struct perfrec_sample s;

		if (!a || perfrec_sample__parse_attr(rec, &a->attr, &s) < 0)
			return false;
		wk->st.samples++;
		if (a->attr.sample_type & PERF_SAMPLE_TIME) {
			if (!wk->has_time || s.time < wk->first_time)
				wk->first_time = s.time;
			if (!wk->has_time || s.time > wk->last_time)
				wk->last_time = s.time;
			wk->has_time = true;
		}
		perfrec_buildid_table__note_sample_pid(wk->bt, s.pid,
			(rec->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL);
		return true;
	}
	if (rec->type == PERF_RECORD_MMAP2)
		perfrec_buildid_table__note_mmap2(wk->bt, rec);
	return true;
}

/* Advance wk->pos over every whole, sound record; stop at the first other. */
static void walk_records(struct walk *wk)
{
	while (wk->end - wk->pos >= sizeof(struct perf_event_header)) {
		const struct perf_event_header *rec;
		struct perf_event_header h;

		memcpy(&h, wk->buf + wk->pos, sizeof(h));
		/*
		 * Every record perf or the kernel writes is a multiple of 8 bytes,
		 * except COMPRESSED ones (zstd output has no padding).
		 */
		if (h.size < sizeof(h) || (h.size % 8 && h.type != PERFREC_RECORD_COMPRESSED) ||
		    h.size > wk->end - wk->pos)
			break;
		if (wk->pos % 8) {
			memcpy(wk->scratch, wk->buf + wk->pos, h.size);
			rec = (const struct perf_event_header *)wk->scratch;
		} else {
			rec = (const struct perf_event_header *)(wk->buf + wk->pos);
		}
		if (!sound_record(wk, rec))
			break;
		wk->st.records++;
		wk->pos += h.size;
		if (!wk->carry) {
			wk->whole_pos = wk->pos;
			wk->whole_st = wk->st;
			wk->whole_first_time = wk->first_time;
			wk->whole_last_time = wk->last_time;
			wk->whole_has_time = wk->has_time;
		}
	}
	/* Back to the last record that left nothing half-decompressed. */
	wk->pos = wk->whole_pos;
	wk->st = wk->whole_st;
	wk->first_time = wk->whole_first_time;
	wk->last_time = wk->whole_last_time;
	wk->has_time = wk->whole_has_time;
}

/* A name for an event whose file lost its EVENT_DESC (every .tmp). */
static const char *attr_name(const struct perf_event_attr *a, char *buf, size_t sz)
{
	static const char *const sw[] = {
		[PERF_COUNT_SW_CPU_CLOCK] = "cpu-clock",
		[PERF_COUNT_SW_TASK_CLOCK] = "task-clock",
		[PERF_COUNT_SW_PAGE_FAULTS] = "page-faults",
		[PERF_COUNT_SW_CONTEXT_SWITCHES] = "context-switches",
		[PERF_COUNT_SW_CPU_MIGRATIONS] = "cpu-migrations",
		[PERF_COUNT_SW_PAGE_FAULTS_MIN] = "minor-faults",
		[PERF_COUNT_SW_PAGE_FAULTS_MAJ] = "major-faults",
		[PERF_COUNT_SW_ALIGNMENT_FAULTS] = "alignment-faults",
		[PERF_COUNT_SW_EMULATION_FAULTS] = "emulation-faults",
		[PERF_COUNT_SW_DUMMY] = "dummy",
		[PERF_COUNT_SW_BPF_OUTPUT] = "bpf-output",
	};
	static const char *const hw[] = {
		[PERF_COUNT_HW_CPU_CYCLES] = "cycles",
		[PERF_COUNT_HW_INSTRUCTIONS] = "instructions",
		[PERF_COUNT_HW_CACHE_REFERENCES] = "cache-references",
		[PERF_COUNT_HW_CACHE_MISSES] = "cache-misses",
		[PERF_COUNT_HW_BRANCH_INSTRUCTIONS] = "branches",
		[PERF_COUNT_HW_BRANCH_MISSES] = "branch-misses",
		[PERF_COUNT_HW_BUS_CYCLES] = "bus-cycles",
		[PERF_COUNT_HW_STALLED_CYCLES_FRONTEND] = "stalled-cycles-frontend",
		[PERF_COUNT_HW_STALLED_CYCLES_BACKEND] = "stalled-cycles-backend",
		[PERF_COUNT_HW_REF_CPU_CYCLES] = "ref-cycles",
	};

	if (a->type == PERF_TYPE_SOFTWARE && a->config < sizeof(sw) / sizeof(sw[0]) && sw[a->config])
		return sw[a->config];
	if (a->type == PERF_TYPE_HARDWARE && a->config < sizeof(hw) / sizeof(hw[0]) && hw[a->config])
		return hw[a->config];
	/* perf's own spelling of an event it cannot name. */
	snprintf(buf, sz, "%u:0x%llx", a->type, (unsigned long long)a->config);
	return buf;
}

static int map_file(const char *path, const unsigned char **ret_buf, size_t *ret_len)
{
	struct stat st;
	void *p;
	int fd, r = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		r = -EINVAL;
		goto out;
	}
	if (st.st_size == 0) {
		r = -EBADMSG;
		goto out;
	}
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED) {
		r = -errno;
		goto out;
	}
	*ret_buf = p;
	*ret_len = (size_t)st.st_size;
out:
	close(fd);
	return r;
}

/*
 * Start the output in a temporary file of its own beside @dst: not
 * "@dst.tmp", which is the source itself in the obvious
 * `perfrecctl recover X.data.tmp -o X.data` (and a live recorder's name).
 */
static int create_output(const char *dst, struct perfrec_pdwriter **ret_w, char **ret_tmp)
{
	struct perfrec_pdwriter_opts wo = { .sz = sizeof(wo), .owns_fd = true };
	char *tmp;
	int fd, r = 0;

	if (asprintf(&tmp, "%s.recovering-XXXXXX", dst) < 0)
		return -ENOMEM;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		free(tmp);
		return r;
	}
	/* The mode a published file has (perfrec_pdwriter__create). */
	if (fchmod(fd, 0640) < 0 || (r = perfrec_pdwriter__new(fd, &wo, ret_w)) < 0) {
		r = r < 0 ? r : -errno;
		close(fd);
		unlink(tmp);
		free(tmp);
		return r;
	}
	*ret_tmp = tmp;
	return 0;
}

/* The verifier's verdict on what we wrote: -EPROTO if it rejects it (a bug here). */
static int output_verifies(const char *path)
{
	struct perfrec_pdreader_opts ro = { .sz = sizeof(ro) };
	struct perfrec_pdreader *r;
	int ret;

	ret = perfrec_pdreader__open(path, &ro, &r);
	if (ret < 0)
		return ret;
	ret = perfrec_pdreader__verify(r);
	perfrec_pdreader__free(r);
	return ret == -EBADMSG ? -EPROTO : ret;
}

/* Rename @tmp to @dst and make the new name durable. */
static int publish(const char *tmp, const char *dst)
{
	return rename_durably(tmp, dst);
}

/*
 * The source's attrs (at the file's attr size where our writer can write
 * it) and its whole records up to wk->pos; *ret_clockid is the first
 * attr's clock, or -1.
 */
static int copy_records(struct walk *wk, const struct perfrec_file_header *h, struct perfrec_pdwriter *w,
			int *ret_clockid)
{
	size_t nr_attrs = perfrec_pdreader__nr_attrs(wk->r);
	uint64_t attr_sz = h->attr_size - sizeof(struct perfrec_file_section);
	int clockid = -1;
	int r;

	/* Keep the file's attr size where our writer can write it. */
	if (attr_sz < PERF_ATTR_SIZE_VER0 || attr_sz > sizeof(struct perf_event_attr) || attr_sz % 8)
		attr_sz = sizeof(struct perf_event_attr);

	for (size_t i = 0; i < nr_attrs; i++) {
		const struct perfrec_pdreader_attr *a = perfrec_pdreader__attr(wk->r, i);
		struct perf_event_attr attr = a->attr;
		char buf[64];

		attr.size = (uint32_t)attr_sz;
		if (attr.use_clockid && clockid < 0)
			clockid = attr.clockid;
		r = perfrec_pdwriter__add_attr(w, &attr, a->ids, a->nr_ids,
					       a->name && a->name[0] ? a->name : attr_name(&attr, buf, sizeof(buf)));
		if (r < 0)
			return r;
	}
	for (uint64_t off = h->data.offset; off < wk->pos; off += COPY_CHUNK) {
		uint64_t n = wk->pos - off < COPY_CHUNK ? wk->pos - off : COPY_CHUNK;

		r = perfrec_pdwriter__write(w, wk->buf + off, (size_t)n);
		if (r < 0)
			return r;
	}
	*ret_clockid = clockid;
	return 0;
}

/*
 * The features of the recovered file: this host's, the clock's resolution
 * for @clockid, the build ids and compression the walk found, then (with
 * @source_features) those the damaged file still has.
 */
static int add_features(struct walk *wk, struct perfrec_pdwriter *w, const struct perfrec_recover_opts *opts,
			int clockid, bool source_features)
{
	struct perfrec_hostinfo_opts ho = { .sz = sizeof(ho) };
	int r;

	/*
	 * CLOCK_DATA needs a (wall, clock) pair from when the data was taken,
	 * which a .tmp does not carry: omit it (clockid -1 drops both); the
	 * clock's resolution (HEADER_CLOCKID) is still known from the attrs.
	 */
	ho.argc = PERFREC_OPTS_GET(opts, argc, 0);
	ho.argv = PERFREC_OPTS_GET(opts, argv, (char *const *)NULL);
	ho.clockid = -1;
	if (wk->has_time) {
		ho.first_sample_time = wk->first_time;
		ho.last_sample_time = wk->last_time;
	}
	r = perfrec_hostinfo__add_features(w, &ho);
	if (r < 0)
		return r;
	if (clockid >= 0) {
		struct timespec res;

		if (clock_getres((clockid_t)clockid, &res) == 0) {
			uint64_t ns = (uint64_t)res.tv_sec * 1000000000ULL + (uint64_t)res.tv_nsec;

			r = perfrec_pdwriter__set_feature(w, PERFREC_FEAT_CLOCKID, &ns, sizeof(ns));
			if (r < 0)
				return r;
		}
	}
	r = perfrec_buildid_table__add_feature(wk->bt, w);
	if (r < 0)
		return r;
	if (wk->compressed) {
		/* A .tmp has no HEADER_COMPRESSED yet; readers need its mmap_len. */
		struct perfrec_compressed_feature cf = {
			.type = PERFREC_COMP_ZSTD,
			.mmap_len = wk->max_frame > PERFREC_COMPRESS_MMAP_LEN ? (uint32_t)wk->max_frame
									      : PERFREC_COMPRESS_MMAP_LEN,
		};

		r = perfrec_pdwriter__set_feature(w, PERFREC_FEAT_COMPRESSED, &cf, sizeof(cf));
		if (r < 0)
			return r;
	}
	/*
	 * A damaged finished file may still carry its own features: they describe
	 * the host and run that recorded it, so they win over ours.  EVENT_DESC
	 * the writer builds from the attrs; SAMPLE_TIME we measured.
	 */
	for (int f = 1; source_features && f < PERFREC_FEAT_BITS; f++) {
		const void *body;
		size_t len;

		if (f == PERFREC_FEAT_EVENT_DESC || f == PERFREC_FEAT_SAMPLE_TIME)
			continue;
		if (perfrec_pdreader__feature(wk->r, f, &body, &len) < 0 || !len)
			continue;
		r = perfrec_pdwriter__set_feature(w, f, body, len);
		if (r < 0)
			return r;
	}
	return 0;
}

static int write_file(struct walk *wk, const struct perfrec_file_header *h, const char *dst,
		      const struct perfrec_recover_opts *opts, bool source_features)
{
	struct perfrec_pdwriter *w = NULL;
	int clockid = -1;
	char *tmp = NULL;
	int r;

	r = create_output(dst, &w, &tmp);
	if (r < 0)
		return r;
	r = copy_records(wk, h, w, &clockid);
	if (r < 0)
		goto fail;
	r = add_features(wk, w, opts, clockid, source_features);
	if (r < 0)
		goto fail;
	r = perfrec_pdwriter__finish(w); /* and fsync */
	if (r < 0)
		goto fail;
	perfrec_pdwriter__free(w, false);
	w = NULL;
	r = output_verifies(tmp);
	if (r < 0)
		goto fail;
	r = publish(tmp, dst);
	if (r < 0)
		goto fail;
	free(tmp);
	return 0;
fail:
	perfrec_pdwriter__free(w, false);
	unlink(tmp);
	free(tmp);
	return r;
}

int perfrec_recover__file(const char *src, const char *dst, const struct perfrec_recover_opts *opts,
			  struct perfrec_recover_stats *ret_stats)
{
	struct perfrec_pdreader_opts ro = { .sz = sizeof(ro), .salvage = true };
	const struct perfrec_file_header *h;
	const unsigned char *buf = NULL;
	struct walk *wk = NULL;
	size_t len = 0;
	int r;

	if (!src || !dst || !PERFREC_OPTS_VALID(opts, perfrec_recover_opts))
		return -EINVAL;
	/* A .tmp a live writer holds is a recording in progress, not a leftover. */
	r = perfrec_pdwriter__in_use(src);
	if (r < 0)
		return r;
	if (r > 0)
		return -EBUSY;
	r = map_file(src, &buf, &len);
	if (r < 0)
		return r;
	wk = calloc(1, sizeof(*wk));
	if (!wk) {
		r = -ENOMEM;
		goto out;
	}
	wk->buf = buf;
	r = perfrec_pdreader__open(src, &ro, &wk->r);
	if (r < 0)
		goto out;
	h = perfrec_pdreader__header(wk->r);
	if (h->magic != PERFREC_MAGIC2 || perfrec_pdreader__nr_attrs(wk->r) == 0 ||
	    h->data.offset < sizeof(*h) || h->data.offset > len) {
		r = -EBADMSG;
		goto out;
	}

	/*
	 * Where the data ends: a file without feature sections (a .tmp) has
	 * nothing after its data, so everything to EOF may be records, however
	 * far the last checkpoint got.  Otherwise trust data.size where it fits.
	 */
	wk->pos = h->data.offset;
	if (!any_feature(h) || h->data.size == 0 || h->data.size > len - h->data.offset)
		wk->end = len;
	else
		wk->end = h->data.offset + h->data.size;

	wk->ident = true;
	for (size_t i = 0; i < perfrec_pdreader__nr_attrs(wk->r); i++)
		wk->ident &= !!(perfrec_pdreader__attr(wk->r, i)->attr.sample_type & PERF_SAMPLE_IDENTIFIER);

	r = perfrec_buildid_table__new(&wk->bt);
	if (r < 0)
		goto out;
	wk->whole_pos = wk->pos;
	walk_records(wk);
	wk->st.bytes = wk->pos - h->data.offset;
	wk->st.dropped_bytes = wk->end - wk->pos;
	/* perf refuses data size 0: a .tmp killed before its first record has nothing to give. */
	if (wk->st.records == 0) {
		r = -ENODATA;
		goto out;
	}

	r = write_file(wk, h, dst, opts, true);
	/* A damaged source's own feature sections may be what fails: ours are sound. */
	if (r == -EPROTO)
		r = write_file(wk, h, dst, opts, false);
	if (r == 0 && ret_stats)
		*ret_stats = wk->st;
out:
	if (wk) {
		perfrec_decompress__free(wk->dz);
		free(wk->dbuf);
		perfrec_buildid_table__free(wk->bt);
		perfrec_pdreader__free(wk->r);
		free(wk);
	}
	if (buf)
		munmap((void *)buf, len);
	return r;
}
