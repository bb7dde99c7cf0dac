#!/usr/bin/env bash
# A perfrecd killed with SIGKILL leaves "NAME.data.tmp": the checkpoint must
# have made it readable by perf as it is, and `perfrecctl recover` must turn
# it into a complete file (every whole record, features added) that perf,
# perf script, hotspot's perfparser and our verifier accept, with at least as
# many samples as the checkpointed part shows.
. "$(dirname "$0")/lib.sh"
require_events; require_perf; require_perfparser

out=$T/out
cat >"$T/perfrecd.conf" <<CONF
[record]
checkpoint-interval=1s
CONF

"$WORKLOAD" 8 >/dev/null &
wl=$!
# checkpointed DIR: the recording's .tmp, as it is on disk now, shows perf
# samples (a checkpoint made its header describe the data written so far).
checkpointed() {
	local tmp
	tmp=$(ls "$1"/*.data.tmp 2>/dev/null | head -1)
	[ -n "$tmp" ] && cp "$tmp" "$T/probe.data" 2>/dev/null || return 1
	[ "$(perf_samples "$T/probe.data")" -gt 0 ] 2>/dev/null
}
"$PERFRECD" -c "$T/perfrecd.conf" -o "$out" -F 499 -g 2>"$T/daemon.err" &
DAEMON_PID=$!
wait_for 60 checkpointed "$out" || { cat "$T/daemon.err"; fail "no checkpointed .tmp with samples within 60 s"; }
sleep 1   # some records after the checkpoint, for recover to find
kill -0 "$DAEMON_PID" 2>/dev/null || { cat "$T/daemon.err"; fail "perfrecd exited before it was killed"; }
kill -9 "$DAEMON_PID"
{ wait "$DAEMON_PID"; } 2>/dev/null
DAEMON_PID=
kill "$wl" 2>/dev/null; wait "$wl" 2>/dev/null

n=$(ls "$out"/*.data.tmp 2>/dev/null | wc -l)
[ "$n" = 1 ] || { ls -la "$out"; cat "$T/daemon.err"; fail "expected one .data.tmp after SIGKILL, found $n"; }
tmp=$(ls "$out"/*.data.tmp)
note "left behind: $tmp ($(stat -c %s "$tmp") bytes)"

# The checkpointed header alone makes the .tmp readable (on a copy: perf
# reads, never writes, but the original must stay untouched for recovery).
cp "$tmp" "$T/copy.data"
before=$(perf_samples "$T/copy.data")
[ -n "$before" ] && [ "$before" -gt 0 ] || { perf report -i "$T/copy.data" --stats; fail "perf sees no samples in the checkpointed .tmp"; }
note "perf on the .tmp as left: $before samples"

sum=$(md5sum <"$tmp")
"$PERFRECCTL" recover "$tmp" >"$T/recover.out" 2>"$T/recover.err"
rc=$?
cat "$T/recover.out" "$T/recover.err"
[ $rc = 0 ] || fail "perfrecctl recover exited $rc"
[ "$(md5sum <"$tmp")" = "$sum" ] || fail "recover modified its source"
f=${tmp%.data.tmp}-recovered.data
[ -f "$f" ] || { ls -la "$out"; fail "no $f"; }
[ -e "$f.tmp" ] && fail "recover left $f.tmp behind"
grep -qE "^Recovered [0-9]+ records \([0-9]+ samples\) into $f; [0-9]+ bytes after the last whole record dropped$" "$T/recover.out" \
	|| fail "unexpected recover output"

"$PERFRECCTL" verify "$f" || fail "perfrecctl verify rejected the recovered file"

perf report -i "$f" --stats >"$T/stats" 2>"$T/stats.err"
check_perf_stderr "perf report --stats" "$T/stats.err"
after=$(awk '/SAMPLE events:/ {print $3; exit}' "$T/stats")
[ -n "$after" ] && [ "$after" -ge "$before" ] || { cat "$T/stats"; fail "recovered file has ${after:-no} samples, the .tmp showed $before"; }
note "perf on the recovered file: $after samples"
claimed=$(sed -n 's/^Recovered [0-9]* records (\([0-9]*\) samples).*/\1/p' "$T/recover.out")
[ "$claimed" = "$after" ] || fail "recover said $claimed samples, perf counts $after"

perf script -i "$f" >"$T/script" 2>"$T/script.err" || { cat "$T/script.err"; fail "perf script failed on the recovered file"; }
check_perf_stderr "perf script" "$T/script.err"
[ -s "$T/script" ] || fail "perf script printed nothing"

perf report -i "$f" --header-only -I >"$T/header" 2>"$T/header.err"
check_perf_stderr "perf report --header-only" "$T/header.err"
for pat in '# hostname :' '# os release :' '# event : name = cpu-clock' '# time of first sample :'; do
	grep -qF -- "$pat" "$T/header" || { cat "$T/header"; fail "perf --header-only -I does not show '$pat'"; }
done

n=$(check_perfparser "$f") || exit 1
note "perfparser: $n samples"

# The daemon itself recovers leftovers at its next start: kill it again,
# restart it on the same directory, and the .tmp becomes a published file.
rm -f "$f"
"$PERFRECD" -c "$T/perfrecd.conf" -o "$out" -F 499 2>"$T/d2.err" &
DAEMON_PID=$!
# Once it records, the first run's .tmp is recovered and gone; then the
# second run's file is checkpointed.
started() { grep -q Recording "$T/d2.err"; }
wait_for 30 started || { cat "$T/d2.err"; fail "the second run did not start recording"; }
wait_for 60 checkpointed "$out" || { cat "$T/d2.err"; fail "the second run checkpointed no .tmp with samples within 60 s"; }
kill -9 $DAEMON_PID; wait $DAEMON_PID 2>/dev/null; DAEMON_PID=
tmp2=$(ls "$out"/*.data.tmp | head -1)
[ -n "$tmp2" ] || fail "the second killed run left no .tmp"
"$PERFRECD" -o "$out" -F 499 --duration 1 2>"$T/d3.err" || { cat "$T/d3.err"; fail "restart failed"; }
grep -q "Recovered .*-recovered.data" "$T/d3.err" || { cat "$T/d3.err"; fail "restart did not report a recovery"; }
ls "$out"/*.tmp 2>/dev/null && fail "a .tmp survived the restart"
r2=${tmp2%.data.tmp}-recovered.data
[ -f "$r2" ] || { ls -la "$out"; fail "no $r2 after restart"; }
"$PERFRECCTL" verify "$r2" || fail "the file recovered at start is invalid"
s2=$(perf_samples "$r2")
[ "${s2:-0}" -gt 0 ] || fail "the file recovered at start has no samples"
note "recovered at restart: $s2 samples"
exit 0

