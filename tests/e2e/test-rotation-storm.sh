#!/usr/bin/env bash
# 100 SIGUSR2 in a second: only valid files, and a daemon still running.
. "$(dirname "$0")/lib.sh"
require_events; require_perf

"$PERFRECD" -o "$T/out" -F 999 -g 2>"$T/err" &
DAEMON_PID=$!
sleep 1
for i in $(seq 100); do kill -USR2 $DAEMON_PID; sleep 0.01; done
sleep 1
kill -0 $DAEMON_PID 2>/dev/null || { cat "$T/err"; fail "perfrecd died during the storm"; }
kill -INT $DAEMON_PID; wait $DAEMON_PID; rc=$?; DAEMON_PID=
[ $rc = 0 ] || { cat "$T/err"; fail "perfrecd exited $rc"; }
ls "$T/out"/*.tmp 2>/dev/null && fail "a .tmp file was left behind"
n=0
for f in "$T/out"/*.data; do
	"$PERFRECCTL" verify "$f" >/dev/null || fail "perfrecctl verify rejected $f"
	perf report -i "$f" --stats >/dev/null 2>"$T/e"
	check_perf_stderr "perf report --stats $f" "$T/e"
	n=$((n + 1))
done
note "$n files, all valid"
[ $n -ge 2 ] || fail "the storm produced no rotation"
exit 0
