// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * BPF program metadata for perf.data files (see perfrec/bpfmeta.h): the
 * KSYMBOL and BPF_EVENT records of programs loaded before a file starts,
 * and the HEADER_BPF_PROG_INFO / HEADER_BPF_BTF feature bodies.  perf names
 * a sample in JITed code by the KSYMBOL covering it; the features let it
 * (and perf annotate) tie that symbol back to the program, its BTF function
 * names and its JITed instructions.  Program info is fetched with libbpf's
 * low-level calls the way perf record asks for it: once for the counts,
 * once more with buffers for the arrays it keeps.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <linux/bpf.h>

#include <perfrec/bpfmeta.h>

#include "bpfmeta-sink.h"
#include "drain.h"
#include "featbuf.h"

#define ALIGN8(x) (((x) + 7) & ~(uint64_t)7)
/* kallsyms' KSYM_NAME_LEN (512 since 6.1): the longest name the kernel gives. */
#define NAME_MAX_LEN 512

struct prog {
	uint32_t id;
	uint32_t info_len;
	uint64_t arrays;
	struct bpf_prog_info info; /* array fields hold offsets into data */
	unsigned char *data;
	uint32_t data_len;
	bool live;                 /* loaded when last looked at */
};

/* A KSYMBOL the kernel reported in the ring (exact address and length). */
struct ksym {
	uint64_t addr;
	uint32_t len;
	char *name;
};

/* A [bpf] line of /proc/kallsyms. */
struct kentry {
	uint64_t addr;
	char *name;
};

struct btf_blob {
	uint32_t id;
	uint32_t size;
	unsigned char *data;
};

struct perfrec_bpfmeta {
	struct prog *progs;
	size_t nr_progs, cap_progs;
	struct btf_blob *btfs;
	size_t nr_btfs, cap_btfs;
	struct ksym *syms;
	size_t nr_syms, cap_syms;
	/*
	 * Records noted while synthesize() runs (its emit callback may drain
	 * the rings into note_record()): applied when it is done, so the
	 * lists it walks do not move under it.
	 */
	bool busy;
	struct perf_event_header **pending;
	size_t nr_pending;
	/*
	 * The [bpf] lines of kallsyms as read by collect(), before the events
	 * are enabled, and kept current by the ring's KSYMBOL records since:
	 * reading all of kallsyms again for each file takes seconds on a host
	 * sampled at high rates, while the rings fill.
	 */
	struct kentry *ks;
	size_t nks;
	bool have_ks;
	/* _text and _etext, when collect()'s pass over kallsyms saw them. */
	uint64_t text, etext;
};

/* Ring records held back during one synthesis, at most. */
#define MAX_PENDING 4096

/*
 * Where each array of bpf_prog_info lives: its pointer field, its count
 * field, and its element size (fixed, or read from a rec_size field).
 */
struct array_desc {
	size_t ptr_off;
	size_t count_off;
	size_t size_off;   /* 0: fixed size */
	uint32_t fixed;
};

#define F(f) offsetof(struct bpf_prog_info, f)
static const struct array_desc arrays_desc[PERFREC_BPF_NR_ARRAYS] = {
	[PERFREC_BPF_JITED_INSNS] = { F(jited_prog_insns), F(jited_prog_len), 0, 1 },
	[PERFREC_BPF_XLATED_INSNS] = { F(xlated_prog_insns), F(xlated_prog_len), 0, 1 },
	[PERFREC_BPF_MAP_IDS] = { F(map_ids), F(nr_map_ids), 0, 4 },
	[PERFREC_BPF_JITED_KSYMS] = { F(jited_ksyms), F(nr_jited_ksyms), 0, 8 },
	[PERFREC_BPF_JITED_FUNC_LENS] = { F(jited_func_lens), F(nr_jited_func_lens), 0, 4 },
	[PERFREC_BPF_FUNC_INFO] = { F(func_info), F(nr_func_info), F(func_info_rec_size), 0 },
	[PERFREC_BPF_LINE_INFO] = { F(line_info), F(nr_line_info), F(line_info_rec_size), 0 },
	[PERFREC_BPF_JITED_LINE_INFO] = { F(jited_line_info), F(nr_jited_line_info),
					  F(jited_line_info_rec_size), 0 },
	[PERFREC_BPF_PROG_TAGS] = { F(prog_tags), F(nr_prog_tags), 0, PERFREC_BPF_TAG_SIZE },
};
#undef F

/* The arrays perf record keeps for each program. */
static const uint64_t WANTED_ARRAYS =
	(1ull << PERFREC_BPF_JITED_INSNS) | (1ull << PERFREC_BPF_JITED_KSYMS) |
	(1ull << PERFREC_BPF_JITED_FUNC_LENS) | (1ull << PERFREC_BPF_FUNC_INFO) |
	(1ull << PERFREC_BPF_LINE_INFO) | (1ull << PERFREC_BPF_JITED_LINE_INFO) |
	(1ull << PERFREC_BPF_PROG_TAGS);

/* Field access within a (possibly short, unaligned) info image. */
static uint32_t get32(const void *base, uint64_t off)
{
	uint32_t v;

	memcpy(&v, (const unsigned char *)base + off, 4);
	return v;
}

static uint64_t get64(const void *base, uint64_t off)
{
	uint64_t v;

	memcpy(&v, (const unsigned char *)base + off, 8);
	return v;
}

static void put32(void *base, size_t off, uint32_t v)
{
	memcpy((unsigned char *)base + off, &v, 4);
}

static void put64(void *base, size_t off, uint64_t v)
{
	memcpy((unsigned char *)base + off, &v, 8);
}

/* Fields past the info_len a writer gave read as zero, as perf pads them. */
static uint32_t elem_size(const struct array_desc *d, const void *info, size_t info_len)
{
	if (!d->size_off)
		return d->fixed;
	return d->size_off + 4 <= info_len ? get32(info, d->size_off) : 0;
}

static uint32_t elem_count(const struct array_desc *d, const void *info, size_t info_len)
{
	return d->count_off + 4 <= info_len ? get32(info, d->count_off) : 0;
}

/* --- collection ------------------------------------------------------- */

int perfrec_bpfmeta__new(struct perfrec_bpfmeta **ret_meta)
{
	struct perfrec_bpfmeta *m;

	if (!ret_meta)
		return -EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	*ret_meta = m;
	return 0;
}

static void free_kentries(struct kentry *ks, size_t n);

void perfrec_bpfmeta__reset(struct perfrec_bpfmeta *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nr_progs; i++)
		free(m->progs[i].data);
	for (size_t i = 0; i < m->nr_btfs; i++)
		free(m->btfs[i].data);
	for (size_t i = 0; i < m->nr_syms; i++)
		free(m->syms[i].name);
	for (size_t i = 0; i < m->nr_pending; i++)
		free(m->pending[i]);
	m->nr_progs = 0;
	m->nr_btfs = 0;
	m->nr_syms = 0;
	m->nr_pending = 0;
	free_kentries(m->ks, m->nks);
	m->ks = NULL;
	m->nks = 0;
	m->have_ks = false;
	m->text = m->etext = 0;
}

void perfrec_bpfmeta__free(struct perfrec_bpfmeta *m)
{
	if (!m)
		return;
	perfrec_bpfmeta__reset(m);
	free(m->progs);
	free(m->btfs);
	free(m->syms);
	free(m->pending);
	free(m);
}

size_t perfrec_bpfmeta__nr_progs(const struct perfrec_bpfmeta *m)
{
	return m ? m->nr_progs : 0;
}

size_t perfrec_bpfmeta__nr_btfs(const struct perfrec_bpfmeta *m)
{
	return m ? m->nr_btfs : 0;
}

static struct prog *find_prog(const struct perfrec_bpfmeta *m, uint32_t id)
{
	for (size_t i = 0; i < m->nr_progs; i++)
		if (m->progs[i].id == id)
			return &m->progs[i];
	return NULL;
}

static const struct btf_blob *find_btf(const struct perfrec_bpfmeta *m, uint32_t id)
{
	for (size_t i = 0; i < m->nr_btfs; i++)
		if (m->btfs[i].id == id)
			return &m->btfs[i];
	return NULL;
}

/* Every array named in @arrays inside [0, data_len)?  Offsets in @info. */
static bool arrays_fit(const void *info, size_t info_len, uint64_t arrays, uint64_t data_len)
{
	for (int i = 0; i < PERFREC_BPF_NR_ARRAYS; i++) {
		const struct array_desc *d = &arrays_desc[i];
		uint64_t off, bytes;

		if (!(arrays & (1ull << i)))
			continue;
		if (d->ptr_off + 8 > info_len)
			return false;
		off = get64(info, d->ptr_off);
		bytes = (uint64_t)elem_count(d, info, info_len) * elem_size(d, info, info_len);
		if (off > data_len || bytes > data_len - off)
			return false;
	}
	return true;
}

int perfrec_bpfmeta__add_prog_info(struct perfrec_bpfmeta *m, const void *info, uint32_t info_len,
				   uint64_t arrays, const void *data, uint32_t data_len)
{
	struct prog *p;
	unsigned char *copy = NULL;
	uint32_t id;

	if (!m || !info || (data_len && !data) || info_len < offsetof(struct bpf_prog_info, tag))
		return -EINVAL;
	if (info_len > sizeof(struct bpf_prog_info))
		return -E2BIG;
	if (arrays >> PERFREC_BPF_NR_ARRAYS || !arrays_fit(info, info_len, arrays, data_len))
		return -EINVAL;
	if (data_len) {
		copy = malloc(data_len);
		if (!copy)
			return -ENOMEM;
		memcpy(copy, data, data_len);
	}
	id = get32(info, offsetof(struct bpf_prog_info, id));
	p = find_prog(m, id);
	if (p) {
		free(p->data);
	} else {
		if (m->nr_progs == m->cap_progs) {
			size_t cap = m->cap_progs ? m->cap_progs * 2 : 16;
			struct prog *n = realloc(m->progs, cap * sizeof(*n));

			if (!n) {
				free(copy);
				return -ENOMEM;
			}
			m->progs = n;
			m->cap_progs = cap;
		}
		p = &m->progs[m->nr_progs++];
	}
	memset(p, 0, sizeof(*p));
	memcpy(&p->info, info, info_len);
	p->id = id;
	p->info_len = info_len;
	p->arrays = arrays;
	p->data = copy;
	p->data_len = data_len;
	p->live = true;
	return 0;
}

int perfrec_bpfmeta__add_btf(struct perfrec_bpfmeta *m, uint32_t id, const void *data, uint32_t size)
{
	struct btf_blob *b;

	if (!m || (size && !data))
		return -EINVAL;
	if (find_btf(m, id))
		return 0;
	if (m->nr_btfs == m->cap_btfs) {
		size_t cap = m->cap_btfs ? m->cap_btfs * 2 : 8;
		struct btf_blob *n = realloc(m->btfs, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		m->btfs = n;
		m->cap_btfs = cap;
	}
	b = &m->btfs[m->nr_btfs];
	b->data = malloc(size ? size : 1);
	if (!b->data)
		return -ENOMEM;
	if (size)
		memcpy(b->data, data, size);
	b->id = id;
	b->size = size;
	m->nr_btfs++;
	return 0;
}

/* --- encodings ---------------------------------------------------------- */

int perfrec_bpfmeta__prog_name(char *buf, size_t sz, const uint8_t tag[PERFREC_BPF_TAG_SIZE],
			       const char *short_name)
{
	char hex[2 * PERFREC_BPF_TAG_SIZE + 1];

	for (int i = 0; i < PERFREC_BPF_TAG_SIZE; i++)
		snprintf(hex + 2 * i, 3, "%02x", tag[i]);
	if (short_name && short_name[0])
		return snprintf(buf, sz, "bpf_prog_%s_%s", hex, short_name);
	return snprintf(buf, sz, "bpf_prog_%s", hex);
}

/* The fixed parts of PERF_RECORD_KSYMBOL and PERF_RECORD_BPF_EVENT. */
struct ksymbol_head {
	struct perf_event_header h;
	uint64_t addr;
	uint32_t len;
	uint16_t ksym_type;
	uint16_t flags;
};

struct bpf_event_head {
	struct perf_event_header h;
	uint16_t type;
	uint16_t flags;
	uint32_t id;
	uint8_t tag[PERFREC_BPF_TAG_SIZE];
};

int perfrec_bpfmeta__encode_ksymbol(void *buf, size_t sz, uint64_t addr, uint32_t len, const char *name,
				    uint64_t sample_type, const struct perfrec_sample_id *sid)
{
	size_t nlen = strlen(name), body = ALIGN8(sizeof(struct ksymbol_head) + nlen + 1);
	size_t total = body + perfrec_sample_id__size(sample_type);
	struct ksymbol_head k = {
		.h = { .type = PERF_RECORD_KSYMBOL, .misc = 0 },
		.addr = addr,
		.len = len,
		.ksym_type = PERF_RECORD_KSYMBOL_TYPE_BPF,
		.flags = 0,
	};

	if (total > PERFREC_RECORD_MAX)
		return -E2BIG;
	if (!buf || sz < total)
		return -ENOSPC;
	k.h.size = (uint16_t)total;
	memset(buf, 0, body);
	memcpy(buf, &k, sizeof(k));
	memcpy((char *)buf + sizeof(k), name, nlen);
	perfrec_sample_id__write((unsigned char *)buf + body, sample_type, sid);
	return (int)total;
}

int perfrec_bpfmeta__encode_bpf_event(void *buf, size_t sz, uint32_t id,
				      const uint8_t tag[PERFREC_BPF_TAG_SIZE], uint64_t sample_type,
				      const struct perfrec_sample_id *sid)
{
	size_t total = sizeof(struct bpf_event_head) + perfrec_sample_id__size(sample_type);
	struct bpf_event_head e = {
		.h = { .type = PERF_RECORD_BPF_EVENT, .misc = 0, .size = (uint16_t)total },
		.type = PERF_BPF_EVENT_PROG_LOAD,
		.flags = 0,
		.id = id,
	};

	if (!buf || sz < total)
		return -ENOSPC;
	memcpy(e.tag, tag, PERFREC_BPF_TAG_SIZE);
	memcpy(buf, &e, sizeof(e));
	perfrec_sample_id__write((unsigned char *)buf + sizeof(e), sample_type, sid);
	return (int)total;
}

/* --- fetching from the kernel ---------------------------------------------- */

/* libbpf 1.x returns -errno; older ones -1 with errno set. */
static int bpf_err(int r)
{
	if (r >= 0)
		return r;
	return r == -1 && errno ? -errno : r;
}

/* The raw BTF of object @id (caller frees *ret_data). */
static int fetch_btf(uint32_t id, unsigned char **ret_data, uint32_t *ret_size)
{
	struct bpf_btf_info bi;
	uint32_t len = sizeof(bi);
	unsigned char *data = NULL;
	int fd, r;

	fd = bpf_err(bpf_btf_get_fd_by_id(id));
	if (fd < 0)
		return fd;
	memset(&bi, 0, sizeof(bi));
	r = bpf_err(bpf_obj_get_info_by_fd(fd, &bi, &len));
	if (r >= 0 && bi.btf_size) {
		uint32_t size = bi.btf_size;

		data = malloc(size);
		if (!data) {
			r = -ENOMEM;
		} else {
			memset(&bi, 0, sizeof(bi));
			bi.btf = (uint64_t)(uintptr_t)data;
			bi.btf_size = size;
			len = sizeof(bi);
			r = bpf_err(bpf_obj_get_info_by_fd(fd, &bi, &len));
			if (r >= 0 && bi.btf_size > size)
				r = -EAGAIN;
		}
	}
	close(fd);
	if (r < 0 || !data) {
		free(data);
		return r < 0 ? r : -ENODATA;
	}
	*ret_data = data;
	*ret_size = bi.btf_size;
	return 0;
}

/*
 * Info of program @fd with the arrays perf keeps, in the file's form
 * (array pointers turned into offsets into the data).  An array the
 * kernel declines to fill (jited insns when raw dumps are not allowed:
 * it clears the pointer) is dropped from "arrays".
 */
static int fetch_prog(struct perfrec_bpfmeta *m, int fd)
{
	struct bpf_prog_info first, info;
	uint32_t first_len = sizeof(first), info_len;
	uint64_t arrays = 0, data_len = 0, pos = 0;
	unsigned char *data;
	int r;

	memset(&first, 0, sizeof(first));
	r = bpf_err(bpf_obj_get_info_by_fd(fd, &first, &first_len));
	if (r < 0)
		return r;
	if (first_len < offsetof(struct bpf_prog_info, prog_tags) + 8)
		return -EOPNOTSUPP; /* a kernel too old to list JITed functions */
	for (int i = 0; i < PERFREC_BPF_NR_ARRAYS; i++) {
		const struct array_desc *d = &arrays_desc[i];

		if (!(WANTED_ARRAYS & (1ull << i)) || d->ptr_off + 8 > first_len)
			continue;
		arrays |= 1ull << i;
		data_len += ALIGN8((uint64_t)elem_count(d, &first, first_len) * elem_size(d, &first, first_len));
	}
	if (data_len > UINT32_MAX)
		return -E2BIG;
	data = calloc(1, data_len ? data_len : 1);
	if (!data)
		return -ENOMEM;
	/* Second call: only the kept arrays have counts, so the kernel writes nothing else. */
	memset(&info, 0, sizeof(info));
	for (int i = 0; i < PERFREC_BPF_NR_ARRAYS; i++) {
		const struct array_desc *d = &arrays_desc[i];
		uint32_t count, size;

		if (!(arrays & (1ull << i)))
			continue;
		count = elem_count(d, &first, first_len);
		size = elem_size(d, &first, first_len);
		put32(&info, d->count_off, count);
		if (d->size_off)
			put32(&info, d->size_off, size);
		put64(&info, d->ptr_off, (uint64_t)(uintptr_t)(data + pos));
		pos += ALIGN8((uint64_t)count * size);
	}
	info_len = first_len;
	r = bpf_err(bpf_obj_get_info_by_fd(fd, &info, &info_len));
	if (r < 0)
		goto out;
	pos = 0;
	for (int i = 0; i < PERFREC_BPF_NR_ARRAYS; i++) {
		const struct array_desc *d = &arrays_desc[i];
		uint32_t count, size, want_count;

		if (!(arrays & (1ull << i)))
			continue;
		want_count = elem_count(d, &first, first_len);
		size = elem_size(d, &first, first_len);
		count = get32(&info, d->count_off);
		if (get64(&info, d->ptr_off) != (uint64_t)(uintptr_t)(data + pos) || count > want_count) {
			/* Not filled (or grew between the calls): leave it out. */
			arrays &= ~(1ull << i);
			put64(&info, d->ptr_off, 0);
			put32(&info, d->count_off, 0);
		} else {
			put64(&info, d->ptr_off, pos);
		}
		pos += ALIGN8((uint64_t)want_count * size);
	}
	r = perfrec_bpfmeta__add_prog_info(m, &info, info_len, arrays, data, (uint32_t)data_len);
out:
	free(data);
	return r;
}

/* Short name of JITed function @i: BTF func name, else the program's name. */
static const char *func_name(const struct prog *p, const struct btf *btf, uint32_t i)
{
	const struct bpf_prog_info *info = &p->info;

	if (btf && (p->arrays & (1ull << PERFREC_BPF_FUNC_INFO)) && i < info->nr_func_info &&
	    info->func_info_rec_size >= 8) {
		uint32_t type_id = get32(p->data, info->func_info + (uint64_t)i * info->func_info_rec_size + 4);
		const struct btf_type *t = btf__type_by_id(btf, type_id);
		const char *n = t ? btf__name_by_offset(btf, t->name_off) : NULL;

		if (n && n[0])
			return n;
	}
	return info->name;
}

/* KSYMBOLs for each JITed function of @p, then its BPF_EVENT.  1: emitted. */
static int emit_prog(const struct perfrec_bpfmeta *m, const struct prog *p,
		     const struct perfrec_synth_opts *opts, perfrec_synth_emit_fn emit, void *ctx)
{
	const struct bpf_prog_info *info = &p->info;
	uint64_t sample_type = PERFREC_OPTS_GET(opts, sample_type, 0);
	struct perfrec_sample_id sid = {
		.pid = (uint32_t)-1, .tid = 0, .cpu = 0,
		.time = PERFREC_OPTS_GET(opts, time, 0),
		.id = PERFREC_OPTS_GET(opts, id, 0),
	};
	uint64_t need = (1ull << PERFREC_BPF_JITED_KSYMS) | (1ull << PERFREC_BPF_JITED_FUNC_LENS) |
			(1ull << PERFREC_BPF_PROG_TAGS);
	const struct btf_blob *bb = info->btf_id ? find_btf(m, info->btf_id) : NULL;
	struct btf *btf = bb ? btf__new(bb->data, bb->size) : NULL;
	unsigned char rec[sizeof(struct ksymbol_head) + NAME_MAX_LEN + 64];
	char name[NAME_MAX_LEN];
	uint32_t n = info->nr_jited_ksyms;
	int r = 0;

	if (btf && libbpf_get_error(btf))
		btf = NULL;
	if ((p->arrays & need) != need || !n || info->nr_jited_func_lens != n || info->nr_prog_tags != n)
		goto out; /* not JITed (or not shown to us): nothing to name */
	for (uint32_t i = 0; i < n; i++) {
		uint64_t addr = get64(p->data, info->jited_ksyms + 8ull * i);
		uint32_t len = get32(p->data, info->jited_func_lens + 4ull * i);
		const uint8_t *tag = p->data + info->prog_tags + (uint64_t)PERFREC_BPF_TAG_SIZE * i;

		perfrec_bpfmeta__prog_name(name, sizeof(name), tag, func_name(p, btf, i));
		r = perfrec_bpfmeta__encode_ksymbol(rec, sizeof(rec), addr, len, name, sample_type, &sid);
		if (r < 0)
			goto out;
		r = emit(ctx, (const struct perf_event_header *)rec);
		if (r < 0)
			goto out;
	}
	r = perfrec_bpfmeta__encode_bpf_event(rec, sizeof(rec), p->id, info->tag, sample_type, &sid);
	if (r >= 0)
		r = emit(ctx, (const struct perf_event_header *)rec);
	if (r >= 0)
		r = 1;
out:
	btf__free(btf);
	return r;
}

/* Fetch program @id (and its BTF) into @m unless held.  1: added. */
static int collect(struct perfrec_bpfmeta *m, uint32_t id)
{
	const struct prog *p;
	int fd, r;

	if (find_prog(m, id))
		return 0;
	fd = bpf_err(bpf_prog_get_fd_by_id(id));
	if (fd < 0)
		return fd;
	r = fetch_prog(m, fd);
	close(fd);
	if (r < 0)
		return r;
	p = find_prog(m, id);
	if (p && p->info.btf_id && !find_btf(m, p->info.btf_id)) {
		unsigned char *data;
		uint32_t size;

		/* Without its BTF a program still gets named (by prog name). */
		if (fetch_btf(p->info.btf_id, &data, &size) == 0) {
			r = perfrec_bpfmeta__add_btf(m, p->info.btf_id, data, size);
			free(data);
			if (r < 0)
				return r;
		}
	}
	return 1;
}

/* Walk the ids of all loaded programs, fetching those not held, marking each live. */
static int walk_ids(struct perfrec_bpfmeta *m)
{
	uint32_t id = 0, next;
	int r;

	for (;;) {
		struct prog *p;

		r = bpf_err(bpf_prog_get_next_id(id, &next));
		if (r == -ENOENT)
			return 0;
		if (r < 0)
			return r;
		id = next;
		r = collect(m, id);
		if (r == -ENOMEM)
			return r;
		p = find_prog(m, id);
		if (p)
			p->live = true;
	}
}

static int read_bpf_kallsyms(const char *proc, struct kentry **ret, size_t *ret_nr,
			     uint64_t *ret_text, uint64_t *ret_etext);
static void free_kentries(struct kentry *ks, size_t n);
static int cmp_kentry(const void *a, const void *b);

/*
 * Can kallsyms show BPF symbols beyond the JITed functions of the programs
 * the id walk found?  Trampolines (fentry/fexit/LSM/extension programs),
 * struct_ops images and the XDP dispatcher exist only beside programs of
 * those types, so a host with none of them (or none at all) needs no pass
 * over kallsyms, whose [bpf] lines come last, after every kernel and module
 * symbol: ~40 ms of kernel CPU at each start.
 */
static bool needs_kallsyms(const struct perfrec_bpfmeta *m)
{
	for (size_t i = 0; i < m->nr_progs; i++) {
		const struct prog *p = &m->progs[i];

		/* Without these the list seed_kentries() makes would miss it. */
		if (!(p->arrays & (1ull << PERFREC_BPF_JITED_KSYMS)) || !(p->arrays & (1ull << PERFREC_BPF_PROG_TAGS)))
			return true;
		switch (p->info.type) {
		case BPF_PROG_TYPE_TRACING:
		case BPF_PROG_TYPE_EXT:
		case BPF_PROG_TYPE_LSM:
		case BPF_PROG_TYPE_STRUCT_OPS:
		case BPF_PROG_TYPE_XDP:
			return true;
		default:
			break;
		}
	}
	return false;
}

/*
 * The [bpf] lines kallsyms would show when needs_kallsyms() is false: the
 * main function of each program, under the name synthesize() compares
 * (the kernel's "bpf_prog_<tag>" prefix), so that once privileges are gone
 * a program is still known to be loaded by this list, which the ring's
 * KSYMBOL records keep current.
 */
static int seed_kentries(struct perfrec_bpfmeta *m)
{
	struct kentry *ks;
	size_t n = 0;

	if (!m->nr_progs)
		return 0;
	ks = calloc(m->nr_progs, sizeof(*ks));
	if (!ks)
		return -ENOMEM;
	for (size_t i = 0; i < m->nr_progs; i++) {
		const struct prog *p = &m->progs[i];
		char name[NAME_MAX_LEN];

		if (!p->info.nr_jited_ksyms || !(p->arrays & (1ull << PERFREC_BPF_PROG_TAGS)))
			continue;
		perfrec_bpfmeta__prog_name(name, sizeof(name), p->data + p->info.prog_tags, "");
		ks[n].addr = get64(p->data, p->info.jited_ksyms);
		ks[n].name = strdup(name);
		if (!ks[n].name) {
			free_kentries(ks, n);
			return -ENOMEM;
		}
		n++;
	}
	qsort(ks, n, sizeof(*ks), cmp_kentry);
	m->ks = ks;
	m->nks = n;
	return 0;
}

int perfrec_bpfmeta__collect(struct perfrec_bpfmeta *m)
{
	int r;

	if (!m)
		return -EINVAL;
	r = walk_ids(m);
	free_kentries(m->ks, m->nks);
	m->ks = NULL;
	m->nks = 0;
	m->text = m->etext = 0;
	if (r >= 0 && !needs_kallsyms(m))
		m->have_ks = seed_kentries(m) == 0;
	else
		m->have_ks = read_bpf_kallsyms(NULL, &m->ks, &m->nks, &m->text, &m->etext) == 0;
	return r < 0 ? r : (int)m->nr_progs;
}

bool perfrec_bpfmeta__kernel_text(const struct perfrec_bpfmeta *m, uint64_t *ret_text, uint64_t *ret_etext)
{
	if (!m || !m->text || m->etext <= m->text)
		return false;
	*ret_text = m->text;
	*ret_etext = m->etext;
	return true;
}

static int cmp_kentry(const void *a, const void *b)
{
	const struct kentry *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static void free_kentries(struct kentry *ks, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(ks[i].name);
	free(ks);
}

/*
 * The "[bpf]" lines of kallsyms (JITed programs, trampolines, dispatchers),
 * sorted by address.  -EPERM when addresses are hidden (all zero).  On the
 * way, the addresses of _text and _etext where @ret_text is given: the
 * kernel map's bounds, which would otherwise take a second pass.
 */
static int read_bpf_kallsyms(const char *proc, struct kentry **ret, size_t *ret_nr,
			     uint64_t *ret_text, uint64_t *ret_etext)
{
	char path[4096], *line = NULL;
	struct kentry *ks = NULL;
	size_t n = 0, cap = 0, lcap = 0;
	bool hidden = false;
	ssize_t len;
	FILE *f;

	snprintf(path, sizeof(path), "%s/kallsyms", proc ? proc : "/proc");
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while ((len = getline(&line, &lcap, f)) > 0) {
		unsigned long long addr;
		char type, name[NAME_MAX_LEN];

		if (ret_text && len > 20 && line[len - 1] == '\n') {
			/* "ffffffff81000000 T _text\n" */
			if (!memcmp(line + len - 7, " _text\n", 7))
				*ret_text = strtoull(line, NULL, 16);
			else if (!memcmp(line + len - 8, " _etext\n", 8))
				*ret_etext = strtoull(line, NULL, 16);
		}
		if (len < 7 || !strstr(line, "\t[bpf]"))
			continue;
		if (sscanf(line, "%llx %c %511s", &addr, &type, name) != 3)
			continue;
		if (!addr) {
			hidden = true;
			continue;
		}
		if (n == cap) {
			size_t c = cap ? cap * 2 : 64;
			struct kentry *nk = realloc(ks, c * sizeof(*nk));

			if (!nk)
				goto nomem;
			ks = nk;
			cap = c;
		}
		ks[n].addr = addr;
		ks[n].name = strdup(name);
		if (!ks[n].name)
			goto nomem;
		n++;
	}
	free(line);
	fclose(f);
	if (!n && hidden)
		return -EPERM;
	if (n)
		qsort(ks, n, sizeof(*ks), cmp_kentry);
	*ret = ks;
	*ret_nr = n;
	return 0;
nomem:
	free(line);
	fclose(f);
	free_kentries(ks, n);
	return -ENOMEM;
}

static const struct kentry *find_kentry(const struct kentry *ks, size_t n, uint64_t addr)
{
	struct kentry key = { .addr = addr };

	return n ? bsearch(&key, ks, n, sizeof(*ks), cmp_kentry) : NULL;
}

/* Is there a JITed function of a live program, or a ring KSYMBOL, at @addr? */
static bool covered(const struct perfrec_bpfmeta *m, uint64_t addr, bool by_syms)
{
	for (size_t i = 0; i < m->nr_progs; i++) {
		const struct prog *p = &m->progs[i];

		if (!p->live || !(p->arrays & (1ull << PERFREC_BPF_JITED_KSYMS)))
			continue;
		for (uint32_t k = 0; k < p->info.nr_jited_ksyms; k++)
			if (get64(p->data, p->info.jited_ksyms + 8ull * k) == addr)
				return true;
	}
	if (by_syms)
		for (size_t i = 0; i < m->nr_syms; i++)
			if (m->syms[i].addr == addr)
				return true;
	return false;
}

/* Main function address of @p, 0 if unknown. */
static uint64_t main_addr(const struct prog *p)
{
	if (!(p->arrays & (1ull << PERFREC_BPF_JITED_KSYMS)) || !p->info.nr_jited_ksyms)
		return 0;
	return get64(p->data, p->info.jited_ksyms);
}

/* Free the programs not live, and BTF no live program refers to. */
static void prune(struct perfrec_bpfmeta *m)
{
	size_t k = 0;

	for (size_t i = 0; i < m->nr_progs; i++) {
		if (m->progs[i].live)
			m->progs[k++] = m->progs[i];
		else
			free(m->progs[i].data);
	}
	m->nr_progs = k;
	k = 0;
	for (size_t i = 0; i < m->nr_btfs; i++) {
		bool used = false;

		for (size_t j = 0; j < m->nr_progs && !used; j++)
			used = m->progs[j].info.btf_id == m->btfs[i].id;
		if (used)
			m->btfs[k++] = m->btfs[i];
		else
			free(m->btfs[i].data);
	}
	m->nr_btfs = k;
}

static int emit_ksym(const struct perfrec_synth_opts *opts, uint64_t addr, uint32_t len, const char *name,
		     perfrec_synth_emit_fn emit, void *ctx)
{
	unsigned char rec[sizeof(struct ksymbol_head) + NAME_MAX_LEN + 64];
	struct perfrec_sample_id sid = {
		.pid = (uint32_t)-1, .tid = 0, .cpu = 0,
		.time = PERFREC_OPTS_GET(opts, time, 0),
		.id = PERFREC_OPTS_GET(opts, id, 0),
	};
	int r = perfrec_bpfmeta__encode_ksymbol(rec, sizeof(rec), addr, len, name,
						PERFREC_OPTS_GET(opts, sample_type, 0), &sid);

	return r < 0 ? r : emit(ctx, (const struct perf_event_header *)rec);
}

/* Longest length given to a [bpf] symbol known only from kallsyms (a trampoline is one page). */
#define KALLSYMS_ONLY_MAX_LEN 4096

static int synthesize(struct perfrec_bpfmeta *m, const struct perfrec_synth_opts *opts,
		      perfrec_synth_emit_fn emit, void *ctx)
{
	struct kentry *ks = NULL;
	size_t nks = 0, k;
	int nr = 0, r, walk, kr;
	bool cached;

	for (size_t i = 0; i < m->nr_progs; i++)
		m->progs[i].live = false;
	walk = walk_ids(m);
	if (walk == -ENOMEM)
		return walk;
	cached = m->have_ks && !PERFREC_OPTS_GET(opts, proc, NULL);
	if (cached) {
		ks = m->ks;
		nks = m->nks;
		kr = 0;
	} else {
		kr = read_bpf_kallsyms(PERFREC_OPTS_GET(opts, proc, NULL), &ks, &nks, NULL, NULL);
		if (kr == -ENOMEM)
			return kr;
	}
	if (walk < 0) {
		/*
		 * No bpf() walk (no CAP_SYS_ADMIN once privileges are dropped):
		 * a program held from before is still loaded if kallsyms shows
		 * its main function at the same address under the same name.
		 */
		for (size_t i = 0; i < m->nr_progs; i++) {
			struct prog *p = &m->progs[i];
			const struct kentry *e = find_kentry(ks, nks, main_addr(p));
			char name[NAME_MAX_LEN];

			if (!e || !(p->arrays & (1ull << PERFREC_BPF_PROG_TAGS)))
				continue;
			perfrec_bpfmeta__prog_name(name, sizeof(name), p->data + p->info.prog_tags, "");
			p->live = !strncmp(e->name, name, strlen(name));
		}
	}
	prune(m);
	/*
	 * Ring KSYMBOLs of earlier files stay only while kallsyms still shows
	 * them (the cache drops what the ring unregistered, and what it
	 * registered: those are in m->syms).
	 */
	k = 0;
	for (size_t i = 0; i < m->nr_syms; i++) {
		const struct kentry *e = cached ? NULL : find_kentry(ks, nks, m->syms[i].addr);

		if ((cached || (e && !strcmp(e->name, m->syms[i].name))) && !covered(m, m->syms[i].addr, false))
			m->syms[k++] = m->syms[i];
		else
			free(m->syms[i].name);
	}
	m->nr_syms = k;

	r = 0;
	for (size_t i = 0; i < m->nr_progs && r >= 0; i++) {
		r = emit_prog(m, &m->progs[i], opts, emit, ctx);
		nr += r > 0;
	}
	for (size_t i = 0; i < m->nr_syms && r >= 0; i++)
		r = emit_ksym(opts, m->syms[i].addr, m->syms[i].len, m->syms[i].name, emit, ctx);
	/* The rest (trampolines, programs from before we could look): up to the next one. */
	for (size_t i = 0; i < nks && r >= 0; i++) {
		uint64_t len = KALLSYMS_ONLY_MAX_LEN;

		if (covered(m, ks[i].addr, true))
			continue;
		if (i + 1 < nks && ks[i + 1].addr - ks[i].addr < len)
			len = ks[i + 1].addr - ks[i].addr;
		r = emit_ksym(opts, ks[i].addr, (uint32_t)len, ks[i].name, emit, ctx);
	}
	if (!cached)
		free_kentries(ks, nks);
	if (r < 0)
		return r;
	if (walk < 0 && kr < 0)
		return walk; /* nothing could be looked at */
	return nr;
}

int perfrec_bpfmeta__synthesize(struct perfrec_bpfmeta *m, const struct perfrec_synth_opts *opts,
				perfrec_synth_emit_fn emit, void *ctx)
{
	int r;

	if (!m || !emit || !PERFREC_OPTS_VALID(opts, perfrec_synth_opts) || m->busy)
		return -EINVAL;
	m->busy = true;
	r = synthesize(m, opts, emit, ctx);
	m->busy = false;
	for (size_t i = 0; i < m->nr_pending; i++) {
		perfrec_bpfmeta__note_record(m, m->pending[i]);
		free(m->pending[i]);
	}
	m->nr_pending = 0;
	return r;
}

/* The ring told us of a BPF symbol (un)registered: keep the list current. */
static int note_ksymbol(struct perfrec_bpfmeta *m, const struct perf_event_header *rec)
{
	struct ksymbol_head k;
	const char *name = (const char *)rec + sizeof(k);
	size_t max = rec->size - sizeof(k), nlen;

	memcpy(&k, rec, sizeof(k));
	if (k.ksym_type != PERF_RECORD_KSYMBOL_TYPE_BPF)
		return 0;
	for (size_t i = 0; i < m->nks; i++) {
		if (m->ks[i].addr != k.addr)
			continue;
		free(m->ks[i].name);
		memmove(&m->ks[i], &m->ks[i + 1], (m->nks - i - 1) * sizeof(*m->ks));
		m->nks--;
		break;
	}
	for (size_t i = 0; i < m->nr_syms; i++) {
		if (m->syms[i].addr != k.addr)
			continue;
		free(m->syms[i].name);
		m->syms[i] = m->syms[--m->nr_syms];
		break;
	}
	if (k.flags & PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER)
		return 0;
	nlen = strnlen(name, max);
	if (nlen == max || nlen >= NAME_MAX_LEN)
		return -EBADMSG;
	if (m->nr_syms == m->cap_syms) {
		size_t cap = m->cap_syms ? m->cap_syms * 2 : 16;
		struct ksym *n = realloc(m->syms, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		m->syms = n;
		m->cap_syms = cap;
	}
	m->syms[m->nr_syms].name = strndup(name, nlen);
	if (!m->syms[m->nr_syms].name)
		return -ENOMEM;
	m->syms[m->nr_syms].addr = k.addr;
	m->syms[m->nr_syms].len = k.len;
	m->nr_syms++;
	return 0;
}

int perfrec_bpfmeta__note_record(struct perfrec_bpfmeta *m, const struct perf_event_header *rec)
{
	struct bpf_event_head e;

	if (!m || !rec)
		return 0;
	if (m->busy && (rec->type == PERF_RECORD_KSYMBOL || rec->type == PERF_RECORD_BPF_EVENT)) {
		struct perf_event_header *copy;

		if (!m->pending) {
			m->pending = calloc(MAX_PENDING, sizeof(*m->pending));
			if (!m->pending)
				return -ENOMEM;
		}
		if (m->nr_pending == MAX_PENDING)
			return -ENOBUFS;
		copy = malloc(rec->size);
		if (!copy)
			return -ENOMEM;
		memcpy(copy, rec, rec->size);
		m->pending[m->nr_pending++] = copy;
		return 0;
	}
	if (rec->type == PERF_RECORD_KSYMBOL && rec->size > sizeof(struct ksymbol_head))
		return note_ksymbol(m, rec);
	if (rec->type != PERF_RECORD_BPF_EVENT || rec->size < sizeof(e))
		return 0;
	memcpy(&e, rec, sizeof(e));
	if (e.type != PERF_BPF_EVENT_PROG_LOAD)
		return 0;
	return collect(m, e.id);
}

/* --- feature bodies --------------------------------------------------------- */

int perfrec_bpfmeta__add_features(const struct perfrec_bpfmeta *m, struct perfrec_pdwriter *w)
{
	struct featbuf fb;
	int r;

	if (!m || !w)
		return m ? -EINVAL : 0;
	/* Both even when empty (a zero count), as perf record writes them. */
	{
		/* {u32 nr; {u32 info_len, u32 data_len, u64 arrays, info, data}...} */
		featbuf_init(&fb);
		featbuf_u32(&fb, (uint32_t)m->nr_progs);
		for (size_t i = 0; i < m->nr_progs; i++) {
			const struct prog *p = &m->progs[i];

			featbuf_u32(&fb, p->info_len);
			featbuf_u32(&fb, p->data_len);
			featbuf_u64(&fb, p->arrays);
			featbuf_put(&fb, &p->info, p->info_len);
			featbuf_put(&fb, p->data, p->data_len);
		}
		r = featbuf_err(&fb);
		if (r >= 0)
			r = perfrec_pdwriter__set_feature(w, PERFREC_FEAT_BPF_PROG_INFO, fb.buf, fb.len);
		featbuf_exit(&fb);
		if (r < 0)
			return r;
	}
	{
		featbuf_init(&fb);
		featbuf_u32(&fb, (uint32_t)m->nr_btfs);
		for (size_t i = 0; i < m->nr_btfs; i++) {
			featbuf_u32(&fb, m->btfs[i].id);
			featbuf_u32(&fb, m->btfs[i].size);
			featbuf_put(&fb, m->btfs[i].data, m->btfs[i].size);
		}
		r = featbuf_err(&fb);
		if (r >= 0)
			r = perfrec_pdwriter__set_feature(w, PERFREC_FEAT_BPF_BTF, fb.buf, fb.len);
		featbuf_exit(&fb);
		if (r < 0)
			return r;
	}
	return 0;
}

int perfrec_bpfmeta__parse_prog_info(const void *data, size_t len, perfrec_bpf_prog_fn fn, void *ctx)
{
	const unsigned char *p = data;
	size_t pos = 4;
	uint32_t nr;

	if (!data || len < 4)
		return -EBADMSG;
	nr = get32(p, 0);
	if (nr > INT32_MAX)
		return -EBADMSG;
	for (uint32_t i = 0; i < nr; i++) {
		struct perfrec_bpf_prog_desc d;
		struct bpf_prog_info info;
		uint32_t info_len, data_len;
		const unsigned char *pd;
		int r;

		if (len - pos < 16)
			return -EBADMSG;
		info_len = get32(p, pos);
		data_len = get32(p, pos + 4);
		memset(&d, 0, sizeof(d));
		d.arrays = get64(p, pos + 8);
		pos += 16;
		/* perf refuses ("detected invalid bpf_prog_info") an info longer than its own. */
		if (info_len > sizeof(info) || info_len < offsetof(struct bpf_prog_info, tag) + 8 ||
		    len - pos < info_len || len - pos - info_len < data_len)
			return -EBADMSG;
		memset(&info, 0, sizeof(info));
		memcpy(&info, p + pos, info_len);
		pd = p + pos + info_len;
		if (d.arrays >> PERFREC_BPF_NR_ARRAYS || !arrays_fit(&info, sizeof(info), d.arrays, data_len))
			return -EBADMSG;
		pos += info_len + data_len;
		d.id = info.id;
		d.type = info.type;
		d.btf_id = info.btf_id;
		memcpy(d.tag, info.tag, sizeof(d.tag));
		memcpy(d.name, info.name, sizeof(info.name));
		d.name[sizeof(info.name)] = 0;
		if (d.arrays & (1ull << PERFREC_BPF_JITED_KSYMS)) {
			d.nr_funcs = info.nr_jited_ksyms;
			d.ksyms = pd + info.jited_ksyms;
			if ((d.arrays & (1ull << PERFREC_BPF_JITED_FUNC_LENS)) &&
			    info.nr_jited_func_lens == d.nr_funcs)
				d.lens = pd + info.jited_func_lens;
		}
		if (fn) {
			r = fn(ctx, &d);
			if (r < 0)
				return r;
		}
	}
	return (int)nr;
}

int perfrec_bpfmeta__parse_btf(const void *data, size_t len, perfrec_bpf_btf_fn fn, void *ctx)
{
	const unsigned char *p = data;
	size_t pos = 4;
	uint32_t nr;

	if (!data || len < 4)
		return -EBADMSG;
	nr = get32(p, 0);
	if (nr > INT32_MAX)
		return -EBADMSG;
	for (uint32_t i = 0; i < nr; i++) {
		uint32_t id, size;
		int r;

		if (len - pos < 8)
			return -EBADMSG;
		id = get32(p, pos);
		size = get32(p, pos + 4);
		pos += 8;
		if (len - pos < size)
			return -EBADMSG;
		if (fn) {
			r = fn(ctx, id, p + pos, size);
			if (r < 0)
				return r;
		}
		pos += size;
	}
	return (int)nr;
}

struct text_ctx {
	char *buf;
	size_t sz, used;
	uint32_t nr;
};

static void text_add(struct text_ctx *t, const char *fmt, const char *s, uint32_t v)
{
	int w;

	if (t->used >= t->sz)
		return;
	w = snprintf(t->buf + t->used, t->sz - t->used, fmt, s, v);
	t->used += w > 0 ? (size_t)w : 0;
}

static int prog_text(void *ctx, const struct perfrec_bpf_prog_desc *d)
{
	char name[64];

	perfrec_bpfmeta__prog_name(name, sizeof(name), d->tag, d->name);
	text_add(ctx, " %s (id %u)", name, d->id);
	return 0;
}

static int btf_text(void *ctx, uint32_t id, const void *data, uint32_t size)
{
	struct text_ctx *t = ctx;
	char ids[16];

	(void)data;
	snprintf(ids, sizeof(ids), "%u", id);
	text_add(t, " %s (%u bytes)", ids, size);
	return 0;
}

int perfrec_bpfmeta__feature_text(int feat, const void *data, size_t len, char *buf, size_t sz)
{
	struct text_ctx t = { .buf = buf, .sz = sz };
	int n;

	if (!buf || !sz)
		return -EINVAL;
	buf[0] = 0;
	if (feat == PERFREC_FEAT_BPF_PROG_INFO) {
		n = perfrec_bpfmeta__parse_prog_info(data, len, NULL, NULL);
		if (n < 0)
			return n;
		text_add(&t, "%s%u programs:", "", (uint32_t)n);
		perfrec_bpfmeta__parse_prog_info(data, len, prog_text, &t);
	} else if (feat == PERFREC_FEAT_BPF_BTF) {
		n = perfrec_bpfmeta__parse_btf(data, len, NULL, NULL);
		if (n < 0)
			return n;
		text_add(&t, "%s%u BTF objects:", "", (uint32_t)n);
		perfrec_bpfmeta__parse_btf(data, len, btf_text, &t);
	} else {
		return -EINVAL;
	}
	return (int)(t.used < sz ? t.used : sz - 1);
}

static void bpfmeta_sink_record(struct sink *s, struct drain_rec *r)
{
	if (r->h->type == PERF_RECORD_KSYMBOL || r->h->type == PERF_RECORD_BPF_EVENT)
		perfrec_bpfmeta__note_record(s->ctx, r->h);
}

const struct sink_ops bpfmeta_sink_ops = { .record = bpfmeta_sink_record };
