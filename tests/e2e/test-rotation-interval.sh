#!/usr/bin/env bash
# rotate-interval=1s under load puts files on a grid: file k starts about
# k intervals after the first rotation, however long each rotation takes.
# Counting each interval from the end of the previous rotation adds every
# rotation's drain and synthesis (and the wait for the next flush) to all
# later files, and the start times drift away from the grid.  A file's
# start is its first sample (cpu-clock on every busy CPU at 999 Hz).
. "$(dirname "$0")/lib.sh"
require_events; require_perf

# A flush timer longer than the interval: the loop must wake up to rotate.
printf '[record]\nflush-interval=5s\n[output]\nrotate-interval=1s\n' >"$T/conf"
"$WORKLOAD" 30 >/dev/null &
wl=$!
# Process churn makes each rotation's /proc walk longer.
( end=$((SECONDS + 30)); while [ $SECONDS -lt $end ]; do /bin/true; done ) &
churn=$!
"$PERFRECD" -c "$T/conf" -o "$T/out" --socket '' -e cpu-clock -F 999 --no-call-graph 2>"$T/err" &
DAEMON_PID=$!
published() { kill -0 $DAEMON_PID 2>/dev/null && [ "$(ls "$T/out"/*.data 2>/dev/null | wc -l)" -ge 9 ]; }
wait_for 60 published || { ls "$T/out"; cat "$T/err"; fail "9 files were not published"; }
kill -INT $DAEMON_PID; wait $DAEMON_PID; rc=$?; DAEMON_PID=
kill $wl $churn 2>/dev/null; wait $wl $churn 2>/dev/null
[ $rc = 0 ] || { cat "$T/err"; fail "perfrecd exited $rc"; }

# File 1 began before the grid did (the events run during its synthesis);
# file 2 is the first to start at a rotation: the reference.
k=0
: >"$T/starts"
for f in $(ls "$T/out"/*.data | head -9); do
	k=$((k + 1))
	[ $k -ge 2 ] || continue
	first=$(perf script -i "$f" -F time --ns 2>/dev/null | tr -d ' :' | sort -n | head -1)
	[ -n "$first" ] || fail "no samples in $f"
	echo "$k $first" >>"$T/starts"
done
awk '
	NR == 1 { k0 = $1; t0 = $2; next }
	{
		want = $1 - k0; got = $2 - t0
		printf "# file %d starts %.3f s after file %d (grid: %d s)\n", $1, got, k0, want
		if (got < want - 0.1 || got > want + 0.1) bad = 1
	}
	END { exit bad }' "$T/starts" || fail "rotations drift off the rotate-interval grid by more than 10% of it"
exit 0
