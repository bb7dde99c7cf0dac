#!/usr/bin/env bash
# Flight-recorder mode: perfrecd --mode flight --history 5s writes nothing
# until SIGUSR2, which publishes one self-contained snapshot of the last 5 s.
# A workload that runs only from t=2s to t=4s must be in the snapshot taken
# at t=6s and absent from the one taken at t=12s; a second snapshot right
# after the second works; recording never stops (each later snapshot
# reaches later); every snapshot passes perf report (clean stderr),
# perfparser (0 time violations) and perfrecctl verify with perf's sample
# count, and perfrecctl dump shows the span each CPU covers, within the
# window.
. "$(dirname "$0")/lib.sh"
require_events; require_perf; require_perfparser

# Our own copy of the workload: other tests may run the shared one at the
# same time, so the workload is told apart by its comm.
WL=fltwl$$
cp "$WORKLOAD" "$T/$WL"

nfiles() { ls "$T"/out/*.data 2>/dev/null | wc -l; }
wait_files() {
	for _ in $(seq 150); do [ "$(nfiles)" -ge "$1" ] && return 0; sleep 0.1; done
	cat "$T/d.log"; fail "snapshot $1 did not appear"
}

# Bad settings get one clear line naming the problem.
bad() { # expected-message args...
	local want=$1; shift
	"$PERFRECD" -o "$T/bad" "$@" --duration 1 >"$T/bad.out" 2>&1 && fail "perfrecd $* was accepted"
	grep -q "$want" "$T/bad.out" || { cat "$T/bad.out"; fail "perfrecd $*: no message saying '$want'"; }
}
bad "mode: 'bogus' is neither continuous nor flight" --mode bogus
bad "history-max: '10K' is not a size of at least 1M" --history-max 10K
bad "history: '5x' is not a duration" --history 5x
bad "mode=flight needs a history" --mode flight --history 0
bad "it cannot stream to stdout" --mode flight -o -
"$PERFRECD" --mode flight --check-config | grep -qx "history=5min" || fail "--check-config does not show flight mode's default history=5min"

mkdir -p "$T/out"
start=$(date +%s.%N)
"$PERFRECD" -o "$T/out" --mode flight --history 5s -e cpu-clock -F 499 -g -v 2>"$T/d.log" &
DAEMON_PID=$!
at() { # sleep until $1 seconds after the start
	local d
	d=$(awk -v s="$start" -v t="$1" -v n="$(date +%s.%N)" 'BEGIN { d = s + t - n; print (d > 0 ? d : 0) }')
	sleep "$d"
}
at 2
"$T/$WL" 2 >/dev/null &
wl=$!
at 4.5
wait $wl
[ "$(nfiles)" = 0 ] || { ls "$T/out"; fail "flight mode wrote a file before any snapshot was asked for"; }
ls "$T"/out/*.tmp >/dev/null 2>&1 && fail "flight mode left a .tmp file before any snapshot"
at 6
kill -USR2 $DAEMON_PID
wait_files 1
at 12
kill -USR2 $DAEMON_PID
wait_files 2
kill -USR2 $DAEMON_PID
wait_files 3
kill -INT $DAEMON_PID
for _ in $(seq 100); do kill -0 $DAEMON_PID 2>/dev/null || break; sleep 0.1; done
wait $DAEMON_PID; rc=$?
DAEMON_PID=
[ $rc = 0 ] || { cat "$T/d.log"; fail "perfrecd exited $rc"; }
[ "$(nfiles)" = 3 ] || { ls "$T/out"; fail "expected exactly the 3 snapshots, found $(nfiles) files"; }
ls "$T"/out/*.tmp >/dev/null 2>&1 && fail "a .tmp file was left behind"

mapfile -t snaps < <(ls "$T"/out/*.data | sort)
prev_last=0
i=0
for f in "${snaps[@]}"; do
	i=$((i + 1))
	perf report -i "$f" --stats >"$T/stats$i" 2>"$T/stats$i.err"
	check_perf_stderr "perf report (snapshot $i)" "$T/stats$i.err"
	theirs=$(awk '/SAMPLE events:/ {print $3; exit}' "$T/stats$i")
	"$PERFRECCTL" verify "$f" >"$T/verify$i" || { cat "$T/verify$i"; fail "perfrecctl verify rejected snapshot $i"; }
	ours=$(sed -n 's/.*, \([0-9]*\) samples)$/\1/p' "$T/verify$i")
	[ -n "$ours" ] && [ "$ours" = "$theirs" ] || fail "snapshot $i: perfrecctl counts $ours samples, perf $theirs"
	pp=$(check_perfparser "$f") || { echo "$pp"; fail "perfparser rejected snapshot $i"; }
	perf script -i "$f" --comms "$WL" -F comm,ip,sym >"$T/script$i" 2>"$T/script$i.err"
	check_perf_stderr "perf script (snapshot $i)" "$T/script$i.err"
	perf report -i "$f" --comms "$WL" --sort sym --stdio >"$T/report$i" 2>/dev/null
	"$PERFRECCTL" dump "$f" >"$T/dump$i"
	grep -q "PERFREC_SPANS  window 5.000 s" "$T/dump$i" || { cat "$T/dump$i"; fail "snapshot $i: no per-CPU spans in perfrecctl dump"; }
	ncpu=$(grep -c '^    cpu ' "$T/dump$i")
	[ "$ncpu" = "$(nproc)" ] || { cat "$T/dump$i"; fail "snapshot $i: spans for $ncpu CPUs, expected $(nproc)"; }
	# Every CPU's span lies inside the 5 s window, and is a real span where
	# the CPU has two samples or more: on this VM (perf record -a shows it
	# too) cpu-clock takes no samples on an idle CPU but CPU 0, so in a
	# quiet window a CPU may hold one sample or none (0 .. 0).
	awk '/^    cpu / { gsub(/[(]/, "", $6); s = $6 + 0; if (s > 5.0 || (s <= 0 && $8 + 0 >= 2)) bad = 1 } END { exit bad }' "$T/dump$i" \
		|| { cat "$T/dump$i"; fail "snapshot $i: a CPU's span is empty or longer than the window"; }
	# Recording never stopped: each snapshot reaches later than the one before.
	last=$(perf script -i "$f" -F time 2>/dev/null | tr -d ' :' | sort -n | tail -1)
	awk -v a="$last" -v b="$prev_last" 'BEGIN { exit !(a > b) }' \
		|| fail "snapshot $i ends at $last, not after the previous one ($prev_last)"
	prev_last=$last
	note "snapshot $i: $ours samples, perfparser $pp, $(grep -c hot_function "$T/script$i") hot_function lines, last sample $last"
done

grep -q "^ *$WL" "$T/script1" || fail "the t=6s snapshot has no samples of $WL"
grep -q hot_function "$T/script1" || fail "the t=6s snapshot does not contain the t=2..4s workload (perf script)"
grep -q '\] hot_function' "$T/report1" || { head -30 "$T/report1"; fail "perf report --sort sym of the t=6s snapshot shows no hot_function"; }
grep -q hot_function "$T/script2" && fail "the t=12s snapshot still holds the t=2..4s workload, outside its 5 s window"
grep -q hot_function "$T/report2" && fail "perf report of the t=12s snapshot shows hot_function"
grep -q hot_function "$T/script3" && fail "the second snapshot at t=12s holds the old workload"
grep -q "Wrote snapshot" "$T/d.log" || fail "no snapshot log line"
exit 0
