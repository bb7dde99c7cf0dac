#!/usr/bin/env bash
# Looking back over a directory with a hole in it: a daemon recording
# compressed files is stopped, and a few seconds later a second one records
# plain files into the same directory, with a control socket.
#   - perfrecctl ls shows the hole as a gap, in text and in JSON;
#   - a cut across the hole reads the compressed and the plain files, names
#     the gap on stderr, and holds exactly the samples perf script finds in
#     that window in the files (perf and perfparser agree); with -z it writes
#     the same samples compressed;
#   - a window of the last seconds (--from -3s --to now) gets the part not
#     yet published from the daemon: samples newer than every published file;
#   - a window with nothing in it (before the files, inside the hole) exits
#     1 with "nothing recorded between ..." and writes nothing;
#   - an unparseable time exits 2 naming it.
. "$(dirname "$0")/lib.sh"
require_events; require_perf; require_perfparser

printf '[output]\nrotate-interval=2s\n' >"$T/conf"
"$WORKLOAD" 120 1 >/dev/null &
wl=$!
trap 'kill $wl 2>/dev/null; cleanup' EXIT
published() { [ "$(ls "$T/out"/*.data 2>/dev/null | wc -l)" -ge "$1" ]; }

"$PERFRECD" -c "$T/conf" -o "$T/out" --socket '' -e cpu-clock -F 199 -z 2>"$T/err1" &
DAEMON_PID=$!
wait_for 30 published 2 || { cat "$T/err1"; fail "the first daemon published no 2 files"; }
kill -INT $DAEMON_PID; wait $DAEMON_PID; rc=$?; DAEMON_PID=
[ $rc = 0 ] || { cat "$T/err1"; fail "the first perfrecd exited $rc"; }
n1=$(ls "$T"/out/*.data | wc -l)
stopped=$(date +%s%N)
# A hole of three seconds: wait until the clock has passed it.
hole_over() { [ $(( $(date +%s%N) - stopped )) -ge 3000000000 ]; }
wait_for 10 hole_over || fail "the clock did not move"

"$PERFRECD" -c "$T/conf" -o "$T/out" --socket "$T/sock" -e cpu-clock -F 199 2>"$T/err2" &
DAEMON_PID=$!
wait_for 30 published $((n1 + 2)) || { cat "$T/err2"; fail "the second daemon published no 2 files"; }
recording() { ls "$T/out"/*.data.tmp >/dev/null 2>&1; }
wait_for 10 recording || fail "the second daemon has no file being written"

# --- ls -----------------------------------------------------------------
"$PERFRECCTL" ls "$T/out" >"$T/ls.txt" || fail "perfrecctl ls failed"
sed 's/^/# /' "$T/ls.txt"
grep -q '^-- gap: .* nothing recorded' "$T/ls.txt" || fail "ls shows no gap line"
[ "$(grep -c '^-- gap' "$T/ls.txt")" = 1 ] || fail "ls shows more than the one gap"
grep -q 'zstd' "$T/ls.txt" && grep -q ' none ' "$T/ls.txt" || fail "ls does not tell compressed from plain files"
grep -q '(being written)' "$T/ls.txt" || fail "ls does not show the file being written"
"$PERFRECCTL" ls --json "$T/out" >"$T/ls.json" || fail "perfrecctl ls --json failed"
read -r gap_start gap_end last_pub_end <<<"$(python3 - "$T/ls.json" "$n1" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1])); n1 = int(sys.argv[2])
files, gaps = d["files"], d["gaps"]
assert len(gaps) == 1, "gaps: %r" % gaps
g = gaps[0]
assert g["seconds"] >= 2.5, "gap of %s s" % g["seconds"]
assert g["end_ns"] - g["start_ns"] == round(g["seconds"] * 1e9) or abs(g["seconds"] * 1e9 - (g["end_ns"] - g["start_ns"])) < 1e3
starts = [f["start_ns"] for f in files]
assert starts == sorted(starts), "not oldest first"
assert [f["compression"] for f in files[:n1]] == ["zstd"] * n1, [f["compression"] for f in files]
assert all(f["compression"] == "none" for f in files[n1:])
assert files[-1]["in_progress"] and not any(f["in_progress"] for f in files[:-1])
assert files[n1 - 1]["end_ns"] == g["start_ns"] and files[n1]["start_ns"] == g["end_ns"]
assert all(f["samples"] > 0 for f in files[:-1])
print(g["start_ns"], g["end_ns"], max(f["end_ns"] for f in files[:-1]))
EOF
)" || { cat "$T/ls.json"; fail "ls --json does not describe the directory"; }
note "gap $gap_start .. $gap_end"

# --- a window across the gap: compressed and plain inputs -----------------
from_ns=$((gap_start - 1500000000)); to_ns=$((gap_end + 1500000000))
iso() { python3 -c 'import sys, datetime; t = int(sys.argv[1]); print(datetime.datetime.fromtimestamp(t // 10**9, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S") + ".%09dZ" % (t % 10**9))' "$1"; }
ref_count() { # FROM_NS TO_NS FILE...: samples perf script finds in the window
	local f0=$1 t0=$2 total=0 f; shift 2
	for f in "$@"; do
		local cdl wall clk n
		cdl=$("$PERFRECCTL" dump "$f" | grep CLOCK_DATA) || continue
		wall=$(sed -n 's/.*wall clock \([0-9]*\) ns.*/\1/p' <<<"$cdl")
		clk=$(sed -n 's/.*, clock \([0-9]*\) ns.*/\1/p' <<<"$cdl")
		n=$(perf script -i "$f" -F time --ns 2>/dev/null | python3 -c '
import sys
wall, clk, f, t = map(int, sys.argv[1:5])
lo, hi = clk + (f - wall), clk + (t - wall)
n = 0
for line in sys.stdin:
    s = line.strip().rstrip(":")
    if s:
        a, b = s.split(".")
        n += lo <= int(a) * 10**9 + int(b) < hi
print(n)' "$wall" "$clk" "$f0" "$t0")
		total=$((total + n))
	done
	echo $total
}
"$PERFRECCTL" cut --from "$(iso $from_ns)" --to "$(iso $to_ns)" -o "$T/gap.data" "$T"/out/*.data 2>"$T/cut.err" ||
	{ cat "$T/cut.err"; fail "cut across the gap failed"; }
sed 's/^/# /' "$T/cut.err"
grep -q 'gap in the window: ' "$T/cut.err" || fail "cut does not name the gap inside the window"
ref=$(ref_count $from_ns $to_ns "$T"/out/*.data)
n=$(perf_samples "$T/gap.data")
[ "$ref" -gt 0 ] && [ "$n" = "$ref" ] || fail "cut across the gap: $n samples, the files hold $ref in the window"
"$PERFRECCTL" verify "$T/gap.data" >/dev/null || fail "the cut across the gap does not verify"
perf report -i "$T/gap.data" --stats >/dev/null 2>"$T/report.err"
check_perf_stderr "perf report (cut across the gap)" "$T/report.err"
[ "$(check_perfparser "$T/gap.data")" = "$n" ] || fail "perfparser counts other samples in the cut across the gap"
used_z=0
for f in $(sed -n 's/^perfrecctl cut: used \([^ :]*\).*/\1/p' "$T/cut.err"); do
	"$PERFRECCTL" dump "$T/out/$f" | grep -q '^  COMPRESSED' && used_z=$((used_z + 1))
done
[ $used_z -ge 1 ] || fail "the cut used no compressed input"
"$PERFRECCTL" cut -z --from "$(iso $from_ns)" --to "$(iso $to_ns)" -o "$T/gapz.data" "$T"/out/*.data 2>/dev/null ||
	fail "cut -z failed"
"$PERFRECCTL" dump "$T/gapz.data" | grep -q '^  COMPRESSED' || fail "cut -z wrote no compressed file"
[ "$(perf_samples "$T/gapz.data")" = "$n" ] || fail "cut -z holds other samples than the plain cut"

# --- nothing in the window ------------------------------------------------
for w in "2000-01-01T00:00:00Z 2000-01-01T00:01:00Z" "$(iso $((gap_start + 500000000))) $(iso $((gap_end - 500000000)))"; do
	set -- $w
	"$PERFRECCTL" cut --from "$1" --to "$2" -o "$T/empty.data" "$T/out" 2>"$T/empty.err"; rc=$?
	[ $rc = 1 ] || { cat "$T/empty.err"; fail "an empty window ($1 .. $2) exits $rc, not 1"; }
	grep -q 'nothing recorded between .* the files hold ' "$T/empty.err" || { cat "$T/empty.err"; fail "no clear message for an empty window"; }
	[ ! -e "$T/empty.data" ] || fail "an empty window left an output file"
	ls "$T"/empty.data* >/dev/null 2>&1 && fail "an empty window left a temporary file"
done
"$PERFRECCTL" cut --from "14:61" --to now -o "$T/bad.data" "$T/out" 2>"$T/bad.err"; rc=$?
[ $rc = 2 ] && grep -q -- "--from: '14:61': minute 61" "$T/bad.err" || { cat "$T/bad.err"; fail "a bad time exits $rc without naming the problem"; }

# --- the live file, from the daemon --------------------------------------
pub_max=0
for f in "$T"/out/*.data; do
	m=$(perf script -i "$f" -F time --ns 2>/dev/null | tr -d ' :' | sort -n | tail -1 | tr -d .)
	[ -n "$m" ] && [ "$m" -gt "$pub_max" ] && pub_max=$m
done
"$PERFRECCTL" --socket "$T/sock" cut --from -3s --to now -o "$T/live.data" "$T/out" 2>"$T/live.err" ||
	{ cat "$T/live.err"; fail "cut of the last seconds failed"; }
sed 's/^/# /' "$T/live.err"
grep -q "unpublished data from perfrecd's snapshot" "$T/live.err" || fail "the live part did not come from the daemon"
"$PERFRECCTL" verify "$T/live.data" >/dev/null || fail "the live cut does not verify"
check_perfparser "$T/live.data" >/dev/null
live_max=$(perf script -i "$T/live.data" -F time --ns 2>/dev/null | tr -d ' :' | sort -n | tail -1 | tr -d .)
[ -n "$live_max" ] && [ "$live_max" -gt "$pub_max" ] ||
	fail "the live cut's newest sample ($live_max) is not newer than the published files' ($pub_max)"
kill -INT $DAEMON_PID; wait $DAEMON_PID; rc=$?; DAEMON_PID=
[ $rc = 0 ] || { cat "$T/err2"; fail "the second perfrecd exited $rc"; }
exit 0
