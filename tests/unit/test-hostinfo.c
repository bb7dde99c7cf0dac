// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests for the host description: each feature body is built against a
 * fake sysfs/proc tree made here and decoded field by field the way perf 6.1
 * reads it; a few checks against the real machine (uname, sysconf); and a
 * whole file written through the writer, read back with our reader and, when
 * perf is installed, printed by `perf report --header-only -I`.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <perfrec/buildid.h>
#include <perfrec/hostinfo.h>
#include <perfrec/pdreader.h>
#include <perfrec/pdwriter.h>

#include "hostinfo-internal.h"
#include "version.h"

/* --- fake tree ------------------------------------------------------------ */

static char root[256], sysroot[300], procroot[300];

static void mkdirs(const char *path)
{
	char buf[PATH_MAX];

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		mkdir(buf, 0700);
		*p = '/';
	}
	mkdir(buf, 0700);
}

static void put(const char *base, const char *rel, const char *content)
{
	char path[PATH_MAX], dir[PATH_MAX];
	char *slash;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", base, rel);
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	*slash = '\0';
	mkdirs(dir);
	f = fopen(path, "we");
	cr_assert_not_null(f, "%s", path);
	fputs(content, f);
	fclose(f);
}

static void putdir(const char *base, const char *rel)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", base, rel);
	mkdirs(path);
}

static void make_roots(void)
{
	snprintf(root, sizeof(root), "/tmp/test-hostinfo-%d", (int)getpid());
	snprintf(sysroot, sizeof(sysroot), "%s/sys", root);
	snprintf(procroot, sizeof(procroot), "%s/proc", root);
	mkdirs(sysroot);
	mkdirs(procroot);
}

static void cpu_topo(int cpu, const char *pkg, const char *thr, int core, int sock, bool old_names)
{
	char rel[128], v[32];

	snprintf(rel, sizeof(rel), "devices/system/cpu/cpu%d/topology/%s", cpu,
		 old_names ? "core_siblings_list" : "package_cpus_list");
	put(sysroot, rel, pkg);
	snprintf(rel, sizeof(rel), "devices/system/cpu/cpu%d/topology/%s", cpu,
		 old_names ? "thread_siblings_list" : "core_cpus_list");
	put(sysroot, rel, thr);
	snprintf(rel, sizeof(rel), "devices/system/cpu/cpu%d/topology/core_id", cpu);
	snprintf(v, sizeof(v), "%d\n", core);
	put(sysroot, rel, v);
	snprintf(rel, sizeof(rel), "devices/system/cpu/cpu%d/topology/physical_package_id", cpu);
	snprintf(v, sizeof(v), "%d\n", sock);
	put(sysroot, rel, v);
	snprintf(rel, sizeof(rel), "devices/system/cpu/cpu%d/topology/die_cpus_list", cpu);
	put(sysroot, rel, "0-3\n");
	snprintf(rel, sizeof(rel), "devices/system/cpu/cpu%d/topology/die_id", cpu);
	put(sysroot, rel, "0\n");
}

static void cache(int cpu, int idx, const char *level, const char *type, const char *size, const char *map)
{
	static const char *const names[] = { "level", "coherency_line_size", "number_of_sets",
					     "ways_of_associativity", "type", "size", "shared_cpu_list" };
	const char *vals[] = { level, "64\n", "64\n", "8\n", type, size, map };
	char rel[160];

	for (size_t i = 0; i < 7; i++) {
		snprintf(rel, sizeof(rel), "devices/system/cpu/cpu%d/cache/index%d/%s", cpu, idx, names[i]);
		put(sysroot, rel, vals[i]);
	}
}

/*
 * Four CPUs present, three online (cpu3 offline: no topology), two cores of
 * two threads in one package; cpu2 uses the pre-5.x file names.  Caches: L1d
 * per core, one L2.  Two NUMA nodes with memory blocks {0,1,5} and {2,70}.
 */
static void fake_tree(void)
{
	make_roots();
	put(sysroot, "devices/system/cpu/present", "0-3\n");
	put(sysroot, "devices/system/cpu/possible", "0-7\n");
	put(sysroot, "devices/system/cpu/online", "0-2\n");
	cpu_topo(0, "0-3\n", "0-1\n", 0, 0, false);
	cpu_topo(1, "0-3\n", "0-1\n", 0, 0, false);
	cpu_topo(2, "0-3\n", "2-3\n", 1, 0, true);
	cache(0, 0, "1\n", "Data\n", "32K\n", "0-1\n");
	cache(0, 1, "2\n", "Unified\n", "1024K\n", "0-3\n");
	cache(1, 0, "1\n", "Data\n", "32K\n", "0-1\n");
	cache(1, 1, "2\n", "Unified\n", "1024K\n", "0-3\n");
	cache(2, 0, "1\n", "Data\n", "32K\n", "2-3\n");
	cache(2, 1, "2\n", "Unified\n", "1024K\n", "0-3\n");
	put(sysroot, "devices/system/node/online", "0-1\n");
	put(sysroot, "devices/system/node/node0/meminfo",
	    "Node 0 MemTotal:        1000 kB\nNode 0 MemFree:          400 kB\nNode 0 MemUsed: 600 kB\n");
	put(sysroot, "devices/system/node/node0/cpulist", "0-1\n");
	put(sysroot, "devices/system/node/node1/meminfo",
	    "Node 1 MemTotal:        2000 kB\nNode 1 MemFree:         1500 kB\n");
	put(sysroot, "devices/system/node/node1/cpulist", "2-3\n");
	putdir(sysroot, "devices/system/node/node0/memory0");
	putdir(sysroot, "devices/system/node/node0/memory1");
	putdir(sysroot, "devices/system/node/node0/memory5");
	putdir(sysroot, "devices/system/node/node1/memory2");
	putdir(sysroot, "devices/system/node/node1/memory70");
	put(sysroot, "devices/system/memory/block_size_bytes", "8000000\n");
	put(sysroot, "bus/event_source/devices/software/type", "1\n");
	put(sysroot, "bus/event_source/devices/tracepoint/type", "2\n");
	put(sysroot, "bus/event_source/devices/cpu/type", "4\n");
	putdir(sysroot, "bus/event_source/devices/broken");
	put(sysroot, "bus/event_source/devices/cpu/caps/max_precise", "3\n");
	put(sysroot, "bus/event_source/devices/cpu/caps/branches", "32\n");
	put(sysroot, "bus/event_source/devices/ibs_op/type", "11\n");
	put(sysroot, "bus/event_source/devices/ibs_op/caps/zen4_ibs_extensions", "1\n");
	put(sysroot, "bus/event_source/devices/cpu_core/type", "8\n");
	put(sysroot, "bus/event_source/devices/cpu_core/caps/pmu_name", "alderlake_hybrid\n");
	put(procroot, "cpuinfo",
	    "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\n"
	    "model name\t: Intel(R) Xeon(R)   Gold  6130 CPU @ 2.10GHz\nmodel\t\t: 85\nstepping\t: 7\n\n"
	    "processor\t: 1\nvendor_id\t: Other\ncpu family\t: 9\nmodel\t\t: 1\nmodel name\t: Wrong\n");
	put(procroot, "meminfo", "MemTotal:       16384 kB\nMemFree:         8192 kB\n");
	putdir(procroot, "self");
	{
		char link[PATH_MAX];

		snprintf(link, sizeof(link), "%s/self/exe", procroot);
		cr_assert_eq(symlink("/usr/sbin/perfrecd-fake", link), 0);
	}
}

static void remove_tree(void)
{
	char cmd[PATH_MAX + 16];

	if (!root[0])
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	cr_assert_eq(system(cmd), 0);
}

static struct perfrec_hostinfo_opts fake_opts(void)
{
	return (struct perfrec_hostinfo_opts){
		.sz = sizeof(struct perfrec_hostinfo_opts),
		.clockid = -1,
		.sysfs = sysroot,
		.proc = procroot,
	};
}

/* --- decoding ------------------------------------------------------------- */

struct cur {
	struct featbuf fb;
	size_t off;
};

static int build(struct cur *c, int feat, const struct perfrec_hostinfo_opts *o)
{
	featbuf_init(&c->fb);
	c->off = 0;
	return hostinfo_build_feature(feat, o, &c->fb);
}

static void built(struct cur *c, int feat, const struct perfrec_hostinfo_opts *o)
{
	int r = build(c, feat, o);

	cr_assert_eq(r, 0, "feature %d: %d", feat, r);
}

static uint32_t u32(struct cur *c)
{
	uint32_t v;

	cr_assert(c->fb.len - c->off >= 4, "body ends at %zu, u32 wanted", c->off);
	memcpy(&v, c->fb.buf + c->off, 4);
	c->off += 4;
	return v;
}

static uint64_t u64(struct cur *c)
{
	uint64_t v;

	cr_assert(c->fb.len - c->off >= 8, "body ends at %zu, u64 wanted", c->off);
	memcpy(&v, c->fb.buf + c->off, 8);
	c->off += 8;
	return v;
}

/* perf_header_string: length padded to 64 and covering a NUL and zeros. */
static const char *str(struct cur *c)
{
	uint32_t len = u32(c);
	const char *s = (const char *)c->fb.buf + c->off;
	size_t n;

	cr_assert(len > 0 && len % 64 == 0, "string length %u not a multiple of 64", len);
	cr_assert(c->fb.len - c->off >= len, "string runs past the body");
	n = strnlen(s, len);
	cr_assert(n < len, "string not terminated");
	for (size_t i = n; i < len; i++)
		cr_assert_eq(s[i], 0, "padding not zero");
	c->off += len;
	return s;
}

static void done(struct cur *c)
{
	cr_assert_eq(c->off, c->fb.len, "body has %zu bytes, decoded %zu", c->fb.len, c->off);
	featbuf_exit(&c->fb);
}

/* --- tests ---------------------------------------------------------------- */

Test(hostinfo, uname_and_version_strings_match_the_machine)
{
	struct utsname u;
	struct cur c;
	const struct {
		int feat;
		const char *want;
	} cases[] = {
		{ PERFREC_FEAT_HOSTNAME, u.nodename },
		{ PERFREC_FEAT_OSRELEASE, u.release },
		{ PERFREC_FEAT_ARCH, u.machine },
		{ PERFREC_FEAT_VERSION, perfrec_hostinfo__version() },
	};

	cr_assert_eq(uname(&u), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		built(&c, cases[i].feat, NULL);
		cr_assert_str_eq(str(&c), cases[i].want, "feature %d", cases[i].feat);
		done(&c);
	}
}

Test(hostinfo, version_parses_as_perf_6_1_or_later)
{
	int major = 0, minor = 0;

	cr_assert_eq(sscanf(perfrec_hostinfo__version(), "%d.%d", &major, &minor), 2);
	cr_assert(major > 6 || (major == 6 && minor >= 1), "%d.%d", major, minor);
}

Test(hostinfo, version_names_perfrecd_and_its_own_version)
{
	const char *v = perfrec_hostinfo__version(), *ours = strstr(v, "-perfrecd-");

	cr_assert_not_null(ours, "%s does not say perfrecd wrote the file", v);
	/* The Makefile's VERSION, as --version and the man pages give it. */
	cr_assert_str_eq(ours + strlen("-perfrecd-"), PERFREC_VERSION, "%s", v);
}

/* A program recording through the library is named, not taken for perfrecd. */
Test(hostinfo, version_names_the_calling_program)
{
	struct perfrec_hostinfo_opts o = { .sz = sizeof(o), .program = "selfprof" };
	struct cur c;
	int major = 0, minor = 0;

	built(&c, PERFREC_FEAT_VERSION, &o);
	const char *v = str(&c);
	cr_assert_str_eq(v, "6.1.0-selfprof-libperfrec-" PERFREC_VERSION);
	cr_assert_eq(sscanf(v, "%d.%d", &major, &minor), 2);
	cr_assert(strstr(v, "perfrecd") == NULL, "%s", v);
	done(&c);
	/* An older opts without the field: perfrecd's own line. */
	o.sz = offsetof(struct perfrec_hostinfo_opts, program);
	built(&c, PERFREC_FEAT_VERSION, &o);
	cr_assert_str_eq(str(&c), perfrec_hostinfo__version());
	done(&c);
}

Test(hostinfo, nrcpus_online_matches_sysconf_on_this_machine)
{
	struct cur c;
	uint32_t avail, online;

	built(&c, PERFREC_FEAT_NRCPUS, NULL);
	avail = u32(&c);
	online = u32(&c);
	done(&c);
	cr_assert_eq(online, (uint32_t)sysconf(_SC_NPROCESSORS_ONLN));
	cr_assert_geq(avail, online);
}

Test(hostinfo, cpu_and_memory_facts_from_fake_tree, .fini = remove_tree)
{
	struct perfrec_hostinfo_opts o;
	struct cur c;

	fake_tree();
	o = fake_opts();
	built(&c, PERFREC_FEAT_NRCPUS, &o);
	cr_assert_eq(u32(&c), 4, "available: highest present + 1");
	cr_assert_eq(u32(&c), 3, "online");
	done(&c);
	built(&c, PERFREC_FEAT_CPUDESC, &o);
	cr_assert_str_eq(str(&c), "Intel(R) Xeon(R) Gold 6130 CPU @ 2.10GHz");
	done(&c);
	built(&c, PERFREC_FEAT_CPUID, &o);
	cr_assert_str_eq(str(&c), "GenuineIntel,6,85,7");
	done(&c);
	built(&c, PERFREC_FEAT_TOTAL_MEM, &o);
	cr_assert_eq(u64(&c), 16384);
	done(&c);
}

Test(hostinfo, cmdline_has_binary_path_then_arguments, .fini = remove_tree)
{
	char *argv[] = { "perfrecd", "-c", "/etc/perfrecd.conf", NULL };
	struct perfrec_hostinfo_opts o;
	struct cur c;

	fake_tree();
	o = fake_opts();
	o.argc = 3;
	o.argv = argv;
	built(&c, PERFREC_FEAT_CMDLINE, &o);
	cr_assert_eq(u32(&c), 3);
	cr_assert_str_eq(str(&c), "/usr/sbin/perfrecd-fake");
	cr_assert_str_eq(str(&c), "-c");
	cr_assert_str_eq(str(&c), "/etc/perfrecd.conf");
	done(&c);
}

Test(hostinfo, cpu_topology_has_all_three_revisions, .fini = remove_tree)
{
	static const struct {
		int core, socket, die;
	} per_cpu[] = { { 0, 0, 0 }, { 0, 0, 0 }, { 1, 0, 0 }, { -1, -1, -1 } };
	struct perfrec_hostinfo_opts o;
	struct cur c;

	fake_tree();
	o = fake_opts();
	built(&c, PERFREC_FEAT_CPU_TOPOLOGY, &o);
	cr_assert_eq(u32(&c), 1, "distinct package lists");
	cr_assert_str_eq(str(&c), "0-3");
	cr_assert_eq(u32(&c), 2, "distinct thread lists");
	cr_assert_str_eq(str(&c), "0-1");
	cr_assert_str_eq(str(&c), "2-3");
	for (size_t i = 0; i < 4; i++) {
		cr_assert_eq((int32_t)u32(&c), per_cpu[i].core, "cpu %zu core", i);
		cr_assert_eq((int32_t)u32(&c), per_cpu[i].socket, "cpu %zu socket", i);
	}
	cr_assert_eq(u32(&c), 1, "distinct die lists");
	cr_assert_str_eq(str(&c), "0-3");
	for (size_t i = 0; i < 4; i++)
		cr_assert_eq((int32_t)u32(&c), per_cpu[i].die, "cpu %zu die", i);
	done(&c);
}

Test(hostinfo, cpu_topology_without_dies_stops_after_core_ids, .fini = remove_tree)
{
	struct perfrec_hostinfo_opts o;
	char path[PATH_MAX];
	struct cur c;

	fake_tree();
	for (int cpu = 0; cpu < 3; cpu++) {
		snprintf(path, sizeof(path), "%s/devices/system/cpu/cpu%d/topology/die_cpus_list", sysroot, cpu);
		cr_assert_eq(unlink(path), 0);
	}
	o = fake_opts();
	built(&c, PERFREC_FEAT_CPU_TOPOLOGY, &o);
	cr_assert_eq(u32(&c), 1);
	str(&c);
	cr_assert_eq(u32(&c), 2);
	str(&c);
	str(&c);
	for (size_t i = 0; i < 8; i++)
		u32(&c);
	done(&c);
}

Test(hostinfo, cache_levels_deduplicated_by_shared_cpus, .fini = remove_tree)
{
	static const struct {
		uint32_t level;
		const char *type, *size, *map;
	} want[] = {
		/* perf's order: by level, CPU order within a level */
		{ 1, "Data", "32K", "0-1" },
		{ 1, "Data", "32K", "2-3" },
		{ 2, "Unified", "1024K", "0-3" },
	};
	struct perfrec_hostinfo_opts o;
	struct cur c;

	fake_tree();
	o = fake_opts();
	built(&c, PERFREC_FEAT_CACHE, &o);
	cr_assert_eq(u32(&c), 1, "version");
	cr_assert_eq(u32(&c), 3, "distinct caches");
	for (size_t i = 0; i < 3; i++) {
		cr_assert_eq(u32(&c), want[i].level, "cache %zu level", i);
		cr_assert_eq(u32(&c), 64, "line size");
		cr_assert_eq(u32(&c), 64, "sets");
		cr_assert_eq(u32(&c), 8, "ways");
		cr_assert_str_eq(str(&c), want[i].type);
		cr_assert_str_eq(str(&c), want[i].size);
		cr_assert_str_eq(str(&c), want[i].map);
	}
	done(&c);
}

Test(hostinfo, numa_nodes_with_memory_and_cpus, .fini = remove_tree)
{
	struct perfrec_hostinfo_opts o;
	struct cur c;

	fake_tree();
	o = fake_opts();
	built(&c, PERFREC_FEAT_NUMA_TOPOLOGY, &o);
	cr_assert_eq(u32(&c), 2);
	cr_assert_eq(u32(&c), 0);
	cr_assert_eq(u64(&c), 1000);
	cr_assert_eq(u64(&c), 400);
	cr_assert_str_eq(str(&c), "0-1");
	cr_assert_eq(u32(&c), 1);
	cr_assert_eq(u64(&c), 2000);
	cr_assert_eq(u64(&c), 1500);
	cr_assert_str_eq(str(&c), "2-3");
	done(&c);
}

Test(hostinfo, numa_without_node_directory_is_one_node, .fini = remove_tree)
{
	struct perfrec_hostinfo_opts o;
	struct cur c;

	make_roots();
	put(sysroot, "devices/system/cpu/online", "0-5\n");
	put(procroot, "meminfo", "MemTotal:  777 kB\nMemFree:  55 kB\n");
	o = fake_opts();
	built(&c, PERFREC_FEAT_NUMA_TOPOLOGY, &o);
	cr_assert_eq(u32(&c), 1);
	cr_assert_eq(u32(&c), 0);
	cr_assert_eq(u64(&c), 777);
	cr_assert_eq(u64(&c), 55);
	cr_assert_str_eq(str(&c), "0-5");
	done(&c);
}

Test(hostinfo, memory_topology_bitmaps_per_node, .fini = remove_tree)
{
	struct perfrec_hostinfo_opts o;
	struct cur c;

	fake_tree();
	o = fake_opts();
	built(&c, PERFREC_FEAT_MEM_TOPOLOGY, &o);
	cr_assert_eq(u64(&c), 1, "version");
	cr_assert_eq(u64(&c), 0x8000000, "block size");
	cr_assert_eq(u64(&c), 2, "nodes");
	cr_assert_eq(u64(&c), 0);
	cr_assert_eq(u64(&c), 6, "node 0: highest block 5 + 1");
	cr_assert_eq(u64(&c), 6, "bitmap size repeated");
	cr_assert_eq(u64(&c), 0x23, "blocks 0, 1, 5");
	cr_assert_eq(u64(&c), 1);
	cr_assert_eq(u64(&c), 71);
	cr_assert_eq(u64(&c), 71);
	cr_assert_eq(u64(&c), 0x4, "block 2");
	cr_assert_eq(u64(&c), 0x40, "block 70");
	done(&c);
}

/* Every PMU with a readable type, in directory order as perf lists them. */
Test(hostinfo, pmu_mappings_in_directory_order_skipping_unreadable, .fini = remove_tree)
{
	static const struct {
		uint32_t type;
		const char *name;
	} want[] = { { 4, "cpu" }, { 8, "cpu_core" }, { 11, "ibs_op" }, { 1, "software" }, { 2, "tracepoint" } };
	char path[PATH_MAX];
	struct perfrec_hostinfo_opts o;
	struct dirent *de;
	size_t k = 0;
	struct cur c;
	DIR *d;

	fake_tree();
	o = fake_opts();
	built(&c, PERFREC_FEAT_PMU_MAPPINGS, &o);
	cr_assert_eq(u32(&c), 5);
	snprintf(path, sizeof(path), "%s/bus/event_source/devices", sysroot);
	d = opendir(path);
	cr_assert_not_null(d);
	while ((de = readdir(d))) {
		size_t i;

		for (i = 0; i < 5 && strcmp(de->d_name, want[i].name); i++)
			;
		if (i == 5)
			continue; /* ".", "..", "broken" */
		cr_assert_eq(u32(&c), want[i].type, "%s", want[i].name);
		cr_assert_str_eq(str(&c), want[i].name, "entry %zu not in directory order", k);
		k++;
	}
	closedir(d);
	cr_assert_eq(k, 5);
	done(&c);
}

/* PMU_CAPS as perf writes it: hybrid PMUs first, the core "cpu" PMU apart. */
Test(hostinfo, pmu_caps_per_pmu_and_the_cpu_pmu_on_its_own, .fini = remove_tree)
{
	struct perfrec_hostinfo_opts o;
	struct cur c;
	bool precise = false, branches = false;

	fake_tree();
	o = fake_opts();
	built(&c, PERFREC_FEAT_PMU_CAPS, &o);
	cr_assert_eq(u32(&c), 2, "PMUs with caps, cpu not among them");
	cr_assert_eq(u32(&c), 1);
	cr_assert_str_eq(str(&c), "pmu_name");
	cr_assert_str_eq(str(&c), "alderlake_hybrid", "value without its newline");
	cr_assert_str_eq(str(&c), "cpu_core", "the hybrid PMU first");
	cr_assert_eq(u32(&c), 1);
	cr_assert_str_eq(str(&c), "zen4_ibs_extensions");
	cr_assert_str_eq(str(&c), "1");
	cr_assert_str_eq(str(&c), "ibs_op");
	done(&c);

	built(&c, PERFREC_FEAT_CPU_PMU_CAPS, &o);
	cr_assert_eq(u32(&c), 2);
	for (int i = 0; i < 2; i++) {
		const char *name = str(&c), *value = str(&c);

		if (!strcmp(name, "max_precise") && !strcmp(value, "3"))
			precise = true;
		else if (!strcmp(name, "branches") && !strcmp(value, "32"))
			branches = true;
		else
			cr_assert_fail("unexpected cap %s=%s", name, value);
	}
	cr_assert(precise && branches);
	done(&c);
}

Test(hostinfo, pmu_caps_of_a_host_without_any_is_a_zero_count, .fini = remove_tree)
{
	struct perfrec_hostinfo_opts o;
	struct featbuf fb;

	make_roots();
	put(sysroot, "bus/event_source/devices/software/type", "1\n");
	o = fake_opts();
	featbuf_init(&fb);
	cr_assert_eq(hostinfo_build_feature(PERFREC_FEAT_PMU_CAPS, &o, &fb), 0);
	cr_assert_eq(fb.len, 4);
	cr_assert_eq(*(uint32_t *)fb.buf, 0);
	featbuf_exit(&fb);
	featbuf_init(&fb);
	cr_assert_eq(hostinfo_build_feature(PERFREC_FEAT_CPU_PMU_CAPS, &o, &fb), -ENOENT, "no cpu PMU");
	featbuf_exit(&fb);
}

Test(hostinfo, time_features_follow_options)
{
	struct perfrec_hostinfo_opts o = { .sz = sizeof(o), .clockid = -1 };
	struct timespec res, now;
	struct cur c;
	uint64_t wall;

	cr_assert_eq(build(&c, PERFREC_FEAT_SAMPLE_TIME, &o), -ENOENT);
	featbuf_exit(&c.fb);
	cr_assert_eq(build(&c, PERFREC_FEAT_CLOCKID, &o), -ENOENT);
	featbuf_exit(&c.fb);
	cr_assert_eq(build(&c, PERFREC_FEAT_CLOCK_DATA, &o), -ENOENT);
	featbuf_exit(&c.fb);

	o.first_sample_time = 1000;
	o.last_sample_time = 5000;
	o.clockid = CLOCK_MONOTONIC;
	o.clock_ns = 123456789;
	o.wall_ns = 1700000000000000000ULL;
	built(&c, PERFREC_FEAT_SAMPLE_TIME, &o);
	cr_assert_eq(u64(&c), 1000);
	cr_assert_eq(u64(&c), 5000);
	done(&c);
	built(&c, PERFREC_FEAT_CLOCKID, &o);
	cr_assert_eq(clock_getres(CLOCK_MONOTONIC, &res), 0);
	cr_assert_eq(u64(&c), (uint64_t)res.tv_sec * 1000000000 + (uint64_t)res.tv_nsec);
	done(&c);
	built(&c, PERFREC_FEAT_CLOCK_DATA, &o);
	cr_assert_eq(u32(&c), 1, "version");
	cr_assert_eq(u32(&c), CLOCK_MONOTONIC);
	cr_assert_eq(u64(&c), 1700000000000000000ULL);
	cr_assert_eq(u64(&c), 123456789);
	done(&c);

	/* no times given: taken now */
	o.clock_ns = o.wall_ns = 0;
	built(&c, PERFREC_FEAT_CLOCK_DATA, &o);
	cr_assert_eq(clock_gettime(CLOCK_REALTIME, &now), 0);
	u32(&c);
	u32(&c);
	wall = u64(&c);
	cr_assert(wall > 0 && wall <= (uint64_t)now.tv_sec * 1000000000 + (uint64_t)now.tv_nsec);
	cr_assert_gt(u64(&c), 0);
	done(&c);
}

Test(hostinfo, missing_sysfs_pieces_degrade, .fini = remove_tree)
{
	struct perfrec_hostinfo_opts o;
	struct cur c;

	make_roots(); /* empty sysfs and proc */
	o = fake_opts();
	built(&c, PERFREC_FEAT_HOSTNAME, &o);
	featbuf_exit(&c.fb);
	cr_assert_eq(build(&c, PERFREC_FEAT_CPU_TOPOLOGY, &o), -ENOENT);
	featbuf_exit(&c.fb);
	cr_assert_lt(build(&c, PERFREC_FEAT_CPUID, &o), 0);
	featbuf_exit(&c.fb);
	cr_assert_lt(build(&c, PERFREC_FEAT_NUMA_TOPOLOGY, &o), 0);
	featbuf_exit(&c.fb);
	built(&c, PERFREC_FEAT_MEM_TOPOLOGY, &o);
	cr_assert_eq(u64(&c), 1);
	cr_assert_eq(u64(&c), 0);
	cr_assert_eq(u64(&c), 0, "no memory directory: no nodes");
	done(&c);
	built(&c, PERFREC_FEAT_CACHE, &o);
	cr_assert_eq(u32(&c), 1);
	cr_assert_eq(u32(&c), 0);
	done(&c);
	built(&c, PERFREC_FEAT_NRCPUS, &o); /* falls back to sysconf */
	cr_assert_eq(u32(&c), (uint32_t)sysconf(_SC_NPROCESSORS_CONF));
	cr_assert_eq(u32(&c), (uint32_t)sysconf(_SC_NPROCESSORS_ONLN));
	done(&c);
	cr_assert_eq(build(&c, PERFREC_FEAT_EVENT_DESC, &o), -EOPNOTSUPP);
	featbuf_exit(&c.fb);
}

/* --- whole files ---------------------------------------------------------- */

#define SAMPLE_TYPE (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | \
		     PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD)

/* An MMAP2 of /bin/true into this process, with its real build id. */
static void note_true_mmap2(struct perfrec_buildid_table *t)
{
	unsigned char rec[128] = {0};
	struct perf_event_header *h = (void *)rec;
	uint32_t pid = (uint32_t)getpid();
	int len = perfrec_buildid__read_elf("/bin/true", rec + 44);

	if (len <= 0)
		return;
	h->type = PERF_RECORD_MMAP2;
	h->misc = PERF_RECORD_MISC_USER | PERF_RECORD_MISC_MMAP_BUILD_ID;
	h->size = 72 + 16;
	memcpy(rec + 8, &pid, 4);
	memcpy(rec + 12, &pid, 4);
	rec[40] = (uint8_t)len;
	memcpy(rec + 72, "/bin/true", 10);
	perfrec_buildid_table__note_mmap2(t, h);
}

/* A file with one cpu-clock event, two samples and every host feature. */
static void write_file(const char *path, const struct perfrec_hostinfo_opts *o)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr), .type = PERF_TYPE_SOFTWARE, .config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_period = 100000, .sample_type = SAMPLE_TYPE, .sample_id_all = 1,
		.use_clockid = 1, .clockid = CLOCK_MONOTONIC, .disabled = 1,
	};
	struct perfrec_pdwriter_opts wo = { .sz = sizeof(wo), .owns_fd = true };
	struct perfrec_buildid_table *t;
	struct perfrec_pdwriter *w;
	uint64_t id = 77;
	int fd;

	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	cr_assert(fd >= 0);
	cr_assert_eq(perfrec_pdwriter__new(fd, &wo, &w), 0);
	cr_assert_eq(perfrec_pdwriter__add_attr(w, &attr, &id, 1, "cpu-clock"), 0);
	for (uint64_t i = 0; i < 2; i++) {
		struct {
			struct perf_event_header h;
			uint64_t id, ip;
			uint32_t pid, tid;
			uint64_t time;
			uint32_t cpu, res;
			uint64_t period;
		} s = {
			.h = { .type = PERF_RECORD_SAMPLE, .misc = PERF_RECORD_MISC_USER, .size = sizeof(s) },
			.id = id, .ip = 0x401000 + i * 16, .pid = (uint32_t)getpid(), .tid = (uint32_t)getpid(),
			.time = o->first_sample_time + i * (o->last_sample_time - o->first_sample_time),
			.period = 100000,
		};

		cr_assert_eq(perfrec_pdwriter__write(w, &s, sizeof(s)), 0);
	}
	cr_assert_eq(perfrec_hostinfo__add_features(w, o), 0);
	cr_assert_eq(perfrec_buildid_table__new(&t), 0);
	note_true_mmap2(t);
	perfrec_buildid_table__note_sample_pid(t, (uint32_t)getpid(), false);
	perfrec_buildid_table__note_sample_pid(t, 0, true);
	cr_assert_eq(perfrec_buildid_table__add_feature(t, w), 0);
	perfrec_buildid_table__free(t);
	cr_assert_eq(perfrec_pdwriter__finish(w), 0);
	perfrec_pdwriter__free(w, false);
}

static struct perfrec_hostinfo_opts real_opts(void)
{
	static char *argv[] = { "perfrecd", "--test", NULL };
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (struct perfrec_hostinfo_opts){
		.sz = sizeof(struct perfrec_hostinfo_opts),
		.argc = 2,
		.argv = argv,
		.clockid = CLOCK_MONOTONIC,
		.first_sample_time = (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec,
		.last_sample_time = (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec + 5000000,
	};
}

Test(hostinfo, add_features_sets_every_feature_the_reader_finds)
{
	struct perfrec_hostinfo_opts o = real_opts();
	struct perfrec_pdreader *r;
	char path[64];

	snprintf(path, sizeof(path), "/tmp/test-hostinfo-%d.data", (int)getpid());
	write_file(path, &o);
	cr_assert_eq(perfrec_pdreader__open(path, NULL, &r), 0);
	cr_assert_eq(perfrec_pdreader__verify(r), 0, "%s", perfrec_pdreader__error(r, NULL));
	for (size_t i = 0; i < hostinfo_nr_features; i++) {
		int feat = hostinfo_features[i];
		const void *body;
		size_t len;
		struct cur c;
		int br = build(&c, feat, &o);

		if (br == -ENOENT) {
			cr_assert_eq(perfrec_pdreader__feature(r, feat, &body, &len), -ENOENT);
			featbuf_exit(&c.fb);
			continue;
		}
		cr_assert_eq(br, 0, "feature %d: %d", feat, br);
		cr_assert_eq(perfrec_pdreader__feature(r, feat, &body, &len), 0, "feature %s missing",
			     perfrec_pdreader__feature_name(feat));
		/* clock data is taken at build time: compare the rest byte for byte */
		if (feat != PERFREC_FEAT_CLOCK_DATA && feat != PERFREC_FEAT_NUMA_TOPOLOGY) {
			cr_assert_eq(len, c.fb.len, "feature %s length", perfrec_pdreader__feature_name(feat));
			cr_assert(!memcmp(body, c.fb.buf, len), "feature %s differs",
				  perfrec_pdreader__feature_name(feat));
		}
		featbuf_exit(&c.fb);
	}
	perfrec_pdreader__free(r);
	unlink(path);
}

/* Run perf on @path; stdout and stderr into heap strings.  Returns exit status. */
static int run_perf(const char *path, char **ret_out, char **ret_err)
{
	char cmd[512], out[96], err[96];
	size_t len;
	int st;

	snprintf(out, sizeof(out), "%s.out", path);
	snprintf(err, sizeof(err), "%s.err", path);
	snprintf(cmd, sizeof(cmd), "/usr/bin/perf report --header-only -I -i '%s' >'%s' 2>'%s'", path, out, err);
	st = system(cmd);
	for (int i = 0; i < 2; i++) {
		const char *p = i ? err : out;
		FILE *f = fopen(p, "re");
		char *buf = calloc(1, 1 << 20);

		cr_assert(f && buf);
		len = fread(buf, 1, (1 << 20) - 1, f);
		buf[len] = '\0';
		fclose(f);
		unlink(p);
		*(i ? ret_err : ret_out) = buf;
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* perf's own view of HEADER_BUILD_ID: /bin/true's and the kernel's ids. */
static void buildid_list_check(const char *path)
{
	uint8_t id[PERFREC_BUILD_ID_MAX];
	char cmd[256], want[128], line[512];
	bool saw_true = false, saw_kernel = false;
	int len = perfrec_buildid__read_elf("/bin/true", id);
	FILE *p;

	cr_assert_gt(len, 0, "/bin/true has no build id");
	for (int i = 0; i < len; i++)
		sprintf(want + 2 * i, "%02x", id[i]);
	strcat(want, " /bin/true");
	snprintf(cmd, sizeof(cmd), "/usr/bin/perf buildid-list -i '%s' 2>&1", path);
	p = popen(cmd, "r");
	cr_assert_not_null(p);
	while (fgets(line, sizeof(line), p)) {
		saw_true |= !strncmp(line, want, strlen(want));
		saw_kernel |= strstr(line, " [kernel.kallsyms]") != NULL;
	}
	pclose(p);
	cr_assert(saw_true, "perf buildid-list lacks \"%s\"", want);
	cr_assert(access("/sys/kernel/notes", R_OK) || saw_kernel, "perf buildid-list lacks the kernel");
}

Test(hostinfo, perf_prints_every_feature)
{
	static const char *const want[] = {
		"# hostname : ", "# os release : ", "# perf version : 6.1.0-perfrecd", "# arch : ",
		"# nrcpus online : ", "# nrcpus avail : ", "# cpudesc : ", "# cpuid : ",
		"# total memory : ", "# cmdline : ", "# sibling sockets : ", "# sibling threads : ",
		"# node0 meminfo", "# pmu mappings: ", "# CPU cache info:", "# clockid",
		"# time of first sample : ", "# time of last sample : ", "# memory nodes (nr ",
	};
	struct perfrec_hostinfo_opts o = real_opts();
	struct utsname u;
	char path[64], line[400], *out = NULL, *err = NULL;
	int st;

	if (access("/usr/bin/perf", X_OK))
		cr_skip_test("/usr/bin/perf is not installed");
	snprintf(path, sizeof(path), "/tmp/test-hostinfo-perf-%d.data", (int)getpid());
	write_file(path, &o);
	st = run_perf(path, &out, &err);
	cr_assert_eq(st, 0, "perf exit %d: %s", st, err);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		cr_assert_not_null(strstr(out, want[i]), "perf did not print \"%s\":\n%s", want[i], out);
	cr_assert_eq(uname(&u), 0);
	snprintf(line, sizeof(line), "# hostname : %s\n", u.nodename);
	cr_assert_not_null(strstr(out, line), "%s", out);
	snprintf(line, sizeof(line), "# nrcpus online : %ld\n", sysconf(_SC_NPROCESSORS_ONLN));
	cr_assert_not_null(strstr(out, line), "%s", out);
	cr_assert_not_null(strstr(out, "--test"), "cmdline arguments");
	/* perf names a feature it could not read or process on stderr */
	cr_assert_null(strcasestr(err, "failed"), "perf stderr: %s", err);
	cr_assert_null(strcasestr(err, "error"), "perf stderr: %s", err);
	cr_assert_null(strcasestr(err, "warning"), "perf stderr: %s", err);
	cr_assert_null(strcasestr(err, "incompatible"), "perf stderr: %s", err);
	free(out);
	free(err);
	buildid_list_check(path);
	if (!getenv("KEEP_PERF_FILE"))
		unlink(path);
}
