#!/usr/bin/env bash
# Two faults of a starting daemon:
#  1. A second perfrecd on the same output directory is refused, naming the
#     first one's PID, and touches nothing of it: the first one's file in
#     progress is not "recovered" from under it (it used to be, and the
#     first then wrote into a deleted file).  `perfrecctl recover` refuses
#     the live .tmp too.  The first one's file is published whole at the end.
#  2. SIGUSR2 (rotate) and SIGHUP (reload) sent as perfrecd's main() starts
#     do not kill it (they used to meet their default action before the
#     event loop existed): it keeps recording, rotates, and publishes.
. "$(dirname "$0")/lib.sh"
require_events; require_perf

until_true() { # CMD...: poll for up to 60 s
	local i
	for i in $(seq 600); do "$@" && return 0; sleep 0.1; done
	return 1
}
recording() { grep -q "Recording [0-9]* CPU" "$1"; }

out=$T/out
"$WORKLOAD" 30 >/dev/null &
wl=$!
"$PERFRECD" -o "$out" -F 499 --socket= 2>"$T/first.err" &
DAEMON_PID=$!
until_true recording "$T/first.err" || { cat "$T/first.err"; fail "first perfrecd did not start"; }
tmp=$(ls "$out"/*.data.tmp)
ino=$(stat -c %i "$tmp")

# 1: the second one, on the same directory (another spelling of it).
"$PERFRECD" -o "$out/." -F 499 --socket= --duration 2 2>"$T/second.err"
rc=$?
cat "$T/second.err"
[ $rc != 0 ] || fail "the second perfrecd on $out was not refused"
grep -q "in use by another perfrecd (PID $DAEMON_PID)" "$T/second.err" || fail "the refusal does not name PID $DAEMON_PID"
[ -f "$tmp" ] && [ "$(stat -c %i "$tmp")" = "$ino" ] || fail "the first perfrecd's $tmp was touched"
ls "$out" | grep -q recovered && fail "the second perfrecd recovered a live file"
"$PERFRECCTL" recover "$tmp" -o "$T/stolen.data" >"$T/recover.out" 2>&1 && { cat "$T/recover.out"; fail "perfrecctl recover took a live .tmp"; }
[ -e "$T/stolen.data" ] && fail "perfrecctl recover wrote an output from a live .tmp"
note "second daemon refused: $(tail -1 "$T/second.err")"

kill -TERM "$DAEMON_PID"; wait "$DAEMON_PID"; rc=$?; DAEMON_PID=
[ $rc = 0 ] || { cat "$T/first.err"; fail "first perfrecd exited $rc"; }
f=${tmp%.tmp}
[ -f "$f" ] && [ -f "$f.json" ] || { ls -la "$out"; fail "the first perfrecd's file was not published"; }
n=$(perf_samples "$f")
[ -n "$n" ] && [ "$n" -gt 0 ] || fail "the first perfrecd's file has no samples"
note "first daemon published $f with $n samples"

kill "$wl" 2>/dev/null; wait "$wl" 2>/dev/null

# 2: a signal that arrives as soon as perfrecd's own code runs.  gdb stops
# it at main() and sends the signal there, which no race can miss: before
# the fix the default action killed it; now the signal waits, blocked, for
# the event loop (SIGUSR2 rotates, SIGHUP reloads).
command -v gdb >/dev/null || skip "gdb is not installed (part 1 passed)"
for sig in USR2 HUP; do
	rm -rf "$out"
	num=$(kill -l "$sig")
	timeout 120 gdb -q -batch -ex 'set startup-with-shell off' -ex "handle SIG$sig nostop noprint pass" \
		-ex 'break main' -ex "run -o $out -F 499 --socket= --duration 2 --compress 0" \
		-ex "python import os; os.kill(gdb.selected_inferior().pid, $num)" -ex 'continue' \
		"$PERFRECD_DEFAULT" >"$T/gdb.out" 2>&1
	grep -q "exited normally" "$T/gdb.out" || { cat "$T/gdb.out"; fail "SIG$sig at main() stopped perfrecd"; }
	ls "$out"/*.data >/dev/null 2>&1 || { cat "$T/gdb.out"; fail "perfrecd sent SIG$sig at main() published nothing"; }
	if [ "$sig" = USR2 ]; then
		n=$(ls "$out"/*.data | wc -l)
		[ "$n" -ge 2 ] || { cat "$T/gdb.out"; fail "SIGUSR2 sent at main() did not rotate once recording ran ($n file)"; }
	fi
done
note "SIGUSR2/SIGHUP at main(): perfrecd kept recording and handled them"
