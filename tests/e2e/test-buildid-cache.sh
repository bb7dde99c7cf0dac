#!/usr/bin/env bash
# The build-id cache kept while recording (issue 16): a binary run from a
# private mount namespace (a tmpfs only that namespace sees) and deleted
# while it runs is gone once it exits; perfrecd copied it into its cache
# while the process lived, so perf report --buildid-dir and perfrecctl
# pprof --buildid-dir still name its functions.  Without the cache neither
# can (checked, so the test proves the cache did it).
. "$(dirname "$0")/lib.sh"
require_events; require_perf
command -v unshare >/dev/null || skip "unshare (util-linux) is not installed"
[ -x "$WORKLOAD" ] || fail "tests/e2e/workload is not built"
unshare -m true 2>/dev/null || skip "cannot make a mount namespace here"
export HOME=$T   # no ~/.debug of the machine's own
bid=$(perf buildid-list -i "$WORKLOAD" 2>/dev/null | awk '{print $1; exit}')
[ -n "$bid" ] || bid=$(readelf -n "$WORKLOAD" | awk '/Build ID/ {print $3}')
[ -n "$bid" ] || fail "the workload has no build id"

mkdir -p "$T/priv" "$T/cache"
printf '[output]\nbuildid-cache=%s\nbuildid-cache-size=64M\n' "$T/cache" >"$T/conf"
"$PERFRECD" -c "$T/conf" -o "$T/out" --socket '' -e cpu-clock -F 499 -g --duration 6 2>"$T/err" &
DAEMON_PID=$!
started() { grep -q Recording "$T/err" 2>/dev/null; }
wait_for 30 started || { cat "$T/err"; fail "perfrecd did not start"; }

# In its own mount namespace: a tmpfs, the binary on it, run, deleted while it runs.
unshare -m --propagation private bash -c '
	mount -t tmpfs none "$1" || exit 1
	cp "$2" "$1/wl-private" || exit 1
	"$1/wl-private" 3 1 &
	echo $! >"$3/wl.pid"
	for _ in $(seq 100); do [ -e /proc/$!/exe ] && break; sleep 0.05; done
	rm "$1/wl-private"
	echo deleted >"$3/deleted"
	wait
' _ "$T/priv" "$WORKLOAD" "$T" >"$T/ns.out" 2>&1 &
nspid=$!
deleted() { [ -e "$T/deleted" ]; }
wait_for 30 deleted || { cat "$T/ns.out"; fail "the namespace did not start the workload"; }
wait $nspid || { cat "$T/ns.out"; fail "the workload in its namespace failed"; }
[ -e "$T/priv/wl-private" ] && fail "the private tmpfs is visible outside its namespace"
wait $DAEMON_PID; rc=$?; DAEMON_PID=
[ $rc = 0 ] || { cat "$T/err"; fail "perfrecd exited $rc"; }
f=$(only_file "$T/out") || exit 1

entry=$T/cache/.build-id/${bid:0:2}/${bid:2}
[ -f "$entry" ] || { find "$T/cache" | head; cat "$T/err"; fail "no cache entry $entry for the workload's build id"; }
cmp -s "$entry" "$WORKLOAD" || fail "the cache entry is not the binary"
note "cache entry: $entry"
# The kernel's symbols too, where perf looks for another kernel's.
kb=$(perf buildid-list -k 2>/dev/null)
if [ -n "$kb" ]; then
	grep -q ' _text$' "$T/cache/.build-id/${kb:0:2}/${kb:2}/kallsyms" 2>/dev/null \
		|| fail "the running kernel's kallsyms is not in the cache under its build id"
fi

flat() { awk '/^ +[0-9.]+%/ && / hot_function$/ { print $1; exit }'; }
without=$(perf report -i "$f" --stdio --no-children -g none --sort sym --comm wl-private 2>/dev/null | flat)
[ -z "$without" ] || fail "perf resolves hot_function without the cache (the binary was not gone?)"
with=$(perf --buildid-dir "$T/cache" report -i "$f" --stdio --no-children -g none --sort sym --comm wl-private 2>"$T/perf.err" | flat)
[ -n "$with" ] || { perf --buildid-dir "$T/cache" report -i "$f" --stdio --no-children -g none --sort sym --comm wl-private 2>&1 | head -20; fail "perf report --buildid-dir does not name hot_function"; }
note "perf report --buildid-dir: hot_function $with"

"$PERFRECCTL" pprof --no-debuginfod --comm wl-private -o "$T/no.pb.gz" "$f" 2>/dev/null
"$PERFRECCTL" pprof --no-debuginfod --buildid-dir "$T/cache" --comm wl-private -o "$T/p.pb.gz" "$f" 2>"$T/pprof.err" \
	|| { cat "$T/pprof.err"; fail "perfrecctl pprof failed"; }
if command -v go >/dev/null; then
	export GOCACHE=$T/gocache
	go tool pprof -top "$T/no.pb.gz" 2>/dev/null | grep -q ' hot_function$' && fail "pprof names hot_function without the cache"
	go tool pprof -top "$T/p.pb.gz" 2>/dev/null | grep -q ' hot_function$' || fail "pprof --buildid-dir does not name hot_function"
fi
exit 0
