"""Limits below HTTP, with real sockets against `mockserver serve`: the header and body timeouts,
the header size (431, and the smallest one allowed still serving an ordinary request), the connection limit,
the open-file limit, and a bounded graceful shutdown that still saves the state file and answers a call it
cut short with a 503.
"""

import os
import resource
import signal
import socket
import subprocess
import sys
import threading
import time

import httpx
import orjson
import pytest
from support import ROOT
from support.http import assert_error, free_port, wait_for
from support.ids import ADMIN, ORG
from support.live import LiveServer

pytestmark = pytest.mark.server

PROJECTS = f"/organization/{ORG}/project"


def connect(server, timeout=15):
    sock = socket.create_connection(("127.0.0.1", server.port))
    sock.settimeout(timeout)
    return sock


def read_reply(sock):
    """Everything the server sends until it closes the connection (a reset ends it too)."""
    out = b""
    try:
        while chunk := sock.recv(65536):
            out += chunk
    except ConnectionResetError:
        pass
    return out


def status_and_body(raw):
    head, _, body = raw.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    return status, orjson.loads(body) if body else None


def after_the_answer_before(raw):
    """What follows a whole 200 reply with a list at the start of `raw` (asserted)."""
    first, _, rest = raw.partition(b"\r\n\r\n")
    assert first.startswith(b"HTTP/1.1 200"), raw[:200]
    length = int(dict(line.split(b": ", 1) for line in first.split(b"\r\n")[1:])[b"content-length"])
    assert orjson.loads(rest[:length])["results"]
    return rest[length:]


def assert_closed_with(raw, status):
    """The reply is the spec's error body with `status`, and the connection was closed after it."""
    got, body = status_and_body(raw)
    assert got == status, raw[:300]
    assert b"connection: close" in raw.lower()
    assert body["status"] == status and body["error"] and body["message"]
    return body


# ---------------------------------------------------------------- timeouts
def test_a_silent_connection_is_answered_408_and_closed_after_the_header_timeout(live_server):
    mock = live_server("--header-timeout", "1")
    sock = connect(mock)
    started = time.monotonic()
    raw = read_reply(sock)
    waited = time.monotonic() - started
    body = assert_closed_with(raw, 408)
    assert "--header-timeout" in body["message"]
    assert waited >= 0.9                                     # not before the timeout, and closed (not left open)


def test_headers_sent_a_few_bytes_at_a_time_do_not_keep_the_connection(live_server):
    mock = live_server("--header-timeout", "1")
    sock = connect(mock)
    sock.sendall(b"GET /organization HTTP/1.1\r\nHost: mock\r\n")
    sent = 0
    try:
        for _ in range(40):                                  # a header line every 0.2 s: 8 s if nothing stops it
            sock.sendall(b"X-Slow: %d\r\n" % sent)
            sent += 1
            time.sleep(0.2)
    except (BrokenPipeError, ConnectionResetError):
        pass
    assert sent < 40                                         # the server closed it long before
    assert_closed_with(read_reply(sock), 408)


def test_a_slow_upload_is_answered_408_after_the_body_timeout(live_server):
    mock = live_server("--body-timeout", "1")
    sock = connect(mock)
    sock.sendall(b"POST " + PROJECTS.encode() + b" HTTP/1.1\r\nHost: mock\r\nAuthorization: Token mock-admin-token\r\n"
                 b"Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"name\":")
    body = assert_closed_with(read_reply(sock), 408)
    assert "--body-timeout" in body["message"]
    names = [p["name"] for p in httpx.get(mock.url + PROJECTS, headers=ADMIN).json()["results"]]
    assert names and all(isinstance(name, str) for name in names)         # nothing half-created


def test_a_keep_alive_connection_serves_several_requests_within_the_timeouts(live_server):
    mock = live_server("--header-timeout", "1")
    with httpx.Client(base_url=mock.url, headers=ADMIN) as client:
        for _ in range(3):
            assert client.get("/organization").status_code == 200
            time.sleep(0.6)                                  # idle between requests: uvicorn's keep-alive rules


# ---------------------------------------------------------------- header size
def test_headers_past_the_bound_are_a_431_in_the_error_body(live_server):
    mock = live_server("--max-header-size", "8k")
    sock = connect(mock)
    sock.sendall(b"GET /organization HTTP/1.1\r\nHost: mock\r\nAuthorization: Token mock-admin-token\r\n"
                 b"X-Big: " + b"a" * 20000 + b"\r\n\r\n")
    body = assert_closed_with(read_reply(sock), 431)
    assert "8192 bytes" in body["message"] and "--max-header-size" in body["message"]
    fits = httpx.get(mock.url + "/organization", headers={**ADMIN, "X-Big": "a" * 7000})
    assert fits.status_code == 200


def test_a_large_head_behind_a_small_one_in_the_same_packet_is_still_a_431(live_server):
    """Pipelined: the second request's head arrives in the bytes of the first, so the bytes counted for the
    connection say little; its own size is measured."""
    mock = live_server("--max-header-size", "8k")
    sock = connect(mock)
    small = b"GET /organization HTTP/1.1\r\nHost: mock\r\nAuthorization: Token mock-admin-token\r\n\r\n"
    large = (b"GET /organization HTTP/1.1\r\nHost: mock\r\nAuthorization: Token mock-admin-token\r\n"
             b"X-Big: " + b"a" * 9000 + b"\r\n\r\n")
    sock.sendall(small + large)
    raw = read_reply(sock)
    assert b"HTTP/1.1 431" in raw and b"--max-header-size" in raw and b"connection: close" in raw.lower()
    assert after_the_answer_before(raw).startswith(b"HTTP/1.1 431")   # replies in the order of the requests


def test_a_large_head_sent_while_the_request_before_it_is_answered_waits_for_that_answer(live_server):
    """The request before is slow (a scenario's latency); the oversize head behind it arrives meanwhile, in a
    packet of its own: the slow reply still comes, whole, and then the 431."""
    mock = live_server("--max-header-size", "8k")
    rule = {"name": "slow", "rules": [{"name": "wait", "match": {"method": "GET", "path": "/organization"},
                                       "effect": {"latency_ms": 600}}]}
    assert httpx.put(mock.url + "/_mock/scenarios/slow", json=rule, headers=ADMIN).status_code in (200, 201)
    sock = connect(mock)
    sock.sendall(b"GET /organization HTTP/1.1\r\nHost: mock\r\nAuthorization: Token mock-admin-token\r\n\r\n")
    time.sleep(0.2)                                               # being answered now
    sock.sendall(b"GET /organization HTTP/1.1\r\nHost: mock\r\nX-Big: " + b"a" * 9000 + b"\r\n\r\n")
    raw = read_reply(sock)
    refusal = after_the_answer_before(raw)
    assert refusal.startswith(b"HTTP/1.1 431") and b"connection: close" in refusal.lower()


def test_a_malformed_request_behind_a_whole_one_is_refused_after_that_one_is_answered(live_server):
    """A client sends a whole request and then bytes that are not HTTP on the same connection: the request
    is answered (and done) first, then the 400; it used to be cut off unanswered."""
    mock = live_server()
    sock = connect(mock)
    sock.sendall(b"GET /organization HTTP/1.1\r\nHost: mock\r\nAuthorization: Token mock-admin-token\r\n\r\n"
                 b"BAD\r\n\r\n")
    refusal = after_the_answer_before(read_reply(sock))
    assert_closed_with(refusal, 400)
    body = b'{"name": "piped-then-garbage"}'
    sock = connect(mock)
    sock.sendall(b"POST " + PROJECTS.encode() + b" HTTP/1.1\r\nHost: mock\r\nAuthorization: Token mock-admin-token"
                 b"\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)
                 + body + b"BAD\r\n\r\n")
    raw = read_reply(sock)
    assert raw.startswith(b"HTTP/1.1 201"), raw[:200]
    assert b"HTTP/1.1 400" in raw
    names = [p["name"] for p in httpx.get(mock.url + PROJECTS, headers=ADMIN).json()["results"]]
    assert "piped-then-garbage" in names
    calls = httpx.get(mock.url + "/_mock/calls", params={"method": "POST"}, headers=ADMIN).json()["results"]
    assert [c["status"] for c in calls] == [201]


def test_replies_carry_their_length_and_no_server_name(live_server):
    """A reply's body has a Content-Length (not chunks); the mock does not name the server it runs on."""
    mock = live_server()
    sock = connect(mock)
    sock.sendall(b"GET /organization HTTP/1.1\r\nHost: mock\r\nAuthorization: Token mock-admin-token\r\n"
                 b"Connection: close\r\n\r\n")
    raw = read_reply(sock)
    head, _, body = raw.partition(b"\r\n\r\n")
    headers = dict(line.split(b": ", 1) for line in head.split(b"\r\n")[1:])
    assert int(headers[b"content-length"]) == len(body) and orjson.loads(body)["results"]
    assert b"transfer-encoding" not in headers and b"server" not in headers
    assert b"date" in headers and b"x-ratelimit-remaining" in headers


def test_a_64_mib_header_is_refused_before_it_is_held_and_never_journaled(live_server):
    mock = live_server()
    sock = connect(mock)
    sock.sendall(b"GET /organization HTTP/1.1\r\nHost: mock\r\nAuthorization: Token mock-admin-token\r\nX-Big: ")
    chunk, sent = b"a" * (1024 * 1024), 0
    try:
        while sent < 64:
            sock.sendall(chunk)
            sent += 1
    except (BrokenPipeError, ConnectionResetError):
        pass
    assert sent < 64                                         # refused after the first bytes past 64 KiB
    raw = read_reply(sock)
    if raw:                                                  # the reply, when it was read before the reset
        assert_closed_with(raw, 431)
    calls = httpx.get(mock.url + "/_mock/calls").json()
    assert calls["total"] == 0                               # the request never reached the API
    assert httpx.get(mock.url + "/_mock/health").status_code == 200


# ---------------------------------------------------------------- connections
def test_silent_connections_at_the_limit_make_room_for_a_real_client(live_server):
    mock = live_server("--max-connections", "20", "--header-timeout", "60")
    silent = [connect(mock) for _ in range(50)]
    time.sleep(0.3)
    reply = httpx.get(mock.url + "/organization", headers=ADMIN, timeout=5)
    assert reply.status_code == 200
    closed = 0
    for sock in silent:                                      # the oldest silent ones gave way
        sock.settimeout(0.2)
        try:
            closed += sock.recv(1) == b""
        except (TimeoutError, ConnectionResetError):
            pass
        sock.close()
    assert closed >= 30


def test_when_every_connection_has_a_request_in_progress_one_more_is_a_503(live_server, tmp_path):
    slow = tmp_path / "slow.yaml"
    slow.write_text("name: slow\nrules:\n  - match: {operation: getOrganization}\n    effect: {latency_ms: 3000}\n")
    mock = live_server("--max-connections", "5", "--scenario", str(slow))
    busy = []
    for _ in range(5):
        sock = connect(mock)
        sock.sendall(b"GET /organization HTTP/1.1\r\nHost: mock\r\nAuthorization: Token mock-admin-token\r\n\r\n")
        busy.append(sock)
    time.sleep(0.5)
    refused = connect(mock)
    body = assert_closed_with(read_reply(refused), 503)
    assert "--max-connections" in body["message"]
    for sock in busy:                                        # the requests in progress are answered as usual
        assert read_until_status(sock) == 200
        sock.close()


def read_until_status(sock):
    data = b""
    while b"\r\n" not in data:
        data += sock.recv(1024)
    return int(data.split(b" ", 2)[1])


def serve_with_fd_limit(soft, hard, *args):
    """`mockserver serve` started under an open-file limit (soft, hard)."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "mockserver", "serve", "--port", str(port), "--exit-with-parent", *args], cwd=ROOT,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "PYTHONUNBUFFERED": "1"},
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard)))
    wait_for(f"http://127.0.0.1:{port}/_mock/health")
    return process, port


def soft_fd_limit(pid):
    with open(f"/proc/{pid}/limits") as handle:
        line = next(line for line in handle if line.startswith("Max open files"))
    return int(line.split()[3])


@pytest.mark.skipif(not os.path.exists("/proc/self/limits"), reason="reads /proc/<pid>/limits")
def test_the_soft_open_file_limit_is_raised_to_the_hard_one_at_start():
    process, _ = serve_with_fd_limit(256, 4096)
    try:
        assert soft_fd_limit(process.pid) == 4096
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_under_a_low_open_file_limit_300_silent_connections_leave_the_server_reachable():
    process, port = serve_with_fd_limit(200, 200, "--header-timeout", "60")
    silent = []
    try:
        for _ in range(300):
            silent.append(socket.create_connection(("127.0.0.1", port)))
        reply = httpx.get(f"http://127.0.0.1:{port}/organization", headers=ADMIN, timeout=5)
        assert reply.status_code == 200
    finally:
        for sock in silent:
            sock.close()
        process.terminate()
        process.wait(timeout=10)
    err = process.stderr.read().decode()
    assert "the open-file limit is 200: at most 100 connections at once" in err, err


# ---------------------------------------------------------------- shutdown
def test_shutdown_during_a_slow_upload_ends_within_its_bound_and_still_saves(tmp_path):
    path = tmp_path / "state.bin"
    mock = LiveServer("--state-file", str(path), "--save-interval", "3600", "--shutdown-timeout", "1",
                      "--body-timeout", "120")
    made = httpx.post(mock.url + PROJECTS, json={"name": "saved-at-shutdown"}, headers=ADMIN)
    assert made.status_code == 201
    sock = connect(mock)
    sock.sendall(b"POST " + PROJECTS.encode() + b" HTTP/1.1\r\nHost: mock\r\nAuthorization: Token mock-admin-token\r\n"
                 b"Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"name\":")
    uploading = threading.Event()

    def trickle():                                           # a byte a second, as a stalled upload does
        try:
            while not uploading.is_set():
                sock.sendall(b" ")
                time.sleep(1)
        except OSError:
            pass
    threading.Thread(target=trickle, daemon=True).start()
    time.sleep(0.5)
    mock.process.send_signal(signal.SIGTERM)
    try:
        mock.process.wait(timeout=8)                         # the bound (1 s) and the final save, not the upload
    finally:
        uploading.set()
        sock.close()
        mock.stop()
    again = LiveServer("--state-file", str(path))
    try:
        assert httpx.get(f"{again.url}/project/{made.json()['id']}", headers=ADMIN).status_code == 200
    finally:
        again.stop()


def test_a_body_its_headers_already_refuse_is_answered_before_it_is_sent(live_server):
    """`Expect: 100-continue` with a body past --max-body, or not JSON: the refusal comes instead of
    `100 Continue`, so the client never uploads it."""
    mock = live_server("--max-body", "1024")
    head = (b"POST " + PROJECTS.encode() + b" HTTP/1.1\r\nHost: mock\r\nAuthorization: Token mock-admin-token\r\n"
            b"Expect: 100-continue\r\n")
    for extra, status in ((b"Content-Type: application/json\r\nContent-Length: 99999999\r\n", 413),
                          (b"Content-Type: text/plain\r\nContent-Length: 20\r\n", 415)):
        sock = connect(mock, timeout=5)
        sock.sendall(head + extra + b"\r\n")
        first = sock.recv(65536)
        assert first.startswith(b"HTTP/1.1 %d" % status), first[:200]
        assert b"100 Continue" not in first
        sock.close()


def test_a_compressed_or_non_utf8_body_is_a_415_that_says_why(live_server):
    import gzip
    mock = live_server()
    body = b'{"name": "zipped"}'
    reply = httpx.post(mock.url + PROJECTS, content=gzip.compress(body), headers={
        **ADMIN, "Content-Type": "application/json", "Content-Encoding": "gzip"})
    assert reply.status_code == 415 and "Content-Encoding" in reply.json()["message"]
    reply = httpx.post(mock.url + PROJECTS, content=body.decode().encode("utf-16"), headers={
        **ADMIN, "Content-Type": "application/json; charset=utf-16"})
    assert reply.status_code == 415 and "UTF-8" in reply.json()["message"]
    ok = httpx.post(mock.url + PROJECTS, content=body,
                    headers={**ADMIN, "Content-Type": "application/json; charset=UTF-8"})
    assert ok.status_code == 201, ok.text


# ---------------------------------------------------------------- the smallest header size
def test_the_smallest_header_size_answers_an_ordinary_request(tmp_path):
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "mockserver", "serve", "--port", str(port),
                                "--max-header-size", "1k"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_for(f"http://127.0.0.1:{port}/_mock/health")
        reply = httpx.get(f"http://127.0.0.1:{port}/organization", headers={**ADMIN, "User-Agent": "curl/8.5.0",
                                                                           "Accept": "application/json"}, timeout=10)
        assert reply.status_code == 200 and reply.json()["id"] == ORG
        big = httpx.get(f"http://127.0.0.1:{port}/organization", headers={**ADMIN, "X-Pad": "p" * 1100}, timeout=10)
        assert big.status_code == 431
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=20)


# ---------------------------------------------------------------- a call that outlives the shutdown timeout
def test_a_call_that_outlives_the_shutdown_timeout_is_answered_503_in_the_error_body(live_server):
    import signal
    import threading
    server = live_server("--shutdown-timeout", "1")
    doc = {"name": "slow", "rules": [{"match": {"operation": "getOrganization"}, "effect": {"latency_ms": 8000}}]}
    assert httpx.put(f"{server.url}/_mock/scenarios/slow", json=doc, headers=ADMIN).status_code == 200
    replies = []                                        # getOrganization: GET /organization (the list)
    caller = threading.Thread(target=lambda: replies.append(
        httpx.get(f"{server.url}/organization", headers=ADMIN, timeout=20)))
    caller.start()
    time.sleep(0.5)
    server.process.send_signal(signal.SIGTERM)
    caller.join(20)
    assert server.process.wait(20) == 0
    reply = replies[0]
    assert_error(reply, 503)
    assert "--shutdown-timeout" in reply.json()["message"]
    log = server.process.stderr.read().decode()
    assert "Traceback" not in log and "Exception in ASGI application" not in log, log
