"""Pauses of Python's garbage collector in this process, timed from outside the product code.

`install(path)` registers a `gc.callbacks` hook that times every collection (time.perf_counter
between its "start" and "stop" phases) and keeps, per generation, the count, the total and the
largest pause and a histogram; pauses of 1 ms or more are also kept with their wall-clock time
(the last 5,000), so that a reader can pick those of a time window. The figures are written as
JSON to `path` (atomically: a temporary file renamed over it) about once a second by a daemon
thread, at once on SIGUSR1, and at exit. The counters only grow: the figures of a window are
the difference of two dumps (`window`). The dump does not count the frozen objects: with hundreds of
sandboxes, `gc.get_freeze_count()` walks every frozen object holding the interpreter lock, a pause a second
that the probe itself would add to the server's latency (and to a collection's pause, when its thread
took the lock inside a collector callback).

`Pauses` alone serves in-process measurements (bench/fleet_growth.py).
"""

import atexit
import collections
import gc
import json
import os
import signal
import sys
import threading
import time

BOUNDS_MS = (0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000)  # histogram upper bounds
SLOW_MS = 1.0                                   # pauses kept one by one, with their time


class Pauses:
    def __init__(self):
        self.count = [0, 0, 0]
        self.total_ms = [0.0, 0.0, 0.0]
        self.max_ms = [0.0, 0.0, 0.0]
        self.histogram = [[0] * (len(BOUNDS_MS) + 1) for _ in range(3)]
        self.slow = collections.deque(maxlen=5000)  # (wall time, generation, ms, objects collected)
        self._began = None

    def callback(self, phase, info):
        if phase == "start":
            self._began = time.perf_counter()
            return
        if self._began is None:
            return
        ms = (time.perf_counter() - self._began) * 1e3
        self._began = None
        gen = info.get("generation", 2)
        self.count[gen] += 1
        self.total_ms[gen] += ms
        if ms > self.max_ms[gen]:
            self.max_ms[gen] = ms
        bucket = next((i for i, bound in enumerate(BOUNDS_MS) if ms < bound), len(BOUNDS_MS))
        self.histogram[gen][bucket] += 1
        if ms >= SLOW_MS:
            self.slow.append((time.time(), gen, round(ms, 3), info.get("collected", 0)))

    def start(self):
        gc.callbacks.append(self.callback)
        return self

    def stop(self):
        if self.callback in gc.callbacks:
            gc.callbacks.remove(self.callback)

    def snapshot(self):
        return {"written_at": time.time(), "pid": os.getpid(), "bounds_ms": list(BOUNDS_MS),
                "count": list(self.count), "total_ms": [round(x, 3) for x in self.total_ms],
                "max_ms": [round(x, 3) for x in self.max_ms], "histogram": [list(h) for h in self.histogram],
                "slow": list(self.slow), "threshold": list(gc.get_threshold()),
                "mockserver": getattr(sys.modules.get("mockserver"), "__file__", None)}


def window(first, last, since=None, until=None):
    """The collections between two snapshots: per generation count, total and largest pause (the largest
    from the slow list when one of 1 ms or more fell in [since, until], else the histogram's bound)."""
    out = {"count": [b - a for a, b in zip(first["count"], last["count"])],
           "total_ms": [round(b - a, 3) for a, b in zip(first["total_ms"], last["total_ms"])],
           "max_ms": [0.0, 0.0, 0.0], "max_is_bound": [False, False, False], "top": []}
    since = first["written_at"] if since is None else since
    until = last["written_at"] if until is None else until
    slow = sorted((p for p in last["slow"] if since <= p[0] <= until), key=lambda p: -p[2])
    out["top"] = [{"at": p[0], "generation": p[1], "ms": p[2], "collected": p[3]} for p in slow[:10]]
    for gen in range(3):
        mine = [p[2] for p in slow if p[1] == gen]
        if mine:
            out["max_ms"][gen] = max(mine)
            continue
        diff = [b - a for a, b in zip(first["histogram"][gen], last["histogram"][gen])]
        used = [i for i, n in enumerate(diff) if n]
        if used:                               # under 1 ms: the upper bound of the highest bucket used
            out["max_ms"][gen] = first["bounds_ms"][used[-1]] if used[-1] < len(first["bounds_ms"]) else None
            out["max_is_bound"][gen] = True
    return out


def install(path, interval=1.0):
    """Time this process's collections and write them to `path` every `interval` s, on SIGUSR1 and at exit."""
    pauses = Pauses().start()
    wake = threading.Event()

    def write():
        data = json.dumps(pauses.snapshot())
        tmp = f"{path}.tmp{os.getpid()}"
        with open(tmp, "w") as f:
            f.write(data)
        os.replace(tmp, path)

    def loop():
        while True:                             # a first dump at once: its file says the probe is there
            try:
                write()
            except OSError:
                pass
            wake.wait(interval)
            wake.clear()

    threading.Thread(target=loop, name="gc-pauses", daemon=True).start()
    try:
        signal.signal(signal.SIGUSR1, lambda signum, frame: wake.set())
    except ValueError:                          # not the main thread: the periodic dump still runs
        pass
    atexit.register(write)
    return pauses


def ask(path, pid, timeout=3.0):
    """A fresh dump of process `pid` (the reader's side): SIGUSR1, then wait for a file written after it.
    None when there is no file yet (no probe in that process: SIGUSR1 would end it, so it is not sent) or
    none newer comes within `timeout` seconds."""
    if not os.path.exists(path):
        return None
    asked = time.time()
    try:
        os.kill(pid, signal.SIGUSR1)
    except ProcessLookupError:
        return None
    while time.time() - asked < timeout:
        try:
            with open(path) as f:
                data = json.load(f)
            if data["written_at"] >= asked:
                return data
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.02)
    return None
