// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * perfrecctl's control-socket commands: ping, status, rotate, snapshot,
 * pause, resume, set-freq and stream talk varlink to a running perfrecd
 * (daemon/io.perfrec.varlink).  Human output by default, the reply's JSON
 * with --json.  Exit codes (perfrecctl.1): 0 done, 1 the daemon refused or
 * failed the request, 2 usage, 3 no daemon at the socket, 4 permission
 * denied.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <json-c/json.h>
#include <linux/perf_event.h>
#include <perfrec/format.h>

#include "cgroup-summary.h"
#include "fsutil.h"
#include "perfrecctl.h"
#include "window.h"

#define EXIT_NO_DAEMON 3
#define EXIT_DENIED 4
#define DEFAULT_SOCKET "/run/perfrecd/io.perfrec"

static const char *socket_path;
static bool json_out;
/* Where replies are shown: stderr when stdout carries perf data (snapshot -). */
static FILE *msg_out;

int perfrecctl_global_opts(int *argc, char ***argv)
{
	while (*argc > 1) {
		char **a = *argv;

		if (!strcmp(a[1], "--json")) {
			json_out = true;
		} else if (!strcmp(a[1], "--socket") && *argc > 2) {
			socket_path = a[2];
			a[2] = a[0];
			(*argv)++;
			(*argc)--;
		} else if (!strncmp(a[1], "--socket=", 9)) {
			socket_path = a[1] + 9;
		} else {
			break;
		}
		a[1] = a[0];
		(*argv)++;
		(*argc)--;
	}
	return 0;
}

static const char *sock(void)
{
	if (socket_path)
		return socket_path;
	return getenv("PERFRECD_SOCKET") ? getenv("PERFRECD_SOCKET") : DEFAULT_SOCKET;
}

/* A connection to the daemon's socket, or -errno; prints nothing. */
static int connect_quiet(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *path = sock();
	int fd, e;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

static int connect_daemon(void)
{
	const char *path = sock();
	int fd = connect_quiet();

	if (fd == -ENAMETOOLONG) {
		fprintf(stderr, "perfrecctl: socket path too long: %s\n", path);
		return -EXIT_USAGE;
	}
	if (fd < 0) {
		int e = -fd;

		if (e == ENOENT || e == ECONNREFUSED)
			fprintf(stderr, "perfrecctl: perfrecd is not running (no socket at %s)\n", path);
		else if (e == EACCES || e == EPERM)
			fprintf(stderr, "perfrecctl: permission denied: cannot connect to %s (root or the control group only)\n", path);
		else
			fprintf(stderr, "perfrecctl: cannot connect to %s: %s\n", path, strerror(e));
		return e == EACCES || e == EPERM ? -EXIT_DENIED : -EXIT_NO_DAEMON;
	}
	return fd;
}

/* Send one call, with @pass_fd (>= 0) alongside it via SCM_RIGHTS. */
static int send_call(int fd, const char *method, struct json_object *params, int pass_fd)
{
	struct json_object *o = json_object_new_object();
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	struct msghdr mh = { 0 };
	struct iovec iov;
	const char *s;
	size_t len, off = 0;
	int r = 0;

	json_object_object_add(o, "method", json_object_new_string(method));
	if (params)
		json_object_object_add(o, "parameters", params);
	s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
	len = strlen(s) + 1;
	while (off < len) {
		ssize_t n;

		iov.iov_base = (char *)s + off;
		iov.iov_len = len - off;
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		if (pass_fd >= 0 && off == 0) {
			struct cmsghdr *cm;

			mh.msg_control = cbuf;
			mh.msg_controllen = sizeof(cbuf);
			cm = CMSG_FIRSTHDR(&mh);
			cm->cmsg_level = SOL_SOCKET;
			cm->cmsg_type = SCM_RIGHTS;
			cm->cmsg_len = CMSG_LEN(sizeof(int));
			memcpy(CMSG_DATA(cm), &pass_fd, sizeof(int));
		} else {
			mh.msg_control = NULL;
			mh.msg_controllen = 0;
		}
		n = sendmsg(fd, &mh, MSG_NOSIGNAL);
		if (n < 0) {
			r = -errno;
			break;
		}
		off += (size_t)n;
	}
	json_object_put(o);
	return r;
}

/* Read one NUL-terminated reply; any bytes after it stay in *ret_rest. */
static struct json_object *read_reply(int fd, char **ret_rest, size_t *ret_rest_len)
{
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap), *nul = NULL;
	struct json_object *o = NULL;

	while (buf && !nul) {
		ssize_t n;

		if (len == cap) {
			char *b = cap < (16U << 20) ? realloc(buf, cap * 2) : NULL;

			if (!b)
				break;
			buf = b;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - len);
		if (n <= 0)
			break;
		len += (size_t)n;
		nul = memchr(buf, 0, len);
	}
	if (nul) {
		o = json_tokener_parse(buf);
		if (ret_rest) {
			*ret_rest_len = len - (size_t)(nul + 1 - buf);
			*ret_rest = malloc(*ret_rest_len + 1);
			if (*ret_rest)
				memcpy(*ret_rest, nul + 1, *ret_rest_len);
		}
	}
	if (!o)
		fprintf(stderr, "perfrecctl: perfrecd at %s closed the connection without a valid reply\n", sock());
	free(buf);
	return o;
}

static const char *gets_(struct json_object *o, const char *k);

/* The reply's error as an exit code, with a message; 0 if none. */
static int check_error(struct json_object *reply)
{
	struct json_object *e, *p;
	const char *err;

	if (!json_object_object_get_ex(reply, "error", &e))
		return 0;
	err = json_object_get_string(e);
	if (json_out)
		fprintf(msg_out ? msg_out : stdout, "%s\n", json_object_to_json_string_ext(reply, JSON_C_TO_STRING_PRETTY));
	if (!strcmp(err, "io.perfrec.PermissionDenied")) {
		fprintf(stderr, "perfrecctl: permission denied: only root and members of perfrecd's control group may do this\n");
		return EXIT_DENIED;
	}
	if (!json_object_object_get_ex(reply, "parameters", &p))
		p = NULL;
	/* A reason is for people: say it, with the error's name for scripts. */
	if (p && gets_(p, "reason"))
		fprintf(stderr, "perfrecctl: perfrecd refused: %s (%s)\n", gets_(p, "reason"), err);
	else
		fprintf(stderr, "perfrecctl: perfrecd refused: %s%s%s\n", err, p && json_object_object_length(p) ? " " : "",
			p && json_object_object_length(p) ? json_object_to_json_string_ext(p, JSON_C_TO_STRING_PLAIN) : "");
	return EXIT_BAD;
}

/* One call; on success *ret_params gets the reply's parameters (owned). */
static int do_call(const char *method, struct json_object *params, int pass_fd, struct json_object **ret_params)
{
	struct json_object *reply, *p;
	int fd = connect_daemon(), r;

	if (fd < 0) {
		json_object_put(params);
		return -fd;
	}
	if (send_call(fd, method, params, pass_fd) < 0) {
		fprintf(stderr, "perfrecctl: cannot send to %s: %m\n", sock());
		close(fd);
		return EXIT_NO_DAEMON;
	}
	reply = read_reply(fd, NULL, NULL);
	close(fd);
	if (!reply)
		return EXIT_NO_DAEMON;
	r = check_error(reply);
	if (r == 0) {
		if (!json_object_object_get_ex(reply, "parameters", &p))
			p = NULL;
		if (json_out)
			fprintf(msg_out ? msg_out : stdout, "%s\n",
				json_object_to_json_string_ext(p ? p : reply, JSON_C_TO_STRING_PRETTY));
		*ret_params = json_object_get(p);
	}
	json_object_put(reply);
	return r;
}

static int64_t geti(struct json_object *o, const char *k)
{
	struct json_object *v;

	return json_object_object_get_ex(o, k, &v) ? json_object_get_int64(v) : 0;
}

static double getd(struct json_object *o, const char *k)
{
	struct json_object *v;

	return json_object_object_get_ex(o, k, &v) ? json_object_get_double(v) : 0;
}

static const char *gets_(struct json_object *o, const char *k)
{
	struct json_object *v;

	return json_object_object_get_ex(o, k, &v) && v ? json_object_get_string(v) : NULL;
}

static int no_args(int argc, char **argv)
{
	perfrecctl_global_opts(&argc, &argv);
	if (argc != 1)
		return perfrecctl_usage(argv[0]);
	return 0;
}

/* The newest published manifest ("*.data.json") in @dir, or NULL. */
static char *newest_manifest(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	struct timespec best = { 0 };
	char *ret = NULL;

	if (!d)
		return NULL;
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);
		struct stat st;

		if (n < 10 || strcmp(de->d_name + n - 10, ".data.json") ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode))
			continue;
		if (ret && (st.st_mtim.tv_sec < best.tv_sec ||
			    (st.st_mtim.tv_sec == best.tv_sec && st.st_mtim.tv_nsec <= best.tv_nsec)))
			continue;
		free(ret);
		if (asprintf(&ret, "%s/%s", dir, de->d_name) < 0)
			ret = NULL;
		best = st.st_mtim;
	}
	closedir(d);
	return ret;
}

/*
 * The busiest containers and units of the last published file, from its
 * manifest beside the file being written: the daemon counts cgroups per
 * file, not live.  Nothing when the directory cannot be read (status is
 * open to users who cannot read the recordings).
 */
static void print_busiest(const char *current_file)
{
	struct cgroup_summary *s = NULL;
	char *dir, *slash, *m = NULL, *heading;

	if (!current_file || !(dir = strdup(current_file)))
		return;
	slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	m = newest_manifest(slash ? (*dir ? dir : "/") : ".");
	if (m && cgroup_summary_new(&s) == 0 && cgroup_summary_add_manifest(s, m) == 0 &&
	    asprintf(&heading, "in %s, the last published file:", strrchr(m, '/') + 1) >= 0) {
		cgroup_summary_print(s, stdout, heading, "  ", 5);
		free(heading);
	}
	cgroup_summary_free(s);
	free(m);
	free(dir);
}

/* What the JIT sink did and left out (its "jit" object), when it followed any process. */
static void print_jit(struct json_object *p)
{
	struct json_object *j;

	if (!json_object_object_get_ex(p, "jit", &j) || !geti(j, "processes"))
		return;
	printf("JIT: %" PRId64 " processes, %" PRId64 " mappings named, %" PRId64 " images (%" PRId64
	       " symbols), %" PRId64 " read at exit\n", geti(j, "processes"), geti(j, "mappings_named"),
	       geti(j, "images"), geti(j, "image_symbols"), geti(j, "maps_at_exit"));
	printf("JIT left out: %" PRId64 " maps refused, %" PRId64 " mappings without a map, %" PRId64
	       " skipped, %" PRId64 " symbols dropped, %" PRId64 " bad lines, %" PRId64 " reads over memory\n",
	       geti(j, "maps_refused"), geti(j, "no_map"), geti(j, "skipped"), geti(j, "symbols_dropped"),
	       geti(j, "bad_lines"), geti(j, "reads_over_memory"));
}

static void print_status(struct json_object *p)
{
	struct json_object *a;

	printf("perfrecd pid %" PRId64 ", up %.0f s, %s%s\n", geti(p, "pid"), getd(p, "uptime_sec"),
	       gets_(p, "mode"), json_object_get_boolean(json_object_object_get(p, "paused")) ? ", PAUSED" : "");
	/* Counted since the events were opened: at start, or at a reload that reopened them. */
	if (getd(p, "counted_sec") + 1 < getd(p, "uptime_sec"))
		printf("since the events were reopened %.0f s ago:\n", getd(p, "counted_sec"));
	printf("samples %" PRId64 " (%.1f/s), lost %" PRId64 ", bytes %" PRId64 " (%.0f/s)\n",
	       geti(p, "samples"), getd(p, "samples_per_sec"), geti(p, "lost"), geti(p, "bytes"),
	       getd(p, "bytes_per_sec"));
	if (json_object_object_get_ex(p, "events", &a))
		for (size_t i = 0; i < json_object_array_length(a); i++) {
			struct json_object *e = json_object_array_get_idx(a, i);

			if (geti(e, "frequency"))
				printf("event %s at %" PRId64 " Hz\n", gets_(e, "name"), geti(e, "frequency"));
			else
				printf("event %s every %" PRId64 "\n", gets_(e, "name"), geti(e, "period"));
		}
	if (geti(p, "frequency_capped_from"))
		printf("frequency=%" PRId64 " Hz capped at max-frequency=%" PRId64 " Hz\n",
		       geti(p, "frequency_capped_from"), geti(p, "max_frequency"));
	if (json_object_object_get_ex(p, "cpus", &a))
		for (size_t i = 0; i < json_object_array_length(a); i++) {
			struct json_object *c = json_object_array_get_idx(a, i);

			printf("  cpu %-4" PRId64 " samples %-10" PRId64 " lost %-8" PRId64 " bytes %" PRId64 "\n",
			       geti(c, "cpu"), geti(c, "samples"), geti(c, "lost"), geti(c, "bytes"));
		}
	printf("files published %" PRId64 ", current %s\n", geti(p, "files_published"),
	       gets_(p, "current_file") ? gets_(p, "current_file") : "(none)");
	printf("own CPU time %.2f s, RSS %.1f MiB, %" PRId64 " subscriber(s)\n", getd(p, "cpu_time_sec"),
	       (double)geti(p, "rss_bytes") / (1 << 20), geti(p, "subscribers"));
	print_jit(p);
	print_busiest(gets_(p, "current_file"));
}

/* ping, status, rotate, pause, resume: no arguments. */
int cmd_ctl_simple(int argc, char **argv)
{
	static const struct { const char *cmd, *method, *done; } map[] = {
		{ "ping", "io.perfrec.Ping", "pong" },
		{ "status", "io.perfrec.Status", NULL },
		{ "rotate", "io.perfrec.Rotate", NULL },
		{ "pause", "io.perfrec.Pause", "sampling paused" },
		{ "resume", "io.perfrec.Resume", "sampling resumed" },
	};
	struct json_object *p = NULL;
	int r = no_args(argc, argv);

	if (r)
		return r;
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		if (strcmp(map[i].cmd, argv[0]))
			continue;
		r = do_call(map[i].method, NULL, -1, &p);
		if (r == 0 && !json_out) {
			if (map[i].done)
				puts(map[i].done);
			else if (!strcmp(argv[0], "status"))
				print_status(p);
			else
				printf("published %s\n", gets_(p, "file"));
		}
		json_object_put(p);
		return r;
	}
	return perfrecctl_usage(argv[0]);
}

int cmd_ctl_set_freq(int argc, char **argv)
{
	struct json_object *params, *p = NULL;
	char *end;
	long long hz;
	int r;

	perfrecctl_global_opts(&argc, &argv);
	if (argc != 2)
		return perfrecctl_usage(argv[0]);
	errno = 0;
	hz = strtoll(argv[1], &end, 10);
	if (errno || *end || hz <= 0) {
		fprintf(stderr, "perfrecctl: set-freq: '%s' is not a frequency in Hz\n", argv[1]);
		return EXIT_USAGE;
	}
	params = json_object_new_object();
	json_object_object_add(params, "frequency", json_object_new_int64(hz));
	r = do_call("io.perfrec.SetFrequency", params, -1, &p);
	if (r == 0 && !json_out)
		printf("sampling at %" PRId64 " Hz\n", geti(p, "frequency"));
	json_object_put(p);
	return r;
}

int cmd_ctl_snapshot(int argc, char **argv)
{
	struct output_file of = { .fd = -1, .dirfd = -1 };
	struct json_object *p = NULL;
	const char *target = NULL;
	bool force = false, to_stdout;
	int fd, r;

	perfrecctl_global_opts(&argc, &argv);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--force") || !strcmp(argv[i], "-f"))
			force = true;
		else if (!target && (argv[i][0] != '-' || !strcmp(argv[i], "-")))
			target = argv[i];
		else
			return perfrecctl_usage(argv[0]);
	}
	if (!target)
		return perfrecctl_usage(argv[0]);
	to_stdout = !strcmp(target, "-");
	if (to_stdout) {
		/* perf's "-": pipe mode into a pipe (| perf report -i -), a
		 * whole file when stdout is one; never a terminal. */
		if (isatty(STDOUT_FILENO)) {
			fprintf(stderr, "perfrecctl: snapshot - writes binary perf data to stdout; "
				"pipe it (perfrecctl snapshot - | perf report -i -) or redirect it\n");
			return EXIT_USAGE;
		}
		fd = STDOUT_FILENO;
		/* stdout carries the data: what we say goes to stderr. */
		msg_out = stderr;
	} else {
		/*
		 * Opened by us, with our permissions: the daemon writes only where
		 * we may.  A file is made new beside the target, 0600 as perf's
		 * perf.data, never through a link planted at the name, and renamed
		 * over it once the snapshot is whole: a failed one leaves what was
		 * there.  An existing FIFO or device of ours (/dev/stdout) is
		 * written as it is, write-only: opened for reading too, a pipe
		 * would keep a reader (the daemon itself, holding our fd) after
		 * its real reader has gone.
		 */
		r = output_file_open(&of, target, OUTPUT_STREAM | (force ? OUTPUT_REPLACE : 0), 0600);
		if (r == -EEXIST) {
			/* An existing file is perf data someone kept, as perf's -o is not. */
			fprintf(stderr, "perfrecctl: snapshot: %s exists; not overwritten without --force\n", target);
			return EXIT_BAD;
		}
		if (r < 0) {
			fprintf(stderr, "perfrecctl: cannot open %s: %s\n", target, strerror(-r));
			return EXIT_BAD;
		}
		fd = of.fd;
	}
	r = do_call("io.perfrec.Snapshot", NULL, fd, &p);
	if (!to_stdout)
		close(fd);
	if (r == 0 && !to_stdout) {
		r = output_file_publish(&of);
		if (r < 0) {
			fprintf(stderr, "perfrecctl: cannot put the snapshot at %s: %s\n", target,
				r == -EEXIST ? "a file appeared there meanwhile; not overwritten without --force"
					     : strerror(-r));
			r = EXIT_BAD;
		}
	}
	if (r == 0 && !json_out)
		fprintf(to_stdout ? stderr : stdout, "snapshot of %" PRId64 " samples written to %s\n", geti(p, "samples"),
			to_stdout ? "stdout" : target);
	output_file_discard(&of);
	json_object_put(p);
	return r;
}

/*
 * The stream after Subscribe's reply: a perf pipe-mode header, then records,
 * then -- when perfrecd ends it -- an end marker (a record header of size 0)
 * and a varlink message saying why.  Only whole records reach stdout, so
 * whatever happens to the connection, the output ends at a record boundary
 * and perf reads all of it.
 */
struct stream_in {
	char buf[256 * 1024];     /* a record is at most 64 KiB */
	size_t len, pos;          /* bytes held; the first not yet known whole */
	bool started;             /* the pipe header went out */
	bool ended;               /* the end marker and its message arrived */
	struct json_object *end;  /* that message */
};

/* Find the whole records (and the end) in what was read; false on garbage. */
static bool stream_parse(struct stream_in *s)
{
	while (!s->ended) {
		struct perf_event_header h;
		size_t left = s->len - s->pos, unit;
		char *nul;

		if (!s->started && left >= 8 && memcmp(s->buf + s->pos, "\0\0\0\0\0\0\0\0", 8)) {
			if (left < 16)
				return true;
			s->pos += 16; /* the pipe header: magic and its size */
			s->started = true;
			continue;
		}
		if (left < sizeof(h))
			return true;
		memcpy(&h, s->buf + s->pos, sizeof(h));
		if (h.size == 0 && h.type == 0) {
			nul = memchr(s->buf + s->pos + sizeof(h), 0, left - sizeof(h));
			if (!nul)
				return left < sizeof(s->buf) / 2;
			s->end = json_tokener_parse(s->buf + s->pos + sizeof(h));
			s->ended = true;
			return s->end != NULL;
		}
		if (!s->started || h.size < sizeof(h))
			return false;
		unit = h.size;
		/* HEADER_TRACING_DATA: its data, padded to 8 bytes, follows the record. */
		if (h.type == PERFREC_RECORD_HEADER_TRACING_DATA && h.size >= sizeof(h) + 8) {
			uint32_t len;

			if (left < sizeof(h) + 4)
				return true;
			memcpy(&len, s->buf + s->pos + sizeof(h), 4);
			unit += ((size_t)len + 7) & ~(size_t)7;
			if (unit > sizeof(s->buf))
				return false;
		}
		if (left < unit)
			return true;
		s->pos += unit;
	}
	return true;
}

static volatile sig_atomic_t stream_stop;

static void on_stop(int sig)
{
	(void)sig;
	stream_stop = 1;
}

/*
 * Copies whole records from the daemon's @fd to stdout until perfrecd's
 * end, a stop (SIGINT, SIGTERM) or a fault; sets *bad when perfrecd sent
 * something that is not a perf stream.  Returns 0 or why stdout failed.
 */
static int stream_copy(int fd, struct stream_in *s, bool *bad)
{
	int out_err = 0;

	while (!*bad && !s->ended && !stream_stop) {
		ssize_t n;

		*bad = !stream_parse(s);
		if (*bad || s->ended)
			break;
		/* Whole records out; the start of the next one stays. */
		if (s->pos) {
			out_err = write_all(STDOUT_FILENO, s->buf, s->pos);
			if (out_err < 0)
				break;
			memmove(s->buf, s->buf + s->pos, s->len - s->pos);
			s->len -= s->pos;
			s->pos = 0;
		}
		n = read(fd, s->buf + s->len, sizeof(s->buf) - s->len);
		if (n < 0 && errno == EINTR)
			continue; /* stream_stop is looked at first */
		if (n <= 0)
			break;
		s->len += (size_t)n;
	}
	return out_err;
}

/*
 * How the stream ended, said on stderr, as the exit status: @r is what the
 * reply to Subscribe gave, @bad and @out_err what stream_copy() found.
 */
static int stream_verdict(int r, const struct stream_in *s, bool bad, int out_err)
{
	struct json_object *p;
	const char *why;

	if (r) {
		/* check_error() said it */
	} else if (stream_stop && !s->ended && out_err == 0) {
		r = 0; /* interrupted: the output ends with the last whole record */
	} else if (out_err == -EPIPE) {
		r = 0; /* the reader went away: done, as perf record -o - | head */
	} else if (out_err < 0) {
		fprintf(stderr, "perfrecctl: cannot write the stream to stdout: %s\n", strerror(-out_err));
		r = EXIT_BAD;
	} else if (bad) {
		fprintf(stderr, "perfrecctl: perfrecd at %s sent something that is not a perf stream; stopped\n", sock());
		r = EXIT_BAD;
	} else if (!s->ended) {
		fprintf(stderr, "perfrecctl: the stream from %s ended without perfrecd's end%s\n", sock(),
			s->len ? "; an unfinished record was left out" : "");
		r = EXIT_BAD;
	} else if (json_object_object_get_ex(s->end, "error", NULL)) {
		json_object_object_get_ex(s->end, "parameters", &p);
		why = p ? gets_(p, "reason") : NULL;
		fprintf(stderr, "perfrecctl: perfrecd cut the stream short: %s\n", why ? why : "no reason given");
		r = EXIT_BAD;
	} else {
		json_object_object_get_ex(s->end, "parameters", &p);
		why = p ? gets_(p, "reason") : NULL;
		fprintf(stderr, "perfrecctl: the stream ended: %s\n", why ? why : "perfrecd closed it");
	}
	return r;
}

int cmd_ctl_stream(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_stop }; /* no SA_RESTART: read() returns */
	struct json_object *reply;
	struct stream_in *s;
	char *rest = NULL;
	size_t rest_len = 0;
	bool bad = false;
	int fd, r, out_err = 0;

	perfrecctl_global_opts(&argc, &argv);
	if (argc != 1)
		return perfrecctl_usage(argv[0]);
	if (isatty(STDOUT_FILENO)) {
		fprintf(stderr, "perfrecctl: stream writes binary perf data; pipe it (perfrecctl stream | perf script -i -)\n");
		return EXIT_USAGE;
	}
	signal(SIGPIPE, SIG_IGN);
	/* Interrupted, we stop between records: what was written stays readable. */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	s = calloc(1, sizeof(*s));
	if (!s) {
		fprintf(stderr, "perfrecctl: out of memory\n");
		return EXIT_BAD;
	}
	fd = connect_daemon();
	if (fd < 0) {
		free(s);
		return -fd;
	}
	if (send_call(fd, "io.perfrec.Subscribe", NULL, -1) < 0) {
		fprintf(stderr, "perfrecctl: cannot send to %s: %m\n", sock());
		close(fd);
		free(s);
		return EXIT_NO_DAEMON;
	}
	reply = read_reply(fd, &rest, &rest_len);
	if (!reply) {
		close(fd);
		free(s);
		return EXIT_NO_DAEMON;
	}
	r = check_error(reply);
	json_object_put(reply);
	if (rest && rest_len <= sizeof(s->buf)) {
		memcpy(s->buf, rest, rest_len);
		s->len = rest_len;
	} else if (rest_len) {
		bad = true;
	}
	free(rest);
	if (r == 0)
		out_err = stream_copy(fd, s, &bad);
	close(fd);
	if (r == 0 && s->ended && s->pos && out_err == 0)
		out_err = write_all(STDOUT_FILENO, s->buf, s->pos);
	r = stream_verdict(r, s, bad, out_err);
	json_object_put(s->end);
	free(s);
	return r;
}

const char *perfrecctl_socket_path(void)
{
	return sock();
}

int perfrecctl_snapshot_into(int fd, uint64_t *ret_samples)
{
	struct json_object *p = NULL;
	FILE *saved = msg_out;
	bool saved_json = json_out;
	int r;

	/* The caller's stdout may be its own output: say nothing there. */
	msg_out = stderr;
	json_out = false;
	r = do_call("io.perfrec.Snapshot", NULL, fd, &p);
	msg_out = saved;
	json_out = saved_json;
	if (r == 0 && ret_samples)
		*ret_samples = (uint64_t)geti(p, "samples");
	json_object_put(p);
	return r;
}

bool perfrecctl_json_output(void)
{
	return json_out;
}

/*
 * The running daemon's output directory, from its Status, or NULL with
 * @why saying what was tried.  Bounded: a daemon that does not answer
 * within 5 s counts as none.
 */
static char *daemon_directory(char *why, size_t whylen)
{
	struct timeval tv = { .tv_sec = 5 };
	struct json_object *reply = NULL, *p, *d;
	char *dir = NULL;
	int fd = connect_quiet();

	if (fd < 0) {
		snprintf(why, whylen, "no perfrecd answers on %s (%s)", sock(), strerror(-fd));
		return NULL;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (send_call(fd, "io.perfrec.Status", NULL, -1) == 0)
		reply = read_reply(fd, NULL, NULL);
	close(fd);
	if (reply && json_object_object_get_ex(reply, "parameters", &p) && json_object_object_get_ex(p, "directory", &d) &&
	    json_object_is_type(d, json_type_string))
		dir = strdup(json_object_get_string(d));
	else
		snprintf(why, whylen, "perfrecd on %s did not say where it writes (%s)", sock(),
			 reply ? "it writes to a pipe, or is older than this perfrecctl" : "no answer");
	json_object_put(reply);
	return dir;
}

char *perfrecctl_recordings_dir(const char *cmd)
{
	char why[PATH_MAX + 128];
	char *dir = daemon_directory(why, sizeof(why));

	if (dir)
		return dir;
	dir = window_default_dir();
	if (dir)
		fprintf(stderr, "perfrecctl %s: %s; reading %s (the [output] directory of %s, else the default)\n", cmd,
			why, dir, window_default_config());
	return dir;
}
