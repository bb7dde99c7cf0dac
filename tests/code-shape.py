#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Checks the shape of the project's C code (issue 24), so that it stays
readable as it grows:

  length   no function in a source folder is over MAX_LINES lines;
  include  no circle of #include "..." between the project's files;
  call     no circle between the built objects of the source folders: object
           A -> B when A has an undefined symbol that B defines;
  unit     no file under tests/unit or tests/fuzz #includes a .c file (they
           link the libraries instead).

The source folders are the top-level folders holding *.c files, except
tests/, docs/ and build output, so a new one (internal/, views/) is checked
without being named here.  A function's length counts from the line with its
name to its closing brace, both included: the house style puts a function's
opening and closing braces alone in column 0, which is what finds a function
(a "{" in column 0 after a line ending in ")"); its name is on the line where
the parenthesis of its parameter list opens.

Usage: code-shape.py [TOP] [--only length,include,call,unit].  Prints one
line per fault and exits 1 if there is any; the objects must have been built
(make all) for the call check.
"""

import os
import re
import subprocess
import sys
from collections import defaultdict

MAX_LINES = 100
NOT_SOURCE = {"tests", "docs", "conf", "unit", "build", "build-asan", "build-fuzz"}
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
ANY_INCLUDE_RE = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]', re.M)


def source_folders(top):
    dirs = []
    for name in sorted(os.listdir(top)):
        path = os.path.join(top, name)
        if name.startswith(".") or name in NOT_SOURCE or not os.path.isdir(path):
            continue
        if any(f.endswith(".c") for _, _, files in os.walk(path) for f in files):
            dirs.append(name)
    return dirs


def files_under(top, folders, exts):
    out = []
    for d in folders:
        for root, subdirs, files in os.walk(os.path.join(top, d)):
            subdirs[:] = sorted(s for s in subdirs if not s.startswith("."))
            out += [os.path.relpath(os.path.join(root, f), top)
                    for f in sorted(files) if f.endswith(exts)]
    return out


def read(top, rel):
    with open(os.path.join(top, rel), encoding="utf-8", errors="replace") as f:
        return f.read()


# --- length -------------------------------------------------------------------
def functions(text):
    """Yields (name, first line, last line), 1-based, of each function."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if not line.startswith("{") or i == 0 or not lines[i - 1].rstrip().endswith(")"):
            continue
        # Walk back from the ")" to the "(" that opens the parameter list.
        depth, start = 0, None
        for j in range(i - 1, max(-1, i - 40), -1):
            for ch in reversed(lines[j]):
                if ch == ")":
                    depth += 1
                elif ch == "(":
                    depth -= 1
                    if depth == 0:
                        break
            if depth == 0:
                start = j
                break
        if start is None:
            continue
        m = re.search(r"([A-Za-z_]\w*)\s*\(", lines[start])
        name = m.group(1) if m else "?"
        end = next((k for k in range(i + 1, len(lines)) if lines[k].startswith("}")), None)
        if end is None:
            continue
        yield name, start + 1, end + 1


def check_length(top, folders):
    faults, seen = [], 0
    files = files_under(top, folders, (".c", ".h"))
    for rel in files:
        for name, first, last in functions(read(top, rel)):
            seen += 1
            n = last - first + 1
            if n > MAX_LINES:
                faults.append(f"length: {rel}:{first}: {name}() is {n} lines (at most {MAX_LINES})")
    # Every .c has a function: finding fewer means the parse missed them.
    nc = sum(f.endswith(".c") for f in files)
    if seen < nc:
        faults.append(f"length: only {seen} functions found in {nc} .c files: the parse is broken")
    return faults


# --- include ------------------------------------------------------------------
def include_dirs(top, folders):
    """Where #include "x" looks after the including file's folder: the -I
    folders of the Makefile, then the source folders and their include/."""
    dirs = []
    try:
        dirs += re.findall(r"-I(\S+)", read(top, "Makefile"))
    except OSError:
        pass
    for d in folders:
        dirs += [d, os.path.join(d, "include")]
    seen, out = set(), []
    for d in dirs:
        d = os.path.normpath(d)
        if "$" not in d and d not in seen and os.path.isdir(os.path.join(top, d)):
            seen.add(d)
            out.append(d)
    return out


def resolve(top, rel, inc, dirs):
    for d in [os.path.dirname(rel)] + dirs:
        cand = os.path.normpath(os.path.join(d, inc))
        if not cand.startswith("..") and os.path.isfile(os.path.join(top, cand)):
            return cand
    return None


def sccs(nodes, edges):
    """Tarjan's strongly connected components of more than one node."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        # Iterative, so a long chain does not hit Python's recursion limit.
        work = [(v, iter(sorted(edges.get(v, ()))))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(edges.get(nxt, ())))))
                elif nxt in on:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def check_include(top, folders):
    files = files_under(top, folders, (".c", ".h"))
    dirs = include_dirs(top, folders)
    edges, n = defaultdict(set), 0
    for rel in files:
        for inc in INCLUDE_RE.findall(read(top, rel)):
            to = resolve(top, rel, inc, dirs)
            if to and to != rel and to in files:
                edges[rel].add(to)
                n += 1
    faults = [f"include: circle: {' -> '.join(c)} include each other" for c in sccs(files, edges)]
    # Nearly every .c includes a header of its own: far fewer means the
    # includes were not resolved.
    nc = sum(f.endswith(".c") for f in files)
    if n < nc / 2:
        faults.append(f"include: only {n} includes between the {len(files)} files found: the parse is broken")
    return faults


# --- call ---------------------------------------------------------------------
def object_of(top, src):
    stem = src[:-2]
    for cand in (stem + ".o", os.path.join("build", stem + ".o")):
        if os.path.isfile(os.path.join(top, cand)):
            return cand
    return None


def symbols(top, obj):
    """(defined, undefined) global symbols of one object, from nm -P."""
    out = subprocess.run(["nm", "-P", os.path.join(top, obj)], check=True,
                         capture_output=True, text=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind in "Uwv":
            undefined.add(name)
        elif kind.isupper():
            defined.add(name)
    return defined, undefined


def check_call(top, folders):
    faults, objs = [], []
    for src in files_under(top, folders, (".c",)):
        if src.endswith(".bpf.c"):
            continue  # a BPF program: its own object, loaded by the kernel
        obj = object_of(top, src)
        if obj is None:
            faults.append(f"call: {src} has no object ({src[:-2]}.o): run make all first")
        else:
            objs.append(obj)
    if faults:
        return faults
    defs, undefs, where = {}, {}, defaultdict(list)
    for obj in objs:
        defs[obj], undefs[obj] = symbols(top, obj)
        for s in defs[obj]:
            where[s].append(obj)
    edges, why = defaultdict(set), defaultdict(list)
    def folder_of(obj):
        parts = obj.split(os.sep)
        return parts[1] if parts[0] == "build" else parts[0]

    for obj in objs:
        for s in sorted(undefs[obj]):
            ds = [d for d in where.get(s, ()) if d != obj]
            # The same program first: daemon/ and tools/ may each define a
            # name the other does too.
            near = [d for d in ds if folder_of(d) == folder_of(obj)]
            for d in near or ds:
                edges[obj].add(d)
                why[(obj, d)].append(s)
    for comp in sccs(objs, edges):
        inner = []
        for a in comp:
            for b in comp:
                if b in edges[a]:
                    syms = why[(a, b)]
                    more = f" +{len(syms) - 2}" if len(syms) > 2 else ""
                    inner.append(f"{a} -> {b} ({', '.join(syms[:2])}{more})")
        faults.append(f"call: circle between {', '.join(comp)}: " + "; ".join(inner))
    return faults


# --- unit ---------------------------------------------------------------------
def check_unit(top, folders):
    faults = []
    for d in ("tests/unit", "tests/fuzz"):
        if not os.path.isdir(os.path.join(top, d)):
            continue
        for rel in files_under(top, [d], (".c", ".h")):
            for inc in ANY_INCLUDE_RE.findall(read(top, rel)):
                if inc.endswith(".c"):
                    faults.append(f"unit: {rel} #includes {inc}: link the library that has it")
    return faults


CHECKS = {"length": check_length, "include": check_include, "call": check_call, "unit": check_unit}


def main(argv):
    top, only = ".", list(CHECKS)
    args = list(argv[1:])
    while args:
        a = args.pop(0)
        if a == "--only" and args:
            only = args.pop(0).split(",")
        elif a.startswith("-"):
            print(__doc__, file=sys.stderr)
            return 2
        else:
            top = a
    folders = source_folders(top)
    if not folders:
        print(f"no source folders in {top}", file=sys.stderr)
        return 2
    faults = []
    for name in only:
        faults += CHECKS[name](top, folders)
    for f in faults:
        print(f)
    print(f"code-shape: {', '.join(folders)}: {len(faults)} fault(s)")
    return 1 if faults else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
