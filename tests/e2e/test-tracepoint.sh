#!/usr/bin/env bash
# A tracepoint recording perf can decode, as perf record's own: the file
# carries HEADER_TRACING_DATA and a stream (-o -) a HEADER_TRACING_DATA
# record, so perf script prints sched_switch's fields from both, from a
# live subscriber (perfrecctl stream) and from a flight snapshot (without
# them perf said "incompatible file format", and crashed on the stream).
. "$(dirname "$0")/lib.sh"
require_events; require_perf
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
[ -r /sys/kernel/tracing/events/sched/sched_switch/format ] || skip "no tracefs with sched:sched_switch here"

# sched_switch fires whenever anything sleeps: the daemon's own loop will do.
check_fields() {
	local what=$1 out=$2 err=$3 n
	check_perf_stderr "perf script ($what)" "$err"
	n=$(grep -c 'sched:sched_switch: prev_comm=.* prev_pid=[0-9]* .* ==> next_comm=.* next_pid=[0-9]*' "$out")
	note "$what: $n sched_switch samples with their fields"
	[ "$n" -gt 0 ] || { head -5 "$out"; fail "perf script does not print sched_switch's fields from the $what"; }
	[ "$n" = "$(grep -c 'sched:sched_switch:' "$out")" ] || fail "some $what samples lack their fields"
}

"$PERFRECD" -o "$T/out" --socket '' -e sched:sched_switch --no-call-graph --duration 1 2>"$T/err" ||
	{ cat "$T/err"; fail "perfrecd -e sched:sched_switch failed"; }
f=$(only_file "$T/out") || exit 1
perf report -i "$f" --header-only -I 2>/dev/null | grep -q 'sched:sched_switch' || fail "no sched:sched_switch event in $f"
perf script -i "$f" >"$T/file.out" 2>"$T/file.err" || { cat "$T/file.err"; fail "perf script failed on $f"; }
check_fields file "$T/file.out" "$T/file.err"
"$PERFRECCTL" verify "$f" >/dev/null || fail "perfrecctl verify rejects $f"

"$PERFRECD" -o - --socket '' -e sched:sched_switch --no-call-graph --duration 1 >"$T/pipe.data" 2>"$T/perr" ||
	{ cat "$T/perr"; fail "perfrecd -o - -e sched:sched_switch failed"; }
perf script -i - <"$T/pipe.data" >"$T/pipe.out" 2>"$T/pipe.err" || { cat "$T/pipe.err"; fail "perf script failed on the stream"; }
check_fields stream "$T/pipe.out" "$T/pipe.err"
"$PERFRECCTL" verify "$T/pipe.data" >/dev/null || fail "perfrecctl verify rejects the stream"
# A reader that takes the stream as it comes, through a real pipe.
"$PERFRECD" -o - --socket '' -e sched:sched_switch --no-call-graph --duration 1 2>/dev/null |
	perf script -i - >"$T/live.out" 2>"$T/live.err"
check_fields "live stream" "$T/live.out" "$T/live.err"

# A live subscriber (perfrecctl stream) gets the formats ahead of its samples.
"$PERFRECD" -o "$T/sub" --socket "$T/sock" -e sched:sched_switch --no-call-graph 2>"$T/serr" &
DAEMON_PID=$!
listening() { [ -S "$T/sock" ]; }
wait_for 30 listening || { cat "$T/serr"; fail "perfrecd did not open its socket"; }
timeout --preserve-status -s INT 2 "$PERFRECCTL" --socket "$T/sock" stream >"$T/sub.data" 2>"$T/sub.err"
rc=$?
kill -INT $DAEMON_PID; wait $DAEMON_PID; DAEMON_PID=
[ $rc = 0 ] || { cat "$T/sub.err"; fail "perfrecctl stream exited $rc on SIGINT"; }
perf script -i - <"$T/sub.data" >"$T/sub.out" 2>"$T/sub.perr" || { cat "$T/sub.perr"; fail "perf script failed on perfrecctl stream"; }
check_fields "perfrecctl stream" "$T/sub.out" "$T/sub.perr"

# A flight-mode snapshot (SIGUSR2) carries the formats too.
"$PERFRECD" -o "$T/flight" --socket '' --mode flight --history 5s -e sched:sched_switch --no-call-graph 2>"$T/ferr" &
DAEMON_PID=$!
started() { grep -q Recording "$T/ferr" 2>/dev/null; }
wait_for 30 started || { cat "$T/ferr"; fail "perfrecd --mode flight did not start"; }
snapped() { kill -USR2 $DAEMON_PID; ls "$T/flight"/*.data >/dev/null 2>&1; }
wait_for 30 snapped || { cat "$T/ferr"; fail "no snapshot was published"; }
kill -INT $DAEMON_PID; wait $DAEMON_PID; DAEMON_PID=
f=$(ls "$T/flight"/*.data | head -1)
perf script -i "$f" >"$T/snap.out" 2>"$T/snap.err" || { cat "$T/snap.err"; fail "perf script failed on snapshot $f"; }
check_fields snapshot "$T/snap.out" "$T/snap.err"
exit 0
