#!/usr/bin/env bash
# Off-CPU flame graphs (issue 16): widths are nanoseconds blocked.  perfrecd
# records tests/e2e/blocker (a reader blocked in wait_for_data() on a pipe,
# a writer sleeping between writes, main joining them) with --offcpu; the
# offcpu-time graph of the blocker must weigh exactly the periods perf
# script shows (ns, summed), wait_for_data's frames must weigh the periods
# of the stacks through it, close to the blocked time the reader measured
# itself, and span the share perf report gives it within 1 point.
#
# FLAME_INPUT as in test-flamegraph.sh: "file" (the default: perfrecctl
# reads the perf.data; the header must say ns) or "folded" (perf script's
# stacks through perf-collapse.awk and --folded).
. "$(dirname "$0")/lib.sh"
require_events; require_perf
BLOCKER=$TOP/tests/e2e/blocker
CHECK=$TOP/tests/e2e/flamecheck.py
[ -x "$BLOCKER" ] || fail "tests/e2e/blocker is not built (make tests/e2e/blocker)"
CHROMIUM=$(command -v chromium || command -v chromium-browser) || skip "chromium is not installed"
# As test-offcpu.sh: where BPF off-CPU cannot work here, say why.
require_offcpu

out=$T/out
printf '[record]\noffcpu-min=1ms\n' >"$T/conf"
"$PERFRECD" -c "$T/conf" --socket '' -o "$out" -e cpu-clock -F 99 -g --offcpu --duration 4 2>"$T/daemon.err" &
DAEMON_PID=$!
wait_for 10 grep -qs 'Recording' "$T/daemon.err" || { cat "$T/daemon.err"; fail "perfrecd did not start"; }
grep -q 'off-CPU profiling is on' "$T/daemon.err" || { cat "$T/daemon.err"; fail "perfrecd did not turn off-CPU profiling on"; }
"$BLOCKER" 20 50 >"$T/blocker.out" & bpid=$!
wait "$bpid" || fail "blocker failed"
wait "$DAEMON_PID"; rc=$?; DAEMON_PID=
[ $rc = 0 ] || { cat "$T/daemon.err"; fail "perfrecd exited $rc"; }
f=$(only_file "$out") || exit 1
truth=$(sed -n 's/^tid=[0-9]* blocked_ns=\([0-9]*\)$/\1/p' "$T/blocker.out")
[ -n "$truth" ] || { cat "$T/blocker.out"; fail "blocker printed no result"; }

perf script -i "$f" -F comm,pid,tid,time,event,period,ip,sym,dso --ns >"$T/script" 2>"$T/script.err" || fail "perf script failed"
awk -v want_pid="$bpid" -v want_event=offcpu-time -f "$TOP/tests/e2e/perf-collapse.awk" "$T/script" >"$T/off.folded"
[ -s "$T/off.folded" ] || fail "perf script shows no offcpu-time stacks of the blocker"
sum=$(awk '{ s += $NF } END { printf "%d", s }' "$T/off.folded")
through=$(awk '/(^|;)wait_for_data(;| )/ { s += $NF } END { printf "%d", s }' "$T/off.folded")
note "perf script: $sum ns off-CPU for the blocker, $through ns through wait_for_data; the reader measured $truth ns"

svg=$T/off.svg
if [ "${FLAME_INPUT:-file}" = file ]; then
	"$PERFRECCTL" flamegraph -e offcpu-time --pid "$bpid" -o "$svg" "$f" || fail "perfrecctl flamegraph failed"
	grep -q "offcpu-time: [0-9]* samples, $sum ns<" "$svg" || fail "the off-CPU graph's header does not give $sum ns"
else
	"$PERFRECCTL" flamegraph --folded -e offcpu-time -o "$svg" "$T/off.folded" || fail "perfrecctl flamegraph failed"
fi
timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --dump-dom "file://$svg" >"$T/dom" 2>"$T/chromium.err" ||
	fail "chromium --dump-dom failed"
[ "$("$CHECK" attr "$T/dom" svg fgready)" = 1 ] || fail "the SVG's script did not run"
total=$("$CHECK" attr "$T/dom" graph total)
[ "$total" = "$sum" ] || fail "the graph weighs $total, perf script's offcpu-time periods add up to $sum ns"
w=$("$CHECK" frames "$T/dom" wait_for_data | awk '{ s += $5 } END { printf "%d", s }')
[ "$w" = "$through" ] || fail "wait_for_data's frames weigh $w, the stacks through it $through ns"
awk -v w="$w" -v t="$truth" 'BEGIN { d = w - t; if (d < 0) d = -d; exit !(t > 0 && d <= t / 10) }' ||
	fail "wait_for_data weighs $w ns, the reader measured $truth ns blocked (more than 10% apart)"

# perf report's children share of wait_for_data among the blocker's
# offcpu-time samples; its "pid" column shows thread ids, so rows of any
# thread of the blocker count.
tids=$(awk -v p="$bpid" '/^[^ \t]/ { split($(NF - 3), a, "/"); if (a[1] == p) print a[2] }' "$T/script" | sort -u | tr '\n' ' ')
expect=$(perf report -i "$f" --stdio --children --sort pid,sym -g none 2>"$T/report.err" |
	awk -v tids="$bpid $tids" 'BEGIN { n = split(tids, t, " "); for (i = 1; i <= n; i++) mine[t[i]] = 1 }
		/^# Samples: .* of event / { on = /offcpu-time/ }
		on && $1 ~ /%$/ { split($3, id, ":") }
		on && $1 ~ /%$/ && id[1] in mine { sub(/%/, "", $1); sub(/%/, "", $2); self += $2; if ($NF == "wait_for_data") c += $1 }
		END { printf "%.2f", (self > 0 ? 100 * c / self : 0) }')
check_perf_stderr "perf report" "$T/report.err"
width=$("$CHECK" attr "$T/dom" svg fgwidth); pad=$("$CHECK" attr "$T/dom" svg fgpad)
got=$("$CHECK" frames "$T/dom" wait_for_data | awk -v full=$((width - 2 * pad)) '{ s += $2 } END { printf "%.2f", 100 * s / full }')
note "wait_for_data: $got% of the off-CPU graph, perf report $expect%"
awk -v e="$expect" 'BEGIN { exit !(e > 5 && e < 95) }' || fail "perf report gives wait_for_data $expect% of the blocker's off-CPU time"
awk -v a="$got" -v b="$expect" 'BEGIN { d = a - b; exit !(d <= 1 && d >= -1) }' ||
	fail "wait_for_data spans $got% of the off-CPU graph, perf report gives it $expect%"
exit 0
