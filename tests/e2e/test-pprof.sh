#!/usr/bin/env bash
# perfrecctl pprof (issue 16) read by go tool pprof: the profile holds every
# sample perf counts, its functions have the flat shares perf report gives
# them (within 1 point), the hot function's caller is in its stacks, and
# --pid keeps exactly the samples perf script shows for that pid.
. "$(dirname "$0")/lib.sh"
require_events; require_perf
command -v go >/dev/null || skip "go (golang-go) is not installed: no pprof reader"
[ -x "$WORKLOAD" ] || fail "tests/e2e/workload is not built"
export GOCACHE=$T/gocache HOME=$T GOFLAGS=-mod=mod GOTOOLCHAIN=local

"$PERFRECD" -o "$T/out" --socket '' -e cpu-clock -F 999 -g --duration 5 2>"$T/err" &
DAEMON_PID=$!
started() { grep -q Recording "$T/err" 2>/dev/null; }
wait_for 30 started || { cat "$T/err"; fail "perfrecd did not start"; }
"$WORKLOAD" 3 2 &
wpid=$!
wait $wpid || fail "workload failed"
wait $DAEMON_PID; rc=$?; DAEMON_PID=
[ $rc = 0 ] || { cat "$T/err"; fail "perfrecd exited $rc"; }
f=$(only_file "$T/out") || exit 1

"$PERFRECCTL" pprof -o "$T/p.pb.gz" "$f" 2>"$T/pprof.err" || { cat "$T/pprof.err"; fail "perfrecctl pprof failed"; }
gzip -t "$T/p.pb.gz" || fail "the profile is not gzip"

# Every sample: go tool pprof's count against perf's.
go tool pprof -top -sample_index=samples "$T/p.pb.gz" >"$T/top.samples" 2>"$T/go.err" \
	|| { cat "$T/go.err"; fail "go tool pprof cannot read the profile"; }
grep -qi 'error\|fail\|malformed' "$T/go.err" && { cat "$T/go.err"; fail "go tool pprof complained"; }
ours=$(sed -n 's/.*Total samples = \([0-9]*\) *$/\1/p' "$T/top.samples")
theirs=$(perf_samples "$f")
note "samples: pprof $ours, perf $theirs"
[ -n "$ours" ] && [ "$ours" = "$theirs" ] || { head "$T/top.samples"; fail "pprof has $ours samples, perf $theirs"; }

# Flat shares of perf's top functions (those at 1% or more with a name).
# perf keeps a name apart per binary (each ASan test has its own
# __asan_*); pprof's functions are names: sum perf's lines per name.
perf report -i "$f" --stdio --no-children -g none --sort sym 2>/dev/null \
	| awk '/^ +[0-9.]+%/ && $2 ~ /^\[[.k]\]$/ && $3 !~ /^0x/ && NF == 3 { sub("%", "", $1); s[$3] += $1 }
		END { for (n in s) if (s[n] >= 1) printf "%s %.2f\n", n, s[n] }' >"$T/perf.top"
grep -q '^hot_function ' "$T/perf.top" || { cat "$T/perf.top"; fail "perf report does not show hot_function"; }
# perf report charges inlined code to the function it is inlined into;
# the profile has inlined frames, which pprof's -noinlines folds the same way.
go tool pprof -top -noinlines -sample_index=cpu -nodefraction=0 -nodecount=100000 "$T/p.pb.gz" 2>/dev/null \
	| awk '$2 ~ /%$/ && NF == 6 { sub("%", "", $2); print $6, $2 }' >"$T/pprof.top"
n=0
while read -r sym share; do
	ours=$(awk -v s="$sym" '$1 == s { print $2; exit }' "$T/pprof.top")
	[ -n "$ours" ] || { head -20 "$T/pprof.top"; fail "$sym ($share% in perf report) is not in pprof's top"; }
	awk -v a="$ours" -v b="$share" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1) }' \
		|| fail "$sym: pprof's flat share $ours% differs from perf report's $share% by more than 1 point"
	note "$sym: pprof $ours%, perf $share%"
	n=$((n + 1))
done <"$T/perf.top"
[ $n -ge 1 ] || fail "no function compared"

# Whole stacks: the hot function's caller is right below it.
go tool pprof -traces "$T/p.pb.gz" 2>/dev/null >"$T/traces"
awk '/hot_function$/ { getline; if ($1 == "caller_function") found = 1 } END { exit !found }' "$T/traces" \
	|| { grep -m1 -A5 hot_function "$T/traces"; fail "-traces shows no caller_function below hot_function"; }

# Labels: samples per CPU as perf script counts them.
go tool pprof -tags -sample_index=samples "$T/p.pb.gz" 2>/dev/null \
	| awk '/^ *[a-z]+: Total/ { on = ($1 == "cpu:") } on && /%\): [0-9]+$/ { print $NF, $1 + 0 }' | sort -n >"$T/cpu.pprof"
perf script -i "$f" -F cpu 2>/dev/null | tr -d '[] ' | sort -n | uniq -c | awk '{ print $2 + 0, $1 }' >"$T/cpu.perf"
[ -s "$T/cpu.perf" ] || fail "perf script shows no CPUs"
diff "$T/cpu.perf" "$T/cpu.pprof" || fail "samples per cpu label differ from perf script's"

# A window after the recording keeps nothing (and says so); one around it keeps all.
"$PERFRECCTL" pprof --from @4000000000 -o "$T/none.pb.gz" "$f" 2>"$T/none.err" && fail "an empty window wrote a profile"
grep -q "no samples" "$T/none.err" || { cat "$T/none.err"; fail "an empty window is not named"; }
"$PERFRECCTL" pprof --from @1000000000 --to @4000000000 -o "$T/all.pb.gz" "$f" 2>/dev/null || fail "a window around the recording failed"
ours=$(go tool pprof -top -sample_index=samples "$T/all.pb.gz" 2>/dev/null | sed -n 's/.*Total samples = \([0-9]*\) *$/\1/p')
[ "$ours" = "$(perf_samples "$f")" ] || fail "a window around the recording kept $ours samples"

# The same file with zstd COMPRESSED records: the same profile.
# The copy is elsewhere: it is told of the build-id cache its original
# finds in its own directory.
"$PERFRECCTL" compress "$f" "$T/z.data" || fail "perfrecctl compress failed"
"$PERFRECCTL" pprof --buildid-dir "$(dirname "$f")" -o "$T/z.pb.gz" "$T/z.data" 2>/dev/null || fail "pprof of the compressed file failed"
go tool pprof -traces "$T/p.pb.gz" 2>/dev/null | sed 1,4d >"$T/traces.plain"
go tool pprof -traces "$T/z.pb.gz" 2>/dev/null | sed 1,4d >"$T/traces.z"
[ -s "$T/traces.z" ] && cmp -s "$T/traces.plain" "$T/traces.z" || fail "the compressed file's profile differs"

# --pid: exactly the samples perf script shows for that process.
"$PERFRECCTL" pprof --pid "$wpid" -o "$T/pid.pb.gz" "$f" 2>"$T/pprof.err" || { cat "$T/pprof.err"; fail "pprof --pid failed"; }
ours=$(go tool pprof -top -sample_index=samples "$T/pid.pb.gz" 2>/dev/null | sed -n 's/.*Total samples = \([0-9]*\) *$/\1/p')
theirs=$(perf script -i "$f" --pid "$wpid" -F pid 2>/dev/null | wc -l)
note "--pid $wpid: pprof $ours, perf script $theirs"
[ "$ours" = "$theirs" ] || fail "pprof --pid has $ours samples, perf script --pid $theirs"
exit 0
