#!/usr/bin/env bash
# BPF program metadata (issue 7).  tests/e2e/bpfhot loads a socket filter
# named perfrec_hot (a long run of ALU instructions), attaches it to a UDP
# socket on loopback and floods it, so much of the CPU time is spent in its
# JITed code.  perf report must attribute samples to
# bpf_prog_<tag>_perfrec_hot, with no warnings, and perfparser and perfrecctl
# verify must accept the file, in three cases:
#   A: the program was loaded before perfrecd started: KSYMBOL/BPF_EVENT are
#      synthesized and HEADER_BPF_PROG_INFO describes it (perf --header);
#   B: loaded while the file is being written: the kernel's own KSYMBOL and
#      BPF_EVENT ring records name it;
#   C: loaded during one file and still running after a rotation: the next
#      file synthesizes it from what the ring reported (perfrecd has dropped
#      the privilege to list programs by then).
#   D: a flight-mode snapshot of a program loaded before perfrecd started:
#      its history holds no KSYMBOL for it, so the snapshot synthesizes it,
#      with HEADER_BPF_PROG_INFO.
. "$(dirname "$0")/lib.sh"
require_events; require_perf; require_perfparser
BPFHOT=$TOP/tests/e2e/bpfhot
[ -x "$BPFHOT" ] || fail "tests/e2e/bpfhot is not built (make tests/e2e/bpfhot)"
[ "$(cat /proc/sys/net/core/bpf_jit_enable 2>/dev/null || echo 0)" != 0 ] || skip "the BPF JIT is off (net.core.bpf_jit_enable=0)"
HOT_PID=
trap 'kill "$HOT_PID" 2>/dev/null; cleanup' EXIT

# Start bpfhot for $1 seconds; sets HOT_PID and TAG once the program is attached.
start_hot() {
	local out=$T/hot.$2 ready=$T/ready.$2
	"$BPFHOT" "$1" "$ready" >"$out" 2>"$out.err" &
	HOT_PID=$!
	for _ in $(seq 300); do [ -e "$ready" ] && break; kill -0 "$HOT_PID" 2>/dev/null || break; sleep 0.1; done
	if [ ! -e "$ready" ]; then
		wait "$HOT_PID"; local rc=$?; HOT_PID=
		cat "$out.err"
		[ $rc = 77 ] && skip "cannot run a JITed BPF program here: $(cat "$out.err")"
		fail "bpfhot did not start (exit $rc)"
	fi
	TAG=$(sed -n 's/^id=[0-9]* tag=\([0-9a-f]*\)$/\1/p' "$out")
	[ ${#TAG} = 16 ] || { cat "$out"; fail "bpfhot printed no tag"; }
}

stop_hot() { [ -n "$HOT_PID" ] && { kill "$HOT_PID" 2>/dev/null; wait "$HOT_PID" 2>/dev/null; }; HOT_PID=; }

wait_recording() {
	for _ in $(seq 300); do grep -q 'Recording' "$1" && return 0; sleep 0.1; done
	cat "$1"; fail "perfrecd did not start"
}

# Samples named after the program: perf report, perf script, perfparser, verify.
check_file() {
	local f=$1 what=$2 sym="bpf_prog_${TAG}_perfrec_hot" pct n
	perf report -i "$f" --stdio --no-children --sort sym >"$T/report.$what" 2>"$T/report.$what.err"
	check_perf_stderr "perf report ($what)" "$T/report.$what.err"
	pct=$(awk -v s="$sym" '$NF == s && $2 == "[k]" {sub("%", "", $1); print $1; exit}' "$T/report.$what")
	[ -n "$pct" ] || { head -30 "$T/report.$what"; fail "$what: perf report shows no samples in $sym"; }
	note "$what: $pct% of samples in $sym"
	perf script -i "$f" -F ip,sym >"$T/script.$what" 2>"$T/script.$what.err"
	check_perf_stderr "perf script ($what)" "$T/script.$what.err"
	n=$(grep -c " $sym\$" "$T/script.$what")
	[ "$n" -gt 0 ] || fail "$what: perf script names no sample $sym"
	perf report -i "$f" --header-only >"$T/header.$what" 2>"$T/header.$what.err"
	check_perf_stderr "perf report --header-only ($what)" "$T/header.$what.err"
	check_perfparser "$f" >/dev/null
	"$PERFRECCTL" verify "$f" >/dev/null || fail "$what: perfrecctl verify rejected $f"
}

# --- A: loaded before perfrecd starts --------------------------------------
# -g: frame-pointer samples, a few hundred bytes each, so that 999 Hz fits
# the default rings and perf report has no lost chunks to complain of
# (the callchain form is not what this test is about).
start_hot 60 a
"$PERFRECD" --socket '' -o "$T/a" -e cpu-clock -F 999 -g --duration 4 2>"$T/a.err" &
DAEMON_PID=$!
wait "$DAEMON_PID"; rc=$?; DAEMON_PID=
stop_hot
cat "$T/a.err"
[ $rc = 0 ] || fail "perfrecd exited $rc"
f=$(only_file "$T/a") || exit 1
check_file "$f" A
grep -q "^# bpf_prog_info [0-9]*: bpf_prog_${TAG}_perfrec_hot addr 0x" "$T/header.A" \
	|| { grep -i bpf "$T/header.A"; fail "A: perf finds no HEADER_BPF_PROG_INFO entry for the program"; }
"$PERFRECCTL" dump "$f" | grep -q "BPF_PROG_INFO .*bpf_prog_${TAG}_perfrec_hot" \
	|| fail "A: perfrecctl dump does not describe the program's info"

# --- B: loaded while the file is being written -----------------------------
"$PERFRECD" --socket '' -o "$T/b" -e cpu-clock -F 999 -g --duration 6 2>"$T/b.err" &
DAEMON_PID=$!
wait_recording "$T/b.err"
start_hot 3 b
wait "$HOT_PID"; HOT_PID=
wait "$DAEMON_PID"; rc=$?; DAEMON_PID=
cat "$T/b.err"
[ $rc = 0 ] || fail "perfrecd exited $rc"
f=$(only_file "$T/b") || exit 1
check_file "$f" B
"$PERFRECCTL" dump "$f" | grep -q '^  KSYMBOL ' || fail "B: no KSYMBOL record in the file"

# --- C: loaded during the first file, still hot after a rotation -----------
"$PERFRECD" --socket '' -o "$T/c" -e cpu-clock -F 999 -g 2>"$T/c.err" &
DAEMON_PID=$!
wait_recording "$T/c.err"
start_hot 60 c
sleep 1
kill -USR2 "$DAEMON_PID"
for _ in $(seq 300); do [ "$(ls "$T/c"/*.data 2>/dev/null | wc -l)" -ge 1 ] && break; sleep 0.1; done
[ "$(ls "$T/c"/*.data 2>/dev/null | wc -l)" -ge 1 ] || fail "C: the rotation published no file"
sleep 3
stop_hot
kill -TERM "$DAEMON_PID"; wait "$DAEMON_PID"; rc=$?; DAEMON_PID=
cat "$T/c.err"
[ $rc = 0 ] || fail "perfrecd exited $rc"
f=$(ls "$T/c"/*.data | sort | tail -1)
[ "$(ls "$T/c"/*.data | wc -l)" = 2 ] || { ls -la "$T/c"; fail "C: expected two files"; }
check_file "$f" C

# --- D: flight mode, loaded before perfrecd starts -------------------------
start_hot 60 d
printf '[output]\nmode=flight\nhistory=30s\n' >"$T/d.conf"
"$PERFRECD" -c "$T/d.conf" --socket '' -o "$T/d" -e cpu-clock -F 999 -g 2>"$T/d.err" &
DAEMON_PID=$!
wait_recording "$T/d.err"
sleep 3
kill -USR2 "$DAEMON_PID"
for _ in $(seq 300); do [ "$(ls "$T/d"/*.data 2>/dev/null | wc -l)" -ge 1 ] && break; sleep 0.1; done
stop_hot
kill -TERM "$DAEMON_PID"; wait "$DAEMON_PID"; rc=$?; DAEMON_PID=
cat "$T/d.err"
[ $rc = 0 ] || fail "perfrecd exited $rc"
f=$(only_file "$T/d") || exit 1
check_file "$f" D
grep -q "^# bpf_prog_info [0-9]*: bpf_prog_${TAG}_perfrec_hot addr 0x" "$T/header.D" \
	|| { grep -i bpf "$T/header.D"; fail "D: perf finds no HEADER_BPF_PROG_INFO entry in the snapshot"; }
exit 0
