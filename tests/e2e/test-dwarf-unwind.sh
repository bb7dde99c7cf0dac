#!/usr/bin/env bash
# perfrecctl unwind: a raw DWARF recording (--call-graph dwarf) rewritten
# into callchains unwound on this host.  The result must be what perf's own
# unwinding of the raw file gives, frame by frame (perf script --no-inline
# on each) for at least 98% of the samples (see below); pass perf report / script with
# a clean stderr, perfparser with no time violations and perfrecctl
# verify; carry no registers or stack (perf evlist -v); and show the whole
# path through libc in at least 95% of the workload's hot samples.  Its
# bytes per sample against -g are noted: the 1.5x bound is test-dwarf-host's,
# on what the daemon writes (here perfrecctl unwind rewrites a raw file whose
# workload's chains are whole where -g's stop early: about 1.5x either way).
. "$(dirname "$0")/lib.sh"
require_events; require_perf; require_perfparser
[ -x "$TOP/tests/e2e/nofp" ] || fail "tests/e2e/nofp is not built (make tests/e2e/nofp)"

WL=nofpu$$
cp "$TOP/tests/e2e/nofp" "$T/$WL"
BG=
trap 'kill $BG 2>/dev/null; cleanup' EXIT

# Usage errors are named.
"$PERFRECCTL" unwind "$T/none.data" -o "$T/x.data" 2>"$T/err" && fail "unwind of a missing file succeeded"
grep -q "cannot open $T/none.data" "$T/err" || { cat "$T/err"; fail "no message naming the missing input"; }
"$PERFRECCTL" unwind 2>/dev/null && fail "unwind without files succeeded"

# The workload runs before the recordings start (perf 6.1 loses the libc
# callers of a process exec'd during a system-wide recording).
"$T/$WL" 30 >/dev/null &
BG=$!
record() { # DIR ARGS...: a 3 s recording into DIR, its file on stdout
	local d=$1; shift
	mkdir -p "$d"
	"$PERFRECD" -o "$d" --socket= -e cpu-clock -F 499 -m 8M --duration 3 "$@" 2>"$d.log" ||
		{ cat "$d.log"; fail "perfrecd $* failed"; }
	only_file "$d"
}
# Both at once, so that what else runs on the host (its samples are in
# both files) is the same in each when their sizes are compared.
record "$T/raw" --call-graph dwarf --unwind file >"$T/raw.path" & r1=$!
record "$T/fp" -g >"$T/fp.path" & r2=$!
wait $r1 || fail "the raw DWARF recording failed"
wait $r2 || fail "the -g recording failed"
raw=$(cat "$T/raw.path"); fp=$(cat "$T/fp.path")
kill $BG; wait $BG; BG=

"$PERFRECCTL" unwind "$raw" -o "$T/host.data" 2>"$T/unwind.err" || { cat "$T/unwind.err"; fail "perfrecctl unwind failed"; }
cat "$T/unwind.err"
host=$T/host.data

"$PERFRECCTL" verify "$host" >/dev/null || fail "perfrecctl verify rejects the unwound file"
perf evlist -v -i "$host" >"$T/evlist" 2>&1
grep -q "STACK_USER\|REGS_USER\|sample_stack_user\|sample_regs_user" "$T/evlist" &&
	{ cat "$T/evlist"; fail "the unwound file still asks for user registers or stacks"; }
grep -q "cpu-clock.*CALLCHAIN" "$T/evlist" || { cat "$T/evlist"; fail "the unwound file has no callchains"; }
perf report -i "$host" --stdio --no-children -g none --sort sym >/dev/null 2>"$T/report.err"
check_perf_stderr "perf report of the unwound file" "$T/report.err"
n=$(check_perfparser "$host") || { echo "$n"; exit 1; }
note "perfparser: $n samples"
[ "$(perf_samples "$host")" = "$(perf_samples "$raw")" ] || fail "the unwound file lost samples"

# Frame by frame against perf's unwinding of the raw file.  perf 6.1
# unwinds with libunwind, which gives up early on processes exec'd during a
# system-wide recording (the compilers other jobs run here) where libdw
# goes on, or keeps a return address read from garbage that ours drops;
# the share of all samples is only noted.  On the workload, which perf
# unwinds whole, the frames must be the same.
perf script --no-inline -i "$raw" -F comm,tid,time,ip >"$T/raw.txt" 2>"$T/raw.err"
perf script --no-inline -i "$host" -F comm,tid,time,ip >"$T/host.txt" 2>"$T/host.err"
check_perf_stderr "perf script of the unwound file" "$T/host.err"
python3 - "$T/raw.txt" "$T/host.txt" "$WL" <<'EOF' || fail "the user frames differ from perf's unwinding"
import sys
def load(p):
    out = []
    for block in open(p).read().split('\n\n'):
        lines = [l.strip() for l in block.strip().split('\n') if l.strip()]
        if lines:
            out.append((lines[0], [l.split()[0] for l in lines[1:] if not l.startswith('ffffffff')]))
    return out
raw, host = load(sys.argv[1]), load(sys.argv[2])
if len(raw) != len(host) or not raw:
    print(f"{len(raw)} samples in the raw file, {len(host)} unwound"); sys.exit(1)
pairs = list(zip(raw, host))
wl = [(a, b) for a, b in pairs if a[0].split()[0] == sys.argv[3]]
same_wl = sum(1 for a, b in wl if a == b)
same = sum(1 for a, b in pairs if a == b)
ext = sum(1 for a, b in pairs if a[0] == b[0] and b[1][:len(a[1])] == a[1])
print(f"# workload: {same_wl} of {len(wl)} samples have perf's user frames exactly")
print(f"# all: {same} of {len(pairs)} exactly, {ext} start with perf's frames")
for a, b in [(a, b) for a, b in pairs if not (a[0] == b[0] and b[1][:len(a[1])] == a[1])][:3]:
    print("# perf:", a, "\n# ours:", b)
ok = len(wl) >= 20 and same_wl * 100 >= len(wl) * 98
sys.exit(0 if ok else 1)
EOF

# The whole path in the workload's hot samples.
perf script -i "$host" -F comm,ip,sym --comm "$WL" >"$T/script" 2>"$T/script.err"
check_perf_stderr "perf script of the unwound file" "$T/script.err"
read -r hot hw rd rw < <(awk 'BEGIN { RS = "" }
	{ n = split($0, l, "\n"); leaf = ""; for (i = 2; i <= n && leaf == ""; i++) if (l[i] !~ /^[ \t]*ffffffff/) leaf = l[i] }
	leaf ~ / by_key$/ { hot++; if (/msort_with_tmp/ && /qsort/ && / sorts\n/ && / outer\n/ && / main\n/) hw++ }
	leaf ~ / (read|__GI___libc_read)$/ { rd++; if (/ read_some\n/ && / reader\n/ && /start_thread/) rw++ }
	END { printf "%d %d %d %d\n", hot, hw, rd, rw }' "$T/script")
note "unwound: $hw of $hot by_key samples and $rw of $rd read samples have the whole path"
[ "$hot" -ge 20 ] && [ $((hw * 100)) -ge $((hot * 95)) ] || fail "only $hw of $hot by_key samples are whole"
[ "$rd" -ge 5 ] && [ $((rw * 100)) -ge $((rd * 95)) ] || fail "only $rw of $rd read samples are whole"

# Bytes per sample against -g, recorded at the same time: whole files;
# the workload's own samples are noted (its unwound chains are whole, its
# -g ones stop at the first function without a frame pointer).
wl_bytes() {
	local pids
	pids=$(perf script -i "$1" -F pid --comm "$WL" 2>/dev/null | tr -d ' ' | sort -u | paste -sd,)
	perf report -D -i "$1" 2>/dev/null | python3 -c '
import re, sys
pids = set(sys.argv[1].split(","))
b = n = 0
for line in sys.stdin:
    m = re.search(r"\[0x([0-9a-f]+)\]: PERF_RECORD_SAMPLE\([^)]*\): (\d+)/\d+:", line)
    if m and m.group(2) in pids:
        b += int(m.group(1), 16)
        n += 1
print(b // max(n, 1))' "$pids"
}
hs=$(perf_samples "$host"); fs=$(perf_samples "$fp")
hb=$(stat -c %s "$host"); fb=$(stat -c %s "$fp"); rb=$(stat -c %s "$raw")
note "bytes per sample: raw $((rb / $(perf_samples "$raw"))), unwound $((hb / hs)), -g $((fb / fs)); the workload's samples alone: unwound $(wl_bytes "$host"), -g $(wl_bytes "$fp")"
exit 0
