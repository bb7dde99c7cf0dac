// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The record object: its options checks (libbpf's sz rule, bad values
 * named to the callback, nothing printed, nothing left behind) run
 * anywhere; the recordings need perf_event_open on this process and check
 * the file through our reader: the target's state only, threads started
 * after the start recorded, build ids and sample times written, rotate and
 * snapshot giving whole files, unwound on the host when asked.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/redirect.h>

#include <perfrec/perfrec.h>

struct msgs {
	int calls;
	int last_err;
	char last[512];
};

static void on_msg(void *ctx, int err, const char *msg)
{
	struct msgs *m = ctx;

	m->calls++;
	m->last_err = err;
	snprintf(m->last, sizeof(m->last), "%s", msg);
}

static char dir[] = "/tmp/test-record-XXXXXX";

static void setup(void)
{
	cr_assert_not_null(mkdtemp(dir));
	cr_redirect_stdout();
	cr_redirect_stderr();
}

static void teardown(void)
{
	char cmd[64];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		return;
}

static char *path_of(const char *name)
{
	static char buf[4][256];
	static int k;
	char *p = buf[k++ % 4];

	snprintf(p, 256, "%s/%s", dir, name);
	return p;
}

static bool exists(const char *p)
{
	struct stat st;

	return stat(p, &st) == 0;
}

/* A bigger struct as a newer program would pass it: our opts plus 16 bytes. */
struct newer_opts {
	struct perfrec_record_opts o;
	uint64_t later[2];
};

Test(record, opts_follow_the_sz_rule, .init = setup, .fini = teardown)
{
	struct msgs m = { 0 };
	struct newer_opts n = { .o = { .events = "no-such-event", .msg = on_msg, .msg_ctx = &m } };
	struct perfrec_record *r = NULL;
	const char *p = path_of("a.data");

	/* Zero bytes past our struct: accepted; the bad event then refuses. */
	n.o.sz = sizeof(n);
	cr_assert_eq(perfrec_record__start(p, &n.o, &r), -EINVAL);
	cr_assert_not_null(strstr(m.last, "no-such-event"), "message: %s", m.last);
	/* Non-zero bytes past it: options we cannot honour. */
	n.later[1] = 1;
	m.calls = 0;
	cr_assert_eq(perfrec_record__start(p, &n.o, &r), -E2BIG);
	cr_assert_eq(m.calls, 0, "the callback sits in a struct we do not understand");
	/* Too small to hold sz. */
	n.o.sz = 4;
	cr_assert_eq(perfrec_record__start(p, &n.o, &r), -EINVAL);
	/* An older, shorter struct: what it lacks takes defaults (no callback). */
	n.o.sz = offsetof(struct perfrec_record_opts, callchain);
	n.later[1] = 0;
	m.calls = 0;
	cr_assert_eq(perfrec_record__start(p, &n.o, &r), -EINVAL, "the bad event still refuses");
	cr_assert_eq(m.calls, 0, "msg lies past an older struct's end");
	cr_assert_null(r);
	cr_assert_not(exists(p) || exists(path_of("a.data.tmp")), "a failed start left a file");
}

Test(record, bad_options_are_named_and_nothing_is_printed, .init = setup, .fini = teardown)
{
	static const struct {
		const char *what;
		struct perfrec_record_opts o;
		int want;
		const char *says;
	} t[] = {
		{ "clock", { .clock = "sundial" }, -EINVAL, "sundial" },
		{ "compression", { .compress_level = 20 }, -EINVAL, "compress_level 20" },
		{ "event", { .events = "cpu-clock,bogus" }, -EINVAL, "bogus" },
		{ "cpu list", { .cpus = "0-x" }, -EINVAL, "0-x" },
		{ "ring size", { .mmap_pages = 3 }, -EINVAL, "3 pages" },
		{ "target", { .target = 9 }, -EINVAL, "target" },
		{ "unwind_host with frame pointers", { .callchain = true, .unwind_host = true }, -EINVAL,
		  "unwind_host unwinds DWARF stacks: it needs callchain and stack_user" },
		{ "unwind_host without callchains", { .unwind_host = true }, -EINVAL,
		  "unwind_host unwinds DWARF stacks: it needs callchain and stack_user" },
		{ "stack_user without callchain", { .stack_user = 8192 }, -EINVAL,
		  "stack_user 8192 asks for DWARF callchains: it needs callchain" },
		{ "stack_user size", { .callchain = true, .stack_user = 100, .unwind_host = true }, -EINVAL,
		  "stack_user 100: not a multiple of 8" },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct perfrec_record_opts o = t[i].o;
		struct perfrec_record *r = NULL;
		struct msgs m = { 0 };

		o.sz = sizeof(o);
		o.msg = on_msg;
		o.msg_ctx = &m;
		cr_assert_eq(perfrec_record__start(path_of("b.data"), &o, &r), t[i].want, "%s", t[i].what);
		cr_assert_eq(m.last_err, t[i].want, "%s", t[i].what);
		cr_assert_not_null(strstr(m.last, t[i].says), "%s: message \"%s\" does not name it",
				   t[i].what, m.last);
		cr_assert_null(r);
	}
	cr_assert_eq(perfrec_record__start(NULL, NULL, NULL), -EINVAL);
	cr_assert_eq(perfrec_record__stop(NULL), -EINVAL);
	fflush(stdout);
	fflush(stderr);
	cr_assert_stdout_eq_str("", "the library printed");
	cr_assert_stderr_eq_str("", "the library printed");
}

/* --- recordings ----------------------------------------------------------- */

static void need_perf(void)
{
	struct perf_event_attr a = {
		.size = sizeof(a), .type = PERF_TYPE_SOFTWARE, .config = PERF_COUNT_SW_DUMMY,
		.disabled = 1,
	};
	int fd = (int)syscall(__NR_perf_event_open, &a, 0, 0, -1, PERF_FLAG_FD_CLOEXEC);

	if (fd < 0)
		cr_skip_test("perf_event_open does not work here: %s", strerror(errno));
	close(fd);
}

static volatile unsigned long sink;
static volatile int spinner_tid;

static void spin(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		sink += i;
}

static void *spin_thread(void *arg)
{
	spinner_tid = (int)syscall(SYS_gettid);
	spin((unsigned long)(uintptr_t)arg);
	return NULL;
}

struct file_facts {
	size_t samples, samples_of_spinner;
	size_t foreign_state;   /* COMM/FORK/MMAP2 of other processes */
	size_t own_state;
	bool finished_init;
};

static void read_file(const char *p, int spinner, struct file_facts *f)
{
	struct perfrec_pdreader *rd;
	const struct perf_event_header *h;
	const void *body;
	size_t len;

	memset(f, 0, sizeof(*f));
	cr_assert_eq(perfrec_pdreader__open(p, NULL, &rd), 0, "%s does not open", p);
	cr_assert_eq(perfrec_pdreader__feature(rd, PERFREC_FEAT_SAMPLE_TIME, &body, &len), 0, "no SAMPLE_TIME");
	cr_assert_eq(perfrec_pdreader__feature(rd, PERFREC_FEAT_BUILD_ID, &body, &len), 0, "no BUILD_ID");
	cr_assert_eq(perfrec_pdreader__feature(rd, PERFREC_FEAT_HOSTNAME, &body, &len), 0, "no HOSTNAME");
	while (perfrec_pdreader__next(rd, &h, NULL) > 0) {
		uint32_t pid;

		switch (h->type) {
		case PERF_RECORD_SAMPLE: {
			const struct perfrec_pdreader_attr *a;
			struct perfrec_sample s;
			uint64_t id;

			cr_assert_eq(perfrec_event__identifier(h, &id), 0);
			a = perfrec_pdreader__attr_by_id(rd, id);
			cr_assert_not_null(a);
			cr_assert_eq(perfrec_sample__parse(h, a->attr.sample_type, a->attr.read_format, &s), 0);
			f->samples++;
			f->samples_of_spinner += (int)s.tid == spinner;
			break;
		}
		case PERF_RECORD_COMM:
		case PERF_RECORD_FORK:
		case PERF_RECORD_MMAP2:
			memcpy(&pid, (const unsigned char *)h + 8, 4);
			/* pid -1: the kernel's maps */
			if (pid == (uint32_t)getpid())
				f->own_state++;
			else if (pid != (uint32_t)-1)
				f->foreign_state++;
			break;
		case PERFREC_RECORD_FINISHED_INIT:
			f->finished_init = true;
			break;
		default:
			break;
		}
	}
	cr_assert_eq(perfrec_pdreader__verify(rd), 0, "%s: %s", p, perfrec_pdreader__error(rd, NULL));
	perfrec_pdreader__free(rd);
}

Test(record, self_has_own_state_only_and_later_threads, .init = setup, .fini = teardown)
{
	struct perfrec_record_opts o = {
		.sz = sizeof(o), .callchain = true, .program = "test-record", .target = PERFREC_TARGET_PROCESS,
	};
	struct perfrec_record *r = NULL;
	struct file_facts f;
	const char *p = path_of("self.data");
	pthread_t th;

	need_perf();
	cr_assert_eq(perfrec_record__start(p, &o, &r), 0);
	cr_assert(exists(path_of("self.data.tmp")), "recording is not in PATH.tmp");
	cr_assert_eq(pthread_create(&th, NULL, spin_thread, (void *)(uintptr_t)400000000UL), 0);
	pthread_join(th, NULL);
	cr_assert_eq(perfrec_record__stop(r), 0);
	cr_assert_not(exists(path_of("self.data.tmp")), ".tmp left after stop");
	read_file(p, spinner_tid, &f);
	cr_assert_gt(f.samples_of_spinner, 0, "thread %d started after __start has no samples (%zu in all)",
		     spinner_tid, f.samples);
	cr_assert_gt(f.own_state, 0, "our own COMM/MMAP2 are not in the file");
	cr_assert_eq(f.foreign_state, 0, "%zu records describe other processes", f.foreign_state);
	cr_assert(f.finished_init);
}

Test(record, rotate_and_snapshot_give_whole_files, .init = setup, .fini = teardown)
{
	struct perfrec_record_opts o = { .sz = sizeof(o), .target = PERFREC_TARGET_PROCESS };
	struct perfrec_record *r = NULL;
	struct file_facts f;
	pthread_t th;
	const char *names[] = { "one.data", "snap.data", "two.data" };

	need_perf();
	cr_assert_eq(perfrec_record__start(path_of(names[0]), &o, &r), 0);
	spin(200000000UL);
	cr_assert_eq(perfrec_record__rotate(r, path_of(names[2])), 0);
	cr_assert(exists(path_of(names[0])), "rotate did not publish the first file");
	cr_assert_eq(pthread_create(&th, NULL, spin_thread, (void *)(uintptr_t)200000000UL), 0);
	pthread_join(th, NULL);
	cr_assert_eq(perfrec_record__snapshot(r, path_of(names[1])), 0);
	cr_assert_eq(perfrec_record__stop(r), 0);
	for (size_t i = 0; i < 3; i++) {
		read_file(path_of(names[i]), spinner_tid, &f);
		cr_assert_gt(f.samples, 0, "%s has no samples", names[i]);
		cr_assert(f.finished_init, "%s has no synthesized state", names[i]);
		cr_assert_gt(f.own_state, 0, "%s does not describe us", names[i]);
	}
	read_file(path_of("one.data"), spinner_tid, &f);
	cr_assert_eq(f.samples_of_spinner, 0, "the first file has samples of a later thread");
}

/* Refused by perf_event_paranoid: a negative errno and a reason, no print. */
static void quiet(void)
{
	cr_redirect_stdout();
	cr_redirect_stderr();
}

/* No directory: the test gives up root, and the events fail before any file. */
Test(record, no_permission_is_an_errno_with_a_reason, .init = quiet)
{
	struct msgs m = { 0 };
	struct perfrec_record_opts o = {
		.sz = sizeof(o), .target = PERFREC_TARGET_CPUS, .msg = on_msg, .msg_ctx = &m,
	};
	struct perfrec_record *r = NULL;
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");
	int paranoid = 2, e;

	if (f) {
		if (fscanf(f, "%d", &paranoid) != 1)
			paranoid = 2;
		fclose(f);
	}
	if (geteuid() != 0)
		cr_skip_test("needs root to become an unprivileged user");
	if (paranoid < 1)
		cr_skip_test("perf_event_paranoid %d lets everyone record the host", paranoid);
	/* Whole-host events need privileges this user lacks (this process only). */
	cr_assert_eq(setresgid(65534, 65534, 65534), 0);
	cr_assert_eq(setresuid(65534, 65534, 65534), 0);
	e = perfrec_record__start("/nonexistent/denied.data", &o, &r);
	cr_assert(e == -EACCES || e == -EPERM, "got %d", e);
	cr_assert_null(r);
	cr_assert_eq(m.last_err, e);
	cr_assert_not_null(strstr(m.last, "perf_event_paranoid"), "message: %s", m.last);
	fflush(stdout);
	fflush(stderr);
	cr_assert_stdout_eq_str("", "the library printed");
	cr_assert_stderr_eq_str("", "the library printed");
}

/* The clock decides the clock features; the perf clock cannot have them. */
Test(record, clocks_and_their_features, .init = setup, .fini = teardown)
{
	static const struct {
		const char *clock;
		bool features;
	} t[] = { { "boottime", true }, { "perf", false }, { NULL, true } };

	need_perf();
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct perfrec_record_opts o = {
			.sz = sizeof(o), .target = PERFREC_TARGET_PROCESS, .clock = t[i].clock,
		};
		struct perfrec_record *r = NULL;
		struct perfrec_pdreader *rd;
		const void *body;
		size_t len;
		char name[32];

		snprintf(name, sizeof(name), "clock%zu.data", i);
		cr_assert_eq(perfrec_record__start(path_of(name), &o, &r), 0, "%s", t[i].clock);
		spin(50000000UL);
		cr_assert_eq(perfrec_record__stop(r), 0);
		cr_assert_eq(perfrec_pdreader__open(path_of(name), NULL, &rd), 0);
		cr_assert_eq(perfrec_pdreader__verify(rd), 0, "%s: %s", t[i].clock, perfrec_pdreader__error(rd, NULL));
		cr_assert_eq(perfrec_pdreader__feature(rd, PERFREC_FEAT_CLOCKID, &body, &len) == 0,
			     t[i].features, "%s: CLOCKID", t[i].clock);
		cr_assert_eq(perfrec_pdreader__feature(rd, PERFREC_FEAT_CLOCK_DATA, &body, &len) == 0,
			     t[i].features, "%s: CLOCK_DATA", t[i].clock);
		for (size_t k = 0; k < perfrec_pdreader__nr_attrs(rd); k++) {
			const struct perf_event_attr *a = &perfrec_pdreader__attr(rd, k)->attr;

			cr_assert_eq(a->use_clockid, t[i].features, "%s: use_clockid", t[i].clock);
			if (t[i].features)
				cr_assert_eq(a->clockid, t[i].clock ? CLOCK_BOOTTIME : CLOCK_MONOTONIC);
		}
		perfrec_pdreader__free(rd);
	}
}

static volatile int spin_go;

static void *spin_when_told(void *arg)
{
	spinner_tid = (int)syscall(SYS_gettid);
	while (!spin_go)
		sched_yield();
	spin((unsigned long)(uintptr_t)arg);
	return NULL;
}

/* A set of threads: their samples only, their process's state only. */
Test(record, threads_target_records_those_threads, .init = setup, .fini = teardown)
{
	struct perfrec_record *r = NULL;
	struct file_facts f;
	pthread_t th;
	int32_t tid;

	need_perf();
	spinner_tid = 0;
	cr_assert_eq(pthread_create(&th, NULL, spin_when_told, (void *)(uintptr_t)200000000UL), 0);
	while (!spinner_tid)
		sched_yield();
	tid = spinner_tid;

	struct perfrec_record_opts o = {
		.sz = sizeof(o), .target = PERFREC_TARGET_THREADS, .tids = &tid, .nr_tids = 1,
	};
	cr_assert_eq(perfrec_record__start(path_of("threads.data"), &o, &r), 0);
	spin_go = 1;
	spin(100000000UL); /* the main thread works too, unrecorded */
	pthread_join(th, NULL);
	cr_assert_eq(perfrec_record__stop(r), 0);
	read_file(path_of("threads.data"), tid, &f);
	cr_assert_gt(f.samples_of_spinner, 0);
	cr_assert_eq(f.samples, f.samples_of_spinner, "%zu samples of other threads",
		     f.samples - f.samples_of_spinner);
	cr_assert_gt(f.own_state, 0, "the thread's process is not described");
	cr_assert_eq(f.foreign_state, 0);
}

/* A rotate whose new file cannot start keeps the rings flowing; a later one recovers. */
Test(record, a_failed_rotate_drops_until_the_next_one, .init = setup, .fini = teardown)
{
	struct perfrec_record_opts o = { .sz = sizeof(o), .target = PERFREC_TARGET_PROCESS };
	struct perfrec_record *r = NULL;
	struct file_facts f;

	need_perf();
	cr_assert_eq(perfrec_record__start(path_of("first.data"), &o, &r), 0);
	spin(50000000UL);
	cr_assert_eq(perfrec_record__rotate(r, "/nonexistent/dir/x.data"), -ENOENT);
	cr_assert(exists(path_of("first.data")), "the old file was not published");
	spin(50000000UL);
	cr_assert_eq(perfrec_record__snapshot(r, path_of("none.data")), -EBADFD);
	cr_assert_eq(perfrec_record__rotate(r, path_of("again.data")), 0);
	spin(50000000UL);
	cr_assert_eq(perfrec_record__stop(r), 0);
	read_file(path_of("first.data"), 0, &f);
	cr_assert_gt(f.samples, 0);
	read_file(path_of("again.data"), 0, &f);
	cr_assert_gt(f.samples, 0, "the recording did not resume in the next rotate's file");
	cr_assert(f.finished_init);
}

#if defined(__x86_64__)
/* Spins with %rbp at a frame record {next 0, return address -1}. */
static void *bad_frame_spin(void *arg)
{
	static uint64_t fake[2] = { 0, ~0ULL };
	unsigned long spins = (unsigned long)(uintptr_t)arg;

	__asm__ volatile("push %%rbp\n\tmov %1, %%rbp\n1:\tdec %0\n\tjnz 1b\n\tpop %%rbp"
			 : "+r"(spins) : "r"(fake) : "cc", "memory");
	return NULL;
}

/* The drain's note on ended user chains, among whatever else is said. */
struct chain_notes {
	int nr, err;
};

static void on_chain_note(void *ctx, int err, const char *msg)
{
	struct chain_notes *n = ctx;

	if (!strstr(msg, "user callchain held a value in the PERF_CONTEXT range"))
		return;
	n->nr++;
	n->err = err;
}

/*
 * A user chain with -1 in it is ended before it, as perfrecd writes it:
 * the record object drains through perfrecd's drain (internal/drain.c), whose
 * repair is told once, as a note, to the msg callback.
 */
Test(record, user_chains_end_before_a_context_range_value, .init = setup, .fini = teardown)
{
	struct chain_notes m = { 0 };
	struct perfrec_record_opts o = {
		.sz = sizeof(o), .target = PERFREC_TARGET_PROCESS, .callchain = true, .freq = 2000,
		.msg = on_chain_note, .msg_ctx = &m,
	};
	struct perfrec_record *r = NULL;
	struct perfrec_pdreader *rd;
	const struct perf_event_header *h;
	size_t chains = 0;
	pthread_t th;

	need_perf();
	cr_assert_eq(perfrec_record__start(path_of("chain.data"), &o, &r), 0);
	cr_assert_eq(pthread_create(&th, NULL, bad_frame_spin, (void *)(uintptr_t)400000000UL), 0);
	pthread_join(th, NULL);
	cr_assert_eq(perfrec_record__stop(r), 0);
	cr_assert_eq(perfrec_pdreader__open(path_of("chain.data"), NULL, &rd), 0);
	while (perfrec_pdreader__next(rd, &h, NULL) > 0) {
		const struct perfrec_pdreader_attr *a;
		struct perfrec_sample s;
		uint64_t id;
		bool user = false;

		if (h->type != PERF_RECORD_SAMPLE)
			continue;
		cr_assert_eq(perfrec_event__identifier(h, &id), 0);
		a = perfrec_pdreader__attr_by_id(rd, id);
		cr_assert_eq(perfrec_sample__parse(h, a->attr.sample_type, a->attr.read_format, &s), 0);
		for (uint64_t k = 0; k < s.nr_callchain; k++) {
			uint64_t v = s.callchain[k];

			if (v == PERF_CONTEXT_USER) {
				user = true;
				chains++;
				continue;
			}
			cr_assert(!user || v < (uint64_t)-4095, "user frame %llu is %#llx, a context marker to perf",
				  (unsigned long long)k, (unsigned long long)v);
		}
	}
	cr_assert_gt(chains, 0, "no user chains recorded");
	cr_expect_eq(m.nr, 1, "the drain's repair note, once: %d", m.nr);
	cr_expect_eq(m.err, 0, "a note, not an error");
	perfrec_pdreader__free(rd);
}
#endif

/* Compressed files read back whole; a snapshot of one is refused, not garbled. */
Test(record, compression_is_read_back_and_snapshot_refused, .init = setup, .fini = teardown)
{
	struct perfrec_record_opts o = {
		.sz = sizeof(o), .target = PERFREC_TARGET_PROCESS, .compress_level = 3,
	};
	struct perfrec_record *r = NULL;
	struct perfrec_pdreader *rd;
	struct file_facts f;
	const void *body;
	size_t len;

	need_perf();
	cr_assert_eq(perfrec_record__start(path_of("z.data"), &o, &r), 0);
	spin(100000000UL);
	cr_assert_eq(perfrec_record__snapshot(r, path_of("zsnap.data")), -EOPNOTSUPP);
	cr_assert_not(exists(path_of("zsnap.data")) || exists(path_of("zsnap.data.tmp")));
	cr_assert_eq(perfrec_record__stop(r), 0);
	cr_assert_eq(perfrec_pdreader__open(path_of("z.data"), NULL, &rd), 0);
	cr_assert_eq(perfrec_pdreader__feature(rd, PERFREC_FEAT_COMPRESSED, &body, &len), 0, "no COMPRESSED");
	perfrec_pdreader__free(rd);
	read_file(path_of("z.data"), 0, &f);
	cr_assert_gt(f.samples, 0);
	cr_assert_gt(f.own_state, 0);
}

/*
 * The user frames of each sample: how many samples of @tid, and how many
 * of those have at least @frames; every attr without user registers or
 * stacks and with callchains (@unwound), or with both (raw DWARF).
 */
static void count_user_frames(const char *p, int tid, bool unwound, size_t frames, size_t *ret_n,
			      size_t *ret_deep)
{
	struct perfrec_pdreader *rd;
	const struct perf_event_header *h;

	*ret_n = *ret_deep = 0;
	cr_assert_eq(perfrec_pdreader__open(p, NULL, &rd), 0, "%s does not open", p);
	while (perfrec_pdreader__next(rd, &h, NULL) > 0) {
		const struct perfrec_pdreader_attr *a;
		struct perfrec_sample s;
		uint64_t id, stack = PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
		size_t user = 0;
		bool in_user = false;

		if (h->type != PERF_RECORD_SAMPLE)
			continue;
		cr_assert_eq(perfrec_event__identifier(h, &id), 0);
		a = perfrec_pdreader__attr_by_id(rd, id);
		cr_assert_not_null(a);
		cr_assert(a->attr.sample_type & PERF_SAMPLE_CALLCHAIN, "%s: samples without callchains", p);
		cr_assert_eq(a->attr.sample_type & stack, unwound ? 0 : stack,
			     "%s: sample_type %#llx", p, (unsigned long long)a->attr.sample_type);
		cr_assert_eq(perfrec_sample__parse(h, a->attr.sample_type, a->attr.read_format, &s), 0);
		if ((int)s.tid != tid)
			continue;
		for (uint64_t i = 0; i < s.nr_callchain; i++) {
			if (s.callchain[i] >= (uint64_t)PERF_CONTEXT_MAX)
				in_user = s.callchain[i] == (uint64_t)PERF_CONTEXT_USER;
			else
				user += in_user;
		}
		++*ret_n;
		*ret_deep += user >= frames;
	}
	cr_assert_eq(perfrec_pdreader__verify(rd), 0, "%s: %s", p, perfrec_pdreader__error(rd, NULL));
	perfrec_pdreader__free(rd);
}

#if defined(__x86_64__)
/*
 * unwind_host: the file, a snapshot and the file after a rotate carry
 * callchains unwound on the host (the spinning thread's through its
 * callers: spin_thread, start_thread, clone), no user registers or stacks;
 * without it the same recording keeps the raw stacks, whose chains the
 * kernel ends at the sampled user ip.
 */
Test(record, unwind_host_files_carry_unwound_callchains, .init = setup, .fini = teardown)
{
	struct perfrec_record_opts o = {
		.sz = sizeof(o), .target = PERFREC_TARGET_PROCESS, .callchain = true,
		.stack_user = PERFREC_STACK_USER_DEFAULT, .unwind_host = true, .mmap_pages = 512,
	};
	const char *names[] = { "u1.data", "usnap.data", "u2.data" };
	struct perfrec_record *r = NULL;
	size_t n, deep;
	pthread_t th;

	need_perf();
	cr_assert_eq(perfrec_record__start(path_of(names[0]), &o, &r), 0);
	cr_assert_eq(pthread_create(&th, NULL, spin_thread, (void *)(uintptr_t)300000000UL), 0);
	pthread_join(th, NULL);
	cr_assert_eq(perfrec_record__snapshot(r, path_of(names[1])), 0);
	cr_assert_eq(perfrec_record__rotate(r, path_of(names[2])), 0);
	spin(100000000UL);
	cr_assert_eq(perfrec_record__stop(r), 0);
	for (size_t i = 0; i < 3; i++) {
		count_user_frames(path_of(names[i]), i < 2 ? spinner_tid : (int)syscall(SYS_gettid), true, 3,
				  &n, &deep);
		cr_assert_gt(n, 5, "%s: %zu samples of the spinning thread", names[i], n);
		cr_assert_geq(deep * 10, n * 9, "%s: %zu of %zu samples have 3 user frames", names[i], deep, n);
	}

	/* The same without unwind_host: raw stacks, one user frame. */
	o.unwind_host = false;
	cr_assert_eq(perfrec_record__start(path_of("raw.data"), &o, &r), 0);
	cr_assert_eq(pthread_create(&th, NULL, spin_thread, (void *)(uintptr_t)200000000UL), 0);
	pthread_join(th, NULL);
	cr_assert_eq(perfrec_record__stop(r), 0);
	count_user_frames(path_of("raw.data"), spinner_tid, false, 3, &n, &deep);
	cr_assert_gt(n, 5);
	cr_assert_eq(deep, 0, "the kernel unwound %zu DWARF samples", deep);
}
#endif
