/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The running vdso (inside libperfrec, perfrecd and perfrecctl; not
 * exported).  The kernel maps one vdso image per ABI into every process,
 * built into the kernel itself: its [vdso] maps hold no file, so perf
 * keeps the image by build id in its cache (~/.debug/[vdso]/ID/vdso) and
 * copies its own for its reports.  These give the same to the recorder
 * (the build id of the [vdso] maps it synthesizes, the image for its
 * build-id cache) and to the symbolizer.
 */
#ifndef PERFREC_VDSO_H
#define PERFREC_VDSO_H

#include <stddef.h>
#include <stdint.h>

#include <perfrec/buildid.h>

#define VDSO_MAP_NAME "[vdso]"

/* This process's vdso image and its length (where its headers end); NULL: none. */
const unsigned char *vdso_image(size_t *ret_len);

/* Its build id into @id: the id's length, or 0 when it has none. */
int vdso_build_id(uint8_t id[PERFREC_BUILD_ID_MAX]);

/*
 * A memfd holding the running vdso image if its build id is @bid (of
 * @len bytes): what a cache or a reader takes in for a [vdso] map of this
 * kernel.  The fd, -ENOENT when @bid is another image's, or -errno.
 */
int vdso_memfd(const uint8_t *bid, size_t len);

#endif
