#!/bin/bash
# The fleet bucket read back, against a real server (s3rver, npm) on
# loopback: two daemons with different host names (each in its own UTS
# namespace) and labels upload to the same bucket.  bucket-ls shows both
# from their manifests, filtered by host and by label; fetch --host A
# downloads exactly A's files and manifests (byte-identical to A's, perf reads
# hostname A in each) and reports no gap inside A's recording; a window past
# A's last upload, and one over an object whose data is missing (manifest
# stored, data not: a lagging upload), report gaps, for the host asked for
# and, without --host, for each host of the labels, even one silent for
# longer than the listing looks back; an object whose bytes changed in the
# bucket is named with both hashes and never used.
. "$(dirname "$0")/lib.sh"
require_events
require_perf
command -v curl >/dev/null || skip "curl is not installed"
command -v unshare >/dev/null || skip "unshare (util-linux) is not installed"
unshare --uts true 2>/dev/null || skip "cannot make a UTS namespace for a second host name"
require_s3rver

PORT=$((20000 + RANDOM % 20000))
URL=http://127.0.0.1:$PORT/perf
S3PID=
"$S3RVER" -d "$T/s3" -p "$PORT" -a 127.0.0.1 --configure-bucket perf >"$T/s3.log" 2>&1 &
S3PID=$!
trap 'kill "$S3PID" 2>/dev/null; wait "$S3PID" 2>/dev/null; cleanup' EXIT
wait_for 10 curl -s -o /dev/null "http://127.0.0.1:$PORT/" || { cat "$T/s3.log"; fail "s3rver did not start"; }

cat >"$T/creds" <<CREDS
[default]
aws_access_key_id = S3RVER
aws_secret_access_key = S3RVER
CREDS
KEYT='fleet/{host}/{date}/{file}'
for h in hosta hostb; do
	mkdir -p "$T/out-$h"
	team=web; [ "$h" = hostb ] && team=db
	cat >"$T/conf-$h" <<CONF
[output]
directory=$T/out-$h
rotate-interval=1s
label.team=$team
label.dc=fra
[upload]
upload-url=$URL/
upload-credentials=$T/creds
upload-key=$KEYT
CONF
done
B=(--bucket "$URL" --credentials "$T/creds" --key "$KEYT")
# Wall-clock ns (manifests' start_ns/end_ns) as a time perfrecctl takes.
at() { printf '@%d.%09d' $(($1 / 1000000000)) $(($1 % 1000000000)); }
s3curl() { curl -s -f --aws-sigv4 "aws:amz:us-east-1:s3" --user S3RVER:S3RVER \
	-H "x-amz-content-sha256: UNSIGNED-PAYLOAD" "$@"; }

# Both hosts record at once, each under its own host name.
"$WORKLOAD" 4 >/dev/null 2>&1 &
WPID=$!
for h in hosta hostb; do
	unshare --uts sh -c "hostname $h && exec \"$PERFRECD\" -c \"$T/conf-$h\" -F 499 -d 3 --socket ''" \
		>"$T/log-$h" 2>&1 &
	eval "PID_$h=$!"
done
wait "$PID_hosta" || { cat "$T/log-hosta"; fail "perfrecd for hosta failed"; }
wait "$PID_hostb" || { cat "$T/log-hostb"; fail "perfrecd for hostb failed"; }
wait "$WPID"
for h in hosta hostb; do
	n=$(ls "$T/out-$h"/*.data | wc -l)
	[ "$n" -ge 2 ] || fail "$h: expected rotated files, got $n"
	for f in "$T/out-$h"/*.data; do
		[ -e "$f.uploaded" ] || { cat "$T/log-$h"; fail "$f was not uploaded"; }
		grep -q "\"host\": *\"$h\"" "$f.json" || fail "$f.json does not name host $h"
	done
done
na=$(ls "$T"/out-hosta/*.data | wc -l)
nb=$(ls "$T"/out-hostb/*.data | wc -l)

# bucket-ls: every file of both hosts, from the manifests; filters.
"$PERFRECCTL" bucket-ls "${B[@]}" --json >"$T/ls.json" 2>"$T/ls.err" || { cat "$T/ls.err"; fail "bucket-ls failed"; }
read -r la lb <<<"$(python3 -c '
import json, sys
v = json.load(open(sys.argv[1]))
print(sum(o["host"] == "hosta" and o["labels"] == {"team": "web", "dc": "fra"} and o["uploaded"] for o in v),
      sum(o["host"] == "hostb" and o["labels"] == {"team": "db", "dc": "fra"} and o["uploaded"] for o in v))' "$T/ls.json")"
[ "$la" = "$na" ] && [ "$lb" = "$nb" ] || { cat "$T/ls.json"; fail "bucket-ls --json: $la/$lb files of hosta/hostb, expected $na/$nb"; }
"$PERFRECCTL" bucket-ls "${B[@]}" --host hosta >"$T/ls-a.txt" || fail "bucket-ls --host failed"
[ "$(grep -c ' hosta ' "$T/ls-a.txt")" = "$na" ] && ! grep -q hostb "$T/ls-a.txt" ||
	{ cat "$T/ls-a.txt"; fail "bucket-ls --host hosta shows other hosts or misses files"; }
"$PERFRECCTL" bucket-ls "${B[@]}" --label team=db --label dc=fra >"$T/ls-db.txt" || fail "bucket-ls --label failed"
[ "$(grep -c ' hostb ' "$T/ls-db.txt")" = "$nb" ] && ! grep -q hosta "$T/ls-db.txt" ||
	{ cat "$T/ls-db.txt"; fail "bucket-ls --label team=db shows other hosts or misses files"; }
"$PERFRECCTL" bucket-ls "${B[@]}" --label team=nope >"$T/ls-none.txt" || fail "bucket-ls --label team=nope failed"
[ "$(wc -l <"$T/ls-none.txt")" = 1 ] || { cat "$T/ls-none.txt"; fail "bucket-ls --label team=nope listed files"; }

# hosta's recorded span, from its manifests.
read -r A_FROM A_TO <<<"$(python3 -c '
import json, sys
v = [o for o in json.load(open(sys.argv[1])) if o["host"] == "hosta"]
print(min(o["start_ns"] for o in v), max(o["end_ns"] for o in v))' "$T/ls.json")"

# fetch --host hosta over its whole span: exactly its files, in time order, no gap.
mkdir -p "$T/fa"
"$PERFRECCTL" fetch "${B[@]}" --host hosta --from "$(at "$A_FROM")" --to "$(at "$A_TO")" -o "$T/fa" >"$T/fa.out" 2>"$T/fa.err" ||
	{ cat "$T/fa.err"; fail "fetch --host hosta failed"; }
[ "$(wc -l <"$T/fa.out")" = "$na" ] || { cat "$T/fa.out" "$T/fa.err"; fail "fetch --host hosta gave $(wc -l <"$T/fa.out") files, expected $na"; }
grep -q '^gap' "$T/fa.err" && { cat "$T/fa.err"; fail "fetch reported a gap inside hosta's recording"; }
prev=
while read -r p; do
	[ -f "$p" ] || fail "fetch printed $p, which does not exist"
	case $p in "$T/fa/"*) ;; *) fail "fetch printed $p, outside -o $T/fa" ;; esac
	b=$(basename "$p")
	cmp -s "$p" "$T/out-hosta/$b" || fail "$b fetched differs from hosta's own copy (or is not hosta's)"
	cmp -s "$p.json" "$T/out-hosta/$b.json" || fail "$b.json fetched beside it differs from hosta's manifest"
	perf report --header-only -i "$p" 2>/dev/null | grep -q '^# hostname : hosta$' ||
		fail "$b: perf does not read hostname hosta in it"
	[ -z "$prev" ] || [[ "$prev" < "$b" ]] || fail "fetch output is not in time order: $prev before $b"
	prev=$b
done <"$T/fa.out"
[ "$(ls "$T/fa" | wc -l)" = $((2 * na)) ] || { ls "$T/fa"; fail "fetch left other files than the data and manifests in $T/fa"; }
note "fetch --host hosta: $na files, each hosta's own"

# cut --bucket --host hosta around its whole span: one file, only hosta's
# samples (both hosts sampled the same CPUs), every one of them: as many as
# hosta's own files hold, counted by perf.
before=$(ls -d /tmp/perfrecctl-cut-* 2>/dev/null)
"$PERFRECCTL" cut "${B[@]}" --host hosta --from "$(at $((A_FROM - 2000000000)))" --to "$(at $((A_TO + 2000000000)))" -o "$T/cut-a.data" \
	2>"$T/cut-a.err" || { cat "$T/cut-a.err"; fail "cut --bucket --host hosta failed"; }
"$PERFRECCTL" verify "$T/cut-a.data" >/dev/null || fail "cut --bucket output does not verify"
perf report --header-only -i "$T/cut-a.data" 2>/dev/null | grep -q '^# hostname : hosta$' ||
	fail "cut --bucket --host hosta: the file's host is not hosta"
want=0
for f in "$T"/out-hosta/*.data; do
	want=$((want + $(perf script -F time -i "$f" 2>/dev/null | wc -l)))
done
got=$(perf script -F time -i "$T/cut-a.data" 2>/dev/null | wc -l)
[ "$want" -gt 0 ] && [ "$got" = "$want" ] || { cat "$T/cut-a.err"; fail "cut --bucket --host hosta holds $got samples, hosta's files $want"; }
grep -q "fetched $na files" "$T/cut-a.err" || { cat "$T/cut-a.err"; fail "cut --bucket does not say how many files it fetched"; }
left=$(comm -13 <(echo "$before") <(ls -d /tmp/perfrecctl-cut-* 2>/dev/null))
[ -z "$left" ] || fail "cut --bucket left its download directory behind: $left"
note "cut --bucket --host hosta: $got samples, all of hosta's"

# ls --bucket is bucket-ls.
"$PERFRECCTL" ls "${B[@]}" --host hostb >"$T/ls-b2.txt" || fail "ls --bucket failed"
[ "$(grep -c hostb "$T/ls-b2.txt")" = "$nb" ] && ! grep -q hosta "$T/ls-b2.txt" ||
	{ cat "$T/ls-b2.txt"; fail "ls --bucket --host hostb does not list exactly hostb's files"; }

# A second fetch reuses the checked copies (and still names them all).
"$PERFRECCTL" fetch "${B[@]}" --host hosta --from "$(at "$A_FROM")" --to "$(at "$A_TO")" -o "$T/fa" >"$T/fa2.out" 2>"$T/fa.err" ||
	{ cat "$T/fa.err"; fail "second fetch failed"; }
cmp -s "$T/fa.out" "$T/fa2.out" || fail "a second fetch names other files"

# By label, without a host: only hostb's files.
mkdir -p "$T/fb"
"$PERFRECCTL" fetch "${B[@]}" --label team=db --from "$(at "$A_FROM")" --to "$(at "$A_TO")" -o "$T/fb" >"$T/fb.out" 2>"$T/fb.err" ||
	{ cat "$T/fb.err"; fail "fetch --label team=db failed"; }
[ -s "$T/fb.out" ] || fail "fetch --label team=db fetched nothing"
while read -r p; do
	perf report --header-only -i "$p" 2>/dev/null | grep -q '^# hostname : hostb$' || fail "$p (--label team=db) is not hostb's"
done <"$T/fb.out"

# A window past hosta's last upload: nothing, and the window is a gap of hosta.
FROM=$((A_TO + 5000000000)) TO=$((A_TO + 10000000000))
"$PERFRECCTL" fetch "${B[@]}" --host hosta --from "$(at "$FROM")" --to "$(at "$TO")" -o "$T/fa" >"$T/late.out" 2>"$T/late.err"
rc=$?
[ "$rc" = 1 ] || { cat "$T/late.err"; fail "fetch of an empty window exited $rc, expected 1"; }
grep -q 'nothing in the bucket between .* for host hosta' "$T/late.err" || { cat "$T/late.err"; fail "no 'nothing in the bucket' message"; }
grep -q '^gap for host hosta: ' "$T/late.err" || { cat "$T/late.err"; fail "the empty window is not reported as a gap"; }
[ -s "$T/late.out" ] && fail "fetch of an empty window printed files"

# A window reaching past the last upload: the files it has, and the gap
# from hosta's last sample to the window's end.
FROM=$((A_TO - 500000000))
"$PERFRECCTL" fetch "${B[@]}" --host hosta --from "$(at "$FROM")" --to "$(at "$TO")" -o "$T/fa" >"$T/tail.out" 2>"$T/tail.err" ||
	{ cat "$T/tail.err"; fail "fetch of a window reaching past the last upload failed"; }
[ -s "$T/tail.out" ] || fail "fetch of a window reaching past the last upload fetched nothing"
want=$(python3 -c 'import sys, datetime; n = int(sys.argv[1]); print(datetime.datetime.utcfromtimestamp(n // 10**9).strftime("%Y-%m-%dT%H:%M:%S") + ".%03dZ" % (n % 10**9 // 10**6))' "$A_TO")
grep -q "^gap for host hosta: $want to " "$T/tail.err" || { cat "$T/tail.err"; fail "no gap from hosta's last sample ($want) to the window's end"; }

# A lagging upload: the manifest of hosta's middle file is stored, its data
# is not (the uploader sends manifests first).  Its span is a gap.
mid=$(python3 -c '
import json, sys
v = sorted((o for o in json.load(open(sys.argv[1])) if o["host"] == "hosta"), key=lambda o: o["start_ns"])
o = v[len(v) // 2]
print(o["key"], o["start_ns"], o["end_ns"])' "$T/ls.json")
read -r MKEY MSTART MEND <<<"$mid"
s3curl -X DELETE "$URL/$MKEY" -o /dev/null || fail "cannot delete $MKEY from the bucket"
mkdir -p "$T/fl"
"$PERFRECCTL" fetch "${B[@]}" --host hosta --from "$(at "$MSTART")" --to "$(at "$MEND")" -o "$T/fl" >"$T/lag.out" 2>"$T/lag.err"
grep -q 'not uploaded yet' "$T/lag.err" || { cat "$T/lag.err"; fail "the missing data object is not reported as not uploaded"; }
grep -q '^gap for host hosta: ' "$T/lag.err" || { cat "$T/lag.err"; fail "the lagging upload's span is not a gap"; }
grep -q "$(basename "$MKEY")" "$T/lag.out" && fail "fetch printed $MKEY, whose data is not in the bucket"
"$PERFRECCTL" bucket-ls "${B[@]}" --host hosta >"$T/ls-lag.txt" || fail "bucket-ls after the delete failed"
grep "$MKEY" "$T/ls-lag.txt" | grep -q 'not uploaded yet' || { cat "$T/ls-lag.txt"; fail "bucket-ls does not show $MKEY as not uploaded yet"; }

# The fleet by label, no host named: the host with the missing data object
# shows its gap, the other none.
"$PERFRECCTL" fetch "${B[@]}" --label dc=fra --from "$(at "$MSTART")" --to "$(at "$MEND")" -o "$T/fl" >"$T/lagl.out" 2>"$T/lagl.err" ||
	{ cat "$T/lagl.err"; fail "fetch --label dc=fra over the lagging upload failed"; }
grep -q '^gap for host hosta: ' "$T/lagl.err" || { cat "$T/lagl.err"; fail "without --host, hosta's lagging upload is not a gap"; }
grep -q '^gap for host hostb: ' "$T/lagl.err" && { cat "$T/lagl.err"; fail "hostb, which uploaded that span, shows a gap"; }

# Long after both stopped uploading (beyond what the listing's times can
# rule in): each host that matches is still named with its gap, not silent.
FROM=$((A_TO + 900000000000)) TO=$((A_TO + 910000000000))
"$PERFRECCTL" fetch "${B[@]}" --label dc=fra --from "$(at "$FROM")" --to "$(at "$TO")" -o "$T/fl" >/dev/null 2>"$T/silent.err"
grep -q '^gap for host hosta: ' "$T/silent.err" && grep -q '^gap for host hostb: ' "$T/silent.err" ||
	{ cat "$T/silent.err"; fail "hosts whose uploads stopped before the window are not reported as gaps"; }
"$PERFRECCTL" fetch "${B[@]}" --label team=db --from "$(at "$FROM")" --to "$(at "$TO")" -o "$T/fl" >/dev/null 2>"$T/silent.err"
grep -q '^gap for host hostb: ' "$T/silent.err" && ! grep -q 'hosta' "$T/silent.err" ||
	{ cat "$T/silent.err"; fail "--label team=db: expected a gap for hostb only"; }

# A corrupted object: hostb's first file, bytes changed in the server's
# store (same size).  Named with both hashes, never used; the rest fetched.
read -r CKEY <<<"$(python3 -c '
import json, sys
v = sorted((o for o in json.load(open(sys.argv[1])) if o["host"] == "hostb"), key=lambda o: o["start_ns"])
print(v[0]["key"])' "$T/ls.json")"
store="$T/s3/perf/$CKEY._S3rver_object"
[ -f "$store" ] || { find "$T/s3" | head -20; fail "s3rver keeps $CKEY elsewhere than $store"; }
printf 'CORRUPTED' | dd of="$store" bs=1 seek=4096 conv=notrunc status=none
bad_sha=$(sha256sum "$store" | cut -d' ' -f1)
good_sha=$(sha256sum "$T/out-hostb/$(basename "$CKEY")" | cut -d' ' -f1)
[ "$bad_sha" != "$good_sha" ] || fail "the corruption changed nothing"
mkdir -p "$T/fc"
"$PERFRECCTL" fetch "${B[@]}" --host hostb --from "$(at "$A_FROM")" --to "$(at "$A_TO")" -o "$T/fc" >"$T/fc.out" 2>"$T/fc.err"
rc=$?
[ "$rc" = 1 ] || { cat "$T/fc.err"; fail "fetch with a corrupted object exited $rc, expected 1"; }
grep -q "$CKEY: SHA-256 mismatch: its manifest says $good_sha, the object has $bad_sha; not used" "$T/fc.err" ||
	{ cat "$T/fc.err"; fail "the corrupted object is not named with both hashes"; }
grep -q "$(basename "$CKEY")" "$T/fc.out" && fail "fetch printed the corrupted object"
ls "$T/fc" | grep -q "$(basename "$CKEY")" && { ls "$T/fc"; fail "the corrupted object was left in the output directory"; }
[ "$(wc -l <"$T/fc.out")" -ge 1 ] || { cat "$T/fc.err"; fail "the good objects of hostb were not fetched beside the corrupted one"; }
note "corrupted $CKEY detected by its SHA-256 and not used"
exit 0
