"""A body sent to an operation that takes none (a GET, a DELETE) is read to its end, ignored, and journaled
as it was sent; the reply is the operation's, on a connection that stays usable. Past --max-body it is a 413,
as any body."""

import socket

import httpx
import pytest
from support.ids import ORG

pytestmark = pytest.mark.server
ADMIN = {"Authorization": "Token mock-admin-token"}


def raw_exchange(port, head, body, replies=1):
    """Write a request with `body` on one connection, `replies` times, and read every reply whole."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        statuses = []
        reader = sock.makefile("rb")
        for _ in range(replies):
            sock.sendall(head + b"Content-Length: %d\r\n\r\n" % len(body) + body)
            status = int(reader.readline().split()[1])
            length = 0
            while (line := reader.readline()) not in (b"\r\n", b""):
                name, _, value = line.partition(b":")
                if name.lower() == b"content-length":
                    length = int(value)
            reader.read(length)
            statuses.append(status)
        return statuses


@pytest.mark.parametrize("size", [10, 150_000, 900_000])
def test_a_get_with_a_body_is_answered_and_the_body_journaled_as_sent(live_server, size):
    server = live_server("--max-body", "1048576")
    head = (b"GET /api/v1/organization HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Token mock-admin-token\r\n"
            b"Content-Type: application/json\r\nX-Request-Id: with-body\r\n")
    body = b'{"pad": "' + b"x" * size + b'"}'
    assert raw_exchange(server.port, head, body, replies=2) == [200, 200]     # the connection kept
    calls = httpx.get(f"{server.url}/_mock/calls", params={"limit": 2}).json()["results"]
    assert [call["status"] for call in calls] == [200, 200]
    journaled = calls[0]["body"]
    assert journaled == {"pad": "x" * size} or str(journaled).startswith('{"pad":"xxx')     # kept, or cut by the limit


def test_a_body_that_is_not_json_on_a_delete_is_ignored_and_kept_as_text(live_server):
    server = live_server()
    with httpx.Client(base_url=server.url, headers=ADMIN) as http:
        project = http.post(f"/api/v1/organization/{ORG}/project", json={"name": "with-body"}).json()
        reply = http.request("DELETE", f"/api/v1/project/{project['id']}", content=b"not json at all")
        assert reply.status_code == 204
        assert http.get(f"/api/v1/project/{project['id']}").status_code == 404
        deleted = http.get("/_mock/calls", params={"method": "DELETE"}).json()["results"][0]
        assert deleted["body"] == "not json at all"


def test_a_body_past_the_bound_on_a_get_is_a_413_in_the_error_body(live_server):
    server = live_server("--max-body", "1000")
    reply = httpx.request("GET", f"{server.url}/api/v1/organization", headers=ADMIN, content=b"x" * 5000)
    assert reply.status_code == 413
    assert reply.json()["status"] == 413 and "larger than 1000 bytes" in reply.json()["message"]
