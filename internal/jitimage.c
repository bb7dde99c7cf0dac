// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * JIT images (jitimage.h): a minimal ELF64 file of symbols for one JIT
 * mapping, and its place in a build-id cache.
 *
 * Layout: ELF header, two program headers (PT_LOAD for the mapping,
 * PT_NOTE for the build id), the note, .strtab, .symtab, .shstrtab, then
 * the section headers.  .text is NOBITS: nothing of the code is copied.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "jitimage.h"

#if defined(__x86_64__)
#define HOST_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define HOST_MACHINE EM_AARCH64
#elif defined(__powerpc64__)
#define HOST_MACHINE EM_PPC64
#elif defined(__s390x__)
#define HOST_MACHINE EM_S390
#elif defined(__riscv) && __riscv_xlen == 64
#define HOST_MACHINE EM_RISCV
#else
#define HOST_MACHINE EM_NONE
#endif

enum { SEC_NULL, SEC_TEXT, SEC_NOTE, SEC_SYMTAB, SEC_STRTAB, SEC_SHSTRTAB, NR_SECS };

static const char shstrtab[] = "\0.text\0.note.gnu.build-id\0.symtab\0.strtab\0.shstrtab";
/* offsets of the names above */
enum { NAME_TEXT = 1, NAME_NOTE = 7, NAME_SYMTAB = 26, NAME_STRTAB = 34, NAME_SHSTRTAB = 42 };

struct note {
	Elf64_Nhdr h;
	char name[4];
	uint8_t desc[JITIMAGE_BID_LEN];
};

static size_t align8(size_t x)
{
	return (x + 7) & ~(size_t)7;
}

/* Where each part goes. */
struct layout {
	size_t note, strtab, strtab_len, symtab, symtab_len, shstrtab, shdrs, total;
};

static int plan(const struct jitimage_sym *syms, size_t n, struct layout *l)
{
	size_t strs = 1;

	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(syms[i].name) + 1;

		if (strs + len < strs)
			return -ENOMEM;
		strs += len;
	}
	if (n > (SIZE_MAX - strs) / sizeof(Elf64_Sym) - 2)
		return -ENOMEM;
	l->note = sizeof(Elf64_Ehdr) + 2 * sizeof(Elf64_Phdr);
	l->strtab = l->note + sizeof(struct note);
	l->strtab_len = strs;
	l->symtab = align8(l->strtab + strs);
	l->symtab_len = (n + 1) * sizeof(Elf64_Sym);
	l->shstrtab = l->symtab + l->symtab_len;
	l->shdrs = align8(l->shstrtab + sizeof(shstrtab));
	l->total = l->shdrs + NR_SECS * sizeof(Elf64_Shdr);
	return 0;
}

static void put_headers(uint8_t *b, const struct layout *l, uint64_t map_len)
{
	Elf64_Ehdr eh = {
		.e_ident = { ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64,
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
			     ELFDATA2LSB,
#else
			     ELFDATA2MSB,
#endif
			     EV_CURRENT, ELFOSABI_NONE },
		.e_type = ET_DYN, .e_machine = HOST_MACHINE, .e_version = EV_CURRENT,
		.e_phoff = sizeof(Elf64_Ehdr), .e_shoff = l->shdrs, .e_ehsize = sizeof(Elf64_Ehdr),
		.e_phentsize = sizeof(Elf64_Phdr), .e_phnum = 2,
		.e_shentsize = sizeof(Elf64_Shdr), .e_shnum = NR_SECS, .e_shstrndx = SEC_SHSTRTAB,
	};
	/* The mapping at address 0, file offset 0: what an MMAP2 with pgoff 0 says. */
	Elf64_Phdr ph[2] = {
		{ .p_type = PT_LOAD, .p_flags = PF_R | PF_X, .p_offset = 0, .p_vaddr = 0, .p_paddr = 0,
		  .p_filesz = map_len, .p_memsz = map_len, .p_align = 0x1000 },
		{ .p_type = PT_NOTE, .p_flags = PF_R, .p_offset = l->note, .p_vaddr = 0,
		  .p_filesz = sizeof(struct note), .p_memsz = sizeof(struct note), .p_align = 4 },
	};
	Elf64_Shdr sh[NR_SECS] = {
		[SEC_TEXT] = { .sh_name = NAME_TEXT, .sh_type = SHT_NOBITS, .sh_flags = SHF_ALLOC | SHF_EXECINSTR,
			       .sh_addr = 0, .sh_offset = 0, .sh_size = map_len, .sh_addralign = 16 },
		[SEC_NOTE] = { .sh_name = NAME_NOTE, .sh_type = SHT_NOTE, .sh_offset = l->note,
			       .sh_size = sizeof(struct note), .sh_addralign = 4 },
		[SEC_SYMTAB] = { .sh_name = NAME_SYMTAB, .sh_type = SHT_SYMTAB, .sh_offset = l->symtab,
				 .sh_size = l->symtab_len, .sh_link = SEC_STRTAB, .sh_info = 1,
				 .sh_addralign = 8, .sh_entsize = sizeof(Elf64_Sym) },
		[SEC_STRTAB] = { .sh_name = NAME_STRTAB, .sh_type = SHT_STRTAB, .sh_offset = l->strtab,
				 .sh_size = l->strtab_len, .sh_addralign = 1 },
		[SEC_SHSTRTAB] = { .sh_name = NAME_SHSTRTAB, .sh_type = SHT_STRTAB, .sh_offset = l->shstrtab,
				   .sh_size = sizeof(shstrtab), .sh_addralign = 1 },
	};

	memcpy(b, &eh, sizeof(eh));
	memcpy(b + sizeof(eh), ph, sizeof(ph));
	memcpy(b + l->shdrs, sh, sizeof(sh));
}

int jitimage_build(const struct jitimage_sym *syms, size_t n, uint64_t map_len,
		   const uint8_t bid[JITIMAGE_BID_LEN], void **ret_buf, size_t *ret_len)
{
	struct note note = {
		.h = { .n_namesz = 4, .n_descsz = JITIMAGE_BID_LEN, .n_type = NT_GNU_BUILD_ID },
		.name = "GNU",
	};
	struct layout l;
	size_t str;
	uint8_t *b;
	int r;

	if (!map_len)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!syms[i].size || syms[i].off >= map_len || syms[i].size > map_len - syms[i].off)
			return -EINVAL;
	r = plan(syms, n, &l);
	if (r < 0)
		return r;
	b = calloc(1, l.total);
	if (!b)
		return -ENOMEM;
	put_headers(b, &l, map_len);
	memcpy(note.desc, bid, JITIMAGE_BID_LEN);
	memcpy(b + l.note, &note, sizeof(note));
	memcpy(b + l.shstrtab, shstrtab, sizeof(shstrtab));
	str = 1;
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(syms[i].name) + 1;
		Elf64_Sym s = {
			.st_name = (Elf64_Word)str, .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC),
			.st_shndx = SEC_TEXT, .st_value = syms[i].off, .st_size = syms[i].size,
		};

		memcpy(b + l.strtab + str, syms[i].name, len);
		str += len;
		memcpy(b + l.symtab + (i + 1) * sizeof(s), &s, sizeof(s));
	}
	*ret_buf = b;
	*ret_len = l.total;
	return 0;
}

void jitimage_bid_path(const uint8_t bid[JITIMAGE_BID_LEN], char out[2 * JITIMAGE_BID_LEN + 2])
{
	char *p = out;

	for (size_t i = 0; i < JITIMAGE_BID_LEN; i++) {
		p += sprintf(p, "%02x", bid[i]);
		if (i == 0)
			*p++ = '/';
	}
	*p = '\0';
}

/* The xx directory under @bidfd, made 0750 if missing; never through a link. */
static int open_sub(int bidfd, const char *xx)
{
	int fd;

	if (mkdirat(bidfd, xx, 0750) < 0 && errno != EEXIST)
		return -errno;
	fd = openat(bidfd, xx, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* jitimage_store(), or with @replace an entry there (a regular file, ours) replaced atomically. */
static int store(int bidfd, const uint8_t bid[JITIMAGE_BID_LEN], const void *buf, size_t len, unsigned mode,
		 bool replace)
{
	char path[2 * JITIMAGE_BID_LEN + 2], tmp[2 * JITIMAGE_BID_LEN + 32];
	const char *name = path + 3;
	struct stat st;
	int sub, fd, r;

	jitimage_bid_path(bid, path);
	path[2] = '\0';
	sub = open_sub(bidfd, path);
	if (sub < 0)
		return sub;
	if (fstatat(sub, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && (!replace || !S_ISREG(st.st_mode))) {
		close(sub);
		return -EEXIST;
	}
	snprintf(tmp, sizeof(tmp), ".%s.jit-%d", name, (int)getpid());
	unlinkat(sub, tmp, 0);
	fd = openat(sub, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		r = -errno;
		close(sub);
		return r;
	}
	r = fchmod(fd, mode & 0750) < 0 ? -errno : 0;
	if (!r)
		r = write_all(fd, buf, len);
	if (close(fd) < 0 && !r)
		r = -errno;
	/* linkat then unlink: never replaces an entry that came meanwhile (unless asked to) */
	if (!r && replace && renameat(sub, tmp, sub, name) < 0)
		r = -errno;
	else if (!r && !replace && linkat(sub, tmp, sub, name, 0) < 0)
		r = -errno;
	unlinkat(sub, tmp, 0);
	close(sub);
	return r;
}

int jitimage_store(int bidfd, const uint8_t bid[JITIMAGE_BID_LEN], const void *buf, size_t len,
		   unsigned mode)
{
	return store(bidfd, bid, buf, len, mode, false);
}

int jitimage_replace(int bidfd, const uint8_t bid[JITIMAGE_BID_LEN], const void *buf, size_t len,
		     unsigned mode)
{
	return store(bidfd, bid, buf, len, mode, true);
}
