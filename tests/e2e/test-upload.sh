#!/bin/bash
# Shipping to S3-compatible storage against a real server (s3rver, npm) on
# loopback: published files and their manifests upload under the templated
# keys with their exact contents; with the server stopped the files wait in
# the spool (no .uploaded marker) across a daemon restart, and once it is
# back every file is uploaded exactly once and nothing is missing.
. "$(dirname "$0")/lib.sh"
require_events
require_s3rver

PORT=$((20000 + RANDOM % 20000))
S3PID=
start_s3() {
	"$S3RVER" -d "$T/s3" -p "$PORT" -a 127.0.0.1 --configure-bucket perf >"$T/s3.log" 2>&1 &
	S3PID=$!
	for _ in $(seq 100); do
		curl -s -o /dev/null "http://127.0.0.1:$PORT/" && return 0
		sleep 0.1
	done
	cat "$T/s3.log"; fail "s3rver did not start"
}
stop_s3() { kill "$S3PID" 2>/dev/null; wait "$S3PID" 2>/dev/null; S3PID=; }
trap 'stop_s3; cleanup' EXIT
mkdir -p "$T/s3" "$T/out"
cat >"$T/creds" <<CREDS
[default]
aws_access_key_id = S3RVER
aws_secret_access_key = S3RVER
CREDS
cat >"$T/conf" <<CONF
[output]
directory=$T/out
rotate-interval=1s
label.team=sre
# The files and manifests alone; the binaries they need: test-upload-buildid.
buildid-cache=no
[upload]
upload-url=http://127.0.0.1:$PORT/perf/
upload-region=us-east-1
upload-credentials=$T/creds
upload-key=fleet/{host}/{date}/{file}
CONF
run_daemon() { # seconds log
	"$PERFRECD" -c "$T/conf" -F 499 -d "$1" --socket '' >>"$2" 2>&1 || { cat "$2"; fail "perfrecd failed"; }
}
get() { curl -s -f --aws-sigv4 "aws:amz:us-east-1:s3" --user S3RVER:S3RVER \
	-H "x-amz-content-sha256: UNSIGNED-PAYLOAD" -o "$2" "http://127.0.0.1:$PORT/perf/$1"; }

# 1: server up.
start_s3
"$WORKLOAD" 3 >/dev/null 2>&1 &
WPID=$!
run_daemon 3 "$T/log1"
wait "$WPID"
n1=$(ls "$T"/out/*.data | wc -l)
[ "$n1" -ge 2 ] || fail "expected rotated files, got $n1"
for f in "$T"/out/*.data; do
	[ -e "$f.uploaded" ] || { cat "$T/log1"; fail "$f was not uploaded while the server was up"; }
done

# 2: server down, then the daemon restarted while the backlog waits.
stop_s3
run_daemon 2 "$T/log2"
run_daemon 2 "$T/log3"
waiting=0
for f in "$T"/out/*.data; do [ -e "$f.uploaded" ] || waiting=$((waiting + 1)); done
[ "$waiting" -ge 2 ] || { cat "$T/log2"; fail "expected a backlog with the server down, found $waiting"; }
grep -q "Upload spool: .* not uploaded yet" "$T/log3" || { cat "$T/log3"; fail "the restarted daemon did not find the spool"; }
note "backlog of $waiting files while the server was down"

# 3: server back; the next run ships the backlog and its own files.
start_s3
run_daemon 3 "$T/log4"
for f in "$T"/out/*.data; do
	[ -e "$f.uploaded" ] || { cat "$T/log4"; fail "$f is still not uploaded after the server came back"; }
done

# Every file and manifest, downloaded back under its key, equals the local copy.
host=$(hostname)
n=0
for f in "$T"/out/*.data; do
	b=$(basename "$f")
	d=$(date -u -r "$f" +%Y-%m-%d)
	key="fleet/$host/$d/$b"
	get "$key" "$T/dl" || fail "cannot download $key"
	cmp -s "$f" "$T/dl" || fail "$key differs from $f"
	[ -e "$f.json" ] || fail "no manifest beside $f"
	get "$key.json" "$T/dl" || fail "cannot download $key.json"
	cmp -s "$f.json" "$T/dl" || fail "$key.json differs from $f.json"
	# Exactly one successful upload of each file over all runs.
	c=$(cat "$T"/log* | grep -c "Uploaded $f as ")
	[ "$c" = 1 ] || fail "$b was uploaded $c times"
	n=$((n + 1))
done
# Nothing on the server that is not local (no strays, no duplicates).
objs=$(curl -s --aws-sigv4 "aws:amz:us-east-1:s3" --user S3RVER:S3RVER -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" \
	"http://127.0.0.1:$PORT/perf/?list-type=2&max-keys=1000" | grep -o '<Key>[^<]*</Key>' | wc -l)
[ "$objs" = $((2 * n)) ] || fail "server holds $objs objects, expected $((2 * n)) for $n files"
note "$n files and manifests uploaded, downloaded back and compared"
exit 0
