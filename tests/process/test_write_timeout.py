"""Slow readers, with real sockets against `mockserver serve`: clients that send requests and never read the
replies held their connections' places for ever (no write timeout), so that every new client got 503 once they
filled --max-connections, and each one that went away wrote a traceback to the log. After --write-timeout
seconds without reading anything, such a connection is dropped and its place freed; the log says so in one line.
"""

import socket
import time

import httpx
import pytest
from support.live import LiveServer

pytestmark = pytest.mark.server

SLOW = 5
WRITE_TIMEOUT = 1.0
PIPELINED = b"GET /openapi.yaml HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" * 20   # about 12 MB of replies


def slow_reader(port):
    """A client that asks for far more than the socket buffers hold and reads none of it."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    sock.sendall(PIPELINED)
    return sock


def first_answer(url, until):
    """(seconds, status) of the first reply other than 503 to a new client, trying again until `until`."""
    started = time.monotonic()
    status = None
    while time.monotonic() < until:
        try:
            status = httpx.get(f"{url}/_mock/health", timeout=1).status_code
        except httpx.HTTPError:
            status = None
        if status == 200:
            return time.monotonic() - started, status
        time.sleep(0.1)
    return None, status


def test_slow_readers_filling_the_connections_are_dropped_after_the_write_timeout_and_logged_once():
    server = LiveServer("--max-connections", str(SLOW), "--write-timeout", f"{WRITE_TIMEOUT:g}")
    readers = []
    try:
        readers = [slow_reader(server.port) for _ in range(SLOW)]
        time.sleep(0.3)                          # their replies are under way, their buffers full
        assert httpx.get(f"{server.url}/_mock/health", timeout=1).status_code == 503     # every place is held
        waited, status = first_answer(server.url, time.monotonic() + WRITE_TIMEOUT + 5)
        assert status == 200 and waited < WRITE_TIMEOUT + 2, (waited, status)
        assert all(ended(sock) for sock in readers)     # dropped by the server, not waiting for the client
        assert httpx.get(f"{server.url}/_mock/health", timeout=2).status_code == 200
    finally:
        for sock in readers:
            sock.close()                         # unread bytes: the client resets the connection
        time.sleep(0.3)
        server.stop()
    log = server.process.stderr.read().decode()
    lines = [line for line in log.splitlines() if "--write-timeout" in line]
    assert len(lines) == 1 and lines[0].startswith("closed "), log     # one line, however many it closed
    assert lines[0].endswith(f"connection(s) whose client read nothing of its reply for {WRITE_TIMEOUT:g} seconds "
                             "(--write-timeout); their places are free"), log
    assert "Traceback" not in log and "Exception in ASGI application" not in log, log


def test_slow_readers_that_go_away_leave_no_traceback_in_the_log():
    server = LiveServer("--max-connections", str(SLOW))
    try:
        readers = [slow_reader(server.port) for _ in range(SLOW)]
        time.sleep(0.3)
        for sock in readers:
            sock.close()                         # unread bytes: the client resets the connection
        waited, status = first_answer(server.url, time.monotonic() + 5)
        assert status == 200, status
    finally:
        time.sleep(0.3)
        server.stop()
    log = server.process.stderr.read().decode()
    assert "Traceback" not in log and "Exception in ASGI application" not in log, log
    assert "--write-timeout" not in log, log


def ended(sock, timeout=5):
    """Whether the server closed this connection (its last bytes read, then an end or a reset) within `timeout`."""
    sock.settimeout(timeout)
    try:
        while sock.recv(65536):
            pass
    except ConnectionResetError:
        pass
    except TimeoutError:
        return False
    return True
