// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The running vdso (see vdso.h), found through the auxiliary vector: no
 * file, no /proc.  Its length comes from its own ELF headers, as the
 * kernel's image holds its section headers at the end, like the vdso's
 * ELF file it was made from; the headers are the kernel's, trusted as far
 * as a bound on the length.
 */
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fsutil.h"
#include "vdso.h"

/* No vdso is near this; a larger length read from its headers is not one. */
#define VDSO_MAX (1u << 20)

const unsigned char *vdso_image(size_t *ret_len)
{
	const unsigned char *img = (const void *)getauxval(AT_SYSINFO_EHDR);
	const ElfW(Ehdr) *eh = (const void *)img;
	const ElfW(Phdr) *ph;
	size_t len;

	if (!img || memcmp(img, ELFMAG, SELFMAG) || eh->e_phentsize != sizeof(*ph) ||
	    eh->e_phoff > VDSO_MAX || eh->e_shoff > VDSO_MAX || eh->e_phnum > 64)
		return NULL;
	len = eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
	ph = (const void *)(img + eh->e_phoff);
	for (unsigned i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && ph[i].p_offset + ph[i].p_filesz > len)
			len = ph[i].p_offset + ph[i].p_filesz;
	if (len < sizeof(*eh) || len > VDSO_MAX)
		return NULL;
	*ret_len = len;
	return img;
}

int vdso_build_id(uint8_t id[PERFREC_BUILD_ID_MAX])
{
	size_t len;
	const unsigned char *img = vdso_image(&len);
	const ElfW(Ehdr) *eh = (const void *)img;
	const ElfW(Phdr) *ph;

	if (!img)
		return 0;
	ph = (const void *)(img + eh->e_phoff);
	for (unsigned i = 0; i < eh->e_phnum; i++) {
		int n;

		if (ph[i].p_type != PT_NOTE || ph[i].p_offset > len || ph[i].p_filesz > len - ph[i].p_offset)
			continue;
		n = perfrec_buildid__parse_notes(img + ph[i].p_offset, ph[i].p_filesz, id);
		if (n > 0)
			return n;
	}
	return 0;
}

int vdso_memfd(const uint8_t *bid, size_t len)
{
	uint8_t id[PERFREC_BUILD_ID_MAX];
	const unsigned char *img;
	size_t size;
	int n = vdso_build_id(id), fd, r;

	img = vdso_image(&size);
	if (!img || n <= 0 || (size_t)n != len || memcmp(id, bid, len))
		return -ENOENT;
	fd = memfd_create("vdso", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = write_all(fd, img, size);
	if (!r && lseek(fd, 0, SEEK_SET) < 0)   /* read from its start, as an opened file */
		r = -errno;
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}
