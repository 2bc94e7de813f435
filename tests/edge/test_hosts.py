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
