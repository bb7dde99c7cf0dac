#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Derive damaged perf.data files from a sound one, for the fuzz corpora.

    tests/fuzz/damage.py SOUND.data OUTDIR [PREFIX]

Writes the damage issue 17 found, each as its own file: data size 0, empty
feature sections, records perf script stops at or crashes on, records too
short for their type, and the .tmp files a kill leaves (header and attrs
only, a first record cut, records past a stale checkpoint, no features).
"""
import os
import struct
import sys

src, outdir = sys.argv[1], sys.argv[2]
prefix = sys.argv[3] if len(sys.argv) > 3 else ''
B = bytearray(open(src, 'rb').read())
doff, dsz = struct.unpack_from('<QQ', B, 40)
flags = struct.unpack_from('<4Q', B, 72)
feats = [f for f in range(256) if flags[f // 64] >> (f % 64) & 1]
table = doff + dsz
recs, p = [], doff
while p < table:
    t, _, sz = struct.unpack_from('<IHH', B, p)
    recs.append((p, t, sz))
    p += sz
os.makedirs(outdir, exist_ok=True)


def out(name, b):
    with open(os.path.join(outdir, prefix + name), 'wb') as f:
        f.write(b)


def first(t):
    return next((r for r in recs if r[1] == t), None)


# Finished files that perf or perfparser refuse.
b = B[:doff] + B[table:]
struct.pack_into('<Q', b, 48, 0)
for i in range(len(feats)):
    o = struct.unpack_from('<Q', b, doff + 16 * i)[0]
    struct.pack_into('<Q', b, doff + 16 * i, o - dsz)
out('data-size-0.data', b)
for f, name in ((2, 'BUILD_ID'), (13, 'CPU_TOPOLOGY')):
    if f in feats:
        b = bytearray(B)
        struct.pack_into('<Q', b, table + 16 * feats.index(f) + 8, 0)
        out('empty-%s.data' % name, b)
sample, round_, comm = first(9), first(68), first(3)
if sample:
    for t, name in ((66, 'TRACING_DATA'), (69, 'ID_INDEX'), (71, 'AUXTRACE'),
                    (74, 'CPU_MAP'), (77, 'STAT_ROUND'), (78, 'EVENT_UPDATE'), (83, 'COMPRESSED2')):
        b = bytearray(B)
        struct.pack_into('<I', b, sample[0], t)
        out('sample-as-%s.data' % name, b)
    # Its fields overrun it: 8 bytes shorter, a FINISHED_ROUND in the gap.
    b = bytearray(B)
    struct.pack_into('<H', b, sample[0] + 6, sample[2] - 8)
    struct.pack_into('<IHH', b, sample[0] + sample[2] - 8, 68, 0, 8)
    out('sample-short.data', b)
    # A byte flipped in its cpu (after identifier, ip, tid, time): perf script crashes.
    b = bytearray(B)
    struct.pack_into('<I', b, sample[0] + 8 + 32, 0xba0001)
    out('sample-cpu-garbage.data', b)
if round_:
    for t, name in ((69, 'ID_INDEX'), (73, 'THREAD_MAP'), (77, 'STAT_ROUND')):
        b = bytearray(B)
        struct.pack_into('<I', b, round_[0], t)
        out('round-as-%s.data' % name, b)
if comm:
    b = bytearray(B)
    struct.pack_into('<I', b, comm[0], 10)  # an MMAP2 needs far more
    out('comm-as-MMAP2.data', b)

# .tmp files as a kill leaves them: no features, data size as last checkpointed.
tmp = bytearray(B[:table])
struct.pack_into('<4Q', tmp, 72, 0, 0, 0, 0)
cut = recs[len(recs) // 3]
struct.pack_into('<Q', tmp, 48, cut[0] - doff)
out('stale-checkpoint.data.tmp', tmp + B[recs[-1][0]:recs[-1][0] + 5])
head = bytearray(tmp[:doff])
struct.pack_into('<Q', head, 48, 0)
out('attrs-only.data.tmp', head)
out('cut-first.data.tmp', head + B[doff:doff + recs[0][2] // 2])
