#!/usr/bin/env bash
# Bad input: a one-line error naming the problem, non-zero exit, no file.
. "$(dirname "$0")/lib.sh"
require_events

expect_error() { # name, pattern, args...
	local name=$1 pat=$2; shift 2
	local out=$T/out-$RANDOM
	mkdir -p "$out"
	"$PERFRECD" -o "$out" --duration 2 "$@" >"$T/stdout" 2>"$T/stderr"
	local rc=$?
	[ $rc != 0 ] || fail "$name: exit status 0"
	[ "$(wc -l <"$T/stderr")" = 1 ] || { cat "$T/stderr"; fail "$name: expected one line of error, got $(wc -l <"$T/stderr")"; }
	grep -qiE -- "$pat" "$T/stderr" || { cat "$T/stderr"; fail "$name: error does not name the problem ($pat)"; }
	[ -z "$(ls -A "$out" 2>/dev/null)" ] || { ls -la "$out"; fail "$name: left files behind"; }
	note "$name: $(cat "$T/stderr")"
}

expect_error "unknown event" "cycels" -e cycels
expect_error "bad modifier" "cpu-clock:x" -e cpu-clock:x
expect_error "frequency 0" "frequency" -F 0
max=$(cat /proc/sys/kernel/perf_event_max_sample_rate)
expect_error "frequency above limit" "$((max + 1)).*perf_event_max_sample_rate" -F $((max + 1))
expect_error "missing config" "/nonexistent/perfrecd.conf" -c /nonexistent/perfrecd.conf
expect_error "-F with -P" "-F/--freq and -P/--period contradict" -F 99 -P 100000
printf '[record]\nfrequency=fast\n' >"$T/bad.conf"
expect_error "bad config value" "bad.conf:2.*frequency" -c "$T/bad.conf"
printf '[record]\nfrobnicate=1\n' >"$T/bad2.conf"
expect_error "unknown config key" "bad2.conf:2.*frobnicate" -c "$T/bad2.conf"

# An output directory that cannot be created or written.
touch "$T/plainfile"
"$PERFRECD" -o "$T/plainfile/sub" --duration 1 2>"$T/stderr"; rc=$?
[ $rc != 0 ] || fail "unwritable dir: exit 0"
[ "$(wc -l <"$T/stderr")" = 1 ] && grep -q "plainfile/sub" "$T/stderr" || { cat "$T/stderr"; fail "unwritable dir: no one-line error naming it"; }
mkdir -p "$T/ro"; mount -t tmpfs -o ro,size=1M tmpfs "$T/ro" 2>/dev/null && {
	"$PERFRECD" -o "$T/ro" --duration 1 2>"$T/stderr"; rc=$?
	umount "$T/ro"
	[ $rc != 0 ] || fail "read-only dir: exit 0"
	grep -q "$T/ro" "$T/stderr" || { cat "$T/stderr"; fail "read-only dir: error does not name it"; }
}

# An event this machine cannot open is named; the rest still record.
"$PERFRECD" -o "$T/mixed" -e cycles -e cpu-clock --duration 1 2>"$T/stderr"; rc=$?
if grep -q "cycles" "$T/stderr"; then
	[ $rc = 0 ] || { cat "$T/stderr"; fail "cycles unsupported + cpu-clock: exit $rc"; }
	ls "$T/mixed"/*.data >/dev/null || fail "cycles unsupported + cpu-clock: no file"
	"$PERFRECD" -o "$T/none" -e cycles --duration 1 2>"$T/stderr"; rc=$?
	[ $rc != 0 ] || fail "only an unsupported event: exit 0"
	grep -q "cycles" "$T/stderr" || fail "only an unsupported event: not named"
	[ -z "$(ls -A "$T/none" 2>/dev/null)" ] || fail "only an unsupported event: left files"
else
	note "cycles opened here (hardware PMU present); unsupported-event checks not applicable"
fi
# --check-config prints the effective configuration, or names file, line, key.
"$PERFRECD" --check-config -c "$TOP/conf/perfrecd.conf" -F 777 >"$T/cc" 2>"$T/cc.err" || { cat "$T/cc.err"; fail "--check-config rejected the default config"; }
grep -qx 'frequency=777' "$T/cc" || { cat "$T/cc"; fail "--check-config does not show the command line's frequency"; }
grep -qx 'events=cpu-clock' "$T/cc" || fail "--check-config does not show the events"
# Every key it shows is documented in conf/perfrecd.conf and perfrecd.conf(5).
for k in $(grep -Eo '^[a-z-]+=' "$T/cc" | tr -d =); do
	grep -Eq "^#?$k=" "$TOP/conf/perfrecd.conf" || fail "key $k is not documented in conf/perfrecd.conf"
	grep -Eq "^\.B[IR]? $(echo "$k" | sed 's/-/\\\\-/g')=" "$TOP/conf/perfrecd.conf.5" ||
		fail "key $k has no entry in perfrecd.conf(5)"
done
printf '[record]\nevents=cpu-clock\n\n[output]\nmax-files=many\n' >"$T/bad3.conf"
"$PERFRECD" --check-config -c "$T/bad3.conf" >/dev/null 2>"$T/cc.err" && fail "--check-config accepted max-files=many"
grep -q "bad3.conf:5: max-files" "$T/cc.err" || { cat "$T/cc.err"; fail "--check-config does not name file, line and key"; }
printf '[record]\nevents=cpu-clock,cycels\n' >"$T/bad4.conf"
"$PERFRECD" --check-config -c "$T/bad4.conf" >/dev/null 2>"$T/cc.err" && fail "--check-config accepted an unknown event"
grep -q "cycels" "$T/cc.err" || fail "--check-config does not name the unknown event"

grep -q "bad4.conf:2: events: unknown event 'cycels'" "$T/cc.err" || { cat "$T/cc.err"; fail "a bad event in the file has no line"; }

# Issue 17: configs that were accepted in silence or refused at the wrong
# line.  Each is refused, with file:line and what is wrong, both by
# --check-config and at start (expect_error: one line, non-zero, no file).
bad_config() { # name, text (printf format), pattern
	local f=$T/$1.conf
	printf "$2" >"$f"
	"$PERFRECD" --check-config -c "$f" >/dev/null 2>"$T/cc.err" && fail "--check-config accepted $1"
	grep -qE -- "$1.conf:$3" "$T/cc.err" || { cat "$T/cc.err"; fail "--check-config: $1 not refused as '$1.conf:$3'"; }
	expect_error "$1 at start" "$1.conf:$3" -c "$f"
}
bad_config dup '[record]\nfrequency=99\n[output]\nprefix=a\n[record]\nfrequency=50\n' \
	"6: duplicate key 'frequency' \\(already set on line 2\\)"
bad_config freqperiod '[record]\nfrequency=99\nperiod=1000\n' "3: period= contradicts frequency= on line 2"
bad_config nul '[record]\nfrequency=9\0009\n' "2: NUL byte"
bad_config cpus '[record]\ncpus=0-9999999\n' "2: cpus: CPU 9999999 is out of range"
bad_config nouser '[service]\nuser=perfrecd-no-such-user\n' "2: user: no user named 'perfrecd-no-such-user'"
bad_config section '[record\nfrequency=99\n' "1: unterminated section header '\\[record'"
bad_config event '[record]\n\nevents=cpu-clock,cycels\n' "3: events: unknown event 'cycels'"
{ printf '[output]\non-rotate=/bin/'; head -c 1048576 /dev/zero | tr '\0' x; printf '\nprefix=a\n'; } >"$T/long.conf"
"$PERFRECD" --check-config -c "$T/long.conf" >/dev/null 2>"$T/cc.err" && fail "--check-config accepted a 1 MB line"
grep -q "long.conf:2: line longer than 199 characters" "$T/cc.err" || { cat "$T/cc.err"; fail "a 1 MB line is not refused at its line"; }
expect_error "1 MB line at start" "long.conf:2: line longer" -c "$T/long.conf"

# The command line replaces the file's setting: -F over period= is no contradiction.
"$PERFRECD" --check-config -c "$T/freqperiod.conf" >/dev/null 2>&1 && fail "freqperiod.conf accepted"
printf '[record]\nperiod=100000\n' >"$T/period.conf"
"$PERFRECD" --check-config -c "$T/period.conf" -F 123 >"$T/cc" 2>"$T/cc.err" || { cat "$T/cc.err"; fail "-F over period= refused"; }
grep -qx 'frequency=123' "$T/cc" && ! grep -q '^period=' "$T/cc" || { cat "$T/cc"; fail "-F does not replace the file's period="; }

# A fractional duration is a duration, as in systemd and perf.
"$PERFRECD" --check-config --duration 1.5 >"$T/cc" 2>"$T/cc.err" || { cat "$T/cc.err"; fail "--duration 1.5 refused"; }
grep -qx 'duration=1500ms' "$T/cc" || { grep duration "$T/cc"; fail "--duration 1.5 is not 1500ms"; }
"$PERFRECD" -o "$T/frac" --socket '' --duration 1.5 2>"$T/frac.err" || { cat "$T/frac.err"; fail "--duration 1.5: perfrecd failed"; }
only_file "$T/frac" >/dev/null
"$PERFRECCTL" verify "$(only_file "$T/frac")" >/dev/null || fail "--duration 1.5: the file does not verify"

# Under systemd (JOURNAL_STREAM set) log lines carry sd-daemon priorities.
JOURNAL_STREAM=8:1 "$PERFRECD" -e cycels 2>"$T/j.err"
grep -q "^<3>Invalid command-line option: events: unknown event 'cycels'" "$T/j.err" || { cat "$T/j.err"; fail "no <3> priority prefix under systemd"; }
exit 0
