#!/usr/bin/env bash
# Off-CPU profiling across reloads (issue 28 item 2).  perfrecd drops
# CAP_BPF and CAP_SYS_ADMIN after its start, so a reload can no longer load
# a BPF program:
#  - a reload that reopens the events (a new frequency) keeps off-CPU
#    profiling: the file after it still holds the blocker's offcpu-time
#    samples (before the fix: "off-CPU profiling is off: ... Operation not
#    permitted" in the log, and no offcpu-time in any later file);
#  - a reload that changes only offcpu-min= is applied (to the program
#    kept: the blocker's 20 ms blocks stop counting under offcpu-min=1h)
#    and says so, and is applied back (before the fix: accepted and
#    ignored);
#  - a reload that turns offcpu= on in a daemon started without it is
#    refused with a message saying a restart is needed, and the old
#    configuration goes on recording (status shows the old frequency; no
#    file declares offcpu-time).
. "$(dirname "$0")/lib.sh"
require_root; require_events; require_perf
BLOCKER=$TOP/tests/e2e/blocker
[ -x "$BLOCKER" ] || fail "tests/e2e/blocker is not built (make tests/e2e/blocker)"
require_offcpu

S=$T/sock
conf=$T/conf
out=$T/out
write_conf() { # FREQ OFFCPU OFFCPU_MIN [OFFCPU_CGROUP]
	printf '[record]\nevents=cpu-clock\nfrequency=%s\ncallchain=yes\noffcpu=%s\noffcpu-min=%s\noffcpu-cgroup=%s\n[output]\ndirectory=%s\nrotate-interval=0\n' \
		"$1" "$2" "$3" "${4:-}" "$out" >"$conf"
}
logged() { grep -q "$1" "$T/err" 2>/dev/null; }
nlogged() { grep -c "$1" "$T/err"; }
declares_offcpu() { perf report -i "$1" --header-only 2>/dev/null | grep -q 'name = offcpu-time'; }
ctl() { timeout 60 "$PERFRECCTL" --socket "$S" "$@"; }
nfiles() { ls "$out"/*.data 2>/dev/null | wc -l; }
files_at_least() { [ "$(nfiles)" -ge "$1" ]; }
last_file() { ls "$out"/*.data | tail -1; }
# offcpu-time samples of process $2 in file $1, as perf reads them.
offcpu_of() {
	perf script -i "$1" -F event --pid "$2" 2>"$T/script.err" | grep -c 'offcpu-time'
	check_perf_stderr "perf script $1" "$T/script.err"
}
# Wait until the daemon logged PATTERN one more time than it had.
wait_logged_again() { # N PATTERN WHAT
	local n=$1
	wait_for 30 eval '[ "$(nlogged "$2")" -gt "$n" ]' || { cat "$T/err"; fail "$3"; }
}
sleep_until_blocks() { [ "$(awk '/voluntary_ctxt_switches/ && !/non/ {print $2}' /proc/$blk/task/*/status | sort -n | tail -1)" -gt "$1" ]; }
rotate_to() { # N: rotate, wait for the Nth published file
	ctl rotate >/dev/null || { cat "$T/err"; fail "rotate failed"; }
	wait_for 30 files_at_least "$1" || { cat "$T/err"; ls -la "$out"; fail "file $1 was not published"; }
}

"$BLOCKER" 100000 20 >/dev/null 2>&1 &
blk=$!
trap 'kill $blk 2>/dev/null; cleanup' EXIT
write_conf 99 yes 0
"$PERFRECD" -c "$conf" --socket "$S" 2>"$T/err" &
DAEMON_PID=$!
wait_for 30 logged "Recording" || { cat "$T/err"; fail "perfrecd did not start"; }
logged 'off-CPU profiling is on' || { cat "$T/err"; fail "off-CPU profiling did not load at start"; }

# 1. A reload that reopens the events: off-CPU profiling goes on.
write_conf 199 yes 0
n=$(nlogged "Configuration reloaded; events reopened")
kill -HUP $DAEMON_PID
wait_logged_again "$n" "Configuration reloaded; events reopened" "the reload that reopens the events did not happen"
# Blocks of the blocker in the new file before it is rotated (a rotation
# right after the reload may end the file before any block does).
blocks=$(awk '/voluntary_ctxt_switches/ && !/non/ {print $2}' /proc/$blk/task/*/status | sort -n | tail -1)
wait_for 30 sleep_until_blocks $((blocks + 20)) || fail "the blocker does not block"
rotate_to 2
f=$(last_file)
logged 'off-CPU profiling is off' && { cat "$T/err"; fail "the reload turned off-CPU profiling off"; }
perf report -i "$f" --header-only 2>/dev/null | grep -q 'sample_freq } = 199' || fail "$f is not of the reloaded events"
k=$(offcpu_of "$f" "$blk")
note "after the reload that reopened the events: $k offcpu-time samples of the blocker in $(basename "$f")"
[ "$k" -gt 0 ] || { cat "$T/err"; fail "no offcpu-time samples after a reload that reopened the events"; }
"$PERFRECCTL" verify "$f" >/dev/null || fail "$f does not verify"

# 2. A reload of offcpu-min= only: applied to the program kept, and logged.
write_conf 199 yes 1h
n=$(nlogged "Configuration reloaded")
kill -HUP $DAEMON_PID
wait_logged_again "$n" "Configuration reloaded" "the offcpu-min= reload did not happen"
logged 'off-CPU profiling now counts blocks of at least 3600000000us' \
	|| { cat "$T/err"; fail "a reload of offcpu-min= only was not applied (nor refused)"; }
rotate_to 3     # blocks that ended before the change
# Some blocker activity under the new filter: its blocks are 20 ms, under 1h.
before=$(awk '/voluntary_ctxt_switches/ && !/non/ {print $2}' /proc/$blk/task/*/status | sort -n | tail -1)
wait_for 30 sleep_until_blocks $((before + 20)) || fail "the blocker does not block"
rotate_to 4
f=$(last_file)
k=$(offcpu_of "$f" "$blk")
note "under offcpu-min=1h: $k offcpu-time samples of the blocker in $(basename "$f")"
[ "$k" = 0 ] || fail "offcpu-min=1h was accepted but the blocker's 20 ms blocks are still counted ($k samples)"
declares_offcpu "$f" || fail "$f no longer declares offcpu-time"

# ... and back: the blocker counts again.
write_conf 199 yes 0
n=$(nlogged "off-CPU profiling now counts")
kill -HUP $DAEMON_PID
wait_logged_again "$n" "off-CPU profiling now counts" "offcpu-min=0 was not applied"
before=$(awk '/voluntary_ctxt_switches/ && !/non/ {print $2}' /proc/$blk/task/*/status | sort -n | tail -1)
wait_for 30 sleep_until_blocks $((before + 20)) || fail "the blocker does not block"
rotate_to 5
f=$(last_file)
k=$(offcpu_of "$f" "$blk")
note "offcpu-min=0 again: $k offcpu-time samples of the blocker"
[ "$k" -gt 0 ] || fail "offcpu-min=0 after 1h: the blocker's blocks are not counted again"

# A cgroup that does not exist: refused, the old filter stays.
write_conf 199 yes 0 /no/such/cgroup-$$
n=$(nlogged "Reload refused")
kill -HUP $DAEMON_PID
wait_logged_again "$n" "Reload refused" "a reload with a missing offcpu-cgroup= was not refused"
grep -q "Reload refused: offcpu-cgroup=/no/such/cgroup" "$T/err" || { cat "$T/err"; fail "the refusal does not name offcpu-cgroup="; }
kill -INT $DAEMON_PID; wait $DAEMON_PID; rc=$?; DAEMON_PID=
[ $rc = 0 ] || { cat "$T/err"; fail "perfrecd exited $rc"; }
grep -E "off-CPU|reloaded|refused" "$T/err" | sed 's/^/# /'

# 3. offcpu= turned on by a reload after the privileges are gone: refused.
rm -rf "$out"
write_conf 99 no 0
"$PERFRECD" -c "$conf" --socket "$S" 2>"$T/err" &
DAEMON_PID=$!
wait_for 30 logged "Recording" || { cat "$T/err"; fail "perfrecd did not start"; }
write_conf 199 yes 0
kill -HUP $DAEMON_PID
wait_for 30 logged "Reload refused\|Configuration reloaded" || { cat "$T/err"; fail "no answer to the reload"; }
grep -q "Reload refused: offcpu=yes cannot take effect in a reload .*restart perfrecd" "$T/err" \
	|| { cat "$T/err"; fail "turning offcpu= on after the privilege drop was not refused with 'restart'"; }
ctl status >"$T/status" || { cat "$T/err"; fail "status does not answer after the refused reload"; }
grep -q 'cpu-clock at 99 Hz' "$T/status" || { cat "$T/status"; fail "the refused reload changed the frequency"; }
rotate_to 1
declares_offcpu "$(last_file)" && fail "a refused offcpu=yes declared offcpu-time"
kill -INT $DAEMON_PID; wait $DAEMON_PID; rc=$?; DAEMON_PID=
kill $blk 2>/dev/null; wait $blk 2>/dev/null
[ $rc = 0 ] || { cat "$T/err"; fail "perfrecd exited $rc"; }
grep -E "off-CPU|reloaded|refused" "$T/err" | sed 's/^/# /'
exit 0
