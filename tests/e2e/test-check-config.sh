#!/usr/bin/env bash
# perfrecd --check-config shows every key (the key table, daemon/config.c):
#  - an empty file gives the same settings as the shipped conf/perfrecd.conf,
#    which lists every key at its default;
#  - every key the shipped file sets or shows commented out is in the
#    output, in its section, except those that are unset by default
#    (period=, which frequency= replaces; label.NAME=);
#  - with -v each key follows a comment line saying what it is;
#  - a value given on the command line is what is shown.
. "$(dirname "$0")/lib.sh"

conf=$TOP/conf/perfrecd.conf
: >"$T/empty.conf"
"$PERFRECD_DEFAULT" -c "$T/empty.conf" --check-config >"$T/empty" 2>"$T/err" || { cat "$T/err"; fail "an empty file was refused"; }
"$PERFRECD_DEFAULT" -c "$conf" --check-config >"$T/shipped" 2>"$T/err" || { cat "$T/err"; fail "the shipped file was refused"; }
diff -u "$T/empty" "$T/shipped" >"$T/diff" || { cat "$T/diff"; fail "the shipped file is not the defaults"; }

# [section] then key=value lines: "section key" per key, from a file or the output.
keys() {
	awk '/^\[/ { sec = substr($0, 2, index($0, "]") - 2); next }
	     /^#?[a-z][a-z.-]*=/ { k = $0; sub(/^#/, "", k); sub(/=.*/, "", k); print sec, k }' "$1" | sort -u
}
keys "$conf" | grep -v -e ' period$' -e ' label\.' >"$T/want"
keys "$T/empty" >"$T/got"
[ "$(wc -l <"$T/want")" -ge 35 ] || { cat "$T/want"; fail "read only $(wc -l <"$T/want") keys from the shipped file"; }
missing=$(comm -23 "$T/want" "$T/got")
[ -z "$missing" ] || fail "--check-config does not show: $missing"
extra=$(comm -13 "$T/want" "$T/got")
[ -z "$extra" ] || fail "--check-config shows keys the shipped file does not list: $extra"

# -v: a comment before each key line, and the same settings.
"$PERFRECD_DEFAULT" -c "$T/empty.conf" --check-config -v >"$T/verbose" 2>"$T/err" || { cat "$T/err"; fail "--check-config -v failed"; }
grep -v '^#' "$T/verbose" | diff -u "$T/empty" - || fail "--check-config -v shows other settings"
awk '/^[a-z]/ && prev !~ /^# ./ { print "no comment before " $0; bad = 1 } { prev = $0 } END { exit bad }' \
	"$T/verbose" || fail "--check-config -v leaves a key without its comment"

# The command line wins, and what it set is shown.
"$PERFRECD_DEFAULT" -c "$conf" --check-config -F 123 --max-age 2d --socket '' >"$T/cli" || fail "options refused"
grep -qx frequency=123 "$T/cli" && grep -qx max-age=172800s "$T/cli" && grep -qx socket= "$T/cli" ||
	{ cat "$T/cli"; fail "--check-config does not show the command line's values"; }
exit 0
