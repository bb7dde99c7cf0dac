# Shared helpers for end-to-end tests (sourced).  A test exits 0 to pass,
# 77 to skip (after printing "SKIP: reason"), anything else to fail.
set -u
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# Plain files unless a test asks for compression (tests/plain-perfrecd says
# why); PERFRECD_DEFAULT is perfrecd as shipped, compressing by default.
PERFRECD=$TOP/tests/plain-perfrecd
PERFRECD_DEFAULT=$TOP/daemon/perfrecd
PERFRECCTL=$TOP/tools/perfrecctl
WORKLOAD=$TOP/tests/e2e/workload
PERFPARSER=/usr/lib/x86_64-linux-gnu/libexec/hotspot-perfparser
T=$(mktemp -d /tmp/perfrec-e2e.XXXXXX)
# Nothing earlier runs left in ~/.debug (perf's build-id cache, where our
# views look too) or ~/.perfconfig may decide a result: HOME is the test's
# own, empty.  pyenv's shims find their root through HOME: keep that one.
if [ -z "${PYENV_ROOT:-}" ] && [ -d "${HOME:-/nonexistent}/.pyenv" ]; then export PYENV_ROOT=$HOME/.pyenv; fi
export HOME=$T/home
mkdir -m 0700 "$HOME"
DAEMON_PID=
# JIT runtimes a test starts (node --perf-basic-prof, python -X perf) leave
# /tmp/perf-PID.map behind when they end; a later process given the same
# pid would find it (test-jit-perfmap-hostile's did).  The ones that came
# during the test and whose process is gone are removed with it.
ls /tmp/perf-*.map >"$T/.perf-maps-before" 2>/dev/null
remove_new_perf_maps() {
	local m pid
	for m in /tmp/perf-*.map; do
		[ -e "$m" ] || [ -L "$m" ] || continue
		grep -qxF "$m" "$T/.perf-maps-before" 2>/dev/null && continue
		pid=${m#/tmp/perf-}
		pid=${pid%.map}
		case $pid in '' | *[!0-9]*) continue ;; esac
		[ -d "/proc/$pid" ] || rm -f "$m"
	done
}
cleanup() {
	[ -n "$DAEMON_PID" ] && kill -9 "$DAEMON_PID" 2>/dev/null
	remove_new_perf_maps
	[ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
note() { echo "# $*"; }

require_root() { [ "$(id -u)" = 0 ] || skip "needs root to record system-wide"; }
require_perf() { command -v perf >/dev/null || skip "perf (linux-perf) is not installed"; }
require_perfparser() { [ -x "$PERFPARSER" ] || skip "hotspot-perfparser is not installed"; }
require_events() {
	require_root
	perf stat -e cpu-clock -a true >/dev/null 2>&1 || skip "cannot open cpu-clock system-wide here"
}
# Off-CPU profiling needs BTF, a usable bpf(), stack trace maps and no
# lockdown; whether they are there is told without asking perfrecd, so
# that perfrecd turning off-CPU off where they are is a failure.
require_offcpu() {
	[ -r /sys/kernel/btf/vmlinux ] || skip "the kernel has no BTF (/sys/kernel/btf/vmlinux)"
	command -v bpftool >/dev/null || skip "bpftool is not installed: cannot tell whether BPF is usable here"
	bpftool prog show >/dev/null 2>&1 || skip "the bpf() syscall is not usable here (bpftool prog show fails)"
	bpftool feature probe kernel 2>/dev/null | grep -q 'map_type stack_trace is available' \
		|| skip "the kernel has no BPF stack trace maps"
	bpftool btf dump file /sys/kernel/btf/vmlinux 2>/dev/null | grep -q "'btf_trace_sched_switch'" \
		|| skip "the kernel's BTF has no sched_switch tracepoint (tp_btf)"
	if grep -q '\[confidentiality\]' /sys/kernel/security/lockdown 2>/dev/null; then
		skip "kernel lockdown (confidentiality) forbids BPF reading kernel memory"
	fi
}
# s3rver (npm, the one download the tests make) into tests/e2e/.npm-s3rver,
# once; S3RVER is its command.  Skips where npm, the registry or node are not.
require_s3rver() {
	local dir=$TOP/tests/e2e/.npm-s3rver
	command -v curl >/dev/null || skip "curl is not installed"
	S3RVER=$dir/node_modules/.bin/s3rver
	if [ ! -x "$S3RVER" ]; then
		command -v npm >/dev/null || skip "npm is not available to install s3rver"
		mkdir -p "$dir"
		(cd "$dir" && timeout 300 npm install --no-audit --no-fund s3rver@3.7.1 >/dev/null 2>&1) ||
			skip "npm install s3rver@3.7.1 failed (no registry access?)"
	fi
	command -v node >/dev/null || skip "node is not installed"
}

# perf's exact sample count for a file.
perf_samples() { perf report -i "$1" --stats 2>/dev/null | awk '/SAMPLE events:/ {print $3; exit}'; }

# Fail if perf wrote anything alarming to stderr (it exits 0 on bad records).
check_perf_stderr() {
	local what=$1 file=$2
	if grep -Eiq 'warn|error|fail|incompatible|corrupt|unknown|invalid|cannot|can.t' "$file"; then
		cat "$file"; fail "$what printed problems on stderr"
	fi
}

# perfparser must parse the file with samples and no time-order violations.
check_perfparser() {
	local f=$1 out
	out=$(timeout 120 "$PERFPARSER" --input "$f" --print-stats 2>&1) || fail "perfparser failed/timed out on $f"
	local samples tv mv
	samples=$(awk '/^samples:/ {print $2}' <<<"$out" | head -1)
	tv=$(awk '/samples time violations:/ {print $NF}' <<<"$out" | head -1)
	mv=$(awk '/mmaps time violations:/ {print $NF}' <<<"$out" | head -1)
	[ -n "$samples" ] && [ "$samples" -gt 0 ] || { echo "$out"; fail "perfparser found no samples in $f"; }
	[ "${tv:-1}" = 0 ] || { echo "$out"; fail "perfparser: $tv sample time violations in $f"; }
	[ "${mv:-1}" = 0 ] || { echo "$out"; fail "perfparser: $mv mmap time violations in $f"; }
	echo "$samples"
}

# The only published file in a directory (fails if not exactly one).
only_file() {
	local n
	n=$(ls "$1"/*.data 2>/dev/null | wc -l)
	[ "$n" = 1 ] || { ls -la "$1"; fail "expected exactly one .data file in $1, found $n"; }
	ls "$1"/*.data
}

# wait_for SECONDS CMD [ARGS...]: run CMD every 0.1 s until it succeeds;
# returns 1 if it never did within SECONDS.  Tests wait for the condition
# they then check, never for a fixed time.
wait_for() {
	local secs=$1 i; shift
	for ((i = 0; i < secs * 10; i++)); do
		"$@" && return 0
		sleep 0.1
	done
	"$@"
}

# The file's FINISHED_ROUND records, as perf sees them: perf script delivers
# the samples queued before each round when it reads that round, so the
# samples come out in groups between round lines.  Prints "ROUNDS GROUPS";
# fails unless the samples were cut into at least two rounds (a file without
# rounds, or with one at the very end, makes readers sort it whole).
check_rounds() {
	local f=$1 what=$2 out
	out=$(perf script -i "$f" --show-round-events -F event 2>"$T/rounds.err" | awk '
		/PERF_RECORD_FINISHED_ROUND/ { r++; if (s) { g++; s = 0 } next }
		NF { s++; n++ }
		END { printf "%d %d %d\n", r, g, n }') || fail "perf script failed on $what ($f)"
	check_perf_stderr "perf script --show-round-events ($what)" "$T/rounds.err"
	read -r rounds groups samples <<<"$out"
	[ "$samples" -gt 0 ] || fail "$what: perf sees no samples in $f"
	[ "$groups" -ge 2 ] || fail "$what: $samples samples in $groups round(s) ($rounds FINISHED_ROUND records in $f)"
	echo "$rounds $groups"
}
