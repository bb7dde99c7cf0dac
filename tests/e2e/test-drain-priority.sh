#!/usr/bin/env bash
# drain-priority=: the draining thread runs SCHED_FIFO at that priority, with
# the normal scheduler given back to what it starts (an on-rotate hook here);
# without CAP_SYS_NICE perfrecd says so and records at normal priority; an
# out-of-range value is refused by name.  Whether the drain then keeps up
# with small rings on a saturated host is measured by make bench, not here.
. "$(dirname "$0")/lib.sh"
require_events
require_perf
command -v chrt >/dev/null || skip "chrt (util-linux) is not installed"
command -v setpriv >/dev/null || skip "setpriv (util-linux) is not installed"

# field 41 of /proc/PID/stat: the scheduling policy (1: SCHED_FIFO), 40: rt priority
policy() { awk '{ print $41 }' "/proc/$1/stat"; }
rtprio() { awk '{ print $40 }' "/proc/$1/stat"; }

cat >"$T/hook" <<HOOK
#!/bin/sh
chrt -p \$\$ >"$T/hook.sched" 2>&1
HOOK
chmod +x "$T/hook"
mkdir -p "$T/out"
printf '[record]\ndrain-priority=3\n[output]\ndirectory=%s\non-rotate=%s\n' "$T/out" "$T/hook" >"$T/conf"
"$PERFRECD" -c "$T/conf" -F 499 -g --socket '' 2>"$T/err" &
DAEMON_PID=$!
for _ in $(seq 50); do grep -q '^perfrecd: Recording' "$T/err" && break; sleep 0.1; done
grep -q 'Draining at SCHED_FIFO priority 3' "$T/err" || { cat "$T/err"; fail "no SCHED_FIFO notice"; }
[ "$(policy $DAEMON_PID)" = 1 ] || fail "policy $(policy $DAEMON_PID), not SCHED_FIFO (1)"
[ "$(rtprio $DAEMON_PID)" = 3 ] || fail "real-time priority $(rtprio $DAEMON_PID), not 3"
chrt -p $DAEMON_PID | grep -q 'SCHED_RESET_ON_FORK' || { chrt -p $DAEMON_PID; fail "no SCHED_RESET_ON_FORK"; }
kill -USR2 $DAEMON_PID
for _ in $(seq 100); do [ -s "$T/hook.sched" ] && break; sleep 0.1; done
note "hook: $(head -1 "$T/hook.sched")"
grep -q 'SCHED_OTHER' "$T/hook.sched" || { cat "$T/hook.sched"; fail "the on-rotate hook inherited the real-time policy"; }
kill -INT $DAEMON_PID; wait $DAEMON_PID || { cat "$T/err"; fail "perfrecd failed"; }; DAEMON_PID=
for f in "$T/out"/*.data; do
	[ "$(perf_samples "$f")" -gt 0 ] || fail "no samples in $f"
done

# Without CAP_SYS_NICE: a warning naming the key, and recording goes on.
mkdir -p "$T/out2"
printf '[record]\ndrain-priority=3\n[output]\ndirectory=%s\n' "$T/out2" >"$T/conf2"
setpriv --bounding-set=-sys_nice "$PERFRECD" -c "$T/conf2" -F 499 -g --socket '' -d 1 2>"$T/err2" ||
	{ cat "$T/err2"; fail "perfrecd without CAP_SYS_NICE failed"; }
grep -q 'Cannot drain at real-time priority 3 (drain-priority=)' "$T/err2" || { cat "$T/err2"; fail "no warning without CAP_SYS_NICE"; }
f=$(only_file "$T/out2")
[ "$(perf_samples "$f")" -gt 0 ] || fail "no samples recorded without CAP_SYS_NICE"

# Out of range: refused, by name.
printf '[record]\ndrain-priority=100\n' >"$T/conf3"
"$PERFRECD" -c "$T/conf3" --check-config >"$T/out3" 2>&1 && fail "drain-priority=100 accepted"
grep -q "drain-priority: '100' is not a real-time priority from 1 to 99" "$T/out3" || { cat "$T/out3"; fail "unclear error"; }
exit 0
