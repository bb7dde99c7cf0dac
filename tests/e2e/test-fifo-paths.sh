#!/usr/bin/env bash
# Paths that a recording or a process names may be FIFOs or devices by the
# time they are opened (issue 28 item 17): an open() of a FIFO blocks until
# a writer comes, a device may be read forever.  The views (flamegraph,
# pprof, folded) of a file whose mapped binary became a FIFO, or a link to
# /dev/zero, must finish and leave its frames unnamed; perfrecd must not
# hang in its synthesis (nor its build-id cache worker) on a running
# process whose deleted binary's "NAME (deleted)" is now a FIFO.
. "$(dirname "$0")/lib.sh"
require_events
command -v cc >/dev/null || skip "cc is not installed"
export HOME=$T/home   # no ~/.debug of earlier runs may hold the binary
mkdir -p "$HOME"
unset DEBUGINFOD_URLS
cd "$T" || exit 1

cat >prog.c <<'SRC'
#include <stdlib.h>
#include <time.h>
static volatile unsigned long sink;
__attribute__((noinline)) void fifo_hot(void)
{
	for (unsigned long i = 0; i < 2000000; i++)
		sink += i * i;
}
int main(int argc, char **argv)
{
	struct timespec a, b;
	long ms = argc > 1 ? atol(argv[1]) : 1500;
	clock_gettime(CLOCK_MONOTONIC, &a);
	do {
		fifo_hot();
		clock_gettime(CLOCK_MONOTONIC, &b);
	} while ((b.tv_sec - a.tv_sec) * 1000L + (b.tv_nsec - a.tv_nsec) / 1000000L < ms);
	return 0;
}
SRC
mkdir -p bin
cc -O1 -g -o bin/prog-fifo prog.c || fail "cannot build the program"
cp bin/prog-fifo bin/prog-dev

# No build-id cache: the views must meet the FIFO and the device themselves.
printf '[output]\nbuildid-cache=no\n' >"$T/nocache.conf"
"$PERFRECD" -c "$T/nocache.conf" -o "$T/out" --socket '' -e cpu-clock -F 499 -g --duration 4 2>"$T/err" &
DAEMON_PID=$!
started() { grep -q Recording "$T/err" 2>/dev/null; }
wait_for 30 started || { cat "$T/err"; fail "perfrecd did not start"; }
bin/prog-fifo || fail "prog-fifo failed"
bin/prog-dev || fail "prog-dev failed"
wait $DAEMON_PID; rc=$?; DAEMON_PID=
[ $rc = 0 ] || { cat "$T/err"; fail "perfrecd exited $rc"; }
f=$(only_file "$T/out") || exit 1
"$PERFRECCTL" folded --no-debuginfod --comm prog-fifo "$f" 2>/dev/null | grep -q fifo_hot ||
	fail "fifo_hot is not named while the binary is still there: the test proves nothing"

# The mapped paths are now a FIFO (nobody writes to it) and a link to /dev/zero.
rm bin/prog-fifo bin/prog-dev
mkfifo bin/prog-fifo
ln -s /dev/zero bin/prog-dev
for view in folded flamegraph pprof; do
	for comm in prog-fifo prog-dev; do
		timeout 60 "$PERFRECCTL" "$view" --no-debuginfod --comm $comm -o "$T/$view.$comm" "$f" 2>"$T/view.err"
		rc=$?
		[ $rc = 124 ] && fail "perfrecctl $view hangs on a file whose mapped binary is now ${comm#prog-}"
		[ $rc = 0 ] || { cat "$T/view.err"; fail "perfrecctl $view failed ($rc) on $comm"; }
	done
	grep -q fifo_hot "$T/folded.prog-fifo" "$T/folded.prog-dev" 2>/dev/null &&
		fail "fifo_hot is named from a FIFO or a device"
done
grep -q '\[unknown\]\|prog-' "$T/folded.prog-fifo" || { head "$T/folded.prog-fifo"; fail "no unnamed frames of prog-fifo"; }

# perfrecd: a running process whose deleted binary's name is now a FIFO.
mkdir -p run
cc -O1 -o run/prog-gone prog.c || fail "cannot build the program"
run/prog-gone 60000 &
gone=$!
rm run/prog-gone
mkfifo "run/prog-gone (deleted)"
grep -q 'prog-gone (deleted)' /proc/$gone/maps || fail "the maps do not name the deleted binary"
printf '[output]\nbuildid-cache=%s\n' "$T/cache" >"$T/conf"
mkdir -m 0700 "$T/cache"
"$PERFRECD" -c "$T/conf" -o "$T/out2" --socket '' -e cpu-clock -F 499 --duration 2 2>"$T/err2" &
DAEMON_PID=$!
done_recording() { ! kill -0 $DAEMON_PID 2>/dev/null; }
if ! wait_for 60 done_recording; then
	kill -9 $gone; cat "$T/err2"
	fail "perfrecd hangs on a process whose binary's name is now a FIFO"
fi
wait $DAEMON_PID; rc=$?; DAEMON_PID=
kill $gone; wait $gone 2>/dev/null
[ $rc = 0 ] || { cat "$T/err2"; fail "perfrecd exited $rc"; }
only_file "$T/out2" >/dev/null || exit 1
exit 0
