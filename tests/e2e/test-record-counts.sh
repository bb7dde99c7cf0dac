#!/usr/bin/env bash
# F Hz on N busy CPUs for T seconds: every CPU has samples, none twice, and
# no CPU more than its timer can give (cpu-clock fires at most once per
# 1e9/F ns, so a span S holds at most S*F + 1 samples: more means records
# written twice or events at the wrong frequency); the daemon's count is
# perf's.  How close the count comes to F*N*T is measured by
# tests/bench/timing.sh (a busy machine delays timers; that is no fault).
. "$(dirname "$0")/lib.sh"
require_events; require_perf

F=499; T_SEC=4
N=$(nproc)
"$WORKLOAD" $((T_SEC + 2)) >/dev/null &
wl=$!
"$PERFRECD" -o "$T/out" --socket '' -e cpu-clock -F $F --no-call-graph --duration $T_SEC 2>"$T/err" || { cat "$T/err"; fail "perfrecd failed"; }
wait $wl
f=$(only_file "$T/out") || exit 1
total=$(perf_samples "$f")
[ -n "$total" ] && [ "$total" -gt 0 ] || fail "perf found no SAMPLE events"
said=$(sed -n 's/.*Wrote .*: \([0-9]*\) samples,.*/\1/p' "$T/err")
note "samples: $total (perfrecd said $said)"
[ "$said" = "$total" ] || { cat "$T/err"; fail "perfrecd logged $said samples, perf counts $total"; }
perf script -i "$f" -F tid,cpu,time,ip --ns 2>/dev/null >"$T/script"
dups=$(sort "$T/script" | uniq -d | wc -l)
[ "$dups" = 0 ] || fail "$dups samples appear twice"
tr -d '[]:' <"$T/script" | awk -v ncpu="$N" -v f=$F '
	{ c = $2 + 0; n[c]++; if (!(c in first)) first[c] = $3; last[c] = $3 }
	END {
		for (c = 0; c < ncpu; c++) {
			span = last[c] - first[c]; max = span * f + 1
			printf "# cpu %d: %d samples over %.3f s (a %d Hz timer gives at most %d)\n", c, n[c], span, f, max
			if (!n[c]) { print "FAIL: no samples on cpu " c; bad = 1 }
			else if (n[c] > max + 2) { print "FAIL: cpu " c " has more samples than its timer fires"; bad = 1 }
		}
		exit bad
	}' || fail "per-CPU sample counts are wrong"
exit 0
