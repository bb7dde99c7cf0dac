#!/usr/bin/env python3
# The figures of tests/e2e/test-six-*.sh, read through perf script (perf is
# the independent reader: it symbolizes our callchains and unwinds the raw
# stacks itself).  A program's samples are those of the process tree under
# the pid its launcher wrote (the FORK records of each file give the tree),
# so a gcc driver's cc1 and the storm's 500 children count, other jobs'
# runs of the same programs do not.
#
#   six.py reach OURS DROPPED NAME:ROOT:PERFFILE[:depth] ...
#     per program: the share of samples whose user frames reach an entry
#     (ENTRY below) in our file and in perf's --call-graph dwarf file of the
#     same run; each must be >= 95% or >= perf's.  DROPPED (samples the
#     unwinder could not rewrite, not in the file) count as failures of
#     every program.  ":depth" also asks that the average number of user
#     frames be at least perf's.
#   six.py agree RAW UNWOUND NAME:ROOT ...
#     per program: the share of samples whose user frames (addresses, no
#     inline frames) in the unwound file are exactly those perf unwinds
#     from the raw file; each must be >= 98%.
import re
import struct
import subprocess
import sys

# Where a whole stack ends: the program's entry, or a thread's.
ENTRY = re.compile(r'^(main|__libc_start_main\w*|__libc_start_call_main|_start|_dl_start_user'
                   r'|start_thread|__?clone3?)$')
EXEC = re.compile(r'PERF_RECORD_COMM exec: .*:(\d+)/\d+$')
FORK = re.compile(r'PERF_RECORD_FORK\((\d+):(\d+)\):\((\d+):(\d+)\)')
MIN_SAMPLES = 100
# node's samples are mostly in V8's JIT code, which has no CFI: libdwfl
# (ours) and perf's libunwind both stop there, after a frame or two, and
# which of them gets further on a run is chance.  The table unwinder's
# frame-pointer fallback in JIT code (issue 25) is what takes ours past it.
JIT_GAP = (' (EXPECTED GAP for now: both unwinders stop in JIT code without CFI; '
           'the frame-pointer fallback of issue 25 closes it)')


def script(path, fields):
    """The file's samples, in order, as [header, pid, user frames, whether
    the process had exec'd during the recording], and its process forks as
    {parent: [children]}."""
    out = subprocess.run(['perf', 'script', '--no-inline', '--show-task-events', '-i', path,
                          '-F', fields], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f'perf script failed on {path}: {out.stderr[-2000:]}')
    samples, forks, execd, cur = [], {}, set(), None
    for line in out.stdout.split('\n'):
        if not line.strip():
            continue
        if not line.startswith('\t'):
            m = FORK.search(line)
            if m:
                if m.group(1) != m.group(3):
                    forks.setdefault(int(m.group(3)), []).append(int(m.group(1)))
                cur = None
                continue
            m = EXEC.search(line)
            if m:
                execd.add(int(m.group(1)))
            if 'PERF_RECORD_' in line:
                cur = None
                continue
            pidtid = [t for t in line.split() if re.fullmatch(r'\d+/\d+', t)]
            pid = int(pidtid[0].split('/')[0]) if pidtid else -1
            cur = [line.strip(), pid, [], pid in execd]
            samples.append(cur)
        elif cur is not None:
            f = line.split(None, 1)
            if not f[0].startswith('ffffffff'):
                cur[2].append(line.strip())
    return samples, forks


def tree(forks, root):
    pids, todo = set(), [root]
    while todo:
        p = todo.pop()
        if p not in pids:
            pids.add(p)
            todo.extend(forks.get(p, []))
    return pids


def reaches(sample):
    """Whether a sample's user frames (\"IP SYMBOL\" lines) reach an entry."""
    return any(ENTRY.match(f.split(None, 1)[-1].split('@@')[0]) for f in sample[2])


def reach_figures(samples):
    """Samples with user frames, how many reach an entry, the user frames
    per sample (all samples), and the samples without any user frame."""
    n = sum(1 for s in samples if s[2])
    whole = sum(1 for s in samples if reaches(s))
    depth = sum(len(s[2]) for s in samples) / max(len(samples), 1)
    return n, whole, depth, len(samples) - n


def reach(argv):
    ours, ofork = script(argv[0], 'comm,pid,tid,ip,sym')
    dropped = int(argv[1])
    bad = []
    for spec in argv[2:]:
        name, root, pfile, *opt = spec.split(':')
        psamples, pfork = script(pfile, 'comm,pid,tid,ip,sym')
        pn, pw, pd, pk = reach_figures([s for s in psamples if s[1] in tree(pfork, int(root))])
        on, ow, od, ok = reach_figures([s for s in ours if s[1] in tree(ofork, int(root))])
        on += dropped
        print(f'# {name}: ours {ow}/{on} = {100 * ow / max(on, 1):.1f}% reach the entry, '
              f'perf {pw}/{pn} = {100 * pw / max(pn, 1):.1f}% ({ok} and {pk} without user frames); '
              f'user frames per sample: ours {od:.1f}, perf {pd:.1f}')
        if on < MIN_SAMPLES or pn < MIN_SAMPLES:
            bad.append(f'{name}: too few samples (ours {on}, perf {pn})')
        elif ok * 100 > (on + ok) * 10:
            # Not counted above; a few are the kernel's, many would be ours.
            bad.append(f'{name}: {ok} of {on + ok} samples have no user frame at all')
        elif ow * 100 < on * 95 and ow * pn < pw * on:
            bad.append(f'{name}: only {ow} of {on} samples reach the entry, below 95% and perf\'s {pw} of {pn}'
                       + (JIT_GAP if 'depth' in opt else ''))
            for s in [s for s in ours if s[1] in tree(ofork, int(root))
                      and not reaches(s)][:3]:
                print('#   not whole:', s[0], s[2])
        if 'depth' in opt and od < pd:
            bad.append(f'{name}: {od:.2f} user frames per sample on average, fewer than perf\'s {pd:.2f}' + JIT_GAP)
    for b in bad:
        print('FAIL:', b)
    return 1 if bad else 0


def detach_forks(src, dst):
    """A copy of the plain perf.data file SRC whose process FORK records
    name pid 0 as the parent: perf then starts each new process with no
    maps, as it does for its own per-process recordings, instead of with
    its parent's (perf 6.1 keeps them across the exec, and its unwinding
    of the new program takes them for its own)."""
    b = bytearray(open(src, 'rb').read())
    if b[:8] != b'PERFILE2':
        sys.exit(f'{src} is not a plain perf.data file')
    off, size = struct.unpack_from('<QQ', b, 40)
    p, n = off, 0
    while p + 8 <= off + size:
        typ, _, sz = struct.unpack_from('<IHH', b, p)
        if sz < 8:
            sys.exit(f'{src}: bad record size at {p}')
        if typ == 7:  # PERF_RECORD_FORK: pid, ppid, tid, ptid, time
            pid, ppid = struct.unpack_from('<II', b, p + 8)
            if pid != ppid:
                struct.pack_into('<I', b, p + 12, 0)
                struct.pack_into('<I', b, p + 20, 0)
                n += 1
        p += sz
    with open(dst, 'wb') as f:
        f.write(b)
    return n


def no_data_tail(frames):
    """FRAMES without the trailing ones perf placed in the stack or heap:
    a return address there is data libunwind took for one, not a caller."""
    n = len(frames)
    while n and frames[n - 1].endswith(('([stack])', '([heap])')):
        n -= 1
    return frames[:n]


def after_call(frame, cache={}):
    """Whether FRAME ("OFFSET (PATH)", an offset in its ELF file) is a
    return address there, as a caller's frame is: a call instruction ends
    at it, or at the byte after it (callchains hold return addresses less
    one, inside the call)."""
    m = re.fullmatch(r'([0-9a-f]+) \((/.*)\)', frame)
    if not m:
        return False
    off, path = int(m.group(1), 16), m.group(2)
    if path not in cache:
        try:
            cache[path] = open(path, 'rb').read()
        except OSError:
            cache[path] = b''
    for end in (off + 1, off):
        b = cache[path][max(end - 7, 0):end]
        if len(b) < 7:
            continue
        if b[-5] == 0xe8:  # call rel32
            return True
        # call r/m64: ff /2, with a 1-, 2-, 3-, 5- or 6-byte operand
        if any(b[-k] == 0xff and (b[-k + 1] >> 3) & 7 == 2 for k in (2, 3, 4, 6, 7)):
            return True
    return False


def agrees(ref, ours):
    """Whether OURS holds perf's frames REF in order from the same leaf,
    allowing frames of ours perf skipped (each after a call) and frames
    of ours beyond perf's last."""
    j = 0
    for f in ref:
        while j < len(ours) and ours[j] != f:
            if j == 0 or not after_call(ours[j]):
                return False
            j += 1
        if j == len(ours):
            return False
        j += 1
    return True


def agree(argv):
    fields = 'comm,pid,tid,time,ip,dso'
    raw, rfork = script(argv[0], fields)
    host, _ = script(argv[1], fields)
    n = detach_forks(argv[0], argv[0] + '.detached')
    det, _ = script(argv[0] + '.detached', fields)
    if not (len(raw) == len(host) == len(det)) or not raw:
        print(f'FAIL: {len(raw)} samples in the raw file, {len(host)} unwound, {len(det)} detached')
        return 1
    print(f'# {n} FORK records detached from their parents for perf')
    bad = []
    for spec in argv[2:]:
        name, root = spec.split(':')
        pids = tree(rfork, int(root))
        # Same sample (the headers of the detached copy name no comm
        # until the exec), perf's frames first in ours.  Before its exec, a
        # process forked during the recording runs its parent's program:
        # perf reads the file as it is there, the detached copy after.
        idx = [i for i, s in enumerate(raw) if s[1] in pids and s[0] == host[i][0]]
        ref = {i: no_data_tail((det if raw[i][3] else raw)[i][2]) for i in idx}
        nr = sum(1 for s in raw if s[1] in pids)
        exact = sum(1 for i in idx if host[i][2] == (det if raw[i][3] else raw)[i][2])
        as_is = sum(1 for i in idx if host[i][2] == raw[i][2])
        tails = sum(1 for i in idx if ref[i] != (det if raw[i][3] else raw)[i][2])
        prefix = sum(1 for i in idx if host[i][2][:len(ref[i])] == ref[i])
        ok = [i for i in idx if agrees(ref[i], host[i][2])]
        print(f'# {name}: of {nr} samples, {len(ok)} = {100 * len(ok) / max(nr, 1):.1f}% agree with '
              f'perf\'s user frames: {exact} exactly, {prefix} with perf\'s first, the rest with '
              f'frames perf skipped; {tails} of perf\'s ended in the stack or heap; '
              f'{as_is} exactly perf\'s reading of the file as it is')
        if nr < MIN_SAMPLES:
            bad.append(f'{name}: only {nr} samples')
        elif len(ok) * 100 < nr * 98:
            bad.append(f'{name}: only {len(ok)} of {nr} samples agree with perf\'s user frames')
            for i in [i for i in range(len(raw)) if raw[i][1] in pids and i not in set(ok)][:3]:
                print('#   perf:', det[i][0], det[i][2], '\n#   ours:', host[i][0], host[i][2])
    for b in bad:
        print('FAIL:', b)
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit({'reach': reach, 'agree': agree}[sys.argv[1]](sys.argv[2:]))
