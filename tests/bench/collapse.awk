# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Folded stacks from `perf script`'s default output, the way
# stackcollapse-perf.pl makes them, for the views part of the bench (the
# baseline perfrecctl flamegraph/pprof are timed against): one line per
# distinct stack, "comm;root;...;leaf COUNT".  perf script prints a sample
# as a header line (comm first) and one indented line per frame, leaf
# first ("ADDR SYMBOL+0xOFF (DSO)"), then a blank line.  Offsets are
# dropped so that samples in the same functions fold together.
#
#   perf script -i FILE | awk -f collapse.awk

function flush(   s, i) {
	if (!have)
		return
	s = comm
	for (i = n - 1; i >= 0; i--)
		s = s ";" frame[i]
	count[s]++
	have = 0
	n = 0
}

/^[ \t]/ {
	line = $0
	sub(/^[ \t]+[0-9a-f]+ /, "", line)
	sub(/ \([^()]*\)$/, "", line)
	sub(/\+0x[0-9a-f]+$/, "", line)
	frame[n++] = line
	next
}

/^$/ { flush(); next }

{
	flush()
	comm = $1
	have = 1
	n = 0
}

END {
	flush()
	for (s in count)
		print s, count[s]
}
