// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Build ids: the GNU build id note read from ELF files and from the kernel's
 * /sys/kernel/notes, and the table that turns a recording's MMAP2 records
 * (with the kernel-supplied build id) and sampled pids into HEADER_BUILD_ID,
 * so perf finds the right binaries and debug info without rereading the
 * data section at the end of every file as perf record's post-pass does.
 * ELF parsing never trusts a size from the file: every read is a bounded
 * pread checked against the file's length.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <perfrec/buildid.h>

#include "buildid-internal.h"
#include "fsutil.h"

/* Note segments larger than this are not build id carriers; skip them. */
#define NOTE_MAX (1u << 20)
/* Table bounds: distinct binaries, and (pid, binary) pairs. */
#define TABLE_MAX_DSOS 65536u
#define TABLE_MAX_PAIRS (1u << 20)
/*
 * Processes that exited are forgotten in batches: once this many exits
 * were noted, those of the batch before are dropped.  The rings are read
 * one after another, so a process's last sample on one CPU can be drained
 * after its EXIT on another; a whole batch of later exits is ample time
 * for it, and holds at most twice this many dead processes.
 */
#define EXIT_BATCH 512u

#define KERNEL_NAME "[kernel.kallsyms]"

/* --- notes ---------------------------------------------------------------- */

struct elfrd {
	int fd;
	uint64_t size;
	bool is64, swap;
};

static uint16_t rd16(const struct elfrd *e, const unsigned char *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return e && e->swap ? __builtin_bswap16(v) : v;
}

static uint32_t rd32(const struct elfrd *e, const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return e && e->swap ? __builtin_bswap32(v) : v;
}

static uint64_t rd64(const struct elfrd *e, const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return e && e->swap ? __builtin_bswap64(v) : v;
}

static size_t align_up(size_t v, size_t a)
{
	return (v + a - 1) & ~(a - 1);
}

/*
 * Walk notes (namesz, descsz, type, name, desc; name and desc padded to
 * @align) looking for NT_GNU_BUILD_ID owned by "GNU".  Returns the id length
 * (ids longer than 20 bytes are cut to 20, as perf stores them), -ENOENT.
 */
static int parse_notes(const struct elfrd *e, const unsigned char *buf, size_t len, size_t align,
		       uint8_t ret_id[PERFREC_BUILD_ID_MAX])
{
	size_t off = 0;

	while (len - off >= 12) {
		uint32_t namesz = rd32(e, buf + off), descsz = rd32(e, buf + off + 4);
		uint32_t type = rd32(e, buf + off + 8);
		size_t name_off = off + 12, desc_off, next;

		if (namesz > len - name_off)
			break;
		desc_off = name_off + align_up(namesz, align);
		if (desc_off > len || descsz > len - desc_off)
			break;
		next = desc_off + align_up(descsz, align);
		if (type == NT_GNU_BUILD_ID && namesz == 4 && !memcmp(buf + name_off, "GNU", 4) &&
		    descsz > 0) {
			size_t n = descsz < PERFREC_BUILD_ID_MAX ? descsz : PERFREC_BUILD_ID_MAX;

			memcpy(ret_id, buf + desc_off, n);
			return (int)n;
		}
		if (next <= off || next > len)
			break;
		off = next;
	}
	return -ENOENT;
}

int perfrec_buildid__parse_notes(const void *buf, size_t len, uint8_t ret_id[PERFREC_BUILD_ID_MAX])
{
	if (!buf || !ret_id)
		return -EINVAL;
	return parse_notes(NULL, buf, len, 4, ret_id);
}

/* Read exactly @len bytes at @off, which must lie inside the file. */
static int pread_exact(const struct elfrd *e, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	if (off > e->size || len > e->size - off)
		return -ENOEXEC;
	while (done < len) {
		ssize_t n = pread(e->fd, (char *)buf + done, len - done, (off_t)(off + done));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -ENOEXEC; /* the file shrank under us */
		done += (size_t)n;
	}
	return 0;
}

/* Read the note region [off, off+size) and look for the build id in it. */
static int note_region(const struct elfrd *e, uint64_t off, uint64_t size, uint64_t align,
		       uint8_t ret_id[PERFREC_BUILD_ID_MAX])
{
	unsigned char *buf;
	int r;

	if (size < 12 || size > NOTE_MAX || off > e->size || size > e->size - off)
		return -ENOENT;
	buf = malloc(size);
	if (!buf)
		return -ENOMEM;
	r = pread_exact(e, buf, size, off);
	if (!r)
		r = parse_notes(e, buf, size, align == 8 ? 8 : 4, ret_id);
	free(buf);
	return r;
}

/*
 * Program headers first (what a loaded binary really carries), section
 * headers for files without PT_NOTE (relocatable objects, some debug files).
 */
static int elf_build_id(const struct elfrd *e, const unsigned char *eh, uint8_t ret_id[PERFREC_BUILD_ID_MAX])
{
	uint64_t phoff, shoff;
	unsigned int phentsize, phnum, shentsize, shnum;
	size_t ph_min = e->is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr);
	size_t sh_min = e->is64 ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr);
	unsigned char hdr[sizeof(Elf64_Shdr)];
	bool tried = false;
	int r;

	if (e->is64) {
		phoff = rd64(e, eh + offsetof(Elf64_Ehdr, e_phoff));
		shoff = rd64(e, eh + offsetof(Elf64_Ehdr, e_shoff));
		phentsize = rd16(e, eh + offsetof(Elf64_Ehdr, e_phentsize));
		phnum = rd16(e, eh + offsetof(Elf64_Ehdr, e_phnum));
		shentsize = rd16(e, eh + offsetof(Elf64_Ehdr, e_shentsize));
		shnum = rd16(e, eh + offsetof(Elf64_Ehdr, e_shnum));
	} else {
		phoff = rd32(e, eh + offsetof(Elf32_Ehdr, e_phoff));
		shoff = rd32(e, eh + offsetof(Elf32_Ehdr, e_shoff));
		phentsize = rd16(e, eh + offsetof(Elf32_Ehdr, e_phentsize));
		phnum = rd16(e, eh + offsetof(Elf32_Ehdr, e_phnum));
		shentsize = rd16(e, eh + offsetof(Elf32_Ehdr, e_shentsize));
		shnum = rd16(e, eh + offsetof(Elf32_Ehdr, e_shnum));
	}

	if (phoff && phentsize >= ph_min) {
		for (unsigned int i = 0; i < phnum; i++) {
			uint64_t off, size, align;

			r = pread_exact(e, hdr, ph_min, phoff + (uint64_t)i * phentsize);
			if (r == -ENOEXEC)
				break; /* table runs past the end: truncated file */
			if (r)
				return r;
			if (rd32(e, hdr) != PT_NOTE)
				continue;
			if (e->is64) {
				off = rd64(e, hdr + offsetof(Elf64_Phdr, p_offset));
				size = rd64(e, hdr + offsetof(Elf64_Phdr, p_filesz));
				align = rd64(e, hdr + offsetof(Elf64_Phdr, p_align));
			} else {
				off = rd32(e, hdr + offsetof(Elf32_Phdr, p_offset));
				size = rd32(e, hdr + offsetof(Elf32_Phdr, p_filesz));
				align = rd32(e, hdr + offsetof(Elf32_Phdr, p_align));
			}
			tried = true;
			r = note_region(e, off, size, align, ret_id);
			if (r != -ENOENT)
				return r;
		}
	}
	if (shoff && shentsize >= sh_min) {
		for (unsigned int i = 0; i < shnum; i++) {
			uint64_t off, size, align;

			r = pread_exact(e, hdr, sh_min, shoff + (uint64_t)i * shentsize);
			if (r == -ENOEXEC)
				break;
			if (r)
				return r;
			if (rd32(e, hdr + offsetof(Elf64_Shdr, sh_type)) != SHT_NOTE)
				continue;
			if (e->is64) {
				off = rd64(e, hdr + offsetof(Elf64_Shdr, sh_offset));
				size = rd64(e, hdr + offsetof(Elf64_Shdr, sh_size));
				align = rd64(e, hdr + offsetof(Elf64_Shdr, sh_addralign));
			} else {
				off = rd32(e, hdr + offsetof(Elf32_Shdr, sh_offset));
				size = rd32(e, hdr + offsetof(Elf32_Shdr, sh_size));
				align = rd32(e, hdr + offsetof(Elf32_Shdr, sh_addralign));
			}
			tried = true;
			r = note_region(e, off, size, align, ret_id);
			if (r != -ENOENT)
				return r;
		}
	}
	/* Nothing readable at all means a cut or mangled file, not "no id". */
	return tried ? -ENOENT : -ENOEXEC;
}

int perfrec_buildid__read_elf(const char *path, uint8_t ret_id[PERFREC_BUILD_ID_MAX])
{
	unsigned char eh[sizeof(Elf64_Ehdr)], id[PERFREC_BUILD_ID_MAX];
	struct elfrd e = { .fd = -1 };
	struct stat st;
	int r;

	if (!path || !ret_id)
		return -EINVAL;
	/* A FIFO or device at a mapped path must not block or feed us forever. */
	e.fd = open_regular(AT_FDCWD, path);
	if (e.fd < 0)
		return e.fd == -EINVAL ? -ENOEXEC : e.fd;
	if (fstat(e.fd, &st) < 0) {
		r = -errno;
		goto out;
	}
	e.size = (uint64_t)st.st_size;
	r = pread_exact(&e, eh, EI_NIDENT, 0);
	if (r)
		goto out;
	if (memcmp(eh, ELFMAG, SELFMAG) || (eh[EI_CLASS] != ELFCLASS32 && eh[EI_CLASS] != ELFCLASS64) ||
	    (eh[EI_DATA] != ELFDATA2LSB && eh[EI_DATA] != ELFDATA2MSB)) {
		r = -ENOEXEC;
		goto out;
	}
	e.is64 = eh[EI_CLASS] == ELFCLASS64;
	e.swap = (eh[EI_DATA] == ELFDATA2LSB) != (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__);
	r = pread_exact(&e, eh, e.is64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr), 0);
	if (r)
		goto out;
	r = elf_build_id(&e, eh, id);
	if (r > 0)
		memcpy(ret_id, id, (size_t)r);
out:
	close(e.fd);
	return r;
}

int perfrec_buildid__kernel(const char *sysfs, uint8_t ret_id[PERFREC_BUILD_ID_MAX])
{
	unsigned char buf[4096];
	char path[PATH_MAX];
	size_t len = 0;
	int fd, n;

	if (!ret_id)
		return -EINVAL;
	n = snprintf(path, sizeof(path), "%s/kernel/notes", sysfs ? sysfs : "/sys");
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* The kernel's notes are a few hundred bytes; the build id comes early. */
	while (len < sizeof(buf)) {
		ssize_t r = read(fd, buf + len, sizeof(buf) - len);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			n = -errno;
			close(fd);
			return n;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	return parse_notes(NULL, buf, len, 4, ret_id);
}

/* --- table ---------------------------------------------------------------- */

struct dso {
	char *name;
	uint64_t hash;
	uint8_t id[PERFREC_BUILD_ID_MAX];
	uint8_t id_len;
	bool kernel;
	bool needed; /* mapped by a sampled process of this file that is gone */
	bool mark; /* scratch for __add_feature and compaction */
};

struct pident {
	uint32_t pid;
	bool used;
	bool sampled;
	uint32_t exit_batch; /* 0: alive; else the batch its EXIT was noted in */
	uint32_t nr, cap;
	uint32_t *dsos; /* indexes into the table's dsos, distinct */
};

struct perfrec_buildid_table {
	struct dso *dsos;
	size_t nr_dsos, cap_dsos;
	uint32_t *dso_slots; /* open addressing: dso index + 1, 0 = empty */
	size_t nr_dso_slots;

	struct pident *pids; /* open addressing on pid */
	size_t nr_pid_slots, nr_pids;
	size_t nr_pairs;

	uint32_t exit_batch; /* current batch of exits, from 1 */
	uint32_t exits_in_batch;

	bool kernel_sampled;
};

static uint64_t fnv1a(const void *p, size_t len, uint64_t h)
{
	const unsigned char *s = p;

	for (size_t i = 0; i < len; i++) {
		h ^= s[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

static uint64_t dso_hash(const char *name, const uint8_t *id, size_t id_len, bool kernel)
{
	uint64_t h = fnv1a(name, strlen(name), 0xcbf29ce484222325ULL);

	h = fnv1a(id, id_len, h);
	return fnv1a(&kernel, 1, h);
}

static uint32_t pid_hash(uint32_t pid)
{
	return pid * 2654435761u;
}

int perfrec_buildid_table__new(struct perfrec_buildid_table **ret_table)
{
	struct perfrec_buildid_table *t;

	if (!ret_table)
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->exit_batch = 1;
	*ret_table = t;
	return 0;
}

static void pids_free(struct pident *pids, size_t nr_slots)
{
	for (size_t i = 0; i < nr_slots; i++)
		free(pids[i].dsos);
	free(pids);
}

/* Forget every process and binary; the arrays go too (a burst's slots). */
static void table_clear(struct perfrec_buildid_table *t)
{
	for (size_t i = 0; i < t->nr_dsos; i++)
		free(t->dsos[i].name);
	free(t->dsos);
	free(t->dso_slots);
	pids_free(t->pids, t->nr_pid_slots);
	t->dsos = NULL;
	t->dso_slots = NULL;
	t->pids = NULL;
	t->nr_dsos = t->cap_dsos = t->nr_dso_slots = 0;
	t->nr_pid_slots = t->nr_pids = t->nr_pairs = 0;
	t->exits_in_batch = 0;
	t->kernel_sampled = false;
}

void perfrec_buildid_table__free(struct perfrec_buildid_table *t)
{
	if (!t)
		return;
	table_clear(t);
	free(t);
}

/* Rebuild the dso hash index with @slots slots (a power of two). */
static int dso_index_rebuild(struct perfrec_buildid_table *t, size_t slots)
{
	uint32_t *s = calloc(slots, sizeof(*s));

	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < t->nr_dsos; i++) {
		size_t j = t->dsos[i].hash & (slots - 1);

		while (s[j])
			j = (j + 1) & (slots - 1);
		s[j] = (uint32_t)i + 1;
	}
	free(t->dso_slots);
	t->dso_slots = s;
	t->nr_dso_slots = slots;
	return 0;
}

static struct pident *pid_find(struct perfrec_buildid_table *t, uint32_t pid, bool create);

/*
 * Drop what no sampled process can need any more: pids without samples in
 * this file, then binaries no remaining pid maps (kernel ones stay).  Only
 * runs when a bound is reached, so steady state never pays for it.
 */
static int table_compact(struct perfrec_buildid_table *t)
{
	struct pident *old = t->pids;
	size_t old_slots = t->nr_pid_slots, nd = 0;
	uint32_t *remap;

	t->pids = NULL;
	t->nr_pid_slots = t->nr_pids = t->nr_pairs = 0;
	for (size_t i = 0; i < t->nr_dsos; i++)
		t->dsos[i].mark = t->dsos[i].kernel || t->dsos[i].needed;
	for (size_t i = 0; i < old_slots; i++) {
		struct pident *o = &old[i], *n;

		if (!o->used || !o->sampled)
			continue;
		n = pid_find(t, o->pid, true);
		if (!n) {
			pids_free(old, old_slots); /* only under ENOMEM: lose the pids */
			return -ENOMEM;
		}
		n->sampled = true;
		n->exit_batch = o->exit_batch;
		n->dsos = o->dsos;
		n->nr = o->nr;
		n->cap = o->cap;
		o->dsos = NULL;
		t->nr_pairs += n->nr;
		for (uint32_t k = 0; k < n->nr; k++)
			t->dsos[n->dsos[k]].mark = true;
	}
	pids_free(old, old_slots);

	remap = malloc((t->nr_dsos ? t->nr_dsos : 1) * sizeof(*remap));
	if (!remap)
		return -ENOMEM;
	for (size_t i = 0; i < t->nr_dsos; i++) {
		if (!t->dsos[i].mark) {
			free(t->dsos[i].name);
			remap[i] = UINT32_MAX;
			continue;
		}
		remap[i] = (uint32_t)nd;
		t->dsos[nd++] = t->dsos[i];
	}
	t->nr_dsos = nd;
	for (size_t i = 0; i < t->nr_pid_slots; i++)
		for (uint32_t k = 0; k < t->pids[i].nr; k++)
			t->pids[i].dsos[k] = remap[t->pids[i].dsos[k]];
	free(remap);
	return dso_index_rebuild(t, t->nr_dso_slots ? t->nr_dso_slots : 64);
}

/* Find or add a binary; returns its index or -errno (-ENOSPC when full). */
static int dso_get(struct perfrec_buildid_table *t, const char *name, const uint8_t *id, size_t id_len,
		   bool kernel)
{
	uint64_t h = dso_hash(name, id, id_len, kernel);
	struct dso *d;
	size_t j;

	if (t->nr_dso_slots) {
		for (j = h & (t->nr_dso_slots - 1); t->dso_slots[j]; j = (j + 1) & (t->nr_dso_slots - 1)) {
			d = &t->dsos[t->dso_slots[j] - 1];
			if (d->hash == h && d->kernel == kernel && d->id_len == id_len &&
			    !memcmp(d->id, id, id_len) && !strcmp(d->name, name))
				return (int)(t->dso_slots[j] - 1);
		}
	}
	if (t->nr_dsos >= TABLE_MAX_DSOS)
		return -ENOSPC;
	if ((t->nr_dsos + 1) * 2 > t->nr_dso_slots) {
		int r = dso_index_rebuild(t, t->nr_dso_slots ? t->nr_dso_slots * 2 : 64);

		if (r)
			return r;
	}
	if (t->nr_dsos == t->cap_dsos) {
		size_t cap = t->cap_dsos ? t->cap_dsos * 2 : 32;
		struct dso *p = realloc(t->dsos, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		t->dsos = p;
		t->cap_dsos = cap;
	}
	d = &t->dsos[t->nr_dsos];
	memset(d, 0, sizeof(*d));
	d->name = strdup(name);
	if (!d->name)
		return -ENOMEM;
	d->hash = h;
	memcpy(d->id, id, id_len);
	d->id_len = (uint8_t)id_len;
	d->kernel = kernel;
	for (j = h & (t->nr_dso_slots - 1); t->dso_slots[j]; j = (j + 1) & (t->nr_dso_slots - 1))
		;
	t->dso_slots[j] = (uint32_t)t->nr_dsos + 1;
	return (int)t->nr_dsos++;
}

static int pids_grow(struct perfrec_buildid_table *t)
{
	size_t slots = t->nr_pid_slots ? t->nr_pid_slots * 2 : 64;
	struct pident *n = calloc(slots, sizeof(*n)), *old = t->pids;

	if (!n)
		return -ENOMEM;
	for (size_t i = 0; i < t->nr_pid_slots; i++) {
		size_t j;

		if (!old[i].used)
			continue;
		for (j = pid_hash(old[i].pid) & (slots - 1); n[j].used; j = (j + 1) & (slots - 1))
			;
		n[j] = old[i];
	}
	free(old);
	t->pids = n;
	t->nr_pid_slots = slots;
	return 0;
}

static struct pident *pid_find(struct perfrec_buildid_table *t, uint32_t pid, bool create)
{
	size_t j;

	if (t->nr_pid_slots) {
		for (j = pid_hash(pid) & (t->nr_pid_slots - 1); t->pids[j].used;
		     j = (j + 1) & (t->nr_pid_slots - 1))
			if (t->pids[j].pid == pid)
				return &t->pids[j];
	}
	if (!create)
		return NULL;
	if ((t->nr_pids + 1) * 2 > t->nr_pid_slots && pids_grow(t))
		return NULL;
	for (j = pid_hash(pid) & (t->nr_pid_slots - 1); t->pids[j].used; j = (j + 1) & (t->nr_pid_slots - 1))
		;
	t->pids[j].used = true;
	t->pids[j].pid = pid;
	t->nr_pids++;
	return &t->pids[j];
}

static int pid_add_dso(struct perfrec_buildid_table *t, struct pident *p, uint32_t dso)
{
	for (uint32_t i = 0; i < p->nr; i++)
		if (p->dsos[i] == dso)
			return 0;
	if (p->nr == p->cap) {
		uint32_t cap = p->cap ? p->cap * 2 : 8;
		uint32_t *n = realloc(p->dsos, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		p->dsos = n;
		p->cap = cap;
	}
	p->dsos[p->nr++] = dso;
	t->nr_pairs++;
	return 0;
}

/* Process @p is gone: what it mapped stays in this file's table if it was sampled. */
static void pid_retire(struct perfrec_buildid_table *t, struct pident *p)
{
	if (p->sampled)
		for (uint32_t k = 0; k < p->nr; k++)
			t->dsos[p->dsos[k]].needed = true;
	t->nr_pairs -= p->nr;
	p->nr = 0;
}

/*
 * Drop the processes whose exit was noted in an earlier batch, rebuilding
 * the pid index without them, sized for those left (a burst of short
 * processes leaves no oversized index behind).  Under ENOMEM nothing is
 * dropped now; the next batch tries again.
 */
static void forget_exited(struct perfrec_buildid_table *t)
{
	struct pident *old = t->pids, *n;
	size_t old_slots = t->nr_pid_slots, keep = 0, slots = 64;

	for (size_t i = 0; i < old_slots; i++)
		if (old[i].used && !(old[i].exit_batch && old[i].exit_batch < t->exit_batch))
			keep++;
	while ((keep + 1) * 2 > slots)
		slots *= 2;
	n = calloc(slots, sizeof(*n));
	if (!n)
		return;
	for (size_t i = 0; i < old_slots; i++) {
		struct pident *o = &old[i];
		size_t j;

		if (!o->used)
			continue;
		if (o->exit_batch && o->exit_batch < t->exit_batch) {
			pid_retire(t, o);
			free(o->dsos);
			continue;
		}
		for (j = pid_hash(o->pid) & (slots - 1); n[j].used; j = (j + 1) & (slots - 1))
			;
		n[j] = *o;
	}
	free(old);
	t->pids = n;
	t->nr_pid_slots = slots;
	t->nr_pids = keep;
}

/* Offsets in a PERF_RECORD_EXIT record (struct perf_record_fork). */
#define EXIT_PID 8
#define EXIT_TID 16
#define EXIT_SIZE 24

void perfrec_buildid_table__note_exit(struct perfrec_buildid_table *t, const struct perf_event_header *rec)
{
	uint32_t pid, tid;
	struct pident *p;

	if (!t || !rec || rec->type != PERF_RECORD_EXIT || rec->size < EXIT_SIZE)
		return;
	memcpy(&pid, (const unsigned char *)rec + EXIT_PID, sizeof(pid));
	memcpy(&tid, (const unsigned char *)rec + EXIT_TID, sizeof(tid));
	if (pid != tid)
		return; /* a thread went: its process and its maps stay */
	/*
	 * Not dropped at once: a sample of it, even its exec's MMAP2, may
	 * still be in another CPU's ring (EXIT_BATCH).  So a pid not known yet
	 * is noted too, already gone, for what may still come.  If the group
	 * leader exits while its threads run on (pthread_exit() in main),
	 * their later samples name no binaries here: perf's own post-pass
	 * would find them, a rare case we accept.
	 */
	p = pid_find(t, pid, true);
	if (!p || p->exit_batch)
		return;
	p->exit_batch = t->exit_batch;
	if (++t->exits_in_batch < EXIT_BATCH)
		return;
	forget_exited(t);
	t->exit_batch++;
	t->exits_in_batch = 0;
}

size_t perfrec_buildid_table__nr_processes(const struct perfrec_buildid_table *t)
{
	return t ? t->nr_pids : 0;
}

/* Offsets in a PERF_RECORD_MMAP2 record (struct perf_record_mmap2). */
#define MMAP2_PID 8
#define MMAP2_BUILD_ID_SIZE 40
#define MMAP2_BUILD_ID 44
#define MMAP2_FILENAME 72

static void note_mmap2(struct perfrec_buildid_table *t, const struct perf_event_header *rec)
{
	const unsigned char *p = (const unsigned char *)rec;
	unsigned int cpumode = rec->misc & PERF_RECORD_MISC_CPUMODE_MASK;
	const char *name = (const char *)p + MMAP2_FILENAME;
	size_t id_len = p[MMAP2_BUILD_ID_SIZE], max = rec->size - MMAP2_FILENAME;
	bool kernel = cpumode == PERF_RECORD_MISC_KERNEL;
	struct pident *pi;
	uint32_t pid;
	int idx;

	if (id_len == 0 || id_len > PERFREC_BUILD_ID_MAX || strnlen(name, max) == max || !name[0])
		return;
	/*
	 * Not the vdso: perf makes a table entry its [vdso] binary, found only
	 * in a build-id cache, where without one it takes its own vdso and
	 * checks it against the MMAP2's build id.
	 */
	if (!strcmp(name, "[vdso]"))
		return;
	if (kernel && !strncmp(name, KERNEL_NAME, strlen(KERNEL_NAME)))
		name = KERNEL_NAME; /* "[kernel.kallsyms]_text" is the kernel itself */
	/* Compact before looking anything up: it renumbers the binaries. */
	if (!kernel && t->nr_pairs >= TABLE_MAX_PAIRS && (table_compact(t) || t->nr_pairs >= TABLE_MAX_PAIRS))
		return;
	idx = dso_get(t, name, p + MMAP2_BUILD_ID, id_len, kernel);
	if (idx == -ENOSPC && !table_compact(t))
		idx = dso_get(t, name, p + MMAP2_BUILD_ID, id_len, kernel);
	if (idx < 0 || kernel)
		return; /* kernel binaries belong to no pid: written when the kernel is sampled */
	memcpy(&pid, p + MMAP2_PID, sizeof(pid));
	pi = pid_find(t, pid, true);
	if (pi)
		pid_add_dso(t, pi, (uint32_t)idx);
}

void perfrec_buildid_table__note_mmap2(struct perfrec_buildid_table *t, const struct perf_event_header *rec)
{
	unsigned int cpumode;

	if (!t || !rec || rec->type != PERF_RECORD_MMAP2 || !(rec->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) ||
	    rec->size < MMAP2_FILENAME + 2)
		return;
	cpumode = rec->misc & PERF_RECORD_MISC_CPUMODE_MASK;
	if (cpumode != PERF_RECORD_MISC_KERNEL && cpumode != PERF_RECORD_MISC_USER)
		return; /* guests, hypervisor: not ours to describe */
	note_mmap2(t, rec);
}

void perfrec_buildid_table__note_sample_pid(struct perfrec_buildid_table *t, uint32_t pid, bool kernel)
{
	struct pident *p;

	if (!t)
		return;
	if (kernel) {
		t->kernel_sampled = true;
		return;
	}
	p = pid_find(t, pid, false);
	if (p)
		p->sampled = true;
	/* A pid we know no build-id'd mapping of has nothing to add. */
}

/*
 * A new file describes itself: its synthesized state maps every live
 * process and the kernel again, and ring records the rest.  So nothing of
 * the last file is kept; keeping the processes that exited meanwhile is
 * what made the table grow with every process the host ever started.
 */
void perfrec_buildid_table__reset_samples(struct perfrec_buildid_table *t)
{
	if (!t)
		return;
	table_clear(t);
}

/*
 * perf_record_header_build_id: header (type 0, misc = cpumode |
 * BUILD_ID_SIZE, size = whole entry), pid (-1: the host machine), 20 id
 * bytes, the id length, 3 reserved bytes, then the name NUL-terminated and
 * zero-padded to 64 bytes as perf writes it.
 */
static void put_entry(struct featbuf *fb, const struct dso *d)
{
	size_t name_len = strlen(d->name) + 1, padded = (name_len + 63) & ~(size_t)63;
	struct perf_event_header h = {
		.type = 0,
		.misc = (uint16_t)((d->kernel ? PERF_RECORD_MISC_KERNEL : PERF_RECORD_MISC_USER) |
				   BUILDID_MISC_BUILD_ID_SIZE),
		.size = (uint16_t)(BUILDID_ENTRY_HEAD + padded),
	};
	unsigned char id[24] = {0};
	int32_t pid = -1;
	static const unsigned char zeros[64];

	if (BUILDID_ENTRY_HEAD + padded > UINT16_MAX)
		return; /* cannot be described in a u16 size: leave it out */
	memcpy(id, d->id, d->id_len);
	id[20] = d->id_len;
	featbuf_put(fb, &h, sizeof(h));
	featbuf_put(fb, &pid, sizeof(pid));
	featbuf_put(fb, id, sizeof(id));
	featbuf_put(fb, d->name, name_len);
	featbuf_put(fb, zeros, padded - name_len);
}

int buildid_table_build_feature(struct perfrec_buildid_table *t, struct featbuf *fb)
{
	bool have_kernel = false;
	int nr = 0;

	if (!t || !fb)
		return -EINVAL;
	for (size_t i = 0; i < t->nr_dsos; i++)
		t->dsos[i].mark = false;
	for (size_t i = 0; i < t->nr_pid_slots; i++) {
		struct pident *p = &t->pids[i];

		if (!p->used || !p->sampled)
			continue;
		for (uint32_t k = 0; k < p->nr; k++)
			t->dsos[p->dsos[k]].mark = true;
	}
	for (size_t i = 0; i < t->nr_dsos; i++) {
		struct dso *d = &t->dsos[i];

		if (d->kernel && t->kernel_sampled && !strcmp(d->name, KERNEL_NAME))
			have_kernel = true;
		if (d->mark || d->needed || (d->kernel && t->kernel_sampled)) {
			put_entry(fb, d);
			nr++;
		}
	}
	/* No kernel MMAP2 carried the kernel's id: read it from the running one. */
	if (t->kernel_sampled && !have_kernel) {
		struct dso k = { .name = (char *)KERNEL_NAME, .kernel = true };
		int r = perfrec_buildid__kernel(NULL, k.id);

		if (r > 0) {
			k.id_len = (uint8_t)r;
			put_entry(fb, &k);
			nr++;
		}
	}
	return featbuf_err(fb) ? featbuf_err(fb) : nr;
}
