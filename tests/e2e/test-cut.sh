#!/usr/bin/env bash
# "What was this host doing at 14:03?": perfrecctl cut of a window inside
# phase two of a three-phase workload, recorded with rotate-interval=2s,
# given once as ISO 8601 UTC and once as local HH:MM:SS.mmm (in a zone
# that is not UTC).  Each cut must be accepted by perf report, perfparser
# (no time violations) and perfrecctl verify; hold no sample of phases one
# or three; hold exactly the samples that perf script --ns finds in that
# window in the individual files (all of them, and phase two's); span at
# least three files; and resolve the symbols of the workload, which
# started before the first file, in perf and in perfrecctl folded (the
# vdso's too: phases calls clock_gettime), with ~/.debug empty (lib.sh).
. "$(dirname "$0")/lib.sh"
require_events; require_perf; require_perfparser
PHASES=$TOP/tests/e2e/phases
[ -x "$PHASES" ] || fail "tests/e2e/phases is not built (make tests/e2e/phases)"

printf '[output]\nrotate-interval=2s\n' >"$T/conf"
# Started before the daemon: its maps reach the files only as synthesized state.
"$PHASES" 3 8 3 "$T/go" >"$T/phases.out" &
wl=$!
"$PERFRECD" -c "$T/conf" -o "$T/out" --socket '' -e cpu-clock -F 499 -g 2>"$T/err" &
DAEMON_PID=$!
recording() { kill -0 $DAEMON_PID 2>/dev/null && ls "$T/out"/*.data.tmp >/dev/null 2>&1; }
wait_for 30 recording || { cat "$T/err"; fail "perfrecd did not start a file"; }
touch "$T/go"
phases_done() { [ "$(wc -l <"$T/phases.out")" = 3 ]; }
wait_for 60 phases_done || fail "the workload did not finish its phases"
wait $wl
kill -INT $DAEMON_PID; wait $DAEMON_PID; rc=$?; DAEMON_PID=
[ $rc = 0 ] || { cat "$T/err"; fail "perfrecd exited $rc"; }
cat "$T/phases.out" | sed 's/^/# /'

# The window: phase two less a second at each end, to the millisecond.
read -r from_ns to_ns <<<"$(awk '$2 == 2 { print $4, $6 }' "$T/phases.out" | python3 -c '
import sys
s, e = map(int, sys.stdin.read().split())
f = -(-(s + 1000000000) // 1000000) * 1000000
t = (e - 1000000000) // 1000000 * 1000000
print(f, t)')"
iso() { python3 -c 'import sys, datetime; t = int(sys.argv[1]); print(datetime.datetime.fromtimestamp(t // 10**9, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S") + ".%03dZ" % (t % 10**9 // 10**6))' "$1"; }
# Local HH:MM:SS.mmm in a zone with a half-hour offset; "yesterday" if midnight passed since.
local_hms() { TZ=Asia/Kolkata python3 -c '
import sys, time
t = int(sys.argv[1]); s = t // 10**9
p = "yesterday " if time.strftime("%Y-%m-%d", time.localtime(s)) != time.strftime("%Y-%m-%d") else ""
print(p + time.strftime("%H:%M:%S", time.localtime(s)) + ".%03d" % (t % 10**9 // 10**6))' "$1"; }
from_iso=$(iso "$from_ns"); to_iso=$(iso "$to_ns")
from_loc=$(local_hms "$from_ns"); to_loc=$(local_hms "$to_ns")
note "window $from_iso .. $to_iso, local (Asia/Kolkata) $from_loc .. $to_loc"

# Reference: the window counted in each file with perf script, through its clock data.
: >"$T/ref"
for f in "$T"/out/*.data; do
	cd_line=$("$PERFRECCTL" dump "$f" | grep CLOCK_DATA) || fail "no CLOCK_DATA in $f"
	wall=$(sed -n 's/.*wall clock \([0-9]*\) ns.*/\1/p' <<<"$cd_line")
	clk=$(sed -n 's/.*, clock \([0-9]*\) ns.*/\1/p' <<<"$cd_line")
	perf script -i "$f" -F time,ip,sym --ns -G 2>/dev/null | python3 -c '
import sys
wall, clk, f, t = map(int, sys.argv[1:5])
lo, hi = clk + (f - wall), clk + (t - wall)
for line in sys.stdin:
    ts = line.split(":")[0].strip()
    if not ts:
        continue
    s, ns = ts.split(".")
    v = int(s) * 10**9 + int(ns)
    if lo <= v < hi:
        parts = line.split()
        print(parts[-1] if len(parts) >= 3 else "?")' "$wall" "$clk" "$from_ns" "$to_ns" >>"$T/ref"
done
ref_total=$(wc -l <"$T/ref"); ref_two=$(grep -cx phase_two "$T/ref")
note "reference: $ref_total samples in the window over the files, $ref_two in phase_two"
[ "$ref_two" -gt 0 ] || fail "the reference count found no phase_two samples"

check_cut() {
	local what=$1 out=$2
	"$PERFRECCTL" verify "$out" >/dev/null || fail "$what: perfrecctl verify rejects the cut"
	local n; n=$(perf_samples "$out")
	perf report -i "$out" --stats >/dev/null 2>"$T/report.err"
	check_perf_stderr "perf report ($what)" "$T/report.err"
	[ "$n" = "$ref_total" ] || fail "$what: perf counts $n samples in the cut, the files hold $ref_total in the window"
	local pp; pp=$(check_perfparser "$out")
	[ "$pp" = "$ref_total" ] || fail "$what: perfparser counts $pp samples, expected $ref_total"
	perf script -i "$out" -F ip,sym -G 2>/dev/null | awk '{print $NF}' >"$T/syms"
	local one two three
	one=$(grep -cx phase_one "$T/syms"); two=$(grep -cx phase_two "$T/syms"); three=$(grep -cx phase_three "$T/syms")
	[ "$one" = 0 ] && [ "$three" = 0 ] || fail "$what: $one samples of phase one and $three of phase three in the cut"
	[ "$two" = "$ref_two" ] || fail "$what: $two phase_two samples in the cut, $ref_two in the files' window"
	# The workload predates every file: its samples resolve from the synthesized maps alone.
	perf script -i "$out" --comms phases -F ip,sym,dso -G 2>/dev/null >"$T/wl"
	[ -s "$T/wl" ] || fail "$what: no samples of the workload"
	if grep -q 'unknown' "$T/wl"; then
		grep 'unknown' "$T/wl" | sort | uniq -c | head; fail "$what: unresolved workload samples"
	fi
	# Ours too (with HOME and ~/.debug empty, lib.sh): the vdso frames included.
	"$PERFRECCTL" folded --no-debuginfod --comm phases -o "$T/wl.folded" "$out" 2>"$T/folded.err" ||
		{ cat "$T/folded.err"; fail "$what: perfrecctl folded failed"; }
	if grep -q 'unknown' "$T/wl.folded"; then
		grep 'unknown' "$T/wl.folded" | head; fail "$what: perfrecctl folded leaves workload frames unnamed"
	fi
	local used; used=$(grep -c '^perfrecctl cut: used ' "$T/cut.err")
	[ "$used" -ge 3 ] || { cat "$T/cut.err"; fail "$what: the window spans $used files, expected at least 3"; }
	grep -q "wrote $out: $ref_total samples" "$T/cut.err" || { cat "$T/cut.err"; fail "$what: stderr does not report the samples"; }
	note "$what: $n samples ($two of phase two) from $used files"
}

"$PERFRECCTL" cut --from "$from_iso" --to "$to_iso" -o "$T/iso.data" "$T/out" 2>"$T/cut.err" ||
	{ cat "$T/cut.err"; fail "cut with ISO 8601 times failed"; }
check_cut "ISO 8601 window" "$T/iso.data"
TZ=Asia/Kolkata "$PERFRECCTL" cut --from "$from_loc" --to "$to_loc" -o "$T/local.data" "$T/out" 2>"$T/cut.err" ||
	{ cat "$T/cut.err"; fail "cut with local times failed"; }
check_cut "local HH:MM:SS.mmm window" "$T/local.data"
# The same window: the same samples at the same times.
cmp <(perf script -i "$T/iso.data" -F time,ip --ns -G 2>/dev/null) <(perf script -i "$T/local.data" -F time,ip --ns -G 2>/dev/null) ||
	fail "the ISO and the local cut of one window differ"

# The spans feature: the window's real coverage, inside the window.
"$PERFRECCTL" dump "$T/iso.data" >"$T/dump"
grep -q 'PERFREC_SPANS' "$T/dump" || { cat "$T/dump"; fail "no spans feature in the cut"; }
exit 0
