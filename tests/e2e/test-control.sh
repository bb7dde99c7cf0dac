#!/bin/bash
# Control socket end to end: every io.perfrec method through perfrecctl,
# a snapshot by an unprivileged user into its own file (read by perf,
# resolving the workload's hot_function), a Subscribe stream read by
# `perf script -i -`, and the permission matrix (root, control-group
# member, other user).
. "$(dirname "$0")/lib.sh"
require_events
require_perf
command -v setpriv >/dev/null || skip "setpriv is not installed"

S=$T/sock
G=perfrec-ctl-test$$
U=perfrec-ctl-user$$
groupadd "$G" || skip "cannot create a test group"
useradd -M -N -g nogroup -G "$G" -s /usr/sbin/nologin "$U" || { groupdel "$G"; skip "cannot create a test user"; }
trap 'userdel "$U" 2>/dev/null; groupdel "$G" 2>/dev/null; cleanup' EXIT
ctl() { timeout 60 "$PERFRECCTL" --socket "$S" "$@"; }
as_nobody() { timeout 60 setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
as_member() { timeout 60 setpriv --reuid="$U" --regid=nogroup --init-groups "$@"; }

chmod 755 "$T"   # other users reach the socket
mkdir -p "$T/out"
printf '[service]\ncontrol-group=%s\n' "$G" > "$T/perfrecd.conf"
"$PERFRECD" -c "$T/perfrecd.conf" -o "$T/out" --socket "$S" -F 499 -g 2>"$T/log" &
DAEMON_PID=$!
for i in $(seq 300); do ctl ping >/dev/null 2>&1 && break; sleep 0.1; done
[ -S "$S" ] || { cat "$T/log"; fail "no control socket"; }
[ "$(stat -c %a:%G "$S")" = "666:$G" ] || fail "socket mode/group is $(stat -c %a:%G "$S")"

note "Ping, Status, GetInfo, GetInterfaceDescription"
[ "$(ctl ping)" = pong ] || fail "ping"
"$WORKLOAD" 3 >/dev/null &
WL=$!
sleep 1
ctl status > "$T/status" || fail "status"
grep -q "event cpu-clock at 499 Hz" "$T/status" || { cat "$T/status"; fail "status lacks the event"; }
ctl --json status > "$T/status.json"
python3 - "$T/status.json" <<'EOP' || fail "status json"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["samples"] > 0 and len(s["cpus"]) >= 1 and s["rss_bytes"] > 0 and s["current_file"], s
assert sum(c["samples"] for c in s["cpus"]) == s["samples"]
EOP
python3 - "$S" "$TOP/daemon/io.perfrec.varlink" <<'EOP' || fail "GetInfo/GetInterfaceDescription"
import json, socket, sys
def call(m, p=None):
    s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
    s.sendall(json.dumps({"method": m, "parameters": p or {}}).encode() + b"\0")
    b = b""
    while not b.endswith(b"\0"):
        b += s.recv(65536)
    return json.loads(b[:-1])
i = call("org.varlink.service.GetInfo")["parameters"]
assert "io.perfrec" in i["interfaces"], i
d = call("org.varlink.service.GetInterfaceDescription", {"interface": "io.perfrec"})["parameters"]["description"]
assert d == open(sys.argv[2]).read(), "served description differs from daemon/io.perfrec.varlink"
EOP

note "Snapshot by nobody into its own file"
mkdir "$T/nobody"; chown nobody "$T/nobody"; chmod 700 "$T/nobody"
as_nobody "$PERFRECCTL" --socket "$S" snapshot "$T/nobody/snap.data" 2>"$T/err" && fail "nobody may snapshot by default"
grep -q "permission denied" "$T/err" || { cat "$T/err"; fail "no clear refusal"; }
grep -q "Refused Snapshot to uid $(id -u nobody)" "$T/log" || fail "refusal not logged with uid"
as_member "$PERFRECCTL" --socket "$S" snapshot "$T/out/../member.data" 2>"$T/err" && fail "member wrote where it may not"
# a member snapshots into a directory only nobody... the member's own dir
mkdir "$T/member"; chown "$U" "$T/member"; chmod 700 "$T/member"
as_member "$PERFRECCTL" --socket "$S" snapshot "$T/member/snap.data" || { cat "$T/log"; fail "member snapshot"; }
wait $WL
# -f: the file belongs to the member, not to root
perf report -f -i "$T/member/snap.data" --stdio --sort sym 2>"$T/perr" > "$T/rep"
grep -q hot_function "$T/rep" || { head -30 "$T/rep"; cat "$T/perr"; fail "snapshot does not resolve hot_function"; }
check_perf_stderr "perf report of the snapshot" "$T/perr"

note "Rotate, Pause/Resume, SetFrequency"
F=$(ctl rotate) || fail "rotate"
F=${F#published }
[ -f "$F" ] || fail "rotate answered '$F', no such file"
ctl pause >/dev/null || fail pause
ctl --json status | grep -Eq '"paused": ?true' || fail "not paused"
ctl resume >/dev/null || fail resume
ctl set-freq 199 >/dev/null || fail set-freq
ctl status | grep -q "event cpu-clock at 199 Hz" || fail "frequency not shown"
ctl set-freq 0 2>/dev/null; [ $? = 2 ] || fail "set-freq 0 is a usage error"
F=$(ctl rotate); F=$(ls -t "$T"/out/*.data | head -1)
F=$(ctl rotate); F=${F#published }
perf report -i "$F" --header-only 2>/dev/null | grep -Eq "sample_freq( })? = 199" || { perf report -i "$F" --header-only | grep freq; fail "next file does not carry 199 Hz"; }

note "Permission matrix"
for m in ping status; do as_nobody "$PERFRECCTL" --socket "$S" $m >/dev/null || fail "nobody cannot $m"; done
for m in rotate pause; do
	as_nobody "$PERFRECCTL" --socket "$S" $m 2>/dev/null; [ $? = 4 ] || fail "nobody $m: exit is not 4"
done
as_member "$PERFRECCTL" --socket "$S" pause >/dev/null || fail "member cannot pause"
as_member "$PERFRECCTL" --socket "$S" resume >/dev/null || fail "member cannot resume"

note "Subscribe stream into perf script"
"$WORKLOAD" 4 >/dev/null &
WL=$!
timeout 3 "$PERFRECCTL" --socket "$S" stream > "$T/stream.data"
wait "$WL"   # not a bare wait: the daemon is a child too
timeout 60 perf script -i - < "$T/stream.data" > "$T/script" 2>"$T/perr"
grep -q hot_function "$T/script" || { head "$T/script"; cat "$T/perr"; fail "stream shows no hot_function samples"; }

note "not running"
"$PERFRECCTL" --socket "$T/nope" ping 2>"$T/err"; [ $? = 3 ] || fail "exit code for no daemon"
grep -q "perfrecd is not running (no socket at $T/nope)" "$T/err" || fail "message for no daemon"
kill "$DAEMON_PID"; wait "$DAEMON_PID"; DAEMON_PID=
[ ! -e "$S" ] || fail "socket left behind"
echo "PASS"
