#!/bin/bash
# The code keeps a readable shape (issue 24): no function in lib/, daemon/,
# tools/ (or any other top-level source folder) over 100 lines, no #include
# circle between the project's files, no circle of symbol references between
# the built objects, and no unit test or fuzz target #including a .c file.
# tests/code-shape.py does the work and says how it counts; each fault names
# the file and function, or the files of the circle.
#
# First the checker is shown a small tree with one fault of each kind (and
# a function of exactly 100 lines, which is allowed): a checker that finds
# nothing would otherwise pass any tree.
. "$(dirname "$0")/lib.sh"
# Both are build dependencies (make deps), so neither is a reason to skip.
command -v python3 >/dev/null || fail "python3 is not installed"
command -v nm >/dev/null || fail "nm (binutils) is not installed"
SHAPE=$TOP/tests/code-shape.py

# body N: N lines of a function body
body() { for _ in $(seq "$1"); do printf '\tx++;\n'; done; }
F=$T/tree
mkdir -p "$F/src" "$F/tests/unit"
printf '#pragma once\n#include "b.h"\n' >"$F/src/a.h"
printf '#pragma once\n#include "a.h"\n' >"$F/src/b.h"
{
	printf '#include "a.h"\nint x;\nint ping(void);\nint pong(void);\n'
	printf 'int\nlong_one(int a,\n\t int b)\n{\n'; body 97; printf '}\n'    # 101 lines from the name
	printf 'int\nfits(void)\n{\n'; body 97; printf '}\n'                    # 100 lines
	printf 'int ping(void)\n{\n\treturn pong();\n}\n'
	for i in $(seq 60); do printf 'int f%d(void)\n{\n\treturn 0;\n}\n' "$i"; done
} >"$F/src/one.c"
printf 'extern int x;\nint ping(void);\nint pong(void)\n{\n\treturn ping() + x;\n}\n' >"$F/src/two.c"
printf 'int three(void)\n{\n\treturn 3;\n}\n' >"$F/src/three.c"
printf '#include "../../src/three.c"\n' >"$F/tests/unit/test-three.c"
for c in one two three; do cc -c -o "$F/src/$c.o" "$F/src/$c.c" || fail "cannot compile the test tree"; done
python3 "$SHAPE" "$F" >"$T/self.out" && { cat "$T/self.out"; fail "code-shape.py passed a tree with faults"; }
note "code-shape.py on a test tree with four faults:"
sed 's/^/#   /' "$T/self.out"
grep -q '^length: src/one.c:6: long_one() is 101 lines' "$T/self.out" || fail "the 101-line function was not reported"
grep -q 'fits()' "$T/self.out" && fail "a function of 100 lines was reported"
grep -q '^include: circle: src/a.h -> src/b.h' "$T/self.out" || fail "the include circle was not reported"
grep -q '^call: circle between src/one.o, src/two.o' "$T/self.out" || fail "the call circle was not reported"
grep -q 'three.o' "$T/self.out" && fail "three.o is in no circle but was reported"
grep -q '^unit: tests/unit/test-three.c #includes ../../src/three.c' "$T/self.out" \
	|| fail "the unit test including a .c was not reported"
[ "$(grep -c '^[a-z]*: ' "$T/self.out")" = 4 ] || fail "expected exactly 4 faults in the test tree"

note "code-shape.py on $TOP:"
python3 "$SHAPE" "$TOP" || fail "the code's shape has faults (listed above)"
