#!/usr/bin/env bash
# A live stream, a snapshot and a rotated file of the same moment begin
# the same way (internal/outfile.c): the same attrs, the off-CPU attr among
# them, and the same kinds of synthesized state before FINISHED_INIT,
# BPF programs (KSYMBOL, BPF_EVENT) included, and the same BPF program
# features.  Each output used to have its own copy of this and they
# drifted: only rotated files declared the off-CPU attr, and streams and
# continuous-mode snapshots never named the BPF programs loaded before
# them (nor did streams describe them in BPF_PROG_INFO).
#
# off-CPU profiling loads perfrecd's own BPF program, so there is always
# one to name; where BPF is not usable the test skips, as test-offcpu does.
# Snapshots are taken both from a history and, without one, as a copy of
# the file in progress.
. "$(dirname "$0")/lib.sh"
require_events; require_perf
[ -r /sys/kernel/btf/vmlinux ] || skip "the kernel has no BTF (/sys/kernel/btf/vmlinux)"
command -v bpftool >/dev/null || skip "bpftool is not installed: cannot tell whether BPF is usable here"
bpftool prog show >/dev/null 2>&1 || skip "the bpf() syscall is not usable here (bpftool prog show fails)"
bpftool btf dump file /sys/kernel/btf/vmlinux 2>/dev/null | grep -q "'btf_trace_sched_switch'" \
	|| skip "the kernel's BTF has no sched_switch tracepoint (tp_btf)"

S=$T/sock
ctl() { timeout 20 "$PERFRECCTL" --socket "$S" "$@"; }
STREAM=
trap '[ -n "$STREAM" ] && kill $STREAM 2>/dev/null; cleanup' EXIT

mkdir -p "$T/out"
printf '[output]\nhistory=60s\n' >"$T/conf"
"$PERFRECD" -c "$T/conf" -o "$T/out" --socket "$S" -F 99 --offcpu 2>"$T/log" &
DAEMON_PID=$!
wait_for 30 grep -q "^Recording\|Recording " "$T/log" || { cat "$T/log"; fail "perfrecd did not start"; }
grep -q "off-CPU profiling is on" "$T/log" || { cat "$T/log"; fail "off-CPU profiling is off where BPF is usable"; }
wait_for 30 ctl ping >/dev/null 2>&1 || { cat "$T/log"; fail "no control socket"; }

# File offsets of FINISHED_INIT (82) in perf's raw dump: the stream is read
# once it holds its beginning.
has_init() { perf report -D -i "$1" 2>/dev/null | grep -q ': event: 82$'; }

"$PERFRECCTL" --socket "$S" stream >"$T/live.data" 2>"$T/stream.err" &
STREAM=$!
wait_for 30 has_init "$T/live.data" || { cat "$T/stream.err"; fail "the stream never got FINISHED_INIT"; }
kill -INT $STREAM
wait $STREAM || { cat "$T/stream.err"; fail "perfrecctl stream failed"; }
STREAM=
ctl snapshot "$T/snap.data" >/dev/null || { cat "$T/log"; fail "snapshot failed"; }
ctl rotate >/dev/null || { cat "$T/log"; fail "rotate failed"; }
file=$(ls "$T"/out/*.data | head -1)
[ -f "$file" ] || fail "no rotated file"

# The attrs as perf reads them.  The pipe format carries no event names
# (perf names a stream's events from type and config), so the names are
# left out of the comparison; every attribute field is compared.
# The attrs as a set: a pipe-mode output lists the sampling events before
# the side-band one (perf 6.1 unwinds DWARF stacks of a stream only then).
attrs() { perf evlist -v -i "$1" 2>/dev/null | sed 's/^.*: type: /type: /' | LC_ALL=C sort; }
# The record kinds (PERF_RECORD_* numbers below 64: kernel records, not the
# pipe header's) in the file before FINISHED_INIT, in file order.
state() {
	perf report -D -i "$1" 2>/dev/null |
		sed -nE 's/^0x([0-9a-f]+)@[^ ]* \[0x[0-9a-f]+\]: event: ([0-9]+)$/\1 \2/p' |
		python3 -c '
import sys
seen = set()
for off, t in sorted((int(o, 16), int(t)) for o, t in (l.split() for l in sys.stdin)):
    if t == 82:
        break
    if t < 64:
        seen.add(t)
print(" ".join(str(t) for t in sorted(seen)))'
}

attrs "$file" >"$T/attrs.file"
grep -q "config: 0xa," "$T/attrs.file" || { cat "$T/attrs.file"; fail "the rotated file has no off-CPU attr"; }
for f in live.data snap.data; do
	attrs "$T/$f" >"$T/attrs.$f"
	diff -u "$T/attrs.file" "$T/attrs.$f" || fail "$f has other attrs than the rotated file"
done

# The state every output must have synthesized: COMM 3, FORK 7, MMAP2 10,
# KSYMBOL 17, BPF_EVENT 18 (perfrecd's own off-CPU program at least).  The
# file may hold more kinds before FINISHED_INIT (ring records drained into
# it while its state was synthesized), so each kind is checked, not the set.
for f in live.data snap.data "$(basename "$file")"; do
	p=$T/$f; [ -f "$p" ] || p=$T/out/$f
	s=" $(state "$p") "
	note "$f: record kinds before FINISHED_INIT:$s"
	for k in 3 7 10 17 18; do
		case "$s" in *" $k "*) ;; *) fail "$f has no record of kind $k before FINISHED_INIT (has:$s)";; esac
	done
done
# BPF program state in the features: the same programs described in each.
bpf() { "$PERFRECCTL" dump "$1" | sed -n 's/^ *BPF_PROG_INFO *//p'; }
want=$(bpf "$file")
[ -n "$want" ] || fail "the rotated file describes no BPF program (BPF_PROG_INFO)"
for f in live.data snap.data; do
	have=$(bpf "$T/$f")
	[ "$have" = "$want" ] || fail "$f describes BPF programs '$have', the rotated file '$want'"
done
kill -TERM $DAEMON_PID
wait $DAEMON_PID || fail "perfrecd exited $?"
DAEMON_PID=

# Without a history a snapshot is a copy of the file in progress: its
# records hold the file's state, and its attrs and BPF features must be
# the file's too (the copy used to leave out the off-CPU attr and the BPF
# programs).
note "continuous mode without a history"
mkdir -p "$T/out2"
"$PERFRECD" -o "$T/out2" --socket "$S" -F 99 --offcpu 2>"$T/log2" &
DAEMON_PID=$!
wait_for 30 ctl ping >/dev/null 2>&1 || { cat "$T/log2"; fail "no control socket"; }
ctl snapshot "$T/copy.data" >/dev/null || { cat "$T/log2"; fail "snapshot without a history failed"; }
ctl rotate >/dev/null || { cat "$T/log2"; fail "rotate failed"; }
file2=$(ls "$T"/out2/*.data | head -1)
[ -f "$file2" ] || fail "no rotated file"
attrs "$file2" >"$T/attrs.file2"
attrs "$T/copy.data" >"$T/attrs.copy"
grep -q "config: 0xa," "$T/attrs.file2" || { cat "$T/attrs.file2"; fail "the rotated file has no off-CPU attr"; }
diff -u "$T/attrs.file2" "$T/attrs.copy" || fail "the copy of the file in progress has other attrs than the file"
[ "$(bpf "$T/copy.data")" = "$(bpf "$file2")" ] || fail "the copy of the file in progress describes other BPF programs"
kill -TERM $DAEMON_PID
wait $DAEMON_PID || fail "perfrecd exited $?"
DAEMON_PID=
echo "PASS"
