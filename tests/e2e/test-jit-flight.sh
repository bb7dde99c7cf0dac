#!/usr/bin/env bash
# JIT frames named in flight-mode snapshots (issue 26): perfrecd --mode
# flight keeps no file, only a history; node --perf-basic-prof runs,
# exits and its perf map is deleted; a snapshot asked for afterwards
# (SIGUSR2) names node's JIT functions for perf report, perf script,
# perfrecctl folded and hotspot's perfparser, from the snapshot and the
# build-id cache beside it alone; its build-id table lists the images.
# So does it for a node that ran (and JIT-compiled) before perfrecd
# started, from the state perfrecd seeds its history with.  A second snapshot, asked for while a
# second node runs, names both processes' functions: the first one's
# images stay, the second's are written with what its map holds then,
# and rewritten by a third snapshot once it has exited.
. "$(dirname "$0")/lib.sh"
require_events; require_perf; require_perfparser
NODE=$(command -v node) || skip "node is not installed"
. "$(dirname "$0")/jit-checks.sh"
NODEBIN=$T/jf$$
ln -s "$NODE" "$NODEBIN"
cat >"$T/jitwl.js" <<'EOS'
function fibonacciRecurse(n) { return n < 2 ? n : fibonacciRecurse(n - 1) + fibonacciRecurse(n - 2); }
function hotLoopNamed(ms) {
  let s = 0;
  while (process.cpuUsage().user < ms * 1000) s += fibonacciRecurse(22);
  return s;
}
console.log(hotLoopNamed(+process.argv[2]));
EOS

# A node that JIT-compiled before perfrecd started: the state seeded at
# start names its JIT mapping in the history too.
(cd "$T" && exec "$NODEBIN" --perf-basic-prof "$T/jitwl.js" 3000 >/dev/null) &
pid0=$!
wait_for 30 grep -qs fibonacciRecurse /tmp/perf-$pid0.map || fail "node wrote no fibonacciRecurse into its map"
mkdir -p "$T/out"
"$PERFRECD" -o "$T/out" --socket= --mode flight --history 10min -F 499 -g 2>"$T/d.log" &
DAEMON_PID=$!
wait_for 30 grep -q '^perfrecd: Recording' "$T/d.log" || { cat "$T/d.log"; fail "perfrecd did not start"; }
wait $pid0 || fail "node failed"
rm -f /tmp/perf-$pid0.map
nsnap() { ls "$T"/out/*-snapshot.data 2>/dev/null | wc -l; }
snapshot() { # N: ask for snapshot N, wait for it, print its path
	kill -USR2 $DAEMON_PID
	wait_for 60 sh -c "[ \$(ls '$T'/out/*-snapshot.data 2>/dev/null | wc -l) -ge $1 ]" ||
		{ cat "$T/d.log"; fail "snapshot $1 did not appear"; }
	ls "$T"/out/*-snapshot.data | sort | tail -1
}

(cd "$T" && exec "$NODEBIN" --perf-basic-prof "$T/jitwl.js" 3000 >/dev/null) &
pid1=$!
wait $pid1 || fail "node failed"
[ -f /tmp/perf-$pid1.map ] || fail "node wrote no /tmp/perf-$pid1.map"
rm -f /tmp/perf-$pid1.map
[ "$(nsnap)" = 0 ] || fail "flight mode wrote a snapshot before one was asked for"
f=$(snapshot 1)
# its build-id table lists the images (what an upload ships beside it)
perf buildid-list -i "$f" 2>/dev/null | grep -q " /perfrec-jit/jit-$pid1-" ||
	fail "the snapshot's build-id table lists no image of pid $pid1"
check_perf "flight snapshot" "$f" "$pid1" fibonacciRecurse hotLoopNamed
check_perf "flight snapshot, node started before perfrecd" "$f" "$pid0" fibonacciRecurse hotLoopNamed
check_folded "flight snapshot" "$f" "$pid1" fibonacciRecurse hotLoopNamed
check_perfparser "flight snapshot" "$f" "$(basename "$NODEBIN")" "~fibonacciRecurse|hotLoopNamed"

# A second node, snapshot while it runs (its hot functions in its map by then), a third once it is gone.
(cd "$T" && exec "$NODEBIN" --perf-basic-prof "$T/jitwl.js" 4000 >/dev/null) &
pid2=$!
wait_for 30 grep -qs hotLoopNamed /tmp/perf-$pid2.map || fail "node wrote no hotLoopNamed into its map"
f=$(snapshot 2)
check_perf "second snapshot, first node" "$f" "$pid1" fibonacciRecurse hotLoopNamed
wait $pid2 || fail "node failed"
rm -f /tmp/perf-$pid2.map
f=$(snapshot 3)
check_perf "third snapshot, second node" "$f" "$pid2" fibonacciRecurse hotLoopNamed
check_perf "third snapshot, first node" "$f" "$pid1" fibonacciRecurse hotLoopNamed
kill -TERM $DAEMON_PID; wait $DAEMON_PID; rc=$?; DAEMON_PID=
[ $rc = 0 ] || { cat "$T/d.log"; fail "perfrecd exited $rc"; }
exit 0
