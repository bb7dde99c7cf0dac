// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests of daemon/pipeline.c's python stage: with a walker, the
 * file, the history and the streams sit behind the stage (so that each
 * gets the merged callchains and the MMAP2s naming them), side-band
 * consumers stay on the drain; without one, nothing changes.
 */
#include <criterion/criterion.h>

#include "config.h"
#include "drain.h"
#include "pipeline.h"

static const struct pywalk_rec *no_walk(struct pywalk *pw, uint32_t cpu, uint32_t tid, uint64_t time)
{
	(void)pw;
	(void)cpu;
	(void)tid;
	(void)time;
	return NULL;
}

static const struct sink_ops file_ops, history_ops, stream_ops, notes_ops;

static void check_places(bool with_py)
{
	struct drain_opts dopts = { .sz = sizeof(dopts) };
	struct sink file = { .ops = &file_ops }, history = { .ops = &history_ops }, stream = { .ops = &stream_ops },
		    notes = { .ops = &notes_ops };
	struct pipeline_opts po = { 0 };
	struct pystage_stats st;
	struct pipeline *p;
	struct drain *d;
	struct config cfg;
	int walker;

	config_init(&cfg);
	/* Frame-pointer stacks: no unwinder in front, the python stage right on the drain. */
	cfg.callchain = true;
	cfg.dwarf = false;
	cfg.unwind_host = false;
	cr_assert_eq(drain_new(&dopts, &d), 0);
	po.cfg = &cfg;
	po.drain = d;
	po.py = with_py ? (struct pywalk *)&walker : NULL;
	po.py_take = no_walk;
	cr_assert_eq(pipeline_new(&po, &p), 0);
	cr_assert_eq(pipeline_add(p, PIPELINE_FILE, &file), 0);
	cr_assert_eq(pipeline_add(p, PIPELINE_HISTORY, &history), 0);
	cr_assert_eq(pipeline_add(p, PIPELINE_STREAM, &stream), 0);
	cr_assert_eq(pipeline_add(p, PIPELINE_NOTES, &notes), 0);
	cr_assert_eq(drain_sink_of(d, &file_ops) == NULL, with_py, "the file's place");
	cr_assert_eq(drain_sink_of(d, &history_ops) == NULL, with_py, "the history's place");
	cr_assert_eq(drain_sink_of(d, &stream_ops) == NULL, with_py, "the streams' place");
	cr_assert_eq(drain_sink_of(d, &notes_ops), &notes, "side-band consumers left the drain");
	cr_assert_eq(pipeline_sink_of(p, &file_ops), &file);
	cr_assert_not(pipeline_unwound(p, PIPELINE_FILE), "no unwinder, yet unwound");
	cr_assert_eq(pipeline_py_stats(p, &st), with_py);
	pipeline_remove(p, &stream);
	cr_assert_null(pipeline_sink_of(p, &stream_ops));
	pipeline_free(p);
	drain_free(d);
	config_exit(&cfg);
}

Test(pipeline_py, outputs_sit_behind_the_python_stage)
{
	check_places(true);
}

Test(pipeline_py, no_walker_no_stage)
{
	check_places(false);
}
