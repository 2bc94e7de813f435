"""The change log's files: how a record is framed on disk, and how the segments are read back.

A segment, `PATH.log.N`, starts with the line MAGIC; each record after it is one line

    <CRC-32 of the payload: 8 hex digits> <the payload's length in bytes> <payload: one JSON document>\\n

The length frames the record and the checksum tells a whole record from one that is not, so reading tells
three things apart (`read_log`):

- **a record**: whole, its checksum right;
- **a torn tail**: the newest segment ends in less than one whole record: a write that a stop, a crash or a full
  disk cut short. A change is acknowledged only once its record is whole (and, with `fsync`, on disk), so a
  torn tail was never acknowledged, and it is the only thing reading leaves out without a word;
- **damage**: bytes that do not read as records with whole records after them, a record whole in its length
  whose checksum does not match, or an older segment that ends in less than a record. Reading goes on at the
  next line that reads as a whole record (JSON holds no raw newline, so a line break starts every record), so
  the damage costs the records in its bytes alone; each place is a `Damage`, named by file, record and byte.

A position in the log is `(segment, offset)`: the bytes of segment `segment` up to `offset` (a record's
position is where it ends). The state file notes the position up to which a save holds the changes.
"""

import glob
import logging
import os
import zlib
from dataclasses import dataclass, field

import orjson

from mockserver.core.errors import StartupError

log = logging.getLogger("mockserver")
MAGIC = b"IDP-MOCKSERVER-CHANGES 1\n"
_HEX = frozenset(b"0123456789abcdef")
WHOLE, SHORT, BAD, CHECKSUM = "whole", "short", "bad", "checksum"


def frame(payload):
    """The bytes of one record (see the module)."""
    return b"%08x %d %s\n" % (zlib.crc32(payload), len(payload), payload)


def segment_paths(path):
    """The log's segments beside the state file at `path`, oldest first: [(number, file)]."""
    found = []
    for name in glob.glob(f"{glob.escape(path)}.log.*"):
        tail = name.rsplit(".", 1)[-1]
        if tail.isdigit():
            found.append((int(tail), name))
    return sorted(found)


@dataclass(frozen=True)
class Damage:
    """A place in a segment that does not read as whole records."""
    file: str
    record: int                  # the number of the first record it holds in its segment (1: the first)
    offset: int                  # the byte it starts at
    length: int                  # its bytes
    why: str

    def describe(self):
        return f"{self.file}: record {self.record} (bytes {self.offset}-{self.offset + self.length - 1}): {self.why}"


@dataclass
class Reading:
    """What reading the log found after a position: its records in order, each with its position; the bytes of a
    torn tail left out; the damage found (each costs the records in its bytes)."""
    records: list = field(default_factory=list)      # [((segment, offset), record)]
    torn: int = 0
    damage: list = field(default_factory=list)


def record_at(data, start):
    """(kind, payload, end) of what begins at `start`: WHOLE and the record's payload and end; SHORT when the
    bytes end before the record its header announces does; BAD when they are not a record's; CHECKSUM when a
    record whole in its length does not match its checksum."""
    size = len(data)
    if size - start < 11:                              # "xxxxxxxx 0 \n" at the least: too few bytes to say
        return (SHORT if _prefix_of_header(data, start) else BAD), None, None
    if data[start + 8] != 0x20 or not _HEX.issuperset(data[start:start + 8]):
        return BAD, None, None
    space = data.find(b" ", start + 9, start + 21)
    if space < 0:
        return (SHORT if size - start < 21 and data[start + 9:].isdigit() else BAD), None, None
    digits = data[start + 9:space]
    if not digits.isdigit():
        return BAD, None, None
    end = space + 1 + int(digits)
    if end >= size:
        return SHORT, None, None
    if data[end] != 0x0A:
        return BAD, None, None
    payload = data[space + 1:end]
    if zlib.crc32(payload) != int(data[start:start + 8], 16):
        return CHECKSUM, None, None
    return WHOLE, payload, end + 1


def _prefix_of_header(data, start):
    """The bytes from `start` to the end could begin a record (a write cut short in its header)."""
    tail = data[start:]
    head, digits = tail[:8], tail[9:]
    return _HEX.issuperset(head) and (len(tail) <= 8 or (tail[8] == 0x20 and (not digits or digits.isdigit())))


def read_segment(data, name, newest, into, number, skip=0):
    """The records of one segment's bytes after offset `skip`, added to the Reading `into`."""
    if not data:
        return                                          # made, nothing written yet
    if not data.startswith(MAGIC):
        if newest and MAGIC.startswith(data):
            into.torn += len(data)                      # the header itself was cut short
            return
        into.damage.append(Damage(name, 1, 0, len(data), "not a segment of the change log (its first line is not "
                                                         "the log's mark)"))
        return
    at, count = max(skip, len(MAGIC)), 0
    while at < len(data):
        kind, payload, end = record_at(data, at)
        count += 1
        if kind == WHOLE:
            try:
                into.records.append(((number, end), orjson.loads(payload)))
            except orjson.JSONDecodeError:              # a whole record of ours is always JSON: a bug, not a tear
                into.damage.append(Damage(name, count, at, end - at, "its checksum is right but it is not JSON"))
            at = end
            continue
        following = _next_record(data, at)
        if following is None:                           # nothing whole after it: the segment ends here
            _tail(data, name, newest, into, count, at, kind)
            return
        into.damage.append(Damage(name, count, at, following - at, _why(kind, newest)))
        at = following


def _tail(data, name, newest, into, count, at, kind):
    """The end of a segment that holds no whole record. A write cut short ends without its line break (a record's
    payload holds none, and a crash leaves a prefix or zeros), so in the newest segment what follows the last line
    break is a torn tail; whole lines before it, and anything in an older segment, are damage."""
    last = max(at, data.rfind(b"\n", at) + 1) if newest else len(data)
    if last > at:
        into.damage.append(Damage(name, count, at, last - at, _why(kind, newest)))
    into.torn += len(data) - last


def _why(kind, newest):
    if kind == CHECKSUM:
        return "the record is whole but does not match its checksum (a changed byte)"
    if kind == SHORT and not newest:
        return "the segment ends in the middle of a record, but a newer segment follows it"
    return "bytes that are not a record"


def _next_record(data, at):
    """Where the next whole record after `at` begins (at a line's start), or None."""
    line = data.find(b"\n", at)
    while 0 <= line < len(data) - 1:
        if record_at(data, line + 1)[0] == WHOLE:
            return line + 1
        line = data.find(b"\n", line + 1)
    return None


def read_log(path, after=(0, 0)):
    """The records of the log beside the state file `path` that come after the position `after`, in order."""
    reading = Reading()
    found = segment_paths(path)
    newest = found[-1][0] if found else None
    for number, name in found:
        if number < after[0]:
            continue
        with open(name, "rb") as handle:
            data = handle.read()
        read_segment(data, name, number == newest, reading, number, after[1] if number == after[0] else 0)
    return reading


def drop_before(path, segment, keep=None):
    """Delete the segments before `segment` but `keep` (a save holds their changes)."""
    for found, name in segment_paths(path):
        if found < segment and found != keep:
            try:
                os.unlink(name)
            except FileNotFoundError:
                pass


def copy_aside(damage):
    """Copies of the segments that hold damage, as FILE.damaged (a later save deletes the segments themselves);
    the copies' names."""
    kept = []
    for name in sorted({place.file for place in damage}):
        target = f"{name}.damaged"
        with open(name, "rb") as source, open(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600),
                                              "wb") as copy:
            copy.write(source.read())
        kept.append(target)
    return kept


class DamagedLog(StartupError):
    """The change log holds damage, and the start was not told to go on without it."""


POLICIES = ("stop", "skip")


def check_damage(path, damage, policy):
    """What to do with damage found at start: `stop` (the default) stops the start, naming each place and what
    to do; `skip` goes on without the records in it, one line each, the damaged segments copied aside first
    (FILE.damaged) so that the save after the start, which deletes the segments, deletes no evidence."""
    places = [place.describe() for place in damage]
    if policy != "skip":
        raise DamagedLog(
            f"state file {path}: its change log is damaged, so the changes in it after the damage cannot be trusted "
            f"to run again as they ran: {'; '.join(places)}. Nothing was changed. To start without the records in "
            "the damaged bytes (the rest of the log runs again), start with --damaged-log skip (the damaged "
            "segments are kept as FILE.damaged); to start from the last save alone, move the log files "
            f"({path}.log.*) away")
    kept = copy_aside(damage)
    for place in places:
        log.error("state file %s: change log damaged, its records there left out (--damaged-log skip): %s", path, place)
    log.error("state file %s: the damaged segments were copied to %s", path, ", ".join(kept))
