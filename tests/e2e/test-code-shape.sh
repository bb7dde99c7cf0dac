#!/bin/bash
# The code keeps a readable shape (issue 24): no function in lib/, daemon/,
# tools/ (or any other top-level source folder) over 100 lines, no #include
# circle between the project's files, no circle of symbol references between
# the built objects, and no unit test or fuzz target #including a .c file.
# tests/code-shape.py does the work and says how it counts; each fault names
# the file and function, or the files of the circle.
. "$(dirname "$0")/lib.sh"
# Both are build dependencies (make deps), so neither is a reason to skip.
command -v python3 >/dev/null || fail "python3 is not installed"
command -v nm >/dev/null || fail "nm (binutils) is not installed"
python3 "$TOP/tests/code-shape.py" "$TOP" || fail "the code's shape has faults (listed above)"
