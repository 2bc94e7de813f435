"""A reply leaves in one write, head and body together (process/onewrite.py), through the protocol `serve` runs:
what reaches the connection's transport is checked write by write, with tiny ASGI apps written here."""

import asyncio

import pytest
import uvicorn
from uvicorn.server import ServerState

from mockserver.process.connections import Limits, protocol


class Transport(asyncio.Transport):
    """Keeps every write apart; never blocks."""

    def __init__(self):
        super().__init__()
        self.writes, self.closing = [], False

    def write(self, data):
        self.writes.append(bytes(data))

    def get_extra_info(self, name, default=None):
        return {"sockname": ("127.0.0.1", 8080), "peername": ("127.0.0.1", 50000)}.get(name, default)

    def is_closing(self):
        return self.closing

    def close(self):
        self.closing = True

    def pause_reading(self):
        pass

    def resume_reading(self):
        pass

    def get_write_buffer_size(self):
        return 0

    def can_write_eof(self):
        return True

    def write_eof(self):
        pass


def reply_with(*messages, pause=False):
    """An app that reads the request whole and sends `messages` (pausing before each body message if asked)."""
    async def app(scope, receive, send):
        while (await receive()).get("more_body"):
            pass
        for message in messages:
            if pause and message["type"] == "http.response.body":
                await asyncio.sleep(0.01)
            await send(message)
    return app


def start(status=200, length=None):
    headers = [(b"content-type", b"application/json")]
    if length is not None:
        headers.append((b"content-length", b"%d" % length))
    return {"type": "http.response.start", "status": status, "headers": headers}


def body(data, more=False):
    return {"type": "http.response.body", "body": data, "more_body": more}


async def exchange(app, *requests):
    """Feed the requests (raw bytes, one chunk each) and return the transport's writes once every reply is whole."""
    config = uvicorn.Config(app, access_log=False, lifespan="off", ws="none", http="httptools", date_header=False,
                            server_header=False)
    config.load()
    transport = Transport()
    connection = protocol(Limits())(config=config, server_state=ServerState(), app_state={},
                                    _loop=asyncio.get_running_loop())
    connection.connection_made(transport)
    for data in requests:
        connection.data_received(data)
        for _ in range(500):
            if connection.cycle is not None and connection.cycle.response_complete and not connection.pipeline:
                break
            await asyncio.sleep(0.001)
    connection.connection_lost(None)
    return transport.writes


GET = b"GET /x HTTP/1.1\r\nHost: h\r\n\r\n"


def run(app, *requests):
    return asyncio.run(exchange(app, *requests))


def test_a_reply_of_known_length_is_one_write_of_head_and_body():
    writes = run(reply_with(start(length=11), body(b'{"ok":true}')), GET)
    assert len(writes) == 1
    head, _, rest = writes[0].partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK\r\n") and b"content-length: 11" in head
    assert rest == b'{"ok":true}'


def test_an_app_that_waits_between_head_and_body_still_sends_one_write():
    writes = run(reply_with(start(length=2), body(b"{}"), pause=True), GET)
    assert len(writes) == 1 and writes[0].endswith(b"\r\n\r\n{}")


def test_a_reply_in_pieces_sends_its_head_with_the_first_piece_then_each_piece():
    writes = run(reply_with(start(length=6), body(b"ab", more=True), body(b"cd", more=True), body(b"ef")), GET)
    assert len(writes) == 3
    assert writes[0].startswith(b"HTTP/1.1 200") and writes[0].endswith(b"\r\n\r\nab")
    assert writes[1:] == [b"cd", b"ef"]


def test_a_reply_without_a_length_is_chunked_as_before():
    raw = b"".join(run(reply_with(start(), body(b"abc", more=True), body(b"")), GET))
    head, _, rest = raw.partition(b"\r\n\r\n")
    assert b"transfer-encoding: chunked" in head
    assert rest == b"3\r\nabc\r\n0\r\n\r\n"


def test_a_reply_to_head_is_its_head_alone():
    writes = run(reply_with(start(length=11), body(b'{"ok":true}')), b"HEAD /x HTTP/1.1\r\nHost: h\r\n\r\n")
    assert len(writes) == 1
    assert writes[0].startswith(b"HTTP/1.1 200") and writes[0].endswith(b"\r\n\r\n")


def test_a_body_of_the_wrong_length_is_still_refused_by_the_server():
    # uvicorn's own check stands: a body longer than its Content-Length is an error of the app, and the
    # connection is closed rather than sending bytes the client would read as the next reply
    writes = run(reply_with(start(length=2), body(b"{}{}")), GET)
    assert not any(b"{}{}" in write for write in writes)


def test_pipelined_requests_are_answered_in_order_one_write_each():
    writes = run(reply_with(start(length=2), body(b"{}")), GET + GET + GET)
    assert len(writes) == 3
    assert all(write.startswith(b"HTTP/1.1 200") and write.endswith(b"\r\n\r\n{}") for write in writes)


def test_expect_100_continue_is_answered_before_the_reply():
    request = (b"POST /x HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
               b"Expect: 100-continue\r\n\r\n")
    writes = run(reply_with(start(length=2), body(b"{}")), request, b"{}")
    assert writes[0] == b"HTTP/1.1 100 Continue\r\n\r\n"
    assert len(writes) == 2 and writes[1].startswith(b"HTTP/1.1 200") and writes[1].endswith(b"{}")


@pytest.mark.parametrize("status", [204, 304])
def test_a_reply_without_a_body_is_one_write(status):
    writes = run(reply_with(start(status), body(b"")), GET)
    assert len(writes) == 1 and writes[0].startswith(b"HTTP/1.1 %d" % status)
    assert b"transfer-encoding" not in writes[0]
