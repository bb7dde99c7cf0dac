#!/usr/bin/env bash
# Record system-wide with -g while a workload with a known hot function and
# known caller runs; check the file with perf, perfparser and our verifier.
. "$(dirname "$0")/lib.sh"
require_events; require_perf; require_perfparser

out=$T/out
"$WORKLOAD" 5 >/dev/null &
wl=$!
"$PERFRECD" -o "$out" -e cpu-clock -F 499 -g --duration 3 2>"$T/daemon.err"
rc=$?
wait $wl
cat "$T/daemon.err"
[ $rc = 0 ] || fail "perfrecd exited $rc"
f=$(only_file "$out") || exit 1
ls "$out"/*.tmp 2>/dev/null && fail "a .tmp file was left behind"

# Our own reader.
"$PERFRECCTL" verify "$f" || fail "perfrecctl verify rejected the file"

# Symbols: hot_function among the top entries of a flat report.
perf report -i "$f" --stdio --no-children -g none --sort sym >"$T/report" 2>"$T/report.err"
check_perf_stderr "perf report" "$T/report.err"
top=$(grep -v '^#' "$T/report" | grep -v '^$' | head -5)
echo "$top"
grep -q 'hot_function' <<<"$top" || fail "hot_function is not among the top 5 symbols"

# Callchains: caller_function appears below hot_function.
perf script -i "$f" -F comm,ip,sym >"$T/script" 2>"$T/script.err"
check_perf_stderr "perf script" "$T/script.err"
awk '/hot_function/ {inhot=1; next} /^[^ \t]/ || /^$/ {inhot=0} inhot && /caller_function/ {found=1} END {exit !found}' "$T/script" \
	|| { grep -m3 -A8 hot_function "$T/script"; fail "no callchain shows caller_function calling hot_function"; }

# Features.
perf report -i "$f" --header-only -I >"$T/header" 2>"$T/header.err"
check_perf_stderr "perf report --header-only" "$T/header.err"
for pat in '# hostname :' '# os release :' '# perf version :' '# arch :' '# nrcpus online :' \
	'# cpudesc :' '# cpuid :' '# total memory :' '# cmdline :' '# event : name = cpu-clock' \
	'# sibling sockets :' '# sibling threads :' '# node0 meminfo' '# pmu mappings:' \
	'# time of first sample :' '# time of last sample :' \
	'# memory nodes' '# clockid:' '# reference time:' ; do
	grep -qF -- "$pat" "$T/header" || { cat "$T/header"; fail "perf --header-only -I does not show '$pat'"; }
done
# This VM's sysfs has no cache directories; where it has, perf must show them.
if ls /sys/devices/system/cpu/cpu0/cache/index0 >/dev/null 2>&1; then
	grep -qF '# CPU cache info:' "$T/header" || fail "perf does not show the CPU cache info"
fi

# Build ids: the workload binary's build id is in the file.
perf buildid-list -i "$f" >"$T/buildids" 2>"$T/buildids.err"
grep -q 'workload' "$T/buildids" || { cat "$T/buildids"; fail "no build id for the workload binary"; }
grep -q 'kernel.kallsyms' "$T/buildids" || fail "no kernel build id"

n=$(check_perfparser "$f") || exit 1
note "perfparser: $n samples"
exit 0
