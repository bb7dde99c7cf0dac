// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Event specifications: turns the event names perf users already know
 * ("cpu-clock", "cycles:u", "L1-dcache-load-misses", "sched:sched_switch",
 * "r01c2") into the type/config/exclude bits of a perf_event_attr, so a
 * perfrecd configuration reads like a perf command line.  Only the event's
 * identity is decided here; sampling settings (frequency, sample_type,
 * side-band bits) are evlist's business.  Names are case-sensitive, as in
 * perf.  Tracepoint ids come from tracefs, which is mounted on demand because
 * many hosts do not mount it at boot.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <perfrec/evspec.h>

#define TRACEFS_DEFAULT "/sys/kernel/tracing"
#define TRACEFS_DEBUGFS "/sys/kernel/debug/tracing"

struct named_event {
	const char *name;
	uint32_t type;
	uint64_t config;
};

/* The spellings perf accepts for its generic software and hardware events. */
static const struct named_event named_events[] = {
	{ "cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK },
	{ "task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK },
	{ "page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS },
	{ "faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS },
	{ "minor-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN },
	{ "major-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ },
	{ "context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES },
	{ "cs", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES },
	{ "cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS },
	{ "migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS },
	{ "alignment-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_ALIGNMENT_FAULTS },
	{ "emulation-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_EMULATION_FAULTS },
	{ "dummy", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_DUMMY },
	{ "bpf-output", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_BPF_OUTPUT },
	{ "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	{ "cpu-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	{ "instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS },
	{ "cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES },
	{ "cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES },
	{ "branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
	{ "branch-instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
	{ "branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES },
	{ "bus-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES },
	{ "stalled-cycles-frontend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND },
	{ "idle-cycles-frontend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND },
	{ "stalled-cycles-backend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_BACKEND },
	{ "idle-cycles-backend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_BACKEND },
	{ "ref-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES },
};

struct cache_alias {
	const char *name;
	uint64_t id;
};

/*
 * Hardware cache events are "<cache>-<op>[-<result>]" or "<cache>-<result>"
 * (op defaults to load, result to access), as perf spells them.
 */
static const struct cache_alias cache_names[] = {
	{ "L1-dcache", PERF_COUNT_HW_CACHE_L1D },
	{ "l1-d", PERF_COUNT_HW_CACHE_L1D },
	{ "L1-d", PERF_COUNT_HW_CACHE_L1D },
	{ "l1d", PERF_COUNT_HW_CACHE_L1D },
	{ "L1-data", PERF_COUNT_HW_CACHE_L1D },
	{ "L1-icache", PERF_COUNT_HW_CACHE_L1I },
	{ "l1-i", PERF_COUNT_HW_CACHE_L1I },
	{ "L1-i", PERF_COUNT_HW_CACHE_L1I },
	{ "l1i", PERF_COUNT_HW_CACHE_L1I },
	{ "L1-instruction", PERF_COUNT_HW_CACHE_L1I },
	{ "LLC", PERF_COUNT_HW_CACHE_LL },
	{ "L2", PERF_COUNT_HW_CACHE_LL },
	{ "dTLB", PERF_COUNT_HW_CACHE_DTLB },
	{ "d-tlb", PERF_COUNT_HW_CACHE_DTLB },
	{ "Data-TLB", PERF_COUNT_HW_CACHE_DTLB },
	{ "iTLB", PERF_COUNT_HW_CACHE_ITLB },
	{ "i-tlb", PERF_COUNT_HW_CACHE_ITLB },
	{ "Instruction-TLB", PERF_COUNT_HW_CACHE_ITLB },
	{ "branch", PERF_COUNT_HW_CACHE_BPU },
	{ "branches", PERF_COUNT_HW_CACHE_BPU },
	{ "bpu", PERF_COUNT_HW_CACHE_BPU },
	{ "btb", PERF_COUNT_HW_CACHE_BPU },
	{ "bpc", PERF_COUNT_HW_CACHE_BPU },
	{ "node", PERF_COUNT_HW_CACHE_NODE },
};

static const struct cache_alias cache_ops[] = {
	{ "load", PERF_COUNT_HW_CACHE_OP_READ },
	{ "loads", PERF_COUNT_HW_CACHE_OP_READ },
	{ "read", PERF_COUNT_HW_CACHE_OP_READ },
	{ "store", PERF_COUNT_HW_CACHE_OP_WRITE },
	{ "stores", PERF_COUNT_HW_CACHE_OP_WRITE },
	{ "write", PERF_COUNT_HW_CACHE_OP_WRITE },
	{ "prefetch", PERF_COUNT_HW_CACHE_OP_PREFETCH },
	{ "prefetches", PERF_COUNT_HW_CACHE_OP_PREFETCH },
	{ "speculative-read", PERF_COUNT_HW_CACHE_OP_PREFETCH },
	{ "speculative-load", PERF_COUNT_HW_CACHE_OP_PREFETCH },
};

static const struct cache_alias cache_results[] = {
	{ "refs", PERF_COUNT_HW_CACHE_RESULT_ACCESS },
	{ "Reference", PERF_COUNT_HW_CACHE_RESULT_ACCESS },
	{ "ops", PERF_COUNT_HW_CACHE_RESULT_ACCESS },
	{ "access", PERF_COUNT_HW_CACHE_RESULT_ACCESS },
	{ "misses", PERF_COUNT_HW_CACHE_RESULT_MISS },
	{ "miss", PERF_COUNT_HW_CACHE_RESULT_MISS },
};

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static void set_err(char *errbuf, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_err(char *errbuf, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!errbuf || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(errbuf, errlen, fmt, ap);
	va_end(ap);
}

/* Look @s (of @len bytes, not NUL-terminated) up in an alias table. */
static const struct cache_alias *find_alias(const struct cache_alias *tab, size_t n,
					    const char *s, size_t len)
{
	for (size_t i = 0; i < n; i++)
		if (strlen(tab[i].name) == len && !memcmp(tab[i].name, s, len))
			return &tab[i];
	return NULL;
}

/* "<op>", "<result>" or "<op>-<result>" after the cache name. */
static bool parse_cache_rest(const char *rest, uint64_t *ret_op, uint64_t *ret_result)
{
	const struct cache_alias *op, *res;
	const char *dash;

	res = find_alias(cache_results, ARRAY_SIZE(cache_results), rest, strlen(rest));
	if (res) {
		*ret_op = PERF_COUNT_HW_CACHE_OP_READ;
		*ret_result = res->id;
		return true;
	}
	op = find_alias(cache_ops, ARRAY_SIZE(cache_ops), rest, strlen(rest));
	if (op) {
		*ret_op = op->id;
		*ret_result = PERF_COUNT_HW_CACHE_RESULT_ACCESS;
		return true;
	}
	/* Ops may contain a dash themselves ("speculative-read"): try every split. */
	for (dash = strchr(rest, '-'); dash; dash = strchr(dash + 1, '-')) {
		op = find_alias(cache_ops, ARRAY_SIZE(cache_ops), rest, (size_t)(dash - rest));
		res = find_alias(cache_results, ARRAY_SIZE(cache_results), dash + 1, strlen(dash + 1));
		if (op && res) {
			*ret_op = op->id;
			*ret_result = res->id;
			return true;
		}
	}
	return false;
}

static bool parse_cache_event(const char *s, struct perf_event_attr *attr)
{
	uint64_t op, result;

	for (size_t i = 0; i < ARRAY_SIZE(cache_names); i++) {
		size_t n = strlen(cache_names[i].name);

		if (strncmp(s, cache_names[i].name, n) || s[n] != '-')
			continue;
		if (!parse_cache_rest(s + n + 1, &op, &result))
			continue;
		attr->type = PERF_TYPE_HW_CACHE;
		attr->config = cache_names[i].id | (op << 8) | (result << 16);
		return true;
	}
	return false;
}

/* "r" and 1..16 hex digits: a raw PMU config. */
static bool parse_raw(const char *s, struct perf_event_attr *attr)
{
	uint64_t v = 0;
	size_t n = 0;

	if (s[0] != 'r')
		return false;
	for (s++; *s; s++, n++) {
		if (!isxdigit((unsigned char)*s) || n >= 16)
			return false;
		v = (v << 4) | (uint64_t)(isdigit((unsigned char)*s) ? *s - '0'
						 : tolower((unsigned char)*s) - 'a' + 10);
	}
	if (n == 0)
		return false;
	attr->type = PERF_TYPE_RAW;
	attr->config = v;
	return true;
}

/* A name that is not a tracepoint: software, hardware, cache or raw. */
static bool parse_plain(const char *s, struct perf_event_attr *attr)
{
	for (size_t i = 0; i < ARRAY_SIZE(named_events); i++) {
		if (!strcmp(s, named_events[i].name)) {
			attr->type = named_events[i].type;
			attr->config = named_events[i].config;
			return true;
		}
	}
	return parse_cache_event(s, attr) || parse_raw(s, attr);
}

static bool is_modifier_letter(char c)
{
	return c && strchr("ukhpGH", c);
}

static bool all_modifier_letters(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!is_modifier_letter(*s))
			return false;
	return true;
}

/*
 * Apply "u", "k", "h" (count only in those privilege levels), "p".."ppp"
 * (precise_ip), "G"/"H" (guest/host only).  As in perf, naming any of u/k/h
 * excludes the levels not named, and naming G or H excludes whichever of
 * guest and host is not named: "HG" counts both.
 */
static int apply_modifiers(const char *mods, const char *whole, struct perf_event_attr *attr,
			   char *errbuf, size_t errlen)
{
	bool u = false, k = false, h = false, guest = false, host = false;
	unsigned int p = 0;

	for (const char *c = mods; *c; c++) {
		switch (*c) {
		case 'u': u = true; break;
		case 'k': k = true; break;
		case 'h': h = true; break;
		case 'p': p++; break;
		case 'G': guest = true; break;
		case 'H': host = true; break;
		default:
			set_err(errbuf, errlen, "unknown modifier '%c' in '%s'", *c, whole);
			return -EINVAL;
		}
	}
	if (!*mods) {
		set_err(errbuf, errlen, "empty modifier in '%s'", whole);
		return -EINVAL;
	}
	if (p > 3) {
		set_err(errbuf, errlen, "too many 'p' modifiers in '%s' (at most 3)", whole);
		return -EINVAL;
	}
	if (u || k || h) {
		attr->exclude_user = !u;
		attr->exclude_kernel = !k;
		attr->exclude_hv = !h;
	}
	if (guest || host) {
		attr->exclude_guest = !guest;
		attr->exclude_host = !host;
	}
	attr->precise_ip = p;
	return 0;
}

/* Tracepoint parts become path components: allow only what tracefs uses. */
static bool valid_tp_part(const char *s, size_t len)
{
	if (len == 0 || s[0] == '.')
		return false;
	for (size_t i = 0; i < len; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '-' && s[i] != '.')
			return false;
	return true;
}

static bool is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/*
 * The tracefs root to use.  An explicit one is taken as is; otherwise
 * /sys/kernel/tracing, mounting tracefs there when nothing is mounted (root
 * only; failure just moves on), then the old debugfs location.
 */
static const char *tracefs_root(const struct perfrec_evspec_opts *opts)
{
	const char *root = PERFREC_OPTS_GET(opts, tracefs, NULL);

	if (root)
		return root;
	if (is_dir(TRACEFS_DEFAULT "/events"))
		return TRACEFS_DEFAULT;
	if (mount("nodev", TRACEFS_DEFAULT, "tracefs", 0, NULL) == 0 &&
	    is_dir(TRACEFS_DEFAULT "/events"))
		return TRACEFS_DEFAULT;
	if (is_dir(TRACEFS_DEBUGFS "/events"))
		return TRACEFS_DEBUGFS;
	return TRACEFS_DEFAULT;
}

static int read_tp_id(const char *path, uint64_t *ret_id)
{
	char buf[32], *end;
	ssize_t n;
	unsigned long long v;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return n < 0 ? -errno : -EINVAL;
	buf[n] = '\0';
	errno = 0;
	v = strtoull(buf, &end, 10);
	if (errno || end == buf || (*end && *end != '\n'))
		return -EINVAL;
	*ret_id = v;
	return 0;
}

/* @tp is "subsys:name" (exactly one colon). */
static int parse_tracepoint(const char *tp, const struct perfrec_evspec_opts *opts,
			    struct perf_event_attr *attr, char *errbuf, size_t errlen)
{
	const char *colon = strchr(tp, ':');
	const char *root;
	char path[4096];
	uint64_t id = 0;
	int r;

	if (!colon || strchr(colon + 1, ':') ||
	    !valid_tp_part(tp, (size_t)(colon - tp)) ||
	    !valid_tp_part(colon + 1, strlen(colon + 1))) {
		set_err(errbuf, errlen, "unknown event '%s'", tp);
		return -EINVAL;
	}
	root = tracefs_root(opts);
	r = snprintf(path, sizeof(path), "%s/events/%.*s/%s/id", root,
		     (int)(colon - tp), tp, colon + 1);
	if (r < 0 || (size_t)r >= sizeof(path)) {
		set_err(errbuf, errlen, "tracefs path too long for '%s'", tp);
		return -ENAMETOOLONG;
	}
	r = read_tp_id(path, &id);
	if (r == -ENOENT || r == -ENOTDIR) {
		set_err(errbuf, errlen, "no tracepoint '%s' in %s/events", tp, root);
		return -ENOENT;
	}
	if (r < 0) {
		set_err(errbuf, errlen, "cannot read %s: %s", path, strerror(-r));
		return r;
	}
	attr->type = PERF_TYPE_TRACEPOINT;
	attr->config = id;
	return 0;
}

int perfrec_evspec__parse(const char *str, const struct perfrec_evspec_opts *opts,
			  struct perfrec_evspec *ret_spec, char *errbuf, size_t errlen)
{
	struct perf_event_attr attr;
	const char *colon, *mods = NULL;
	char *base;
	size_t blen;
	int r;

	if (errbuf && errlen)
		errbuf[0] = '\0';
	if (!str || !ret_spec || !PERFREC_OPTS_VALID(opts, struct perfrec_evspec_opts)) {
		set_err(errbuf, errlen, "invalid arguments");
		return -EINVAL;
	}
	if (!*str) {
		set_err(errbuf, errlen, "empty event name");
		return -EINVAL;
	}
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	/*
	 * perf's default outside perf kvm: a host profiler leaves guests out
	 * unless G says otherwise (only hardware PMUs can tell them apart).
	 */
	attr.exclude_guest = 1;

	/*
	 * "cycles:u" is an event with a modifier, "sched:sched_switch" a
	 * tracepoint, "sched:sched_switch:k" both.  The part after the last
	 * colon is a modifier when what precedes it is a plain (non-tracepoint)
	 * name, or is itself "subsys:name".
	 */
	colon = strrchr(str, ':');
	blen = colon ? (size_t)(colon - str) : strlen(str);
	base = strndup(str, blen);
	if (!base)
		return -ENOMEM;

	if (!colon) {
		r = 0;
		if (!parse_plain(base, &attr)) {
			set_err(errbuf, errlen, "unknown event '%s'", base);
			r = -EINVAL;
		}
	} else if (parse_plain(base, &attr)) {
		r = 0;
		mods = colon + 1;
	} else if (strchr(base, ':')) {
		r = parse_tracepoint(base, opts, &attr, errbuf, errlen);
		mods = colon + 1;
	} else {
		r = parse_tracepoint(str, opts, &attr, errbuf, errlen);
		/* "cycels:u" is a misspelt event, not a missing tracepoint. */
		if (r == -ENOENT && all_modifier_letters(colon + 1)) {
			set_err(errbuf, errlen, "unknown event '%s'", base);
			r = -EINVAL;
		}
	}
	free(base);
	if (r < 0)
		return r;
	if (mods) {
		r = apply_modifiers(mods, str, &attr, errbuf, errlen);
		if (r < 0)
			return r;
	}

	memset(ret_spec, 0, sizeof(*ret_spec));
	/* The name is for display; a very long one is cut, never overrun. */
	snprintf(ret_spec->name, sizeof(ret_spec->name), "%s", str);
	ret_spec->attr = attr;
	return 0;
}
