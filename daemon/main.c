// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * perfrecd: always-on, host-wide perf_event recorder.  main() only reads
 * the command line and the configuration and hands over to the manager.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <perfrec/perfrec.h>

#include "bidcache.h"
#include "config.h"
#include "log.h"
#include "pipeout.h"
#include "manager.h"
#include "version.h"

#define DEFAULT_CONFIG "/etc/perfrecd/perfrecd.conf"

/*
 * The signals the event loop takes through its signalfd (manager.c) are
 * blocked before main() runs: a SIGUSR2 (rotate) or SIGHUP sent in the
 * first milliseconds would otherwise meet their default action and kill
 * the daemon before it has an event loop.  Blocked, they wait in the
 * signalfd and are handled once recording runs.  SIGPIPE is ignored: a
 * reader that goes away is an EPIPE to handle, never a reason to die.
 */
__attribute__((constructor)) static void block_signals_early(void)
{
	manager_block_signals(NULL);
	signal(SIGPIPE, SIG_IGN);
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: perfrecd [OPTION]...\n"
		"Record what every CPU is doing into perf.data files.\n\n"
		"  -c, --config FILE      configuration file (default " DEFAULT_CONFIG " if present)\n"
		"  -o, --output DIR       directory for the perf.data files; - streams pipe-mode\n"
		"                         perf data to stdout (perfrecd -o - | perf report -i -)\n"
		"  -z                     zstd-compress records at the default level (1)\n"
		"      --compress LEVEL   zstd-compress records at LEVEL (1..19; 0: off)\n"
		"      --mode MODE        continuous (default) or flight: keep history in memory,\n"
		"                         write it only on SIGUSR2 / Snapshot\n"
		"      --history TIME     history kept for snapshots (flight default 5min; 0: none)\n"
		"      --history-max SIZE memory cap of the history (default 256M)\n"
		"      --rotate-interval TIME\n"
		"                         start a new file every TIME (0: never)\n"
		"      --rotate-size SIZE start a new file when one reaches SIZE (0: never)\n"
		"      --switch-output[=signal|SIZE|TIME]\n"
		"                         perf's spelling: signal (SIGUSR2 only), SIZE\n"
		"                         with B/K/M/G (like 100M), TIME with s/m/h/d (like 5m)\n"
		"      --max-files N      keep at most N published files (0: no limit)\n"
		"      --switch-max-files N\n"
		"                         the same, as perf spells it\n"
		"      --max-bytes SIZE   keep at most SIZE of published files (0: no limit)\n"
		"      --max-age TIME     delete published files older than TIME (0: never)\n"
		"      --socket PATH      control socket (default /run/perfrecd/io.perfrec; '' for none)\n"
		"  -e, --event EVENT      event to sample, as perf names it (repeatable;\n"
		"                         replaces the configured list)\n"
		"  -F, --freq HZ          sample at HZ per CPU\n"
		"  -P, --period N         sample every N events instead\n"
		"  -g                     record frame-pointer callchains instead of whole stacks\n"
		"      --call-graph[=fp]  the same, as perf spells it\n"
		"      --call-graph=dwarf[,SIZE]  copy SIZE bytes (8192) of user stack per sample\n"
		"                         for DWARF unwinding: whole stacks (the default)\n"
		"      --unwind MODE      with --call-graph dwarf: host (perfrecd unwinds them: small\n"
		"                         files, whole stacks; the default) or file (raw stacks, the\n"
		"                         reader unwinds them)\n"
		"      --no-call-graph    do not record callchains\n"
		"      --offcpu           also record off-CPU time (BPF; offcpu=yes)\n"
		"  -a, --all-cpus         system-wide (always so; accepted as perf accepts it)\n"
		"  -C, --cpus LIST        CPUs to record (default: all online)\n"
		"  -m, --mmap-pages N     ring buffer of N pages per CPU (a power of two), or a size\n"
		"                         with B/K/M/G rounded up to one\n"
		"  -k, --clockid CLOCK    monotonic (default), monotonic_raw, realtime, boottime, tai, perf\n"
		"  -d, --duration TIME    stop after TIME (seconds, 1.5, 10min, 1h, ...)\n"
		"      --check-config     validate the configuration, print it and exit\n"
		"      --config-keys      list every configuration key and how a reload applies it\n"
		"  -v, --verbose          more log output\n"
		"  -h, --help             this text\n"
		"      --version          print the version\n\n"
		"Signals: SIGINT/SIGTERM finish the current file and exit; SIGUSR2 rotates\n"
		"(in flight mode: writes a snapshot).\n");
}

/*
 * Command-line settings, applied over the file in the order given, both at
 * start and at every reload (SIGHUP), so the command line keeps winning.
 */
static struct { const char *section, *key; char *value; } sets[64];
static size_t nr_sets;
static const char *config_path;

static bool set_on_command_line(const char *key)
{
	for (size_t i = 0; i < nr_sets; i++)
		if (sets[i].key && !strcmp(sets[i].key, key))
			return true;
	return false;
}

/* Defaults, then the file, then the command line.  Returns 0, or the exit
 * status to use (1: bad file, 2: bad option) with @err set. */
static int build_config(struct config *cfg, char *err, size_t errlen)
{
	bool events_given = false;
	char msg[512];

	config_init(cfg);
	if (config_path && config_load(cfg, config_path, err, errlen) < 0)
		return 1;
	for (size_t i = 0; i < nr_sets; i++) {
		const char *v = sets[i].value;
		int r;

		/* -e accumulates: the first one replaces the file's list. */
		if (strcmp(sets[i].key, "events") == 0) {
			if (!events_given)
				config_clear_events(cfg);
			events_given = true;
			r = config_add_events(cfg, v, msg, sizeof(msg));
		} else {
			r = config_set(cfg, sets[i].section, sets[i].key, v, msg, sizeof(msg));
		}
		if (r < 0) {
			snprintf(err, errlen, "Invalid command-line option: %s", msg);
			return 2;
		}
	}
	/*
	 * compress= (on by default) is for files: a pipe stays plain, since
	 * perf 6.1 cannot decompress pipe-mode input.  Asking for it on the
	 * command line with -o - is refused (pipeout_check()).
	 */
	if (pipeout_enabled(cfg) && !set_on_command_line("compress"))
		cfg->compress_level = 0;
	if (config_resolve_buildid_cache(cfg) < 0) {
		snprintf(err, errlen, "Out of memory");
		return 1;
	}
	/* Event names were checked as they were set (config_add_events()). */
	if (cfg->nr_events == 0) {
		snprintf(err, errlen, "No events to record: the event list is empty");
		return 2;
	}
	return 0;
}

static int reload_config(struct config *cfg, char *err, size_t errlen)
{
	int r = build_config(cfg, err, errlen);

	if (r) {
		config_exit(cfg);
		return -EINVAL;
	}
	return 0;
}

/*
 * perf's spellings.  perf record users type these; each means here what it
 * means there, or is refused with the reason, never taken for something
 * else (perf's -c N, a sample period, is our configuration file).
 */

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

/*
 * -m/--mmap-pages as perf reads it: a number of pages, a power of two, or a
 * size with a B/K/M/G unit rounded up to a power of two of pages.  Writes
 * the ring size in bytes (the mmap-size key) into @buf.  0, or -EINVAL with
 * @err set.
 */
static int mmap_pages_value(const char *v, char *buf, size_t len, char *err, size_t errlen)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), pages, bytes;

	if (strchr(v, ',')) {
		snprintf(err, errlen, "-m/--mmap-pages %s: AUX area buffers (the part after ',') are not "
			 "supported; give the data pages only", v);
		return -EINVAL;
	}
	if (all_digits(v)) {
		pages = strtoull(v, NULL, 10);
		if (pages == 0 || (pages & (pages - 1)) || pages > (1ULL << 40) / page) {
			snprintf(err, errlen, "-m/--mmap-pages %s: the number of pages must be a power of two "
				 "(like 16 or 128)", v);
			return -EINVAL;
		}
	} else {
		if (parse_size(v, &bytes) < 0 || bytes == 0 || bytes > (1ULL << 40)) {
			snprintf(err, errlen, "-m/--mmap-pages %s: not a number of pages (a power of two) "
				 "nor a size (like 512K)", v);
			return -EINVAL;
		}
		for (pages = 1; pages * page < bytes; pages <<= 1)
			;
	}
	snprintf(buf, len, "%" PRIu64, pages * page);
	return 0;
}

/*
 * --switch-output[=signal|SIZE|TIME] as perf reads it: no value or
 * "signal" means SIGUSR2 only (which always rotates here), so rotation by
 * time and size is turned off; a size ends in one of
 * perf's units B/K/M/G, a time in s/m/h/d (or any duration perfrecd.conf
 * takes, like 10min).  Sets @ret_key to the key to set (NULL: nothing to
 * set).  0, or -EINVAL with @err set.
 */
static int switch_output_key(const char *v, const char **ret_key, char *err, size_t errlen)
{
	uint64_t u;

	if (!v || strcmp(v, "signal") == 0) {
		*ret_key = NULL;
		return 0;
	}
	if (*v && strchr("BKMGT", v[strlen(v) - 1]) && parse_size(v, &u) == 0) {
		*ret_key = "rotate-size";
		return 0;
	}
	if (*v && !all_digits(v) && parse_duration(v, &u) == 0) {
		*ret_key = "rotate-interval";
		return 0;
	}
	snprintf(err, errlen, "--switch-output=%s: not 'signal', a size with a unit (like 100M) "
		 "nor a time with a unit (like 30s or 5m)", v);
	return -EINVAL;
}

/*
 * --call-graph MODE: fp (walked by the kernel), or dwarf[,SIZE] (user
 * stacks copied for unwinding later), as perf spells them; lbr is refused
 * with why.  Returns the callchain= value, with *ret_size pointing at the
 * SIZE after "dwarf," (NULL when none); NULL on error with @err written.
 */
static const char *call_graph_mode(const char *v, const char **ret_size, char *err, size_t errlen)
{
	*ret_size = NULL;
	if (!v || strcmp(v, "fp") == 0)
		return "yes";
	if (strcmp(v, "dwarf") == 0)
		return "dwarf";
	if (strncmp(v, "dwarf,", 6) == 0) {
		*ret_size = v + 6;
		return "dwarf";
	}
	if (strcmp(v, "lbr") == 0)
		snprintf(err, errlen, "--call-graph lbr: not supported: perfrecd records frame-pointer "
			 "or DWARF callchains (--call-graph fp, or dwarf[,SIZE])");
	else
		snprintf(err, errlen, "--call-graph %s: unknown mode (fp, or dwarf[,SIZE]; lbr is not supported)", v);
	return NULL;
}

/* A word perf's --call-graph takes as its value, after a space. */
static bool is_call_graph_mode(const char *v)
{
	return strcmp(v, "fp") == 0 || strcmp(v, "lbr") == 0 || strcmp(v, "dwarf") == 0 ||
	       strncmp(v, "dwarf,", 6) == 0;
}

/*
 * -C: every CPU named must be online now, else the daemon would fail to
 * open its events later with a message about perf_event_open.  A list that
 * does not parse is left to config_set(), which names what is wrong.
 */
static int check_cpus_online(const char *v, char *err, size_t errlen)
{
	struct perfrec_cpumap *want = NULL, *online = NULL;
	char list[256] = "?";
	int r = 0;

	if (strcmp(v, "all") == 0 || !*v || perfrec_cpumap__parse(v, &want) < 0)
		return 0;
	if (perfrec_cpumap__read(NULL, &online) < 0)
		goto out;
	perfrec_cpumap__format(online, list, sizeof(list));
	for (int i = 0, j = 0; i < want->nr; i++) {
		while (j < online->nr && online->cpus[j] < want->cpus[i])
			j++;
		if (j == online->nr || online->cpus[j] != want->cpus[i]) {
			snprintf(err, errlen, "-C/--cpus %s: CPU %d is not online (online CPUs: %s)",
				 v, want->cpus[i], list);
			r = -ENODEV;
			break;
		}
	}
out:
	perfrec_cpumap__free(want);
	perfrec_cpumap__free(online);
	return r;
}

/*
 * -o: perf's -o names one file (perf.data, NAME.data); ours names a
 * directory of rotating files.  A NAME.data that is not a directory
 * already is perf's meaning: refused rather than made a directory.
 */
static int check_output(const char *v, char *err, size_t errlen)
{
	struct stat st;

	if (!ends_with(v, ".data") || (stat(v, &st) == 0 && S_ISDIR(st.st_mode)))
		return 0;
	snprintf(err, errlen, "-o %s: perf's -o names a file, perfrecd's a directory it fills with "
		 "rotating NAME.data files; give a directory (-o DIR), or -o - to stream one "
		 "recording in pipe mode to stdout (-o - > %s)", v, v);
	return -EISDIR;
}

enum { OPT_CHECK_CONFIG = 256, OPT_VERSION, OPT_CALL_GRAPH, OPT_NO_CALLCHAIN, OPT_COMPRESS,
       OPT_MODE, OPT_HISTORY, OPT_HISTORY_MAX, OPT_SOCKET, OPT_OFFCPU,
       OPT_ROTATE_INTERVAL, OPT_ROTATE_SIZE, OPT_SWITCH_OUTPUT, OPT_MAX_FILES,
       OPT_MAX_BYTES, OPT_MAX_AGE, OPT_UNWIND, OPT_CONFIG_KEYS };

#define OPTSTRING "c:o:e:F:P:gaC:m:k:d:zvh"

static const struct option long_options[] = {
	{ "config", required_argument, NULL, 'c' },
	{ "output", required_argument, NULL, 'o' },
	{ "event", required_argument, NULL, 'e' },
	{ "freq", required_argument, NULL, 'F' },
	{ "period", required_argument, NULL, 'P' },
	{ "call-graph", optional_argument, NULL, OPT_CALL_GRAPH },
	{ "no-call-graph", no_argument, NULL, OPT_NO_CALLCHAIN },
	{ "unwind", required_argument, NULL, OPT_UNWIND },
	{ "all-cpus", no_argument, NULL, 'a' },
	{ "cpus", required_argument, NULL, 'C' },
	{ "mmap-pages", required_argument, NULL, 'm' },
	{ "clockid", required_argument, NULL, 'k' },
	{ "duration", required_argument, NULL, 'd' },
	{ "compress", required_argument, NULL, OPT_COMPRESS },
	{ "mode", required_argument, NULL, OPT_MODE },
	{ "history", required_argument, NULL, OPT_HISTORY },
	{ "history-max", required_argument, NULL, OPT_HISTORY_MAX },
	{ "rotate-interval", required_argument, NULL, OPT_ROTATE_INTERVAL },
	{ "rotate-size", required_argument, NULL, OPT_ROTATE_SIZE },
	{ "switch-output", optional_argument, NULL, OPT_SWITCH_OUTPUT },
	{ "max-files", required_argument, NULL, OPT_MAX_FILES },
	{ "switch-max-files", required_argument, NULL, OPT_MAX_FILES },
	{ "max-bytes", required_argument, NULL, OPT_MAX_BYTES },
	{ "max-age", required_argument, NULL, OPT_MAX_AGE },
	{ "socket", required_argument, NULL, OPT_SOCKET },
	{ "offcpu", no_argument, NULL, OPT_OFFCPU },
	{ "check-config", no_argument, NULL, OPT_CHECK_CONFIG },
	{ "config-keys", no_argument, NULL, OPT_CONFIG_KEYS },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ 0 }
};

/* Options that set one key: to their argument, or to @value. */
static const struct option_key {
	int opt;
	const char *section, *key, *value;
} option_keys[] = {
	{ 'o', "output", "directory", NULL }, { 'e', "record", "events", NULL }, { 'F', "record", "frequency", NULL },
	{ 'P', "record", "period", NULL }, { OPT_CALL_GRAPH, "record", "callchain", "yes" },
	{ 'g', "record", "callchain", "yes" }, { OPT_NO_CALLCHAIN, "record", "callchain", "no" },
	{ OPT_UNWIND, "record", "unwind", NULL },
	{ 'C', "record", "cpus", NULL }, { 'm', "record", "mmap-size", NULL }, { 'k', "record", "clockid", NULL },
	{ 'd', "record", "duration", NULL }, { OPT_OFFCPU, "record", "offcpu", "yes" },
	{ 'z', "output", "compress", "yes" }, { OPT_COMPRESS, "output", "compress", NULL },
	{ OPT_MODE, "output", "mode", NULL }, { OPT_HISTORY, "output", "history", NULL },
	{ OPT_HISTORY_MAX, "output", "history-max", NULL }, { OPT_ROTATE_INTERVAL, "output", "rotate-interval", NULL },
	{ OPT_ROTATE_SIZE, "output", "rotate-size", NULL }, { OPT_SWITCH_OUTPUT, "output", NULL, NULL },
	{ OPT_MAX_FILES, "output", "max-files", NULL }, { OPT_MAX_BYTES, "output", "max-bytes", NULL },
	{ OPT_MAX_AGE, "output", "max-age", NULL }, { OPT_SOCKET, "service", "socket", NULL },
};

/*
 * What getopt refused, said plainly: an option without its value, or an
 * unknown one with the nearest real one when it looks like a typo of it
 * (at most 2 edits, fewer than a third of its letters).
 */
static void bad_option(const char *arg, const struct option *opts)
{
	const char *best = NULL;
	size_t best_d = SIZE_MAX;
	char name[64];

	if (strncmp(arg, "--", 2) != 0) {
		if (optopt && strchr(OPTSTRING, optopt))
			log_error("Option '-%c' needs a value (see --help)", optopt);
		else
			log_error("Unknown option '-%c' (see --help)", optopt ? optopt : '?');
		return;
	}
	snprintf(name, sizeof(name), "%.*s", (int)strcspn(arg + 2, "="), arg + 2);
	for (const struct option *o = opts; o->name; o++) {
		size_t d;

		if (strcmp(o->name, name) == 0) {
			log_error("Option '--%s' %s", name, o->has_arg == required_argument ?
				  "needs a value (see --help)" : "takes no value (see --help)");
			return;
		}
		d = config_edit_distance(name, o->name);
		if (d < best_d) {
			best_d = d;
			best = o->name;
		}
	}
	if (best && best_d <= 2 && best_d * 3 < strlen(name))
		log_error("Unknown option '--%s'; did you mean '--%s'?", name, best);
	else
		log_error("Unknown option '--%s' (see --help)", name);
}

/* Remember section.key=@value, applied by build_config().  0, or the exit status 2. */
static int add_set(const char *section, const char *key, char *value)
{
	if (nr_sets == sizeof(sets) / sizeof(sets[0])) {
		log_error("Too many command-line options");
		return 2;
	}
	sets[nr_sets].section = section;
	sets[nr_sets].key = key;
	sets[nr_sets].value = value;
	nr_sets++;
	return 0;
}

/*
 * An option of option_keys[] that is more than its key, as perf means it:
 * checks (a refusal into @err) and may change the key or the value.  0, or
 * the exit status 1 (out of memory) or 2.
 */
static int perf_option(int c, int argc, char **argv, const char **key, char **value, char *err, size_t errlen)
{
	char bytes[32];

	switch (c) {
	case 'o':
		check_output(optarg, err, errlen);
		break;
	case OPT_CALL_GRAPH: {
		const char *size, *mode;

		/* perf writes "--call-graph fp": take the mode after a space too. */
		if (!optarg && optind < argc && is_call_graph_mode(argv[optind]))
			optarg = argv[optind++];
		mode = call_graph_mode(optarg, &size, err, errlen);
		if (mode)
			*value = (char *)mode;
		if (size && add_set("record", "stack-size", (char *)size))
			return 2;
		break;
	}
	case 'C':
		check_cpus_online(optarg, err, errlen);
		break;
	case 'm':
		/* Kept as long as argv is: every reload applies it again. */
		if (mmap_pages_value(optarg, bytes, sizeof(bytes), err, errlen) == 0 && !(*value = strdup(bytes))) {
			log_error("Out of memory");
			return 1;
		}
		break;
	case OPT_SWITCH_OUTPUT:
		if (switch_output_key(optarg, key, err, errlen) == 0 && !*key) {
			/*
			 * signal: as in perf, only SIGUSR2 rotates, so the
			 * default rotation by time (and any by size) is off.
			 */
			if (add_set("output", "rotate-size", "0"))
				return 2;
			*key = "rotate-interval";
			*value = "0";
		}
		break;
	}
	return 0;
}

/*
 * The command line into sets[] and config_path.  Returns the exit status
 * to end with at once (help, version, a bad option) and sets *@ret_exit,
 * or 0 to go on.
 */
static int parse_options(int argc, char **argv, bool *ret_check_only, bool *ret_exit)
{
	bool freq_given = false, period_given = false;
	char err[512];
	int c;

	*ret_exit = true;
	opterr = 0; /* bad_option() says what is wrong, with a suggestion */
	while ((c = getopt_long(argc, argv, OPTSTRING, long_options, NULL)) != -1) {
		const struct option_key *ok = NULL;
		const char *key;
		char *value;
		int r;

		for (size_t i = 0; i < sizeof(option_keys) / sizeof(option_keys[0]) && !ok; i++)
			if (option_keys[i].opt == c)
				ok = &option_keys[i];
		switch (c) {
		case 'c':
			/* perf's -c N (a period) would otherwise be "cannot read N". */
			if (all_digits(optarg) && access(optarg, F_OK) < 0) {
				log_error("-c %s: perf's -c N is -P N here (sample every N events); "
					  "-c names the configuration file, and there is no file '%s'", optarg, optarg);
				return 2;
			}
			config_path = optarg;
			continue;
		case 'a': continue; /* always system-wide, as perf -a is */
		case 'v': log_max_level = LOG_DEBUG; continue;
		case OPT_CHECK_CONFIG: *ret_check_only = true; continue;
		case 'h': usage(stdout); return 0;
		case OPT_VERSION: printf("perfrecd %s\n", PERFREC_VERSION); return 0;
		case OPT_CONFIG_KEYS: config_print_keys(stdout); return 0;
		}
		if (!ok) {
			bad_option(argv[optind - 1], long_options);
			return 2;
		}
		freq_given |= c == 'F';
		period_given |= c == 'P';
		key = ok->key;
		value = ok->value ? (char *)ok->value : optarg;
		err[0] = 0;
		r = perf_option(c, argc, argv, &key, &value, err, sizeof(err));
		if (r)
			return r;
		if (err[0]) {
			log_error("%s", err);
			return 2;
		}
		if (add_set(ok->section, key, value))
			return 2;
	}
	if (optind < argc) {
		log_error("Unexpected argument '%s' (see --help)", argv[optind]);
		return 2;
	}
	/*
	 * Each replaces the other (config_set()), so one of the two would be
	 * dropped in silence.  One of them over the file's frequency= or
	 * period= is fine: the command line wins.
	 */
	if (freq_given && period_given) {
		log_error("-F/--freq and -P/--period contradict each other: sample by frequency or by period");
		return 2;
	}
	*ret_exit = false;
	return 0;
}

int main(int argc, char **argv)
{
	bool check_only = false, done;
	struct config cfg;
	struct manager m;
	char err[512];
	int r;

	log_open();
	r = parse_options(argc, argv, &check_only, &done);
	if (done)
		return r;
	if (!config_path && access(DEFAULT_CONFIG, F_OK) == 0)
		config_path = DEFAULT_CONFIG;
	r = build_config(&cfg, err, sizeof(err));
	if (r) {
		log_error("%s", err);
		config_exit(&cfg);
		return r;
	}
	if (check_only) {
		config_print(&cfg, log_max_level >= LOG_DEBUG, stdout);
		config_exit(&cfg);
		return 0;
	}

	r = manager_init(&m, &cfg, argc, argv);
	m.reload = reload_config;
	if (r >= 0)
		r = manager_run(&m);
	/*
	 * The build-id cache's copies still queued (the last file's binaries,
	 * the kernel's kallsyms) are made before exit: their files reference
	 * them, and their processes may be gone by the next start.
	 */
	bidcache_sync();
	bidcache_clear();
	manager_exit(&m);
	config_exit(&cfg);
	return r < 0 ? 1 : 0;
}
