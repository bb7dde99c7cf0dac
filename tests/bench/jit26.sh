#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The `jit26` part of `make bench` (tests/bench/README.md): what naming
# JIT frames (issue 26: daemon/jitsink.c following perf maps, writing
# MMAP2s and images) costs the capture, against a node that JIT-compiles
# all the time: a loop making a new function from new source (new
# Function) each round and calling it until V8 compiles it, so that
# node --perf-basic-prof keeps appending to its perf map (thousands of
# symbols a second).
#
# BENCH_JIT_RUNS times (3), alternating, perfrecd records system-wide
# (cpu-clock, -g, BENCH_JIT_RATE Hz, 999) while that node runs
# BENCH_JIT_SECS CPU seconds (20):
#
#   jit     the shipped configuration (buildid-cache=yes: the JIT sink on)
#   nomap   the same, node without --perf-basic-prof: the sink sees its
#           JIT mappings (and names them) but has no map to read
#   off     buildid-cache=no: no JIT sink (nor build-id cache of binaries)
#
# Per run: perfrecd's CPU (user+sys, wait4 via rusage.py), peak RSS, the
# bytes of the file and of the cache's JIT images, the symbols in node's
# map and those the sink read and put in images (its perfrecd_jit_*
# metrics at exit).  The summary: medians, and the cost per captured
# symbol, (CPU jit - CPU nomap) / symbols read, and what the whole sink
# and cache cost, jit against off.  Writes RESULTS/jit26-runs.csv
# and jit26-summary.csv.
set -u
cd "$(dirname "$0")/../.."
ROOT=$PWD
RUNS=${BENCH_JIT_RUNS:-3}
SECS=${BENCH_JIT_SECS:-20}
RATE=${BENCH_JIT_RATE:-999}
RESULTS=${BENCH_RESULTS:-$ROOT/tests/bench/results}
RUSAGE=$ROOT/tests/bench/rusage.py
PROMPARSE=$ROOT/tests/e2e/promparse.py
PERFRECD=$ROOT/daemon/perfrecd

die() { echo "bench jit26: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (perf_event_open on all CPUs)"
[ -x "$PERFRECD" ] || die "$PERFRECD not built (make all)"
NODE=$(command -v node) || { echo "bench jit26: node is not installed: skipped"; exit 0; }

mkdir -p "$RESULTS"
TMP=$(mktemp -d /tmp/perfrec-bench-jit26.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
cat >"$TMP/churn.js" <<'EOS'
// Code that never stops being compiled: each round a new function from
// new source, called until V8 compiles it.  argv[2]: CPU seconds to run.
const secs = +process.argv[2];
let n = 0, s = 0;
while (process.cpuUsage().user < secs * 1e6) {
  const f = new Function('x', `let a = x; for (let i = 0; i < 50; i++) a = (a * ${n % 97 + 3} + i) % 1000003; return a + ${n};`);
  for (let i = 0; i < 2000; i++) s += f(i);
  n++;
}
console.log(n);
EOS

metric() { python3 "$PROMPARSE" --value "$1" "$2" 2>/dev/null | awk '{ printf "%.0f", $1 }'; }

# run KIND N: one recording; appends a row to the runs CSV
run() {
	local kind=$1 i=$2 d=$TMP/$1-$2 pid dpid bytes img syms read imgsyms cpu rss
	mkdir -p "$d/out"
	{
		echo "[output]"
		echo "directory=$d/out"
		[ "$kind" = off ] && echo "buildid-cache=no"
		echo "[service]"
		echo "metrics-textfile=$d/m.prom"
	} >"$d/conf"
	python3 "$RUSAGE" "$d/ru" "$PERFRECD" -c "$d/conf" --socket= -e cpu-clock -F "$RATE" -g 2>"$d/log" &
	dpid=$!
	for _ in $(seq 300); do grep -q '^perfrecd: Recording' "$d/log" && break; sleep 0.1; done
	grep -q '^perfrecd: Recording' "$d/log" || { cat "$d/log"; die "perfrecd did not start"; }
	(cd "$TMP" && exec "$NODE" $([ "$kind" = nomap ] || echo --perf-basic-prof) "$TMP/churn.js" "$SECS" >"$d/node.out") &
	pid=$!
	wait $pid || die "node failed"
	syms=0
	[ -f "/tmp/perf-$pid.map" ] && syms=$(wc -l <"/tmp/perf-$pid.map")
	# perfrecd, rusage.py's child, ends its file at SIGTERM
	kill -TERM $(cat "/proc/$dpid/task/$dpid/children")
	wait $dpid
	rm -f "/tmp/perf-$pid.map"
	bytes=$(cat "$d"/out/*.data | wc -c)
	img=0
	[ -d "$d/out/perfrec-jit" ] && img=$(find -L "$d/out/perfrec-jit" -type f -printf '%s\n' | awk '{ n += $1 } END { print n + 0 }')
	read=$(metric perfrecd_jit_map_symbols_total "$d/m.prom")
	imgsyms=$(metric perfrecd_jit_image_symbols_total "$d/m.prom")
	read -r u s rss _ <"$d/ru"
	cpu=$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.3f", u + s }')
	echo "$kind,$i,$SECS,$RATE,$cpu,$rss,$bytes,$img,$syms,${read:-0},${imgsyms:-0}" >>"$RESULTS/jit26-runs.csv"
	printf '  %-5s run %d: perfrecd CPU %6.2f s, RSS %6d KiB, file %9d B, images %8d B, map %6d symbols, read %6s, in images %6s\n' \
		"$kind" "$i" "$cpu" "$rss" "$bytes" "$img" "$syms" "${read:-0}" "${imgsyms:-0}"
}

echo "kind,run,secs,rate,cpu_s,rss_kib,file_bytes,image_bytes,map_symbols,symbols_read,image_symbols" >"$RESULTS/jit26-runs.csv"
for i in $(seq "$RUNS"); do
	if [ $((i % 2)) = 1 ]; then run jit "$i"; run nomap "$i"; run off "$i"
	else run off "$i"; run nomap "$i"; run jit "$i"; fi
done
python3 - "$RESULTS/jit26-runs.csv" "$RESULTS/jit26-summary.csv" <<'EOP'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
med = lambda kind, k: statistics.median(float(r[k]) for r in rows if r['kind'] == kind)
keys = ['cpu_s', 'rss_kib', 'file_bytes', 'image_bytes', 'map_symbols', 'symbols_read', 'image_symbols']
out = csv.writer(open(sys.argv[2], 'w'))
out.writerow(['kind'] + keys)
for kind in ('jit', 'nomap', 'off'):
    out.writerow([kind] + ['%.3f' % med(kind, k) for k in keys])
    print('  median %-4s: ' % kind + ', '.join('%s %.3f' % (k, med(kind, k)) for k in keys))
d = med('jit', 'cpu_s') - med('nomap', 'cpu_s')
n = med('jit', 'symbols_read')
per = 1e6 * d / n if n else float('nan')
out.writerow(['per_symbol_us', '%.2f' % per])
print('  following the map: %+.3f s of CPU for %d symbols read: %.2f us a symbol; images %.0f B (%.1f B a symbol)'
      % (d, n, per, med('jit', 'image_bytes'), med('jit', 'image_bytes') / n if n else 0))
print('  the whole JIT sink and build-id cache (jit vs off): %+.3f s of CPU, %+.0f KiB peak RSS, file %+.1f%%'
      % (med('jit', 'cpu_s') - med('off', 'cpu_s'), med('jit', 'rss_kib') - med('off', 'rss_kib'),
         100 * (med('jit', 'file_bytes') / med('off', 'file_bytes') - 1)))
EOP
