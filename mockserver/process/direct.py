"""The direct path's seam: a request that came whole, answered at once, without ASGI.

`serve`'s protocol (connections.py) reads every request with the parser. When a plain request's message ends
within the chunk that brought its head, and nothing before it on the connection is still being answered, the
protocol offers it to the `DirectApp` it was given when the server was built (`protocol(limits,
app)`: the app, app.py's `MockServer.answer_whole`). The app answers it through the same steps as an ASGI call,
its `Reply` written whole by the protocol, or declines it (None): the request then goes through ASGI like any
other. Nothing of ASGI is made for a request answered here: no task, no cycle, no messages.

`head(status, headers)` writes a reply's status line and headers: the one place the mock writes a head itself
(the direct path's replies, and the refusals of the connection layer: 408, 431, 503).
"""

from http import HTTPStatus
from typing import Protocol

Headers = list[tuple[bytes, bytes]]


Reply = tuple[int, Headers, bytes]    # a reply to write whole: (status, headers, body); its headers are all it
#                                      carries (Content-Length included)


class DirectApp(Protocol):
    """What the connection layer asks of the app for a request that came whole: a GET, POST, PUT, PATCH or DELETE of
    HTTP/1.1, kept alive (`method`), its request target as sent (`target`: path and query), its headers (names in
    lower case, as the parser read them) and its whole body."""

    def answer_whole(self, method: str, target: bytes, headers: Headers, body: bytes) -> Reply | None:
        """The reply, made at once (the app must not await), or None: the request goes through ASGI."""


STATUS_LINES = {status.value: b"HTTP/1.1 %d %s\r\n" % (status.value, status.phrase.encode()) for status in HTTPStatus}


def head(status, headers):
    """The status line and headers of a reply, ending in the blank line."""
    line = STATUS_LINES.get(status) or b"HTTP/1.1 %d \r\n" % status
    return b"".join((line, b"\r\n".join(map(b": ".join, headers)), b"\r\n\r\n" if headers else b"\r\n"))
