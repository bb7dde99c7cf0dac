#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Every view says on stderr what it wrote: the path, how many samples (as
# many as perf counts in the input) and the wall-clock span they cover.
# Before, flamegraph and folded said nothing and pprof no span.
. "$(dirname "$0")/lib.sh"
require_events; require_perf

"$PERFRECD" -o "$T/out" --socket '' -e cpu-clock -F 199 -g --duration 3 2>"$T/err" &
DAEMON_PID=$!
"$WORKLOAD" 3 1 >/dev/null &
wait $DAEMON_PID; rc=$?; DAEMON_PID=
[ $rc = 0 ] || { cat "$T/err"; fail "perfrecd exited $rc"; }
f=$(only_file "$T/out") || exit 1
n=$(perf_samples "$f")
[ "${n:-0}" -gt 0 ] || fail "perf counts no samples in $f"
note "$f: $n samples (perf)"

# check CMD OUT: its stderr names OUT, perf's count and a span in UTC.
check() {
	local cmd=$1 out=$2 err=$T/$1.err
	sed 's/^/# /' "$err"
	grep -qF "perfrecctl $cmd: wrote $out" "$err" || fail "$cmd does not say it wrote $out"
	grep -Eq ": $n samples, [0-9T:.-]+Z to [0-9T:.-]+Z \([0-9.]+ s\)$" "$err" ||
		fail "$cmd does not say it wrote perf's $n samples and their span"
}
"$PERFRECCTL" flamegraph --no-debuginfod -o "$T/g.svg" "$f" 2>"$T/flamegraph.err" || { cat "$T/flamegraph.err"; fail "flamegraph failed"; }
check flamegraph "$T/g.svg"
"$PERFRECCTL" folded --no-debuginfod -o "$T/f.folded" "$f" 2>"$T/folded.err" || { cat "$T/folded.err"; fail "folded failed"; }
check folded "$T/f.folded"
"$PERFRECCTL" pprof --no-debuginfod -o "$T/p.pb.gz" "$f" 2>"$T/pprof.err" || { cat "$T/pprof.err"; fail "pprof failed"; }
check pprof "$T/p.pb.gz"
"$PERFRECCTL" flamegraph --no-debuginfod "$f" >"$T/stdout.svg" 2>"$T/flamegraph.err" || fail "flamegraph to stdout failed"
check flamegraph "standard output"
"$PERFRECCTL" cut --from -10min --to now -o "$T/c.data" "$T/out" 2>"$T/cut.err" || { cat "$T/cut.err"; fail "cut failed"; }
grep -Eq "perfrecctl cut: wrote $T/c.data: $n samples, 0 lost, from 1 file, window .* to .*" "$T/cut.err" ||
	{ cat "$T/cut.err"; fail "cut does not say what it wrote and the window"; }
exit 0
