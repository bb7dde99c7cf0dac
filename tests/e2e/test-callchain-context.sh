#!/usr/bin/env bash
# A user stack whose frame-pointer walk finds -1 where a return address
# should be (a frame record that was never set up): the kernel copies it
# into the callchain, where perf reads it as an unknown PERF_CONTEXT marker
# and throws the whole chain away (or prints a garbage frame).  perfrecd
# ends such a user chain before the value (a debug line, -v), and perf shows
# every such sample with its real frames.
. "$(dirname "$0")/lib.sh"
require_events; require_perf
[ "$(uname -m)" = x86_64 ] || skip "the fake frame is x86-64 assembly"
command -v cc >/dev/null || skip "no C compiler to build the workload"

cat >"$T/badframe.c" <<'SRC'
#include <stdint.h>
#include <stdlib.h>

/* Spins with %rbp at a frame record {next 0, return address -1}. */
int main(int argc, char **argv)
{
	static uint64_t fake[2] = { 0, ~0ULL };
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 1;

	while (n--) {
		unsigned long spins = 100000000;

		__asm__ volatile("push %%rbp\n\tmov %1, %%rbp\n1:\tdec %0\n\tjnz 1b\n\tpop %%rbp"
				 : "+r"(spins) : "r"(fake) : "cc", "memory");
	}
	return 0;
}
SRC
cc -O1 -o "$T/badframe" "$T/badframe.c" || fail "cannot build the workload"

"$PERFRECD" -o "$T/out" --socket '' -e cpu-clock -F 999 -g --duration 2 2>"$T/err" &
DAEMON_PID=$!
started() { grep -q Recording "$T/err" 2>/dev/null; }
wait_for 30 started || { cat "$T/err"; fail "perfrecd did not start"; }
"$T/badframe" 15 &
bf=$!
wait $DAEMON_PID; rc=$?; DAEMON_PID=
kill $bf 2>/dev/null; wait $bf 2>/dev/null
[ $rc = 0 ] || { cat "$T/err"; fail "perfrecd exited $rc"; }
f=$(only_file "$T/out") || exit 1

# The workload's samples, and those perf shows with no frame at all (it
# throws a chain away at a context marker it does not know).
perf script -i "$f" -F comm,ip 2>"$T/script.err" | awk '
	function end() { if (keep) { n++; if (!frames) empty++ } }
	/^ *[^ \t]/ { end(); keep = ($1 == "badframe"); frames = 0; next }
	keep && NF { frames++; print }
	END { end(); print n + 0, empty + 0 > "/dev/stderr" }' >"$T/chains" 2>"$T/count"
check_perf_stderr "perf script" "$T/script.err"
read -r n empty <"$T/count"
note "badframe: $n samples, $empty shown without any frame"
[ "$n" -gt 0 ] || fail "no samples of the workload"
[ "$empty" = 0 ] || fail "perf shows $empty of $n samples without frames: their chains kept the PERF_CONTEXT value"
if grep -qi 'ffffffffffffffff' "$T/chains"; then
	grep -i -m3 'ffffffffffffffff' "$T/chains"
	fail "perf shows the PERF_CONTEXT value as a frame"
fi
# Ending such chains is routine for any -g recording of code without frame
# pointers and nothing a user can act on: a debug line (-v), not a notice.
if grep -q 'PERF_CONTEXT range' "$T/err"; then
	cat "$T/err"; fail "perfrecd logged the routine chain repair at its default level"
fi
exit 0
