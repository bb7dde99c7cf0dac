#!/usr/bin/env bash
# Every kind of file perfrecd writes carries FINISHED_ROUND records between
# its samples, so that readers (perf, perfparser) sort one round at a time
# instead of holding the whole file: a file closed by a rotation, the last
# file at exit, a compressed (-z) file, pipe output (-o -) and a flight
# snapshot.  perf is the judge: `perf script --show-round-events` must
# deliver each file's samples in at least two groups between round lines.
. "$(dirname "$0")/lib.sh"
require_events; require_perf

# Our own copy of the workload, every CPU busy throughout.
"$WORKLOAD" 60 >/dev/null &
WL=$!
trap 'kill $WL 2>/dev/null; cleanup' EXIT
S=$T/sock
ctl() { timeout 60 "$PERFRECCTL" --socket "$S" "$@"; }
# samples_at_least N: the daemon has recorded N samples (polling condition).
samples_at_least() {
	local n
	n=$(ctl --json status 2>/dev/null | python3 -c 'import json, sys; print(json.load(sys.stdin)["samples"])' 2>/dev/null)
	[ "${n:-0}" -ge "$1" ]
}

# rounds_ok FILE WHAT: check_rounds, and say what it found.
rounds_ok() {
	local r
	r=$(check_rounds "$1" "$2") || { echo "$r"; exit 1; }
	note "$2: $r (FINISHED_ROUND records, groups of samples between them)"
}

# 1. A rotated file and the last file at exit.
"$PERFRECD" -o "$T/cont" --socket "$S" -e cpu-clock -F 499 --no-call-graph 2>"$T/cont.log" &
DAEMON_PID=$!
wait_for 30 samples_at_least 2000 || { cat "$T/cont.log"; fail "perfrecd did not record 2000 samples within 30 s"; }
rotated=$(ctl rotate) || { cat "$T/cont.log"; fail "rotate failed"; }
rotated=${rotated#published }
wait_for 30 samples_at_least 4000 || { cat "$T/cont.log"; fail "perfrecd did not record 2000 more samples within 30 s"; }
kill -INT $DAEMON_PID; wait $DAEMON_PID; rc=$?; DAEMON_PID=
[ $rc = 0 ] || { cat "$T/cont.log"; fail "perfrecd exited $rc"; }
last=$(ls "$T/cont"/*.data | tail -1)
[ "$last" != "$rotated" ] || fail "no file after the rotated one"
rounds_ok "$rotated" "the rotated file"
rounds_ok "$last" "the last file at exit"

# 2. A compressed file: the rounds sit between the COMPRESSED records.
"$PERFRECD" -o "$T/z" --socket '' -z -e cpu-clock -F 999 -g --duration 4 2>"$T/z.log" \
	|| { cat "$T/z.log"; fail "perfrecd -z failed"; }
f=$(only_file "$T/z") || exit 1
perf report -i "$f" --stats 2>/dev/null | grep -Eq 'COMPRESSED events: *[1-9]' || fail "$f is not compressed"
rounds_ok "$f" "the compressed file"

# 3. Pipe output.
"$PERFRECD" -o - --socket '' -e cpu-clock -F 999 -g --duration 4 >"$T/stream.data" 2>"$T/pipe.log" \
	|| { cat "$T/pipe.log"; fail "perfrecd -o - failed"; }
rounds_ok "$T/stream.data" "the pipe output"

# 4. A flight snapshot: its history is merged by time and cut into rounds
# of a few MiB, so it must hold more than that (5 MiB of records).
mkdir -p "$T/flight"
"$PERFRECD" -o "$T/flight" --socket "$S" --mode flight --history 30s -e cpu-clock -F 1999 -g 2>"$T/flight.log" &
DAEMON_PID=$!
history_bytes() {
	local b
	b=$(ctl --json status 2>/dev/null | python3 -c 'import json, sys; print(json.load(sys.stdin)["bytes"])' 2>/dev/null)
	[ "${b:-0}" -ge $((5 << 20)) ]
}
wait_for 60 history_bytes || { cat "$T/flight.log"; fail "flight mode did not record 5 MiB within 60 s"; }
kill -USR2 $DAEMON_PID
snapshot_published() { [ -n "$(ls "$T/flight"/*.data.json 2>/dev/null)" ]; }
wait_for 60 snapshot_published || { cat "$T/flight.log"; fail "no snapshot within 60 s of SIGUSR2"; }
kill -INT $DAEMON_PID; wait $DAEMON_PID; rc=$?; DAEMON_PID=
[ $rc = 0 ] || { cat "$T/flight.log"; fail "perfrecd --mode flight exited $rc"; }
f=$(only_file "$T/flight") || exit 1
rounds_ok "$f" "the flight snapshot"
exit 0
