#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Side-by-side benchmark of perfrecd against `perf record -a`, run by
# `make bench` (not by make check).  For every rate both recorders sample the
# same event (cpu-clock) at the same frequency with callchains on all CPUs,
# with per-CPU rings of the same size (perf -m PAGES == perfrecd mmap-size),
# while tests/e2e/workload keeps every CPU busy; runs alternate perf/perfrecd
# so drift on the machine hits both alike.  Per run it records the recorder's
# own CPU time (user+sys from GNU time), peak RSS, bytes written per sample,
# samples and LOST/LOST_SAMPLES as `perf report --stats` counts them, and the
# effective perf_event_max_sample_rate (the kernel lowers it when sampling
# takes too long; it is restored after every run).  It prints a table of
# medians with perfrecd/perf ratios pair by pair and writes the raw runs and
# the summary as CSV under tests/bench/results/.  Then it runs the drain-path
# micro-benchmark and the 10,000-thread synthesis benchmark.
#
# Environment: BENCH_RATES ("99 1000 10000 50000"), BENCH_RUNS (3),
# BENCH_SECS (3, workload seconds per run), BENCH_MMAP_PAGES (128 = 512 KiB),
# BENCH_COMPRESS_RATES ("10000": rates also run as perf -z vs perfrecd -z;
# "" for none), BENCH_THREADS (10000), BENCH_SKIP_RECORD=1 to run only the
# micro-benchmarks.
#
# perf records with --buildid-mmap: build ids ride in MMAP2 records as
# perfrecd writes them, instead of perf's post-processing pass over the data
# (which also crashes perf 6.1 here, "stack smashing detected").
set -u
cd "$(dirname "$0")/../.."
ROOT=$PWD
RATES=${BENCH_RATES:-99 1000 10000 50000}
RUNS=${BENCH_RUNS:-3}
SECS=${BENCH_SECS:-3}
PAGES=${BENCH_MMAP_PAGES:-128}
ZRATES=${BENCH_COMPRESS_RATES:-10000}
THREADS=${BENCH_THREADS:-10000}
RESULTS=$ROOT/tests/bench/results
PERFRECD=$ROOT/daemon/perfrecd
WORKLOAD=$ROOT/tests/e2e/workload
PAGE_SIZE=$(getconf PAGESIZE)
NCPU=$(nproc)
RATE_FILE=/proc/sys/kernel/perf_event_max_sample_rate

die() { echo "bench: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (perf_event_open on all CPUs)"
command -v perf >/dev/null || die "perf not installed (linux-perf)"
[ -x /usr/bin/time ] || die "/usr/bin/time (GNU time) not installed"
[ -x "$PERFRECD" ] || die "$PERFRECD not built (make all)"
[ -x "$WORKLOAD" ] || make -s tests/e2e/workload || die "cannot build workload"
make -s tests/bench/bench-drain tests/bench/bench-synth tests/bench/spawn-threads \
	|| die "cannot build the micro-benchmarks"

mkdir -p "$RESULTS"
TMP=$(mktemp -d /tmp/perfrec-bench.XXXXXX)
ORIG_RATE=$(cat $RATE_FILE)
cleanup() { echo "$ORIG_RATE" > $RATE_FILE; rm -rf "$TMP"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

MMAP_BYTES=$((PAGES * PAGE_SIZE))
RUNS_CSV=$RESULTS/record-runs.csv
SUM_CSV=$RESULTS/record-summary.csv
echo "tool,compress,rate,run,effective_max_rate,cpu_s,samples,cpu_us_per_msample,peak_rss_kib,bytes,bytes_per_sample,lost,lost_samples" > "$RUNS_CSV"

# stats FILE -> "samples lost lost_samples"
stats() {
	perf report --stats -i "$1" 2>/dev/null | awk '
		/^ *SAMPLE events:/ { s = $3 }
		/^ *LOST events:/ { l = $3 }
		/^ *LOST_SAMPLES events:/ { ls = $3 }
		END { printf "%d %d %d\n", s, l, ls }'
}

# one_run TOOL Z RATE RUN: record while the workload runs, append a CSV row.
one_run() {
	local tool=$1 z=$2 rate=$3 run=$4 dur out tf pid file
	dur=$(awk -v s="$SECS" 'BEGIN { print s + 1 }')
	out=$TMP/$tool-$z-$rate-$run
	tf=$out.time
	rm -rf "$out"; mkdir -p "$out"
	echo "$ORIG_RATE" > $RATE_FILE
	if [ "$tool" = perf ]; then
		local zopt=(); [ "$z" = 1 ] && zopt=(-z)
		/usr/bin/time -f "%U %S %M" -o "$tf" perf record -q -a -g -e cpu-clock -F "$rate" \
			--buildid-mmap -m "$PAGES" "${zopt[@]}" -o "$out/perf.data" -- sleep "$dur" \
			>/dev/null 2>"$out.err" &
	else
		local zopt=(); [ "$z" = 1 ] && zopt=(-z)
		printf '[record]\nmmap-size=%s\n' "$MMAP_BYTES" > "$out.conf"
		/usr/bin/time -f "%U %S %M" -o "$tf" "$PERFRECD" -c "$out.conf" --socket '' \
			-o "$out" -e cpu-clock -F "$rate" -g "${zopt[@]}" -d "$dur" \
			>/dev/null 2>"$out.err" &
	fi
	pid=$!
	sleep 0.5
	"$WORKLOAD" "$SECS" "$NCPU" >/dev/null
	wait $pid || { echo "bench: $tool run failed:" >&2; cat "$out.err" >&2; }
	local eff; eff=$(cat $RATE_FILE)
	echo "$ORIG_RATE" > $RATE_FILE
	file=$(ls "$out"/*.data 2>/dev/null | head -1)
	[ -n "$file" ] || { echo "bench: no output from $tool" >&2; return 1; }
	local u s m bytes samples lost lsamp cpu
	read -r u s m < <(tail -1 "$tf")
	bytes=$(stat -c %s "$file")
	read -r samples lost lsamp < <(stats "$file")
	cpu=$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')
	awk -v t="$tool" -v z="$z" -v r="$rate" -v n="$run" -v e="$eff" -v c="$cpu" \
	    -v sa="$samples" -v m="$m" -v b="$bytes" -v l="$lost" -v ls="$lsamp" 'BEGIN {
		printf "%s,%s,%s,%s,%s,%s,%d,%.1f,%d,%d,%.1f,%d,%d\n", t, z, r, n, e, c, sa,
			sa ? c * 1e12 / sa / 1e6 : 0, m, b, sa ? b / sa : 0, l, ls }' >> "$RUNS_CSV"
	rm -rf "$out"
}

if [ "${BENCH_SKIP_RECORD:-0}" != 1 ]; then
	echo "bench: $NCPU CPUs, rings $PAGES pages ($MMAP_BYTES bytes) per CPU for both, -g, cpu-clock, ${SECS}s workload, $RUNS runs per config"
	configs=()
	for r in $RATES; do configs+=("0:$r"); done
	for r in $ZRATES; do configs+=("1:$r"); done
	for c in "${configs[@]}"; do
		z=${c%%:*}; rate=${c#*:}
		for run in $(seq 1 "$RUNS"); do
			# Alternate which recorder goes first.
			if [ $((run % 2)) = 1 ]; then order="perf perfrecd"; else order="perfrecd perf"; fi
			for tool in $order; do
				echo "bench: $tool z=$z ${rate} Hz run $run" >&2
				one_run "$tool" "$z" "$rate" "$run" || one_run "$tool" "$z" "$rate" "$run"
			done
		done
	done
	python3 "$ROOT/tests/bench/summarize.py" "$RUNS_CSV" "$SUM_CSV"
fi

echo
echo "== drain path (no kernel) =="
tests/bench/bench-drain | tee "$RESULTS/drain.csv"

echo
echo "== synthesis of a host with $THREADS extra threads =="
ulimit -u unlimited 2>/dev/null
tests/bench/spawn-threads "$THREADS" > "$TMP/spawn.out" &
SPAWN=$!
for _ in $(seq 100); do grep -q ready "$TMP/spawn.out" 2>/dev/null && break; sleep 0.1; done
grep -q ready "$TMP/spawn.out" || { kill $SPAWN; die "spawn-threads did not start"; }
echo "threads on the host: $(ls /proc/*/task 2>/dev/null | grep -c '^[0-9]')"
{
	echo "tool,run,seconds"
	for run in 1 2 3; do
		/usr/bin/time -f "perf,$run,%e" perf record -q -a -o "$TMP/startup.data" -- true 2>&1 >/dev/null | tail -1
		echo "perfrecd_synth,$run,$(tests/bench/bench-synth)"
	done
} | tee "$RESULTS/synth.csv"
kill $SPAWN; wait $SPAWN 2>/dev/null
rm -f "$TMP"/*.data
exit 0
