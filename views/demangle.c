// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Symbol names demangled the way perf report shows them (see demangle.h):
 * libiberty's cplus_demangle() (package libiberty-dev), which tries Rust's
 * legacy and v0 schemes and then the C++ ABI's, with perf's options.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <libiberty/demangle.h>

#include "demangle.h"

struct dm_ent {
	const char *in;          /* NULL: empty slot */
	char *out;               /* NULL: @in is not mangled */
};

struct demangler {
	struct dm_ent *v;
	size_t cap, used;        /* cap: a power of two */
};

char *demangle_perf(const char *name)
{
	if (!name || !*name)
		return NULL;
	/*
	 * perf's flags without -v: DMGL_NO_OPTS (no parameters, no clone
	 * suffixes), in the default (automatic) style: Rust first (legacy Rust
	 * names are valid C++ ones too), then the C++ ABI's, whose
	 * "_GLOBAL__sub_I_" constructors perf names as well.
	 */
	return cplus_demangle(name, DMGL_NO_OPTS);
}

struct demangler *demangler__new(void)
{
	return calloc(1, sizeof(struct demangler));
}

void demangler__free(struct demangler *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->cap; i++)
		free(d->v[i].out);
	free(d->v);
	free(d);
}

static size_t slot_of(const struct demangler *d, const char *in)
{
	uint64_t h = (uint64_t)(uintptr_t)in * 0x9e3779b97f4a7c15ull;
	size_t j = (size_t)(h ^ (h >> 31)) & (d->cap - 1);

	while (d->v[j].in && d->v[j].in != in)
		j = (j + 1) & (d->cap - 1);
	return j;
}

static int grow(struct demangler *d)
{
	size_t cap = d->cap ? d->cap * 2 : 256;
	struct dm_ent *old = d->v;
	size_t old_cap = d->cap;

	d->v = calloc(cap, sizeof(*d->v));
	if (!d->v) {
		d->v = old;
		return -ENOMEM;
	}
	d->cap = cap;
	for (size_t i = 0; i < old_cap; i++)
		if (old[i].in)
			d->v[slot_of(d, old[i].in)] = old[i];
	free(old);
	return 0;
}

const char *demangler__name(struct demangler *d, const char *name)
{
	struct dm_ent *e;

	if (!name || !*name)
		return name;
	if ((d->used + 1) * 2 > d->cap && grow(d) < 0)
		return name;
	e = &d->v[slot_of(d, name)];
	if (!e->in) {
		e->in = name;
		e->out = demangle_perf(name);
		d->used++;
	}
	return e->out ? e->out : name;
}
