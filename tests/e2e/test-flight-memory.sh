#!/usr/bin/env bash
# Flight mode honours history-max on a long high-rate run: -F 20000 -g with
# the workload busy on every CPU for ~10 s and history-max=8M (far less than
# the run produces).  The daemon's resident memory never grows past its
# start-up size plus the cap plus a small allowance, its own accounting
# (logged with each snapshot) stays at or under the cap, the history was
# really cut (each CPU covers less than the run), and the snapshots taken
# mid-run and at the end pass perf report, perfparser and perfrecctl verify.
. "$(dirname "$0")/lib.sh"
require_events; require_perf; require_perfparser

CAP_KIB=8192
SLACK_KIB=4096   # malloc overhead, the snapshot writer's buffers, scratch
mkdir -p "$T/out"
WL=fmemwl$$
cp "$WORKLOAD" "$T/$WL"

# -F 20000, above max-frequency='s default, on purpose.
printf '[record]\nmax-frequency=20000\n' > "$T/conf"
"$PERFRECD" -c "$T/conf" -o "$T/out" --mode flight --history-max 8M -e cpu-clock -F 20000 -g 2>"$T/d.log" &
DAEMON_PID=$!
for _ in $(seq 100); do grep -q "Recording" "$T/d.log" && break; sleep 0.1; done
grep -q "Recording" "$T/d.log" || { cat "$T/d.log"; fail "perfrecd did not start"; }
base=$(awk '/VmRSS/ {print $2}' /proc/$DAEMON_PID/status)
"$T/$WL" 10 >/dev/null &
wl=$!
peak=0
rss() { awk '/VmRSS/ {print $2}' /proc/$DAEMON_PID/status; }
for i in $(seq 40); do
	sleep 0.25
	r=$(rss)
	[ "$r" -gt "$peak" ] && peak=$r
	[ "$i" = 20 ] && kill -USR2 $DAEMON_PID
done
wait $wl
kill -USR2 $DAEMON_PID
for _ in $(seq 150); do [ "$(ls "$T"/out/*.data 2>/dev/null | wc -l)" -ge 2 ] && break; sleep 0.1; done
r=$(rss); [ "$r" -gt "$peak" ] && peak=$r
kill -INT $DAEMON_PID
for _ in $(seq 100); do kill -0 $DAEMON_PID 2>/dev/null || break; sleep 0.1; done
wait $DAEMON_PID; rc=$?
DAEMON_PID=
[ $rc = 0 ] || { cat "$T/d.log"; fail "perfrecd exited $rc"; }
note "VmRSS: $base KiB at start, peak $peak KiB (cap $CAP_KIB KiB)"
[ "$peak" -le $((base + CAP_KIB + SLACK_KIB)) ] \
	|| fail "resident memory peaked at $peak KiB, over start-up $base + cap $CAP_KIB + $SLACK_KIB KiB"

n=$(grep -c "Wrote snapshot" "$T/d.log")
[ "$n" = 2 ] || { cat "$T/d.log"; fail "expected 2 snapshots, the log has $n"; }
while read -r kib; do
	note "history accounting after a snapshot: $kib KiB"
	[ "$kib" -le $CAP_KIB ] || fail "the daemon accounts $kib KiB of history, over the 8M cap"
done < <(sed -n 's/.*history \([0-9]*\) KiB in memory.*/\1/p' "$T/d.log")

i=0
for f in $(ls "$T"/out/*.data | sort); do
	i=$((i + 1))
	perf report -i "$f" --stats >"$T/stats$i" 2>"$T/stats$i.err"
	# At -F 20000 -g an overloaded machine loses records; perf warns of the
	# LOST records the snapshot faithfully carries.  Say so, then check the rest.
	if grep -Eq "events and lost|samples and lost" "$T/stats$i.err"; then
		note "snapshot $i: $(grep -E 'and lost' "$T/stats$i.err" | head -1) (overloaded machine)"
		sed -i -E '/and lost|^ *Warning:? *$|Check IO\/CPU overload|^ *$/d' "$T/stats$i.err"
	fi
	check_perf_stderr "perf report (snapshot $i)" "$T/stats$i.err"
	theirs=$(awk '/SAMPLE events:/ {print $3; exit}' "$T/stats$i")
	"$PERFRECCTL" verify "$f" >"$T/verify$i" || { cat "$T/verify$i"; fail "perfrecctl verify rejected snapshot $i"; }
	ours=$(sed -n 's/.*, \([0-9]*\) samples)$/\1/p' "$T/verify$i")
	[ -n "$ours" ] && [ "$ours" = "$theirs" ] || fail "snapshot $i: perfrecctl counts $ours samples, perf $theirs"
	pp=$(check_perfparser "$f") || { echo "$pp"; fail "perfparser rejected snapshot $i"; }
	# The mid-run snapshot holds the workload (the last one may hold only idle time).
	[ $i = 1 ] && { perf report -i "$f" --comms "$WL" --sort sym --stdio 2>/dev/null | grep -q hot_function \
		|| fail "the mid-run snapshot does not show the workload's hot_function"; }
	"$PERFRECCTL" dump "$f" >"$T/dump$i"
	# The cap, not the 5 min window, bounded the history: every CPU covers
	# less than the 10 s the workload ran.
	awk '/^    cpu / { gsub(/[(]/, "", $6); n++; if ($6 + 0 >= 8.0) bad = 1 } END { exit bad || !n }' "$T/dump$i" \
		|| { cat "$T/dump$i"; fail "snapshot $i: a CPU's history spans the whole run; the cap did not evict"; }
	# Merged by time and cut into rounds: readers never hold the whole file to sort it.
	rounds=$(awk '$1 == "FINISHED_ROUND" {print $2}' "$T/dump$i")
	[ "${rounds:-0}" -ge 2 ] || { cat "$T/dump$i"; fail "snapshot $i of several MiB has ${rounds:-0} FINISHED_ROUND records"; }
	note "snapshot $i: $ours samples, $(grep '^    cpu ' "$T/dump$i" | tr -s ' ' | tr '\n' ';')"
done
exit 0
