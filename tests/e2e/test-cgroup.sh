#!/bin/bash
# Cgroups in files and manifests.  Workloads run in cgroups made before the
# daemon starts (so only the synthesized CGROUP records can name them): a
# systemd-style scope unit and a docker-style container scope, plus one made
# while recording (named by the kernel's own CGROUP record).  Oracles:
# `perf report --sort cgroup -n` must name each cgroup with samples, the
# manifest's per-cgroup counts must equal perf's, with the unit and container
# fields right; perfparser and `perfrecctl verify` must still read the file.
. "$(dirname "$0")/lib.sh"
require_events
require_perf
require_perfparser

# The hierarchy perf_event reports: a v1 one with that controller, else cgroup2.
CGROOT=$(awk '$3 == "cgroup" && $4 ~ /(^|,)perf_event(,|$)/ {print $2; exit}' /proc/self/mounts)
[ -n "$CGROOT" ] || CGROOT=$(awk '$3 == "cgroup2" {print $2; exit}' /proc/self/mounts)
[ -n "$CGROOT" ] || skip "no cgroup hierarchy for perf_event is mounted"
perf record -a --all-cgroups -e cpu-clock -o "$T/probe.data" true >/dev/null 2>&1 ||
	skip "this kernel cannot tag samples with cgroups (PERF_SAMPLE_CGROUP)"

CID=$(printf 'perfrec%.0s' 1 2 3 4 5 6 7 8 | sha256sum | cut -c1-64)
UNIT="perfrec-test-$$.scope"
CONT="docker-$CID.scope"
LATE="perfrec-late-$$.service"
PARENT="$CGROOT/perfrec-e2e-$$.slice"
PIDS=()
cleanup_cgroups() {
	for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
	rmdir "$PARENT/$UNIT" "$PARENT/$CONT" "$PARENT/$LATE" "$PARENT" 2>/dev/null
	cleanup
}
trap cleanup_cgroups EXIT
mkdir "$PARENT" 2>/dev/null || skip "cannot create a cgroup under $CGROOT"
mkdir "$PARENT/$UNIT" "$PARENT/$CONT" || fail "cannot create cgroups under $PARENT"

# A workload moved into cgroup $1 before it starts spinning.
run_in() {
	sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2" 8 1' sh "$1" "$WORKLOAD" >/dev/null 2>&1 &
	PIDS+=($!)
}
run_in "$PARENT/$UNIT"
run_in "$PARENT/$CONT"

mkdir -p "$T/out"
printf '[output]\ndirectory=%s\n' "$T/out" >"$T/conf"
"$PERFRECD" -c "$T/conf" -F 499 -d 4 --socket '' >"$T/log" 2>&1 &
DAEMON_PID=$!
# The late cgroup appears once the daemon records (its file exists).
for _ in $(seq 100); do ls "$T/out"/*.tmp >/dev/null 2>&1 && break; sleep 0.1; done
mkdir "$PARENT/$LATE" || fail "cannot create $PARENT/$LATE"
run_in "$PARENT/$LATE"
wait "$DAEMON_PID" || { cat "$T/log"; fail "perfrecd failed"; }
DAEMON_PID=

f=$(only_file "$T/out")
[ -e "$f.json" ] || fail "no manifest beside $f"
"$PERFRECCTL" verify "$f" >"$T/verify" 2>&1 || { cat "$T/verify"; fail "perfrecctl verify rejects $f"; }
check_perfparser "$f" >/dev/null
perf report -i "$f" --stdio -n --no-children -g none --sort cgroup >"$T/report" 2>"$T/report.err"
check_perf_stderr "perf report --sort cgroup" "$T/report.err"
# "  75.98%    1683  /perfrec-e2e-1.slice/..." -> "1683 /perfrec-e2e-1.slice/..."
awk '!/^#/ && NF >= 3 {print $2, $3}' "$T/report" >"$T/percg"

python3 - "$f" "$T/percg" "$(perf_samples "$f")" "/perfrec-e2e-$$.slice" "$UNIT" "$CONT" "$CID" "$LATE" \
	<<'PY' || { cat "$T/report"; fail "manifest cgroups do not match perf"; }
import json, sys
f, percg, total, parent, unit, cont, cid, late = sys.argv[1:]
m = json.load(open(f + ".json"))
perf = {p: int(n) for n, p in (l.split(None, 1) for l in open(percg).read().splitlines())}
got = {c["path"]: c for c in m["cgroups"] if "path" in c}
errs = []
for name in (unit, cont, late):
    path = f"{parent}/{name}"
    if perf.get(path, 0) == 0:
        errs.append(f"perf report --sort cgroup does not name {path}: {perf}")
    elif path not in got:
        errs.append(f"manifest lacks {path}")
    elif got[path]["samples"] != perf[path]:
        errs.append(f"{path}: manifest {got[path]['samples']} samples, perf {perf[path]}")
for path, n in perf.items():
    if path.startswith("/") and got.get(path, {}).get("samples") != n:
        errs.append(f"{path}: perf {n}, manifest {got.get(path)}")
if sum(c["samples"] for c in m["cgroups"]) != int(total):
    errs.append(f"manifest cgroups sum to {sum(c['samples'] for c in m['cgroups'])}, perf has {total} samples")
u, c, l = (got.get(f"{parent}/{n}", {}) for n in (unit, cont, late))
if u.get("unit") != unit or "container" in u: errs.append(f"unit cgroup classified {u}")
if c.get("container") != cid or c.get("unit") != cont: errs.append(f"container cgroup classified {c}")
if l.get("unit") != late: errs.append(f"late cgroup classified {l}")
if any("unit" in x or "container" in x for x in got.values() if x["path"] in ("/", parent)):
    errs.append("the root or the slice got a unit/container")
for e in errs: print("cgroup:", e)
sys.exit(1 if errs else 0)
PY
note "$(wc -l <"$T/percg") cgroups in $(basename "$f"): manifest counts match perf report --sort cgroup"
exit 0
