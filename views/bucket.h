/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The fleet bucket, read back: what perfrecd's [upload] stored (each data
 * object "<key>" beside its manifest "<key>.json"), found by host, labels
 * and a wall-clock window.  bucket_list() reads the manifests only;
 * bucket_fetch() also downloads the data objects the window needs into a
 * local directory and checks each against its manifest's SHA-256.
 *
 * Both print their errors (to stderr, once, naming the object) and return
 * -errno; a caller adds nothing.  Not thread-safe (one curl handle each).
 */
#ifndef PERFRECCTL_BUCKET_H
#define PERFRECCTL_BUCKET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Separation under which consecutive objects of a host count as adjacent: a
 * manifest's end is its file's last sample, so two files in succession are
 * apart by up to a sampling period (a few ms at the usual frequencies), or
 * overlap.  A stopped daemon or a missing object is much longer than this.
 */
#define BUCKET_GAP_MIN_NS 250000000ULL

/*
 * What the listing alone may rule out before a window's manifests are read
 * is judged with this much slack: the clocks of the hosts and of the
 * storage server differ by less.
 */
#define BUCKET_SLACK_NS (300ULL * 1000000000ULL)

/*
 * A manifest's size above this is not a perfrecd file's (a rotation bounds
 * them far lower): the manifest is refused, not shown.
 */
#define BUCKET_SIZE_MAX (1ULL << 40)

/*
 * The longest file name fetch takes from a manifest: with ".json" and a
 * temporary suffix it must still fit NAME_MAX.
 */
#define BUCKET_NAME_MAX 200

struct bucket_opts {
	size_t sz;
	const char *url;           /* the bucket, as upload-url= */
	const char *host;          /* NULL: every host */
	const char *const *labels; /* "KEY=VALUE", NULL-terminated or NULL; all must match */
	const char *key_template;  /* as upload-key=; NULL: {host}/{date}/{file} */
	const char *region;        /* NULL: us-east-1 */
	const char *credentials;   /* as upload-credentials=; NULL: AWS_* variables or unsigned */
	uint64_t gap_min_ns;       /* 0: BUCKET_GAP_MIN_NS */
	/*
	 * bucket_fetch(): also the build-id cache entries each file fetched
	 * names that perfrecd shipped beside it (KEYDIR/.build-id/xx/yyyy, or
	 * .../kallsyms), into DIR/.build-id/ likewise (cut --archive).
	 */
	bool buildids;
};

/* One data object, from its manifest. */
struct bucket_object {
	char *key;       /* the data object's key (the manifest's without ".json") */
	char *file;      /* manifest "file": the name it had on its host */
	char *host;
	char **labels;   /* "KEY=VALUE", NULL-terminated, sorted */
	uint64_t start_ns, end_ns; /* wall clock, ns since the epoch (UTC) */
	uint64_t size, samples, lost;
	char sha256[65];
	bool uploaded;   /* the data object is in the bucket (its manifest goes first) */
	char *path;      /* bucket_fetch(): the checked local copy; else NULL */
	char *manifest;  /* the manifest's JSON text as stored */
};

/* A part of the window no object of @host covers. */
struct bucket_gap {
	char *host;      /* NULL when no object matched at all and no host was asked for */
	uint64_t from_ns, to_ns;
};

struct bucket_result {
	struct bucket_object *objs; /* by start, then host, then key */
	size_t nr;
	struct bucket_gap *gaps;    /* by host, then time */
	size_t nr_gaps;
	size_t nr_pending;          /* manifests whose data object is not in the bucket yet */
	size_t nr_bad;              /* bucket_fetch(): objects rejected (bad SHA-256, failed download) */
};

/*
 * Every matching object's manifest (host, labels), without downloading
 * data.  Objects whose data is not uploaded yet are listed too, with
 * uploaded false.  No gaps are computed.  0 and *ret (release with
 * bucket_result_exit()) or -errno.
 */
int bucket_list(const struct bucket_opts *o, struct bucket_result *ret);

/*
 * The data objects overlapping [@from_ns, @to_ns] (wall clock, inclusive),
 * downloaded into @dir (which must exist) under their file names, each with
 * its manifest beside it ("<file>.json", as on the host); a copy already
 * there with the manifest's SHA-256 is reused.  A download whose
 * SHA-256 differs from its manifest's is named on stderr with both hashes,
 * deleted, counted in nr_bad and left out, so its span shows as a gap.
 * *ret holds only the objects fetched and checked, in time order, each
 * with its path, and the gaps: the parts of the window no fetched object of
 * a host covers, for the host asked for, else for every host with a
 * matching manifest (a host whose uploads stopped before the window is
 * found from its newest manifest when the key template names hosts).
 * 0 (also with nr_bad > 0: the rest is usable) or -errno (the bucket could
 * not be listed, or @dir not written).
 */
int bucket_fetch(const struct bucket_opts *o, uint64_t from_ns, uint64_t to_ns, const char *dir,
		 struct bucket_result *ret);

void bucket_result_exit(struct bucket_result *r);

/* --- the selection logic, without the network (for tests) --- */

/*
 * Parse a manifest (@json, NUL-terminated) stored as @manifest_key into
 * *ret.  0, or -EBADMSG when it lacks host, start, end or a 64-digit
 * sha256 (or the host holds control characters or '/'), -EINVAL when the
 * file it names (or, without one, the key's last part) is not a name
 * perfrecd gives (bucket_file_name_ok()), -ERANGE when its size is over
 * BUCKET_SIZE_MAX, -ENOMEM.
 */
int bucket_manifest_parse(const char *json, const char *manifest_key, struct bucket_object *ret);
void bucket_object_exit(struct bucket_object *o);
/*
 * Is @name one fetch may create: a plain base name of a perfrecd data file
 * ("NAME.data"), of letters, digits and "._-+@:=,~" only, not starting with
 * '-' or '.', at most BUCKET_NAME_MAX bytes?  The bucket is someone else's
 * input: a newline would forge lines of fetch's list of paths, "-rf" an
 * option of the command it is given to.
 */
bool bucket_file_name_ok(const char *name);
/*
 * @s fit for a terminal and a line-based reader: control characters,
 * '\\' and bytes over 0x7e as C escapes (\n, \x1b), cut at 256 bytes with
 * "...".  A static buffer, one of 8 used in turn: good for one message.
 */
const char *bucket_esc(const char *s);
/* Does @obj belong to @host (NULL: any) and carry every one of @labels? */
bool bucket_object_matches(const struct bucket_object *obj, const char *host,
			   const char *const *labels);
/* Does @obj's span meet [@from_ns, @to_ns]? */
bool bucket_object_overlaps(const struct bucket_object *obj, uint64_t from_ns, uint64_t to_ns);
/*
 * Can the data object @data_key, stored at @mtime_ns (its LastModified; 0
 * unknown), hold data of [@from_ns, @to_ns]?  From the listing alone, so a
 * fetch reads only the manifests that may matter: an object stored before
 * the window began (less BUCKET_SLACK_NS) ended before it, and a rotated
 * file "PREFIX-HOST-YYYYMMDDTHHMMSS.mmmZ-NNNNNN.data" began at its name's
 * time, so one named after the window's end (plus the slack) is later.
 * Snapshots and recovered files (other names) are judged by mtime only.
 */
bool bucket_key_may_overlap(const char *data_key, uint64_t mtime_ns, uint64_t from_ns, uint64_t to_ns);

/*
 * The host a key names, by its template @tmpl: the characters where {host}
 * stands, up to the literal that follows it.  NULL when the template has
 * no {host} right after its literal start, or nothing after it to end the
 * name; else owned by the caller.
 */
char *bucket_key_host(const char *tmpl, const char *key);
/* Sort objects by start, host, key. */
void bucket_sort(struct bucket_object *objs, size_t nr);
/*
 * The parts of [@from_ns, @to_ns] not covered by @objs (uploaded ones
 * only; any order), for each of @hosts (NULL-terminated; a host without
 * objects gets the whole window), or with @hosts NULL for each host of
 * @objs (the whole window, host NULL, when there is none).  Separations
 * shorter than @gap_min_ns (0: BUCKET_GAP_MIN_NS) do not count.  *ret_gaps
 * (by host as given, then time) is the caller's: free each host and it.
 */
int bucket_gaps(const struct bucket_object *objs, size_t nr, const char *const *hosts, uint64_t from_ns,
		uint64_t to_ns, uint64_t gap_min_ns, struct bucket_gap **ret_gaps, size_t *ret_nr);

#endif
