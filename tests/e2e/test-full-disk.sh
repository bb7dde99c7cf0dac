#!/usr/bin/env bash
# A full disk costs data, never the daemon or a published file, and what it
# costs is accounted for: record into a small tmpfs until it fills, keep
# recording while it is full, free space, stop.  Then:
#  - every file is published (no .tmp left: the one the disk cut short is
#    finished once space returns) and perf, perfparser and verify read it;
#  - the samples the disk refused are LOST records in the files (perf sees
#    them) and in the manifests' "dropped"; each manifest's samples and
#    lost are its file's, and the daemon's totals equal what the files
#    hold: samples_total = samples in files, lost_total = lost in files
#    (nothing recorded went unaccounted);
#  - sequence numbers do not jump (no number burnt per failed attempt);
#  - the error is logged once per episode, not per write.
. "$(dirname "$0")/lib.sh"
require_events; require_perf; require_perfparser

mnt=$T/small
mkdir -p "$mnt"
mount -t tmpfs -o size=3M tmpfs "$mnt" || skip "cannot mount a tmpfs here"
trap 'umount -l "$mnt" 2>/dev/null; cleanup' EXIT
cat >"$T/conf" <<CONF
[record]
# -F 20000 (above max-frequency='s default) on purpose: fill the disk fast.
max-frequency=20000
flush-interval=100ms
checkpoint-interval=300ms
[output]
rotate-size=1M
# A disk that fills up: no retention and no floor to keep it from filling.
max-bytes=0
min-free=0
[service]
metrics-textfile=$T/metrics.prom
CONF

until_true() { # SECS CMD...: poll
	local n=$(( $1 * 10 )) i; shift
	for i in $(seq "$n"); do "$@" && return 0; sleep 0.1; done
	return 1
}
logged() { grep -q "$1" "$T/err"; }
metric() { awk -v m="$1" '$1 == m {print $2}' "$T/metrics.prom"; }

"$WORKLOAD" 60 >/dev/null &
wl=$!
# Every level logged, each line with its priority ("<3>" error, "<7>" debug).
# (test-dwarf-host-full-disk.sh runs this with other recording options)
JOURNAL_STREAM=1 "$PERFRECD" -v -c "$T/conf" -o "$mnt" ${FULL_DISK_RECORD:--F 20000 -g} --socket= 2>"$T/err" &
DAEMON_PID=$!
until_true 60 logged "No space left" || { cat "$T/err"; df -h "$mnt"; fail "the disk never filled"; }
# Full for a while: records keep coming and are refused (recording goes on).
until_true 30 logged "Cannot finish\|Cannot start\|Cannot create" || true
kill -0 $DAEMON_PID 2>/dev/null || { cat "$T/err"; fail "perfrecd died on a full disk"; }
n_err=$(grep -c '^<[0-4]>.*No space left' "$T/err")
note "disk full: $n_err error lines logged, $(grep -c 'No space left' "$T/err") in all levels"
[ "$n_err" -le 3 ] || { cat "$T/err"; fail "full disk logged on every write"; }

# Space returns: writing resumes, the refused samples go into the file as lost.
mount -o remount,size=256M "$mnt"
until_true 60 logged "Writing .* again" || { cat "$T/err"; fail "writing did not resume after space returned"; }
until_true 60 logged "that the disk refused are recorded as lost" || { cat "$T/err"; fail "no LOST record for the refused samples"; }
kill -USR2 $DAEMON_PID
until_true 60 logged "Wrote .*: [1-9][0-9]* samples" || { cat "$T/err"; fail "nothing published after space returned"; }
kill -INT $DAEMON_PID; wait $DAEMON_PID; rc=$?; DAEMON_PID=
kill $wl 2>/dev/null; wait $wl 2>/dev/null
[ $rc = 0 ] || { cat "$T/err"; fail "perfrecd exited $rc"; }
grep -E "Wrote|Recovered|Removed|refused|Giving up|again" "$T/err" | sed 's/^/# /' | head -40

ls "$mnt"/*.tmp >/dev/null 2>&1 && { ls -la "$mnt"; fail "a .tmp was left behind after space returned"; }
files_samples=0 files_lost=0 dropped=0 perf_lost_records=0
for f in "$mnt"/*.data; do
	"$PERFRECCTL" verify "$f" >/dev/null || fail "published $f is not valid"
	perf script -i "$f" >/dev/null 2>"$T/script.err" || { cat "$T/script.err"; fail "perf script fails on $f"; }
	[ -f "$f.json" ] || fail "$f has no manifest"
	read -r s l < <("$PERFRECCTL" dump --json "$f" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["samples"], d["lost"] + d["lost_samples"])')
	ps=$(perf_samples "$f")
	[ "$ps" = "$s" ] || fail "$f: perf counts $ps samples, our reader $s"
	read -r ms ml d < <(python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print(m["samples"], m["lost"], m.get("dropped", 0))' "$f.json")
	[ "$ms" = "$s" ] || fail "$f: manifest says $ms samples, the file holds $s"
	[ "$ml" = "$l" ] || fail "$f: manifest says $ml lost, the file holds $l"
	lr=$(perf report -i "$f" --stats 2>/dev/null | awk '/LOST events:/ {print $3; exit}')
	files_samples=$((files_samples + s)); files_lost=$((files_lost + l)); dropped=$((dropped + d))
	perf_lost_records=$((perf_lost_records + ${lr:-0}))
done
[ "$dropped" -gt 0 ] || fail "no manifest counts samples the disk refused"
[ "$perf_lost_records" -gt 0 ] || fail "perf sees no LOST record in any file"
last=$(ls "$mnt"/*.data | tail -1)
check_perfparser "$last" >/dev/null

samples_total=$(metric perfrecd_samples_total)
lost_total=$(metric perfrecd_lost_total)
note "daemon: $samples_total samples, $lost_total lost; files: $files_samples samples, $files_lost lost ($dropped refused by the disk)"
[ "$samples_total" = "$files_samples" ] || fail "the daemon counted $samples_total samples, the files hold $files_samples"
[ "$lost_total" = "$files_lost" ] || fail "the daemon counted $lost_total lost, the files report $files_lost"

seqs=$(ls "$mnt"/*.data | sed -n 's/.*-\([0-9]\{6\}\)\(-recovered\)\{0,1\}\.data$/\1/p' | sort -n | awk '{print $1 + 0}')
n=$(echo "$seqs" | wc -l)
[ "$(echo "$seqs" | tail -1)" = "$n" ] && [ "$(echo "$seqs" | head -1)" = 1 ] \
	|| { ls "$mnt"; fail "sequence numbers jump: $(echo $seqs)"; }
note "$n files, sequence 1..$n without gaps"
