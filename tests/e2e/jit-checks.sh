# shellcheck shell=bash
# The checks of the JIT tests (test-jit-*.sh), sourced after lib.sh: each
# reads a file and its build-id cache (the file's directory) and fails
# unless perf, perfrecctl or hotspot's perfparser name the known
# functions in 90% of a process's samples.

# share NAME FILE PID FUNC...: "SAMPLES NAMED" of PID's samples per perf
# script, NAMED those with any FUNC in a frame; checked against 90%.
check_perf() {
	local what=$1 f=$2 pid=$3; shift 3
	local re out
	re=$(IFS='|'; echo "$*")
	perf --buildid-dir "$(dirname "$f")" script -i "$f" -F ip,sym --pid "$pid" >"$T/script" 2>"$T/script.err" ||
		{ cat "$T/script.err"; fail "$what: perf script failed"; }
	out=$(awk -v re="$re" 'BEGIN { RS = "" } { n++ } $0 ~ re { k++ } END { print n + 0, k + 0 }' "$T/script")
	read -r samples named <<<"$out"
	note "$what: perf script: $named of $samples samples name $*"
	[ "$samples" -ge 100 ] || fail "$what: only $samples samples of the workload"
	[ $((named * 10)) -ge $((samples * 9)) ] || { head -40 "$T/script"; fail "$what: perf script names $* in $named of $samples samples"; }
	# perf report: where the runtime runs the code itself (node, the JVM),
	# the flat profile's top symbol is one of them; where an interpreter
	# runs it (Python), 90% of the samples have one in their stacks.
	if [ "${what#python}" != "$what" ]; then
		out=$(perf --buildid-dir "$(dirname "$f")" report -i "$f" --stdio --no-children --sort pid \
			-g folded,0,caller,count --pid "$pid" 2>/dev/null |
			awk -v re="$re" '/^[0-9]+ / { n += $1; if ($0 ~ re) k += $1 } END { print n + 0, k + 0 }')
		read -r samples named <<<"$out"
		note "$what: perf report: $named of $samples samples name $*"
		[ "$samples" -ge 100 ] && [ $((named * 10)) -ge $((samples * 9)) ] ||
			fail "$what: perf report names $* in $named of $samples samples"
		return
	fi
	perf --buildid-dir "$(dirname "$f")" report -i "$f" --stdio --no-children -g none --sort sym --pid "$pid" \
		2>/dev/null | awk '/^ +[0-9.]+%/ { sub(/^ +[0-9.]+% +\[.\] /, ""); print; exit }' >"$T/top"
	grep -Eq "$re" "$T/top" || { cat "$T/top"; fail "$what: perf report's top symbol is not one of $*"; }
}

check_folded() {
	local what=$1 f=$2 pid=$3; shift 3
	local re out
	re=$(IFS='|'; echo "$*")
	"$PERFRECCTL" folded --no-debuginfod --pid "$pid" "$f" >"$T/folded" 2>"$T/folded.err" ||
		{ cat "$T/folded.err"; fail "$what: perfrecctl folded failed"; }
	out=$(awk -v re="$re" '{ n += $NF } $0 ~ re { k += $NF } END { printf "%.0f %.0f\n", n, k }' "$T/folded")
	read -r total named <<<"$out"
	note "$what: perfrecctl folded: $named of $total name $*"
	[ "$total" -gt 0 ] && [ $((named * 10)) -ge $((total * 9)) ] ||
		{ sort -k2 -nr "$T/folded" | head -5 | cut -c1-300; fail "$what: perfrecctl folded names $* in $named of $total"; }
}

# check_views WHAT FILE PID FUNC...: pprof (read by go tool pprof) and the
# flame graph carry the functions, 90% of pprof's samples under one of them.
check_views() {
	local what=$1 f=$2 pid=$3; shift 3
	local re out
	re=$(IFS='|'; echo "$*")
	"$PERFRECCTL" flamegraph --no-debuginfod --pid "$pid" -o "$T/fg.svg" "$f" 2>"$T/fg.err" ||
		{ cat "$T/fg.err"; fail "$what: perfrecctl flamegraph failed"; }
	grep -Eq "$re" "$T/fg.svg" || fail "$what: the flame graph has none of $*"
	"$PERFRECCTL" pprof --no-debuginfod --pid "$pid" -o "$T/p.pb.gz" "$f" 2>"$T/pprof.err" ||
		{ cat "$T/pprof.err"; fail "$what: perfrecctl pprof failed"; }
	command -v go >/dev/null || { note "$what: no go tool pprof to read the profile"; return; }
	GOCACHE=$T/gocache go tool pprof -top -cum -nodecount=30 "$T/p.pb.gz" 2>/dev/null >"$T/top.txt"
	out=$(awk -v re="$re" '$5 ~ /%$/ && $0 ~ re { v = $5; sub(/%/, "", v); if (v + 0 > best) best = v + 0 }
		END { print best + 0 }' "$T/top.txt")
	note "$what: go tool pprof -top -cum: $out% under $*"
	awk -v v="$out" 'BEGIN { exit !(v >= 90) }' ||
		{ head -20 "$T/top.txt"; fail "$what: pprof has $out% of the samples under $*"; }
}

# perfparser_named WHAT FILE COMM FUNC [DEBUGDIR]: "SAMPLES NAMED" of
# COMM's samples per perfparser given --debug DEBUGDIR (the file's
# directory: where perfrecd's perfrec-jit/ links are, or a bundle's).
perfparser_named() {
	local what=$1 f=$2 comm=$3 func=$4 dbg=${5:-$(dirname "$2")}
	timeout 120 "$PERFPARSER" --input "$f" --output "$T/pp.out" --debug "$dbg" 2>"$T/pp.err" ||
		{ tail "$T/pp.err"; fail "$what: perfparser failed"; }
	python3 "$TOP/tests/e2e/ppsymbols.py" "$T/pp.out" "$comm" "$func" || fail "cannot read perfparser's stream"
}

# check_perfparser WHAT FILE COMM FUNC [DEBUGDIR]: named in 90% of COMM's samples.
check_perfparser() {
	local what=$1 f=$2 comm=$3 func=$4
	local out
	out=$(perfparser_named "$@") || exit 1
	read -r samples named <<<"$out"
	note "$what: perfparser: $named of $samples samples of $comm name $func"
	[ "$samples" -ge 100 ] && [ $((named * 10)) -ge $((samples * 9)) ] ||
		fail "$what: perfparser names $func in $named of $samples samples of $comm"
}

# check_shares WHAT FILE PID FUNC...: the shares perf report and go tool
# pprof -top (of perfrecctl pprof --pid) give each FUNC (the rows naming
# it, summed) agree within 3 points, flat (self) and cumulative
# (children).  perf's shares are of PID's rows (--sort pid,sym: its --pid
# filter lets other tasks' rows in), pprof's of the profile's samples.
check_shares() {
	local what=$1 f=$2 pid=$3; shift 3
	local fn kind perf_share pp_share tot
	command -v go >/dev/null || { note "$what: no go tool pprof to compare shares with"; return; }
	"$PERFRECCTL" pprof --no-debuginfod --pid "$pid" -o "$T/sh.pb.gz" "$f" 2>"$T/sh.err" ||
		{ cat "$T/sh.err"; fail "$what: perfrecctl pprof failed"; }
	GOCACHE=$T/gocache go tool pprof -top -sample_index=samples -nodefraction=0 -nodecount=100000 \
		"$T/sh.pb.gz" 2>/dev/null >"$T/sh.top" || fail "$what: go tool pprof cannot read the profile"
	# perf's "pid" key is the thread: the rows of every thread of the
	# process (a JVM runs its Java code in threads of its own)
	perf script -i "$f" -F pid,tid 2>/dev/null | awk -v p="$pid" '{ split($1, a, "/") } a[1] == p { print a[2] }' |
		sort -u >"$T/sh.tids"
	perf --buildid-dir "$(dirname "$f")" report -i "$f" --stdio --children --sort pid,sym -g none 2>/dev/null |
		awk 'NR == FNR { t[$1] = 1; next } /^ +[0-9.]+%/ { split($3, a, ":"); if (a[1] in t) print }' \
			"$T/sh.tids" - >"$T/sh.perf"
	[ -s "$T/sh.perf" ] || fail "$what: perf report has no rows of pid $pid"
	# the process's whole share, one row a thread: the sum of its symbols'
	# Self%, each rounded to 0.01, loses the many small rows (an interpreter's)
	tot=$(perf --buildid-dir "$(dirname "$f")" report -i "$f" --stdio --no-children --sort pid -g none 2>/dev/null |
		awk 'NR == FNR { t[$1] = 1; next } /^ +[0-9.]+%/ { split($2, a, ":"); v = $1; sub("%", "", v); if (a[1] in t) s += v }
			END { printf "%.4f", s }' "$T/sh.tids" -)
	for fn in "$@"; do
		for kind in flat cum; do
			# perf: Children% (col 1) or Self% (col 2) of the rows naming fn, over the pid's share
			perf_share=$(awk -v re="$fn" -v t="$tot" -v c=$([ $kind = cum ] && echo 1 || echo 2) '
				{ v = $c; sub("%", "", v); if ($0 ~ re) k += v }
				END { printf "%.2f", (t > 0 ? 100 * k / t : 0) }' "$T/sh.perf")
			# pprof: flat% (col 2) or cum% (col 5) of the rows naming fn
			pp_share=$(awk -v re="$fn" -v c=$([ $kind = cum ] && echo 5 || echo 2) '
				$2 ~ /%$/ && $5 ~ /%$/ && $0 ~ re { v = $c; sub("%", "", v); k += v }
				END { printf "%.2f", k }' "$T/sh.top")
			note "$what: $fn $kind: perf report $perf_share%, go tool pprof $pp_share%"
			awk -v a="$perf_share" -v b="$pp_share" 'BEGIN { d = a - b; exit !(d <= 3 && d >= -3) }' ||
				{ head -20 "$T/sh.top"; head -20 "$T/sh.perf"
				  fail "$what: $fn's $kind share: perf report $perf_share%, go tool pprof $pp_share%: more than 3 points apart"; }
		done
	done
}

# check_cut WHAT F PID FUNCTIONS...: a cut of the workload's second half
# (t0 and t1 of record()), beside F so its build-id cache is the file's,
# names the functions as the whole file does: perf script and report,
# perfparser (PID's samples), perfrecctl folded, pprof and flamegraph, and
# perf report and go tool pprof give them the same shares.
check_cut() {
	local what=$1 f=$2 pid=$3; shift 3
	local from cut re
	cut=$(dirname "$f")/cut.data
	from=$(awk '{ printf "@%.3f", $1 + 1.5 }' "$T/t0")
	"$PERFRECCTL" cut --from "$from" --to "@$(cat "$T/t1")" -o "$cut" "$f" 2>"$T/cut.err" ||
		{ cat "$T/cut.err"; fail "$what: perfrecctl cut failed"; }
	check_perf "$what cut" "$cut" "$pid" "$@"
	re=$(IFS='|'; echo "$*")
	check_perfparser "$what cut" "$cut" "pid:$pid" "~$re"
	check_folded "$what cut" "$cut" "$pid" "$@"
	check_views "$what cut" "$cut" "$pid" "$@"
	check_shares "$what cut" "$cut" "$pid" "$@"
}
