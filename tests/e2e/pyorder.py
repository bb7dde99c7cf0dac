#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Whether Python frames stand in their callers' order in each stack.

    pyorder.py FORMAT FILE

FORMAT is "script" (perf script -F ip,sym: blank-line separated samples,
leaf first, "ADDRESS NAME" a line), "folded" (root first, ';' between
frames, the count last) or "traces" (go tool pprof -traces: blocks between
"-----------+" lines, leaf first, the block's value on its first line).

The workload (test-python-frames.sh) runs <module> -> outer -> middle ->
json.dumps (C) -> via_json -> hot_leaf, and outer -> fib (recursive).  A
frame is Python when its name starts with "py::", as perfrecd names them.
Prints "TOTAL ORDERED VIA NATIVE ENTRY": stacks weighed by their count;
ORDERED those with py::outer whose Python frames keep the order above;
VIA those with via_json and middle; NATIVE, of those, those with a native frame between
via_json and middle (json's C encoder); ENTRY, of the ordered, those whose
root end is native and reaches main, Py_BytesMain, __libc_start_main or
_start (a thread: start_thread or clone) past outer.
"""
import re
import sys

ENTRY = re.compile(r"^(main|Py_BytesMain|Py_RunMain|__libc_start_main.*|__libc_start_call_main|_start|start_thread|clone3?|__clone3?)$")
CHAIN = ["hot_leaf", "via_json", "middle", "outer"]


def pyname(frame):
    """The Python function a frame names (qualname's last part), or None."""
    if not frame.startswith("py::"):
        return None
    m = re.match(r"py::([A-Za-z_<>.][A-Za-z0-9_<>.]*)", frame)
    return m.group(1).split(".")[-1] if m else ""


def ordered(frames):
    """frames leaf first: True when the Python ones follow the workload's calls."""
    names = [pyname(f) for f in frames]
    if "outer" not in names:
        return False
    i_outer = names.index("outer")
    if "hot_leaf" in names or "via_json" in names:
        pos = []
        for n in CHAIN[CHAIN.index("hot_leaf" if "hot_leaf" in names else "via_json"):]:
            if n not in names:
                return False
            pos.append(names.index(n))
        if pos != sorted(pos):
            return False
    if "fib" in names:
        last_fib = max(i for i, n in enumerate(names) if n == "fib")
        if last_fib > i_outer:
            return False
    # nothing of the workload's own above outer but the module
    return all(n in (None, "<module>", "") or i <= i_outer for i, n in enumerate(names) if n in CHAIN + ["fib"])


def native_between(frames):
    names = [pyname(f) for f in frames]
    if "via_json" not in names or "middle" not in names:
        return None
    a, b = names.index("via_json"), names.index("middle")
    return any(n is None for n in names[a + 1:b])


def entry(frames):
    names = [pyname(f) for f in frames]
    if "outer" not in names:
        return False
    return any(n is None and ENTRY.match(frames[i]) for i, n in enumerate(names) if i > names.index("outer"))


def stacks(fmt, text):
    if fmt == "script":
        for block in re.split(r"\n\s*\n", text):
            lines = [ln.strip() for ln in block.splitlines() if ln.strip()]
            if len(lines) < 2:
                continue
            frames = []
            for ln in lines[1:]:
                parts = ln.split(None, 1)
                frames.append(re.sub(r"\+0x[0-9a-f]+$", "", parts[1]) if len(parts) > 1 else "[unknown]")
            yield 1, frames
    elif fmt == "folded":
        for ln in text.splitlines():
            if not ln.strip():
                continue
            stack, count = ln.rsplit(" ", 1)
            yield float(count), list(reversed(stack.split(";")))
    elif fmt == "traces":
        for block in re.split(r"^-+\+-+$", text, flags=re.M):
            frames, value = [], None
            for ln in block.splitlines():
                m = re.match(r"^\s*(\S+)\s+(\S.*)$", ln) if value is None else re.match(r"^\s+(\S.*)$", ln)
                if value is None and m and re.match(r"^[0-9.]+[a-zµ]*$", m.group(1)):
                    value = m.group(1)
                    frames.append(m.group(2).strip())
                elif value is not None and m:
                    frames.append(m.group(1).strip())
            if value is not None and frames:
                v = re.match(r"^[0-9.]+", value).group(0)
                yield float(v), frames
    else:
        raise SystemExit(f"pyorder.py: unknown format {fmt}")


def main():
    fmt, path = sys.argv[1], sys.argv[2]
    with open(path, errors="replace") as f:
        text = f.read()
    total = good = via = native = entries = 0
    for weight, frames in stacks(fmt, text):
        total += weight
        if ordered(frames):
            good += weight
            if entry(frames):
                entries += weight
        nb = native_between(frames)
        if nb is not None:
            via += weight
        if nb:
            native += weight
    print(f"{total:.0f} {good:.0f} {via:.0f} {native:.0f} {entries:.0f}")


if __name__ == "__main__":
    main()
