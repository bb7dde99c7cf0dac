#!/usr/bin/env bash
# Host unwinding runs on the unwind tables (internal/unwtab*.c), libdwfl
# only where a table says it cannot go on.  On a workload without frame
# pointers (tests/e2e/nofp):
# - perfrecctl unwind of a raw DWARF recording gives perf's own
#   --call-graph dwarf unwinding of the same file, frame by frame, on at
#   least 98% of the workload's samples, and says the tables unwound them;
# - perfrecd --unwind host reports (status; metrics: test-metrics.c) samples unwound by the
#   tables and by libdwfl, saves the tables beside its build-id cache
#   (OUT/.unwtab, 0700, files 0600), and a restart loads them instead of
#   building them again; a table file damaged on disk is refused, removed
#   and built again, byte for byte what it was.
. "$(dirname "$0")/lib.sh"
require_events; require_perf; require_perfparser
[ -x "$TOP/tests/e2e/nofp" ] || fail "tests/e2e/nofp is not built (make tests/e2e/nofp)"

WL=nofpt$$
cp "$TOP/tests/e2e/nofp" "$T/$WL"
S=$T/sock
ctl() { timeout 20 "$PERFRECCTL" --socket "$S" "$@"; }
BG= DAEMON_PID=
trap 'kill $BG $DAEMON_PID 2>/dev/null; cleanup' EXIT
id=$(readelf -n "$T/$WL" | awk '/Build ID:/ { print $3; exit }')
[ -n "$id" ] || fail "the workload has no build id"

# The workload runs before the recordings start (perf 6.1 loses the libc
# callers of a process exec'd during a system-wide recording).
"$T/$WL" 3600 >/dev/null &
BG=$!

# --- perfrecctl unwind against perf, frame by frame -------------------------
mkdir -p "$T/raw"
"$PERFRECD" -o "$T/raw" --socket= -e cpu-clock -F 499 -m 8M --duration 3 \
	--call-graph dwarf --unwind file 2>"$T/raw.log" || { cat "$T/raw.log"; fail "the raw DWARF recording failed"; }
raw=$(only_file "$T/raw")
"$PERFRECCTL" unwind "$raw" -o "$T/host.data" 2>"$T/unwind.err" || { cat "$T/unwind.err"; fail "perfrecctl unwind failed"; }
cat "$T/unwind.err"
read -r bt bd < <(sed -n 's/.*: \([0-9]*\) samples by unwind tables, \([0-9]*\) by libdwfl.*/\1 \2/p' "$T/unwind.err")
[ -n "$bt" ] || fail "perfrecctl unwind does not say how the tables served"
[ "$bt" -gt 0 ] && [ $((bt * 100)) -ge $(((bt + bd) * 90)) ] ||
	fail "the tables unwound $bt samples, libdwfl $bd: the tables are not the way"
"$PERFRECCTL" verify "$T/host.data" >/dev/null || fail "perfrecctl verify rejects the unwound file"
perf script --no-inline -i "$raw" -F comm,tid,time,ip >"$T/raw.txt" 2>"$T/raw.err"
perf script --no-inline -i "$T/host.data" -F comm,tid,time,ip >"$T/host.txt" 2>"$T/host.err"
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
wl = [(a, b) for a, b in zip(raw, host) if a[0].split()[0] == sys.argv[3]]
same = sum(1 for a, b in wl if a == b)
print(f"# workload: {same} of {len(wl)} samples have perf's user frames exactly")
for a, b in [(a, b) for a, b in wl if a != b][:3]:
    print("# perf:", a, "\n# ours:", b)
sys.exit(0 if len(wl) >= 20 and same * 100 >= len(wl) * 98 else 1)
EOF

# --- perfrecd: stats, tables on disk, a restart, a damaged file --------------
OUT=$T/out
mkdir -p "$OUT"
status() { # FILE COND: the daemon's status once COND (python, on its "unwind" object u) holds
	ctl --json status >"$1" 2>/dev/null &&
		python3 -c 'import json, sys; u = json.load(open(sys.argv[1])).get("unwind") or {}; sys.exit(0 if eval(sys.argv[2]) else 1)' "$1" "$2"
}
table_file() { [ -s "$OUT/.unwtab/$id.unwtab" ]; }
run() { # NAME COND: perfrecd until its tables unwound 50 samples, COND holds and the workload's table is on disk
	"$PERFRECD" -o "$OUT" --socket "$S" -e cpu-clock -F 499 -m 8M --call-graph dwarf --unwind host \
		2>"$T/$1.log" &
	DAEMON_PID=$!
	wait_for 60 status "$T/$1.status" "u.get('by_tables', 0) >= 50 and $2" ||
		{ cat "$T/$1.log" "$T/$1.status"; fail "$1: not $2 (or no 50 samples unwound by tables)"; }
	wait_for 30 table_file || { ls -la "$OUT/.unwtab"; fail "$1: no table of the workload in $OUT/.unwtab"; }
	kill -TERM $DAEMON_PID
	wait $DAEMON_PID || { cat "$T/$1.log"; fail "$1: perfrecd exited non-zero"; }
	DAEMON_PID=
}
field() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["unwind"].get(sys.argv[2], -1))' "$@"; }

# The worker builds tables within a budget (libdwfl meanwhile): wait for the tables to take over.
run first "u.get('tables_saved', 0) >= 1 and u['by_tables'] >= 9 * u.get('by_libdwfl', 0)"
python3 - "$T/first.status" <<'EOF' || fail "the first run's status does not show the tables at work"
import json, sys
u = json.load(open(sys.argv[1]))["unwind"]
print("# status:", {k: u[k] for k in u if "table" in k or k.startswith("by_") or k.endswith("_frames")})
t, d = u["by_tables"], u["by_libdwfl"]
ok = t * 100 >= (t + d) * 90 and u["tables_built"] >= 1 and u["tables_saved"] >= 1 and u["tables"] >= 1
sys.exit(0 if ok else 1)
EOF
[ "$(stat -c %a "$OUT/.unwtab")" = 700 ] || fail "$OUT/.unwtab is mode $(stat -c %a "$OUT/.unwtab"), not 700"
[ "$(stat -c %a "$OUT/.unwtab/$id.unwtab")" = 600 ] || fail "the table file is not mode 600"
cp "$OUT/.unwtab/$id.unwtab" "$T/good.unwtab"

run second "u.get('tables_loaded', 0) >= 1"
[ "$(field "$T/second.status" tables_refused)" = 0 ] || fail "the restart refused a table it had written"
cmp -s "$OUT/.unwtab/$id.unwtab" "$T/good.unwtab" || fail "the workload's table changed across a restart"

# Damaged in its rows: refused, removed, built again (the same bytes).
size=$(stat -c %s "$OUT/.unwtab/$id.unwtab")
printf '\xff\xfe\xfd\xfc' | dd of="$OUT/.unwtab/$id.unwtab" bs=1 seek=$((size / 2)) conv=notrunc status=none
run third "u.get('tables_refused', 0) >= 1"
[ "$(field "$T/third.status" tables_built)" -ge 1 ] || fail "the damaged table was not built again"
wait_for 30 cmp -s "$OUT/.unwtab/$id.unwtab" "$T/good.unwtab" || fail "the table built again is not the one built first"
for f in "$OUT"/*.data; do
	"$PERFRECCTL" verify "$f" >/dev/null || fail "perfrecctl verify rejects $f"
done
exit 0
