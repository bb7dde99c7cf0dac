#!/bin/bash
# The fleet bucket is someone else's input, and fetch's target directory may
# be shared: against a fake S3 on loopback (fakes3.py) that serves forged
# manifests, root's fetch into a 1777 directory where nobody planted
# symlinks at every name it writes (FILE, FILE.json, FILE.part,
# FILE.json.part) writes none of the link targets, puts regular 0600 files
# (umask 022) at the names, and prints only real paths: a manifest whose
# file is "N\nfetched INJECTED.data" or "-rf", or whose size is 2^64-1, is
# refused by its key (exit 1), as it is by bucket-ls; a listing whose every
# page repeats its continuation token, or gives a new one over the same
# keys, stops with an error after a few requests instead of asking forever.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || skip "needs root (fetch as root, links planted as nobody)"
command -v setpriv >/dev/null || skip "setpriv (util-linux) is not installed"
PY=/usr/bin/python3
[ -x "$PY" ] || skip "python3 is not installed"
id nobody >/dev/null 2>&1 || skip "no user nobody"
DATA=$TOP/tests/unit/data/clock.data
SHA=$(sha256sum "$DATA" | cut -d' ' -f1)
SIZE=$(stat -c %s "$DATA")
umask 022

SRVPID=
trap 'kill "$SRVPID" 2>/dev/null; wait "$SRVPID" 2>/dev/null; cleanup' EXIT
serve() {
	[ -n "$SRVPID" ] && { kill "$SRVPID"; wait "$SRVPID" 2>/dev/null; }
	rm -f "$T/port" "$T/requests"
	"$PY" "$TOP/tests/e2e/fakes3.py" "$T/bucket" "$T/port" "$@" 2>"$T/srv.log" &
	SRVPID=$!
	wait_for 10 test -s "$T/port" || { cat "$T/srv.log"; fail "the fake S3 did not start"; }
	URL=http://127.0.0.1:$(cat "$T/port")/perf
}

D=$T/bucket/h1/2026-11-23
mkdir -p "$D"
GOOD=perfrecd-h1-20261123T140300.000Z-000001.data
# manifest KEY FILE SIZE: a manifest stored under KEY.json, its data object beside it.
manifest() {
	cp "$DATA" "$D/$1"
	"$PY" -c 'import json, sys
print(json.dumps({"file": sys.argv[1], "host": "h1", "start": "2026-11-23T14:03:00Z",
                  "end": "2026-11-23T14:03:30Z", "samples": 10, "lost": 0,
                  "size": int(sys.argv[2]), "sha256": sys.argv[3]}))' "$2" "$3" "$SHA" >"$D/$1.json"
}
manifest "$GOOD" "$GOOD" "$SIZE"
manifest perfrecd-h1-20261123T140310.000Z-000002.data $'N\nfetched INJECTED.data' "$SIZE"
manifest perfrecd-h1-20261123T140320.000Z-000003.data -rf "$SIZE"
manifest perfrecd-h1-20261123T140325.000Z-000004.data perfrecd-h1-20261123T140325.000Z-000004.data \
	18446744073709551615
serve
B=(--bucket "$URL" --host h1)
W=(--from 2026-11-23T14:00:00Z --to 2026-11-23T14:20:00Z)

# Root's secrets, and nobody's links to them at each name fetch writes.
chmod 711 "$T"
mkdir -m 700 "$T/secret"
mkdir -m 1777 "$T/drop"
for s in data json part jpart; do
	echo "root's $s" >"$T/secret/$s"
	chmod 600 "$T/secret/$s"
done
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
as_nobody ln -s "$T/secret/data" "$T/drop/$GOOD"
as_nobody ln -s "$T/secret/json" "$T/drop/$GOOD.json"
as_nobody ln -s "$T/secret/part" "$T/drop/$GOOD.part"
as_nobody ln -s "$T/secret/jpart" "$T/drop/$GOOD.json.part"
[ -L "$T/drop/$GOOD.part" ] || fail "could not plant links as nobody"

rc=0
"$PERFRECCTL" fetch "${B[@]}" "${W[@]}" -o "$T/drop" >"$T/fetch.out" 2>"$T/fetch.err" || rc=$?
cat "$T/fetch.err"
for s in data json part jpart; do
	[ "$(cat "$T/secret/$s")" = "root's $s" ] || fail "fetch wrote through nobody's link into root's $s file"
done
[ "$rc" = 1 ] || fail "fetch exited $rc with forged manifests in the window, not 1"
[ "$(cat "$T/fetch.out")" = "$T/drop/$GOOD" ] || { cat -A "$T/fetch.out"; fail "fetch printed more (or other) than the one good path"; }
for f in "$GOOD" "$GOOD.json"; do
	[ -f "$T/drop/$f" ] && [ ! -L "$T/drop/$f" ] || fail "$f is not a regular file of its own"
	[ "$(stat -c %a "$T/drop/$f")" = 600 ] || fail "$f is mode $(stat -c %a "$T/drop/$f") under umask 022, not 600"
done
cmp -s "$DATA" "$T/drop/$GOOD" || fail "the fetched file differs from the object"
# Nothing else was made in the directory: only the file, its manifest and nobody's two .part links.
n=$(find "$T/drop" -mindepth 1 | wc -l)
[ "$n" = 4 ] || { ls -la "$T/drop"; fail "fetch left $n entries in the directory, not 4"; }
[ "$(grep -c '^perfrecctl: refusing ' "$T/fetch.err")" = 3 ] || fail "fetch did not refuse the three forged manifests by key"
grep -q 'refusing h1/2026-11-23/perfrecd-h1-20261123T140310.000Z-000002.data.json' "$T/fetch.err" ||
	fail "the refusal does not name the key"
grep -q INJECTED "$T/fetch.err" "$T/fetch.out" && fail "the forged name reached the output"

# bucket-ls refuses the same manifests; what it prints is one line per object.
rc=0
"$PERFRECCTL" bucket-ls "${B[@]}" >"$T/ls.out" 2>"$T/ls.err" || rc=$?
[ "$rc" = 1 ] || fail "bucket-ls exited $rc with forged manifests, not 1"
[ "$(wc -l <"$T/ls.out")" = 2 ] || { cat "$T/ls.out"; fail "bucket-ls shows other than a header and the good object"; }
grep -q 18446744073709551615 "$T/ls.out" && fail "bucket-ls shows a size of 2^64-1"

# A server that repeats its continuation token, or hands out new ones over
# the same keys: an error, not a loop.
for mode in --same-token --endless; do
	serve "$mode"
	B=(--bucket "$URL" --host h1)
	for cmd in bucket-ls fetch; do
		rc=0
		args=("${B[@]}")
		[ "$cmd" = fetch ] && args+=("${W[@]}" -o "$T/drop")
		timeout 60 "$PERFRECCTL" "$cmd" "${args[@]}" >/dev/null 2>"$T/loop.err" || rc=$?
		cat "$T/loop.err"
		[ "$rc" = 124 ] && fail "$cmd ($mode) still listed after 60 s ($(wc -l <"$T/requests") requests)"
		[ "$rc" = 2 ] || fail "$cmd ($mode) exited $rc on a listing that does not advance, not 2"
		grep -q 'the listing does not advance; stopped' "$T/loop.err" || fail "$cmd ($mode) did not say why it stopped"
		[ "$(wc -l <"$T/requests")" -le 3 ] || fail "$cmd ($mode) made $(wc -l <"$T/requests") requests"
		rm -f "$T/requests"
	done
done
echo "PASS"
