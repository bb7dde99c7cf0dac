#!/usr/bin/env bash
# Starting on a full disk costs samples, never the daemon (issue 28 item 4).
# A run is killed with -9 while writing into a small tmpfs, leaving its
# .tmp; the disk is filled to the last block; perfrecd starts there.  It
# must keep running (its control socket answers, status counting samples
# lost), keep the killed run's .tmp (recovering it needs space), and, once
# space returns, open its file, publish it with the samples the full disk
# cost counted as lost (perf sees LOST records, the manifest's "dropped" and
# the metrics' lost are > 0), and recover the leftover.
# Before the fix perfrecd exited 1 with "Cannot create ...data.tmp: No space
# left on device".
. "$(dirname "$0")/lib.sh"
require_root; require_events; require_perf; require_perfparser

mnt=$T/small
mkdir -p "$mnt"
mount -t tmpfs -o size=2M,mode=0700 tmpfs "$mnt" || skip "cannot mount a tmpfs here"
trap 'umount -l "$mnt" 2>/dev/null; cleanup' EXIT
cat >"$T/conf" <<CONF
[record]
flush-interval=100ms
checkpoint-interval=300ms
[output]
max-bytes=0
min-free=0
[service]
metrics-textfile=$T/metrics.prom
CONF
logged() { grep -q "$1" "$2"; }
tmp_there() { ls "$mnt"/*.data.tmp >/dev/null 2>&1; }
tmp_grew() { [ "$(stat -c %s "$mnt"/*.data.tmp 2>/dev/null | head -1)" -gt 4096 ] 2>/dev/null; }

"$WORKLOAD" 120 >/dev/null &
wl=$!
# The killed run: its .tmp holds records when it dies.
"$PERFRECD" -c "$T/conf" -o "$mnt" -F 499 -g --socket= 2>"$T/err0" &
DAEMON_PID=$!
wait_for 60 tmp_grew || { cat "$T/err0"; ls -la "$mnt"; fail "the first run wrote no .tmp"; }
kill -9 $DAEMON_PID; wait $DAEMON_PID 2>/dev/null; DAEMON_PID=
left=$(ls "$mnt"/*.data.tmp)
note "killed run left $left ($(stat -c %s "$left") bytes)"

# Fill the disk to the brim: every block taken.
dd if=/dev/zero of="$mnt/filler" bs=4k 2>/dev/null
dd if=/dev/zero of="$mnt/filler2" bs=512 2>/dev/null
df -k "$mnt" | sed 's/^/# /'

S=$T/sock
JOURNAL_STREAM=1 "$PERFRECD" -v -c "$T/conf" -o "$mnt" -F 499 -g --socket "$S" 2>"$T/err" &
DAEMON_PID=$!
wait_for 60 logged "No space left" "$T/err" || { cat "$T/err"; fail "the full disk was never hit"; }
ctl() { timeout 30 "$PERFRECCTL" --socket "$S" "$@"; }
answers() {
	kill -0 $DAEMON_PID 2>/dev/null || { cat "$T/err"; fail "perfrecd exited on a full disk"; }
	ctl status >"$T/status" 2>/dev/null
}
wait_for 60 answers || { cat "$T/err"; fail "perfrecd does not answer status on a full disk (exited?)"; }
kill -0 $DAEMON_PID 2>/dev/null || { cat "$T/err"; fail "perfrecd exited on a full disk"; }
sed 's/^/# status: /' "$T/status" | head -12
[ -f "$left" ] || { cat "$T/err"; ls -la "$mnt"; fail "the killed run's $left was lost on a full disk"; }
# Still running while full, and counting what it cannot write as lost.
wait_for 30 logged "Cannot create\|Cannot start" "$T/err" || { cat "$T/err"; fail "no file refusal logged"; }
status_lost() {
	answers || return 1
	ctl --json status | python3 -c 'import json,sys; j=json.load(sys.stdin); j=j.get("parameters", j); sys.exit(not j["lost"] > 0)'
}
wait_for 30 status_lost || { cat "$T/err"; cat "$T/status"; fail "status counts nothing lost while the disk is full"; }

# Space returns: the file opens, the lost samples go into it, the leftover is recovered.
rm -f "$mnt/filler" "$mnt/filler2"
wait_for 60 logged "Recording again into" "$T/err" || { cat "$T/err"; fail "no file opened once space returned"; }
wait_for 60 logged "Recovered .*-recovered.data" "$T/err" || { cat "$T/err"; ls -la "$mnt"; fail "the killed run's .tmp was not recovered once space returned"; }
ctl rotate >/dev/null || { cat "$T/err"; fail "rotate failed"; }
published() { ls "$mnt"/*[0-9].data >/dev/null 2>&1; }
wait_for 60 published || { cat "$T/err"; ls -la "$mnt"; fail "nothing published after space returned"; }
kill -INT $DAEMON_PID; wait $DAEMON_PID; rc=$?; DAEMON_PID=
kill $wl 2>/dev/null; wait $wl 2>/dev/null
[ $rc = 0 ] || { cat "$T/err"; fail "perfrecd exited $rc"; }
grep -E "No space|Recording again|Recovered|Wrote|lost" "$T/err" | sed 's/^/# /' | head -20
[ -f "$left" ] && fail "$left is still there after its recovery"

dropped=0 lost_records=0
for f in "$mnt"/*.data; do
	"$PERFRECCTL" verify "$f" >/dev/null || fail "$f does not verify"
	perf report -i "$f" --stats >"$T/stats" 2>"$T/stats.err" || { cat "$T/stats.err"; fail "perf report fails on $f"; }
	check_perf_stderr "perf report $f" "$T/stats.err"
	check_perfparser "$f" >/dev/null
	[ -f "$f.json" ] || fail "$f has no manifest"
	d=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("dropped", 0))' "$f.json")
	l=$(awk '/LOST events:/ {print $3; exit}' "$T/stats")
	note "$(basename "$f"): $(perf_samples "$f") samples, ${l:-0} LOST records, manifest dropped $d"
	dropped=$((dropped + d)); lost_records=$((lost_records + ${l:-0}))
done
ls "$mnt"/*-recovered.data >/dev/null 2>&1 || fail "no recovered file"
mlost=$(awk '$1 == "perfrecd_lost_total" {print $2}' "$T/metrics.prom")
note "metrics: perfrecd_lost_total $mlost"
[ "${mlost:-0}" -gt 0 ] 2>/dev/null || fail "the metrics count nothing lost (perfrecd_lost_total '$mlost')"
[ "$dropped" -gt 0 ] || fail "no manifest counts the samples lost while the disk was full"
[ "$lost_records" -gt 0 ] || fail "perf sees no LOST record for the full disk"
exit 0
