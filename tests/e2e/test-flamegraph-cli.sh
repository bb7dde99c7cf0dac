#!/usr/bin/env bash
# perfrecctl flamegraph's command line (issue 16): folded input from a file
# and from stdin, -e, --icicle and --title reach the SVG, -o leaves no
# partial file on failure, and bad input gets a clear message and exit
# status (1: bad input, 2: usage) instead of a graph: a damaged folded file
# names its line, options that need perf.data are refused with --folded,
# times that are not times are named, an empty input draws nothing.
. "$(dirname "$0")/lib.sh"
[ -x "$PERFRECCTL" ] || fail "tools/perfrecctl is not built"

# expect STATUS PATTERN CMD...: CMD exits STATUS and says PATTERN on stderr.
expect() {
	local want=$1 pat=$2 rc; shift 2
	"$@" >"$T/out" 2>"$T/err"; rc=$?
	[ "$rc" = "$want" ] || { cat "$T/err"; fail "'$*' exited $rc, not $want"; }
	grep -Eq -- "$pat" "$T/err" || { cat "$T/err"; fail "'$*' did not say /$pat/"; }
}

printf 'main;work;hot 30\nmain;work 10\nmain;sys_x_[k] 10\n' >"$T/a.folded"

"$PERFRECCTL" flamegraph --folded -e cpu-clock --icicle --title 'Mine <&>' -o "$T/a.svg" "$T/a.folded" 2>"$T/err" ||
	{ cat "$T/err"; fail "flamegraph --folded failed"; }
grep -q '<g class="graph" event="cpu-clock" total="50" samples="50" icicle="1">' "$T/a.svg" || fail "-e/--icicle did not reach the SVG"
grep -q '>Mine &lt;&amp;&gt;</text>' "$T/a.svg" || fail "--title is not in the SVG, escaped"
grep -q 't="k" n="sys_x"' "$T/a.svg" || fail "the _[k] frame is not a kernel frame"
ls "$T"/a.svg*.tmp >/dev/null 2>&1 && fail "a .tmp file was left beside the output"
if command -v xmllint >/dev/null; then xmllint --noout "$T/a.svg" || fail "the SVG is not well-formed"; fi

# stdin and stdout: the same graph.
"$PERFRECCTL" flamegraph --folded -e cpu-clock --icicle --title 'Mine <&>' - <"$T/a.folded" >"$T/b.svg" || fail "flamegraph --folded - failed"
cmp -s "$T/a.svg" "$T/b.svg" || fail "the graph from stdin differs from the graph from the file"

# A differential of the file against itself: nothing new, nothing gone.
"$PERFRECCTL" flamegraph --folded --base "$T/a.folded" -o "$T/d.svg" "$T/a.folded" || fail "flamegraph --base failed"
grep -q 'new="1"' "$T/d.svg" && fail "a frame is marked new in a diff against itself"
grep -q 'Only in the base: nothing' "$T/d.svg" || fail "the diff against itself lists frames gone"
grep -q '(base 60.00%, +0.00 points)' "$T/d.svg" || fail "hot's tooltip does not show base share and no change"

printf 'main;work 3\nmain;work three\n' >"$T/bad.folded"
expect 1 "bad.folded:2: not a folded stack" "$PERFRECCTL" flamegraph --folded -o "$T/bad.svg" "$T/bad.folded"
[ ! -e "$T/bad.svg" ] && ! ls "$T"/bad.svg*.tmp >/dev/null 2>&1 || fail "a failed run left an output file"
expect 1 "nope.folded: No such file" "$PERFRECCTL" flamegraph --folded "$T/nope.folded"
printf 'main;work 0\n\n' >"$T/empty.folded"
expect 1 "no samples in the input" "$PERFRECCTL" flamegraph --folded "$T/empty.folded"
expect 2 "--pid, --comm, --cgroup, --container, --pod, --unit, the time windows and the symbol options" "$PERFRECCTL" flamegraph --folded --pid 1 "$T/a.folded"
expect 2 "--container, --pod, --unit" "$PERFRECCTL" flamegraph --folded --pod 1234 "$T/a.folded"
expect 2 "--container wants a value" "$PERFRECCTL" flamegraph --container '' "$T/a.folded"
expect 2 "the symbol options" "$PERFRECCTL" flamegraph --folded --symfs / "$T/a.folded"
expect 2 "--from: cannot read 'noon'" "$PERFRECCTL" flamegraph --from noon "$T/a.folded"
expect 2 "--base-to: .*day 30" "$PERFRECCTL" flamegraph --base-to 2026-02-30T00:00:00Z "$T/a.folded"
expect 2 "start must come before its end" "$PERFRECCTL" flamegraph --from 2026-11-23T10:00:00Z --to 2026-11-23T09:00:00Z "$T/a.folded"
expect 2 "--pid 'x': not a process id" "$PERFRECCTL" flamegraph --pid x "$T/a.folded"
expect 2 "unknown option '--bogus'" "$PERFRECCTL" flamegraph --bogus "$T/a.folded"
expect 2 "-o needs a value" "$PERFRECCTL" flamegraph --folded "$T/a.folded" -o
expect 2 "no input" "$PERFRECCTL" flamegraph --folded
expect 2 "flamegraph options" "$PERFRECCTL" folded --icicle "$T/a.folded"
expect 2 "--period is an option of folded" "$PERFRECCTL" flamegraph --period "$T/a.folded"
expect 2 "the symbol options" "$PERFRECCTL" flamegraph --folded --no-demangle "$T/a.folded"
"$PERFRECCTL" flamegraph --help | grep -q -- '--base-from' || fail "flamegraph --help does not show --base-from"
exit 0
