#!/usr/bin/env bash
# JIT frames named from the recording alone (issue 26): node
# --perf-basic-prof and python3.12 -X perf write their functions into
# /tmp/perf-PID.map, node --perf-prof into a jitdump, which perf and
# hotspot read at report time only (perf inject --jit for the dump).
# (and the JVM, asked for its map with jcmd Compiler.perfmap; python3.13
# -X perf_jit writes a jitdump).
# Each runtime runs a workload with known function names while perfrecd
# records system-wide (node with frame pointers, Python with DWARF stacks
# unwound on the host: its interpreter has no frame pointers); the process
# exits and its map is deleted; then perf report, perf script, hotspot's
# perfparser and perfrecctl folded name the known functions in at least
# 90% of the workload's samples (and perfrecctl pprof, read by go tool
# pprof, and flamegraph carry them, go tool pprof -top's flat and
# cumulative shares of the functions within 3 points of perf report's),
# from the file and its build-id cache (the output directory's) alone.  A cut
# of each file does too, for each of these readers.
. "$(dirname "$0")/lib.sh"
require_events; require_perf; require_perfparser
NODE=$(command -v node) || skip "node is not installed"
# Names of their own (comm is the name exec'd): other jobs' node and python are not counted.
NODEBIN=$T/jn$$
ln -s "$NODE" "$NODEBIN"
PY= PYJIT=
for d in "${PYENV_ROOT:-/nonexistent}/versions"/3.1[3-9]*/bin; do
	[ -x "$d/python3" ] && "$d/python3" -X perf_jit -c 'import sys; sys.exit(0 if sys.version_info >= (3, 13) else 1)' 2>/dev/null \
		&& { PYJIT=$T/jq$$; ln -s "$d/python3" "$PYJIT"; break; }
done
for d in "${PYENV_ROOT:-/nonexistent}/versions"/3.1[2-9]*/bin; do
	[ -x "$d/python3" ] && "$d/python3" -X perf -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' 2>/dev/null \
		&& { PY=$T/jp$$; ln -s "$d/python3" "$PY"; break; }
done

cat >"$T/jitwl.js" <<'EOF'
function fibonacciRecurse(n) { return n < 2 ? n : fibonacciRecurse(n - 1) + fibonacciRecurse(n - 2); }
// CPU time, not wall time: on a loaded machine the start stays a small share
function hotLoopNamed(ms) {
  let s = 0;
  while (process.cpuUsage().user < ms * 1000) s += fibonacciRecurse(22);
  return s;
}
console.log(hotLoopNamed(+process.argv[2]));
EOF
cat >"$T/jitwl.py" <<'EOF'
import sys, time
def fib_py_recurse(n):
    return n if n < 2 else fib_py_recurse(n - 1) + fib_py_recurse(n - 2)
def hot_loop_py(secs):
    s = 0
    while time.process_time() < secs:
        s += fib_py_recurse(18)
    return s
print(hot_loop_py(float(sys.argv[1])))
EOF

# record OUT ARGS... -- CMD...: CMD run while perfrecd records into OUT
# (buildid-cache=yes: OUT/.build-id); its pid in $T/pid; its perf map is
# deleted once it exited, before the file is finished.
record() {
	local out=$1; shift
	local args=()
	while [ "$1" != -- ]; do args+=("$1"); shift; done; shift
	mkdir -p "$out"
	: >"$out.log"
	"$PERFRECD" -o "$out" --socket= -F 499 "${args[@]}" 2>"$out.log" &
	DAEMON_PID=$!
	wait_for 30 grep -q '^perfrecd: Recording' "$out.log" || { cat "$out.log"; fail "perfrecd did not start"; }
	date +%s.%N >"$T/t0"
	# in $T: node --perf-basic-prof leaves isolate-*-v8.log files in its cwd
	(cd "$T" && exec "$@" >/dev/null) &
	local pid=$!
	echo $pid >"$T/pid"
	wait $pid || fail "the workload $* failed"
	date +%s.%N >"$T/t1"
	# (its jitdump, when it writes one, goes to its cwd, or /tmp for python)
	[ -f /tmp/perf-$pid.map ] || [ -f "$T/jit-$pid.dump" ] || [ -f /tmp/jit-$pid.dump ] ||
		fail "$* wrote no /tmp/perf-$pid.map nor jitdump"
	rm -f /tmp/perf-$pid.map "$T/jit-$pid.dump" /tmp/jit-$pid.dump
	kill -TERM $DAEMON_PID; wait $DAEMON_PID; local rc=$?; DAEMON_PID=
	[ $rc = 0 ] || { cat "$out.log"; fail "perfrecd exited $rc"; }
}

. "$(dirname "$0")/jit-checks.sh"

# --- node, frame pointers -------------------------------------------------
record "$T/node" -g -- "$NODEBIN" --perf-basic-prof "$T/jitwl.js" 4000
pid=$(cat "$T/pid")
f=$(only_file "$T/node")
ls "$T/node/.build-id"/*/* >/dev/null 2>&1 || fail "no build-id cache beside the node recording"
check_perf node "$f" "$pid" fibonacciRecurse hotLoopNamed
check_folded node "$f" "$pid" fibonacciRecurse hotLoopNamed
check_views node "$f" "$pid" fibonacciRecurse hotLoopNamed
check_shares node "$f" "$pid" fibonacciRecurse hotLoopNamed
# "On another machine": the file and the cache's entries copied elsewhere, nothing else.
mkdir -p "$T/elsewhere"
cp "$f" "$T/elsewhere/"
cp -a "$T/node/.build-id" "$T/elsewhere/"
check_perf "node, copied" "$T/elsewhere/$(basename "$f")" "$pid" fibonacciRecurse hotLoopNamed
check_folded "node, copied" "$T/elsewhere/$(basename "$f")" "$pid" fibonacciRecurse hotLoopNamed
# V8 names a function "JS:*fibonacciRecurse FILE:LINE:COL", its tier's mark first
check_perfparser node "$f" "$(basename "$NODEBIN")" "~fibonacciRecurse|hotLoopNamed"
# A cut of the run's second half: the JIT maps began before it, their names come along.
check_cut node "$f" "$pid" fibonacciRecurse hotLoopNamed

# node --perf-prof: a jitdump only, no perf map
record "$T/nodejd" -g -- "$NODEBIN" --perf-prof "$T/jitwl.js" 4000
pid=$(cat "$T/pid")
f=$(only_file "$T/nodejd")
check_perf "node jitdump" "$f" "$pid" fibonacciRecurse hotLoopNamed
check_folded "node jitdump" "$f" "$pid" fibonacciRecurse hotLoopNamed

# A file rotated while node runs: the second file names its frames on its
# own (its synthesized maps get their images too, with all the symbols).
mkdir "$T/rot"
: >"$T/rot.log"
"$PERFRECD" -o "$T/rot" --socket= -F 499 -g 2>"$T/rot.log" &
DAEMON_PID=$!
wait_for 30 grep -q '^perfrecd: Recording' "$T/rot.log" || { cat "$T/rot.log"; fail "perfrecd did not start"; }
(cd "$T" && exec "$NODEBIN" --perf-basic-prof "$T/jitwl.js" 5000 >/dev/null) &
pid=$!
wait_for 30 grep -qs fibonacciRecurse /tmp/perf-$pid.map || fail "node wrote no fibonacciRecurse into its map"
kill -USR2 $DAEMON_PID
wait_for 30 sh -c "ls '$T'/rot/*.data >/dev/null 2>&1" || { cat "$T/rot.log"; fail "no file published at SIGUSR2"; }
wait $pid || fail "node failed"
rm -f /tmp/perf-$pid.map
kill -TERM $DAEMON_PID; wait $DAEMON_PID; rc=$?; DAEMON_PID=
[ $rc = 0 ] || { cat "$T/rot.log"; fail "perfrecd exited $rc"; }
f=$(ls "$T"/rot/*.data | sort | tail -1)
[ "$(ls "$T"/rot/*.data | wc -l)" = 2 ] || fail "expected two files in $T/rot"
check_perf "node, second file" "$f" "$pid" fibonacciRecurse hotLoopNamed

# --- the JVM (OpenJDK 17): its perf map written when asked (jcmd Compiler.perfmap) ---
if command -v javac >/dev/null && command -v jcmd >/dev/null && command -v java >/dev/null; then
	cat >"$T/JitWl.java" <<'EOF2'
public class JitWl {
    static int fibJavaRecurse(int n) { return n < 2 ? n : fibJavaRecurse(n - 1) + fibJavaRecurse(n - 2); }
    static long hotLoopJava(long ms) {
        // this thread's CPU time: on a loaded machine the start stays a small share
        java.lang.management.ThreadMXBean t = java.lang.management.ManagementFactory.getThreadMXBean();
        long end = t.getCurrentThreadCpuTime() + ms * 1000000L, s = 0;
        while (t.getCurrentThreadCpuTime() < end) s += fibJavaRecurse(20);
        return s;
    }
    public static void main(String[] a) throws Exception {
        hotLoopJava(1000);
        // OpenJDK 17 writes its perf map when asked, or at exit: ask now, the hot code compiled
        long pid = ProcessHandle.current().pid();
        new ProcessBuilder("jcmd", Long.toString(pid), "Compiler.perfmap").start().waitFor();
        System.out.println(hotLoopJava(Long.parseLong(a[0])));
    }
}
EOF2
	javac -d "$T" "$T/JitWl.java" || fail "javac failed"
	JAVABIN=$T/jj$$
	ln -s "$(readlink -f "$(command -v java)")" "$JAVABIN"
	record "$T/jvm" -g -- "$JAVABIN" -XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit -cp "$T" JitWl 6000
	pid=$(cat "$T/pid")
	f=$(only_file "$T/jvm")
	check_perf jvm "$f" "$pid" fibJavaRecurse hotLoopJava
	check_folded jvm "$f" "$pid" fibJavaRecurse hotLoopJava
	check_views jvm "$f" "$pid" fibJavaRecurse hotLoopJava
	check_perfparser jvm "$f" "pid:$pid" "~fibJavaRecurse|hotLoopJava"
	check_shares jvm "$f" "$pid" fibJavaRecurse hotLoopJava
	check_cut jvm "$f" "$pid" fibJavaRecurse hotLoopJava
else
	note "no javac, java and jcmd: the JVM part is not run"
fi

# --- python3.12 -X perf, DWARF stacks unwound on the host -----------------
if [ -n "$PY" ]; then
	record "$T/py" --call-graph dwarf --unwind host -- "$PY" -X perf "$T/jitwl.py" 5
	pid=$(cat "$T/pid")
	f=$(only_file "$T/py")
	check_perf python "$f" "$pid" py::fib_py_recurse py::hot_loop_py
	check_folded python "$f" "$pid" py::fib_py_recurse py::hot_loop_py
	check_views python "$f" "$pid" py::fib_py_recurse py::hot_loop_py
	check_shares python "$f" "$pid" py::fib_py_recurse py::hot_loop_py
	check_perfparser python "$f" "$(basename "$PY")" "~^py::(fib_py_recurse|hot_loop_py):"
	check_cut python "$f" "$pid" py::fib_py_recurse py::hot_loop_py
else
	note "no pyenv python >= 3.12 with -X perf: the Python half is not run"
fi
# python3.13 -X perf_jit: a jitdump in /tmp
if [ -n "$PYJIT" ]; then
	record "$T/pyjit" --call-graph dwarf --unwind host -- "$PYJIT" -X perf_jit "$T/jitwl.py" 4
	pid=$(cat "$T/pid")
	f=$(only_file "$T/pyjit")
	check_perf "python jitdump" "$f" "$pid" py::fib_py_recurse py::hot_loop_py
else
	note "no pyenv python >= 3.13 with -X perf_jit: its jitdump is not tried"
fi
exit 0
