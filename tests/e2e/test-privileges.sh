#!/usr/bin/env bash
# Least privilege: started as root with a user configured, perfrecd keeps
# only the capabilities rotation needs, runs as that user, writes files
# 0640 owned by user and group, and still resolves other users' processes
# after a rotation.
. "$(dirname "$0")/lib.sh"
require_events; require_perf
command -v useradd >/dev/null || skip "useradd is not available"

u=perfrec-t$$
useradd --system --no-create-home --shell /usr/sbin/nologin --user-group "$u" || skip "cannot create a test user"
trap 'userdel "$u" 2>/dev/null; groupdel "$u" 2>/dev/null; cleanup' EXIT
uid=$(id -u "$u"); gid=$(id -g "$u")
printf '[service]\nuser=%s\ngroup=%s\n[output]\ndirectory=%s\n' "$u" "$u" "$T/out" >"$T/conf"

"$WORKLOAD" 20 >/dev/null &
wl=$!
"$PERFRECD" -c "$T/conf" -F 499 -g 2>"$T/err" &
DAEMON_PID=$!
started() { grep -q "Recording" "$T/err"; }
wait_for 30 started || { cat "$T/err"; fail "perfrecd did not start recording"; }
st=/proc/$DAEMON_PID/status
grep -E '^(Uid|Gid|Cap)' "$st"
read -r _ ruid euid suid fsuid < <(grep '^Uid:' "$st")
[ "$ruid $euid $suid $fsuid" = "$uid $uid $uid $uid" ] || fail "not running as $u ($uid): $ruid $euid $suid $fsuid"
read -r _ rgid egid _ _ < <(grep '^Gid:' "$st")
[ "$rgid $egid" = "$gid $gid" ] || fail "not running with group $gid"
# CAP_DAC_READ_SEARCH(2) CAP_IPC_LOCK(14) CAP_SYS_PTRACE(19) CAP_SYSLOG(34) CAP_PERFMON(38)
want=$(printf '%016x' $(( (1<<2) | (1<<14) | (1<<19) | (1<<34) | (1<<38) )))
for f in CapPrm CapEff CapBnd; do
	v=$(awk -v f="$f:" '$1 == f {print $2}' "$st")
	[ "$v" = "$want" ] || fail "$f is $v, expected $want"
done
for f in CapInh CapAmb; do
	v=$(awk -v f="$f:" '$1 == f {print $2}' "$st")
	[ "$v" = 0000000000000000 ] || fail "$f is $v, expected none"
done

# Recording goes on across a rotation, with the reduced privileges.
sleep 1.5   # some recording in the first file
kill -USR2 $DAEMON_PID
published() { [ -n "$(ls "$T/out"/*.data.json 2>/dev/null)" ]; }
wait_for 30 published || { ls -la "$T/out"; cat "$T/err"; fail "no file published within 30 s of SIGUSR2"; }
sleep 1.5   # some recording in the second file
kill -INT $DAEMON_PID; wait $DAEMON_PID; rc=$?; DAEMON_PID=
kill $wl 2>/dev/null
[ $rc = 0 ] || { cat "$T/err"; fail "perfrecd exited $rc"; }
n=$(ls "$T/out"/*.data | wc -l)
[ "$n" = 2 ] || { ls -la "$T/out"; fail "expected 2 files, found $n"; }
for f in "$T/out"/*.data; do
	[ "$(stat -c '%a %U %G' "$f")" = "640 $u $u" ] || fail "$f is $(stat -c '%a %U %G' "$f"), expected 640 $u $u"
	"$PERFRECCTL" verify "$f" >/dev/null || fail "$f does not verify"
done
second=$(ls "$T/out"/*.data | tail -1)
# perf refuses files of another user unless -f.
perf report -f -i "$second" --stdio --no-children -g none --sort sym 2>/dev/null | grep -v '^#' | head -3 | grep -q hot_function \
	|| fail "the file written after dropping privileges does not resolve the root-owned workload"
perf report -f -i "$second" --stdio --no-children -g none --sort dso 2>/dev/null | grep -q 'kernel.kallsyms' \
	|| fail "kernel samples do not resolve after dropping privileges"
exit 0
