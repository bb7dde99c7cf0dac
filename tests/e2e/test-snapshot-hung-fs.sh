#!/bin/bash
# A snapshot into a regular file on a hung file system (ext4 on a loop
# device, frozen with fsfreeze) holds up nothing: while the write waits,
# status answers every time, the counters rise and the current file
# grows; the daemon gives the snapshot up after 10 s without progress,
# telling the client why.  After the thaw the daemon writes snapshots
# there again, valid for perf and perfrecctl verify; one that was frozen
# for a moment completes valid or fails saying why.
. "$(dirname "$0")/lib.sh"
require_events
require_perf
for c in losetup mkfs.ext4 fsfreeze mount umount; do
	command -v $c >/dev/null || skip "$c is not installed"
done

S=$T/sock
M=$T/mnt
ctl() { timeout 30 "$PERFRECCTL" --socket "$S" "$@"; }
jget() { python3 -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }
BG= SNAP= MOUNTED=
# Thawed before anything else: a frozen file system would hang the cleanup.
# Then no process of ours may hold a file there when it is unmounted.
finish() {
	[ -n "$MOUNTED" ] && fsfreeze -u "$M" 2>/dev/null
	exec 3>&-
	kill $BG $SNAP 2>/dev/null
	if [ -n "$DAEMON_PID" ]; then
		kill -9 "$DAEMON_PID" 2>/dev/null
		wait "$DAEMON_PID" 2>/dev/null
	fi
	[ -n "$MOUNTED" ] && { umount "$M" 2>/dev/null || umount -l "$M"; }
	cleanup
}
trap finish EXIT

truncate -s 64M "$T/img"
mkfs.ext4 -q -F "$T/img" >/dev/null 2>&1 || skip "mkfs.ext4 cannot make a file system here"
mkdir "$M"
mount -o loop "$T/img" "$M" 2>"$T/merr" || { cat "$T/merr"; skip "cannot mount an ext4 image on a loop device here"; }
MOUNTED=1
fsfreeze -f "$M" 2>"$T/ferr" && fsfreeze -u "$M" || { cat "$T/ferr"; skip "fsfreeze does not work on this ext4 mount"; }

mkdir -p "$T/out"
printf '[record]\nevents=cpu-clock\nfrequency=999\n' > "$T/conf"
"$PERFRECD" -c "$T/conf" -o "$T/out" --socket "$S" 2>"$T/log" &
DAEMON_PID=$!
wait_for 30 ctl ping >/dev/null 2>&1 || { cat "$T/log"; fail "no control socket"; }
"$WORKLOAD" 120 >/dev/null &
BG=$!
has_samples() { [ "$(ctl --json status | jget samples)" -gt 0 ]; }
wait_for 30 has_samples || fail "no samples recorded"

# status within 5 s (a hung main loop does not answer at all): PS its
# samples, PB the size of the current file on disk.
probe() {
	timeout 5 "$PERFRECCTL" --socket "$S" --json status > "$T/st.json" 2>"$T/st.err" ||
		{ cat "$T/st.err"; fail "$1: status did not answer (the snapshot into the frozen file holds up the daemon)"; }
	read -r PS PB < <(python3 -c '
import json, os, sys
s = json.load(open(sys.argv[1]))
print(s["samples"], os.path.getsize(s["current_file"]))' "$T/st.json")
}

# Status answers, until it shows more samples and a larger current file.
wait_progress() {
	local s=$PS b=$PB i

	for ((i = 0; i < 300; i++)); do
		probe "$1"
		[ "$PS" -gt "$s" ] && [ "$PB" -gt "$b" ] && return 0
		sleep 0.1
	done
	fail "$1: samples and the current file stopped growing"
}

note "a snapshot into a file on a frozen file system"
exec 3>"$M/snap.data"
fsfreeze -f "$M" || fail "fsfreeze -f"
"$PERFRECCTL" --socket "$S" snapshot - >&3 2>"$T/snap.err" &
SNAP=$!
probe "frozen"
rounds=0
# Until the daemon gives the snapshot up: every status answers, and
# samples keep reaching the current file meanwhile.
while kill -0 $SNAP 2>/dev/null; do
	wait_progress "frozen, round $rounds"
	rounds=$((rounds + 1))
	[ $rounds -lt 120 ] || fail "perfrecctl snapshot still runs after $rounds status rounds"
done
wait $SNAP
rc=$?
SNAP=
[ $rc = 1 ] || { cat "$T/snap.err"; fail "snapshot into the frozen file: exit $rc, not 1"; }
grep -q "perfrecctl: .*the file took nothing for 10 s (a hung file system?) after 0 of [0-9]* bytes" "$T/snap.err" ||
	{ cat "$T/snap.err"; fail "the failed snapshot does not say why"; }
grep -q "Snapshot for uid 0 pid [0-9]* not delivered: the file took nothing for 10 s" "$T/log" ||
	{ cat "$T/log"; fail "the abandoned snapshot is not logged"; }
[ $rounds -ge 3 ] || fail "only $rounds status rounds while the file was frozen"
fsfreeze -u "$M" || fail "fsfreeze -u"
exec 3>&-

note "after the thaw: snapshots into that file system are whole"
ctl snapshot "$M/after.data" >/dev/null 2>"$T/err" || { cat "$T/err" "$T/log"; fail "snapshot after the thaw"; }
"$PERFRECCTL" verify "$M/after.data" >/dev/null || fail "the snapshot after the thaw does not verify"
n=$(perf_samples "$M/after.data")
[ -n "$n" ] && [ "$n" -gt 0 ] || fail "perf finds no samples in the snapshot after the thaw"

note "a snapshot frozen for a moment"
exec 3>"$M/moment.data"
fsfreeze -f "$M" || fail "fsfreeze -f"
"$PERFRECCTL" --socket "$S" snapshot - >&3 2>"$T/snap.err" &
SNAP=$!
probe "frozen again"
wait_progress "frozen again"
fsfreeze -u "$M" || fail "fsfreeze -u"
wait $SNAP
rc=$?
SNAP=
exec 3>&-
if [ $rc = 0 ]; then
	"$PERFRECCTL" verify "$M/moment.data" >/dev/null || fail "the snapshot across a short freeze does not verify"
	perf report -i "$M/moment.data" --stats > "$T/stats" 2>"$T/perr" || { cat "$T/perr"; fail "perf report"; }
	check_perf_stderr "perf report of the snapshot across a short freeze" "$T/perr"
	grep -q "^snapshot of [0-9]* samples written to stdout$" "$T/snap.err" || { cat "$T/snap.err"; fail "no report on stderr"; }
else
	grep -q "the file took nothing for 10 s" "$T/snap.err" ||
		{ cat "$T/snap.err"; fail "the snapshot across a short freeze failed (exit $rc) without saying why"; }
fi
kill -0 "$DAEMON_PID" || fail "perfrecd died"
echo "PASS"
