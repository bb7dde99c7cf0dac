#!/usr/bin/env bash
# The shipped configuration bounds itself (issue 18): conf/perfrecd.conf as
# shipped, with only the directory (a small tmpfs) and rotate-interval (1s,
# not 5min, to see many files in a test) changed, recording at a high rate:
#  - files rotate and are published with their manifests;
#  - published files stay within max-bytes (10% of the file system);
#  - when something else eats into the last 15% (min-free), the oldest
#    published files go until that much is free again;
#  - when removing them is not enough, perfrecd writes nothing more and
#    counts what it drops as lost, then records again once space returns;
#  - the files are compressed (compress=yes) and perf report reads them; a
#    cut of them is plain and opens in hotspot's perfparser;
#  - they hold whole stacks unwound on the host (callchain=dwarf,
#    unwind=host): plain callchains, no user registers or stacks.
. "$(dirname "$0")/lib.sh"
require_events

mnt=$T/small
mkdir -p "$mnt"
# Small enough that compressed files (the default) reach max-bytes soon.
mount -t tmpfs -o size=40M tmpfs "$mnt" || skip "cannot mount a tmpfs here"
trap 'umount -l "$mnt" 2>/dev/null; cleanup' EXIT
conf=$TOP/conf/perfrecd.conf
grep -q '^rotate-interval=5min$' "$conf" || fail "the shipped config does not rotate every 5min"
sed -e "s|^directory=.*|directory=$mnt|" -e 's|^rotate-interval=.*|rotate-interval=1s|' "$conf" >"$T/conf"
[ "$(diff "$conf" "$T/conf" | grep -c '^>')" = 2 ] || fail "the test changes more than two lines of the shipped config"
"$PERFRECD_DEFAULT" -c "$T/conf" --check-config >"$T/effective" || fail "the shipped config does not load"
grep -qx 'max-bytes=10% 4294967296' "$T/effective" && grep -qx 'min-free=15% 4294967296' "$T/effective" \
	&& grep -qx 'max-age=604800s' "$T/effective" || { cat "$T/effective"; fail "unexpected retention defaults"; }

# The file system as perfrecd measures it (statvfs): size and free bytes.
fs_size() { stat -f -c '%b %S' "$mnt" | awk '{print $1 * $2}'; }
fs_free() { stat -f -c '%a %S' "$mnt" | awk '{print $1 * $2}'; }
size=$(fs_size)
cap=$((size * 10 / 100)) floor=$((size * 15 / 100))
note "tmpfs of $size bytes: max-bytes $cap, min-free $floor"

published() { ls "$mnt"/*.data 2>/dev/null | grep -c .; }
# Published bytes less the newest file: retention runs right after each
# publication, so only the file published last may be over max-bytes.
check_cap() {
	local total newest
	total=$(cat "$mnt"/*.data 2>/dev/null | wc -c)
	newest=$(ls "$mnt"/*.data 2>/dev/null | tail -1)
	newest=$([ -n "$newest" ] && stat -c %s "$newest" 2>/dev/null || echo 0)
	[ $((total - newest)) -le "$cap" ] || { ls -l "$mnt"; fail "published files take $total bytes, max-bytes is $cap"; }
}
logged() { grep -q "$1" "$T/err"; }
# Poll @CMD for up to @SECS, checking the cap at each step.
watch_until() {
	local secs=$1 i; shift
	for ((i = 0; i < secs * 10; i++)); do
		check_cap
		"$@" && return 0
		sleep 0.1
	done
	"$@"
}

"$WORKLOAD" 120 >/dev/null &
wl=$!
"$PERFRECD_DEFAULT" -c "$T/conf" -F 4000 --socket= 2>"$T/err" &
DAEMON_PID=$!

# 1. Rotation, and max-bytes taking the oldest once reached.
watch_until 60 logged "retention: max-bytes" || { cat "$T/err"; fail "max-bytes never removed a file"; }
watch_until 30 eval '[ "$(published)" -ge 3 ]' || fail "fewer than 3 files published"
for f in "$mnt"/*.data; do [ -f "$f.json" ] || fail "$f has no manifest"; done
note "$(grep -c 'Wrote ' "$T/err") files published, $(grep -c 'retention: max-bytes' "$T/err") removed for max-bytes"

# 2. Something else takes the disk down to 2M below the floor: our oldest go.
free=$(fs_free)
head -c $((free - floor + 2 * 1024 * 1024)) /dev/zero >"$mnt/ballast"
watch_until 30 logged "retention: min-free" || { cat "$T/err"; df "$mnt"; fail "the floor removed nothing"; }
watch_until 30 eval '[ "$(fs_free)" -ge "$floor" ]' || { df "$mnt"; fail "free space stays below min-free"; }
kill -0 $DAEMON_PID || fail "perfrecd died"

# 3. It takes all but 1M: no published file can make up for that; perfrecd
#    drops records, and records again once the space is back.
rm "$mnt/ballast"
free=$(fs_free)
head -c $((free - 1024 * 1024)) /dev/zero >"$mnt/ballast" 2>/dev/null
watch_until 30 logged "below min-free" || { cat "$T/err"; df "$mnt"; fail "perfrecd did not stop writing below the floor"; }
# Below the floor, files take no records: the second file published after
# the floor was hit began below it, and holds no sample.
n0=$(grep -c 'Wrote ' "$T/err")
watch_until 30 eval '[ "$(grep -c "Wrote " "$T/err")" -ge $((n0 + 2)) ]' || fail "no rotation below the floor"
below=$(grep 'Wrote ' "$T/err" | sed -n "$((n0 + 2))p")
grep -q ': 0 samples' <<<"$below" || { cat "$T/err"; fail "a file begun below the floor took samples: $below"; }
kill -0 $DAEMON_PID || fail "perfrecd died below the floor"
rm "$mnt/ballast"
watch_until 30 logged "above min-free again" || { cat "$T/err"; fail "recording did not resume"; }
watch_until 30 logged "that the disk refused are recorded as lost" || { cat "$T/err"; fail "the dropped samples are not in a file"; }
kill -INT $DAEMON_PID; wait $DAEMON_PID; rc=$?; DAEMON_PID=
kill $wl 2>/dev/null; wait $wl 2>/dev/null
[ $rc = 0 ] || { cat "$T/err"; fail "perfrecd exited $rc"; }
check_cap
ls "$mnt"/*.tmp >/dev/null 2>&1 && fail "a .tmp was left behind"
dropped=$(python3 -c 'import json,sys; print(sum(json.load(open(f)).get("dropped", 0) for f in sys.argv[1:]))' "$mnt"/*.data.json)
[ "$dropped" -gt 0 ] || fail "no manifest counts the samples dropped below the floor"
note "$dropped samples dropped below the floor, counted as lost"
grep -E "min-free|Removed" "$T/err" | sed 's/^/# /' | tail -5

# 4. Compressed by default, read by perf; what users open (a cut) is plain.
grep -qx 'compress=1' "$T/effective" || { cat "$T/effective"; fail "the shipped config does not compress"; }
total=0
for f in "$mnt"/*.data; do
	perf report -i "$f" --stats >"$T/stats" 2>"$T/stats.err" || fail "perf report cannot read $f"
	grep -Eq 'COMPRESSED events: *[1-9]' "$T/stats" || { cat "$T/stats"; fail "$f is not compressed"; }
	n=$(awk '/SAMPLE events:/ {print $3; exit}' "$T/stats")
	total=$((total + ${n:-0}))
done
[ "$total" -gt 0 ] || fail "perf report finds no samples in the compressed files"
# Whole stacks by default: DWARF stacks unwound while recording, so the
# files hold plain callchains and no user registers or stacks.
grep -qx 'callchain=dwarf' "$T/effective" && grep -qx 'unwind=host' "$T/effective" ||
	{ cat "$T/effective"; fail "the shipped config does not unwind DWARF stacks on the host"; }
perf evlist -v -i "$f" >"$T/evlist" 2>&1
grep -q "cpu-clock.*CALLCHAIN" "$T/evlist" && ! grep -q "STACK_USER\|REGS_USER" "$T/evlist" ||
	{ cat "$T/evlist"; fail "$f does not hold host-unwound callchains"; }
note "perf report reads $total samples in the compressed files"
"$PERFRECCTL" cut --from -10min --to now -o "$T/cut.data" "$mnt" 2>"$T/cut.err" || { cat "$T/cut.err"; fail "cut of the compressed files failed"; }
perf report -i "$T/cut.data" --stats 2>/dev/null | grep -q 'COMPRESSED events' && fail "cut wrote a compressed file without -z"
require_perfparser
pp=$(check_perfparser "$T/cut.data") || { echo "$pp"; exit 1; }
cn=$(perf_samples "$T/cut.data")
[ "$pp" = "$cn" ] || fail "perfparser reads $pp samples of the cut, perf $cn"
note "the cut: $cn samples, read by perfparser"
exit 0
