/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * perfrecd's configuration: defaults, the INI file (parsed with inih),
 * and the systemd notations for sizes ("256M") and durations ("10min").
 */
#ifndef PERFRECD_CONFIG_H
#define PERFRECD_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CONFIG_MAX_EVENTS 32

enum { CONFIG_MODE_CONTINUOUS, CONFIG_MODE_FLIGHT };
/* history= not set: CONFIG_FLIGHT_HISTORY_MIN in flight mode, none in
 * continuous mode.  The one place that default is written. */
#define CONFIG_HISTORY_DEFAULT UINT64_MAX
#define CONFIG_FLIGHT_HISTORY_MIN 5

struct config {
	/* [record] */
	char *events[CONFIG_MAX_EVENTS];
	size_t nr_events;
	uint64_t freq;            /* Hz; 0 when period is used */
	int max_freq;             /* max-frequency=: Hz, the most frequency= or SetFrequency may ask */
	uint64_t period;
	bool callchain;
	bool dwarf;               /* callchain=dwarf: user stacks copied, not walked */
	uint64_t stack_size;      /* stack-size=: bytes of user stack per DWARF sample */
	bool unwind_host;         /* unwind=host: DWARF samples unwound while recording */
	int clockid;
	char *cpus;               /* NULL: all online */
	uint64_t mmap_bytes;      /* per-CPU ring data size; 0: auto (config_ring_bytes()) */
	int drain_priority;       /* SCHED_FIFO priority of the draining thread; 0: normal */
	uint64_t flush_usec;      /* drain at least this often */
	uint64_t checkpoint_usec; /* header data-size refresh */
	bool context_switch;
	bool offcpu;               /* off-CPU time via BPF (offcpu.c) */
	uint64_t offcpu_min_usec;  /* shorter blocks are not counted */
	char *offcpu_cgroup;       /* NULL: every cgroup */
	bool python;               /* Python frames read at the sample (pywalk.h) */
	/* [output] */
	char *directory;
	char *prefix;
	uint64_t duration_usec;   /* 0: until signalled */
	uint64_t rotate_bytes;    /* 0: no size trigger */
	uint64_t rotate_usec;     /* 0: no time trigger */
	uint64_t max_files;       /* retention; 0: unlimited */
	/* space limits (parse_size_or_percent()): the smaller of the two set */
	uint64_t max_bytes;       /* published files at most: bytes (0: unset) */
	unsigned max_bytes_percent; /* ... percent of the output's file system (0: unset) */
	uint64_t max_age_usec;
	uint64_t min_free;        /* free space kept on that file system: bytes (0: unset) */
	unsigned min_free_percent; /* ... percent of its size (0: unset) */
	char *on_rotate;          /* command run with each published file */
	int compress_level;       /* zstd level of COMPRESSED records; 0: none */
	/* buildid-cache= as written: "yes" (the default: the output directory), "no", or a path. */
	char *buildid_cache_opt;
	/*
	 * The build-id cache directory the daemon uses (bidcache.c), set from
	 * buildid_cache_opt by config_resolve_buildid_cache(); NULL: none.
	 */
	char *buildid_cache;
	bool buildid_cache_auto;  /* resolved from "yes": a cache that cannot be had is off, not fatal */
	uint64_t buildid_cache_size; /* its cap in bytes (0: unset) */
	unsigned buildid_cache_size_percent; /* ... percent of its file system (0: unset) */
	int mode;                 /* CONFIG_MODE_*: flight writes only snapshots */
	uint64_t history_usec;    /* snapshot history window; CONFIG_HISTORY_DEFAULT: by mode */
	uint64_t history_max;     /* memory cap of the history */
	/* [service] */
	char *user;               /* switch to this user after opening events */
	char *group;              /* owner group of the output files */
	/* control socket (control.c) */
	char *socket;             /* path; NULL or "": no control socket */
	char *control_group;      /* may call everything; NULL: "perfrecd" if it exists; "": none */
	char *control_public_methods; /* what anyone may call; NULL: VARLINK_DEFAULT_PUBLIC */
	/* [upload] (upload.c): NULL url: no uploads */
	char *upload_url;         /* http(s)://host[:port]/bucket */
	char *upload_region;      /* SigV4 region; never NULL (empty: the table's default) */
	char *upload_credentials; /* file with the key id and secret; NULL: environment */
	char *upload_key;         /* key template; never NULL (empty: the table's default) */
	/* [output] label.NAME=VALUE (manifest.c), "NAME=VALUE" each */
	char **labels;
	size_t nr_labels;
	/* [service] self-report (metrics.c) and [record] max-overhead (governor.c) */
	char *metrics_listen;     /* 127.0.0.1:PORT; NULL: no endpoint */
	char *metrics_textfile;   /* written atomically; NULL: none */
	double max_overhead;      /* fraction of all CPUs; 0: no governor */
};

/*
 * One configuration key: a row of config_keys[] (config.c), from which
 * parsing, defaults, --check-config and the messages about unknown keys
 * all come.  A @name ending in '.' is a family of keys (label.NAME).
 */
struct config_key;
typedef int config_parse_fn(const struct config_key *k, struct config *c, const char *v,
			    char *err, size_t errlen);
typedef void config_print_fn(const struct config_key *k, const struct config *c, FILE *f);
typedef int config_check_fn(const struct config_key *k, const char *v, char *err, size_t errlen);

/*
 * How a reload (SIGHUP) applies a key's new value: every row of
 * config_keys[] says, and daemon/manager.c's reload() does what the
 * changed rows' kinds ask, nothing per key.
 */
enum config_apply {
	CONFIG_APPLY_UNSET,     /* a row that does not say: a bug (tests/unit/test-config-apply.c) */
	CONFIG_APPLY_NOW,       /* read as the daemon goes, or set in it by the reload: at once */
	CONFIG_APPLY_NEXT_FILE, /* read when a file begins: from the next file on */
	CONFIG_APPLY_REOPEN,    /* it lives in the opened events: they are reopened, in a new file */
	CONFIG_APPLY_OFFCPU,    /* the loaded off-CPU program's filter, set in place */
	CONFIG_APPLY_RESTART,   /* set up once at start: a reload changing it is refused */
	_CONFIG_APPLY_MAX,
};

struct config_key {
	const char *section, *name;
	const struct config_type *type; /* parses, prints and frees the field */
	size_t off;                /* the field in struct config */
	const char *def;           /* the default as a file would write it; NULL: unset (zero) */
	const char *doc;           /* one line */
	/* what the type checks, and how it says a value is wrong */
	const char *what;          /* "KEY: 'VALUE' is not WHAT" */
	uint64_t min, max;         /* bounds of numbers; max: of percentages */
	bool zero_is_off;          /* 0 is taken below min, and means off */
	size_t aux;                /* a second field (the percentage of a space limit, ...) */
	config_check_fn *check;    /* a check of the key's own, run before a string is taken */
	enum config_apply applies; /* how a reload applies a change */
	const char *why_restart;   /* CONFIG_APPLY_RESTART: why only a start applies it */
};

extern const struct config_key config_keys[];
extern const size_t config_nr_keys;

/*
 * The frequency the events open at: frequency= up to max-frequency=, the
 * guard that keeps sampling from taking the host (0 when period= is used).
 */
static inline uint64_t config_freq(const struct config *c)
{
	return c->max_freq > 0 && c->freq > (uint64_t)c->max_freq ? (uint64_t)c->max_freq : c->freq;
}

/*
 * mmap-size=auto: with callchain=dwarf, a ring per CPU that holds some
 * 0.25 s of samples at the frequency the events open at (1000 Hz under
 * period=), each counted as stack-size= plus 512 bytes (header, ids,
 * registers), rounded up to a power of two, from 512K up to 4M; 512K
 * otherwise.  A 512K ring held 58 samples of 8-KiB stacks, 58 ms at
 * 999 Hz: the kernel lost thousands a minute on a busy host.
 */
#define CONFIG_RING_MIN (512ULL << 10)
#define CONFIG_RING_AUTO_MAX (4ULL << 20)
#define CONFIG_RING_DWARF_EXTRA 512
uint64_t config_ring_bytes(const struct config *c);

/* The first key that a reload applies @how and that differs in @a and @b; NULL: none. */
const struct config_key *config_changed_key(const struct config *a, const struct config *b,
					    enum config_apply how);

/* Whether a key that a reload applies @how has a different value in @a and @b. */
static inline bool config_changed(const struct config *a, const struct config *b, enum config_apply how)
{
	return config_changed_key(a, b, how) != NULL;
}

/*
 * Whether @section.@name holds in @c the value config_init() gives it:
 * false for a key asked for away from its default (and for a family or
 * a key not in the table, or out of memory).
 */
bool config_key_is_default(const struct config *c, const char *section, const char *name);

/* "now", "next-file", "reopen", "offcpu-filter", "restart"; NULL out of range. */
const char *config_apply_to_string(enum config_apply how);

/*
 * What perfrecd --config-keys prints: each row of config_keys[] as
 * "SECTION KEY APPLIES" (a family as "label.*"), one a line.
 */
void config_print_keys(FILE *f);

/* Every key at its default (config_keys[].def). */
void config_init(struct config *c);
void config_exit(struct config *c);

/*
 * What perfrecd --check-config prints: every key in effect as key=value,
 * by section, in the table's order; with @docs each after a "# " line of
 * what it is.
 */
void config_print(const struct config *c, bool docs, FILE *f);

/*
 * Load @path over @c.  On error returns -errno / -EINVAL and writes a one-line
 * message naming file, line and key into @err.
 */
int config_load(struct config *c, const char *path, char *err, size_t errlen);

/* The same from a string; @name stands for the file in messages. */
int config_load_string(struct config *c, const char *text, const char *name, char *err, size_t errlen);

/* The same from @size bytes that may hold NULs (which are refused). */
int config_load_data(struct config *c, const char *data, size_t size, const char *name,
		     char *err, size_t errlen);

/*
 * Set one key (section.key=value) as if from a file, replacing what it was
 * (frequency= also clears period= and the other way round); used for CLI
 * overrides.  Only config_load() refuses a key set twice.
 */
int config_set(struct config *c, const char *section, const char *key, const char *value,
	       char *err, size_t errlen);

/* Append comma-separated event names, each checked (perfrec_evspec__parse()). */
int config_add_events(struct config *c, const char *v, char *err, size_t errlen);

/* Clear the event list (the CLI's first -e replaces the file's events). */
void config_clear_events(struct config *c);

/*
 * buildid_cache from buildid-cache=: "yes" is the output directory
 * (absolute; none when writing to a pipe) and sets buildid_cache_auto,
 * "no" none, a path itself.  Until it is called there is no cache.  0 or
 * -ENOMEM.
 */
int config_resolve_buildid_cache(struct config *c);

/* "256M", "1G", "4096" -> bytes (base 1024 like systemd). */
int parse_size(const char *s, uint64_t *ret_bytes);
/* "10min", "5s", "1h 30min", "500ms", "30" (seconds) -> microseconds. */
int parse_duration(const char *s, uint64_t *ret_usec);
/*
 * A space limit: a size (parse_size()), a whole percentage of the file
 * system ("15%", 0 to 100), or one of each ("15% 4G": the smaller holds).
 * The unused form is 0; "0" or "0%" is no limit (both 0).
 */
int parse_size_or_percent(const char *s, uint64_t *ret_bytes, unsigned *ret_percent);
/* The inverse, for --check-config: "15% 4294967296", "15%" or "4294967296". */
const char *format_size_or_percent(uint64_t bytes, unsigned percent, char *buf, size_t len);
int parse_bool(const char *s, bool *ret);
int parse_clockid(const char *s, int *ret_clockid);
const char *clockid_name(int clockid);

/*
 * Levenshtein distance of @a and @b, both shorter than 64 bytes; else
 * SIZE_MAX.  For "did you mean" suggestions of keys and options.
 */
size_t config_edit_distance(const char *a, const char *b);

#endif
