#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The `unwind` part of `make bench` (tests/bench/README.md): host
# unwinding's CPU per sample before the unwind tables (libdwfl on every
# sample) and with them, on the same samples.  Each workload is recorded
# alone by `perf record --call-graph dwarf,STACK` for SECS; bench-unwind
# then rewrites every DWARF sample of the file with three unwinders side by
# side (libdwfl only; tables built at first use; tables loaded from the
# directory the second saved) and prints CPU per sample (mean and median),
# frames per sample and how many samples differ from libdwfl's.
#
# Workloads: tests/e2e/nofp, and where installed xz (compressing), python3
# (json and re), sqlite3 (a recursive query), cc1 (gcc -O2 of lib/unwind.c)
# and node (a JIT-compiled loop: its frames are walked by frame pointers).
#
# Writes RESULTS/unwind-cpu.txt.  Environment: BENCH_UNWIND_SECS (3),
# BENCH_STACK_SIZE (8192), BENCH_RESULTS (tests/bench/results).
set -u
cd "$(dirname "$0")/../.."
ROOT=$PWD
SECS=${BENCH_UNWIND_SECS:-3}
STACK=${BENCH_STACK_SIZE:-8192}
RESULTS=${BENCH_RESULTS:-$ROOT/tests/bench/results}
BENCH=$ROOT/tests/bench/bench-unwind

die() { echo "bench unwind: $*" >&2; exit 1; }
command -v perf >/dev/null || die "perf not installed (linux-perf)"
[ -x "$BENCH" ] || make -s tests/bench/bench-unwind || die "cannot build bench-unwind"
[ -x tests/e2e/nofp ] || make -s tests/e2e/nofp || die "cannot build tests/e2e/nofp"
mkdir -p "$RESULTS"
TMP=$(mktemp -d /tmp/perfrec-bench-unwind.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
head -c 30000000 /dev/urandom | base64 >"$TMP/data"
cat >"$TMP/busy.js" <<JS
function leaf(n) { let s = 0; for (let i = 0; i < n; i++) s += Math.sqrt(i) * i; return s; }
function mid(n) { return leaf(n) + leaf(n / 2); }
const end = Date.now() + $SECS * 1000; let x = 0;
while (Date.now() < end) x += mid(20000) + JSON.stringify({ a: x }).length;
JS

# NAME NEEDS COMMAND...: one workload (NEEDS: the program it runs), recorded alone, benched.
one() {
	local name=$1 needs=$2; shift 2
	command -v "$needs" >/dev/null || { echo "$name: $needs not installed, skipped"; return; }
	perf record -q -N --buildid-mmap -e cpu-clock -F 999 --call-graph "dwarf,$STACK" -o "$TMP/$name.data" \
		-- "$@" >/dev/null 2>"$TMP/$name.log" || { echo "$name: perf record failed"; return; }
	echo "== $name"
	"$BENCH" "$TMP/$name.data"
}

{
	echo "# $(date -u +%FT%TZ) $(uname -r), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
	one nofp tests/e2e/nofp tests/e2e/nofp "$SECS"
	one xz xz sh -c "timeout $SECS xz -9 -c '$TMP/data' >/dev/null; exit 0"
	one python3 /usr/bin/python3 /usr/bin/python3 -c "
import time, json, re
end = time.time() + $SECS
while time.time() < end:
    d = {str(i): [i, str(i) * 3] for i in range(2000)}
    re.findall(r'1+', json.dumps(d))"
	one sqlite3 sqlite3 sqlite3 :memory: "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT 4000000)
		SELECT sum(x), count(DISTINCT x % 1000) FROM c;"
	one cc1 gcc gcc -O2 -c -o /dev/null -Ilib/include -Iinternal -D_GNU_SOURCE lib/unwind.c
	one node node node "$TMP/busy.js"
	echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$RESULTS/unwind-cpu.txt"
