#!/bin/bash
# perfrecctl's messages and exit codes for what users get wrong or need:
#
# 1. set-freq above the kernel's limit: refused (exit 1) naming the allowed
#    range and kernel.perf_event_max_sample_rate, as -F is.
# 2. snapshot -: perf data on stdout (pipe mode into a pipe, read by
#    perf report -i -; a whole file when stdout is one); the message on
#    stderr.  An existing file is not overwritten without --force (exit 1
#    naming it, the file untouched); with --force it is replaced whole.
# 3. A reload that reopens the events: a stream is ended with the reason
#    (exit 1, readable up to there), and status counts from the reload
#    with rates over that span, naming the current file as it is on disk.
. "$(dirname "$0")/lib.sh"
require_events
require_perf

S=$T/sock
ctl() { timeout 30 "$PERFRECCTL" --socket "$S" "$@"; }
jget() { python3 -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }
BG=
trap 'kill $BG 2>/dev/null; cleanup' EXIT

mkdir -p "$T/out"
printf '[record]\nevents=cpu-clock\nfrequency=999\ncallchain=no\n' > "$T/conf"
"$PERFRECD" -c "$T/conf" -o "$T/out" --socket "$S" 2>"$T/log" &
DAEMON_PID=$!
wait_for 30 ctl ping >/dev/null 2>&1 || { cat "$T/log"; fail "no control socket"; }
"$WORKLOAD" 60 >/dev/null &
BG=$!
has_samples() { [ "$(ctl --json status | jget samples)" -gt 0 ]; }
wait_for 30 has_samples || fail "no samples recorded"

note "set-freq above the kernel's limit"
max=$(cat /proc/sys/kernel/perf_event_max_sample_rate)
ctl set-freq $((max + 1)) >/dev/null 2>"$T/err"
rc=$?
[ $rc = 1 ] || { cat "$T/err"; fail "set-freq $((max + 1)): exit $rc, not 1"; }
grep -q "perfrecctl: perfrecd refused: $((max + 1)) Hz is outside 1 to $max Hz (the kernel's limit, kernel.perf_event_max_sample_rate)" "$T/err" ||
	{ cat "$T/err"; fail "set-freq refusal does not name the allowed range"; }
ctl status | grep -q "event cpu-clock at 999 Hz" || fail "a refused set-freq changed the frequency"
ctl set-freq "$max" >/dev/null || fail "set-freq $max (the limit itself) refused"
ctl set-freq 999 >/dev/null || fail "set-freq 999"

note "snapshot - into a pipe and into a file"
ctl snapshot - 2>"$T/err" | perf report -i - --stats > "$T/stats" 2>"$T/perr"
rcs=("${PIPESTATUS[@]}")
[ "${rcs[0]}" = 0 ] || { cat "$T/err"; fail "snapshot - exited ${rcs[0]}"; }
n=$(awk '/SAMPLE events:/ {print $3; exit}' "$T/stats")
[ -n "$n" ] && [ "$n" -gt 0 ] || { cat "$T/stats" "$T/perr"; fail "perf report -i - read no samples from snapshot -"; }
grep -q "^snapshot of $n samples written to stdout$" "$T/err" || { cat "$T/err"; fail "snapshot - does not report on stderr ($n samples)"; }
[ ! -e ./- ] && [ ! -e "$T/-" ] || fail "snapshot - created a file named -"
ctl snapshot - > "$T/stdout.data" 2>"$T/err" || { cat "$T/err"; fail "snapshot - > file"; }
n=$(perf_samples "$T/stdout.data")
[ -n "$n" ] && [ "$n" -gt 0 ] || fail "snapshot - into a file holds no samples"

note "snapshot onto an existing file"
ctl snapshot "$T/snap.data" >/dev/null 2>"$T/err" || { cat "$T/err"; fail "snapshot into a new file"; }
sum=$(md5sum < "$T/snap.data")
ctl snapshot "$T/snap.data" >/dev/null 2>"$T/err"
rc=$?
[ $rc = 1 ] || { cat "$T/err"; fail "snapshot onto an existing file: exit $rc, not 1"; }
grep -qx "perfrecctl: snapshot: $T/snap.data exists; not overwritten without --force" "$T/err" ||
	{ cat "$T/err"; fail "no message naming the existing file"; }
[ "$(md5sum < "$T/snap.data")" = "$sum" ] || fail "the existing file was changed without --force"
ctl snapshot --force "$T/snap.data" >/dev/null 2>"$T/err" || { cat "$T/err"; fail "snapshot --force"; }
[ "$(md5sum < "$T/snap.data")" != "$sum" ] || fail "--force did not replace the file"
n=$(perf_samples "$T/snap.data")
[ -n "$n" ] && [ "$n" -gt 0 ] || fail "the replaced snapshot holds no samples"
ls "$T" | grep -q '^snap\.data\..*\.tmp$' && fail "snapshot --force left a temporary file"

note "reload with other events, a stream running"
"$PERFRECCTL" --socket "$S" stream > "$T/stream.data" 2>"$T/serr" &
CTL=$!
subscribed() { [ "$(ctl --json status | jget subscribers)" = 1 ]; }
wait_for 30 subscribed || fail "the stream did not start"
printf '[record]\nevents=task-clock\nfrequency=999\ncallchain=no\n' > "$T/conf"
kill -HUP "$DAEMON_PID"
wait_for 30 grep -q "events reopened" "$T/log" || { cat "$T/log"; fail "the reload did not reopen the events"; }
wait_for 30 eval '! kill -0 $CTL 2>/dev/null' || { kill "$CTL"; fail "perfrecctl stream goes on across a reload that changed the events"; }
wait "$CTL"
rc=$?
[ $rc = 1 ] || { cat "$T/serr"; fail "the stream across a reload: perfrecctl exited $rc, not 1"; }
grep -q "perfrecctl: perfrecd cut the stream short: the configuration was reloaded with other events; subscribe again" "$T/serr" ||
	{ cat "$T/serr"; fail "perfrecctl does not say the reload ended the stream"; }
timeout 60 perf script -i "$T/stream.data" > /dev/null 2>"$T/perr" || { cat "$T/perr"; fail "perf script on the stream ended by the reload"; }
check_perf_stderr "perf script of the stream ended by the reload" "$T/perr"

reloaded_samples() { [ "$(ctl --json status | jget samples)" -gt 0 ]; }
wait_for 30 reloaded_samples || fail "no samples after the reload"
ctl --json status > "$T/status.json" || fail "status after the reload"
python3 - "$T/status.json" <<'EOP' || fail "status after the reload is inconsistent"
import json, os, sys
s = json.load(open(sys.argv[1]))
f = s["current_file"]
assert f and os.path.isfile(f), "current_file %r is not on disk" % f
assert [e["name"] for e in s["events"]] == ["task-clock"], s["events"]
assert sum(c["samples"] for c in s["cpus"]) == s["samples"], s
assert 0 < s["counted_sec"] < s["uptime_sec"], (s["counted_sec"], s["uptime_sec"])
# the rate is over the span the counters cover, not the daemon's uptime
assert abs(s["samples_per_sec"] * s["counted_sec"] - s["samples"]) <= 0.01 * s["samples"] + 1, s
EOP
ctl status > "$T/status" || fail "status"
grep -q "^since the events were reopened [0-9]* s ago:$" "$T/status" || { cat "$T/status"; fail "status does not say its counters start at the reload"; }
grep -q "current $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["current_file"])' "$T/status.json" | sed 's/[.]/[.]/g')" "$T/status" ||
	{ cat "$T/status"; fail "status does not name the current file"; }
echo "PASS"
