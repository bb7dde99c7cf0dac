#!/usr/bin/env bash
# Off-CPU profiling (issue 7).  A reader thread blocks in wait_for_data() on
# a pipe fed every 50 ms, 20 times; it measures its own blocked time.  The
# offcpu-time samples perf reads for that thread must sum to within 10% of
# it and carry wait_for_data in their callchain.  Then, with CAP_BPF and
# CAP_SYS_ADMIN dropped, perfrecd must say why off-CPU is off and still
# record on-CPU samples.
#
# Whether BPF is usable here is decided without asking perfrecd (bpftool
# and the kernel's BTF say): where it is, perfrecd turning off-CPU off is a
# failure, not a reason to skip.
. "$(dirname "$0")/lib.sh"
require_events; require_perf
BLOCKER=$TOP/tests/e2e/blocker
[ -x "$BLOCKER" ] || fail "tests/e2e/blocker is not built (make tests/e2e/blocker)"
require_offcpu

out=$T/out
printf '[record]\noffcpu-min=1ms\n' >"$T/conf"
"$PERFRECD" -c "$T/conf" --socket '' -o "$out" -e cpu-clock -F 99 -g --offcpu --duration 4 2>"$T/daemon.err" &
DAEMON_PID=$!
# The daemon logs "Recording" once its events and the BPF program are live.
for _ in $(seq 100); do grep -q 'Recording' "$T/daemon.err" && break; sleep 0.1; done
grep -q 'Recording' "$T/daemon.err" || { cat "$T/daemon.err"; fail "perfrecd did not start"; }
grep -q 'off-CPU profiling is on' "$T/daemon.err" \
	|| { cat "$T/daemon.err"; fail "perfrecd did not load off-CPU profiling although root, BTF and BPF are there"; }
"$BLOCKER" 20 50 >"$T/blocker.out" || fail "blocker failed"
wait "$DAEMON_PID"; rc=$?; DAEMON_PID=
cat "$T/daemon.err"
[ $rc = 0 ] || fail "perfrecd exited $rc"
f=$(only_file "$out") || exit 1
read -r tid truth < <(sed -n 's/^tid=\([0-9]*\) blocked_ns=\([0-9]*\)$/\1 \2/p' "$T/blocker.out")
[ -n "${tid:-}" ] || { cat "$T/blocker.out"; fail "blocker printed no result"; }
note "blocker tid $tid measured $truth ns blocked"

perf report -i "$f" --stats >"$T/stats" 2>"$T/stats.err"
check_perf_stderr "perf report --stats" "$T/stats.err"
grep -q 'offcpu-time stats' "$T/stats" || { cat "$T/stats"; fail "perf sees no offcpu-time event"; }

perf script -i "$f" -F event,tid,period --tid "$tid" >"$T/script" 2>"$T/script.err"
check_perf_stderr "perf script" "$T/script.err"
sum=$(awk '/offcpu-time/ {s += $2} END {printf "%d", s}' "$T/script")
note "offcpu-time periods for tid $tid: $sum ns"
awk -v s="$sum" -v t="$truth" 'BEGIN {d = s - t; if (d < 0) d = -d; exit !(t > 0 && d <= t / 10)}' \
	|| fail "off-CPU time $sum ns is not within 10% of the measured $truth ns"

# Callchain, the way a user reads it: perf report of the offcpu-time event.
perf report -i "$f" --stdio --no-children -g caller --sort sym --tid "$tid" \
	>"$T/report.all" 2>"$T/report.err"
check_perf_stderr "perf report" "$T/report.err"
# Only the offcpu-time part of the report (perf 6.1 has no per-event filter).
awk '/^# Samples: .* of event/ {on = /offcpu-time/} on' "$T/report.all" >"$T/report"
grep -q 'wait_for_data' "$T/report" || { head -40 "$T/report"; fail "wait_for_data is not in the off-CPU callchains"; }
grep -q 'anon_pipe_read\|pipe_read' "$T/report" || { head -40 "$T/report"; fail "the kernel side of the block (pipe_read) is missing"; }
"$PERFRECCTL" verify "$f" >/dev/null || fail "perfrecctl verify rejected the file"

# Fallback: no CAP_BPF / CAP_SYS_ADMIN.  CAP_PERFMON stays, so the events open.
command -v setpriv >/dev/null || skip "setpriv is missing (fallback not checked)"
out2=$T/out2
setpriv --inh-caps=-bpf,-sys_admin --bounding-set=-bpf,-sys_admin \
	"$PERFRECD" --socket '' -o "$out2" -e cpu-clock -F 99 --offcpu --duration 2 2>"$T/daemon2.err" &
DAEMON_PID=$!
"$WORKLOAD" 2 >/dev/null
wait "$DAEMON_PID"; rc=$?; DAEMON_PID=
cat "$T/daemon2.err"
[ $rc = 0 ] || fail "perfrecd without CAP_BPF exited $rc"
[ "$(grep -c 'off-CPU profiling is off: ' "$T/daemon2.err")" = 1 ] || fail "no single line saying why off-CPU is off"
grep -q 'off-CPU profiling is off: .*\(permit\|CAP_BPF\)' "$T/daemon2.err" || fail "the reason does not name the missing permission"
f2=$(only_file "$out2") || exit 1
n=$(perf_samples "$f2")
[ "${n:-0}" -gt 0 ] || fail "no on-CPU samples without BPF"
perf report -i "$f2" --stats 2>/dev/null | grep -q 'offcpu-time' && fail "a file without BPF declares offcpu-time"
note "without BPF: $n on-CPU samples"
exit 0
