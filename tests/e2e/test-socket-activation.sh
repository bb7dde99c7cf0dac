#!/bin/bash
# Socket activation as systemd does it: systemd-socket-activate holds the
# listening socket (named "control", as unit/perfrecd.socket names it) and
# starts perfrecd at the first connection.  The daemon must take that socket
# instead of creating its own, answer the client that woke it, and leave the
# socket file alone at exit because systemd owns it.
. "$(dirname "$0")/lib.sh"
require_events
command -v systemd-socket-activate >/dev/null || skip "systemd-socket-activate is not installed"
grep -q 'FileDescriptorName=control' "$TOP/unit/perfrecd.socket" || fail "unit/perfrecd.socket does not name its socket 'control'"

A=$T/activated.sock
mkdir -p "$T/out"
systemd-socket-activate -l "$A" --fdname=control \
	"$PERFRECD" -o "$T/out" -F 499 --socket "$T/own.sock" 2>"$T/log" &
DAEMON_PID=$!
for _ in $(seq 100); do [ -S "$A" ] && break; sleep 0.1; done
[ -S "$A" ] || fail "systemd-socket-activate made no socket"
sleep 0.5
[ -s "$T/log" ] && grep -q "Recording" "$T/log" && fail "perfrecd started before the first connection"

# The first client wakes the daemon and must get its answer.
r=$(timeout 60 "$PERFRECCTL" --socket "$A" ping) || { cat "$T/log"; fail "no answer on the activated socket"; }
[ "$r" = pong ] || fail "ping answered '$r'"
grep -q "Control socket from systemd" "$T/log" || { cat "$T/log"; fail "daemon did not say it took the socket from systemd"; }
[ ! -e "$T/own.sock" ] || fail "daemon created its own socket although one was passed"
"$WORKLOAD" 2 >/dev/null
timeout 60 "$PERFRECCTL" --socket "$A" status >"$T/status" || fail "status on the activated socket"
grep -q "event cpu-clock at 499 Hz" "$T/status" || { cat "$T/status"; fail "status lacks the event"; }
F=$(timeout 60 "$PERFRECCTL" --socket "$A" rotate) || fail "rotate on the activated socket"
F=${F#published }
[ -f "$F" ] || fail "rotate answered '$F', no such file"

kill -INT "$DAEMON_PID"; wait "$DAEMON_PID" || { cat "$T/log"; fail "perfrecd did not exit 0"; }
DAEMON_PID=
[ -S "$A" ] || fail "the daemon removed the socket systemd owns"
n=$(ls "$T"/out/*.data | wc -l)
[ "$n" = 2 ] || fail "expected 2 published files, found $n"
for f in "$T"/out/*.data; do
	s=$(perf_samples "$f")
	[ "${s:-0}" -gt 0 ] || fail "$f has no samples by perf"
done
echo PASS
