# SPDX-License-Identifier: LGPL-2.1-or-later
"""A Python workload with known functions, for issue 27's test and bench:
<module> -> outer -> middle -> json.dumps (its C encoder) -> via_json ->
hot_leaf, and outer -> fib (recursive).

    pyfw.py SECS [THREADS]   outer until each thread used SECS of CPU
    pyfw.py --rounds N       outer for N rounds (a fixed amount of work)
"""
import json
import sys
import threading
import time


def hot_leaf(o):
    s = 0
    for i in range(3000):
        s += i * i
    return s


def via_json(o):
    # json's C encoder calls this for what it cannot encode itself
    return hot_leaf(o)


def middle():
    return json.dumps([object(), object()], default=via_json)


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


def outer(secs, rounds=None):
    # CPU time, not wall time: on a loaded machine the start stays a small share
    while time.thread_time() < secs if rounds is None else rounds > 0:
        middle()
        fib(11)
        if rounds is not None:
            rounds -= 1


if sys.argv[1] == "--rounds":
    outer(0, int(sys.argv[2]))
elif len(sys.argv) > 2:
    ts = [threading.Thread(target=outer, args=(float(sys.argv[1]),)) for _ in range(int(sys.argv[2]))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
else:
    outer(float(sys.argv[1]))
