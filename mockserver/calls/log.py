"""One journaled call (`Call`), and the order a journal keeps its calls in (`CallLog`).

The newest calls (UNPACKED to UNPACKED + BLOCK - 1 of them) are kept as objects; every BLOCK calls that fall
behind the newest UNPACKED are packed into one `Block`: pickled and compressed with zstd (level 1), the
small fields filters read (HEADS) apart from the bodies and headers (BODIES). A fleet's calls repeat
themselves (the same polls, headers and replies), so a block holds a call in a small part of the bytes the
object needs, for little CPU a call (the figures, and the codecs and block sizes tried: docs/performance.md).
Reading the newest calls (`latest`, `?limit=20`) touches no block; a filter or a count over the whole journal
unpacks the HEADS of each block, and the BODIES only of blocks with a call it returns.

A block lets go of its memory only as a whole: calls given up by count from its front are skipped until
the last of them goes, and a trim by bytes gives up whole blocks.
"""

import pickle
import threading
from collections import deque
from operator import attrgetter

import orjson
import zstandard

from mockserver.calls import credentials

BLOCK = 128                     # calls packed together (fewer compress worse; more gain nothing)
UNPACKED = 32                       # the newest calls always kept as objects (a read of the last 20 unpacks nothing)
BLOCK_OVERHEAD = 200            # bytes a block costs besides its compressed bytes: the object, its operations
OVERHEAD = 480                  # bytes a call kept as an object costs besides its strings and bodies: the object,
                                # the headers of its strings, numbers and the allocator's own; set so that what
                                # is counted matches the heap bench/journal_memory.py measures (under both
                                # allocators: docs/performance.md)
_codecs = threading.local()     # a compressor and a decompressor per thread: they are not safe to share (a mock
                                # in a thread of a test process, beside another in the main thread)


def _codec():
    codec = getattr(_codecs, "pair", None)
    if codec is None:
        codec = _codecs.pair = (zstandard.ZstdCompressor(level=1), zstandard.ZstdDecompressor())
    return codec


HEADS = ("id", "at", "method", "path", "operation", "status", "duration", "rule", "request_id", "token",
         "truncated", "fault", "received")          # what filters, counts and the inspector's rows read
BODIES = ("request", "response", "reply_headers", "request_headers", "drift", "trace_id")   # the rest: read for a match
FIELDS = HEADS + BODIES


class Call:
    """One journaled call, built by position or by keyword (FIELDS). `request` is the JSON of [query, body];
    `request_headers` and `reply_headers` the headers as `name: value` lines; `response` the reply's bytes;
    `truncated` maps "body"/"response" to the size sent when that part was kept cut; `drift` is None for a call the
    mock answered,
    and for a call forwarded to the upstream (contract/proxy.py) the JSON of its drift findings, `[]` when none;
    `fault` names the network faults a scenario rule shaped the reply with (`truncate`, `reset, dribble`), None
    for a reply sent as it was made; `trace_id` the call's trace (32 hex digits) when tracing is on, else None;
    `received` the wall clock when the call came (Unix seconds; `at` is the world's clock, which a manual clock
    holds still)."""

    __slots__ = (*FIELDS, "size")

    def __init__(self, id: int, at: float, method: str, path: str, operation, status: int, duration: float,
                 rule: str | None, request_id: str | None, token: str | None, truncated: dict | None,
                 request: bytes, response: bytes, reply_headers: bytes = b"", request_headers: bytes = b"",
                 drift: bytes | None = None, fault: str | None = None, trace_id: str | None = None,
                 received: float | None = None, size: int | None = None) -> None:
        # by position or by name; `size` when the caller measured it already (the journal, on every call)
        self.id, self.at, self.method, self.path, self.operation = id, at, method, path, operation
        self.status, self.duration, self.rule, self.request_id, self.token = status, duration, rule, request_id, token
        self.request, self.response, self.truncated = request, response, truncated
        self.request_headers, self.reply_headers = request_headers, reply_headers
        self.drift, self.fault, self.trace_id, self.received = drift, fault, trace_id, received
        self.size = self.measure() if size is None else size

    def measure(self) -> int:
        """The bytes the call is counted for, kept as an object."""
        return (OVERHEAD + len(self.path) + len(self.request) + len(self.request_headers) + len(self.response)
                + len(self.reply_headers) + len(self.request_id or "") + len(self.drift or b"") + len(self.fault or "")
                + len(self.trace_id or ""))

    def fields(self) -> dict:
        """The call's fields by name (what `Call(**fields)` takes)."""
        return dict(zip(FIELDS, _fields(self), strict=True))

    def findings(self):
        """The drift findings of a forwarded call (a list), or None for a call the mock answered."""
        return None if self.drift is None else orjson.loads(self.drift)

    def parts(self):
        """(query, headers, body) as they were recorded (a cut body is the text kept), credentials replaced (by
        name and by shape: calls/credentials.py)."""
        query, body = orjson.loads(self.request)
        if body is not None and not isinstance(body, str):
            body = credentials.json_bytes(self.request, body)[1]
        return query, dict(_lines(credentials.header_lines(self.request_headers))), body

    def response_headers(self):
        """The reply's headers as (name, value) strings, in the order sent."""
        return _lines(self.reply_headers)

    @property
    def template(self):
        return self.operation.template if self.operation else None

    @property
    def operation_id(self):
        return self.operation.operation_id if self.operation else None


def _lines(block):
    """(name, value) pairs of `name: value` lines (bytes)."""
    if not block:
        return []
    return [tuple(line.split(": ", 1)) for line in block.decode("latin-1").split("\n")]


_fields, _heads, _bodies = attrgetter(*FIELDS), attrgetter(*HEADS), attrgetter(*BODIES)
OPERATION = HEADS.index("operation")                # a packed head names its operation by index in its block


def _restore(fields):
    """A call kept apart from its block, read back (see PackedCall.__reduce__)."""
    return Call(**fields)


class Block:
    """BLOCK calls packed: the fields of HEADS and of BODIES pickled apart and compressed apart, so that a
    filter or a count over the journal unpacks only the small part. Operations (shared objects of the
    compiled document) stay objects, in `operations`; a row names its own by index there."""

    __slots__ = ("heads", "bodies", "operations", "low", "high", "count", "skip", "bytes")

    def __init__(self, calls):
        operations: dict[int, tuple[int, object]] = {}   # id -> (index, operation), in the order first met
        heads = []
        for call in calls:
            head = list(_heads(call))
            head[OPERATION] = operations.setdefault(id(call.operation), (len(operations), call.operation))[0]
            heads.append(tuple(head))
        self.operations = tuple(operation for _, operation in operations.values())
        self.heads = _pack(heads)
        self.bodies = _pack([_bodies(call) for call in calls])
        self.low = min(call.id for call in calls)
        self.high = max(call.id for call in calls)
        self.count, self.skip = len(calls), 0
        self.bytes = len(self.heads) + len(self.bodies) + BLOCK_OVERHEAD

    def calls(self):
        """Its calls still kept, oldest first (new objects each time). Their HEADS are read at once, their
        BODIES the first time one of them is asked for (then for the whole block)."""
        operations, skip = self.operations, self.skip
        bodies = _Bodies(self.bodies, skip)
        calls = []
        setter = object.__setattr__
        for index, head in enumerate(_unpack(self.heads)[skip:]):
            call = PackedCall.__new__(PackedCall)
            for name, value in zip(HEADS, head, strict=True):
                setter(call, name, value)
            call.operation, call.unpacked, call.place = operations[head[OPERATION]], bodies, index
            calls.append(call)
        return calls


def _pack(rows):
    # a copy of its exact size: the compressor's bytes keep the whole buffer it wrote into (the bound of
    # the input's compressed size, about as large as the input) behind the few bytes they say they hold
    return bytes(memoryview(_codec()[0].compress(pickle.dumps(rows, pickle.HIGHEST_PROTOCOL))))


def _unpack(data):
    return pickle.loads(_codec()[1].decompress(data))


class _Bodies:
    """The BODIES of one reading of a block, unpacked when a call of it first needs them."""

    __slots__ = ("data", "skip", "rows")

    def __init__(self, data, skip):
        self.data, self.skip, self.rows = data, skip, None

    def row(self, index):
        if self.rows is None:
            self.rows = _unpack(self.data)[self.skip:]
        return self.rows[index]


class PackedCall(Call):
    """A call read back from a block: its BODIES come the first time one is read."""

    __slots__ = ("unpacked", "place")
    unpacked: _Bodies                            # declared for the type checker (mypy reads no __slots__)
    place: int

    def __getattr__(self, name):                 # only for a slot not set yet: a field of BODIES, or the size
        if name == "size":
            self.size = self.measure()
            return self.size
        if name not in BODIES:
            raise AttributeError(name)
        for field, value in zip(BODIES, self.unpacked.row(self.place), strict=True):
            object.__setattr__(self, field, value)
        return object.__getattribute__(self, name)

    def __reduce__(self):                        # kept apart from its block: as a whole Call
        return _restore, (self.fields(),)


class CallLog:
    """A journal's calls, oldest first: older ones in blocks, the newest as objects (see the module).
    `append` and the two ways of giving calls up return the bytes they add or free."""

    __slots__ = ("blocks", "recent", "length")

    def __init__(self, calls=()):
        self.blocks: deque[Block] = deque()
        self.recent: deque[Call] = deque()
        self.length = 0
        for call in calls:
            self.append(call)

    def __len__(self):
        return self.length

    def __bool__(self):
        return self.length > 0

    def append(self, call):
        self.recent.append(call)
        self.length += 1
        if len(self.recent) < BLOCK + UNPACKED:
            return call.size
        packed = [self.recent.popleft() for _ in range(BLOCK)]
        block = Block(packed)
        self.blocks.append(block)
        return call.size + block.bytes - sum(old.size for old in packed)

    def drop_oldest(self):
        """Give up the oldest call; the bytes freed (none until the last call of a block goes)."""
        self.length -= 1
        if not self.blocks:
            return self.recent.popleft().size
        block = self.blocks[0]
        block.skip += 1
        if block.skip < block.count:
            return 0
        self.blocks.popleft()
        return block.bytes

    def drop_front(self):
        """Give up the oldest block whole, or the oldest call when no block is left: (calls, bytes freed)."""
        if not self.blocks:
            return 1, self.drop_oldest()
        block = self.blocks.popleft()
        calls = block.count - block.skip
        self.length -= calls
        return calls, block.bytes

    def held(self):
        """The bytes the log is counted for: its blocks' and its unpacked calls'."""
        return sum(block.bytes for block in self.blocks) + sum(call.size for call in self.recent)

    def clear(self):
        self.blocks.clear()
        self.recent.clear()
        self.length = 0

    def __iter__(self):
        return self.after(0)                     # call ids start at 1: every block

    def after(self, ident):
        """The calls a filter on ids above `ident` must look at, oldest first: every call but those of blocks
        whose ids are all at or below it (not unpacked). Some returned may still be at or below `ident`."""
        for block in list(self.blocks):
            if block.high > ident:
                yield from block.calls()
        yield from list(self.recent)

    def __reversed__(self):
        yield from reversed(list(self.recent))
        for block in reversed(list(self.blocks)):
            yield from reversed(block.calls())

    def newest(self):
        """The call recorded last, or None."""
        if self.recent:
            return self.recent[-1]
        return self.blocks[-1].calls()[-1] if self.blocks else None

    def find(self, ident):
        """The call of that id, or None (ids are given when calls start, and calls may end in another order)."""
        for call in self.recent:
            if call.id == ident:
                return call
        for block in self.blocks:
            if block.low <= ident <= block.high:
                for call in block.calls():
                    if call.id == ident:
                        return call
        return None
