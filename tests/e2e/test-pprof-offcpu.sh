#!/usr/bin/env bash
# pprof of an --offcpu recording (issue 16): for the blocker's reader
# thread, the offcpu-time nanoseconds pprof gives each stack are those
# perf's offcpu-time samples of that stack add up to (perf script's
# periods), and the profile's blocked time is in the offcpu-time/nanoseconds
# column.  Only that thread: the others may block now and then where the
# machine's load has them wait (a page fault at exit), stacks through
# libc's aliases that are no part of what this checks.
. "$(dirname "$0")/lib.sh"
require_events; require_perf
command -v go >/dev/null || skip "go (golang-go) is not installed: no pprof reader"
BLOCKER=$TOP/tests/e2e/blocker
[ -x "$BLOCKER" ] || fail "tests/e2e/blocker is not built (make tests/e2e/blocker)"
require_offcpu
export HOME=$T GOCACHE=$T/gocache

printf '[record]\noffcpu-min=1ms\n' >"$T/conf"
"$PERFRECD" -c "$T/conf" --socket '' -o "$T/out" -e cpu-clock -F 99 -g --offcpu --duration 4 2>"$T/err" &
DAEMON_PID=$!
started() { grep -q Recording "$T/err" 2>/dev/null; }
wait_for 30 started || { cat "$T/err"; fail "perfrecd did not start"; }
grep -q 'off-CPU profiling is on' "$T/err" || { cat "$T/err"; fail "off-CPU profiling did not start although BPF is usable"; }
"$BLOCKER" 20 50 >"$T/blocker.out" &
bpid=$!
wait $bpid || fail "blocker failed"
wait "$DAEMON_PID"; rc=$?; DAEMON_PID=
[ $rc = 0 ] || { cat "$T/err"; fail "perfrecd exited $rc"; }
f=$(only_file "$T/out") || exit 1
tid=$(sed -n 's/^tid=\([0-9]*\) .*/\1/p' "$T/blocker.out")
[ -n "$tid" ] || { cat "$T/blocker.out"; fail "blocker printed no tid"; }

# perf's side: stacks (leaf first, ';'-joined) of offcpu-time samples of the process, summed.
perf script -i "$f" --tid "$tid" -F event,period,ip,sym 2>/dev/null | awk '
	function done() { if (on && n) s[key] += p; on = 0; n = 0; key = "" }
	/^ *[0-9]+ +offcpu-time:/ { done(); on = 1; p = $1; next }
	/^ *[0-9]+ +[a-z-]+:/ { done(); next }
	NF == 0 { done(); next }
	on { sym = $2; for (i = 3; i <= NF && $i !~ /^\(/; i++) sym = sym " " $i; key = key (n++ ? ";" : "") sym }
	END { done(); for (k in s) print s[k], k }' | sort >"$T/perf.stacks"
[ -s "$T/perf.stacks" ] || fail "perf shows no offcpu-time samples for the blocker's reader"
grep -q wait_for_data "$T/perf.stacks" || { head "$T/perf.stacks"; fail "perf's off-CPU stacks lack wait_for_data"; }

"$PERFRECCTL" pprof -e offcpu-time --pid "$bpid" --no-inline -o "$T/p.pb.gz" "$f" 2>"$T/pprof.err" \
	|| { cat "$T/pprof.err"; fail "perfrecctl pprof -e offcpu-time failed"; }
go tool pprof -traces -sample_index=offcpu-time -unit=ns "$T/p.pb.gz" 2>"$T/go.err" >"$T/traces" \
	|| { cat "$T/go.err"; fail "go tool pprof cannot read the off-CPU profile"; }
grep -q '^Type: offcpu-time' "$T/traces" || { head -5 "$T/traces"; fail "the profile's type is not offcpu-time"; }
awk -v tid="$tid" '
	function done() { if (n && t == tid) s[key] += v; n = 0; key = ""; }
	/^-----------\+/ { done(); t = ""; next }
	/^ +tid: +[0-9]+$/ { t = $2; next }
	/^ +[a-z]+: / { next }
	/^ *[0-9]+ns +/ { done(); v = $1; sub("ns", "", v); $1 = ""; sub(/^ +/, ""); key = $0; n = 1; next }
	n && NF { sub(/^ +/, ""); key = key ";" $0 }
	END { done(); for (k in s) print s[k], k }' "$T/traces" | sort >"$T/pprof.stacks"
note "$(wc -l <"$T/perf.stacks") off-CPU stacks in perf, $(wc -l <"$T/pprof.stacks") in pprof"
diff "$T/perf.stacks" "$T/pprof.stacks" >"$T/diff" || { head -30 "$T/diff"; fail "blocked ns per stack differ between perf and pprof"; }
exit 0
