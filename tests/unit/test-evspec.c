// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests for evspec: perf's event spellings mapped to attr
 * type/config/exclude bits, modifiers, raw events, tracepoints looked up in
 * a fake tracefs tree, and the error text users see for bad names.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <perfrec/evspec.h>

#define HWC(id, op, res) \
	((uint64_t)PERF_COUNT_HW_CACHE_##id | ((uint64_t)PERF_COUNT_HW_CACHE_OP_##op << 8) | \
	 ((uint64_t)PERF_COUNT_HW_CACHE_RESULT_##res << 16))

struct name_case {
	const char *in;
	uint32_t type;
	uint64_t config;
	unsigned int ex_user, ex_kernel, ex_hv, precise;
};

static const struct name_case name_cases[] = {
	{ "cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, 0, 0, 0, 0 },
	{ "task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, 0, 0, 0, 0 },
	{ "page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, 0, 0, 0, 0 },
	{ "faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, 0, 0, 0, 0 },
	{ "minor-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN, 0, 0, 0, 0 },
	{ "major-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ, 0, 0, 0, 0 },
	{ "context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, 0, 0, 0, 0 },
	{ "cs", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, 0, 0, 0, 0 },
	{ "cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS, 0, 0, 0, 0 },
	{ "migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS, 0, 0, 0, 0 },
	{ "alignment-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_ALIGNMENT_FAULTS, 0, 0, 0, 0 },
	{ "emulation-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_EMULATION_FAULTS, 0, 0, 0, 0 },
	{ "dummy", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY, 0, 0, 0, 0 },
	{ "bpf-output", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_BPF_OUTPUT, 0, 0, 0, 0 },
	{ "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, 0, 0, 0, 0 },
	{ "cpu-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, 0, 0, 0, 0 },
	{ "instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, 0, 0, 0, 0 },
	{ "cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES, 0, 0, 0, 0 },
	{ "cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES, 0, 0, 0, 0 },
	{ "branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS, 0, 0, 0, 0 },
	{ "branch-instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS, 0, 0, 0, 0 },
	{ "branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES, 0, 0, 0, 0 },
	{ "bus-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES, 0, 0, 0, 0 },
	{ "stalled-cycles-frontend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND, 0, 0, 0, 0 },
	{ "idle-cycles-frontend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND, 0, 0, 0, 0 },
	{ "stalled-cycles-backend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_BACKEND, 0, 0, 0, 0 },
	{ "idle-cycles-backend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_BACKEND, 0, 0, 0, 0 },
	{ "ref-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES, 0, 0, 0, 0 },
	/* hardware cache events */
	{ "L1-dcache-load-misses", PERF_TYPE_HW_CACHE, HWC(L1D, READ, MISS), 0, 0, 0, 0 },
	{ "L1-dcache-loads", PERF_TYPE_HW_CACHE, HWC(L1D, READ, ACCESS), 0, 0, 0, 0 },
	{ "L1-dcache-stores", PERF_TYPE_HW_CACHE, HWC(L1D, WRITE, ACCESS), 0, 0, 0, 0 },
	{ "L1-icache-load-misses", PERF_TYPE_HW_CACHE, HWC(L1I, READ, MISS), 0, 0, 0, 0 },
	{ "LLC-loads", PERF_TYPE_HW_CACHE, HWC(LL, READ, ACCESS), 0, 0, 0, 0 },
	{ "LLC-store-misses", PERF_TYPE_HW_CACHE, HWC(LL, WRITE, MISS), 0, 0, 0, 0 },
	{ "LLC-prefetches", PERF_TYPE_HW_CACHE, HWC(LL, PREFETCH, ACCESS), 0, 0, 0, 0 },
	{ "dTLB-load-misses", PERF_TYPE_HW_CACHE, HWC(DTLB, READ, MISS), 0, 0, 0, 0 },
	{ "iTLB-load-misses", PERF_TYPE_HW_CACHE, HWC(ITLB, READ, MISS), 0, 0, 0, 0 },
	{ "branch-load-misses", PERF_TYPE_HW_CACHE, HWC(BPU, READ, MISS), 0, 0, 0, 0 },
	{ "branch-loads", PERF_TYPE_HW_CACHE, HWC(BPU, READ, ACCESS), 0, 0, 0, 0 },
	{ "node-load-misses", PERF_TYPE_HW_CACHE, HWC(NODE, READ, MISS), 0, 0, 0, 0 },
	{ "L1-dcache-misses", PERF_TYPE_HW_CACHE, HWC(L1D, READ, MISS), 0, 0, 0, 0 },
	/* raw */
	{ "r01c2", PERF_TYPE_RAW, 0x01c2, 0, 0, 0, 0 },
	{ "rFF", PERF_TYPE_RAW, 0xff, 0, 0, 0, 0 },
	{ "r0", PERF_TYPE_RAW, 0, 0, 0, 0, 0 },
	{ "rffffffffffffffff", PERF_TYPE_RAW, UINT64_MAX, 0, 0, 0, 0 },
	/* modifiers */
	{ "cycles:u", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, 0, 1, 1, 0 },
	{ "cycles:k", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, 1, 0, 1, 0 },
	{ "cpu-clock:uk", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, 0, 0, 1, 0 },
	{ "cpu-clock:ku", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, 0, 0, 1, 0 },
	{ "cycles:p", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, 0, 0, 0, 1 },
	{ "cycles:pp", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, 0, 0, 0, 2 },
	{ "cycles:ppp", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, 0, 0, 0, 3 },
	{ "cycles:upp", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, 0, 1, 1, 2 },
	{ "LLC-load-misses:u", PERF_TYPE_HW_CACHE, HWC(LL, READ, MISS), 0, 1, 1, 0 },
	{ "r01c2:k", PERF_TYPE_RAW, 0x01c2, 1, 0, 1, 0 },
};

Test(evspec, maps_perf_names_to_type_config_and_exclude_bits)
{
	for (size_t i = 0; i < sizeof(name_cases) / sizeof(name_cases[0]); i++) {
		const struct name_case *c = &name_cases[i];
		struct perfrec_evspec s;
		char err[128] = "";
		int r;

		memset(&s, 0xa5, sizeof(s));
		r = perfrec_evspec__parse(c->in, NULL, &s, err, sizeof(err));
		cr_assert_eq(r, 0, "parse(\"%s\") = %d (%s)", c->in, r, err);
		cr_assert_str_eq(s.name, c->in);
		cr_assert_eq(s.attr.size, sizeof(struct perf_event_attr), "%s: attr.size", c->in);
		cr_assert_eq(s.attr.type, c->type, "%s: type %u, want %u", c->in, s.attr.type, c->type);
		cr_assert_eq(s.attr.config, c->config, "%s: config %#llx, want %#llx", c->in,
			     (unsigned long long)s.attr.config, (unsigned long long)c->config);
		cr_assert_eq(s.attr.exclude_user, c->ex_user, "%s: exclude_user", c->in);
		cr_assert_eq(s.attr.exclude_kernel, c->ex_kernel, "%s: exclude_kernel", c->in);
		cr_assert_eq(s.attr.exclude_hv, c->ex_hv, "%s: exclude_hv", c->in);
		cr_assert_eq(s.attr.precise_ip, c->precise, "%s: precise_ip", c->in);
		/* Sampling settings are evlist's job; evspec must leave them zero. */
		cr_assert_eq(s.attr.sample_type, 0, "%s: sample_type", c->in);
		cr_assert_eq(s.attr.sample_period, 0, "%s: sample_period", c->in);
		cr_assert_eq(s.attr.disabled, 0, "%s: disabled", c->in);
	}
}

struct bad_case {
	const char *in;
	int err;
	const char *msg; /* exact error text */
};

static const struct bad_case bad_cases[] = {
	{ "cycels", -EINVAL, "unknown event 'cycels'" },
	{ "Cycles", -EINVAL, "unknown event 'Cycles'" },
	{ "CPU-CLOCK", -EINVAL, "unknown event 'CPU-CLOCK'" },
	{ "cycels:u", -EINVAL, "unknown event 'cycels'" },
	{ "cycles:x", -EINVAL, "unknown modifier 'x' in 'cycles:x'" },
	{ "cpu-clock:uz", -EINVAL, "unknown modifier 'z' in 'cpu-clock:uz'" },
	{ "cycles:pppp", -EINVAL, NULL },
	{ "cycles:", -EINVAL, NULL },
	{ "", -EINVAL, NULL },
	{ "r", -EINVAL, "unknown event 'r'" },
	{ "rxyz", -EINVAL, "unknown event 'rxyz'" },
	{ "r12345678901234567", -EINVAL, NULL },
	{ "L1-dcache-bogus", -EINVAL, "unknown event 'L1-dcache-bogus'" },
	{ "L1-dcache", -EINVAL, "unknown event 'L1-dcache'" },
	{ "../x:y", -EINVAL, NULL },
	{ ":", -EINVAL, NULL },
};

/* perf's guest/host bits: guests left out by default, G and H name what counts. */
Test(evspec, guest_and_host_bits_as_perf_sets_them)
{
	static const struct {
		const char *in;
		unsigned int ex_guest, ex_host;
	} cases[] = {
		{ "cpu-clock", 1, 0 },
		{ "cycles:u", 1, 0 },
		{ "cycles:G", 0, 1 },
		{ "cycles:H", 1, 0 },
		{ "dummy:HG", 0, 0 },
		{ "cycles:GHu", 0, 0 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct perfrec_evspec s;
		char err[128] = "";

		cr_assert_eq(perfrec_evspec__parse(cases[i].in, NULL, &s, err, sizeof(err)), 0, "%s: %s",
			     cases[i].in, err);
		cr_assert_eq(s.attr.exclude_guest, cases[i].ex_guest, "%s: exclude_guest", cases[i].in);
		cr_assert_eq(s.attr.exclude_host, cases[i].ex_host, "%s: exclude_host", cases[i].in);
	}
}

Test(evspec, rejects_bad_names_and_modifiers_naming_the_input)
{
	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const struct bad_case *c = &bad_cases[i];
		struct perfrec_evspec_opts o = { .sz = sizeof(o), .tracefs = "/nonexistent-tracefs" };
		struct perfrec_evspec s;
		char err[128] = "";
		int r = perfrec_evspec__parse(c->in, &o, &s, err, sizeof(err));

		cr_assert_eq(r, c->err, "parse(\"%s\") = %d, want %d", c->in, r, c->err);
		cr_assert_neq(err[0], '\0', "parse(\"%s\") gave no reason", c->in);
		if (c->msg)
			cr_assert_str_eq(err, c->msg);
		else if (c->in[0] && c->in[0] != ':')
			cr_assert(strstr(err, c->in) || strstr(err, "modifier"),
				  "reason for \"%s\" does not name it: %s", c->in, err);
	}
}

Test(evspec, error_text_is_cut_to_the_buffer)
{
	struct perfrec_evspec s;
	char err[8];

	memset(err, 'x', sizeof(err));
	cr_assert_eq(perfrec_evspec__parse("no-such-event-at-all", NULL, &s, err, sizeof(err)), -EINVAL);
	cr_assert_eq(err[sizeof(err) - 1], '\0');
	cr_assert_eq(strlen(err), sizeof(err) - 1);
	/* No buffer at all is fine too. */
	cr_assert_eq(perfrec_evspec__parse("no-such-event-at-all", NULL, &s, NULL, 0), -EINVAL);
}

Test(evspec, a_long_name_is_truncated_safely)
{
	char name[300];
	struct perfrec_evspec s;

	/* "cpu-clock:" then 280 'u' modifiers: valid, and longer than name[]. */
	strcpy(name, "cpu-clock:");
	memset(name + 10, 'u', sizeof(name) - 11);
	name[sizeof(name) - 1] = '\0';
	cr_assert_eq(perfrec_evspec__parse(name, NULL, &s, NULL, 0), 0);
	cr_assert_eq(strlen(s.name), PERFREC_EVSPEC_NAME_MAX - 1);
	cr_assert_eq(strncmp(s.name, name, PERFREC_EVSPEC_NAME_MAX - 1), 0);
	cr_assert_eq(s.attr.exclude_kernel, 1);
}

/* A fake tracefs: <dir>/events/<subsys>/<name>/id holding @id. */
static void make_tp(const char *root, const char *subsys, const char *name, const char *id)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/events", root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/events/%s", root, subsys);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/events/%s/%s", root, subsys, name);
	cr_assert_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/events/%s/%s/id", root, subsys, name);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs(id, f);
	fclose(f);
}

static void rm_tree(const char *root)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	cr_assert_eq(system(cmd), 0);
}

Test(evspec, tracepoint_id_comes_from_tracefs)
{
	char root[] = "/tmp/test-evspec-XXXXXX";
	struct perfrec_evspec_opts o = { .sz = sizeof(o) };
	struct perfrec_evspec s;
	char err[256] = "", want[512];

	cr_assert_not_null(mkdtemp(root));
	make_tp(root, "sched", "sched_switch", "316\n");
	make_tp(root, "irq", "irq_handler_entry", "42");
	o.tracefs = root;

	cr_assert_eq(perfrec_evspec__parse("sched:sched_switch", &o, &s, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(s.attr.type, PERF_TYPE_TRACEPOINT);
	cr_assert_eq(s.attr.config, 316);
	cr_assert_str_eq(s.name, "sched:sched_switch");

	cr_assert_eq(perfrec_evspec__parse("irq:irq_handler_entry", &o, &s, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(s.attr.config, 42);

	/* Tracepoint plus modifier. */
	cr_assert_eq(perfrec_evspec__parse("sched:sched_switch:k", &o, &s, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(s.attr.type, PERF_TYPE_TRACEPOINT);
	cr_assert_eq(s.attr.config, 316);
	cr_assert_eq(s.attr.exclude_user, 1);

	/* Missing tracepoint: -ENOENT naming it and where we looked. */
	cr_assert_eq(perfrec_evspec__parse("foo:bar", &o, &s, err, sizeof(err)), -ENOENT);
	snprintf(want, sizeof(want), "no tracepoint 'foo:bar' in %s/events", root);
	cr_assert_str_eq(err, want);
	cr_assert_eq(perfrec_evspec__parse("sched:sched_wakeup", &o, &s, err, sizeof(err)), -ENOENT);

	rm_tree(root);
}

Test(evspec, tracepoint_with_a_garbage_id_is_refused)
{
	char root[] = "/tmp/test-evspec-XXXXXX";
	struct perfrec_evspec_opts o = { .sz = sizeof(o) };
	struct perfrec_evspec s;
	char err[256] = "";

	cr_assert_not_null(mkdtemp(root));
	make_tp(root, "sched", "sched_switch", "abc\n");
	o.tracefs = root;
	cr_assert_eq(perfrec_evspec__parse("sched:sched_switch", &o, &s, err, sizeof(err)), -EINVAL);
	cr_assert_neq(err[0], '\0');
	rm_tree(root);
}

Test(evspec, real_tracefs_sched_switch)
{
	struct perfrec_evspec s;
	char err[256] = "";
	int r;

	if (geteuid() != 0)
		cr_skip_test("needs root to read (and maybe mount) tracefs");
	r = perfrec_evspec__parse("sched:sched_switch", NULL, &s, err, sizeof(err));
	if (r == -ENOENT)
		cr_skip_test("no tracefs with sched:sched_switch here: %s", err);
	cr_assert_eq(r, 0, "%s", err);
	cr_assert_eq(s.attr.type, PERF_TYPE_TRACEPOINT);
	cr_assert_gt(s.attr.config, 0);
}
