#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The libperfrec(3) example, built as a user would: `make install` into a
# staging directory, compiled with the installed headers and pkg-config
# file.  Recording itself, its file must show the hot function on top (perf
# report), its caller (perf script), read in perfparser, carry the usual
# features, describe only its own process, and hold the samples of the
# thread it started after __start.  The same example with one line changed
# records the whole host.  ABI: a program built against the headers before
# libperfrec 0.2 (smaller opts structs) still runs against this library,
# an older record opts sz is accepted and trailing garbage refused.
. "$(dirname "$0")/lib.sh"
cd "$TOP" || exit 1

require_root
require_perf
require_perfparser
command -v pkg-config >/dev/null || skip "pkg-config is not installed"
command -v "${CC:-cc}" >/dev/null || skip "no C compiler"
perf stat -e cpu-clock true >/dev/null 2>&1 || skip "cannot open cpu-clock here"

D=$T/stage
mkdir -p "$D"
make -s install DESTDIR="$D" PREFIX=/usr >"$T/install.log" 2>&1 || { cat "$T/install.log"; fail "make install failed"; }
export PKG_CONFIG_PATH=$D/usr/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$D PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1
PC=$(pkg-config --cflags --libs libperfrec) || fail "pkg-config libperfrec failed"
EX=tests/example/selfprof.c

# At most 25 lines of code, blank lines and comments not counted.
loc=$(awk '/^\/\*/ {c=1} c { if (/\*\//) c=0; next } /^[ \t]*$/ || /^[ \t]*\/\// {next} {n++} END {print n}' "$EX")
[ "$loc" -le 25 ] || fail "$EX has $loc lines of code, more than 25"

build() { # SRC OUT [extra cflags...]
	local src=$1 out=$2
	shift 2
	# shellcheck disable=SC2086
	${CC:-cc} -std=gnu11 -Wall -Wextra -Werror -O2 -fno-omit-frame-pointer "$@" -o "$out" "$src" $PC -pthread \
		-Wl,-rpath,"$D/usr/lib" 2>"$T/cc.log" || { cat "$T/cc.log"; fail "$src does not build against the installed library"; }
	ldd "$out" | grep -q "$D/usr/lib/libperfrec.so" || { ldd "$out"; fail "$out did not load the staged libperfrec"; }
}

# --- the process records itself ----------------------------------------
build "$EX" "$T/selfprof"
"$T/selfprof" "$T/self.data" >"$T/self.out" 2>&1 || { cat "$T/self.out"; fail "selfprof failed"; }
[ ! -s "$T/self.out" ] || { cat "$T/self.out"; fail "the library printed something"; }
{ [ -f "$T/self.data" ] && [ ! -e "$T/self.data.tmp" ]; } || fail "self.data was not published"

top=$(perf report -i "$T/self.data" --stdio --no-children -g none --sort sym 2>"$T/rep.err" |
	awk '!/^#/ && NF {print $NF; exit}')
check_perf_stderr "perf report" "$T/rep.err"
[ "$top" = hot ] || { perf report -i "$T/self.data" --stdio --no-children -g none --sort sym | head -20; fail "top symbol is '$top', not hot"; }

perf script -i "$T/self.data" -F comm,tid,ip,sym >"$T/script.txt" 2>"$T/script.err" || fail "perf script failed"
check_perf_stderr "perf script" "$T/script.err"
# A callchain with hot directly followed by its caller worker.
awk '$2 == "hot" {h=1; next} h && $2 == "worker" {found=1} {h=0} END {exit !found}' "$T/script.txt" ||
	{ head -40 "$T/script.txt"; fail "perf script shows no chain hot <- worker"; }

check_perfparser "$T/self.data" >/dev/null

perf report -i "$T/self.data" --header-only -I >"$T/hdr.txt" 2>&1 || fail "perf report --header-only failed"
for f in "hostname" "os release" "arch" "nrcpus online" "cpudesc" "total memory" "cmdline" \
	 "time of first sample" "clockid" "reference time" "sibling threads"; do
	grep -q "^# $f" "$T/hdr.txt" || { cat "$T/hdr.txt"; fail "header lacks '$f'"; }
done
grep -q '^# perf version : 6\.1\.0-selfprof-libperfrec-' "$T/hdr.txt" ||
	{ grep 'perf version' "$T/hdr.txt"; fail "HEADER_VERSION does not name selfprof"; }
if grep '^# missing features' "$T/hdr.txt" | grep -Eq ' (BUILD_ID|CMDLINE|SAMPLE_TIME|CLOCK_DATA|EVENT_DESC)( |$)'; then
	grep '^# missing features' "$T/hdr.txt"; fail "a usual feature is missing"
fi

# Only the recording process is described, and its later thread is sampled.
perf script -i "$T/self.data" -F comm,pid,tid -G >"$T/tasks.txt" 2>/dev/null || fail "perf script -F pid,tid failed"
pid=$(awk '$1 == "selfprof" {split($2, a, "/"); print a[1]; exit}' "$T/tasks.txt")
[ -n "$pid" ] || fail "no selfprof samples"
perf script -i "$T/self.data" --show-task-events --show-mmap-events -F pid 2>/dev/null |
	grep -E 'PERF_RECORD_(COMM|FORK|MMAP2)' >"$T/state.txt"
[ -s "$T/state.txt" ] || fail "no task or mmap events in the file"
others=$(awk '{split($1, a, "/"); if (a[1] != "'"$pid"'" && a[1] != "0" && a[1] != "-1") print}' "$T/state.txt")
[ -z "$others" ] || { echo "$others" | head; fail "the self recording describes other processes"; }
later=$(awk '$1 == "selfprof" {split($2, a, "/"); if (a[2] != a[1]) print a[2]}' "$T/tasks.txt" | sort -u)
[ -n "$later" ] || fail "no samples of the thread started after __start"
note "self: top hot, caller worker, pid $pid, later thread(s) $later"

# --- one changed line: the whole host ----------------------------------
sed 's/\.target = PERFREC_TARGET_PROCESS/.target = PERFREC_TARGET_CPUS/' "$EX" >"$T/selfhost.c"
[ "$(diff "$EX" "$T/selfhost.c" | grep -c '^>')" = 1 ] || fail "the host variant is not one changed line"
build "$T/selfhost.c" "$T/selfhost"
"$T/selfhost" "$T/host.data" >"$T/host.out" 2>&1 || { cat "$T/host.out"; fail "the host variant failed"; }
check_perfparser "$T/host.data" >/dev/null
perf script -i "$T/host.data" -F comm,pid,ip,sym -G 2>/dev/null >"$T/host.txt" || fail "perf script on host.data failed"
grep -q '^ *selfhost .* hot$' "$T/host.txt" || fail "the host recording lacks selfhost's hot"
perf script -i "$T/host.data" --show-task-events -F pid 2>/dev/null | grep -q 'PERF_RECORD_COMM: [^ ]*:1/1$' ||
	fail "the host recording does not describe pid 1"
# Other processes' samples come when anything else ran (other tests do).
note "host: samples of $(awk '{print $1}' "$T/host.txt" | sort -u | wc -l) commands"

# --- ABI ---------------------------------------------------------------
# An older record opts (before clock) is accepted: the rest take defaults.
sed 's/\.sz = sizeof(o)/.sz = offsetof(struct perfrec_record_opts, clock)/' "$EX" >"$T/oldsz.c"
build "$T/oldsz.c" "$T/oldsz"
"$T/oldsz" "$T/oldsz.data" || fail "an older opts size was refused"
check_perfparser "$T/oldsz.data" >/dev/null

# Bytes this library does not know, set non-zero: -E2BIG, nothing written.
cat >"$T/newer.c" <<'EOF'
#include <errno.h>
#include <perfrec/perfrec.h>

int main(int argc, char **argv)
{
	struct { struct perfrec_record_opts o; unsigned long later; } n = { .later = 1 };
	struct perfrec_record *r;

	n.o.sz = sizeof(n);
	return perfrec_record__start(argv[1], &n.o, &r) == -E2BIG ? 0 : 1;
}
EOF
build "$T/newer.c" "$T/newer" -Wno-unused-parameter
"$T/newer" "$T/newer.data" || fail "trailing non-zero opts bytes were not refused with -E2BIG"
if [ -e "$T/newer.data" ] || [ -e "$T/newer.data.tmp" ]; then fail "a refused start left a file"; fi

# A program built against the headers before libperfrec 0.2 runs on this
# library: an evlist with the old opts records all CPUs, synthesis with the
# old opts describes every process.
base=9334532
if git -C "$TOP" cat-file -e "$base^{commit}" 2>/dev/null; then
	mkdir -p "$T/old/perfrec"
	for h in $(git -C "$TOP" ls-tree --name-only "$base" lib/include/perfrec/); do
		git -C "$TOP" show "$base:$h" >"$T/old/perfrec/$(basename "$h")"
	done
	grep -q 'target' "$T/old/perfrec/evlist.h" && fail "the old headers already have targets"
	cat >"$T/oldabi.c" <<'EOF'
#include <stdio.h>
#include <time.h>
#include <perfrec/perfrec.h>

static int count(void *ctx, const struct perf_event_header *h)
{
	if (h->type == PERF_RECORD_COMM)
		++*(int *)ctx;
	return 0;
}

int main(void)
{
	struct perfrec_evlist_opts eo = { .sz = sizeof(eo), .freq = 100, .clockid = CLOCK_MONOTONIC };
	struct perfrec_synth_opts so = { .sz = sizeof(so) };
	struct perfrec_evspec s;
	struct perfrec_cpumap *m;
	struct perfrec_evlist *el;
	int comms = 0;

	if (perfrec_evspec__parse("cpu-clock", NULL, &s, NULL, 0) < 0 || perfrec_cpumap__read(NULL, &m) < 0 ||
	    perfrec_evlist__new(m, &s, 1, &eo, &el) < 0 || perfrec_evlist__open(el, NULL, NULL) != 1)
		return 1;
	if (perfrec_synth__tasks(&so, count, &comms) < 0)
		return 2;
	printf("%zu %d %d\n", perfrec_evlist__nr_rings(el), m->nr, comms);
	perfrec_evlist__free(el);
	perfrec_cpumap__free(m);
	return 0;
}
EOF
	# shellcheck disable=SC2046
	${CC:-cc} -std=gnu11 -Wall -Werror -I"$T/old" -o "$T/oldabi" "$T/oldabi.c" \
		$(pkg-config --libs libperfrec) -Wl,-rpath,"$D/usr/lib" 2>"$T/cc.log" ||
		{ cat "$T/cc.log"; fail "a program for the old headers does not build"; }
	read -r rings cpus comms < <("$T/oldabi") || fail "a program built against the old headers failed"
	[ "$rings" = "$cpus" ] || fail "old evlist opts: $rings rings for $cpus CPUs (not all CPUs)"
	[ "$comms" -gt 1 ] || fail "old synth opts: $comms processes synthesized, not every one"
	note "old headers: $rings rings, $comms processes synthesized"
else
	note "not a git checkout with $base: the old-headers check is left out"
fi

# --- libperfrec(3) is installed, renders cleanly and covers the API ------
M=$D/usr/share/man/man3/libperfrec.3
[ -f "$M" ] || fail "make install did not install libperfrec.3"
v=$(sed -n 's/^VERSION := //p' Makefile)
grep -q "^\.TH LIBPERFREC 3 .* \"perfrecd $v\"" "$M" || fail "libperfrec.3's .TH does not carry perfrecd $v"
warn=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings=w -l "$M" 2>&1 >/dev/null)
[ -z "$warn" ] || { echo "$warn"; fail "libperfrec.3 renders with warnings"; }
for fn in $(grep -o 'perfrec_record__[a-z]*' lib/include/perfrec/record.h | sort -u); do
	grep -q "^\.BR $fn ()" "$M" || fail "libperfrec.3 does not describe $fn()"
done
note "libperfrec example: self, host, ABI and man page checks pass"

# --- symbol versions: the record object is LIBPERFREC_0.2, asked for by name
objdump -T "$D/usr/lib/libperfrec.so" | grep -q 'LIBPERFREC_0\.2 *perfrec_record__start$' ||
	fail "perfrec_record__start is not in the LIBPERFREC_0.2 version node"
objdump -T "$D/usr/lib/libperfrec.so" | grep -q 'LIBPERFREC_0 *perfrec_evlist__new$' ||
	fail "perfrec_evlist__new left LIBPERFREC_0"
objdump -p "$T/selfprof" | grep -q 'LIBPERFREC_0\.2' || fail "the example does not ask for LIBPERFREC_0.2"
