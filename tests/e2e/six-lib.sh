# The six real programs of issue 25 (sourced by tests/e2e/test-six-*.sh
# after lib.sh): Debian's own binaries, none built with frame pointers,
# each busy for a second or two of CPU.
#   xz       /usr/bin/xz -6 compressing 4 MB of base64 text
#   python3  Debian's /usr/bin/python3 (not a pyenv shim), recursive fib
#   sqlite3  /usr/bin/sqlite3, a recursive CTE sorted in memory
#   cc1      gcc -O1 -c of a generated 700-function C file (gcc runs cc1;
#            at -O2 its value-range code recurses deeper than the 8 KiB
#            of stack a sample copies, for 5% of the samples, in perf's
#            recordings as in ours)
#   node     /usr/bin/node, recursive fib in V8's JIT code
#   storm    500 short-lived processes: /bin/sh running /usr/bin/md5sum
#            on a 1 MB file, one after the other

# How perfrecd records in these tests: host unwinding of DWARF stacks,
# perfrecd's default (issue 25), so nothing to add.
SIX_UNWIND=()

SIX_PROGRAMS="xz python3 sqlite3 cc1 node storm"

# six_require: the programs.  Their packages are in the Makefile's deps
# list (make deps installs them), so a missing one fails, not skips.
six_require() {
	local f
	for f in /usr/bin/xz /usr/bin/python3 /usr/bin/sqlite3 /usr/bin/gcc /usr/bin/node /usr/bin/md5sum; do
		[ -x "$f" ] || fail "$f is not installed (make deps installs the six programs' packages)"
	done
	[ -x "$(gcc -print-prog-name=cc1)" ] || fail "gcc's cc1 is not installed (make deps)"
}

# six_setup: the programs' inputs, in $T/six.
six_setup() {
	local i
	mkdir -p "$T/six"
	head -c 3000000 /dev/urandom | base64 >"$T/six/data.txt"
	head -c 1000000 /dev/urandom >"$T/six/blob"
	{
		for ((i = 0; i < 700; i++)); do
			echo "static int g$i[64];"
			echo "int f$i(int n, const char *p) { int s = $i; for (int j = 0; j < n; j++) { s += g$i[j & 63] * j + p[j % 7]; if (s & 1) s = s * 3 + 1; else s /= 2; } return s; }"
		done
	} >"$T/six/big.c"
	cat >"$T/six/storm.sh" <<'EOF'
i=0
while [ $i -lt 500 ]; do /usr/bin/md5sum "$1" >/dev/null || exit 1; i=$((i + 1)); done
EOF
}

# six_cmd NAME: the program's command line.
six_cmd() {
	case $1 in
	xz) echo /usr/bin/xz -6 -T1 -c "$T/six/data.txt" ;;
	python3) echo /usr/bin/python3 -I -c "'def fib(n): return n if n < 2 else fib(n - 1) + fib(n - 2)
fib(36)'" ;;
	sqlite3) echo /usr/bin/sqlite3 :memory: "'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 2000000)
SELECT count(*), sum(length(hex(x * 7919))) FROM (SELECT x FROM c ORDER BY (x * 7919) % 1000003);'" ;;
	cc1) echo /usr/bin/gcc -O1 -c "$T/six/big.c" -o "$T/six/big.o" ;;
	node) echo /usr/bin/node -e "'function f(n) { return n < 2 ? n : f(n - 1) + f(n - 2) }
let s = 0; for (let i = 0; i < 3; i++) s += f(38); console.log(s)'" ;;
	storm) echo /bin/sh "$T/six/storm.sh" "$T/six/blob" ;;
	esac
}

# six_run NAME [WRAPPER...]: run the program (under WRAPPER, e.g. perf
# record ... --), its output to /dev/null; the pid of its process tree's
# root goes to $T/six/NAME.pid.  Fails the test if the program fails.
six_run() {
	local name=$1; shift
	"$@" /bin/sh -c 'echo $$ >"$1"; shift; eval exec "$@"' sh "$T/six/$name.pid" "$(six_cmd "$name")" \
		>/dev/null 2>"$T/six/$name.err" || { cat "$T/six/$name.err"; fail "$name failed"; }
	[ -s "$T/six/$name.pid" ] || fail "$name: no pid"
}
