#!/bin/bash
# perfrecctl's messages and exit codes for what users get wrong or need:
#
# 1. set-freq above max-frequency= (10 kHz by default, the host's guard)
#    or the kernel's limit: refused (exit 1) naming the allowed range and
#    the limit, the rate unchanged; never driven to 100 kHz (on a small
#    machine that takes the host); a safe rate and 999 again are taken.
#    A frequency= above max-frequency= at a (re)load is capped, and
#    status says so; a reload lowering max-frequency= lowers a faster
#    rate at once.
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

note "set-freq above max-frequency= and the kernel's limit"
max=$(cat /proc/sys/kernel/perf_event_max_sample_rate)
guard=10000
[ "$max" -gt "$guard" ] || guard=$max
# Above the kernel's limit first: the code before the guard refused it too,
# so a daemon without the guard fails here, not at 100 kHz.
for hz in $((max + 1)) "$max" $((guard + 1)); do
	[ "$hz" -gt "$guard" ] || continue
	ctl set-freq "$hz" >/dev/null 2>"$T/err"
	rc=$?
	[ $rc = 1 ] || { cat "$T/err"; fail "set-freq $hz: exit $rc, not 1"; }
	if [ "$guard" -lt "$max" ]; then
		why="(max-frequency=, the host's guard: more samples on every CPU would take the host; raise max-frequency= and reload to allow it)"
	else
		why="(the kernel's limit, kernel.perf_event_max_sample_rate)"
	fi
	grep -qF "perfrecctl: perfrecd refused: $hz Hz is outside 1 to $guard Hz $why" "$T/err" ||
		{ cat "$T/err"; fail "set-freq $hz: the refusal does not name the limit"; }
	ctl status | grep -q "event cpu-clock at 999 Hz" || fail "a refused set-freq $hz changed the frequency"
done
grep -q "SetFrequency by uid 0 pid [0-9]* refused: $((guard + 1)) Hz is outside" "$T/log" || { cat "$T/log"; fail "the refusal is not logged"; }
[ "$(ctl --json status | jget max_frequency)" = 10000 ] || fail "status does not show max-frequency"
ctl set-freq 2000 >/dev/null 2>"$T/err" || { cat "$T/err"; fail "set-freq 2000 refused"; }
ctl status | grep -q "event cpu-clock at 2000 Hz" || fail "set-freq 2000 not in effect"
ctl set-freq 999 >/dev/null 2>"$T/err" || { cat "$T/err"; fail "set-freq 999 after the refusals"; }
ctl status | grep -q "event cpu-clock at 999 Hz" || fail "set-freq 999 not in effect"

note "a reload that lowers max-frequency= only"
printf '[record]\nevents=cpu-clock\nfrequency=999\nmax-frequency=500\ncallchain=no\n' > "$T/conf"
kill -HUP "$DAEMON_PID"
wait_for 30 grep -q "Sampling at 999 Hz is above max-frequency=500 Hz: lowered to it" "$T/log" ||
	{ cat "$T/log"; fail "a reload lowering max-frequency= left the rate above it"; }
ctl status > "$T/status" || fail "status"
grep -q "^event cpu-clock at 500 Hz$" "$T/status" || { cat "$T/status"; fail "not sampling at the lowered max-frequency="; }
grep -q "^frequency=999 Hz capped at max-frequency=500 Hz$" "$T/status" || { cat "$T/status"; fail "status does not say frequency= is capped"; }
printf '[record]\nevents=cpu-clock\nfrequency=999\ncallchain=no\n' > "$T/conf"
kill -HUP "$DAEMON_PID"
wait_for 30 eval '[ "$(grep -c "Configuration reloaded" "$T/log")" = 2 ]' || { cat "$T/log"; fail "the second reload"; }
ctl set-freq 999 >/dev/null 2>"$T/err" || { cat "$T/err"; fail "set-freq 999 after max-frequency= was raised again"; }
ctl status | grep -q "event cpu-clock at 999 Hz" || fail "set-freq 999 not in effect after the reloads"

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
# frequency= above max-frequency=: capped to it (as -F at start), said in status
printf '[record]\nevents=task-clock\nfrequency=50000\nmax-frequency=999\ncallchain=no\n' > "$T/conf"
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
grep -q "^event task-clock at 999 Hz$" "$T/status" || { cat "$T/status"; fail "frequency=50000 was not capped at max-frequency=999"; }
grep -q "^frequency=50000 Hz capped at max-frequency=999 Hz$" "$T/status" || { cat "$T/status"; fail "status does not say the frequency was capped"; }
grep -q "frequency=50000 Hz is above max-frequency=999 Hz: sampling at 999 Hz" "$T/log" || { cat "$T/log"; fail "the cap is not logged"; }
grep -q "^since the events were reopened [0-9]* s ago:$" "$T/status" || { cat "$T/status"; fail "status does not say its counters start at the reload"; }
grep -q "current $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["current_file"])' "$T/status.json" | sed 's/[.]/[.]/g')" "$T/status" ||
	{ cat "$T/status"; fail "status does not name the current file"; }
echo "PASS"
