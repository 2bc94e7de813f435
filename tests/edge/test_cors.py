"""CORS: browser pages on other origins call the API, its errors and the control API.

Preflights are answered before the request path (no token, no rate limit, no journal entry);
every reply carries the headers a browser needs to let the page read it. By default only pages
served from this machine (`local`) may; `--cors-origins` names others, opens the API to every
page (`*`) or turns CORS off. Whatever it says, a page of an origin it does not name can neither
use the control API nor read the secrets' export. The tests marked `browser` drive a real headless Chromium.
"""

import http.server
import threading

import httpx
import pytest
from starlette.testclient import TestClient
from support.http import assert_error, free_port
from support.ids import ADMIN, APP, ORG

from mockserver.edge.cors import parse

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


def private_network_preflight(http_client, origin):
    return http_client.options("/organization", headers={"Origin": origin, "Access-Control-Request-Method": "GET",
                                                         "Access-Control-Request-Private-Network": "true"})


def test_private_network_access_is_approved_only_for_an_origin_the_list_names(make_server):
    public = "https://console.example.test"
    assert_error(private_network_preflight(TestClient(make_server(), base_url="http://mock"), public), 403)
    with restricted(make_server, f"local,{public}") as named:
        reply = private_network_preflight(named, public)
        assert reply.status_code == 204
        assert reply.headers["access-control-allow-private-network"] == "true"
        local = private_network_preflight(named, PAGE)               # allowed, but by `local`, not named
        assert local.status_code == 204 and "access-control-allow-private-network" not in local.headers
    with restricted(make_server, "*") as anyone:
        reply = private_network_preflight(anyone, public)
        assert reply.status_code == 204 and reply.headers["access-control-allow-origin"] == "*"
        assert "access-control-allow-private-network" not in reply.headers


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


def test_without_an_origin_a_star_is_sent_only_when_every_origin_is_allowed(client, make_server):
    assert "access-control-allow-origin" not in client.get("/organization").headers
    with restricted(make_server, "*") as anyone:
        assert anyone.get("/organization", headers=ADMIN).headers["access-control-allow-origin"] == "*"


def test_a_plain_options_request_is_not_a_preflight_and_still_405(client):
    reply = client.options("/organization", headers={"Origin": PAGE})
    assert_error(reply, 405)
    assert reply.headers["allow"] == "GET, HEAD"


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
        assert_error(control, 403)                              # the control API refuses it outright
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
        assert_error(http_client.post("/_mock/reset", headers={"Origin": "http://evil.test"}), 403)


@pytest.mark.parametrize("text", ["localhost:3000", "http://localhost:3000/app", "ftp://x", ",", "local,off"])
def test_a_malformed_origin_list_is_refused(text):
    with pytest.raises(ValueError):
        parse(text)


# ---------------------------------------------------------------- the defaults: pages of this machine only
@pytest.mark.parametrize("origin", ["http://localhost:3000", "http://localhost", "https://localhost:8443",
                                    "http://127.0.0.1:5173", "http://[::1]:8080", "HTTP://LOCALHOST:3000"])
def test_by_default_pages_served_from_this_machine_call_the_api_and_the_control_api(client, origin):
    for path in ("/organization", "/_mock/calls"):
        reply = client.get(path, headers={"Origin": origin})
        assert reply.status_code == 200, (path, reply.text)
        assert reply.headers["access-control-allow-origin"] == origin
        assert reply.headers["access-control-allow-credentials"] == "true"
    assert preflight(client, "/_mock/reset", origin=origin, method="POST").status_code == 204


@pytest.mark.parametrize("origin", ["https://evil.test", "http://localhost.evil.test", "http://127.0.0.2:3000",
                                    "http://localhost:3000.evil.test", "null"])
def test_by_default_a_page_of_any_other_origin_gets_no_cors_headers_and_no_control_api(client, origin):
    api = client.get("/organization", headers={"Origin": origin})
    assert api.status_code == 200                            # answered; the browser keeps it from the page
    assert not any(name.startswith("access-control-") for name in api.headers)
    assert_error(preflight(client, "/organization", origin=origin), 403)
    assert_error(preflight(client, "/_mock/reset", origin=origin, method="POST"), 403)
    assert_error(client.get("/_mock/state/export", headers={"Origin": origin}), 403)


def test_a_simple_cross_site_post_cannot_reset_the_mock(client):
    """A form's POST or a "simple" fetch reaches the server without a preflight: the guard refuses it."""
    made = client.post(f"/organization/{ORG}/project", json={"name": "kept"})
    assert made.status_code == 201
    for body, media in ((b"", "text/plain"), (b"scenarios=true", "application/x-www-form-urlencoded")):
        reply = client.post("/_mock/reset", content=body,
                            headers={"Origin": "https://evil.test", "Content-Type": media})
        body_of = assert_error(reply, 403)
        assert "https://evil.test" in body_of["message"] and "--cors-origins" in body_of["message"]
    for path in ("/_mock/clock/advance", "/_mock/sandboxes", "/sandbox/x/_mock/reset", "/_mock/snapshots"):
        assert_error(client.post(path, content=b"{}", headers={"Origin": "https://evil.test"}), 403)
    assert client.get(f"/project/{made.json()['id']}").status_code == 200      # nothing was reset
    assert [box["name"] for box in client.get("/_mock/sandboxes").json()["results"]] == ["default"]


def test_the_mocks_own_pages_use_the_control_api_whatever_their_origin(make_server):
    """The inspector's page posts with its own origin (the Host it was served from): never refused."""
    with restricted(make_server, "off") as http_client:
        reply = http_client.post("/_mock/reset", headers={"Origin": "http://mock", "Host": "mock"})
        assert reply.status_code == 200, reply.text
        on_a_host = http_client.post("/_mock/reset",              # a dotted name would have to be listed
                                     headers={"Origin": "http://mockbox:8080", "Host": "mockbox:8080"})
        assert on_a_host.status_code == 200


def test_a_star_opens_the_api_to_every_page_without_credentials_but_not_the_control_api(make_server):
    with restricted(make_server, "*") as anyone:
        reply = anyone.get("/organization", headers={**ADMIN, "Origin": "https://console.example.test"})
        assert reply.headers["access-control-allow-origin"] == "*"
        assert "access-control-allow-credentials" not in reply.headers
        assert preflight(anyone, "/organization", origin="https://console.example.test").status_code == 204
        assert_error(anyone.get("/_mock/calls", headers={"Origin": "https://console.example.test"}), 403)
        assert_error(preflight(anyone, "/_mock/reset", origin="https://console.example.test", method="POST"), 403)
        local = anyone.get("/_mock/calls", headers={"Origin": PAGE})   # `*` alone names nothing, not even local
        assert_error(local, 403)
    with restricted(make_server, "*,local") as both:
        named = both.get("/_mock/calls", headers={"Origin": PAGE})
        assert named.status_code == 200 and named.headers["access-control-allow-credentials"] == "true"


def test_a_listed_origin_may_use_the_control_api(make_server):
    with restricted(make_server, "https://console.example.test, http://10.0.0.*:*") as http_client:
        for origin in ("https://console.example.test", "http://10.0.0.7:3000"):
            reply = http_client.post("/_mock/clock/advance", json={"seconds": 1}, headers={"Origin": origin})
            assert reply.status_code == 200, reply.text
            assert reply.headers["access-control-allow-origin"] == origin
        assert_error(http_client.get("/_mock/calls", headers={"Origin": PAGE}), 403)   # local is not in this list


# ---------------------------------------------------------------- the export of secrets
def export_with_secrets(http_client, **headers):
    return http_client.get("/_mock/state/export", params={"secrets": "include"}, headers=headers)


def test_secrets_are_never_exported_to_a_page_of_another_origin(client, make_server):
    assert "WARNING: this export holds secrets" in export_with_secrets(client).text         # curl, a script
    assert export_with_secrets(client, **{"Sec-Fetch-Site": "same-origin"}).status_code == 200
    refused = assert_error(export_with_secrets(client, Origin=PAGE), 403)                    # even a named one
    assert "secrets=include" in refused["message"]
    assert_error(export_with_secrets(client, **{"Sec-Fetch-Site": "cross-site"}), 403)     # a no-cors read
    assert_error(export_with_secrets(client, **{"Sec-Fetch-Site": "same-site"}), 403)      # localhost:3000
    assert client.get("/_mock/state/export", headers={"Origin": PAGE}).status_code == 200  # placeholders only
    with restricted(make_server, "*, https://console.example.test") as http_client:
        assert_error(export_with_secrets(http_client, Origin="https://console.example.test"), 403)


def test_the_export_of_secrets_needs_the_control_token_when_one_is_set(make_server):
    with TestClient(make_server(control_token="ctl-secret"), base_url="http://mock") as http_client:
        assert_error(export_with_secrets(http_client), 401)
        assert_error(export_with_secrets(http_client, Authorization="Bearer wrong"), 401)
        good = export_with_secrets(http_client, Authorization="Bearer ctl-secret")
        assert good.status_code == 200 and "WARNING: this export holds secrets" in good.text


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


ATTACK_SCRIPT = """<!doctype html><title>a page elsewhere</title><script>
async function attempt(fetching) {
  try {
    const reply = await fetching();
    return {status: reply.status, text: reply.type === "opaque" ? null : await reply.text()};
  } catch (error) {
    return {error: String(error)};
  }
}
async function attack(mock) {
  // a form's POST to the control API: sent without a preflight, the page never sees the answer
  const frame = document.createElement("iframe");
  frame.name = "sink";
  document.body.appendChild(frame);
  const form = document.createElement("form");
  Object.assign(form, {method: "POST", action: mock + "/_mock/reset", target: "sink"});
  document.body.appendChild(form);
  const posted = new Promise(done => { frame.onload = done; setTimeout(done, 3000); });
  form.submit();
  await posted;
  return {
    secrets: await attempt(() => fetch(mock + "/_mock/state/export?secrets=include")),
    export: await attempt(() => fetch(mock + "/_mock/state/export")),
    silentReset: await attempt(() => fetch(mock + "/_mock/reset", {method: "POST", mode: "no-cors"})),
    reset: await attempt(() => fetch(mock + "/_mock/reset", {method: "POST", body: "{}",
                                                             headers: {"Content-Type": "application/json"}})),
  };
}
</script>"""


def serve_page(host, script):
    """A page on its own origin (a host and port on loopback): what a web console's dev server, or any
    site the developer browses, does."""
    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = script.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    served = http.server.ThreadingHTTPServer((host, free_port()), Page)
    threading.Thread(target=served.serve_forever, daemon=True).start()
    return served


@pytest.fixture
def page_server():
    """The console's page, served on 127.0.0.1 (also reachable as localhost)."""
    served = serve_page("127.0.0.1", PAGE_SCRIPT)
    yield served.server_address[1]
    served.shutdown()
    served.server_close()


@pytest.fixture
def elsewhere():
    """A page of another site: served on 127.0.0.2, an origin no default names."""
    served = serve_page("127.0.0.2", ATTACK_SCRIPT)
    yield f"http://127.0.0.2:{served.server_address[1]}"
    served.shutdown()
    served.server_close()


def world_of(mock):
    """A project made through the API, to see whether the mock was reset."""
    made = httpx.post(f"{mock.url}/organization/{ORG}/project", json={"name": "still-here"}, headers=ADMIN)
    assert made.status_code == 201, made.text
    return f"{mock.url}/project/{made.json()['id']}"


@pytest.mark.server
@pytest.mark.browser
def test_a_page_of_another_site_can_neither_read_the_secrets_nor_reset_the_mock_by_default(page, elsewhere,
                                                                                            live_server):
    mock = live_server("--clock", "manual")
    project = world_of(mock)
    page.goto(elsewhere + "/")
    result = page.evaluate("mock => attack(mock)", mock.url)
    for name in ("secrets", "export", "reset"):
        assert "error" in result[name] and "fetch" in result[name]["error"].lower(), (name, result)
    assert result["silentReset"] == {"status": 0, "text": None}        # sent, opaque to the page ...
    assert httpx.get(project, headers=ADMIN).status_code == 200          # ... and refused: nothing was reset
    secret = httpx.get(f"{mock.url}/_mock/state/export", params={"secrets": "include"})
    assert secret.status_code == 200 and "WARNING" in secret.text      # the export itself works from curl


@pytest.mark.server
@pytest.mark.browser
def test_a_page_of_an_origin_the_list_names_drives_the_mock_but_never_reads_the_secrets(page, elsewhere,
                                                                                         live_server):
    mock = live_server("--clock", "manual", "--cors-origins", f"local,{elsewhere}")
    project = world_of(mock)
    page.goto(elsewhere + "/")
    result = page.evaluate("mock => attack(mock)", mock.url)
    assert result["export"]["status"] == 200 and "organizations:" in result["export"]["text"], result
    assert "<fill in:" in result["export"]["text"] or "WARNING" not in result["export"]["text"]
    assert result["secrets"]["status"] == 403 and "secrets=include" in result["secrets"]["text"]
    assert result["reset"]["status"] == 200
    assert httpx.get(project, headers=ADMIN).status_code == 404          # the named page reset the mock


@pytest.mark.server
@pytest.mark.browser
def test_a_page_served_from_this_machine_works_with_the_defaults(page, page_server, live_server):
    mock = live_server("--clock", "manual")
    page.goto(f"http://localhost:{page_server}/")
    result = page.evaluate("mock => callMock(mock, 'local-page-1')", mock.url)
    assert "error" not in result, result
    assert (result["status"], result["requestId"], result["journaled"]) == (200, "local-page-1", 1)


@pytest.mark.server
@pytest.mark.browser
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


@pytest.mark.server
@pytest.mark.browser
def test_a_page_on_an_origin_not_allowed_cannot_call_the_mock(page, page_server, live_server):
    allowed = f"http://127.0.0.1:{page_server}"
    mock = live_server("--clock", "manual", "--cors-origins", allowed)
    page.goto(f"http://localhost:{page_server}/")       # same server, another origin
    result = page.evaluate("mock => callMock(mock, 'browser-call-2')", mock.url)
    assert "error" in result and "fetch" in result["error"].lower(), result
    journal = httpx.get(f"{mock.url}/_mock/calls").json()
    assert journal["total"] == 0                        # the preflight failed, so the call was never sent


def test_a_star_in_an_origin_pattern_stands_for_one_label_only(make_server):
    server = make_server(cors_origins="local,http://10.0.0.*:*,https://*.example.test")
    with TestClient(server, base_url="http://mock", headers=ADMIN) as client:
        for origin in ("http://10.0.0.5:8080", "http://10.0.0.5", "https://console.example.test"):
            reply = client.get("/organization", headers={"Origin": origin})
            assert reply.headers.get("access-control-allow-origin") == origin, origin
        for origin in ("http://10.0.0.5.elsewhere.example:80", "https://a.b.example.test.elsewhere.example"):
            assert "access-control-allow-origin" not in client.get("/organization", headers={"Origin": origin}).headers
            assert_error(client.post("/_mock/reset", headers={"Origin": origin}), 403)
        assert client.get("/_mock/clock").status_code == 200
