// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The walk of Python frames at the sample (internal/pywalk.h), with the
 * real kernel and the real interpreters of this machine: Debian's
 * /usr/bin/python3 and pyenv's 3.10-3.13 (as test-pyproc finds them).
 * Each runs outer -> middle -> hot_leaf in a loop; a cpu-clock event per
 * CPU samples it (CLOCK_MONOTONIC, TID|TIME|CPU) with the walker attached,
 * and every sample of the process is joined with pywalk_take().  Most
 * samples must join a walk, and the walks' code objects, named through
 * /proc/PID/mem, must read hot_leaf, middle, outer, <module>.  Needs root
 * and perf events; without them the tests skip, saying which.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pywalk.h"

#define RING_PAGES 64
#define WANT_SAMPLES 300
#define PERIOD_NS 1000000

static const char script_loop[] =
	"import os, sys\n"
	"def hot_leaf(n):\n"
	"    s = 0\n"
	"    for i in range(n):\n"
	"        s += i * i\n"
	"    return s\n"
	"def middle():\n"
	"    while True:\n"
	"        hot_leaf(2000)\n"
	"def outer():\n"
	"    middle()\n"
	"os.write(int(sys.argv[1]), b'r')\n"
	"outer()\n";

/* The same in a second thread; the main thread waits in join(). */
static const char script_thread[] =
	"import os, sys, threading\n"
	"def hot_leaf(n):\n"
	"    s = 0\n"
	"    for i in range(n):\n"
	"        s += i * i\n"
	"    return s\n"
	"def middle():\n"
	"    while True:\n"
	"        hot_leaf(2000)\n"
	"def outer():\n"
	"    middle()\n"
	"t = threading.Thread(target=outer)\n"
	"t.start()\n"
	"os.write(int(sys.argv[1]), b'r')\n"
	"t.join()\n";

struct target {
	pid_t pid;
	char dir[64];
	char script[128];
};

struct sampler {
	int nr;
	int fds[256];
	void *rings[256];
	size_t ring_len;
};

/* What the walks of a run must show. */
enum mode {
	LOOP,           /* hot_leaf, middle, outer, <module> */
	THREAD,         /* hot_leaf, middle, outer, then threading's frames, not the main thread */
	ANY,            /* only counted (hostile memory) */
};

struct tally {
	enum mode mode;
	pid_t pid;
	unsigned samples, joined, named, hot, entry_ok;
	unsigned truncated, max_nr;
	unsigned far;           /* joined a walk not of its own overflow */
	unsigned torn, no_tstate;
};

static const char *pyenv(const char *v)
{
	static char path[PATH_MAX];
	const char *root = getenv("PYENV_ROOT");
	const char *home = getenv("HOME");

	if (root)
		snprintf(path, sizeof(path), "%s/versions/%s/bin/python3", root, v);
	else
		snprintf(path, sizeof(path), "%s/.pyenv/versions/%s/bin/python3",
			 home ? home : "/root", v);
	return path;
}

static void start_target(const char *python, const char *script, struct target *t)
{
	int ready[2];
	struct pollfd pfd;
	char a1[16], c;
	FILE *f;

	strcpy(t->dir, "/tmp/test-pywalk.XXXXXX");
	cr_assert(mkdtemp(t->dir));
	snprintf(t->script, sizeof(t->script), "%s/target.py", t->dir);
	f = fopen(t->script, "wx");
	cr_assert(f);
	fputs(script, f);
	cr_assert_eq(fclose(f), 0);
	cr_assert_eq(pipe(ready), 0);
	t->pid = fork();
	cr_assert(t->pid >= 0);
	if (t->pid == 0) {
		char *env[] = { "PATH=/usr/bin:/bin", NULL };

		close(ready[0]);
		snprintf(a1, sizeof(a1), "%d", ready[1]);
		execle(python, python, "-I", "-S", t->script, a1, (char *)NULL, env);
		_exit(127);
	}
	close(ready[1]);
	pfd = (struct pollfd){ .fd = ready[0], .events = POLLIN };
	cr_assert_eq(poll(&pfd, 1, 60000), 1, "%s did not start", python);
	cr_assert_eq(read(ready[0], &c, 1), 1, "%s exited at start", python);
	close(ready[0]);
}

static void stop_target(struct target *t)
{
	int st;

	kill(t->pid, SIGKILL);
	waitpid(t->pid, &st, 0);
	unlink(t->script);
	rmdir(t->dir);
}

/* A cpu-clock sampling event per CPU; false (skipped) without perf events. */
static bool open_sampler(struct sampler *s)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	long page = sysconf(_SC_PAGESIZE);

	memset(s, 0, sizeof(*s));
	s->ring_len = (size_t)page * (RING_PAGES + 1);
	for (int cpu = 0; cpu < ncpu && cpu < 256; cpu++) {
		struct perf_event_attr a = {
			.size = sizeof(a),
			.type = PERF_TYPE_SOFTWARE,
			.config = PERF_COUNT_SW_CPU_CLOCK,
			.sample_period = PERIOD_NS,
			.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU,
			.use_clockid = 1,
			.clockid = CLOCK_MONOTONIC,
			.disabled = 1,
			.wakeup_events = 1,
		};
		int fd = (int)syscall(SYS_perf_event_open, &a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);

		if (fd < 0) {
			cr_assert(s->nr == 0, "perf_event_open on CPU %d: %s", cpu, strerror(errno));
			return false;
		}
		s->rings[s->nr] = mmap(NULL, s->ring_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		cr_assert(s->rings[s->nr] != MAP_FAILED);
		s->fds[s->nr++] = fd;
	}
	return true;
}

static void close_sampler(struct sampler *s)
{
	for (int i = 0; i < s->nr; i++) {
		munmap(s->rings[i], s->ring_len);
		close(s->fds[i]);
	}
}

static struct pywalk *open_walker(struct sampler *s)
{
	struct pywalk_opts o = { .sz = sizeof(o) };
	struct pywalk *pw = NULL;
	int r;

	if (geteuid() != 0) {
		cr_skip_test("needs root (BPF, perf events)");
		return NULL;
	}
	if (!open_sampler(s)) {
		cr_skip_test("no perf events here");
		return NULL;
	}
	o.fds = s->fds;
	o.nr_fds = (size_t)s->nr;
	r = pywalk_open(&o, &pw);
	cr_assert_eq(r, 0, "pywalk_open: %s", strerror(-r));
	return pw;
}

/* A str object's text when compact ASCII, as pyproc.c reads it. */
static void rd_str(int fd, uint64_t obj, const struct pyproc_offsets *o, char *out, size_t sz)
{
	uint32_t state = 0;
	int64_t len = 0;

	snprintf(out, sz, "?");
	if (pread(fd, &len, 8, (off_t)(obj + 16)) != 8 || pread(fd, &state, 4, (off_t)(obj + 32)) != 4)
		return;
	if (!(state & (1u << 5)) || !(state & (1u << 6)) || len < 0 || (size_t)len >= sz)
		return;
	if (pread(fd, out, (size_t)len, (off_t)(obj + o->unicode_ascii_data)) == len)
		out[len] = '\0';
}

/* The qualified name of the code object at CODE, "?" when it is none. */
static void code_name(int memfd, const struct pyproc_info *info, uint64_t code, char *out, size_t sz)
{
	uint64_t type = 0, name = 0;

	snprintf(out, sz, "?");
	if (pread(memfd, &type, 8, (off_t)(code + 8)) != 8 || type != info->code_type_addr ||
	    pread(memfd, &name, 8, (off_t)(code + info->off.code_name)) != 8)
		return;
	rd_str(memfd, name, &info->off, out, sz);
}

/* A walk of the loop scripts: [hot_leaf,] middle, outer, then <module> or threading's. */
static void check_rec(int memfd, const struct pyproc_info *info, const struct pywalk_rec *w,
		      struct tally *t)
{
	static const char *const want[] = { "hot_leaf", "middle", "outer", "<module>" };
	int first, n = w->nr, need;
	char name[128];

	t->torn += !!(w->flags & PYWALK_TORN);
	t->no_tstate += !!(w->flags & PYWALK_NO_TSTATE);
	t->truncated += !!(w->flags & PYWALK_TRUNCATED);
	if (w->nr > t->max_nr)
		t->max_nr = w->nr;
	if (t->mode == ANY || n < 2 || (w->flags & (PYWALK_TORN | PYWALK_TRUNCATED)))
		return;
	code_name(memfd, info, w->frames[0].code, name, sizeof(name));
	first = strcmp(name, "hot_leaf") ? 1 : 0;
	/* The main thread's walk ends at <module>; the other's goes on in threading. */
	need = t->mode == LOOP ? 4 - first : 3 - first;
	if (t->mode == LOOP ? n != need : (n <= need || w->tid == (uint32_t)t->pid))
		return;
	for (int i = 0; i < need; i++) {
		code_name(memfd, info, w->frames[i].code, name, sizeof(name));
		if (strcmp(name, want[first + i]))
			return;
	}
	t->named++;
	t->hot += !first;
	/* The outermost frame enters the eval loop; the others (3.11+) do not. */
	if ((w->frames[n - 1].flags & PYWALK_F_ENTRY) &&
	    (info->minor == 10 || !(w->frames[0].flags & PYWALK_F_ENTRY)))
		t->entry_ok++;
}

struct sample {
	struct perf_event_header h;
	uint32_t pid, tid;
	uint64_t time;
	uint32_t cpu, res;
};

/* The samples in ring I, each of PID joined with the walker. */
static void drain(struct sampler *s, int i, struct pywalk *pw, pid_t pid, int memfd,
		  const struct pyproc_info *info, struct tally *t)
{
	struct perf_event_mmap_page *m = s->rings[i];
	char *data = (char *)m + m->data_offset;
	uint64_t head = __atomic_load_n(&m->data_head, __ATOMIC_ACQUIRE), tail = m->data_tail;

	while (tail < head) {
		struct sample smp;
		size_t off = tail % m->data_size;

		for (size_t k = 0; k < sizeof(smp); k++)
			((char *)&smp)[k] = data[(off + k) % m->data_size];
		if (smp.h.size == 0)
			break;
		if (smp.h.type == PERF_RECORD_SAMPLE && smp.pid == (uint32_t)pid) {
			const struct pywalk_rec *w = pywalk_take(pw, smp.cpu, smp.tid, smp.time);

			t->samples++;
			if (w) {
				t->joined++;
				/* Its own walk, microseconds away, not a neighbour's (a period). */
				if ((w->time > smp.time ? w->time - smp.time : smp.time - w->time) > PERIOD_NS / 4)
					t->far++;
				check_rec(memfd, info, w, t);
			}
		}
		tail += smp.h.size;
	}
	__atomic_store_n(&m->data_tail, tail, __ATOMIC_RELEASE);
}

/* Samples until PID has WANT_SAMPLES of them (bounded by 60 s). */
static void sample(struct sampler *s, struct pywalk *pw, pid_t pid,
		   const struct pyproc_info *info, struct tally *t)
{
	char path[64];
	struct timespec end, now;
	int memfd;

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	memfd = open(path, O_RDONLY | O_CLOEXEC);
	cr_assert(memfd >= 0);
	memset(&t->samples, 0, sizeof(*t) - offsetof(struct tally, samples));
	for (int i = 0; i < s->nr; i++)
		cr_assert_eq(ioctl(s->fds[i], PERF_EVENT_IOC_ENABLE, 0), 0);
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += 60;
	do {
		struct pollfd pfd[256];

		for (int i = 0; i < s->nr; i++)
			pfd[i] = (struct pollfd){ .fd = s->fds[i], .events = POLLIN };
		poll(pfd, (nfds_t)s->nr, 100);
		for (int i = 0; i < s->nr; i++)
			drain(s, i, pw, pid, memfd, info, t);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (t->samples < WANT_SAMPLES && now.tv_sec < end.tv_sec);
	for (int i = 0; i < s->nr; i++)
		ioctl(s->fds[i], PERF_EVENT_IOC_DISABLE, 0);
	close(memfd);
}

/* The layout the stage names code objects with is the one added. */
static void check_info(struct pywalk *pw, pid_t pid, const struct pyproc_info *want)
{
	struct pyproc_info *got = malloc(sizeof(*got));

	cr_assert(got);
	cr_assert_eq(pywalk_process_info(pw, pid, got), 0);
	cr_expect_eq(got->runtime_addr, want->runtime_addr);
	cr_expect_eq(got->code_type_addr, want->code_type_addr);
	cr_expect_eq(got->minor, want->minor);
	cr_expect_eq(memcmp(&got->off, &want->off, sizeof(got->off)), 0);
	cr_expect_str_eq(got->path, want->path);
	free(got);
}

static void run_python(const char *python, enum mode mode, unsigned minor)
{
	struct pywalk_stats st;
	struct pyproc_info info;
	struct sampler s;
	struct target t;
	struct tally n;
	struct pywalk *pw;

	if (access(python, X_OK)) {
		cr_skip_test("%s not installed", python);
		return;
	}
	pw = open_walker(&s);
	if (!pw)
		return;
	start_target(python, mode == THREAD ? script_thread : script_loop, &t);
	n.mode = mode;
	n.pid = t.pid;
	cr_assert_eq(pyproc_detect("/proc", t.pid, &info), 0);
	cr_assert_eq(info.status, PYPROC_OK, "%s: %s", python, pyproc_status_name(info.status));
	cr_assert_eq(info.minor, minor);
	cr_assert_eq(pywalk_add_process(pw, t.pid, &info), 0);
	check_info(pw, t.pid, &info);
	sample(&s, pw, t.pid, &info, &n);
	pywalk_get_stats(pw, &st);
	cr_log_info("%s: %u samples, %u joined, %u named (%u in hot_leaf), %u entry flags right, "
		    "%u torn, %u no tstate; %llu walks, %llu unjoined, %llu lost", python,
		    n.samples, n.joined, n.named, n.hot, n.entry_ok, n.torn, n.no_tstate,
		    (unsigned long long)st.walks, (unsigned long long)st.unjoined,
		    (unsigned long long)st.ring_lost);
	cr_expect_geq(n.samples, WANT_SAMPLES, "%s: %u samples", python, n.samples);
	cr_expect_geq(n.joined * 10, n.samples * 9, "%s: %u of %u samples joined a walk",
		      python, n.joined, n.samples);
	cr_expect_eq(n.far, 0, "%s: %u of %u joined a walk a period away", python, n.far, n.joined);
	cr_expect_geq(n.named * 10, n.samples * 9, "%s: %u of %u samples named the path",
		      python, n.named, n.samples);
	cr_expect_geq(n.hot * 2, n.samples, "%s: %u of %u in hot_leaf", python, n.hot, n.samples);
	cr_expect_eq(n.entry_ok, n.named, "%s: entry flags right in %u of %u", python,
		     n.entry_ok, n.named);
	cr_expect_eq(st.procs, 1);
	stop_target(&t);
	pywalk_remove_process(pw, t.pid);
	pywalk_get_stats(pw, &st);
	cr_expect_eq(st.procs, 0);
	cr_expect_eq(pywalk_process_info(pw, t.pid, &info), -ENOENT, "a removed process's layout");
	pywalk_free(pw);
	close_sampler(&s);
}

Test(pywalk, debian_python3) { run_python("/usr/bin/python3.11", LOOP, 11); }
Test(pywalk, pyenv_310) { run_python(pyenv("3.10.13"), LOOP, 10); }
Test(pywalk, pyenv_311) { run_python(pyenv("3.11.7"), LOOP, 11); }
Test(pywalk, pyenv_312) { run_python(pyenv("3.12.1"), LOOP, 12); }
Test(pywalk, pyenv_313) { run_python(pyenv("3.13.0"), LOOP, 13); }

/* The walk of a thread that is not the main one: found by its thread_id (fsbase). */
Test(pywalk, thread_debian_python3) { run_python("/usr/bin/python3.11", THREAD, 11); }
Test(pywalk, thread_pyenv_310) { run_python(pyenv("3.10.13"), THREAD, 10); }
Test(pywalk, thread_pyenv_313) { run_python(pyenv("3.13.0"), THREAD, 13); }

/* A process never added gets no walk: the program returns at its map lookup. */
Test(pywalk, process_not_added)
{
	const char *python = "/usr/bin/python3.11";
	struct pywalk_stats st;
	struct pyproc_info info;
	struct sampler s;
	struct target t;
	struct tally n = { .mode = ANY };
	struct pywalk *pw;

	if (access(python, X_OK)) {
		cr_skip_test("%s not installed", python);
		return;
	}
	pw = open_walker(&s);
	if (!pw)
		return;
	start_target(python, script_loop, &t);
	cr_assert_eq(pyproc_detect("/proc", t.pid, &info), 0);
	n.pid = t.pid;
	sample(&s, pw, t.pid, &info, &n);
	pywalk_get_stats(pw, &st);
	cr_expect_geq(n.samples, WANT_SAMPLES);
	cr_expect_eq(n.joined, 0);
	cr_expect_eq(st.walks, 0, "%llu walks of processes never added",
		     (unsigned long long)st.walks);
	cr_expect_eq(pywalk_process_info(pw, t.pid, &info), -ENOENT);
	cr_expect_eq(st.procs, 0);
	stop_target(&t);
	pywalk_free(pw);
	close_sampler(&s);
}

/*
 * Hostile memory: the process's thread state and frames made up in a
 * buffer of its own (the layout added points _PyRuntime there), rewritten
 * between rounds into chains that loop, leave the process, or name no
 * code.  Each walk must say so (TORN, TRUNCATED, NO_TSTATE), bounded,
 * and the process goes on, unharmed: the program only reads.
 */
static const char script_hostile[] =
	"import ctypes, os, sys, threading\n"
	"buf = ctypes.create_string_buffer(1 << 16)\n"
	"os.write(int(sys.argv[1]), b'%d %d\\n' % (ctypes.addressof(buf), threading.get_ident()))\n"
	"while True:\n"
	"    pass\n";

struct fake {
	int memfd;
	uint64_t base, ident;
	uint64_t rt, interp, ts, cframe, f1, f2, code;
};

static void put64(const struct fake *f, uint64_t addr, uint64_t v)
{
	cr_assert_eq(pwrite(f->memfd, &v, 8, (off_t)addr), 8, "writing the target at %#llx",
		     (unsigned long long)addr);
}

/* The runtime -> interpreter -> thread state -> (cframe ->) frame F1 chain. */
static void fake_chain(const struct fake *f, const struct pyproc_info *info, uint64_t ident)
{
	const struct pyproc_offsets *o = &info->off;

	put64(f, f->rt + o->runtime_interp_head, f->interp);
	put64(f, f->interp + o->interp_threads_head, f->ts);
	put64(f, f->ts + o->tstate_thread_id, ident);
	put64(f, f->ts + o->tstate_next, 0);
	if (o->cframe_current_frame != PYPROC_OFF_NONE) {
		put64(f, f->ts + o->tstate_frame, f->cframe);
		put64(f, f->cframe + o->cframe_current_frame, f->f1);
	} else {
		put64(f, f->ts + o->tstate_frame, f->f1);
	}
	put64(f, f->f1 + o->frame_code, f->code);
	put64(f, f->f2 + o->frame_code, f->code);
}

static pid_t start_hostile(const char *python, struct target *t, struct fake *f)
{
	char line[128], a1[16];
	int ready[2];
	unsigned long long addr = 0, ident = 0;
	struct pollfd pfd;
	ssize_t n;

	strcpy(t->dir, "/tmp/test-pywalk.XXXXXX");
	cr_assert(mkdtemp(t->dir));
	snprintf(t->script, sizeof(t->script), "%s/target.py", t->dir);
	FILE *sf = fopen(t->script, "wx");
	cr_assert(sf);
	fputs(script_hostile, sf);
	cr_assert_eq(fclose(sf), 0);
	cr_assert_eq(pipe(ready), 0);
	t->pid = fork();
	cr_assert(t->pid >= 0);
	if (t->pid == 0) {
		char *env[] = { "PATH=/usr/bin:/bin", NULL };

		close(ready[0]);
		snprintf(a1, sizeof(a1), "%d", ready[1]);
		execle(python, python, "-I", "-S", t->script, a1, (char *)NULL, env);
		_exit(127);
	}
	close(ready[1]);
	pfd = (struct pollfd){ .fd = ready[0], .events = POLLIN };
	cr_assert_eq(poll(&pfd, 1, 60000), 1, "%s did not start", python);
	n = read(ready[0], line, sizeof(line) - 1);
	cr_assert(n > 0, "%s exited at start", python);
	line[n] = '\0';
	close(ready[0]);
	cr_assert_eq(sscanf(line, "%llu %llu", &addr, &ident), 2, "%s said '%s'", python, line);
	snprintf(line, sizeof(line), "/proc/%d/mem", (int)t->pid);
	f->memfd = open(line, O_RDWR | O_CLOEXEC);
	cr_assert(f->memfd >= 0);
	f->base = (addr + 4095) & ~4095ull;
	f->ident = ident;
	f->rt = f->base;
	f->interp = f->base + 0x1000;
	f->ts = f->base + 0x5000;
	f->cframe = f->base + 0x6000;
	f->f1 = f->base + 0x7000;
	f->f2 = f->base + 0x7800;
	f->code = f->base + 0x8000;
	return t->pid;
}

struct round {
	const char *what;
	uint16_t flags;      /* each joined walk's, exactly */
	int nr;              /* its frames */
};

/* Samples one round of hostile memory: every joined walk has R's flags and frames. */
static void hostile_round(struct sampler *s, struct pywalk *pw, const struct pyproc_info *info,
			  pid_t pid, const struct round *r, const char *python)
{
	struct tally n = { .mode = ANY, .pid = pid };

	sample(s, pw, pid, info, &n);
	cr_log_info("%s, %s: %u samples, %u joined, %u torn, %u truncated, %u no tstate, %u frames at most",
		    python, r->what, n.samples, n.joined, n.torn, n.truncated, n.no_tstate, n.max_nr);
	cr_expect_geq(n.joined * 10, n.samples * 9, "%s, %s: %u of %u joined", python, r->what,
		      n.joined, n.samples);
	cr_expect_eq(r->flags & PYWALK_TORN ? n.torn : 0, n.torn, "%s, %s: torn", python, r->what);
	cr_expect_eq(r->flags & PYWALK_TORN ? n.joined : n.torn, n.torn, "%s, %s: %u of %u torn",
		     python, r->what, n.torn, n.joined);
	cr_expect_eq(r->flags & PYWALK_TRUNCATED ? n.joined : 0, n.truncated,
		     "%s, %s: %u of %u truncated", python, r->what, n.truncated, n.joined);
	cr_expect_eq(r->flags & PYWALK_NO_TSTATE ? n.joined : 0, n.no_tstate,
		     "%s, %s: %u of %u without a thread state", python, r->what, n.no_tstate, n.joined);
	cr_expect_eq(n.max_nr, (unsigned)r->nr, "%s, %s: %u frames", python, r->what, n.max_nr);
}

static void run_hostile(const char *python)
{
	struct pyproc_info info;
	struct sampler s;
	struct target t;
	struct fake f;
	struct pywalk *pw;
	const struct pyproc_offsets *o;
	int st;

	if (access(python, X_OK)) {
		cr_skip_test("%s not installed", python);
		return;
	}
	pw = open_walker(&s);
	if (!pw)
		return;
	start_hostile(python, &t, &f);
	cr_assert_eq(pyproc_detect("/proc", t.pid, &info), 0);
	cr_assert_eq(info.status, PYPROC_OK);
	o = &info.off;
	info.runtime_addr = f.rt;
	fake_chain(&f, &info, f.ident);
	cr_assert_eq(pywalk_add_process(pw, t.pid, &info), 0);

	put64(&f, f.f1 + o->frame_previous, f.f1);
	hostile_round(&s, pw, &info, t.pid, &(struct round){ "a frame its own caller", PYWALK_TORN, 1 }, python);
	put64(&f, f.f1 + o->frame_previous, 0x10000);
	hostile_round(&s, pw, &info, t.pid, &(struct round){ "a caller outside the process", PYWALK_TORN, 1 }, python);
	put64(&f, f.f1 + o->frame_previous, f.f2);
	put64(&f, f.f2 + o->frame_previous, f.f1);
	hostile_round(&s, pw, &info, t.pid, &(struct round){ "two frames each other's caller", PYWALK_TRUNCATED, PYWALK_MAX_FRAMES }, python);
	put64(&f, f.f1 + o->frame_code, f.code + 1);
	hostile_round(&s, pw, &info, t.pid, &(struct round){ "code at an odd address", PYWALK_TORN, 0 }, python);
	put64(&f, f.ts + o->tstate_next, f.ts);
	put64(&f, f.ts + o->tstate_thread_id, f.ident + 8);
	hostile_round(&s, pw, &info, t.pid, &(struct round){ "thread states in a ring, none this thread's", PYWALK_NO_TSTATE, 0 }, python);
	put64(&f, f.interp + o->interp_threads_head, 0xdead0000);
	hostile_round(&s, pw, &info, t.pid, &(struct round){ "thread states outside the process", PYWALK_TORN, 0 }, python);

	cr_expect_eq(waitpid(t.pid, &st, WNOHANG), 0, "%s died under the walks", python);
	close(f.memfd);
	stop_target(&t);
	pywalk_free(pw);
	close_sampler(&s);
}

Test(pywalk, hostile_debian_python3) { run_hostile("/usr/bin/python3.11"); }
Test(pywalk, hostile_pyenv_310) { run_hostile(pyenv("3.10.13")); }
Test(pywalk, hostile_pyenv_312) { run_hostile(pyenv("3.12.1")); }
Test(pywalk, hostile_pyenv_313) { run_hostile(pyenv("3.13.0")); }

/* The verifier of this kernel takes the program as built (nothing attached). */
Test(pywalk, verifier_accepts)
{
	struct pywalk_opts o = { .sz = sizeof(o) };
	struct pywalk *pw = NULL;
	int r;

	if (geteuid() != 0) {
		cr_skip_test("needs root (BPF)");
		return;
	}
	r = pywalk_open(&o, &pw);
	cr_assert_eq(r, 0, "the kernel refused the program: %s (bpftool -d prog load build/pywalk.bpf.o "
		     "/sys/fs/bpf/x type perf_event shows the verifier's log)", strerror(-r));
	cr_expect_null(pywalk_take(pw, 0, 1, 1), "a walk from nowhere");
	pywalk_free(pw);
}
