"""CORS: browser pages on other origins call the API, its errors and the control API.

Preflights are answered before the request path (no token, no rate limit, no journal entry);
every reply carries the headers a browser needs to let the page read it. `--cors-origins`
restricts the origins or turns CORS off. The last tests drive a real headless Chromium.
"""

import http.server
import threading

import httpx
import pytest
from starlette.testclient import TestClient

from conftest import ADMIN, APP, ORG, assert_error, free_port
from mockserver.cors import parse

PAGE = "http://localhost:3000"


def preflight(http_client, path, origin=PAGE, method="GET", headers="authorization"):
    return http_client.options(path, headers={"Origin": origin, "Access-Control-Request-Method": method,
                                              "Access-Control-Request-Headers": headers})


def listed(value):
    return {part.strip().lower() for part in (value or "").split(",") if part.strip()}


def journal_total(http_client):
    return http_client.get("/_mock/calls").json()["total"]


@pytest.fixture
def anonymous(server):
    with TestClient(server, base_url="http://mock") as test_client:
        yield test_client


def restricted(make_server, origins):
    return TestClient(make_server(cors_origins=origins), base_url="http://mock")


# ---------------------------------------------------------------- preflights
def test_preflight_on_an_api_path_names_its_documented_methods_and_the_asked_headers(anonymous, spec):
    reply = preflight(anonymous, f"/application/{APP}", method="PUT", headers="Authorization, Content-Type, X-Trace")
    assert reply.status_code == 204, reply.text
    assert reply.headers["access-control-allow-origin"] == PAGE
    template = spec.match("GET", f"/application/{APP}")[0].template
    documented = {op.method.lower() for op in spec.operations.values() if op.template == template}
    assert len(documented) >= 3                              # GET, PUT, DELETE at least
    assert listed(reply.headers["access-control-allow-methods"]) == documented
    assert {"authorization", "content-type", "x-mock-sandbox", "x-request-id", "x-trace"} <= listed(
        reply.headers["access-control-allow-headers"])
    assert int(reply.headers["access-control-max-age"]) > 0
    assert "origin" in listed(reply.headers["vary"])


def test_preflights_need_no_token_are_not_journaled_and_not_rate_limited(make_server):
    server = make_server(rate_limit=2, rate_window=3600)
    with TestClient(server, base_url="http://mock") as anonymous:
        for _ in range(5):
            assert preflight(anonymous, "/organization").status_code == 204
        assert journal_total(anonymous) == 0
        reply = anonymous.get("/organization", headers={**ADMIN, "Origin": PAGE})
        assert reply.status_code == 200
        assert reply.headers["x-ratelimit-remaining"] == "1"      # the preflights spent nothing
        assert journal_total(anonymous) == 1


def test_preflight_under_the_api_prefix_and_a_sandbox_prefix_finds_the_same_methods(anonymous):
    plain = preflight(anonymous, f"/application/{APP}").headers["access-control-allow-methods"]
    for path in (f"/api/v1/application/{APP}", f"/sandbox/team-a/application/{APP}",
                 f"/sandbox/team-a/api/v1/application/{APP}"):
        reply = preflight(anonymous, path)
        assert reply.status_code == 204, path
        assert listed(reply.headers["access-control-allow-methods"]) == listed(plain), path


def test_preflight_from_a_public_page_to_the_local_mock_allows_the_private_network(anonymous):
    reply = anonymous.options("/organization", headers={"Origin": "https://console.example.test",
                                                        "Access-Control-Request-Method": "GET",
                                                        "Access-Control-Request-Private-Network": "true"})
    assert reply.status_code == 204
    assert reply.headers["access-control-allow-private-network"] == "true"
    assert "access-control-allow-private-network" not in preflight(anonymous, "/organization").headers


def test_preflight_on_an_unknown_path_is_a_404_error_body(anonymous):
    reply = preflight(anonymous, "/no/such/path")
    assert_error(reply, 404)
    assert reply.headers["access-control-allow-origin"] == PAGE


def test_preflight_on_control_routes_names_their_methods(anonymous):
    reply = preflight(anonymous, "/_mock/scenarios/flaky", method="PUT", headers="content-type")
    assert reply.status_code == 204
    assert {"get", "put", "delete"} <= listed(reply.headers["access-control-allow-methods"])
    assert listed(preflight(anonymous, "/_mock/clock/advance", method="POST")
                  .headers["access-control-allow-methods"]) == {"post"}


# ---------------------------------------------------------------- replies
def test_a_reply_to_an_allowed_origin_exposes_the_rate_limit_headers(client):
    reply = client.get("/organization", headers={"Origin": PAGE})
    assert reply.status_code == 200
    assert reply.headers["access-control-allow-origin"] == PAGE
    exposed = listed(reply.headers["access-control-expose-headers"])
    assert {"x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset", "retry-after",
            "x-request-id"} <= exposed
    assert "origin" in listed(reply.headers["vary"])


def test_error_replies_carry_the_cors_headers_too(make_server):
    server = make_server(rate_limit=1, rate_window=3600)
    with TestClient(server, base_url="http://mock") as http_client:
        unauthenticated = http_client.get("/organization", headers={"Origin": PAGE})
        assert_error(unauthenticated, 401)
        assert unauthenticated.headers["access-control-allow-origin"] == PAGE
        not_found = http_client.get(f"/application/{ORG}", headers={**ADMIN, "Origin": PAGE})
        assert_error(not_found, 404)
        limited = http_client.get("/organization", headers={**ADMIN, "Origin": PAGE})
        assert_error(limited, 429)
        assert limited.headers["access-control-allow-origin"] == PAGE
        assert "retry-after" in listed(limited.headers["access-control-expose-headers"])
        assert limited.headers["retry-after"]


def test_control_replies_and_documents_carry_the_cors_headers(anonymous):
    for path in ("/_mock/health", "/_mock/calls", "/openapi.json"):
        reply = anonymous.get(path, headers={"Origin": PAGE})
        assert reply.status_code == 200, path
        assert reply.headers["access-control-allow-origin"] == PAGE, path
    advanced = anonymous.post("/_mock/clock/advance", json={"seconds": 5}, headers={"Origin": PAGE})
    assert advanced.status_code == 200
    assert advanced.headers["access-control-allow-origin"] == PAGE


def test_without_an_origin_every_origin_is_allowed_as_a_star(client):
    reply = client.get("/organization")
    assert reply.headers["access-control-allow-origin"] == "*"


def test_a_plain_options_request_is_not_a_preflight_and_still_405(client):
    reply = client.options("/organization", headers={"Origin": PAGE})
    assert_error(reply, 405)
    assert reply.headers["allow"] == "GET"


# ---------------------------------------------------------------- --cors-origins
def test_an_origin_not_in_the_list_gets_no_cors_headers(make_server):
    with restricted(make_server, "http://localhost:3000, http://127.0.0.1:*") as http_client:
        denied = preflight(http_client, "/organization", origin="http://evil.test")
        assert_error(denied, 403)
        assert not any(name.startswith("access-control-") for name in denied.headers)
        real = http_client.get("/organization", headers={**ADMIN, "Origin": "http://evil.test"})
        assert real.status_code == 200                          # answered; the browser hides it from the page
        assert "access-control-allow-origin" not in real.headers
        control = http_client.get("/_mock/health", headers={"Origin": "http://evil.test"})
        assert "access-control-allow-origin" not in control.headers
        no_origin = http_client.get("/organization", headers=ADMIN)
        assert "access-control-allow-origin" not in no_origin.headers


def test_origins_in_the_list_and_matching_a_wildcard_are_allowed(make_server):
    with restricted(make_server, "http://localhost:3000, http://127.0.0.1:*") as http_client:
        for origin in ("http://localhost:3000", "http://127.0.0.1:5173"):
            assert preflight(http_client, "/organization", origin=origin).headers[
                "access-control-allow-origin"] == origin
            real = http_client.get("/organization", headers={**ADMIN, "Origin": origin})
            assert real.headers["access-control-allow-origin"] == origin
        assert "access-control-allow-origin" not in http_client.get(
            "/organization", headers={**ADMIN, "Origin": "http://localhost:3001"}).headers


def test_cors_off_leaves_options_to_the_api_and_adds_no_headers(make_server):
    with restricted(make_server, "off") as http_client:
        reply = preflight(http_client, "/organization")
        assert_error(reply, 405)
        assert "access-control-allow-origin" not in reply.headers
        assert "access-control-allow-origin" not in http_client.get(
            "/organization", headers={**ADMIN, "Origin": PAGE}).headers


@pytest.mark.parametrize("text", ["localhost:3000", "http://localhost:3000/app", "ftp://x", ","])
def test_a_malformed_origin_list_is_refused(text):
    with pytest.raises(ValueError):
        parse(text)


# ---------------------------------------------------------------- a real browser
PAGE_SCRIPT = """<!doctype html><title>console</title><script>
async function callMock(mock, requestId) {
  try {
    const reply = await fetch(mock + "/organization",
                              {headers: {"Authorization": "Token mock-admin-token", "X-Request-Id": requestId}});
    const calls = await (await fetch(mock + "/_mock/calls?request_id=" + requestId)).json();
    return {status: reply.status, remaining: reply.headers.get("X-RateLimit-Remaining"),
            limit: reply.headers.get("X-RateLimit-Limit"), requestId: reply.headers.get("X-Request-Id"),
            journaled: calls.total};
  } catch (error) {
    return {error: String(error)};
  }
}
</script>"""


@pytest.fixture
def page_server():
    """A page on another origin (its own port on loopback): what a web console's dev server does."""
    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = PAGE_SCRIPT.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    served = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Page)
    thread = threading.Thread(target=served.serve_forever, daemon=True)
    thread.start()
    yield served.server_address[1]
    served.shutdown()
    served.server_close()


def test_a_page_on_another_origin_reads_the_rate_limit_headers(page, page_server, live_server):
    allowed = f"http://127.0.0.1:{page_server}"
    mock = live_server("--clock", "manual", "--cors-origins", allowed)
    page.goto(allowed + "/")
    result = page.evaluate("mock => callMock(mock, 'browser-call-1')", mock.url)
    assert "error" not in result, result
    assert result["status"] == 200
    assert result["limit"] == "1000"
    assert result["remaining"] == "999"
    assert result["requestId"] == "browser-call-1"
    assert result["journaled"] == 1                       # the page read the control API, too


def test_a_page_on_an_origin_not_allowed_cannot_call_the_mock(page, page_server, live_server):
    allowed = f"http://127.0.0.1:{page_server}"
    mock = live_server("--clock", "manual", "--cors-origins", allowed)
    page.goto(f"http://localhost:{page_server}/")       # same server, another origin
    result = page.evaluate("mock => callMock(mock, 'browser-call-2')", mock.url)
    assert "error" in result and "fetch" in result["error"].lower(), result
    journal = httpx.get(f"{mock.url}/_mock/calls").json()
    assert journal["total"] == 0                        # the preflight failed, so the call was never sent
