"""X-Request-Id on every reply and in the journal, and the access log in its two formats."""

import json
import re

import httpx
import pytest
from starlette.testclient import TestClient
from support.http import assert_error
from support.ids import ADMIN, APP

from mockserver.edge.accesslog import access_logger
from mockserver.edge.requestid import LIMIT

TEXT_LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (?P<method>[A-Z]+) (?P<path>\S+) (?P<status>\d+) "
                       r"(?P<latency>\d+\.\d\d)ms (?P<operation>\S+) token=(?P<token>\S+)"
                       r"(?: sandbox=(?P<sandbox>\S+))?(?: rule=(?P<rule>\S+))? request_id=(?P<request_id>\S+)$")


def journal(http_client, **filters):
    reply = http_client.get("/_mock/calls", params=filters)
    assert reply.status_code == 200, reply.text
    return reply.json()["results"]


# ---------------------------------------------------------------- X-Request-Id
def test_a_request_id_sent_by_the_client_is_echoed_and_journaled(client):
    reply = client.get("/organization", headers={"X-Request-Id": "console-4711"})
    assert reply.headers["x-request-id"] == "console-4711"
    [entry] = journal(client, request_id="console-4711")
    assert entry["request_id"] == "console-4711"
    assert entry["operation"] == "getOrganization"


def test_verify_finds_a_call_by_its_request_id(client):
    client.get("/organization", headers={"X-Request-Id": "verify-me"})
    client.get("/organization")
    verdict = client.post("/_mock/calls/verify", json={"request_id": "verify-me", "count": 1}).json()
    assert verdict["ok"] is True and verdict["actual"] == 1
    assert client.post("/_mock/calls/verify", json={"request_id": "never-sent"}).json()["ok"] is False


def test_without_one_each_call_gets_its_own_generated_id_which_the_journal_finds(client):
    first = client.get("/organization").headers["x-request-id"]
    second = client.get("/organization").headers["x-request-id"]
    assert first and second and first != second
    assert [e["request_id"] for e in journal(client, request_id=second)] == [second]


def test_error_replies_carry_the_request_id(client):
    missing = client.get("/no/such/path", headers={"X-Request-Id": "err-1"})
    assert_error(missing, 404)
    assert missing.headers["x-request-id"] == "err-1"
    invalid = client.post(f"/application/{APP}/environmentVariable", json={}, headers={"X-Request-Id": "err-2"})
    assert_error(invalid, 400)
    assert invalid.headers["x-request-id"] == "err-2"
    assert journal(client, request_id="err-2")[0]["status"] == 400


def test_unauthenticated_calls_are_journaled_with_their_id(server):
    with TestClient(server, base_url="http://mock") as anonymous:
        reply = anonymous.get("/organization", headers={"X-Request-Id": "anon-1"})
        assert_error(reply, 401)
        assert reply.headers["x-request-id"] == "anon-1"
        assert journal(anonymous, request_id="anon-1")[0]["status"] == 401


def test_control_replies_and_documents_carry_a_request_id(client):
    for method, path in (("GET", "/_mock/health"), ("GET", "/_mock/calls"), ("DELETE", "/_mock/calls"),
                         ("GET", "/openapi.json")):
        reply = client.request(method, path, headers={"X-Request-Id": f"control-{path}"})
        assert reply.headers["x-request-id"] == f"control-{path}", path
    generated = client.get("/_mock/health").headers["x-request-id"]
    assert generated and generated != client.get("/_mock/health").headers["x-request-id"]
    error = client.post("/_mock/clock/advance", json={"seconds": -1}, headers={"X-Request-Id": "bad-advance"})
    assert_error(error, 400)
    assert error.headers["x-request-id"] == "bad-advance"


@pytest.mark.parametrize("sent", ["x" * (LIMIT + 1), "two words", "tab\there", "caf\u00e9"])
def test_an_unusable_client_id_is_replaced_not_echoed(client, sent):
    reply = client.get("/organization", headers={"X-Request-Id": sent.encode("utf-8")})
    echoed = reply.headers["x-request-id"]
    assert echoed != sent
    assert re.fullmatch(r"[\x21-\x7e]{1,128}", echoed)
    assert journal(client, request_id=echoed)[0]["request_id"] == echoed


def test_an_id_of_the_longest_allowed_length_is_kept(client):
    sent = "a" * LIMIT
    assert client.get("/organization", headers={"X-Request-Id": f"  {sent} "}).headers["x-request-id"] == sent


# ---------------------------------------------------------------- access log
def test_the_access_log_is_off_by_default(server, capsys):
    with TestClient(server, base_url="http://mock", headers=ADMIN) as http_client:
        http_client.get("/organization")
    assert capsys.readouterr().out == ""


def test_text_lines_name_method_path_status_latency_operation_token_and_request_id(make_server, capsys):
    server = make_server(access_log=True)
    with TestClient(server, base_url="http://mock", headers=ADMIN) as http_client:
        http_client.get("/organization", headers={"X-Request-Id": "log-1"})
        http_client.get("/organization", headers={"Authorization": ""})
        http_client.get("/_mock/health")                   # not an API call: not logged
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2, lines
    ok, anonymous = (TEXT_LINE.match(line) for line in lines)
    assert ok and anonymous, lines
    assert (ok["method"], ok["path"], ok["status"], ok["operation"], ok["token"], ok["request_id"]) == (
        "GET", "/organization", "200", "getOrganization", "admin", "log-1")
    assert float(ok["latency"]) >= 0 and ok["rule"] is None and ok["sandbox"] is None
    assert (anonymous["status"], anonymous["token"]) == ("401", "-")


def test_json_lines_are_one_object_a_line_with_the_scenario_rule(make_server, capsys):
    server = make_server(access_log=True, log_format="json")
    server.scenarios.load_text("name: flaky\nrules:\n  - name: org-fails\n    match: {operation: getOrganization}\n"
                               "    effect: {status: 503, message: down}\n", "test")
    with TestClient(server, base_url="http://mock", headers=ADMIN) as http_client:
        http_client.get("/organization", headers={"X-Request-Id": "log-2"})
        http_client.get(f"/application/{APP}/status")
    first, second = (json.loads(line) for line in capsys.readouterr().out.splitlines())
    assert first["status"] == 503 and first["scenario_rule"] == "flaky/org-fails"
    assert first["request_id"] == "log-2" and first["token"] == "admin" and first["operation"] == "getOrganization"
    assert set(first) == {"time", "method", "path", "status", "latency_ms", "operation", "token", "sandbox",
                          "scenario_rule", "request_id"}
    assert second["path"] == f"/application/{APP}/status" and second["scenario_rule"] is None


def test_a_sandbox_name_is_written_when_there_is_one():
    lines = []

    class Out:
        write, flush = lines.append, staticmethod(lambda: None)

    for fmt in ("text", "json"):
        access_logger(fmt, Out())("GET", "/organization", 200, 0.0012, "getOrganization", "admin", "team-a", None, "r1")
    assert " sandbox=team-a " in lines[0] and "rule=" not in lines[0]
    assert json.loads(lines[1])["sandbox"] == "team-a"


def test_a_path_with_unprintable_characters_stays_on_one_line():
    lines = []

    class Out:
        write, flush = lines.append, staticmethod(lambda: None)

    access_logger("text", Out())("GET", "/a\nb c", 404, 0.001, None, None, None, None, "r2")
    assert lines[0].count("\n") == 1 and TEXT_LINE.match(lines[0].rstrip("\n"))


def test_an_unknown_log_format_is_refused():
    with pytest.raises(ValueError):
        access_logger("xml")


@pytest.mark.server
def test_mockserver_serve_writes_json_access_lines_on_stdout(live_server):
    mock = live_server("--clock", "manual", "--access-log", "--log-format", "json")
    reply = httpx.get(f"{mock.url}/api/v1/organization", headers={**ADMIN, "X-Request-Id": "live-1"})
    assert reply.headers["x-request-id"] == "live-1"
    httpx.get(f"{mock.url}/organization")
    mock.stop()
    lines = [json.loads(line) for line in mock.process.stdout.read().decode().splitlines()]
    assert [(e["path"], e["status"], e["request_id"] == "live-1") for e in lines] == [
        ("/api/v1/organization", 200, True), ("/organization", 401, False)]
