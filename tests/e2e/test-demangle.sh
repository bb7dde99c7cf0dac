#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Names and counts in the views (issue 26).  perf report names the symbols
# of C++ and Rust binaries demangled (libiberty's cplus_demangle, no
# parameter lists); the views used to print them mangled, and `folded`
# printed periods where its help and Brendan Gregg's format say sample
# counts.  perfrecd records a C++ program (tests/e2e/names.cc: a class
# template's member, a function template of a lambda, an anonymous
# namespace) and, where rustc is found, a Rust one (tests/e2e/names.rs)
# built with legacy and with v0 mangling; then, for each program:
#  - `folded --no-inline` is, stack for stack and count for count, what
#    perf script's stacks of that process collapse to (each sample counts
#    one), and with --no-demangle what `perf script --no-demangle` gives;
#    with --period each stack carries the sum of its periods instead;
#  - the flame graph (--no-inline) names exactly the frames folded names,
#    and so does the pprof profile read by go tool pprof;
#  - the demangled names are there (perf's, not pprof's own shortening,
#    which drops template arguments);
#  - an inlined member template is named as its class does, not by its
#    bare DW_AT_name.
ORIG_HOME=$HOME # rustup finds its toolchains through HOME, which lib.sh replaces
. "$(dirname "$0")/lib.sh"
require_events; require_perf
command -v g++ >/dev/null || skip "g++ is not installed: no C++ workload"
command -v go >/dev/null || skip "go (golang-go) is not installed: no pprof reader"
export GOCACHE=$T/gocache GOFLAGS=-mod=mod GOTOOLCHAIN=local

g++ -O2 -g -fno-omit-frame-pointer -fno-shrink-wrap -o "$T/names" "$TOP/tests/e2e/names.cc" || fail "cannot build tests/e2e/names.cc"
progs=(names)
# want PROG: a name perf report must show for PROG's hot code.
declare -A want=([names]='shapes::Grid<unsigned long>::sweep
apply_n<main::{lambda(unsigned long)#1}>
(anonymous namespace)::hidden_mix')
rustc=$(command -v rustc || echo "$ORIG_HOME/.cargo/bin/rustc")
rust() { RUSTUP_HOME=${RUSTUP_HOME:-$ORIG_HOME/.rustup} CARGO_HOME=${CARGO_HOME:-$ORIG_HOME/.cargo} "$rustc" "$@"; }
if [ -x "$rustc" ] && rust -O -g -C force-frame-pointers=yes -o "$T/names-rs-legacy" "$TOP/tests/e2e/names.rs" 2>"$T/rustc.err" &&
	rust -O -g -C force-frame-pointers=yes -C symbol-mangling-version=v0 -o "$T/names-rs-v0" "$TOP/tests/e2e/names.rs" 2>>"$T/rustc.err"; then
	progs+=(names-rs-legacy names-rs-v0)
	want[names-rs-legacy]='names::engine::Mixer<u64>::churn'
	want[names-rs-v0]='<names::engine::Mixer<u64>>::churn'
	nm "$T/names-rs-legacy" | grep -q ' _ZN.*5churn17h' || fail "names-rs-legacy has no legacy-mangled churn"
	nm "$T/names-rs-v0" | grep -q ' _RNv.*5churn' || fail "names-rs-v0 has no v0-mangled churn"
else
	note "no working rustc ($(head -c 200 "$T/rustc.err" 2>/dev/null)): Rust names not tested"
fi

"$PERFRECD" -o "$T/out" --socket '' -e cpu-clock -F 999 -g 2>"$T/err" &
DAEMON_PID=$!
wait_for 30 grep -qs Recording "$T/err" || { cat "$T/err"; fail "perfrecd did not start"; }
declare -A pid
for p in "${progs[@]}"; do
	"$T/$p" 1.5 >/dev/null & pid[$p]=$!
	wait "${pid[$p]}" || fail "$p failed"
done
kill -INT $DAEMON_PID; wait $DAEMON_PID; rc=$?; DAEMON_PID=
[ $rc = 0 ] || { cat "$T/err"; fail "perfrecd exited $rc"; }
f=$(only_file "$T/out") || exit 1

# perf's stacks of a program as folded stacks, one count per sample.  Its
# process and its comm: before the exec, the shell's code (and aliases in
# libc that perf and we name apart) is not what is compared here.
collapse() {  # PID COMM [perf script options]
	local p=$1 c=$2; shift 2
	perf script -i "$f" --comms "$c" "$@" -F comm,pid,tid,time,event,period,ip,sym,dso --ns 2>>"$T/script.err" |
		awk -v want_pid="$p" -v want_event=cpu-clock -f "$TOP/tests/e2e/perf-collapse.awk" |
		awk '{ $NF = ""; sub(/ $/, ""); n[$0]++ } END { for (s in n) print s, n[s] }' | mains
}
# The stacks through libc's call of main(), sorted: the program's own.
# ld.so's start (_start / _dl_start_user at one address) is named apart by
# perf and us, a matter of aliases, not of demangling.
# A C function of libc may be named by any of its aliases
# (__GI___sigaltstack, __sigaltstack, sigaltstack; __libc_write, write):
# perf names them from .dynsym where we may have libc's .symtab; "__GI_",
# leading underscores and "libc_" are taken off C names on both sides (a mangled name keeps
# its "_Z"/"_R" and still differs from its demangled form).
mains() {
	grep -E '(^|;)__libc_start_call_main(;| [0-9]+$)' |
		awk '{ c = $NF; $NF = ""; sub(/ $/, ""); n = split($0, f, ";"); s = "";
		       for (i = 1; i <= n; i++) {
			       if (f[i] !~ /^_[ZR]/) { sub(/^__GI_/, "", f[i]); sub(/^_+/, "", f[i]); sub(/^libc_/, "", f[i]) }
			       s = s (i > 1 ? ";" : "") f[i] }
		       t[s] += c } END { for (k in t) print k, t[k] }' | LC_ALL=C sort
}
# The frame names of folded stacks, "_[k]" taken off, one each.
frame_names() { sed 's/ [0-9]*$//' "$1" | tr ';' '\n' | sed 's/_\[k\]$//' | LC_ALL=C sort -u; }

for p in "${progs[@]}"; do
	P=${pid[$p]}
	collapse "$P" "$p" >"$T/$p.perf"
	[ -s "$T/$p.perf" ] || fail "perf script has no stacks of $p"
	while IFS= read -r name; do
		grep -qF ";$name" "$T/$p.perf" || { head -3 "$T/$p.perf"; fail "perf does not name $name in $p's stacks (the oracle changed)"; }
	done <<<"${want[$p]}"

	# folded: perf's stacks, perf's names, one count per sample.
	"$PERFRECCTL" folded --no-debuginfod --no-inline --pid "$P" --comm "$p" -o "$T/$p.folded" "$f" 2>"$T/folded.err" ||
		{ cat "$T/folded.err"; fail "folded of $p failed"; }
	mains <"$T/$p.folded" >"$T/$p.folded.main"
	diff "$T/$p.perf" "$T/$p.folded.main" >"$T/diff" || { head -20 "$T/diff"; fail "$p: folded --no-inline differs from perf script's stacks and counts"; }
	note "$p: folded = perf script's $(wc -l <"$T/$p.perf") stacks, $(awk '{ s += $NF } END { print s }' "$T/$p.folded.main") samples"
	collapse "$P" "$p" --no-demangle >"$T/$p.perf-raw"
	"$PERFRECCTL" folded --no-debuginfod --no-inline --no-demangle --pid "$P" --comm "$p" "$f" 2>/dev/null >"$T/$p.raw.all" ||
		fail "folded --no-demangle of $p failed"
	mains <"$T/$p.raw.all" >"$T/$p.raw"
	diff "$T/$p.perf-raw" "$T/$p.raw" >"$T/diff" || { head -20 "$T/diff"; fail "$p: folded --no-demangle differs from perf script --no-demangle"; }
	grep -q ';_[ZR]' "$T/$p.raw" || fail "$p: --no-demangle shows no mangled name"
	# The other views name every frame as folded does (all stacks now).
	frame_names "$T/$p.folded" >"$T/$p.names"

	# The flame graph's frames.
	"$PERFRECCTL" flamegraph --no-debuginfod --no-inline --pid "$P" --comm "$p" -o "$T/$p.svg" "$f" 2>/dev/null || fail "flamegraph of $p failed"
	python3 -c 'import html, re, sys
names = {html.unescape(n) for n in re.findall(r"<g class=\"f\"[^>]* n=\"([^\"]*)\"", open(sys.argv[1]).read())}
names.discard("all")
print("\n".join(sorted(names, key=lambda s: s.encode())))' "$T/$p.svg" >"$T/$p.svg.names"
	diff "$T/$p.names" "$T/$p.svg.names" >"$T/diff" || { head -20 "$T/diff"; fail "$p: the flame graph's frames are not named as folded's"; }

	# The pprof profile's functions, as go tool pprof shows them.
	"$PERFRECCTL" pprof --no-debuginfod --no-inline --pid "$P" --comm "$p" -o "$T/$p.pb.gz" "$f" 2>/dev/null || fail "pprof of $p failed"
	go tool pprof -traces "$T/$p.pb.gz" 2>"$T/go.err" >"$T/$p.traces" || { cat "$T/go.err"; fail "go tool pprof cannot read $p's profile"; }
	# Each trace: its labels ("key:  value"), then the value and leaf, then the callers.
	awk '/^-+\+-+$/ { on = 1; next } /^ *[a-z_]+:  / { next } on && NF { if (/^ +[0-9.]+[a-z]*s? /) sub(/^ +[0-9.]+[a-z]* +/, ""); else sub(/^ +/, ""); print }' \
		"$T/$p.traces" | LC_ALL=C sort -u >"$T/$p.pprof.names"
	diff "$T/$p.names" "$T/$p.pprof.names" >"$T/diff" || { head -20 "$T/diff"; fail "$p: go tool pprof does not show folded's names"; }
	for v in svg pprof; do
		while IFS= read -r name; do
			grep -qxF "$name" "$T/$p.$v.names" || fail "$p: $name is not in the $v view"
		done <<<"${want[$p]}"
	done
	note "$p: flame graph and pprof name the $(wc -l <"$T/$p.names") frames as folded does"
done

# folded --period: the same stacks, each with the sum of its samples' periods.
P=${pid[names]}
"$PERFRECCTL" folded --no-debuginfod --no-inline --period --pid "$P" --comm names "$f" 2>/dev/null | mains >"$T/period.folded" ||
	fail "folded --period failed"
perf script -i "$f" --comms names -F comm,pid,tid,time,event,period,ip,sym,dso --ns 2>/dev/null |
	awk -v want_pid="$P" -v want_event=cpu-clock -f "$TOP/tests/e2e/perf-collapse.awk" |
	awk '{ p = $NF; $NF = ""; sub(/ $/, ""); s[$0] += p } END { for (k in s) print k, s[k] }' | mains >"$T/period.perf"
diff "$T/period.perf" "$T/period.folded" >"$T/diff" || { head "$T/diff"; fail "folded --period differs from perf script's periods per stack"; }
cmp -s "$T/period.folded" "$T/names.folded.main" && fail "folded --period printed sample counts"

# An inlined member function is named as its class has it.
"$PERFRECCTL" folded --no-debuginfod --pid "${pid[names]}" -o "$T/inl.folded" "$f" 2>/dev/null || fail "folded of names failed"
grep -qF 'shapes::Grid<unsigned long>::sweep;shapes::Grid<unsigned long>::step' "$T/inl.folded" ||
	{ grep -m3 sweep "$T/inl.folded"; fail "the inlined Grid<unsigned long>::step is not a frame of its own with its qualified name"; }
exit 0
