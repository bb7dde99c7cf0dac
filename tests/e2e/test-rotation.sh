#!/usr/bin/env bash
# 20 rotations under load: the files together are one continuous recording
# (no sample twice, every CPU in every file, each file taking over where the
# previous one ended; tests/bench/timing.sh measures the gaps), and each
# file alone is valid for perf, perfparser and perfrecctl and resolves the
# workload's hot function.  Then a hook sees every published file, with its
# manifest, and (for a rotation) the next file already recording: what
# publishing can put off waits until the rings drain into a file again.
. "$(dirname "$0")/lib.sh"
require_events; require_perf; require_perfparser

F=499
cat >"$T/hook.sh" <<'HOOK'
#!/bin/sh
# last: whether the manifest exists, and whether the file being recorded
# now was created before it was written ("json-after")
man=$([ -s "$1.json" ] && echo json)
for t in "$(dirname "$1")"/*.data.tmp; do
	[ -e "$t" ] || continue
	[ "$(stat -c %.9W "$t")" \< "$(stat -c %.9Y "$1.json")" ] && man="$man-after"
done
echo "$1|$PERFREC_FILE|$PERFREC_HOST|$PERFREC_START|$PERFREC_END|$PERFREC_SAMPLES|$PERFREC_LOST|$PERFREC_RECOVERED|$man" >>"$(dirname "$0")/hook.log"
HOOK
chmod +x "$T/hook.sh"
printf '[output]\non-rotate=%s\n' "$T/hook.sh" >"$T/conf"

"$WORKLOAD" 30 >/dev/null &
wl=$!
"$PERFRECD" -c "$T/conf" -o "$T/out" -e cpu-clock -F $F --no-call-graph 2>"$T/err" &
DAEMON_PID=$!
started() { grep -q Recording "$T/err"; }
wait_for 30 started || { cat "$T/err"; fail "perfrecd did not start recording"; }
# Signals of one kind coalesce while a rotation runs, so each rotation is
# awaited (its file published) before the next is asked for.
for i in $(seq 20); do
	kill -USR2 $DAEMON_PID
	sleep 0.3   # some recording in each file
	published() { [ "$(ls "$T/out"/*.data.json 2>/dev/null | wc -l)" -ge $i ]; }
	wait_for 30 published || { ls "$T/out"; cat "$T/err"; fail "rotation $i: no file published within 30 s"; }
done
sleep 0.3   # and in the last one
kill -INT $DAEMON_PID; wait $DAEMON_PID; rc=$?; DAEMON_PID=
kill $wl 2>/dev/null; wait $wl 2>/dev/null
[ $rc = 0 ] || { cat "$T/err"; fail "perfrecd exited $rc"; }
ls "$T/out"/*.tmp 2>/dev/null && fail "a .tmp file was left behind"
files=$(ls "$T/out"/*.data)
n=$(wc -w <<<"$files")
note "$n files"
[ "$n" = 21 ] || { ls "$T/out"; cat "$T/err"; fail "expected 21 files after 20 rotations, got $n"; }

: >"$T/all"
k=0
for f in $files; do
	k=$((k + 1))
	"$PERFRECCTL" verify "$f" >/dev/null || fail "perfrecctl verify rejected $f"
	perf report -i "$f" --stdio --no-children -g none --sort sym >"$T/rep" 2>"$T/rep.err"
	check_perf_stderr "perf report $f" "$T/rep.err"
	grep -v '^#' "$T/rep" | grep -v '^$' | head -3 | grep -q hot_function || { head -20 "$T/rep"; fail "$f does not resolve hot_function on its own"; }
	check_perfparser "$f" >/dev/null || exit 1
	perf script -i "$f" -F tid,cpu,time,ip --ns -G 2>"$T/scr.err" | sed "s/^/$k /" >>"$T/all" \
		|| fail "perf script failed on $f"
	check_perf_stderr "perf script $f" "$T/scr.err"
done

total=$(wc -l <"$T/all")
dups=$(cut -d' ' -f2- "$T/all" | sort | uniq -d | wc -l)
note "samples: $total, duplicated: $dups"
[ "$dups" = 0 ] || fail "$dups samples appear in more than one place"

# Per CPU: samples in every file, in time order across every file boundary
# (each file begins after the previous one ended: the same events go on).
awk -v nfiles="$n" -v ncpu="$(nproc)" '{
	k = $1; cpu = $3; gsub(/[^0-9]/, "", cpu); cpu += 0; t = $4; sub(/:$/, "", t); t += 0
	cnt[k, cpu]++
	if (!((k, cpu) in first) || t < first[k, cpu]) first[k, cpu] = t
	if (!((k, cpu) in last) || t > last[k, cpu]) last[k, cpu] = t
} END {
	bad = 0
	for (c = 0; c < ncpu; c++)
		for (k = 1; k <= nfiles; k++) {
			if (!cnt[k, c]) { print "FAIL: no samples of cpu " c " in file " k; bad = 1; continue }
			if (k > 1 && cnt[k - 1, c] && first[k, c] <= last[k - 1, c]) {
				printf "FAIL: cpu %d: file %d begins at %.9f, before file %d ends at %.9f\n", c, k, first[k, c], k - 1, last[k - 1, c]
				bad = 1
			}
		}
	exit bad
}' "$T/all" || fail "the files are not one continuous recording"

# The hook ran once per published file, with the path as its argument.
# Hooks run in the background: wait for all 21.
hooks_ran() { [ "$(cat "$T/hook.log" 2>/dev/null | wc -l)" -ge 21 ]; }
wait_for 30 hooks_ran || { cat "$T/hook.log" 2>/dev/null; fail "the hook ran $(cat "$T/hook.log" 2>/dev/null | wc -l) times within 30 s, expected 21"; }
[ "$(wc -l <"$T/hook.log")" = 21 ] || { cat "$T/hook.log"; fail "hook ran $(wc -l <"$T/hook.log") times, expected 21"; }
IFS='|' read -r arg file host start end samples lost recovered after <"$T/hook.log"
[ "$arg" = "$file" ] && [ -f "$file" ] || fail "hook got '$arg' / '$file'"
[ "$host" = "$(hostname)" ] || fail "PERFREC_HOST=$host"
[[ "$start" =~ ^20[0-9]{2}-[0-9]{2}-[0-9]{2}T.*Z$ ]] || fail "PERFREC_START=$start"
# Every file's sample count, as the hook was told it, is perf's.
while IFS='|' read -r _ file _ _ _ samples _; do
	[ "$samples" = "$(perf_samples "$file")" ] || fail "$file: PERFREC_SAMPLES=$samples but perf counts $(perf_samples "$file")"
done <"$T/hook.log"
[ "$recovered" = 0 ] || fail "PERFREC_RECOVERED=$recovered"
# 20 rotations: each manifest was written after the next file began (its
# hash reads the whole file back: the rings drain into the new file
# meanwhile); the last file (at exit) has no next one.
[ "$(head -20 "$T/hook.log" | grep -c '|json-after$')" = 20 ] ||
	{ cat "$T/hook.log"; fail "a rotated file's manifest was written before the next file began"; }
tail -1 "$T/hook.log" | grep -q '|json$' || { tail -1 "$T/hook.log"; fail "the last file's hook: no manifest, or a file still recording"; }
exit 0
