#!/usr/bin/env bash
# Benchmark: zstd compression of a callchain-heavy recording.  Records the
# e2e workload system-wide with -g at a high rate (uncompressed), then copies
# it through perfrecd's writer at several levels (perfrecctl compress) and
# prints size, ratio and time per level, plus one live `perfrecd -z` run's
# own ratio and CPU time as the daemon reports them.  Standalone (needs root
# and perf events), not part of make check.
#
#   tests/bench/compress-ratio.sh [SECONDS] [FREQ]
set -eu
TOP=$(cd "$(dirname "$0")/../.." && pwd)
SECS=${1:-5}
FREQ=${2:-999}
T=$(mktemp -d /tmp/perfrec-bench.XXXXXX)
trap 'rm -rf "$T"' EXIT
[ -x "$TOP/daemon/perfrecd" ] && [ -x "$TOP/tools/perfrecctl" ] || { echo "build first: make" >&2; exit 2; }

"$TOP/tests/e2e/workload" $((3 * SECS + 4)) >/dev/null &
wl=$!
"$TOP/daemon/perfrecd" -o "$T/plain" -e cpu-clock -F "$FREQ" -g --duration "$SECS" 2>"$T/plain.log"
"$TOP/daemon/perfrecd" -o "$T/live" -e cpu-clock -F "$FREQ" -g -z --duration "$SECS" 2>"$T/live.log"
perf_line=
if command -v perf >/dev/null; then
	perf record -z -a -g -e cpu-clock -F "$FREQ" -o "$T/perf.data" -- sleep "$SECS" >/dev/null 2>"$T/perf.log" || true
	perf_line=$(grep -o 'compressed (original.*' "$T/perf.log" || true)
fi
kill $wl 2>/dev/null || true
wait $wl 2>/dev/null || true
base=$(ls "$T"/plain/*.data)
bytes=$(stat -c %s "$base")
samples=$("$TOP/tools/perfrecctl" verify "$base" | sed -n 's/.*, \([0-9]*\) samples)$/\1/p')

echo "callchain recording: $SECS s at $FREQ Hz per CPU (-g), $samples samples, $bytes bytes"
printf '%-8s %12s %8s %10s\n' level bytes ratio "time ms"
printf '%-8s %12s %8s %10s\n' none "$bytes" 1.00 -
for l in 1 3 6 9 19; do
	t0=$(date +%s%N)
	"$TOP/tools/perfrecctl" compress -l $l "$base" "$T/z$l.data"
	t1=$(date +%s%N)
	z=$(stat -c %s "$T/z$l.data")
	printf '%-8s %12s %8s %10s\n' "$l" "$z" "$(awk -v a="$bytes" -v b="$z" 'BEGIN {printf "%.2f", a / b}')" \
		$(((t1 - t0) / 1000000))
done
echo
echo "live perfrecd -z (level 3), as the daemon reports it:"
grep -o 'Compressed .*' "$T/live.log" | sed 's|^Compressed [^:]*: |  |'
[ -n "$perf_line" ] && echo "perf record -z -a -g (level 1) on the same workload, for comparison:" && echo "  $perf_line"
exit 0
