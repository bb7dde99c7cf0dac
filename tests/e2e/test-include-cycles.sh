#!/bin/bash
# daemon/ has no import cycles (issue 13): in the graph of module -> module
# drawn from the #include "..." lines of daemon/*.c and daemon/*.h (a module
# is a file name without .c/.h, and X-internal.h, the header between the
# files of one module split by concern, is X's; a header of lib/ or
# internal/ is not a daemon module),
# tsort finds an order, so every module can be read and tested without the
# ones that use it.
. "$(dirname "$0")/lib.sh"
command -v tsort >/dev/null || skip "tsort (coreutils) is not installed"

for f in "$TOP"/daemon/*.[ch]; do
	from=$(basename "$f"); from=${from%.*}; from=${from%-internal}
	echo "$from $from"   # every module, even one with no edges
	sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" |
		while read -r inc; do
			[ -e "$TOP/daemon/$inc" ] || continue
			to=${inc%.*}; to=${to%-internal}
			[ "$to" = "$from" ] || echo "$from $to"
		done
done >"$T/edges"
[ "$(wc -l <"$T/edges")" -gt 20 ] || fail "too few includes found in $TOP/daemon: the parse is broken"
tsort "$T/edges" >/dev/null 2>"$T/loops" || { cat "$T/loops"; fail "daemon/ modules include each other"; }
exit 0
