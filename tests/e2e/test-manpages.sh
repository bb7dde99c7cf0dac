#!/usr/bin/env bash
# The man pages tell the truth (issue 18): every option `perfrecd --help`
# lists has an entry in perfrecd(8), every command and option of
# `perfrecctl --help` one in perfrecctl(1), both programs' --version is the
# version of the Makefile and of the three pages' .TH lines, and the file
# name perfrecd(8) shows is the shape of the names perfrecd writes.
. "$(dirname "$0")/lib.sh"

# The terms of a page's .TP entries, as plain text: fonts and escapes gone.
terms() {
	awk 'prev == ".TP" { print } { prev = $0 }' "$1" |
		sed -e 's/\\f[BIRP]//g' -e 's/\\-/-/g' -e 's/\\(aq/'"'"'/g' -e 's/"//g' -e 's/^\.[A-Z]* //'
}

# Options in --help's first column: "-c, --config FILE  text" gives -c and
# --config; "--call-graph[=fp]" gives --call-graph.  Up to the first word
# that is neither an option nor an ARGUMENT.
help_options() {
	grep -E '^ +-' | while read -r line; do
		for w in $line; do
			w=${w%,}
			case $w in
			-*) echo "${w%%[[=]*}" ;;
			[A-Z]*|\[*) ;;
			*) break ;;
			esac
		done
	done
}

# Prints the options of stdin (one a line) that have no entry in page $1.
missing_options() {
	local page=$1 o
	terms "$page" >"$T/terms"
	while read -r o; do
		grep -Eq -- "(^|[ ,\[])$o([ ,=\[]|$)" "$T/terms" || echo "$o"
	done
}

"$PERFRECD" --help >"$T/help" || fail "perfrecd --help failed"
help_options <"$T/help" | sort -u >"$T/opts"
[ "$(wc -l <"$T/opts")" -ge 30 ] || { cat "$T/opts"; fail "parsed only $(wc -l <"$T/opts") options from perfrecd --help"; }
for o in --socket --switch-output --call-graph -m -a --check-config; do
	grep -qx -- "$o" "$T/opts" || fail "the parser did not find $o in perfrecd --help"
done
missing=$(missing_options "$TOP/daemon/perfrecd.8" <"$T/opts")
[ -z "$missing" ] || fail "perfrecd --help options not documented in perfrecd.8:" $missing

# The check notices a missing entry: perfrecd.8 without its --socket entry.
awk '{ line[NR] = $0 }
     END { for (i = 1; i <= NR; i++) {
		if (line[i] == ".TP" && line[i + 1] ~ /socket " PATH"/) {
			for (i++; i < NR && line[i + 1] != ".TP"; i++) ;
			continue
		}
		print line[i] } }' "$TOP/daemon/perfrecd.8" >"$T/cut.8"
! grep -q 'socket " PATH"' "$T/cut.8" || fail "could not cut the --socket entry from the copy"
[ "$(missing_options "$T/cut.8" <"$T/opts")" = "--socket" ] ||
	fail "a perfrecd.8 without --socket was not caught: '$(missing_options "$T/cut.8" <"$T/opts")'"

# perfrecctl: every command and every option of --help.
"$PERFRECCTL" --help >"$T/ctlhelp" || fail "perfrecctl --help failed"
sed -n '/^commands:/,/^$/p' "$T/ctlhelp" | awk 'NF && !/:$/ { print $1 }' >"$T/cmds"
[ "$(wc -l <"$T/cmds")" -ge 13 ] || { cat "$T/cmds"; fail "parsed only $(wc -l <"$T/cmds") commands from perfrecctl --help"; }
terms "$TOP/tools/perfrecctl.1" | awk '{ print $1 }' >"$T/ctlterms"
for c in $(cat "$T/cmds"); do
	grep -qx -- "$c" "$T/ctlterms" || fail "perfrecctl command $c is not documented in perfrecctl.1"
done
sed -n '/^options:/,/^$/p' "$T/ctlhelp" | help_options | sort -u >"$T/ctlopts"
[ -s "$T/ctlopts" ] || fail "no options parsed from perfrecctl --help"
missing=$(missing_options "$TOP/tools/perfrecctl.1" <"$T/ctlopts")
[ -z "$missing" ] || fail "perfrecctl --help options not documented in perfrecctl.1:" $missing
grep -q "not part of this version" "$TOP/tools/perfrecctl.1" && fail "perfrecctl.1 still says control commands are not part of this version"

# One version: the Makefile's, printed by both programs and on every page.
v=$(sed -n 's/^VERSION := //p' "$TOP/Makefile")
[ -n "$v" ] || fail "no VERSION in the Makefile"
[ "$("$PERFRECD" --version)" = "perfrecd $v" ] || fail "perfrecd --version says '$("$PERFRECD" --version)', the Makefile $v"
[ "$("$PERFRECCTL" --version)" = "perfrecctl $v" ] || fail "perfrecctl --version says '$("$PERFRECCTL" --version)', the Makefile $v"
for page in daemon/perfrecd.8 tools/perfrecctl.1 conf/perfrecd.conf.5; do
	grep -q "^\.TH .* \"perfrecd $v\"" "$TOP/$page" || fail "$page: .TH does not carry perfrecd $v: $(grep '^\.TH' "$TOP/$page")"
done

# The file names perfrecd(8) shows have the shape of those it writes.
shape() { sed -e "s/^perfrecd-$1-/perfrecd-HOST-/" -e 's/[0-9]/9/g'; }
sed 's/\\-/-/g; s/\\%//g' "$TOP/daemon/perfrecd.8" | grep -o 'perfrecd-myhost-[^ ;]*\.data' | shape myhost | sort -u >"$T/shown"
[ -s "$T/shown" ] || fail "perfrecd.8 shows no example file name"
if [ "$(id -u)" = 0 ] && perf stat -e cpu-clock -a true >/dev/null 2>&1; then
	"$PERFRECD" -o "$T/out" --socket '' --duration 0.3 2>"$T/err" || { cat "$T/err"; fail "perfrecd failed"; }
	real=$(basename "$(only_file "$T/out")" | shape "$(hostname -s)")
	while read -r s; do
		[ "$s" = "$real" ] || fail "perfrecd.8 shows file names like $s, perfrecd writes $real"
	done <"$T/shown"
else
	note "cannot record here (not root, or no cpu-clock); the example file name is not compared"
fi
exit 0
