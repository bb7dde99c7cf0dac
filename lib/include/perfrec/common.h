/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Shared definitions for every libperfrec header: the export macro and the
 * fixed-width types.  Exported symbols are named perfrec_<object>__<verb>.
 */
#ifndef PERFREC_COMMON_H
#define PERFREC_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(PERFREC_BUILDING_LIB)
#define PERFREC_API __attribute__((visibility("default")))
#else
#define PERFREC_API
#endif

/* Size-checked options structs (libbpf style): the first field is `size_t sz`. */
#define PERFREC_OPTS_VALID(o, type) (!(o) || (o)->sz >= sizeof(size_t))
#define PERFREC_OPTS_GET(o, field, def) \
	(((o) && (o)->sz >= offsetof(__typeof__(*(o)), field) + sizeof((o)->field)) ? (o)->field : (def))

#endif
