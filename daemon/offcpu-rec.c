// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Recorder wiring for off-CPU profiling.  The BPF program keeps summing
 * blocked time in the kernel between files, so a file's offcpu-time samples
 * are the blocking that ended while it was current; they are written at its
 * end, stamped with the end time, after the ring records and before the
 * features, as perf record --off-cpu does at the end of its session.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <unistd.h>

#include <perfrec/offcpu.h>
#include <perfrec/pdwriter.h>

#include "log.h"
#include "offcpu-rec.h"
#include "recorder.h"

void offcpu_rec_open(struct recorder *rec)
{
	struct perfrec_offcpu_opts o = { .sz = sizeof(o) };
	char why[256] = "";
	int r;

	if (!rec->cfg->offcpu)
		return;
	o.min_ns = rec->cfg->offcpu_min_usec * 1000;
	o.cgroup_path = rec->cfg->offcpu_cgroup;
	o.self_pid = getpid();
	r = perfrec_offcpu__open(&o, &rec->offcpu, why, sizeof(why));
	if (r < 0) {
		log_warning("off-CPU profiling is off: %s", why[0] ? why : strerror(-r));
		rec->offcpu = NULL;
		return;
	}
	log_info("off-CPU profiling is on (blocks of at least %" PRIu64 "us%s%s)",
		 rec->cfg->offcpu_min_usec, rec->cfg->offcpu_cgroup ? " in cgroup " : "",
		 rec->cfg->offcpu_cgroup ? rec->cfg->offcpu_cgroup : "");
}

int offcpu_rec_add_attr(struct recorder *rec)
{
	const struct perfrec_evsel *first;
	struct perf_event_attr a;
	uint64_t id = OFFCPU_REC_ID;

	if (!rec->offcpu)
		return 0;
	perfrec_offcpu__attr(&a);
	/* Same trailer and clock as the kernel's attrs, or readers reject it. */
	first = perfrec_evlist__evsel(rec->evlist, 0);
	if (first) {
		a.sample_id_all = first->attr.sample_id_all;
		a.use_clockid = first->attr.use_clockid;
		a.clockid = first->attr.clockid;
	}
	return perfrec_pdwriter__add_attr(rec->cur.w, &a, &id, 1, PERFREC_OFFCPU_EVENT_NAME);
}

static int emit(const struct perf_event_header *h, void *userdata)
{
	struct recorder *rec = userdata;

	return perfrec_pdwriter__write(rec->cur.w, h, h->size);
}

void offcpu_rec_write(struct recorder *rec, uint64_t time)
{
	uint64_t lost;
	int r;

	if (!rec->offcpu || !rec->have_file)
		return;
	r = perfrec_offcpu__drain(rec->offcpu, OFFCPU_REC_ID, time, emit, rec);
	if (r < 0)
		log_warning("Off-CPU samples not written to %s: %s", rec->cur.path, strerror(-r));
	else
		log_debug("%d off-CPU samples written to %s", r, rec->cur.path);
	lost = perfrec_offcpu__lost(rec->offcpu);
	if (lost > rec->offcpu_lost_logged) {
		log_warning("Off-CPU map full: %" PRIu64 " blocking stacks not counted",
			    lost - rec->offcpu_lost_logged);
		rec->offcpu_lost_logged = lost;
	}
}

void offcpu_rec_close(struct recorder *rec)
{
	perfrec_offcpu__close(rec->offcpu);
	rec->offcpu = NULL;
}
