#!/usr/bin/env bash
# Symbols from debuginfod (issue 16): a binary recorded and then deleted
# has no names for perfrecctl pprof, until a debuginfod server (Debian's,
# on loopback, indexing a directory that holds the binary) is named in
# DEBUGINFOD_URLS.  A server that is not there costs no more than a failed
# connection: the profile is written with [unknown] frames; one that takes
# connections and never answers is given up after its first timeout.
. "$(dirname "$0")/lib.sh"
require_events
command -v debuginfod >/dev/null || skip "debuginfod is not installed"
command -v debuginfod-find >/dev/null || skip "debuginfod-find (elfutils) is not installed"
command -v go >/dev/null || skip "go (golang-go) is not installed: no pprof reader"
[ -x "$WORKLOAD" ] || fail "tests/e2e/workload is not built"
export HOME=$T GOCACHE=$T/gocache DEBUGINFOD_CACHE_PATH=$T/dcache
unset DEBUGINFOD_URLS
SRV_PID= BH_PID=
stop_srv() { [ -n "$SRV_PID" ] && kill "$SRV_PID" 2>/dev/null; wait "$SRV_PID" 2>/dev/null; SRV_PID=; }
trap 'stop_srv; [ -n "$BH_PID" ] && kill "$BH_PID" 2>/dev/null; cleanup' EXIT
bid=$(readelf -n "$WORKLOAD" | awk '/Build ID/ {print $3}')
[ -n "$bid" ] || fail "the workload has no build id"

mkdir -p "$T/bin" "$T/srv"
cp "$WORKLOAD" "$T/bin/wl-dbgd"
cp "$WORKLOAD" "$T/srv/wl-dbgd"
# A second deleted binary, with a build id of its own, that no server has.
command -v cc >/dev/null || skip "no C compiler for the second binary"
cc -O1 -g -fno-omit-frame-pointer -pthread -Wl,--build-id=0x0123456789abcdef0123456789abcdef01234567 \
	-o "$T/bin/wl-other" "$TOP/tests/e2e/workload.c" || fail "cannot build the second binary"
# No build-id cache: the binaries must come from debuginfod alone.
printf '[output]\nbuildid-cache=no\n' >"$T/conf"
"$PERFRECD" -c "$T/conf" -o "$T/out" --socket '' -e cpu-clock -F 499 -g --duration 4 2>"$T/err" &
DAEMON_PID=$!
started() { grep -q Recording "$T/err" 2>/dev/null; }
wait_for 30 started || { cat "$T/err"; fail "perfrecd did not start"; }
"$T/bin/wl-dbgd" 1.5 1 || fail "workload failed"
"$T/bin/wl-other" 1 1 || fail "the second workload failed"
rm "$T/bin/wl-dbgd" "$T/bin/wl-other"
wait $DAEMON_PID; rc=$?; DAEMON_PID=
[ $rc = 0 ] || { cat "$T/err"; fail "perfrecd exited $rc"; }
f=$(only_file "$T/out") || exit 1

has_hot() { go tool pprof -top "$1" 2>/dev/null | grep -q ' hot_function$'; }

# No server: no names.
"$PERFRECCTL" pprof --comm wl-dbgd -o "$T/none.pb.gz" "$f" 2>"$T/none.err" || { cat "$T/none.err"; fail "pprof failed"; }
has_hot "$T/none.pb.gz" && fail "hot_function is named without debuginfod: the binary was not gone"

# A server that is not there: a clear run, [unknown] frames, no crash.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
DEBUGINFOD_URLS=http://127.0.0.1:$port timeout 120 "$PERFRECCTL" pprof --comm wl-dbgd -o "$T/down.pb.gz" "$f" \
	2>"$T/down.err"; rc=$?
[ $rc = 0 ] || { cat "$T/down.err"; fail "pprof with an unreachable debuginfod exited $rc"; }
has_hot "$T/down.pb.gz" && fail "hot_function named with no server"
go tool pprof -top "$T/down.pb.gz" 2>/dev/null | grep -q '\[unknown\]' || fail "no [unknown] frames with an unreachable debuginfod"

# A server that takes the connection and never answers: the first lookup
# times out, and no other binary is asked for (the run does not wait on a
# dead server once per missing binary).  It logs each request's path.
cat >"$T/blackhole.py" <<'PY'
import socket, sys, threading
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
s.listen(16)
open(sys.argv[1], "w").write("%d\n" % s.getsockname()[1])
held = []
while True:
    c, _ = s.accept()
    held.append(c)
    line = c.recv(4096).split(b"\r\n", 1)[0].decode(errors="replace")
    with open(sys.argv[2], "a") as f:
        f.write(line + "\n")
PY
python3 "$T/blackhole.py" "$T/bh.port" "$T/bh.log" &
BH_PID=$!
bh_up() { [ -s "$T/bh.port" ]; }
wait_for 10 bh_up || fail "the black-hole server did not start"
DEBUGINFOD_URLS=http://127.0.0.1:$(cat "$T/bh.port") DEBUGINFOD_TIMEOUT=1 DEBUGINFOD_CACHE_PATH=$T/dcache-bh \
	timeout 120 "$PERFRECCTL" pprof -o "$T/bh.pb.gz" "$f" 2>"$T/bh.err"; rc=$?
kill "$BH_PID" 2>/dev/null; wait "$BH_PID" 2>/dev/null
[ $rc = 0 ] || { cat "$T/bh.err"; fail "pprof with a server that never answers exited $rc"; }
asked=$(grep -o '/buildid/[0-9a-f]*/' "$T/bh.log" | sort -u | wc -l)
note "the silent server was asked for $asked build id(s)"
[ "$asked" = 1 ] || { cat "$T/bh.log"; fail "a server that never answered was asked for $asked binaries, not 1"; }

# The server, indexing $T/srv; wait (bounded) until it serves the build id.
debuginfod -F "$T/srv" -p "$port" -d "$T/db.sqlite" -t 1 >"$T/srv.log" 2>&1 &
SRV_PID=$!
# A fresh client cache each time: the client remembers a miss for 10 minutes.
served() {
	rm -rf "$T/probe"
	DEBUGINFOD_URLS=http://127.0.0.1:$port DEBUGINFOD_CACHE_PATH=$T/probe debuginfod-find executable "$bid" >/dev/null 2>&1
}
wait_for 60 served || { tail "$T/srv.log"; fail "debuginfod did not serve $bid within 60 s"; }
DEBUGINFOD_URLS=http://127.0.0.1:$port DEBUGINFOD_CACHE_PATH=$T/dcache2 \
	"$PERFRECCTL" pprof --comm wl-dbgd -o "$T/p.pb.gz" "$f" 2>"$T/p.err" \
	|| { cat "$T/p.err"; fail "pprof with debuginfod failed"; }
has_hot "$T/p.pb.gz" || { go tool pprof -top "$T/p.pb.gz" 2>&1 | head -15; fail "pprof does not name hot_function through debuginfod"; }
go tool pprof -traces "$T/p.pb.gz" 2>/dev/null | awk '/hot_function$/ { getline; if ($1 == "caller_function") f = 1 } END { exit !f }' \
	|| fail "caller_function is not below hot_function"
# --no-debuginfod: not asked.
DEBUGINFOD_URLS=http://127.0.0.1:$port DEBUGINFOD_CACHE_PATH=$T/dcache3 \
	"$PERFRECCTL" pprof --no-debuginfod --comm wl-dbgd -o "$T/off.pb.gz" "$f" 2>/dev/null
has_hot "$T/off.pb.gz" && fail "--no-debuginfod still asked the server"
stop_srv
exit 0
