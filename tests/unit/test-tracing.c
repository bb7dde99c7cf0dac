// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Tests of the tracing data builder on a fake tracefs: perf's layout field
 * by field (magic, version, byte order, header_page/header_event, the
 * formats grouped by subsystem with each tracepoint once, printk formats),
 * refusals of bad names and missing tracepoints, and the real tracefs's
 * sched_switch format when this machine has one.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <perfrec/tracing.h>

static char root[64];

static void put_file(const char *rel, const char *text)
{
	char path[256], *slash;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (slash = strchr(path + strlen(root) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		mkdir(path, 0755);
		*slash = '/';
	}
	f = fopen(path, "w");
	cr_assert_not_null(f, "%s", path);
	fputs(text, f);
	fclose(f);
}

static void make_tracefs(void)
{
	strcpy(root, "/tmp/perfrec-test-tracing.XXXXXX");
	cr_assert_not_null(mkdtemp(root));
	put_file("events/header_page", "field: u64 timestamp;\n");
	put_file("events/header_event", "# compressed entry header\n");
	put_file("events/sched/sched_switch/format", "name: sched_switch\nID: 7\n");
	put_file("events/sched/sched_wakeup/format", "name: sched_wakeup\nID: 8\n");
	put_file("events/irq/irq_handler_entry/format", "name: irq_handler_entry\nID: 9\n");
	put_file("printk_formats", "0xffff : \"hello\"\n");
}

static void remove_tracefs(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	cr_assert_eq(system(cmd), 0);
}

struct cur {
	const unsigned char *p, *end;
};

static const void *take(struct cur *c, size_t n)
{
	const void *at = c->p;

	cr_assert(n <= (size_t)(c->end - c->p), "data ends early (%zu more bytes wanted)", n);
	c->p += n;
	return at;
}

static uint32_t take32(struct cur *c)
{
	uint32_t v;

	memcpy(&v, take(c, 4), 4);
	return v;
}

static uint64_t take64(struct cur *c)
{
	uint64_t v;

	memcpy(&v, take(c, 8), 8);
	return v;
}

static void expect_str(struct cur *c, const char *s)
{
	cr_assert_eq(memcmp(take(c, strlen(s) + 1), s, strlen(s) + 1), 0, "expected \"%s\"", s);
}

static void expect_file(struct cur *c, const char *text)
{
	uint64_t n = take64(c);

	cr_assert_eq(n, strlen(text), "size %llu, want %zu", (unsigned long long)n, strlen(text));
	cr_assert_eq(memcmp(take(c, n), text, n), 0);
}

Test(tracing, perf_layout_with_formats_grouped_by_subsystem_and_each_once, .init = make_tracefs,
     .fini = remove_tracefs)
{
	const char *tps[] = { "sched:sched_wakeup", "irq:irq_handler_entry:k", "sched:sched_switch",
			      "sched:sched_switch:u" };
	struct perfrec_tracing_opts o = { .sz = sizeof(o), .tracefs = root };
	void *data = NULL;
	size_t len = 0;
	struct cur c;

	cr_assert_eq(perfrec_tracing__data(tps, 4, &o, &data, &len), 0);
	c = (struct cur){ data, (const unsigned char *)data + len };
	cr_assert_eq(memcmp(take(&c, 10), "\x17\x08\x44tracing", 10), 0);
	expect_str(&c, "0.6");
	cr_assert_eq(*(const unsigned char *)take(&c, 1), 0, "little-endian host");
	cr_assert_eq(*(const unsigned char *)take(&c, 1), sizeof(long));
	cr_assert_eq(take32(&c), (uint32_t)sysconf(_SC_PAGESIZE));
	expect_str(&c, "header_page");
	expect_file(&c, "field: u64 timestamp;\n");
	expect_str(&c, "header_event");
	expect_file(&c, "# compressed entry header\n");
	cr_assert_eq(take32(&c), 0, "ftrace formats");
	cr_assert_eq(take32(&c), 2, "subsystems");
	expect_str(&c, "irq");
	cr_assert_eq(take32(&c), 1);
	expect_file(&c, "name: irq_handler_entry\nID: 9\n");
	expect_str(&c, "sched");
	cr_assert_eq(take32(&c), 2, "sched_switch named twice is written once");
	expect_file(&c, "name: sched_switch\nID: 7\n");
	expect_file(&c, "name: sched_wakeup\nID: 8\n");
	cr_assert_eq(take32(&c), 0, "kallsyms");
	cr_assert_eq(take32(&c), strlen("0xffff : \"hello\"\n"));
	cr_assert_eq(memcmp(take(&c, strlen("0xffff : \"hello\"\n")), "0xffff : \"hello\"\n", 17), 0);
	cr_assert_eq(take64(&c), 0, "saved_cmdlines");
	cr_assert_eq(c.p, c.end, "%td bytes left over", c.end - c.p);
	free(data);
}

Test(tracing, bad_names_and_missing_tracepoints_are_refused, .init = make_tracefs, .fini = remove_tracefs)
{
	struct perfrec_tracing_opts o = { .sz = sizeof(o), .tracefs = root };
	const char *bad[] = { "sched_switch", ":x", "sched:", "..:x", "sched:../../x" };
	const char *missing[] = { "sched:sched_nope" };
	void *data = (void *)1;
	size_t len = 7;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(perfrec_tracing__data(&bad[i], 1, &o, &data, &len), -EINVAL, "%s", bad[i]);
	cr_assert_eq(perfrec_tracing__data(missing, 1, &o, &data, &len), -ENOENT);
	cr_assert_eq(data, (void *)1, "output written on failure");
	cr_assert_eq(len, 7);
	/* No header_page: not a tracefs. */
	o.tracefs = "/nonexistent";
	cr_assert_eq(perfrec_tracing__data(missing, 1, &o, &data, &len), -ENOENT);
}

Test(tracing, real_tracefs_sched_switch_format)
{
	const char *tp[] = { "sched:sched_switch" };
	void *data = NULL;
	size_t len = 0;

	if (access("/sys/kernel/tracing/events/sched/sched_switch/format", R_OK))
		cr_skip_test("no tracefs with sched:sched_switch mounted here");
	cr_assert_eq(perfrec_tracing__data(tp, 1, NULL, &data, &len), 0);
	cr_assert(memmem(data, len, "field:char prev_comm[16]", strlen("field:char prev_comm[16]")),
		  "sched_switch's format is not in the data");
	free(data);
}
