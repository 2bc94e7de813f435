"""The change log: every change the mock acknowledges is durable before its reply leaves, so that a kill -9
loses none.

With `--state-file PATH` the whole state is still saved every `--save-interval` seconds (statefile.py), from a
forked child. Between two saves, each acknowledged change is appended to the log, `PATH.log.N`, one JSON line
a change, before the reply is sent:

- an API call whose handler ran and that is not a read (GET, HEAD, OPTIONS): its operation, sandbox, path,
  query, body, the caller (token name, organization, scopes), the clock time it ran at and the scenario
  effects that shaped it, enough to run the handler again to the same result (ids come from the world's
  seeded sequence, time from the record);
- a control call that answered 2xx and is not a read: its method, path, query and body, to run again.

`--durability` says how far a change is written before its reply: `fsync` (the default) until the disk has
it, so that neither a kill -9 nor a crash of the machine loses it (changes that arrive together share one
fsync: group commit); `write` until the kernel has it: a kill -9 of the server loses nothing, a crash of the
machine may lose what the disk had not yet written; `off` keeps no log: a kill -9 loses what changed since
the last save (at most the save interval, plus the time a save takes).

Before each save the log moves on to a new segment; the save records the last segment it holds, and once it
is written the segments it holds are deleted (the log stays as short as the changes since the last save). At
start, after the state file is read, the records of the segments it does not hold are run again in order.
A record cut short by the kill (the last line, never acknowledged) is left out. The log files are private to
their owner (mode 0600), as the state file: the bodies they keep hold secret values.
"""

import asyncio
import glob
import logging
import os
import threading
import time

import orjson

log = logging.getLogger("mockserver")
MODES = ("fsync", "write", "off")
PRIVATE = 0o600


def segment_paths(path):
    """The log's segments beside the state file at `path`, oldest first: [(number, file)]."""
    found = []
    for name in glob.glob(f"{glob.escape(path)}.log.*"):
        tail = name.rsplit(".", 1)[-1]
        if tail.isdigit():
            found.append((int(tail), name))
    return sorted(found)


def read_records(path, after=0):
    """The records of the segments numbered above `after`, in order; a line that does not parse ends its
    segment (the write a kill cut short: never acknowledged) and is counted in the second value."""
    records, cut = [], 0
    for number, name in segment_paths(path):
        if number <= after:
            continue
        with open(name, "rb") as handle:
            for line in handle:
                try:
                    records.append(orjson.loads(line))
                except orjson.JSONDecodeError:
                    cut += 1
                    break
    return records, cut


def drop_segments(path):
    """`--fresh`: the log of the world set aside goes (what it held is in the file kept as PATH.previous only
    up to that file's last save)."""
    found = segment_paths(path)
    for _, name in found:
        os.unlink(name)
    if found:
        log.warning("state file %s: --fresh: %d segment(s) of its change log deleted", path, len(found))


class ChangeLog:
    """The log of one state file (see the module). `append` returns once the record is as durable as the mode
    asks; `rotate` starts a new segment and says the number of the last closed one; `drop_through(n)` deletes
    the segments a save holds."""

    def __init__(self, path, mode="fsync"):
        self.path, self.mode = path, mode
        existing = segment_paths(path)
        self.segment = (existing[-1][0] if existing else 0) + 1
        self.fd = self._open(self.segment)
        self.lock = threading.Lock()           # a flush in a worker thread, and a rotation here, never cross
        self.waiters = []                      # futures of the records written and not yet flushed
        self.flushing = None
        self.appended = self.flushes = 0
        self.flush_seconds = 0.0

    def _open(self, number):
        return os.open(f"{self.path}.log.{number}", os.O_WRONLY | os.O_CREAT | os.O_APPEND, PRIVATE)

    async def append(self, record):
        os.write(self.fd, orjson.dumps(record) + b"\n")      # the kernel has it once this returns
        self.appended += 1
        if self.mode != "fsync":
            return
        waiter = asyncio.get_running_loop().create_future()
        self.waiters.append(waiter)
        if self.flushing is None:
            self.flushing = asyncio.ensure_future(self._flush())
        await waiter

    async def _flush(self):
        """Group commit: every record written while a flush ran is made durable by the next one."""
        try:
            while self.waiters:
                waiters, self.waiters = self.waiters, []
                started = time.perf_counter()
                try:
                    await asyncio.to_thread(self._fsync)
                except OSError as error:
                    for waiter in waiters:
                        waiter.set_exception(error)
                    continue
                self.flushes += 1
                self.flush_seconds += time.perf_counter() - started
                for waiter in waiters:
                    if not waiter.done():
                        waiter.set_result(None)
        finally:
            self.flushing = None

    def _fsync(self):
        with self.lock:
            os.fsync(self.fd)

    def rotate(self):
        """A new segment for what comes next; the number of the segment just closed (durable)."""
        with self.lock:
            if self.mode == "fsync":
                os.fsync(self.fd)
            os.close(self.fd)
            closed, self.segment = self.segment, self.segment + 1
            self.fd = self._open(self.segment)
        return closed

    def drop_through(self, number):
        """Delete the segments up to `number` (a save holds their changes)."""
        for found, name in segment_paths(self.path):
            if found <= number and found != self.segment:
                try:
                    os.unlink(name)
                except FileNotFoundError:
                    pass

    def close(self):
        with self.lock:
            os.close(self.fd)

    def describe(self):
        """For /_mock/health: the mode, and what a durable change costs."""
        out = {"durability": self.mode, "promise": PROMISES[self.mode], "segment": self.segment,
               "changes_logged": self.appended}
        if self.mode == "fsync":
            out["flushes"] = self.flushes
            out["mean_flush_ms"] = round(self.flush_seconds / self.flushes * 1000, 3) if self.flushes else None
        return out


PROMISES = {"fsync": "a change is on disk before its reply: neither a kill -9 nor a crash of the machine loses it",
            "write": "a change is with the kernel before its reply: a kill -9 loses none; a crash of the machine "
                     "may lose what the disk had not written",
            "off": "changes are kept by the periodic save only: a kill -9 loses those of the last save interval "
                   "and of a save in progress"}
