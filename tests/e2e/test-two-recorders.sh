#!/bin/bash
# Two recorders at once, as when an engineer runs perf record on a host
# where perfrecd is always on, while BPF programs load and unload.  Kernels
# such as 6.18 then size KSYMBOL and BPF_EVENT records for the trailers of
# every side-band event on the CPU but write one; perfrecd must write them
# as they should be, so perf, perfparser and our verifier read every file.
. "$(dirname "$0")/lib.sh"
require_events
require_perf
BPFHOT=$TOP/tests/e2e/bpfhot
[ -x "$BPFHOT" ] || skip "tests/e2e/bpfhot is not built"
"$BPFHOT" 0.1 >/dev/null 2>&1; [ $? = 77 ] && skip "bpf() is not permitted or the JIT is off"

mkdir -p "$T/a" "$T/b"
"$PERFRECD" -o "$T/a" -F 2000 -g --socket '' -d 10 2>"$T/a.log" &
A=$!
"$PERFRECD" -o "$T/b" -F 2000 -g --socket '' -d 10 2>"$T/b.log" &
B=$!
for _ in $(seq 100); do grep -q "^perfrecd: Recording" "$T/a.log" && grep -q "^perfrecd: Recording" "$T/b.log" && break; sleep 0.1; done
grep -q "^perfrecd: Recording" "$T/b.log" || { cat "$T/a.log" "$T/b.log"; fail "the recorders did not start"; }
# Fill the rings past their end first: what an inflated record ends in is
# then stale data, not the zeros of fresh ring memory.
"$WORKLOAD" 3 >/dev/null
# A third side-band reader for good measure: perf itself.
timeout 60 perf record -a -F 99 -o "$T/perf.data" -- sleep 3 >/dev/null 2>&1 &
P=$!
for _ in $(seq 15); do "$BPFHOT" 0.1 >/dev/null 2>&1; done
wait "$A" || { cat "$T/a.log"; fail "the first perfrecd failed"; }
wait "$B" || { cat "$T/b.log"; fail "the second perfrecd failed"; }
wait "$P"
for d in a b; do
	f=$(only_file "$T/$d")
	"$PERFRECCTL" verify "$f" >"$T/verify" 2>&1 || { cat "$T/verify"; fail "perfrecctl verify rejected recorder $d's file"; }
	perf report -i "$f" --stats >"$T/stats" 2>"$T/stats.err"
	check_perf_stderr "perf report of recorder $d's file" "$T/stats.err"
	k=$(awk '/KSYMBOL events:/ {print $3}' "$T/stats")
	[ "${k:-0}" -gt 0 ] || { cat "$T/stats"; fail "recorder $d's file has no KSYMBOL records"; }
	perf script -i "$f" >/dev/null 2>"$T/script.err"
	check_perf_stderr "perf script of recorder $d's file" "$T/script.err"
	pp=$(check_perfparser "$f") || { echo "$pp"; fail "perfparser rejected recorder $d's file"; }
	note "recorder $d: $k KSYMBOL records, perf, perfparser and verify agree"
done
if grep -q "kernel sized a" "$T/a.log" "$T/b.log"; then
	note "this kernel inflates KSYMBOL/BPF_EVENT sizes; perfrecd repaired them"
else
	note "this kernel sizes KSYMBOL/BPF_EVENT records correctly"
fi
echo PASS
