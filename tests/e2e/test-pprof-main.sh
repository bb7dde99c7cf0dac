#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# pprof's main binary and --no-inline (issue 26).  pprof readers take the
# profile's first mapping for its main binary (go tool pprof prints it as
# "File:"); perfrecctl pprof put the mappings in the order the samples met
# them, so a profile began with whatever the first sample hit: the kernel,
# ld.so, libc.  A workload (pmain) that starts in the kernel and in libc
# before its own code runs is recorded; its profile, by --pid and by
# --comm, must name pmain as its file.  And with --no-inline the flat
# shares go tool pprof gives its functions agree with perf report
# --no-inline's within 1 point (without it, the hot function's inlined
# callees take its share, as they should).
. "$(dirname "$0")/lib.sh"
require_events; require_perf
command -v go >/dev/null || skip "go (golang-go) is not installed: no pprof reader"
command -v cc >/dev/null || skip "no C compiler to build the workload"
export GOCACHE=$T/gocache GOFLAGS=-mod=mod GOTOOLCHAIN=local

cat >"$T/pmain.c" <<'SRC'
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}
static inline __attribute__((always_inline)) unsigned long mix(unsigned long x)
{
	for (int i = 0; i < 50; i++)
		x = (x ^ (x >> 31)) * 0xbf58476d1ce4e5b9UL;
	return x;
}
static inline __attribute__((always_inline)) unsigned long scramble(unsigned long x)
{
	for (int i = 0; i < 50; i++)
		x ^= x >> 13, x *= 0x9E3779B97F4A7C15UL;
	return x;
}
__attribute__((noinline)) unsigned long work(unsigned long n)
{
	unsigned long s = 0;

	for (unsigned long i = 0; i < n; i++) {
		s += mix(i);
		s ^= scramble(s);
	}
	return s;
}
int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 1, t0 = now();
	static char buf[1 << 20];
	unsigned long s = 0;
	int fd = open("/dev/null", O_WRONLY);

	/* First the kernel (writes), then libc (memset), then our own code. */
	while (now() - t0 < 0.3)
		if (write(fd, buf, sizeof(buf)) < 0)
			return 1;
	while (now() - t0 < 0.6)
		memset(buf, (int)s++, sizeof(buf));
	while (now() - t0 < secs)
		s += work(200000 + (s & 1));
	printf("%lu\n", s);
	return 0;
}
SRC
cc -O2 -g -fno-omit-frame-pointer -o "$T/pmain" "$T/pmain.c" || fail "cannot build the workload"

"$PERFRECD" -o "$T/out" --socket '' -e cpu-clock -F 999 -g 2>"$T/err" &
DAEMON_PID=$!
wait_for 30 grep -qs Recording "$T/err" || { cat "$T/err"; fail "perfrecd did not start"; }
"$T/pmain" 3 >/dev/null & wpid=$!
wait $wpid || fail "the workload failed"
kill -INT $DAEMON_PID; wait $DAEMON_PID; rc=$?; DAEMON_PID=
[ $rc = 0 ] || { cat "$T/err"; fail "perfrecd exited $rc"; }
f=$(only_file "$T/out") || exit 1

# The main binary, by --pid and by --comm.
for sel in "--pid $wpid" "--comm pmain"; do
	# shellcheck disable=SC2086
	"$PERFRECCTL" pprof --no-debuginfod $sel -o "$T/m.pb.gz" "$f" 2>"$T/pprof.err" || { cat "$T/pprof.err"; fail "pprof $sel failed"; }
	go tool pprof -raw "$T/m.pb.gz" >"$T/raw" 2>"$T/go.err" || { cat "$T/go.err"; fail "go tool pprof cannot read the profile"; }
	file=$(go tool pprof -top "$T/m.pb.gz" 2>/dev/null | sed -n 's/^File: //p')
	note "pprof $sel: File: $file"
	# The kernel and libc were hit first: the test means something.
	grep -q 'kernel.kallsyms' "$T/raw" && grep -q 'libc.so' "$T/raw" || fail "pprof $sel: no kernel or no libc samples"
	[ "$file" = pmain ] || fail "pprof $sel: go tool pprof names '$file' as the profile's file, not pmain"
done

# Flat shares with --no-inline: perf report's (each address is its
# symbol's, perf 6.1 expands no inlines in -g callchains) against go tool
# pprof's.  perf's share of a symbol among pmain's samples: its row of
# pmain over the sum of pmain's rows.  (perf 6.1's --comm filter counts
# other tasks' kernel samples in and loses a libc symbol here: not used.)
perf report -i "$f" --stdio --no-children --no-inline -g none --sort comm,sym 2>/dev/null |
	awk '/^ +[0-9.]+%/ && $2 == "pmain" && $3 ~ /^\[[.k]\]$/ && NF == 4 { sub("%", "", $1); s[$4] += $1; t += $1 }
		END { for (n in s) if (100 * s[n] / t >= 1) printf "%s %.2f\n", n, 100 * s[n] / t }' >"$T/perf.top"
grep -q '^work ' "$T/perf.top" || { cat "$T/perf.top"; fail "perf report shows no work in pmain"; }
top() {  # pprof options...
	"$PERFRECCTL" pprof --no-debuginfod --comm pmain "$@" -o "$T/t.pb.gz" "$f" 2>/dev/null || fail "pprof $* failed"
	go tool pprof -top -sample_index=samples -nodefraction=0 -nodecount=100000 "$T/t.pb.gz" 2>/dev/null |
		awk '$2 ~ /%$/ && NF >= 6 { sub("%", "", $2); print $6, $2 }'  # inlined ones end in "(inline)"
}
top --no-inline >"$T/pprof.top"
n=0
while read -r sym share; do
	ours=$(awk -v s="$sym" '$1 == s { print $2; exit }' "$T/pprof.top")
	[ -n "$ours" ] || { head "$T/pprof.top"; fail "$sym ($share% in perf report --no-inline) is not in pprof --no-inline's top"; }
	awk -v a="$ours" -v b="$share" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1) }' ||
		fail "$sym: go tool pprof's flat share $ours% (pprof --no-inline) differs from perf report --no-inline's $share% by more than 1 point"
	note "$sym: pprof --no-inline $ours%, perf report --no-inline $share%"
	n=$((n + 1))
done <"$T/perf.top"
[ $n -ge 2 ] || fail "only $n functions compared"
# Inlines expanded, the flat share goes to the inlined functions.
top >"$T/inl.top"
grep -Eq '^(mix|scramble) ' "$T/inl.top" || { head "$T/inl.top"; fail "without --no-inline, pprof shows no inlined frame"; }
exit 0
