// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Host description for a perf.data file's feature sections: each body is
 * built from uname, /proc and sysfs in exactly the encoding perf 6.1 reads
 * (tools/perf/Documentation/perf.data-file-format.txt), then handed to the
 * writer.  Every path is taken under caller-given roots so tests can point
 * the module at a fake tree, and a missing piece of sysfs costs only the
 * feature (or the part of it) that needs it, never the file.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <perfrec/hostinfo.h>
#include <perfrec/pdwriter.h>

#include "hostinfo-internal.h"
#include "version.h"

/*
 * HEADER_VERSION is perf's version to its readers: perf_to_profile and
 * perf's own LOST_SAMPLES handling parse "major.minor" from its start and
 * need >= 6.1.  After the perf version whose format we write, as perf puts
 * "-rc1" after its own, comes who wrote the file: perfrecd and its version
 * (the Makefile's VERSION), so that neither is guessed from the other.
 */
#define PERF_FORMAT_VERSION "6.1.0"
#define HOSTINFO_VERSION PERF_FORMAT_VERSION "-perfrecd-" PERFREC_VERSION

/* Sysfs values we read are short; cpu lists of huge machines are the longest. */
#define SMALL_FILE_MAX 65536
/* Memory block indexes beyond this are ignored (a 2 MiB bitmap per node). */
#define MEM_BLOCK_INDEX_MAX (1u << 24)
/* Cache index directories per CPU we look at (perf 6.1 looks at 4). */
#define CACHE_INDEX_MAX 16

const int hostinfo_features[] = {
	PERFREC_FEAT_HOSTNAME,     PERFREC_FEAT_OSRELEASE,     PERFREC_FEAT_VERSION,
	PERFREC_FEAT_ARCH,         PERFREC_FEAT_NRCPUS,        PERFREC_FEAT_CPUDESC,
	PERFREC_FEAT_CPUID,        PERFREC_FEAT_TOTAL_MEM,     PERFREC_FEAT_CMDLINE,
	PERFREC_FEAT_CPU_TOPOLOGY, PERFREC_FEAT_NUMA_TOPOLOGY, PERFREC_FEAT_PMU_MAPPINGS,
	PERFREC_FEAT_CACHE,        PERFREC_FEAT_SAMPLE_TIME,   PERFREC_FEAT_MEM_TOPOLOGY,
	PERFREC_FEAT_CLOCKID,      PERFREC_FEAT_CLOCK_DATA,    PERFREC_FEAT_CPU_PMU_CAPS,
	PERFREC_FEAT_PMU_CAPS,
};
const size_t hostinfo_nr_features = sizeof(hostinfo_features) / sizeof(hostinfo_features[0]);

struct ctx {
	const char *sysfs, *proc;
	const struct perfrec_hostinfo_opts *opts;
};

static void ctx_init(struct ctx *c, const struct perfrec_hostinfo_opts *opts)
{
	const char *s = PERFREC_OPTS_GET(opts, sysfs, (const char *)NULL);
	const char *p = PERFREC_OPTS_GET(opts, proc, (const char *)NULL);

	c->sysfs = s ? s : "/sys";
	c->proc = p ? p : "/proc";
	c->opts = opts;
}

static int pathf(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int pathf(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	return 0;
}

/*
 * Read a small text file into a heap string with trailing whitespace cut
 * (sysfs values end in a newline perf does not store).  Returns 0 or -errno.
 */
static int read_text(const char *path, char **ret)
{
	size_t len = 0, cap = 256;
	char *buf, *p;
	int fd, err = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	buf = malloc(cap);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	for (;;) {
		ssize_t n;

		if (len + 1 >= cap) {
			if (cap >= SMALL_FILE_MAX) {
				err = -EFBIG;
				break;
			}
			p = realloc(buf, cap * 2);
			if (!p) {
				err = -ENOMEM;
				break;
			}
			buf = p;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - 1 - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (err) {
		free(buf);
		return err;
	}
	while (len > 0 && isspace((unsigned char)buf[len - 1]))
		len--;
	buf[len] = '\0';
	*ret = buf;
	return 0;
}

static int read_u64(const char *path, int base, uint64_t *ret)
{
	char *s, *end;
	unsigned long long v;
	int err;

	err = read_text(path, &s);
	if (err)
		return err;
	errno = 0;
	v = strtoull(s, &end, base);
	err = (errno || end == s || *end) ? -EINVAL : 0;
	free(s);
	if (!err)
		*ret = v;
	return err;
}

static int read_int(const char *path, int *ret)
{
	char *s, *end;
	long v;
	int err;

	err = read_text(path, &s);
	if (err)
		return err;
	errno = 0;
	v = strtol(s, &end, 10);
	err = (errno || end == s || *end || v < INT_MIN || v > INT_MAX) ? -EINVAL : 0;
	free(s);
	if (!err)
		*ret = (int)v;
	return err;
}

/*
 * Walk a kernel cpu/node list ("0-3,8,10-11"): count its members and find
 * the largest.  Returns 0 or -EINVAL.  Kept here rather than using cpumap so
 * node lists (which cpumap caps) work too and nothing is allocated.
 */
static int list_scan(const char *s, unsigned int *ret_nr, int *ret_max)
{
	unsigned long nr = 0;
	long max = -1;

	while (*s) {
		unsigned long a, b;
		char *end;

		while (*s == ',' || isspace((unsigned char)*s))
			s++;
		if (!*s)
			break;
		if (!isdigit((unsigned char)*s))
			return -EINVAL;
		a = strtoul(s, &end, 10);
		b = a;
		s = end;
		if (*s == '-') {
			if (!isdigit((unsigned char)s[1]))
				return -EINVAL;
			b = strtoul(s + 1, &end, 10);
			s = end;
		}
		if (b < a || b >= INT_MAX)
			return -EINVAL;
		nr += b - a + 1;
		if ((long)b > max)
			max = (long)b;
		if (*s && *s != ',' && !isspace((unsigned char)*s))
			return -EINVAL;
	}
	*ret_nr = nr > UINT_MAX ? UINT_MAX : (unsigned int)nr;
	*ret_max = (int)max;
	return 0;
}

/* Call @fn for each member of list @s, stopping at the first error. */
static int list_each(const char *s, int (*fn)(int id, void *arg), void *arg)
{
	while (*s) {
		unsigned long a, b;
		char *end;
		int err;

		while (*s == ',' || isspace((unsigned char)*s))
			s++;
		if (!*s)
			break;
		if (!isdigit((unsigned char)*s))
			return -EINVAL;
		a = strtoul(s, &end, 10);
		b = a;
		s = end;
		if (*s == '-') {
			b = strtoul(s + 1, &end, 10);
			s = end;
		}
		if (b < a || b >= INT_MAX)
			return -EINVAL;
		for (unsigned long i = a; i <= b; i++) {
			err = fn((int)i, arg);
			if (err)
				return err;
		}
	}
	return 0;
}

/* The cpu list in devices/system/cpu/@name ("online", "present", ...). */
static int cpu_list(const struct ctx *c, const char *name, char **ret)
{
	char path[PATH_MAX];
	int err = pathf(path, sizeof(path), "%s/devices/system/cpu/%s", c->sysfs, name);

	return err ? err : read_text(path, ret);
}

/*
 * CPUs available: perf uses the highest present CPU + 1, which sizes the
 * per-CPU arrays of CPU_TOPOLOGY; fall back to possible, then sysconf.
 */
static unsigned int nr_cpus_avail(const struct ctx *c)
{
	static const char *const files[] = { "present", "possible" };
	long n;

	for (size_t i = 0; i < 2; i++) {
		unsigned int nr;
		int max;
		char *s;

		if (cpu_list(c, files[i], &s))
			continue;
		if (!list_scan(s, &nr, &max) && max >= 0) {
			free(s);
			return (unsigned int)max + 1;
		}
		free(s);
	}
	n = sysconf(_SC_NPROCESSORS_CONF);
	return n > 0 ? (unsigned int)n : 1;
}

static unsigned int nr_cpus_online(const struct ctx *c)
{
	unsigned int nr;
	int max;
	char *s;
	long n;

	if (!cpu_list(c, "online", &s)) {
		if (!list_scan(s, &nr, &max) && nr > 0) {
			free(s);
			return nr;
		}
		free(s);
	}
	n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (unsigned int)n : 1;
}

/*
 * Value of "@key : value" from the first block of /proc/cpuinfo (the first
 * processor describes the machine as perf sees it).  Returns 0 or -ENOENT.
 */
static int cpuinfo_field(const struct ctx *c, const char *key, char **ret)
{
	char path[PATH_MAX], *line = NULL;
	size_t cap = 0, klen = strlen(key);
	ssize_t n;
	FILE *f;
	int err;

	err = pathf(path, sizeof(path), "%s/cpuinfo", c->proc);
	if (err)
		return err;
	f = fopen(path, "re");
	if (!f)
		return -errno;
	err = -ENOENT;
	while ((n = getline(&line, &cap, f)) > 0) {
		char *v;

		if (line[0] == '\n')
			break; /* end of the first processor's block */
		if (strncmp(line, key, klen))
			continue;
		/* the key, then only blanks before the colon ("model" vs "model name") */
		for (v = line + klen; *v == ' ' || *v == '\t'; v++)
			;
		if (*v != ':')
			continue;
		v++;
		while (isspace((unsigned char)*v))
			v++;
		while (n > 0 && isspace((unsigned char)line[n - 1]))
			line[--n] = '\0';
		*ret = strdup(v);
		err = *ret ? 0 : -ENOMEM;
		break;
	}
	free(line);
	fclose(f);
	return err;
}

/* "@key: N kB" from a meminfo-style file (node meminfo lines carry a prefix). */
static int meminfo_kb(const char *path, const char *key, uint64_t *ret)
{
	char *text, *p;
	int err;

	err = read_text(path, &text);
	if (err)
		return err;
	err = -ENOENT;
	for (p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		char *k = strstr(p, key), *eol = strchr(p, '\n');

		if (!k || (eol && k > eol))
			continue;
		/* whole word: start of line or after a space */
		if (k != p && k[-1] != ' ')
			continue;
		k += strlen(key);
		if (*k != ':')
			continue;
		*ret = strtoull(k + 1, NULL, 10);
		err = 0;
		break;
	}
	free(text);
	return err;
}

/* --- simple features ------------------------------------------------------ */

static int build_uname(int feat, struct featbuf *fb)
{
	struct utsname u;

	if (uname(&u) < 0)
		return -errno;
	switch (feat) {
	case PERFREC_FEAT_HOSTNAME:
		featbuf_string(fb, u.nodename);
		break;
	case PERFREC_FEAT_OSRELEASE:
		featbuf_string(fb, u.release);
		break;
	default:
		featbuf_string(fb, u.machine);
		break;
	}
	return 0;
}

static int build_nrcpus(const struct ctx *c, struct featbuf *fb)
{
	featbuf_u32(fb, nr_cpus_avail(c));
	featbuf_u32(fb, nr_cpus_online(c));
	return 0;
}

static int build_cpudesc(const struct ctx *c, struct featbuf *fb)
{
	char *s, *r, *w;
	int err;

	err = cpuinfo_field(c, "model name", &s);
	if (err)
		err = cpuinfo_field(c, "cpu model", &s); /* some non-x86 */
	if (err)
		return err;
	/* Squash runs of spaces as perf does (branding strings pad with them). */
	for (r = w = s; *r; r++) {
		if (isspace((unsigned char)*r) && w > s && w[-1] == ' ')
			continue;
		*w++ = isspace((unsigned char)*r) ? ' ' : *r;
	}
	*w = '\0';
	featbuf_string(fb, s);
	free(s);
	return 0;
}

/* x86's "vendor,family,model,stepping"; other architectures: left out. */
static int build_cpuid(const struct ctx *c, struct featbuf *fb)
{
	char *vendor = NULL, *family = NULL, *model = NULL, *stepping = NULL, buf[256];
	int err;

	err = cpuinfo_field(c, "vendor_id", &vendor);
	if (!err)
		err = cpuinfo_field(c, "cpu family", &family);
	if (!err)
		err = cpuinfo_field(c, "model", &model);
	if (!err && cpuinfo_field(c, "stepping", &stepping))
		stepping = NULL; /* some hypervisors hide it; perf would print 0 */
	if (!err) {
		unsigned long fam = strtoul(family, NULL, 0), mod = strtoul(model, NULL, 0);
		unsigned long step = stepping ? strtoul(stepping, NULL, 0) : 0;

		snprintf(buf, sizeof(buf), "%s,%lu,%lu,%lu", vendor, fam, mod, step);
		featbuf_string(fb, buf);
	}
	free(vendor);
	free(family);
	free(model);
	free(stepping);
	return err;
}

static int build_total_mem(const struct ctx *c, struct featbuf *fb)
{
	char path[PATH_MAX];
	uint64_t kb;
	int err;

	err = pathf(path, sizeof(path), "%s/meminfo", c->proc);
	if (!err)
		err = meminfo_kb(path, "MemTotal", &kb);
	if (err)
		return err;
	featbuf_u64(fb, kb);
	return 0;
}

/* The recording program's name, for the version line and CMDLINE. */
static const char *program_name(const struct perfrec_hostinfo_opts *opts)
{
	const char *p = PERFREC_OPTS_GET(opts, program, (const char *)NULL);

	return p && *p ? p : "perfrecd";
}

/*
 * perf stores the full path of its binary in place of argv[0] and then the
 * rest of the arguments; we do the same with our own executable.
 */
static int build_cmdline(const struct ctx *c, struct featbuf *fb)
{
	int argc = PERFREC_OPTS_GET(c->opts, argc, 0);
	char *const *argv = PERFREC_OPTS_GET(c->opts, argv, (char *const *)NULL);
	char exe[PATH_MAX], path[PATH_MAX];
	ssize_t n = -1;

	if (!argv || argc < 0)
		argc = 0;
	if (!pathf(path, sizeof(path), "%s/self/exe", c->proc))
		n = readlink(path, exe, sizeof(exe) - 1);
	if (n > 0)
		exe[n] = '\0';
	else
		snprintf(exe, sizeof(exe), "%s", argc > 0 && argv[0] ? argv[0] : program_name(c->opts));
	featbuf_u32(fb, argc > 0 ? (uint32_t)argc : 1);
	featbuf_string(fb, exe);
	for (int i = 1; i < argc; i++)
		featbuf_string(fb, argv[i] ? argv[i] : "");
	return 0;
}

/* --- CPU topology --------------------------------------------------------- */

/* A list of distinct strings, kept in first-seen order. */
struct strset {
	char **s;
	size_t nr, cap;
};

static int strset_add_take(struct strset *set, char *s)
{
	char **p;

	for (size_t i = 0; i < set->nr; i++) {
		if (!strcmp(set->s[i], s)) {
			free(s);
			return 0;
		}
	}
	if (set->nr == set->cap) {
		size_t cap = set->cap ? set->cap * 2 : 16;

		p = realloc(set->s, cap * sizeof(*p));
		if (!p) {
			free(s);
			return -ENOMEM;
		}
		set->s = p;
		set->cap = cap;
	}
	set->s[set->nr++] = s;
	return 0;
}

static void strset_write(struct featbuf *fb, const struct strset *set)
{
	featbuf_u32(fb, (uint32_t)set->nr);
	for (size_t i = 0; i < set->nr; i++)
		featbuf_string(fb, set->s[i]);
}

static void strset_free(struct strset *set)
{
	for (size_t i = 0; i < set->nr; i++)
		free(set->s[i]);
	free(set->s);
	memset(set, 0, sizeof(*set));
}

/* Read topology/@a, or topology/@b where the kernel still uses the old name. */
static int topo_read(const struct ctx *c, int cpu, const char *a, const char *b, char **ret)
{
	char path[PATH_MAX];
	int err;

	err = pathf(path, sizeof(path), "%s/devices/system/cpu/cpu%d/topology/%s", c->sysfs, cpu, a);
	if (!err)
		err = read_text(path, ret);
	if (err == -ENOENT && b) {
		err = pathf(path, sizeof(path), "%s/devices/system/cpu/cpu%d/topology/%s", c->sysfs, cpu, b);
		if (!err)
			err = read_text(path, ret);
	}
	return err;
}

static int topo_id(const struct ctx *c, int cpu, const char *name)
{
	char path[PATH_MAX];
	int v;

	if (pathf(path, sizeof(path), "%s/devices/system/cpu/cpu%d/topology/%s", c->sysfs, cpu, name) ||
	    read_int(path, &v))
		return -1; /* offline CPUs have no topology directory: perf writes -1 */
	return v;
}

struct topo_walk {
	const struct ctx *c;
	struct strset cores, threads, dies;
	bool have_dies;
};

static int topo_one_cpu(int cpu, void *arg)
{
	struct topo_walk *t = arg;
	char *s;
	int err;

	if (!topo_read(t->c, cpu, "package_cpus_list", "core_siblings_list", &s)) {
		err = strset_add_take(&t->cores, s);
		if (err)
			return err;
	}
	if (!topo_read(t->c, cpu, "core_cpus_list", "thread_siblings_list", &s)) {
		err = strset_add_take(&t->threads, s);
		if (err)
			return err;
	}
	if (!topo_read(t->c, cpu, "die_cpus_list", NULL, &s)) {
		t->have_dies = true;
		err = strset_add_take(&t->dies, s);
		if (err)
			return err;
	}
	return 0;
}

/*
 * Three revisions, each only appended to the last: sibling lists of cores
 * (packages) and threads over the online CPUs; then core_id/socket_id for
 * every available CPU (count from NRCPUS); then die sibling lists and
 * die_id per CPU.  perf 6.1 reads all three; the third only when present,
 * so we leave it out on kernels without die topology.
 */
static int build_cpu_topology(const struct ctx *c, struct featbuf *fb)
{
	struct topo_walk t = { .c = c };
	unsigned int nr = nr_cpus_avail(c);
	char *online = NULL;
	int err;

	err = cpu_list(c, "online", &online);
	if (!err)
		err = list_each(online, topo_one_cpu, &t);
	free(online);
	if (err == -ENOMEM)
		goto out;
	if (err || t.cores.nr == 0 || t.threads.nr == 0) {
		err = -ENOENT;
		goto out;
	}
	strset_write(fb, &t.cores);
	strset_write(fb, &t.threads);
	for (unsigned int cpu = 0; cpu < nr; cpu++) {
		featbuf_u32(fb, (uint32_t)topo_id(c, (int)cpu, "core_id"));
		featbuf_u32(fb, (uint32_t)topo_id(c, (int)cpu, "physical_package_id"));
	}
	if (t.have_dies) {
		strset_write(fb, &t.dies);
		for (unsigned int cpu = 0; cpu < nr; cpu++)
			featbuf_u32(fb, (uint32_t)topo_id(c, (int)cpu, "die_id"));
	}
	err = 0;
out:
	strset_free(&t.cores);
	strset_free(&t.threads);
	strset_free(&t.dies);
	return err;
}

/* --- NUMA and memory topology --------------------------------------------- */

struct numa_walk {
	const struct ctx *c;
	struct featbuf *fb;
	uint32_t nr;
};

static int numa_one_node(int node, void *arg)
{
	struct numa_walk *n = arg;
	char path[PATH_MAX], *cpus = NULL;
	uint64_t total = 0, mfree = 0;
	int err;

	err = pathf(path, sizeof(path), "%s/devices/system/node/node%d/meminfo", n->c->sysfs, node);
	if (err)
		return err;
	if (meminfo_kb(path, "MemTotal", &total))
		total = 0;
	if (meminfo_kb(path, "MemFree", &mfree))
		mfree = 0;
	err = pathf(path, sizeof(path), "%s/devices/system/node/node%d/cpulist", n->c->sysfs, node);
	if (err)
		return err;
	if (read_text(path, &cpus))
		cpus = NULL; /* a memory-only node has an empty list anyway */
	featbuf_u32(n->fb, (uint32_t)node);
	featbuf_u64(n->fb, total);
	featbuf_u64(n->fb, mfree);
	featbuf_string(n->fb, cpus ? cpus : "");
	free(cpus);
	n->nr++;
	return 0;
}

/*
 * Nodes from devices/system/node/online.  A kernel without NUMA support has
 * no node directory; it is one node in all but name, so describe it as node
 * 0 with /proc/meminfo and the online CPUs rather than leave readers with no
 * topology at all.
 */
static int build_numa_topology(const struct ctx *c, struct featbuf *fb)
{
	struct numa_walk n = { .c = c, .fb = fb };
	char path[PATH_MAX], *online = NULL, *cpus = NULL;
	uint64_t total = 0, mfree = 0;
	size_t start = fb->len;
	int err;

	featbuf_u32(fb, 0); /* nr, patched below */
	err = pathf(path, sizeof(path), "%s/devices/system/node/online", c->sysfs);
	if (!err && !read_text(path, &online)) {
		err = list_each(online, numa_one_node, &n);
		free(online);
		if (err)
			return err;
		featbuf_patch_u32(fb, start, n.nr);
		return 0;
	}
	err = pathf(path, sizeof(path), "%s/meminfo", c->proc);
	if (err)
		return err;
	if (meminfo_kb(path, "MemTotal", &total) || meminfo_kb(path, "MemFree", &mfree))
		return -ENOENT;
	if (cpu_list(c, "online", &cpus))
		cpus = NULL;
	featbuf_u32(fb, 0);
	featbuf_u64(fb, total);
	featbuf_u64(fb, mfree);
	featbuf_string(fb, cpus ? cpus : "");
	free(cpus);
	featbuf_patch_u32(fb, start, 1);
	return 0;
}

struct mem_node {
	uint64_t node;
	uint64_t nbits;
	uint64_t *bits;
};

static int mem_node_cmp(const void *a, const void *b)
{
	const struct mem_node *x = a, *y = b;

	return x->node < y->node ? -1 : x->node > y->node;
}

/* Collect the memoryN entries of one node directory into a bitmap. */
static int mem_node_read(const char *dir, struct mem_node *n)
{
	struct dirent *de;
	unsigned int max = 0, idx;
	bool any = false;
	DIR *d;

	d = opendir(dir);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (sscanf(de->d_name, "memory%u", &idx) != 1 || idx >= MEM_BLOCK_INDEX_MAX)
			continue;
		if (!any || idx > max)
			max = idx;
		any = true;
	}
	n->nbits = any ? (uint64_t)max + 1 : 0;
	n->bits = calloc(n->nbits / 64 + 1, sizeof(uint64_t));
	if (!n->bits) {
		closedir(d);
		return -ENOMEM;
	}
	rewinddir(d);
	while ((de = readdir(d))) {
		if (sscanf(de->d_name, "memory%u", &idx) != 1 || idx >= n->nbits)
			continue;
		n->bits[idx / 64] |= 1ULL << (idx % 64);
	}
	closedir(d);
	return 0;
}

/*
 * u64 version 1, block size, node count; per node: id, bitmap size in bits,
 * then the bitmap as perf stores one (the size again, then ceil(size/64)
 * words).  Blocks of a node are the memoryN links in its node directory.
 * Without devices/system/memory (no memory hotplug support) the count is 0.
 */
static int build_mem_topology(const struct ctx *c, struct featbuf *fb)
{
	char path[PATH_MAX];
	struct mem_node *nodes = NULL;
	size_t nr = 0, cap = 0;
	uint64_t bsize = 0;
	struct dirent *de;
	DIR *d = NULL;
	int err;

	err = pathf(path, sizeof(path), "%s/devices/system/memory/block_size_bytes", c->sysfs);
	if (err)
		return err;
	if (read_u64(path, 16, &bsize))
		bsize = 0;
	if (bsize && !pathf(path, sizeof(path), "%s/devices/system/node", c->sysfs))
		d = opendir(path);
	while (d && (de = readdir(d))) {
		char dir[PATH_MAX];
		unsigned int id;
		char extra;

		if (sscanf(de->d_name, "node%u%c", &id, &extra) != 1)
			continue;
		if (nr == cap) {
			size_t ncap = cap ? cap * 2 : 8;
			struct mem_node *p = realloc(nodes, ncap * sizeof(*p));

			if (!p) {
				err = -ENOMEM;
				break;
			}
			nodes = p;
			cap = ncap;
		}
		err = pathf(dir, sizeof(dir), "%s/%s", path, de->d_name);
		if (!err) {
			nodes[nr].node = id;
			err = mem_node_read(dir, &nodes[nr]);
		}
		if (err == -ENOMEM)
			break;
		if (!err)
			nr++;
		err = 0;
	}
	if (d)
		closedir(d);
	if (!err) {
		if (nr > 1)
			qsort(nodes, nr, sizeof(*nodes), mem_node_cmp);
		featbuf_u64(fb, 1);
		featbuf_u64(fb, bsize);
		featbuf_u64(fb, nr);
		for (size_t i = 0; i < nr; i++) {
			featbuf_u64(fb, nodes[i].node);
			featbuf_u64(fb, nodes[i].nbits);
			featbuf_u64(fb, nodes[i].nbits);
			featbuf_put(fb, nodes[i].bits, (nodes[i].nbits + 63) / 64 * sizeof(uint64_t));
		}
	}
	for (size_t i = 0; i < nr; i++)
		free(nodes[i].bits);
	free(nodes);
	return err;
}

/* --- PMUs and caches ------------------------------------------------------ */

struct pmu {
	uint32_t type;
	char *name;
};

static int build_pmu_mappings(const struct ctx *c, struct featbuf *fb)
{
	char path[PATH_MAX], file[PATH_MAX];
	struct pmu *pmus = NULL;
	size_t nr = 0, cap = 0;
	struct dirent *de;
	int err;
	DIR *d;

	err = pathf(path, sizeof(path), "%s/bus/event_source/devices", c->sysfs);
	if (err)
		return err;
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		uint64_t type;

		if (de->d_name[0] == '.')
			continue;
		if (pathf(file, sizeof(file), "%s/%s/type", path, de->d_name) ||
		    read_u64(file, 10, &type) || type > UINT32_MAX)
			continue;
		if (nr == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			struct pmu *p = realloc(pmus, ncap * sizeof(*p));

			if (!p) {
				err = -ENOMEM;
				break;
			}
			pmus = p;
			cap = ncap;
		}
		pmus[nr].type = (uint32_t)type;
		pmus[nr].name = strdup(de->d_name);
		if (!pmus[nr].name) {
			err = -ENOMEM;
			break;
		}
		nr++;
	}
	closedir(d);
	if (!err) {
		/* In directory order, as perf finds them: its header lists them so. */
		featbuf_u32(fb, (uint32_t)nr);
		for (size_t i = 0; i < nr; i++) {
			featbuf_u32(fb, pmus[i].type);
			featbuf_string(fb, pmus[i].name);
		}
	}
	for (size_t i = 0; i < nr; i++)
		free(pmus[i].name);
	free(pmus);
	return err;
}

/*
 * One PMU's capabilities (the files of its caps/ directory, in directory
 * order as perf reads them) as perf writes them: u32 count, then name and
 * value strings (the value without its newline), then, for PMU_CAPS, the
 * PMU's name.  Returns the count, or -errno.
 */
static int put_pmu_caps(const char *dir, const char *pmu, struct featbuf *fb)
{
	char caps[PATH_MAX], file[PATH_MAX];
	struct featbuf pairs;
	struct dirent *de;
	uint32_t n = 0;
	DIR *d;
	int err;

	err = pathf(caps, sizeof(caps), "%s/%s/caps", dir, pmu);
	if (err)
		return err;
	d = opendir(caps);
	if (!d)
		return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
	featbuf_init(&pairs);
	while ((de = readdir(d))) {
		char *value = NULL;

		if (de->d_name[0] == '.' || pathf(file, sizeof(file), "%s/%s", caps, de->d_name) ||
		    read_text(file, &value))
			continue;
		featbuf_string(&pairs, de->d_name);
		featbuf_string(&pairs, value);
		free(value);
		n++;
	}
	closedir(d);
	err = featbuf_err(&pairs);
	if (!err && n) {
		featbuf_u32(fb, n);
		featbuf_put(fb, pairs.buf, pairs.len);
		if (strcmp(pmu, "cpu"))
			featbuf_string(fb, pmu);
	}
	featbuf_exit(&pairs);
	return err ? err : (int)n;
}

/*
 * PMU_CAPS: u32 number of PMUs with capabilities, then each PMU's (hybrid
 * cpu_* PMUs first, as perf writes them; the core "cpu" PMU has
 * CPU_PMU_CAPS instead).  A host without any writes just the zero count,
 * as perf does.
 */
static int build_pmu_caps(const struct ctx *c, struct featbuf *fb)
{
	char path[PATH_MAX];
	size_t count_at = fb->len;
	uint32_t nr = 0;
	int err;

	err = pathf(path, sizeof(path), "%s/bus/event_source/devices", c->sysfs);
	if (err)
		return err;
	featbuf_u32(fb, 0);
	for (int hybrid = 1; hybrid >= 0 && !err; hybrid--) {
		struct dirent *de;
		DIR *d = opendir(path);

		if (!d)
			return -errno;
		while ((de = readdir(d))) {
			int r;

			if (de->d_name[0] == '.' || !strcmp(de->d_name, "cpu") ||
			    (strncmp(de->d_name, "cpu_", 4) == 0) != (hybrid == 1))
				continue;
			r = put_pmu_caps(path, de->d_name, fb);
			if (r < 0) {
				err = r == -ENOMEM ? r : 0;
				if (err)
					break;
				continue;
			}
			nr += r > 0;
		}
		closedir(d);
	}
	if (!err && nr)
		featbuf_patch_u32(fb, count_at, nr);
	return err;
}

/* CPU_PMU_CAPS: the core "cpu" PMU's capabilities; absent without that PMU. */
static int build_cpu_pmu_caps(const struct ctx *c, struct featbuf *fb)
{
	char path[PATH_MAX], cpu[PATH_MAX];
	int err, r;

	err = pathf(path, sizeof(path), "%s/bus/event_source/devices", c->sysfs);
	if (!err)
		err = pathf(cpu, sizeof(cpu), "%s/cpu", path);
	if (err)
		return err;
	if (access(cpu, F_OK) < 0)
		return -errno;
	r = put_pmu_caps(path, "cpu", fb);
	if (r == 0)
		featbuf_u32(fb, 0);
	return r < 0 ? r : 0;
}

struct cache {
	uint32_t level, line_size, sets, ways;
	char *type, *size, *map;
};

static void cache_free(struct cache *k)
{
	free(k->type);
	free(k->size);
	free(k->map);
}

static bool cache_eq(const struct cache *a, const struct cache *b)
{
	return a->level == b->level && a->line_size == b->line_size && a->sets == b->sets &&
	       a->ways == b->ways && !strcmp(a->type, b->type) && !strcmp(a->size, b->size) &&
	       !strcmp(a->map, b->map);
}

/* Returns 0, 1 when the index directory does not exist, or -errno. */
static int cache_read(const struct ctx *c, int cpu, int idx, struct cache *k)
{
	static const char *const u32s[] = { "level", "coherency_line_size", "number_of_sets",
					    "ways_of_associativity" };
	static const char *const strs[] = { "type", "size", "shared_cpu_list" };
	uint32_t *vals[] = { &k->level, &k->line_size, &k->sets, &k->ways };
	char **svals[] = { &k->type, &k->size, &k->map };
	char dir[PATH_MAX], path[PATH_MAX];
	int err;

	memset(k, 0, sizeof(*k));
	err = pathf(dir, sizeof(dir), "%s/devices/system/cpu/cpu%d/cache/index%d", c->sysfs, cpu, idx);
	if (err)
		return err;
	if (access(dir, F_OK) < 0)
		return errno == ENOENT ? 1 : -errno;
	for (size_t i = 0; i < 4; i++) {
		uint64_t v;

		err = pathf(path, sizeof(path), "%s/%s", dir, u32s[i]);
		if (!err)
			err = read_u64(path, 10, &v);
		if (!err && v > UINT32_MAX)
			err = -ERANGE;
		if (err)
			goto fail;
		*vals[i] = (uint32_t)v;
	}
	for (size_t i = 0; i < 3; i++) {
		err = pathf(path, sizeof(path), "%s/%s", dir, strs[i]);
		if (!err)
			err = read_text(path, svals[i]);
		if (err)
			goto fail;
	}
	return 0;
fail:
	cache_free(k);
	return err;
}

/*
 * Every cache of every CPU, keeping one entry per distinct cache: CPUs that
 * share a cache see it with the same shared_cpu_list, so equal entries are
 * the same cache.  A cache whose files cannot be read is skipped.
 */
static int build_cache(const struct ctx *c, struct featbuf *fb)
{
	unsigned int nr = nr_cpus_avail(c);
	struct cache *caches = NULL;
	size_t cnt = 0, cap = 0;
	int err = 0;

	for (unsigned int cpu = 0; cpu < nr && !err; cpu++) {
		for (int idx = 0; idx < CACHE_INDEX_MAX; idx++) {
			struct cache k;
			size_t i;
			int r = cache_read(c, (int)cpu, idx, &k);

			if (r == 1)
				break;
			if (r == -ENOMEM) {
				err = r;
				break;
			}
			if (r < 0)
				continue;
			for (i = 0; i < cnt; i++)
				if (cache_eq(&k, &caches[i]))
					break;
			if (i < cnt) {
				cache_free(&k);
				continue;
			}
			if (cnt == cap) {
				size_t ncap = cap ? cap * 2 : 16;
				struct cache *p = realloc(caches, ncap * sizeof(*p));

				if (!p) {
					cache_free(&k);
					err = -ENOMEM;
					break;
				}
				caches = p;
				cap = ncap;
			}
			caches[cnt++] = k;
		}
	}
	if (!err) {
		/*
		 * perf lists caches by level, in the order of the CPUs within a
		 * level (L1 of cpu0, L1 of cpu1, ..., then L2...): a stable
		 * sort of what was found CPU by CPU.
		 */
		for (size_t i = 1; i < cnt; i++) {
			struct cache k = caches[i];
			size_t j = i;

			for (; j > 0 && caches[j - 1].level > k.level; j--)
				caches[j] = caches[j - 1];
			caches[j] = k;
		}
		featbuf_u32(fb, 1);
		featbuf_u32(fb, (uint32_t)cnt);
		for (size_t i = 0; i < cnt; i++) {
			featbuf_u32(fb, caches[i].level);
			featbuf_u32(fb, caches[i].line_size);
			featbuf_u32(fb, caches[i].sets);
			featbuf_u32(fb, caches[i].ways);
			featbuf_string(fb, caches[i].type);
			featbuf_string(fb, caches[i].size);
			featbuf_string(fb, caches[i].map);
		}
	}
	for (size_t i = 0; i < cnt; i++)
		cache_free(&caches[i]);
	free(caches);
	return err;
}

/* --- time ----------------------------------------------------------------- */

static int build_sample_time(const struct ctx *c, struct featbuf *fb)
{
	uint64_t first = PERFREC_OPTS_GET(c->opts, first_sample_time, (uint64_t)0);
	uint64_t last = PERFREC_OPTS_GET(c->opts, last_sample_time, (uint64_t)0);

	if (!first && !last)
		return -ENOENT;
	featbuf_u64(fb, first);
	featbuf_u64(fb, last);
	return 0;
}

static uint64_t ts_ns(const struct timespec *ts)
{
	return (uint64_t)ts->tv_sec * 1000000000ULL + (uint64_t)ts->tv_nsec;
}

/* perf stores the clock's resolution in ns (clockid_res_ns) here. */
static int build_clockid(const struct ctx *c, struct featbuf *fb)
{
	int clockid = PERFREC_OPTS_GET(c->opts, clockid, -1);
	struct timespec res;

	if (clockid < 0)
		return -ENOENT;
	if (clock_getres((clockid_t)clockid, &res) < 0)
		return -errno;
	featbuf_u64(fb, ts_ns(&res));
	return 0;
}

/*
 * Version 1, the clock id, then a wall-clock time and the clockid time taken
 * together: readers convert sample times to wall-clock time with the pair.
 */
static int build_clock_data(const struct ctx *c, struct featbuf *fb)
{
	int clockid = PERFREC_OPTS_GET(c->opts, clockid, -1);
	uint64_t clock_ns = PERFREC_OPTS_GET(c->opts, clock_ns, (uint64_t)0);
	uint64_t wall_ns = PERFREC_OPTS_GET(c->opts, wall_ns, (uint64_t)0);

	if (clockid < 0)
		return -ENOENT;
	if (!clock_ns && !wall_ns) {
		struct timespec a, b;

		if (clock_gettime(CLOCK_REALTIME, &a) < 0 || clock_gettime((clockid_t)clockid, &b) < 0)
			return -errno;
		wall_ns = ts_ns(&a);
		clock_ns = ts_ns(&b);
	}
	featbuf_u32(fb, 1);
	featbuf_u32(fb, (uint32_t)clockid);
	featbuf_u64(fb, wall_ns);
	featbuf_u64(fb, clock_ns);
	return 0;
}

/* --- entry points --------------------------------------------------------- */

int hostinfo_build_feature(int feat, const struct perfrec_hostinfo_opts *opts, struct featbuf *fb)
{
	struct ctx c;
	int err;

	if (!PERFREC_OPTS_VALID(opts, struct perfrec_hostinfo_opts))
		return -EINVAL;
	ctx_init(&c, opts);
	switch (feat) {
	case PERFREC_FEAT_HOSTNAME:
	case PERFREC_FEAT_OSRELEASE:
	case PERFREC_FEAT_ARCH:
		err = build_uname(feat, fb);
		break;
	case PERFREC_FEAT_VERSION:
		if (!strcmp(program_name(opts), "perfrecd")) {
			featbuf_string(fb, HOSTINFO_VERSION);
		} else {
			char v[256];

			/* Another program on the library: both named, neither guessed. */
			snprintf(v, sizeof(v), "%s-%s-libperfrec-%s", PERF_FORMAT_VERSION,
				 program_name(opts), PERFREC_VERSION);
			featbuf_string(fb, v);
		}
		err = 0;
		break;
	case PERFREC_FEAT_NRCPUS:
		err = build_nrcpus(&c, fb);
		break;
	case PERFREC_FEAT_CPUDESC:
		err = build_cpudesc(&c, fb);
		break;
	case PERFREC_FEAT_CPUID:
		err = build_cpuid(&c, fb);
		break;
	case PERFREC_FEAT_TOTAL_MEM:
		err = build_total_mem(&c, fb);
		break;
	case PERFREC_FEAT_CMDLINE:
		err = build_cmdline(&c, fb);
		break;
	case PERFREC_FEAT_CPU_TOPOLOGY:
		err = build_cpu_topology(&c, fb);
		break;
	case PERFREC_FEAT_NUMA_TOPOLOGY:
		err = build_numa_topology(&c, fb);
		break;
	case PERFREC_FEAT_PMU_MAPPINGS:
		err = build_pmu_mappings(&c, fb);
		break;
	case PERFREC_FEAT_CACHE:
		err = build_cache(&c, fb);
		break;
	case PERFREC_FEAT_PMU_CAPS:
		err = build_pmu_caps(&c, fb);
		break;
	case PERFREC_FEAT_CPU_PMU_CAPS:
		err = build_cpu_pmu_caps(&c, fb);
		break;
	case PERFREC_FEAT_SAMPLE_TIME:
		err = build_sample_time(&c, fb);
		break;
	case PERFREC_FEAT_MEM_TOPOLOGY:
		err = build_mem_topology(&c, fb);
		break;
	case PERFREC_FEAT_CLOCKID:
		err = build_clockid(&c, fb);
		break;
	case PERFREC_FEAT_CLOCK_DATA:
		err = build_clock_data(&c, fb);
		break;
	default:
		return -EOPNOTSUPP;
	}
	return err ? err : featbuf_err(fb);
}

int perfrec_hostinfo__add_features(struct perfrec_pdwriter *w, const struct perfrec_hostinfo_opts *opts)
{
	if (!w)
		return -EINVAL;
	if (!PERFREC_OPTS_VALID(opts, struct perfrec_hostinfo_opts))
		return -EINVAL;
	for (size_t i = 0; i < hostinfo_nr_features; i++) {
		struct featbuf fb;
		int err;

		featbuf_init(&fb);
		err = hostinfo_build_feature(hostinfo_features[i], opts, &fb);
		if (!err)
			err = perfrec_pdwriter__set_feature(w, hostinfo_features[i], fb.buf, fb.len);
		else if (err != -ENOMEM)
			err = 0; /* this host lacks the piece: leave the feature out */
		featbuf_exit(&fb);
		if (err)
			return err;
	}
	return 0;
}

const char *perfrec_hostinfo__version(void)
{
	return HOSTINFO_VERSION;
}
