"""Strict scenario files: a rule that could never fire is refused with its file and line (by
`mockserver check`, at start and over the control API); a service glob that matches nothing yet is
a warning; the JSON Schema of the format is served, shipped, and every example file validates. A window
starts within the dates a clock can have; a scenario holds at most 1000 rules, no two of them named alike."""

import json
import subprocess
import sys

import httpx
import jsonschema
import pytest
import yaml
from starlette.testclient import TestClient
from support import ROOT
from support.http import assert_error
from support.ids import ADMIN

EXAMPLES = ROOT / "scenarios"
SHIPPED = ROOT / "mockserver" / "world" / "scenario.schema.json"

# name -> (rules part of a document, the line the problem is on, words of the problem)
REFUSED = {
    "unknown token": ("    match: {operation: getOrganization,\n            token: nobody}\n", 5,
                      "no token of the fixtures"),
    "path matching no route": ("    match:\n      path: /aplication/*/status\n", 5,
                               "matches no documented route (did you mean /application/{app_id}/status"),
    "nth with every": ("    match:\n      operation: getOrganization\n      nth: 3\n      every: 2\n", 7,
                       "nth and every together"),
    "first with nth": ("    match: {operation: getOrganization, first: 2, nth: 1}\n", 4, "nth and first together"),
    "service id that no service can have": ("    match: {service: {id: not-a-uuid}}\n", 4, "is not a uuid"),
    "window start and after": ("    window: {start: 10, after: 5}\n    match: {operation: getOrganization}\n", 4,
                               "start and after together"),
    "window start not a time": ("    window: {start: soon}\n", 4, "is not an ISO 8601 time or Unix seconds within"),
}
EFFECTS = {
    "truncate with reset": ("truncate: {bytes: 3}\n      reset: {after: headers}", "truncate and reset together"),
    "drop with malformed body": ("drop: true\n      malformed_body: true", "drop and malformed_body together"),
    "reads with reads_per_step": ("deployment: {reads: 3, reads_per_step: 1}", "reads and reads_per_step"),
    "fail_at with stall": ("deployment: {fail_at: BUILD, stall: DEPLOYMENT}", "fail_at and stall together"),
    "dribble chunks and size": ("dribble: {chunks: 2, chunk_bytes: 9, delay_ms: 1}", "chunks and chunk_bytes"),
}


def document(rule_text, effect="status: 500"):
    return f"name: strict\nrules:\n  - name: r\n{rule_text}    effect:\n      {effect}\n"


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "mockserver", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)


@pytest.fixture
def http(make_server):
    with TestClient(make_server(), base_url="http://mock", headers=ADMIN) as client:
        yield client


@pytest.mark.parametrize("kind", sorted(REFUSED))
def test_put_refuses_a_rule_that_cannot_fire_with_its_line(http, kind):
    text, line, words = REFUSED[kind]
    reply = http.put("/_mock/scenarios/strict", content=document(text), headers={"Content-Type": "application/yaml"})
    assert reply.status_code == 400, reply.text
    message = reply.json()["message"]
    assert f":{line}:" in message and words in message
    assert http.get("/_mock/scenarios/strict").status_code == 404          # nothing of it activated


@pytest.mark.parametrize("kind", sorted(EFFECTS))
def test_contradictory_effects_are_refused_with_their_line(http, kind):
    effect, words = EFFECTS[kind]
    text = document("    match: {operation: getOrganization}\n", effect)
    reply = http.post("/_mock/scenarios", content=text, headers={"Content-Type": "application/yaml"})
    assert reply.status_code == 400, reply.text
    body = reply.json()
    assert words in body["message"]
    assert body["details"][0]["location"] in ("line 6", "line 7")


def test_a_service_glob_matching_no_fixture_service_is_a_warning(http):
    text = document("    match: {method: POST, service: {name: not-created-yet-*}}\n")
    reply = http.put("/_mock/scenarios/strict", content=text, headers={"Content-Type": "application/yaml"})
    assert reply.status_code == 200
    [warning] = reply.json()["warnings"]
    assert ":4:27: warning: rules.0.match.service: no service of the fixtures matches" in warning
    created = http.put("/_mock/scenarios/strict", content=document("    match: {service: {kind: DATABASE}}\n"),
                       headers={"Content-Type": "application/yaml"})
    assert created.json()["warnings"] == []


def test_token_by_name_and_value_and_globbed_paths_are_accepted(http):
    for rule in ("    match: {token: reader}\n", "    match: {token: mock-deploy-token}\n",
                 "    match: {path: '/*/deploy'}\n", "    match: {path: '/application/{app_id}/status'}\n"):
        reply = http.put("/_mock/scenarios/strict", content=document(rule),
                         headers={"Content-Type": "application/yaml"})
        assert reply.status_code == 200, (rule, reply.text)


def test_check_refuses_with_file_and_line_and_prints_warnings(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(document(REFUSED["unknown token"][0]))
    result = run_cli("check", "--scenario", str(bad))
    assert result.returncode == 1
    assert f"{bad}:5:13: rules.0.match.token: no token of the fixtures is named or valued 'nobody'" in result.stderr
    warned = tmp_path / "warned.yaml"
    warned.write_text(document("    match: {service: {name: later-*}}\n"))
    result = run_cli("check", "--scenario", str(warned))
    assert result.returncode == 0, result.stderr
    assert f"{warned}:4:13: warning:" in result.stderr


@pytest.mark.server
def test_serve_refuses_to_start_with_a_contradictory_file(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(document(REFUSED["nth with every"][0]))
    result = run_cli("serve", "--port", "0", "--scenario", str(bad))
    assert result.returncode != 0
    assert f"{bad}:7:" in result.stderr and "Traceback" not in result.stderr


# ---------------------------------------------------------------- the JSON Schema
@pytest.mark.server
def test_the_schema_is_served_without_the_control_token(live_server):
    server = live_server("--control-token", "sekret-control-token")
    reply = httpx.get(f"{server.url}/_mock/schemas/scenario.json", timeout=10)
    assert reply.status_code == 200
    assert reply.headers["content-type"].startswith("application/schema+json")
    served = reply.json()
    assert served == json.loads(SHIPPED.read_text())                       # the shipped file is the same
    jsonschema.Draft7Validator.check_schema(served)
    assert set(served["properties"]["rules"]["items"]["properties"]["effect"]["properties"]) >= {
        "truncate", "malformed_body", "dribble", "reset", "status", "deployment"}


def test_the_shipped_schema_is_current():
    from mockserver.world.scenarios import schema_document
    assert json.loads(SHIPPED.read_text()) == schema_document(), "run: python -m mockserver.world.scenarios"


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.name)
def test_every_example_file_validates_against_the_schema(path):
    schema = json.loads(SHIPPED.read_text())
    errors = list(jsonschema.Draft7Validator(schema).iter_errors(yaml.safe_load(path.read_text())))
    assert errors == []


def test_the_schema_refuses_what_loading_refuses_in_shape():
    schema = json.loads(SHIPPED.read_text())
    wrong = {"name": "x", "rules": [{"effect": {"truncate": {"fraction": 2}}}]}
    assert list(jsonschema.Draft7Validator(schema).iter_errors(wrong))


# ---------------------------------------------------------------- a window's start, the number of rules, their names
def test_a_scenario_window_must_start_within_the_dates_a_clock_can_have(client):
    for start in (999999999999999, -99999999999999, "10000-01-01T00:00:00Z"):
        doc = {"name": "w", "rules": [{"match": {"operation": "getApplicationStatus"}, "window": {"start": start},
                                       "effect": {"status": 500}}]}
        reply = client.put("/_mock/scenarios/w", json=doc)
        assert_error(reply, 400)
        assert "window.start" in reply.text and "9999-01-01" in reply.text
    assert client.get("/_mock/scenarios").status_code == 200
    ok = {"name": "w", "rules": [{"match": {"operation": "getApplicationStatus"},
                                  "window": {"start": "2030-01-01T00:00:00Z"}, "effect": {"status": 500}}]}
    assert client.put("/_mock/scenarios/w", json=ok).status_code == 200
    assert client.get("/_mock/scenarios/w").status_code == 200


def _rules(count, name=None):
    rule = "  - {match: {operation: getApplicationStatus, nth: %d}, effect: {status: 500}%s}\n"
    return "name: many\nrules:\n" + "".join(rule % (i + 1, f", name: {name}" if name else "") for i in range(count))


def test_a_scenario_holds_at_most_a_thousand_rules(client):
    refused = client.put("/_mock/scenarios/many", content=_rules(1001))
    assert_error(refused, 400)
    assert "more than 1000" in refused.json()["message"]
    assert client.get("/_mock/scenarios/many").status_code == 404
    assert client.put("/_mock/scenarios/many", content=_rules(1000)).status_code == 200


def test_two_rules_of_a_scenario_may_not_share_a_name(client):
    refused = client.put("/_mock/scenarios/many", content=_rules(2, name="x"))
    assert_error(refused, 400)
    assert "rules.1.name" in refused.json()["message"] and "rules.0" in refused.json()["message"]
