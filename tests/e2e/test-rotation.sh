#!/usr/bin/env bash
# 20 rotations under load: the files together are one continuous recording
# (no sample twice, no gap per CPU, total at the configured rate), and each
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
sleep 1
# Signals of one kind coalesce while a rotation runs, so each rotation is
# awaited (its file published) before the next is asked for.
for i in $(seq 20); do
	kill -USR2 $DAEMON_PID
	for w in $(seq 100); do [ "$(ls "$T/out"/*.data 2>/dev/null | wc -l)" -ge $i ] && break; sleep 0.1; done
	sleep 0.3
done
sleep 0.5
kill -INT $DAEMON_PID; wait $DAEMON_PID; rc=$?; DAEMON_PID=
kill $wl 2>/dev/null; wait $wl 2>/dev/null
[ $rc = 0 ] || { cat "$T/err"; fail "perfrecd exited $rc"; }
ls "$T/out"/*.tmp 2>/dev/null && fail "a .tmp file was left behind"
files=$(ls "$T/out"/*.data)
n=$(wc -w <<<"$files")
note "$n files"
[ "$n" = 21 ] || { ls "$T/out"; cat "$T/err"; fail "expected 21 files after 20 rotations, got $n"; }

: >"$T/all"
for f in $files; do
	"$PERFRECCTL" verify "$f" >/dev/null || fail "perfrecctl verify rejected $f"
	perf report -i "$f" --stdio --no-children -g none --sort sym >"$T/rep" 2>"$T/rep.err"
	check_perf_stderr "perf report $f" "$T/rep.err"
	grep -v '^#' "$T/rep" | grep -v '^$' | head -3 | grep -q hot_function || { head -20 "$T/rep"; fail "$f does not resolve hot_function on its own"; }
	check_perfparser "$f" >/dev/null || exit 1
	perf script -i "$f" -F tid,cpu,time,ip --ns -G 2>"$T/scr.err" >>"$T/all" || fail "perf script failed on $f"
	check_perf_stderr "perf script $f" "$T/scr.err"
done

total=$(wc -l <"$T/all")
dups=$(sort "$T/all" | uniq -d | wc -l)
note "samples: $total, duplicated: $dups"
[ "$dups" = 0 ] || fail "$dups samples appear in more than one place"

# Per CPU, sample times continue across every file boundary: no gap longer
# than 20 sample periods anywhere in the concatenation.
awk -v f=$F '{
	cpu = $2; gsub(/[^0-9]/, "", cpu); t = $3; sub(/:$/, "", t); t += 0
	if (cpu in last) { g = t - last[cpu]; if (g > maxgap[cpu]) maxgap[cpu] = g }
	else first[cpu] = t
	last[cpu] = t; cnt[cpu]++
} END {
	bad = 0
	for (c in cnt) {
		span = last[c] - first[c]; expect = span * f
		printf "# cpu %s: %d samples over %.2fs (expected %.0f), max gap %.1f ms\n", c, cnt[c], span, expect, maxgap[c] * 1000
		if (maxgap[c] > 20.0 / f) { print "FAIL: gap on cpu " c; bad = 1 }
		d = (cnt[c] - expect) / expect; if (d < 0) d = -d
		if (d > 0.10) { print "FAIL: cpu " c " rate off by more than 10%"; bad = 1 }
	}
	exit bad
}' "$T/all" || fail "the files are not one continuous recording"

# The hook ran once per published file, with the path as its argument.
sleep 0.5
[ -f "$T/hook.log" ] || fail "the on-rotate hook never ran"
[ "$(wc -l <"$T/hook.log")" = 21 ] || { cat "$T/hook.log"; fail "hook ran $(wc -l <"$T/hook.log") times, expected 21"; }
IFS='|' read -r arg file host start end samples lost recovered after <"$T/hook.log"
[ "$arg" = "$file" ] && [ -f "$file" ] || fail "hook got '$arg' / '$file'"
[ "$host" = "$(hostname)" ] || fail "PERFREC_HOST=$host"
[[ "$start" =~ ^20[0-9]{2}-[0-9]{2}-[0-9]{2}T.*Z$ ]] || fail "PERFREC_START=$start"
[ "$samples" = "$(perf_samples "$file")" ] || fail "PERFREC_SAMPLES=$samples but perf counts $(perf_samples "$file")"
[ "$recovered" = 0 ] || fail "PERFREC_RECOVERED=$recovered"
# 20 rotations: each manifest was written after the next file began (its
# hash reads the whole file back: the rings drain into the new file
# meanwhile); the last file (at exit) has no next one.
[ "$(head -20 "$T/hook.log" | grep -c '|json-after$')" = 20 ] ||
	{ cat "$T/hook.log"; fail "a rotated file's manifest was written before the next file began"; }
tail -1 "$T/hook.log" | grep -q '|json$' || { tail -1 "$T/hook.log"; fail "the last file's hook: no manifest, or a file still recording"; }
exit 0
