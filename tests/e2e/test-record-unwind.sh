#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# libperfrec's record object behind the host unwinding stage: a C program
# (tests/e2e/recunwind.c) records a workload built without frame pointers
# (tests/e2e/nofp.c) with DWARF callchains and unwind_host:
#   main -> outer -> sorts -> qsort -> msort_with_tmp -> by_key
#   start_thread -> reader -> read_some -> read -> (kernel)
# Its first file, a snapshot of it and the file after a rotate are each
# whole perf.data files with plain callchains: no user registers or stacks
# in their attrs, perfrecctl verify, perf report and perf script with a
# clean stderr and perfparser take them, and at least 95% of the samples
# in by_key and in read carry the whole path, in perf script and in what
# perfparser gives hotspot.  The same recording without unwind_host (raw
# stacks) fails the unwound check; unwind_host without DWARF stacks is
# refused with a message that says why.
. "$(dirname "$0")/lib.sh"
require_events; require_perf; require_perfparser
[ -x "$TOP/tests/e2e/nofp" ] || fail "tests/e2e/nofp is not built (make tests/e2e/nofp)"
[ -e "$TOP/lib/libperfrec.so" ] || fail "lib/libperfrec.so is not built (make all)"
command -v "${CC:-cc}" >/dev/null || skip "no C compiler"

"${CC:-cc}" -std=gnu11 -Wall -Wextra -Werror -O1 -I"$TOP/lib/include" -o "$T/recunwind" \
	"$TOP/tests/e2e/recunwind.c" -L"$TOP/lib" -lperfrec -Wl,-rpath,"$TOP/lib" -pthread 2>"$T/cc.log" ||
	{ cat "$T/cc.log"; fail "recunwind.c does not build against libperfrec"; }

WL=nofpr$$
cp "$TOP/tests/e2e/nofp" "$T/$WL"
BG=
trap 'kill $BG 2>/dev/null; cleanup' EXIT
"$T/$WL" 3600 >/dev/null &
BG=$!

note "unwind_host without DWARF stacks is refused"
mkdir -p "$T/bad"
"$T/recunwind" nodwarf $BG "$T/bad" >"$T/bad.out" 2>"$T/bad.err" && fail "unwind_host without stack_user was accepted"
cat "$T/bad.out" "$T/bad.err"
grep -qx "start: -22 Invalid argument" "$T/bad.out" || fail "unwind_host without stack_user did not give -EINVAL"
grep -q "^msg -22: unwind_host unwinds DWARF stacks: it needs callchain and stack_user" "$T/bad.err" ||
	fail "no message saying unwind_host needs DWARF callchains"
[ -z "$(ls -A "$T/bad")" ] || { ls -la "$T/bad"; fail "a refused start left files behind"; }

# whole_paths FILE: "HOT WHOLE READS WHOLE" over the workload's samples,
# as perf script unwinds them (test-dwarf-host.sh's count).
whole_paths() {
	local f=$1
	perf script -i "$f" -F comm,ip,sym --comm "$WL" >"$T/script" 2>"$T/script.err" ||
		{ cat "$T/script.err"; fail "perf script failed on $f"; }
	check_perf_stderr "perf script of $f" "$T/script.err"
	awk 'BEGIN { RS = "" }
	     { n = split($0, l, "\n"); leaf = ""; for (i = 2; i <= n && leaf == ""; i++) if (l[i] !~ /^[ \t]*ffffffff/) leaf = l[i] }
	     leaf ~ / by_key$/ { hot++; if (/msort_with_tmp/ && /qsort/ && / sorts\n/ && / outer\n/ && / main\n/) hw++ }
	     leaf ~ /libc_read| read$/ { rd++; if (/ read_some\n/ && / reader\n/ && /start_thread/) rw++ }
	     END { printf "%d %d %d %d\n", hot, hw, rd, rw }' "$T/script"
}
most() { # WHAT PART OF: at least 95%
	[ $(($2 * 100)) -ge $(($3 * 95)) ] || fail "$1: only $2 of $3"
}
check_unwound() { # FILE WHAT: callchains, no user registers or stack in the attrs
	perf evlist -v -i "$1" >"$T/evlist" 2>&1
	grep -q "STACK_USER\|REGS_USER\|sample_stack_user\|sample_regs_user" "$T/evlist" &&
		{ cat "$T/evlist"; fail "the $2 still asks for user registers or stacks"; }
	grep -q "cpu-clock.*CALLCHAIN" "$T/evlist" || { cat "$T/evlist"; fail "the $2 has no callchains"; }
}
check_file() { # FILE WHAT
	local f=$1 what=$2 hot hw rd rw n all named whole
	{ [ -f "$f" ] && [ ! -e "$f.tmp" ]; } || fail "the $what was not published"
	check_unwound "$f" "$what"
	"$PERFRECCTL" verify "$f" >"$T/verify" || { cat "$T/verify"; fail "perfrecctl verify rejected the $what"; }
	perf report -i "$f" --stdio --no-children -g none --sort sym >/dev/null 2>"$T/report.err"
	check_perf_stderr "perf report of the $what" "$T/report.err"
	read -r hot hw rd rw < <(whole_paths "$f")
	note "$what: perf script: $hw of $hot by_key samples and $rw of $rd read samples have the whole path"
	[ "$hot" -ge 20 ] || fail "$what: only $hot samples in by_key"
	[ "$rd" -ge 5 ] || fail "$what: only $rd samples in read"
	most "$what: by_key samples with the whole path (perf script)" "$hw" "$hot"
	most "$what: read samples with the whole path (perf script)" "$rw" "$rd"
	n=$(check_perfparser "$f") || { echo "$n"; exit 1; }
	timeout 120 "$PERFPARSER" --input "$f" --output "$T/pp.out" 2>"$T/pp.err" ||
		{ cat "$T/pp.err"; fail "perfparser --output failed on the $what"; }
	read -r all named whole < <(python3 "$TOP/tests/e2e/ppsymbols.py" "$T/pp.out" "$WL" by_key sorts outer main) ||
		fail "cannot read perfparser's output for the $what"
	note "$what: perfparser: $n samples, $named of the workload's $all in by_key, $whole of them through main"
	[ "$named" -ge 20 ] || fail "$what: perfparser shows only $named samples in by_key"
	most "$what: by_key samples reaching main in perfparser" "$whole" "$named"
}

note "the record object with unwind_host: first file, snapshot, rotated file"
mkdir -p "$T/host"
"$T/recunwind" host $BG "$T/host" 2>"$T/host.err" || { cat "$T/host.err"; fail "recording with unwind_host failed"; }
cat "$T/host.err"
# Notes (err 0) are fine, errors are not.
grep -v "^msg 0: " "$T/host.err" && fail "the record object reported errors"
for f in a snap b; do
	check_file "$T/host/$f.data" "$f.data (unwind_host)"
done

note "the same without unwind_host keeps the raw stacks (what the check above tells apart)"
mkdir -p "$T/raw"
"$T/recunwind" raw $BG "$T/raw" 2>"$T/raw.err" || { cat "$T/raw.err"; fail "recording with raw stacks failed"; }
perf evlist -v -i "$T/raw/a.data" 2>&1 | grep -q "cpu-clock.*STACK_USER" ||
	fail "the raw recording has no user stacks: the unwound check proves nothing"
( check_unwound "$T/raw/a.data" "raw file" ) >/dev/null && fail "the unwound check takes a raw file"
ha=$(stat -c %s "$T/host/a.data"); ra=$(stat -c %s "$T/raw/a.data")
note "bytes: unwound a.data $ha, raw a.data $ra"
exit 0
