"""DNS rebinding: a page whose name was rebound to the mock's address sends its own name as `Host`; the mock
answers only the names it serves (addresses, one-label names, .localhost, --allowed-hosts) on every route."""

import httpx
import pytest
from support.ids import ADMIN, ORG

from mockserver.edge.hosts import HostGuard, host_name


def test_the_names_a_mock_serves_by_default():
    guard = HostGuard()
    served = ["127.0.0.1:8080", "localhost", "localhost:9", "[::1]:8080", "10.0.0.5", "mock:8080", "idp-mockserver",
              "app.localhost", "a.b.localhost:80", ""]
    refused = ["evil.example.com", "evil.example.com:8080", "127.0.0.1.nip.io", "attacker.test", "localhost.evil.com"]
    assert [host for host in served if not guard.allows(host)] == []
    assert [host for host in refused if guard.allows(host)] == []


def test_listed_names_and_patterns_are_served_and_star_turns_the_check_off():
    guard = HostGuard(["mock.ci.example", "*.svc.cluster.local"], bound="myhost.lan")
    assert guard.allows("mock.ci.example:8080") and guard.allows("MOCK.CI.EXAMPLE")
    assert guard.allows("idp.ns.svc.cluster.local") and not guard.allows("svc.cluster.local.evil.com")
    assert guard.allows("myhost.lan:8080") and not guard.allows("other.example")
    assert HostGuard(["*"]).allows("anything.example.com")
    assert host_name("[::1]:8080") == "::1" and host_name("Example.COM:80") == "example.com"


@pytest.mark.server
def test_a_rebound_page_gets_a_403_on_every_route_and_changes_nothing(live_server):
    server = live_server("--allowed-hosts", "mock.ci.example")
    evil = {"Host": "evil.example.com"}
    for method, path in (("GET", "/organization"), ("POST", f"/organization/{ORG}/project"), ("GET", "/_mock/calls"),
                         ("POST", "/_mock/reset"), ("GET", "/_mock/state/export?secrets=include"),
                         ("GET", "/_mock/ui/"), ("GET", "/openapi.json"), ("GET", "/"),
                         ("PUT", "/_mock/sandboxes/rebound")):
        reply = httpx.request(method, f"{server.url}{path}", headers={**ADMIN, **evil}, json={"name": "x"})
        assert reply.status_code == 403, (method, path, reply.text)
        body = reply.json()
        assert body["status"] == 403 and "--allowed-hosts evil.example.com" in body["message"]
    calls = httpx.get(f"{server.url}/_mock/calls").json()
    assert calls["total"] == 0                                    # nothing reached the API
    assert "rebound" not in {s["name"] for s in httpx.get(f"{server.url}/_mock/sandboxes").json()["results"]}
    listed = httpx.get(f"{server.url}/organization", headers={**ADMIN, "Host": "mock.ci.example"})
    assert listed.status_code == 200 and listed.json()["id"] == ORG


def raw(port, request):
    """One request over a raw socket (HTTP/1.1 or 1.0, exactly as written): (status, body)."""
    import socket
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request)
        data = b""
        while b"\r\n\r\n" not in data or len(data.partition(b"\r\n\r\n")[2]) < _length(data):
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ")[1]), body


def _length(data):
    for line in data.partition(b"\r\n\r\n")[0].split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    return 0


@pytest.mark.server
@pytest.mark.parametrize("path", ["/organization", "/_mock/health", "/openapi.json"])
def test_an_http_1_1_request_needs_exactly_one_host(live_server, path):
    """RFC 9112, 3.2: without Host, or with two, a 400 in the error body on every route and on both of the server's
    paths (the direct one and ASGI); HTTP/1.0 without Host, and one Host of a name the mock serves, are answered."""
    import json
    port = int(live_server().url.rsplit(":", 1)[1])
    auth = b"Authorization: Token mock-admin-token\r\n"
    none = raw(port, b"GET %s HTTP/1.1\r\n%s\r\n" % (path.encode(), auth))
    two = raw(port, b"GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example.com\r\n%s\r\n" % (path.encode(), auth))
    for status, body in (none, two):
        assert status == 400 and json.loads(body)["status"] == 400, body
    assert b"Host" in none[1] and b"2 Host headers" in two[1]
    assert raw(port, b"GET %s HTTP/1.0\r\n%s\r\n" % (path.encode(), auth))[0] == 200
    assert raw(port, b"GET %s HTTP/1.1\r\nHost: localhost:1\r\n%s\r\n" % (path.encode(), auth))[0] == 200


@pytest.mark.server
def test_an_absolute_form_target_is_judged_by_its_own_authority(live_server):
    port = int(live_server().url.rsplit(":", 1)[1])
    auth = b"Authorization: Token mock-admin-token\r\n"
    foreign = raw(port, b"GET http://evil.example.com/organization HTTP/1.1\r\nHost: 127.0.0.1\r\n%s\r\n" % auth)
    assert foreign[0] == 403 and b"evil.example.com" in foreign[1]
    assert raw(port, b"GET http://127.0.0.1/organization HTTP/1.1\r\nHost: 127.0.0.1\r\n%s\r\n" % auth)[0] == 200
