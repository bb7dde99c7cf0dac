#!/usr/bin/env bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# perfrecctl ls and cut with no directory look where the running perfrecd
# writes: they ask it on the control socket ($PERFRECD_SOCKET here).  The
# daemon is started with a relative output directory from a directory of
# its own, and the commands run from another, so only the daemon's answer
# can find the files.  With no daemon, they fall back to the default
# config's directory and say what they tried.
. "$(dirname "$0")/lib.sh"
require_events; require_perf

mkdir -p "$T/d" "$T/elsewhere"
"$WORKLOAD" 120 1 >/dev/null &
wl=$!
trap 'kill $wl 2>/dev/null; cleanup' EXIT
(cd "$T/d" && exec "$PERFRECD" -o rec --socket "$T/sock" -e cpu-clock -F 199 2>"$T/err") &
DAEMON_PID=$!
up() { "$PERFRECCTL" --socket "$T/sock" ping >/dev/null 2>&1; }
wait_for 30 up || { cat "$T/err"; fail "perfrecd did not answer on its socket"; }
pub=$("$PERFRECCTL" --socket "$T/sock" rotate) || fail "rotate failed"
note "published $pub"

cd "$T/elsewhere" || exit 1
export PERFRECD_SOCKET=$T/sock
"$PERFRECCTL" ls >"$T/ls.txt" 2>"$T/ls.err" || { cat "$T/ls.err"; fail "perfrecctl ls with no directory failed"; }
sed 's/^/# /' "$T/ls.txt"
grep -q "$(basename "$pub")" "$T/ls.txt" || fail "ls with no directory does not list the daemon's file $(basename "$pub")"
[ ! -s "$T/ls.err" ] || { cat "$T/ls.err"; fail "ls said something on stderr although the daemon answered"; }
"$PERFRECCTL" ls --json >"$T/ls.json" || fail "ls --json failed"
python3 - "$T/ls.json" "$T/d/rec" <<'PY' || fail "ls --json does not name the daemon's directory's files"
import json, os, sys
files = json.load(open(sys.argv[1]))["files"]
assert files, "no files"
assert all(os.path.dirname(f["path"]) == sys.argv[2] for f in files), files
PY

"$PERFRECCTL" cut --from -1min --to now -o "$T/cut.data" 2>"$T/cut.err" ||
	{ cat "$T/cut.err"; fail "cut with no directory failed"; }
n=$(perf_samples "$T/cut.data")
[ "${n:-0}" -gt 0 ] || fail "the cut of the daemon's files holds no samples"
note "cut: $n samples"

kill -INT $DAEMON_PID; wait $DAEMON_PID; DAEMON_PID=

# No daemon: the fallback is named, with what was tried.
export PERFRECD_SOCKET=$T/nosock
"$PERFRECCTL" ls >"$T/ls2.txt" 2>"$T/ls2.err"
cat "$T/ls2.err" | sed 's/^/# /'
grep -q "no perfrecd answers on $T/nosock" "$T/ls2.err" || fail "ls without a daemon does not say it tried the socket"
grep -q "reading " "$T/ls2.err" || fail "ls without a daemon does not say which directory it reads instead"
"$PERFRECCTL" cut --from -1min --to now -o "$T/cut2.data" 2>"$T/cut2.err"
grep -q "no perfrecd answers on $T/nosock" "$T/cut2.err" || { cat "$T/cut2.err"; fail "cut without a daemon does not say what it tried"; }
exit 0
