// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * `perfrecctl flamegraph` and `perfrecctl folded`: options, inputs and
 * outputs around flamegraph.c.  perf.data inputs go through profile_walk()
 * (profile.c), whose stacks flamegraph__add_pstack() aggregates; with
 * --folded the inputs are folded stacks and nothing here needs perf.data.
 *
 * With several events and no -e, flamegraph draws one graph per event, one
 * under the other in the same SVG (each zooms on its own; search covers
 * all and reports each graph's matched share); folded, whose format has no
 * place for an event name, asks for -e instead.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fsutil.h"
#include "flamegraph.h"
#include "summary.h"
#include "window.h"
#include "perfrecctl.h"

struct fg_args {
	const char *event;
	const char *out;
	const char *title;
	bool icicle, folded;
	int64_t pid;
	const char *comm, *cgroup;
	struct cgroup_select select; /* --container, --pod, --unit */
	uint64_t from, to, base_from, base_to;
	bool base_window;       /* --base-from/--base-to given */
	const char *base;
	const char *symfs;
	bool no_debuginfod, no_inline, no_demangle;
	bool period;            /* folded: each stack's summed period, not its sample count */
	char **inputs;
	int nr_inputs;
};

enum {
	OPT_FROM = 256, OPT_TO, OPT_PID, OPT_COMM, OPT_CGROUP, OPT_ICICLE, OPT_BASE,
	OPT_BASE_FROM, OPT_BASE_TO, OPT_FOLDED, OPT_TITLE, OPT_SYMFS, OPT_NO_DEBUGINFOD, OPT_NO_INLINE,
	OPT_CONTAINER, OPT_POD, OPT_UNIT, OPT_NO_DEMANGLE, OPT_PERIOD,
};

static const struct option long_opts[] = {
	{ "event", required_argument, NULL, 'e' },
	{ "output", required_argument, NULL, 'o' },
	{ "from", required_argument, NULL, OPT_FROM },
	{ "to", required_argument, NULL, OPT_TO },
	{ "pid", required_argument, NULL, OPT_PID },
	{ "comm", required_argument, NULL, OPT_COMM },
	{ "cgroup", required_argument, NULL, OPT_CGROUP },
	{ "container", required_argument, NULL, OPT_CONTAINER },
	{ "pod", required_argument, NULL, OPT_POD },
	{ "unit", required_argument, NULL, OPT_UNIT },
	{ "icicle", no_argument, NULL, OPT_ICICLE },
	{ "base", required_argument, NULL, OPT_BASE },
	{ "base-from", required_argument, NULL, OPT_BASE_FROM },
	{ "base-to", required_argument, NULL, OPT_BASE_TO },
	{ "folded", no_argument, NULL, OPT_FOLDED },
	{ "title", required_argument, NULL, OPT_TITLE },
	{ "symfs", required_argument, NULL, OPT_SYMFS },
	{ "no-debuginfod", no_argument, NULL, OPT_NO_DEBUGINFOD },
	{ "no-inline", no_argument, NULL, OPT_NO_INLINE },
	{ "no-demangle", no_argument, NULL, OPT_NO_DEMANGLE },
	{ "period", no_argument, NULL, OPT_PERIOD },
	{ NULL, 0, NULL, 0 },
};

static int parse_time(const char *opt, const char *v, uint64_t *ret)
{
	return window_parse_time("flamegraph", opt, v, ret);
}

/* 0, or EXIT_USAGE after saying what is wrong. */
static int parse_args(const char *cmd, bool diff_allowed, int argc, char **argv, struct fg_args *a)
{
	int c;

	*a = (struct fg_args){ .pid = -1 };
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":e:o:", long_opts, NULL)) != -1) {
		switch (c) {
		case 'e': a->event = optarg; break;
		case 'o': a->out = optarg; break;
		case OPT_FROM: if (parse_time("--from", optarg, &a->from) < 0) return EXIT_USAGE; break;
		case OPT_TO: if (parse_time("--to", optarg, &a->to) < 0) return EXIT_USAGE; break;
		case OPT_BASE_FROM:
			if (parse_time("--base-from", optarg, &a->base_from) < 0)
				return EXIT_USAGE;
			a->base_window = true;
			break;
		case OPT_BASE_TO:
			if (parse_time("--base-to", optarg, &a->base_to) < 0)
				return EXIT_USAGE;
			a->base_window = true;
			break;
		case OPT_PID: {
			char *end;
			long long v;

			errno = 0;
			v = strtoll(optarg, &end, 10);
			if (errno || *end || v < 0 || v > UINT32_MAX) {
				fprintf(stderr, "perfrecctl %s: --pid '%s': not a process id\n", cmd, optarg);
				return EXIT_USAGE;
			}
			a->pid = v;
			break;
		}
		case OPT_COMM: a->comm = optarg; break;
		case OPT_CGROUP: a->cgroup = optarg; break;
		case OPT_CONTAINER:
		case OPT_POD:
		case OPT_UNIT:
			if (!*optarg) {
				fprintf(stderr, "perfrecctl %s: --%s wants a value, not ''\n", cmd,
					c == OPT_CONTAINER ? "container" : c == OPT_POD ? "pod" : "unit");
				return EXIT_USAGE;
			}
			*(c == OPT_CONTAINER ? &a->select.container
			  : c == OPT_POD   ? &a->select.pod : &a->select.unit) = optarg;
			break;
		case OPT_ICICLE: a->icicle = true; break;
		case OPT_BASE: a->base = optarg; break;
		case OPT_FOLDED: a->folded = true; break;
		case OPT_TITLE: a->title = optarg; break;
		case OPT_SYMFS: a->symfs = optarg; break;
		case OPT_NO_DEBUGINFOD: a->no_debuginfod = true; break;
		case OPT_NO_INLINE: a->no_inline = true; break;
		case OPT_NO_DEMANGLE: a->no_demangle = true; break;
		case OPT_PERIOD: a->period = true; break;
		case ':':
			fprintf(stderr, "perfrecctl %s: %s needs a value\n", cmd, argv[optind - 1]);
			return perfrecctl_usage(cmd);
		default:
			fprintf(stderr, "perfrecctl %s: unknown option '%s'\n", cmd, argv[optind - 1]);
			return perfrecctl_usage(cmd);
		}
	}
	if (diff_allowed && a->period) {
		fprintf(stderr, "perfrecctl %s: --period is an option of folded (widths are periods already)\n", cmd);
		return perfrecctl_usage(cmd);
	}
	if (!diff_allowed && (a->base || a->base_window || a->icicle || a->folded || a->title)) {
		fprintf(stderr, "perfrecctl %s: --base, --base-from/--base-to, --icicle, --folded and --title "
			"are flamegraph options\n", cmd);
		return perfrecctl_usage(cmd);
	}
	if (a->folded && (a->pid >= 0 || a->comm || a->cgroup || cgroup_select_any(&a->select) || a->from || a->to ||
			  a->base_window || a->symfs || a->no_debuginfod || a->no_inline || a->no_demangle)) {
		fprintf(stderr, "perfrecctl %s: --pid, --comm, --cgroup, --container, --pod, --unit, the time windows "
			"and the symbol options apply to perf.data files; folded stacks (--folded) have none of that\n",
			cmd);
		return EXIT_USAGE;
	}
	if ((a->from && a->to && a->from >= a->to) || (a->base_from && a->base_to && a->base_from >= a->base_to)) {
		fprintf(stderr, "perfrecctl %s: a window's start must come before its end\n", cmd);
		return EXIT_USAGE;
	}
	a->inputs = argv + optind;
	a->nr_inputs = argc - optind;
	if (a->nr_inputs < 1) {
		fprintf(stderr, "perfrecctl %s: no input %s\n", cmd, a->folded ? "(folded stacks, - for stdin)" : "FILE or DIR");
		return perfrecctl_usage(cmd);
	}
	return 0;
}

struct paths {
	char **v;
	size_t nr;
};

static void paths_free(struct paths *p)
{
	for (size_t i = 0; i < p->nr; i++)
		free(p->v[i]);
	free(p->v);
	*p = (struct paths){ 0 };
}

static int paths_add(struct paths *p, const char *dir, const char *name)
{
	char **v = reallocarray(p->v, p->nr + 1, sizeof(*v));

	if (!v)
		return -ENOMEM;
	p->v = v;
	if (dir ? asprintf(&v[p->nr], "%s/%s", dir, name) < 0 : !(v[p->nr] = strdup(name)))
		return -ENOMEM;
	p->nr++;
	return 0;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * A directory stands for its published *.data files, oldest name first
 * (perfrecd's names sort by time).  TODO(lead): with a window, let the
 * time-window code pick only the files it needs.
 */
static int expand_input(struct paths *p, const char *in)
{
	struct stat st;
	DIR *d;
	struct dirent *de;
	size_t first = p->nr;
	int r = 0;

	if (stat(in, &st) < 0 || !S_ISDIR(st.st_mode))
		return paths_add(p, NULL, in);     /* profile_walk names the problem */
	d = opendir(in);
	if (!d) {
		r = -errno;
		fprintf(stderr, "perfrecctl: %s: %s\n", in, strerror(-r));
		return r;
	}
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);

		if (l > 5 && !strcmp(de->d_name + l - 5, ".data") && de->d_name[0] != '.') {
			r = paths_add(p, in, de->d_name);
			if (r < 0)
				break;
		}
	}
	closedir(d);
	if (!r && p->nr == first) {
		fprintf(stderr, "perfrecctl: %s: no .data files in this directory\n", in);
		return -ENOENT;
	}
	qsort(p->v + first, p->nr - first, sizeof(*p->v), cmp_name);
	return r;
}

/* The walk's samples into the graph, counted for the line said at the end. */
struct counted {
	struct flamegraph *fg;
	struct view_summary *sum;
};

static int add_counted(void *ctx, const struct pstack *s)
{
	struct counted *c = ctx;

	if (c->sum)
		view_summary_add(c->sum, s->wall_ns);
	return flamegraph__add_pstack(c->fg, s);
}

/* Aggregate @inputs (perf.data files or directories) within [from, to); @sum (may be NULL) counts them. */
static int load_files(struct flamegraph *fg, const struct fg_args *a, char *const *inputs, size_t nr,
		      uint64_t from, uint64_t to, struct view_summary *sum)
{
	struct counted cnt = { fg, sum };
	struct profile_opts o = {
		.event = a->event, .pid = a->pid, .comm = a->comm, .cgroup = a->cgroup, .select = a->select,
		.from_wall_ns = from, .to_wall_ns = to,
		.symfs = a->symfs, .no_debuginfod = a->no_debuginfod, .no_inline = a->no_inline,
		.no_demangle = a->no_demangle,
	};
	struct paths p = { 0 };
	int r = 0;

	for (size_t i = 0; i < nr && r >= 0; i++)
		r = expand_input(&p, inputs[i]);
	if (r >= 0)
		r = profile_walk((const char *const *)p.v, p.nr, &o, add_counted, &cnt);
	if (r == -ENOMEM || r == -EOVERFLOW)
		fprintf(stderr, "perfrecctl: aggregating stacks: %s\n",
			r == -EOVERFLOW ? "the periods add up past 2^64" : strerror(-r));
	paths_free(&p);
	return r;
}

static int load_folded(struct flamegraph *fg, const char *event, char *const *inputs, size_t nr)
{
	for (size_t i = 0; i < nr; i++) {
		bool std = !strcmp(inputs[i], "-");
		FILE *f = std ? stdin : fopen(inputs[i], "re");
		int r;

		if (!f) {
			r = -errno;
			fprintf(stderr, "perfrecctl: %s: %s\n", inputs[i], strerror(-r));
			return r;
		}
		r = flamegraph__read_folded(fg, event, f, std ? "<stdin>" : inputs[i]);
		if (!std)
			fclose(f);
		if (r < 0)
			return r;
	}
	return 0;
}

static void list_events(struct flamegraph *fg)
{
	for (size_t i = 0; i < flamegraph__nr_trees(fg); i++)
		fprintf(stderr, "%s%s", i ? ", " : "", flamegraph__tree(fg, i)->event);
	fputc('\n', stderr);
}

/*
 * Open @out for writing: a new 0600 file beside its final name (a graph
 * names every process's functions), never through a link planted there;
 * "-" or NULL: stdout.
 */
static FILE *open_out(const char *out, struct output_file *of)
{
	FILE *f;
	int r;

	*of = (struct output_file){ .fd = -1, .dirfd = -1 };
	if (!out || !strcmp(out, "-"))
		return stdout;
	r = output_file_open(of, out, OUTPUT_REPLACE | OUTPUT_STREAM, 0600);
	if (r < 0) {
		fprintf(stderr, "perfrecctl: %s: %s\n", out, strerror(-r));
		return NULL;
	}
	f = fdopen(of->fd, "w");
	if (!f) {
		fprintf(stderr, "perfrecctl: %s: %s\n", out, strerror(errno));
		close(of->fd);
		output_file_discard(of);
	}
	return f;
}

/* Close and put in place; on @err (or a failed close) leave nothing behind. */
static int close_out(FILE *f, const char *out, struct output_file *of, int err)
{
	if (f != stdout) {
		if (fclose(f) != 0 && !err)
			err = -EIO;
		if (!err)
			err = output_file_publish(of);
		if (err)
			fprintf(stderr, "perfrecctl: writing %s: %s\n", out, strerror(-err));
		output_file_discard(of);
	} else if ((fflush(f) || ferror(f)) && !err) {
		err = -EIO;
		fprintf(stderr, "perfrecctl: writing stdout: %s\n", strerror(-err));
	}
	return err;
}

/*
 * What was written, on stderr: the events drawn and the samples they
 * hold (from folded stacks: their counts, without times).
 */
static void say_wrote(const char *cmd, const char *out, struct fg_tree *const *trees, size_t nr, bool folded,
		      const struct view_summary *walked)
{
	struct view_summary sum = *walked;
	char what[256] = "";
	size_t len = 0;

	if (folded)
		sum.samples = 0;
	for (size_t i = 0; i < nr && len < sizeof(what); i++) {
		len += (size_t)snprintf(what + len, sizeof(what) - len, "%s%s", i ? ", " : "", trees[i]->event);
		if (folded)
			sum.samples += trees[i]->root.samples;
	}
	view_summary_print(cmd, out, what, &sum);
}

/* "2026-11-23T10:00:00.000Z", or "start"/"end" for an open side. */
static void put_time(char *buf, size_t len, uint64_t ns, const char *open)
{
	time_t t = ns / 1000000000;
	struct tm tm;

	if (!ns || !gmtime_r(&t, &tm)) {
		snprintf(buf, len, "%s", open);
		return;
	}
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03uZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (unsigned)(ns % 1000000000 / 1000000));
}

/* What the graph shows, under its title: the windows compared (NULL: no window given). */
static const char *subtitle(const struct fg_args *a, char *buf, size_t len)
{
	char f[80], t[80], bf[80], bt[80];

	if (!a->from && !a->to && !a->base_window)
		return NULL;
	put_time(f, sizeof(f), a->from, "start");
	put_time(t, sizeof(t), a->to, "end");
	put_time(bf, sizeof(bf), a->base_from, "start");
	put_time(bt, sizeof(bt), a->base_to, "end");
	if (a->base_window)
		snprintf(buf, len, "%s to %s against %s to %s", f, t, bf, bt);
	else
		snprintf(buf, len, "%s to %s", f, t);
	return buf;
}

int cmd_flamegraph(int argc, char **argv)
{
	struct flamegraph *fg = NULL, *bfg = NULL;
	struct fg_tree **trees = NULL;
	const struct fg_tree **bases = NULL;
	struct fg_args a;
	struct view_summary sum = { 0 };
	size_t nr = 0;
	struct output_file of;
	FILE *f;
	int r, ret = EXIT_BAD;

	r = parse_args("flamegraph", true, argc, argv, &a);
	if (r)
		return r;
	fg = flamegraph__new();
	if (a.base || a.base_window)
		bfg = flamegraph__new();
	if (!fg || ((a.base || a.base_window) && !bfg)) {
		fprintf(stderr, "perfrecctl flamegraph: out of memory\n");
		goto out;
	}
	if (a.folded)
		r = load_folded(fg, a.event, a.inputs, a.nr_inputs);
	else
		r = load_files(fg, &a, a.inputs, a.nr_inputs, a.from, a.to, &sum);
	if (r < 0)
		goto out;
	if (bfg) {
		/* --base-from/--base-to alone: an earlier window of the same files. */
		char *const *bin = a.base ? (char *const *)&a.base : a.inputs;
		size_t bnr = a.base ? 1 : a.nr_inputs;

		r = a.folded ? load_folded(bfg, a.event, bin, bnr)
			     : load_files(bfg, &a, bin, bnr, a.base_from, a.base_to, NULL);
		if (r < 0)
			goto out;
	}
	if (a.event) {
		struct fg_tree *t = flamegraph__find_tree(fg, a.event);

		if (!t || !t->root.samples) {
			fprintf(stderr, "perfrecctl flamegraph: no samples of event %s%s", a.event,
				flamegraph__nr_trees(fg) ? " (there are: " : "\n");
			if (flamegraph__nr_trees(fg)) {
				for (size_t i = 0; i < flamegraph__nr_trees(fg); i++)
					fprintf(stderr, "%s%s", i ? ", " : "", flamegraph__tree(fg, i)->event);
				fputs(")\n", stderr);
			}
			goto out;
		}
		nr = 1;
	} else {
		nr = flamegraph__nr_trees(fg);
		if (!nr) {
			fprintf(stderr, "perfrecctl flamegraph: no samples in the input%s\n",
				a.from || a.to ? " within the window" : "");
			goto out;
		}
	}
	trees = calloc(nr, sizeof(*trees));
	bases = calloc(nr, sizeof(*bases));
	if (!trees || !bases) {
		fprintf(stderr, "perfrecctl flamegraph: out of memory\n");
		goto out;
	}
	for (size_t i = 0; i < nr; i++) {
		trees[i] = a.event ? flamegraph__find_tree(fg, a.event) : flamegraph__tree(fg, i);
		if (!bfg)
			continue;
		bases[i] = flamegraph__find_tree(bfg, trees[i]->event);
		if (!bases[i] || !bases[i]->root.samples) {
			fprintf(stderr, "perfrecctl flamegraph: the base has no samples of %s (it has: ",
				trees[i]->event);
			list_events(bfg);
			goto out;
		}
		flamegraph__diff(trees[i], bases[i]);
	}
	f = open_out(a.out, &of);
	if (!f)
		goto out;
	{
		char sub[400];
		const struct fg_svg_opts o = { .icicle = a.icicle, .title = a.title,
					       .subtitle = subtitle(&a, sub, sizeof(sub)) };

		r = flamegraph__write_svg(trees, bfg ? bases : NULL, nr, &o, f);
	}
	if (close_out(f, a.out, &of, r) == 0) {
		say_wrote("flamegraph", a.out, trees, nr, a.folded, &sum);
		ret = 0;
	}
out:
	free(trees);
	free(bases);
	flamegraph__free(fg);
	flamegraph__free(bfg);
	return ret;
}

int cmd_folded(int argc, char **argv)
{
	struct flamegraph *fg;
	struct fg_tree *t;
	struct fg_args a;
	struct view_summary sum = { 0 };
	struct output_file of;
	FILE *f;
	int r, ret = EXIT_BAD;

	r = parse_args("folded", false, argc, argv, &a);
	if (r)
		return r;
	fg = flamegraph__new();
	if (!fg) {
		fprintf(stderr, "perfrecctl folded: out of memory\n");
		return EXIT_BAD;
	}
	r = load_files(fg, &a, a.inputs, a.nr_inputs, a.from, a.to, &sum);
	if (r < 0)
		goto out;
	if (!a.event && flamegraph__nr_trees(fg) > 1) {
		fprintf(stderr, "perfrecctl folded: the input has several events; choose one with -e: ");
		list_events(fg);
		ret = EXIT_USAGE;
		goto out;
	}
	t = a.event ? flamegraph__find_tree(fg, a.event) : flamegraph__tree(fg, 0);
	if (!t) {
		fprintf(stderr, "perfrecctl folded: no samples%s%s\n", a.event ? " of event " : "", a.event ? a.event : "");
		goto out;
	}
	f = open_out(a.out, &of);
	if (!f)
		goto out;
	r = a.period ? flamegraph__write_folded_periods(t, f) : flamegraph__write_folded(t, f);
	if (close_out(f, a.out, &of, r) == 0) {
		say_wrote("folded", a.out, &t, 1, false, &sum);
		ret = 0;
	}
out:
	flamegraph__free(fg);
	return ret;
}
