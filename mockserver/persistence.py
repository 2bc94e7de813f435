"""The state file: every sandbox and snapshot of a server, kept across restarts.

Layout: a magic line, the format version and the version of mockserver that wrote it, the
SHA-256 and length of the payload, then the payload (world.dumps of the sandboxes and
snapshots: Python objects of this version of the code, so another version does not read
them). A file that is not ours, of another version, truncated or corrupt is refused whole
with the problem named, and never written over: `StateFileError`, which stops the start.

Saving is atomic (a temporary file in the same folder, fsync, rename, fsync of the folder).
The periodic save runs in a forked child that pickles the copy-on-write image of the
process, so the event loop pauses only for the fork, whatever the size of the state.
At shutdown the last save runs in the server process itself.
"""

import hashlib
import os
import struct
import time

from . import __version__
from .world import dumps, loads

MAGIC = b"IDP-MOCKSERVER-STATE\n"
VERSION = 1
HEADER = struct.Struct(">I16s32sQ")        # format version, mockserver version, sha256 of the payload, length


class StateFileError(Exception):
    def __init__(self, path, problem):
        super().__init__(f"state file {path}: {problem} (it was left untouched; move it away or delete it "
                         f"to start afresh from the fixtures)")


def encode(server):
    payload = dumps({"sandboxes": list(server.sandboxes), "snapshots": list(server.snapshots.values())},
                    server.shared)
    return MAGIC + HEADER.pack(VERSION, __version__.encode(), hashlib.sha256(payload).digest(), len(payload)) + payload


def decode(data, path, shared):
    if not data.startswith(MAGIC):
        raise StateFileError(path, "not a mockserver state file (its first line is not the state file's mark)")
    head = data[len(MAGIC):len(MAGIC) + HEADER.size]
    if len(head) < HEADER.size:
        raise StateFileError(path, "truncated: the header is incomplete")
    version, writer, digest, length = HEADER.unpack(head)
    if version != VERSION:
        raise StateFileError(path, f"format version {version}, but this mockserver reads version {VERSION}")
    writer = writer.rstrip(b"\0").decode("ascii", "replace")
    if writer != __version__:
        raise StateFileError(path, f"written by mockserver {writer}, but this is mockserver {__version__}")
    payload = data[len(MAGIC) + HEADER.size:]
    if len(payload) != length:
        raise StateFileError(path, f"truncated: {len(payload)} of {length} payload bytes")
    if hashlib.sha256(payload).digest() != digest:
        raise StateFileError(path, "corrupt: the payload does not match its checksum")
    try:
        return loads(payload, shared)
    except Exception as error:              # a checksum-valid payload this code cannot read
        raise StateFileError(path, f"cannot be read by this version of mockserver: {error}") from None


def write_atomically(path, data):
    folder = os.path.dirname(os.path.abspath(path))
    temporary = os.path.join(folder, f".{os.path.basename(path)}.{os.getpid()}.tmp")
    with open(temporary, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def restore(server, path):
    """Put the file's sandboxes and snapshots into the server; False when there is no file."""
    if not os.path.exists(path):
        return False
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as error:
        raise StateFileError(path, error.strerror or str(error)) from None
    state = decode(data, path, server.shared)
    now = server.sandboxes.wall()
    for box in server.sandboxes.live.values():
        box.retire()                         # the worlds made at start give way to the saved ones
    server.sandboxes.live.clear()
    for box in state["sandboxes"]:
        box.last_used = now                  # the time the server was down does not count as idle
        server.sandboxes.live[box.name] = box
    server.sandboxes.get_quietly("default")
    server.snapshots = {snap.name: snap for snap in state["snapshots"]}
    return True


class Saver:
    """Saves the state every `interval` seconds when something changed, and at shutdown."""

    def __init__(self, server, path, interval, clock=time.monotonic):
        self.server = server
        self.path = path
        self.interval = interval
        self.clock = clock
        self.saved_changes = server.changes
        self.last = clock()
        self.child = None
        self.saves = 0

    def tick(self):
        """Called often by the server's background loop; cheap when there is nothing to do."""
        if self.child is not None:
            pid, status = os.waitpid(self.child, os.WNOHANG)
            if pid == 0:
                return                       # the previous save is still being written
            self.child = None
            if os.waitstatus_to_exitcode(status) == 0:
                self.saves += 1
        if self.server.changes == self.saved_changes or self.clock() - self.last < self.interval:
            return
        self.last = self.clock()
        self.saved_changes = self.server.changes
        pid = os.fork()
        if pid == 0:                         # the child: write the image it was forked with, then leave
            code = 0
            try:
                write_atomically(self.path, encode(self.server))
            except BaseException:
                code = 1
            os._exit(code)
        self.child = pid

    def final(self):
        """The last save, at shutdown, in this process (after any save still being written)."""
        if self.child is not None:
            os.waitpid(self.child, 0)
            self.child = None
        write_atomically(self.path, encode(self.server))
        self.saves += 1
