#!/usr/bin/env bash
# Runs each libFuzzer target for FUZZ_TIME seconds from its seed corpus
# (tests/fuzz/corpus/<name>/, checked in) plus a scratch copy it may grow.
set -u
time=${FUZZ_TIME:-20}
pass=0 fail=0
for f in "$@"; do
	name=$(basename "$f"); name=${name#fuzz-}
	work=$(mktemp -d)
	[ -d "tests/fuzz/corpus/$name" ] && cp -r "tests/fuzz/corpus/$name/." "$work/"
	if "$f" -max_total_time="$time" -rss_limit_mb=2048 -max_len=65536 \
		-print_final_stats=0 "$work" >"$work.log" 2>&1; then
		runs=$(grep -o 'DONE.*' "$work.log" | tail -1)
		echo "  fuzz-$name: ok (${time}s) $runs"
		pass=$((pass + 1))
	else
		tail -40 "$work.log"
		echo "FAIL: fuzz-$name (crash input kept in $(pwd))"
		fail=$((fail + 1))
	fi
	rm -rf "$work" "$work.log"
done
[ -n "${RESULTS_FILE:-}" ] && echo "$pass $fail 0" >>"$RESULTS_FILE"
echo "fuzz: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
