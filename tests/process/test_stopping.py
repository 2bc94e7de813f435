"""A SIGINT or SIGTERM that comes before uvicorn listens for it still stops `serve` (process/stopping.py)."""

import os
import signal
import socket
import threading

import pytest
import uvicorn

from mockserver.process.stopping import STOPS, Server


async def app(scope, receive, send):
    if scope["type"] == "http":
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})


@pytest.fixture
def handlers():
    """The test process's own handlers, put back after the test."""
    kept = {number: signal.getsignal(number) for number in STOPS}
    yield
    for number, handler in kept.items():
        signal.signal(number, handler)


def listener():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    return sock


def config():
    return uvicorn.Config(app, log_level="warning", lifespan="off", loop="asyncio", http="h11")


@pytest.mark.timeout(30)
@pytest.mark.parametrize("number", STOPS)
def test_a_stop_before_the_server_listens_for_one_stops_it_once_it_does(handlers, number):
    server = Server(config())
    os.kill(os.getpid(), number)               # the window: the server is made, uvicorn not listening yet
    assert server.early == [number]
    sock = listener()
    try:
        server.run(sockets=[sock])             # returns: without the noted stop, this would serve forever
    finally:
        sock.close()
    assert server.started and server.should_exit
    assert not server.force_exit               # one stop: graceful, not forced
    # uvicorn sent the signal again after the stop: noted by the mock's handler, the process lives on
    assert signal.getsignal(number) == server._noted


@pytest.mark.timeout(30)
def test_a_stop_while_serving_is_uvicorns_as_before(handlers):
    server = Server(config())
    sock = listener()
    port = sock.getsockname()[1]

    replies = []

    def stop_once_serving():
        while not server.started:
            threading.Event().wait(0.01)
        with socket.create_connection(("127.0.0.1", port)) as client:      # it serves meanwhile
            client.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            replies.append(client.recv(64))
        os.kill(os.getpid(), signal.SIGTERM)

    helper = threading.Thread(target=stop_once_serving)
    helper.start()
    try:
        server.run(sockets=[sock])
    finally:
        helper.join()
        sock.close()
    assert replies[0].startswith(b"HTTP/1.1 204")
    assert server.should_exit and server.early == [signal.SIGTERM]   # the signal uvicorn sent again, noted
