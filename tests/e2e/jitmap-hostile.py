#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A process with JIT-like memory (an anonymous executable mapping) whose
perf map is hostile, for tests/e2e/test-jit-perfmap-hostile.sh.

    jitmap-hostile.py KIND SECRET SECONDS

KIND: fifo (the map is a FIFO), symlink (a link to SECRET, a file of
perf map lines naming SECRET_FUNCTION_NAME in the mapping), huge (a
million overlapping lines, binary garbage and absurd ranges, then
good_symbol).  Prints "ready" once the map is there, then spins for
SECONDS and removes it.
"""
import ctypes
import mmap
import os
import sys
import time

kind, secret, secs = sys.argv[1], sys.argv[2], float(sys.argv[3])
m = mmap.mmap(-1, 1 << 16, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS,
              prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
addr = ctypes.addressof(ctypes.c_char.from_buffer(m))
path = '/tmp/perf-%d.map' % os.getpid()
# Named for this pid: whatever is there is an earlier process's leftover.
try:
    os.unlink(path)
except FileNotFoundError:
    pass
if kind == 'fifo':
    os.mkfifo(path, 0o600)
elif kind == 'symlink':
    with open(secret, 'w') as f:
        f.write('%x 100 SECRET_FUNCTION_NAME\n' % addr)
    os.symlink(secret, path)
elif kind == 'huge':
    with open(path, 'w', encoding='latin-1') as f:
        f.write(('%x 10 overlapping_symbol_with_a_rather_long_name\n' % addr) * 1000000)
        f.write('\x00\xff\x01 garbage \x7f\n' * 1000)
        f.write('%x ffffffffffffffff absurd\n%x 0 empty\n' % (addr, addr))
        f.write('%x 10 good_symbol\n' % (addr + 0x100))
else:
    sys.exit('unknown kind ' + kind)
print('ready', flush=True)
end = time.monotonic() + secs
while time.monotonic() < end:
    pass
os.unlink(path)
