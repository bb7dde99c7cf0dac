#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The `unwind25` part of `make bench` (tests/bench/README.md, "Issue 25:
# whole stacks on the six real programs"): what whole stacks by host
# unwinding (--call-graph dwarf --unwind host, the coming default) cost on
# issue 25's six real programs, tests/e2e/six-lib.sh's workloads (xz,
# Debian's python3, sqlite3, cc1, node, a storm of short md5sum
# processes), side by side with frame pointers and with perf.  Four steps:
#
#  record   the six programs run together, each in a loop, for SECS while
#           each recorder in turn samples every CPU at RATE: perfrecd host
#           (whole stacks, a first start: every table built), perfrecd
#           warm (the same after a restart: host's tables loaded from the
#           build-id cache they share), perfrecd -g (frame pointers), perf record
#           --call-graph dwarf,STACK plus the perf report --stdio that
#           unwinds its file (perf's whole cost of the same stacks; for
#           PERF_SECS only: its report costs some 5 ms of CPU a sample,
#           60 s of it would take 10 minutes and more).  Per
#           run: recorder CPU (wait4), samples, CPU per sample (all-in: the
#           start's /proc walk and table loads included) and perfrecd's
#           steady CPU per sample (its status's cpu_time_sec and samples
#           from STEADY_FROM s into the run to the end of the load: what an
#           always-on daemon costs once started), bytes per
#           sample, LOST records and samples lost, the kernel's throttled
#           max rate, and for perfrecd host its status's unwind counters
#           taken when the load ends (samples, unwound, behind: stripped
#           because the worker fell behind, dropped).
#  slowdown the six programs once each, one after the other (a fixed amount
#           of work), ROUNDS times without and with perfrecd host at
#           SLOW_RATE (alternating), their own wall and CPU time, and
#           perfrecd's own CPU meanwhile (it samples every process).
#  tables   tests/bench/bench-unwtab on the largest binaries (node, cc1,
#           libc); then perfrecd host while many-binaries.sh runs CACHE_SECS:
#           its tables, their bytes and perfrecd's peak RSS.
#  replay   perfrecd --call-graph dwarf (raw stacks) records the six
#           programs for REPLAY_REC_SECS at RATE; tests/bench/bench-replay
#           feeds that file through one unwinder (the worker's call) over
#           and over for REPLAY_SECS: one worker's samples/s in a steady
#           state, and how many CPUs at 99 Hz / 999 Hz it keeps up with.
#           (perf's -a files carry a dummy event the unwinder does not
#           take samples of, so perfrecd's own raw file is replayed.)
#
# Writes RESULTS/unwind25.txt (and the record runs as unwind25-runs.csv).
# Environment: BENCH_U25_STEPS ("record slowdown tables replay"),
# BENCH_U25_SECS (60, record seconds per run), BENCH_U25_RATE (999),
# BENCH_U25_RUNS (1, runs per recorder), BENCH_U25_SLOW_RATE (99),
# BENCH_U25_ROUNDS (2), BENCH_U25_CACHE_SECS (30),
# BENCH_U25_PERF_SECS (15), BENCH_U25_REPLAY_REC_SECS (20),
# BENCH_U25_REPLAY_SECS (30), BENCH_U25_STEADY_FROM (15: the steady
# figure's window starts this many seconds into a run), BENCH_STACK_SIZE (8192),
# BENCH_MMAP_PAGES (perf's -m: 128; perfrecd's ring only when set, else
# its default, mmap-size=auto), BENCH_RESULTS (tests/bench/results).
set -u
cd "$(dirname "$0")/../.."
ROOT=$PWD
STEPS=${BENCH_U25_STEPS:-record slowdown tables replay}
SECS=${BENCH_U25_SECS:-60}
RATE=${BENCH_U25_RATE:-999}
RUNS=${BENCH_U25_RUNS:-1}
SLOW_RATE=${BENCH_U25_SLOW_RATE:-99}
ROUNDS=${BENCH_U25_ROUNDS:-2}
CACHE_SECS=${BENCH_U25_CACHE_SECS:-30}
REPLAY_SECS=${BENCH_U25_REPLAY_SECS:-30}
REPLAY_REC_SECS=${BENCH_U25_REPLAY_REC_SECS:-20}
PERF_SECS=${BENCH_U25_PERF_SECS:-15}
STEADY_FROM=${BENCH_U25_STEADY_FROM:-15}
STACK=${BENCH_STACK_SIZE:-8192}
PAGES=${BENCH_MMAP_PAGES:-128}
# perfrecd's default recording sizes its own rings (mmap-size=auto: 4 MiB a
# CPU for 8-KiB stacks at 999 Hz); 128 pages drop samples whenever the
# draining thread waits 32 ms, which on 2 busy CPUs it does.
OUR_PAGES=${BENCH_MMAP_PAGES:-}
RESULTS=${BENCH_RESULTS:-$ROOT/tests/bench/results}
RUSAGE=$ROOT/tests/bench/rusage.py
PERFRECD=$ROOT/tests/plain-perfrecd
PERFRECCTL=$ROOT/tools/perfrecctl
NCPU=$(nproc)
RATE_FILE=/proc/sys/kernel/perf_event_max_sample_rate

die() { echo "bench unwind25: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (perf_event_open on all CPUs)"
command -v perf >/dev/null || die "perf not installed (linux-perf)"
[ -x "$PERFRECD" ] && [ -x "$PERFRECCTL" ] || die "perfrecd/perfrecctl not built (make all)"
for b in bench-unwtab bench-replay; do
	[ -x "tests/bench/$b" ] || make -s "tests/bench/$b" || die "cannot build tests/bench/$b"
done
mkdir -p "$RESULTS"
TMP=$(mktemp -d /tmp/perfrec-bench-u25.XXXXXX)
ORIG_RATE=$(cat $RATE_FILE)
DPID=""
cleanup() {
	[ -n "$DPID" ] && kill "$DPID" 2>/dev/null
	echo "$ORIG_RATE" > $RATE_FILE
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# six-lib.sh's programs and inputs, in $T/six; its failures end the bench.
T=$TMP
fail() { die "$*"; }
. "$ROOT/tests/e2e/six-lib.sh"
. "$ROOT/tests/bench/stats.sh"
six_require
six_setup
OUT=$RESULTS/unwind25.txt
: > "$OUT"
say() { echo "$*" | tee -a "$OUT"; }
load() { cut -d' ' -f1-3 /proc/loadavg; }

# conf FILE [BUILDID_CACHE]: one file per run, the ring size asked for; the
# build-id cache (and the unwind tables beside it) in the output directory
# unless named.
conf() {
	{
		[ -z "$OUR_PAGES" ] || printf '[record]\nmmap-size=%s\n' "$((OUR_PAGES * $(getconf PAGESIZE)))"
		printf '[output]\nrotate-interval=0\nrotate-size=0\nmax-bytes=0\nmax-files=0\n'
	} > "$1"
	[ -z "${2:-}" ] || printf 'buildid-cache=%s\n' "$2" >> "$1"
}

# loop_six SECS: the six programs together, each over and over for SECS;
# prints "NAME runs" per program (whole runs).
loop_six() {
	local end=$(($(date +%s) + $1)) name pids=()
	for name in $SIX_PROGRAMS; do
		# timeout ends the run under way at the deadline (its process
		# group: gcc's cc1, the storm's md5sums); only whole runs count.
		(n=0; while rem=$((end - $(date +%s))); [ "$rem" -gt 0 ]; do
			st=0; eval "timeout $rem $(six_cmd "$name")" >/dev/null 2>&1 || st=$?
			[ "$st" = 124 ] && break
			[ "$st" = 0 ] || { echo "$name failed (exit $st)" >&2; exit 1; }
			n=$((n + 1))
		done; echo "$name $n") & pids+=($!)
	done
	wait "${pids[@]}"
}

# wait_status SOCK: until perfrecd answers on SOCK (bounded: 10 s).
wait_status() {
	local i
	for i in $(seq 100); do
		"$PERFRECCTL" --socket "$1" --json status >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	return 1
}

# unwind_counters STATUS [MANIFEST]: "samples unwound behind dropped
# by_tables by_libdwfl tables table_bytes tables_built tables_loaded"; the first four from the file's
# manifest (final: the status is taken while the worker may still have a
# queue), the rest from perfrecd's status when the load ended.
unwind_counters() {
	python3 -c '
import json, sys
def unwind(path):
    try:
        return json.load(open(path)).get("unwind", {})
    except (OSError, ValueError):
        return {}
u = unwind(sys.argv[1])
m = unwind(sys.argv[2]) if len(sys.argv) > 2 else {}
print(" ".join(str(m.get(k, u.get(k, "-"))) for k in
      ("samples", "unwound", "behind", "dropped", "by_tables", "by_libdwfl", "tables", "table_bytes",
       "tables_built", "tables_loaded")))' "$@"
}

# --- record -----------------------------------------------------------------
# rec_run TOOL MODE RUN: one recording of SECS of the six programs; a row in $CSV.
rec_run() {
	local tool=$1 mode=$2 run=$3 out=$TMP/rec-$1-$2-$3 cg=() pid f files eff
	local bytes=0 samples=0 lrec=0 slost=0 a b c d cpu rss rcpu="" counters="- - - - - - - - - -" secs=$SECS
	local steady="" poll=
	case $mode in
	fp) cg=(-g) ;;
	dwarf) cg=(--call-graph "dwarf,$STACK" --unwind file) ;;
	host|warm) cg=(--call-graph "dwarf,$STACK" --unwind host) ;;
	esac
	mkdir -p "$out"
	echo "$ORIG_RATE" > $RATE_FILE
	if [ "$tool" = perf ]; then
		secs=$PERF_SECS
		python3 "$RUSAGE" "$out.ru" perf record -q -a "${cg[@]}" -e cpu-clock -F "$RATE" --buildid-mmap \
			-m "$PAGES" -o "$out/perf.data" -- sleep $((secs + 1)) >/dev/null 2>"$out.err" &
	else
		# host and warm share a build-id cache: warm, after host, loads
		# the tables host built and saved (a restart's steady state).
		conf "$out.conf" "$([ "$mode" = fp ] || echo "$TMP/bidcache")"
		python3 "$RUSAGE" "$out.ru" "$PERFRECD" -c "$out.conf" --socket "$out.sock" -o "$out" \
			-e cpu-clock -F "$RATE" "${cg[@]}" -d $((SECS + 3)) >/dev/null 2>"$out.err" &
	fi
	pid=$!
	sleep 0.5
	if [ "$tool" = perfrecd ]; then
		(sleep "$STEADY_FROM"; "$PERFRECCTL" --socket "$out.sock" --json status > "$out.status0" 2>/dev/null) &
		poll=$!
	fi
	loop_six "$secs" > "$out.runs" || die "a workload failed"
	if [ "$tool" = perfrecd ]; then
		"$PERFRECCTL" --socket "$out.sock" --json status > "$out.status" 2>/dev/null
		wait "$poll"
		steady=$(python3 -c '
import json, sys
try:
    a, b = (json.load(open(p)) for p in sys.argv[1:3])
    n = b["samples"] - a["samples"]
    print("%.2f" % ((b["cpu_time_sec"] - a["cpu_time_sec"]) * 1e6 / n) if n > 0 else "")
except (OSError, ValueError, KeyError):
    print("")' "$out.status0" "$out.status")
	fi
	wait $pid || { cat "$out.err" >&2; die "$tool $mode recording failed"; }
	if [ "$mode" = host ] || [ "$mode" = warm ]; then
		counters=$(unwind_counters "$out.status" "$(ls "$out"/*.data.json | head -1)")
	fi
	eff=$(cat $RATE_FILE)
	echo "$ORIG_RATE" > $RATE_FILE
	files=$(ls "$out"/*.data 2>/dev/null) || die "no output from $tool $mode"
	for f in $files; do
		bytes=$((bytes + $(stat -c %s "$f")))
		read -r a b d c < <(stats "$f")
		samples=$((samples + a)); lrec=$((lrec + b + d)); slost=$((slost + c))
	done
	read -r a b rss _ < "$out.ru"
	cpu=$(awk -v u="$a" -v s="$b" 'BEGIN { printf "%.3f", u + s }')
	if [ "$mode" = dwarf ]; then
		python3 "$RUSAGE" "$out.rru" perf report --stdio -i "$out/perf.data" >/dev/null 2>"$out.rerr" ||
			echo "bench unwind25: perf report failed: $(tail -1 "$out.rerr")" >&2
		read -r a b _ < "$out.rru"
		rcpu=$(awk -v u="$a" -v s="$b" 'BEGIN { printf "%.3f", u + s }')
	fi
	echo "$tool,$mode,$RATE,$run,$secs,$NCPU,$eff,$cpu,$samples,$(awk -v c="$cpu" -v s="$samples" \
		'BEGIN { printf "%.2f", s ? c * 1e6 / s : 0 }'),$rss,$bytes,$(awk -v b="$bytes" -v s="$samples" \
		'BEGIN { printf "%.0f", s ? b / s : 0 }'),$lrec,$slost,$rcpu,${counters// /,},$(paste -sd' ' "$out.runs"),$steady" >> "$CSV"
	rm -rf "$out" "$out".*
}

step_record() {
	local run i c
	local configs=(perfrecd:host perfrecd:fp perf:dwarf perfrecd:warm)
	mkdir -p -m 0700 "$TMP/bidcache"
	CSV=$RESULTS/unwind25-runs.csv
	echo "tool,mode,rate,run,secs,ncpu,effective_max_rate,cpu_s,samples,cpu_us_per_sample,peak_rss_kib,bytes,bytes_per_sample,lost_records,samples_lost,report_cpu_s,unwind_samples,unwound,behind,dropped,by_tables,by_libdwfl,tables,table_bytes,tables_built,tables_loaded,workload_runs,steady_us_per_sample" > "$CSV"
	say "== record: the six programs together for ${SECS}s per run, $RATE Hz on $NCPU CPUs, dwarf stacks of $STACK bytes (load $(load))"
	for run in $(seq "$RUNS"); do
		for i in $(seq 0 $((${#configs[@]} - 1))); do
			c=${configs[$(((i + run - 1) % ${#configs[@]}))]}
			echo "bench unwind25: ${c%%:*} ${c#*:} run $run (load $(load))" >&2
			rec_run "${c%%:*}" "${c#*:}" "$run"
		done
	done
	python3 - "$CSV" "$STEADY_FROM" <<'PY' | tee -a "$OUT"
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
def med(tool, mode, key):
    v = [float(r[key]) for r in rows if r["tool"] == tool and r["mode"] == mode and r[key] not in ("", "-")]
    return statistics.median(v) if v else float("nan")
for r in rows:
    print("%(tool)s %(mode)s run %(run)s, %(secs)s s: %(cpu_s)s s CPU, %(samples)s samples, %(cpu_us_per_sample)s us/sample "
          "(steady %(steady_us_per_sample)s), "
          "%(bytes_per_sample)s B/sample, lost records %(lost_records)s, samples lost %(samples_lost)s, "
          "max rate %(effective_max_rate)s, report %(report_cpu_s)s s; unwind: samples %(unwind_samples)s "
          "unwound %(unwound)s behind %(behind)s dropped %(dropped)s by_tables %(by_tables)s by_libdwfl %(by_libdwfl)s "
          "tables %(tables)s (%(table_bytes)s B, built %(tables_built)s, loaded %(tables_loaded)s); workload runs: %(workload_runs)s" % r)
host = med("perfrecd", "host", "cpu_us_per_sample")
warm = med("perfrecd", "warm", "cpu_us_per_sample")
fp = med("perfrecd", "fp", "cpu_us_per_sample")
pc = med("perf", "dwarf", "cpu_s"); pr = med("perf", "dwarf", "report_cpu_s"); ps = med("perf", "dwarf", "samples")
perf_whole = (pc + pr) * 1e6 / ps if ps else float("nan")
print("median CPU/sample: perfrecd host %.2f us, perfrecd -g %.2f us (host/-g %.2fx), perf dwarf record+report %.2f us "
      "(record %.2f + report %.2f; host/perf %.3fx)" % (host, fp, host / fp, perf_whole, pc * 1e6 / ps, pr * 1e6 / ps,
                                                      host / perf_whole))
print("median CPU/sample of perfrecd host after a restart (tables loaded from the build-id cache): %.2f us "
      "(%.2fx -g, %.3fx perf)" % (warm, warm / fp, warm / perf_whole))
sh, sw, sf = (med("perfrecd", m, "steady_us_per_sample") for m in ("host", "warm", "fp"))
print("median steady CPU/sample (from %s s into a run to the end of the load): perfrecd host %.2f us, after a restart "
      "%.2f us, -g %.2f us (host/-g %.2fx, restart/-g %.2fx)" % (sys.argv[2], sh, sw, sf, sh / sf, sw / sf))
hb = med("perfrecd", "host", "bytes_per_sample"); fb = med("perfrecd", "fp", "bytes_per_sample")
print("bytes/sample: host %.0f, -g %.0f (%.2fx), perf dwarf %.0f" % (hb, fb, hb / fb, med("perf", "dwarf", "bytes_per_sample")))
PY
}

# --- slowdown ---------------------------------------------------------------
# six_once TAG: each program once, one after the other; "TAG NAME WALL_S CPU_S" lines.
six_once() {
	local name t0 t1 u s
	for name in $SIX_PROGRAMS; do
		t0=$(date +%s.%N)
		eval python3 "$RUSAGE" "$TMP/six.ru" "$(six_cmd "$name")" >/dev/null 2>&1 || die "$name failed"
		t1=$(date +%s.%N)
		read -r u s _ < "$TMP/six.ru"
		awk -v g="$1" -v n="$name" -v a="$t0" -v b="$t1" -v u="$u" -v s="$s" \
			'BEGIN { printf "%s %s %.3f %.3f\n", g, n, b - a, u + s }'
	done
}

step_slowdown() {
	local round mode
	say "== slowdown: the six programs once each, ${ROUNDS} rounds without and with perfrecd host at $SLOW_RATE Hz (load $(load))"
	conf "$TMP/slow.conf"
	: > "$TMP/slow.txt"; : > "$TMP/slow-perfrecd.txt"
	for round in $(seq "$ROUNDS"); do
		for mode in $([ $((round % 2)) = 1 ] && echo "off on" || echo "on off"); do
			echo "bench unwind25: slowdown round $round, recorder $mode (load $(load))" >&2
			if [ "$mode" = on ]; then
				mkdir -p "$TMP/slow"
				"$PERFRECD" -c "$TMP/slow.conf" --socket "$TMP/slow.sock" -o "$TMP/slow" -e cpu-clock \
					-F "$SLOW_RATE" --call-graph "dwarf,$STACK" --unwind host >/dev/null 2>"$TMP/slow.err" &
				DPID=$!
				wait_status "$TMP/slow.sock" || { cat "$TMP/slow.err" >&2; die "perfrecd did not start"; }
			fi
			six_once "$mode" >> "$TMP/slow.txt"
			if [ "$mode" = on ]; then
				# perfrecd's own CPU meanwhile (it samples the whole
				# machine: other users' programs too), from /proc.
				awk -v t="$(getconf CLK_TCK)" -v r="$round" '{ sub(/.*\) /, "")
					printf "perfrecd round %s: %.2f s CPU\n", r, ($12 + $13) / t }' \
					"/proc/$DPID/stat" >> "$TMP/slow-perfrecd.txt"
				kill -TERM "$DPID"
				wait "$DPID" || { cat "$TMP/slow.err" >&2; die "perfrecd failed"; }
				DPID=""
				rm -rf "$TMP/slow" "$TMP/slow.sock"
			fi
		done
	done
	python3 - "$TMP/slow.txt" <<'PY' | tee -a "$OUT"
import statistics, sys
d = {}
for line in open(sys.argv[1]):
    g, n, w, c = line.split()
    d.setdefault(n, {}).setdefault(g, []).append((float(w), float(c)))
print("%-8s %9s %9s %7s %9s %9s %7s" % ("program", "off wall", "on wall", "ratio", "off CPU", "on CPU", "ratio"))
for n, v in d.items():
    ow = statistics.median(x[0] for x in v["off"]); nw = statistics.median(x[0] for x in v["on"])
    oc = statistics.median(x[1] for x in v["off"]); nc = statistics.median(x[1] for x in v["on"])
    print("%-8s %8.2fs %8.2fs %6.3fx %8.2fs %8.2fs %6.3fx" % (n, ow, nw, nw / ow, oc, nc, nc / oc))
PY
	tee -a "$OUT" < "$TMP/slow-perfrecd.txt"
}

# --- tables -----------------------------------------------------------------
step_tables() {
	local pid
	say "== tables: the largest binaries (load $(load))"
	tests/bench/bench-unwtab /usr/bin/node "$(gcc -print-prog-name=cc1)" /lib/x86_64-linux-gnu/libc.so.6 |
		tee -a "$OUT"
	[ "${PIPESTATUS[0]}" = 0 ] || die "bench-unwtab failed"
	[ "$CACHE_SECS" -gt 0 ] || return 0
	say "== tables: perfrecd host at $RATE Hz while many-binaries.sh runs ${CACHE_SECS}s (load $(load))"
	seq 1 200000 | awk '{ printf "%d %x lorem ipsum dolor sit amet %d\n", $1, $1 * 7919, $1 % 97 }' > "$TMP/data.txt"
	mkdir -p "$TMP/many"; conf "$TMP/many.conf"
	python3 "$RUSAGE" "$TMP/many.ru" "$PERFRECD" -c "$TMP/many.conf" --socket "$TMP/many.sock" -o "$TMP/many" \
		-e cpu-clock -F "$RATE" --call-graph "dwarf,$STACK" --unwind host -d $((CACHE_SECS + 3)) \
		>/dev/null 2>"$TMP/many.err" &
	pid=$!
	wait_status "$TMP/many.sock" || { cat "$TMP/many.err" >&2; die "perfrecd did not start"; }
	tests/bench/many-binaries.sh "$TMP/data.txt" "$CACHE_SECS" | tee -a "$OUT"
	"$PERFRECCTL" --socket "$TMP/many.sock" --json status > "$TMP/many.status" 2>/dev/null
	wait $pid || { cat "$TMP/many.err" >&2; die "perfrecd failed"; }
	read -r a b c d e f g h _ < <(unwind_counters "$TMP/many.status" "$(ls "$TMP"/many/*.data.json | head -1)")
	read -r _ _ rss _ < "$TMP/many.ru"
	say "samples $a unwound $b behind $c dropped $d by_tables $e by_libdwfl $f"
	say "tables $g, $(awk -v b="$h" 'BEGIN { printf "%.1f", b / 1048576 }') MiB of tables held; perfrecd peak RSS $((rss / 1024)) MiB"
	rm -rf "$TMP/many"
}

# --- replay -----------------------------------------------------------------
step_replay() {
	local pid f
	say "== replay: perfrecd --call-graph dwarf,$STACK (raw) at $RATE Hz for ${REPLAY_REC_SECS}s of the six programs"
	mkdir -p "$TMP/replay"; conf "$TMP/replay.conf"
	echo "$ORIG_RATE" > $RATE_FILE
	"$PERFRECD" -c "$TMP/replay.conf" --socket '' -o "$TMP/replay" -e cpu-clock -F "$RATE" \
		--call-graph "dwarf,$STACK" --unwind file -d $((REPLAY_REC_SECS + 2)) >/dev/null 2>"$TMP/replay.err" &
	pid=$!
	sleep 0.5
	loop_six "$REPLAY_REC_SECS" >/dev/null || die "a workload failed"
	wait $pid || { cat "$TMP/replay.err" >&2; die "perfrecd (raw dwarf) failed"; }
	echo "$ORIG_RATE" > $RATE_FILE
	f=$(ls "$TMP"/replay/*.data | head -1) || die "no raw DWARF file to replay"
	say "== replay: one worker, those samples over and over for ${REPLAY_SECS}s (load $(load))"
	tests/bench/bench-replay "$f" "$REPLAY_SECS" | tee -a "$OUT"
	[ "${PIPESTATUS[0]}" = 0 ] || die "bench-replay failed"
	rm -rf "$TMP/replay"
}

say "# $(date -u +%FT%TZ) $(uname -r), $NCPU CPUs, $(git rev-parse --short HEAD 2>/dev/null), load average $(load)"
for s in $STEPS; do
	case $s in
	record|slowdown|tables|replay) "step_$s" ;;
	*) die "unknown step '$s' (BENCH_U25_STEPS: record slowdown tables replay)" ;;
	esac
done
say "# done $(date -u +%FT%TZ), load average $(load)"
