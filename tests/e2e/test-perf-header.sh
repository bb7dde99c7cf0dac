#!/usr/bin/env bash
# What perf says about a file's writer and events, beside perf record's own
# file of the same events: HEADER_VERSION parses as perf 6.1 and names
# perfrecd with the Makefile's version; the side-band event is perf's
# "dummy:HG" (host and guest, neither excluded) and a sampled event leaves
# guests out as perf's does; CPU topology, caches and PMU_CAPS come as
# perf writes them, BPF sections too; perf script still reads the file.
. "$(dirname "$0")/lib.sh"
require_events; require_perf

version=$(sed -n 's/^VERSION := //p' "$TOP/Makefile")
[ -n "$version" ] || fail "no VERSION in the Makefile"

"$WORKLOAD" 3 >/dev/null &
wl=$!
perf record --buildid-mmap -a -e cpu-clock -F 99 -o "$T/perf.data" -- sleep 1 >/dev/null 2>"$T/perf.err" ||
	{ cat "$T/perf.err"; fail "perf record failed"; }
"$PERFRECD" -o "$T/out" --socket '' -e cpu-clock -F 99 --no-call-graph --duration 1 2>"$T/err" ||
	{ cat "$T/err"; fail "perfrecd failed"; }
wait $wl
f=$(only_file "$T/out") || exit 1

perf report -i "$f" --header-only -I >"$T/ours.hdr" 2>"$T/hdr.err" || { cat "$T/hdr.err"; fail "perf report --header-only failed"; }
perf report -i "$T/perf.data" --header-only -I >"$T/perf.hdr" 2>/dev/null || fail "perf report --header-only failed on perf's file"

v=$(sed -n 's/^# perf version : //p' "$T/ours.hdr")
note "perf version : $v"
[[ $v =~ ^6\.1\.[0-9]+-perfrecd-(.*)$ ]] || fail "HEADER_VERSION '$v' is not a perf 6.1 version naming perfrecd"
[ "${BASH_REMATCH[1]}" = "$version" ] || fail "HEADER_VERSION '$v' does not carry perfrecd $version"

# One event's name and guest/host bits, as perf prints them.
bits() {
	grep "^# event : name = $2," "$1" | head -1 |
		grep -o 'name = [^,]*\|exclude_guest = 1\|exclude_host = 1' | tr '\n' ' '
}
for ev in dummy:HG cpu-clock; do
	want=$(bits "$T/perf.hdr" "$ev"); got=$(bits "$T/ours.hdr" "$ev")
	note "perf:     $want"
	note "perfrecd: $got"
	[ -n "$want" ] || fail "perf's own file has no event $ev"
	[ "$got" = "$want" ] || { grep '^# event' "$T/ours.hdr"; fail "event $ev is not described as perf describes it"; }
done

# Host features in perf's order: CPU topology, caches and PMUs line for line as
# perf prints its own, and PMU_CAPS and the BPF sections wherever perf writes them.
for what in '^# (sibling|CPU [0-9]+:)' '^#  L[0-9]' '^# pmu mappings:'; do
	grep -E "$what" "$T/perf.hdr" >"$T/want"; grep -E "$what" "$T/ours.hdr" >"$T/got"
	[ -s "$T/want" ] || continue
	diff "$T/want" "$T/got" >/dev/null || { diff "$T/want" "$T/got"; fail "lines $what differ from perf's"; }
done
missing() { sed -n 's/^# missing features: //p' "$1" | tr ' ' '\n' | grep -x "$2"; }
for feat in PMU_CAPS CPU_PMU_CAPS BPF_PROG_INFO BPF_BTF; do
	if [ -z "$(missing "$T/perf.hdr" $feat)" ] && [ -n "$(missing "$T/ours.hdr" $feat)" ]; then
		fail "perf writes $feat here, perfrecd does not"
	fi
done

n=$(perf script -i "$f" -F tid,cpu,time,ip --ns 2>"$T/script.err" | wc -l)
check_perf_stderr "perf script" "$T/script.err"
[ "$n" -gt 0 ] || fail "perf script read no samples from $f"
exit 0
