"""The start page at `/` (control/home.py): where everything is (the inspector, the documents, a quick start with
a first call that works as written), as JSON or HTML, within a sandbox's prefix too; the address a proxy says the
client used; no token shown by a mock with a control token."""

import httpx
import pytest
from support.ids import ADMIN, ORG


@pytest.mark.server
def test_the_home_page_links_to_the_inspector_the_documents_and_the_quick_start(live_server):
    server = live_server("--clock", "manual")
    reply = httpx.get(f"{server.url}/", timeout=10)
    assert reply.status_code == 200 and reply.headers["content-type"].startswith("application/json")
    page = reply.json()
    assert page["links"]["inspector"] == "/_mock/ui" and page["links"]["api_document"] == "/openapi.json"
    assert page["links"]["control_document"] == "/_mock/openapi.json"
    for link in page["links"].values():                           # every link answers
        assert httpx.get(f"{server.url}{link}", timeout=10).status_code == 200, link
    start = page["quick_start"]
    assert start["organization"] == ORG and start["tokens"]["admin"]["token"] == "mock-admin-token"
    assert "README.md" in start["guide"]
    first = start["try"][0]                                       # the first call it suggests works as written
    assert first == f"curl -H 'Authorization: Token mock-admin-token' {server.url}/organization"
    assert httpx.get(f"{server.url}/organization", headers=ADMIN).status_code == 200
    html = httpx.get(f"{server.url}/", headers={"Accept": "text/html,*/*"}, timeout=10)
    assert html.status_code == 200 and html.headers["content-type"].startswith("text/html")
    assert 'href="/_mock/ui"' in html.text and 'href="/openapi.json"' in html.text
    assert 'href="/_mock/openapi.json"' in html.text and 'id="quick-start"' in html.text
    boxed = httpx.get(f"{server.url}/sandbox/team-a/", timeout=10).json()     # links stay in the sandbox
    assert boxed["sandbox"] == "team-a" and boxed["links"]["inspector"] == "/sandbox/team-a/_mock/ui"
    refused = httpx.post(f"{server.url}/", timeout=10)
    assert refused.status_code == 405 and refused.json()["status"] == 405 and refused.headers["allow"] == "GET"


def test_behind_a_proxy_the_home_page_suggests_the_address_the_client_used(client):
    """The mock reads no proxy headers anywhere else; the home page's quick start names the scheme and host
    a proxy says the client used (only http or https; anything else falls back to the request's own)."""
    page = client.get("/", headers={"X-Forwarded-Proto": "https", "X-Forwarded-Host": "mock.ci.example:8443"}).json()
    assert page["quick_start"]["try"][0].endswith("https://mock.ci.example:8443/organization")
    odd = client.get("/", headers={"X-Forwarded-Proto": "javascript", "Host": "mock"}).json()
    assert odd["quick_start"]["try"][0].endswith(" http://mock/organization")


@pytest.mark.server
def test_the_home_page_hides_the_tokens_of_a_mock_with_a_control_token(live_server):
    server = live_server("--control-token", "ctl-secret-1")
    page = httpx.get(f"{server.url}/", timeout=10).json()
    assert all(item["token"] is None for item in page["quick_start"]["tokens"].values())
    assert "mock-admin-token" not in httpx.get(f"{server.url}/", headers={"Accept": "text/html"}).text
