#!/usr/bin/env bash
# DWARF stacks unwound on the host while recording (--call-graph dwarf
# --unwind host): the files carry plain callchains (kernel frames,
# PERF_CONTEXT_USER, the unwound user frames), no user registers or stack.
# The workload (tests/e2e/nofp.c) has no frame pointers and paths through
# libc:
#   main -> outer -> sorts -> qsort -> msort_with_tmp -> by_key
#   start_thread -> reader -> read_some -> read -> (kernel)
# Rotated files, each standalone, pass perfrecctl verify, perf report /
# script with a clean stderr and perfparser, and at least 95% of the
# samples in by_key and in read carry the whole path; the bytes per sample
# stay within 2x of a -g recording of the same workload; -z, a reload
# into it work with it.  The unwinding stage sits in front of every
# output: a live stream, a snapshot of the history and a flight snapshot
# carry the unwound callchains too, not raw stacks, and pass perfrecctl
# verify, perf and perfparser.  A bad unwind= gets one clear line;
# unwind= with -g has nothing to unwind and is ignored, not refused (so
# that -g works whatever unwind= the config holds), and named as ignored
# when set away from its default.
. "$(dirname "$0")/lib.sh"
require_events; require_perf; require_perfparser
[ -x "$TOP/tests/e2e/nofp" ] || fail "tests/e2e/nofp is not built (make tests/e2e/nofp)"

WL=nofph$$
cp "$TOP/tests/e2e/nofp" "$T/$WL"
S=$T/sock
ctl() { timeout 20 "$PERFRECCTL" --socket "$S" "$@"; }
BG=
trap 'kill $BG 2>/dev/null; cleanup' EXIT

bad() { # expected-message args...
	local want=$1; shift
	"$PERFRECD" -o "$T/bad" --socket= "$@" --duration 1 >"$T/bad.out" 2>&1 && fail "perfrecd $* was accepted"
	grep -q -e "$want" "$T/bad.out" || { cat "$T/bad.out"; fail "perfrecd $*: no message saying '$want'"; }
}
mkdir -p "$T/bad"
bad "unwind: 'remote' is not file or host" --call-graph dwarf --unwind remote
"$PERFRECD" --call-graph dwarf --unwind host --check-config >"$T/cfg" || fail "--check-config refused --unwind host"
grep -qx "unwind=host" "$T/cfg" || { cat "$T/cfg"; fail "--check-config does not show unwind=host"; }
"$PERFRECD" --check-config >"$T/cfg" || fail "--check-config failed"
grep -qx "unwind=host" "$T/cfg" && grep -qx "callchain=dwarf" "$T/cfg" ||
	{ cat "$T/cfg"; fail "callchain=dwarf with unwind=host is not the default"; }

# whole_paths FILE: "HOT WHOLE READS WHOLE" over the workload's samples:
# samples whose leaf is by_key, and those of the reader thread in read(),
# each with how many carry the whole path.
whole_paths() {
	local f=$1
	perf script -i "$f" -F comm,ip,sym --comm "$WL" >"$T/script" 2>"$T/script.err" ||
		{ cat "$T/script.err"; fail "perf script failed on $f"; }
	check_perf_stderr "perf script of $f" "$T/script.err"
	awk 'BEGIN { RS = "" }
	     { n = split($0, l, "\n"); leaf = ""; for (i = 2; i <= n && leaf == ""; i++) if (l[i] !~ /^[ \t]*ffffffff/) leaf = l[i] }
	     leaf ~ / by_key$/ { hot++; if (/msort_with_tmp/ && /qsort/ && / sorts\n/ && / outer\n/ && / main\n/) hw++ }
	     leaf ~ /libc_read| read$/ { rd++; if (/ read_some\n/ && / reader\n/ && /start_thread/) rw++ }
	     END { printf "%d %d %d %d\n", hot, hw, rd, rw }' "$T/script"
}
whole_enough() { # WHAT HOT WHOLE READS WHOLE
	local what=$1 hot=$2 hw=$3 rd=$4 rw=$5
	note "$what: $hw of $hot by_key samples and $rw of $rd read samples have the whole path"
	[ "$hot" -ge 20 ] || fail "$what: only $hot samples in by_key"
	[ "$rd" -ge 5 ] || fail "$what: only $rd samples in read"
	[ $((hw * 100)) -ge $((hot * 95)) ] || { grep -m1 -B2 -A20 by_key "$T/script"; fail "$what: only $hw of $hot by_key samples have the whole path"; }
	[ $((rw * 100)) -ge $((rd * 95)) ] || { grep -m1 -B8 -A10 _read "$T/script"; fail "$what: only $rw of $rd read samples have the whole path"; }
}
check_paths() { # FILE WHAT
	local hot hw rd rw
	read -r hot hw rd rw < <(whole_paths "$1")
	whole_enough "$2" "$hot" "$hw" "$rd" "$rw"
}
check_file() { # FILE WHAT: our verifier, perf report with a clean stderr
	"$PERFRECCTL" verify "$1" >/dev/null || fail "perfrecctl verify rejected the $2"
	perf report -i "$1" --stdio --no-children -g none --sort sym >/dev/null 2>"$T/report.err"
	check_perf_stderr "perf report of the $2" "$T/report.err"
}
check_unwound() { # FILE WHAT: callchains, no user registers or stack in the attrs
	perf evlist -v -i "$1" >"$T/evlist" 2>&1
	grep -q "STACK_USER\|REGS_USER\|sample_stack_user\|sample_regs_user" "$T/evlist" &&
		{ cat "$T/evlist"; fail "the $2 still asks for user registers or stacks"; }
	grep -q "cpu-clock.*CALLCHAIN" "$T/evlist" || { cat "$T/evlist"; fail "the $2 has no callchains"; }
}

# -g with either unwind=: frame-pointer files (nothing to unwind), and one
# line naming unwind= as ignored when it is not the default.
def=$("$PERFRECD" --check-config | sed -n 's/^unwind=//p')
other=file; [ "$def" = file ] && other=host
for u in "$def" "$other"; do
	mkdir -p "$T/g-$u"
	"$PERFRECD" -o "$T/g-$u" --socket= -e cpu-clock -F 499 -g --unwind "$u" --duration 1 >"$T/g-$u.log" 2>&1 ||
		{ cat "$T/g-$u.log"; fail "perfrecd -g --unwind $u was refused"; }
	f=$(only_file "$T/g-$u") || exit 1
	check_unwound "$f" "-g --unwind $u file"
	check_file "$f" "-g --unwind $u file"
done
grep -q "unwind=$other is ignored: it applies to the user stacks of callchain=dwarf" "$T/g-$other.log" ||
	{ cat "$T/g-$other.log"; fail "-g --unwind $other (not the default) does not say unwind= is ignored"; }
grep "is ignored" "$T/g-$def.log" && fail "-g --unwind $def (the default) logs a line for nothing"

# The workload runs before the recordings start (perf 6.1 loses the libc
# callers of a process exec'd during a system-wide recording; the raw
# stream and snapshot below are unwound by perf).  It runs until the test
# ends (the trap), however long a loaded machine makes the steps.
"$T/$WL" 3600 >/dev/null &
BG=$!

note "3 s each: -g and host unwinding together, then host unwinding with -z"
record() { # DIR ARGS...: a 3 s recording into DIR, its file on stdout
	local d=$1; shift
	mkdir -p "$d"
	"$PERFRECD" -o "$d" --socket= -e cpu-clock -F 499 -m 8M --duration 3 "$@" 2>"$d.log" ||
		{ cat "$d.log"; fail "perfrecd $* failed"; }
	only_file "$d"
}
# -g and host unwinding side by side, over the same 3 s: the side-band
# records of the rest of the host (other jobs' processes) are the same in
# both, so the bytes per sample compare the samples.
record "$T/fp" -g >"$T/fp.name" &
fpjob=$!
host=$(record "$T/host" --call-graph dwarf --unwind host) || exit 1
wait $fpjob || exit 1
fp=$(cat "$T/fp.name")
hz=$(record "$T/hz" --call-graph dwarf --unwind host -z) || exit 1

check_unwound "$host" "host-unwound file"
check_file "$host" "host-unwound file"
check_paths "$host" "host-unwound file"
n=$(check_perfparser "$host") || { echo "$n"; exit 1; }
note "perfparser: $n samples"
# The manifest says how the stacks were unwound, and how many were.
python3 - "$host.json" <<'EOF' || fail "the manifest does not report host unwinding"
import json, sys
m = json.load(open(sys.argv[1]))
u = m.get("unwind") or {}
print("# manifest:", u)
sys.exit(0 if u.get("mode") == "host" and u.get("samples", 0) > 0 and
         u["samples"] <= m["samples"] and u.get("unwound", 0) > 0 else 1)
EOF
# The workload's two threads run all along: once a walk of each has reached
# its outermost frame, their samples are queued only up to there (the
# whole-path check above is made on them too), and no walk of this program
# wants a word above that top.
python3 - "$host.json" <<'EOF' || fail "the workload's stacks were not trimmed at their tops, or found short"
import json, sys
u = json.load(open(sys.argv[1]))["unwind"]
print("# %d samples queued up to their thread's stack top, %d walks found such a copy short" %
      (u["stacks_trimmed"], u["stack_trim_missed"]))
sys.exit(0 if u["stacks_trimmed"] > 0 and u["stack_trim_missed"] == 0 else 1)
EOF

hs=$(perf_samples "$host"); fs=$(perf_samples "$fp")
hb=$(stat -c %s "$host"); fb=$(stat -c %s "$fp")
note "bytes per sample: host-unwound $((hb / hs)), -g $((fb / fs))"
# Raw stacks would be some 8.3 KiB a sample: unwound, a sample takes its
# callchain.  This workload has no frame pointers, so -g finds one or two
# frames where the whole chain has ten, and the ratio rides on the share
# of idle samples (short in both files), which this VM takes on CPU 0 only:
# 1.26x to 1.51x in runs of this test.  Issue 25's 1.5x is a bound on real
# programs, measured by tests/bench/unwind25.sh (1.29x); here, 2x.
[ $((hb / hs)) -lt 1024 ] && [ $((hb * fs)) -le $((fb * hs * 2)) ] ||
	fail "the host-unwound file takes $((hb / hs)) bytes per sample, more than 2x -g's $((fb / fs))"
# Its bytes of records (log, status, metrics) are those written, unwound,
# not the raw stacks the drain handed to the worker (40 times more).
rb=$(sed -n 's/.*Wrote .*: [0-9]* samples, [0-9]* lost, \([0-9]*\) bytes of records.*/\1/p' "$T/host.log")
note "perfrecd: $rb bytes of records in the $hb-byte host-unwound file"
[ -n "$rb" ] && [ "$rb" -gt 0 ] && [ "$rb" -le "$hb" ] ||
	{ cat "$T/host.log"; fail "perfrecd counts ${rb:-no} bytes of records for a host-unwound file of $hb bytes"; }

"$PERFRECCTL" dump "$hz" >"$T/dump" || fail "perfrecctl dump failed on the -z file"
grep -q COMPRESSED "$T/dump" || { cat "$T/dump"; fail "the -z file has no COMPRESSED records"; }
check_unwound "$hz" "-z host-unwound file"
check_file "$hz" "-z host-unwound file"
check_paths "$hz" "-z host-unwound file"

note "rotated, with a live stream and a snapshot"
mkdir -p "$T/out"
# Writing the snapshot pauses the drain, while the unwinding worker shares
# the 2 CPUs: rings of a few seconds, so that the kernel loses nothing
# meanwhile (perf report warns).  No --call-graph or --unwind: the files,
# the stream and the snapshot are those of the default (issue 25), which
# test-defaults checks is callchain=dwarf with unwind=host.
"$PERFRECD" -o "$T/out" --socket "$S" -e cpu-clock -F 499 --rotate-size 512K \
	-m 32M --history 20s 2>"$T/log" &
DAEMON_PID=$!
wait_for 30 ctl ping >/dev/null 2>&1 || { cat "$T/log"; fail "no control socket"; }
timeout --preserve-status -s INT 3 "$PERFRECCTL" --socket "$S" stream >"$T/live.data" 2>"$T/stream.err"
ctl snapshot "$T/snap.data" >/dev/null || fail "snapshot failed"
ctl --json status >"$T/status" || fail "status failed"
python3 - "$T/status" <<'EOF' || { cat "$T/status"; fail "status does not report the unwinder"; }
import json, sys
u = json.load(open(sys.argv[1])).get("unwind") or {}
print("# status:", u)
# Unwound by the tables or by libdwfl (its ELF files): with every table
# built in time libdwfl has nothing to do, so either counts.
sys.exit(0 if u.get("samples", 0) > 0 and "behind" in u and "dropped" in u and
         u.get("by_tables", 0) + u.get("by_libdwfl", 0) > 0 else 1)
EOF
# A file published by size before the end (the worker writes it: on a
# loaded host it reaches 512K later than the drain does).
published() { ls "$T"/out/*.data >/dev/null 2>&1; }
wait_for 60 published || { cat "$T/log"; fail "no file rotated by size within 60 s"; }
kill -TERM $DAEMON_PID
wait $DAEMON_PID || { cat "$T/log"; fail "perfrecd exited non-zero"; }
DAEMON_PID=

nfiles=$(ls "$T"/out/*.data | wc -l)
[ "$nfiles" -ge 2 ] || fail "rotation by size wrote $nfiles file(s), not several"
hot=0; hw=0; rd=0; rw=0
for f in "$T"/out/*.data; do
	check_unwound "$f" "rotated file $(basename "$f")"
	check_file "$f" "rotated file $(basename "$f")"
	read -r a b c d < <(whole_paths "$f")
	hot=$((hot + a)); hw=$((hw + b)); rd=$((rd + c)); rw=$((rw + d))
done
whole_enough "$nfiles rotated files" "$hot" "$hw" "$rd" "$rw"
n=$(check_perfparser "$(ls "$T"/out/*.data | tail -1)") || { echo "$n"; exit 1; }

# The stream and the snapshot sit behind the unwinding stage too: unwound
# callchains, no user registers or stacks (see perfrecd.8).
check_unwound "$T/live.data" "live stream"
check_unwound "$T/snap.data" "snapshot"
perf script -i - -F comm,ip,sym <"$T/live.data" >/dev/null 2>"$T/pipe.err" || { cat "$T/pipe.err"; fail "perf script -i - refused the live stream"; }
check_perf_stderr "perf script -i - of the live stream" "$T/pipe.err"
"$PERFRECCTL" verify "$T/live.data" >/dev/null || fail "perfrecctl verify rejects the live stream"
check_paths "$T/live.data" "live stream"
check_file "$T/snap.data" "snapshot"
check_paths "$T/snap.data" "snapshot"
# hotspot's perfparser reads them too (issue 25: stream, snapshot and flight
# snapshot pass perf, perfparser and perfrecctl verify).
n=$(check_perfparser "$T/live.data") || { echo "$n"; exit 1; }
n=$(check_perfparser "$T/snap.data") || { echo "$n"; exit 1; }

cpu_secs() { awk -v hz="$(getconf CLK_TCK)" '{ print int(($14 + $15) / hz) }' "/proc/$BG/stat"; }
ran_2s() { [ $(($(cpu_secs) - t0)) -ge 2 ]; }

note "reload from unwind=file to unwind=host"
mkdir -p "$T/rl"
printf '[record]\nevents=cpu-clock\nfrequency=499\ncallchain=dwarf\nmmap-size=8M\nunwind=file\n' >"$T/rl.conf"
"$PERFRECD" -c "$T/rl.conf" -o "$T/rl" --socket= 2>"$T/rl.log" &
DAEMON_PID=$!
wait_for 30 grep -q "Recording" "$T/rl.log" || { cat "$T/rl.log"; fail "the recorder did not start"; }
sed -i 's/^unwind=file$/unwind=host/' "$T/rl.conf"
kill -HUP $DAEMON_PID
wait_for 30 grep -q "events reopened" "$T/rl.log" || { cat "$T/rl.log"; fail "unwind=host did not reopen the events on reload"; }
t0=$(cpu_secs)
wait_for 60 ran_2s || fail "the workload did not run 2 CPU seconds"
kill -TERM $DAEMON_PID
wait $DAEMON_PID || { cat "$T/rl.log"; fail "perfrecd exited non-zero"; }
DAEMON_PID=
[ "$(ls "$T"/rl/*.data | wc -l)" = 2 ] || { ls "$T/rl"; fail "reload did not end the first file and start a second"; }
perf evlist -v -i "$(ls "$T"/rl/*.data | head -1)" 2>&1 | grep -q "cpu-clock.*STACK_USER" ||
	fail "the file before the reload is not raw"
last=$(ls "$T"/rl/*.data | tail -1)
check_unwound "$last" "file after the reload"
check_file "$last" "file after the reload"
check_paths "$last" "file after the reload"

note "flight mode"
mkdir -p "$T/fl"
"$PERFRECD" -o "$T/fl" --socket= --mode flight --history 20s -e cpu-clock -F 499 -m 8M \
	2>"$T/fl.log" &
DAEMON_PID=$!
wait_for 30 grep -q "Recording" "$T/fl.log" || { cat "$T/fl.log"; fail "flight recorder did not start"; }
t0=$(cpu_secs)
wait_for 60 ran_2s || fail "the workload did not run 2 CPU seconds"
kill -USR2 $DAEMON_PID
wait_for 30 sh -c "ls '$T'/fl/*.data >/dev/null 2>&1" || { cat "$T/fl.log"; fail "no flight snapshot"; }
kill -TERM $DAEMON_PID
wait $DAEMON_PID
DAEMON_PID=
f=$(only_file "$T/fl") || exit 1
check_unwound "$f" "flight snapshot"
check_file "$f" "flight snapshot"
check_paths "$f" "flight snapshot"
n=$(check_perfparser "$f") || { echo "$n"; exit 1; }
exit 0
