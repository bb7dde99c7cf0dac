# SPDX-License-Identifier: LGPL-2.1-or-later
# perf script -F comm,pid,tid,time,event,period,ip,sym,dso --ns  ->  folded
# stacks (root first, kernel frames _[k]), one line per sample, its period as
# the count: perf's own view of a file's stacks, for the flame graph tests
# to feed `perfrecctl flamegraph --folded` until it reads perf.data itself.
# Variables: want_pid (empty: all), want_event, t0/t1 (window of sample
# times in ns, [t0, t1); 0: open).
function flush() {
	if (n > 0 && keep) {
		s = ""
		for (i = n; i >= 1; i--) s = s (i < n ? ";" : "") fr[i]
		print s, period
	}
	n = 0; keep = 0
}
/^[^ \t]/ {
	flush()
	# comm may hold spaces: parse from the end ("PID/TID TIME: PERIOD EVENT:")
	ev = $NF; sub(/:$/, "", ev); period = $(NF - 1)
	tm = $(NF - 2); sub(/:$/, "", tm); split(tm, p, "."); tns = p[1] * 1000000000 + p[2]
	pid = $(NF - 3); sub(/\/.*/, "", pid)
	keep = (want_pid == "" || pid == want_pid) && ev == want_event && (!t0 || tns >= t0) && (!t1 || tns < t1)
	next
}
/^[ \t]+[0-9a-f]+ / {
	dso = $NF; sym = $0
	sub(/^[ \t]+[0-9a-f]+ /, "", sym); sub(/ \([^()]*\)$/, "", sym)
	gsub(/;/, ":", sym)
	if (dso == "([kernel.kallsyms])") sym = sym "_[k]"
	fr[++n] = sym
	next
}
/^$/ { flush() }
END { flush() }
