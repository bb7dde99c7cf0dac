#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Each file's CLOCK_DATA pair (a wall-clock time and the recording clock's
# time, read together) is what perf, perfrecctl cut and every reader use to
# put its samples in wall time.  A rotation stamps the new file before it
# finishes the old one, and with host unwinding finishing waits for the
# unwinding worker; a snapshot merges its history between the two reads.
# Were the wall time read after that work, every sample of the file would
# be placed that much later.  Here: host unwinding at 999 Hz while a
# workload without frame pointers runs, files rotated every second, and a
# snapshot; the wall-clock minus monotonic offset of every file's pair must
# agree within 5 ms (the two clocks move together; NTP slews far slower).
. "$(dirname "$0")/lib.sh"
require_events
[ -x "$TOP/tests/e2e/nofp" ] || fail "tests/e2e/nofp is not built (make tests/e2e/nofp)"

"$TOP/tests/e2e/nofp" 3600 >/dev/null &
wl=$!
trap 'kill $wl 2>/dev/null; cleanup' EXIT
printf '[output]\nrotate-interval=1s\n' >"$T/conf"
"$PERFRECD" -c "$T/conf" -o "$T/out" --socket "$T/sock" -e cpu-clock -F 999 \
	--call-graph dwarf --unwind host 2>"$T/daemon.err" &
DAEMON_PID=$!
shopt -s nullglob
rotated() { local f=("$T"/out/*-00000[4-9].data); [ ${#f[@]} -ge 1 ]; }
wait_for 60 rotated || { cat "$T/daemon.err"; ls -la "$T/out"; fail "perfrecd did not rotate 4 times within 60 s"; }
timeout 30 "$PERFRECCTL" --socket "$T/sock" snapshot "$T/snap.data" >"$T/snap.out" 2>&1 ||
	{ cat "$T/snap.out"; fail "perfrecctl snapshot failed"; }
kill -TERM $DAEMON_PID
wait $DAEMON_PID || { cat "$T/daemon.err"; fail "perfrecd exited non-zero"; }
DAEMON_PID=

files=("$T"/out/*.data "$T/snap.data")
[ ${#files[@]} -ge 6 ] || { ls -la "$T/out"; fail "only ${#files[@]} files"; }
for f in "${files[@]}"; do
	cdl=$("$PERFRECCTL" dump "$f" | grep CLOCK_DATA) || fail "$(basename "$f") has no clock data"
	wall=$(sed -n 's/.*wall clock \([0-9]*\) ns.*/\1/p' <<<"$cdl")
	clk=$(sed -n 's/.*, clock \([0-9]*\) ns.*/\1/p' <<<"$cdl")
	[ -n "$wall" ] && [ -n "$clk" ] || fail "cannot read the pair of $(basename "$f"): $cdl"
	echo "$(basename "$f") $((wall - clk))"
done >"$T/offsets"
read -r lo hi < <(awk '{ if (min == "" || $2 < min) min = $2; if (max == "" || $2 > max) max = $2 } END { print min, max }' "$T/offsets")
note "${#files[@]} files; wall minus clock from $lo to $hi ns (spread $(((hi - lo) / 1000)) us)"
[ $((hi - lo)) -lt 5000000 ] || { cat "$T/offsets"; fail "the files' clock pairs disagree by $(((hi - lo) / 1000)) us: a wall time read apart from its clock"; }
exit 0
