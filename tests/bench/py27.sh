#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The `py27` part of `make bench` (tests/bench/README.md): what reading
# Python frames at the sample (issue 27: the BPF walk, the merge stage,
# naming code objects) costs, on a busy Python workload: two processes of
# Debian's python3 (one a CPU) running outer -> middle -> json.dumps ->
# via_json -> hot_leaf and a recursive fib for a fixed number of rounds
# (tests/e2e/pyfw.py, the workload of test-python-frames.sh).
#
# BENCH_PY_RUNS times (3), alternating, each mode once:
#
#   py      perfrecd with Python frames (python=yes) and host unwinding
#           (--call-graph dwarf --unwind host), BENCH_PY_RATE Hz (999)
#   nopy    the same with python=no
#   py99    python=yes at 99 Hz (the default rate): the workload's slowdown
#   nopy99  python=no at 99 Hz
#   none    no recorder: the workload's own time
#
# Per run: perfrecd's CPU (user+sys from wait4, rusage.py) and samples
# (perf report --stats), its bytes per sample, and the workload's CPU and
# wall time for its fixed rounds (the BPF walk runs in the sampled task's
# interrupt, so its cost is the workload's CPU, not perfrecd's).  The
# summary: medians; CPU per sample py against nopy; the workload's slowdown
# at 99 Hz against none.  Writes RESULTS/py27-runs.csv and py27.txt.
set -u
cd "$(dirname "$0")/../.."
ROOT=$PWD
RUNS=${BENCH_PY_RUNS:-3}
RATE=${BENCH_PY_RATE:-999}
ROUNDS=${BENCH_PY_ROUNDS:-6000}
RESULTS=${BENCH_RESULTS:-$ROOT/tests/bench/results}
RUSAGE=$ROOT/tests/bench/rusage.py
PERFRECD=$ROOT/tests/plain-perfrecd
PY=${BENCH_PY:-/usr/bin/python3}

die() { echo "bench py27: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (perf_event_open on all CPUs)"
[ -x "$PERFRECD" ] || die "$PERFRECD not built (make all)"
[ -x "$PY" ] || { echo "bench py27: $PY is not installed: skipped"; exit 0; }
"$PERFRECD" --config-keys 2>/dev/null | grep -q "^record python " ||
	{ echo "bench py27: this perfrecd has no python= key: skipped"; exit 0; }

mkdir -p "$RESULTS"
TMP=$(mktemp -d /tmp/perfrec-bench-py27.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
OUT=$RESULTS/py27.txt
CSV=$RESULTS/py27-runs.csv
echo "mode,run,rate,perfrecd_cpu_s,samples,bytes,workload_cpu_s,workload_wall_s,load" >"$CSV"
: >"$OUT"
say() { echo "$*" | tee -a "$OUT"; }
say "# $(date -u +%FT%TZ) $(uname -r), $(nproc) CPUs, $(git rev-parse --short HEAD 2>/dev/null), load $(cut -d' ' -f1-3 /proc/loadavg)"

# workload: two busy pythons, their CPU (user+sys) and wall time summed/maxed
workload() {
	local t0 t1 a b
	t0=$(date +%s.%N)
	python3 "$RUSAGE" "$TMP/w1" "$PY" "$ROOT/tests/e2e/pyfw.py" --rounds "$ROUNDS" &
	a=$!
	python3 "$RUSAGE" "$TMP/w2" "$PY" "$ROOT/tests/e2e/pyfw.py" --rounds "$ROUNDS" &
	b=$!
	wait $a $b
	t1=$(date +%s.%N)
	awk -v t0="$t0" -v t1="$t1" '{ c += $1 + $2 } END { printf "%.3f %.3f", c, t1 - t0 }' "$TMP/w1" "$TMP/w2"
}

run() {
	local mode=$1 i=$2 rate=$3 py d=$TMP/run pid cpu smp bytes w
	case $mode in py*) py=yes ;; *) py=no ;; esac
	rm -rf "$d"; mkdir -p -m 0700 "$d/out"
	if [ "$mode" = none ]; then
		w=$(workload)
		echo "none,$i,0,0,0,0,${w% *},${w#* },$(cut -d' ' -f1 /proc/loadavg)" >>"$CSV"
		return
	fi
	printf '[record]\npython=%s\n[output]\nrotate-interval=0\nrotate-size=0\nmax-bytes=0\nmax-files=0\nbuildid-cache=%s\n' \
		"$py" "$d/bid" >"$d/c.conf"
	python3 "$RUSAGE" "$d/ru" "$PERFRECD" -c "$d/c.conf" --socket= -o "$d/out" -e cpu-clock -F "$rate" \
		--call-graph dwarf,8192 --unwind host 2>"$d/err" &
	pid=$!
	for _ in $(seq 100); do grep -q '^perfrecd: Recording' "$d/err" && break; sleep 0.1; done
	w=$(workload)
	pkill -TERM -P $pid
	wait $pid
	cpu=$(awk '{ printf "%.3f", $1 + $2 }' "$d/ru")
	smp=0 bytes=0
	for f in "$d"/out/*.data; do
		[ -e "$f" ] || continue
		smp=$((smp + $(perf report -i "$f" --stats 2>/dev/null | awk '/SAMPLE events:/ { print $3; exit }')))
		bytes=$((bytes + $(stat -c %s "$f")))
	done
	echo "$mode,$i,$rate,$cpu,$smp,$bytes,${w% *},${w#* },$(cut -d' ' -f1 /proc/loadavg)" >>"$CSV"
	echo "bench py27: $mode run $i: perfrecd ${cpu} s CPU, $smp samples, $bytes B; workload ${w% *} s CPU, ${w#* } s wall" >&2
}

for i in $(seq "$RUNS"); do
	run py "$i" "$RATE"; run nopy "$i" "$RATE"
	run py99 "$i" 99; run nopy99 "$i" 99; run none "$i" 0
done

python3 - "$CSV" <<'EOS' | tee -a "$OUT"
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
def med(mode, f):
    v = [f(r) for r in rows if r["mode"] == mode]
    return statistics.median(v) if v else float("nan")
us = lambda r: 1e6 * float(r["perfrecd_cpu_s"]) / max(int(r["samples"]), 1)
bs = lambda r: int(r["bytes"]) / max(int(r["samples"]), 1)
wc = lambda r: float(r["workload_cpu_s"])
ww = lambda r: float(r["workload_wall_s"])
py, nopy = med("py", us), med("nopy", us)
print(f"perfrecd CPU/sample at the bench rate: python=yes {py:.2f} us, python=no {nopy:.2f} us ({py / nopy:.2f}x)")
print(f"bytes/sample: python=yes {med('py', bs):.0f}, python=no {med('nopy', bs):.0f}")
for m in ("py", "nopy", "py99", "nopy99", "none"):
    print(f"workload {m}: CPU {med(m, wc):.2f} s, wall {med(m, ww):.2f} s")
n = med("none", wc)
print(f"workload slowdown at 99 Hz (CPU): python=yes {100 * (med('py99', wc) / n - 1):+.1f}%, "
      f"python=no {100 * (med('nopy99', wc) / n - 1):+.1f}%")
EOS
