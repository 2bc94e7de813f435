"""The call journal (what it records, how it redacts, how it filters and verifies) and the
rest of the control API under /_mock: health, clock, tokens, reset and its own document."""

import json
import re
from datetime import datetime

import openapi_spec_validator
import pytest
from starlette.testclient import TestClient
from support.ids import ADMIN, APP, ENV, ORG, PROJECT, READ

from mockserver.app import MockServer
from mockserver.core.clock import Clock
from mockserver.core.settings import Settings

PROJECTS = f"/organization/{ORG}/project"


def calls(http, **filters):
    reply = http.get("/_mock/calls", params=filters)
    assert reply.status_code == 200, reply.text
    return reply.json()


def entries(http, **filters):
    return calls(http, **filters)["results"]


def only_entry(http, **filters):
    found = entries(http, **filters)
    assert len(found) == 1, found
    return found[0]


def verify(http, **body):
    reply = http.post("/_mock/calls/verify", json=body)
    assert reply.status_code == 200, reply.text
    return reply.json()


def advance(http, seconds):
    reply = http.post("/_mock/clock/advance", json={"seconds": seconds})
    assert reply.status_code == 200, reply.text
    return reply.json()


def assert_error(reply, status):
    assert reply.status_code == status, reply.text
    body = reply.json()
    assert body["status"] == status and body["error"] and body["message"]
    return body


# ---------------------------------------------------------------- what an entry holds
def test_a_call_is_journaled_with_request_and_reply(client):
    reply = client.get(f"/application/{APP}/log", params={"tail": "5"}, headers={"X-Trace": "t-1"})
    assert reply.status_code == 200
    entry = only_entry(client, operation="getApplicationLogs")
    assert entry["method"] == "GET"
    assert entry["path"] == f"/application/{APP}/log"
    assert entry["path_template"] == "/application/{app_id}/log"
    assert entry["query"] == {"tail": "5"}
    assert entry["headers"]["x-trace"] == "t-1"
    assert entry["body"] is None
    assert entry["status"] == 200
    assert entry["response"] == reply.json()
    assert isinstance(entry["duration_ms"], (int, float)) and entry["duration_ms"] >= 0
    assert entry["scenario_rule"] is None
    assert isinstance(entry["id"], int)


def test_a_call_is_journaled_with_its_body(client):
    reply = client.post(PROJECTS, json={"name": "checkout", "description": "Checkout team"})
    entry = only_entry(client, operation="createProject")
    assert entry["body"] == {"name": "checkout", "description": "Checkout team"}
    assert (entry["status"], entry["response"]) == (201, reply.json())


def test_journal_time_is_the_mock_clock(client):
    advance(client, 3600)
    client.get("/organization")
    clock = client.get("/_mock/clock").json()
    assert only_entry(client, operation="getOrganization")["time"] == clock["now"]


def test_refused_calls_are_journaled_too(client):
    client.get("/organization", headers={"Authorization": "Token nope"})
    client.get("/no/such/path")
    unauthorized, unknown = entries(client)
    assert (unauthorized["status"], unauthorized["operation"]) == (401, "getOrganization")
    assert (unknown["status"], unknown["operation"], unknown["path_template"]) == (404, None, None)


def test_control_calls_are_not_journaled(client):
    client.get("/_mock/health")
    client.get("/_mock/clock")
    assert calls(client)["total"] == 0


def test_authorization_keeps_only_scheme_and_last_four_characters(client):
    client.get("/organization")
    entry = only_entry(client)
    assert entry["headers"]["authorization"] == "Token ...oken"
    assert "mock-admin-token" not in json.dumps(entry)


def test_bearer_jwt_is_redacted_too(client):
    jwt = client.post("/_mock/tokens", json={"kind": "jwt", "scopes": ["Read"]}).json()["token"]
    assert client.get("/organization", headers={"Authorization": f"Bearer {jwt}"}).status_code == 200
    entry = only_entry(client)
    assert entry["headers"]["authorization"] == f"Bearer ...{jwt[-4:]}"
    assert jwt not in client.get("/_mock/calls").text


def test_secret_value_is_redacted(client):
    reply = client.post(f"/project/{PROJECT}/secret", json={"key": "STRIPE_KEY", "value": "sk-live-123456"})
    assert reply.status_code == 201
    entry = only_entry(client, operation="createProjectSecret")
    assert entry["body"] == {"key": "STRIPE_KEY", "value": "**redacted**"}
    assert "sk-live-123456" not in client.get("/_mock/calls").text


def test_edited_secret_value_is_redacted(client):
    secret = client.post(f"/project/{PROJECT}/secret", json={"key": "TOKEN", "value": "first-value"}).json()
    reply = client.put(f"/project/{PROJECT}/secret/{secret['id']}", json={"key": "TOKEN", "value": "second-value"})
    assert reply.status_code == 200
    assert only_entry(client, operation="editProjectSecret")["body"]["value"] == "**redacted**"
    assert "second-value" not in client.get("/_mock/calls").text


def test_variable_value_is_not_redacted(client):
    client.post(f"/project/{PROJECT}/environmentVariable", json={"key": "REGION", "value": "eu-west-3"})
    assert only_entry(client, operation="createProjectVariable")["body"]["value"] == "eu-west-3"


def test_registry_password_is_redacted(client):
    reply = client.post(f"/organization/{ORG}/containerRegistry",
                        json={"name": "private", "kind": "GENERIC_CR", "url": "https://registry.example.com",
                              "config": {"username": "ci", "password": "hunter2-registry"}})
    assert reply.status_code == 201
    entry = only_entry(client, operation="createContainerRegistry")
    assert entry["body"]["config"] == {"username": "ci", "password": "**redacted**"}
    assert "hunter2-registry" not in client.get("/_mock/calls").text


def test_fired_scenario_rule_is_named_in_the_entry(client):
    client.put("/_mock/scenarios/down", content=b"name: down\nrules:\n  - name: org\n"
               b"    match: {operation: getOrganization}\n    effect: {status: 500}\n")
    client.get("/organization")
    assert only_entry(client, operation="getOrganization")["scenario_rule"] == "down/org"
    assert len(entries(client, scenario="down/org")) == 1


# ---------------------------------------------------------------- filters
@pytest.fixture
def busy(client):
    """A journal with a few different calls: reads, a create, a 404 and a 403."""
    client.get("/organization")
    client.get(f"/project/{PROJECT}")
    client.get(f"/environment/{ENV}")
    client.post(PROJECTS, json={"name": "checkout"})
    client.get("/project/00000000-0000-4000-8000-000000000000")
    client.post(PROJECTS, json={"name": "nope"}, headers=READ)
    return client


def test_filter_by_method(busy):
    assert [e["operation"] for e in entries(busy, method="POST")] == ["createProject", "createProject"]
    assert len(entries(busy, method="post")) == 2


def test_filter_by_path_template(busy):
    found = entries(busy, path="/project/{projectId}")
    assert [e["status"] for e in found] == [200, 404]


def test_filter_by_path_glob(busy):
    assert {e["path"] for e in entries(busy, path="/organization/*")} == {PROJECTS}
    assert len(entries(busy, path="/project/*")) == 2


def test_filter_by_exact_path(busy):
    assert [e["operation"] for e in entries(busy, path=f"/environment/{ENV}")] == ["getEnvironment"]


def test_filter_by_operation(busy):
    assert [e["status"] for e in entries(busy, operation="createProject")] == [201, 403]


def test_filter_by_status_and_status_class(busy):
    assert [e["operation"] for e in entries(busy, status="201")] == ["createProject"]
    assert sorted(e["status"] for e in entries(busy, status="4xx")) == [403, 404]


def test_filters_combine(busy):
    found = entries(busy, method="POST", status="2xx")
    assert [(e["operation"], e["status"]) for e in found] == [("createProject", 201)]


def test_filter_since_a_call_id(busy):
    all_calls = entries(busy)
    later = entries(busy, since=str(all_calls[3]["id"]))
    assert [e["id"] for e in later] == [e["id"] for e in all_calls[4:]]


def test_filter_since_an_iso_time(client):
    client.get("/organization")
    moment = advance(client, 30)["now"]
    advance(client, 30)
    client.get(f"/project/{PROJECT}")
    assert [e["operation"] for e in entries(client, since=moment)] == ["getProject"]


def test_since_the_time_of_an_entry_includes_that_entry(spec):
    clock = Clock("manual", start=1700000000.4999995)     # a time whose ISO text rounds up
    server = MockServer(Settings(clock="manual", self_check=True), spec=spec, clock=clock)
    with TestClient(server, base_url="http://mock", headers=ADMIN) as http:
        http.get("/organization")
        entry = only_entry(http)
        assert [e["id"] for e in entries(http, since=entry["time"])] == [entry["id"]]
    assert server.pipeline.violations == []


def test_unknown_filter_is_400(client):
    body = assert_error(client.get("/_mock/calls", params={"verb": "GET"}), 400)
    assert "verb" in body["message"]


def test_delete_calls_empties_the_journal(busy):
    assert busy.delete("/_mock/calls").status_code == 204
    listing = calls(busy)
    assert (listing["total"], listing["results"]) == (0, [])


def test_bounded_journal_keeps_the_newest_and_counts_dropped(make_server):
    with TestClient(make_server(journal_size=5), base_url="http://mock", headers=ADMIN) as http:
        for _ in range(8):
            http.get("/organization")
        listing = calls(http)
        assert listing["total"] == 5
        assert listing["dropped"] == 3
        assert listing["journal_size"] == 5
        assert [e["id"] for e in listing["results"]] == [4, 5, 6, 7, 8]


# ---------------------------------------------------------------- verify
def test_verify_count_ok(busy):
    result = verify(busy, operation="createProject", count=2)
    assert result["ok"] is True
    assert result["actual"] == 2


def test_verify_count_mismatch_explains_matches_and_near_misses(busy):
    result = verify(busy, operation="createProject", status="201", count=2)
    assert result["ok"] is False
    assert result["actual"] == 1
    message = result["message"]
    assert "expected count 2" in message and "found 1" in message
    assert "matched: #4 POST" in message
    assert "near miss: #6 POST" in message and "differs in status" in message


def test_verify_at_least(busy):
    assert verify(busy, method="GET", at_least=3)["ok"] is True
    result = verify(busy, method="GET", at_least=5)
    assert result["ok"] is False
    assert "at least 5" in result["message"]


def test_verify_at_most(busy):
    assert verify(busy, status="4xx", at_most=2)["ok"] is True
    result = verify(busy, status="4xx", at_most=1)
    assert result["ok"] is False
    assert "at most 1" in result["message"] and "found 2" in result["message"]


def test_verify_that_something_was_never_called(busy):
    assert verify(busy, operation="deleteProject", count=0)["ok"] is True


def test_verify_with_unknown_filter_is_400(client):
    assert "colour" in assert_error(client.post("/_mock/calls/verify", json={"colour": "red"}), 400)["message"]


# ---------------------------------------------------------------- health, clock, tokens
def test_health(client):
    reply = client.get("/_mock/health")
    assert reply.status_code == 200
    assert reply.json()["status"] == "ok"
    assert reply.json()["clock"] == "manual"


def test_clock_reads_the_manual_clock(client):
    clock = client.get("/_mock/clock").json()
    assert clock["mode"] == "manual"
    assert datetime.fromisoformat(clock["now"].replace("Z", "+00:00")).timestamp() == pytest.approx(clock["epoch"])
    assert client.get("/_mock/clock").json()["epoch"] == clock["epoch"]     # it stands still


def test_clock_advance_moves_time_forward(client):
    before = client.get("/_mock/clock").json()["epoch"]
    after = advance(client, 90.5)
    assert after["epoch"] == pytest.approx(before + 90.5)
    assert client.get("/_mock/clock").json()["epoch"] == after["epoch"]


@pytest.mark.parametrize("seconds", [-1, "ten", None])
def test_clock_advance_refuses_negative_or_missing_seconds(client, seconds):
    before = client.get("/_mock/clock").json()["epoch"]
    assert_error(client.post("/_mock/clock/advance", json={"seconds": seconds}), 400)
    assert client.get("/_mock/clock").json()["epoch"] == before


def test_minted_token_has_its_scopes(client):
    minted = client.post("/_mock/tokens", json={"scopes": ["Read"], "name": "ci-reader"})
    assert minted.status_code == 201
    token = minted.json()
    assert (token["name"], token["kind"], token["scopes"]) == ("ci-reader", "token", ["Read"])
    headers = {"Authorization": f"Token {token['token']}"}
    assert client.get("/organization", headers=headers).status_code == 200
    assert client.post(PROJECTS, json={"name": "x"}, headers=headers).status_code == 403


def test_minted_jwt_is_accepted_as_bearer(client):
    minted = client.post("/_mock/tokens", json={"kind": "jwt", "scopes": ["Write"]}).json()
    assert minted["kind"] == "jwt" and minted["token"].count(".") == 2
    headers = {"Authorization": f"Bearer {minted['token']}"}
    assert client.post(PROJECTS, json={"name": "from-jwt"}, headers=headers).status_code == 201


def test_minted_token_with_ttl_expires_on_the_mock_clock(client):
    token = client.post("/_mock/tokens", json={"scopes": ["Read"], "ttl_seconds": 60}).json()["token"]
    headers = {"Authorization": f"Token {token}"}
    assert client.get("/organization", headers=headers).status_code == 200
    advance(client, 61)
    assert client.get("/organization", headers=headers).status_code == 401


@pytest.mark.parametrize("scopes", [["Root"], [], "Admin"])
def test_minting_with_bad_scopes_is_400(client, scopes):
    assert "scopes" in assert_error(client.post("/_mock/tokens", json={"scopes": scopes}), 400)["message"]


# ---------------------------------------------------------------- the control API's own document
@pytest.fixture
def control_document(client):
    reply = client.get("/_mock/openapi.json")
    assert reply.status_code == 200
    return reply.json()


def test_control_document_is_a_valid_openapi_document(control_document):
    openapi_spec_validator.validate(control_document)


def test_control_document_describes_every_control_route(server, control_document):
    routes = {(method.lower(), re.sub(r"{(\w+):\w+}", r"{\1}", route.path)) for route in server.control.routes
              for method in route.methods if method != "HEAD" and not route.path.endswith("/")}
    described = {(method, path) for path, item in control_document["paths"].items()
                 for method in item if method in ("get", "put", "post", "delete", "patch")}
    assert described == routes


# ---------------------------------------------------------------- reset
def test_reset_removes_created_records(client):
    created = client.post(PROJECTS, json={"name": "checkout"}).json()
    assert client.post("/_mock/reset").status_code == 200
    assert client.get(f"/project/{created['id']}").status_code == 404
    assert "checkout" not in {p["name"] for p in client.get(PROJECTS).json()["results"]}


def test_reset_brings_back_deleted_fixtures(client):
    assert client.delete(f"/project/{PROJECT}").status_code == 204
    assert client.get(f"/project/{PROJECT}").status_code == 404
    client.post("/_mock/reset")
    assert client.get(f"/project/{PROJECT}").json()["name"] == "storefront"
    assert client.get(f"/environment/{ENV}").status_code == 200


def test_reset_empties_the_journal(client):
    client.get("/organization")
    client.post("/_mock/reset")
    assert calls(client)["total"] == 0


def test_unreadable_since_is_400(busy):
    assert "since" in assert_error(busy.get("/_mock/calls", params={"since": "yesterday"}), 400)["message"]
    assert "since" in assert_error(busy.post("/_mock/calls/verify", json={"since": "yesterday", "count": 0}),
                                   400)["message"]
    for shape in ([1], {"id": 1}):                  # a JSON body can send any shape: still the filter's 400
        assert "since" in assert_error(busy.post("/_mock/calls/verify", json={"since": shape, "count": 0}),
                                       400)["message"]


# ---------------------------------------------------------------- coverage
def test_coverage_counts_each_operation_by_status_and_reached_on_a_2xx(client):
    assert client.get(PROJECTS).status_code == 200
    assert client.get(PROJECTS).status_code == 200
    missing = "00000000-0000-4000-8000-000000000000"
    assert client.get(f"/project/{missing}").status_code == 404
    assert client.get("/no/such/route").status_code == 404          # no operation: not counted
    report = client.get("/_mock/calls/coverage").json()
    results = {r["operation"]: r for r in report["results"]}
    total = report["operations"]
    assert total == len(results) > 200
    assert results["listProjects"]["statuses"] == {"200": 2} and results["listProjects"]["reached"]
    assert results["getProject"]["statuses"] == {"404": 1} and not results["getProject"]["reached"]
    assert report["never_reached"] == ["getProject"]
    assert (report["called"], report["reached"]) == (2, 1)
    assert len(report["never_called"]) == total - 2 and "deployApplication" in report["never_called"]
    assert report["reached_percent"] == round(100 / total, 1)
    assert (report["journal_entries"], report["dropped"]) == (4, 0)


def test_coverage_says_how_many_calls_the_journal_dropped(make_server):
    server = make_server(journal_size=2)
    with TestClient(server, base_url="http://mock", headers=ADMIN) as client:
        for _ in range(3):
            client.get(PROJECTS)
        report = client.get("/_mock/calls/coverage").json()
    assert (report["journal_entries"], report["dropped"]) == (2, 1)
    assert {r["operation"]: r["calls"] for r in report["results"]}["listProjects"] == 2


NESTED_SECRET = "n3sted-s3cret-value"
NESTED = [
    ("a Terraform variable marked secret", "POST", f"/environment/{ENV}/terraform", 201,
     {"name": "t", "terraform_files_source": {"git_repository": {"url": "https://git.example.com/a/tf.git",
                                                                "branch": "main"}},
      "terraform_variables_source": {"tf_var_file_paths": [],
                                     "tf_vars": [{"key": "k", "value": NESTED_SECRET, "secret": True}]}}),
    ("a registry's password inside its config", "POST", f"/organization/{ORG}/containerRegistry", 201,
     {"name": "r", "kind": "GENERIC_CR", "url": "https://r.example",
      "config": {"username": "u", "password": NESTED_SECRET}}),
    # an operation that takes no body: the body sent is kept all the same, its secrets found at any depth
    ("a password deep in a body sent to a read", "GET", "/organization", 200,
     {"note": "x", "auth": [{"basic": {"password": NESTED_SECRET}}]}),
]


@pytest.mark.parametrize("what, method, path, status, body", NESTED, ids=[case[0] for case in NESTED])
def test_a_secret_nested_in_a_body_is_masked_when_the_call_is_kept_not_only_when_it_is_read(server, what, method,
                                                                                          path, status, body):
    with TestClient(server, base_url="http://mock", headers=ADMIN) as http:
        reply = http.request(method, path, content=json.dumps(body), headers={"content-type": "application/json"})
        assert reply.status_code == status, reply.text
        kept = server.sandboxes.get("default").rt.journal.newest()
        assert NESTED_SECRET.encode() not in kept.request     # the bytes the journal holds (and a state file saves)
        assert b"**redacted**" in kept.request
        assert NESTED_SECRET not in json.dumps(only_entry(http))
