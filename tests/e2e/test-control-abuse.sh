#!/bin/bash
# The control socket under abuse: garbage, truncated, oversized and
# interleaved messages and 1000 concurrent clients.  The daemon answers or
# drops each, never crashes, still answers a well-behaved client afterwards,
# and keeps recording every CPU with nothing lost meanwhile (perf counts the
# samples and LOST records of the file that spans it).  The recording's
# rate under abuse is measured by tests/bench/timing.sh, not asserted here.
. "$(dirname "$0")/lib.sh"
require_events
require_perf

S=$T/sock
mkdir -p "$T/out"
ncpu=$(nproc)
# -g: frame-pointer samples, whose rate the default rings hold under this
# load (DWARF stacks at 499 Hz need bigger rings: mmap-size=).
"$PERFRECD" -o "$T/out" --socket "$S" -F 499 -g 2>"$T/log" &
DAEMON_PID=$!
for _ in $(seq 300); do timeout 10 "$PERFRECCTL" --socket "$S" ping >/dev/null 2>&1 && break; sleep 0.1; done
[ -S "$S" ] || { cat "$T/log"; fail "no control socket"; }
# Every CPU busy throughout: cpu-clock does not sample an idle CPU on every
# kernel, and the rate is checked per CPU.
"$WORKLOAD" 60 >/dev/null &
WL=$!
trap 'kill $WL 2>/dev/null; cleanup' EXIT
# Everything recorded before the abuse goes to its own file.
timeout 60 "$PERFRECCTL" --socket "$S" rotate >/dev/null || fail "rotate before the abuse"

python3 - "$S" <<'EOP' || fail "abuse client"
import json, resource, select, socket, sys, time
path = sys.argv[1]
def conn():
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    return s
def replies(s, want, timeout=30):
    """Read until `want` NUL-terminated replies or EOF; return (replies, eof)."""
    buf, out, end = b"", [], time.time() + timeout
    s.settimeout(1)
    while len(out) < want and time.time() < end:
        try:
            b = s.recv(65536)
        except socket.timeout:
            continue
        except ConnectionResetError:
            return out, True
        if not b:
            return out, True
        buf += b
        while b"\0" in buf:
            m, buf = buf.split(b"\0", 1)
            out.append(json.loads(m))   # whatever comes back is well-formed JSON
    assert len(out) >= want or time.time() < end, "neither answered nor dropped in %ds" % timeout
    return out, False
def sendall_or_reset(s, data):
    try:
        s.sendall(data)
        return True
    except (BrokenPipeError, ConnectionResetError):
        return False
PING = json.dumps({"method": "io.perfrec.Ping", "parameters": {}}).encode() + b"\0"

# Garbage: not JSON, JSON that is not a call, unknown method, wrong types.
for junk in [b"\xff\xfe\x00", b"{{{{\0", b"[1,2,3]\0", b'{"method": 7}\0',
             b'{"method":"io.perfrec.NoSuch","parameters":{}}\0',
             b'{"method":"io.perfrec.SetFrequency","parameters":{"frequency":"x"}}\0']:
    s = conn(); s.sendall(junk)
    r, eof = replies(s, 1)
    assert eof or (r and "error" in r[0]), (junk, r)
    s.close()
print("# garbage: answered with errors or dropped")

# Truncated: half a message, then the client goes away (and one that waits).
s = conn(); s.sendall(PING[:10]); s.close()
s = conn(); s.sendall(PING[:-1]); s.shutdown(socket.SHUT_WR)
r, eof = replies(s, 1, 10)
assert not r, r      # no NUL, no call: nothing to answer
s.close()

# Oversized: 1 MiB without a NUL must be refused, not buffered.
s = conn()
sent = sendall_or_reset(s, b"a" * (1 << 20))
r, eof = replies(s, 1)
assert eof or (r and r[0].get("error", "").endswith("MessageTooLarge")) or not sent, r
s.close()
print("# truncated and oversized: dropped")

# Interleaved: several calls in one write, one call split across writes,
# and many clients sending one byte at a time in turn.
s = conn()
s.sendall(PING + PING + PING[:5]); time.sleep(0.05); s.sendall(PING[5:])
r, _ = replies(s, 3)
assert len(r) == 3 and all("parameters" in x for x in r), r
s.close()
cs = [conn() for _ in range(50)]
for i in range(len(PING)):
    for c in cs:
        c.send(PING[i:i + 1])
for c in cs:
    r, _ = replies(c, 1)
    assert len(r) == 1 and "parameters" in r[0], r
    c.close()
print("# interleaved: every call answered in order")

# 1000 concurrent clients.
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4096)), hard))
cs = []
for _ in range(1000):
    cs.append(conn())
for c in cs:
    c.sendall(PING)
answered = dropped = 0
for c in cs:
    r, eof = replies(c, 1)
    if r:
        assert "parameters" in r[0], r
        answered += 1
    else:
        assert eof
        dropped += 1
    c.close()
print("# 1000 clients: %d answered, %d dropped" % (answered, dropped))
assert answered + dropped == 1000
s = conn(); s.sendall(PING)
r, _ = replies(s, 1)
assert r and "parameters" in r[0], "no answer after the abuse"
EOP
kill -0 "$DAEMON_PID" 2>/dev/null || { cat "$T/log"; fail "perfrecd died"; }
sleep 1   # let the file record a while after the abuse too
F=$(timeout 60 "$PERFRECCTL" --socket "$S" rotate) || fail "rotate after the abuse"
kill "$WL"; wait "$WL" 2>/dev/null
F=${F#published }
[ -f "$F" ] || fail "rotate answered '$F', no such file"

# The file that spans the abuse: no LOST, and every (busy) CPU sampled in
# it (the daemon went on draining every ring).
perf report -i "$F" --stats 2>/dev/null >"$T/stats"
grep -Eq "LOST(_SAMPLES)? events: *[1-9]" "$T/stats" && { cat "$T/stats"; fail "records lost during the abuse"; }
perf script -i "$F" -F cpu,time 2>/dev/null | tr -d '[]:' | awk -v ncpu="$ncpu" '
	{ n[$1 + 0]++ }
	END {
		for (c = 0; c < ncpu; c++) {
			printf "# cpu%d: %d samples\n", c, n[c]
			if (!n[c]) { print "cpu" c " has no samples"; exit 1 }
		}
	}' || fail "recording did not go on on every CPU during the abuse"
kill -INT "$DAEMON_PID"; wait "$DAEMON_PID" || fail "perfrecd exit status"
DAEMON_PID=
echo PASS
