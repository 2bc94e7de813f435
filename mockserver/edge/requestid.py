"""X-Request-Id: the client's id echoed back, or one generated for the call.

A client's id is kept when it is 1 to 128 visible ASCII characters (after trimming blanks);
anything else (too long, spaces or control characters inside, non-ASCII) is replaced by a
generated id, so that a reply header or a log line never carries what the client smuggled in.
Generated ids are a random per-process prefix and a counter: unique, cheap, and never reused
across restarts.
"""

import itertools
import re
import secrets

HEADER = b"x-request-id"
LIMIT = 128
_VISIBLE = re.compile(rf"[\x21-\x7e]{{1,{LIMIT}}}")
_PREFIX = secrets.token_hex(6)
_COUNTER = itertools.count(1)


def request_id(sent):
    """The id of a call: `sent` (the header's value, str or None) if usable, else a new one."""
    if sent:
        sent = sent.strip()
        if _VISIBLE.fullmatch(sent):
            return sent
    return f"{_PREFIX}-{next(_COUNTER):08x}"


def of_scope(scope):
    """The id of an ASGI request (reads its X-Request-Id header)."""
    for name, value in scope["headers"]:
        if name == HEADER:
            return request_id(value.decode("latin-1"))
    return request_id(None)


def tagged(scope, send):
    """`send` that adds the call's X-Request-Id to the reply (control API, documents)."""
    header = (HEADER, of_scope(scope).encode())

    async def send_tagged(message):
        if message["type"] == "http.response.start":
            message["headers"] = [*message.get("headers", ()), header]
        await send(message)
    return send_tagged
