#!/usr/bin/env bash
# Looking back while perfrecd rotates every second and keeps three files
# (issue 28 items 6 and 7): rounds of concurrent `cut --from -2s --to now`
# and `ls` against the live daemon, the files being published, removed by
# retention and begun under them.
#   - every cut either exits 0 with its whole window (no gap reported but
#     one before the oldest file kept, the sample times perf script finds
#     span the window with no hole longer than a rotation's seam) and a
#     file that verifies, or fails saying
#     what is missing ("nothing written") and leaves no output;
#   - no ls (text or JSON) calls the daemon's live .tmp a leftover ("left
#     by an earlier boot", "its writer is gone"), nor lists a file as
#     unreadable, and every .tmp it lists is being written;
#   - most cuts succeed (the rounds test the races, not a daemon that
#     cannot answer), and perf and perfparser read one of them.
. "$(dirname "$0")/lib.sh"
require_events; require_perf; require_perfparser

shopt -s nullglob
ROUNDS=${ROUNDS:-8}
CUTS=${CUTS:-6}
LSS=${LSS:-5}

printf '[output]\nrotate-interval=1s\nmax-files=3\n' >"$T/conf"
"$WORKLOAD" 300 1 >/dev/null &
wl=$!
trap 'kill $wl 2>/dev/null; cleanup' EXIT
"$PERFRECD" -c "$T/conf" -o "$T/out" --socket "$T/sock" -e cpu-clock -F 199 2>"$T/daemon.err" &
DAEMON_PID=$!
# Retention at work: the fourth file published and the first gone.
rotated() {
	local first=("$T"/out/*-000001.data*) fourth=("$T"/out/*-000004.data)
	[ ${#first[@]} = 0 ] && [ ${#fourth[@]} = 1 ]
}
wait_for 60 rotated || { cat "$T/daemon.err"; ls -la "$T/out"; fail "perfrecd did not rotate and retain 3 files within 60 s"; }

for ((r = 0; r < ROUNDS; r++)); do
	pids=()
	for ((i = 0; i < CUTS; i++)); do
		( "$PERFRECCTL" --socket "$T/sock" cut --from -2s --to now -o "$T/cut-$r-$i.data" "$T/out" \
			2>"$T/cut-$r-$i.err"; echo $? >"$T/cut-$r-$i.rc" ) &
		pids+=($!)
	done
	for ((i = 0; i < LSS; i++)); do
		if ((i % 2)); then
			( "$PERFRECCTL" ls --json "$T/out" >"$T/ls-$r-$i.json" 2>&1; echo $? >"$T/ls-$r-$i.rc" ) &
		else
			( "$PERFRECCTL" ls "$T/out" >"$T/ls-$r-$i.txt" 2>&1; echo $? >"$T/ls-$r-$i.rc" ) &
		fi
		pids+=($!)
	done
	wait "${pids[@]}"
done
kill -0 $DAEMON_PID || { cat "$T/daemon.err"; fail "perfrecd died under the cuts"; }

# --- ls ---------------------------------------------------------------------
for f in "$T"/ls-*.rc; do
	[ "$(cat "$f")" = 0 ] || { cat "${f%.rc}".*; fail "$(basename "${f%.rc}") exited $(cat "$f")"; }
done
for f in "$T"/ls-*.txt; do
	if grep -Eq 'earlier boot|writer is gone|^unreadable' "$f"; then
		cat "$f"; fail "$(basename "$f"): ls calls a file of the live daemon a leftover or unreadable"
	fi
	grep -q '(being written)' "$f" || { cat "$f"; fail "$(basename "$f"): ls shows no file being written"; }
done
python3 - "$T"/ls-*.json <<'EOF' || fail "ls --json calls a file of the live daemon a leftover or unreadable"
import json, sys
for p in sys.argv[1:]:
    d = json.load(open(p))
    assert not d["unreadable"], "%s: unreadable %r" % (p, d["unreadable"])
    live = [f for f in d["files"] if f["in_progress"]]
    assert live and all(f["being_written"] for f in live), "%s: %r" % (p, live)
EOF

# --- cuts -------------------------------------------------------------------
ok=0; failed=0
for rcf in "$T"/cut-*.rc; do
	n=${rcf%.rc}; rc=$(cat "$rcf")
	if [ "$rc" != 0 ]; then
		grep -q 'nothing written' "$n.err" || { cat "$n.err"; fail "$(basename "$n") exited $rc without saying what is missing"; }
		left=("$n".data*)
		[ ${#left[@]} = 0 ] || fail "$(basename "$n") failed and left an output: ${left[*]}"
		note "$(basename "$n") refused: $(grep 'nothing written' "$n.err" | head -1)"
		failed=$((failed + 1))
		continue
	fi
	# The one gap a whole cut may name: before the oldest file kept (retention
	# removed it before the cut listed the directory); holes are then
	# looked for from the first sample on.
	lead=0
	if grep 'gap in the window' "$n.err" | grep -vq 'before the oldest file kept'; then
		cat "$n.err"; fail "$(basename "$n") exited 0 with a hole"
	fi
	grep -q 'gap in the window' "$n.err" && lead=1
	if grep -Eq 'skipped|earlier boot|read as far as it was checkpointed' "$n.err"; then
		cat "$n.err"; fail "$(basename "$n") exited 0 with a file left out"
	fi
	"$PERFRECCTL" verify "$n.data" >/dev/null || fail "$(basename "$n").data does not verify"
	cdl=$("$PERFRECCTL" dump "$n.data" | grep CLOCK_DATA) || fail "$(basename "$n").data has no clock data"
	wall=$(sed -n 's/.*wall clock \([0-9]*\) ns.*/\1/p' <<<"$cdl")
	clk=$(sed -n 's/.*, clock \([0-9]*\) ns.*/\1/p' <<<"$cdl")
	window=$(sed -n 's/^perfrecctl cut: window \([^ ]*\) \.\. \([^ ]*\) .*/\1 \2/p' "$n.err")
	perf script -i "$n.data" -F time --ns 2>/dev/null | python3 -c '
import sys, datetime
wall, clk = int(sys.argv[1]), int(sys.argv[2])
def ns(s):
    d = datetime.datetime.strptime(s[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc)
    return int(d.timestamp()) * 10**9 + int(s[20:23]) * 10**6
lo, hi = ns(sys.argv[3]), ns(sys.argv[4])
ts = []
for line in sys.stdin:
    s = line.strip().rstrip(":")
    if s:
        a, b = s.split(".")
        ts.append(wall + int(a) * 10**9 + int(b) - clk)
ts.sort()
assert ts, "no samples"
# The window line is to the ms, and each input file placed its samples by
# its own clock pair (perfrecd reads the two clocks of a pair apart, by
# milliseconds) while this uses the cut'"'"'s: 50 ms of slack at the edges.
assert ts[0] >= lo - 5 * 10**7 and ts[-1] < hi + 5 * 10**7, "samples outside the window: %d .. %d not in %d .. %d" % (ts[0], ts[-1], lo, hi)
edges = ([] if int(sys.argv[5]) else [lo]) + ts + [hi]
gap, at = max((edges[i + 1] - edges[i], edges[i]) for i in range(len(edges) - 1))
assert gap < 105 * 10**7, "a hole of %.3f s at %.3f s into the window" % (gap / 1e9, (at - lo) / 1e9)
' "$wall" "$clk" $window $lead || { cat "$n.err"; fail "$(basename "$n") exited 0 without its whole window"; }
	ok=$((ok + 1))
done
note "$ok cuts whole, $failed refused saying what is missing"
[ $ok -ge $((ROUNDS * CUTS / 2)) ] || fail "only $ok of $((ROUNDS * CUTS)) cuts succeeded"
one=$(ls "$T"/cut-*.data | head -1)
perf report -i "$one" --stats >/dev/null 2>"$T/report.err"
check_perf_stderr "perf report ($(basename "$one"))" "$T/report.err"
[ "$(check_perfparser "$one")" = "$(perf_samples "$one")" ] || fail "perfparser and perf count other samples in $(basename "$one")"
kill -INT $DAEMON_PID; wait $DAEMON_PID; rc=$?; DAEMON_PID=
[ $rc = 0 ] || { cat "$T/daemon.err"; fail "perfrecd exited $rc"; }
exit 0
