"""The change log: a change is written, and durable, before it is made; so nothing acknowledged is lost, and
nothing is acknowledged that the log does not hold.

With `--state-file PATH` the whole state is still saved every `--save-interval` seconds (statefile.py), from a
forked child. Between two saves every change goes through `commit(record, apply)`, in this order:

1. its record is appended to the log, `PATH.log.N` (framed with its length and checksum: logfile.py);
2. it is made as durable as `--durability` says: `fsync` (the default) until the disk has it, so that neither a
   kill -9 nor a crash of the machine loses it (records that arrive together share one fsync: group commit);
   `write` until the kernel has it (a kill -9 loses nothing, a crash of the machine may lose what the disk had
   not written). `off` keeps no log: a kill -9 loses what changed since the last save;
3. only then is the change made (`apply`), in the order of the log: a change that must wait for something
   (a control call reading a folder) holds back the changes logged after it until it is made.

A record is what it takes to make the change again: for an API call that is not a read, its operation, sandbox,
path, query, body, caller and clock time (ids come from the world's seeded sequence); for a control call that
is not a read, its method, path, query and body; for a webhook attempt that ended, its delivery and outcome
(`note`: written when the attempt ends, so that a restart does not send it again). A refused change (a 404 of
its handler) is logged too, and refused again when it is run again.

**When the log cannot be written** (a full disk, a quota, an I/O error): a write that fails or comes up short,
or an fsync that fails, is seen. The bytes after the last durable record are cut off again, every change
waiting on them is refused, `LogUnwritable`, and nothing of them was made: the caller answers 503 naming the
file and the cause. Meanwhile reads go on, `/_mock/health` says `degraded` with the cause, and each new change
tries again; the background loop tries too (`probe`), so the log writes again by itself once there is space.

**Segments and saves**: a save notes the position up to which the changes it holds go (`applied`: the changes
made so far are a prefix of the log); at start, the records after that position are run again in order. Each
save asks for a new segment (`rotate`, done once the current one is durable to its end), and once a save is
written the segments before its position are deleted: the log stays as short as the changes since the last
save. The log's files are private to their owner (mode 0600), as the state file: the bodies they keep hold
secret values.
"""

import asyncio
import errno
import functools
import inspect
import logging
import os
import time
from collections import deque

import orjson

from mockserver.sandboxes.logfile import MAGIC, frame, segment_paths

log = logging.getLogger("mockserver")
MODES = ("fsync", "write", "off")
PRIVATE = 0o600
PROBE_EVERY = 1.0                      # seconds between two tries of a log that cannot be written


class LogUnwritable(Exception):
    """A change that could not be made durable: it was not made. `cause` in a few words."""

    def __init__(self, file, cause):
        super().__init__(f"{file}: {cause}")
        self.file, self.cause = file, cause


def key_of(position):
    """The key a change draws its new values from: its place in the log (the same when it is run again)."""
    return f"{position[0]}:{position[1]}"


def drop_segments(path):
    """`--fresh`: the log of the world set aside goes (what it held is in the file kept as PATH.previous only
    up to that file's last save)."""
    found = segment_paths(path)
    for _, name in found:
        os.unlink(name)
    if found:
        log.warning("state file %s: --fresh: %d segment(s) of its change log deleted", path, len(found))


def _cause(error):
    if isinstance(error, OSError):
        return error.strerror or str(error)
    return str(error)


class Turns:
    """Changes are made in the order of the log. A change made at once (`apply` a plain function: an API call's
    handler) needs no turn when nothing is being made; one that awaits (`apply` a coroutine function: a control
    call) takes the turn, and the changes whose turn comes meanwhile wait for it, in order."""

    def __init__(self):
        self.busy = False
        self.waiting: deque = deque()

    async def make(self, apply):
        if not self.busy:
            if not inspect.iscoroutinefunction(apply):
                return apply()
        else:
            turn = asyncio.get_running_loop().create_future()
            self.waiting.append(turn)
            try:
                await turn
            except asyncio.CancelledError:
                if turn.done() and not turn.cancelled():
                    self._next()                    # the turn came with the cancel: handed on
                else:
                    self.waiting.remove(turn)
                raise
        self.busy = True
        try:
            result = apply()
            if asyncio.iscoroutine(result):
                result = await result
            return result
        finally:
            self._next()

    def _next(self):
        if self.waiting:
            self.waiting.popleft().set_result(None)
        else:
            self.busy = False


class ChangeLog:
    """The log of one state file (see the module). `commit` writes a change, waits until it is durable, and makes
    it; `note` writes a record of something already done; `applied` is the position a save holds up to;
    `rotate` and `drop_before` keep the log short."""

    def __init__(self, path, mode="fsync", wall=time.time):
        self.path, self.mode, self.wall = path, mode, wall
        existing = segment_paths(path)
        self.segment = (existing[-1][0] if existing else 0) + 1
        self.fd = None                         # the segment is made by its first record
        self.size = 0                          # bytes of the segment that hold whole records
        self.dirty = False                     # bytes after `size` that a failed write may have left
        self.durable = self.size               # bytes of the segment on disk (fsync) or with the kernel (write)
        self.waiters = []                      # (future, offset) of records written and not yet durable
        self.flushing = None
        self.unmade: deque = deque()           # [position, made] of records written and not yet made, in order
        self.applied = (self.segment, 0)       # the log up to here holds only changes that were made
        self.rotate_wanted = False
        self.turns = Turns()
        self.failure = None                    # (wall time, file, cause) while the log cannot be written
        self.tried_at = 0.0
        self.failed_after = 0
        self.appended = self.flushes = self.refused = 0
        self.flush_seconds = 0.0
        self.write_bytes, self.sync = os.write, os.fsync      # the two system calls (a test gives failing ones)

    @property
    def file(self):
        return f"{self.path}.log.{self.segment}"

    # ------------------------------------------------------------ a change
    async def commit(self, record, apply):
        """Write `record`, wait until it is durable, then make the change in the order of the log: `apply(key)`
        (maybe a coroutine function), `key` the record's place in the log, from which the change draws its new ids
        (world/fake.py); its result. LogUnwritable when the log cannot hold it: then nothing was made."""
        position = self._write(record)
        entry = [position, False]
        self.unmade.append(entry)
        try:
            if self.mode == "fsync" and self.durable < position[1]:
                await self._durable(position[1])
            return await self.turns.make(functools.partial(apply, key_of(position)))
        finally:
            entry[1] = True
            self._fold()

    def note(self, record):
        """Write a record of something already done (a webhook attempt): durable with the next flush; a failure
        is logged and shown, never raised."""
        try:
            position = self._write(record)
        except LogUnwritable as error:
            log.error("change log %s: a webhook attempt could not be logged (%s): it may be sent again after a "
                      "restart", error.file, error.cause)
            return
        self._done(position)
        if self.mode == "fsync" and self.flushing is None:
            self.flushing = asyncio.ensure_future(self._flush())

    def _done(self, position):
        self.unmade.append([position, True])
        self._fold()

    def _fold(self):
        while self.unmade and self.unmade[0][1]:
            self.applied = self.unmade.popleft()[0]

    # ------------------------------------------------------------ writing
    def _write(self, record):
        """Append one record; its position. Whatever a failed write left is cut off first (a record is never
        written after torn bytes)."""
        data = frame(orjson.dumps(record))
        try:
            if self.fd is None:
                self.fd = os.open(self.file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, PRIVATE)
                self.size = self.durable = os.fstat(self.fd).st_size
            if self.dirty:
                self._cut_back()
            if self.size == 0:
                data = MAGIC + data
            written = self.write_bytes(self.fd, data)
        except OSError as error:
            self._failed(error)
        if written != len(data):                # the disk filled up during it (the next one would say so)
            self._failed(OSError(errno.ENOSPC, f"{os.strerror(errno.ENOSPC)} (a write came up short: {written} of "
                                               f"{len(data)} bytes)"))
        self.size += written
        self.appended += 1
        if self.mode != "fsync":
            self.durable = self.size
            self._recovered()
        return self.segment, self.size

    def _failed(self, error):
        """A write that failed or came up short: its bytes cut off again (now, or before the next write)."""
        self.dirty = True
        try:
            self._cut_back()
        except OSError:
            pass
        self.refused += 1
        self._broken(error)
        raise LogUnwritable(self.file, _cause(error)) from None

    def _cut_back(self):
        """Cut off what lies after the last whole record (bytes a failed write left, or records a failed fsync
        took down with it)."""
        if self.fd is not None:
            os.ftruncate(self.fd, self.size)
        self.dirty = False

    def _broken(self, error):
        cause = _cause(error)
        if self.failure is None:
            log.error("change log %s: %s: changes are refused (503) until it can be written again; reads go on",
                      self.file, cause)
        self.failure = (self.failure[0] if self.failure else self.wall(), self.file, cause)
        self.tried_at = self.wall()
        self.failed_after = self.appended      # writes that worked before it: one after it, durable, ends it

    def _recovered(self):
        if self.failure is not None:
            log.warning("change log %s: written again (after: %s)", self.file, self.failure[2])
            self.failure = None

    # ------------------------------------------------------------ durability
    async def _durable(self, offset):
        waiter = asyncio.get_running_loop().create_future()
        self.waiters.append((waiter, offset))
        if self.flushing is None:
            self.flushing = asyncio.ensure_future(self._flush())
        await waiter

    async def _flush(self):
        """Group commit: every record written while an fsync runs is made durable by the next one. A failed
        fsync refuses every record after the last durable one, cut off again."""
        try:
            while self.waiters or self.durable < self.size:
                waiters, self.waiters = self.waiters, []
                target, fd = self.size, self.fd
                started = time.perf_counter()
                try:
                    await asyncio.to_thread(self.sync, fd)
                except OSError as error:
                    self._flush_failed(error, waiters)
                    continue
                self.flushes += 1
                self.flush_seconds += time.perf_counter() - started
                self.durable = max(self.durable, target)
                if self.appended > self.failed_after:
                    self._recovered()
                for waiter, _ in waiters:
                    if not waiter.done():
                        waiter.set_result(None)
                if self.rotate_wanted and self.durable == self.size and not self.waiters:
                    self._rotate_now()
        finally:
            self.flushing = None

    def _flush_failed(self, error, waiters):
        waiting = waiters + self.waiters
        self.waiters = []
        end = (self.segment, self.durable)     # the records after the last durable byte were never acknowledged:
        self.unmade = deque(entry for entry in self.unmade if entry[0] <= end)     # they go, and a save holds
        self.applied = min(self.applied, end)                                    # up to there at most
        self.size, self.dirty = self.durable, True
        try:
            self._cut_back()
        except OSError:
            pass
        self.refused += len(waiting)
        self._broken(error)
        failure = LogUnwritable(self.file, _cause(error))
        for waiter, _ in waiting:
            if not waiter.done():
                waiter.set_exception(failure)

    def probe(self):
        """Called by the background loop: while the log cannot be written, try once a second to cut off what a
        failed write left and write a record that changes nothing (and, with fsync, flush it)."""
        if self.failure is None or self.flushing is not None or self.wall() - self.tried_at < PROBE_EVERY:
            return
        self.tried_at = self.wall()
        try:
            position = self._write({"kind": "probe"})
            if self.mode == "fsync":
                self.sync(self.fd)
                self.durable = self.size
        except LogUnwritable:
            return
        except OSError as error:             # the fsync: the probe is cut off again
            self.size, self.dirty = self.durable, True
            self._broken(error)
            return
        self._done(position)
        self._recovered()

    # ------------------------------------------------------------ segments
    def rotate(self):
        """A new segment for what comes next, now when the current one is durable to its end, else as soon as
        it is (by the flush under way)."""
        if self.fd is None:
            return
        if self.flushing is None and self.durable == self.size and not self.dirty:
            self._rotate_now()
        else:
            self.rotate_wanted = True

    def _rotate_now(self):
        os.close(self.fd)
        self.fd, self.rotate_wanted = None, False
        self.segment += 1
        self.size = self.durable = 0

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    # ------------------------------------------------------------ health
    def health_problem(self):
        """Why changes are refused now, in one line, or None."""
        if self.failure is None:
            return None
        at, file, cause = self.failure
        return f"the change log {file} cannot be written ({cause}) since {_when(at)}: changes are refused (503)"

    def describe(self):
        """For /_mock/health: the mode, what a durable change costs, and a failure."""
        out = {"durability": self.mode, "promise": PROMISES[self.mode], "segment": self.segment,
               "changes_logged": self.appended, "changes_refused": self.refused, "failing": self.failure is not None,
               "problem": self.health_problem()}
        if self.mode == "fsync":
            out["flushes"] = self.flushes
            out["mean_flush_ms"] = round(self.flush_seconds / self.flushes * 1000, 3) if self.flushes else None
        return out


def _when(at):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))


PROMISES = {"fsync": "a change is on disk before its reply: neither a kill -9 nor a crash of the machine loses it",
            "write": "a change is with the kernel before its reply: a kill -9 loses none; a crash of the machine "
                     "may lose what the disk had not written",
            "off": "changes are kept by the periodic save only: a kill -9 loses those of the last save interval "
                   "and of a save in progress"}
