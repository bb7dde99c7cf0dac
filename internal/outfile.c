// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The one way an output of the recording begins (see outfile.h).  Before
 * this module the four outputs each had their copy and the copies drifted:
 * only rotated files declared the off-CPU attr, live streams never got the
 * BPF programs, and each tolerated a different list of errors.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include <perfrec/bpfmeta.h>
#include <perfrec/unwind.h>

#include "outfile.h"

/* What is worth saying goes to the owner's hook (lib/ prints nothing). */
__attribute__((format(printf, 3, 4)))
static void say(const struct outfile_source *src, int level, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!src->hooks || !src->hooks->say)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	src->hooks->say(src->hooks_ctx, level, msg);
}

struct perfrec_synth_opts outfile_synth_opts(const struct outfile_source *src, uint64_t time)
{
	return (struct perfrec_synth_opts){
		.sz = sizeof(struct perfrec_synth_opts),
		.sample_type = src->sideband_sample_type, .id = src->sideband_id, .time = time,
		.build_ids = true, .kernel_text = src->kernel_text, .kernel_etext = src->kernel_etext,
		.data_maps = src->data_maps,
	};
}

/*
 * The formats of the tracepoints recorded, without which perf cannot decode
 * their samples (perf script refuses the file).  Set before the first data
 * write: a stream sends them ahead of every sample.  A tracefs that cannot
 * be read costs the fields, not the output.
 */
static int add_tracing_data(const struct outfile_source *src, struct perfrec_pdwriter *w)
{
	const char **names;
	size_t nr = 0, len = 0;
	void *data = NULL;
	int r;

	names = calloc(src->nr_specs ? src->nr_specs : 1, sizeof(*names));
	if (!names)
		return -ENOMEM;
	for (size_t i = 0; i < src->nr_specs; i++)
		if (src->specs[i].attr.type == PERF_TYPE_TRACEPOINT)
			names[nr++] = src->specs[i].name;
	r = nr ? perfrec_tracing__data(names, nr, NULL, &data, &len) : 0;
	free(names);
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		say(src, LOG_WARNING, "Tracepoint formats not written (perf cannot decode those samples): %s",
		    strerror(-r));
		return 0;
	}
	r = nr ? perfrec_pdwriter__set_feature(w, PERFREC_FEAT_TRACING_DATA, data, len) : 0;
	free(data);
	return r;
}

int outfile_add_attrs(const struct outfile_source *src, struct perfrec_pdwriter *w)
{
	int r;

	for (size_t i = 0; i < perfrec_evlist__nr_evsels(src->evlist); i++) {
		const struct perfrec_evsel *ev = perfrec_evlist__evsel(src->evlist, i);
		struct perf_event_attr attr = ev->attr;

		/* Unwound on the host: the samples carry chains, not registers and stacks. */
		if (src->unwound)
			perfrec_unwinder__rewrite_attr(&ev->attr, &attr);
		r = perfrec_pdwriter__add_attr(w, &attr, ev->ids, ev->nr_ids, ev->name);
		if (r < 0)
			return r;
	}
	r = src->hooks && src->hooks->add_attrs ? src->hooks->add_attrs(src->hooks_ctx, src->evlist, w) : 0;
	if (r < 0)
		return r;
	return add_tracing_data(src, w);
}

static int write_record(void *ctx, const struct perf_event_header *h)
{
	return perfrec_pdwriter__write(ctx, h, h->size);
}

static void step(const struct outfile_begin_opts *o)
{
	if (o->step)
		o->step(o->ctx);
}

/*
 * State that existed before the events were enabled (or before this
 * output began), stamped @o->time, which must not be later than any ring
 * record the output gets: readers apply it first.
 */
static int synthesize(const struct outfile_source *src, struct perfrec_pdwriter *w,
		      const struct outfile_begin_opts *o)
{
	struct perfrec_synth_opts so = outfile_synth_opts(src, o->time);
	perfrec_synth_emit_fn emit = o->emit ? o->emit : write_record;
	void *ctx = o->emit ? o->ctx : w;
	int r;

	/* Kernel maps: the owner's (perfrecd's as read before the rings ran) or read now. */
	if (src->hooks && src->hooks->kernel)
		r = src->hooks->kernel(src->hooks_ctx, &so, emit, ctx);
	else
		r = perfrec_synth__kernel(&so, emit, ctx);
	if (r == -EPERM)
		say(src, LOG_WARNING, "Kernel addresses are hidden (kptr_restrict); kernel symbols will not resolve in %s",
			    o->what);
	else if (r < 0)
		return r;
	step(o);
	if (src->only_pids) {
		so.pids = src->pids;
		so.nr_pids = src->nr_pids;
	}
	/* A filter that matches nothing would mean every process: none instead. */
	r = src->only_pids && !src->nr_pids ? 0 : perfrec_synth__tasks(&so, emit, ctx);
	if (r < 0)
		return r;
	step(o);
	/* JITed BPF programs loaded now; later ones come as ring records. */
	r = src->bpfmeta ? perfrec_bpfmeta__synthesize(src->bpfmeta, &so, emit, ctx) : 0;
	/* Not worth losing the output over: samples in BPF code stay unnamed. */
	if (r < 0)
		say(src, LOG_DEBUG, "BPF programs not synthesized into %s: %s", o->what, strerror(-r));
	step(o);
	/* No cgroup hierarchy mounted/readable: samples' cgroups stay numbers. */
	r = perfrec_synth__cgroups(&so, NULL, emit, ctx);
	if (r < 0 && r != -ENOENT && r != -EOPNOTSUPP && r != -EACCES && r != -EPERM)
		return r;
	step(o);
	return perfrec_synth__marker(PERFREC_RECORD_FINISHED_INIT, emit, ctx);
}

int outfile_synthesize(const struct outfile_source *src, struct perfrec_pdwriter *w,
		       const struct outfile_begin_opts *opts)
{
	struct outfile_begin_opts o = { 0 };

	memcpy(&o, opts, opts->sz < sizeof(o) ? opts->sz : sizeof(o));
	if (!o.what)
		o.what = "the output";
	return synthesize(src, w, &o);
}

int outfile_begin(const struct outfile_source *src, struct perfrec_pdwriter *w,
		  const struct outfile_begin_opts *opts)
{
	int r = outfile_add_attrs(src, w);

	return r < 0 ? r : outfile_synthesize(src, w, opts);
}

void outfile_add_features(const struct outfile_source *src, struct perfrec_pdwriter *w,
		 const struct outfile_features_opts *opts)
{
	struct perfrec_hostinfo_opts ho = { .sz = sizeof(ho) };
	struct outfile_features_opts o = { 0 };
	int r;

	memcpy(&o, opts, opts->sz < sizeof(o) ? opts->sz : sizeof(o));
	ho.argc = src->argc;
	ho.argv = src->argv;
	ho.clockid = src->clockid;
	ho.program = src->program;
	ho.clock_ns = o.clock_ns;
	ho.wall_ns = o.wall_ns;
	ho.first_sample_time = o.first_sample_time;
	ho.last_sample_time = o.last_sample_time;
	r = perfrec_hostinfo__add_features(w, &ho);
	if (r < 0)
		say(src, LOG_WARNING, "Some host features could not be gathered for %s: %s", o.what, strerror(-r));
	r = o.buildids ? perfrec_buildid_table__add_feature(o.buildids, w) : 0;
	if (r < 0)
		say(src, LOG_WARNING, "Build-id table not written to %s: %s", o.what, strerror(-r));
	r = perfrec_bpfmeta__add_features(src->bpfmeta, w);
	if (r < 0)
		say(src, LOG_WARNING, "BPF program info not written to %s: %s", o.what, strerror(-r));
}
