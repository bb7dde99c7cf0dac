#!/usr/bin/env bash
# Python functions in host-wide samples with no change to the program
# (issue 27): a Python program with known functions (outer -> middle ->
# hot_leaf, a recursive fib, json.dumps' C encoder in between) runs, with
# no flags, under Debian's python3 and each pyenv python 3.10-3.13 there
# is, while perfrecd records system-wide (DWARF stacks unwound on the
# host: these interpreters keep no frame pointers).  The process exits
# before the file is read.  Then, from the file and its build-id cache
# alone:
#   - perf script: in 90% of its samples the Python path in order
#     (middle directly under outer, outer under <module>), and Py_RunMain
#     above it (native frames above the interpreter's entry stay);
#   - the samples in json's C encoder (_json.cpython-*.so) have it below
#     the Python frames (native code called from Python stays below);
#   - perf report, perfrecctl folded and go tool pprof (perfrecctl pprof)
#     name the path in 90% of the samples, and hot_leaf's shares in perf
#     report and go tool pprof agree within 3 points;
#   - hotspot's perfparser names the whole path (hot_leaf under middle
#     under outer) in 90% of hot_leaf's samples.
. "$(dirname "$0")/lib.sh"
require_events; require_perf; require_perfparser
"$PERFRECD" --config-keys 2>/dev/null | grep -q '^record python ' ||
	skip "this build has no Python walk (no python= key)"

cat >"$T/pywl.py" <<'EOF'
import json, sys, time
def hot_leaf(n):
    s = 0
    for i in range(n):
        s += i * i
    return s
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
def encode():
    return json.dumps([{"a": i, "b": [1.5, "x" * 20]} for i in range(200)])
def middle():
    hot_leaf(20000)
    fib(14)
    encode()
def outer(secs):
    while time.process_time() < secs:
        middle()
outer(float(sys.argv[1]))
EOF

. "$(dirname "$0")/jit-checks.sh"

# record OUT PYTHON: the workload run under PYTHON (by a name of its own:
# other jobs' pythons are not counted) while perfrecd records into OUT
# (its build-id cache: OUT/.build-id); its pid in $T/pid.
record() {
	local out=$1 py=$2
	mkdir -p "$out"
	: >"$out.log"
	"$PERFRECD" -o "$out" --socket= -F 499 --call-graph dwarf --unwind host 2>"$out.log" &
	DAEMON_PID=$!
	wait_for 30 grep -q '^perfrecd: Recording' "$out.log" || { cat "$out.log"; fail "perfrecd did not start"; }
	date +%s.%N >"$T/t0"
	"$py" "$T/pywl.py" 4 &
	local pid=$!
	echo $pid >"$T/pid"
	wait $pid || fail "the workload under $py failed"
	date +%s.%N >"$T/t1"
	kill -TERM $DAEMON_PID; wait $DAEMON_PID; local rc=$?; DAEMON_PID=
	[ $rc = 0 ] || { cat "$out.log"; fail "perfrecd exited $rc"; }
}

# check_path WHAT FILE PID: the Python path in order, and the native frames around it (perf script).
check_path() {
	local what=$1 f=$2 pid=$3 out
	perf --buildid-dir "$(dirname "$f")" script -i "$f" -F ip,sym,dso --pid "$pid" >"$T/path" 2>"$T/path.err" ||
		{ cat "$T/path.err"; fail "$what: perf script failed"; }
	# per sample, innermost first: py::middle right under... outer, outer under <module>, Py_RunMain above
	out=$(awk 'BEGIN { RS = "" }
		{ n++; s = ""; k = split($0, l, "\n")
		  for (i = 1; i <= k; i++) {
			if (l[i] ~ / py::/) { f = l[i]; sub(/.* py::/, "", f); sub(/ \(.*/, "", f); s = s ">" f }
			else if (l[i] ~ / Py_RunMain /) s = s ">Py_RunMain"
		  }
		  if (s ~ />middle>outer><module>>Py_RunMain/) p++
		  # the C encoder: _json.cpython-*.so (Debian strips its symbols)
		  if ($0 ~ /[/]_json[.]cpython/ && $0 ~ /py::(dumps|JSONEncoder)/) {
			j++; e = index($0, "/_json.cpython"); q = index($0, " py::")
			if (e && q && e < q) below++
		  } }
		END { print n + 0, p + 0, j + 0, below + 0 }' "$T/path")
	read -r samples inorder injson below <<<"$out"
	note "$what: perf script: $inorder of $samples samples show <module> > outer > middle, under Py_RunMain; $below of $injson under json's encoder have it below"
	[ "$samples" -ge 100 ] || fail "$what: only $samples samples of the workload"
	[ $((inorder * 10)) -ge $((samples * 9)) ] ||
		{ awk 'BEGIN { RS = "" } NR <= 3' "$T/path"; fail "$what: the Python path in $inorder of $samples samples"; }
	[ "$injson" -gt 0 ] && [ "$below" = "$injson" ] ||
		fail "$what: json's C encoder below the Python frames in $below of $injson samples"
}

pythons=()
[ -x /usr/bin/python3 ] && pythons+=(/usr/bin/python3)
for v in 3.10 3.11 3.12 3.13; do
	for d in "${PYENV_ROOT:-/nonexistent}/versions/$v".*/bin; do
		[ -x "$d/python$v" ] && { pythons+=("$d/python$v"); break; }
	done
done
[ ${#pythons[@]} -gt 0 ] || skip "no python3 to run"

i=0
for py in "${pythons[@]}"; do
	i=$((i + 1))
	name=pyf$i$$
	ln -s "$py" "$T/$name"
	ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
	record "$T/r$i" "$T/$name"
	pid=$(cat "$T/pid")
	f=$(only_file "$T/r$i")
	what="python $ver ($py)"
	check_path "$what" "$f" "$pid"
	check_perf "$what" "$f" "$pid" py::outer
	# (3.10 calls each Python function through C: _PyEval_Vector and _PyEval_EvalFrame between)
	check_folded "$what" "$f" "$pid" 'py::outer [(][^;]*;(_Py[^;]*;)*py::middle'
	check_views "$what" "$f" "$pid" py::outer
	check_shares "$what" "$f" "$pid" py::hot_leaf
	timeout 120 "$PERFPARSER" --input "$f" --output "$T/pp.out" --debug "$(dirname "$f")" 2>"$T/pp.err" ||
		{ tail "$T/pp.err"; fail "$what: perfparser failed"; }
	out=$(python3 "$TOP/tests/e2e/ppsymbols.py" "$T/pp.out" "$name" "~^py::hot_leaf " \
		"py::middle ($T/pywl.py:11)" "py::outer ($T/pywl.py:15)") ||
		fail "cannot read perfparser's stream"
	read -r samples named whole <<<"$out"
	note "$what: perfparser: $named of $samples samples name hot_leaf, $whole of them under middle under outer"
	[ "$named" -ge 20 ] && [ $((whole * 10)) -ge $((named * 9)) ] ||
		fail "$what: perfparser: hot_leaf under middle under outer in $whole of $named samples"
	rm -f "$T/$name"
done
echo "PASS: Python frames named under ${#pythons[@]} pythons"
