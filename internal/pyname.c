// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Python code objects named through the process's memory, and where its
 * eval loop lies (see pyname.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <gelf.h>

#include "pyname.h"

/* Longer names are not names a program gives its functions or files. */
#define MAX_STR_LEN 4096

struct entry {
	uint64_t code;   /* 0: empty */
	int32_t slot;    /* >= 0: the slot; < 0: the error it gave */
	uint32_t span;   /* pyname_code.span of the object named there */
};

struct pyname_cache {
	int memfd;
	struct pyproc_info info;
	struct entry *tab;       /* open addressing, 2 * PYNAME_MAX_CODES */
	size_t mask;
	uint32_t used;           /* entries, slots handed out or failed */
	uint32_t next_slot;
	struct pyname_stats st;
};

static int rd(int fd, uint64_t addr, void *buf, size_t len)
{
	ssize_t n;

	/* an address past off_t's range is none of the process's */
	if (addr > (uint64_t)INT64_MAX - len)
		return -EFAULT;
	n = pread(fd, buf, len, (off_t)addr);
	return n == (ssize_t)len ? 0 : -EFAULT;
}

/*
 * A compact ASCII str's text (PyASCIIObject: length at 16, state at 32 with
 * compact bit 5 and ascii bit 6, the same in 3.10-3.13), cut to @sz - 1.
 */
static int rd_str(int fd, uint64_t obj, const struct pyproc_offsets *o, char *out, size_t sz)
{
	uint32_t state;
	int64_t len;
	int r;

	if (!obj)
		return -EPROTO;
	if ((r = rd(fd, obj + 16, &len, sizeof(len))) < 0 || (r = rd(fd, obj + 32, &state, sizeof(state))) < 0)
		return r;
	if (!(state & (1u << 5)) || !(state & (1u << 6)) || len < 0 || len > MAX_STR_LEN)
		return -EPROTO;
	if ((uint64_t)len >= sz)
		len = (int64_t)sz - 1;
	r = rd(fd, obj + o->unicode_ascii_data, out, (size_t)len);
	if (r < 0)
		return r;
	out[len] = '\0';
	for (int64_t i = 0; i < len; i++)
		if ((unsigned char)out[i] < 0x20 || (unsigned char)out[i] >= 0x7f)
			out[i] = '?';
	return 0;
}

static int rd_ptr(int fd, uint64_t addr, uint64_t *ret)
{
	return rd(fd, addr, ret, sizeof(*ret));
}

int pyname_read(int memfd, const struct pyproc_info *info, uint64_t code, struct pyname_code *ret)
{
	const struct pyproc_offsets *o = &info->off;
	uint64_t type, name, file;
	int32_t line;
	int r;

	if (info->status != PYPROC_OK || !code)
		return -EINVAL;
	/* ob_type follows ob_refcnt in every (GIL) build of these */
	if ((r = rd_ptr(memfd, code + 8, &type)) < 0)
		return r;
	if (info->code_type_addr && type != info->code_type_addr)
		return -EPROTO;
	if ((r = rd_ptr(memfd, code + o->code_name, &name)) < 0 ||
	    (r = rd_ptr(memfd, code + o->code_filename, &file)) < 0 ||
	    (r = rd(memfd, code + o->code_firstlineno, &line, sizeof(line))) < 0)
		return r;
	if ((r = rd_str(memfd, name, o, ret->qualname, sizeof(ret->qualname))) < 0 ||
	    (r = rd_str(memfd, file, o, ret->file, sizeof(ret->file))) < 0)
		return r;
	ret->firstlineno = line > 0 ? (uint32_t)line : 0;
	ret->span = 0;
	if (info->minor >= 11) {
		int64_t units;

		/* ob_size: the code units of co_code_adaptive, which ends the object */
		if ((r = rd(memfd, code + 16, &units, sizeof(units))) < 0)
			return r;
		if (units <= 0 || units > (1 << 24))
			return -EPROTO;
		ret->span = PYNAME_CODE_HEAD_MAX + 2 * (uint32_t)units;
	}
	return 0;
}

int pyname_format(const struct pyname_code *c, char *buf, size_t len)
{
	return snprintf(buf, len, "py::%s (%s:%u)", c->qualname, c->file, c->firstlineno);
}

int pyname_cache_new(int memfd, const struct pyproc_info *info, struct pyname_cache **ret)
{
	struct pyname_cache *c;

	if (memfd < 0 || !info || info->status != PYPROC_OK) {
		if (memfd >= 0)
			close(memfd);
		return -EINVAL;
	}
	c = calloc(1, sizeof(*c));
	if (c)
		c->tab = calloc(2 * PYNAME_MAX_CODES, sizeof(*c->tab));
	if (!c || !c->tab) {
		free(c);
		close(memfd);
		return -ENOMEM;
	}
	c->memfd = memfd;
	c->info = *info;
	c->mask = 2 * PYNAME_MAX_CODES - 1;
	*ret = c;
	return 0;
}

int pyname_cache_open(pid_t pid, const struct pyproc_info *info, struct pyname_cache **ret)
{
	char p[64];
	int fd;

	snprintf(p, sizeof(p), "/proc/%d/mem", (int)pid);
	fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	return pyname_cache_new(fd, info, ret);
}

void pyname_cache_free(struct pyname_cache *c)
{
	if (!c)
		return;
	if (c->memfd >= 0)
		close(c->memfd);
	free(c->tab);
	free(c);
}

static size_t hash(uint64_t code)
{
	/* code objects are 8-aligned heap addresses: mix the bits that vary */
	code ^= code >> 29;
	code *= 0xbf58476d1ce4e5b9ull;
	return (size_t)(code ^ (code >> 32));
}

/* Whether a frame at instruction @instr ran the object at @code of @span (unknown: trusted). */
static bool runs(uint32_t span, uint64_t code, uint64_t instr)
{
	return !span || !instr || (instr > code && instr - code < span);
}

/*
 * The object at @code read into @e with a slot of its own, when the frame
 * at @instr ran it; @e untouched otherwise.
 */
static int name_entry(struct pyname_cache *c, struct entry *e, uint64_t code, uint64_t instr,
		      struct pyname_code *ret_code, bool *ret_new)
{
	struct pyname_code n;
	int r = pyname_read(c->memfd, &c->info, code, &n);

	if (r < 0)
		return r;
	if (!runs(n.span, code, instr)) {
		c->st.stale++;
		return -ESTALE;
	}
	if (c->next_slot >= PYNAME_MAX_CODES) {
		c->st.full++;
		return -ENOSPC;
	}
	c->st.renamed += e->code != 0;
	c->st.named++;
	*e = (struct entry){ .code = code, .slot = (int32_t)c->next_slot++, .span = n.span };
	*ret_code = n;
	*ret_new = true;
	return e->slot;
}

int pyname_lookup(struct pyname_cache *c, uint64_t code, uint64_t instr, struct pyname_code *ret_code,
		  bool *ret_new)
{
	size_t i = hash(code) & c->mask;
	struct entry *e;
	int r;

	*ret_new = false;
	if (!code)
		return -EINVAL;
	/* never full: at most half the table is used */
	while (c->tab[i].code && c->tab[i].code != code)
		i = (i + 1) & c->mask;
	e = &c->tab[i];
	if (e->code && (e->slot < 0 || runs(e->span, code, instr)))
		return e->slot;
	/* named from an object this frame did not run: what is there now, if it is the frame's */
	if (e->code)
		return name_entry(c, e, code, instr, ret_code, ret_new);
	if (c->used >= PYNAME_MAX_CODES) {
		c->st.full++;
		return -ENOSPC;
	}
	r = name_entry(c, e, code, instr, ret_code, ret_new);
	/* not kept: the object the frame ran is gone, the next frame there reads again */
	if (r == -ESTALE || r == -ENOSPC)
		return r;
	if (r < 0) {
		*e = (struct entry){ .code = code, .slot = r };
		c->st.failed++;
	}
	c->used++;
	return r;
}

void pyname_cache_stats(const struct pyname_cache *c, struct pyname_stats *ret)
{
	*ret = c->st;
}

/* The symbol's value and size in @elf's .dynsym, else .symtab. */
static int find_sym(Elf *elf, const char *name, uint64_t *ret_value, uint64_t *ret_size)
{
	static const Elf64_Word types[] = { SHT_DYNSYM, SHT_SYMTAB };

	for (size_t t = 0; t < 2; t++) {
		Elf_Scn *scn = NULL;

		while ((scn = elf_nextscn(elf, scn))) {
			GElf_Shdr sh;
			Elf_Data *d;

			if (!gelf_getshdr(scn, &sh) || sh.sh_type != types[t] || !sh.sh_entsize)
				continue;
			d = elf_getdata(scn, NULL);
			for (size_t i = 0; d && i < d->d_size / sh.sh_entsize; i++) {
				GElf_Sym sym;
				const char *n;

				if (!gelf_getsym(d, (int)i, &sym) || sym.st_shndx == SHN_UNDEF ||
				    GELF_ST_TYPE(sym.st_info) != STT_FUNC || !sym.st_size)
					continue;
				n = elf_strptr(elf, sh.sh_link, sym.st_name);
				if (n && !strcmp(n, name)) {
					*ret_value = sym.st_value;
					*ret_size = sym.st_size;
					return 0;
				}
			}
		}
	}
	return -ENOENT;
}

int pyname_eval_range_fd(int fd, uint64_t *ret_lo, uint64_t *ret_hi)
{
	uint64_t v, sz;
	Elf *elf;
	int r;

	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return -EINVAL;
	r = elf_kind(elf) == ELF_K_ELF ? find_sym(elf, "_PyEval_EvalFrameDefault", &v, &sz) : -EINVAL;
	elf_end(elf);
	if (r == 0 && v + sz < v)
		r = -EINVAL;
	if (r == 0) {
		*ret_lo = v;
		*ret_hi = v + sz;
	}
	return r;
}

int pyname_eval_range(pid_t pid, const struct pyproc_info *info, uint64_t *ret_lo, uint64_t *ret_hi)
{
	struct open_how how = {
		.flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	uint64_t lo, hi;
	struct stat st;
	char p[64];
	int rootfd, fd, r;

	snprintf(p, sizeof(p), "/proc/%d/root", (int)pid);
	rootfd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return -errno;
	/* the file as the process sees it, beneath its root, no link followed last */
	fd = (int)syscall(SYS_openat2, rootfd, info->path, &how, sizeof(how));
	r = fd < 0 ? -errno : 0;
	close(rootfd);
	if (r < 0)
		return r;
	r = fstat(fd, &st) < 0 ? -errno : S_ISREG(st.st_mode) ? 0 : -EINVAL;
	if (r == 0)
		r = pyname_eval_range_fd(fd, &lo, &hi);
	close(fd);
	if (r < 0)
		return r;
	*ret_lo = lo + info->load_bias;
	*ret_hi = hi + info->load_bias;
	return 0;
}
