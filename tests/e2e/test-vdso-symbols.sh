#!/usr/bin/env bash
# vdso frames are named without anything earlier runs left on the machine
# (issue 28 item 18): with HOME, and so ~/.debug, empty, a program that
# spends its time in clock_gettime() (the vdso's __vdso_clock_gettime),
# one started before perfrecd (its maps synthesized) and one during the
# recording (its maps from the kernel), has its vdso frames named by perf
# and by perfrecctl folded and pprof, in the file and in a cut of it.  Our
# views take the running vdso for a file of the running kernel, as perf
# takes its own.  The synthesized [vdso] maps carry the vdso's build id and
# perfrecd's build-id cache keeps the image under it, so a file of another
# kernel is read with the right image, by perf --buildid-dir and pprof
# --buildid-dir, and with none (not the running one) without the cache.
. "$(dirname "$0")/lib.sh"
require_events; require_perf
command -v cc >/dev/null || skip "cc is not installed"
export HOME=$T/home
mkdir -p "$HOME"
unset DEBUGINFOD_URLS
cd "$T" || exit 1

cat >clock.c <<'SRC'
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
int main(int argc, char **argv)
{
	struct timespec a, b;
	long ms = atol(argv[1]);
	/* With a go file: wait for it, so the maps predate the recording. */
	while (argc > 2 && access(argv[2], F_OK) != 0)
		usleep(10000);
	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((b.tv_sec - a.tv_sec) * 1000L + (b.tv_nsec - a.tv_nsec) / 1000000L < ms);
	return 0;
}
SRC
cc -O1 -g -o clock-before clock.c && cp clock-before clock-during || fail "cannot build the program"

./clock-before 1500 "$T/go" &
before=$!
mkdir -m 0700 "$T/cache"
printf '[output]\nbuildid-cache=%s\n' "$T/cache" >"$T/conf"
"$PERFRECD" -c "$T/conf" -o "$T/out" --socket '' -e cpu-clock -F 499 -g 2>"$T/err" &
DAEMON_PID=$!
recording() { ls "$T/out"/*.data.tmp >/dev/null 2>&1; }
wait_for 30 recording || { cat "$T/err"; fail "perfrecd did not start a file"; }
touch "$T/go"
./clock-during 1500 || fail "clock-during failed"
wait $before || fail "clock-before failed"
kill -INT $DAEMON_PID; wait $DAEMON_PID; rc=$?; DAEMON_PID=
[ $rc = 0 ] || { cat "$T/err"; fail "perfrecd exited $rc"; }
f=$(only_file "$T/out") || exit 1
"$PERFRECCTL" cut --from "$(date -u -d @$(( $(date +%s) - 600 )) +%Y-%m-%dT%H:%M:%SZ)" \
	--to "$(date -u -d @$(( $(date +%s) + 60 )) +%Y-%m-%dT%H:%M:%SZ)" -o "$T/cut.data" "$T/out" 2>"$T/cut.err" ||
	{ cat "$T/cut.err"; fail "cut failed"; }

for data in "$f" "$T/cut.data"; do
	for comm in clock-before clock-during; do
		what="$comm in $(basename "$data")"
		# perf: the leaf of each sample in the vdso.
		perf script -i "$data" --comms $comm -F ip,sym,dso -G 2>/dev/null | grep '(\[vdso\])' >"$T/perf.vdso"
		[ -s "$T/perf.vdso" ] || fail "$what: perf sees no samples in the vdso: the test proves nothing"
		grep -q unknown "$T/perf.vdso" && { sort "$T/perf.vdso" | uniq -c | head; fail "$what: perf leaves vdso frames unnamed"; }
		# Ours: folded stacks and a pprof profile.
		"$PERFRECCTL" folded --no-debuginfod --comm $comm -o "$T/folded" "$data" 2>"$T/view.err" ||
			{ cat "$T/view.err"; fail "$what: folded failed"; }
		grep -q '__vdso_clock_gettime' "$T/folded" || { head "$T/folded"; fail "$what: folded names no vdso frame"; }
		# Every frame perf names, ours names.  Not "no [unknown] at all": a
		# frame-pointer walk through code built without them (clock.c at
		# -O1, ld.so starting clock-during) reads stack words that are no
		# return addresses, and perf leaves those [unknown] too.  Counted
		# in samples: folded counts them per stack.
		ours=$(awk '{n = gsub(/\[unknown\]/, "&"); s += n * $NF} END {print s + 0}' "$T/folded")
		theirs=$(perf script -i "$data" --comms $comm -F ip,sym 2>/dev/null | grep -c '\[unknown\]')
		[ "$ours" -le "$theirs" ] || { grep unknown "$T/folded" | head
			fail "$what: folded leaves frames unnamed that perf names ($ours against $theirs)"; }
		"$PERFRECCTL" pprof --no-debuginfod --comm $comm -o "$T/p.pb.gz" "$data" 2>"$T/view.err" ||
			{ cat "$T/view.err"; fail "$what: pprof failed"; }
		zcat "$T/p.pb.gz" | grep -aq '__vdso_clock_gettime' || fail "$what: the pprof profile names no vdso frame"
	done
done

# The running vdso, as this shell's python maps it, and its build id.
python3 - "$T/vdso.img" <<'PY' || fail "cannot read the running vdso"
import sys
for l in open("/proc/self/maps"):
    if l.rstrip().endswith("[vdso]"):
        a, b = (int(x, 16) for x in l.split()[0].split("-"))
m = open("/proc/self/mem", "rb"); m.seek(a)
open(sys.argv[1], "wb").write(m.read(b - a))
PY
bid=$(readelf -n "$T/vdso.img" | awk '/Build ID:/ {print $3}')
[ -n "$bid" ] || skip "the running vdso has no build id"
entry=$T/cache/.build-id/${bid:0:2}/${bid:2}
[ -f "$entry" ] || { find "$T/cache" | head; fail "the build-id cache has no vdso $bid"; }
cmp -s "$entry" <(head -c "$(stat -c %s "$entry")" "$T/vdso.img") || fail "the cached vdso is not the running one"
perf script -i "$f" --comms clock-before -F ip,sym,dso --show-mmap-events 2>/dev/null | grep -q "<$bid>.*\[vdso\]" ||
	fail "the synthesized [vdso] map carries no build id"

# Another kernel's file: its vdso build id is not the running one's.
other=0123456789abcdef0123456789abcdef01234567
mkdir -p "$T/other/.build-id/${other:0:2}"
python3 - "$f" "$T/other.data" "$entry" "$T/other/.build-id/${other:0:2}/${other:2}" "$bid" "$other" <<'PY'
import sys
f, out, img, dst, old, new = sys.argv[1:]
old, new = bytes.fromhex(old), bytes.fromhex(new)
d = open(f, "rb").read()
assert old in d
open(out, "wb").write(d.replace(old, new))
open(dst, "wb").write(open(img, "rb").read().replace(old, new))
PY
perf script -i "$T/other.data" --comms clock-before -F ip,sym,dso -G 2>/dev/null | grep '(\[vdso\])' >"$T/perf.vdso"
grep -q __vdso "$T/perf.vdso" && fail "perf names another kernel's vdso frames with its own vdso: the test proves nothing"
perf --buildid-dir "$T/other" script -i "$T/other.data" --comms clock-before -F ip,sym,dso -G 2>/dev/null |
	grep '(\[vdso\])' >"$T/perf.vdso"
[ -s "$T/perf.vdso" ] && ! grep -q unknown "$T/perf.vdso" ||
	{ sort "$T/perf.vdso" | uniq -c | head; fail "perf --buildid-dir does not name another kernel's vdso frames"; }
for dir in "" "$T/other"; do
	"$PERFRECCTL" pprof --no-debuginfod ${dir:+--buildid-dir "$dir"} --comm clock-before -o "$T/o.pb.gz" "$T/other.data" \
		2>"$T/view.err" || { cat "$T/view.err"; fail "pprof failed on another kernel's file"; }
	if zcat "$T/o.pb.gz" | grep -aq __vdso_clock_gettime; then
		[ -n "$dir" ] || fail "pprof names another kernel's vdso frames with the running vdso"
	else
		[ -z "$dir" ] || fail "pprof --buildid-dir does not name another kernel's vdso frames"
	fi
done
exit 0
