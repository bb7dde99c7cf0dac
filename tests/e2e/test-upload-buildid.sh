#!/bin/bash
# The build-id cache shipped with the files (issue 16): with buildid-cache=
# and uploads on, each binary a file's samples need goes to the store
# beside the file (KEYDIR/.build-id/xx/yyyy), once; a reader that
# downloads the file's directory has a build-id dir, and perf report
# names the functions of a binary that exists nowhere else any more.
. "$(dirname "$0")/lib.sh"
require_events; require_perf
require_s3rver
[ -x "$WORKLOAD" ] || fail "tests/e2e/workload is not built"
export HOME=$T

PORT=$((20000 + RANDOM % 20000))
S3PID=
"$S3RVER" -d "$T/s3" -p "$PORT" -a 127.0.0.1 --configure-bucket perf >"$T/s3.log" 2>&1 &
S3PID=$!
stop_s3() { [ -n "$S3PID" ] && kill "$S3PID" 2>/dev/null; wait "$S3PID" 2>/dev/null; S3PID=; }
trap 'stop_s3; cleanup' EXIT
up() { curl -s -o /dev/null "http://127.0.0.1:$PORT/"; }
wait_for 30 up || { cat "$T/s3.log"; fail "s3rver did not start"; }
get() { curl -s -f --aws-sigv4 "aws:amz:us-east-1:s3" --user S3RVER:S3RVER \
	-H "x-amz-content-sha256: UNSIGNED-PAYLOAD" -o "$2" "http://127.0.0.1:$PORT/perf/$1"; }

mkdir -p "$T/s3" "$T/out" "$T/bin" "$T/cache"
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
cp "$WORKLOAD" "$T/bin/wl-up"
bid=$(readelf -n "$WORKLOAD" | awk '/Build ID/ {print $3}')
[ -n "$bid" ] || fail "the workload has no build id"
host=$(hostname)

record() { # log
	"$PERFRECD" -c "$T/conf" -e cpu-clock -F 499 -g -d 3 --socket '' >>"$1" 2>&1 &
	DAEMON_PID=$!
	started() { grep -q Recording "$1" 2>/dev/null; }
	wait_for 30 started "$1" || { cat "$1"; fail "perfrecd did not start"; }
	"$T/bin/wl-up" 2 1 || fail "workload failed"
	wait $DAEMON_PID; rc=$?; DAEMON_PID=
	[ $rc = 0 ] || { cat "$1"; fail "perfrecd exited $rc"; }
}
record "$T/log1"
f=$(only_file "$T/out") || exit 1
[ -e "$f.uploaded" ] || { cat "$T/log1"; fail "$f was not uploaded"; }
entry=$T/cache/.build-id/${bid:0:2}/${bid:2}
[ -f "$entry" ] || fail "the workload is not in the build-id cache"
[ -f "$entry.uploaded" ] || fail "the workload's cache entry was not shipped"
mtime=$(stat -c %.Y "$entry.uploaded")

# What a reader downloads: the file, and the directory's build-id entries.
mkdir -p "$T/dl/.build-id/${bid:0:2}"
get "fleet/$host/$(basename "$f")" "$T/dl/file.data" || fail "cannot download the file"
get "fleet/$host/.build-id/${bid:0:2}/${bid:2}" "$T/dl/.build-id/${bid:0:2}/${bid:2}" \
	|| fail "the workload's binary is not beside the file in the store"
cmp -s "$T/dl/.build-id/${bid:0:2}/${bid:2}" "$WORKLOAD" || fail "the shipped binary is not the workload"
# And the kernel's symbols, for a reader on another kernel.
kb=$(perf buildid-list -k 2>/dev/null)
if [ -n "$kb" ]; then
	get "fleet/$host/.build-id/${kb:0:2}/${kb:2}/kallsyms" "$T/kallsyms" || fail "the kernel's kallsyms is not beside the file"
	cmp -s "$T/kallsyms" "$T/cache/.build-id/${kb:0:2}/${kb:2}/kallsyms" || fail "the shipped kallsyms is not the cached one"
fi

# The binary gone everywhere but the store.
rm -rf "$T/bin" "$T/cache"
flat() { awk '/^ +[0-9.]+%/ && / hot_function$/ { print $1; exit }'; }
[ -z "$(perf report -i "$T/dl/file.data" --stdio --no-children -g none --sort sym --comm wl-up 2>/dev/null | flat)" ] \
	|| fail "perf names hot_function without the shipped binary"
with=$(perf --buildid-dir "$T/dl" report -i "$T/dl/file.data" --stdio --no-children -g none --sort sym --comm wl-up 2>/dev/null | flat)
[ -n "$with" ] || fail "perf --buildid-dir on the downloaded directory does not name hot_function"
note "downloaded file and build-id dir: hot_function $with"

# A second file needing the same binary does not ship it again.
mkdir -p "$T/bin" && cp "$WORKLOAD" "$T/bin/wl-up"
mkdir -p "$(dirname "$entry")" && cp "$WORKLOAD" "$entry" && printf '%s' "fleet/$host/.build-id/${bid:0:2}/${bid:2}" >"$entry.uploaded"
touch -d '@1000000000' "$entry.uploaded"; mtime=$(stat -c %.Y "$entry.uploaded")
record "$T/log2"
n=$(ls "$T"/out/*.data | wc -l)
[ "$n" = 2 ] || fail "expected two files, found $n"
for g in "$T"/out/*.data; do [ -e "$g.uploaded" ] || { cat "$T/log2"; fail "$g was not uploaded"; }; done
[ "$(stat -c %.Y "$entry.uploaded")" = "$mtime" ] || fail "the binary was shipped again for the second file"
exit 0
