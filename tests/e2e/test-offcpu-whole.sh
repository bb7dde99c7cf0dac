#!/usr/bin/env bash
# Off-CPU samples get whole user stacks with DWARF stacks unwound on the
# host (issue 25).  tests/e2e/offdeep, built without frame pointers, blocks
# in libc's read() of a pipe three calls below main:
#   main -> level1 -> level2 -> level3 -> read -> (kernel)
# A frame-pointer walk from read() finds no caller.  Recorded with
# --offcpu --call-graph dwarf --unwind host, the offcpu-time samples of
# that thread must show the whole path, read / level3 / level2 / level1 /
# main in that order, to perf script, to hotspot's perfparser and in
# perfrecctl folded; the samples must sum to within 10% of the time the
# thread measured itself in read(), and most of it must be in those (blocks
# are sampled for copies, up to 256 per second per CPU: the thread's 20
# are all taken on a quiet machine, but other jobs on the host compete).
# The copies are unwound while the thread is blocked, so a process that
# exits before the file ends keeps its whole stacks too (a second run that
# exits is checked with perf; perfparser shows no sample of a process that
# had exited by the time of the sample, which for off-CPU samples is the
# file's end, so the first run stays until the recording is over).  Bad
# input: a thread blocked with its stack pointer on an unmapped page
# (offdeep badsp) cannot be copied: no crash, its blocks are there with the
# frame-pointer stack.
. "$(dirname "$0")/lib.sh"
require_events; require_perf; require_perfparser
command -v python3 >/dev/null || skip "python3 is not installed"
[ -x "$TOP/tests/e2e/offdeep" ] || fail "tests/e2e/offdeep is not built (make tests/e2e/offdeep)"
require_offcpu

# Names of their own, so other jobs' processes are not counted.
WL=offdeep$$
EXITS=offexit$$
BAD=offbad$$
for w in "$WL" "$EXITS" "$BAD"; do cp "$TOP/tests/e2e/offdeep" "$T/$w"; done
mkfifo "$T/hold"
HELD=
trap '[ -n "$HELD" ] && kill "$HELD" 2>/dev/null; cleanup' EXIT
out=$T/out
mkdir "$out"
printf '[record]\noffcpu-min=1ms\n' >"$T/conf"
: >"$T/daemon.err"
"$PERFRECD" -c "$T/conf" --socket '' -o "$out" -e cpu-clock -F 99 --call-graph dwarf --unwind host \
	--offcpu -v 2>"$T/daemon.err" &
DAEMON_PID=$!
wait_for 30 grep -q '^perfrecd: Recording' "$T/daemon.err" || { cat "$T/daemon.err"; fail "perfrecd did not start"; }
grep -q 'off-CPU profiling is on (.*sampled blocks with whole user stacks' "$T/daemon.err" \
	|| { cat "$T/daemon.err"; fail "perfrecd did not turn whole off-CPU stacks on although root, BTF and BPF are there"; }
"$T/$WL" hold 20 50 >"$T/wl.out" <"$T/hold" &
HELD=$!
exec 3>"$T/hold"
"$T/$EXITS" 20 50 >"$T/exits.out" || fail "offdeep failed"
"$T/$BAD" badsp 10 50 >"$T/bad.out" || fail "offdeep badsp failed"
wait_for 30 grep -q '^tid=' "$T/wl.out" || fail "offdeep hold did not finish its reads"
kill -TERM "$DAEMON_PID"; wait "$DAEMON_PID"; rc=$?; DAEMON_PID=
exec 3>&-
wait "$HELD" || fail "offdeep hold failed"
HELD=
[ $rc = 0 ] || { cat "$T/daemon.err"; fail "perfrecd exited $rc"; }
grep 'Off-CPU' "$T/daemon.err"
f=$(only_file "$out") || exit 1
tid=$(sed -n 's/^tid=\([0-9]*\) .*/\1/p' "$T/wl.out")
xtid=$(sed -n 's/^tid=\([0-9]*\) .*/\1/p' "$T/exits.out")
badtid=$(sed -n 's/^tid=\([0-9]*\) .*/\1/p' "$T/bad.out")
if [ -z "$tid" ] || [ -z "$xtid" ] || [ -z "$badtid" ]; then cat "$T"/*.out; fail "offdeep printed no tid"; fi
"$PERFRECCTL" verify "$f" >/dev/null || fail "perfrecctl verify rejected the file"

# perf script: per offcpu-time sample of the thread, its period and
# whether its user frames after read are level3, level2, level1, main.
perf script -i "$f" -F tid,event,period,ip,sym --tid "$tid,$xtid,$badtid" >"$T/script" 2>"$T/script.err" \
	|| { cat "$T/script.err"; fail "perf script failed"; }
check_perf_stderr "perf script" "$T/script.err"
# TID TOTAL WHOLE PARTIAL: blocked ns in read, of it with the whole path,
# and samples through level3 without it (a path unwound wrong).
paths() {
	awk -v want="$1" 'BEGIN { RS = "" }
	     $1 == want && $3 == "offcpu-time:" {
		n = split($0, l, "\n"); user = ""
		for (i = 2; i <= n; i++) { if (l[i] ~ /^[ \t]*ffffffff/) continue
			s = l[i]; sub(/^[ \t]*[0-9a-f]+ /, "", s); user = user "/" s }
		if (user !~ /^\/(__libc_)?read$|^\/(__libc_)?read\//) next
		total += $2
		if (user ~ /^\/(__libc_)?read\/level3\/level2\/level1\/main(\/|$)/) whole += $2
		else if (user ~ /level3/) partial++
	     }
	     END { printf "%d %d %d\n", total, whole, partial }' "$T/script"
}
# within10 GOT TRUTH: GOT is within 10% of TRUTH
within10() { awk -v s="$1" -v t="$2" 'BEGIN { d = s - t; if (d < 0) d = -d; exit !(t > 0 && d <= t / 10) }'; }
truth() { sed -n 's/^tid=.* blocked_ns=\([0-9]*\)$/\1/p' "$1"; }
for t in "$tid:$T/wl.out" "$xtid:$T/exits.out"; do
	measured=$(truth "${t#*:}"); t=${t%%:*}
	read -r total whole partial < <(paths "$t")
	note "thread $t: $total ns blocked in read (it measured $measured ns), $whole ns of it with read/level3/level2/level1/main"
	within10 "$total" "$measured" || fail "thread $t: $total ns off-CPU in read is not within 10% of the measured $measured ns"
	[ "$total" -gt 0 ] || { head -40 "$T/script"; fail "perf script shows no offcpu-time sample of thread $t in read"; }
	[ "$whole" -gt 0 ] || { grep -A14 "^ *$t .*offcpu-time" "$T/script" | head -30; fail "no off-CPU sample of thread $t has the whole path read / level3 / level2 / level1 / main"; }
	[ "$partial" = 0 ] || fail "$partial off-CPU samples of thread $t reach level3 without the whole path to main"
	[ $((whole * 2)) -ge "$total" ] || fail "only $whole of $total ns off-CPU of thread $t have the whole path"
done

# The thread that could not be copied: its blocks kept, frame-pointer stack.
badsum=$(awk -v want="$badtid" 'BEGIN { RS = "" } $1 == want && $3 == "offcpu-time:" { s += $2 } END { printf "%d", s }' "$T/script")
measured=$(truth "$T/bad.out")
note "thread $badtid (stack unreadable): $badsum ns off-CPU (it measured $measured ns)"
within10 "$badsum" "$measured" || fail "thread $badtid with an unreadable stack: $badsum ns off-CPU is not within 10% of the measured $measured ns"
kept=$(sed -n 's/.* \([0-9]*\) kept their frame-pointer stack.*/\1/p' "$T/daemon.err" | head -1)
[ "${kept:-0}" -gt 0 ] || fail "perfrecd did not count the copies that did not unwind (the unreadable stack's)"

# hotspot: perfparser's stream names the path in the workload's samples.
n=$(check_perfparser "$f") || { echo "$n"; exit 1; }
timeout 120 "$PERFPARSER" --input "$f" --output "$T/pp.out" 2>"$T/pp.err"; rc=$?
[ $rc = 0 ] || { cat "$T/pp.err"; fail "perfparser --output exited $rc"; }
out=$(python3 "$TOP/tests/e2e/ppsymbols.py" "$T/pp.out" "$WL" level3 level2 level1 main) ||
	fail "cannot read perfparser's output stream"
read -r samples named whole_pp <<<"$out"
note "perfparser: $samples samples of $WL, $named through level3, $whole_pp with level2, level1 and main"
[ "$named" -gt 0 ] || fail "perfparser shows no sample of $WL through level3"
[ "$whole_pp" = "$named" ] || fail "perfparser: $((named - whole_pp)) samples through level3 lack the whole path"

# perfrecctl folded: root first, the whole path above read.
"$PERFRECCTL" folded -e offcpu-time --pid "$tid" -o "$T/folded" "$f" || fail "perfrecctl folded failed"
grep -Eq '(^|;)main;level1;level2;level3;(__libc_)?read;' "$T/folded" \
	|| { cat "$T/folded"; fail "perfrecctl folded has no main;level1;level2;level3;read stack"; }
exit 0
