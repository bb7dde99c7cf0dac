#!/usr/bin/env bash
# The output directory (issue 17, fault 8): started as root with user=,
# perfrecd hands to that user only a directory it creates.  An existing one
# keeps its owner (a shared 1777 directory was chowned to the daemon's user),
# a symbolic link is refused rather than followed (the chown followed it),
# and a world-writable directory without the sticky bit is refused.
. "$(dirname "$0")/lib.sh"
require_events
command -v useradd >/dev/null || skip "useradd is not available"

u=perfrec-o$$
useradd --system --no-create-home --shell /usr/sbin/nologin --user-group "$u" || skip "cannot create a test user"
trap 'userdel "$u" 2>/dev/null; groupdel "$u" 2>/dev/null; cleanup' EXIT
printf '[service]\nuser=%s\ngroup=%s\n' "$u" "$u" >"$T/conf"

record() { # dir: record for 1.5 s as $u into dir; exit status of perfrecd
	"$PERFRECD" -c "$T/conf" -o "$1" --socket '' --duration 1.5 2>"$T/err"
}
owner() { stat -c '%a %U %G' "$1"; }
refused() { # name, pattern, dir
	local rc
	record "$3"; rc=$?
	[ $rc != 0 ] || { cat "$T/err"; fail "$1: accepted"; }
	[ "$(wc -l <"$T/err")" = 1 ] || { cat "$T/err"; fail "$1: expected one line of error"; }
	grep -q -- "$2" "$T/err" || { cat "$T/err"; fail "$1: error does not say '$2'"; }
	note "$1: $(cat "$T/err")"
}

# A shared sticky directory: recorded into, with a warning, never chowned.
mkdir -m 1777 "$T/shared"
record "$T/shared" || { cat "$T/err"; fail "1777 directory: perfrecd failed"; }
[ "$(owner "$T/shared")" = "1777 root root" ] || fail "1777 directory is now $(owner "$T/shared")"
grep -q "world-writable (mode 1777, sticky)" "$T/err" || { cat "$T/err"; fail "1777 directory: no warning"; }
f=$(only_file "$T/shared")
[ "$(owner "$f")" = "640 $u $u" ] || fail "$f is $(owner "$f"), expected 640 $u $u"
"$PERFRECCTL" verify "$f" >/dev/null || fail "$f does not verify"

# A symbolic link is not followed, with or without a trailing slash.
mkdir -m 755 "$T/target"
ln -s target "$T/link"
refused "symlink" "is a symbolic link" "$T/link"
refused "symlink/" "is a symbolic link" "$T/link/"
[ "$(owner "$T/target")" = "755 root root" ] || fail "the link's target is now $(owner "$T/target")"
[ -z "$(ls -A "$T/target")" ] || { ls -la "$T/target"; fail "files written through the link"; }

# World-writable without the sticky bit: anyone could swap the recordings.
mkdir "$T/open"; chmod 0777 "$T/open"
refused "0777 directory" "world-writable without the sticky bit" "$T/open"
[ "$(owner "$T/open")" = "777 root root" ] || fail "0777 directory is now $(owner "$T/open")"
[ -z "$(ls -A "$T/open")" ] || fail "0777 directory: files left"

# An existing directory of root's is not taken over: refused, named, unchanged.
mkdir -m 755 "$T/roots"
refused "root's 0755 directory" "not writable by uid $(id -u "$u")" "$T/roots"
[ "$(owner "$T/roots")" = "755 root root" ] || fail "root's directory is now $(owner "$T/roots")"
[ -z "$(ls -A "$T/roots")" ] || { ls -la "$T/roots"; fail "root's directory: files left"; }

# What perfrecd creates (the last component only) is the user's, and recorded into.
record "$T/new" || { cat "$T/err"; fail "new directory: perfrecd failed"; }
[ "$(owner "$T/new")" = "750 $u $u" ] || fail "created directory is $(owner "$T/new"), expected 750 $u $u"
f=$(only_file "$T/new")
"$PERFRECCTL" verify "$f" >/dev/null || fail "$f does not verify"
exit 0
