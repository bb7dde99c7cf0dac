#!/usr/bin/env bash
# perfrecctl pprof over a directory with --from/--to (issue 16): exactly the
# samples whose wall-clock time is in the window (perf script's times
# through each file's CLOCK_DATA), and files wholly outside the window are
# not even read (a damaged one there goes unmentioned).  Files overlap in
# time by a little (a ring drained after a rotation holds samples from
# before it), so the count is over all files, not one.
. "$(dirname "$0")/lib.sh"
require_events; require_perf
command -v go >/dev/null || skip "go (golang-go) is not installed: no pprof reader"
export HOME=$T GOCACHE=$T/gocache

printf '[output]\nrotate-interval=1s\n' >"$T/conf"
"$PERFRECD" -c "$T/conf" -o "$T/out" --socket '' -e cpu-clock -F 499 -g --duration 3.5 2>"$T/err" \
	|| { cat "$T/err"; fail "perfrecd failed"; }
mapfile -t files < <(ls "$T"/out/*.data)
[ ${#files[@]} -ge 4 ] || fail "expected at least 4 rotated files, got ${#files[@]}"

# Each file's first and last sample in wall-clock ns (SAMPLE_TIME through CLOCK_DATA).
span() {
	"$PERFRECCTL" dump "$1" | python3 -c '
import re, sys
t = sys.stdin.read()
first, last = map(int, re.search(r"SAMPLE_TIME +first (\d+), last (\d+)", t).groups())
wall, clk = map(int, re.search(r"wall clock (\d+) ns, clock (\d+) ns", t).groups())
print(wall + first - clk, wall + last - clk)'
}
read -r _ l1 < <(span "${files[0]}") || fail "no sample times in ${files[0]}"
read -r f2 l2 < <(span "${files[1]}") || fail "no sample times in ${files[1]}"
read -r f3 _ < <(span "${files[2]}") || fail "no sample times in ${files[2]}"
# Between the files' samples, as seconds since the epoch.
from=$(python3 -c "print('%.6f' % (($l1 + $f2) / 2e9))")
to=$(python3 -c "print('%.6f' % (($l2 + $f3) / 2e9))")
note "window $from .. $to: ${files[1]##*/}"

# Samples in the window, over all files.
expected=0
for g in "${files[@]}"; do
	n=$( { "$PERFRECCTL" dump "$g"; echo ---; perf script -i "$g" -F time --ns 2>/dev/null; } | python3 -c '
import re, sys
head, _, times = sys.stdin.read().partition("---")
wall, clk = map(int, re.search(r"wall clock (\d+) ns, clock (\d+) ns", head).groups())
lo, hi = int(round(float(sys.argv[1]) * 1e6)) * 1000, int(round(float(sys.argv[2]) * 1e6)) * 1000
n = 0
for t in re.findall(r"(\d+)\.(\d{9})", times):
    w = wall + int(t[0]) * 1000000000 + int(t[1]) - clk
    n += lo <= w < hi
print(n)' "$from" "$to")
	expected=$((expected + n))
done

# A sample cut short in the last file, wholly after the window: a walk through it would say so.
last=${files[${#files[@]} - 1]}
read -r fl _ < <(span "$last")
python3 -c "import sys; sys.exit(not ($fl > float('$to') * 1e9))" || fail "the last file is not wholly after the window"
python3 "$TOP/tests/fuzz/damage.py" "$last" "$T/dmg" >/dev/null || fail "damage.py failed"
cp "$T/dmg/sample-short.data" "$last"

"$PERFRECCTL" pprof --from "@$from" --to "@$to" -o "$T/w.pb.gz" "$T/out" 2>"$T/w.err" \
	|| { cat "$T/w.err"; fail "pprof of the window failed"; }
ours=$(go tool pprof -top -sample_index=samples "$T/w.pb.gz" 2>/dev/null | sed -n 's/.*Total samples = \([0-9]*\) *$/\1/p')
note "window: pprof $ours samples, perf script $expected"
[ "$ours" = "$expected" ] || fail "the window holds $ours samples, perf script's times $expected"
grep -q "${last##*/}" "$T/w.err" && { cat "$T/w.err"; fail "a file outside the window was read"; }
# Without the window the damaged file is read, and says so.
"$PERFRECCTL" pprof -o "$T/all.pb.gz" "$T/out" 2>"$T/all.err" || { cat "$T/all.err"; fail "pprof of the directory failed"; }
grep -q "${last##*/}: 1 damaged samples" "$T/all.err" || { cat "$T/all.err"; fail "the damaged file went unnoticed"; }
exit 0
