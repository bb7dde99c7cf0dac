#!/usr/bin/env bash
# Publication is a transaction: a file with its final name always has its
# manifest beside it, and whatever a killed run left in the middle of one
# is put right at the next start.
#  A. Rotated files: the manifest is in place before the data file gets its
#     name (NAME.json's mtime is not after NAME's ctime, the rename).
#  B. Killed between manifest and rename (NAME.json beside a finished
#     NAME.tmp): the next start renames it, unchanged (same sha256).
#  C. Killed between rename and manifest (a run of an older perfrecd): the
#     next start writes the manifest from the file; its sample count is
#     perf's.
#  D. A stale NAME.json.tmp is removed.
#  E. A .tmp with no record (zero bytes, or header and attrs only: a run
#     killed right after creating it) is removed, never published.
. "$(dirname "$0")/lib.sh"
require_events; require_perf

out=$T/out
until_true() { # CMD...: poll for up to 60 s
	local i
	for i in $(seq 600); do "$@" && return 0; sleep 0.1; done
	return 1
}
stop_daemon() {
	kill -TERM "$DAEMON_PID"; wait "$DAEMON_PID"; local rc=$?; DAEMON_PID=
	[ $rc = 0 ] || { cat "$T/daemon.err"; fail "perfrecd exited $rc"; }
}
wrote_at_least() { [ "$(grep -c '^perfrecd: Wrote' "$T/daemon.err")" -ge "$1" ]; }
json_field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }

"$WORKLOAD" 30 >/dev/null &
wl=$!
"$PERFRECD" -o "$out" -F 999 -g --socket= 2>"$T/daemon.err" &
DAEMON_PID=$!
for i in 1 2 3; do
	until_true grep -q "Recording [0-9]* CPU" "$T/daemon.err" || fail "perfrecd did not start"
	sleep 0.5
	kill -USR2 "$DAEMON_PID"
	until_true wrote_at_least "$i" || { cat "$T/daemon.err"; fail "rotation $i did not publish"; }
done
stop_daemon

# A: for every file, the manifest was complete before the rename.
n=0
for f in "$out"/*.data; do
	[ -f "$f.json" ] || fail "A: $f has no manifest"
	python3 - "$f" <<'PY' || fail "A: $f was renamed into place before its manifest was written"
import os, sys
f = sys.argv[1]
if os.stat(f + ".json").st_mtime_ns > os.stat(f).st_ctime_ns:
    sys.exit(1)
PY
	n=$((n + 1))
done
[ $n -ge 4 ] || fail "A: expected at least 4 files, found $n"
note "A: $n files, each manifest written before its file was named"

files=("$out"/*.data)
b=${files[1]} c=${files[2]}
# B: undo the rename of one file: NAME.json beside a finished NAME.tmp.
b_sha=$(sha256sum <"$b" | cut -d' ' -f1)
[ "$(json_field "$b.json" sha256)" = "$b_sha" ] || fail "B: manifest sha256 is not the file's"
mv "$b" "$b.tmp"
# C: a file without its manifest.
c_perf=$(perf_samples "$c")
rm "$c.json"
# D: a stale manifest temp.
echo '{"half' >"$c.json.tmp"
# E: empty .tmp files.
e0=$out/perfrecd-vm-20260101T000000.000Z-000900.data.tmp
e1=$out/perfrecd-vm-20260101T000000.000Z-000901.data.tmp
: >"$e0"
python3 - "${files[0]}" "$e1" <<'PY'
import struct, sys
src = open(sys.argv[1], "rb").read()
# header: magic, size, attr_size, attrs{off,size}, data{off,size}, event_types, flags[4]
data_off = struct.unpack_from("<Q", src, 40)[0]
hdr = bytearray(src[:data_off])
struct.pack_into("<Q", hdr, 48, 0)           # data.size 0, as at creation
struct.pack_into("<4Q", hdr, 72, 0, 0, 0, 0) # no features yet
open(sys.argv[2], "wb").write(hdr)
PY

"$PERFRECD" -o "$out" -F 999 --socket= 2>"$T/daemon.err" &
DAEMON_PID=$!
until_true grep -q "Recording" "$T/daemon.err" || { cat "$T/daemon.err"; fail "perfrecd did not start again"; }
stop_daemon
kill "$wl" 2>/dev/null; wait "$wl" 2>/dev/null
cat "$T/daemon.err"

[ -f "$b" ] && [ ! -e "$b.tmp" ] || { ls -la "$out"; fail "B: the interrupted publication of $b was not completed"; }
[ "$(sha256sum <"$b" | cut -d' ' -f1)" = "$b_sha" ] || fail "B: the completed file is not the one its manifest describes"
ls "$out" | grep -q -- "-recovered.data$" && { ls -la "$out"; fail "B/E: something was published as recovered"; }
note "B: publication completed, sha256 unchanged"

[ -f "$c.json" ] || fail "C: no manifest was written for $c"
[ "$(json_field "$c.json" samples)" = "$c_perf" ] || fail "C: manifest says $(json_field "$c.json" samples) samples, perf counts $c_perf"
[ "$(json_field "$c.json" sha256)" = "$(sha256sum <"$c" | cut -d' ' -f1)" ] || fail "C: manifest sha256 is not the file's"
note "C: missing manifest written from the file ($c_perf samples, as perf counts)"

[ -e "$c.json.tmp" ] && fail "D: the stale $c.json.tmp is still there"
[ -e "$e0" ] && fail "E: the zero-byte $e0 is still there"
[ -e "$e1" ] && fail "E: the header-only $e1 is still there"
for f in "$out"/*.data; do
	[ -f "$f.json" ] || fail "$f has no manifest after the restart"
	"$PERFRECCTL" verify "$f" >/dev/null || fail "verify rejects $f"
done
note "D, E: stale manifest and empty .tmp files removed"
