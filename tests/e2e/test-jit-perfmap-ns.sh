#!/usr/bin/env bash
# JIT frames of a process in its own mount and pid namespaces (issue 26):
# node --perf-basic-prof runs under unshare -m -p with a tmpfs of its own
# on /tmp, so its map is /tmp/perf-NSPID.map there (NSPID its pid in its
# namespace), which the host's /tmp never has and which goes with the
# namespace.  perfrecd follows it through /proc/PID/root by the innermost
# pid: perf script and perfrecctl folded name the workload's functions in
# at least 90% of its samples once it is all gone.
. "$(dirname "$0")/lib.sh"
require_events; require_perf
NODE=$(command -v node) || skip "node is not installed"
command -v unshare >/dev/null || skip "unshare (util-linux) is not installed"
unshare -m -p -f --mount-proc true 2>/dev/null || skip "cannot make mount and pid namespaces here"
WL=jns$$
ln -s "$NODE" "$T/$WL"
cat >"$T/jitwl.js" <<'JS'
function fibonacciRecurse(n) { return n < 2 ? n : fibonacciRecurse(n - 1) + fibonacciRecurse(n - 2); }
// CPU time, not wall time: on a loaded machine the start stays a small share
function hotLoopNamed(ms) {
  let s = 0;
  while (process.cpuUsage().user < ms * 1000) s += fibonacciRecurse(22);
  return s;
}
console.log(hotLoopNamed(+process.argv[2]));
JS

mkdir "$T/out"
: >"$T/log"
"$PERFRECD" -o "$T/out" --socket= -F 499 -g 2>"$T/log" &
DAEMON_PID=$!
wait_for 30 grep -q '^perfrecd: Recording' "$T/log" || { cat "$T/log"; fail "perfrecd did not start"; }
# $T is under /tmp: the shell works in it (its cwd stays there under the new mount).
unshare -m -p -f --mount-proc --propagation private sh -c '
	cd "$1" && mount -t tmpfs none /tmp || exit 1
	"./$2" --perf-basic-prof - 4000 <jitwl.js >/dev/null || exit 1
	ls /tmp/perf-*.map >maps 2>&1
' _ "$T" "$WL" || { cat "$T/maps"; fail "the workload in its namespaces failed"; }
grep -q '^/tmp/perf-[0-9]*\.map$' "$T/maps" || { cat "$T/maps"; fail "node wrote no perf map in its namespace"; }
nsmap=$(cat "$T/maps")
note "in its namespaces: $nsmap"
# Its pid there is not its pid here: the host's /tmp never had its map.
ls /tmp/perf-*.map 2>/dev/null | while read -r m; do
	[ "$m" != "$nsmap" ] || fail "$nsmap is on the host's /tmp too: the test proves nothing"
done
kill -TERM $DAEMON_PID; wait $DAEMON_PID; rc=$?; DAEMON_PID=
[ $rc = 0 ] || { cat "$T/log"; fail "perfrecd exited $rc"; }
f=$(only_file "$T/out")

perf --buildid-dir "$T/out" script -i "$f" -F ip,sym --comm "$WL" >"$T/script" 2>"$T/script.err" ||
	{ cat "$T/script.err"; fail "perf script failed"; }
read -r samples named < <(awk 'BEGIN { RS = "" } { n++ } /fibonacciRecurse|hotLoopNamed/ { k++ } END { print n + 0, k + 0 }' "$T/script")
note "perf script: $named of $samples samples of $WL name its functions"
[ "$samples" -ge 100 ] || fail "only $samples samples of $WL"
[ $((named * 10)) -ge $((samples * 9)) ] || fail "perf script names the functions in $named of $samples samples"
"$PERFRECCTL" folded --no-debuginfod --comm "$WL" "$f" >"$T/folded" 2>"$T/folded.err" ||
	{ cat "$T/folded.err"; fail "perfrecctl folded failed"; }
read -r total named < <(awk '{ n += $NF } /fibonacciRecurse|hotLoopNamed/ { k += $NF } END { printf "%.0f %.0f\n", n, k }' "$T/folded")
note "perfrecctl folded: $named of $total"
[ "$total" -gt 0 ] && [ $((named * 10)) -ge $((total * 9)) ] || fail "perfrecctl folded names the functions in $named of $total"
exit 0
