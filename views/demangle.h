/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * C++ and Rust symbol names as perf report shows them.  Debian's perf 6.1
 * (built without libbfd) demangles the symbols of user-space binaries with
 * libiberty's cplus_demangle() and no options: no parameter lists, no clone
 * suffixes (".isra.0"), the hash of legacy Rust names and the crate
 * disambiguators of v0 ones left out; kernel symbols stay as they are.  The
 * views call the same function, so their names are perf's.
 *
 * A demangler remembers each name it was asked about by address: the
 * symbolizer's strings live as long as it does, and a profile asks for the
 * same few thousand names millions of times.  Not thread-safe.
 */
#ifndef PERFRECCTL_DEMANGLE_H
#define PERFRECCTL_DEMANGLE_H

#include <stddef.h>

struct demangler;

/* A new demangler; NULL when out of memory. */
struct demangler *demangler__new(void);
/* Frees it and every name it returned. */
void demangler__free(struct demangler *d);

/*
 * @name demangled, or @name itself when it is not a mangled C++ or Rust
 * name (C functions, "[unknown]") or memory ran out.  The result lives as
 * long as @d; the same @name (by address) gives the same pointer back.
 */
const char *demangler__name(struct demangler *d, const char *name);

/* @name demangled as perf does it, malloc()ed; NULL when it is not mangled. */
char *demangle_perf(const char *name);

#endif
