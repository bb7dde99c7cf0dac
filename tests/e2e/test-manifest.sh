#!/bin/bash
# The JSON manifest beside each published file agrees with the file itself:
# size and sha256 (sha256sum), samples per CPU (perf script), total samples
# (perf report --stats), host/boot/machine identity and the configured labels.
. "$(dirname "$0")/lib.sh"
require_events
require_perf
mkdir -p "$T/out"
printf '[output]\ndirectory=%s\nlabel.team=sre\nlabel.env=test\n' "$T/out" >"$T/conf"
"$WORKLOAD" 2 >/dev/null 2>&1 &
WPID=$!
"$PERFRECD" -c "$T/conf" -F 499 -d 2 --socket '' >"$T/log" 2>&1 || { cat "$T/log"; fail "perfrecd failed"; }
wait "$WPID"
f=$(only_file "$T/out")
[ -e "$f.json" ] || fail "no manifest beside $f"
perf script -i "$f" -F cpu 2>/dev/null | tr -d '[] ' | sort -n | uniq -c | awk '{print $2+0, $1}' >"$T/percpu"
python3 - "$f" "$T/percpu" "$(sha256sum "$f" | cut -d' ' -f1)" "$(stat -c %s "$f")" "$(perf_samples "$f")" \
	"$(hostname)" "$(cat /proc/sys/kernel/random/boot_id)" "$(uname -r)" <<'PY' || fail "manifest does not match the file"
import json, sys
f, percpu, sha, size, samples, host, boot, kernel = sys.argv[1:]
m = json.load(open(f + ".json"))
want = {int(c): int(n) for c, n in (l.split() for l in open(percpu))}
got = {c["cpu"]: c["samples"] for c in m["cpus"] if c["samples"]}
errs = []
if got != want: errs.append(f"samples per CPU {got} != perf script {want}")
if m["sha256"] != sha: errs.append(f"sha256 {m['sha256']} != {sha}")
if m["size"] != int(size): errs.append(f"size {m['size']} != {size}")
if m["samples"] != int(samples): errs.append(f"samples {m['samples']} != perf {samples}")
if m["host"] != host or m["boot_id"] != boot or m["kernel"] != kernel: errs.append("host/boot_id/kernel wrong")
if m["labels"] != {"team": "sre", "env": "test"}: errs.append(f"labels {m['labels']}")
if not (m["start"] < m["end"]) or not m["start"].endswith("Z"): errs.append("start/end not UTC or out of order")
if m["events"][0]["name"] != "cpu-clock" or m["events"][0]["frequency"] != 499: errs.append(f"events {m['events']}")
for e in errs: print("manifest:", e)
sys.exit(1 if errs else 0)
PY
note "manifest of $(basename "$f") matches perf, sha256sum and stat"
exit 0
