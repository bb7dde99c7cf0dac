#!/usr/bin/env bash
# Flame graphs in a real browser (issue 16).  perfrecd records the e2e
# workload (hot_function called by caller_function) and then tests/e2e/shifts.c
# (alpha_hot the hot one for two seconds, then beta_hot); `perfrecctl
# flamegraph` draws them and headless Chromium renders and runs the SVG:
#  - the screenshot is not blank and shows the user frames' colours;
#  - hot_function's frames span its share of the workload's samples, as
#    perf report's children column gives it (within 1 point), on top of
#    caller_function; so do alpha_hot's and beta_hot's in phases' graph
#    (shares between 10 and 90%: the widths are really computed);
#  - #zoom=alpha_hot (the script dispatches a click on load) makes it
#    span the full width and hides beta_hot; Reset zoom undoes it;
#  - #search=REGEX reports "Matched:" with perf report's share of beta_hot;
#  - the differential of phase two against phase one colours beta_hot red
#    and alpha_hot blue, with each window's shares equal to perf report's
#    on that window (--time) within 1 point.
#
# FLAME_INPUT says where the stacks come from: "file" (the default):
# perfrecctl reads the perf.data itself (--pid, --from/--to,
# --base-from/--base-to with the wall times shifts prints), and `perfrecctl
# folded` must count the samples perf script shows; or "folded": perf script's
# stacks collapsed by tests/e2e/perf-collapse.awk and read with --folded
# (the SVG, its script and the browser alone).
. "$(dirname "$0")/lib.sh"
require_events; require_perf
CHROMIUM=$(command -v chromium || command -v chromium-browser) || skip "chromium is not installed"
CHECK=$TOP/tests/e2e/flamecheck.py
[ -x "$WORKLOAD" ] || fail "tests/e2e/workload is not built (make tests/e2e/workload)"
cc -O1 -g -fno-omit-frame-pointer -o "$T/shifts" "$TOP/tests/e2e/shifts.c" || fail "cannot build tests/e2e/shifts.c"

browser() { timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu "$@" 2>>"$T/chromium.err"; }
# dump_dom SVG FRAGMENT OUT: the DOM after the SVG's script ran.
dump_dom() {
	browser --dump-dom "file://$1#$2" >"$3" || fail "chromium --dump-dom failed on $1#$2"
	[ "$("$CHECK" attr "$3" svg fgready)" = 1 ] || { head -c 600 "$3"; fail "the SVG's script did not run in chromium ($1#$2)"; }
}
# near A B: |A - B| <= 1 (percentage points)
near() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; exit !(d <= 1 && d >= -1) }'; }
# perf_children FILE PID SYM [--time T0,T1]: perf report's children share of SYM
# among PID's cpu-clock samples: SYM's children column over the sum of the
# self column of PID's rows.  (perf 6.1's --pid/--comm filters give children
# shares over 100% with --percentage relative, so the file is not filtered;
# its "pid" column shows thread ids, so rows of any thread of PID count.)
perf_children() {
	local f=$1 pid=$2 sym=$3 tids; shift 3
	tids=$(perf script -i "$f" -F pid,tid 2>/dev/null | awk -v p="$pid" '{ split($1, a, "/"); if (a[1] == p) print a[2] }' | sort -u | tr '\n' ' ')
	perf report -i "$f" --stdio --children --sort pid,sym -g none "$@" 2>>"$T/report.err" |
		awk -v tids="$pid $tids" -v s="$sym" 'BEGIN { n = split(tids, t, " "); for (i = 1; i <= n; i++) mine[t[i]] = 1 }
			/^# Samples: .* of event / { on = /cpu-clock/ }
			on && $1 ~ /%$/ { split($3, id, ":") }
			on && $1 ~ /%$/ && id[1] in mine {
			sub(/%/, "", $1); sub(/%/, "", $2); self += $2; if ($NF == s) c += $1 }
			END { printf "%.2f\n", (self > 0 ? 100 * c / self : 0) }'
}
# collapse FILE PID [T0 T1]: perf's stacks of PID as folded stacks.
collapse() {
	perf script -i "$1" -F comm,pid,tid,time,event,period,ip,sym,dso --ns 2>>"$T/script.err" |
		awk -v want_pid="$2" -v want_event=cpu-clock -v t0="${3:-0}" -v t1="${4:-0}" -f "$TOP/tests/e2e/perf-collapse.awk"
}
FLAME_INPUT=${FLAME_INPUT:-file}
at() { printf '@%d.%09d' $(($1 / 1000000000)) $(($1 % 1000000000)); }
# draw SVG PID [MONO0 MONO1 WALL0 WALL1 [BASE_MONO0 BASE_MONO1 BASE_WALL0 BASE_WALL1]]:
# PID's cpu-clock graph (in the window, against the base window).
draw() {
	local svg=$1 pid=$2
	if [ "$FLAME_INPUT" = file ]; then
		local win=() sum
		# wall ns as seconds since the epoch, the way date(1) writes them
		[ $# -ge 6 ] && win=(--from "$(at "$5")" --to "$(at "$6")")
		[ $# -ge 10 ] && win+=(--base-from "$(at "$9")" --base-to "$(at "${10}")")
		"$PERFRECCTL" flamegraph -e cpu-clock --pid "$pid" "${win[@]}" -o "$svg" "$f" ||
			fail "perfrecctl flamegraph -e cpu-clock --pid $pid ${win[*]} failed"
		grep -q '<g class="graph" event="cpu-clock"' "$svg" || fail "no cpu-clock graph in $svg"
		"$PERFRECCTL" folded -e cpu-clock --pid "$pid" "${win[@]:0:4}" "$f" >"$svg.ours" || fail "perfrecctl folded failed"
		# perf's stacks, one line per sample: folded counts samples.
		collapse "$f" "$pid" "${3:-0}" "${4:-0}" >"$svg.perf"
		sum=$(wc -l <"$svg.perf")
		local ours slack=0 d
		ours=$(awk '{ s += $NF } END { printf "%d", s }' "$svg.ours")
		# A window's edges reach perf as shifts' CLOCK_MONOTONIC times and
		# perfrecctl as its CLOCK_REALTIME ones, read a few ns apart: a
		# sample at an edge may fall on either side, one per edge at most.
		[ $# -ge 6 ] && slack=2
		d=$((ours - sum)); d=${d#-}
		[ "$d" -le "$slack" ] || fail "perfrecctl folded counts $ours samples, perf script $sum (more apart than $slack)"
		return
	fi
	collapse "$f" "$pid" "${3:-0}" "${4:-0}" >"$svg.folded"
	[ -s "$svg.folded" ] || fail "perf script gave no stacks of $pid"
	local base=()
	if [ $# -ge 10 ]; then
		collapse "$f" "$pid" "$7" "$8" >"$svg.base.folded"
		[ -s "$svg.base.folded" ] || fail "perf script gave no stacks of $pid in the base window"
		base=(--base "$svg.base.folded")
	fi
	"$PERFRECCTL" flamegraph --folded -e cpu-clock "${base[@]}" -o "$svg" "$svg.folded" ||
		fail "perfrecctl flamegraph --folded ${base[*]} failed"
}
# share_px DOM NAME: the width of NAME's frames in percent of the graph's.
share_px() { "$CHECK" frames "$1" "$2" | awk -v full="$full" '{ s += $2 } END { printf "%.2f", 100 * s / full }'; }

out=$T/out
"$PERFRECD" --socket '' -o "$out" -e cpu-clock -F 999 -g --duration 9 2>"$T/daemon.err" &
DAEMON_PID=$!
wait_for 10 grep -qs Recording "$T/daemon.err" || { cat "$T/daemon.err"; fail "perfrecd did not start"; }
"$WORKLOAD" 2 1 >/dev/null & wpid=$!
wait "$wpid" || fail "workload failed"
"$T/shifts" 2 >"$T/phases.out" & ppid=$!
wait "$ppid" || fail "phases failed"
wait "$DAEMON_PID"; rc=$?; DAEMON_PID=
[ $rc = 0 ] || { cat "$T/daemon.err"; fail "perfrecd exited $rc"; }
f=$(only_file "$out") || exit 1

# --- the workload: hot_function on caller_function, a screenshot ----------------
expect=$(perf_children "$f" "$wpid" hot_function)
note "perf report: hot_function in $expect% of the workload's samples"
awk -v e="$expect" 'BEGIN { exit !(e >= 50) }' || fail "perf sees hot_function in only $expect% of the workload's samples"
svg=$T/workload.svg
draw "$svg" "$wpid"
if command -v xmllint >/dev/null; then xmllint --noout "$svg" || fail "the SVG is not well-formed XML"; fi

browser --screenshot="$T/shot.png" --window-size=1200,600 "file://$svg" >/dev/null || fail "chromium --screenshot failed"
[ -s "$T/shot.png" ] || fail "chromium wrote no screenshot"
read -r total nonbg warm aqua < <("$CHECK" png "$T/shot.png") || fail "cannot decode the screenshot"
note "screenshot: $total pixels, $nonbg not background, $warm warm (user frames)"
[ "$nonbg" -ge $((total / 20)) ] || fail "the screenshot is blank: $nonbg of $total pixels drawn"
[ "$warm" -ge $((total / 50)) ] || fail "the screenshot shows no user frames' colours ($warm warm pixels)"
[ -n "${SCREENSHOT_OUT:-}" ] && cp "$T/shot.png" "$SCREENSHOT_OUT"

dump_dom "$svg" "" "$T/dom"
width=$("$CHECK" attr "$T/dom" svg fgwidth); pad=$("$CHECK" attr "$T/dom" svg fgpad)
full=$((width - 2 * pad))
"$CHECK" frames "$T/dom" hot_function >"$T/hot"
"$CHECK" frames "$T/dom" caller_function >"$T/caller"
[ -s "$T/hot" ] || fail "no hot_function frame in the SVG"
got=$(share_px "$T/dom" hot_function)
note "SVG: hot_function frames span $got% of the width"
near "$got" "$expect" || fail "hot_function spans $got% of the graph, perf report gives it $expect%"
# The widest hot_function frame sits on a caller_function frame, inside its span.
read -r hx hw hd _ < <(sort -k2 -gr "$T/hot" | head -1)
awk -v x="$hx" -v w="$hw" -v d="$hd" '$3 == d - 1 && $1 <= x + 0.01 && $1 + $2 >= x + w - 0.01 { ok = 1 } END { exit !ok }' "$T/caller" ||
	fail "the widest hot_function frame (x $hx, width $hw, depth $hd) is not on a caller_function frame"

# --- phases as a whole: shares neither 0 nor 100%, zoom, search ----------------
psvg=$T/phases.svg
draw "$psvg" "$ppid"
dump_dom "$psvg" "" "$T/dom.phases"
for fn in alpha_hot beta_hot; do
	e=$(perf_children "$f" "$ppid" "$fn"); g=$(share_px "$T/dom.phases" "$fn")
	note "phases: $fn perf report $e%, SVG $g%"
	awk -v e="$e" 'BEGIN { exit !(e >= 10 && e <= 90) }' || fail "perf gives $fn $e% of phases: the workload did not run as meant"
	near "$g" "$e" || fail "$fn spans $g% of the graph, perf report gives it $e%"
done

# Zoom: the script clicks the widest alpha_hot frame on load.
dump_dom "$psvg" "zoom=alpha_hot" "$T/dom.zoom"
read -r zx zw _ _ _ zcls _ < <("$CHECK" frames "$T/dom.zoom" alpha_hot | sort -k2 -gr | head -1)
awk -v w="$zw" -v f="$full" 'BEGIN { exit !(w >= f - 0.01 && w <= f + 0.01) }' ||
	fail "after zooming into alpha_hot it is $zw px wide, not the full $full px"
[ "$zx" = "$pad.00" ] || fail "after zooming into alpha_hot it starts at x $zx, not $pad"
"$CHECK" frames "$T/dom.zoom" run_phase | grep -q ',anc' || fail "run_phase is not shown as an ancestor after the zoom"
[ "$("$CHECK" attr "$T/dom.zoom" graph zoomed)" = 1 ] || fail "the graph does not say it is zoomed"
"$CHECK" frames "$T/dom.zoom" beta_hot | grep -qv ',hidden' && fail "beta_hot is still shown after zooming into alpha_hot"

# Reset zoom (clicked after the zoom): every frame back where it was.
dump_dom "$psvg" "zoom=alpha_hot&reset" "$T/dom.reset"
[ "$("$CHECK" attr "$T/dom.reset" graph zoomed)" = 0 ] || fail "the graph is still zoomed after Reset zoom"
grep -q '<g class="f[^"]*hidden' "$T/dom.reset" && fail "frames are still hidden after Reset zoom"
[ "$(share_px "$T/dom.reset" alpha_hot)" = "$(share_px "$T/dom.phases" alpha_hot)" ] ||
	fail "alpha_hot spans $(share_px "$T/dom.reset" alpha_hot)% after Reset zoom, $(share_px "$T/dom.phases" alpha_hot)% before the zoom"

# A fragment that is not valid percent-encoding does not stop the script.
dump_dom "$psvg" "search=%E0%A4%A&zoom=alpha_hot" "$T/dom.badfrag"
[ "$("$CHECK" attr "$T/dom.badfrag" graph zoomed)" = 1 ] || fail "a malformed #search= stopped the zoom after it"

# Search: a regular expression, and the matched share.
e=$(perf_children "$f" "$ppid" beta_hot)
dump_dom "$psvg" "search=$(python3 -c 'import urllib.parse; print(urllib.parse.quote("^beta_h.*t$"))')" "$T/dom.search"
matched=$("$CHECK" text "$T/dom.search" m)
note "search ^beta_h.*t\$: '$matched' (perf report: beta_hot $e%)"
pct=$(sed -n 's/^Matched: \([0-9.]*\)%$/\1/p' <<<"$matched")
[ -n "$pct" ] || fail "the search shows no 'Matched: N%' ('$matched')"
near "$pct" "$e" || fail "the search matched $pct%, perf report gives beta_hot $e%"
"$CHECK" frames "$T/dom.search" beta_hot | grep -q 'rgb(230,0,230)' || fail "the matched frames are not highlighted"
"$CHECK" frames "$T/dom.search" alpha_hot | grep -q 'rgb(230,0,230)' && fail "alpha_hot is highlighted but does not match"

# --- the differential: phase two against phase one -------------------------------
read -r a0 a1 wa0 wa1 < <(awk '$2 == "alpha" { print $4, $5, $7, $8 }' "$T/phases.out")
read -r b0 b1 wb0 wb1 < <(awk '$2 == "beta" { print $4, $5, $7, $8 }' "$T/phases.out")
[ -n "${a0:-}" ] && [ -n "${b0:-}" ] || { cat "$T/phases.out"; fail "phases printed no phase times"; }
sec() { awk -v n="$1" 'BEGIN { printf "%d.%06d", int(n / 1e9), int((n % 1e9) / 1e3) }'; }
dsvg=$T/diff.svg
draw "$dsvg" "$ppid" "$b0" "$b1" "$wb0" "$wb1" "$a0" "$a1" "$wa0" "$wa1"
dump_dom "$dsvg" "" "$T/dom.diff"
for fn in alpha_hot beta_hot; do
	base=$(perf_children "$f" "$ppid" "$fn" --time "$(sec "$a0"),$(sec "$a1")")
	now=$(perf_children "$f" "$ppid" "$fn" --time "$(sec "$b0"),$(sec "$b1")")
	title=$(tr '\n' ' ' <"$T/dom.diff" | grep -o "<title>$fn [^<]*</title>" | head -1)
	note "perf report: $fn $base% in phase one, $now% in phase two; SVG: $title"
	read -r s_now s_base < <(sed -n 's/.*, \([0-9.]*\)% (base \([0-9.]*\)%.*/\1 \2/p' <<<"$title")
	[ -n "${s_now:-}" ] || fail "no share and base share in $fn's tooltip: $title"
	near "$s_now" "$now" || fail "$fn: $s_now% in the SVG, perf report on phase two gives $now%"
	near "$s_base" "$base" || fail "$fn: base $s_base% in the SVG, perf report on phase one gives $base%"
	near "$(share_px "$T/dom.diff" "$fn")" "$now" || fail "$fn's width is not its phase-two share ($now%)"
	read -r _ _ _ _ _ _ fill new < <("$CHECK" frames "$T/dom.diff" "$fn" | sort -k2 -gr | head -1)
	[ "$new" = 0 ] || fail "$fn is in both phases but marked new"
	case $fn in
	alpha_hot) [[ "$fill" =~ ^rgb\(([0-9]+),([0-9]+),255\)$ ]] && [ "${BASH_REMATCH[1]}" -lt 200 ] ||
		fail "alpha_hot shrank ($base% -> $now%) but is coloured $fill, not blue" ;;
	beta_hot) [[ "$fill" =~ ^rgb\(255,([0-9]+),([0-9]+)\)$ ]] && [ "${BASH_REMATCH[1]}" -lt 200 ] ||
		fail "beta_hot grew ($base% -> $now%) but is coloured $fill, not red" ;;
	esac
done
check_perf_stderr "perf report" "$T/report.err"
exit 0
