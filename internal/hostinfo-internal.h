/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Internal: build one host-description feature body by number, so unit tests
 * can check each encoding against a fake sysfs/proc tree without a writer.
 */
#ifndef PERFREC_HOSTINFO_INTERNAL_H
#define PERFREC_HOSTINFO_INTERNAL_H

#include <perfrec/hostinfo.h>

#include "featbuf.h"

/*
 * Append the body of feature @feat (PERFREC_FEAT_*) to @fb.  Returns 0,
 * -ENOENT when the feature has nothing to say on this host or with these
 * options (it is then left out of the file), -EOPNOTSUPP for a feature this
 * module does not produce, or another -errno.  @opts may be NULL.
 */
int hostinfo_build_feature(int feat, const struct perfrec_hostinfo_opts *opts, struct featbuf *fb);

/* The features perfrec_hostinfo__add_features() sets, in file order. */
extern const int hostinfo_features[];
extern const size_t hostinfo_nr_features;

#endif
