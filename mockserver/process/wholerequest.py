"""A chunk that is exactly one plain request, read in one step: what the direct path (connections.py) needs of it.

The parser (httptools) reports a request through a Python callback per step: the message's begin (where uvicorn
builds an ASGI scope), the target, each header, the head's end, the body, the message's end. For a request that
will be answered at once, without ASGI, most of that is not needed. `whole_request(chunk, limit)` reads a chunk
that holds exactly one request, its head and its whole body, with one regular expression and one split, and
returns `(method, target, headers, body)` as those callbacks would have left them: header names in lower case,
values without the blanks before them (as the parser gives them: blanks after a value stay). A client sends the
same head again and again (a poll, a loop of creates): a head that comes a second time is cached, so that reading
it again is a lookup. Why both stay (a status read stays under the floor's cost with them): docs/performance.md.

It reads only what it is sure of, and leaves everything else (None) to the parser, which answers it as before:

- the request line `METHOD SP target SP HTTP/1.1` with a method of DIRECT_METHODS and a target of visible ASCII
  starting with `/`;
- header lines `name:value` of a token name and a value of visible ASCII, spaces and tabs (no folded lines, no
  bytes above 0x7e), the head within `limit` bytes;
- no Transfer-Encoding, Upgrade or Expect; no Connection but `keep-alive`; at most one Content-Length, of digits,
  and exactly that many bytes after the head (none without one): a chunk holding more than one request, or less
  than one, is the parser's.

Each of these is a request the parser accepts alike (tests/process/test_wholerequest.py compares the two on
plain and on malformed heads).
"""

import re

DIRECT_METHODS = (b"GET", b"POST", b"PUT", b"PATCH", b"DELETE")   # requests that may be answered without ASGI
_HEAD = re.compile(rb"(GET|POST|PUT|PATCH|DELETE) (/[!-~]*) HTTP/1\.1\r\n"
                   rb"((?:[!#$%&'*+.^_`|~0-9A-Za-z-]+:[\t -~]*\r\n)*)\r\n")
# headers that decide how the message is framed or whether the connection goes on: read here, not just passed on
_FRAMING = frozenset({b"content-length", b"transfer-encoding", b"connection", b"upgrade", b"expect"})


CACHED = 64                     # heads cached as read: a client that repeats a request (a poll, a loop of creates)
CACHED_BELOW = 4096             # sends the same head again, and reading it is then one lookup; a head of this many
                                # bytes or more is read each time, not cached
SEEN = 256                      # heads seen once, by hash: a head is cached the second time it comes
_cache: dict[bytes, tuple] = {}  # head -> what `_read` made of it
_seen: set[int] = set()


def whole_request(chunk, limit):
    """(method, target, headers, body) of a chunk that is exactly one plain request (see the module), else None.
    `method` is a str, `target` the bytes of the request line, `headers` (name, value) byte pairs: a tuple, the same
    for every request of that head, when the head is cached (not to be changed); else a list of this request's
    own."""
    end = chunk.find(b"\r\n\r\n") + 4
    if end < 4 or end > limit:
        return None
    head = chunk[:end]
    read = _cache.get(head)                  # what is read of a head depends on its bytes alone
    if read is None:
        read = _read(head)
        if read is None:
            return None
        if end < CACHED_BELOW:
            _remember(head, read)
    if len(chunk) - end != read[3]:
        return None
    return read[0], read[1], read[2], chunk[end:]


def _remember(head, read):
    """Cache a head read the second time it comes. A head seen once leaves its hash only: a fleet of clients that
    each send a head once (another sandbox, another id) gains nothing by it."""
    key = hash(head)
    if key not in _seen:
        if len(_seen) >= SEEN:
            _seen.clear()
        _seen.add(key)
        return
    if len(_cache) >= CACHED:                # bounded: a client of ever new paths does not grow it
        _cache.clear()
    _cache[head] = (read[0], read[1], tuple(read[2]), read[3])


def _read(head):
    """(method, target, headers, length of the body) of a whole head, or None when it is the parser's."""
    found = _HEAD.fullmatch(head)
    if found is None:
        return None
    method, target, block = found.groups()
    headers = []
    length = None
    for line in block.split(b"\r\n")[:-1]:
        name, _, value = line.partition(b":")
        name = name.lower()
        value = value.lstrip(b" \t")
        if name in _FRAMING:
            if name == b"content-length" and length is None and value.isdigit():
                length = int(value)
            elif name != b"connection" or value.lower() != b"keep-alive":
                return None
        headers.append((name, value))
    return method.decode("ascii"), target, headers, length or 0
