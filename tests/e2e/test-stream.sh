#!/bin/bash
# perfrecctl stream (io.perfrec.Subscribe) at a high rate:
#
# 1. A reader that keeps up gets the whole stream: 30 s at 4999 Hz with
#    callchains into a file, ended by SIGINT, is read by perf script with
#    no complaint, and holds no more samples than the daemon counted over
#    that span and at least half of them (a stream dropped after a few
#    seconds, as it was, or one with records twice, misses that).
# 2. A reader that stops reading is dropped after the stall time: the
#    stream still ends at a record boundary (perf script reads all of it),
#    and perfrecctl exits 1 saying why.
# 3. perfrecd stopping (SIGTERM) ends a stream at a record boundary with
#    its reason, and perfrecctl exits 0: nothing was lost.
. "$(dirname "$0")/lib.sh"
require_events
require_perf

S=$T/sock
ctl() { timeout 20 "$PERFRECCTL" --socket "$S" "$@"; }
samples() { ctl --json status | python3 -c 'import json,sys; print(json.load(sys.stdin)["samples"])'; }
subscribers() { ctl --json status | python3 -c 'import json,sys; print(json.load(sys.stdin)["subscribers"])'; }
# For wait_for, which runs its command again each try: the count is asked
# each try too.  Written `wait_for N test "$(subscribers)" = 1`, it was
# asked once, before the first try, and a stream that connected after that
# answer was never seen.
subscribers_are() { [ "$(subscribers)" = "$1" ]; }
BG=
trap 'kill $BG 2>/dev/null; cleanup' EXIT

mkdir -p "$T/out"
"$PERFRECD" -o "$T/out" --socket "$S" -F 4999 -g 2>"$T/log" &
DAEMON_PID=$!
wait_for 30 ctl ping >/dev/null 2>&1 || { cat "$T/log"; fail "no control socket"; }
"$WORKLOAD" 75 >/dev/null &
BG=$!

# perf script must read every record: exit 0 and nothing on stderr.
check_stream() {
	local f=$1 what=$2
	timeout 120 perf script -i "$f" -F comm,tid,ip,sym > "$T/script" 2>"$T/perr" ||
		{ cat "$T/perr"; fail "perf script failed on the $what"; }
	check_perf_stderr "perf script of the $what" "$T/perr"
	perf_samples "$f"
}

note "a reader that keeps up: 30 s into a file"
before=$(samples)
timeout --preserve-status -s INT 30 "$PERFRECCTL" --socket "$S" stream > "$T/live.data" 2>"$T/err"
rc=$?
after=$(samples)
[ $rc = 0 ] || { cat "$T/err"; grep -i stream "$T/log"; fail "stream exited $rc"; }
grep -q "cut short" "$T/log" && { grep -i stream "$T/log"; fail "perfrecd cut a stream short that was read"; }
n=$(check_stream "$T/live.data" "30 s stream") || { echo "$n"; exit 1; }
span=$((after - before))
note "stream: $n samples; perfrecd counted $span over the span"
[ "$n" -le "$span" ] || fail "the stream holds $n samples, more than the $span recorded meanwhile"
[ $((n * 2)) -ge "$span" ] || fail "the stream holds $n samples of the $span recorded meanwhile"
grep -q hot_function "$T/script" || fail "the stream shows no hot_function"
wait_for 10 subscribers_are 0 || fail "the subscriber is still counted after it left"

note "a reader that stops reading"
# The reader takes nothing until perfrecd has given up on it, then all.
"$PERFRECCTL" --socket "$S" stream 2>"$T/err" |
	{ wait_for 60 grep -q "cut short" "$T/log"; cat > "$T/stalled.data"; }
rc=${PIPESTATUS[0]}
[ $rc = 1 ] || { cat "$T/err"; fail "perfrecctl exited $rc after perfrecd dropped its stream, not 1"; }
grep -q "perfrecctl: perfrecd cut the stream short: its reader took nothing for 10 s" "$T/err" ||
	{ cat "$T/err"; fail "perfrecctl does not say why the stream ended"; }
grep -q "Stream to uid 0 pid [0-9]* cut short: its reader took nothing for 10 s" "$T/log" ||
	{ cat "$T/log"; fail "perfrecd did not log why it dropped the stream"; }
n=$(check_stream "$T/stalled.data" "dropped stream") || { echo "$n"; exit 1; }
[ "$n" -gt 0 ] || fail "the dropped stream holds no samples"
ctl ping >/dev/null || fail "perfrecd does not answer after dropping a stream"
wait_for 10 subscribers_are 0 || fail "the dropped subscriber is still counted"

note "perfrecd stops while streaming"
"$PERFRECCTL" --socket "$S" stream > "$T/stopped.data" 2>"$T/err" &
CTL=$!
wait_for 30 subscribers_are 1 || { cat "$T/err"; tail -20 "$T/log"; fail "the third stream did not start"; }
kill "$DAEMON_PID"
wait "$DAEMON_PID"
DAEMON_PID=
wait "$CTL"
rc=$?
[ $rc = 0 ] || { cat "$T/err"; fail "perfrecctl exited $rc when perfrecd stopped, not 0"; }
grep -qx "perfrecctl: the stream ended: perfrecd stopped" "$T/err" || { cat "$T/err"; fail "perfrecctl does not say that perfrecd stopped"; }
n=$(check_stream "$T/stopped.data" "stream of a perfrecd that stopped") || { echo "$n"; exit 1; }
[ "$n" -gt 0 ] || fail "the stream of a perfrecd that stopped holds no samples"
echo "PASS"
