#!/usr/bin/env bash
# Runs criterion unit-test binaries one after another and sums their results.
# Criterion's own summary goes to stderr; we parse it to total the counts.
set -u
pass=0 fail=0 skip=0 bad=0
for t in "$@"; do
	out=$("$t" --jobs 1 2>&1); rc=$?
	line=$(printf '%s\n' "$out" | grep 'Synthesis:' | tail -1)
	if [ -z "$line" ]; then
		printf '%s\n' "$out"
		echo "FAIL: $t produced no criterion summary (exit $rc)"
		bad=$((bad + 1)); continue
	fi
	p=$(sed -n 's/.*Passing: \([0-9]*\).*/\1/p' <<<"$line")
	f=$(sed -n 's/.*Failing: \([0-9]*\).*/\1/p' <<<"$line")
	c=$(sed -n 's/.*Crashing: \([0-9]*\).*/\1/p' <<<"$line")
	s=$(printf '%s\n' "$out" | grep -c '\[SKIP\]')
	pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s))
	if [ "$rc" -ne 0 ] || [ "$f" -ne 0 ] || [ "${c:-0}" -ne 0 ]; then
		printf '%s\n' "$out"
		bad=$((bad + 1))
	fi
	printf '  %-40s %s\n' "$(basename "$t")" "${line#*Synthesis: }"
	printf '%s\n' "$out" | grep '\[SKIP\]' | sed 's/^/    /'
done
fail=$((fail + bad))
[ -n "${RESULTS_FILE:-}" ] && echo "$pass $fail $skip" >>"$RESULTS_FILE"
echo "unit: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
