#!/usr/bin/env bash
# Pipe mode: `perfrecd -o -` streams perf data to stdout.  perf script -i -
# must show hot_function while the workload runs, perf report -i - --stats
# must count samples with a clean stderr, a saved stream must pass
# perfrecctl verify (as a file and on stdin) with perf's sample count,
# SIGUSR2 must not rotate or break the stream, and a terminal on stdout and
# compression (which perf 6.1 cannot read in a stream) are refused.
. "$(dirname "$0")/lib.sh"
require_events; require_perf

"$WORKLOAD" 12 >/dev/null &
wl=$!

# Live into perf script.
"$PERFRECD" -o - -e cpu-clock -F 499 -g --duration 2 2>"$T/d1.log" \
	| perf script -i - -F comm,ip,sym >"$T/script" 2>"$T/script.err"
rc=("${PIPESTATUS[@]}")
[ "${rc[0]}" = 0 ] || { cat "$T/d1.log"; fail "perfrecd -o - exited ${rc[0]}"; }
[ "${rc[1]}" = 0 ] || { cat "$T/script.err"; fail "perf script -i - exited ${rc[1]}"; }
check_perf_stderr "perf script -i -" "$T/script.err"
hot=$(grep -c hot_function "$T/script")
[ "$hot" -gt 0 ] || fail "perf script -i - shows no hot_function samples"
awk '/hot_function/ {inhot=1; next} /^[^ \t]/ || /^$/ {inhot=0} inhot && /caller_function/ {found=1} END {exit !found}' "$T/script" \
	|| fail "no callchain in the stream shows caller_function calling hot_function"
note "perf script -i -: $hot hot_function lines"

# Live into perf report --stats.
"$PERFRECD" -o - -e cpu-clock -F 499 --duration 2 2>"$T/d2.log" | perf report -i - --stats >"$T/stats" 2>"$T/stats.err"
check_perf_stderr "perf report -i - --stats" "$T/stats.err"
n=$(awk '/SAMPLE events:/ {print $3; exit}' "$T/stats")
[ -n "$n" ] && [ "$n" -gt 0 ] || { cat "$T/stats"; fail "perf report -i - counted no samples"; }
note "perf report -i - --stats: $n samples"

# A saved stream, with a SIGUSR2 in the middle; stopped by SIGINT.
"$PERFRECD" -o - -e cpu-clock -F 499 >"$T/stream.data" 2>"$T/d3.log" &
DAEMON_PID=$!
sleep 1
kill -USR2 $DAEMON_PID
sleep 1
kill -INT $DAEMON_PID
for _ in $(seq 100); do kill -0 $DAEMON_PID 2>/dev/null || break; sleep 0.1; done
wait $DAEMON_PID; rc=$?
DAEMON_PID=
[ $rc = 0 ] || { cat "$T/d3.log"; fail "perfrecd -o - exited $rc after SIGINT"; }
grep -q "Ignoring SIGUSR2" "$T/d3.log" || { cat "$T/d3.log"; fail "SIGUSR2 was not ignored with a log line"; }
kill $wl 2>/dev/null; wait $wl 2>/dev/null
[ "$(head -c 8 "$T/stream.data")" = PERFILE2 ] || fail "the stream does not start with PERFILE2"
[ "$(od -An -tu8 -j8 -N8 "$T/stream.data" | tr -d ' ')" = 16 ] || fail "the stream's header is not the 16-byte pipe header"
"$PERFRECCTL" verify "$T/stream.data" >"$T/verify" || { cat "$T/verify"; fail "perfrecctl verify rejected the stream"; }
"$PERFRECCTL" verify - <"$T/stream.data" >"$T/verify2" || fail "perfrecctl verify - rejected the stream on stdin"
ours=$(sed -n 's/.*, \([0-9]*\) samples)$/\1/p' "$T/verify")
perf report -i - --stats <"$T/stream.data" >"$T/s3" 2>"$T/s3.err"
check_perf_stderr "perf report -i - (saved stream)" "$T/s3.err"
theirs=$(awk '/SAMPLE events:/ {print $3; exit}' "$T/s3")
[ -n "$ours" ] && [ "$ours" = "$theirs" ] || fail "perfrecctl counts $ours samples, perf $theirs"
[ "$(grep -c 'ATTR events' "$T/s3")" -ge 1 ] || fail "perf saw no HEADER_ATTR records"
"$PERFRECCTL" dump - <"$T/stream.data" | grep -q "HOSTNAME" || fail "perfrecctl dump - shows no HOSTNAME feature"
perf report -i - --header-only <"$T/stream.data" 2>/dev/null | grep -q "# hostname : $(hostname)" \
	|| fail "perf shows no hostname from the stream's HEADER_FEATURE records"
note "saved stream: $ours samples (perf agrees)"

# A reader that leaves ends the recording cleanly (no kill by SIGPIPE).
timeout 90 bash -c '"$0" -o - -e cpu-clock --duration 120 2>"$1" | head -c 100 >/dev/null; exit ${PIPESTATUS[0]}' \
	"$PERFRECD" "$T/head.log"
rc=$?
[ $rc = 0 ] || { cat "$T/head.log"; fail "perfrecd -o - | head: exit $rc (124: it did not notice the reader leaving)"; }
grep -q "reader of stdout went away" "$T/head.log" || { cat "$T/head.log"; fail "no log line for the reader leaving"; }
# A reader that leaves before the stream's start is written is the same.
timeout 90 bash -c '"$0" -o - -e cpu-clock --duration 120 2>"$1" | true; exit ${PIPESTATUS[0]}' "$PERFRECD" "$T/true.log"
rc=$?
[ $rc = 0 ] || { cat "$T/true.log"; fail "perfrecd -o - | true: exit $rc"; }
grep -q "reader of stdout went away" "$T/true.log" || { cat "$T/true.log"; fail "no log line for a reader that never read"; }

# Refusals, each with a clear line.
script -qec "$PERFRECD -o - --duration 1" /dev/null >"$T/tty.out" 2>&1 && fail "perfrecd -o - wrote to a terminal"
grep -q "Refusing to write perf data to a terminal" "$T/tty.out" || { cat "$T/tty.out"; fail "no clear error for a terminal on stdout"; }
"$PERFRECD" -o - -z --duration 1 >/dev/null 2>"$T/z.err" && fail "perfrecd -o - -z was accepted"
grep -q "cannot be used with -o -" "$T/z.err" || { cat "$T/z.err"; fail "no clear error for -o - with compression"; }
exit 0
