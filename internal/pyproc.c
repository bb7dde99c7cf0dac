/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Finding the CPython interpreter of a process (pyproc.h) and walking its
 * Python frames from user space.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pyproc.h"

/* Interpreter files are a few tens of MB with DWARF; more is not one. */
#define PYPROC_MAX_FILE (1ull << 30)

static const char *const status_names[_PYPROC_STATUS_MAX] = {
	[PYPROC_OK] = "ok",
	[PYPROC_NOT_PYTHON] = "not python",
	[PYPROC_UNKNOWN_VERSION] = "unknown python version",
	[PYPROC_UNSUPPORTED] = "unsupported python version",
	[PYPROC_UNKNOWN_LAYOUT] = "unknown python layout",
	[PYPROC_BAD_ELF] = "interpreter file does not parse",
	[PYPROC_NO_FILE] = "interpreter file unreadable or replaced",
};

static const char *const status_keys[_PYPROC_STATUS_MAX] = {
	[PYPROC_OK] = "python",
	[PYPROC_NOT_PYTHON] = "not_python",
	[PYPROC_UNKNOWN_VERSION] = "unknown_version",
	[PYPROC_UNSUPPORTED] = "unsupported_version",
	[PYPROC_UNKNOWN_LAYOUT] = "unknown_layout",
	[PYPROC_BAD_ELF] = "bad_elf",
	[PYPROC_NO_FILE] = "no_file",
};

const char *pyproc_status_key(enum pyproc_status s)
{
	return (unsigned)s < _PYPROC_STATUS_MAX ? status_keys[s] : "invalid";
}

const char *pyproc_status_name(enum pyproc_status s)
{
	return (unsigned)s < _PYPROC_STATUS_MAX ? status_names[s] : "invalid";
}

const char *pyproc_source_name(enum pyproc_source s)
{
	switch (s) {
	case PYPROC_SRC_DWARF: return "dwarf";
	case PYPROC_SRC_DEBUG_OFFSETS: return "_Py_DebugOffsets";
	case PYPROC_SRC_TABLE: return "table";
	default: return "none";
	}
}

void pyproc_count(struct pyproc_counters *c, enum pyproc_status s)
{
	if ((unsigned)s < _PYPROC_STATUS_MAX)
		c->n[s]++;
}

/* PATH beneath the process's root, never outside it, no symlink last. */
static int open_in_root(int rootfd, const char *path)
{
	struct open_how how = {
		.flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	long fd = syscall(SYS_openat2, rootfd, path, &how, sizeof(how));

	return fd < 0 ? -errno : (int)fd;
}

static void offsets_for(Elf *elf, const struct pyproc_elf *pe, struct pyproc_info *info)
{
	if (pyproc_dwarf_offsets(elf, pe->minor, &info->off) == 0)
		info->source = PYPROC_SRC_DWARF;
	else if (pyproc_elf_debug_offsets(elf, pe, &info->off) == 0)
		info->source = PYPROC_SRC_DEBUG_OFFSETS;
	else if (pyproc_table_offsets(pe->major, pe->minor, &info->off) == 0)
		info->source = PYPROC_SRC_TABLE;
	info->status = info->source ? PYPROC_OK : PYPROC_UNKNOWN_LAYOUT;
}

/* What FD (the file PATH) says, parsed. */
static void parse_file(int fd, const char *path, struct pyproc_file *pf)
{
	struct pyproc_elf pe;
	struct pyproc_info tmp;
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);

	pyproc_elf_scan(elf, path, &pe);
	pf->status = pe.status;
	pf->major = pe.major;
	pf->minor = pe.minor;
	pf->hexversion = pe.hexversion;
	pf->elf_type = pe.elf_type;
	pf->load_vaddr = pe.load_vaddr;
	pf->runtime_vaddr = pe.runtime_vaddr;
	pf->code_type_vaddr = pe.code_type_vaddr;
	if (pe.status == PYPROC_OK) {
		memset(&tmp, 0, sizeof(tmp));
		offsets_for(elf, &pe, &tmp);
		pf->status = tmp.status;
		pf->source = tmp.source;
		pf->off = tmp.off;
	}
	elf_end(elf);
}

/* The file of ST in CACHE, or a new slot for it (the oldest one when full). */
static struct pyproc_file *cache_slot(struct pyproc_cache *c, const struct stat *st, bool *hit)
{
	struct pyproc_file *pf;

	for (size_t i = 0; i < c->nr; i++) {
		pf = &c->files[i];
		if (pf->dev == st->st_dev && pf->ino == st->st_ino &&
		    pf->mtime.tv_sec == st->st_mtim.tv_sec && pf->mtime.tv_nsec == st->st_mtim.tv_nsec) {
			*hit = true;
			c->hits++;
			return pf;
		}
	}
	*hit = false;
	c->misses++;
	pf = &c->files[c->nr < PYPROC_CACHE_FILES ? c->nr++ : c->next++ % PYPROC_CACHE_FILES];
	memset(pf, 0, sizeof(*pf));
	pf->dev = st->st_dev;
	pf->ino = st->st_ino;
	pf->mtime = st->st_mtim;
	return pf;
}

/* The mapping at START of file PATH (inode INO) of the process: is it one? */
static void try_mapping(int rootfd, const char *path, uint64_t start, uint64_t ino,
			struct pyproc_cache *cache, struct pyproc_info *info)
{
	struct pyproc_file local, *pf = &local;
	struct stat st;
	bool hit = false;
	int fd = open_in_root(rootfd, path);

	info->status = PYPROC_NO_FILE;
	if (fd < 0)
		return;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_ino != ino ||
	    (uint64_t)st.st_size > PYPROC_MAX_FILE) {
		close(fd);
		return;
	}
	if (cache)
		pf = cache_slot(cache, &st, &hit);
	else
		memset(pf, 0, sizeof(*pf));
	if (!hit)
		parse_file(fd, path, pf);
	close(fd);
	info->status = pf->status;
	/* What was found is kept for the log, whether usable or not. */
	snprintf(info->path, sizeof(info->path), "%s", path);
	info->major = pf->major;
	info->minor = pf->minor;
	info->hexversion = pf->hexversion;
	if (pf->status == PYPROC_OK) {
		/* An ET_EXEC is where it was linked to be. */
		info->load_bias = pf->elf_type == ET_DYN ? start - pf->load_vaddr : 0;
		info->runtime_addr = pf->runtime_vaddr + info->load_bias;
		if (pf->code_type_vaddr)
			info->code_type_addr = pf->code_type_vaddr + info->load_bias;
		info->source = pf->source;
		info->off = pf->off;
	}
}

/* How much a status says: the most telling one of all mappings is kept. */
static int rank(enum pyproc_status s)
{
	static const int r[_PYPROC_STATUS_MAX] = {
		[PYPROC_OK] = 6, [PYPROC_UNKNOWN_LAYOUT] = 5, [PYPROC_UNSUPPORTED] = 4,
		[PYPROC_UNKNOWN_VERSION] = 3, [PYPROC_BAD_ELF] = 2, [PYPROC_NO_FILE] = 1,
	};
	return r[s];
}

/* A maps line worth opening: the first file (the executable) or a libpython. */
static bool candidate(const char *path, bool first)
{
	const char *base = strrchr(path, '/');

	if (path[0] != '/' || strstr(path, " (deleted)"))
		return false;
	return first || !strncmp(base + 1, "libpython", 9);
}

int pyproc_detect(const char *proc, pid_t pid, struct pyproc_info *info)
{
	return pyproc_detect_cached(proc, pid, NULL, info);
}

int pyproc_detect_cached(const char *proc, pid_t pid, struct pyproc_cache *cache,
			 struct pyproc_info *info)
{
	char p[64], line[PATH_MAX + 128], path[PATH_MAX];
	bool first = true;
	int rootfd, best = -1;
	FILE *f;

	memset(info, 0, sizeof(*info));
	info->status = PYPROC_NOT_PYTHON;
	elf_version(EV_CURRENT);
	snprintf(p, sizeof(p), "%s/%d/root", proc, (int)pid);
	rootfd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return -errno;
	snprintf(p, sizeof(p), "%s/%d/maps", proc, (int)pid);
	f = fopen(p, "re");
	if (!f) {
		int r = -errno;

		close(rootfd);
		return r;
	}
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, off, ino;
		struct pyproc_info cur;
		int n = 0;

		if (sscanf(line, "%llx-%*x %*s %llx %*s %llu %n", &start, &off, &ino, &n) < 3 ||
		    !n || !ino || sscanf(line + n, "%4095[^\n]", path) != 1)
			continue;
		if (off != 0 || !candidate(path, first))
			continue;
		first = false;
		memset(&cur, 0, sizeof(cur));
		try_mapping(rootfd, path, start, ino, cache, &cur);
		if (rank(cur.status) > best) {
			best = rank(cur.status);
			*info = cur;
		}
		if (cur.status == PYPROC_OK)
			break;
	}
	fclose(f);
	close(rootfd);
	return 0;
}

static int rd(int fd, uint64_t addr, void *buf, size_t len)
{
	ssize_t n = pread(fd, buf, len, (off_t)addr);

	return n == (ssize_t)len ? 0 : -EFAULT;
}

static uint64_t rd_ptr(int fd, uint64_t addr)
{
	uint64_t v = 0;

	return rd(fd, addr, &v, sizeof(v)) ? 0 : v;
}

/*
 * A str object's text, when compact ASCII (what names and file names
 * mostly are); PyASCIIObject's length (at 16) and state bits (at 32:
 * interned 2, kind 3, compact 1, ascii 1) are the same in 3.10-3.13.
 */
static void rd_str(int fd, uint64_t obj, const struct pyproc_offsets *o, char *out, size_t sz)
{
	uint32_t state = 0;
	int64_t len = 0;

	snprintf(out, sz, "?");
	if (!obj || rd(fd, obj + 16, &len, sizeof(len)) || rd(fd, obj + 32, &state, sizeof(state)))
		return;
	if (!(state & (1u << 5)) || !(state & (1u << 6)) || len < 0)
		return;
	if ((uint64_t)len >= sz)
		len = (int64_t)sz - 1;
	if (rd(fd, obj + o->unicode_ascii_data, out, (size_t)len))
		snprintf(out, sz, "?");
	else
		out[len] = '\0';
}

/* The thread state of TID (0: the head of the list), or 0. */
static uint64_t find_tstate(int fd, const struct pyproc_info *info, pid_t tid)
{
	const struct pyproc_offsets *o = &info->off;
	uint64_t interp = rd_ptr(fd, info->runtime_addr + o->runtime_interp_head);
	uint64_t ts = interp ? rd_ptr(fd, interp + o->interp_threads_head) : 0;

	if (tid && o->tstate_native_tid == PYPROC_OFF_NONE)
		return 0;
	for (int i = 0; ts && tid && i < 4096; i++) {
		uint64_t id = rd_ptr(fd, ts + o->tstate_native_tid);

		if (id == (uint64_t)tid)
			break;
		ts = rd_ptr(fd, ts + o->tstate_next);
	}
	return ts;
}

int pyproc_walk(int memfd, const struct pyproc_info *info, pid_t tid,
		struct pyproc_frame *frames, size_t max)
{
	const struct pyproc_offsets *o = &info->off;
	uint64_t ts, frame;
	size_t n = 0;

	if (info->status != PYPROC_OK)
		return -EINVAL;
	ts = find_tstate(memfd, info, tid);
	if (!ts)
		return -ESRCH;
	frame = rd_ptr(memfd, ts + o->tstate_frame);
	if (frame && o->cframe_current_frame != PYPROC_OFF_NONE)
		frame = rd_ptr(memfd, frame + o->cframe_current_frame);
	for (int i = 0; frame && n < max && i < 4096; i++) {
		uint8_t owner = 0;
		uint64_t code;
		int32_t line = 0;

		/* 3.12+ puts C-stack shim frames (owner 3) between entries. */
		if (o->frame_owner != PYPROC_OFF_NONE &&
		    rd(memfd, frame + o->frame_owner, &owner, 1) == 0 &&
		    info->minor >= 12 && owner == 3)
			goto next;
		code = rd_ptr(memfd, frame + o->frame_code);
		if (!code)
			break;
		/* ob_type follows ob_refcnt in every (GIL) build of these. */
		if (info->code_type_addr && rd_ptr(memfd, code + 8) != info->code_type_addr)
			goto next;
		rd_str(memfd, rd_ptr(memfd, code + o->code_name), o, frames[n].name,
		       sizeof(frames[n].name));
		rd_str(memfd, rd_ptr(memfd, code + o->code_filename), o, frames[n].file,
		       sizeof(frames[n].file));
		if (rd(memfd, code + o->code_firstlineno, &line, sizeof(line)))
			line = 0;
		frames[n++].firstlineno = (uint32_t)line;
next:
		frame = rd_ptr(memfd, frame + o->frame_previous);
	}
	return (int)n;
}
