#!/usr/bin/env bash
# python=yes (issue 27): perfrecd loads the walk of Python frames and
# hands it the CPython processes: one that ran before it started (the
# scan), one started while it records (its interpreter's MMAP2), and
# takes back the one that exits (its EXIT).  What the walk knows is read
# from the kernel, in the program's map of processes (bpftool), not from
# perfrecd.  python=no loads nothing; without CAP_BPF one notice says why
# and recording goes on.
. "$(dirname "$0")/lib.sh"
require_events
PY=/usr/bin/python3.11
[ -x "$PY" ] || skip "$PY is not installed"
[ -r /sys/kernel/btf/vmlinux ] || skip "the kernel has no BTF (/sys/kernel/btf/vmlinux)"
command -v bpftool >/dev/null || skip "bpftool is not installed: cannot read the program's map"
bpftool prog show >/dev/null 2>&1 || skip "the bpf() syscall is not usable here (bpftool prog show fails)"

BG=
trap 'for p in $BG; do kill -9 "$p" 2>/dev/null; done; cleanup' EXIT
spin() { "$PY" -I -S -c 'while True: pass' & BG="$BG $!"; }

# The pids in the procs map of the program perfrecd ($1) holds, one a line:
# its map fds (fdinfo's map_id), the one named procs.
walked() {
	local id='' m
	for m in $(sed -n 's/^map_id:[[:space:]]*//p' /proc/"$1"/fdinfo/* 2>/dev/null); do
		bpftool map show id "$m" 2>/dev/null | grep -q ' name procs ' && { id=$m; break; }
	done
	[ -n "$id" ] || return 1
	bpftool map dump id "$id" -j | python3 -c '
import json, sys
for e in json.load(sys.stdin):
    print(int.from_bytes(bytes(int(b, 16) for b in e["key"]), "little"))'
}
has() { walked "$DAEMON_PID" | grep -qx "$1"; }
hasnt() { walked "$DAEMON_PID" >"$T/w" && ! grep -qx "$1" "$T/w"; }

start_daemon() { # ERRFILE ARGS...
	local err=$1
	shift
	"$PERFRECD" -v --socket '' -o "$T/out" "$@" 2>"$err" &
	DAEMON_PID=$!
	wait_for 60 grep -q 'Recording' "$err" || { cat "$err"; fail "perfrecd did not start"; }
}

spin; before=${BG##* }
printf '[record]\nevents=cpu-clock\nfrequency=99\n' >"$T/conf1"
start_daemon "$T/err" -c "$T/conf1"
grep -q 'Python frames are on' "$T/err" || { cat "$T/err"; fail "python=yes (the default) did not load the walk as root"; }
wait_for 30 has "$before" || { walked "$DAEMON_PID"; fail "the python running before the start ($before) is not walked"; }
spin; after=${BG##* }
wait_for 30 has "$after" || { walked "$DAEMON_PID"; fail "the python started while recording ($after) is not walked"; }
note "walked: $(walked "$DAEMON_PID" | tr '\n' ' ')"
kill -9 "$after"; wait "$after" 2>/dev/null
wait_for 30 hasnt "$after" || fail "the python that exited ($after) is still walked"
has "$before" || fail "the python still running ($before) is no longer walked"

# A reload that reopens the events: the walk goes on, handed over.
printf '[record]\nevents=cpu-clock\nfrequency=199\n' >"$T/conf1"
kill -HUP "$DAEMON_PID"
wait_for 30 grep -q 'events reopened' "$T/err" || { cat "$T/err"; fail "the reload did not reopen the events"; }
grep -q 'Python frames off' "$T/err" && { cat "$T/err"; fail "the reload turned Python frames off"; }
has "$before" || { walked "$DAEMON_PID"; fail "after the reload the python ($before) is not walked"; }
spin; later=${BG##* }
wait_for 30 has "$later" || { walked "$DAEMON_PID"; fail "a python started after the reload ($later) is not walked"; }
printf '[record]\nevents=cpu-clock\nfrequency=199\npython=no\n' >"$T/conf1"
kill -HUP "$DAEMON_PID"
wait_for 30 grep -q 'Reload refused: \[record\] python= takes effect only at start' "$T/err" \
	|| { cat "$T/err"; fail "a reload of python=no was not refused"; }
has "$before" || fail "the refused reload stopped the walk"
kill -INT "$DAEMON_PID"; wait "$DAEMON_PID" || fail "perfrecd exited $?"
DAEMON_PID=

# python=no: no program.
printf '[record]\npython=no\n' >"$T/conf"
rm -rf "$T/out"
start_daemon "$T/err2" -c "$T/conf" -e cpu-clock -F 99
grep -q 'Python frames' "$T/err2" && { cat "$T/err2"; fail "python=no said something of Python frames"; }
walked "$DAEMON_PID" >/dev/null && fail "python=no loaded the walk"
kill -INT "$DAEMON_PID"; wait "$DAEMON_PID" || fail "perfrecd exited $?"
DAEMON_PID=

# No CAP_BPF nor CAP_SYS_ADMIN: one notice, and the recording goes on.
command -v setpriv >/dev/null || skip "setpriv is missing (the fallback is not checked)"
rm -rf "$T/out"
setpriv --inh-caps=-bpf,-sys_admin --bounding-set=-bpf,-sys_admin \
	"$PERFRECD" --socket '' -o "$T/out" -e cpu-clock -F 99 --duration 2 2>"$T/err3"
rc=$?
cat "$T/err3"
[ $rc = 0 ] || fail "perfrecd without CAP_BPF exited $rc"
[ "$(grep -c 'Python frames off: ' "$T/err3")" = 1 ] || fail "not one line saying why Python frames are off"
f=$(only_file "$T/out") || exit 1
[ "$(perf_samples "$f")" -gt 0 ] 2>/dev/null || fail "no samples without the walk"
exit 0
