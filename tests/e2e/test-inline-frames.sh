#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Inline frames of host-unwound files (issue 29).  perf 6.1 adds inline frames only
# in its own DWARF unwinder (the "(inlined)" lines of perf script and
# report on a --call-graph dwarf file); the entries of a plain callchain
# (PERF_SAMPLE_CALLCHAIN: -g files, perf's own and ours, and files that
# perfrecd unwound on the host) are each named by the symbol holding the
# address, without the functions inlined there.  This test pins that fact
# for perf's own -g file, so that a perf which expands them shows up here,
# and holds what is ours:
#  - the same samples, unwound by perf from the raw DWARF file and by
#    perfrecd on the host: with inline expansion off, perf report's leaf
#    shares of the workload agree within 1 point;
#  - our views (folded) show the inlined functions of the host-unwound
#    file as frames of their own, as perf does for the DWARF file, with
#    leaf shares within 1 point of perf's.
. "$(dirname "$0")/lib.sh"
require_events; require_perf
command -v cc >/dev/null || skip "no C compiler to build the workload"

cat >"$T/inl.c" <<'SRC'
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
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
	double secs = argc > 1 ? atof(argv[1]) : 1, t0;
	unsigned long s = 0;
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	t0 = ts.tv_sec + ts.tv_nsec / 1e9;
	do {
		s += work(2000000 + (s & 1));
		clock_gettime(CLOCK_MONOTONIC, &ts);
	} while (ts.tv_sec + ts.tv_nsec / 1e9 - t0 < secs);
	printf("%lu\n", s);
	return 0;
}
SRC
cc -O2 -g -fomit-frame-pointer -o "$T/inl" "$T/inl.c" || fail "cannot build the workload"
cc -O2 -g -fno-omit-frame-pointer -o "$T/inlfp" "$T/inl.c" || fail "cannot build the frame-pointer workload"

# perf's own -g file: no inline frames, although the binary has the DWARF.
perf record -q --buildid-mmap -g -F 999 -o "$T/fp.data" "$T/inlfp" 1 >/dev/null 2>"$T/fp.err" ||
	{ cat "$T/fp.err"; fail "perf record -g failed"; }
fpn=$(perf script -i "$T/fp.data" -F comm,ip,sym 2>/dev/null | grep -c ' work$')
[ "$fpn" -gt 0 ] || fail "perf's -g file has no samples in work"
if perf script -i "$T/fp.data" -F ip,sym 2>/dev/null | grep -q '(inlined)'; then
	note "this perf expands inline frames of plain callchains: compare host-unwound files with inlines on"
fi

# The same samples both ways: perfrecd keeps the raw stacks (perf unwinds
# them itself, with inline frames), and perfrecctl unwind turns that file
# into the host-unwound one, as --unwind host does while recording.
"$PERFRECD" -o "$T/out" --socket '' -e cpu-clock -F 999 --call-graph dwarf --unwind file -m 8M 2>"$T/err" &
DAEMON_PID=$!
started() { grep -q Recording "$T/err" 2>/dev/null; }
wait_for 30 started || { cat "$T/err"; fail "perfrecd did not start"; }
"$T/inl" 3 >/dev/null || fail "the workload failed"
kill -INT $DAEMON_PID; wait $DAEMON_PID; rc=$?; DAEMON_PID=
[ $rc = 0 ] || { cat "$T/err"; fail "perfrecd exited $rc"; }
raw=$(only_file "$T/out") || exit 1
mv "$raw" "$T/dwarf.data"
"$PERFRECCTL" unwind "$T/dwarf.data" -o "$T/host.data" 2>"$T/unwind.err" || { cat "$T/unwind.err"; fail "perfrecctl unwind failed"; }
f=$T/host.data

# Leaf shares of the workload, by symbol, inline expansion off.
shares() {
	perf report -i "$1" --stdio --no-children --no-inline -g none --comm inl --sort sym --percentage relative 2>/dev/null |
		awk '/^ +[0-9.]+%/ { sub(/%/, "", $1); $2 = ""; $1 = $1 " "; print }' | sed 's/  */ /g' | sort -k2
}
shares "$T/dwarf.data" >"$T/perf.shares"
shares "$f" >"$T/ours.shares"
sed 's/^/# perf: /' "$T/perf.shares" | head -5
sed 's/^/# ours: /' "$T/ours.shares" | head -5
w1=$(awk '$NF == "work" { print $1 }' "$T/perf.shares")
w2=$(awk '$NF == "work" { print $1 }' "$T/ours.shares")
[ -n "$w1" ] && [ -n "$w2" ] || fail "work is not among the leaves (perf ${w1:-none}, ours ${w2:-none})"
awk -v a="$w1" -v b="$w2" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1) }' ||
	fail "work's leaf share: $w1% in perf's DWARF file, $w2% in the host-unwound one"

# Our views name the inlined functions in the host-unwound file.
"$PERFRECCTL" folded --no-debuginfod --comm inl -o "$T/ours.folded" "$f" 2>/dev/null || fail "folded failed"
for fn in mix scramble; do
	grep -q ";$fn " "$T/ours.folded" || grep -q ";$fn;" "$T/ours.folded" ||
		{ head -3 "$T/ours.folded"; fail "our folded stacks have no inlined $fn frame"; }
done
perf script -i "$T/dwarf.data" -F ip,sym 2>/dev/null | grep -q 'scramble (inlined)' ||
	fail "perf shows no inline frame in its own DWARF file (the oracle changed)"

# And with their shares: the leaf, inlined functions included, of perf's
# DWARF file (first line of each sample) and of our folded stacks.
perf script -i "$T/dwarf.data" --comm inl -F ip,sym 2>/dev/null | awk '
	NF == 0 { first = 1; next }
	first { first = 0; n++; $1 = ""; sub(/^ /, ""); sub(/ \(inlined\)$/, ""); c[$0]++ }
	BEGIN { first = 1 }
	END { for (k in c) printf "%.2f %s\n", 100 * c[k] / n, k }' | sort -k2 >"$T/perf.leaves"
awk '{ n = $NF; $NF = ""; k = split($0, f, ";"); sub(/ *$/, "", f[k]); c[f[k]] += n; t += n }
	END { for (k in c) printf "%.2f %s\n", 100 * c[k] / t, k }' "$T/ours.folded" | sort -k2 >"$T/ours.leaves"
sed 's/^/# perf leaves: /' "$T/perf.leaves"
sed 's/^/# our leaves: /' "$T/ours.leaves"
for fn in mix scramble work; do
	a=$(awk -v f="$fn" '$2 == f { print $1 }' "$T/perf.leaves")
	b=$(awk -v f="$fn" '$2 == f { print $1 }' "$T/ours.leaves")
	awk -v a="${a:-0}" -v b="${b:-0}" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1) }' ||
		fail "$fn's leaf share with inline frames: ${a:-0}% in perf's DWARF file, ${b:-0}% in our views of the host-unwound one"
done
exit 0
