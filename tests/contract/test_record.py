"""The recording proxy: `mockserver record --upstream URL` (and `serve --upstream URL`).

The upstream is always a server on 127.0.0.1: a second `mockserver serve`, or a small server of the
test's own (tests/support/upstream.py) for replies a mock would never send. Checked over HTTP: the client gets
the upstream's replies byte for byte, each exchange is journaled with its drift, --only/--except leave
the rest to the mock, and a recording writes a HAR file and fixtures that load, serve the same records,
and hold no secret value. Outputs that cannot be written stop the start, or, when they fail at the stop, are
named in one line each and the exit status is 1.
"""

import gzip
import http.client
import json
import os
import signal
import subprocess
import sys
from urllib.parse import urlsplit

import httpx
import jsonschema
import orjson
import pytest
from starlette.testclient import TestClient
from support import ROOT
from support.cli import one_line, run
from support.http import free_port, wait_for
from support.ids import ADMIN, ORG
from support.upstream import PLATFORM, PLATFORM_TOKEN, Tiny, Upstream, platform_folder

from mockserver.document.spec import Spec
from mockserver.world.export import project

SECRETS = ("s3cret-APP-value-41c7", "registry-PASSWORD-88e2", "webhook-SIGNING-secret-1d90")
HOP = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "te", "trailer", "upgrade"}


@pytest.fixture(scope="module")
def platform_fixtures(tmp_path_factory):
    return platform_folder(tmp_path_factory.mktemp("platform"))


def raw_request(url, method, path, headers=(), body=None):
    """(status, [(name, value)...] as received, body bytes): no decoding of any kind."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        connection.request(method, path, body=body, headers=dict(headers))
        reply = connection.getresponse()
        return reply.status, reply.getheaders(), reply.read()
    finally:
        connection.close()


def end_to_end(headers):
    return [(name.lower(), value) for name, value in headers if name.lower() not in HOP]


# ---------------------------------------------------------------- forwarding
ODD_BODY = b'{"id" :  "not-a-uuid",\n  "name": "caf\\u00e9", "n": 1.50}  \n'
GZIPPED = gzip.compress(b'{"results": [], "page": 1}')


def odd_answer(request):
    if request["path"].startswith("/organization/"):
        return 201, [("Content-Type", "application/json; charset=utf-8"), ("X-Platform-Trace", "t-17"),
                     ("Set-Cookie", "a=1; Path=/"), ("Set-Cookie", "b=2; Path=/"),
                     ("Date", "Tue, 01 Jan 2030 00:00:00 GMT"),
                     ("Server", "platform/7"), ("X-RateLimit-Limit", "1000")], ODD_BODY
    return 200, [("Content-Type", "application/json"), ("Content-Encoding", "gzip"),
                 ("Vary", "Accept-Encoding")], GZIPPED


@pytest.mark.server
def test_the_client_gets_the_upstreams_reply_byte_for_byte(processes):
    upstream = Upstream(odd_answer)
    try:
        recorder = processes("record", "--upstream", upstream.url)
        sent = [("Authorization", "Token caller-token-0042"), ("Connection", "keep-alive, X-Drop-Me"),
                ("X-Drop-Me", "1"), ("Keep-Alive", "timeout=5"), ("X-Caller", "kept"),
                ("Content-Type", "application/json")]
        path = f"/organization/{ORG}/project?page=1&x=%C3%A9"
        direct = raw_request(upstream.url, "POST", path, sent, b'{"name": "byte"}')
        via = raw_request(recorder.url, "POST", path, sent, b'{"name": "byte"}')
        assert via[0] == direct[0] == 201
        assert via[2] == direct[2] == ODD_BODY                                # the body, byte for byte
        assert end_to_end(via[1]) == end_to_end(direct[1])                    # every header, in order
        assert ("set-cookie", "b=2; Path=/") in end_to_end(via[1])

        compressed = raw_request(recorder.url, "GET", "/elsewhere", [("Accept-Encoding", "gzip")])
        assert compressed[2] == GZIPPED and ("content-encoding", "gzip") in end_to_end(compressed[1])

        forwarded = upstream.requests[1]
        assert forwarded["path"] == path and forwarded["body"] == b'{"name": "byte"}'
        names = {name.lower(): value for name, value in forwarded["headers"]}
        assert names["authorization"] == "Token caller-token-0042" and names["x-caller"] == "kept"
        assert not {"keep-alive", "x-drop-me", "connection"} & set(names)    # hop-by-hop never forwarded
        assert names["host"] == urlsplit(upstream.url).netloc

        calls = httpx.get(f"{recorder.url}/_mock/calls").json()["results"]
        assert [call["status"] for call in calls] == [201, 200]
        first = calls[0]
        assert first["headers"]["authorization"] == "Token ...0042"
        assert first["response_headers"]["set-cookie"] == "**redacted**"
        found = {(item["kind"], item["path"]) for item in first["drift"]}
        assert {("header", "x-ratelimit-remaining"), ("missing", "$.created_at"), ("type", "$.id"),
                ("added", "$.n")} <= found
        assert calls[1]["response"] == {"results": [], "page": 1}                       # journaled decoded
        assert calls[1]["drift"][0]["kind"] == "route"
    finally:
        upstream.stop()


PROJECT_ID = "3f1e5a7c-9b2d-4c6e-8a0f-1b3d5e7f9a2c"
ENV_ID = "4a2c6e8a-0c2e-4a6c-9e0a-2c4e6a8c0e4a"
RATE = [("X-RateLimit-Limit", "1000"), ("X-RateLimit-Remaining", "999"), ("X-RateLimit-Reset", "1900000000")]
STAMP = "2026-11-20T09:30:00.000000Z"


def drifting_answer(request):
    """Replies a mock would never send: a field missing, one added, one of another type, an unknown enum
    value, a 200 where the document says 201, and no rate-limit headers on one of them."""
    json_type = [("Content-Type", "application/json")]
    path = request["path"].removeprefix("/api/v1")
    if path == f"/project/{PROJECT_ID}":
        body = {"id": PROJECT_ID, "created_at": STAMP, "name": "drifted", "organization": {"id": ORG},
                "associated_environments_count": "2", "associated_services_count": 0, "color": "teal"}
        return 200, json_type + RATE, json.dumps(body).encode()
    if path == f"/environment/{ENV_ID}":
        body = {"id": ENV_ID, "created_at": STAMP, "updated_at": STAMP, "name": "qa", "organization": {"id": ORG},
                "project": {"id": PROJECT_ID}, "cloud_provider": {"provider": "CLOUDA", "cluster": "c"},
                "mode": "SANDBOX", "cluster_id": ENV_ID}
        return 200, json_type, json.dumps(body).encode()
    body = {"id": PROJECT_ID, "created_at": STAMP, "updated_at": STAMP, "name": "new", "organization": {"id": ORG},
            "associated_environments_count": 0, "associated_services_count": 0}
    return 200, json_type + RATE, json.dumps(body).encode()


@pytest.fixture
def recording(make_server):
    """An in-process recording mock in front of an upstream of the test's: (client, upstream)."""
    started = []

    def start(answer, **settings):
        upstream = Upstream(answer)
        started.append(upstream)
        server = make_server(upstream=upstream.url, **settings)
        client = TestClient(server, base_url="http://mock", headers=PLATFORM)
        started.append(client)
        return client, upstream
    yield start
    for item in started:
        (item.close if isinstance(item, TestClient) else item.stop)()


@pytest.mark.server
def test_each_exchange_is_journaled_with_its_drift_and_the_rest_is_the_mocks(recording):
    api, upstream = recording(drifting_answer, excluded=["/organization"])
    mine = api.get("/organization", headers={"Authorization": "Token mock-admin-token"})
    assert mine.status_code == 200 and mine.json()["id"] == ORG and "x-request-id" in mine.headers
    assert api.get(f"/project/{PROJECT_ID}").json()["color"] == "teal"
    assert api.get(f"/environment/{ENV_ID}").json()["mode"] == "SANDBOX"
    assert api.post(f"/organization/{ORG}/project", json={"name": "new"}).status_code == 200
    assert [request["path"] for request in upstream.requests] == [
        f"/project/{PROJECT_ID}", f"/environment/{ENV_ID}", f"/organization/{ORG}/project"]   # not /organization

    calls = api.get("/_mock/calls").json()["results"]
    assert "drift" not in calls[0] and calls[0]["token"] == "admin"                  # answered by the mock
    drift = {call["operation"]: {(item["kind"], item["path"]) for item in call["drift"]} for call in calls[1:]}
    assert drift["getProject"] == {("missing", "$.updated_at"), ("added", "$.color"),
                                   ("type", "$.associated_environments_count")}
    assert ("enum", "$.mode") in drift["getEnvironment"]
    assert {("header", name) for name in ("x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset")} \
        <= drift["getEnvironment"]
    assert drift["createProject"] == {("status", "status")}
    enum = next(item for item in calls[2]["drift"] if item["kind"] == "enum")
    assert enum["actual"] == "SANDBOX" and "not a value the document knows" in enum["message"]


@pytest.mark.server
def test_only_forwards_the_paths_its_globs_name(recording):
    api, upstream = recording(drifting_answer, only=["/environment/{environmentId}", "/project/*"])
    assert api.get(f"/environment/{ENV_ID}").json()["mode"] == "SANDBOX"        # by the operation's template
    assert api.get(f"/project/{PROJECT_ID}").json()["name"] == "drifted"        # by a path glob
    assert api.get(f"/api/v1/project/{PROJECT_ID}").json()["name"] == "drifted"  # and under /api/v1
    mock_answer = api.post(f"/organization/{ORG}/project", json={"name": "local"},
                           headers={"Authorization": "Token mock-write-token"})
    assert mock_answer.status_code == 201 and mock_answer.json()["name"] == "local"
    assert len(upstream.requests) == 3 and upstream.requests[2]["path"] == f"/api/v1/project/{PROJECT_ID}"


def test_an_unreachable_upstream_is_a_502_in_the_error_body_and_journaled(make_server):
    api = TestClient(make_server(upstream=f"http://127.0.0.1:{free_port()}"), base_url="http://mock", headers=PLATFORM)
    reply = api.get("/organization")
    assert reply.status_code == 502
    assert reply.json()["status"] == 502 and reply.json()["error"] == "Bad Gateway"
    assert "cannot be reached" in reply.json()["message"]
    call = api.get("/_mock/calls").json()["results"][0]
    assert call["status"] == 502 and call["drift"][0]["kind"] == "upstream"


@pytest.mark.server
def test_record_needs_an_upstream_and_its_options_need_one_too():
    for args, needle in ((["record"], "record needs --upstream"), (["serve", "--har", "x.har"], "--har need"),
                         (["record", "--upstream", "ftp://x"], "http:// or https://"),
                         (["record", "--upstream", "http://127.0.0.1:9", "--only", "project/*"], "starts with /"),
                         (["check", "fixtures", "--fixtures", "elsewhere"], "two fixtures folders")):
        result = subprocess.run([sys.executable, "-m", "mockserver", *args], cwd=ROOT, capture_output=True, text=True,
                                timeout=30)
        assert result.returncode == 2 and needle in result.stderr and "Traceback" not in result.stderr, args


# ---------------------------------------------------------------- a whole recording
HAR_SCHEMA = {            # the parts of HAR 1.2 every entry must have (W3C HAR 1.2, "log", "entries")
    "type": "object", "required": ["log"],
    "properties": {"log": {
        "type": "object", "required": ["version", "creator", "entries"],
        "properties": {
            "version": {"const": "1.2"},
            "creator": {"type": "object", "required": ["name", "version"]},
            "entries": {"type": "array", "items": {
                "type": "object", "required": ["startedDateTime", "time", "request", "response", "cache", "timings"],
                "properties": {
                    "startedDateTime": {"type": "string", "format": "date-time"},
                    "time": {"type": "number", "minimum": 0},
                    "request": {"type": "object", "required": ["method", "url", "httpVersion", "cookies", "headers",
                                                               "queryString", "headersSize", "bodySize"],
                                "properties": {"postData": {"type": "object", "required": ["mimeType", "text"]}}},
                    "response": {"type": "object", "required": ["status", "statusText", "httpVersion", "cookies",
                                                                "headers", "content", "redirectURL", "headersSize",
                                                                "bodySize"],
                                 "properties": {"content": {"type": "object", "required": ["size", "mimeType"]}}},
                    "timings": {"type": "object", "required": ["send", "wait", "receive"]},
                }}},
        }}},
}


def walk_the_organization(api):
    """What a client reads of its organization, and a few records it creates: the GET paths it read."""
    secret, password, signing = SECRETS
    org = api.get("/organization").json()["id"]
    env = "e4a6c8b0-2d4f-4a6c-8e0b-2d4f6a8c0e84"
    app = "a7c9e1b3-5d7f-4b9d-8f1b-3d5f7b9d1fa5"
    project = api.get(f"/organization/{org}/project").json()["results"][0]["id"]
    assert api.post(f"/application/{app}/secret", json={"key": "RECORDED_SECRET", "value": secret}).status_code == 201
    assert api.post(f"/organization/{org}/containerRegistry", json={
        "name": "recorded-registry", "kind": "GENERIC_CR", "url": "https://registry.recorded.example",
        "config": {"username": "bot", "password": password}}).status_code == 201
    assert api.post(f"/organization/{org}/webhook", json={
        "target_url": "https://hooks.recorded.example/x", "events": ["DEPLOYMENT_STARTED"], "enabled": True,
        "target_secret": signing}).status_code == 201
    variable = api.post(f"/project/{project}/environmentVariable", json={"key": "RECORDED_KEY", "value": "eu"}).json()
    assert api.post(f"/variable/{variable['id']}/override", json={
        "value": "us", "override_scope": "ENVIRONMENT", "override_parent_id": env}).status_code == 201
    reads = [f"/organization/{org}/cluster", f"/organization/{org}/containerRegistry",
             f"/organization/{org}/labelsGroups",
             f"/organization/{org}/webhook", f"/organization/{org}/project", f"/project/{project}",
             f"/project/{project}/environmentVariable", f"/project/{project}/secret", f"/project/{project}/environment",
             f"/environment/{env}", f"/environment/{env}/environmentVariable", f"/environment/{env}/secret",
             f"/environment/{env}/application", f"/environment/{env}/container", f"/environment/{env}/database",
             f"/environment/{env}/job", f"/environment/{env}/helm", f"/environment/{env}/terraform",
             f"/application/{app}", f"/application/{app}/status", f"/application/{app}/environmentVariable",
             f"/application/{app}/secret"]
    for path in reads:
        assert api.get(path).status_code == 200, path
    return ["/organization", *reads]


def records_of(reply):
    body = reply.json()
    items = body.get("results", [body]) if "results" in body and not body.get("name") else [body]
    return {item["id"]: item for item in items
            if item.get("variable_type") != "BUILT_IN" and "id" in item and "state" not in item}


REQUEST_SCHEMAS = {"Project": "ProjectRequest", "Environment": "EnvironmentRequest",
                   "Application": "ApplicationRequest",
                   "Container": "ContainerRequest", "Database": "DatabaseRequest", "Job": "JobRequest",
                   "Helm": "HelmRequest", "Terraform": "TerraformRequest", "Variable": "VariableRequest",
                   "Secret": "VariableRequest", "ContainerRegistry": "ContainerRegistryRequest",
                   "LabelsGroup": "LabelsGroupRequest", "Webhook": "WebhookRequest", "Cluster": None}


def same_fields(spec, path, theirs, ours):
    """The fields a record's create request declares agree (webhooks: all but `enabled`, kept off on purpose)."""
    operation = spec.match("GET", path)[0]
    name = operation.responses[200]["$ref"].rsplit("/", 1)[-1].removesuffix("List")
    schema = REQUEST_SCHEMAS.get(name)
    if schema is None:
        fields = ("name", "description", "plan", "region", "version", "cloud_provider", "is_default", "production")
        return {k: theirs.get(k) for k in fields} == {k: ours.get(k) for k in fields}
    ref = {"$ref": f"#/components/schemas/{schema}"}
    mine, recorded = project(ours, ref, spec.components), project(theirs, ref, spec.components)
    if name == "Webhook":
        assert ours["enabled"] is False
        mine.pop("enabled"), recorded.pop("enabled")
    return mine == recorded


@pytest.mark.server
def test_a_recording_writes_a_har_and_fixtures_that_serve_the_same_records(processes, platform_fixtures, tmp_path):
    platform = processes("serve", "--fixtures", str(platform_fixtures))
    har_file, out = tmp_path / "session.har", tmp_path / "recorded"
    recorder = processes("record", "--upstream", platform.url, "--har", str(har_file), "--fixtures-out", str(out),
                         "--access-log", "--log-level", "info")
    with httpx.Client(base_url=recorder.url, headers=PLATFORM, timeout=10) as api:
        paths = walk_the_organization(api)
        journal = api.get("/_mock/calls").text
    assert recorder.stop() in (0, -signal.SIGTERM)
    logs = recorder.output
    assert f"wrote {har_file}" in logs and "recorded.yaml" in logs

    har = orjson.loads(har_file.read_bytes())
    jsonschema.validate(har, HAR_SCHEMA, format_checker=jsonschema.FormatChecker())
    assert len(har["log"]["entries"]) == len(paths) + 6
    assert all(entry["request"]["url"].startswith(platform.url + "/") for entry in har["log"]["entries"])
    fixtures = (out / "recorded.yaml").read_text()
    for text, where in ((har_file.read_text(), "HAR"), (fixtures, "fixtures"), (journal, "journal"), (logs, "logs")):
        for secret in (*SECRETS, PLATFORM_TOKEN):
            assert secret not in text, f"{secret} in the {where}"
    assert "value: '<fill in: secret RECORDED_SECRET of application web>'" in fixtures      # placeholders instead
    assert "target_secret: '<fill in: target_secret of webhook https://hooks.recorded.example/x>'" in fixtures

    check = subprocess.run([sys.executable, "-m", "mockserver", "check", str(out)], cwd=ROOT,
                           capture_output=True, text=True, timeout=60)
    assert check.returncode == 0 and f"fixtures {out}" in check.stdout, check.stderr
    served = processes("serve", "--fixtures", str(out))
    spec = Spec.load()
    with httpx.Client(headers=PLATFORM, timeout=10) as upstream, \
            httpx.Client(headers={"Authorization": "Token mock-admin-token"}, timeout=10) as mock:
        for path in paths[1:]:
            theirs, ours = records_of(upstream.get(platform.url + path)), records_of(mock.get(served.url + path))
            assert theirs.keys() == ours.keys(), path                      # the same records, by id
            for ident, record in theirs.items():
                assert (record.get("name"), record.get("key")) == (ours[ident].get("name"), ours[ident].get("key"))
                assert same_fields(spec, path, record, ours[ident]), (path, ident)
        assert mock.get(f"{served.url}/application/a7c9e1b3-5d7f-4b9d-8f1b-3d5f7b9d1fa5/status").json()["state"] == \
            "DEPLOYED"


@pytest.mark.server
@pytest.mark.browser
def test_the_inspector_shows_a_forwarded_calls_drift(processes, page):
    from playwright.sync_api import expect
    upstream = Upstream(drifting_answer)
    try:
        recorder = processes("record", "--upstream", upstream.url, "--only", "/project/*")
        httpx.get(f"{recorder.url}/organization", headers={"Authorization": "Token mock-admin-token"})
        httpx.get(f"{recorder.url}/project/{PROJECT_ID}", headers=PLATFORM)
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(f"{recorder.url}/_mock/ui#calls")
        rows = page.locator("#call-rows tr")
        expect(rows).to_have_count(2)
        rows.nth(0).click()
        detail = page.locator("#call-detail")
        expect(detail).to_contain_text("the upstream (recorded)")
        expect(detail.locator("ul.drift li")).to_have_count(3)
        expect(detail).to_contain_text("$.updated_at")
        expect(detail).to_contain_text("the platform sends a field the document does not have")
        rows.nth(1).click()
        expect(detail).to_contain_text("the mock")
        expect(detail.locator("ul.drift")).to_have_count(0)
        assert errors == []
    finally:
        upstream.stop()


# ---------------------------------------------------------------- outputs checked at the start and at the stop
@pytest.mark.server
def test_record_outputs_that_cannot_be_written_stop_the_start_in_one_line_each(tmp_path):
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    for har, out in (("/proc/nope/s.har", "/proc/nope2"), (str(a_file / "s.har"), str(a_file / "out"))):
        result = run("record", "--upstream", "http://127.0.0.1:18699", "--port", str(free_port()), "--har", har,
                     "--fixtures-out", out, timeout=30)
        assert result.returncode == 2, result.stderr
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 2 and "Traceback" not in result.stderr, result.stderr
        assert lines[0].startswith(f"mockserver: --har {har}: ")
        assert lines[1].startswith(f"mockserver: --fixtures-out {out}: ")
    result = run("record", "--upstream", "http://127.0.0.1:18699", "--port", str(free_port()), "--har", str(tmp_path),
                 timeout=30)
    assert result.returncode == 2 and "it is a folder" in one_line(result.stderr)


@pytest.mark.server
def test_a_recording_whose_outputs_fail_at_the_stop_says_so_in_one_line_each_and_exits_1(tmp_path):
    upstream = Tiny(free_port(), 200, {"id": ORG, "name": "Acme", "results": []})
    har, out = tmp_path / "har" / "s.har", tmp_path / "fixtures"
    har.parent.mkdir()                                  # --har in a folder that does not exist is refused
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "mockserver", "record", "--upstream", upstream.url,
                                "--port", str(port), "--har", str(har), "--fixtures-out", str(out)], cwd=ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        wait_for(f"http://127.0.0.1:{port}/_mock/health")
        assert httpx.get(f"http://127.0.0.1:{port}/organization", headers=ADMIN, timeout=10).status_code == 200
        assert upstream.requests
        har.parent.rmdir()
        (tmp_path / "har").write_text("now a file")        # both outputs can no longer be written
        out.write_text("now a file")
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
        upstream.stop()
    assert process.returncode == 1, err
    assert "Traceback" not in err
    failures = [line for line in err.splitlines() if "cannot write" in line]
    assert len(failures) == 2, err
    assert str(har) in failures[0] and "lost" in failures[0]
    assert str(out / "recorded.yaml") in failures[1] and "lost" in failures[1]
