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
# takes too long; it is restored after every run).  CPU time and peak RSS
# come from wait4(2) (tests/bench/rusage.py: microseconds, where GNU time
# prints hundredths); samples and LOST records are counted by perf itself
# (perf report --stats), the number of samples lost by perfrecctl dump, over
# every file the recorder wrote.  It prints a table of medians with
# perfrecd/perf ratios pair by pair and writes the raw runs and the summary as
# CSV under tests/bench/results/.  Then it runs the drain-path
# micro-benchmark, the start-up / 10,000-thread synthesis benchmark, the
# compression ratios and the timings make check only bounds (timing.sh).
# The "steady" part records the same way for 20 s per run instead of 3: in a
# 3-s run perf's start-up (0.15 s of CPU) is most of what it spends at low
# rates and flatters perfrecd's ratio; over 20 s the steady-state cost shows.
# The "callchain" part (callchain.sh) compares whole stacks without frame
# pointers: -g, raw DWARF and host unwinding against perf record
# --call-graph dwarf plus perf report, and the unwind cache over many
# binaries; the "unwind25" part (unwind25.sh, its own BENCH_U25_* knobs)
# measures issue 25's whole stacks on the six real programs of
# tests/e2e/six-lib.sh (CPU and bytes per sample against -g and perf
# dwarf + report, samples lost or left un-unwound, the programs' slowdown,
# table build time and size, one unwinding worker's samples/s); the
# "views" part (views.sh) times perfrecctl flamegraph/pprof against perf
# script | collapse and perf report on a 1-million-sample file; the
# "jit26" part (jit26.sh, BENCH_JIT_* knobs) what naming JIT frames costs
# the capture against a node that JIT-compiles all the time; the "py27"
# part (py27.sh, BENCH_PY_* knobs) what reading Python frames at the
# sample costs perfrecd and a busy Python workload.
# See tests/bench/README.md.
#
# Environment: BENCH_PARTS ("record steady drain synth ratio timing
# callchain unwind unwind25 views jit26 py27"; the last six take their own knobs, see
# their scripts),
# BENCH_STEADY_SECS (20), BENCH_STEADY_RATES ("1000 10000 50000"),
# BENCH_STEADY_RUNS (3), BENCH_STEADY_COMPRESS_RATES ("": none),
# BENCH_STEADY_DEFAULT_RATES ("10000 50000": rows "d", perfrecd with its
# shipped compress=yes beside perf's plain default), BENCH_RESULTS
# (tests/bench/results: where the CSVs go), BENCH_RATES
# ("99 1000 10000 50000"), BENCH_RUNS (3), BENCH_SECS (3, workload seconds
# per run), BENCH_MMAP_PAGES (128 = 512 KiB), BENCH_COMPRESS_RATES ("10000":
# rates also run compressed; "" for none), BENCH_ZLEVEL (1: the zstd level
# both recorders compress at; 1 is what perf -z uses), BENCH_THREADS (10000),
# BENCH_SKIP_RECORD=1 (same as leaving "record" out of BENCH_PARTS),
# BENCH_DRAIN_PRIORITY (0: perfrecd's drain-priority=, SCHED_FIFO when > 0).
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
ZRATES=${BENCH_COMPRESS_RATES-10000}
THREADS=${BENCH_THREADS:-10000}
ZLEVEL=${BENCH_ZLEVEL:-1}
DRAINPRIO=${BENCH_DRAIN_PRIORITY:-0}
STEADY_SECS=${BENCH_STEADY_SECS:-20}
STEADY_RATES=${BENCH_STEADY_RATES:-1000 10000 50000}
STEADY_RUNS=${BENCH_STEADY_RUNS:-3}
STEADY_ZRATES=${BENCH_STEADY_COMPRESS_RATES-}
STEADY_DRATES=${BENCH_STEADY_DEFAULT_RATES-10000 50000}
PARTS=${BENCH_PARTS:-record steady drain synth ratio timing callchain unwind unwind25 views jit26 py27}
[ "${BENCH_SKIP_RECORD:-0}" = 1 ] && PARTS=${PARTS//record/}
RUSAGE=$ROOT/tests/bench/rusage.py
PERFRECCTL=$ROOT/tools/perfrecctl
RESULTS=${BENCH_RESULTS:-$ROOT/tests/bench/results}
PERFRECD=$ROOT/tests/plain-perfrecd  # plain files, as perf record writes
WORKLOAD=$ROOT/tests/e2e/workload
PAGE_SIZE=$(getconf PAGESIZE)
NCPU=$(nproc)
RATE_FILE=/proc/sys/kernel/perf_event_max_sample_rate

die() { echo "bench: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (perf_event_open on all CPUs)"
command -v perf >/dev/null || die "perf not installed (linux-perf)"
[ -x /usr/bin/time ] || die "/usr/bin/time (GNU time) not installed"
command -v python3 >/dev/null || die "python3 not installed"
[ -x "$PERFRECD" ] || die "$PERFRECD not built (make all)"
[ -x "$PERFRECCTL" ] || die "$PERFRECCTL not built (make all)"
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
RUNS_HDR="tool,compress,rate,run,ncpu,effective_max_rate,cpu_s,samples,cpu_s_per_msample,peak_rss_kib,vol_csw,bytes,bytes_per_sample,lost_records,lost_samples,samples_lost,secs"

. "$ROOT/tests/bench/stats.sh"

# one_run TOOL Z RATE RUN SECS CSV: record while the workload runs for SECS,
# append a row to CSV.
one_run() {
	local tool=$1 z=$2 rate=$3 run=$4 secs=$5 csv=$6 dur out ru pid files
	dur=$(awk -v s="$secs" 'BEGIN { print s + 1 }')
	out=$TMP/$tool-$z-$rate-$run
	ru=$out.rusage
	rm -rf "$out"; mkdir -p "$out"
	echo "$ORIG_RATE" > $RATE_FILE
	if [ "$tool" = perf ]; then
		local zopt=(); [ "$z" = 1 ] && zopt=(--compression-level="$ZLEVEL")
		python3 "$RUSAGE" "$ru" perf record -q -a -g -e cpu-clock -F "$rate" \
			--buildid-mmap -m "$PAGES" "${zopt[@]}" -o "$out/perf.data" -- sleep "$dur" \
			>/dev/null 2>"$out.err" &
	else
		# z=d: perfrecd's shipped default (compress=yes, zstd 3) beside
		# perf's default (plain): what a new user of each gets.
		# max-frequency=: perfrecd caps -F at 10 kHz by default, perf at
		# perf_event_max_sample_rate; both sample at the rate asked here.
		printf '[record]\nmmap-size=%s\ndrain-priority=%s\nmax-frequency=%s\n' "$MMAP_BYTES" "$DRAINPRIO" \
			"$rate" > "$out.conf"
		case $z in
		1) printf '[output]\ncompress=%s\n' "$ZLEVEL" >> "$out.conf" ;;
		d) ;;
		*) printf '[output]\ncompress=0\n' >> "$out.conf" ;;
		esac
		# daemon/perfrecd, not tests/plain-perfrecd: its --compress 0
		# would win over the config file's compress=.
		python3 "$RUSAGE" "$ru" "$ROOT/daemon/perfrecd" -c "$out.conf" --socket '' \
			-o "$out" -e cpu-clock -F "$rate" -g -d "$dur" \
			>/dev/null 2>"$out.err" &
	fi
	pid=$!
	sleep 0.5
	"$WORKLOAD" "$secs" "$NCPU" >/dev/null
	wait $pid || { echo "bench: $tool run failed:" >&2; cat "$out.err" >&2; }
	local eff; eff=$(cat $RATE_FILE)
	echo "$ORIG_RATE" > $RATE_FILE
	files=$(ls "$out"/*.data 2>/dev/null)
	[ -n "$files" ] || { echo "bench: no output from $tool" >&2; return 1; }
	local u s m v iv bytes=0 samples=0 lost=0 lsamp=0 slost=0 f a b c d cpu
	read -r u s m v iv < "$ru"
	# Every file the run wrote (perfrecd may have rotated).
	for f in $files; do
		bytes=$((bytes + $(stat -c %s "$f")))
		read -r a b c d < <(stats "$f")
		samples=$((samples + a)); lost=$((lost + b)); lsamp=$((lsamp + c)); slost=$((slost + d))
	done
	cpu=$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.4f", u + s }')
	awk -v t="$tool" -v z="$z" -v r="$rate" -v n="$run" -v nc="$NCPU" -v e="$eff" -v c="$cpu" \
	    -v sa="$samples" -v m="$m" -v cs="$v" -v b="$bytes" -v l="$lost" -v ls="$lsamp" -v sl="$slost" \
	    -v d="$secs" 'BEGIN {
		printf "%s,%s,%s,%s,%s,%s,%s,%d,%.3f,%d,%d,%d,%.1f,%d,%d,%d,%s\n", t, z, r, n, nc, e, c, sa,
			sa ? c * 1e6 / sa : 0, m, cs, b, sa ? b / sa : 0, l, ls, sl, d }' >> "$csv"
	rm -rf "$out"
}

# side_by_side NAME SECS RUNS RATES ZRATES: perf and perfrecd, run by run and
# alternating which goes first, at each rate (and each of ZRATES
# compressed); results/NAME-runs.csv and NAME-summary.csv.
side_by_side() {
	local name=$1 secs=$2 runs=$3 rates=$4 zrates=$5 drates=${6-} csv c z rate run order tool configs=()
	csv=$RESULTS/$name-runs.csv
	echo "$RUNS_HDR" > "$csv"
	echo "bench: $name: $NCPU CPUs, rings $PAGES pages ($MMAP_BYTES bytes) per CPU for both, -g, cpu-clock, ${secs}s workload, $runs runs per config, zstd level $ZLEVEL for -z, perfrecd drain-priority=$DRAINPRIO"
	for r in $rates; do configs+=("0:$r"); done
	for r in $zrates; do configs+=("1:$r"); done
	for r in $drates; do configs+=("d:$r"); done
	for c in "${configs[@]}"; do
		z=${c%%:*}; rate=${c#*:}
		for run in $(seq 1 "$runs"); do
			# Alternate which recorder goes first.
			if [ $((run % 2)) = 1 ]; then order="perf perfrecd"; else order="perfrecd perf"; fi
			for tool in $order; do
				echo "bench: $name $tool z=$z ${rate} Hz run $run (${secs}s)" >&2
				one_run "$tool" "$z" "$rate" "$run" "$secs" "$csv" ||
					one_run "$tool" "$z" "$rate" "$run" "$secs" "$csv"
			done
		done
	done
	python3 "$ROOT/tests/bench/summarize.py" "$csv" "$RESULTS/$name-summary.csv"
}

case " $PARTS " in *" record "*)
	side_by_side record "$SECS" "$RUNS" "$RATES" "$ZRATES"
	;;
esac

# Steady state: the same, for long enough that neither recorder's start-up
# and finish (synthesis, build ids) weigh much in its CPU time.
case " $PARTS " in *" steady "*)
	echo
	side_by_side steady "$STEADY_SECS" "$STEADY_RUNS" "$STEADY_RATES" "$STEADY_ZRATES" "$STEADY_DRATES"
	;;
esac

case " $PARTS " in *" drain "*)
	echo
	echo "== drain path (no kernel) =="
	tests/bench/bench-drain | tee "$RESULTS/drain.csv"
	;;
esac

case " $PARTS " in *" synth "*)
	echo
	echo "== start-up: a host with $THREADS extra threads =="
	ulimit -u unlimited 2>/dev/null
	tests/bench/spawn-threads "$THREADS" > "$TMP/spawn.out" &
	SPAWN=$!
	for _ in $(seq 100); do grep -q ready "$TMP/spawn.out" 2>/dev/null && break; sleep 0.1; done
	grep -q ready "$TMP/spawn.out" || { kill $SPAWN; die "spawn-threads did not start"; }
	echo "threads on the host: $(ls /proc/*/task 2>/dev/null | grep -c '^[0-9]')"
	# perf: the whole of `perf record -a -g -- true` (open, synthesize,
	# finish).  perfrecd: the whole daemon recording for 1 ms (open,
	# synthesize, finish, build ids, publish, manifest), and its synthesis
	# alone (bench-synth: what every rotation repeats).  Wall seconds and
	# the process's own CPU seconds.
	{
		echo "tool,run,wall_s,cpu_s"
		for run in 1 2 3; do
			t0=$(date +%s.%N)
			python3 "$RUSAGE" "$TMP/ru" perf record -q -a -g -e cpu-clock --buildid-mmap \
				-o "$TMP/startup.data" -- true >/dev/null 2>&1
			t1=$(date +%s.%N)
			read -r u s _ < "$TMP/ru"
			awk -v a="$t0" -v b="$t1" -v u="$u" -v s="$s" -v n="$run" \
				'BEGIN { printf "perf,%d,%.3f,%.3f\n", n, b - a, u + s }'
			rm -rf "$TMP/startup"; mkdir -p "$TMP/startup"
			t0=$(date +%s.%N)
			python3 "$RUSAGE" "$TMP/ru" "$PERFRECD" --socket '' -o "$TMP/startup" \
				-e cpu-clock -g -d 1ms >/dev/null 2>&1
			t1=$(date +%s.%N)
			read -r u s _ < "$TMP/ru"
			awk -v a="$t0" -v b="$t1" -v u="$u" -v s="$s" -v n="$run" \
				'BEGIN { printf "perfrecd,%d,%.3f,%.3f\n", n, b - a, u + s }'
			echo "perfrecd_synth_only,$run,$(tests/bench/bench-synth 2>/dev/null),"
		done
	} | tee "$RESULTS/synth.csv"
	kill $SPAWN; wait $SPAWN 2>/dev/null
	rm -f "$TMP"/*.data
	;;
esac

case " $PARTS " in *" ratio "*)
	# zstd ratio by level on a callchain-heavy recording, and perf -z's.
	echo
	echo "== compression ratio (callchain-heavy, -g) =="
	tests/bench/compress-ratio.sh 5 999 | tee "$RESULTS/compress-ratio.txt"
	;;
esac

case " $PARTS " in *" timing "*)
	# Rates, gaps and the governor's overhead, which make check only bounds.
	echo
	echo "== timing (rates, gaps, governor overhead) =="
	tests/bench/timing.sh | tee "$RESULTS/timing.txt"
	;;
esac

case " $PARTS " in *" callchain "*)
	# Whole stacks without frame pointers: -g, raw DWARF, host unwinding.
	echo
	echo "== callchain (tests/e2e/nofp: -g, --call-graph dwarf, --unwind host) =="
	BENCH_RESULTS=$RESULTS tests/bench/callchain.sh
	;;
esac

case " $PARTS " in *" unwind "*)
	# Host unwinding's CPU per sample: libdwfl on every sample, then the unwind tables.
	echo
	echo "== unwind (CPU per sample: libdwfl vs unwind tables; nofp, xz, python3, sqlite3, cc1, node) =="
	BENCH_RESULTS=$RESULTS tests/bench/unwind-cpu.sh
	;;
esac

case " $PARTS " in *" unwind25 "*)
	# Issue 25: whole stacks on the six real programs, their slowdown, the
	# tables of the largest binaries, one worker's throughput (scale).
	echo
	echo "== unwind25 (six real programs: host unwinding vs -g vs perf dwarf; slowdown; tables; one worker's rate) =="
	BENCH_RESULTS=$RESULTS tests/bench/unwind25.sh
	;;
esac

case " $PARTS " in *" views "*)
	# Flame graph and pprof of a 1-million-sample file against perf.
	echo
	echo "== views (perfrecctl flamegraph/pprof vs perf script | collapse, perf report) =="
	BENCH_RESULTS=$RESULTS tests/bench/views.sh
	;;
esac

case " $PARTS " in *" jit26 "*)
	# Issue 26: following perf maps and writing JIT images, per symbol.
	echo
	echo "== jit26 (naming JIT frames: perfrecd's CPU, RSS and bytes against a node compiling all the time) =="
	BENCH_RESULTS=$RESULTS tests/bench/jit26.sh
	;;
esac

case " $PARTS " in *" py27 "*)
	# Issue 27: Python frames read at the sample, with and without.
	echo
	echo "== py27 (Python frames: perfrecd's CPU and bytes per sample with and without, the workload's slowdown) =="
	BENCH_RESULTS=$RESULTS tests/bench/py27.sh
	;;
esac
exit 0
