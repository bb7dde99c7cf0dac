#!/usr/bin/env bash
# Runs every tests/e2e/test-*.sh.  Exit status 0 passes, 77 skips (the test
# prints why), anything else fails.  Output of failing tests is shown.
set -u
cd "$(dirname "$0")/../.."
pass=0 fail=0 skip=0
only=${E2E_ONLY:-}
for t in tests/e2e/test-*.sh; do
	name=$(basename "$t" .sh)
	if [ -n "$only" ] && [[ "$name" != *$only* ]]; then continue; fi
	log=$(mktemp)
	start=$(date +%s)
	timeout 600 bash "$t" >"$log" 2>&1; rc=$?
	secs=$(( $(date +%s) - start ))
	case $rc in
	0) echo "  PASS $name (${secs}s)"; pass=$((pass + 1)) ;;
	77) echo "  SKIP $name: $(grep -m1 '^SKIP' "$log" | sed 's/^SKIP:* *//')"; skip=$((skip + 1)) ;;
	*) echo "  FAIL $name (exit $rc, ${secs}s)"; sed 's/^/    | /' "$log" | tail -60; fail=$((fail + 1)) ;;
	esac
	rm -f "$log"
done
[ -n "${RESULTS_FILE:-}" ] && echo "$pass $fail $skip" >>"$RESULTS_FILE"
echo "e2e: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
