#!/usr/bin/env bash
# -P N on a counting software event samples every N events, as perf record
# -c N does: perfrecd and perf record the same workload at the same time and
# every sample of both carries the period N.  (The kernel samples such an
# event on every hit, with period 1, when the sample asks for its PERIOD and
# the attr has no freq: that was the fault.)
. "$(dirname "$0")/lib.sh"
require_events; require_perf

# One event at a time: the workload faults pages and switches contexts.
churn() { local end=$((SECONDS + $1)); while [ $SECONDS -lt $end ]; do /bin/true; sleep 0.001; done; }

check_event() {
	local ev=$1 n=$2 d=$T/$1
	mkdir -p "$d"
	churn 4 &
	local wl=$! pp
	perf record --buildid-mmap -a -e "$ev" -c "$n" -o "$d/perf.data" -- sleep 3 >/dev/null 2>"$d/perf.err" &
	pp=$!
	"$PERFRECD" -o "$d/out" --socket '' -e "$ev" -P "$n" --no-call-graph --duration 2 2>"$d/err" ||
		{ cat "$d/err"; fail "perfrecd -e $ev -P $n failed"; }
	wait $pp || { cat "$d/perf.err"; fail "perf record -e $ev -c $n failed"; }
	wait $wl
	local f
	f=$(only_file "$d/out") || exit 1
	# Each distinct period with its sample count.
	perf script -i "$d/perf.data" -F period 2>/dev/null | awk 'NF {n[$1]++} END {for (p in n) print p, n[p]}' | sort -n >"$d/perf.periods"
	perf script -i "$f" -F period 2>"$d/script.err" | awk 'NF {n[$1]++} END {for (p in n) print p, n[p]}' | sort -n >"$d/ours.periods"
	check_perf_stderr "perf script ($ev)" "$d/script.err"
	note "$ev -P $n: perf: $(tr '\n' ' ' <"$d/perf.periods"); perfrecd: $(tr '\n' ' ' <"$d/ours.periods")"
	[ -s "$d/perf.periods" ] || fail "perf record -e $ev -c $n wrote no samples"
	[ -s "$d/ours.periods" ] || fail "perfrecd -e $ev -P $n wrote no samples"
	[ "$(awk '{print $1}' "$d/perf.periods")" = "$n" ] || fail "perf's own $ev samples do not all have period $n"
	[ "$(awk '{print $1}' "$d/ours.periods")" = "$(awk '{print $1}' "$d/perf.periods")" ] ||
		fail "perfrecd's $ev periods differ from perf's"
}

check_event page-faults 1000
check_event context-switches 10
exit 0
