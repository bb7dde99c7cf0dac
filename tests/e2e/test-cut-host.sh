#!/usr/bin/env bash
# "What was this host doing in the last seconds" with host unwinding
# (--call-graph dwarf --unwind host): the unwinding stage sits in front of
# the history as of the files, so the published files and the daemon's
# snapshot of its history both hold plain callchains of the same events.
# `perfrecctl cut` of the last seconds over the published files and the
# snapshot (standing in for the file being written) has nothing to unwind
# and merges them into one file that:
#   - passes perfrecctl verify, perf report and perf script with a clean
#     stderr, and perfparser;
#   - asks for no user registers or stacks (perf evlist -v), has
#     callchains, and holds cpu-clock once;
#   - holds samples of the published files and samples newer than every
#     published one (the snapshot's part);
#   - shows the whole path of the workload built without frame pointers
#     (tests/e2e/nofp.c) in at least 95% of its hot samples, in the
#     snapshot's part as well as in the whole.
. "$(dirname "$0")/lib.sh"
require_events; require_perf; require_perfparser
[ -x "$TOP/tests/e2e/nofp" ] || fail "tests/e2e/nofp is not built (make tests/e2e/nofp)"

WL=nofpc$$
cp "$TOP/tests/e2e/nofp" "$T/$WL"
S=$T/sock
BG=
trap 'kill $BG 2>/dev/null; cleanup' EXIT

# The workload runs before the recording starts and until the test ends.
"$T/$WL" 3600 >/dev/null &
BG=$!

# Rotation every 2 s; a history of 3 s for the snapshot; rings of a few
# seconds at 8 KiB a sample, so that nothing is lost while the snapshot is
# written (perf report would warn).
printf '[output]\nrotate-interval=2s\n' >"$T/conf"
"$PERFRECD" -c "$T/conf" -o "$T/out" --socket "$S" -e cpu-clock -F 499 --call-graph dwarf --unwind host \
	-m 32M --history 3s 2>"$T/log" &
DAEMON_PID=$!
published() { [ "$(ls "$T/out"/*.data 2>/dev/null | wc -l)" -ge "$1" ]; }
wait_for 60 published 1 || { cat "$T/log"; fail "perfrecd published no file"; }
timeout 60 "$PERFRECCTL" --socket "$S" snapshot "$T/snap.data" >/dev/null || fail "snapshot failed"
n0=$(ls "$T"/out/*.data | wc -l)
wait_for 60 published $((n0 + 3)) || { cat "$T/log"; fail "perfrecd published no 3 files after the snapshot"; }
kill -INT $DAEMON_PID; wait $DAEMON_PID; rc=$?; DAEMON_PID=
[ $rc = 0 ] || { cat "$T/log"; fail "perfrecd exited $rc"; }

# Record times (samples and side-band) as perf script prints them, in ns.
times_ns() {
	perf script -i "$1" -F time --ns "${@:2}" 2>/dev/null |
		awk '{ t = $1; sub(/:$/, "", t); if (t ~ /^[0-9]+\.[0-9]+$/) { sub(/\./, "", t); print t } }' | sort -n
}
all_times_ns() { times_ns "$1" --show-task-events --show-mmap-events --show-lost-events; }
# The snapshot and the files published after it: cut writes its inputs
# one after another, and a snapshot's history (whose side-band reaches
# back to the start) overlapping files before it would put records out
# of time order, which perf warns about.
snap_max=$(all_times_ns "$T/snap.data" | tail -1)
pubs=
for f in "$T"/out/*.data; do
	m=$(all_times_ns "$f" | head -1)
	[ -n "$m" ] && [ "$m" -gt "$snap_max" ] && pubs="$pubs $f"
done
[ -n "$pubs" ] || fail "no published file starts after the snapshot"
# What the cut has to join: unwound files and an unwound snapshot of the
# same events (a raw snapshot, as older perfrecd wrote, is unwound by the
# cut: tests/unit/test-cut-unwind.c).
for f in $pubs; do
	perf evlist -v -i "$f" 2>&1 | grep -q "cpu-clock.*STACK_USER" && fail "published $(basename "$f") is raw"
done
perf evlist -v -i "$T/snap.data" 2>&1 | grep -q "cpu-clock.*STACK_USER" &&
	fail "the snapshot of the history holds raw DWARF samples: the unwinding stage is not in front of it"
note "the snapshot's records end at $snap_max; published files after it:$pubs"

# shellcheck disable=SC2086
"$PERFRECCTL" cut --no-live --from -12s --to now -o "$T/cut.data" "$T/snap.data" $pubs 2>"$T/cut.err" ||
	{ cat "$T/cut.err"; fail "cut of the last seconds failed"; }
sed 's/^/# /' "$T/cut.err"
grep -q "snap.data: raw DWARF stacks .* unwound on this host" "$T/cut.err" &&
	fail "cut unwound the snapshot again"
# Both kinds of input gave samples: a published file and the snapshot.
grep -Eq "used perfrecd-[^ ]*\.data: [1-9][0-9]* samples" "$T/cut.err" || fail "no published file gave samples"
grep -Eq "used snap\.data: [1-9][0-9]* samples" "$T/cut.err" || fail "the snapshot gave no samples"

"$PERFRECCTL" verify "$T/cut.data" >/dev/null || fail "perfrecctl verify rejects the cut"
perf evlist -v -i "$T/cut.data" >"$T/evlist" 2>&1
grep -q "STACK_USER\|REGS_USER\|sample_stack_user\|sample_regs_user" "$T/evlist" &&
	{ cat "$T/evlist"; fail "the cut still asks for user registers or stacks"; }
grep -q "cpu-clock.*CALLCHAIN" "$T/evlist" || { cat "$T/evlist"; fail "the cut has no callchains"; }
[ "$(grep -c '^cpu-clock' "$T/evlist")" = 1 ] || { cat "$T/evlist"; fail "the cut holds cpu-clock more than once"; }
perf report -i "$T/cut.data" --stdio --no-children -g none --sort sym >/dev/null 2>"$T/report.err"
check_perf_stderr "perf report of the cut" "$T/report.err"
n=$(check_perfparser "$T/cut.data") || { echo "$n"; exit 1; }
[ "$n" = "$(perf_samples "$T/cut.data")" ] || fail "perfparser counts $n samples, perf $(perf_samples "$T/cut.data")"

times_ns "$T/cut.data" >"$T/times"
old=$(awk -v m="$snap_max" '$1 <= m' "$T/times" | wc -l)
new=$(awk -v m="$snap_max" '$1 > m' "$T/times" | wc -l)
note "the cut: $old samples of the snapshot, $new of the files published after it"
[ "$old" -gt 0 ] || fail "the cut holds no sample of the snapshot"
[ "$new" -gt 0 ] || fail "the cut holds no sample of the published files"

# whole_paths FILE [PERF SCRIPT ARGS]: "HOT WHOLE READS WHOLE" (as in
# test-dwarf-host): samples whose leaf is by_key, and those of the reader
# thread in read(), each with how many carry the whole path.
whole_paths() {
	local f=$1; shift
	perf script -i "$f" -F comm,ip,sym --comm "$WL" "$@" >"$T/script" 2>"$T/script.err" ||
		{ cat "$T/script.err"; fail "perf script failed on $f"; }
	check_perf_stderr "perf script of $f" "$T/script.err"
	awk 'BEGIN { RS = "" }
	     { n = split($0, l, "\n"); leaf = ""; for (i = 2; i <= n && leaf == ""; i++) if (l[i] !~ /^[ \t]*ffffffff/) leaf = l[i] }
	     leaf ~ / by_key$/ { hot++; if (/msort_with_tmp/ && /qsort/ && / sorts\n/ && / outer\n/ && / main\n/) hw++ }
	     leaf ~ /libc_read| read$/ { rd++; if (/ read_some\n/ && / reader\n/ && /start_thread/) rw++ }
	     END { printf "%d %d %d %d\n", hot, hw, rd, rw }' "$T/script"
}
check_paths() { # WHAT MIN_HOT MIN_READ FILE [PERF SCRIPT ARGS]
	local what=$1 min_hot=$2 min_rd=$3 hot hw rd rw; shift 3
	read -r hot hw rd rw < <(whole_paths "$@")
	note "$what: $hw of $hot by_key samples and $rw of $rd read samples have the whole path"
	[ "$hot" -ge "$min_hot" ] || fail "$what: only $hot samples in by_key"
	[ "$rd" -ge "$min_rd" ] || fail "$what: only $rd samples in read"
	[ $((hw * 100)) -ge $((hot * 95)) ] || { grep -m1 -B2 -A20 by_key "$T/script"; fail "$what: only $hw of $hot by_key samples have the whole path"; }
	[ $((rw * 100)) -ge $((rd * 95)) ] || { grep -m1 -B8 -A10 _read "$T/script"; fail "$what: only $rw of $rd read samples have the whole path"; }
}
check_paths "the cut" 20 5 "$T/cut.data"
# The samples up to the snapshot's end came from the snapshot only.
check_paths "the snapshot's part of the cut" 20 1 "$T/cut.data" --time ",$((snap_max / 1000000000)).$(printf %09d $((snap_max % 1000000000)))"

# Without a history, the daemon's Snapshot is a copy of the file being
# written, whose samples are unwound already: a cut reaching "now" uses it
# beside the published files.  (Its attrs were the raw ones, so the copy
# did not parse: verify and perf report refused it, and so did the cut.)
note "a cut up to now, with the file being written"
mkdir -p "$T/out2"
"$PERFRECD" -c "$T/conf" -o "$T/out2" --socket "$S" -e cpu-clock -F 499 --call-graph dwarf --unwind host \
	-m 32M 2>"$T/log2" &
DAEMON_PID=$!
published2() { [ "$(ls "$T/out2"/*.data 2>/dev/null | wc -l)" -ge 1 ]; }
wait_for 60 published2 || { cat "$T/log2"; fail "perfrecd published no file"; }
timeout 60 "$PERFRECCTL" --socket "$S" snapshot "$T/live-snap.data" >/dev/null || fail "snapshot of the file being written failed"
"$PERFRECCTL" verify "$T/live-snap.data" >/dev/null || fail "perfrecctl verify rejects the snapshot of the file being written"
"$PERFRECCTL" --socket "$S" cut --from -3s --to now -o "$T/live.data" "$T/out2" 2>"$T/live.err" ||
	{ cat "$T/live.err"; fail "cut up to now failed"; }
sed 's/^/# /' "$T/live.err"
grep -q "snapshot" "$T/live.err" || fail "the cut up to now did not use the daemon's snapshot"
"$PERFRECCTL" verify "$T/live.data" >/dev/null || fail "perfrecctl verify rejects the cut up to now"
perf evlist -v -i "$T/live.data" 2>&1 | grep -q "STACK_USER" && fail "the cut up to now holds raw stacks"
perf report -i "$T/live.data" --stdio --no-children -g none --sort sym >/dev/null 2>"$T/live-report.err"
check_perf_stderr "perf report of the cut up to now" "$T/live-report.err"
[ "$(perf_samples "$T/live.data")" -gt 0 ] || fail "the cut up to now holds no samples"
exit 0
