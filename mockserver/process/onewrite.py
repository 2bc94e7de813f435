"""A reply written to its connection in one piece: head and body together.

uvicorn writes a reply's status line and headers when the app sends `http.response.start`, then its body
when the app sends `http.response.body`: two writes, and on a connection with nothing waiting to be sent,
two system calls and two packets for a reply of a few hundred bytes. `OneWrite` holds the head until the
first body message comes (the ASGI specification has the server wait for it before it sends anything) and
writes both at once. The head is still made and checked by uvicorn's own code, unchanged.

The protocol of `serve` (process/connections.py) makes each request's cycle of this class. A reply in pieces
sends its head with the first piece. What is not the common case (a chunked reply, a reply to HEAD, an access
log, a client gone or not reading) is left to uvicorn as it is, after the held head was written.
"""

from uvicorn.protocols.http.httptools_impl import RequestResponseCycle

_send = RequestResponseCycle.send


class _Holder:
    """Stands in for the transport while uvicorn writes a head: keeps the bytes instead."""

    __slots__ = ("data",)

    def __init__(self):
        self.data = None

    def write(self, data):
        self.data = data


_HOLDER = _Holder()      # one for the process: a head is made without an await in between


class OneWrite(RequestResponseCycle):
    """uvicorn's request-response cycle, but the head of a reply leaves with its body."""

    held = None          # the head made and not written yet

    async def send(self, message):
        held = self.held
        if held is not None:
            self.held = None
            if (message["type"] == "http.response.body" and not self.chunked_encoding and not self.disconnected
                    and not self.flow.write_paused and self.scope["method"] != "HEAD"
                    and len(body := message.get("body", b"")) <= self.expected_content_length):
                self.expected_content_length -= len(body)
                self.transport.write(held + body)
                if not message.get("more_body", False):
                    self._complete()
                return
            if not self.disconnected:
                self.transport.write(held)
            await _send(self, message)
            return
        if (self.response_started or self.access_log or self.disconnected or self.flow.write_paused
                or message["type"] != "http.response.start"):
            await _send(self, message)
            return
        transport, self.transport = self.transport, _HOLDER
        try:
            await _send(self, message)    # makes the head, checks it, notes the length: no await on this path
        finally:
            self.transport = transport
        self.held, _HOLDER.data = _HOLDER.data, None

    def _complete(self):
        """The whole body was written: what uvicorn does then (its length checked, the next request let in)."""
        if self.expected_content_length != 0:
            raise RuntimeError("Response content shorter than Content-Length")
        self.response_complete = True
        self.message_event.set()
        if not self.keep_alive:
            self.transport.close()
        self.on_response()
