#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The `callchain` part of `make bench` (tests/bench/README.md): whole stacks
# without frame pointers, perfrecd against perf, side by side in the same
# run.  For each rate, while tests/e2e/nofp (built -O2 -fomit-frame-pointer;
# one instance per two CPUs, each keeping two busy: a qsort comparator and a
# reader in read()) runs for SECS, five recorders take turns, all on every
# CPU with cpu-clock at the same frequency and rings of the same size:
#
#   perf     fp     perf record -g
#   perf     dwarf  perf record --call-graph dwarf,STACK, then the
#                   `perf report --stdio` that unwinds the file (its CPU
#                   is the report_cpu_s column: the rest of perf's cost
#                   for the same whole stacks)
#   perfrecd fp     perfrecd -g
#   perfrecd dwarf  perfrecd --call-graph dwarf,STACK (raw stacks), then
#                   `perfrecctl unwind` of the file (unwind_cpu_s) and
#                   `perf report --stdio` of the same file (report_cpu_s)
#   perfrecd host   perfrecd --call-graph dwarf,STACK --unwind host
#
# The order turns by one config each run so drift on the machine hits all
# alike.  Per run: the recorder's own CPU (wait4), peak RSS, bytes and
# samples written, LOST records and samples lost, the kernel's throttled
# sample rate.  Where perfrecd refuses --unwind host, the host rows say "host
# unwinding not available in this build" and carry no numbers.
#
# Then the unwind cache: perfrecd records raw DWARF at CACHE_RATE while
# many-binaries.sh runs 60-odd distinct programs on a data file for
# CACHE_SECS, and `perfrecctl unwind` of that file reports its ELF cache
# (files opened = misses, hits, hit rate, files and MiB kept open,
# evictions) and its own CPU and peak RSS.  With --unwind host available,
# the same load is recorded unwound by perfrecd, and its peak RSS and any
# unwinder figures `perfrecctl status --json` shows are kept.
#
# Writes RESULTS/callchain-runs.csv, callchain-summary.csv (via
# summarize-callchain.py) and callchain-cache.txt.
#
# Environment: BENCH_CALLCHAIN_RATES ("99 1000 10000"), BENCH_CALLCHAIN_RUNS
# (3), BENCH_CALLCHAIN_SECS (5), BENCH_STACK_SIZE (8192, perf's default),
# BENCH_CACHE_SECS (20; 0 leaves the cache out), BENCH_CACHE_RATE (1000), BENCH_MMAP_PAGES (128),
# BENCH_RESULTS (tests/bench/results).
set -u
cd "$(dirname "$0")/../.."
ROOT=$PWD
RATES=${BENCH_CALLCHAIN_RATES:-99 1000 10000}
RUNS=${BENCH_CALLCHAIN_RUNS:-3}
SECS=${BENCH_CALLCHAIN_SECS:-5}
STACK=${BENCH_STACK_SIZE:-8192}
CACHE_SECS=${BENCH_CACHE_SECS:-20}
CACHE_RATE=${BENCH_CACHE_RATE:-1000}
PAGES=${BENCH_CALLCHAIN_MMAP_PAGES:-${BENCH_MMAP_PAGES:-128}}
RESULTS=${BENCH_RESULTS:-$ROOT/tests/bench/results}
RUSAGE=$ROOT/tests/bench/rusage.py
PERFRECD=$ROOT/tests/plain-perfrecd  # plain files, as perf record writes
PERFRECCTL=$ROOT/tools/perfrecctl
NOFP=$ROOT/tests/e2e/nofp
NCPU=$(nproc)
MMAP_BYTES=$((PAGES * $(getconf PAGESIZE)))
RATE_FILE=/proc/sys/kernel/perf_event_max_sample_rate
NO_HOST="host unwinding not available in this build"

die() { echo "bench callchain: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (perf_event_open on all CPUs)"
command -v perf >/dev/null || die "perf not installed (linux-perf)"
[ -x "$PERFRECD" ] && [ -x "$PERFRECCTL" ] || die "perfrecd/perfrecctl not built (make all)"
[ -x "$NOFP" ] || make -s tests/e2e/nofp || die "cannot build tests/e2e/nofp"

mkdir -p "$RESULTS"
TMP=$(mktemp -d /tmp/perfrec-bench-cc.XXXXXX)
ORIG_RATE=$(cat $RATE_FILE)
cleanup() { echo "$ORIG_RATE" > $RATE_FILE; rm -rf "$TMP"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

# perfrecd's config for every run here: one file per run (no rotation, no
# retention deleting a large raw DWARF file), the rings perf gets.
conf() {
	printf '[record]\nmmap-size=%s\n[output]\nrotate-interval=0\nrotate-size=0\nmax-bytes=0\nmax-files=0\n' \
		"$MMAP_BYTES" > "$1"
}

# Does this perfrecd unwind on the host?  A 10-ms recording with the option;
# its first line of complaint is kept for the message.
HOST_OK=0
mkdir -p "$TMP/probe"; conf "$TMP/probe.conf"
if "$PERFRECD" -c "$TMP/probe.conf" --socket '' -o "$TMP/probe" -e cpu-clock -F 99 \
	--call-graph "dwarf,$STACK" --unwind host -d 10ms >"$TMP/probe.err" 2>&1; then
	HOST_OK=1
else
	echo "bench callchain: $NO_HOST (perfrecd --unwind host: $(grep -m1 . "$TMP/probe.err"))"
fi
rm -rf "$TMP/probe"

. "$ROOT/tests/bench/stats.sh"

# workload SECS: nofp on every CPU (each instance keeps two busy).
workload() {
	local i pids=()
	for i in $(seq $(((NCPU + 1) / 2))); do
		"$NOFP" "$1" >/dev/null & pids+=($!)
	done
	wait "${pids[@]}"
}

# cpu_of RUSAGEFILE -> "CPU_S MAXRSS_KIB"
cpu_of() {
	local u s m
	read -r u s m _ < "$1"
	awk -v u="$u" -v s="$s" -v m="$m" 'BEGIN { printf "%.4f %d\n", u + s, m }'
}

HDR="tool,mode,rate,run,ncpu,effective_max_rate,cpu_s,samples,cpu_us_per_sample,peak_rss_kib,bytes,bytes_per_sample,lost_records,samples_lost,report_cpu_s,report_rss_kib,unwind_cpu_s,unwind_rss_kib,unwound_bytes_per_sample,with_callers_pct,secs,note"

# one_run TOOL MODE RATE RUN CSV: record while nofp runs SECS, then the
# post-processing of a raw DWARF file; one row in CSV.
one_run() {
	local tool=$1 mode=$2 rate=$3 run=$4 csv=$5 out pid eff f files cg=()
	local bytes=0 samples=0 lrec=0 slost=0 a b c d cpu rss rcpu="" rrss="" ucpu="" urss="" ubps="" wcp="" note=""
	if [ "$tool/$mode" = perfrecd/host ] && [ "$HOST_OK" = 0 ]; then
		echo "perfrecd,host,$rate,$run,$NCPU,,,,,,,,,,,,,,,,$SECS,$NO_HOST" >> "$csv"
		return 0
	fi
	case $mode in
	fp) cg=(-g) ;;
	dwarf) cg=(--call-graph "dwarf,$STACK" --unwind file) ;;
	host) cg=(--call-graph "dwarf,$STACK" --unwind host) ;;
	esac
	out=$TMP/$tool-$mode-$rate-$run
	rm -rf "$out"; mkdir -p "$out"
	echo "$ORIG_RATE" > $RATE_FILE
	if [ "$tool" = perf ]; then
		python3 "$RUSAGE" "$out.ru" perf record -q -a "${cg[@]}" -e cpu-clock -F "$rate" \
			--buildid-mmap -m "$PAGES" -o "$out/perf.data" -- sleep $((SECS + 1)) \
			>/dev/null 2>"$out.err" &
	else
		conf "$out.conf"
		python3 "$RUSAGE" "$out.ru" "$PERFRECD" -c "$out.conf" --socket '' -o "$out" \
			-e cpu-clock -F "$rate" "${cg[@]}" -d $((SECS + 1)) >/dev/null 2>"$out.err" &
	fi
	pid=$!
	sleep 0.5
	workload "$SECS"
	wait $pid || { echo "bench callchain: $tool $mode run failed:" >&2; cat "$out.err" >&2; }
	eff=$(cat $RATE_FILE)
	echo "$ORIG_RATE" > $RATE_FILE
	files=$(ls "$out"/*.data 2>/dev/null)
	[ -n "$files" ] || { echo "bench callchain: no output from $tool $mode" >&2; return 1; }
	for f in $files; do
		bytes=$((bytes + $(stat -c %s "$f")))
		read -r a b d c < <(stats "$f")
		samples=$((samples + a)); lrec=$((lrec + b + d)); slost=$((slost + c))
	done
	read -r cpu rss < <(cpu_of "$out.ru")
	# The rest of the cost of whole stacks from a raw file: perf's reader
	# unwinding it, and (perfrecd's raw file) perfrecctl unwind.
	# A reader that fails (perf 6.1's report can crash on these files)
	# leaves its columns empty and says so in the note: its CPU up to the
	# crash is not the cost of the stacks.
	if [ "$mode" = dwarf ]; then
		local rc=0 uc=0 ur=0 ub=0 st
		for f in $files; do
			st=0
			python3 "$RUSAGE" "$out.rru" perf report --stdio -i "$f" >/dev/null 2>"$out.rerr" || st=$?
			if [ "$st" != 0 ]; then
				echo "bench callchain: perf report of $tool's $rate Hz file failed (exit $st):" >&2
				tail -3 "$out.rerr" >&2
				note="${note:+$note; }perf report exit $st"
			fi
			read -r a b < <(cpu_of "$out.rru")
			rc=$(awk -v x="$rc" -v y="$a" 'BEGIN { print x + y }'); [ "$b" -gt "${rrss:-0}" ] && rrss=$b
			if [ "$tool" = perfrecd ]; then
				st=0
				python3 "$RUSAGE" "$out.uru" "$PERFRECCTL" unwind "$f" "$f.unwound" >/dev/null 2>"$out.uerr" || st=$?
				if [ "$st" != 0 ]; then
					echo "bench callchain: perfrecctl unwind $f failed (exit $st):" >&2
					tail -3 "$out.uerr" >&2
					note="${note:+$note; }perfrecctl unwind exit $st"
				fi
				read -r a b < <(cpu_of "$out.uru")
				uc=$(awk -v x="$uc" -v y="$a" 'BEGIN { print x + y }'); [ "$b" -gt "$ur" ] && ur=$b
				ub=$((ub + $(stat -c %s "$f.unwound" 2>/dev/null || echo 0)))
				rm -f "$f.unwound"
			fi
		done
		case $note in *"perf report"*) rrss="" ;; *) rcpu=$rc ;; esac
		if [ "$tool" = perfrecd ]; then
			case $note in *"perfrecctl unwind"*) ;; *)
				ucpu=$uc; urss=$ur
				ubps=$(awk -v b="$ub" -v s="$samples" 'BEGIN { if (s) printf "%.1f", b / s }')
				# How many samples perfrecctl unwind found a caller for
				# (last file's figure when the run rotated).
				wcp=$(sed -n 's/.*: \([0-9]*\) samples, \([0-9]*\) with callers.*/\1 \2/p' "$out.uerr" |
					awk '{ if ($1) printf "%.1f", 100 * $2 / $1 }') ;;
			esac
		fi
	fi
	awk -v t="$tool" -v m="$mode" -v r="$rate" -v n="$run" -v nc="$NCPU" -v e="$eff" -v c="$cpu" \
	    -v sa="$samples" -v rs="$rss" -v b="$bytes" -v l="$lrec" -v sl="$slost" -v rc="$rcpu" \
	    -v rr="$rrss" -v uc="$ucpu" -v ur="$urss" -v ub="$ubps" -v w="$wcp" -v d="$SECS" -v no="$note" 'BEGIN {
		printf "%s,%s,%s,%s,%s,%s,%s,%d,%.2f,%d,%d,%.1f,%d,%d,%s,%s,%s,%s,%s,%s,%s,%s\n", t, m, r, n, nc, e, c, sa,
			sa ? c * 1e6 / sa : 0, rs, b, sa ? b / sa : 0, l, sl, rc, rr, uc, ur, ub, w, d, no }' >> "$csv"
	rm -rf "$out"
}

CSV=$RESULTS/callchain-runs.csv
echo "$HDR" > "$CSV"
CONFIGS=(perf:fp perf:dwarf perfrecd:fp perfrecd:dwarf perfrecd:host)
echo "bench callchain: $NCPU CPUs, tests/e2e/nofp (no frame pointers) for ${SECS}s per run, $RUNS runs per config," \
	"rings $PAGES pages per CPU for both, cpu-clock, dwarf stacks of $STACK bytes"
for rate in $RATES; do
	for run in $(seq 1 "$RUNS"); do
		# Turn the order by one config each run.
		for i in $(seq 0 $((${#CONFIGS[@]} - 1))); do
			c=${CONFIGS[$(((i + run - 1) % ${#CONFIGS[@]}))]}
			echo "bench callchain: ${c%%:*} ${c#*:} $rate Hz run $run" >&2
			one_run "${c%%:*}" "${c#*:}" "$rate" "$run" "$CSV" ||
				one_run "${c%%:*}" "${c#*:}" "$rate" "$run" "$CSV"
		done
	done
done
python3 "$ROOT/tests/bench/summarize-callchain.py" "$CSV" "$RESULTS/callchain-summary.csv"

# The unwind cache over many binaries (BENCH_CACHE_SECS=0: not this time).
[ "$CACHE_SECS" -gt 0 ] || exit 0
echo
echo "== unwind cache: ${CACHE_SECS}s of many distinct programs, raw DWARF at $CACHE_RATE Hz =="
seq 1 200000 | awk '{ printf "%d %x lorem ipsum dolor sit amet %d\n", $1, $1 * 7919, $1 % 97 }' > "$TMP/data.txt"
# cache_run MODE: record MODE while many-binaries.sh runs; leaves
# $TMP/cache-MODE/*.data, $TMP/cache-MODE.ru and .load (its output).
cache_run() {
	local mode=$1 cg=(--call-graph "dwarf,$STACK" --unwind file) sock="" pid
	[ "$mode" = host ] && cg[3]=host && sock=$TMP/sock
	rm -rf "$TMP/cache-$mode"; mkdir -p "$TMP/cache-$mode"
	conf "$TMP/cache.conf"
	python3 "$RUSAGE" "$TMP/cache-$mode.ru" "$PERFRECD" -c "$TMP/cache.conf" --socket "$sock" \
		-o "$TMP/cache-$mode" -e cpu-clock -F "$CACHE_RATE" "${cg[@]}" -d $((CACHE_SECS + 2)) \
		>/dev/null 2>"$TMP/cache-$mode.err" &
	pid=$!
	sleep 0.5
	tests/bench/many-binaries.sh "$TMP/data.txt" "$CACHE_SECS" > "$TMP/cache-$mode.load"
	# While the host unwinder still runs: what its status says of itself.
	if [ -n "$sock" ]; then
		"$PERFRECCTL" --socket "$sock" --json status > "$TMP/cache-status.json" 2>/dev/null
	fi
	wait $pid || { echo "bench callchain: perfrecd $mode failed:" >&2; cat "$TMP/cache-$mode.err" >&2; }
}
{
	cache_run dwarf
	f=$(ls "$TMP"/cache-dwarf/*.data | head -1)
	read -r samples _ < <(stats "$f")
	echo "programs_run $(awk '/^programs/ { print $2 }' "$TMP/cache-dwarf.load") programs"
	echo "program_runs $(awk '/^runs/ { print $2 }' "$TMP/cache-dwarf.load") runs"
	echo "raw_samples $samples samples"
	python3 "$RUSAGE" "$TMP/unwind.ru" "$PERFRECCTL" unwind "$f" "$TMP/unwound.data" >/dev/null 2>"$TMP/unwind.err" ||
		{ echo "bench callchain: perfrecctl unwind failed:" >&2; cat "$TMP/unwind.err" >&2; }
	read -r cpu rss < <(cpu_of "$TMP/unwind.ru")
	# "perfrecctl unwind: N samples, N with callers, F user frames each; ELF
	# cache: N files opened, N hits (P%), N open (M MiB), N evicted; N maps
	# without a matching file"
	python3 - "$TMP/unwind.err" <<'PY'
import re, sys
m = re.search(r"(\d+) samples, (\d+) with callers, ([\d.]+) user frames each; ELF cache: (\d+) files opened, "
              r"(\d+) hits \(([\d.]+)%\), (\d+) open \(([\d.]+) MiB\), (\d+) evicted; (\d+) maps", open(sys.argv[1]).read())
names = [("unwound_samples", "samples"), ("with_callers", "samples"), ("user_frames_per_sample", "frames"),
         ("elf_files_opened", "files"), ("elf_cache_hits", "lookups"), ("elf_cache_hit_rate", "%"),
         ("elf_files_open_at_end", "files"), ("elf_open_bytes", "MiB"), ("elf_evicted", "files"),
         ("maps_without_file", "maps")]
for (n, unit), v in zip(names, m.groups() if m else []):
    print(n, v, unit)
PY
	grep -q 'ELF cache' "$TMP/unwind.err" || echo "unwind_stats_missing $(grep -m1 . "$TMP/unwind.err")"
	echo "unwind_cpu $cpu s"
	echo "unwind_cpu_per_sample $(awk -v c="$cpu" -v s="$samples" 'BEGIN { printf "%.2f", s ? c * 1e6 / s : 0 }') us"
	echo "unwind_peak_rss $rss KiB"
	echo "raw_bytes_per_sample $(awk -v b="$(stat -c %s "$f")" -v s="$samples" 'BEGIN { printf "%.0f", s ? b / s : 0 }') B"
	echo "unwound_bytes_per_sample $(awk -v b="$(stat -c %s "$TMP/unwound.data" 2>/dev/null || echo 0)" -v s="$samples" \
		'BEGIN { printf "%.0f", s ? b / s : 0 }') B"
	rm -rf "$TMP"/cache-dwarf "$TMP/unwound.data"
	if [ "$HOST_OK" = 1 ]; then
		cache_run host
		read -r cpu rss < <(cpu_of "$TMP/cache-host.ru")
		echo "host_perfrecd_cpu $cpu s"
		echo "host_perfrecd_peak_rss $rss KiB"
		f=$(ls "$TMP"/cache-host/*.data | head -1)
		read -r samples _ _ b < <(stats "$f")
		echo "host_samples $samples samples"
		echo "host_samples_lost $b samples"
		echo "host_bytes_per_sample $(awk -v b="$(stat -c %s "$f")" -v s="$samples" 'BEGIN { printf "%.0f", s ? b / s : 0 }') B"
		# Whatever the status says about unwinding, leaf by leaf.
		python3 - "$TMP/cache-status.json" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except (OSError, ValueError):
    print("host_status_unreadable 1 -")
    sys.exit(0)
def walk(o, path):
    if isinstance(o, dict):
        for k, v in o.items():
            walk(v, path + [str(k)])
    elif isinstance(o, list):
        for i, v in enumerate(o):
            walk(v, path + [str(i)])
    elif isinstance(o, (int, float)) and not isinstance(o, bool):
        name = "_".join(path)
        if "unwind" in name or "elf" in name:
            print("host_status_%s %s -" % (name, o))
walk(d, [])
PY
		rm -rf "$TMP"/cache-host
	else
		echo "host_unwinding 0 - ($NO_HOST)"
	fi
} | tee "$RESULTS/callchain-cache.txt"
exit 0
