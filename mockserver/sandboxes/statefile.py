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

Nothing is lost quietly: a state file whose folder is missing or not writable stops the start
(`StateFolderError`); a failed save is logged with its reason and tried again at the next
interval, and `Saver.describe()` (in /_mock/health) shows the last save and the last error; a
failed write leaves no temporary file behind, and temporary files of a saving process that was
killed are removed (when it is reaped, or at the next start); a saving child exits when the
server dies (Linux: it asks the kernel for a signal then); a failed last save at shutdown is
one line in the log and `final_error`, never a traceback; `--fresh` keeps the world it sets aside
(PATH.previous, the ones before as PATH.previous.1 and .2) and names the oldest when it deletes it.
"""

import ctypes
import fcntl
import glob
import hashlib
import hmac
import logging
import os
import secrets
import signal
import struct
import time

from mockserver.core.errors import StartupError
from mockserver.core.version import __version__
from mockserver.sandboxes.logfile import drop_before
from mockserver.world.frozen import dumps, loads

log = logging.getLogger("mockserver")
MAGIC = b"IDP-MOCKSERVER-STATE\n"
VERSION = 6                                # 6: the change log's position (5: journaled calls keep a trace id)
READS = (VERSION,)                         # a state file of an earlier format is refused in one line
HEADER = struct.Struct(">I16s32sQ")        # format version, mockserver version, HMAC-SHA256, payload length
SIGNED = struct.Struct(">I16sQ")           # what of the header the code covers (with the magic and payload)
KEY_BYTES = 32
PRIVATE = 0o600                            # the state file and its key: readable by their owner only


class StateFileError(StartupError):
    """The state file cannot be read back: the mock does not start."""

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


class StateFileInUse(StartupError):
    """Another server holds the state file: two servers writing one file would lose each other's changes."""


def hold(path):
    """Take the state file's lock, PATH.lock (an exclusive flock, which the system lets go of when the process
    ends, however it ends), for as long as the returned descriptor stays open; the lock file says whose it is.
    StateFileInUse, naming the holder's pid, when another process holds it."""
    where = f"{path}.lock"
    try:
        descriptor = os.open(where, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), PRIVATE)
    except OSError as error:
        raise StateFolderError(path, f"its lock file {where} cannot be made ({error.strerror or error})") from None
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holder = os.pread(descriptor, 200, 0).decode("utf-8", "replace").strip() or "a process"
        os.close(descriptor)
        raise StateFileInUse(f"state file {path} is in use by another mockserver ({holder}, lock {where}): two "
                             "servers on one state file lose each other's changes; stop that one, or give this one "
                             "another --state-file") from None
    os.ftruncate(descriptor, 0)
    os.pwrite(descriptor, f"pid {os.getpid()}".encode(), 0)
    return descriptor


class StateFolderError(StartupError):
    """The state file cannot be kept where it was asked to be kept: the mock does not start."""

    def __init__(self, path, problem):
        super().__init__(f"state file {path}: {problem}; every save would fail, so the mock does not start "
                         f"(create the folder or make it writable, or choose another --state-file)")


def encode(server):
    payload = dumps({"sandboxes": list(server.sandboxes), "snapshots": list(server.snapshots.values()),
                     "log_upto": server.log_upto}, server.shared)
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
    if version not in READS:
        raise StateFileError(path, f"format version {version}, but this mockserver reads versions "
                                   f"{', '.join(map(str, READS))}")
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


def temporary_path(path, pid=None):
    """The temporary file a process writes before it renames it over the state file."""
    folder = os.path.dirname(os.path.abspath(path))
    return os.path.join(folder, f".{os.path.basename(path)}.{os.getpid() if pid is None else pid}.tmp")


def write_atomically(path, data):
    folder = os.path.dirname(os.path.abspath(path))
    temporary = temporary_path(path)
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


def save(path, data):
    """write_atomically, and when it fails, no temporary file left behind (the error goes on up)."""
    try:
        write_atomically(path, data)
    except BaseException:
        _remove(temporary_path(path))
        raise


def _remove(path):
    try:
        os.unlink(path)
    except OSError:
        pass


def reason(error):
    """An error of a save in a few words: 'No space left on device', 'Permission denied: /x/.s.tmp'."""
    if isinstance(error, OSError) and error.strerror:
        return f"{error.strerror}: {error.filename}" if error.filename else error.strerror
    return f"{type(error).__name__}: {error}"


def prepare(path):
    """Before the start: the state file's folder exists and takes a file (else StateFolderError), and
    temporary files that saving processes of an earlier run left behind are removed."""
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise StateFolderError(path, "it is a folder; give the path of a file in it")
    if os.path.exists(path) and not os.path.isfile(path):       # a FIFO would hang the start, a device be overwritten
        raise StateFolderError(path, "it is not a regular file (a FIFO, socket or device); give the path of a file")
    if not os.path.isdir(folder):
        problem = "does not exist" if not os.path.exists(folder) else "is not a folder"
        raise StateFolderError(path, f"its folder {folder} {problem}")
    refused = refuses_files(temporary_path(path) + ".probe")
    if refused:
        raise StateFolderError(path, f"its folder {folder} is not writable ({refused})")
    for stale in glob.glob(glob.escape(temporary_path(path, "")[:-len(".tmp")]) + "*.tmp"):
        pid = stale[:-len(".tmp")].rsplit(".", 1)[-1]
        if pid.isdigit() and not _alive(int(pid)):
            _remove(stale)


def refuses_files(probe):
    """Why a new file cannot be made at the path `probe` (one is made there and removed), or None when it can."""
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        os.unlink(probe)
    except OSError as error:
        return error.strerror or str(error)
    return None


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


ASIDE_SLOTS = 3                             # --fresh keeps this many set-aside worlds: PATH.previous, .previous.1, .2


def aside_paths(path):
    """Where `--fresh` keeps the worlds it set aside, newest first: PATH.previous, PATH.previous.1, ..."""
    return [f"{path}.previous"] + [f"{path}.previous.{number}" for number in range(1, ASIDE_SLOTS)]


def set_aside(path):
    """`--fresh`: the state file is kept as PATH.previous, and the start is from the fixtures. Worlds set aside
    before move one place down (PATH.previous -> PATH.previous.1 ...), so a second `--fresh` does not write over
    the first one's; at most ASIDE_SLOTS are kept, and the oldest, when one must go, is deleted with a log line
    naming it (and when it was saved). Returns the path the file was kept as (None without a file)."""
    if not os.path.exists(path):
        return None
    slots = aside_paths(path)
    free = next((index for index, slot in enumerate(slots) if not os.path.lexists(slot)), None)
    deleted = None
    if free is None:                         # every place taken: the oldest goes
        free = len(slots) - 1
        try:
            saved = _when(os.stat(slots[free]).st_mtime)
        except OSError:
            saved = None
        os.unlink(slots[free])
        deleted = f"{slots[free]}" + (f" (saved {saved})" if saved else "")
    for index in range(free, 0, -1):
        os.replace(slots[index - 1], slots[index])
    os.replace(path, slots[0])
    if free:
        moved = ", ".join(f"{slots[index - 1]} -> {slots[index]}" for index in range(free, 0, -1))
        log.warning("state file %s: --fresh: kept as %s; the worlds set aside before moved down (%s)%s", path,
                    slots[0], moved, f"; the oldest, {deleted}, was deleted (--fresh keeps the last {ASIDE_SLOTS})"
                    if deleted else "")
    return slots[0]


def restore(server, path):
    """Put the file's sandboxes and snapshots into the server; False when there is no file. The position in the
    change log up to which the file holds the changes becomes `server.log_upto` (changelog.py)."""
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
        if not box.asleep:                   # saved by a server that traced or not: this one's tracer (or None)
            box.rt.tracer = server.shared.tracer
            box.rt.keeper = server.shared.keeper
        server.sandboxes.live[box.name] = box
    server.sandboxes.get_quietly("default")
    server.snapshots = {snap.name: snap for snap in state["snapshots"]}
    server.log_upto = tuple(state["log_upto"])
    return True


class Saver:
    """Saves the state every `interval` seconds when something changed, and at shutdown. A save that
    failed is logged and tried again at the next interval; `describe()` says how saving goes."""

    def __init__(self, server, path, interval, clock=time.monotonic, wall=time.time):
        self.server = server
        self.path = path
        self.interval = interval
        self.clock = clock
        self.wall = wall
        self.saved_changes = server.changes
        self.last = clock()
        self.child = None                    # (pid, read end of its pipe, changes it saves)
        self.saves = 0
        self.failures = 0                    # saves failed since the last one that worked
        self.last_saved_at = None            # wall time of the last save that worked
        self.last_error = None               # (wall time, reason) of the last failed save
        self.final_error = None              # the reason the save at shutdown failed

    def tick(self):
        """Called often by the server's background loop; cheap when there is nothing to do."""
        if self.child is not None:
            pid, status = os.waitpid(self.child[0], os.WNOHANG)
            if pid == 0:
                return                       # the previous save is still being written
            self._reaped(status)
        if self.server.changes == self.saved_changes or self.clock() - self.last < self.interval:
            return
        self.last = self.clock()
        log_upto = self._held()
        parent = os.getpid()
        read, write = os.pipe()
        try:
            pid = os.fork()
        except OSError as error:
            os.close(read)
            os.close(write)
            self._failed(f"cannot start the saving process: {reason(error)}")
            return
        if pid == 0:                         # the child: write the image it was forked with, then leave
            os.close(read)
            _save_in_child(self.path, self.server, write, parent)
        os.close(write)
        self.child = (pid, read, self.server.changes, log_upto)

    def _held(self):
        """The position in the change log up to which the save about to be made holds the changes (every change
        made so far: changelog.py), noted in the server; the log asked to move on to a new segment, so that the
        segments before can go once the save is written."""
        log = self.server.changelog
        if log is not None:
            self.server.log_upto = log.applied
            log.rotate()
        return self.server.log_upto

    def _reaped(self, status):
        pid, read, changes, log_upto = self.child
        self.child = None
        with os.fdopen(read, "rb") as pipe:
            said = pipe.read().decode("utf-8", "replace").strip()
        code = os.waitstatus_to_exitcode(status)
        if code == 0:
            self._saved(changes, log_upto)
            return
        _remove(temporary_path(self.path, pid))      # a child killed while writing leaves its file
        if not said:
            said = f"the saving process was killed by signal {-code}" if code < 0 else f"it exited with {code}"
        self._failed(said)

    def _saved(self, changes, log_upto):
        keep = self.server.changelog.segment if self.server.changelog is not None else None
        drop_before(self.path, log_upto[0], keep)    # the save holds them: the log keeps only what came after
        if self.failures:
            log.warning("state file %s: saved again, after %d failed save(s)", self.path, self.failures)
        self.saved_changes = changes
        self.saves += 1
        self.failures = 0
        self.last_saved_at = self.wall()

    def _failed(self, said):
        self.failures += 1
        self.last_error = (self.wall(), said)
        log.error("state file %s: saving failed (%s); trying again in %g s", self.path, said, self.interval)

    def final(self):
        """The last save, at shutdown, in this process (after any save still being written). A failure is
        one line in the log and `final_error`: the caller decides the exit status."""
        if self.child is not None:
            _, status = os.waitpid(self.child[0], 0)
            self._reaped(status)
        log_upto = self._held()
        try:
            save(self.path, encode(self.server))
        except Exception as error:           # one clear line, never a traceback at the stop
            self.final_error = reason(error)
            log.error("state file %s: the last save failed (%s); changes since %s are lost", self.path,
                      self.final_error, _when(self.last_saved_at) or "the start")
            return False
        self._saved(self.server.changes, log_upto)
        return True

    def health_problem(self):
        """Why saving fails now, in one line, or None."""
        if not self.failures:
            return None
        return (f"the state file {self.path} could not be saved ({self.last_error[1]}), {self.failures} time(s) in a "
                f"row; tried again every {self.interval:g} s")

    def describe(self):
        """How saving goes, for /_mock/health: `degraded` while the last save failed."""
        failed_at, said = self.last_error or (None, None)
        return {"path": os.path.abspath(self.path), "saves": self.saves, "last_saved_at": _when(self.last_saved_at),
                "failing": self.failures > 0, "failed_saves": self.failures,
                "unsaved_changes": self.server.changes != self.saved_changes or self.child is not None,
                "last_error": said, "last_error_at": _when(failed_at), "interval_seconds": self.interval}


def _when(at):
    return None if at is None else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))


PR_SET_PDEATHSIG = 1


def _save_in_child(path, server, pipe, parent):
    """The forked saving process: it dies with the server (SIGKILL, which the kernel sends when the server
    ends, on Linux; elsewhere it checks once that the server is still there; what it leaves is removed at
    the next start), writes the state, says why it failed through `pipe`, and leaves without running
    anything of the server's."""
    code = 0
    try:
        for number in (signal.SIGTERM, signal.SIGINT):    # not the server's handlers: a stop ends it at once
            signal.signal(number, signal.SIG_DFL)
        try:
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):               # not Linux: the check below is all there is
            pass
        if os.getppid() != parent:
            os._exit(1)                                  # the server died before the signal was asked for
        save(path, encode(server))
    except BaseException as error:
        code = 1
        try:
            os.write(pipe, reason(error).encode("utf-8", "replace")[:4000])
        except OSError:
            pass
    os._exit(code)
