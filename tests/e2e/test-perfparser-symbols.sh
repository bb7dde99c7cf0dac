#!/usr/bin/env bash
# hotspot shows function names for a perfrecd -g recording: the samples of
# a workload started while perfrecd records, and of one that ran before it
# began, resolve to hot_function in perfparser's output stream (what
# hotspot reads), for most of them.
#
# The one that ran before: hotspot 1.3.0's perfparser applies the
# synthesized MMAP2s and FORK of one timestamp in the wrong order (maps
# first, then the FORK, which replaces the process's maps by its
# parent's), and named nothing of such a process, in perf's files as in
# ours.  perfrecd stamps the synthesized FORK a nanosecond earlier, when
# it happened (lib/synth.c).  See docs/perfparser.md.
. "$(dirname "$0")/lib.sh"
require_events; require_perfparser
command -v python3 >/dev/null || skip "python3 is not installed"
[ -x "$WORKLOAD" ] || fail "tests/e2e/workload is not built (make tests/e2e/workload)"

# A name of its own, so other jobs' workloads are not counted.
WL=ppsym$$
OLD=ppold$$
cp "$WORKLOAD" "$T/$WL"
cp "$WORKLOAD" "$T/$OLD"
mkdir "$T/out"
"$T/$OLD" 60 1 >/dev/null &
BG=$!
trap 'kill $BG 2>/dev/null; cleanup' EXIT
wait_for 30 grep -q "$OLD" "/proc/$BG/comm" || fail "the workload that runs before did not start"
: >"$T/log" # before the background shell opens it, for wait_for
"$PERFRECD" -o "$T/out" --socket= -F 499 -g 2>"$T/log" &
DAEMON_PID=$!
wait_for 30 grep -q '^perfrecd: Recording' "$T/log" || { cat "$T/log"; fail "perfrecd did not start recording"; }
"$T/$WL" 1 2 >/dev/null || fail "the workload failed"
kill -TERM "$DAEMON_PID"; wait "$DAEMON_PID"; rc=$?; DAEMON_PID=
[ $rc = 0 ] || { cat "$T/log"; fail "perfrecd exited $rc"; }
f=$(only_file "$T/out")

n=$(check_perfparser "$f") || { echo "$n"; exit 1; }
note "perfparser: $n samples"
timeout 120 "$PERFPARSER" --input "$f" --output "$T/pp.out" 2>"$T/pp.err"; rc=$?
[ $rc = 0 ] || { cat "$T/pp.err"; fail "perfparser --output exited $rc"; }
for w in "$WL" "$OLD"; do
	out=$(python3 "$TOP/tests/e2e/ppsymbols.py" "$T/pp.out" "$w" hot_function) ||
		fail "cannot read perfparser's output stream"
	read -r samples named <<<"$out"
	note "$w: $samples samples, $named with hot_function"
	[ "$samples" -gt 0 ] || fail "perfparser's output has no sample of $w"
	# The workload spends nearly all its time in hot_function; a file
	# whose workload maps perfparser cannot use gives none.
	[ $((named * 2)) -gt "$samples" ] ||
		fail "perfparser names hot_function in $named of $w's $samples samples"
done
exit 0
