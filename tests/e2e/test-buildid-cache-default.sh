#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The build-id cache is on by default, in the output directory (issue 29):
# with no buildid-cache= set, a binary deleted while its process runs is
# copied into OUT/.build-id, so that `perf --buildid-dir OUT report` and
# our views, which look there by themselves, name its functions once it is
# gone.  Without the cache neither can (checked, so the test proves the
# cache did it); buildid-cache=no turns it off.
. "$(dirname "$0")/lib.sh"
require_events; require_perf
command -v cc >/dev/null || skip "no C compiler to build the workload"
export HOME=$T   # no ~/.debug of the machine's own
# The workload with a build id of its own: no other file or process on the
# machine (another test's workload) can name its functions.
bid=$(od -An -tx1 -N20 /dev/urandom | tr -d ' \n')
mkdir -p "$T/src"
cc -O1 -g -fno-omit-frame-pointer -fno-inline -pthread -Wl,--build-id=0x$bid -o "$T/src/wl" "$TOP/tests/e2e/workload.c" ||
	fail "cannot build the workload"
[ "$(readelf -n "$T/src/wl" | awk '/Build ID/ {print $3; exit}')" = "$bid" ] || fail "the workload does not carry build id $bid"

# run_deleted DIR [ARGS]: record while a copy of the workload, deleted as
# soon as it runs, works for 3 s; prints the file.
run_deleted() {
	local out=$1; shift
	mkdir -p "$T/bin"
	cp "$T/src/wl" "$T/bin/wl-gone"
	"$PERFRECD" -o "$out" --socket '' -e cpu-clock -F 499 -g "$@" 2>"$out.err" &
	DAEMON_PID=$!
	started() { grep -q Recording "$out.err" 2>/dev/null; }
	wait_for 30 started || { cat "$out.err"; fail "perfrecd did not start"; }
	"$T/bin/wl-gone" 3 1 >/dev/null &
	local wl=$!
	running() { readlink /proc/$wl/exe 2>/dev/null | grep -q wl-gone; }
	wait_for 30 running || fail "the workload copy did not start"
	rm "$T/bin/wl-gone"
	wait $wl
	kill -INT $DAEMON_PID; wait $DAEMON_PID; local rc=$?; DAEMON_PID=
	[ $rc = 0 ] || { cat "$out.err"; fail "perfrecd exited $rc"; }
	only_file "$out"
}
flat() { awk '/^ +[0-9.]+%/ && / hot_function$/ { print $1; exit }'; }
report() { perf "$@" --stdio --no-children -g none --sort sym --comm wl-gone 2>/dev/null | flat; }

f=$(run_deleted "$T/out") || exit 1
rm -f "$T/src/wl"   # nothing on disk holds the build id but the cache
entry=$T/out/.build-id/${bid:0:2}/${bid:2}
[ -f "$entry" ] || { find "$T/out" | head; cat "$T/out.err"; fail "no entry $entry in the default cache"; }
[ "$(stat -c %a "$T/out/.build-id")" = 750 ] || fail "the cache is not private: $(stat -c %a "$T/out/.build-id")"
with=$(report --buildid-dir "$T/out" report -i "$f")
[ -n "$with" ] || fail "perf --buildid-dir OUT report does not name hot_function of the deleted binary"
note "perf --buildid-dir OUT report: hot_function $with"
"$PERFRECCTL" folded --no-debuginfod --comm wl-gone -o "$T/f.folded" "$f" 2>"$T/folded.err" || { cat "$T/folded.err"; fail "folded failed"; }
grep -q 'hot_function' "$T/f.folded" || { head -3 "$T/f.folded"; fail "folded does not name hot_function from the default cache"; }
"$PERFRECCTL" pprof --no-debuginfod --comm wl-gone -o "$T/p.pb.gz" "$T/out" 2>"$T/pprof.err" || { cat "$T/pprof.err"; fail "pprof failed"; }
if command -v go >/dev/null; then
	export GOCACHE=$T/gocache
	go tool pprof -top "$T/p.pb.gz" 2>/dev/null | grep -q ' hot_function$' || fail "pprof does not name hot_function from the default cache"
fi

# buildid-cache=no: nothing kept, and then nobody names it.
printf '[output]\nbuildid-cache=no\n' >"$T/no.conf"
cc -O1 -g -fno-omit-frame-pointer -fno-inline -pthread -Wl,--build-id=0x$bid -o "$T/src/wl" "$TOP/tests/e2e/workload.c" ||
	fail "cannot build the workload"
g=$(run_deleted "$T/none" -c "$T/no.conf") || exit 1
rm -f "$T/src/wl"
[ ! -e "$T/none/.build-id" ] || fail "buildid-cache=no still made a cache"
[ -z "$(report --buildid-dir "$T/none" report -i "$g")" ] || fail "perf names hot_function without a cache (the binary was not gone?)"
"$PERFRECCTL" folded --no-debuginfod --comm wl-gone -o "$T/g.folded" "$g" 2>/dev/null
grep -q "hot_function" "$T/g.folded" && { cat "$T/g.folded"; fail "folded names hot_function without a cache"; }
exit 0
