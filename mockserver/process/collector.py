"""The garbage collector of a serving process: how it is kept from pausing requests, and its pauses.

A full collection walks every tracked object of the process; with hundreds of sandboxes that is
hundreds of thousands of objects and a pause of hundreds of milliseconds. It is not needed for the
worlds: they hold no reference cycle (world/runtime.py), so a retired world is freed by reference counting
the moment the last reference goes. So, once a second, the young generations are collected (that
frees the young cycles other code makes, in proportion to what is young) and every survivor is moved
to the permanent generation (`gc.freeze()`, which costs nothing), where collections no longer walk it.
The same is done right after a world is read back (`settle`, called by world.thaw), so that a burst of
new sandboxes never piles up young objects. A collection then only ever walks what is younger than a
second and newer than the last world made. Frozen objects are still freed as
soon as nothing refers to them; only a cycle formed among objects older than a second would wait,
and the bench (bench/fleet.py) and tests/process/test_fleet_memory.py check that serving leaves none.

When much memory was let go (sandboxes deleted, journals trimmed), `release()` asks the allocator
(process/allocator.py) to hand free pages back to the system, at most once a second, so that the resident
size follows. A hand-back is cheap next to a second of serving, and a more frequent one keeps the resident
size lower at the same CPU per request (docs/performance.md).

The pauses of every collection are measured (`gc.callbacks`) and shown by `GET /_mock/health`. The health
reply does not count the frozen objects: `gc.get_freeze_count()` walks them all while every request waits.
"""

import gc
import time

from mockserver.process import allocator

FREEZE_EVERY = 1.0              # seconds between collect-young-then-freeze
TRIM_EVERY = 1.0                # seconds between hand-backs of free memory to the system, at most
THRESHOLDS = (10_000, 50, 1000)
BUCKETS = (1, 2, 5, 10, 20, 50, 100, 200, 500)   # ms: histogram bounds of the pauses


class Collector:
    def __init__(self, clock=time.monotonic):
        self.clock = clock
        self.last_freeze = self.last_trim = clock()
        self.trim_wanted = False
        self.started = None
        self.collections = [0, 0, 0]
        self.max_ms = [0.0, 0.0, 0.0]
        self.total_ms = 0.0
        self.histogram = [0] * (len(BUCKETS) + 1)
        self._release = allocator.releaser()

    def install(self):
        """Take over the process's collector: thresholds, the first freeze, pause measurement."""
        gc.collect()
        gc.freeze()
        gc.set_threshold(*THRESHOLDS)
        gc.callbacks.append(self.observe)

    def uninstall(self):
        if self.observe in gc.callbacks:
            gc.callbacks.remove(self.observe)

    def observe(self, phase, info):
        if phase == "start":
            self.started = time.perf_counter()
            return
        if self.started is None:
            return
        took = (time.perf_counter() - self.started) * 1000
        self.started = None
        generation = info.get("generation", 2)
        self.collections[generation] += 1
        self.max_ms[generation] = max(self.max_ms[generation], took)
        self.total_ms += took
        self.histogram[next((i for i, bound in enumerate(BUCKETS) if took <= bound), len(BUCKETS))] += 1

    def tick(self):
        """Called by the server's background loop (every 50 ms): cheap unless a second has passed."""
        now = self.clock()
        if now - self.last_freeze >= FREEZE_EVERY:
            self.settle()
        if self.trim_wanted and now - self.last_trim >= TRIM_EVERY:
            self.trim_wanted = False
            self.last_trim = now
            if self._release is not None:
                self._release()

    def settle(self):
        """Collect what is young now and freeze the survivors: once a second (tick), and at once when a world
        was just read back (thousands of objects), so that no later collection walks the new world. Without
        it, a burst of new sandboxes (hundreds made or woken within a second) piles their objects into the
        young generations, and the next collection of generation 1 walks them all: a pause that grows with the
        sandboxes."""
        gc.collect(1)
        gc.freeze()
        self.last_freeze = self.clock()

    def release(self):
        """Much memory was let go: hand free pages back to the system at the next chance."""
        self.trim_wanted = True

    def describe(self):
        return {"collections": {f"gen{n}": count for n, count in enumerate(self.collections)},
                "max_pause_ms": {f"gen{n}": round(ms, 3) for n, ms in enumerate(self.max_ms)},
                "total_pause_ms": round(self.total_ms, 3),
                "pauses_ms_at_most": {**{str(bound): count for bound, count in zip(BUCKETS, self.histogram)},
                                      "more": self.histogram[-1]}}
