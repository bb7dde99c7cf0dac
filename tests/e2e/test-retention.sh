#!/usr/bin/env bash
# Retention by each limit: max-files, max-bytes, max-age.  Oldest go first;
# foreign files and the file in progress are never touched.
. "$(dirname "$0")/lib.sh"
require_events

run_rotations() { # conf, count
	"$PERFRECD" -c "$1" -F 499 -g 2>>"$T/err" &
	DAEMON_PID=$!
	sleep 0.7
	# Each rotation is awaited (its start line logged) before the next: a
	# SIGUSR2 sent during a rotation coalesces with the one being handled.
	local before
	for i in $(seq "$2"); do
		before=$(grep -c '^perfrecd: Wrote' "$T/err")
		kill -USR2 $DAEMON_PID
		for w in $(seq 100); do [ "$(grep -c '^perfrecd: Wrote' "$T/err")" -gt "$before" ] && break; sleep 0.1; done
		sleep 0.2
	done
	kill -INT $DAEMON_PID; wait $DAEMON_PID || fail "perfrecd failed"; DAEMON_PID=
}

# max-files
mkdir -p "$T/a"; touch "$T/a/unrelated.data" "$T/a/other-x-1.data"
printf '[output]\ndirectory=%s\nmax-files=3\n' "$T/a" >"$T/a.conf"
run_rotations "$T/a.conf" 7
n=$(ls "$T/a"/perfrecd-*.data | wc -l)
[ "$n" = 3 ] || { ls -la "$T/a"; fail "max-files=3 left $n files"; }
ls "$T/a"/perfrecd-*-000008.data >/dev/null || fail "max-files removed the newest file"
[ -f "$T/a/unrelated.data" ] && [ -f "$T/a/other-x-1.data" ] || fail "retention removed foreign files"

# max-bytes
mkdir -p "$T/b"
printf '[output]\ndirectory=%s\nmax-bytes=150K\n' "$T/b" >"$T/b.conf"
run_rotations "$T/b.conf" 8
total=$(du -cb "$T/b"/perfrecd-*.data | tail -1 | cut -f1)
note "max-bytes=150K: $(ls "$T/b"/*.data | wc -l) files, $total bytes"
# The file just published is always kept, even alone above the limit.
nb=$(ls "$T/b"/perfrecd-*.data | wc -l)
[ "$total" -le $((150 * 1024)) ] || [ "$nb" = 1 ] || fail "max-bytes exceeded: $total in $nb files"
ls "$T/b"/perfrecd-*-000009.data >/dev/null || fail "max-bytes removed the newest file"
[ "$(ls "$T/b"/*.data | wc -l)" -lt 9 ] || fail "max-bytes removed nothing"

# max-age: files older than the limit go, younger stay.
mkdir -p "$T/c"
host=$(hostname)
old="$T/c/perfrecd-$host-20200101T000000.000Z-000001.data"
young="$T/c/perfrecd-$host-20200101T000001.000Z-000002.data"
cp "$0" "$old"; cp "$0" "$young"
touch -d '3 hours ago' "$old"; touch -d '10 minutes ago' "$young"
printf '[output]\ndirectory=%s\nmax-age=1h\n' "$T/c" >"$T/c.conf"
run_rotations "$T/c.conf" 1
[ ! -e "$old" ] || fail "max-age=1h kept a 3-hour-old file"
[ -e "$young" ] || fail "max-age=1h removed a 10-minute-old file"
[ "$(ls "$T/c"/*.data | wc -l)" = 3 ] || { ls -la "$T/c"; fail "max-age: expected the young file and 2 new ones"; }
exit 0
