#!/usr/bin/env bash
# zstd compression.  One uncompressed recording is copied through the writer
# at levels 1, 3 and 19 (perfrecctl compress): perf must read each with a
# clean stderr, the same SAMPLE count and byte-identical per-sample lines,
# and perfrecctl verify must accept it.  Then a real `perfrecd -z` recording
# (and one at --compress 19) is checked by perf, and `perfrecctl decompress`
# must give perfparser (which cannot read COMPRESSED records) the same
# samples perf counts.
. "$(dirname "$0")/lib.sh"
require_events; require_perf; require_perfparser

"$WORKLOAD" 12 >/dev/null &
wl=$!
"$PERFRECD" -o "$T/plain" -e cpu-clock -F 499 -g --duration 2 2>"$T/plain.log" || { cat "$T/plain.log"; fail "perfrecd (plain) failed"; }
base=$(only_file "$T/plain") || exit 1
base_n=$(perf_samples "$base")
[ -n "$base_n" ] && [ "$base_n" -gt 0 ] || fail "no samples in the plain recording"
perf script -i "$base" -F tid,cpu,time,ip --ns -G >"$T/base.script" 2>"$T/base.err"
check_perf_stderr "perf script (plain)" "$T/base.err"
note "plain recording: $base_n samples, $(stat -c %s "$base") bytes"

for l in 1 3 19; do
	z=$T/z$l.data
	"$PERFRECCTL" compress -l $l "$base" "$z" || fail "perfrecctl compress -l $l failed"
	"$PERFRECCTL" verify "$z" || fail "perfrecctl verify rejected level $l"
	perf report -i "$z" --stats >"$T/z$l.stats" 2>"$T/z$l.err"
	check_perf_stderr "perf report --stats (level $l)" "$T/z$l.err"
	n=$(awk '/SAMPLE events:/ {print $3; exit}' "$T/z$l.stats")
	c=$(awk '/COMPRESSED events:/ {print $3; exit}' "$T/z$l.stats")
	[ "$n" = "$base_n" ] || fail "level $l: perf counts $n samples, the plain file $base_n"
	[ -n "$c" ] && [ "$c" -gt 0 ] || fail "level $l: perf saw no COMPRESSED records"
	perf script -i "$z" -F tid,cpu,time,ip --ns -G >"$T/z$l.script" 2>"$T/z$l.serr"
	check_perf_stderr "perf script (level $l)" "$T/z$l.serr"
	cmp -s "$T/base.script" "$T/z$l.script" || { diff "$T/base.script" "$T/z$l.script" | head; fail "level $l: perf script differs from the plain file"; }
	perf report -i "$z" --header-only -I 2>/dev/null | grep -q "# compressed : Zstd, level = $l," \
		|| fail "level $l: perf does not show HEADER_COMPRESSED with level $l"
	note "level $l: $n samples in $c COMPRESSED records, $(stat -c %s "$z") bytes"
done

# A real compressed recording, default level and 19.
for opt in -z "--compress 19"; do
	dir=$T/live${opt// /}
	# shellcheck disable=SC2086
	"$PERFRECD" -o "$dir" -e cpu-clock -F 499 -g $opt --duration 2 2>"$T/live.log" || { cat "$T/live.log"; fail "perfrecd $opt failed"; }
	grep -q "Compressed .*ratio" "$T/live.log" || { cat "$T/live.log"; fail "perfrecd $opt did not report its compression ratio"; }
	f=$(only_file "$dir") || exit 1
	"$PERFRECCTL" verify "$f" || fail "perfrecctl verify rejected the perfrecd $opt file"
	perf report -i "$f" --stats >"$T/live.stats" 2>"$T/live.err"
	check_perf_stderr "perf report --stats (perfrecd $opt)" "$T/live.err"
	n=$(awk '/SAMPLE events:/ {print $3; exit}' "$T/live.stats")
	c=$(awk '/COMPRESSED events:/ {print $3; exit}' "$T/live.stats")
	[ -n "$n" ] && [ "$n" -gt 0 ] || fail "perfrecd $opt: perf found no samples"
	[ -n "$c" ] && [ "$c" -gt 0 ] || fail "perfrecd $opt: no COMPRESSED records"
	perf report -i "$f" --stdio --no-children -g none --sort sym 2>/dev/null | grep -v '^#' | head -5 | grep -q hot_function \
		|| fail "perfrecd $opt: hot_function not among the top symbols"
	note "perfrecd $opt: $n samples, $c COMPRESSED records"
done

# Crash: a compressed recording killed mid-way is recovered into a file perf
# reads (the .tmp has no HEADER_COMPRESSED yet: recovery must add it).
printf '[record]\ncheckpoint-interval=300ms\nflush-interval=100ms\n' >"$T/crash.conf"
"$PERFRECD" -c "$T/crash.conf" -o "$T/crash" -e cpu-clock -F 499 -g -z 2>"$T/crash.log" &
DAEMON_PID=$!
sleep 3
kill -9 $DAEMON_PID; wait $DAEMON_PID 2>/dev/null; DAEMON_PID=
tmp=$(ls "$T"/crash/*.data.tmp) || fail "the killed recording left no .tmp"
"$PERFRECCTL" recover "$tmp" -o "$T/recovered.data" || fail "perfrecctl recover failed on a compressed .tmp"
"$PERFRECCTL" verify "$T/recovered.data" || fail "the recovered compressed file does not verify"
perf report -i "$T/recovered.data" --stats >"$T/rec.stats" 2>"$T/rec.err"
check_perf_stderr "perf report --stats (recovered)" "$T/rec.err"
n=$(awk '/SAMPLE events:/ {print $3; exit}' "$T/rec.stats")
c=$(awk '/COMPRESSED events:/ {print $3; exit}' "$T/rec.stats")
[ -n "$n" ] && [ "$n" -gt 0 ] || fail "perf found no samples in the recovered compressed file"
[ -n "$c" ] && [ "$c" -gt 0 ] || fail "the recovered file lost its COMPRESSED records"
note "recovered after kill -9: $n samples in $c COMPRESSED records"
kill $wl 2>/dev/null; wait $wl 2>/dev/null

# decompress: a plain copy perfparser reads, with perf's sample count.
"$PERFRECCTL" decompress "$T/z3.data" "$T/plain-again.data" || fail "perfrecctl decompress failed"
perf report -i "$T/plain-again.data" --stats 2>/dev/null | grep -q "COMPRESSED events" && fail "decompress left COMPRESSED records"
pp=$(check_perfparser "$T/plain-again.data") || exit 1
[ "$pp" = "$base_n" ] || fail "perfparser counts $pp samples in the decompressed copy, perf $base_n"
perf script -i "$T/plain-again.data" -F tid,cpu,time,ip --ns -G 2>/dev/null | cmp -s - "$T/base.script" \
	|| fail "the decompressed copy's samples differ from the original"
note "decompress: perfparser $pp samples"

# The key and its options: -z is level 1 (as perf record -z), a number is that level, no is off.
for args in "-z|1" "--compress 1|1" "--compress 19|19" "--compress no|0" "--compress 0|0"; do
	# shellcheck disable=SC2086
	got=$("$PERFRECD_DEFAULT" ${args%|*} --check-config 2>&1 | sed -n 's/^compress=//p')
	[ "$got" = "${args#*|}" ] || fail "perfrecd ${args%|*}: compress=$got, expected ${args#*|}"
done
printf '[output]\ncompress=yes\n' >"$T/z.conf"
[ "$("$PERFRECD_DEFAULT" -c "$T/z.conf" --check-config | sed -n 's/^compress=//p')" = 1 ] || fail "compress=yes in a file is not level 1"
[ "$("$PERFRECD_DEFAULT" --check-config | sed -n 's/^compress=//p')" = 1 ] || fail "files are not compressed at level 1 by default"

# Bad input gets one clear line.
"$PERFRECD" -o "$T/bad" --compress 25 --duration 1 2>"$T/bad.err" && fail "perfrecd accepted --compress 25"
grep -q "compress: '25'" "$T/bad.err" || { cat "$T/bad.err"; fail "no clear error for --compress 25"; }
"$PERFRECCTL" decompress /bin/true "$T/x.data" 2>"$T/bad2.err"
[ $? = 1 ] || fail "perfrecctl decompress of a non-perf file should exit 1"
grep -q "not a perf.data" "$T/bad2.err" || { cat "$T/bad2.err"; fail "no clear error for a non-perf input"; }
[ -e "$T/x.data" ] && fail "a failed decompress left an output file"
exit 0
