#!/usr/bin/env bash
# perfrecctl pprof on bad input (issue 16): a truncated file and garbage get
# a message naming the file and the problem, exit 1 and no profile; a
# sample too short for its event is named and left out, the rest written;
# a deep recursion (stacks as deep as the kernel's callchain limit) gives
# a profile whose stacks perf agrees with.  Never a crash.
. "$(dirname "$0")/lib.sh"
require_events; require_perf
command -v go >/dev/null || skip "go (golang-go) is not installed: no pprof reader"
command -v cc >/dev/null || skip "no C compiler to build the recursive workload"
export HOME=$T GOCACHE=$T/gocache

cat >"$T/deep.c" <<'SRC'
#include <stdlib.h>
#include <time.h>
static volatile unsigned long sink;
__attribute__((noinline)) void spin_at_bottom(double until);
__attribute__((noinline)) void spin_at_bottom(double until)
{
	struct timespec ts;
	do {
		for (int i = 0; i < 100000; i++)
			sink += i;
		clock_gettime(CLOCK_MONOTONIC, &ts);
	} while (ts.tv_sec + ts.tv_nsec / 1e9 < until);
}
__attribute__((noinline)) void recurse(int n, double until);
__attribute__((noinline)) void recurse(int n, double until)
{
	if (n)
		recurse(n - 1, until);
	else
		spin_at_bottom(until);
	sink++;
}
int main(int argc, char **argv)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	recurse(atoi(argv[1]), ts.tv_sec + ts.tv_nsec / 1e9 + atof(argv[2]));
	return 0;
}
SRC
cc -O1 -g -fno-omit-frame-pointer -o "$T/deep" "$T/deep.c" || fail "cannot build the recursive workload"

"$PERFRECD" -o "$T/out" --socket '' -e cpu-clock -F 499 -g --duration 3 2>"$T/err" &
DAEMON_PID=$!
started() { grep -q Recording "$T/err" 2>/dev/null; }
wait_for 30 started || { cat "$T/err"; fail "perfrecd did not start"; }
"$T/deep" 5000 1.5 || fail "the recursive workload failed"
wait $DAEMON_PID; rc=$?; DAEMON_PID=
[ $rc = 0 ] || { cat "$T/err"; fail "perfrecd exited $rc"; }
f=$(only_file "$T/out") || exit 1

# Deep stacks: every sample of the workload, its leaf, and stacks as deep as perf's.
"$PERFRECCTL" pprof --comm deep -o "$T/deep.pb.gz" "$f" 2>"$T/deep.err"; rc=$?
[ $rc = 0 ] || { cat "$T/deep.err"; fail "pprof of deep stacks exited $rc"; }
ours=$(go tool pprof -top -sample_index=samples "$T/deep.pb.gz" 2>/dev/null | sed -n 's/.*Total samples = \([0-9]*\) *$/\1/p')
theirs=$(perf script -i "$f" --comm deep -F comm 2>/dev/null | wc -l)
[ "$ours" = "$theirs" ] || fail "pprof has $ours samples of the recursion, perf script $theirs"
go tool pprof -traces "$T/deep.pb.gz" 2>/dev/null >"$T/traces"
grep -q 'spin_at_bottom$' "$T/traces" || fail "spin_at_bottom is not in the deep stacks"
ours=$(awk '/^-----------\+/ { if (d > m) m = d; d = 0; next } /recurse$/ { d++ } END { if (d > m) m = d; print m + 0 }' "$T/traces")
theirs=$(perf script -i "$f" --comm deep -F ip,sym 2>/dev/null | awk 'NF == 0 { if (d > m) m = d; d = 0; next } $2 == "recurse" { d++ } END { if (d > m) m = d; print m + 0 }')
note "deepest stack: $ours recurse frames in pprof, $theirs in perf script"
[ "$ours" -ge 100 ] || fail "the deepest stack has only $ours recurse frames"
[ "$ours" = "$theirs" ] || fail "pprof's deepest stack has $ours recurse frames, perf's $theirs"

# A truncated file: named, with its problem; no profile, no crash.
sz=$(stat -c %s "$f")
head -c $((sz / 2)) "$f" >"$T/cut.data"
"$PERFRECCTL" pprof -o "$T/cut.pb.gz" "$T/cut.data" 2>"$T/cut.err"; rc=$?
[ $rc = 1 ] || { cat "$T/cut.err"; fail "pprof of a truncated file exited $rc, not 1"; }
grep -q "cut.data: .*past end of file" "$T/cut.err" || { cat "$T/cut.err"; fail "no message naming the truncated file and its problem"; }
[ -e "$T/cut.pb.gz" ] && fail "a profile was written from a truncated file"

# Garbage.
head -c 100000 /dev/urandom >"$T/junk.data"
"$PERFRECCTL" pprof -o "$T/junk.pb.gz" "$T/junk.data" 2>"$T/junk.err"; rc=$?
[ $rc = 1 ] || { cat "$T/junk.err"; fail "pprof of random bytes exited $rc, not 1"; }
grep -q "junk.data" "$T/junk.err" || { cat "$T/junk.err"; fail "the message does not name the file"; }

# A sample cut short (tests/fuzz/damage.py's): named and left out, the others kept.
python3 "$TOP/tests/fuzz/damage.py" "$f" "$T/dmg" >/dev/null || fail "damage.py failed"
[ -e "$T/dmg/sample-short.data" ] || fail "damage.py wrote no sample-short.data"
"$PERFRECCTL" pprof -o "$T/short.pb.gz" "$T/dmg/sample-short.data" 2>"$T/short.err"; rc=$?
[ $rc = 0 ] || { cat "$T/short.err"; fail "pprof of a file with one short sample exited $rc"; }
grep -q "sample-short.data: 1 damaged samples" "$T/short.err" || { cat "$T/short.err"; fail "the short sample is not reported"; }
ours=$(go tool pprof -top -sample_index=samples "$T/short.pb.gz" 2>/dev/null | sed -n 's/.*Total samples = \([0-9]*\) *$/\1/p')
all=$(perf_samples "$f")
[ "$ours" = $((all - 1)) ] || fail "the profile has $ours samples, the sound file $all: not all but the short one"
exit 0
