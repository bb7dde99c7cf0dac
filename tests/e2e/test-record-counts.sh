#!/usr/bin/env bash
# F Hz on N busy CPUs for T seconds gives F*N*T samples within 10%, and
# every CPU within 10% of its share.
. "$(dirname "$0")/lib.sh"
require_events; require_perf

F=499; T_SEC=4
N=$(nproc)
"$WORKLOAD" $((T_SEC + 2)) >/dev/null &
wl=$!
sleep 0.5
"$PERFRECD" -o "$T/out" -e cpu-clock -F $F --no-call-graph --duration $T_SEC 2>"$T/err" || { cat "$T/err"; fail "perfrecd failed"; }
wait $wl
f=$(only_file "$T/out") || exit 1
total=$(perf_samples "$f")
expect=$((F * N * T_SEC))
note "samples: $total, expected $expect"
[ -n "$total" ] || fail "perf found no SAMPLE events"
awk -v t="$total" -v e="$expect" 'BEGIN { d = (t - e) / e; if (d < 0) d = -d; exit !(d <= 0.10) }' \
	|| fail "total $total is not within 10% of $expect"
perf script -i "$f" -F cpu 2>/dev/null | tr -d '[] ' | sort | uniq -c >"$T/percpu"
cat "$T/percpu"
[ "$(wc -l <"$T/percpu")" = "$N" ] || fail "samples on $(wc -l <"$T/percpu") CPUs, expected $N"
while read -r cnt cpu; do
	awk -v t="$cnt" -v e="$((F * T_SEC))" 'BEGIN { d = (t - e) / e; if (d < 0) d = -d; exit !(d <= 0.10) }' \
		|| fail "CPU $cpu has $cnt samples, not within 10% of $((F * T_SEC))"
done <"$T/percpu"
exit 0
