"""A reply written to its connection in one piece: head and body together.

uvicorn writes a reply's status line and headers when the app sends `http.response.start`, then its body
when the app sends `http.response.body`: two writes, and on a connection with nothing waiting to be sent,
two system calls and two packets for a reply of a few hundred bytes. `OneWrite` holds the head until the
first body message comes (the ASGI specification has the server wait for it before it sends anything) and
writes both at once. The head is made as uvicorn makes it, with its checks and patterns, in fewer steps.

The protocol of `serve` (process/connections.py) makes each request's cycle of this class. A reply in pieces
sends its head with the first piece. What is not the common case (a chunked reply, a reply to HEAD, an access
log, a client gone or not reading) is left to uvicorn as it is, after the held head was written.
"""

from uvicorn.protocols.http.httptools_impl import HEADER_RE, HEADER_VALUE_RE, STATUS_LINE, RequestResponseCycle

_send = RequestResponseCycle.send
JOIN_BELOW = 4096        # bytes of body under which head and body are joined before the write, not written as two


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
                if len(body) < JOIN_BELOW:
                    self.transport.write(held + body)
                else:                     # one system call still (uvloop writes the two with writev), no copy
                    self.transport.writelines((held, body))
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
        self.held = self._head(message["status"], [*self.default_headers, *message.get("headers", ())])

    def _head(self, status, headers):
        """The status line and headers, as uvicorn makes them, noting what they say of the body and the
        connection. The headers are checked for bytes a header may not hold in one search of all the names and
        one of all the values (the two patterns match single bytes), rather than two searches a header."""
        if HEADER_RE.search(b"".join([name for name, _ in headers])):
            raise RuntimeError("Invalid HTTP header name.")
        if HEADER_VALUE_RE.search(b"".join([value for _, value in headers])):
            raise RuntimeError("Invalid HTTP header value.")
        self.response_started, self.waiting_for_100_continue = True, False
        content = [STATUS_LINE[status]]
        close = False
        for name, value in headers:
            name = name.lower()
            if name == b"content-length" and self.chunked_encoding is None:
                self.expected_content_length, self.chunked_encoding = int(value.decode()), False
            elif name == b"transfer-encoding" and value.lower() == b"chunked":
                self.expected_content_length, self.chunked_encoding = 0, True
            elif name == b"connection" and b"close" in [part.strip().lower() for part in value.split(b",")]:
                self.keep_alive, close = False, True
            content.append(b"%s: %s\r\n" % (name, value))
        if not self.keep_alive and not close:
            content.append(b"connection: close\r\n")
        if self.chunked_encoding is None and self.scope["method"] != "HEAD" and status not in (204, 304):
            self.chunked_encoding = True         # neither a length nor chunks said: chunks
            content.append(b"transfer-encoding: chunked\r\n")
        content.append(b"\r\n")
        return b"".join(content)

    def _complete(self):
        """The whole body was written: what uvicorn does then (its length checked, the next request let in)."""
        if self.expected_content_length != 0:
            raise RuntimeError("Response content shorter than Content-Length")
        self.response_complete = True
        self.message_event.set()
        if not self.keep_alive:
            self.transport.close()
        self.on_response()
