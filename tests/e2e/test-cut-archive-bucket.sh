#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# cut --bucket --archive (issue 26): a cut of the fleet's bucket carries
# the build-id cache entries the hosts shipped beside their files
# (KEYDIR/.build-id/xx/yyyy), not only what this machine's caches hold.
# The workload's binary, the host's cache and its recordings are all gone;
# the archive from the bucket, unpacked into a fresh HOME's ~/.debug, still
# gives perf report the workload's functions.  The temporary directory
# of the bucket's files (and entries) does not outlive the cut.
# JIT frames come through the bucket too (issue 26): node --perf-basic-prof
# runs beside the workload, exits, and its /tmp/perf-PID.map is deleted;
# the host ships the JIT images perfrecd made (entries of the file's
# build-id table) with the rest, and from the archive perf report and
# hotspot's perfparser (--debug ~/.debug) name node's functions in 90% of
# its samples, perfparser none without the archive.
. "$(dirname "$0")/lib.sh"
require_events; require_perf
require_s3rver
command -v cc >/dev/null || skip "no C compiler to build the workload"

PORT=$((20000 + RANDOM % 20000))
S3PID=
"$S3RVER" -d "$T/s3" -p "$PORT" -a 127.0.0.1 --configure-bucket perf >"$T/s3.log" 2>&1 &
S3PID=$!
stop_s3() { [ -n "$S3PID" ] && kill "$S3PID" 2>/dev/null; wait "$S3PID" 2>/dev/null; S3PID=; }
trap 'stop_s3; cleanup' EXIT
up() { curl -s -o /dev/null "http://127.0.0.1:$PORT/"; }
wait_for 30 up || { cat "$T/s3.log"; fail "s3rver did not start"; }

bid=$(od -An -tx1 -N20 /dev/urandom | tr -d ' \n')
mkdir -p "$T/s3" "$T/out" "$T/bin" "$T/cache"
cc -O1 -g -fno-omit-frame-pointer -fno-inline -pthread -Wl,--build-id=0x"$bid" -o "$T/bin/wl-up" "$TOP/tests/e2e/workload.c" ||
	fail "cannot build the workload"
printf 'aws_access_key_id = S3RVER\naws_secret_access_key = S3RVER\n' >"$T/creds"
cat >"$T/conf" <<CONF
[output]
directory=$T/out
buildid-cache=$T/cache
[upload]
upload-url=http://127.0.0.1:$PORT/perf/
upload-region=us-east-1
upload-credentials=$T/creds
upload-key=fleet/{host}/{file}
CONF
NODE=$(command -v node) && [ -x "$PERFPARSER" ] || { NODE=; note "no node or perfparser: JIT frames are not tried"; }
if [ -n "$NODE" ]; then
	ln -s "$NODE" "$T/bin/jb$$"   # a name of its own: other jobs' node is not counted
	cat >"$T/jitwl.js" <<'JS'
function fibonacciRecurse(n) { return n < 2 ? n : fibonacciRecurse(n - 1) + fibonacciRecurse(n - 2); }
function hotLoopNamed(ms) {
  let s = 0;
  while (process.cpuUsage().user < ms * 1000) s += fibonacciRecurse(22);
  return s;
}
console.log(hotLoopNamed(+process.argv[2]));
JS
fi
"$PERFRECD" -c "$T/conf" -e cpu-clock -F 499 -g --socket '' >"$T/log" 2>&1 &
DAEMON_PID=$!
started() { grep -q Recording "$T/log" 2>/dev/null; }
wait_for 30 started || { cat "$T/log"; fail "perfrecd did not start"; }
npid=
if [ -n "$NODE" ]; then
	# in $T: node --perf-basic-prof leaves isolate-*-v8.log files in its cwd
	(cd "$T" && exec "$T/bin/jb$$" --perf-basic-prof "$T/jitwl.js" 2000 >/dev/null) &
	npid=$!
fi
"$T/bin/wl-up" 2 1 >/dev/null || fail "workload failed"
if [ -n "$npid" ]; then
	wait $npid || fail "node failed"
	[ -f /tmp/perf-$npid.map ] || fail "node wrote no /tmp/perf-$npid.map"
	rm -f /tmp/perf-$npid.map
fi
kill -TERM $DAEMON_PID; wait $DAEMON_PID; rc=$?; DAEMON_PID=
[ $rc = 0 ] || { cat "$T/log"; fail "perfrecd exited $rc"; }
f=$(only_file "$T/out") || exit 1
[ -e "$f.uploaded" ] || { cat "$T/log"; fail "$f was not uploaded"; }
[ -f "$T/cache/.build-id/${bid:0:2}/${bid:2}.uploaded" ] || fail "the workload's cache entry was not shipped"

# Nothing of the workload left on this machine but in the bucket.
rm -rf "${T:?}/bin" "${T:?}/cache" "${T:?}/out"
before=$(ls -d /tmp/perfrecctl-cut-* 2>/dev/null)
"$PERFRECCTL" cut --bucket "http://127.0.0.1:$PORT/perf/" --credentials "$T/creds" --key 'fleet/{host}/{file}' \
	--from -10min --to now -o "$T/cut.data" --archive "$T/cut.tar" 2>"$T/cut.err" ||
	{ cat "$T/cut.err"; fail "cut --bucket --archive failed"; }
left=$(comm -13 <(echo "$before") <(ls -d /tmp/perfrecctl-cut-* 2>/dev/null))
[ -z "$left" ] || fail "cut left its bucket directory behind: $left"
tar tf "$T/cut.tar" >"$T/list" || fail "tar cannot list the archive"
grep -qx "\.build-id/${bid:0:2}/${bid:2}" "$T/list" || { cat "$T/cut.err"; fail "the shipped entry of the workload is not in the archive"; }
grep -q "/kallsyms$" "$T/list" && note "the kernel's shipped kallsyms came too"

mkdir -p "$T/fresh/.debug"
tar xf "$T/cut.tar" -C "$T/fresh/.debug" || fail "tar xf -C ~/.debug failed"
flat() { awk '/^ +[0-9.]+%/ && / hot_function$/ { print $1; exit }'; }
got=$(HOME=$T/fresh perf report -i "$T/fresh/.debug/cut.data" --stdio --no-children -g none --sort sym --comm wl-up 2>/dev/null | flat)
none=$(perf report -i "$T/fresh/.debug/cut.data" --stdio --no-children -g none --sort sym --comm wl-up 2>/dev/null | flat)
[ -z "$none" ] || fail "perf names hot_function without the archive (the binary was not gone?)"
[ -n "$got" ] || fail "the archive from the bucket gives perf report no hot_function"
note "hot_function $got from the bucket's archive"
[ -n "$npid" ] || exit 0

grep -q '^perfrec-jit/' "$T/list" || { cat "$T/cut.err"; fail "no JIT image link came from the bucket"; }
. "$(dirname "$0")/jit-checks.sh"
check_perf "node, from the bucket" "$T/fresh/.debug/cut.data" "$npid" fibonacciRecurse hotLoopNamed
mkdir -p "$T/empty/.debug"
read -r samples named <<<"$(perfparser_named "no archive" "$T/fresh/.debug/cut.data" "jb$$" \
	"~fibonacciRecurse|hotLoopNamed" "$T/empty/.debug")" || exit 1
note "no archive: perfparser: $named of $samples samples of node name its functions"
[ "$samples" -ge 100 ] && [ "$named" = 0 ] || fail "perfparser names node's functions in $named of $samples samples without the archive"
check_perfparser "node, from the bucket" "$T/fresh/.debug/cut.data" "jb$$" "~fibonacciRecurse|hotLoopNamed"
exit 0
