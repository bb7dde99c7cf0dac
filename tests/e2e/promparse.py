#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Strict checker for the Prometheus text exposition format 0.0.4.

Used by tests/e2e/test-metrics.sh to check what perfrecd serves and writes,
the way promtool's "check metrics" and the Prometheus text parser would:
HELP/TYPE syntax, metric and label name syntax, label value escapes, float
values and integer timestamps, one TYPE (and one HELP) per family declared
before its samples, each family's lines in one group, no duplicate series,
a final newline; plus the lints we hold ourselves to: counters end in
_total and are never negative.

    promparse.py FILE                 exit 0 if FILE parses, else 1 with reasons
    promparse.py --value NAME FILE    also print the value of the one series NAME
    promparse.py --json FILE          also print every sample as JSON
FILE may be "-" for stdin.
"""
import json
import math
import re
import sys

NAME_RE = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL_RE = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
TYPES = ("counter", "gauge", "histogram", "summary", "untyped")
FLOAT_RE = re.compile(r"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[iI][nN][fF]|NaN)\Z")
INT_RE = re.compile(r"-?\d+\Z")


class ParseError(Exception):
    pass


def parse_float(s):
    # Go's strconv.ParseFloat spellings the Prometheus parser accepts
    if s in ("+Inf", "-Inf", "Inf"):
        return math.inf if s != "-Inf" else -math.inf
    if not FLOAT_RE.match(s):
        raise ParseError(f"'{s}' is not a float value")
    return float(s)


def skip_blanks(s, i):
    while i < len(s) and s[i] in " \t":
        i += 1
    return i


def parse_labels(s, i):
    """Parse '{a="b",...}' starting at s[i] == '{'; return (dict, index after '}')."""
    labels = {}
    i += 1
    while True:
        i = skip_blanks(s, i)
        if i < len(s) and s[i] == "}":
            return labels, i + 1
        m = LABEL_RE.match(s, i)
        if not m:
            raise ParseError(f"bad label name at column {i + 1}")
        name = m.group(0)
        if name.startswith("__"):
            raise ParseError(f"label name '{name}' is reserved (starts with __)")
        if name in labels:
            raise ParseError(f"label '{name}' given twice")
        i = skip_blanks(s, m.end())
        if i >= len(s) or s[i] != "=":
            raise ParseError(f"expected '=' after label '{name}'")
        i = skip_blanks(s, i + 1)
        if i >= len(s) or s[i] != '"':
            raise ParseError(f"label '{name}' value is not quoted")
        i += 1
        val = []
        while True:
            if i >= len(s):
                raise ParseError(f"label '{name}' value is not terminated")
            c = s[i]
            if c == "\\":
                if i + 1 >= len(s) or s[i + 1] not in '\\"n':
                    raise ParseError(f"label '{name}' value has a bad escape")
                val.append({"\\": "\\", '"': '"', "n": "\n"}[s[i + 1]])
                i += 2
                continue
            if c == '"':
                i += 1
                break
            val.append(c)
            i += 1
        labels[name] = "".join(val)
        i = skip_blanks(s, i)
        if i < len(s) and s[i] == ",":
            i += 1
        elif i < len(s) and s[i] == "}":
            return labels, i + 1
        else:
            raise ParseError("expected ',' or '}' after a label value")


def family_of(name, types):
    """The declared family a sample name belongs to (histogram/summary suffixes)."""
    if name in types:
        return name
    for suffix, kinds in (("_bucket", ("histogram",)), ("_sum", ("histogram", "summary")),
                          ("_count", ("histogram", "summary"))):
        if name.endswith(suffix):
            base = name[: -len(suffix)]
            if types.get(base) in kinds:
                return base
    return name


class Groups:
    """Each family's lines must form one group."""

    def __init__(self):
        self.current = None
        self.finished = set()

    def enter(self, fam):
        if fam in self.finished:
            raise ParseError(f"lines of '{fam}' are not in one group")
        if self.current is not None and self.current != fam:
            self.finished.add(self.current)
        self.current = fam


def parse_comment(line, types, helps, seen_samples, groups):
    toks = line[1:].split(None, 2)
    if not toks or toks[0] not in ("HELP", "TYPE"):
        return  # an ordinary comment
    if not line[1:2].isspace():
        raise ParseError("expected a blank after '#'")
    if len(toks) < 2 or not NAME_RE.fullmatch(toks[1]):
        raise ParseError(f"{toks[0]} without a valid metric name")
    name = toks[1]
    if toks[0] == "TYPE":
        if len(toks) < 3 or toks[2].strip() not in TYPES:
            raise ParseError(f"TYPE of '{name}' is not one of {', '.join(TYPES)}")
        if name in types:
            raise ParseError(f"second TYPE line for '{name}'")
        if name in seen_samples:
            raise ParseError(f"TYPE of '{name}' comes after its samples")
        types[name] = toks[2].strip()
    else:
        if name in helps:
            raise ParseError(f"second HELP line for '{name}'")
        doc = toks[2] if len(toks) > 2 else ""
        if "\\" in re.sub(r"\\[\\n]", "", doc):
            raise ParseError(f"HELP of '{name}' has a bad escape")
        helps[name] = doc
    groups.enter(name)


def parse(text):
    """Return a list of (name, labels, value); raise ParseError naming the line."""
    if text and not text.endswith("\n"):
        raise ParseError("the last line does not end with a newline")
    types, helps = {}, {}
    seen_samples = set()
    series = set()
    samples = []
    groups = Groups()
    for lineno, line in enumerate(text.split("\n")[:-1] if text else [], 1):
        try:
            if not line.strip():
                continue
            if line.startswith("#"):
                parse_comment(line, types, helps, seen_samples, groups)
                continue
            m = NAME_RE.match(line)
            if not m:
                raise ParseError("a sample line must start with a metric name")
            name = m.group(0)
            i = m.end()
            labels = {}
            if i < len(line) and line[i] == "{":
                labels, i = parse_labels(line, i)
            rest = line[i:]
            if rest and rest[0] not in " \t":
                raise ParseError(f"no blank between '{name}' and its value")
            toks = rest.split()
            if not 1 <= len(toks) <= 2:
                raise ParseError(f"'{name}' needs a value and at most a timestamp")
            value = parse_float(toks[0])
            if len(toks) == 2 and not INT_RE.match(toks[1]):
                raise ParseError(f"timestamp '{toks[1]}' of '{name}' is not an integer")
            fam = family_of(name, types)
            groups.enter(fam)
            seen_samples.add(fam)
            kind = types.get(fam, "untyped")
            if kind == "counter":
                if not name.endswith("_total"):
                    raise ParseError(f"counter '{name}' does not end in _total")
                if not value >= 0:
                    raise ParseError(f"counter '{name}' is {toks[0]}, not >= 0")
            if kind == "histogram" and name.endswith("_bucket") and "le" not in labels:
                raise ParseError(f"histogram bucket '{name}' lacks le")
            key = (name, tuple(sorted(labels.items())))
            if key in series:
                raise ParseError(f"duplicate series {name}{labels or ''}")
            series.add(key)
            samples.append((name, labels, value))
        except ParseError as e:
            raise ParseError(f"line {lineno}: {e}: {line[:120]!r}") from None
    return samples


def main(argv):
    want_value = None
    want_json = False
    args = argv[1:]
    while args and args[0].startswith("--"):
        if args[0] == "--value" and len(args) > 1:
            want_value = args[1]
            args = args[2:]
        elif args[0] == "--json":
            want_json = True
            args = args[1:]
        else:
            break
    if len(args) != 1:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        data = sys.stdin.buffer.read() if args[0] == "-" else open(args[0], "rb").read()
        samples = parse(data.decode("utf-8"))
    except UnicodeDecodeError:
        print(f"promparse: {args[0]}: not UTF-8", file=sys.stderr)
        return 1
    except (OSError, ParseError) as e:
        print(f"promparse: {args[0]}: {e}", file=sys.stderr)
        return 1
    if not samples:
        print(f"promparse: {args[0]}: no samples", file=sys.stderr)
        return 1
    if want_json:
        print(json.dumps([{"name": n, "labels": l, "value": v} for n, l, v in samples]))
    if want_value:
        vals = [v for n, l, v in samples if n == want_value]
        if len(vals) != 1:
            print(f"promparse: {args[0]}: {len(vals)} series named {want_value}, want 1", file=sys.stderr)
            return 1
        v = vals[0]
        print(int(v) if v.is_integer() else repr(v))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
