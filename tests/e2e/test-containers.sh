#!/bin/bash
# Container and pod labels (issue 29).  Cgroups named as docker, containerd
# under kubelet's systemd driver (a burstable Kubernetes pod) and podman name
# theirs are made here (no runtime needed: only the names matter), a
# workload runs in each while perfrecd records, and then:
#  - the manifest labels each cgroup (runtime, container, pod, qos, unit, slice);
#  - pprof's samples carry those labels, counted by go tool pprof -tags
#    exactly as perf report --sort cgroup counts the cgroup's samples;
#  - flamegraph --container ID-prefix / --pod UID / --unit NAME select
#    exactly that cgroup's samples (perf's count for it), and folded and
#    pprof the same;
#  - cut --container writes a file perf report finds only that cgroup in,
#    with perf's count from the whole file.
. "$(dirname "$0")/lib.sh"
require_events
require_perf
require_perfparser
command -v go >/dev/null || skip "go (golang-go) is not installed: no pprof reader"

# The hierarchy perf_event reports (as test-cgroup.sh): a v1 one with that controller, else cgroup2.
CGROOT=$(awk '$3 == "cgroup" && $4 ~ /(^|,)perf_event(,|$)/ {print $2; exit}' /proc/self/mounts)
[ -n "$CGROOT" ] || CGROOT=$(awk '$3 == "cgroup2" {print $2; exit}' /proc/self/mounts)
[ -n "$CGROOT" ] || skip "no cgroup hierarchy for perf_event is mounted"
[ -w "$CGROOT" ] || skip "$CGROOT is not writable"
# A kernel without PERF_SAMPLE_CGROUP (before 5.7) refuses the attr: perf says so on stderr.
if ! perf record -a --all-cgroups -e cpu-clock -o "$T/probe.data" true >/dev/null 2>"$T/probe.err"; then
	grep -qi 'cgroup' "$T/probe.err" &&
		skip "this kernel cannot tag samples with cgroups (PERF_SAMPLE_CGROUP): $(head -c 300 "$T/probe.err")"
	cat "$T/probe.err"; fail "perf record -a --all-cgroups failed"
fi

hex64() { head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
DOCKER_ID=$(hex64)
CRI_ID=$(hex64)
PODMAN_ID=$(hex64)
POD_UID=$(cat /proc/sys/kernel/random/uuid)
POD_SLICE_UID=${POD_UID//-/_}
DOCKER_CG=/system.slice/docker-$DOCKER_ID.scope
POD_CG=/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod$POD_SLICE_UID.slice/cri-containerd-$CRI_ID.scope
PODMAN_CG=/machine.slice/libpod-$PODMAN_ID.scope

# Made directories, innermost last; removed innermost first.  Only what
# this test made is removed (a host's own system.slice stays).
MADE=()
PIDS=()
cleanup_cgroups() {
	for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
	for ((i = ${#MADE[@]} - 1; i >= 0; i--)); do rmdir "${MADE[i]}" 2>/dev/null; done
	cleanup
}
trap cleanup_cgroups EXIT
make_cg() {
	local path=$CGROOT part
	IFS=/ read -ra parts <<<"${1#/}"
	for part in "${parts[@]}"; do
		path=$path/$part
		[ -d "$path" ] && continue
		mkdir "$path" 2>"$T/mkdir.err" || {
			[ ${#MADE[@]} = 0 ] && skip "cannot create a cgroup under $CGROOT: $(cat "$T/mkdir.err")"
			fail "cannot create $path: $(cat "$T/mkdir.err")"
		}
		MADE+=("$path")
	done
}
for cg in "$DOCKER_CG" "$POD_CG" "$PODMAN_CG"; do make_cg "$cg"; done

# A workload moved into cgroup $1 before it starts spinning, until killed
# once recorded; its pid in PIDS.
run_in() {
	sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2" 120 1' sh "$CGROOT$1" "$WORKLOAD" >/dev/null 2>&1 &
	PIDS+=($!)
}
for cg in "$DOCKER_CG" "$POD_CG" "$PODMAN_CG"; do run_in "$cg"; done
in_cg() { grep -qx "[0-9]*:[^:]*:$2" "/proc/$1/cgroup" 2>/dev/null; }
for i in 0 1 2; do
	cg=$( (echo "$DOCKER_CG"; echo "$POD_CG"; echo "$PODMAN_CG") | sed -n "$((i + 1))p")
	wait_for 10 in_cg "${PIDS[i]}" "$cg" || fail "workload ${PIDS[i]} did not land in $cg"
done

mkdir -p "$T/out"
printf '[output]\ndirectory=%s\n' "$T/out" >"$T/conf"
"$PERFRECD" -c "$T/conf" -F 499 -d 3 --socket '' >"$T/log" 2>&1 &
DAEMON_PID=$!
wait "$DAEMON_PID" || { cat "$T/log"; fail "perfrecd failed"; }
DAEMON_PID=
for p in "${PIDS[@]}"; do kill -9 "$p"; done
f=$(only_file "$T/out")

# The independent count: perf's samples per cgroup path.
perf report -i "$f" --stdio -n --no-children -g none --sort cgroup >"$T/report" 2>"$T/report.err"
check_perf_stderr "perf report --sort cgroup" "$T/report.err"
awk '!/^#/ && NF >= 3 {print $2, $3}' "$T/report" >"$T/percg"
perf_count() { awk -v p="$1" '$2 == p {print $1; f = 1} END {if (!f) print 0}' "$T/percg"; }
N_DOCKER=$(perf_count "$DOCKER_CG")
N_POD=$(perf_count "$POD_CG")
N_PODMAN=$(perf_count "$PODMAN_CG")
for n in "$N_DOCKER" "$N_POD" "$N_PODMAN"; do
	[ "$n" -gt 10 ] || { cat "$T/report"; fail "perf report --sort cgroup has only $n samples in one of the cgroups"; }
done
note "perf: docker $N_DOCKER, pod $N_POD, podman $N_PODMAN samples"

# The manifest's labels.
python3 - "$f.json" "$DOCKER_CG" "$POD_CG" "$PODMAN_CG" "$DOCKER_ID" "$CRI_ID" "$PODMAN_ID" "$POD_UID" \
	"$N_DOCKER" "$N_POD" "$N_PODMAN" <<'PY' || fail "the manifest's cgroup labels are wrong"
import json, sys
mf, dcg, pcg, mcg, did, cid, mid, uid, nd, np_, nm = sys.argv[1:]
got = {c.get("path"): c for c in json.load(open(mf))["cgroups"]}
want = {
    dcg: dict(runtime="docker", container=did, unit=f"docker-{did}.scope", slice="system.slice", samples=int(nd)),
    pcg: dict(runtime="containerd", container=cid, pod=uid, qos="burstable", unit=f"cri-containerd-{cid}.scope",
              slice=f"kubepods-burstable-pod{uid.replace('-', '_')}.slice", samples=int(np_)),
    mcg: dict(runtime="podman", container=mid, unit=f"libpod-{mid}.scope", slice="machine.slice", samples=int(nm)),
}
bad = 0
for path, w in want.items():
    g = {k: v for k, v in got.get(path, {}).items() if k not in ("id", "path")}
    if g != w:
        print(f"manifest: {path}: {g}, want {w}")
        bad = 1
sys.exit(bad)
PY

# pprof: labels of each container's samples, counted by go tool pprof.
"$PERFRECCTL" pprof -o "$T/p.pb.gz" "$f" 2>"$T/pprof.err" || { cat "$T/pprof.err"; fail "perfrecctl pprof failed"; }
# tags_of REGEX: "KEY VALUE COUNT" for every label of the samples whose container label matches.
tags_of() {
	go tool pprof -tags -sample_index=samples -tagfocus="container=$1" "$T/p.pb.gz" 2>"$T/go.err" |
		awk '/^ *[a-z]+: Total/ { key = $1; sub(":", "", key) }
		     /%\): / { v = $0; sub(/^.*%\): /, "", v); print key, v, $1 + 0 }' | sort
	grep -qi 'error\|fail\|malformed' "$T/go.err" && { cat "$T/go.err"; return 1; }
	return 0
}
expect_tag() {  # KEY VALUE COUNT
	grep -qxF "$1 $2 $3" "$T/tags" || { cat "$T/tags"; fail "pprof: want label $1=$2 on exactly $3 samples"; }
}
expect_no_tag() {
	! grep -q "^$1 " "$T/tags" || { cat "$T/tags"; fail "pprof: label $1 where the cgroup has none"; }
}
tags_of "$DOCKER_ID" >"$T/tags" || fail "go tool pprof -tags failed"
expect_tag runtime docker "$N_DOCKER"
expect_tag container "$DOCKER_ID" "$N_DOCKER"
expect_tag unit "docker-$DOCKER_ID.scope" "$N_DOCKER"
expect_tag cgroup "$DOCKER_CG" "$N_DOCKER"
expect_no_tag pod
expect_no_tag qos
tags_of "$CRI_ID" >"$T/tags" || fail "go tool pprof -tags failed"
expect_tag runtime containerd "$N_POD"
expect_tag container "$CRI_ID" "$N_POD"
expect_tag pod "$POD_UID" "$N_POD"
expect_tag qos burstable "$N_POD"
expect_tag unit "cri-containerd-$CRI_ID.scope" "$N_POD"
tags_of "$PODMAN_ID" >"$T/tags" || fail "go tool pprof -tags failed"
expect_tag runtime podman "$N_PODMAN"
expect_tag container "$PODMAN_ID" "$N_PODMAN"
expect_no_tag pod
# Every sample the pod label is on is the pod's (no other cgroup claims it).
go tool pprof -tags -sample_index=samples "$T/p.pb.gz" 2>/dev/null |
	awk '/^ *[a-z]+: Total/ { key = $1 } key == "pod:" && /%\): / {print $NF, $1 + 0}' >"$T/pods"
[ "$(cat "$T/pods")" = "$POD_UID $N_POD" ] || { cat "$T/pods"; fail "pprof's pod labels: want $POD_UID on $N_POD samples"; }
note "pprof labels: docker, containerd pod $POD_UID (burstable), podman: counts equal perf's"

# The views' filters select exactly each cgroup's samples.
svg_samples() {  # the graph's sample count
	sed -n 's/.*<g class="graph" event="[^"]*" total="[0-9]*" samples="\([0-9]*\)".*/\1/p' "$1" | head -1
}
check_flame() {  # WANT WHAT OPTIONS...
	local want=$1 what=$2 got; shift 2
	"$PERFRECCTL" flamegraph "$@" -o "$T/fg.svg" "$f" >"$T/fg.out" 2>&1 ||
		{ cat "$T/fg.out"; fail "flamegraph $* failed"; }
	got=$(svg_samples "$T/fg.svg")
	[ "$got" = "$want" ] || fail "flamegraph $*: $got samples, perf has $want in $what"
	"$PERFRECCTL" folded "$@" -o "$T/folded" "$f" >"$T/folded.out" 2>&1 && [ -s "$T/folded" ] ||
		{ cat "$T/folded.out"; fail "folded $* failed"; }
	"$PERFRECCTL" pprof "$@" -o "$T/f.pb.gz" "$f" >"$T/fp.out" 2>&1 || { cat "$T/fp.out"; fail "pprof $* failed"; }
	got=$(go tool pprof -top -sample_index=samples "$T/f.pb.gz" 2>/dev/null | sed -n 's/.*Total samples = \([0-9]*\) *$/\1/p')
	[ "$got" = "$want" ] || fail "pprof $*: $got samples, perf has $want in $what"
	note "flamegraph/pprof $*: $want samples, as perf"
}
check_flame "$N_DOCKER" "$DOCKER_CG" --container "${DOCKER_ID:0:12}"
check_flame "$N_DOCKER" "$DOCKER_CG" --container "$DOCKER_ID"
check_flame "$N_POD" "$POD_CG" --pod "$POD_UID"
check_flame "$N_POD" "$POD_CG" --pod "${POD_SLICE_UID:0:13}"
check_flame "$N_POD" "$POD_CG" --pod "${POD_UID:0:8}" --container "${CRI_ID:0:8}"
check_flame "$N_PODMAN" "$PODMAN_CG" --container "${PODMAN_ID:0:16}"
check_flame "$N_PODMAN" "$PODMAN_CG" --unit "libpod-$PODMAN_ID.scope"
check_flame "$N_POD" "$POD_CG" --unit kubepods-burstable.slice
# A selection nothing matches is an error, not an empty graph.
if "$PERFRECCTL" flamegraph --pod "${POD_UID:0:8}" --container "${DOCKER_ID:0:12}" -o "$T/none.svg" "$f" \
	>"$T/none.out" 2>&1; then
	fail "flamegraph wrote a graph of nothing (a pod and another pod's container)"
fi

# cut --pod: a file of that pod's samples only, as perf reads it.
"$PERFRECCTL" cut --from 2000-01-01T00:00:00Z --to now --no-live --pod "$POD_UID" -o "$T/pod.data" "$f" \
	>"$T/cut.out" 2>&1 || { cat "$T/cut.out"; fail "cut --pod failed"; }
perf report -i "$T/pod.data" --stdio -n --no-children -g none --sort cgroup >"$T/cutreport" 2>"$T/cutreport.err"
check_perf_stderr "perf report --sort cgroup (cut --pod)" "$T/cutreport.err"
awk '!/^#/ && NF >= 3 {print $2, $3}' "$T/cutreport" >"$T/cutcg"
[ "$(cat "$T/cutcg")" = "$N_POD $POD_CG" ] ||
	{ cat "$T/cutreport"; fail "cut --pod: perf sees $(cat "$T/cutcg"), want only $N_POD samples of $POD_CG"; }
check_perfparser "$T/pod.data" >/dev/null
# A selection nothing in the window matches: exit 1, saying so, no file.
rc=0
"$PERFRECCTL" cut --from 2000-01-01T00:00:00Z --to now --no-live --container "${CRI_ID:0:12}" --unit "docker-$DOCKER_ID.scope" \
	-o "$T/none.data" "$f" >"$T/none.out" 2>&1 || rc=$?
[ $rc = 1 ] && [ ! -e "$T/none.data" ] && grep -q 'none of the [0-9]* samples' "$T/none.out" ||
	{ cat "$T/none.out"; fail "cut of a selection with no samples: exit $rc, want 1 and a message"; }
note "cut --pod: $N_POD samples, all of the pod's cgroup"

# ls: the busiest containers of the files, with perf's counts.
"$PERFRECCTL" ls --json "$T/out" >"$T/ls.json" 2>"$T/ls.err" || { cat "$T/ls.err"; fail "perfrecctl ls --json failed"; }
python3 - "$T/ls.json" "$DOCKER_ID" "$CRI_ID" "$PODMAN_ID" "$POD_UID" "$N_DOCKER" "$N_POD" "$N_PODMAN" <<'PY' ||
import json, sys
ls, did, cid, mid, uid, nd, np_, nm = sys.argv[1:]
got = {c["container"]: c for c in json.load(open(ls))["busiest"]["containers"]}
want = {did: dict(runtime="docker", container=did, samples=int(nd)),
        cid: dict(runtime="containerd", container=cid, pod=uid, qos="burstable", samples=int(np_)),
        mid: dict(runtime="podman", container=mid, samples=int(nm))}
bad = [f"ls --json: {got.get(k)}, want {w}" for k, w in want.items() if got.get(k) != w]
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
	fail "ls --json's busiest containers are wrong"
"$PERFRECCTL" ls "$T/out" >"$T/ls.txt" 2>&1 || { cat "$T/ls.txt"; fail "perfrecctl ls failed"; }
grep -q "^busiest containers:.* ${CRI_ID:0:12} (containerd, pod $POD_UID burstable) $N_POD samples" "$T/ls.txt" ||
	{ cat "$T/ls.txt"; fail "ls does not show the pod's container among the busiest"; }

# status: the busiest of the last published file, beside the one being written.
"$PERFRECD" -c "$T/conf" -F 99 --socket "$T/sock" >"$T/log2" 2>&1 &
DAEMON_PID=$!
wait_for 20 "$PERFRECCTL" --socket "$T/sock" ping >/dev/null 2>&1 || { cat "$T/log2"; fail "perfrecd does not answer"; }
"$PERFRECCTL" --socket "$T/sock" status >"$T/status" 2>&1 || { cat "$T/status"; fail "perfrecctl status failed"; }
kill -TERM "$DAEMON_PID"
wait "$DAEMON_PID"
DAEMON_PID=
grep -q "^in $(basename "$f").json, the last published file:" "$T/status" &&
	grep -q "^  busiest containers:.* ${DOCKER_ID:0:12} (docker) $N_DOCKER samples" "$T/status" ||
	{ cat "$T/status"; fail "status does not show the last file's busiest containers"; }
note "ls and status name the busiest containers with perf's counts"
exit 0
