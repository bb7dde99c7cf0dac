#!/usr/bin/env bash
# Issue 17, fault 9: perfrecd's memory followed every process ever started
# on the host (its build-id table forgot nothing), ~120 bytes each, so RSS
# grew without a plateau in a soak.  Here 5,000 short processes come and go
# while perfrecd records; the processes it keeps state for
# (perfrecd_tracked_processes on /metrics) must come back down to about
# those alive: within one file, once their EXITs are drained (at most two
# batches of 512 exited processes are kept, daemon-side, for late samples),
# and after a rotation to those alive alone.  Short processes that were
# sampled must still have their binary's build id in the file they ran in,
# and a process running across the rotation its build id in the next file.
# Counts only: no timing is measured.
. "$(dirname "$0")/lib.sh"
require_events
require_perf
command -v curl >/dev/null || skip "curl is not installed"
command -v python3 >/dev/null || skip "python3 is not installed"
PROMPARSE=$TOP/tests/e2e/promparse.py
CHURN=${CHURN:-5000}
# Exited processes the table may hold for late samples (lib/buildid.c EXIT_BATCH * 2).
EXITED_HELD=1024
# Processes started by others (a build on the host) between two counts.
SLACK=300

PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$T/out"
cat >"$T/conf" <<EOF
[output]
directory=$T/out
[service]
metrics-listen=127.0.0.1:$PORT
EOF
"$PERFRECD" -c "$T/conf" -F 999 -g --socket '' >"$T/log" 2>&1 &
DAEMON_PID=$!
URL=http://127.0.0.1:$PORT/metrics

metric() { # metric NAME: one scrape, one value
	curl -sS --max-time 10 -o "$T/m" "$URL" || return 1
	python3 "$PROMPARSE" --value "$1" "$T/m"
}
live() { ls -d /proc/[0-9]* 2>/dev/null | wc -l; }

for _ in $(seq 120); do
	kill -0 $DAEMON_PID 2>/dev/null || { cat "$T/log"; fail "perfrecd exited"; }
	ls "$T/out"/*.data.tmp >/dev/null 2>&1 && metric perfrecd_tracked_processes >/dev/null 2>&1 && break
	sleep 0.5
done
before=$(metric perfrecd_tracked_processes) || { cat "$T/log"; fail "no perfrecd_tracked_processes on $URL"; }
note "tracked at start: $before, alive: $(live)"

# short processes that burn CPU (sampled), then many that do not
for _ in $(seq 20); do "$WORKLOAD" 0.05 1 >/dev/null; done
for _ in $(seq "$CHURN"); do /bin/true; done

# within the file: back to those alive plus the exited ones held
bound=0 tracked=
for _ in $(seq 60); do
	kill -0 $DAEMON_PID 2>/dev/null || { cat "$T/log"; fail "perfrecd exited"; }
	bound=$(( $(live) + EXITED_HELD + SLACK ))
	tracked=$(metric perfrecd_tracked_processes) || fail "scrape failed"
	[ "$tracked" -le "$bound" ] && break
	sleep 0.5
done
note "after $CHURN processes, one file: tracked $tracked (bound $bound)"
[ "$tracked" -le "$bound" ] || fail "perfrecd still tracks $tracked processes after $CHURN came and went (bound $bound)"

# a new file knows only the processes alive, and describes them again: a
# process that runs across the rotation (perl: nothing else here runs it)
# must have its binary's build id in the next file too
PERL=$(readlink -f "$(command -v perl)")
perl_id=$(readelf -n "$PERL" 2>/dev/null | awk '/Build ID:/ {print $3}')
[ -n "$perl_id" ] || skip "perl has no build id"
"$PERL" -e '1 while 1' &
SPIN=$!
trap 'kill $SPIN 2>/dev/null; cleanup' EXIT
kill -USR2 $DAEMON_PID
for _ in $(seq 60); do
	kill -0 $DAEMON_PID 2>/dev/null || { cat "$T/log"; fail "perfrecd exited"; }
	bound=$(( $(live) + SLACK ))
	tracked=$(metric perfrecd_tracked_processes) || fail "scrape failed"
	[ "$(python3 "$PROMPARSE" --value perfrecd_files_published_total "$T/m")" -ge 1 ] &&
		[ "$tracked" -le "$bound" ] && break
	sleep 0.5
done
note "after a rotation: tracked $tracked (bound $bound)"
[ "$(python3 "$PROMPARSE" --value perfrecd_files_published_total "$T/m")" -ge 1 ] || fail "no file published after SIGUSR2"
[ "$tracked" -le "$bound" ] || fail "a new file starts with $tracked processes tracked (bound $bound)"

# the short sampled processes are gone from the table, not from the file
f=$(ls "$T/out"/*.data | head -1)
[ -n "$f" ] || fail "no published file"
perf buildid-list -i "$f" >"$T/bids" 2>"$T/bids.err" || { cat "$T/bids.err"; fail "perf buildid-list failed on $f"; }
want=$(readelf -n "$WORKLOAD" | awk '/Build ID:/ {print $3}')
[ -n "$want" ] || skip "the workload binary has no build id"
grep -q "^$want " "$T/bids" || { cat "$T/bids"; fail "the exited workload's build id $want is not in $f"; }
perf script -i "$f" -F tid,ip >/dev/null 2>"$T/script.err" || { cat "$T/script.err"; fail "perf script failed on $f"; }

kill -TERM $DAEMON_PID
wait $DAEMON_PID || { cat "$T/log"; fail "perfrecd exited non-zero"; }
DAEMON_PID=
kill $SPIN
last=$(ls "$T/out"/*.data | tail -1)
[ "$last" != "$f" ] || fail "no second file"
perf buildid-list -i "$last" >"$T/bids2" 2>"$T/bids2.err" || { cat "$T/bids2.err"; fail "perf buildid-list failed on $last"; }
grep -q "^$perl_id " "$T/bids2" || { cat "$T/bids2"; fail "perl, running across the rotation, has no build id in $last"; }
exit 0
