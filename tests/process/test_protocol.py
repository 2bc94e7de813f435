"""The protocol `serve` runs (process/connections.py), driven in-process with tiny ASGI apps written here and a
transport that keeps every write: replies through ASGI read as uvicorn writes them, and an idle kept-alive
connection is closed by the sweep after the keep-alive timeout."""

import asyncio

import pytest
import uvicorn
from support.transport import Transport
from uvicorn.server import ServerState

from mockserver.process.connections import Limits, protocol


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


def connect(app, keep_alive=5, transport=None):
    config = uvicorn.Config(app, access_log=False, lifespan="off", ws="none", http="httptools", date_header=False,
                            server_header=False, timeout_keep_alive=keep_alive)
    config.load()
    transport = transport or Transport()
    connection = protocol(Limits())(config=config, server_state=ServerState(), app_state={},
                                    _loop=asyncio.get_running_loop())
    connection.connection_made(transport)
    return connection, transport


async def answered(connection, data, within=1.0):
    """Feed one chunk and wait until every reply it asked for is whole: False when none is after `within` seconds
    (a chunk that is not a whole request, a reply the server refused to send)."""
    connection.data_received(data)
    waited = 0.0
    while waited < within:
        if connection.cycle is not None and connection.cycle.response_complete and not connection.pipeline:
            return True
        await asyncio.sleep(0.005)
        waited += 0.005
    return False


async def exchange(app, *requests):
    """Feed the requests (raw bytes, one chunk each) and return the transport's writes once every reply is whole."""
    connection, transport = connect(app)
    for data in requests:
        await answered(connection, data)
    connection.connection_lost(None)
    return transport.writes


GET = b"GET /x HTTP/1.1\r\nHost: h\r\n\r\n"


def run(app, *requests):
    return asyncio.run(exchange(app, *requests))


def replies(app, *requests):
    """What a client reads: the bytes written, whole, split into replies at their status lines."""
    raw = b"".join(run(app, *requests))
    return [b"HTTP/1.1 " + part for part in raw.split(b"HTTP/1.1 ")[1:]]


def test_a_reply_of_known_length_is_its_head_then_its_body():
    [reply] = replies(reply_with(start(length=11), body(b'{"ok":true}')), GET)
    head, _, rest = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK\r\n") and b"content-length: 11" in head
    assert rest == b'{"ok":true}'


def test_a_reply_in_pieces_arrives_whole():
    [reply] = replies(reply_with(start(length=6), body(b"ab", more=True), body(b"cd", more=True), body(b"ef")), GET)
    assert reply.startswith(b"HTTP/1.1 200") and reply.endswith(b"\r\n\r\nabcdef")


def test_a_reply_without_a_length_is_chunked():
    raw = b"".join(run(reply_with(start(), body(b"abc", more=True), body(b"")), GET))
    head, _, rest = raw.partition(b"\r\n\r\n")
    assert b"transfer-encoding: chunked" in head
    assert rest == b"3\r\nabc\r\n0\r\n\r\n"


def test_a_reply_to_head_is_its_head_alone():
    [reply] = replies(reply_with(start(length=11), body(b'{"ok":true}')), b"HEAD /x HTTP/1.1\r\nHost: h\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 200") and reply.endswith(b"\r\n\r\n")


def test_a_body_of_the_wrong_length_is_still_refused_by_the_server():
    # uvicorn's own check stands: a body longer than its Content-Length is an error of the app, and the
    # connection is closed rather than sending bytes the client would read as the next reply
    writes = run(reply_with(start(length=2), body(b"{}{}")), GET)
    assert not any(b"{}{}" in write for write in writes)


def test_pipelined_requests_are_answered_in_order():
    answered_three = replies(reply_with(start(length=2), body(b"{}")), GET + GET + GET)
    assert len(answered_three) == 3
    assert all(reply.startswith(b"HTTP/1.1 200") and reply.endswith(b"\r\n\r\n{}") for reply in answered_three)


def test_expect_100_continue_is_answered_before_the_reply():
    request = (b"POST /x HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
               b"Expect: 100-continue\r\n\r\n")
    writes = run(reply_with(start(length=2), body(b"{}")), request, b"{}")
    assert writes[0] == b"HTTP/1.1 100 Continue\r\n\r\n"
    reply = b"".join(writes[1:])
    assert reply.startswith(b"HTTP/1.1 200") and reply.endswith(b"{}")


@pytest.mark.parametrize("status", [204, 304])
def test_a_reply_without_a_body_has_neither_length_nor_chunks(status):
    [reply] = replies(reply_with(start(status), body(b"")), GET)
    assert reply.startswith(b"HTTP/1.1 %d" % status) and reply.endswith(b"\r\n\r\n")
    assert b"transfer-encoding" not in reply


# ---------------------------------------------------------------- keep-alive
async def kept_alive(pause_before_second):
    """A kept-alive connection (keep-alive timeout 0.3 s): one request, a pause, maybe a second; (closed after the
    pause, closed 0.9 s after the last reply, replies)."""
    connection, transport = connect(reply_with(start(length=2), body(b"{}")), keep_alive=0.3)
    assert await answered(connection, GET)
    await asyncio.sleep(pause_before_second)
    closed_after_pause = transport.closing
    if not closed_after_pause:
        assert await answered(connection, GET)
    await asyncio.sleep(0.9)                   # the timeout and a sweep (SWEEP: 0.25 s) have passed
    closed_later = transport.closing
    connection.connection_lost(None)
    return closed_after_pause, closed_later, b"".join(transport.writes).count(b"HTTP/1.1 200")


def test_a_request_within_the_keep_alive_timeout_is_served_on_the_same_connection():
    closed_after_pause, closed_later, replies = asyncio.run(kept_alive(0.1))
    assert not closed_after_pause and replies == 2
    assert closed_later                        # idle again: closed after its timeout


def test_an_idle_kept_alive_connection_is_closed_after_the_keep_alive_timeout():
    closed_after_pause, _, replies = asyncio.run(kept_alive(0.9))
    assert closed_after_pause and replies == 1


def test_a_slow_reply_does_not_count_against_the_keep_alive_timeout():
    async def slow(scope, receive, send):
        await receive()
        await asyncio.sleep(1.0)               # longer than the keep-alive timeout
        await send(start(length=2))
        await send(body(b"{}"))

    async def scenario():
        connection, transport = connect(slow, keep_alive=0.5)
        assert await answered(connection, GET, within=3)
        await asyncio.sleep(0.3)               # a sweep ran; the timeout counts from the reply, not the request
        open_after_reply = not transport.closing
        connection.connection_lost(None)
        return open_after_reply
    assert asyncio.run(scenario())


@pytest.mark.parametrize("name, value", [(b"x-smuggled", b"a\r\nset-cookie: b"), (b"x-nul", b"a\x00b")])
def test_a_header_a_reply_may_not_hold_never_reaches_the_client(name, value):
    message = {**start(length=2), "headers": [(b"content-length", b"2"), (name, value)]}
    raw = b"".join(run(reply_with(message, body(b"{}")), GET))
    assert value not in raw and b"set-cookie" not in raw      # uvicorn's own check: the app's error, never the
    assert not raw or raw.startswith(b"HTTP/1.1 500")          # head it asked for (a 500, or the connection closed)


def test_the_head_says_what_uvicorn_says_of_length_and_connection():
    message = {**start(), "headers": [(b"Content-Length", b"2"), (b"Connection", b"keep-alive, Close")]}
    raw = b"".join(run(reply_with(message, body(b"{}")), GET))
    assert raw == b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: keep-alive, Close\r\n\r\n{}"
