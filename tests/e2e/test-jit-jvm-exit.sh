#!/usr/bin/env bash
# JIT frames of a JVM that writes its perf map only as it exits
# (-XX:+DumpPerfMapAtExit, no jcmd; issue 26): by then /proc/PID/root is
# gone, so perfrecd reads the map through the process's root it held open
# since it first saw the JVM's JIT mapping.  Once the file is finished and
# the map deleted, perf script, perf report, perfrecctl folded and
# hotspot's perfparser name the workload's Java methods from the file and
# its build-id cache alone; the daemon's log counts the map read at exit.
. "$(dirname "$0")/lib.sh"
require_events; require_perf; require_perfparser
command -v javac >/dev/null && command -v java >/dev/null || skip "no javac and java (OpenJDK) installed"
. "$(dirname "$0")/jit-checks.sh"

cat >"$T/JitExit.java" <<'EOS'
public class JitExit {
    static int fibJavaExit(int n) { return n < 2 ? n : fibJavaExit(n - 1) + fibJavaExit(n - 2); }
    static long hotLoopExit(long ms) {
        // this thread's CPU time: on a loaded machine the start stays a small share
        java.lang.management.ThreadMXBean t = java.lang.management.ManagementFactory.getThreadMXBean();
        long end = t.getCurrentThreadCpuTime() + ms * 1000000L, s = 0;
        while (t.getCurrentThreadCpuTime() < end) s += fibJavaExit(20);
        return s;
    }
    public static void main(String[] a) { System.out.println(hotLoopExit(Long.parseLong(a[0]))); }
}
EOS
javac -d "$T" "$T/JitExit.java" || fail "javac failed"
JAVABIN=$T/jx$$
ln -s "$(readlink -f "$(command -v java)")" "$JAVABIN"

mkdir -p "$T/out"
"$PERFRECD" -o "$T/out" --socket= -F 499 -g -v 2>"$T/d.log" &
DAEMON_PID=$!
wait_for 30 grep -q '^perfrecd: Recording' "$T/d.log" || { cat "$T/d.log"; fail "perfrecd did not start"; }
(cd "$T" && exec "$JAVABIN" -XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit -cp "$T" JitExit 5000 >/dev/null) &
pid=$!
wait $pid || fail "java failed"
[ -f /tmp/perf-$pid.map ] || fail "the JVM wrote no /tmp/perf-$pid.map at exit"
kill -TERM $DAEMON_PID; wait $DAEMON_PID; rc=$?; DAEMON_PID=
[ $rc = 0 ] || { cat "$T/d.log"; fail "perfrecd exited $rc"; }
rm -f /tmp/perf-$pid.map
grep -q "reading the perf map pid $pid wrote as it exited" "$T/d.log" ||
	{ grep -i jit "$T/d.log"; fail "perfrecd did not read the map pid $pid wrote at exit"; }
f=$(only_file "$T/out")
check_perf jvm-exit "$f" "$pid" fibJavaExit hotLoopExit
check_folded jvm-exit "$f" "$pid" fibJavaExit hotLoopExit
check_perfparser jvm-exit "$f" "pid:$pid" "~fibJavaExit|hotLoopExit"
exit 0
