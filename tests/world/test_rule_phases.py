"""Where a rule acts in the request path (its `phase`): before authentication a rule answers whatever the token;
after the handler it lets the call change the state, then replaces the reply (commit, then fail), so that a retry
meets what the first call made; at most one rule acts on a call, the first that fires, phase by phase."""

import json
import os
import signal
import subprocess
import sys

import httpx
import pytest
from starlette.testclient import TestClient
from support import ROOT
from support.http import assert_error, free_port, wait_for
from support.ids import ADMIN, APP, ORG

PROJECTS = f"/organization/{ORG}/project"
APP_STATUS = f"/application/{APP}/status"


def scenario(*rules, name="phases"):
    return json.dumps({"name": name, "rules": list(rules)})


@pytest.fixture
def http(make_server):
    """An in-process mock with no token of its own: each call says which it sends."""
    with TestClient(make_server(), base_url="http://mock") as client:
        yield client


def activate(http, text, name="phases"):
    reply = http.put(f"/_mock/scenarios/{name}", content=text, headers={"Content-Type": "application/yaml"})
    assert reply.status_code == 200, reply.text
    return reply.json()


def project_names(http):
    return [p["name"] for p in http.get(PROJECTS, headers=ADMIN).json()["results"]]


def journaled(http, operation):
    calls = http.get("/_mock/calls", params={"operation": operation}).json()["results"]
    return [(call["status"], call["scenario_rule"]) for call in calls]


# ---------------------------------------------------------------- before_auth
def test_a_before_auth_rule_answers_503_whatever_the_token(http):
    activate(http, scenario({"name": "down", "phase": "before_auth", "match": {"path": "/*"},
                             "effect": {"status": 503, "message": "the platform is down"}}))
    for headers in ({}, {"Authorization": "Token not-a-token"}, ADMIN):
        for path in ("/organization", PROJECTS, APP_STATUS):
            body = assert_error(http.get(path, headers=headers), 503)
            assert body["message"] == "the platform is down"
    reply = http.post(PROJECTS, json={"name": "x"}, headers={"Authorization": "Token not-a-token"})
    assert_error(reply, 503)
    assert reply.headers["x-mock-rule"] == "phases/down"
    rule = http.get("/_mock/scenarios/phases").json()["rules"][0]
    assert rule["phase"] == "before_auth" and rule["fired"] == 10
    assert http.delete("/_mock/scenarios/phases").status_code == 204
    assert "x" not in project_names(http)                     # the 503 came before the handler


def test_a_before_auth_429_comes_before_the_401_of_a_missing_token(http):
    activate(http, scenario({"name": "edge-429", "phase": "before_auth", "match": {"operation": "getOrganization"},
                             "effect": {"status": 429, "message": "slow down (the edge)"}}))
    assert_error(http.get("/organization"), 429)
    assert_error(http.get(PROJECTS), 401)                     # another operation: authentication as usual
    assert http.get(PROJECTS, headers=ADMIN).status_code == 200


def test_without_a_phase_a_rule_sees_only_authenticated_calls(http):
    activate(http, scenario({"name": "down", "match": {"operation": "getOrganization"}, "effect": {"status": 503}}))
    assert_error(http.get("/organization"), 401)
    assert_error(http.get("/organization", headers=ADMIN), 503)
    assert http.get("/_mock/scenarios/phases").json()["rules"][0]["matched"] == 1


def test_a_before_auth_rule_may_not_match_a_token_or_a_body(http):
    for match in ({"token": "admin"}, {"body": {"name": "x"}}):
        reply = http.put("/_mock/scenarios/phases", content=scenario(
            {"phase": "before_auth", "match": {"operation": "createProject", **match}, "effect": {"status": 503}}))
        body = assert_error(reply, 400)
        assert "before_auth" in body["message"] and body["details"][0]["location"].startswith("line ")


# ---------------------------------------------------------------- after_handler: commit, then fail
def test_a_create_that_commits_then_fails_meets_the_duplicate_on_retry(http):
    activate(http, scenario({"name": "created-then-502", "phase": "after_handler",
                             "match": {"operation": "createProject"},
                             "effect": {"status": 502, "message": "bad gateway"}}))
    first = http.post(PROJECTS, json={"name": "committed"}, headers=ADMIN)
    assert_error(first, 502)
    assert first.headers["x-mock-rule"] == "phases/created-then-502"
    retry = http.post(PROJECTS, json={"name": "committed"}, headers=ADMIN)
    body = assert_error(retry, 409)
    assert "already exists" in body["message"]
    assert "x-mock-rule" not in retry.headers                 # a handler that refuses commits nothing to fail
    assert project_names(http).count("committed") == 1
    assert journaled(http, "createProject") == [(502, "phases/created-then-502"), (409, None)]


def test_an_after_handler_rule_with_times_fails_once_then_lets_replies_through(http):
    activate(http, scenario({"phase": "after_handler", "times": 1, "match": {"operation": "createProject"},
                             "effect": {"status": 500}}))
    assert_error(http.post(PROJECTS, json={"name": "a"}, headers=ADMIN), 500)
    assert http.post(PROJECTS, json={"name": "b"}, headers=ADMIN).status_code == 201
    assert {"a", "b"} <= set(project_names(http))


def test_an_after_handler_rule_may_not_change_the_deployment_it_follows(http):
    reply = http.put("/_mock/scenarios/phases", content=scenario(
        {"phase": "after_handler", "match": {"operation": "deployApplication"},
         "effect": {"deployment": {"fail_at": "BUILD"}}}))
    body = assert_error(reply, 400)
    assert "rules.0.effect.deployment" in body["message"] and "after_handler" in body["message"]


@pytest.mark.server
def test_a_commit_then_reset_survives_a_kill_and_is_not_failed_again(tmp_path):
    """A create whose reply is a TCP reset after its handler ran: the client sees the reset, the record exists;
    after a kill -9 the change log runs the create again, once, without the fault."""
    rules = tmp_path / "commit-then-reset.yaml"
    rules.write_text("name: commit-then-reset\nrules:\n  - phase: after_handler\n    times: 1\n"
                     "    match: {operation: createProject}\n    effect: {reset: {after: headers}}\n")
    state = tmp_path / "state.bin"

    def serve():
        port = free_port()
        process = subprocess.Popen([sys.executable, "-m", "mockserver", "serve", "--port", str(port), "--state-file",
                                    str(state), "--save-interval", "3600", "--scenario", str(rules)], cwd=ROOT,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for(f"http://127.0.0.1:{port}/_mock/health", timeout=120)
        return process, f"http://127.0.0.1:{port}"

    process, url = serve()
    try:
        with httpx.Client(base_url=url, headers=ADMIN, timeout=30) as client:
            with pytest.raises(httpx.HTTPError):
                client.post(PROJECTS, json={"name": "reset-after-commit"})
            assert client.post(PROJECTS, json={"name": "reset-after-commit"}).status_code == 409
        os.kill(process.pid, signal.SIGKILL)
        process.wait(30)
        process, url = serve()
        with httpx.Client(base_url=url, headers=ADMIN, timeout=30) as client:
            names = [p["name"] for p in client.get(PROJECTS).json()["results"]]
            assert names.count("reset-after-commit") == 1
    finally:
        process.kill()
        process.wait(30)


# ---------------------------------------------------------------- two rules for one call
def test_at_most_one_rule_acts_on_a_call_the_first_that_fires(http):
    activate(http, scenario({"name": "first", "match": {"operation": "getOrganization", "every": 2},
                             "effect": {"status": 500}},
                            {"name": "second", "match": {"operation": "getOrganization"},
                             "effect": {"status": 503}}))
    statuses = [http.get("/organization", headers=ADMIN).status_code for _ in range(4)]
    assert statuses == [503, 500, 503, 500]                   # the first fires on every 2nd call, else the second
    rules = {r["name"]: r for r in http.get("/_mock/scenarios/phases").json()["rules"]}
    assert (rules["phases/first"]["matched"], rules["phases/first"]["fired"]) == (4, 2)
    assert (rules["phases/second"]["matched"], rules["phases/second"]["fired"]) == (2, 2)


def test_a_rule_that_fired_in_an_earlier_phase_is_the_only_one(http):
    activate(http, scenario({"name": "late", "match": {"operation": "getOrganization"}, "effect": {"status": 500}},
                            {"name": "early", "phase": "before_auth", "match": {"operation": "getOrganization"},
                             "effect": {"latency_ms": 1}}))
    reply = http.get("/organization", headers=ADMIN)
    assert reply.status_code == 200 and reply.headers["x-mock-rule"] == "phases/early"
    late = http.get("/_mock/scenarios/phases").json()["rules"][0]
    assert late["matched"] == 0 and late["fired"] == 0


def test_scenarios_are_tried_in_the_order_they_were_activated(http):
    activate(http, scenario({"match": {"operation": "getOrganization"}, "effect": {"status": 500}}, name="zz-first"),
             name="zz-first")
    activate(http, scenario({"match": {"operation": "getOrganization"}, "effect": {"status": 503}}, name="aa-then"),
             name="aa-then")
    assert http.get("/organization", headers=ADMIN).headers["x-mock-rule"] == "zz-first/rule-1"
    assert [s["name"] for s in http.get("/_mock/scenarios").json()["results"]] == ["zz-first", "aa-then"]


def test_every_rule_of_a_world_is_listed_in_order_with_how_often_it_fired(make_server):
    server = make_server()
    with TestClient(server, base_url="http://mock", headers=ADMIN) as http:
        activate(http, scenario({"name": "org", "match": {"operation": "getOrganization"}, "effect": {"status": 500}},
                                {"name": "never", "match": {"operation": "deleteProject"}, "effect": {"status": 500}}))
        activate(http, scenario({"name": "down", "phase": "before_auth", "match": {"operation": "listProjects"},
                                 "effect": {"status": 503}}, name="later"), name="later")
        http.get("/organization")
        http.get(PROJECTS)
        http.get(PROJECTS)
        rules = server.scenarios.rules()
        assert [(r.name, r.phase, r.fired) for r in rules] == [
            ("phases/org", "after_validation", 1), ("phases/never", "after_validation", 0),
            ("later/down", "before_auth", 2)]


def test_each_sandbox_has_its_own_rules_and_counters(http):
    assert http.put("/_mock/sandboxes/a", json={}).status_code in (200, 201)
    rule = scenario({"name": "org", "match": {"operation": "getOrganization"}, "times": 1, "effect": {"status": 503}})
    assert http.put("/sandbox/a/_mock/scenarios/phases", content=rule).status_code == 200
    assert http.get("/organization", headers=ADMIN).status_code == 200              # the default sandbox: no rule
    assert http.get("/sandbox/a/organization", headers=ADMIN).status_code == 503
    assert http.get("/sandbox/a/organization", headers=ADMIN).status_code == 200    # spent (times: 1) in a only
    assert http.get("/_mock/scenarios").json()["results"] == []
