"""A pipelined burst on one connection takes turns with the other connections: the server's direct path answers at
most one request of a chunk inside the callback that read it; the rest go through ASGI, a task each. Shown by
order, not by time: a write sent on a second connection right after a burst of reads is seen by the burst's
replies long before its last one (before, the whole burst was answered first)."""

import socket
import threading

import orjson
import pytest
from support.ids import PROJECT

pytestmark = pytest.mark.server

BURST = 1500                     # small GETs: one read of the server's takes them all


def replies(sock, count, into):
    """Read `count` replies of known length, their bodies in order, into `into`."""
    data = b""
    while len(into) < count:
        head_end = data.find(b"\r\n\r\n")
        if head_end >= 0:
            head = data[:head_end].lower()
            length = int(head.split(b"content-length:")[1].split(b"\r\n")[0])
            if len(data) >= head_end + 4 + length:
                into.append(data[head_end + 4:head_end + 4 + length])
                data = data[head_end + 4 + length:]
                continue
        chunk = sock.recv(1 << 20)
        if not chunk:
            return
        data += chunk


def test_a_pipelined_burst_does_not_hold_back_another_connection(live_server):
    server = live_server("--rate-limit", "1000000/3600")
    port = int(server.url.rsplit(":", 1)[1])
    read = (b"GET /project/%s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Token mock-admin-token\r\n\r\n"
            % PROJECT.encode())
    body = orjson.dumps({"name": "pipelined", "description": "the write of the other connection"})
    write = (b"PUT /project/%s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Token mock-admin-token\r\n"
             b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (PROJECT.encode(), len(body), body))
    with socket.create_connection(("127.0.0.1", port)) as burst, socket.create_connection(("127.0.0.1", port)) as other:
        burst.settimeout(60)
        other.settimeout(60)
        got: list[bytes] = []
        reader = threading.Thread(target=replies, args=(burst, BURST, got))
        reader.start()
        burst.sendall(read * BURST)
        other.sendall(write)
        answer: list[bytes] = []
        replies(other, 1, answer)
        reader.join(60)
    assert len(got) == BURST and orjson.loads(answer[0])["name"] == "pipelined"
    names = [orjson.loads(body)["name"] for body in got]
    seen_at = names.index("pipelined")
    assert seen_at < BURST // 2, f"the other connection's write was made after {seen_at} of {BURST} reads"
    assert set(names[seen_at:]) == {"pipelined"}
