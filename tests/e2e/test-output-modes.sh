#!/bin/bash
# Files are readable by their owner only, as perf's perf.data (0600): under
# umask 022, every file a perfrecctl command writes (snapshot, cut, pprof,
# flamegraph, folded, compress, decompress, unwind, fetch) is 0600, and
# the manifests (.json) and .uploaded markers perfrecd writes have the mode,
# owner and group of their data file (0640), not 0644: a cut holds every
# process's command line and the kernel's map.  The outputs are real:
# perf reads the snapshot and the cut with a clean stderr.
. "$(dirname "$0")/lib.sh"
require_events
require_perf
PY=/usr/bin/python3
[ -x "$PY" ] || skip "python3 is not installed"
umask 022

# A bucket on loopback for the uploads (and a fetch back).
mkdir -p "$T/bucket" "$T/out"
"$PY" "$TOP/tests/e2e/fakes3.py" "$T/bucket" "$T/port" 2>"$T/srv.log" &
SRVPID=$!
trap 'kill "$SRVPID" 2>/dev/null; wait "$SRVPID" 2>/dev/null; cleanup' EXIT
wait_for 10 test -s "$T/port" || { cat "$T/srv.log"; fail "the fake S3 did not start"; }
URL=http://127.0.0.1:$(cat "$T/port")/perf
cat >"$T/conf" <<CONF
[output]
directory=$T/out
rotate-interval=1s
[upload]
upload-url=$URL/
CONF

"$WORKLOAD" 30 >/dev/null 2>&1 &
WPID=$!
"$PERFRECD" -c "$T/conf" --socket "$T/sock" -e cpu-clock -F 199 --call-graph dwarf --unwind file -m 8M 2>"$T/d.log" &
DAEMON_PID=$!
uploaded() { ls "$T"/out/*.data.uploaded >/dev/null 2>&1; }
wait_for 30 uploaded || { cat "$T/d.log"; fail "no file was published and uploaded"; }
f=$(ls "$T"/out/*.data.uploaded | head -1); f=${f%.uploaded}

mode() { stat -c %a "$1"; }
want() { # WHAT FILE MODE
	[ -f "$2" ] && [ ! -L "$2" ] || fail "$1: $2 was not written"
	[ "$(mode "$2")" = "$3" ] || fail "$1: $2 is mode $(mode "$2") under umask 022, not $3"
	note "$1: $(basename "$2") $3"
}
want "data file" "$f" 640
want "manifest" "$f.json" 640
want "upload marker" "$f.uploaded" 640
[ "$(stat -c %u:%g "$f.json")" = "$(stat -c %u:%g "$f")" ] || fail "the manifest's owner differs from its data file's"

C=("$PERFRECCTL" --socket "$T/sock")
"${C[@]}" snapshot "$T/snap.data" >/dev/null || { cat "$T/d.log"; fail "snapshot failed"; }
want snapshot "$T/snap.data" 600
echo old >"$T/snap2.data"; chmod 644 "$T/snap2.data"
"${C[@]}" snapshot --force "$T/snap2.data" >/dev/null || fail "snapshot --force failed"
want "snapshot --force over a 0644 file" "$T/snap2.data" 600
"${C[@]}" cut --from -60s --to now -o "$T/cut.data" "$T/out" 2>"$T/cut.err" || { cat "$T/cut.err"; fail "cut failed"; }
want cut "$T/cut.data" 600
for p in "$T/snap.data" "$T/cut.data"; do
	perf report -i "$p" --stats >/dev/null 2>"$T/perf.err"
	check_perf_stderr "perf report --stats $(basename "$p")" "$T/perf.err"
done
kill "$WPID" 2>/dev/null; wait "$WPID" 2>/dev/null
kill -TERM "$DAEMON_PID"; wait "$DAEMON_PID"; DAEMON_PID=

"$PERFRECCTL" pprof -o "$T/p.pb.gz" "$f" 2>/dev/null || fail "pprof failed"
want pprof "$T/p.pb.gz" 600
"$PERFRECCTL" flamegraph -o "$T/f.svg" "$f" 2>/dev/null || fail "flamegraph failed"
want flamegraph "$T/f.svg" 600
"$PERFRECCTL" folded -o "$T/f.folded" "$f" 2>/dev/null || fail "folded failed"
want folded "$T/f.folded" 600
"$PERFRECCTL" compress "$f" "$T/z.data" || fail "compress failed"
want compress "$T/z.data" 600
"$PERFRECCTL" decompress "$T/z.data" "$T/u.data" || fail "decompress failed"
want decompress "$T/u.data" 600
"$PERFRECCTL" unwind "$f" -o "$T/w.data" 2>"$T/w.err" || { cat "$T/w.err"; fail "unwind failed"; }
want unwind "$T/w.data" 600
mkdir "$T/fetched"
"$PERFRECCTL" fetch --bucket "$URL" --from -10min --to now -o "$T/fetched" >"$T/fetched.list" 2>"$T/fetch.err" ||
	{ cat "$T/fetch.err"; fail "fetch failed"; }
g=$(head -1 "$T/fetched.list")
want fetch "$g" 600
want "fetched manifest" "$g.json" 600
cmp -s "$g" "$T/out/$(basename "$g")" || fail "the fetched file differs from the recorded one"
echo PASS
