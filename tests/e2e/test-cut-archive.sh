#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# perfrecctl cut --archive carries a cut to another machine (issue 26): one
# tar of the cut and the build-id cache entries it needs, in perf
# archive's layout.  A workload copy deleted while it runs leaves its
# functions only in perfrecd's cache; the archive, unpacked into a fresh
# HOME's ~/.debug as the man page says (tar xf A -C ~/.debug), with the
# binary gone and the recording directory out of reach, gives perf report
# the names perf report gave with the binary in place.  Without it perf
# names nothing (so the archive did it).  A build id no cache holds is
# named on stderr and counted; a link planted in the cache is not followed;
# no member of the archive is absolute or climbs out with "..".
. "$(dirname "$0")/lib.sh"
require_events; require_perf
command -v cc >/dev/null || skip "no C compiler to build the workload"
bid=$(od -An -tx1 -N20 /dev/urandom | tr -d ' \n')
mkdir -p "$T/src" "$T/bin"
cc -O1 -g -fno-omit-frame-pointer -fno-inline -pthread -Wl,--build-id=0x"$bid" -o "$T/src/wl" "$TOP/tests/e2e/workload.c" ||
	fail "cannot build the workload"

cp "$T/src/wl" "$T/bin/wl-gone"
"$PERFRECD" -o "$T/out" --socket '' -e cpu-clock -F 499 -g 2>"$T/err" &
DAEMON_PID=$!
started() { grep -q Recording "$T/err" 2>/dev/null; }
wait_for 30 started || { cat "$T/err"; fail "perfrecd did not start"; }
"$T/bin/wl-gone" 3 1 >/dev/null &
wl=$!
running() { readlink /proc/$wl/exe 2>/dev/null | grep -q wl-gone; }
wait_for 30 running || fail "the workload copy did not start"
rm "$T/bin/wl-gone"
wait $wl
kill -INT $DAEMON_PID; wait $DAEMON_PID; rc=$?; DAEMON_PID=
[ $rc = 0 ] || { cat "$T/err"; fail "perfrecd exited $rc"; }
entry=$T/out/.build-id/${bid:0:2}/${bid:2}
[ -f "$entry" ] || fail "no cache entry $entry: nothing to carry"

"$PERFRECCTL" cut --from -10min --to now --no-live -o "$T/cut.data" --archive "$T/cut.tar.gz" "$T/out" 2>"$T/cut.err" ||
	{ cat "$T/cut.err"; fail "cut --archive failed"; }
[ "$(stat -c %a "$T/cut.tar.gz")" = 600 ] || fail "the archive is $(stat -c %a "$T/cut.tar.gz"), not 0600"
tar tzvf "$T/cut.tar.gz" >"$T/list" || fail "tar cannot list the archive"
grep -q " cut.data$" "$T/list" || fail "the cut is not in the archive"
grep -q " .build-id/${bid:0:2}/${bid:2}$" "$T/list" || fail "the workload's cache entry is not in the archive"
# A directory entry (the kernel's kallsyms; jitmap's images likewise) goes in with its files.
for k in "$T"/out/.build-id/*/*/kallsyms; do
	[ -f "$k" ] || continue
	grep -q " ${k#"$T/out/"}$" "$T/list" || fail "the kernel's entry ${k#"$T/out/"} is not in the archive"
	note "kernel entry ${k#"$T/out/"} carried"
done
grep -q "build-id cache entr" "$T/cut.err" || { cat "$T/cut.err"; fail "cut does not say what the archive holds"; }
# Every member relative and below the directory it is unpacked in.
python3 - "$T/cut.tar.gz" <<'PY' || fail "a member of the archive would land outside the directory"
import sys, tarfile
with tarfile.open(sys.argv[1]) as t:
    for m in t.getmembers():
        assert m.isfile(), m.name
        assert not m.name.startswith('/') and '..' not in m.name.split('/'), m.name
        assert m.mode & 0o007 == 0, (m.name, oct(m.mode))
PY

# names DEBUGDIR_HOME FILE: perf report's symbols of the workload's samples, "share sym" lines.
names() {
	HOME=$1 perf report -i "$2" --stdio --no-children -g none --sort sym --comm wl-gone 2>/dev/null |
		awk '/^ +[0-9.]+%/ { print $1, $NF }' | sort -k2
}
named_share() { awk '$2 !~ /^0x/ { s += $1 } END { printf "%.2f\n", s }'; }

# Reference: the binary back at its path, the machine's HOME without a cache.
mkdir -p "$T/ref-home"
cp "$T/src/wl" "$T/bin/wl-gone"
names "$T/ref-home" "$T/cut.data" >"$T/ref.names"
rm "$T/bin/wl-gone" "$T/src/wl"   # nothing on disk holds the build id but the cache
grep -q ' hot_function$' "$T/ref.names" || { cat "$T/ref.names"; fail "perf does not name hot_function even with the binary"; }

# Another machine: a fresh HOME, the recording directory out of reach, the archive unpacked as the man page says.
mkdir "$T/out-away"; mv "$T/out" "$T/out-away/"
mkdir -p "$T/fresh/.debug"
tar xf "$T/cut.tar.gz" -C "$T/fresh/.debug" || fail "tar xf -C ~/.debug failed"
names "$T/fresh" "$T/fresh/.debug/cut.data" >"$T/got.names"
mkdir -p "$T/empty"
names "$T/empty" "$T/fresh/.debug/cut.data" >"$T/none.names"
grep -q ' hot_function$' "$T/none.names" && fail "perf names hot_function with no archive unpacked (the binary was not gone?)"
grep -q ' hot_function$' "$T/got.names" || { cat "$T/got.names"; fail "the unpacked archive gives perf report no hot_function"; }
ref=$(named_share <"$T/ref.names"); got=$(named_share <"$T/got.names"); none=$(named_share <"$T/none.names")
note "named share of wl-gone's samples: $ref% with the binary, $got% from the archive, $none% from nothing"
awk -v r="$ref" -v g="$got" 'BEGIN { exit !(g + 0 >= r + 0) }' ||
	{ diff "$T/ref.names" "$T/got.names"; fail "the archive names $got% of the samples, the binary $ref%"; }
# The same functions (as sets: perf may give one two rows, one per map of the binary).
diff <(awk '$2 !~ /^0x/ { print $2 }' "$T/ref.names" | sort -u) <(awk '$2 !~ /^0x/ { print $2 }' "$T/got.names" | sort -u) ||
	fail "perf report names other functions from the archive than with the binary"
mv "$T/out-away/out" "$T/out"

# A build id no cache holds: named, counted, and the archive still written.
mv "$entry" "$T/entry.saved"
"$PERFRECCTL" cut --from -10min --to now --no-live -o "$T/cut2.data" --archive "$T/cut2.tar" "$T/out" 2>"$T/cut2.err" ||
	{ cat "$T/cut2.err"; fail "cut --archive failed with an entry missing"; }
grep -q "build id $bid (.*wl-gone) is in no build-id cache" "$T/cut2.err" ||
	{ cat "$T/cut2.err"; fail "the missing entry is not named"; }
grep -Eq "and [0-9]+ of [0-9]+ build-id cache entr.*missing" "$T/cut2.err" || { cat "$T/cut2.err"; fail "the missing entries are not counted"; }
tar tf "$T/cut2.tar" | grep -q "${bid:2}" && fail "the missing entry is in the archive"

# A link planted at the entry (to a file the cache never held) is refused, not followed.
echo secret >"$T/secret"
ln -s "$T/secret" "$entry"
"$PERFRECCTL" cut --from -10min --to now --no-live -o "$T/cut3.data" --archive "$T/cut3.tar" "$T/out" 2>"$T/cut3.err" ||
	{ cat "$T/cut3.err"; fail "cut --archive failed with a link in the cache"; }
grep -q "build id $bid .*symbolic link" "$T/cut3.err" || { cat "$T/cut3.err"; fail "the planted link is not named"; }
tar tf "$T/cut3.tar" | grep -q "${bid:2}" && fail "the archive followed a link out of the cache"
# An existing archive is kept unless --force.
"$PERFRECCTL" cut --from -10min --to now --no-live -o "$T/cut4.data" --archive "$T/cut3.tar" "$T/out" 2>"$T/cut4.err" &&
	fail "cut --archive replaced an existing archive without --force"
grep -q "exists" "$T/cut4.err" || { cat "$T/cut4.err"; fail "no word on the existing archive"; }
exit 0
