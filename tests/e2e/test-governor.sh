#!/usr/bin/env bash
# max-overhead= holds the budget on a load that exceeds it at the configured
# frequency: -F 20000 -g on every CPU busy with the workload and a budget of
# 0.5% of all CPUs.  Checks: the log shows the frequency lowered; the
# events of the next file sample at the governed frequency (no more samples
# than its max_frequency can give: a timer cannot fire faster than its
# period, while the configured frequency would give far more); the manifests show the change (min/max/now vs configured);
# Status over the control socket and systemd's STATUS= report the governor;
# with the workload gone the frequency rises back; a reload without
# max-overhead= puts the configured frequency back.  Whether the overhead
# stays within the budget is a measurement: tests/bench/timing.sh.
. "$(dirname "$0")/lib.sh"
require_events; require_perf

N=$(nproc); F=20000; BUDGET=0.5   # percent of all CPUs
S=$T/sock
mkdir -p "$T/out"
# A rate above max-frequency='s default, on purpose: the governor bounds it.
printf '[record]\nmax-frequency=%s\nmax-overhead=%s%%\n' "$F" "$BUDGET" >"$T/conf"
ctl() { timeout 60 "$PERFRECCTL" --socket "$S" "$@"; }
# wait_log PATTERN SECONDS: bounded wait for a log line.
wait_log() {
	local i
	for ((i = 0; i < $2 * 5; i++)); do
		grep -Eq "$1" "$T/log" && return 0
		kill -0 "$DAEMON_PID" 2>/dev/null || { cat "$T/log"; fail "perfrecd exited"; }
		sleep 0.2
	done
	cat "$T/log"; fail "no log line matching '$1' within $2 s"
}
# rotate: SIGUSR2 and wait (bounded) for one more published file, which
# is published once its manifest is there too.
manifests() { ls "$T/out"/*.data.json 2>/dev/null | wc -l; }
rotate() {
	local n
	n=$(manifests)
	kill -USR2 "$DAEMON_PID"
	more_manifests() { [ "$(manifests)" -gt "$n" ]; }
	wait_for 60 more_manifests || { ls -la "$T/out"; cat "$T/log"; fail "no file published within 60 s of SIGUSR2"; }
}
WL=
LISTENER=
trap 'cleanup; [ -n "$WL" ] && kill "$WL" 2>/dev/null; [ -n "$LISTENER" ] && kill "$LISTENER" 2>/dev/null' EXIT

# Plays systemd for the STATUS= line (sent every 5 s); ends with STOPPING=1 or after 600 s.
python3 - "$T/notify" >"$T/msgs" <<'PY' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(5)
start = time.monotonic()
while time.monotonic() - start < 600:
    try:
        m = s.recv(4096).decode()
    except socket.timeout:
        continue
    print(m.replace("\n", "|"), flush=True)
    if "STOPPING=1" in m:
        break
PY
LISTENER=$!
for ((i = 0; i < 50; i++)); do [ -S "$T/notify" ] && break; sleep 0.1; done
"$WORKLOAD" 900 >/dev/null &
WL=$!
NOTIFY_SOCKET=$T/notify "$PERFRECD" -c "$T/conf" -o "$T/out" --socket "$S" -e cpu-clock -F $F -g >"$T/log" 2>&1 &
DAEMON_PID=$!

wait_log 'Overhead governor: budget' 60
cost=$(sed -nE 's/.*Overhead governor: budget .*, ([0-9.]+) us per sample.*/\1/p' "$T/log")
note "$(grep 'Overhead governor: budget' "$T/log")"
awk -v c="$cost" 'BEGIN { exit !(c >= 0.1 && c <= 5000) }' || fail "per-sample cost '$cost' us is not plausible"
# The configured rate must clearly exceed the budget, or this test shows nothing.
awk -v c="$cost" -v n="$N" -v f=$F -v b=$BUDGET 'BEGIN { exit !(n * f * c * 1e-6 > 2 * n * b / 100) }' \
	|| skip "sampling at $F Hz costs only $cost us per sample here: not over a $BUDGET% budget"

# 1. The log shows the frequency lowered.
wait_log "Overhead governor: $F -> [0-9]+ Hz" 60
note "$(grep -E "Overhead governor: $F -> " "$T/log")"
# Let it record a while (it skips the period after each change), then
# close the file that saw the change.
sleep 2
rotate
f1=$(ls "$T/out"/*.data | head -1)

# 2. A file recorded under the governor from its start.
sleep 3   # some recording in it
ctl --json status >"$T/status.json" || fail "perfrecctl status failed"
rotate
f2=$(ls "$T/out"/*.data | sed -n 2p)
[ -n "$f2" ] && [ -e "$f2.json" ] || { ls -la "$T/out"; fail "no second file with a manifest"; }

total2=$(perf_samples "$f2")
[ -n "$total2" ] && [ "$total2" -gt 0 ] || fail "perf found no samples in $f2"
python3 - "$f1" "$f2" "$T/status.json" "$F" "$total2" "$N" "$BUDGET" <<'PY' || fail "the governor did not govern"
import json, sys, datetime
f1, f2, st, F, total2, n, budget = sys.argv[1:]
F, total2, n, budget = int(F), int(total2), int(n), float(budget) / 100
m1, m2, s = json.load(open(f1 + ".json")), json.load(open(f2 + ".json")), json.load(open(st))
errs = []
e1, e2 = m1["events"][0], m2["events"][0]
print(f"# first file: {e1}\n# second file: {e2}")
# The file that saw the change says so.
if e1.get("configured_frequency") != F or e1.get("max_frequency") != F or not e1.get("min_frequency", F) < F \
   or not e1.get("frequency", F) < F:
    errs.append(f"first manifest does not show the change from {F} Hz: {e1}")
if not e2.get("frequency", F) < F or e2.get("max_frequency", F) >= F:
    errs.append(f"second manifest not governed: {e2}")
# The events sample at the governed frequency.  An upper bound only: a
# cpu-clock timer cannot fire faster than its period, so n CPUs at most
# max_frequency give at most n * max_frequency samples a second (twice
# that for slack), while events left at the configured frequency would
# give n * F.  (The samples' PERF_SAMPLE_PERIOD cannot tell: the kernel
# keeps reporting cpu-clock's period from open time after the ioctl.)
ts = lambda x: datetime.datetime.strptime(x, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()
wall2 = ts(m2["end"]) - ts(m2["start"])
hi = e2.get("max_frequency", F)
print(f"# second file: {total2} samples in {wall2:.2f} s; at most {2 * n * hi * wall2:.0f} at {hi} Hz, "
      f"{n * F * wall2:.0f} at the configured {F} Hz")
if total2 > 2 * n * hi * wall2 + n:
    errs.append(f"{total2} samples in {wall2:.2f} s: more than {n} CPUs at {hi} Hz can give")
g = s.get("governor")
if not g or g.get("max_frequency") != F or not g.get("frequency", F) < F or g.get("changes", 0) < 1 \
   or abs(g.get("budget_percent", 0) - budget * 100) > 1e-9:
    errs.append(f"Status does not report the governor: {g}")
ev = [e for e in s.get("events", []) if e.get("name") == "cpu-clock"]
if g and (not ev or ev[0].get("frequency") != g.get("frequency")):
    errs.append(f"Status events {s.get('events')} disagree with the governor {g}")
for e in errs:
    print("FAIL:", e)
sys.exit(1 if errs else 0)
PY

# 3. Load gone: the frequency rises back.
lowest=$(grep -cE 'Overhead governor: [0-9]+ -> [0-9]+ Hz:.*well under' "$T/log")
kill "$WL"; wait "$WL" 2>/dev/null; WL=
read -r _ u1 n1 s1 i1 w1 q1 sq1 _ </proc/stat
for ((i = 0; i < 450; i++)); do
	[ "$(grep -cE 'Overhead governor: [0-9]+ -> [0-9]+ Hz:.*well under' "$T/log")" -gt "$lowest" ] && break
	sleep 0.2
done
if [ "$(grep -cE 'Overhead governor: [0-9]+ -> [0-9]+ Hz:.*well under' "$T/log")" -le "$lowest" ]; then
	read -r _ u2 n2 s2 i2 w2 q2 sq2 _ </proc/stat
	busy=$(( (u2 + n2 + s2 + q2 + sq2) - (u1 + n1 + s1 + q1 + sq1) ))
	idle=$(( (i2 + w2) - (i1 + w1) ))
	tail -5 "$T/log"
	# Other tasks kept the CPUs busy: the governor is right not to raise.
	[ $((busy * 100 / (busy + idle + 1))) -ge 60 ] && skip "the machine stayed $((busy * 100 / (busy + idle + 1)))% busy without the workload; no room to raise"
	fail "the frequency did not rise within 90 s of the load going away"
fi
note "$(grep -E 'Overhead governor: [0-9]+ -> [0-9]+ Hz:.*well under' "$T/log" | tail -1)"

# STATUS= for systemctl status showed the governed frequency.
grep -Eq "STATUS=.*governor at [0-9]+ of $F Hz, overhead [0-9.]+% of $BUDGET" "$T/msgs" \
	|| { cat "$T/msgs"; fail "no STATUS= line with the governor"; }
note "$(grep -E 'STATUS=.*governor at' "$T/msgs" | tail -1)"

# 4. A reload without max-overhead= turns the governor off: back to -F.
printf '[record]\nmax-frequency=%s\n' "$F" >"$T/conf"
kill -HUP "$DAEMON_PID"
wait_log "Overhead governor off: [0-9]+ -> $F Hz" 60
ctl --json status >"$T/status-off.json" || fail "perfrecctl status failed"
python3 - "$T/status-off.json" "$F" <<'PY' || fail "Status after the reload is wrong"
import json, sys
s, F = json.load(open(sys.argv[1])), int(sys.argv[2])
ev = [e for e in s["events"] if e["name"] == "cpu-clock"]
ok = "governor" not in s and ev and ev[0]["frequency"] == F
print(f"# after reload: events {s['events']}, governor {s.get('governor')}")
sys.exit(0 if ok else 1)
PY
kill -INT "$DAEMON_PID"
wait "$DAEMON_PID" || { cat "$T/log"; fail "perfrecd exited with an error"; }
DAEMON_PID=
wait "$LISTENER"; LISTENER=
exit 0
