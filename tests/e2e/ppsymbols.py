#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""What hotspot would show: the function names perfparser gave a command's
samples.

    ppsymbols.py STREAM COMM FUNCTION

STREAM is hotspot-perfparser's --output: "QPERFSTREAM\\0", a little-endian
int32 QDataStream version, then events, each a little-endian uint32 size and
a big-endian QDataStream record whose first byte is its type (the EventType
enum of perfparser as packaged with hotspot 1.3.0, which hotspot's own
parser repeats).  A sample's frames are location ids; a location's symbol is
defined on it or on its parent (the function's entry), and names are string
ids.  Prints "SAMPLES NAMED": the samples of threads whose comm is COMM and,
of those, the ones with FUNCTION in any frame.  With CALLERs it prints a
third figure: of the named samples, those with every CALLER in a frame too
(whole paths; a CALLER starting with "~" is a regular expression too).  Exits 2 on a stream it cannot read, so a test tells a format
it does not know from a missing name.
COMM "pid:N" takes the samples of process N instead (a JVM
renames its threads).  A FUNCTION starting with "~" is a regular expression (re.search) for the
name instead: JIT runtimes put their tier and source position in it.
"""
import re
import struct
import sys

THREAD_START, THREAD_END, COMMAND, LOCATION, SYMBOL, STRING = 0, 1, 2, 3, 4, 5
SAMPLE, TRACEPOINT_SAMPLE = 13, 14


class Record:
    def __init__(self, data):
        self.data, self.at = data, 1

    def take(self, fmt):
        vals = struct.unpack_from('>' + fmt, self.data, self.at)
        self.at += struct.calcsize('>' + fmt)
        return vals

    def bytes(self):
        (n,) = self.take('I')
        if n == 0xffffffff:
            return b''
        raw = self.data[self.at:self.at + n]
        self.at += n
        return raw


def main():
    if len(sys.argv) < 4:
        sys.exit('usage: ppsymbols.py STREAM COMM FUNCTION [CALLER...]')
    data = open(sys.argv[1], 'rb').read()
    comm, function = sys.argv[2].encode(), sys.argv[3].encode()
    callers = [a.encode() for a in sys.argv[4:]]
    if data[:12] != b'QPERFSTREAM\0' or len(data) < 16:
        print('not a perfparser stream', file=sys.stderr)
        sys.exit(2)
    strings, comms, parents, symbols, samples = {}, {}, {}, {}, []
    at = 16
    try:
        while at + 4 <= len(data):
            (size,) = struct.unpack_from('<I', data, at)
            rec = Record(data[at + 4:at + 4 + size])
            at += 4 + size
            kind = rec.data[0]
            if kind == STRING:
                (sid,) = rec.take('i')
                strings[sid] = rec.bytes()
            elif kind == COMMAND:
                _pid, tid, _time, _cpu, name = rec.take('iiQIi')
                comms[tid] = name
            elif kind == LOCATION:
                lid, _addr, _file, _pid, _line, _col, parent = rec.take('iQiIiii')
                parents[lid] = parent
            elif kind == SYMBOL:
                lid, name = rec.take('ii')
                symbols[lid] = name
            elif kind in (SAMPLE, TRACEPOINT_SAMPLE):
                pid, tid, _time, _cpu, n = rec.take('iiQII')
                samples.append((pid, tid, rec.take('i' * n)))
    except struct.error as e:
        print('cannot read the perfparser stream: %s' % e, file=sys.stderr)
        sys.exit(2)

    def name_of(lid):
        for l in (lid, parents.get(lid, -1)):
            if l in symbols:
                return strings.get(symbols[l], b'')
        return b''

    if comm.startswith(b'pid:'):
        mine = [frames for pid, tid, frames in samples if pid == int(comm[4:])]
    else:
        mine = [frames for pid, tid, frames in samples if strings.get(comms.get(tid, -1)) == comm]
    if function.startswith(b'~'):
        pattern = re.compile(function[1:])
        match = lambda name: pattern.search(name) is not None
    else:
        match = lambda name: name == function
    names = [set(name_of(f) for f in frames) for frames in mine]
    named = [n for n in names if any(match(x) for x in n)]
    def has(n, c):
        if c.startswith(b'~'):
            return any(re.search(c[1:], x) for x in n)
        return c in n
    if callers:
        print(len(mine), len(named), sum(1 for n in named if all(has(n, c) for c in callers)))
    else:
        print(len(mine), len(named))


if __name__ == '__main__':
    main()
