#!/usr/bin/env bash
# DWARF callchains, raw as perf records them (--call-graph dwarf[,SIZE]):
# each sample carries the user registers and a copy of the user stack, and
# perf report / perf script unwind them with the binaries' CFI.  The
# workload (tests/e2e/nofp.c) has no frame pointers and paths through libc:
#   main -> outer -> sorts -> qsort -> msort_with_tmp -> by_key
#   start_thread -> reader -> read_some -> read -> (kernel)
# At least 95% of the samples in by_key and in read must carry the whole
# path, in a rotated recording, in a live stream, in a snapshot, and in a
# flight-mode snapshot written with -z at the largest stack size (records
# near 64 KiB, across COMPRESSED chunks).  Bad sizes get one clear line.
. "$(dirname "$0")/lib.sh"
require_events; require_perf; require_perfparser
[ -x "$TOP/tests/e2e/nofp" ] || fail "tests/e2e/nofp is not built (make tests/e2e/nofp)"

# Our own copy, told apart from other tests' workloads by its comm.
WL=nofp$$
cp "$TOP/tests/e2e/nofp" "$T/$WL"
S=$T/sock
ctl() { timeout 20 "$PERFRECCTL" --socket "$S" "$@"; }
BG=
trap 'kill $BG 2>/dev/null; cleanup' EXIT

# Bad settings: one line naming the problem.
bad() { # expected-message args...
	local want=$1; shift
	"$PERFRECD" -o "$T/bad" --socket= "$@" --duration 1 >"$T/bad.out" 2>&1 && fail "perfrecd $* was accepted"
	grep -q -e "$want" "$T/bad.out" || { cat "$T/bad.out"; fail "perfrecd $*: no message saying '$want'"; }
}
bad "stack-size: '100' is not a multiple of 8 from 8 to 65528 bytes" --call-graph dwarf,100
bad "stack-size: '65536' is not a multiple of 8 from 8 to 65528 bytes" --call-graph=dwarf,65536
bad "stack-size: '0' is not a multiple of 8" --call-graph dwarf,0
bad "--call-graph dwarfish: unknown mode (fp, or dwarf\[,SIZE\]" --call-graph=dwarfish
bad "--call-graph lbr: not supported" --call-graph lbr
printf '[record]\ncallchain=dwarf\nstack-size=12345\n' > "$T/bad.conf"
"$PERFRECD" -c "$T/bad.conf" --check-config >"$T/bad.out" 2>&1 && fail "stack-size=12345 was accepted"
grep -q "bad.conf:3.*stack-size: '12345' is not a multiple of 8" "$T/bad.out" ||
	{ cat "$T/bad.out"; fail "stack-size=12345 is not refused with file:line"; }
printf '[record]\ncallchain=dwarfish\n' > "$T/bad.conf"
"$PERFRECD" -c "$T/bad.conf" --check-config >"$T/bad.out" 2>&1 && fail "callchain=dwarfish was accepted"
grep -q "bad.conf:2.*callchain: 'dwarfish' is not yes (frame pointers), dwarf or no" "$T/bad.out" ||
	{ cat "$T/bad.out"; fail "callchain=dwarfish is not refused with file:line"; }
"$PERFRECD" --call-graph dwarf,16384 --check-config >"$T/cfg" || fail "--check-config refused --call-graph dwarf,16384"
grep -qx "callchain=dwarf" "$T/cfg" && grep -qx "stack-size=16384" "$T/cfg" ||
	{ cat "$T/cfg"; fail "--check-config does not show callchain=dwarf, stack-size=16384"; }
"$PERFRECD" --call-graph fp --check-config | grep -qx "callchain=yes" || fail "--call-graph fp is not callchain=yes"

# whole_paths FILE: "HOT WHOLE READS WHOLE" over the workload's samples as
# perf script unwinds them: samples whose leaf is by_key, and those of the
# reader thread in read(), each with how many carry the whole path.
whole_paths() {
	local f=$1
	perf script -i "$f" -F comm,ip,sym --comm "$WL" >"$T/script" 2>"$T/script.err" ||
		{ cat "$T/script.err"; fail "perf script failed on $f"; }
	check_perf_stderr "perf script of $f" "$T/script.err"
	awk 'BEGIN { RS = "" }
	     { n = split($0, l, "\n"); leaf = ""; for (i = 2; i <= n && leaf == ""; i++) if (l[i] !~ /^[ \t]*ffffffff/) leaf = l[i] }
	     leaf ~ / by_key$/ { hot++; if (/msort_with_tmp/ && /qsort/ && / sorts\n/ && / outer\n/ && / main\n/) hw++ }
	     leaf ~ /libc_read/ { rd++; if (/ read_some\n/ && / reader\n/ && /start_thread/) rw++ }
	     END { printf "%d %d %d %d\n", hot, hw, rd, rw }' "$T/script"
}
# check_paths FILE WHAT: at least 95% of both kinds of samples are whole.
check_paths() {
	local f=$1 what=$2 hot hw rd rw
	read -r hot hw rd rw < <(whole_paths "$f")
	note "$what: $hw of $hot by_key samples and $rw of $rd read samples have the whole path"
	[ "$hot" -ge 20 ] || fail "$what: only $hot samples in by_key"
	[ "$rd" -ge 5 ] || fail "$what: only $rd samples in read"
	[ $((hw * 100)) -ge $((hot * 95)) ] || { grep -m1 -B2 -A20 by_key "$T/script"; fail "$what: only $hw of $hot by_key samples have the whole path"; }
	[ $((rw * 100)) -ge $((rd * 95)) ] || { grep -m1 -B8 -A10 libc_read "$T/script"; fail "$what: only $rw of $rd read samples have the whole path"; }
}
check_file() { # FILE WHAT: our verifier, perf report with a clean stderr
	"$PERFRECCTL" verify "$1" >/dev/null || fail "perfrecctl verify rejected the $2"
	perf report -i "$1" --stdio --no-children -g none --sort sym >/dev/null 2>"$T/report.err"
	check_perf_stderr "perf report of the $2" "$T/report.err"
}

note "continuous, rotated, with a live stream and a snapshot"
mkdir -p "$T/out"
# The workload starts first: perf 6.1's libunwind loses the callers in libc
# of a process that exec'd during a system-wide recording (perf record -a
# --call-graph dwarf itself shows the same), not of one already running.
"$T/$WL" 10 >/dev/null &
BG=$!
# 8 KiB per sample: a ring for a second of it, as perf users give -m with
# dwarf, so that the drain's pause while it writes the snapshot loses nothing.
"$PERFRECD" -o "$T/out" --socket "$S" -e cpu-clock -F 499 --call-graph dwarf --unwind file --rotate-size 4M -m 8M \
	--history 20s 2>"$T/log" &
DAEMON_PID=$!
wait_for 30 ctl ping >/dev/null 2>&1 || { cat "$T/log"; fail "no control socket"; }
timeout --preserve-status -s INT 3 "$PERFRECCTL" --socket "$S" stream >"$T/live.data" 2>"$T/stream.err"
ctl snapshot "$T/snap.data" >/dev/null || fail "snapshot failed"
wait $BG
BG=
kill -TERM $DAEMON_PID
wait $DAEMON_PID || { cat "$T/log"; fail "perfrecd exited non-zero"; }
DAEMON_PID=

nfiles=$(ls "$T"/out/*.data | wc -l)
[ "$nfiles" -ge 2 ] || fail "rotation by size wrote $nfiles file(s), not several"
perf evlist -v -i "$(ls "$T"/out/*.data | head -1)" >"$T/evlist" 2>&1
for want in 'REGS_USER|STACK_USER' 'sample_regs_user: 0xff0fff' 'sample_stack_user: 8192' \
	'exclude_callchain_user: 1'; do
	grep -q "cpu-clock.*$want" "$T/evlist" || { cat "$T/evlist"; fail "perf evlist -v does not show '$want'"; }
done
# perf's unwinder reads .eh_frame_hdr through the maps of data segments.
grep -q "dummy:HG.*mmap_data: 1" "$T/evlist" || { cat "$T/evlist"; fail "the side-band event has no mmap_data"; }
for f in "$T"/out/*.data; do check_file "$f" "rotated file $(basename "$f")"; done
# The files in a row, as one recording: perf script reads them one by one.
hot=0; hw=0; rd=0; rw=0
for f in "$T"/out/*.data; do
	read -r a b c d < <(whole_paths "$f")
	hot=$((hot + a)); hw=$((hw + b)); rd=$((rd + c)); rw=$((rw + d))
done
note "rotated files: $hw of $hot by_key samples and $rw of $rd read samples have the whole path"
[ "$hot" -ge 20 ] && [ $((hw * 100)) -ge $((hot * 95)) ] || fail "rotated files: $hw of $hot by_key samples whole"
[ "$rd" -ge 5 ] && [ $((rw * 100)) -ge $((rd * 95)) ] || fail "rotated files: $rw of $rd read samples whole"
n=$(check_perfparser "$(ls "$T"/out/*.data | head -1)") || { echo "$n"; exit 1; }
note "perfparser: $n samples in the first file"

"$PERFRECCTL" verify "$T/live.data" >/dev/null || fail "perfrecctl verify rejects the live stream"
check_paths "$T/live.data" "live stream"
check_file "$T/snap.data" "snapshot"
check_paths "$T/snap.data" "snapshot"

note "flight mode, -z, the largest stack"
mkdir -p "$T/fl"
"$T/$WL" 20 >/dev/null &
BG=$!
"$PERFRECD" -o "$T/fl" --socket= --mode flight --history 20s -z -e cpu-clock -F 499 -m 32M \
	--call-graph dwarf,65528 --unwind file 2>"$T/fl.log" &
DAEMON_PID=$!
wait_for 30 grep -q "Recording" "$T/fl.log" || { cat "$T/fl.log"; fail "flight recorder did not start"; }
# CPU seconds the workload has run (both threads), from /proc/PID/stat.
cpu_secs() { awk -v hz="$(getconf CLK_TCK)" '{ print int(($14 + $15) / hz) }' "/proc/$BG/stat"; }
t0=$(cpu_secs)
# The snapshot is taken while the workload runs: a snapshot synthesizes
# the maps of the processes alive then (snapshot.c), and this one started
# before the recorder, so the history holds no MMAP2 of its own for it.
ran_3s() { [ $(($(cpu_secs) - t0)) -ge 3 ]; }
wait_for 60 ran_3s ||
	fail "the workload did not run 3 CPU seconds"
kill -USR2 $DAEMON_PID
wait_for 30 sh -c "ls '$T'/fl/*.data >/dev/null 2>&1" || { cat "$T/fl.log"; fail "no flight snapshot"; }
kill -TERM $DAEMON_PID
wait $DAEMON_PID
DAEMON_PID=
kill $BG
wait $BG
BG=
f=$(only_file "$T/fl") || exit 1
"$PERFRECCTL" dump "$f" >"$T/dump" || fail "perfrecctl dump failed on the flight snapshot"
grep -q COMPRESSED "$T/dump" || { cat "$T/dump"; fail "the -z snapshot has no COMPRESSED records"; }
perf evlist -v -i "$f" 2>&1 | grep -q "sample_stack_user: 65528" || fail "stack-size 65528 is not in the attr"
check_file "$f" "flight snapshot"
check_paths "$f" "flight snapshot (-z, 65528)"

note "recovery of a DWARF recording killed with SIGKILL (-z)"
mkdir -p "$T/rc"
"$T/$WL" 30 >/dev/null &
BG=$!
"$PERFRECD" -o "$T/rc" --socket= -z -e cpu-clock -F 499 -m 8M --call-graph dwarf --unwind file 2>"$T/rc.log" &
DAEMON_PID=$!
# Enough samples on disk for the path counts: the workload ran 4 CPU
# seconds under recording, and the .tmp has grown past its first flushes.
wait_for 30 grep -q "Recording" "$T/rc.log" || { cat "$T/rc.log"; fail "the recorder did not start"; }
t0=$(cpu_secs)
ran_4s() { [ $(($(cpu_secs) - t0)) -ge 4 ]; }
wait_for 60 ran_4s || fail "the workload did not run 4 CPU seconds"
grown() { [ "$(stat -c %s "$(ls "$T"/rc/*.tmp | head -1)")" -ge $((1 << 20)) ]; }
wait_for 30 grown || { ls -la "$T/rc"; fail "the DWARF recording wrote less than 1 MiB"; }
kill -9 $DAEMON_PID
wait $DAEMON_PID 2>/dev/null
DAEMON_PID=
kill $BG; wait $BG; BG=
"$PERFRECCTL" recover "$(ls "$T"/rc/*.tmp)" -o "$T/recovered.data" >/dev/null 2>&1 ||
	fail "perfrecctl recover failed on a DWARF .tmp"
check_file "$T/recovered.data" "recovered file"
check_paths "$T/recovered.data" "recovered file"
exit 0
