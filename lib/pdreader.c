// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * PERFILE2 reader and verifier.  Input is untrusted (files from other hosts,
 * files cut short by a crash), so every offset and length read from the file
 * is checked against the file before use, all arithmetic on them is done in
 * u64 with overflow checks, and allocations are bounded by the file size.
 * Opening only locates the parts (header, attrs, ids, data, feature table);
 * __verify() walks all of it and reports the first problem with its offset.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <perfrec/bpfmeta.h>
#include <perfrec/compress.h>
#include <perfrec/event.h>
#include <perfrec/pdreader.h>

#define MAX_ATTR_SIZE 4096u /* far beyond any perf_event_attr; guards nonsense */
#define MAX_CPUS 4096u
#define PIPE_HEADER_SIZE 16u
/* Decompression buffer when a file states none (salvaged .tmp): perf's default ring. */
#define DEFAULT_MMAP_LEN (528384u)
#define MAX_MMAP_LEN (64u << 20)

struct id_ent {
	uint64_t id;
	uint64_t off; /* where the id sits in the file */
	size_t attr;
};

struct perfrec_pdreader {
	unsigned char *buf;
	size_t len;
	bool mapped;
	uint64_t released;      /* mapped bytes below this were given back (MADV_DONTNEED) */
	bool salvage;
	bool raw_compressed;
	bool pipe;

	struct perfrec_file_header hdr;
	bool broken;      /* records cannot be located */
	bool feats_valid; /* feature table located and inside the file */

	struct perfrec_pdreader_attr *attrs;
	size_t nr_attrs;
	uint64_t *ids; /* storage for every attr's ids */
	uint64_t *ids_off; /* file offset of each attr's ids section */
	struct id_ent *by_id; /* sorted by id */
	size_t nr_ids;

	uint64_t table_off;
	struct perfrec_file_section feats[PERFREC_FEAT_BITS];
	bool has_feat[PERFREC_FEAT_BITS];

	uint64_t data_off, data_end, pos;
	unsigned char *scratch;

	/* Contents of COMPRESSED records not yet returned. */
	struct perfrec_decompress *dz;
	unsigned char *dbuf;
	size_t dcap, d_len, d_pos;
	uint64_t d_rec_off; /* the COMPRESSED record they came from */
	uint64_t nr_frames, comp_in, decomp_out, max_decomp;

	char err[256];
	uint64_t err_off;

	struct perfrec_pdreader_stats stats;
	uint64_t *per_attr, *per_cpu;
};

static const char *const feat_names[] = {
	[PERFREC_FEAT_RESERVED] = "RESERVED",
	[PERFREC_FEAT_TRACING_DATA] = "TRACING_DATA",
	[PERFREC_FEAT_BUILD_ID] = "BUILD_ID",
	[PERFREC_FEAT_HOSTNAME] = "HOSTNAME",
	[PERFREC_FEAT_OSRELEASE] = "OSRELEASE",
	[PERFREC_FEAT_VERSION] = "VERSION",
	[PERFREC_FEAT_ARCH] = "ARCH",
	[PERFREC_FEAT_NRCPUS] = "NRCPUS",
	[PERFREC_FEAT_CPUDESC] = "CPUDESC",
	[PERFREC_FEAT_CPUID] = "CPUID",
	[PERFREC_FEAT_TOTAL_MEM] = "TOTAL_MEM",
	[PERFREC_FEAT_CMDLINE] = "CMDLINE",
	[PERFREC_FEAT_EVENT_DESC] = "EVENT_DESC",
	[PERFREC_FEAT_CPU_TOPOLOGY] = "CPU_TOPOLOGY",
	[PERFREC_FEAT_NUMA_TOPOLOGY] = "NUMA_TOPOLOGY",
	[PERFREC_FEAT_BRANCH_STACK] = "BRANCH_STACK",
	[PERFREC_FEAT_PMU_MAPPINGS] = "PMU_MAPPINGS",
	[PERFREC_FEAT_GROUP_DESC] = "GROUP_DESC",
	[PERFREC_FEAT_AUXTRACE] = "AUXTRACE",
	[PERFREC_FEAT_STAT] = "STAT",
	[PERFREC_FEAT_CACHE] = "CACHE",
	[PERFREC_FEAT_SAMPLE_TIME] = "SAMPLE_TIME",
	[PERFREC_FEAT_MEM_TOPOLOGY] = "MEM_TOPOLOGY",
	[PERFREC_FEAT_CLOCKID] = "CLOCKID",
	[PERFREC_FEAT_DIR_FORMAT] = "DIR_FORMAT",
	[PERFREC_FEAT_BPF_PROG_INFO] = "BPF_PROG_INFO",
	[PERFREC_FEAT_BPF_BTF] = "BPF_BTF",
	[PERFREC_FEAT_COMPRESSED] = "COMPRESSED",
	[PERFREC_FEAT_CPU_PMU_CAPS] = "CPU_PMU_CAPS",
	[PERFREC_FEAT_CLOCK_DATA] = "CLOCK_DATA",
	[PERFREC_FEAT_HYBRID_TOPOLOGY] = "HYBRID_TOPOLOGY",
	[PERFREC_FEAT_PMU_CAPS] = "PMU_CAPS",
};

const char *perfrec_pdreader__feature_name(int feat)
{
	if (feat >= 0 && (size_t)feat < sizeof(feat_names) / sizeof(feat_names[0]))
		return feat_names[feat];
	return "UNKNOWN";
}

/* Record the first problem only: later ones are usually its consequences. */
__attribute__((format(printf, 3, 4)))
static int fail(struct perfrec_pdreader *r, uint64_t off, const char *fmt, ...)
{
	va_list ap;

	if (r->err[0])
		return -EBADMSG;
	va_start(ap, fmt);
	vsnprintf(r->err, sizeof(r->err), fmt, ap);
	va_end(ap);
	r->err_off = off;
	return -EBADMSG;
}

/* Is [off, off+size) inside [0, limit)?  Overflow-safe. */
static bool inside(uint64_t off, uint64_t size, uint64_t limit)
{
	return off <= limit && size <= limit - off;
}

static uint32_t get32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static uint64_t get64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static int cmp_id(const void *a, const void *b)
{
	const struct id_ent *x = a, *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

static bool check_magic(struct perfrec_pdreader *r)
{
	uint64_t magic;

	if (r->len < 8) {
		fail(r, r->len, "truncated header: file is %zu bytes, a perf.data header needs %zu",
		     r->len, sizeof(struct perfrec_file_header));
		return false;
	}
	magic = get64(r->buf);
	if (magic == PERFREC_MAGIC2)
		return true;
	if (magic == __builtin_bswap64(PERFREC_MAGIC2))
		fail(r, 0, "byte-swapped PERFILE2 magic: other-endian perf.data is not supported");
	else if (!memcmp(r->buf, "PERFFILE", 8))
		fail(r, 0, "old PERFFILE (version 1) perf.data is not supported");
	else
		fail(r, 0, "bad magic 0x%016llx: not a perf.data (PERFILE2) file",
		     (unsigned long long)magic);
	return false;
}

/*
 * In a stream, HEADER_TRACING_DATA {header, u32 size, u32 pad} is followed
 * by @size bytes outside any record (perf reads them straight from the
 * pipe).  The bytes the record and its data take from @pos, or 0 when they
 * do not fit in @len or the record is not one perf writes.
 */
static uint64_t tracing_data_span(const unsigned char *buf, uint64_t pos, uint64_t len)
{
	struct perf_event_header h;
	uint32_t size;

	if (pos > len || len - pos < 16)
		return 0;
	memcpy(&h, buf + pos, sizeof(h));
	if (h.size != 16)
		return 0;
	size = get32(buf + pos + 8);
	if (size % 8 || size > len - pos - 16)
		return 0;
	return 16 + (uint64_t)size;
}

/* Where load_pipe()'s two walks are: counting (pass 0), then copying. */
struct pipe_walk {
	int pass;
	uint64_t nr, nr_ids;	/* attrs and ids counted by pass 0 */
	size_t a, k;		/* next attr and id filled by pass 1 */
};

/* Room for the attrs and ids pass 0 counted. */
static bool pipe_alloc(struct perfrec_pdreader *r, uint64_t nr, uint64_t nr_ids)
{
	if (nr) {
		r->attrs = calloc(nr, sizeof(*r->attrs));
		r->ids_off = calloc(nr, sizeof(*r->ids_off));
		if (!r->attrs || !r->ids_off) {
			fail(r, 16, "out of memory for %llu attrs", (unsigned long long)nr);
			return false;
		}
	}
	if (nr_ids) {
		r->ids = malloc(nr_ids * 8);
		r->by_id = malloc(nr_ids * sizeof(*r->by_id));
		if (!r->ids || !r->by_id) {
			fail(r, 16, "out of memory for %llu ids", (unsigned long long)nr_ids);
			return false;
		}
	}
	return true;
}

/*
 * The HEADER_ATTR record @h at @pos: pass 0 counts it and its ids (and
 * reports it if bad), pass 1 copies them into the next free slots.  A bad
 * record is skipped by both.
 */
static void pipe_attr(struct perfrec_pdreader *r, uint64_t pos, const struct perf_event_header *h,
		      struct pipe_walk *w)
{
	uint32_t fsz = get32(r->buf + pos + 8 + 4);
	uint64_t asz = fsz ? fsz : PERF_ATTR_SIZE_VER0, n;
	bool ok = asz >= PERF_ATTR_SIZE_VER0 && asz <= MAX_ATTR_SIZE && asz <= h->size - 8u &&
		  (h->size - 8u - asz) % 8 == 0;
	struct perfrec_pdreader_attr *at;
	size_t cp;

	for (uint64_t b = sizeof(struct perf_event_attr); ok && b < asz; b++)
		ok = !r->buf[pos + 8 + b];
	if (!ok) {
		if (w->pass == 0)
			fail(r, pos, "HEADER_ATTR record (size %u) with bad attr size %u or nonzero bytes past the %zu-byte attr this reader knows",
			     h->size, fsz, sizeof(struct perf_event_attr));
		return;
	}
	n = (h->size - 8u - asz) / 8;
	if (w->pass == 0) {
		w->nr++;
		w->nr_ids += n;
		return;
	}
	at = &r->attrs[w->a];
	cp = asz < sizeof(at->attr) ? asz : sizeof(at->attr);
	memcpy(&at->attr, r->buf + pos + 8, cp);
	at->attr.size = (uint32_t)cp;
	at->ids = r->ids + w->k;
	at->nr_ids = n;
	r->ids_off[w->a] = pos + 8 + asz;
	memcpy(r->ids + w->k, r->buf + pos + 8 + asz, n * 8);
	for (size_t j = 0; j < n; j++) {
		r->by_id[w->k + j].id = r->ids[w->k + j];
		r->by_id[w->k + j].off = pos + 8 + asz + j * 8;
		r->by_id[w->k + j].attr = w->a;
	}
	w->k += n;
	w->a++;
}

/* A HEADER_FEATURE record (size @size at @pos) of pipe mode: where the feature is. */
static void pipe_feature(struct perfrec_pdreader *r, uint64_t pos, uint32_t size)
{
	uint64_t f = get64(r->buf + pos + 8);

	/* Ids past what we know (perf's end-of-features marker) carry nothing for us. */
	if (f > 0 && f < PERFREC_FEAT_BITS && f <= PERFREC_FEAT_LAST_KNOWN) {
		r->feats[f].offset = pos + 16;
		r->feats[f].size = size - 16u;
		r->has_feat[f] = true;
	}
}

/*
 * Pipe mode: no sections, so walk the records once for HEADER_ATTR and
 * HEADER_FEATURE.  A bad record only ends this walk: __next() and
 * __verify() report it when they reach it.
 */
static void load_pipe(struct perfrec_pdreader *r)
{
	struct pipe_walk w = {};
	uint64_t pos;

	r->pipe = true;
	r->hdr.magic = PERFREC_MAGIC2;
	r->hdr.size = PIPE_HEADER_SIZE;
	for (w.pass = 0; w.pass < 2; w.pass++) {
		w.a = w.k = 0;
		if (w.pass == 1 && !pipe_alloc(r, w.nr, w.nr_ids))
			return;
		for (pos = PIPE_HEADER_SIZE; r->len - pos >= sizeof(struct perf_event_header);) {
			struct perf_event_header h;

			memcpy(&h, r->buf + pos, sizeof(h));
			if (h.size < sizeof(h) || h.size > r->len - pos)
				break;
			if (h.type == PERFREC_RECORD_HEADER_ATTR && h.size >= 8 + PERF_ATTR_SIZE_VER0) {
				pipe_attr(r, pos, &h, &w);
			} else if (h.type == PERFREC_RECORD_HEADER_TRACING_DATA) {
				uint64_t span = tracing_data_span(r->buf, pos, r->len);

				if (!span)
					break;
				if (w.pass == 0) {
					r->feats[PERFREC_FEAT_TRACING_DATA].offset = pos + 16;
					r->feats[PERFREC_FEAT_TRACING_DATA].size = span - 16;
					r->has_feat[PERFREC_FEAT_TRACING_DATA] = true;
				}
				pos += span;
				continue;
			} else if (w.pass == 0 && h.type == PERFREC_RECORD_HEADER_FEATURE && h.size >= 16) {
				pipe_feature(r, pos, h.size);
			}
			pos += h.size;
		}
	}
	r->nr_attrs = w.nr;
	r->nr_ids = w.nr_ids;
	if (w.nr_ids)
		qsort(r->by_id, r->nr_ids, sizeof(*r->by_id), cmp_id);
	r->data_off = PIPE_HEADER_SIZE;
	r->data_end = r->len;
	r->pos = r->data_off;
	r->feats_valid = true;
	r->broken = false;
}

/* The header's attrs section fits the file and holds whole entries of a size we read. */
static bool check_attrs_section(struct perfrec_pdreader *r)
{
	const struct perfrec_file_header *h = &r->hdr;
	uint64_t entry = h->attr_size;

	if (!h->attrs.size)
		return true;
	if (entry < PERF_ATTR_SIZE_VER0 + sizeof(struct perfrec_file_section) ||
	    entry > MAX_ATTR_SIZE + sizeof(struct perfrec_file_section)) {
		fail(r, 16, "bad attr_size %llu", (unsigned long long)entry);
		return false;
	}
	if (!inside(h->attrs.offset, h->attrs.size, r->len)) {
		fail(r, 24, "attrs section (offset %llu, size %llu) runs past end of file (%zu bytes)",
		     (unsigned long long)h->attrs.offset, (unsigned long long)h->attrs.size, r->len);
		return false;
	}
	if (h->attrs.size % entry) {
		fail(r, 32, "attrs section size %llu is not a multiple of attr_size %llu",
		     (unsigned long long)h->attrs.size, (unsigned long long)entry);
		return false;
	}
	return true;
}

/*
 * Attr @i of the attrs section (entries of @entry bytes): copies the attr
 * and notes where its ids are, adding their size to *ids_total.
 */
static bool load_attr(struct perfrec_pdreader *r, uint64_t i, uint64_t entry, uint64_t *ids_total)
{
	uint64_t off = r->hdr.attrs.offset + i * entry;
	const unsigned char *a = r->buf + off;
	uint64_t asz = entry - sizeof(struct perfrec_file_section);
	uint32_t fsz = get32(a + 4);
	struct perfrec_file_section ids;

	if ((fsz ? fsz : PERF_ATTR_SIZE_VER0) != asz) {
		fail(r, off + 4, "attr %llu: size field %u does not match header attr_size %llu",
		     (unsigned long long)i, fsz, (unsigned long long)entry);
		return false;
	}
	/* A bigger attr than ours is only usable if we lose nothing (as perf). */
	for (uint64_t b = sizeof(struct perf_event_attr); b < asz; b++) {
		if (a[b]) {
			fail(r, off + b, "attr %llu: nonzero byte beyond the %zu-byte perf_event_attr this reader knows",
			     (unsigned long long)i, sizeof(struct perf_event_attr));
			return false;
		}
	}
	memcpy(&r->attrs[i].attr, a, asz < sizeof(struct perf_event_attr) ? asz : sizeof(struct perf_event_attr));
	r->attrs[i].attr.size = asz < sizeof(struct perf_event_attr) ? (uint32_t)asz : sizeof(struct perf_event_attr);
	memcpy(&ids, a + asz, sizeof(ids));
	if (!inside(ids.offset, ids.size, r->len)) {
		fail(r, off + asz, "attr %llu: ids section (offset %llu, size %llu) runs past end of file",
		     (unsigned long long)i, (unsigned long long)ids.offset, (unsigned long long)ids.size);
		return false;
	}
	if (ids.size % 8) {
		fail(r, off + asz + 8, "attr %llu: ids section size %llu is not a multiple of 8",
		     (unsigned long long)i, (unsigned long long)ids.size);
		return false;
	}
	/* Overlapping sections could multiply the memory we need: bound it. */
	*ids_total += ids.size;
	if (*ids_total > r->len) {
		fail(r, off + asz, "attr %llu: ids sections add up to more than the file", (unsigned long long)i);
		return false;
	}
	r->attrs[i].nr_ids = ids.size / 8;
	r->ids_off[i] = ids.offset;
	return true;
}

/* Copies the ids of every attr (@ids_total bytes) and sorts them for lookup. */
static bool load_ids(struct perfrec_pdreader *r, uint64_t ids_total)
{
	size_t k = 0;

	r->nr_ids = ids_total / 8;
	if (!r->nr_ids)
		return true;
	r->ids = malloc(ids_total);
	r->by_id = malloc(r->nr_ids * sizeof(*r->by_id));
	if (!r->ids || !r->by_id) {
		fail(r, r->hdr.attrs.offset, "out of memory for %zu ids", r->nr_ids);
		return false;
	}
	for (size_t i = 0; i < r->nr_attrs; i++) {
		r->attrs[i].ids = r->ids + k;
		memcpy(r->ids + k, r->buf + r->ids_off[i], r->attrs[i].nr_ids * 8);
		for (size_t j = 0; j < r->attrs[i].nr_ids; j++) {
			r->by_id[k + j].id = r->ids[k + j];
			r->by_id[k + j].off = r->ids_off[i] + j * 8;
			r->by_id[k + j].attr = i;
		}
		k += r->attrs[i].nr_ids;
	}
	qsort(r->by_id, r->nr_ids, sizeof(*r->by_id), cmp_id);
	return true;
}

/* The data section's bounds; salvage takes what it can locate. */
static bool locate_data(struct perfrec_pdreader *r)
{
	const struct perfrec_file_header *h = &r->hdr;

	r->data_off = h->data.offset;
	if (r->salvage) {
		if (h->data.offset < sizeof(*h) || h->data.offset > r->len) {
			r->data_off = r->data_end = 0; /* nothing locatable to salvage */
		} else if (h->data.size == 0 || !inside(h->data.offset, h->data.size, r->len)) {
			r->data_end = r->len;
		} else {
			r->data_end = h->data.offset + h->data.size;
		}
	} else if (h->data.size == 0 && h->data.offset == 0) {
		r->data_end = 0; /* the writer's placeholder header: no data yet */
	} else {
		if (h->data.offset < sizeof(*h)) {
			fail(r, 40, "data section offset %llu lies inside the header",
			     (unsigned long long)h->data.offset);
			return false;
		}
		if (!inside(h->data.offset, h->data.size, r->len)) {
			fail(r, 40, "data section (offset %llu, size %llu) runs past end of file (%zu bytes)",
			     (unsigned long long)h->data.offset, (unsigned long long)h->data.size, r->len);
			return false;
		}
		r->data_end = h->data.offset + h->data.size;
	}
	return true;
}

/* Header, attrs and their ids, data section: what __next() needs. */
static void load_structure(struct perfrec_pdreader *r)
{
	struct perfrec_file_header *h = &r->hdr;
	uint64_t nr, ids_total = 0;

	r->broken = true;
	if (!check_magic(r))
		return;
	if (r->len >= 16 && get64(r->buf + 8) == PIPE_HEADER_SIZE) {
		load_pipe(r);
		return;
	}
	if (r->len < sizeof(*h)) {
		fail(r, r->len, "truncated header: file is %zu bytes, a perf.data header needs %zu",
		     r->len, sizeof(*h));
		return;
	}
	memcpy(h, r->buf, sizeof(*h));
	if (h->size != sizeof(*h)) {
		fail(r, 8, "bad header size %llu (expected %zu)", (unsigned long long)h->size, sizeof(*h));
		memset(h, 0, sizeof(*h));
		return;
	}
	if (!check_attrs_section(r))
		return;
	nr = h->attrs.size ? h->attrs.size / h->attr_size : 0;
	if (nr) {
		r->attrs = calloc(nr, sizeof(*r->attrs));
		r->ids_off = calloc(nr, sizeof(*r->ids_off));
		if (!r->attrs || !r->ids_off) {
			fail(r, 24, "out of memory for %llu attrs", (unsigned long long)nr);
			return;
		}
	}
	r->nr_attrs = nr;
	for (uint64_t i = 0; i < nr; i++)
		if (!load_attr(r, i, h->attr_size, &ids_total))
			return;
	if (!load_ids(r, ids_total) || !locate_data(r))
		return;
	r->pos = r->data_off;
	r->broken = false;
}

/* The feature table after the data section; problems are not fatal to records. */
static void load_features(struct perfrec_pdreader *r)
{
	const struct perfrec_file_header *h = &r->hdr;
	uint64_t nr = 0, table, k = 0;

	if (r->broken || r->pipe)
		return;
	for (int f = 0; f < PERFREC_FEAT_BITS; f++)
		if (h->flags[f / 64] & (1ULL << (f % 64)))
			nr++;
	if (!nr) {
		r->feats_valid = true;
		return;
	}
	/* Salvaged data has no trustworthy end, hence no table to find. */
	if (r->salvage && (h->data.size == 0 || !inside(h->data.offset, h->data.size, r->len)))
		return;
	table = h->data.offset + h->data.size;
	if (!inside(table, nr * sizeof(struct perfrec_file_section), r->len)) {
		if (!r->salvage)
			fail(r, table, "feature section table (%llu entries) runs past end of file (%zu bytes)",
			     (unsigned long long)nr, r->len);
		return;
	}
	r->table_off = table;
	for (int f = 0; f < PERFREC_FEAT_BITS; f++) {
		struct perfrec_file_section s;
		uint64_t at;

		if (!(h->flags[f / 64] & (1ULL << (f % 64))))
			continue;
		at = table + k * sizeof(s);
		memcpy(&s, r->buf + at, sizeof(s));
		k++;
		if (!inside(s.offset, s.size, r->len)) {
			if (!r->salvage)
				fail(r, at, "feature %s section (offset %llu, size %llu) runs past end of file",
				     perfrec_pdreader__feature_name(f), (unsigned long long)s.offset,
				     (unsigned long long)s.size);
			memset(r->has_feat, 0, sizeof(r->has_feat));
			return;
		}
		r->feats[f] = s;
		r->has_feat[f] = true;
	}
	r->feats_valid = true;
}

/* A perf_header_string at @p with @avail bytes: its total size, or 0 if malformed. */
static uint64_t header_string(const unsigned char *p, uint64_t avail, const char **ret_str)
{
	uint32_t n;

	if (avail < 4)
		return 0;
	n = get32(p);
	if (n == 0 || n > avail - 4 || !memchr(p + 4, 0, n))
		return 0;
	if (ret_str)
		*ret_str = (const char *)p + 4;
	return 4 + (uint64_t)n;
}

/*
 * Walk HEADER_EVENT_DESC.  With @attach, name the attrs (by index, as perf
 * does); with @check, also compare attrs and ids to the attrs section.
 */
static int walk_event_desc(struct perfrec_pdreader *r, bool attach, bool check)
{
	const struct perfrec_file_section *s = &r->feats[PERFREC_FEAT_EVENT_DESC];
	const unsigned char *p = r->buf + s->offset;
	uint64_t avail = s->size, pos = 8;
	uint32_t nr, asz;

	if (avail < 8)
		return check ? fail(r, s->offset, "EVENT_DESC too short (%llu bytes)", (unsigned long long)avail) : -EBADMSG;
	nr = get32(p);
	asz = get32(p + 4);
	if (asz < PERF_ATTR_SIZE_VER0 || asz > MAX_ATTR_SIZE)
		return check ? fail(r, s->offset + 4, "EVENT_DESC: bad attr size %u", asz) : -EBADMSG;
	if (check && nr != r->nr_attrs)
		return fail(r, s->offset, "EVENT_DESC lists %u events but the file has %zu attrs", nr, r->nr_attrs);
	for (uint32_t i = 0; i < nr; i++) {
		uint64_t at = pos, n;
		const char *name = NULL;
		uint32_t nr_ids;

		if (avail - pos < (uint64_t)asz + 4)
			return check ? fail(r, s->offset + at, "EVENT_DESC event %u runs past its section", i) : -EBADMSG;
		if (check && i < r->nr_attrs) {
			size_t cmp = asz < r->attrs[i].attr.size ? asz : r->attrs[i].attr.size;

			/* Skip the size field: our copy's is clamped to our struct. */
			if (memcmp(p + pos, &r->attrs[i].attr, 4) ||
			    memcmp(p + pos + 8, (const unsigned char *)&r->attrs[i].attr + 8, cmp - 8))
				return fail(r, s->offset + at, "EVENT_DESC event %u: attr differs from attrs section entry %u", i, i);
		}
		pos += asz;
		nr_ids = get32(p + pos);
		pos += 4;
		n = header_string(p + pos, avail - pos, &name);
		if (!n)
			return check ? fail(r, s->offset + pos, "EVENT_DESC event %u: malformed name string", i) : -EBADMSG;
		pos += n;
		if ((avail - pos) / 8 < nr_ids)
			return check ? fail(r, s->offset + pos, "EVENT_DESC event %u: %u ids run past its section", i, nr_ids) : -EBADMSG;
		if (check && i < r->nr_attrs &&
		    (nr_ids != r->attrs[i].nr_ids ||
		     (nr_ids && memcmp(p + pos, r->attrs[i].ids, (size_t)nr_ids * 8))))
			return fail(r, s->offset + pos, "EVENT_DESC event %u: ids differ from attr %u's ids section", i, i);
		pos += (uint64_t)nr_ids * 8;
		if (attach && i < r->nr_attrs)
			r->attrs[i].name = name;
	}
	return 0;
}

static int load(struct perfrec_pdreader *r)
{
	r->scratch = malloc(PERFREC_RECORD_MAX + 8);
	if (!r->scratch)
		return -ENOMEM;
	load_structure(r);
	load_features(r);
	if (!r->broken && r->has_feat[PERFREC_FEAT_EVENT_DESC]) {
		/* Names only when the whole section parses: no half-named files. */
		if (walk_event_desc(r, false, false) == 0)
			walk_event_desc(r, true, false);
	}
	return 0;
}

/* A reader over @buf (malloc'd, taken over even on failure). */
static int open_owned(unsigned char *buf, size_t len, const struct perfrec_pdreader_opts *opts,
		      struct perfrec_pdreader **ret_reader)
{
	struct perfrec_pdreader *r;
	int ret;

	r = calloc(1, sizeof(*r));
	if (!r) {
		free(buf);
		return -ENOMEM;
	}
	r->salvage = PERFREC_OPTS_GET(opts, salvage, false);
	r->raw_compressed = PERFREC_OPTS_GET(opts, raw_compressed, false);
	r->buf = buf;
	r->len = len;
	ret = load(r);
	if (ret < 0) {
		perfrec_pdreader__free(r);
		return ret;
	}
	*ret_reader = r;
	return 0;
}

int perfrec_pdreader__open_fd(int fd, const struct perfrec_pdreader_opts *opts,
			      struct perfrec_pdreader **ret_reader)
{
	size_t len = 0, cap = 1 << 20;
	unsigned char *buf, *n;

	if (fd < 0 || !ret_reader || !PERFREC_OPTS_VALID(opts, struct perfrec_pdreader_opts))
		return -EINVAL;
	buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t k;

		if (len == cap) {
			if (cap > SIZE_MAX / 2) {
				free(buf);
				return -EFBIG;
			}
			n = realloc(buf, cap * 2);
			if (!n) {
				free(buf);
				return -ENOMEM;
			}
			buf = n;
			cap *= 2;
		}
		k = read(fd, buf + len, cap - len);
		if (k < 0) {
			int e = errno;

			if (e == EINTR)
				continue;
			free(buf);
			return -e;
		}
		if (k == 0)
			break;
		len += (size_t)k;
	}
	return open_owned(buf, len, opts, ret_reader);
}

bool perfrec_pdreader__is_pipe(const struct perfrec_pdreader *r)
{
	return r && r->pipe;
}

int perfrec_pdreader__open_mem(const void *buf, size_t len, const struct perfrec_pdreader_opts *opts,
			       struct perfrec_pdreader **ret_reader)
{
	struct perfrec_pdreader *r;
	unsigned char *copy;
	int ret;

	if ((len && !buf) || !ret_reader || !PERFREC_OPTS_VALID(opts, struct perfrec_pdreader_opts))
		return -EINVAL;
	copy = malloc(len ? len : 1);
	if (!copy)
		return -ENOMEM;
	if (len)
		memcpy(copy, buf, len);
	ret = open_owned(copy, len, opts, &r);
	if (ret < 0)
		return ret;
	*ret_reader = r;
	return 0;
}

int perfrec_pdreader__open(const char *path, const struct perfrec_pdreader_opts *opts,
			   struct perfrec_pdreader **ret_reader)
{
	struct perfrec_pdreader *r;
	struct stat st;
	int fd, ret;

	if (!path || !ret_reader || !PERFREC_OPTS_VALID(opts, struct perfrec_pdreader_opts))
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		close(fd);
		return ret;
	}
	if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode) || S_ISSOCK(st.st_mode)) {
		/* A stream (stdin, a pipe): read it whole. */
		ret = perfrec_pdreader__open_fd(fd, opts, ret_reader);
		close(fd);
		return ret;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		close(fd);
		return -ENOMEM;
	}
	r->salvage = PERFREC_OPTS_GET(opts, salvage, false);
	r->raw_compressed = PERFREC_OPTS_GET(opts, raw_compressed, false);
	r->len = (size_t)st.st_size;
	if (r->len) {
		r->buf = mmap(NULL, r->len, PROT_READ, MAP_PRIVATE, fd, 0);
		if (r->buf == MAP_FAILED) {
			ret = -errno;
			r->buf = NULL;
			close(fd);
			perfrec_pdreader__free(r);
			return ret;
		}
		r->mapped = true;
	}
	close(fd);
	ret = load(r);
	if (ret < 0) {
		perfrec_pdreader__free(r);
		return ret;
	}
	*ret_reader = r;
	return 0;
}

const struct perfrec_file_header *perfrec_pdreader__header(const struct perfrec_pdreader *r)
{
	return &r->hdr;
}

size_t perfrec_pdreader__nr_attrs(const struct perfrec_pdreader *r)
{
	return r->broken ? 0 : r->nr_attrs;
}

const struct perfrec_pdreader_attr *perfrec_pdreader__attr(const struct perfrec_pdreader *r, size_t idx)
{
	return idx < perfrec_pdreader__nr_attrs(r) ? &r->attrs[idx] : NULL;
}

const struct perfrec_pdreader_attr *perfrec_pdreader__attr_by_id(const struct perfrec_pdreader *r, uint64_t id)
{
	size_t lo = 0, hi = r->nr_ids;

	if (r->broken)
		return NULL;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r->by_id[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < r->nr_ids && r->by_id[lo].id == id)
		return &r->attrs[r->by_id[lo].attr];
	return NULL;
}

int perfrec_pdreader__feature(const struct perfrec_pdreader *r, int feat, const void **ret_data, size_t *ret_len)
{
	if (feat < 0 || feat >= PERFREC_FEAT_BITS || !r->has_feat[feat])
		return -ENOENT;
	if (ret_data)
		*ret_data = r->buf + r->feats[feat].offset;
	if (ret_len)
		*ret_len = (size_t)r->feats[feat].size;
	return 0;
}

/* The next record of the file itself (not of compressed contents). */
static int next_file_record(struct perfrec_pdreader *r, const struct perf_event_header **ret_rec,
			    uint64_t *ret_offset)
{
	struct perf_event_header h;
	uint64_t left;

	if (r->pos >= r->data_end)
		return 0;
	/*
	 * A sequential pass over a large file need not keep all of it
	 * resident: give back the mapped pages already read, every 2 MiB (the
	 * mapping is private and never written, so touching them again reads
	 * the same bytes back from the file).
	 */
	if (r->mapped && r->pos - r->released >= (2u << 20)) {
		uint64_t from = r->released & ~(uint64_t)4095, to = r->pos & ~(uint64_t)4095;

		if (to > from)
			madvise(r->buf + from, to - from, MADV_DONTNEED);
		r->released = to;
	}
	left = r->data_end - r->pos;
	if (left < sizeof(h)) {
		if (r->salvage)
			return 0;
		return fail(r, r->pos, "truncated record header: %llu bytes left in data section",
			    (unsigned long long)left);
	}
	memcpy(&h, r->buf + r->pos, sizeof(h));
	if (h.size < sizeof(h)) {
		if (r->salvage)
			return 0;
		return fail(r, r->pos, "record size %u is smaller than its 8-byte header (type %u)", h.size, h.type);
	}
	if (h.size > left) {
		if (r->salvage)
			return 0;
		return fail(r, r->pos, "record (type %u, size %u) runs past end of data section at %llu",
			    h.type, h.size, (unsigned long long)r->data_end);
	}
	if (r->pos % 8) {
		/* The header has 4-byte fields; readers must not see it misaligned. */
		memcpy(r->scratch, r->buf + r->pos, h.size);
		*ret_rec = (const struct perf_event_header *)r->scratch;
	} else {
		*ret_rec = (const struct perf_event_header *)(r->buf + r->pos);
	}
	*ret_offset = r->pos;
	r->pos += h.size;
	/* Its data follows the record in a stream; check_user_record() judges it. */
	if (r->pipe && h.type == PERFREC_RECORD_HEADER_TRACING_DATA) {
		uint64_t span = tracing_data_span(r->buf, *ret_offset, r->data_end);

		if (span)
			r->pos = *ret_offset + span;
	}
	return 1;
}

/*
 * The buffer one COMPRESSED record may fill: HEADER_COMPRESSED's mmap_len,
 * as perf sizes its own.  0 when the file gives none (and is not salvaged).
 */
static size_t mmap_len(const struct perfrec_pdreader *r)
{
	const unsigned char *p;
	size_t len;

	if (perfrec_pdreader__feature(r, PERFREC_FEAT_COMPRESSED, (const void **)&p, &len) == 0 &&
	    len >= sizeof(struct perfrec_compressed_feature)) {
		uint32_t v = get32(p + 16);

		return v > MAX_MMAP_LEN ? 0 : v;
	}
	return r->salvage ? DEFAULT_MMAP_LEN : 0;
}

/* Decompress a COMPRESSED record behind what is left of the previous one. */
static int inflate(struct perfrec_pdreader *r, const struct perf_event_header *rec, uint64_t off)
{
	size_t cap = mmap_len(r), rest = r->d_len - r->d_pos;
	ssize_t n;

	if (!cap)
		return fail(r, off, "COMPRESSED record but no usable HEADER_COMPRESSED feature (mmap_len) to size its buffer");
	if (!r->dz && perfrec_decompress__new(&r->dz) < 0)
		return fail(r, off, "out of memory for zstd decompression");
	/* A record cut by the previous frame's end is < 64 KiB. */
	if (r->dcap < cap + PERFREC_RECORD_MAX) {
		unsigned char *nb = realloc(r->dbuf, cap + PERFREC_RECORD_MAX);

		if (!nb)
			return fail(r, off, "out of memory for a %zu-byte decompression buffer", cap);
		r->dbuf = nb;
		r->dcap = cap + PERFREC_RECORD_MAX;
	}
	memmove(r->dbuf, r->dbuf + r->d_pos, rest);
	r->d_pos = 0;
	r->d_len = rest;
	n = perfrec_decompress__frame(r->dz, (const unsigned char *)rec + sizeof(*rec), rec->size - sizeof(*rec),
				      r->dbuf + rest, cap);
	if (n == -ENOSPC)
		return fail(r, off, "COMPRESSED record decompresses to more than mmap_len (%zu bytes)", cap);
	if (n < 0)
		return fail(r, off, "COMPRESSED record holds corrupt zstd data");
	if (n == 0)
		return fail(r, off, "COMPRESSED record decompresses to nothing (perf rejects it)");
	r->d_len += (size_t)n;
	r->d_rec_off = off;
	r->nr_frames++;
	r->comp_in += rec->size - sizeof(*rec);
	r->decomp_out += (uint64_t)n;
	if ((uint64_t)n > r->max_decomp)
		r->max_decomp = (uint64_t)n;
	return 0;
}

int perfrec_pdreader__next(struct perfrec_pdreader *r, const struct perf_event_header **ret_rec,
			   uint64_t *ret_offset)
{
	const struct perf_event_header *rec = NULL;
	struct perf_event_header h;
	uint64_t off = 0;
	int ret;

	if (r->broken)
		return -EBADMSG;
	for (;;) {
		size_t avail = r->d_len - r->d_pos;

		if (avail >= sizeof(h)) {
			memcpy(&h, r->dbuf + r->d_pos, sizeof(h));
			if (h.size < sizeof(h))
				return fail(r, r->d_rec_off, "record size %u inside COMPRESSED data is smaller than its header (type %u)",
					    h.size, h.type);
			if (h.type == PERFREC_RECORD_COMPRESSED)
				return fail(r, r->d_rec_off, "COMPRESSED record nested inside COMPRESSED data");
			if (h.size <= avail) {
				memcpy(r->scratch, r->dbuf + r->d_pos, h.size);
				r->d_pos += h.size;
				*ret_rec = (const struct perf_event_header *)r->scratch;
				if (ret_offset)
					*ret_offset = r->d_rec_off;
				return 1;
			}
		}
		ret = next_file_record(r, &rec, &off);
		if (ret <= 0) {
			if (ret == 0 && avail && !r->salvage)
				return fail(r, r->d_rec_off, "record cut at the end of the COMPRESSED data (%zu bytes left over)", avail);
			return ret;
		}
		if (rec->type != PERFREC_RECORD_COMPRESSED || r->raw_compressed) {
			if (avail)
				return fail(r, r->d_rec_off, "record cut at the end of COMPRESSED data, followed by a plain record at %llu",
					    (unsigned long long)off);
			*ret_rec = rec;
			if (ret_offset)
				*ret_offset = off;
			return 1;
		}
		ret = inflate(r, rec, off);
		if (ret < 0)
			return ret;
	}
}

void perfrec_pdreader__rewind(struct perfrec_pdreader *r)
{
	r->pos = r->data_off;
	r->d_len = r->d_pos = 0;
	r->nr_frames = r->comp_in = r->decomp_out = r->max_decomp = 0;
	perfrec_decompress__reset(r->dz);
}

const char *perfrec_pdreader__error(const struct perfrec_pdreader *r, uint64_t *ret_offset)
{
	if (ret_offset)
		*ret_offset = r->err[0] ? r->err_off : 0;
	return r->err;
}

/* ---- verification ------------------------------------------------------ */

struct span {
	uint64_t off, size;
	char what[40];
};

static int cmp_span(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	if (x->off != y->off)
		return x->off < y->off ? -1 : 1;
	return x->size < y->size ? -1 : x->size > y->size;
}

static int check_overlaps(struct perfrec_pdreader *r)
{
	size_t max = 4 + r->nr_attrs + PERFREC_FEAT_BITS, n = 0;
	struct span *s = calloc(max, sizeof(*s));
	int ret = 0;

	if (!s)
		return -ENOMEM;
#define ADD(o, sz, ...) do { if ((sz) > 0) { s[n].off = (o); s[n].size = (sz); \
	snprintf(s[n].what, sizeof(s[n].what), __VA_ARGS__); n++; } } while (0)
	ADD(0, sizeof(struct perfrec_file_header), "header");
	ADD(r->hdr.attrs.offset, r->hdr.attrs.size, "attrs section");
	for (size_t i = 0; i < r->nr_attrs; i++)
		ADD(r->ids_off[i], r->attrs[i].nr_ids * 8, "ids of attr %zu", i);
	ADD(r->data_off, r->data_end - r->data_off, "data section");
	if (r->table_off) {
		uint64_t nr = 0;

		for (int f = 0; f < PERFREC_FEAT_BITS; f++)
			nr += r->has_feat[f];
		ADD(r->table_off, nr * sizeof(struct perfrec_file_section), "feature table");
	}
	for (int f = 0; f < PERFREC_FEAT_BITS; f++)
		if (r->has_feat[f])
			ADD(r->feats[f].offset, r->feats[f].size, "feature %s", perfrec_pdreader__feature_name(f));
#undef ADD
	qsort(s, n, sizeof(*s), cmp_span);
	for (size_t i = 1; i < n; i++) {
		if (s[i].off < s[i - 1].off + s[i - 1].size) {
			ret = fail(r, s[i].off, "%s overlaps %s", s[i].what, s[i - 1].what);
			break;
		}
	}
	free(s);
	return ret;
}

static int check_string_list(struct perfrec_pdreader *r, const struct perfrec_file_section *s, const char *what)
{
	const unsigned char *p = r->buf + s->offset;
	uint64_t pos = 4;
	uint32_t nr;

	if (s->size < 4)
		return fail(r, s->offset, "%s too short (%llu bytes)", what, (unsigned long long)s->size);
	nr = get32(p);
	for (uint32_t i = 0; i < nr; i++) {
		uint64_t n = header_string(p + pos, s->size - pos, NULL);

		if (!n)
			return fail(r, s->offset + pos, "%s: string %u of %u malformed or past its section", what, i, nr);
		pos += n;
	}
	return 0;
}

static int check_build_ids(struct perfrec_pdreader *r, const struct perfrec_file_section *s)
{
	const unsigned char *p = r->buf + s->offset;
	/* header, pid, build_id[24], then a NUL-terminated file name */
	const uint64_t fixed = 8 + 4 + 24;
	uint64_t pos = 0;

	while (pos < s->size) {
		uint64_t left = s->size - pos;
		uint16_t size;

		if (left < 8)
			return fail(r, s->offset + pos, "BUILD_ID: truncated entry header");
		memcpy(&size, p + pos + 6, 2);
		if (size < fixed + 1 || size > left)
			return fail(r, s->offset + pos, "BUILD_ID: entry size %u out of bounds", size);
		if (!memchr(p + pos + fixed, 0, size - fixed))
			return fail(r, s->offset + pos, "BUILD_ID: file name not NUL-terminated");
		pos += size;
	}
	return 0;
}

static int check_features(struct perfrec_pdreader *r)
{
	static const struct { int feat; uint64_t size; } fixed[] = {
		{ PERFREC_FEAT_NRCPUS, 8 }, { PERFREC_FEAT_TOTAL_MEM, 8 }, { PERFREC_FEAT_CLOCKID, 8 },
		{ PERFREC_FEAT_CLOCK_DATA, 24 }, { PERFREC_FEAT_SAMPLE_TIME, 16 },
	};
	static const int strings[] = {
		PERFREC_FEAT_HOSTNAME, PERFREC_FEAT_OSRELEASE, PERFREC_FEAT_VERSION,
		PERFREC_FEAT_ARCH, PERFREC_FEAT_CPUDESC, PERFREC_FEAT_CPUID,
	};
	uint64_t k = 0;
	int ret;

	/*
	 * perf writes an empty section for a feature it failed to gather and
	 * ignores it; hotspot's perfparser rejects one ("Feature announced in
	 * header but not present"), so a sound file has none.
	 */
	for (int f = 0; f < PERFREC_FEAT_BITS; f++) {
		if (!r->has_feat[f])
			continue;
		if (r->feats[f].size == 0)
			return fail(r, r->pipe ? r->feats[f].offset : r->table_off + k * sizeof(struct perfrec_file_section),
				    "feature %s announced in the header but its section is empty",
				    perfrec_pdreader__feature_name(f));
		k++;
	}
	for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++) {
		const struct perfrec_file_section *s = &r->feats[strings[i]];
		uint64_t n;

		if (!r->has_feat[strings[i]])
			continue;
		n = header_string(r->buf + s->offset, s->size, NULL);
		if (!n)
			return fail(r, s->offset, "feature %s: malformed string (length past section or no NUL)",
				    perfrec_pdreader__feature_name(strings[i]));
	}
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
		const struct perfrec_file_section *s = &r->feats[fixed[i].feat];

		if (r->has_feat[fixed[i].feat] && s->size != fixed[i].size)
			return fail(r, s->offset, "feature %s: size %llu, expected %llu",
				    perfrec_pdreader__feature_name(fixed[i].feat),
				    (unsigned long long)s->size, (unsigned long long)fixed[i].size);
	}
	if (r->has_feat[PERFREC_FEAT_CMDLINE]) {
		ret = check_string_list(r, &r->feats[PERFREC_FEAT_CMDLINE], "feature CMDLINE");
		if (ret < 0)
			return ret;
	}
	if (r->has_feat[PERFREC_FEAT_BUILD_ID]) {
		ret = check_build_ids(r, &r->feats[PERFREC_FEAT_BUILD_ID]);
		if (ret < 0)
			return ret;
	}
	if (r->has_feat[PERFREC_FEAT_EVENT_DESC]) {
		ret = walk_event_desc(r, false, true);
		if (ret < 0)
			return ret;
	}
	/* perf dereferences these arrays as they come: check them (lib/bpf-meta.c). */
	if (r->has_feat[PERFREC_FEAT_BPF_PROG_INFO] &&
	    perfrec_bpfmeta__parse_prog_info(r->buf + r->feats[PERFREC_FEAT_BPF_PROG_INFO].offset,
					     r->feats[PERFREC_FEAT_BPF_PROG_INFO].size, NULL, NULL) < 0)
		return fail(r, r->feats[PERFREC_FEAT_BPF_PROG_INFO].offset,
			    "feature BPF_PROG_INFO: malformed (an entry or one of its arrays runs past the section, or its bpf_prog_info is longer than perf's)");
	if (r->has_feat[PERFREC_FEAT_BPF_BTF] &&
	    perfrec_bpfmeta__parse_btf(r->buf + r->feats[PERFREC_FEAT_BPF_BTF].offset,
				       r->feats[PERFREC_FEAT_BPF_BTF].size, NULL, NULL) < 0)
		return fail(r, r->feats[PERFREC_FEAT_BPF_BTF].offset,
			    "feature BPF_BTF: malformed (a BTF object runs past the section)");
	return 0;
}

enum id_mode { ID_NONE, ID_IDENTIFIER, ID_SINGLE, ID_SAME_LAYOUT };

static enum id_mode sample_id_mode(const struct perfrec_pdreader *r, bool *ret_trailer_ids)
{
	bool all_ident = r->nr_attrs > 0, all_sid = r->nr_attrs > 0, same = true, all_id = true;

	for (size_t i = 0; i < r->nr_attrs; i++) {
		const struct perf_event_attr *a = &r->attrs[i].attr;

		all_ident &= !!(a->sample_type & PERF_SAMPLE_IDENTIFIER);
		all_sid &= !!a->sample_id_all;
		all_id &= !!(a->sample_type & PERF_SAMPLE_ID);
		same &= a->sample_type == r->attrs[0].attr.sample_type &&
			a->read_format == r->attrs[0].attr.read_format;
	}
	*ret_trailer_ids = all_ident && all_sid;
	if (all_ident)
		return ID_IDENTIFIER;
	if (r->nr_attrs == 1)
		return ID_SINGLE;
	if (r->nr_attrs > 1 && all_id && same)
		return ID_SAME_LAYOUT;
	return ID_NONE;
}

static size_t attr_index(const struct perfrec_pdreader *r, const struct perfrec_pdreader_attr *a)
{
	return (size_t)(a - r->attrs);
}

/* HEADER_NRCPUS' count of available CPUs, 0 when the file has none. */
static uint32_t nr_cpus_avail(const struct perfrec_pdreader *r)
{
	if (!r->has_feat[PERFREC_FEAT_NRCPUS] || r->feats[PERFREC_FEAT_NRCPUS].size < 4)
		return 0;
	return get32(r->buf + r->feats[PERFREC_FEAT_NRCPUS].offset);
}

/*
 * perf indexes per-CPU state by a record's cpu: a garbage one (1 << 24 and
 * up, found by fuzzing) makes perf script, report and perfparser crash.
 * Refuse what no recording host has: at or past both the file's CPU count
 * and 4096 (hosts beyond that are not worth a false alarm).  -1 is perf's
 * "any CPU".
 */
static bool cpu_plausible(const struct perfrec_pdreader *r, uint32_t cpu)
{
	return cpu == UINT32_MAX || cpu < MAX_CPUS || cpu < nr_cpus_avail(r);
}

static int check_sample(struct perfrec_pdreader *r, const struct perf_event_header *rec, uint64_t off,
			enum id_mode mode)
{
	const struct perfrec_pdreader_attr *a = NULL;
	struct perfrec_sample s;
	uint64_t id = 0;

	switch (mode) {
	case ID_NONE:
		return fail(r, off, "SAMPLE cannot be attributed: %s",
			    r->nr_attrs ? "attrs differ in layout and lack PERF_SAMPLE_IDENTIFIER" : "file has no attrs");
	case ID_SINGLE:
		a = &r->attrs[0];
		break;
	case ID_IDENTIFIER:
		if (rec->size < 16)
			return fail(r, off, "SAMPLE too short to hold its identifier (size %u)", rec->size);
		memcpy(&id, rec + 1, 8);
		a = perfrec_pdreader__attr_by_id(r, id);
		break;
	case ID_SAME_LAYOUT:
		if (perfrec_sample__parse_attr(rec, &r->attrs[0].attr, &s) < 0)
			return fail(r, off, "SAMPLE does not parse for sample_type 0x%llx",
				    (unsigned long long)r->attrs[0].attr.sample_type);
		id = s.id;
		a = perfrec_pdreader__attr_by_id(r, id);
		break;
	}
	if (!a)
		return fail(r, off, "SAMPLE with unknown id %llu", (unsigned long long)id);
	if (perfrec_sample__parse_attr(rec, &a->attr, &s) < 0)
		return fail(r, off, "SAMPLE (size %u) does not parse for its attr's sample_type 0x%llx read_format 0x%llx",
			    rec->size, (unsigned long long)a->attr.sample_type, (unsigned long long)a->attr.read_format);

	if ((a->attr.sample_type & PERF_SAMPLE_CPU) && !cpu_plausible(r, s.cpu))
		return fail(r, off, "SAMPLE on cpu %u, which no host has (the file's NRCPUS says %u)",
			    s.cpu, nr_cpus_avail(r));

	r->stats.nr_samples++;
	r->per_attr[attr_index(r, a)]++;
	if (s.stack_size) {
		r->stats.stack_samples++;
		r->stats.stack_bytes += s.stack_size;
		r->stats.stack_dyn_bytes += s.stack_dyn_size;
	}
	if (a->attr.sample_type & PERF_SAMPLE_CPU) {
		if (s.cpu < MAX_CPUS) {
			r->per_cpu[s.cpu]++;
			if (s.cpu >= r->stats.nr_cpus)
				r->stats.nr_cpus = s.cpu + 1;
		} else {
			r->stats.samples_other_cpu++;
		}
	} else {
		r->stats.samples_other_cpu++;
	}
	if (a->attr.sample_type & PERF_SAMPLE_TIME) {
		if (!r->stats.has_time || s.time < r->stats.first_time)
			r->stats.first_time = s.time;
		if (!r->stats.has_time || s.time > r->stats.last_time)
			r->stats.last_time = s.time;
		r->stats.has_time = true;
	}
	return 0;
}

/*
 * What a kernel record holds between its header and its sample_id trailer:
 * the fixed fields' bytes and, where a C string follows them (a comm, a file
 * or symbol name), its offset.  Readers take those strings as they come, so
 * one without a NUL inside its record is damage.  perf 6.1 knows the types up
 * to AUX_OUTPUT_HW_ID (21); NAMESPACES and TEXT_POKE also carry counts.
 */
static const struct { uint16_t fixed; uint16_t str; } kernel_body[] = {
	[PERF_RECORD_MMAP] = { 32, 32 },            /* pid tid addr len pgoff filename */
	[PERF_RECORD_LOST] = { 16, 0 },             /* id lost */
	[PERF_RECORD_COMM] = { 8, 8 },              /* pid tid comm */
	[PERF_RECORD_EXIT] = { 24, 0 },             /* pid ppid tid ptid time */
	[PERF_RECORD_THROTTLE] = { 24, 0 },         /* time id stream_id */
	[PERF_RECORD_UNTHROTTLE] = { 24, 0 },
	[PERF_RECORD_FORK] = { 24, 0 },
	[PERF_RECORD_READ] = { 16, 0 },             /* pid tid value */
	[PERF_RECORD_MMAP2] = { 64, 64 },           /* ... maj min ino/build id, prot flags, filename */
	[PERF_RECORD_AUX] = { 24, 0 },              /* aux_offset aux_size flags */
	[PERF_RECORD_ITRACE_START] = { 8, 0 },      /* pid tid */
	[PERF_RECORD_LOST_SAMPLES] = { 8, 0 },      /* lost */
	[PERF_RECORD_SWITCH] = { 0, 0 },
	[PERF_RECORD_SWITCH_CPU_WIDE] = { 8, 0 },   /* next_prev_pid next_prev_tid */
	[PERF_RECORD_NAMESPACES] = { 16, 0 },       /* pid tid nr, then nr {dev, ino} */
	[PERF_RECORD_KSYMBOL] = { 16, 16 },         /* addr len ksym_type flags name */
	[PERF_RECORD_BPF_EVENT] = { 16, 0 },        /* type flags id tag */
	[PERF_RECORD_CGROUP] = { 8, 8 },            /* id path */
	[PERF_RECORD_TEXT_POKE] = { 12, 0 },        /* addr old_len new_len bytes */
	[PERF_RECORD_AUX_OUTPUT_HW_ID] = { 8, 0 },  /* hw_id */
};
#define KERNEL_TYPES_KNOWN (sizeof(kernel_body) / sizeof(kernel_body[0]))

static int check_kernel_body(struct perfrec_pdreader *r, const struct perf_event_header *rec, uint64_t off,
			     size_t trailer)
{
	const unsigned char *p = (const unsigned char *)(rec + 1);
	const char *name = perfrec_event__type_name(rec->type);
	size_t body = rec->size - sizeof(*rec), need;

	if (trailer > body)
		return fail(r, off, "%s too short for its sample_id trailer (size %u)", name, rec->size);
	body -= trailer;
	need = kernel_body[rec->type].fixed;
	if (rec->type == PERF_RECORD_NAMESPACES && body >= need)
		need += (size_t)(get64(p + 8) <= body / 16 ? get64(p + 8) * 16 : body + 1);
	else if (rec->type == PERF_RECORD_TEXT_POKE && body >= need)
		need += (size_t)(p[8] | p[9] << 8) + (size_t)(p[10] | p[11] << 8);
	if (body < need)
		return fail(r, off, "%s record too short for its fields (size %u, its fields need %zu bytes before the sample_id trailer)",
			    name, rec->size, need + sizeof(*rec));
	if (kernel_body[rec->type].str &&
	    (body <= kernel_body[rec->type].str ||
	     !memchr(p + kernel_body[rec->type].str, '\0', body - kernel_body[rec->type].str)))
		return fail(r, off, "%s record without a NUL-terminated %s (size %u)", name,
			    rec->type == PERF_RECORD_COMM ? "comm" : rec->type == PERF_RECORD_CGROUP ? "path" : "name",
			    rec->size);
	return 0;
}

/* perf_record_cpu_map_data (perf 6.1 layout, packed) in @len bytes at @p. */
static bool cpu_map_data_ok(const unsigned char *p, size_t len)
{
	uint16_t type, nr, long_size;

	if (len < 4)
		return false;
	type = (uint16_t)(p[0] | p[1] << 8);
	nr = (uint16_t)(p[2] | p[3] << 8);
	switch (type) {
	case 0: /* PERF_CPU_MAP__CPUS: nr, cpu[nr] */
		return 4 + (size_t)nr * 2 <= len;
	case 1: /* PERF_CPU_MAP__MASK: nr, long_size, then u32 or (after 4 pad bytes) u64 masks */
		if (len < 6)
			return false;
		long_size = (uint16_t)(p[4] | p[5] << 8);
		if (long_size == 4)
			return 6 + (size_t)nr * 4 <= len;
		if (long_size == 8)
			return 10 + (size_t)nr * 8 <= len;
		return false;
	case 2: /* PERF_CPU_MAP__RANGE_CPUS: any_cpu, pad, start_cpu, end_cpu */
		return len >= 8;
	default:
		return false;
	}
}

/* ID_INDEX: nr, then nr { id, idx, cpu, tid }, each id one of the file's. */
static int check_id_index(struct perfrec_pdreader *r, const struct perf_event_header *rec, uint64_t off)
{
	const unsigned char *p = (const unsigned char *)rec;
	size_t size = rec->size;
	uint64_t nr;

	if (size < 16)
		return fail(r, off, "ID_INDEX record too short (size %u)", rec->size);
	nr = get64(p + 8);
	if (nr > (size - 16) / 32)
		return fail(r, off, "ID_INDEX record lists %llu entries but has room for %zu",
			    (unsigned long long)nr, (size - 16) / 32);
	for (uint64_t i = 0; i < nr; i++) {
		uint64_t id = get64(p + 16 + i * 32);

		if (!perfrec_pdreader__attr_by_id(r, id))
			return fail(r, off, "ID_INDEX record names unknown id %llu", (unsigned long long)id);
	}
	return 0;
}

/* EVENT_UPDATE: type, id, then a unit or name string, a double scale, or a cpu map. */
static int check_event_update(struct perfrec_pdreader *r, const struct perf_event_header *rec, uint64_t off)
{
	const unsigned char *p = (const unsigned char *)rec;
	size_t size = rec->size;
	uint64_t type, id;

	if (size < 24)
		return fail(r, off, "EVENT_UPDATE record too short (size %u)", rec->size);
	type = get64(p + 8);
	id = get64(p + 16);
	if (!perfrec_pdreader__attr_by_id(r, id))
		return fail(r, off, "EVENT_UPDATE record for unknown id %llu", (unsigned long long)id);
	if ((type == 0 || type == 2) && !memchr(p + 24, '\0', size - 24))
		return fail(r, off, "EVENT_UPDATE record's %s is not NUL-terminated", type ? "name" : "unit");
	if (type == 1 && size < 32)
		return fail(r, off, "EVENT_UPDATE record too short for its scale (size %u)", rec->size);
	if (type == 3 && !cpu_map_data_ok(p + 24, size - 24))
		return fail(r, off, "EVENT_UPDATE record's cpu map is of unknown kind or runs past it");
	return 0;
}

/*
 * The records perf writes beside the kernel's (types 64 and up): each must
 * hold what perf 6.1 reads from it, or perf script stops at it (ID_INDEX
 * naming an unknown id, a THREAD_MAP or CPU_MAP whose entries run past it)
 * or even crashes (STAT_ROUND).  Types a profile has no business carrying,
 * which perf cannot process here either, are refused outright.
 */
static int check_user_record(struct perfrec_pdreader *r, const struct perf_event_header *rec, uint64_t off)
{
	const unsigned char *p = (const unsigned char *)rec;
	const char *name = perfrec_event__type_name(rec->type);
	size_t size = rec->size;

	switch (rec->type) {
	case PERFREC_RECORD_HEADER_ATTR:
		/* Pipe data: checked and taken in load_pipe(). */
		if (!r->pipe)
			return fail(r, off, "HEADER_ATTR record in a file that has an attrs section (perf would take it as another event)");
		return 0;
	case PERFREC_RECORD_HEADER_TRACING_DATA:
		if (!r->pipe)
			return fail(r, off, "TRACING_DATA record in a file (perf reads a file's tracing data from its HEADER_TRACING_DATA feature)");
		if (!tracing_data_span(r->buf, off, r->data_end))
			return fail(r, off, "TRACING_DATA record (size %u) whose data is not a multiple of 8 bytes or runs past the stream",
				    rec->size);
		return 0;
	case PERFREC_RECORD_HEADER_BUILD_ID:
		/* pid, build_id[24], NUL-terminated file name */
		if (size < 8 + 4 + 24 + 1 || !memchr(p + 36, '\0', size - 36))
			return fail(r, off, "HEADER_BUILD_ID record too short or its file name not NUL-terminated (size %u)", rec->size);
		return 0;
	case PERFREC_RECORD_ID_INDEX:
		return check_id_index(r, rec, off);
	case PERFREC_RECORD_AUXTRACE_INFO:
	case PERFREC_RECORD_AUXTRACE:
	case PERFREC_RECORD_AUXTRACE_ERROR:
		return fail(r, off, "%s record: AUX area tracing data is not supported", name);
	case PERFREC_RECORD_THREAD_MAP: {
		/* nr, then nr { pid, comm[16] } */
		uint64_t nr = size >= 16 ? get64(p + 8) : 0;

		if (size < 16 || nr > (size - 16) / 24)
			return fail(r, off, "THREAD_MAP record's entries run past it (size %u, %llu entries)",
				    rec->size, (unsigned long long)nr);
		return 0;
	}
	case PERFREC_RECORD_CPU_MAP:
		if (!cpu_map_data_ok(p + 8, size - 8))
			return fail(r, off, "CPU_MAP record of unknown kind or with cpus running past it (size %u)", rec->size);
		return 0;
	case PERFREC_RECORD_STAT_CONFIG: {
		/* nr, then nr { tag, val } */
		uint64_t nr = size >= 16 ? get64(p + 8) : 0;

		if (size < 16 || nr > (size - 16) / 16)
			return fail(r, off, "STAT_CONFIG record's entries run past it (size %u)", rec->size);
		return 0;
	}
	case PERFREC_RECORD_STAT:
	case PERFREC_RECORD_STAT_ROUND:
		return fail(r, off, "%s record: perf stat counts are not profile data (perf script fails on them)", name);
	case PERFREC_RECORD_EVENT_UPDATE:
		return check_event_update(r, rec, off);
	case PERFREC_RECORD_TIME_CONV:
		if (size < 32)
			return fail(r, off, "TIME_CONV record too short (size %u)", rec->size);
		return 0;
	case PERFREC_RECORD_HEADER_FEATURE:
		if (size < 16)
			return fail(r, off, "HEADER_FEATURE record too short (size %u)", rec->size);
		return 0;
	case PERFREC_RECORD_COMPRESSED2:
		return fail(r, off, "COMPRESSED2 record: perf 6.1 does not read it (only COMPRESSED, type 81)");
	default: /* HEADER_EVENT_TYPE, FINISHED_ROUND, COMPRESSED (raw), FINISHED_INIT */
		return 0;
	}
}

static int check_record(struct perfrec_pdreader *r, const struct perf_event_header *rec, uint64_t off,
			enum id_mode mode, bool trailer_ids)
{
	bool kernel = rec->type > 0 && rec->type < KERNEL_TYPES_KNOWN;
	bool user = rec->type >= PERFREC_RECORD_HEADER_ATTR && rec->type < PERFREC_RECORD_USER_MAX;
	size_t trailer = 0;
	int ret;

	if (!kernel && !user)
		return fail(r, off, "unknown record type %u (size %u)", rec->type, rec->size);
	r->stats.by_type[rec->type]++;
	if (rec->type == PERF_RECORD_SAMPLE)
		return check_sample(r, rec, off, mode);
	if (user)
		return check_user_record(r, rec, off);
	if (trailer_ids) {
		const struct perfrec_pdreader_attr *a;
		struct perfrec_sample_id sid;
		uint64_t id;

		if (rec->size < 16)
			return fail(r, off, "%s too short for its sample_id trailer (size %u)",
				    perfrec_event__type_name(rec->type), rec->size);
		memcpy(&id, (const unsigned char *)rec + rec->size - 8, 8);
		/*
		 * perf record stamps the records it synthesizes with id 0 (and
		 * the first event's trailer layout); accept that convention.
		 */
		a = id == 0 ? &r->attrs[0] : perfrec_pdreader__attr_by_id(r, id);
		if (!a)
			return fail(r, off, "%s with unknown id %llu in its sample_id trailer",
				    perfrec_event__type_name(rec->type), (unsigned long long)id);
		ret = perfrec_sample_id__parse(rec, a->attr.sample_type, &sid);
		if (ret < 0)
			return fail(r, off, "%s too short for its sample_id trailer (size %u)",
				    perfrec_event__type_name(rec->type), rec->size);
		if ((a->attr.sample_type & PERF_SAMPLE_CPU) && !cpu_plausible(r, sid.cpu))
			return fail(r, off, "%s on cpu %u, which no host has (the file's NRCPUS says %u)",
				    perfrec_event__type_name(rec->type), sid.cpu, nr_cpus_avail(r));
		trailer = perfrec_sample_id__size(a->attr.sample_type);
	}
	ret = check_kernel_body(r, rec, off, trailer);
	if (ret < 0)
		return ret;
	if (rec->type == PERF_RECORD_LOST) {
		uint64_t lost;

		memcpy(&lost, (const unsigned char *)rec + 16, 8);
		r->stats.lost += lost;
	} else if (rec->type == PERF_RECORD_LOST_SAMPLES) {
		uint64_t lost;

		memcpy(&lost, (const unsigned char *)rec + 8, 8);
		r->stats.lost_samples += lost;
	}
	return 0;
}

static void reset_stats(struct perfrec_pdreader *r)
{
	memset(&r->stats, 0, sizeof(r->stats));
	if (r->per_attr)
		memset(r->per_attr, 0, r->nr_attrs * sizeof(*r->per_attr));
	if (r->per_cpu)
		memset(r->per_cpu, 0, MAX_CPUS * sizeof(*r->per_cpu));
	r->stats.samples_per_attr = r->per_attr;
	r->stats.samples_per_cpu = r->per_cpu;
}

static int alloc_stats(struct perfrec_pdreader *r)
{
	if (!r->per_cpu) {
		r->per_cpu = calloc(MAX_CPUS, sizeof(*r->per_cpu));
		r->per_attr = calloc(r->nr_attrs ? r->nr_attrs : 1, sizeof(*r->per_attr));
		if (!r->per_cpu || !r->per_attr)
			return -ENOMEM;
		r->stats.samples_per_attr = r->per_attr;
		r->stats.samples_per_cpu = r->per_cpu;
	}
	return 0;
}

int perfrec_pdreader__check_record(struct perfrec_pdreader *r, const struct perf_event_header *rec,
				   uint64_t offset)
{
	bool trailer_ids;
	enum id_mode mode;
	int ret;

	if (!r || !rec || rec->size < sizeof(*rec))
		return -EINVAL;
	if (r->broken)
		return fail(r, 0, "file structure unusable");
	ret = alloc_stats(r);
	if (ret < 0)
		return ret;
	mode = sample_id_mode(r, &trailer_ids);
	return check_record(r, rec, offset, mode, trailer_ids);
}

int perfrec_pdreader__verify(struct perfrec_pdreader *r)
{
	const struct perf_event_header *rec;
	enum id_mode mode;
	bool trailer_ids;
	uint64_t off;
	int ret;

	ret = alloc_stats(r);
	if (ret < 0)
		return ret;
	reset_stats(r);
	if (r->err[0])
		return -EBADMSG; /* found while opening */
	if (r->broken)
		return fail(r, 0, "file structure unusable");

	for (size_t i = 1; i < r->nr_ids; i++)
		if (r->by_id[i].id == r->by_id[i - 1].id)
			return fail(r, r->by_id[i].off, "duplicate id %llu (attrs %zu and %zu)",
				    (unsigned long long)r->by_id[i].id, r->by_id[i - 1].attr, r->by_id[i].attr);
	if (r->hdr.event_types.size && !inside(r->hdr.event_types.offset, r->hdr.event_types.size, r->len))
		return fail(r, 56, "event_types section runs past end of file");
	ret = r->pipe ? 0 : check_overlaps(r);
	if (ret < 0)
		return ret;
	ret = check_features(r);
	if (ret < 0)
		return ret;
	/*
	 * perf: "data size field is 0 which is unexpected", and it reads
	 * nothing.  (Salvage reads a .tmp's records to its end instead.)
	 */
	if (!r->pipe && r->data_end <= r->data_off)
		return fail(r, 48, "data section is empty (data size 0): no records, and perf refuses the file");

	mode = sample_id_mode(r, &trailer_ids);
	perfrec_pdreader__rewind(r);
	while ((ret = perfrec_pdreader__next(r, &rec, &off)) > 0) {
		r->stats.nr_records++;
		ret = check_record(r, rec, off, mode, trailer_ids);
		if (ret < 0)
			break;
	}
	r->stats.by_type[PERFREC_RECORD_COMPRESSED] += r->nr_frames;
	r->stats.compressed_in = r->comp_in;
	r->stats.decompressed_out = r->decomp_out;
	r->stats.max_decompressed = r->max_decomp;
	perfrec_pdreader__rewind(r);
	return ret < 0 ? ret : 0;
}

const struct perfrec_pdreader_stats *perfrec_pdreader__stats(const struct perfrec_pdreader *r)
{
	return &r->stats;
}

/* ---- feature decoding for humans ---------------------------------------- */

int perfrec_pdreader__feature_text(const struct perfrec_pdreader *r, int feat, char *buf, size_t sz)
{
	const unsigned char *p;
	const char *str;
	size_t len;
	int n = 0;

	if (!buf || !sz)
		return -EINVAL;
	buf[0] = 0;
	if (perfrec_pdreader__feature(r, feat, (const void **)&p, &len) < 0)
		return -ENOENT;
	switch (feat) {
	case PERFREC_FEAT_HOSTNAME: case PERFREC_FEAT_OSRELEASE: case PERFREC_FEAT_VERSION:
	case PERFREC_FEAT_ARCH: case PERFREC_FEAT_CPUDESC: case PERFREC_FEAT_CPUID:
		if (!header_string(p, len, &str))
			return -EBADMSG;
		n = snprintf(buf, sz, "%s", str);
		break;
	case PERFREC_FEAT_NRCPUS:
		if (len != 8)
			return -EBADMSG;
		n = snprintf(buf, sz, "%u available, %u online", get32(p), get32(p + 4));
		break;
	case PERFREC_FEAT_TOTAL_MEM:
		if (len != 8)
			return -EBADMSG;
		n = snprintf(buf, sz, "%llu kB", (unsigned long long)get64(p));
		break;
	case PERFREC_FEAT_CLOCKID:
		if (len != 8)
			return -EBADMSG;
		n = snprintf(buf, sz, "%llu", (unsigned long long)get64(p));
		break;
	case PERFREC_FEAT_CLOCK_DATA:
		if (len != 24)
			return -EBADMSG;
		n = snprintf(buf, sz, "version %u, clockid %u, wall clock %llu ns, clock %llu ns",
			     get32(p), get32(p + 4), (unsigned long long)get64(p + 8),
			     (unsigned long long)get64(p + 16));
		break;
	case PERFREC_FEAT_SAMPLE_TIME:
		if (len != 16)
			return -EBADMSG;
		n = snprintf(buf, sz, "first %llu, last %llu", (unsigned long long)get64(p),
			     (unsigned long long)get64(p + 8));
		break;
	case PERFREC_FEAT_CMDLINE: {
		uint64_t pos = 4, nr;
		size_t used = 0;

		if (len < 4)
			return -EBADMSG;
		nr = get32(p);
		for (uint64_t i = 0; i < nr; i++) {
			uint64_t k = header_string(p + pos, len - pos, &str);
			int w;

			if (!k)
				return -EBADMSG;
			pos += k;
			if (used < sz) {
				w = snprintf(buf + used, sz - used, "%s%s", i ? " " : "", str);
				used += w > 0 ? (size_t)w : 0;
			}
		}
		n = (int)(used < sz ? used : sz - 1);
		break;
	}
	case PERFREC_FEAT_BPF_PROG_INFO: case PERFREC_FEAT_BPF_BTF:
		n = perfrec_bpfmeta__feature_text(feat, p, len, buf, sz);
		if (n < 0)
			return n;
		break;
	default:
		n = snprintf(buf, sz, "%zu bytes", len);
		break;
	}
	if (n < 0)
		return -EINVAL;
	return (size_t)n < sz ? n : (int)sz - 1;
}

void perfrec_pdreader__free(struct perfrec_pdreader *r)
{
	if (!r)
		return;
	if (r->mapped)
		munmap(r->buf, r->len);
	else
		free(r->buf);
	free(r->attrs);
	free(r->ids);
	free(r->ids_off);
	free(r->by_id);
	free(r->scratch);
	free(r->dbuf);
	perfrec_decompress__free(r->dz);
	free(r->per_attr);
	free(r->per_cpu);
	free(r);
}
