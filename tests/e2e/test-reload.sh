#!/usr/bin/env bash
# SIGHUP: a good change takes effect (new frequency in the next file), a
# bad one is refused while the old configuration keeps recording, and the
# data has no gap across the reload.
. "$(dirname "$0")/lib.sh"
require_events; require_perf

conf=$T/conf
printf '[record]\nfrequency=199\ncallchain=no\n[output]\ndirectory=%s\n' "$T/out" >"$conf"
"$WORKLOAD" 20 >/dev/null &
wl=$!
"$PERFRECD" -c "$conf" 2>"$T/err" &
DAEMON_PID=$!
sleep 1.5
printf '[record]\nfrequency=lots\n' >"$conf"
kill -HUP $DAEMON_PID; sleep 1
kill -0 $DAEMON_PID || fail "a bad reload killed the daemon"
grep -q "Reload refused: .*conf:2: frequency" "$T/err" || { cat "$T/err"; fail "bad reload not refused with file:line"; }
[ "$(ls "$T/out"/*.data 2>/dev/null | wc -l)" = 0 ] || fail "a refused reload rotated the file"
printf '[record]\nfrequency=499\ncallchain=no\n[output]\ndirectory=%s\n' "$T/out" >"$conf"
kill -HUP $DAEMON_PID; sleep 2
kill -INT $DAEMON_PID; wait $DAEMON_PID; rc=$?; DAEMON_PID=
kill $wl 2>/dev/null
[ $rc = 0 ] || { cat "$T/err"; fail "perfrecd exited $rc"; }
files=($(ls "$T/out"/*.data))
[ ${#files[@]} = 2 ] || { ls "$T/out"; fail "expected 2 files (before and after the reload)"; }
f1=$(perf report -i "${files[0]}" --header-only 2>/dev/null | grep 'name = cpu-clock' | grep -o 'sample_freq } = [0-9]*')
f2=$(perf report -i "${files[1]}" --header-only 2>/dev/null | grep 'name = cpu-clock' | grep -o 'sample_freq } = [0-9]*')
[ "$f1" = "sample_freq } = 199" ] || fail "first file: $f1 (expected 199 through the refused reload)"
[ "$f2" = "sample_freq } = 499" ] || fail "second file: $f2 (expected 499 after the reload)"
for f in "${files[@]}"; do "$PERFRECCTL" verify "$f" >/dev/null || fail "$f does not verify"; done
# No gap: per CPU, the last sample of the first file and the first of the
# second are less than 100 ms apart (the old events run until the new
# ones are open).
for cpu in $(seq 0 $(($(nproc) - 1))); do
	a=$(perf script -i "${files[0]}" -C $cpu -F time --ns 2>/dev/null | tail -1 | tr -d ' :')
	b=$(perf script -i "${files[1]}" -C $cpu -F time --ns 2>/dev/null | head -1 | tr -d ' :')
	awk -v a="$a" -v b="$b" 'BEGIN { exit !(b - a < 0.1) }' || fail "cpu $cpu: gap from $a to $b across the reload"
done
exit 0
