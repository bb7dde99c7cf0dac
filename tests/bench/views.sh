#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The `views` part of `make bench` (tests/bench/README.md): how long turning
# a large recording into something to look at takes, perfrecctl against
# perf, on the same file in the same run.
#
# The file: BENCH_VIEWS_FILE if set, else perfrecd records one: cpu-clock
# with -g at BENCH_VIEWS_RATE (10 kHz) on every CPU while
# tests/e2e/workload keeps them busy, for long enough to hold
# BENCH_VIEWS_SAMPLES (1,000,000) samples (53 s on 2 CPUs at 10 kHz).  The
# samples actually in it are counted (perf report --stats) and printed, and
# the rows say so if the kernel's throttling left fewer than asked.
#
# Then, BENCH_VIEWS_RUNS times (3), the order turning by one each run, each
# of these reads the file, timed (wall seconds), with its CPU (user+sys) and
# peak RSS from wait4 (tests/bench/rusage.py; a pipeline counts both sides,
# its RSS is the larger):
#
#   collapse    perf script | awk (collapse.awk: folded stacks, as
#               Brendan Gregg's stackcollapse-perf.pl makes them)
#   report      perf report --stdio
#   flamegraph  perfrecctl flamegraph -o OUT.svg
#   pprof       perfrecctl pprof -o OUT.pb.gz
#   folded      perfrecctl folded -o OUT (if this build has it)
#
# A perfrecctl command this build lacks gives a row saying "not available in
# this build" and no numbers.  DEBUGINFOD_URLS is unset for all of them:
# symbols come from the binaries on this host for perf and perfrecctl alike.
# The page cache holds the file before the first run (it was just written
# and counted).  Goal (issue 16): flamegraph and pprof at most 0.5x the
# collapse pipeline's time.  Writes RESULTS/views-runs.csv and
# views-summary.csv.
set -u
cd "$(dirname "$0")/../.."
ROOT=$PWD
RATE=${BENCH_VIEWS_RATE:-10000}
WANT=${BENCH_VIEWS_SAMPLES:-1000000}
RUNS=${BENCH_VIEWS_RUNS:-3}
FILE=${BENCH_VIEWS_FILE:-}
RESULTS=${BENCH_RESULTS:-$ROOT/tests/bench/results}
RUSAGE=$ROOT/tests/bench/rusage.py
COLLAPSE=$ROOT/tests/bench/collapse.awk
PERFRECD=$ROOT/tests/plain-perfrecd  # plain files, as perf record writes
PERFRECCTL=$ROOT/tools/perfrecctl
WORKLOAD=$ROOT/tests/e2e/workload
NCPU=$(nproc)
RATE_FILE=/proc/sys/kernel/perf_event_max_sample_rate
NA="not available in this build"

die() { echo "bench views: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (perf_event_open on all CPUs)"
command -v perf >/dev/null || die "perf not installed (linux-perf)"
[ -x "$PERFRECCTL" ] || die "$PERFRECCTL not built (make all)"
unset DEBUGINFOD_URLS

mkdir -p "$RESULTS"
TMP=$(mktemp -d /tmp/perfrec-bench-views.XXXXXX)
ORIG_RATE=$(cat $RATE_FILE)
cleanup() { echo "$ORIG_RATE" > $RATE_FILE; rm -rf "$TMP"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ -z "$FILE" ]; then
	[ -x "$PERFRECD" ] || die "$PERFRECD not built (make all)"
	[ -x "$WORKLOAD" ] || make -s tests/e2e/workload || die "cannot build the workload"
	# A little over what WANT needs at RATE on every CPU: the samples
	# are counted below, not assumed.
	secs=$(awk -v w="$WANT" -v r="$RATE" -v n="$NCPU" 'BEGIN { s = w * 1.05 / (r * n); printf "%d", s == int(s) ? s : int(s) + 1 }')
	echo "bench views: recording ${secs}s at $RATE Hz with -g on $NCPU CPUs for a file of about $WANT samples"
	mkdir -p "$TMP/rec"
	printf '[output]\nrotate-interval=0\nrotate-size=0\nmax-bytes=0\nmax-files=0\n' > "$TMP/rec.conf"
	echo "$ORIG_RATE" > $RATE_FILE
	"$PERFRECD" -c "$TMP/rec.conf" --socket '' -o "$TMP/rec" -e cpu-clock -F "$RATE" -g -d $((secs + 1)) \
		>/dev/null 2>"$TMP/rec.err" &
	pid=$!
	sleep 0.5
	"$WORKLOAD" "$secs" "$NCPU" >/dev/null
	wait $pid || { cat "$TMP/rec.err" >&2; die "perfrecd failed"; }
	echo "$ORIG_RATE" > $RATE_FILE
	FILE=$(ls "$TMP"/rec/*.data | head -1)
	[ -n "$FILE" ] || die "perfrecd wrote no file"
fi
SAMPLES=$(perf report --stats -i "$FILE" 2>/dev/null | awk '/^ *SAMPLE events:/ { print $3; exit }')
BYTES=$(stat -c %s "$FILE")
echo "bench views: $FILE: ${SAMPLES:-0} samples, $BYTES bytes$([ "${SAMPLES:-0}" -lt "$WANT" ] &&
	echo " (fewer than the $WANT asked: the kernel throttled the rate, or the file given is smaller)")"

# have CMD: does this perfrecctl have the command?
have() { "$PERFRECCTL" --help 2>&1 | grep -q "^  $1 "; }

# one TOOL RUN CSV: time TOOL on FILE; one row.
one() {
	local tool=$1 run=$2 csv=$3 out=$TMP/out-$1 cmd t0 t1 u s m rc=0
	case $tool in
	collapse) cmd=(bash -c 'set -o pipefail; perf script -i "$1" 2>/dev/null | awk -f "$2" > "$3"' _ "$FILE" "$COLLAPSE" "$out") ;;
	report) cmd=(bash -c 'perf report --stdio -i "$1" > "$2" 2>/dev/null' _ "$FILE" "$out") ;;
	flamegraph | pprof | folded)
		if ! have "$tool"; then
			echo "$tool,$run,$SAMPLES,,,,,$NA" >> "$csv"
			return 0
		fi
		cmd=("$PERFRECCTL" "$tool" -o "$out" "$FILE") ;;
	esac
	t0=$(date +%s.%N)
	python3 "$RUSAGE" "$TMP/ru" "${cmd[@]}" >/dev/null 2>"$TMP/err" || rc=$?
	t1=$(date +%s.%N)
	read -r u s m _ < "$TMP/ru"
	if [ "$rc" != 0 ] || [ ! -s "$out" ]; then
		echo "bench views: $tool failed (exit $rc):" >&2; head -5 "$TMP/err" >&2
	fi
	awk -v t="$tool" -v n="$run" -v sa="$SAMPLES" -v a="$t0" -v b="$t1" -v u="$u" -v s="$s" -v m="$m" \
	    -v o="$(stat -c %s "$out" 2>/dev/null || echo 0)" -v rc="$rc" 'BEGIN {
		printf "%s,%d,%d,%.3f,%.3f,%d,%d,%s\n", t, n, sa, b - a, u + s, m, o, rc ? "exit " rc : "" }' >> "$csv"
	rm -f "$out"
}

CSV=$RESULTS/views-runs.csv
echo "tool,run,samples,wall_s,cpu_s,peak_rss_kib,output_bytes,note" > "$CSV"
TOOLS=(collapse report flamegraph pprof folded)
for run in $(seq 1 "$RUNS"); do
	for i in $(seq 0 $((${#TOOLS[@]} - 1))); do
		t=${TOOLS[$(((i + run - 1) % ${#TOOLS[@]}))]}
		echo "bench views: $t run $run" >&2
		one "$t" "$run" "$CSV"
	done
done

python3 - "$CSV" "$RESULTS/views-summary.csv" <<'PY'
import csv, statistics, sys

rows = list(csv.DictReader(open(sys.argv[1])))
tools = ["collapse", "report", "flamegraph", "pprof", "folded"]
by = {t: {int(r["run"]): r for r in rows if r["tool"] == t} for t in tools}
names = {"collapse": "perf script | awk collapse", "report": "perf report --stdio",
         "flamegraph": "perfrecctl flamegraph", "pprof": "perfrecctl pprof", "folded": "perfrecctl folded"}


def med(t, k):
    v = [float(r[k]) for r in by[t].values() if r[k] not in ("", None) and not r["note"]]
    return statistics.median(v) if v else None


def ratio(t, base, k):
    v = [float(by[t][n][k]) / float(by[base][n][k]) for n in by[t]
         if n in by[base] and not by[t][n]["note"] and not by[base][n]["note"] and float(by[base][n][k] or 0) > 0]
    return statistics.median(v) if v else None


def f(v, p="%.3f"):
    return "-" if v is None else p % v


samples = rows[0]["samples"] if rows else "0"
print("%s samples; medians of %d runs; ratios run by run, then their median" % (samples, len(by["collapse"])))
fmt = "{:<28} {:>8} {:>8} {:>10} {:>16} {:>12}  {}"
print(fmt.format("", "wall s", "CPU s", "RSS KiB", "wall / collapse", "wall / report", ""))
out = []
for t in tools:
    if not by[t]:
        continue
    notes = {r["note"] for r in by[t].values() if r["note"]}
    vs_c, vs_r = ratio(t, "collapse", "wall_s"), ratio(t, "report", "wall_s")
    met = "" if t not in ("flamegraph", "pprof") or vs_c is None else ("goal <= 0.5: met" if vs_c <= 0.5 else "goal <= 0.5: missed")
    note = "; ".join(sorted(notes)) if notes else met
    print(fmt.format(names[t], f(med(t, "wall_s")), f(med(t, "cpu_s")), f(med(t, "peak_rss_kib"), "%d"),
                     f(vs_c, "%.2f"), f(vs_r, "%.2f"), note))
    out.append({"tool": t, "samples": samples, "wall_s": f(med(t, "wall_s")), "cpu_s": f(med(t, "cpu_s")),
                "peak_rss_kib": f(med(t, "peak_rss_kib"), "%d"), "wall_vs_collapse": f(vs_c, "%.3f"),
                "wall_vs_report": f(vs_r, "%.3f"), "cpu_vs_collapse": f(ratio(t, "collapse", "cpu_s"), "%.3f"),
                "rss_vs_collapse": f(ratio(t, "collapse", "peak_rss_kib"), "%.3f"), "note": note})
with open(sys.argv[2], "w", newline="") as fh:
    w = csv.DictWriter(fh, fieldnames=list(out[0].keys()) if out else ["tool"])
    w.writeheader()
    w.writerows(out)
PY
exit 0
