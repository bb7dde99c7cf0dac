# SPDX-License-Identifier: LGPL-2.1-or-later
# Sourced by the bench's scripts (run.sh, callchain.sh); needs $PERFRECCTL.

# stats FILE -> "samples lost_records lost_samples_records samples_lost":
# perf report --stats' SAMPLE, LOST and LOST_SAMPLES counts, and the samples
# lost that perfrecctl dump --json adds up from those records.
stats() {
	local lost
	lost=$("$PERFRECCTL" dump --json "$1" 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(int(d.get("lost", 0)) + int(d.get("lost_samples", 0)))' 2>/dev/null)
	perf report --stats -i "$1" 2>/dev/null | awk -v lost="${lost:-0}" '
		/^ *SAMPLE events:/ { s = $3 }
		/^ *LOST events:/ { l = $3 }
		/^ *LOST_SAMPLES events:/ { ls = $3 }
		END { printf "%d %d %d %d\n", s, l, ls, lost }'
}
