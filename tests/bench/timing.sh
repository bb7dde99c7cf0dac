#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Timings that make check does not assert (a busy machine or a VM whose
# vCPUs the host preempts would fail them with nothing wrong in perfrecd),
# measured and reported here instead, run by `make bench` (part "timing"):
#
#   rate      samples per CPU against F * seconds, at F Hz on busy CPUs
#   rotation  over 20 rotations: the longest gap between two samples of a
#             CPU, across file boundaries and inside files, and the rate
#   reload    per CPU, the gap from the last sample of the file before a
#             SIGHUP that reopens the events to the first of the next
#   abuse     1000 concurrent control clients: per-CPU rate and longest
#             gap in the file that spans them
#   governor  max-overhead=0.5% at -F 20000 -g: perfrecd's own CPU plus
#             the samples times the calibrated cost, over a steady window
#
# Prints one line per figure ("name value unit") and nothing else on stdout;
# never fails on a figure.  Needs root and perf.
#
#   tests/bench/timing.sh [PART...]    (default: all parts)
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
PERFRECD=$TOP/tests/plain-perfrecd  # plain files, as perf record writes
PERFRECCTL=$TOP/tools/perfrecctl
WORKLOAD=$TOP/tests/e2e/workload
PARTS=${*:-rate rotation reload abuse governor}
N=$(nproc)
T=$(mktemp -d /tmp/perfrec-timing.XXXXXX)
PIDS=
trap 'for p in $PIDS; do kill "$p" 2>/dev/null; done; rm -rf "$T"' EXIT
[ -x "$PERFRECD" ] && [ -x "$PERFRECCTL" ] || { echo "build first: make" >&2; exit 2; }
[ -x "$WORKLOAD" ] || make -s -C "$TOP" tests/e2e/workload || exit 2

# wait_for SECONDS CMD...: poll CMD every 0.1 s (bounded).
wait_for() {
	local secs=$1 i; shift
	for ((i = 0; i < secs * 10; i++)); do "$@" && return 0; sleep 0.1; done
	"$@"
}
started() { grep -q Recording "$1"; }
# cpu_stats NAME F FILE...: per CPU, samples, span, rate and longest gap
# over the files taken in order as one recording.
cpu_stats() {
	local name=$1 f=$2; shift 2
	for file in "$@"; do perf script -i "$file" -F cpu,time --ns 2>/dev/null; done | tr -d '[]:' |
		awk -v name="$name" -v f="$f" '
		{ c = $1 + 0; t = $2 + 0
		  if (c in last) { g = t - last[c]; if (g > gap[c]) gap[c] = g } else first[c] = t
		  last[c] = t; n[c]++ }
		END { for (c in n) {
			span = last[c] - first[c]
			printf "%s_cpu%d_rate %.1f %%_of_%d_Hz\n", name, c, (span > 0 ? n[c] / span / f * 100 : 0), f
			printf "%s_cpu%d_max_gap %.3f ms\n", name, c, gap[c] * 1000 } }'
}

part_rate() {
	local F=499 S=4
	"$WORKLOAD" $((S + 2)) >/dev/null &
	PIDS="$PIDS $!"
	"$PERFRECD" -o "$T/rate" --socket '' -e cpu-clock -F $F --no-call-graph --duration $S 2>"$T/rate.log"
	perf script -i "$(ls "$T"/rate/*.data)" -F cpu 2>/dev/null | tr -d '[] ' | sort | uniq -c |
		awk -v e=$((F * S)) '{ printf "rate_cpu%d_samples %.1f %%_of_%d\n", $2, $1 / e * 100, e }'
}

part_rotation() {
	local F=499 i
	"$WORKLOAD" 30 >/dev/null &
	PIDS="$PIDS $!"
	"$PERFRECD" -o "$T/rot" --socket '' -e cpu-clock -F $F --no-call-graph 2>"$T/rot.log" &
	local d=$!
	wait_for 30 started "$T/rot.log" || return
	for i in $(seq 20); do
		kill -USR2 $d
		published() { [ "$(ls "$T"/rot/*.data.json 2>/dev/null | wc -l)" -ge "$i" ]; }
		wait_for 30 published || break
		sleep 0.3
	done
	kill -INT $d; wait $d
	cpu_stats rotation $F $(ls "$T"/rot/*.data)
}

part_reload() {
	local conf=$T/reload.conf
	printf '[record]\nfrequency=199\ncallchain=no\n[output]\ndirectory=%s\n' "$T/reload" >"$conf"
	"$WORKLOAD" 10 >/dev/null &
	PIDS="$PIDS $!"
	"$PERFRECD" -c "$conf" --socket '' 2>"$T/reload.log" &
	local d=$!
	wait_for 30 started "$T/reload.log" || return
	sleep 1
	printf '[record]\nfrequency=499\ncallchain=no\n[output]\ndirectory=%s\n' "$T/reload" >"$conf"
	kill -HUP $d
	reloaded() { grep -q 'events reopened' "$T/reload.log"; }
	wait_for 30 reloaded
	sleep 1
	kill -INT $d; wait $d
	local files=($(ls "$T"/reload/*.data)) cpu a b
	for cpu in $(seq 0 $((N - 1))); do
		a=$(perf script -i "${files[0]}" -C $cpu -F time --ns 2>/dev/null | tail -1 | tr -d ' :')
		b=$(perf script -i "${files[1]}" -C $cpu -F time --ns 2>/dev/null | head -1 | tr -d ' :')
		awk -v c=$cpu -v a="$a" -v b="$b" 'BEGIN { printf "reload_cpu%d_gap %.3f ms\n", c, (b - a) * 1000 }'
	done
}

part_abuse() {
	local S=$T/abuse.sock F
	"$WORKLOAD" 30 >/dev/null &
	PIDS="$PIDS $!"
	"$PERFRECD" -o "$T/abuse" --socket "$S" -F 499 2>"$T/abuse.log" &
	local d=$!
	wait_for 30 started "$T/abuse.log" || return
	"$PERFRECCTL" --socket "$S" rotate >/dev/null
	python3 - "$S" <<'EOP'
import json, resource, socket, sys
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4096)), hard))
PING = json.dumps({"method": "io.perfrec.Ping", "parameters": {}}).encode() + b"\0"
cs = []
for _ in range(1000):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sys.argv[1])
    cs.append(s)
for c in cs:
    c.sendall(PING)
for c in cs:
    c.settimeout(30)
    try:
        c.recv(65536)
    except OSError:
        pass
    c.close()
EOP
	sleep 1
	F=$("$PERFRECCTL" --socket "$S" rotate)
	kill -INT $d; wait $d
	cpu_stats abuse 499 "${F#published }"
}

part_governor() {
	local F=20000 S=$T/gov.sock c0 c1 t0 t1 f2
	printf '[record]\nmax-overhead=0.5%%\n' >"$T/gov.conf"
	"$WORKLOAD" 120 >/dev/null &
	PIDS="$PIDS $!"
	"$PERFRECD" -c "$T/gov.conf" -o "$T/gov" --socket "$S" -e cpu-clock -F $F -g >"$T/gov.log" 2>&1 &
	local d=$!
	lowered() { grep -Eq "Overhead governor: $F -> [0-9]+ Hz" "$T/gov.log"; }
	wait_for 60 lowered || { echo "governor_lowered 0 bool"; kill -INT $d; wait $d; return; }
	sleep 5
	"$PERFRECCTL" --socket "$S" rotate >/dev/null
	sleep 2
	c0=$(awk '{print $14 + $15}' /proc/$d/stat); t0=$(date +%s.%N)
	sleep 12
	c1=$(awk '{print $14 + $15}' /proc/$d/stat); t1=$(date +%s.%N)
	f2=$("$PERFRECCTL" --socket "$S" rotate); f2=${f2#published }
	kill -INT $d; wait $d
	local cost busy
	cost=$(sed -nE 's/.*Overhead governor: budget .*, ([0-9.]+) us per sample.*/\1/p' "$T/gov.log")
	busy=$(perf script -i "$f2" -F pid 2>/dev/null | awk '$1 != 0' | wc -l)
	python3 - "$f2" "$c0" "$c1" "$t0" "$t1" "$(getconf CLK_TCK)" "$cost" "$N" "$busy" <<'PY'
import json, sys, datetime
f2, c0, c1, t0, t1, hz, cost, n, busy = sys.argv[1:]
c0, c1, t0, t1, hz, cost, n, busy = float(c0), float(c1), float(t0), float(t1), float(hz), float(cost) * 1e-6, int(n), int(busy)
m = json.load(open(f2 + ".json"))
ts = lambda x: datetime.datetime.strptime(x, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()
wall = ts(m["end"]) - ts(m["start"])
own = (c1 - c0) / hz / (t1 - t0) / n
sampling = busy / wall * cost / n
print(f"governor_own_cpu {own * 100:.3f} %_of_all_CPUs")
print(f"governor_sampling {sampling * 100:.3f} %_of_all_CPUs")
print(f"governor_overhead {(own + sampling) * 100:.3f} %_of_all_CPUs_(budget_0.5)")
print(f"governor_frequency {m['events'][0].get('frequency')} Hz")
PY
}

for p in $PARTS; do
	"part_$p"
	for q in $PIDS; do kill "$q" 2>/dev/null; done
	PIDS=
done
exit 0
