#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# JIT frames carried with cut --archive (issue 26): node --perf-basic-prof
# writes its functions to /tmp/perf-PID.map, which perfrecd turns into
# images in its build-id cache; the map is deleted when node exits.  The
# archive unpacked into a fresh HOME (another ~/.debug, the recording's
# directory out of reach, no /tmp/perf-*.map) gives perf report the
# JIT names perf --buildid-dir OUT gives, as many samples named; and
# hotspot's perfparser, told --debug ~/.debug (it finds JIT images only
# under DIR/perfrec-jit/jit-....so/BUILDID, the links perfrecd makes beside
# its cache), names node's functions in 90% of node's samples, in none
# without the archive.
# Skipped in a tree without JIT images (internal/jitimage.c), before the merge.
. "$(dirname "$0")/lib.sh"
require_events; require_perf; require_perfparser
NODE=$(command -v node) || skip "node is not installed"
[ -f "$TOP/internal/jitimage.c" ] || skip "this tree makes no JIT images (no internal/jitimage.c)"
NODEBIN=$T/ja$$
ln -s "$NODE" "$NODEBIN"
cat >"$T/jitwl.js" <<'JS'
function fibonacciRecurse(n) { return n < 2 ? n : fibonacciRecurse(n - 1) + fibonacciRecurse(n - 2); }
function hotLoopNamed(ms) {
  let s = 0;
  while (process.cpuUsage().user < ms * 1000) s += fibonacciRecurse(22);
  return s;
}
console.log(hotLoopNamed(+process.argv[2]));
JS
: >"$T/log"
"$PERFRECD" -o "$T/out" --socket= -F 499 -g 2>"$T/log" &
DAEMON_PID=$!
wait_for 30 grep -q '^perfrecd: Recording' "$T/log" || { cat "$T/log"; fail "perfrecd did not start"; }
(cd "$T" && exec "$NODEBIN" --perf-basic-prof --interpreted-frames-native-stack "$T/jitwl.js" 2000 >/dev/null) &
pid=$!
wait $pid || fail "node failed"
[ -f /tmp/perf-$pid.map ] || fail "node wrote no /tmp/perf-$pid.map"
rm -f /tmp/perf-$pid.map
kill -TERM $DAEMON_PID; wait $DAEMON_PID; rc=$?; DAEMON_PID=
[ $rc = 0 ] || { cat "$T/log"; fail "perfrecd exited $rc"; }

"$PERFRECCTL" cut --from -10min --to now --no-live -o "$T/cut.data" --archive "$T/cut.tar" "$T/out" 2>"$T/cut.err" ||
	{ cat "$T/cut.err"; fail "cut --archive failed"; }
# share HOME ARGS...: the percentage of node's samples whose symbol is a workload function.
share() {
	local home=$1; shift
	HOME=$home perf "$@" --stdio --no-children -g none --sort sym --pid "$pid" 2>/dev/null |
		awk '/^ +[0-9.]+%/ { t += $1 } /^ +[0-9.]+%/ && /(fibonacciRecurse|hotLoopNamed)/ { n += $1 }
		     END { printf "%.2f\n", t ? 100 * n / t : 0 }'
}
mkdir -p "$T/ref-home" "$T/empty"
ref=$(share "$T/ref-home" --buildid-dir "$T/out" report -i "$T/cut.data")
awk -v r="$ref" 'BEGIN { exit !(r + 0 > 50) }' || fail "perf --buildid-dir OUT names only $ref% of node's samples: no JIT images to carry"
mkdir "$T/away"; mv "$T/out" "$T/away/"
mkdir -p "$T/fresh/.debug"
tar xf "$T/cut.tar" -C "$T/fresh/.debug" || fail "tar xf -C ~/.debug failed"
ls /tmp/perf-$pid.map 2>/dev/null && fail "a perf map is left"
got=$(share "$T/fresh" report -i "$T/fresh/.debug/cut.data")
none=$(share "$T/empty" report -i "$T/fresh/.debug/cut.data")
note "JIT-named share of node's samples: $ref% from the cache, $got% from the archive, $none% from nothing"
awk -v r="$ref" -v g="$got" 'BEGIN { exit !(g + 0 >= r - 0.01) }' || fail "the archive names $got% of node's samples, the cache $ref%"
awk -v n="$none" 'BEGIN { exit !(n + 0 < 5) }' || fail "perf names JIT frames without the archive ($none%): the test proves nothing"

. "$(dirname "$0")/jit-checks.sh"
mkdir -p "$T/empty/.debug"
read -r samples named <<<"$(perfparser_named "no archive" "$T/fresh/.debug/cut.data" "$(basename "$NODEBIN")" \
	"~fibonacciRecurse|hotLoopNamed" "$T/empty/.debug")" || exit 1
note "no archive: perfparser: $named of $samples samples of node name its functions"
[ "$samples" -ge 100 ] && [ "$named" = 0 ] || fail "perfparser names node's functions in $named of $samples samples without the archive"
check_perfparser archive "$T/fresh/.debug/cut.data" "$(basename "$NODEBIN")" "~fibonacciRecurse|hotLoopNamed" "$T/fresh/.debug"
exit 0
