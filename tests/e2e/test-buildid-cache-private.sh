#!/usr/bin/env bash
# The build-id cache exposes nothing private (issue 28 item 10):
#  - a 0755 program inside a 0700 directory, taken into the cache (a hard
#    link keeps its mode), is not readable by nobody through the cache:
#    the cache perfrecd makes, and everything below, is 0750;
#  - a cache directory others may write (0777) or /tmp, or a symbolic link,
#    is refused by --check-config and at start, so a .build-id link that
#    nobody planted in it never makes root's perfrecd create directories
#    and links in a root-only directory;
#  - a cache directory another user owns is refused at start.
. "$(dirname "$0")/lib.sh"
require_events
command -v setpriv >/dev/null || skip "setpriv (util-linux) is not installed"
[ -x "$WORKLOAD" ] || fail "tests/e2e/workload is not built"
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
bid=$(readelf -n "$WORKLOAD" | awk '/Build ID/ {print $3; exit}')
[ -n "$bid" ] || fail "the workload has no build id"

# Others reach down to the cache, as they reach /var/cache; not the program.
chmod 0755 "$T"
mkdir -m 0700 "$T/priv"
cp "$WORKLOAD" "$T/priv/wl"
chmod 0755 "$T/priv/wl"
as_nobody cat "$T/priv/wl" >/dev/null 2>&1 && fail "nobody reads the private program itself: the test proves nothing"

printf '[output]\nbuildid-cache=%s\n' "$T/cache" >"$T/conf"
"$PERFRECD" -c "$T/conf" -o "$T/out" --socket '' -e cpu-clock -F 99 -d 60 2>"$T/err" &
DAEMON_PID=$!
started() { grep -q Recording "$T/err" 2>/dev/null; }
wait_for 30 started || { cat "$T/err"; fail "perfrecd did not start"; }
"$T/priv/wl" 1 1 >/dev/null || fail "the workload failed"
entry=$T/cache/.build-id/${bid:0:2}/${bid:2}
wait_for 30 test -f "$entry" || { cat "$T/err"; fail "no cache entry $entry for the private program"; }
kill -INT "$DAEMON_PID"
wait "$DAEMON_PID"; rc=$?; DAEMON_PID=
[ $rc = 0 ] || { cat "$T/err"; fail "perfrecd exited $rc"; }
cmp -s "$entry" "$WORKLOAD" || fail "the cache entry is not the program"
as_nobody cat "$entry" >/dev/null 2>&1 && fail "nobody reads the private program through the cache ($entry)"
# 0750 (0700 under a stricter umask): nothing for others, no writing for the group.
for d in "$T/cache" "$T/cache/.build-id" "$T/cache/.build-id/${bid:0:2}"; do
	(( (8#$(stat -c %a "$d") & 8#027) == 0 )) || fail "$d is mode $(stat -c %a "$d"), not 0750"
done

# Unsafe cache directories: refused before anything is written.
mkdir -m 0700 "$T/rootonly"
mkdir "$T/open" && chmod 0777 "$T/open"
as_nobody ln -s "$T/rootonly" "$T/open/.build-id" || fail "nobody cannot plant the link"
ln -s "$T/cache" "$T/link"
for dir in "$T/open" /tmp "$T/link"; do
	printf '[output]\nbuildid-cache=%s\n' "$dir" >"$T/bad.conf"
	"$PERFRECD" -c "$T/bad.conf" --check-config >/dev/null 2>"$T/check.err" &&
		fail "--check-config accepts buildid-cache=$dir"
	grep -q "buildid-cache: '$dir' is not safe" "$T/check.err" || { cat "$T/check.err"; fail "no clear error for $dir"; }
done
note "$(head -1 "$T/check.err")"
printf '[output]\nbuildid-cache=%s\n' "$T/open" >"$T/bad.conf"
"$PERFRECD" -c "$T/bad.conf" -o "$T/out2" --socket '' -e cpu-clock -F 99 -d 3 2>"$T/err2" &
DAEMON_PID=$!
"$WORKLOAD" 1 1 >/dev/null
wait "$DAEMON_PID"; rc=$?; DAEMON_PID=
[ $rc != 0 ] || fail "perfrecd started with a 0777 build-id cache"
grep -q "buildid-cache" "$T/err2" || { cat "$T/err2"; fail "perfrecd does not say why it refuses the cache"; }
[ -z "$(ls -A "$T/rootonly")" ] || { find "$T/rootonly" | head; fail "perfrecd wrote through the planted .build-id link"; }

# A cache of another user's (who could swap links in at will) is refused at start.
mkdir -m 0755 "$T/theirs" && chown 65534:65534 "$T/theirs"
printf '[output]
buildid-cache=%s
' "$T/theirs" >"$T/theirs.conf"
"$PERFRECD" -c "$T/theirs.conf" -o "$T/out3" --socket '' -e cpu-clock -F 99 -d 3 2>"$T/err3"; rc=$?
[ $rc != 0 ] || fail "perfrecd started with a build-id cache of nobody's"
grep -q "Build-id cache $T/theirs is not usable: .*owned by uid 65534" "$T/err3" ||
	{ cat "$T/err3"; fail "perfrecd does not say why it refuses a cache of nobody's"; }
[ -z "$(ls -A "$T/theirs")" ] || fail "perfrecd wrote into a cache of nobody's"
exit 0
