#!/usr/bin/env bash
# BPF programs in pprof (issue 16): a JITed socket filter (tests/e2e/bpfhot,
# perfrec_hot) loaded while perfrecd records is named from its KSYMBOL
# record, bpf_prog_<tag>_perfrec_hot in the [bpf] mapping, with the flat
# share perf report gives it (within 1 point).
. "$(dirname "$0")/lib.sh"
require_events; require_perf
command -v go >/dev/null || skip "go (golang-go) is not installed: no pprof reader"
BPFHOT=$TOP/tests/e2e/bpfhot
[ -x "$BPFHOT" ] || fail "tests/e2e/bpfhot is not built (make tests/e2e/bpfhot)"
[ "$(cat /proc/sys/net/core/bpf_jit_enable 2>/dev/null || echo 0)" != 0 ] || skip "the BPF JIT is off (net.core.bpf_jit_enable=0)"
export HOME=$T GOCACHE=$T/gocache
HOT_PID=
trap '[ -n "$HOT_PID" ] && kill "$HOT_PID" 2>/dev/null; cleanup' EXIT

"$PERFRECD" -o "$T/out" --socket '' -e cpu-clock -F 499 -g --duration 4 2>"$T/err" &
DAEMON_PID=$!
started() { grep -q Recording "$T/err" 2>/dev/null; }
wait_for 30 started || { cat "$T/err"; fail "perfrecd did not start"; }
"$BPFHOT" 2 "$T/ready" >"$T/hot" 2>"$T/hot.err" &
HOT_PID=$!
wait "$HOT_PID"; rc=$?; HOT_PID=
[ $rc = 77 ] && skip "cannot run a JITed BPF program here: $(cat "$T/hot.err")"
[ $rc = 0 ] || { cat "$T/hot.err"; fail "bpfhot failed ($rc)"; }
tag=$(sed -n 's/^id=[0-9]* tag=\([0-9a-f]*\)$/\1/p' "$T/hot")
[ ${#tag} = 16 ] || { cat "$T/hot"; fail "bpfhot printed no tag"; }
wait $DAEMON_PID; rc=$?; DAEMON_PID=
[ $rc = 0 ] || { cat "$T/err"; fail "perfrecd exited $rc"; }
f=$(only_file "$T/out") || exit 1
name=bpf_prog_${tag}_perfrec_hot

"$PERFRECCTL" pprof -o "$T/p.pb.gz" "$f" 2>"$T/pprof.err" || { cat "$T/pprof.err"; fail "pprof failed"; }
ours=$(go tool pprof -top -noinlines -nodefraction=0 -nodecount=100000 "$T/p.pb.gz" 2>/dev/null \
	| awk -v n="$name" '$6 == n { sub("%", "", $2); print $2 }')
theirs=$(perf report -i "$f" --stdio --no-children -g none --sort sym 2>/dev/null \
	| awk -v n="$name" '$3 == n { sub("%", "", $1); print $1 }')
note "$name: pprof ${ours:-none}%, perf ${theirs:-none}%"
[ -n "$theirs" ] || fail "perf report does not name $name: the test cannot compare"
[ -n "$ours" ] || fail "pprof does not name $name"
awk -v a="$ours" -v b="$theirs" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1) }' \
	|| fail "$name: pprof $ours%, perf $theirs%"
# Its location's mapping is [bpf].
go tool pprof -raw "$T/p.pb.gz" 2>/dev/null | grep -q '\[bpf\]' || fail "no [bpf] mapping in the profile"
exit 0
