#!/usr/bin/env bash
# Plays systemd: a datagram NOTIFY_SOCKET collects what perfrecd says:
# READY=1 once recording, STATUS=, WATCHDOG=1, RELOADING=1 with
# MONOTONIC_USEC then READY=1 around a reload, STOPPING=1 at shutdown.
. "$(dirname "$0")/lib.sh"
require_events
command -v python3 >/dev/null || skip "python3 is not installed"

sock=$T/notify
python3 - "$sock" >"$T/msgs" <<'PY' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(60)
start = time.monotonic()
try:
    while time.monotonic() - start < 60:
        m = s.recv(4096).decode()
        print("%.3f %s" % (time.monotonic() - start, m.replace("\n", "|")), flush=True)
        if "STOPPING=1" in m:
            break
except socket.timeout:
    pass
PY
listener=$!
for i in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done
printf '[record]\nfrequency=99\n[output]\ndirectory=%s\n' "$T/out" >"$T/conf"
NOTIFY_SOCKET=$sock WATCHDOG_USEC=2000000 sh -c 'export WATCHDOG_PID=$$; exec "$0" "$@"' \
	"$PERFRECD" -c "$T/conf" 2>"$T/err" &
DAEMON_PID=$!
for i in $(seq 50); do grep -q READY=1 "$T/msgs" && break; sleep 0.1; done
grep -q 'READY=1' "$T/msgs" || { cat "$T/err"; fail "no READY=1"; }
# STATUS= is refreshed and WATCHDOG=1 sent every few seconds: wait for a
# second STATUS= and a WATCHDOG=1.
status_refreshed() { [ "$(grep -c 'STATUS=Recording' "$T/msgs")" -ge 2 ] && grep -q 'WATCHDOG=1' "$T/msgs"; }
wait_for 20 status_refreshed || { cat "$T/msgs"; fail "no second STATUS= and WATCHDOG=1 within 20 s"; }
printf '[record]\nfrequency=199\n[output]\ndirectory=%s\n' "$T/out" >"$T/conf"
kill -HUP $DAEMON_PID
# The reload is over when READY=1 follows RELOADING=1.
reloaded() { grep -oE 'READY=1|RELOADING=1' "$T/msgs" | tr '\n' ' ' | grep -q 'RELOADING=1 READY=1'; }
wait_for 20 reloaded || { cat "$T/msgs"; fail "no RELOADING=1 then READY=1 within 20 s of SIGHUP"; }
kill -TERM $DAEMON_PID; wait $DAEMON_PID; rc=$?; DAEMON_PID=
wait $listener
cat "$T/msgs"
[ $rc = 0 ] || { cat "$T/err"; fail "perfrecd exited $rc"; }
grep -q 'STATUS=Recording' "$T/msgs" || fail "no STATUS= line"
[ "$(grep -c 'STATUS=Recording' "$T/msgs")" -ge 2 ] || fail "STATUS= is not refreshed"
grep -q 'WATCHDOG=1' "$T/msgs" || fail "no WATCHDOG=1 with WatchdogSec set"
grep -q 'RELOADING=1|MONOTONIC_USEC=[0-9]' "$T/msgs" || fail "no RELOADING=1 with MONOTONIC_USEC"
# Order: READY, ..., RELOADING, READY, ..., STOPPING
seq=$(grep -oE 'READY=1|RELOADING=1|STOPPING=1' "$T/msgs" | tr '\n' ' ')
[[ "$seq" == "READY=1 "*"RELOADING=1 READY=1 "*"STOPPING=1 " ]] || fail "wrong order: $seq"
exit 0
