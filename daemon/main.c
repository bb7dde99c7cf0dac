// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * perfrecd: always-on, host-wide perf_event recorder.  main() only reads
 * the command line and the configuration and hands over to the manager.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <perfrec/perfrec.h>

#include "config.h"
#include "varlink.h"
#include "log.h"
#include "manager.h"

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
		"  -z                     zstd-compress records at the default level (3)\n"
		"      --compress LEVEL   zstd-compress records at LEVEL (1..19; 0: off)\n"
		"      --mode MODE        continuous (default) or flight: keep history in memory,\n"
		"                         write it only on SIGUSR2 / Snapshot\n"
		"      --history TIME     history kept for snapshots (flight default 5min; 0: none)\n"
		"      --history-max SIZE memory cap of the history (default 256M)\n"
		"      --socket PATH      control socket (default /run/perfrecd/io.perfrec; '' for none)\n"
		"  -e, --event EVENT      event to sample, as perf names it (repeatable;\n"
		"                         replaces the configured list)\n"
		"  -F, --freq HZ          sample at HZ per CPU\n"
		"  -P, --period N         sample every N events instead\n"
		"  -g, --call-graph       record callchains (frame pointers)\n"
		"      --no-call-graph    do not record callchains\n"
		"      --offcpu           also record off-CPU time (BPF; offcpu=yes)\n"
		"  -C, --cpus LIST        CPUs to record (default: all online)\n"
		"  -k, --clockid CLOCK    monotonic (default), monotonic_raw, realtime, boottime, tai, perf\n"
		"  -d, --duration TIME    stop after TIME (seconds, 1.5, 10min, 1h, ...)\n"
		"      --check-config     validate the configuration, print it and exit\n"
		"  -v, --verbose          more log output\n"
		"  -h, --help             this text\n"
		"      --version          print the version\n\n"
		"Signals: SIGINT/SIGTERM finish the current file and exit; SIGUSR2 rotates\n"
		"(in flight mode: writes a snapshot).\n");
}

/* A duration exactly, in the largest unit that divides it (1.5s: 1500ms). */
static void print_duration(const char *key, uint64_t usec)
{
	if (usec % 1000000 == 0)
		printf("%s=%" PRIu64 "s\n", key, usec / 1000000);
	else if (usec % 1000 == 0)
		printf("%s=%" PRIu64 "ms\n", key, usec / 1000);
	else
		printf("%s=%" PRIu64 "us\n", key, usec);
}

static void print_config(const struct config *c)
{
	char buf[64];

	printf("[record]\nevents=");
	for (size_t i = 0; i < c->nr_events; i++)
		printf("%s%s", i ? "," : "", c->events[i]);
	printf("\n");
	if (c->freq)
		printf("frequency=%" PRIu64 "\n", c->freq);
	else
		printf("period=%" PRIu64 "\n", c->period);
	printf("callchain=%s\n", c->callchain ? "yes" : "no");
	printf("clockid=%s\n", clockid_name(c->clockid));
	printf("cpus=%s\n", c->cpus ? c->cpus : "all");
	printf("mmap-size=%" PRIu64 "K\n", c->mmap_bytes / 1024);
	printf("drain-priority=%d\n", c->drain_priority);
	print_duration("flush-interval", c->flush_usec);
	print_duration("checkpoint-interval", c->checkpoint_usec);
	printf("context-switch=%s\n", c->context_switch ? "yes" : "no");
	printf("offcpu=%s\n", c->offcpu ? "yes" : "no");
	print_duration("offcpu-min", c->offcpu_min_usec);
	printf("offcpu-cgroup=%s\n", c->offcpu_cgroup ? c->offcpu_cgroup : "");
	if (c->max_overhead > 0)
		printf("max-overhead=%g%%\n", c->max_overhead * 100);
	else
		printf("max-overhead=\n");
	print_duration("duration", c->duration_usec);
	printf("\n[output]\ndirectory=%s\nprefix=%s\n", c->directory, c->prefix);
	printf("rotate-size=%" PRIu64 "\n", c->rotate_bytes);
	print_duration("rotate-interval", c->rotate_usec);
	printf("max-files=%" PRIu64 "\n", c->max_files);
	printf("max-bytes=%s\n", format_size_or_percent(c->max_bytes, c->max_bytes_percent, buf, sizeof(buf)));
	print_duration("max-age", c->max_age_usec);
	printf("min-free=%s\n", format_size_or_percent(c->min_free, c->min_free_percent, buf, sizeof(buf)));
	printf("on-rotate=%s\n", c->on_rotate ? c->on_rotate : "");
	printf("compress=%d\n", c->compress_level);
	printf("mode=%s\n", c->mode == CONFIG_MODE_FLIGHT ? "flight" : "continuous");
	if (c->history_usec == CONFIG_HISTORY_DEFAULT)
		printf("history=%s\n", c->mode == CONFIG_MODE_FLIGHT ? "5min" : "0");
	else
		print_duration("history", c->history_usec);
	printf("history-max=%" PRIu64 "\n", c->history_max);
	for (size_t i = 0; i < c->nr_labels; i++)
		printf("label.%s\n", c->labels[i]);
	printf("\n[service]\nuser=%s\ngroup=%s\n", c->user ? c->user : "", c->group ? c->group : "");
	printf("socket=%s\n", c->socket ? c->socket : "");
	printf("control-group=%s\n", c->control_group ? c->control_group : "(perfrecd if it exists)");
	printf("control-public-methods=%s\n",
	       c->control_public_methods ? c->control_public_methods : VARLINK_DEFAULT_PUBLIC);
	printf("metrics-listen=%s\nmetrics-textfile=%s\n", c->metrics_listen ? c->metrics_listen : "",
	       c->metrics_textfile ? c->metrics_textfile : "");
	printf("\n[upload]\nupload-url=%s\nupload-region=%s\nupload-credentials=%s\nupload-key=%s\n",
	       c->upload_url ? c->upload_url : "", c->upload_region ? c->upload_region : "us-east-1",
	       c->upload_credentials ? c->upload_credentials : "",
	       c->upload_key ? c->upload_key : "{host}/{date}/{file}");
}

/*
 * Command-line settings, applied over the file in the order given, both at
 * start and at every reload (SIGHUP), so the command line keeps winning.
 */
static struct { const char *section, *key; char *value; } sets[64];
static size_t nr_sets;
static const char *config_path;

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

enum { OPT_CHECK_CONFIG = 256, OPT_VERSION, OPT_NO_CALLCHAIN, OPT_COMPRESS,
       OPT_MODE, OPT_HISTORY, OPT_HISTORY_MAX, OPT_SOCKET,
       OPT_OFFCPU };

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "output", required_argument, NULL, 'o' },
		{ "event", required_argument, NULL, 'e' },
		{ "freq", required_argument, NULL, 'F' },
		{ "period", required_argument, NULL, 'P' },
		{ "call-graph", no_argument, NULL, 'g' },
		{ "no-call-graph", no_argument, NULL, OPT_NO_CALLCHAIN },
		{ "cpus", required_argument, NULL, 'C' },
		{ "clockid", required_argument, NULL, 'k' },
		{ "duration", required_argument, NULL, 'd' },
		{ "compress", required_argument, NULL, OPT_COMPRESS },
		{ "mode", required_argument, NULL, OPT_MODE },
		{ "history", required_argument, NULL, OPT_HISTORY },
		{ "history-max", required_argument, NULL, OPT_HISTORY_MAX },
		{ "socket", required_argument, NULL, OPT_SOCKET },
		{ "offcpu", no_argument, NULL, OPT_OFFCPU },
		{ "check-config", no_argument, NULL, OPT_CHECK_CONFIG },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ 0 }
	};
	bool check_only = false, freq_given = false, period_given = false;
	struct config cfg;
	struct manager m;
	char err[512];
	int c, r;

	log_open();
	while ((c = getopt_long(argc, argv, "c:o:e:F:P:gC:k:d:zvh", opts, NULL)) != -1) {
		const char *section = "record", *key = NULL;

		switch (c) {
		case 'c': config_path = optarg; continue;
		case 'o': section = "output"; key = "directory"; break;
		case 'e': key = "events"; break;
		case 'F': key = "frequency"; freq_given = true; break;
		case 'P': key = "period"; period_given = true; break;
		case 'g': key = "callchain"; optarg = "yes"; break;
		case OPT_NO_CALLCHAIN: key = "callchain"; optarg = "no"; break;
		case 'C': key = "cpus"; break;
		case 'k': key = "clockid"; break;
		case 'd': key = "duration"; break;
		case 'z': section = "output"; key = "compress"; optarg = "yes"; break;
		case OPT_COMPRESS: section = "output"; key = "compress"; break;
		case OPT_MODE: section = "output"; key = "mode"; break;
		case OPT_HISTORY: section = "output"; key = "history"; break;
		case OPT_HISTORY_MAX: section = "output"; key = "history-max"; break;
		case OPT_SOCKET: section = "service"; key = "socket"; break;
		case OPT_OFFCPU: key = "offcpu"; optarg = "yes"; break;
		case 'v': log_max_level = LOG_DEBUG; continue;
		case OPT_CHECK_CONFIG: check_only = true; continue;
		case 'h': usage(stdout); return 0;
		case OPT_VERSION: printf("perfrecd %s\n", perfrec_hostinfo__version()); return 0;
		default: usage(stderr); return 2;
		}
		if (nr_sets == sizeof(sets) / sizeof(sets[0])) {
			log_error("Too many command-line options");
			return 2;
		}
		sets[nr_sets].section = section;
		sets[nr_sets].key = key;
		sets[nr_sets].value = optarg;
		nr_sets++;
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

	if (!config_path && access(DEFAULT_CONFIG, F_OK) == 0)
		config_path = DEFAULT_CONFIG;
	r = build_config(&cfg, err, sizeof(err));
	if (r) {
		log_error("%s", err);
		config_exit(&cfg);
		return r;
	}
	if (check_only) {
		print_config(&cfg);
		config_exit(&cfg);
		return 0;
	}

	r = manager_init(&m, &cfg, argc, argv);
	m.reload = reload_config;
	if (r >= 0)
		r = manager_run(&m);
	manager_exit(&m);
	config_exit(&cfg);
	return r < 0 ? 1 : 0;
}
