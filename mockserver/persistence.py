"""The state file: every sandbox and snapshot of a server, kept across restarts.

Layout: a magic line, the format version and the version of mockserver that wrote it, an
authentication code and the length of the payload, then the payload (world.dumps of the
sandboxes and snapshots: Python objects of this version of the code, so another version does
not read them). A file that is not ours, of another version, truncated, corrupt or altered is
refused whole with the problem named, and never written over: `StateFileError`, which stops
the start.

The payload is pickled, and reading a pickle can run code: so the file is authenticated. The
code is an HMAC-SHA256 of the header and payload with a key of 32 random bytes kept beside the
file (`PATH.key`, mode 0600, made at the first save); a file whose code does not match its key,
or whose key is missing or readable by others, is refused before a byte of it is unpickled.
The file itself is written with mode 0600: it holds every secret of every sandbox.

Saving is atomic (a temporary file in the same folder, fsync, rename, fsync of the folder).
The periodic save runs in a forked child that pickles the copy-on-write image of the
process, so the event loop pauses only for the fork, whatever the size of the state.
At shutdown the last save runs in the server process itself.
"""

import hashlib
import hmac
import os
import secrets
import struct
import time

from . import __version__
from .world import dumps, loads

MAGIC = b"IDP-MOCKSERVER-STATE\n"
VERSION = 2
HEADER = struct.Struct(">I16s32sQ")        # format version, mockserver version, HMAC-SHA256, payload length
SIGNED = struct.Struct(">I16sQ")           # what of the header the code covers (with the magic and payload)
KEY_BYTES = 32
PRIVATE = 0o600                            # the state file and its key: readable by their owner only


class StateFileError(Exception):
    def __init__(self, path, problem):
        super().__init__(f"state file {path}: {problem} (it was left untouched; move it away or delete it "
                         f"to start afresh from the fixtures)")


def key_path(path):
    return f"{path}.key"


def key_for(path, create=False):
    """The key of the state file at `path`, read from beside it; made (mode 0600) when missing and `create`."""
    where = key_path(path)
    try:
        descriptor = os.open(where, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        if not create:
            raise StateFileError(path, f"its key file {where} is missing, so the file cannot be authenticated"
                                 ) from None
        return _new_key(where)
    except OSError as error:
        raise StateFileError(path, f"its key file {where} cannot be read: {error.strerror or error}") from None
    with os.fdopen(descriptor, "rb") as handle:
        if os.fstat(descriptor).st_mode & 0o077:
            raise StateFileError(path, f"its key file {where} may be read by other users: chmod 600 it, or "
                                       "delete it with the state file")
        text = handle.read(4 * KEY_BYTES)
    try:
        key = bytes.fromhex(text.decode("ascii").strip())
    except (UnicodeDecodeError, ValueError):
        key = b""
    if len(key) != KEY_BYTES:
        raise StateFileError(path, f"its key file {where} does not hold a key ({2 * KEY_BYTES} hex digits)")
    return key


def _new_key(where):
    key = secrets.token_bytes(KEY_BYTES)
    descriptor = os.open(where, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(key.hex() + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    return key


def _code(key, version, writer, payload):
    return hmac.new(key, MAGIC + SIGNED.pack(version, writer, len(payload)) + payload, hashlib.sha256).digest()


def encode(server):
    payload = dumps({"sandboxes": list(server.sandboxes), "snapshots": list(server.snapshots.values())},
                    server.shared)
    writer = __version__.encode()
    code = _code(key_for(server.settings.state_file, create=True), VERSION, writer, payload)
    return MAGIC + HEADER.pack(VERSION, writer, code, len(payload)) + payload


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
    if not hmac.compare_digest(_code(key_for(path), version, head[4:20], payload), digest):
        raise StateFileError(path, f"corrupt or altered: it does not match its authentication code (with the key "
                                   f"in {key_path(path)})")
    try:
        return loads(payload, shared)
    except Exception as error:              # a checksum-valid payload this code cannot read
        raise StateFileError(path, f"cannot be read by this version of mockserver: {error}") from None


def write_atomically(path, data):
    folder = os.path.dirname(os.path.abspath(path))
    temporary = os.path.join(folder, f".{os.path.basename(path)}.{os.getpid()}.tmp")
    with os.fdopen(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE), "wb") as handle:
        os.fchmod(handle.fileno(), PRIVATE)      # also when an old temporary file was there
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
