// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests for the pprof writer's tables (views/pprof.c): stacks go in
 * through pprof_add_stack() as profile_walk() hands them over, the packed
 * profile comes back out through protobuf-c and is read as a pprof reader
 * would (sample -> location -> mapping and lines -> function -> strings).
 * Locations are looked up first by the addresses of the walk's strings
 * (pprof.c's pointer-keyed shortcut): these tests give it frames that share
 * every pointer but one field, so a shortcut keyed on too little hands a
 * sample someone else's location and the text read back differs.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pprof.h"
#include "pprof.pb-c.h"

static const uint8_t bid_a[20] = { 0xaa, 1, 2, 3 };
static const uint8_t bid_b[20] = { 0xbb, 1, 2, 3 };

/* A user frame at @addr of a mapping at @start. */
static struct pframe fr(const char *name, const char *module, uint64_t start, uint64_t addr)
{
	return (struct pframe){
		.name = name, .module = module, .kind = PFRAME_USER, .addr = addr,
		.map_start = start, .map_end = start + 0x10000, .map_pgoff = 0,
	};
}

static void add(struct pprof *p, const struct pframe *f, size_t n, uint32_t tid)
{
	struct pstack s = {
		.event = "cpu-clock", .frames = f, .nr_frames = n, .period = 1000,
		.pid = 1, .tid = tid, .comm = "app", .cpu = 0,
	};

	cr_assert_eq(pprof_add_stack(p, &s), 0);
}

static Perfrec__Pprof__Profile *pack(struct pprof *p)
{
	Perfrec__Pprof__Profile *prof;
	uint8_t *buf;
	size_t len;

	cr_assert_eq(pprof_pack(p, &buf, &len), 0);
	prof = perfrec__pprof__profile__unpack(NULL, len, buf);
	free(buf);
	cr_assert(prof, "the packed profile does not unpack");
	return prof;
}

static const char *str(const Perfrec__Pprof__Profile *prof, int64_t i)
{
	cr_assert(i >= 0 && (size_t)i < prof->n_string_table);
	return prof->string_table[i];
}

/*
 * Location @id as "file@start-limit+pgoff/buildid:addr:fn@file:line,fn@file:line"
 * (lines innermost first), everything a reader takes from it.
 */
static void loc_text(const Perfrec__Pprof__Profile *prof, uint64_t id, char *out, size_t sz)
{
	const Perfrec__Pprof__Location *l = NULL;
	const Perfrec__Pprof__Mapping *m = NULL;
	size_t o;

	for (size_t i = 0; i < prof->n_location; i++)
		if (prof->location[i]->id == id)
			l = prof->location[i];
	cr_assert(l, "sample names location %llu, which is not there", (unsigned long long)id);
	for (size_t i = 0; i < prof->n_mapping; i++)
		if (prof->mapping[i]->id == l->mapping_id)
			m = prof->mapping[i];
	cr_assert(m, "location %llu names no mapping", (unsigned long long)id);
	o = (size_t)snprintf(out, sz, "%s@%llx-%llx+%llx/%s:%llx:", str(prof, m->filename),
			     (unsigned long long)m->memory_start, (unsigned long long)m->memory_limit,
			     (unsigned long long)m->file_offset,
			     str(prof, m->build_id), (unsigned long long)l->address);
	for (size_t i = 0; i < l->n_line && o < sz; i++) {
		const Perfrec__Pprof__Function *f = NULL;

		for (size_t k = 0; k < prof->n_function; k++)
			if (prof->function[k]->id == l->line[i]->function_id)
				f = prof->function[k];
		cr_assert(f);
		o += (size_t)snprintf(out + o, sz - o, "%s%s@%s:%lld", i ? "," : "", str(prof, f->name),
				      str(prof, f->filename), (long long)l->line[i]->line);
	}
}

/* Sample of tid @tid: its stack as loc_text()s joined by " | ", leaf first. */
static void sample_text(const Perfrec__Pprof__Profile *prof, uint32_t tid, char *out, size_t sz)
{
	const Perfrec__Pprof__Sample *s = NULL;
	size_t o = 0;

	for (size_t i = 0; i < prof->n_sample; i++)
		for (size_t k = 0; k < prof->sample[i]->n_label; k++)
			if (!strcmp(str(prof, prof->sample[i]->label[k]->key), "tid") &&
			    prof->sample[i]->label[k]->num == tid) {
				cr_assert(!s, "two samples of tid %u though each tid has one stack", tid);
				s = prof->sample[i];
			}
	cr_assert(s, "no sample of tid %u", tid);
	out[0] = 0;
	for (size_t i = 0; i < s->n_location_id && o < sz; i++) {
		if (i)
			o += (size_t)snprintf(out + o, sz - o, " | ");
		loc_text(prof, s->location_id[i], out + o, sz - o);
		o += strlen(out + o);
	}
}

struct pprof_case {
	const char *what;
	struct pframe f;
	const char *want;
};

/*
 * Every row after the first differs from the first in one field the
 * shortcut's key must hold; each is added twice, between the others, so
 * the second time of each is a shortcut hit.
 */
Test(pprof, frames_differing_in_one_field_stay_distinct_locations)
{
	static const char name[] = "hot", other[] = "cold", mod[] = "/bin/app", mod2[] = "/lib/other.so";
	static const char src[] = "hot.c";
	struct pprof_case cases[] = {
		{ "base", fr(name, mod, 0x400000, 0x401000), "/bin/app@400000-410000+0/:401000:hot@:0" },
		{ "address", fr(name, mod, 0x400000, 0x401004), "/bin/app@400000-410000+0/:401004:hot@:0" },
		{ "mapping start", fr(name, mod, 0x3f0000, 0x401000), "/bin/app@3f0000-410000+0/:401000:hot@:0" },
		{ "mapping end", fr(name, mod, 0x400000, 0x401000), "/bin/app@400000-411000+0/:401000:hot@:0" },
		{ "mapping offset", fr(name, mod, 0x400000, 0x401000), "/bin/app@400000-410000+2000/:401000:hot@:0" },
		{ "module", fr(name, mod2, 0x400000, 0x401000), "/lib/other.so@400000-410000+0/:401000:hot@:0" },
		{ "build id", fr(name, mod, 0x400000, 0x401000),
		  "/bin/app@400000-410000+0/bb01020300000000000000000000000000000000:401000:hot@:0" },
		{ "other build id", fr(name, mod, 0x400000, 0x401000),
		  "/bin/app@400000-410000+0/aa01020300000000000000000000000000000000:401000:hot@:0" },
		{ "shorter build id", fr(name, mod, 0x400000, 0x401000),
		  "/bin/app@400000-410000+0/bb010203000000000000000000000000:401000:hot@:0" },
		{ "function", fr(other, mod, 0x400000, 0x401000), "/bin/app@400000-410000+0/:401000:cold@:0" },
		{ "source file", fr(name, mod, 0x400000, 0x401000), "/bin/app@400000-410000+0/:401000:hot@hot.c:0" },
		{ "line", fr(name, mod, 0x400000, 0x401000), "/bin/app@400000-410000+0/:401000:hot@:42" },
	};
	size_t nr = sizeof(cases) / sizeof(cases[0]);
	Perfrec__Pprof__Profile *prof;
	struct pprof *p;
	char got[1024];

	cases[2].f.map_end = cases[0].f.map_end;       /* only the start differs */
	cases[3].f.map_end += 0x1000;
	cases[4].f.map_pgoff = 0x2000;
	cases[6].f.build_id = bid_b;
	cases[6].f.build_id_len = 20;
	cases[7].f.build_id = bid_a;
	cases[7].f.build_id_len = 20;
	cases[8].f.build_id = bid_b;
	cases[8].f.build_id_len = 16;
	cases[10].f.file = src;
	cases[11].f.line = 42;
	p = pprof_new();
	cr_assert(p);
	for (int round = 0; round < 2; round++)
		for (size_t i = 0; i < nr; i++)
			add(p, &cases[i].f, 1, (uint32_t)(100 * round + i + 1));
	prof = pack(p);
	cr_assert_eq(prof->n_location, nr, "%zu locations for %zu distinct frames", prof->n_location, nr);
	for (int round = 0; round < 2; round++)
		for (size_t i = 0; i < nr; i++) {
			sample_text(prof, (uint32_t)(100 * round + i + 1), got, sizeof(got));
			cr_expect_str_eq(got, cases[i].want, "%s (%s): got %s", cases[i].what,
					 round ? "looked up again" : "first time", got);
		}
	perfrec__pprof__profile__free_unpacked(prof, NULL);
	pprof_free(p);
}

/*
 * Equal frames whose strings sit at other addresses (the shortcut misses)
 * still meet in the content-keyed tables: one location, one sample.
 */
Test(pprof, equal_frames_with_copied_strings_are_one_location)
{
	char name2[] = "hot", mod2[] = "/bin/app";
	struct pframe a = fr("hot", "/bin/app", 0x400000, 0x401000), b = fr(name2, mod2, 0x400000, 0x401000);
	Perfrec__Pprof__Profile *prof;
	struct pprof *p;

	a.build_id = b.build_id = bid_a;
	a.build_id_len = b.build_id_len = 20;
	p = pprof_new();
	cr_assert(p);
	add(p, &a, 1, 1);
	add(p, &b, 1, 1);
	add(p, &a, 1, 1);
	prof = pack(p);
	cr_assert_eq(prof->n_location, 1);
	cr_assert_eq(prof->n_mapping, 1);
	cr_assert_eq(prof->n_function, 1);
	cr_assert_eq(prof->n_sample, 1, "one stack, one tid: one sample");
	cr_assert_eq(prof->sample[0]->value[0], 3);
	cr_assert_eq(prof->sample[0]->value[1], 3000);
	perfrec__pprof__profile__free_unpacked(prof, NULL);
	pprof_free(p);
}

/*
 * Inlined frames make one location with a line each; the same outer frame
 * with another inline chain (or none) at the same address is another.
 */
Test(pprof, inline_chains_at_one_address_are_told_apart)
{
	struct pframe in1[2] = { fr("inner", "/bin/app", 0x400000, 0x401000), fr("outer", "/bin/app", 0x400000, 0x401000) };
	struct pframe in2[2] = { fr("other_inner", "/bin/app", 0x400000, 0x401000), fr("outer", "/bin/app", 0x400000, 0x401000) };
	struct pframe plain = fr("outer", "/bin/app", 0x400000, 0x401000);
	Perfrec__Pprof__Profile *prof;
	struct pprof *p;
	char got[1024];

	in1[0].inlined = in2[0].inlined = true;
	in1[0].line = in2[0].line = 7;
	in1[1].line = in2[1].line = 30;
	p = pprof_new();
	cr_assert(p);
	for (uint32_t round = 0; round < 2; round++) {
		add(p, in1, 2, 10 * round + 1);
		add(p, in2, 2, 10 * round + 2);
		add(p, &plain, 1, 10 * round + 3);
	}
	prof = pack(p);
	cr_assert_eq(prof->n_location, 3);
	for (uint32_t round = 0; round < 2; round++) {
		sample_text(prof, 10 * round + 1, got, sizeof(got));
		cr_expect_str_eq(got, "/bin/app@400000-410000+0/:401000:inner@:7,outer@:30");
		sample_text(prof, 10 * round + 2, got, sizeof(got));
		cr_expect_str_eq(got, "/bin/app@400000-410000+0/:401000:other_inner@:7,outer@:30");
		sample_text(prof, 10 * round + 3, got, sizeof(got));
		cr_expect_str_eq(got, "/bin/app@400000-410000+0/:401000:outer@:0");
	}
	perfrec__pprof__profile__free_unpacked(prof, NULL);
	pprof_free(p);
}

/* Samples differing only in a label stay apart; those sharing a label set read back the same labels. */
Test(pprof, labels_follow_their_samples)
{
	struct pframe f[2] = { fr("leaf", "/bin/app", 0x400000, 0x401000), fr("main", "/bin/app", 0x400000, 0x402000) };
	struct pstack s = { .event = "cpu-clock", .frames = f, .nr_frames = 2, .period = 5, .pid = 7, .comm = "app" };
	Perfrec__Pprof__Profile *prof;
	struct pprof *p;

	p = pprof_new();
	cr_assert(p);
	for (uint32_t i = 0; i < 6; i++) {
		s.tid = 100 + i % 3;
		s.cpu = i % 2;
		s.nr_frames = 1 + i % 2;
		cr_assert_eq(pprof_add_stack(p, &s), 0);
	}
	prof = pack(p);
	cr_assert_eq(prof->n_sample, 6);
	for (size_t i = 0; i < prof->n_sample; i++) {
		const Perfrec__Pprof__Sample *sm = prof->sample[i];
		long long tid = -1, cpu = -1;

		for (size_t k = 0; k < sm->n_label; k++) {
			if (!strcmp(str(prof, sm->label[k]->key), "tid"))
				tid = sm->label[k]->num;
			if (!strcmp(str(prof, sm->label[k]->key), "cpu"))
				cpu = atoll(str(prof, sm->label[k]->str));
		}
		/* Added in order i = 0..5: tid 100 + i % 3, cpu i % 2, i % 2 + 1 frames. */
		cr_assert_eq(tid, 100 + (long long)i % 3);
		cr_assert_eq(cpu, (long long)i % 2);
		cr_assert_eq(sm->n_location_id, 1 + i % 2);
	}
	perfrec__pprof__profile__free_unpacked(prof, NULL);
	pprof_free(p);
}

/*
 * pprof readers take the first mapping for the main binary (go tool
 * pprof's "File:"): the process's executable, though the kernel and libc
 * were met first and libc holds more leaves (issue 26).  The locations
 * still name their own mappings after the reordering.
 */
Test(pprof, the_main_binary_is_the_first_mapping)
{
	struct pprof *p = pprof_new();
	const struct pframe k = { .name = "do_syscall_64", .module = "[kernel.kallsyms]", .kind = PFRAME_KERNEL,
				  .addr = 0xffffffff81000100, .map_start = 0xffffffff81000000,
				  .map_end = 0xffffffff81010000 };
	struct pframe libc = fr("memset", "/usr/lib/libc.so.6", 0x7f0000000000, 0x7f0000000100);
	struct pframe app = fr("work", "/opt/bin/app-server", 0x400000, 0x401000);
	struct pframe app_main = fr("main", "/opt/bin/app-server", 0x400000, 0x400100);
	const struct pframe s1[] = { k, libc, app_main }, s2[] = { libc, app_main }, s3[] = { app, app_main };
	Perfrec__Pprof__Profile *prof;
	char text[512];

	add(p, s1, 3, 1);
	add(p, s2, 2, 2);
	add(p, s2, 2, 3);
	add(p, s3, 2, 4);
	prof = pack(p);
	cr_assert_eq(prof->n_mapping, 3);
	cr_assert_str_eq(str(prof, prof->mapping[0]->filename), "/opt/bin/app-server");
	cr_assert_eq(prof->mapping[0]->id, 1);
	for (size_t i = 0; i < prof->n_mapping; i++)
		cr_assert_eq(prof->mapping[i]->id, i + 1, "mapping ids follow their order");
	sample_text(prof, 1, text, sizeof(text));
	cr_assert_str_eq(text, "[kernel.kallsyms]@ffffffff81000000-ffffffff81010000+0/:ffffffff81000100:do_syscall_64@:0 | "
			       "/usr/lib/libc.so.6@7f0000000000-7f0000010000+0/:7f0000000100:memset@:0 | "
			       "/opt/bin/app-server@400000-410000+0/:400100:main@:0");
	sample_text(prof, 4, text, sizeof(text));
	cr_assert_str_eq(text, "/opt/bin/app-server@400000-410000+0/:401000:work@:0 | "
			       "/opt/bin/app-server@400000-410000+0/:400100:main@:0");
	perfrec__pprof__profile__free_unpacked(prof, NULL);
	pprof_free(p);
}

/* Functions carry the demangled name and the symbol the binary has (pprof's system_name). */
Test(pprof, functions_keep_the_mangled_symbol_as_system_name)
{
	struct pprof *p = pprof_new();
	struct pframe f[] = { fr("ns::Grid<int>::sweep", "/bin/app", 0x400000, 0x401000),
			      fr("main", "/bin/app", 0x400000, 0x400100) };
	Perfrec__Pprof__Profile *prof;
	size_t seen = 0;

	f[0].system_name = "_ZN2ns4GridIiE5sweepEv";
	add(p, f, 2, 1);
	prof = pack(p);
	for (size_t i = 0; i < prof->n_function; i++) {
		const char *n = str(prof, prof->function[i]->name), *sys = str(prof, prof->function[i]->system_name);

		if (!strcmp(n, "ns::Grid<int>::sweep")) {
			cr_assert_str_eq(sys, "_ZN2ns4GridIiE5sweepEv");
			seen++;
		} else if (!strcmp(n, "main")) {
			cr_assert_str_eq(sys, "main");
			seen++;
		}
	}
	cr_assert_eq(seen, 2);
	perfrec__pprof__profile__free_unpacked(prof, NULL);
	pprof_free(p);
}
