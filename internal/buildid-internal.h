/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Internal: build the HEADER_BUILD_ID body of a build id table without a
 * writer, so unit tests can decode it.
 */
#ifndef PERFREC_BUILDID_INTERNAL_H
#define PERFREC_BUILDID_INTERNAL_H

#include <perfrec/buildid.h>

#include "featbuf.h"

/* perf's flag: the entry's build_id[20] byte holds the id's length. */
#define BUILDID_MISC_BUILD_ID_SIZE (1u << 15)
/* perf_record_header_build_id: header, pid, build_id[24], then the name. */
#define BUILDID_ENTRY_HEAD 36u

/*
 * Append one entry per build id of a binary mapped by a sampled pid (and the
 * kernel's when kernel samples were noted) to @fb.  Returns the number of
 * entries or -errno.
 */
int buildid_table_build_feature(struct perfrec_buildid_table *t, struct featbuf *fb);

#endif
