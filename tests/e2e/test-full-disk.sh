#!/usr/bin/env bash
# A full disk costs data, never the daemon or a published file: record into
# a small tmpfs until it fills, free space, and recording resumes.
. "$(dirname "$0")/lib.sh"
require_events; require_perf

mnt=$T/small
mkdir -p "$mnt"
mount -t tmpfs -o size=3M tmpfs "$mnt" || skip "cannot mount a tmpfs here"
trap 'umount -l "$mnt" 2>/dev/null; cleanup' EXIT
printf '[record]\nflush-interval=100ms\n[output]\nrotate-size=1M\n' >"$T/conf"

"$WORKLOAD" 30 >/dev/null &
wl=$!
"$PERFRECD" -c "$T/conf" -o "$mnt" -F 20000 -g 2>"$T/err" &
DAEMON_PID=$!
for i in $(seq 60); do
	sleep 0.5
	grep -q "No space left" "$T/err" && break
done
grep -q "No space left" "$T/err" || { cat "$T/err"; df -h "$mnt"; fail "the disk never filled"; }
sleep 2
kill -0 $DAEMON_PID 2>/dev/null || { cat "$T/err"; fail "perfrecd died on a full disk"; }
note "disk full: $(grep -c 'No space left' "$T/err") error lines logged"
[ "$(grep -c 'No space left' "$T/err")" -le 3 ] || { cat "$T/err"; fail "full disk logged on every write"; }
for f in "$mnt"/*.data; do
	[ -e "$f" ] || continue
	"$PERFRECCTL" verify "$f" >/dev/null || fail "published $f is not valid"
done

# Space returns: the daemon resumes and publishes a good file.
mount -o remount,size=256M "$mnt"
before=$(ls "$mnt"/*.data 2>/dev/null | wc -l)
sleep 2
kill -USR2 $DAEMON_PID; sleep 1
kill -INT $DAEMON_PID; wait $DAEMON_PID; rc=$?; DAEMON_PID=
kill $wl 2>/dev/null
[ $rc = 0 ] || { cat "$T/err"; fail "perfrecd exited $rc"; }
after=$(ls "$mnt"/*.data | wc -l)
[ "$after" -gt "$before" ] || { ls -la "$mnt"; cat "$T/err"; fail "no file published after space returned"; }
last=$(ls "$mnt"/*.data | tail -1)
"$PERFRECCTL" verify "$last" || fail "the file after the full disk is invalid"
s=$(perf_samples "$last")
[ "${s:-0}" -gt 0 ] || fail "no samples after space returned"
for f in "$mnt"/*.data; do
	"$PERFRECCTL" verify "$f" >/dev/null || fail "published $f is not valid"
done
exit 0
