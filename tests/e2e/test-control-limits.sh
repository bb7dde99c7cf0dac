#!/bin/bash
# The control socket's limits against an unprivileged user, and snapshots
# into readers that do not read.
#
# 1. Default configuration (no control group): nobody may Ping and Status,
#    and is refused Pause, Resume, Rotate, SetFrequency and Snapshot.
# 2. nobody opens 4000 connections with a 60 KB partial message each, then
#    idle connections beyond the client cap: root's status still answers;
#    after nobody's clients close the daemon's RSS comes back near where
#    it was, not 250 MB up.
# 3. nobody floods refused calls: the log holds a bounded number of
#    refusal lines and a count of the ones it left out.
# 4. A snapshot into a pipe whose reader never reads: rotation and status
#    go on, the reader leaving does not kill the daemon, and SIGTERM ends
#    it while a second one is stuck.
#
# Bounds are ones only a broken implementation misses: the limits keep
# nobody's buffers to about 1 MiB, the bound allows 48 MiB.
. "$(dirname "$0")/lib.sh"
require_events
command -v setpriv >/dev/null || skip "setpriv is not installed"
id nobody >/dev/null 2>&1 || skip "no user nobody"
# nobody cannot run a python3 found under /root (pyenv shims): the system one.
PY=/usr/bin/python3
[ -x "$PY" ] || skip "no /usr/bin/python3"
getent group perfrecd >/dev/null && skip "a group 'perfrecd' exists: the default control group would apply"

S=$T/sock
ctl() { timeout 20 "$PERFRECCTL" --socket "$S" "$@"; }
as_nobody() { timeout 60 setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$DAEMON_PID/status"; }
rss_at_most() { [ "$(rss_kib)" -le "$1" ]; }
# Wait (bounded) until "$@" succeeds.
wait_for() {
	local what=$1; shift
	for _ in $(seq 300); do "$@" && return 0; sleep 0.1; done
	fail "timed out waiting for: $what"
}

# Helpers in the background end with the test, whatever its outcome.
BG=
trap 'touch "$T/nobody/done" "$T/done" 2>/dev/null; kill $BG 2>/dev/null; cleanup' EXIT

chmod 755 "$T"   # nobody reaches the socket
mkdir -p "$T/out"
"$PERFRECD" -o "$T/out" --socket "$S" -F 99 2>"$T/log" &
DAEMON_PID=$!
wait_for "the control socket" ctl ping >/dev/null 2>&1

note "default configuration: nobody may ping and status, not change anything"
for m in ping status; do
	as_nobody "$PERFRECCTL" --socket "$S" $m >/dev/null || { cat "$T/log"; fail "nobody cannot $m"; }
done
mkdir "$T/nobody"; chown nobody "$T/nobody"
for m in pause resume rotate "set-freq 50" "snapshot $T/nobody/snap.data"; do
	as_nobody "$PERFRECCTL" --socket "$S" $m >/dev/null 2>"$T/err"
	rc=$?
	[ $rc = 4 ] || { cat "$T/err"; fail "nobody $m: exit $rc, not 4 (permission denied)"; }
done
[ ! -s "$T/nobody/snap.data" ] || fail "nobody got a snapshot"
ctl --json status | grep -Eq '"paused": ?false' || fail "nobody paused sampling"
ctl status | grep -q "at 99 Hz" || fail "nobody changed the frequency"
ls "$T"/out/*.data >/dev/null 2>&1 && fail "nobody rotated a file out"

note "nobody: 4000 partial 60 KB messages and idle connections beyond the cap"
base=$(rss_kib)
cat > "$T/hog.py" <<'EOP'
import os, resource, socket, sys, time
path, ready, done = sys.argv[1:4]
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 10000), hard))
held, refused = [], 0
def conn():
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(5)
    s.connect(path)
    return s
# Partial messages: 60 KB each, never finished.
for _ in range(4000):
    try:
        s = conn()
        s.sendall(b'{"method":"io.perfrec.Ping","parameters":{"x":"' + b"a" * 60000)
        held.append(s)
    except OSError:
        refused += 1
# Idle connections past the daemon's cap of 4096.
for _ in range(4200):
    try:
        held.append(conn())
    except OSError:
        refused += 1
print("# nobody: %d connections attempted, %d failed at once" % (8200, refused), flush=True)
open(ready, "w").close()
while not os.path.exists(done):
    time.sleep(0.1)
for s in held:
    s.close()
EOP
as_nobody "$PY" "$T/hog.py" "$S" "$T/nobody/ready" "$T/nobody/done" &
HOG=$!
BG="$BG $HOG"
wait_for "nobody's connections" test -e "$T/nobody/ready"
# Root is served while nobody holds everything it could get.
ok=
for _ in $(seq 30); do
	if ctl status >"$T/status" 2>"$T/err"; then ok=1; break; fi
	sleep 0.2
done
[ -n "$ok" ] || { cat "$T/err"; tail -5 "$T/log"; fail "root's status did not answer while nobody held connections"; }
grep -q "^perfrecd pid $DAEMON_PID" "$T/status" || { cat "$T/status"; fail "status is not the daemon's"; }
peak=$(rss_kib)
note "RSS before ${base} KiB, with nobody's clients ${peak} KiB"
touch "$T/nobody/done"
wait "$HOG"
bound=$((base + 48 * 1024))
wait_for "RSS back under $bound KiB" rss_at_most "$bound"
note "RSS after nobody's clients closed: $(rss_kib) KiB"
ctl ping >/dev/null || fail "no ping after the connection flood"

note "nobody: 20000 refused calls"
before=$(grep -c "Refused" "$T/log")
as_nobody "$PY" - "$S" <<'EOP' || fail "refusal flood client"
import socket, sys
msg = b'{"method":"io.perfrec.Pause","parameters":{}}\0'
for _ in range(20):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1])
    s.sendall(msg * 1000)
    got = 0
    buf = b""
    while got < 1000:
        b = s.recv(65536)
        assert b, "dropped after %d replies" % got
        got += b.count(b"\0")
        assert b"PermissionDenied" in b, b[:200]
    s.close()
EOP
lines=$(( $(grep -c "Refused" "$T/log") - before ))
note "refusal lines logged for 20000 refused calls: $lines"
[ "$lines" -le 200 ] || fail "$lines refusal lines for 20000 calls: not rate-limited"
wait_for "a count of the refusals not logged" grep -Eq "[0-9]+ more refusals of control clients .* not logged" "$T/log"

note "snapshot into a pipe nobody reads"
mkfifo "$T/fifo"
cat > "$T/stall.py" <<'EOP'
import array, fcntl, os, sys, termios, time
fifo, ready, done = sys.argv[1:4]
# A reader that never reads, its pipe as small as it gets; it says when
# the writer has filled it.
fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
fcntl.fcntl(fd, 1031, 4096)   # F_SETPIPE_SZ
open(ready, "w").close()
filled = False
while not os.path.exists(done):
    n = array.array("i", [0])
    fcntl.ioctl(fd, termios.FIONREAD, n)
    if n[0] > 0 and not filled:
        open(ready + ".filled", "w").close()
        filled = True
    time.sleep(0.05)
EOP
rm -f "$T/ready" "$T/ready.filled" "$T/done"
python3 "$T/stall.py" "$T/fifo" "$T/ready" "$T/done" &
STALL=$!
BG="$BG $STALL"
wait_for "the stalled reader" test -e "$T/ready"
timeout 120 "$PERFRECCTL" --socket "$S" snapshot "$T/fifo" >/dev/null 2>"$T/snaperr" &
SNAP=$!
BG="$BG $SNAP"
# The daemon has filled the pipe: rotation and status go on all the same.
wait_for "the snapshot to fill the pipe" test -e "$T/ready.filled"
F=$(ctl rotate) || { tail "$T/log"; fail "rotate while a snapshot reader stalls"; }
[ -f "${F#published }" ] || fail "rotate answered '$F'"
ctl status >/dev/null || fail "status while a snapshot reader stalls"
kill -0 "$SNAP" 2>/dev/null || { cat "$T/snaperr"; fail "the snapshot into a stalled pipe ended before its reader did"; }
# The reader goes away: the daemon survives and says what happened.
touch "$T/done"
wait "$STALL"
wait "$SNAP" && fail "a snapshot whose reader went away reported success"
kill -0 "$DAEMON_PID" || fail "the daemon died when the snapshot's reader went away"
ctl status >/dev/null || fail "no status after the snapshot's reader went away"
grep -q "Snapshot for uid 0 pid [0-9]* not delivered" "$T/log" || { tail "$T/log"; fail "the undelivered snapshot is not logged"; }
[ -p "$T/fifo" ] || fail "perfrecctl removed the FIFO it did not create"

note "a reader that takes 100 bytes and leaves (perfrecctl snapshot /dev/stdout | head -c 100)"
# perfrecctl must not hand the daemon a reader of its own pipe: then the
# reader leaving is seen at once, not as a stall.  A FIFO, so the pipe is
# small before the snapshot starts.
cat > "$T/head.py" <<'EOP'
import fcntl, os, select, sys
fifo, ready = sys.argv[1:3]
fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
fcntl.fcntl(fd, 1031, 4096)   # F_SETPIPE_SZ
open(ready, "w").close()
select.select([fd], [], [], 60)
os.read(fd, 100)
EOP
rm -f "$T/ready"
python3 "$T/head.py" "$T/fifo" "$T/ready" &
HEAD=$!
BG="$BG $HEAD"
wait_for "the reader" test -e "$T/ready"
n=$(grep -c "not delivered" "$T/log")
timeout 60 "$PERFRECCTL" --socket "$S" snapshot "$T/fifo" >/dev/null 2>&1 && fail "a snapshot cut after 100 bytes reported success"
wait "$HEAD"
grep "not delivered" "$T/log" | tail -1 | grep -q "the reader went away" ||
	{ tail -3 "$T/log"; fail "a reader that went away was not seen as gone"; }
[ "$(grep -c "not delivered" "$T/log")" -gt "$n" ] || fail "the cut snapshot is not logged"
ctl status >/dev/null || fail "no status after a cut snapshot"

note "SIGTERM while a snapshot reader stalls"
rm -f "$T/ready" "$T/ready.filled" "$T/done"
python3 "$T/stall.py" "$T/fifo" "$T/ready" "$T/done" &
STALL=$!
BG="$BG $STALL"
wait_for "the stalled reader" test -e "$T/ready"
timeout 120 "$PERFRECCTL" --socket "$S" snapshot "$T/fifo" >/dev/null 2>&1 &
SNAP=$!
BG="$BG $SNAP"
wait_for "the snapshot to fill the pipe" test -e "$T/ready.filled"
ctl ping >/dev/null || fail "no ping while a snapshot reader stalls"
kill -TERM "$DAEMON_PID"
for _ in $(seq 300); do kill -0 "$DAEMON_PID" 2>/dev/null || break; sleep 0.1; done
kill -0 "$DAEMON_PID" 2>/dev/null && fail "SIGTERM did not stop the daemon while a snapshot reader stalled"
wait "$DAEMON_PID"; rc=$?
DAEMON_PID=
[ $rc = 0 ] || { tail "$T/log"; fail "the daemon exited with $rc"; }
touch "$T/done"
wait "$STALL" "$SNAP" 2>/dev/null
echo "PASS"
