#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Before/after of perfrecd's own CPU per sample with host unwinding
# (tests/bench/README.md, issue 25, "unwind-ab"): two built trees, BEFORE
# and AFTER (e.g. a scratch copy of main from `git archive`, and this
# one), each recording `--call-graph dwarf,8192 --unwind host -F 999
# -e cpu-clock` on every CPU for SECS while six-lib.sh's six programs and
# tests/e2e/nofp run in loops, alternating BEFORE, AFTER, PAIRS times, so a
# shared machine's load falls on both.  Each tree has its own build-id
# cache, warmed by one run first: what is measured is a restart's steady
# state (tables loaded, not built).  Per run: perfrecd's user and system
# CPU (wait4) over the samples in its file, the same from /proc/PID/stat
# from 5 s in to the end of the load ("steady": start-up left out; the
# samples of that window taken pro rata: cpu-clock samples idle CPUs too,
# so the file's samples come at an even rate over its SECS + 3 s), the samples the kernel lost
# (LOST records), the ones left behind (the manifest's unwind.behind) and
# the load average.  Needs root and perf (perf report --stats).
#
# Usage: unwind-ab.sh BEFORE_TREE AFTER_TREE [PAIRS (3)] [SECS (20)]
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BEFORE=$1 AFTER=$2 PAIRS=${3:-3} SECS=${4:-20}
PERFRECCTL=$ROOT/tools/perfrecctl
RESULTS=${BENCH_RESULTS:-$ROOT/tests/bench/results}
die() { echo "bench unwind-ab: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (perf_event_open on all CPUs)"
for t in "$BEFORE" "$AFTER"; do [ -x "$t/daemon/perfrecd" ] || die "$t: not built (make all)"; done
[ -x "$ROOT/tests/e2e/nofp" ] || make -s -C "$ROOT" tests/e2e/nofp || die "cannot build tests/e2e/nofp"
TMP=$(mktemp -d /tmp/perfrec-bench-ab.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
T=$TMP
fail() { die "$*"; }
. "$ROOT/tests/e2e/six-lib.sh"
. "$ROOT/tests/bench/stats.sh"
six_require
six_setup
mkdir -p "$RESULTS"
OUT=$RESULTS/unwind-ab.txt
: > "$OUT"

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# run NAME TREE: one recording; a line on stdout.
run() {
	local name=$1 tree=$2 d=$TMP/run pid dpid t0 c0 t1 c1 u s smp lost behind l0 l1 f
	rm -rf "$d"
	mkdir -p -m 0700 "$d/out" "$TMP/bid-$name"
	printf '[output]\nrotate-interval=0\nrotate-size=0\nmax-bytes=0\nmax-files=0\nbuildid-cache=%s\n' \
		"$TMP/bid-$name" > "$d/c.conf"
	l0=$(cut -d' ' -f1 /proc/loadavg)
	python3 "$ROOT/tests/bench/rusage.py" "$d/ru" "$tree/tests/plain-perfrecd" -c "$d/c.conf" \
		--socket "$d/s" -o "$d/out" -e cpu-clock -F 999 --call-graph dwarf,8192 --unwind host \
		-d $((SECS + 3)) >/dev/null 2>"$d/err" &
	pid=$!
	sleep 0.5
	local end=$(($(date +%s) + SECS)) p pids=()
	for p in $SIX_PROGRAMS; do
		(while rem=$((end - $(date +%s))); [ "$rem" -gt 0 ]; do
			eval "timeout $rem $(six_cmd "$p")" >/dev/null 2>&1
		done) & pids+=($!)
	done
	(while [ "$(date +%s)" -lt "$end" ]; do "$ROOT/tests/e2e/nofp" 1 >/dev/null 2>&1; done) & pids+=($!)
	sleep 5
	dpid=$(pgrep -P "$pid" | head -1)
	t0=$(date +%s.%N) c0=$(cpu_ticks "$dpid")
	wait "${pids[@]}"
	t1=$(date +%s.%N) c1=$(cpu_ticks "$dpid")
	wait "$pid" || { cat "$d/err" >&2; die "$name: perfrecd failed"; }
	l1=$(cut -d' ' -f1 /proc/loadavg)
	read -r u s _ < "$d/ru"
	f=$(ls "$d"/out/*.data | head -1)
	read -r smp _ _ lost < <(stats "$f")
	behind=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get("unwind", {}).get("behind", "-"))' \
		"$f.json" 2>/dev/null || echo -)
	awk -v n="$name" -v u="$u" -v s="$s" -v smp="$smp" -v lost="$lost" -v b="$behind" -v l0="$l0" -v l1="$l1" \
		-v t0="$t0" -v t1="$t1" -v c0="$c0" -v c1="$c1" -v S="$((SECS + 3))" -v tk="$(getconf CLK_TCK)" 'BEGIN {
		printf "%-6s usr %.3f s sys %.3f s samples %d: %.2f us/sample, steady %.2f us/sample; lost %d, behind %s; load %s-%s\n",
			n, u, s, smp, (u + s) * 1e6 / smp, (c1 - c0) / tk * 1e6 / (smp * (t1 - t0) / S), lost, b, l0, l1 }'
}

echo "warming the build-id caches" >&2
run before "$BEFORE" >/dev/null
run after "$AFTER" >/dev/null
for i in $(seq "$PAIRS"); do
	run before "$BEFORE" | tee -a "$OUT"
	run after "$AFTER" | tee -a "$OUT"
done
