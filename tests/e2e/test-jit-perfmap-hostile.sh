#!/usr/bin/env bash
# Hostile perf maps (issue 26): processes with JIT-like memory whose
# /tmp/perf-PID.map is a FIFO, a symbolic link to a file they chose (a
# secret of perf map lines naming their mapping), or a million
# overlapping lines with binary garbage and absurd ranges.  perfrecd
# records through all of them and stops when told (a FIFO never blocks
# it), nothing of the linked file reaches the recording or the build-id
# cache, and its memory stays bounded.  What it refused and left out is
# counted where an operator looks: perfrecctl status (and --json) and the
# metrics textfile.
. "$(dirname "$0")/lib.sh"
require_events; require_perf
command -v python3 >/dev/null || skip "python3 is not installed"
H=$TOP/tests/e2e/jitmap-hostile.py

mkdir "$T/out" "$T/prom"
: >"$T/log"
PROM=$T/prom/perfrecd.prom
printf '[service]\nmetrics-textfile=%s\n' "$PROM" >"$T/conf"
S=$T/ctl.sock
ctl() { timeout 20 "$PERFRECCTL" --socket "$S" "$@"; }
"$PERFRECD" -c "$T/conf" -o "$T/out" --socket "$S" -F 499 -g -v 2>"$T/log" &
DAEMON_PID=$!
wait_for 30 grep -q '^perfrecd: Recording' "$T/log" || { cat "$T/log"; fail "perfrecd did not start"; }
for kind in fifo symlink huge; do
	python3 "$H" "$kind" "$T/secret" 3 >"$T/$kind.out" 2>&1 &
	eval "pid_$kind=$!"
done
for kind in fifo symlink huge; do
	wait_for 60 grep -q ready "$T/$kind.out" || { cat "$T/$kind.out"; fail "the $kind process did not start"; }
done
for kind in fifo symlink huge; do
	eval "wait \$pid_$kind" || { cat "$T/$kind.out"; fail "the $kind process failed"; }
done
# jit_at_least NAME N: the status's jit.NAME is N or more
jit_at_least() { [ "$(ctl --json status | python3 -c "import json, sys; print(json.load(sys.stdin)['jit']['$1'])")" -ge "$2" ]; }
# the FIFO's and the link's maps refused; the huge map's symbols over the bound counted as dropped
wait_for 30 jit_at_least maps_refused 2 ||
	{ ctl --json status; fail "status does not count the FIFO's and the link's maps as refused"; }
wait_for 30 jit_at_least symbols_dropped 1 ||
	{ ctl --json status; fail "status counts none of the huge map's symbols dropped for the bound"; }
ctl status >"$T/status" || fail "perfrecctl status failed"
grep -E '^JIT left out: [0-9]+ maps refused' "$T/status" || { cat "$T/status"; fail "perfrecctl status shows no JIT line"; }
hwm=$(awk '/^VmHWM:/ { print $2 }' /proc/$DAEMON_PID/status)
kill -TERM $DAEMON_PID
wait_for 30 sh -c "! kill -0 $DAEMON_PID 2>/dev/null" || fail "perfrecd did not stop (blocked on a hostile map?)"
wait $DAEMON_PID; rc=$?; DAEMON_PID=
[ $rc = 0 ] || { tail "$T/log"; fail "perfrecd exited $rc"; }
f=$(only_file "$T/out")
# the textfile, rewritten at exit, has them too
for m in perfrecd_jit_maps_refused_total perfrecd_jit_bad_lines_total perfrecd_jit_symbols_dropped_total; do
	v=$(python3 "$TOP/tests/e2e/promparse.py" --value $m "$PROM") || fail "no $m in the metrics textfile"
	note "$m $v"
done
v=$(python3 "$TOP/tests/e2e/promparse.py" --value perfrecd_jit_maps_refused_total "$PROM")
[ "${v%.*}" -ge 2 ] || fail "the textfile counts $v maps refused, not the FIFO's and the link's"
note "perfrecd's peak RSS: $((hwm / 1024)) MiB"
[ "$hwm" -lt $((100 * 1024)) ] || fail "perfrecd's peak RSS was $((hwm / 1024)) MiB"

grep -rlaq SECRET_FUNCTION_NAME "$T/out" && fail "the linked file's contents reached the output directory"
perf --buildid-dir "$T/out" script -i "$f" -F ip,sym >"$T/script" 2>/dev/null || fail "perf script failed"
grep -q SECRET_FUNCTION_NAME "$T/script" && fail "perf names a function of the linked file"
# the huge map's mapping got its image (bounded: the lines read so far); the others none
ls "$T/out/perfrec-jit/jit-$pid_huge-"*/* >/dev/null 2>&1 || { grep JIT "$T/log"; fail "no image of the huge map's mapping"; }
for kind in fifo symlink; do
	eval "p=\$pid_$kind"
	ls -d "$T/out/perfrec-jit/jit-$p-"* >/dev/null 2>&1 && fail "an image of the $kind process's mapping"
done
exit 0
