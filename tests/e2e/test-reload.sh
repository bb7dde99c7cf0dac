#!/usr/bin/env bash
# SIGHUP: a good change takes effect (new frequency in the next file), a
# bad one is refused while the old configuration keeps recording, and
# every CPU is recorded on both sides of the reload.  (How long the gap
# across a reload is, is measured by tests/bench/timing.sh.)
. "$(dirname "$0")/lib.sh"
require_events; require_perf

conf=$T/conf
printf '[record]\nfrequency=199\ncallchain=no\n[output]\ndirectory=%s\n' "$T/out" >"$conf"
"$WORKLOAD" 20 >/dev/null &
wl=$!
start=$(date +%s.%N)
"$PERFRECD" -c "$conf" 2>"$T/err" &
DAEMON_PID=$!
logged() { grep -q "$1" "$T/err"; }
wait_for 30 logged "Recording" || { cat "$T/err"; fail "perfrecd did not start recording"; }
sleep 1   # some recording in the first file
printf '[record]\nfrequency=lots\n' >"$conf"
kill -HUP $DAEMON_PID
wait_for 30 logged "Reload refused" || { cat "$T/err"; fail "no answer to a bad reload within 30 s"; }
kill -0 $DAEMON_PID || fail "a bad reload killed the daemon"
grep -q "Reload refused: .*conf:2: frequency" "$T/err" || { cat "$T/err"; fail "bad reload not refused with file:line"; }
[ "$(ls "$T/out"/*.data 2>/dev/null | wc -l)" = 0 ] || fail "a refused reload rotated the file"
printf '[record]\nfrequency=499\ncallchain=no\n[output]\ndirectory=%s\n' "$T/out" >"$conf"
kill -HUP $DAEMON_PID
wait_for 30 logged "Configuration reloaded; events reopened" || { cat "$T/err"; fail "the good reload did not happen within 30 s"; }
sleep 1   # some recording in the second file
kill -INT $DAEMON_PID; wait $DAEMON_PID; rc=$?; DAEMON_PID=
run=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { print e - s }')
kill $wl 2>/dev/null
[ $rc = 0 ] || { cat "$T/err"; fail "perfrecd exited $rc"; }
files=($(ls "$T/out"/*.data))
[ ${#files[@]} = 2 ] || { ls "$T/out"; fail "expected 2 files (before and after the reload)"; }
f1=$(perf report -i "${files[0]}" --header-only 2>/dev/null | grep 'name = cpu-clock' | grep -o 'sample_freq } = [0-9]*')
f2=$(perf report -i "${files[1]}" --header-only 2>/dev/null | grep 'name = cpu-clock' | grep -o 'sample_freq } = [0-9]*')
[ "$f1" = "sample_freq } = 199" ] || fail "first file: $f1 (expected 199 through the refused reload)"
[ "$f2" = "sample_freq } = 499" ] || fail "second file: $f2 (expected 499 after the reload)"
for f in "${files[@]}"; do "$PERFRECCTL" verify "$f" >/dev/null || fail "$f does not verify"; done
# Every CPU is recorded on both sides, and the second file takes over from
# the first within the run (the old events run until the new ones are
# open, so the two may even overlap).
for cpu in $(seq 0 $(($(nproc) - 1))); do
	a=$(perf script -i "${files[0]}" -C $cpu -F time --ns 2>/dev/null | tail -1 | tr -d ' :')
	b=$(perf script -i "${files[1]}" -C $cpu -F time --ns 2>/dev/null | head -1 | tr -d ' :')
	[ -n "$a" ] && [ -n "$b" ] || fail "cpu $cpu: no samples in one of the files (last '$a', first '$b')"
	awk -v a="$a" -v b="$b" -v run="$run" 'BEGIN { exit !(b - a < run) }' \
		|| fail "cpu $cpu: gap from $a to $b across the reload, longer than the whole run"
	note "cpu $cpu: first file ends at $a, second begins at $b"
done
exit 0
