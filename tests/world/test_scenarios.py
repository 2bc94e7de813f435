"""Scenarios: the example files in scenarios/, every kind of match, every effect, and
loading, inspecting and removing scenarios at run time through /_mock/scenarios."""

import contextlib
import json
import subprocess
import sys
import time

import httpx
import pytest
from starlette.testclient import TestClient
from support import ROOT
from support.http import assert_error
from support.ids import ADMIN, APP, CLUSTER, CONTAINER, DEPLOY, ENV, ORG, PROJECT, READ, WRITE

EXAMPLES = ROOT / "scenarios"
EXAMPLE_NAMES = {"build-fails", "flaky-status", "slow-cluster-upgrade", "rate-limit-exhausted",
                 "webhook-receiver-down", "slow-status", "truncated-body", "malformed-json", "slow-body",
                 "connection-reset", "status-outage-window", "deploy-by-polls"}
UNREACHABLE_HOOK = "http://127.0.0.1:9/hooks/deployments"


# ---------------------------------------------------------------- helpers
@pytest.fixture
def mock_with(make_server):
    """Start an in-process mock with settings overrides; returns an admin TestClient on it."""
    with contextlib.ExitStack() as stack:
        def start(**overrides):
            server = make_server(**overrides)
            return stack.enter_context(TestClient(server, base_url="http://mock", headers=ADMIN))
        yield start


@pytest.fixture
def example(mock_with):
    """A mock started with one example file of scenarios/: `example("build-fails")`."""
    return lambda name: mock_with(scenarios=[EXAMPLES / f"{name}.yaml"])


def put_scenario(http, name, text, content_type="application/yaml"):
    return http.put(f"/_mock/scenarios/{name}", content=text.encode(), headers={"Content-Type": content_type})


def activate(http, name, text):
    reply = put_scenario(http, name, text)
    assert reply.status_code == 200, reply.text
    return reply.json()


def rule(match, effect, name="rule"):
    """A one-rule scenario document named `name` (YAML is a superset of JSON)."""
    return json.dumps({"name": name, "rules": [{"name": "r", "match": match, "effect": effect}]})


def advance(http, seconds):
    reply = http.post("/_mock/clock/advance", json={"seconds": seconds})
    assert reply.status_code == 200, reply.text


def step_clock(http, *steps):
    """Advance in several moves, so each due event and webhook attempt is handled in its turn."""
    for seconds in steps:
        advance(http, seconds)


def statuses(http, path, times, **kwargs):
    return [http.get(path, **kwargs).status_code for _ in range(times)]




def app_state(http, app=APP):
    return http.get(f"/application/{app}/status").json()


def cluster_status(http):
    reply = http.get(f"/cluster/{CLUSTER}/status")
    assert reply.status_code == 200
    return reply.json()["status"]


def run_cli(*args, timeout=60):
    return subprocess.run([sys.executable, "-m", "mockserver", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


APP_STATUS = f"/application/{APP}/status"
PROJECTS = f"/organization/{ORG}/project"


# ---------------------------------------------------------------- the example files
def test_every_example_file_exists_and_passes_check():
    assert {path.stem for path in EXAMPLES.glob("*.yaml")} >= EXAMPLE_NAMES
    result = run_cli("check", *[arg for name in sorted(EXAMPLE_NAMES)
                                for arg in ("--scenario", str(EXAMPLES / f"{name}.yaml"))])
    assert result.returncode == 0, result.stderr
    assert f"{len(EXAMPLE_NAMES)} scenario file(s)" in result.stdout


def test_example_files_are_active_under_their_names(mock_with):
    http = mock_with(scenarios=sorted(EXAMPLES.glob("*.yaml")))
    active = {s["name"]: s for s in http.get("/_mock/scenarios").json()["results"]}
    assert set(active) >= EXAMPLE_NAMES
    assert all(active[name]["description"] for name in EXAMPLE_NAMES)


def test_build_fails_leaves_the_application_in_build_error(example):
    http = example("build-fails")
    reply = http.post(f"/application/{APP}/deploy", json={})
    assert reply.status_code == 202
    assert reply.json()["status"] == "QUEUED"
    step_clock(http, 1, 1, 1)
    assert app_state(http)["state"] == "BUILDING"
    advance(http, 60)
    status = app_state(http)
    assert status["state"] == "BUILD_ERROR"
    assert status["status_details"]["status"] == "ERROR"
    assert status["steps"]["details"][-1] == {"step_name": "BUILD", "status": "ERROR", "duration_sec": 2}


def test_build_fails_is_named_in_the_journal_of_the_deploy(example):
    http = example("build-fails")
    http.post(f"/application/{APP}/deploy", json={})
    entry = http.get("/_mock/calls", params={"operation": "deployApplication"}).json()["results"][0]
    assert entry["scenario_rule"] == "build-fails/build-breaks"


def test_flaky_status_fails_every_third_call_with_its_message(example):
    http = example("flaky-status")
    replies = [http.get(APP_STATUS) for _ in range(6)]
    assert [r.status_code for r in replies] == [200, 200, 500, 200, 200, 500]
    body = assert_error(replies[2], 500)
    assert body["message"] == "status backend unavailable, try again"


def test_slow_cluster_upgrade_stays_deploying_for_ten_minutes(example):
    http = example("slow-cluster-upgrade")
    assert http.post(f"/cluster/{CLUSTER}/upgrade").status_code == 202
    version = http.get(f"/cluster/{CLUSTER}").json()["version"]
    advance(http, 30)                       # an upgrade without the scenario is over after 10 s
    assert cluster_status(http) == "DEPLOYING"
    advance(http, 570)                      # t = 600: queue 1 s + DEPLOYMENT_QUEUEING 1 s + DEPLOYMENT 600 s
    assert cluster_status(http) == "DEPLOYING"
    assert http.get(f"/cluster/{CLUSTER}").json()["version"] == version
    advance(http, 3)                        # t = 603
    assert cluster_status(http) == "DEPLOYED"
    assert http.get(f"/cluster/{CLUSTER}").json()["version"] != version


def test_rate_limit_exhausted_makes_the_reader_token_get_429(example):
    http = example("rate-limit-exhausted")
    reply = http.get(PROJECTS, headers=READ)
    assert_error(reply, 429)
    assert int(reply.headers["Retry-After"]) > 0
    assert reply.headers["X-RateLimit-Remaining"] == "0"
    assert http.get("/organization", headers=READ).status_code == 429      # every call of the token
    assert http.get(PROJECTS, headers=ADMIN).status_code == 200            # other tokens are fine


def test_rate_limit_exhausted_ends_after_retry_after(example):
    http = example("rate-limit-exhausted")
    retry_after = int(http.get(PROJECTS, headers=READ).headers["Retry-After"])
    advance(http, retry_after)
    assert http.get(PROJECTS, headers=READ).status_code == 200             # first: 1 fires only once


def test_webhook_receiver_down_fails_the_next_three_attempts(example):
    http = example("webhook-receiver-down")
    hook = http.post(f"/organization/{ORG}/webhook",
                     json={"target_url": UNREACHABLE_HOOK, "events": ["DEPLOYMENT_STARTED"]})
    assert hook.status_code == 201
    assert http.post(f"/container/{CONTAINER}/deploy").status_code == 202
    step_clock(http, 1, 1, 2, 1)            # started at +1; retries after 1 s and 2 s; the 4th would be at +8
    deliveries = http.get("/_mock/webhooks/deliveries").json()["results"]
    assert len(deliveries) == 1
    attempts = deliveries[0]["attempts"]
    assert [a["error"] for a in attempts] == ["failed by scenario rule webhook-receiver-down/"
                                              "receiver-down-after-deploy"] * 3
    assert deliveries[0]["status"] == "RETRYING"


def test_slow_status_delays_status_replies_only(example):
    http = example("slow-status")
    started = time.perf_counter()
    assert http.get(APP_STATUS).status_code == 200
    assert time.perf_counter() - started >= 0.75
    started = time.perf_counter()
    assert http.get(f"/application/{APP}").status_code == 200
    assert time.perf_counter() - started < 0.75


# ---------------------------------------------------------------- match kinds
FAIL = {"status": 500, "message": "injected"}


def test_match_on_operation(mock_with):
    http = mock_with()
    activate(http, "rule", rule({"operation": "getProject"}, FAIL))
    assert http.get(f"/project/{PROJECT}").status_code == 500
    assert http.get(f"/environment/{ENV}").status_code == 200


def test_match_on_method_and_path_template(mock_with):
    http = mock_with()
    activate(http, "rule", rule({"method": "DELETE", "path": "/project/{projectId}"}, FAIL))
    assert http.get(f"/project/{PROJECT}").status_code == 200
    assert http.delete(f"/project/{PROJECT}").status_code == 500
    assert http.get(f"/project/{PROJECT}").status_code == 200          # the delete never happened


def test_match_on_path_glob(mock_with):
    http = mock_with()
    activate(http, "rule", rule({"path": "/organization/*/project"}, FAIL))
    assert http.get(PROJECTS).status_code == 500
    assert http.post(PROJECTS, json={"name": "checkout"}).status_code == 500
    assert http.get("/organization").status_code == 200
    assert http.get(f"/project/{PROJECT}").status_code == 200


def test_match_on_token_name(mock_with):
    http = mock_with()
    activate(http, "rule", rule({"token": "writer"}, FAIL))
    assert http.get("/organization", headers=WRITE).status_code == 500
    assert http.get("/organization", headers=READ).status_code == 200


def test_match_on_token_value(mock_with):
    http = mock_with()
    activate(http, "rule", rule({"token": "mock-deploy-token"}, FAIL))
    assert http.get("/organization", headers=DEPLOY).status_code == 500
    assert http.get("/organization", headers=ADMIN).status_code == 200


def test_match_on_header_value_glob(mock_with):
    http = mock_with()
    activate(http, "rule", rule({"headers": {"X-Client": "batch-*"}}, FAIL))
    assert http.get("/organization", headers={"X-Client": "batch-nightly"}).status_code == 500
    assert http.get("/organization", headers={"X-Client": "console"}).status_code == 200
    assert http.get("/organization").status_code == 200


def test_match_on_body_value_by_dotted_key(mock_with):
    http = mock_with()
    activate(http, "rule", rule({"operation": "createApplication", "body": {"git_repository.branch": "hotfix"}},
                                {"status": 409, "message": "branch hotfix is frozen"}))

    def create(name, branch):
        return http.post(f"/environment/{ENV}/application",
                         json={"name": name, "git_repository": {"url": "https://git.example.com/acme/x.git",
                                                                "branch": branch}})
    assert assert_error(create("hotfix-app", "hotfix"), 409)["message"] == "branch hotfix is frozen"
    assert create("main-app", "main").status_code == 201


def test_match_nth_fires_on_that_call_only(mock_with):
    http = mock_with()
    activate(http, "rule", rule({"operation": "getOrganization", "nth": 2}, FAIL))
    assert statuses(http, "/organization", 4) == [200, 500, 200, 200]


def test_match_every_fires_on_each_multiple(mock_with):
    http = mock_with()
    activate(http, "rule", rule({"operation": "getOrganization", "every": 2}, FAIL))
    assert statuses(http, "/organization", 5) == [200, 500, 200, 500, 200]


def test_match_first_fires_on_the_first_calls(mock_with):
    http = mock_with()
    activate(http, "rule", rule({"operation": "getOrganization", "first": 2}, FAIL))
    assert statuses(http, "/organization", 4) == [500, 500, 200, 200]


def test_count_conditions_count_only_calls_that_match_the_rest(mock_with):
    http = mock_with()
    activate(http, "rule", rule({"operation": "getOrganization", "nth": 2}, FAIL))
    assert http.get("/organization").status_code == 200
    assert http.get(f"/project/{PROJECT}").status_code == 200               # not counted
    assert http.get("/organization").status_code == 500


def probability_pattern(mock_with, seed, calls):
    http = mock_with(seed=seed)
    activate(http, "coin", rule({"operation": "getOrganization", "probability": 0.25}, FAIL, name="coin"))
    return [http.get("/organization").status_code for _ in range(calls)], http


def test_probability_is_reproducible_with_the_same_seed(mock_with):
    first, _ = probability_pattern(mock_with, 7, 40)
    second, _ = probability_pattern(mock_with, 7, 40)
    other, _ = probability_pattern(mock_with, 8, 40)
    assert first == second
    assert other != first


def test_probability_fires_about_that_often(mock_with):
    pattern, http = probability_pattern(mock_with, 3, 200)
    failures = pattern.count(500)
    assert 25 <= failures <= 75                                  # 0.25 x 200 = 50
    assert set(pattern) == {200, 500}
    counted = http.get("/_mock/scenarios/coin").json()["rules"][0]
    assert (counted["matched"], counted["fired"]) == (200, failures)


# ---------------------------------------------------------------- effects
def test_effect_status_replies_with_the_error_body_and_message(mock_with):
    http = mock_with()
    activate(http, "rule", rule({"operation": "getOrganization"}, {"status": 500, "message": "database is down"}))
    body = assert_error(http.get("/organization"), 500)
    assert body["error"] == "Internal Server Error"
    assert body["message"] == "database is down"


def test_effect_status_without_message_names_the_rule(mock_with):
    http = mock_with()
    activate(http, "rule", rule({"operation": "getOrganization"}, {"status": 404}))
    body = assert_error(http.get("/organization"), 404)
    assert "rule/r" in body["message"]


def test_effect_exhaust_rate_limit_is_429_with_retry_after(mock_with):
    http = mock_with()
    activate(http, "rule", rule({"operation": "getOrganization", "token": "deployer", "nth": 1},
                                {"exhaust_rate_limit": True}))
    reply = http.get("/organization", headers=DEPLOY)
    assert_error(reply, 429)
    assert int(reply.headers["Retry-After"]) > 0
    assert reply.headers["X-RateLimit-Remaining"] == "0"
    assert http.get(APP_STATUS, headers=DEPLOY).status_code == 429          # the budget is gone


def test_effect_deployment_fail_at_a_step_uses_its_error_state(mock_with):
    http = mock_with()
    activate(http, "rule", rule({"operation": "deployContainer"}, {"deployment": {"fail_at": "DEPLOYMENT"}}))
    assert http.post(f"/container/{CONTAINER}/deploy").status_code == 202
    advance(http, 60)
    status = http.get(f"/container/{CONTAINER}/status").json()
    assert status["state"] == "DEPLOYMENT_ERROR"
    assert [(s["step_name"], s["status"]) for s in status["steps"]["details"]][-1] == ("DEPLOYMENT", "ERROR")


def test_effect_deployment_stall_never_finishes(mock_with):
    http = mock_with()
    activate(http, "rule", rule({"operation": "deployContainer"}, {"deployment": {"stall": "DEPLOYMENT"}}))
    assert http.post(f"/container/{CONTAINER}/deploy").status_code == 202
    advance(http, 86400)
    status = http.get(f"/container/{CONTAINER}/status").json()
    assert status["state"] == "DEPLOYING"
    assert status["status_details"]["status"] == "ONGOING"
    assert http.post(f"/container/{CONTAINER}/deploy").status_code == 409     # still in progress


def test_effect_deployment_durations_stretch_a_step(mock_with):
    http = mock_with()
    activate(http, "rule", rule({"operation": "deployApplication"},
                                {"deployment": {"durations": {"BUILD": 100}}}))
    assert http.post(f"/application/{APP}/deploy", json={}).status_code == 202
    advance(http, 50)
    assert app_state(http)["state"] == "BUILDING"
    advance(http, 60)                        # +110: queue 1 + 2 + BUILD 100 + 3 = 106
    status = app_state(http)
    assert status["state"] == "DEPLOYED"
    assert {"step_name": "BUILD", "status": "SUCCESS", "duration_sec": 100} in status["steps"]["details"]


def test_effect_webhook_failures_show_in_the_deliveries(mock_with):
    http = mock_with()
    activate(http, "rule", rule({"operation": "deployApplication"}, {"webhook_failures": 2}))
    http.post(f"/organization/{ORG}/webhook", json={"target_url": UNREACHABLE_HOOK, "events": ["DEPLOYMENT_STARTED"]})
    assert http.post(f"/application/{APP}/deploy", json={}).status_code == 202
    step_clock(http, 1, 1)
    delivery = http.get("/_mock/webhooks/deliveries").json()["results"][0]
    assert [a["error"] for a in delivery["attempts"]] == ["failed by scenario rule rule/r"] * 2
    assert all(a["status_code"] is None for a in delivery["attempts"])


@pytest.fixture
def live_http(live_manual):
    with httpx.Client(base_url=live_manual.url, headers=ADMIN, timeout=10) as http:
        http.post("/_mock/reset", json={"scenarios": True})
        yield http


@pytest.mark.server
def test_effect_latency_delays_the_reply_on_a_live_server(live_http):
    activate(live_http, "slow", rule({"operation": "getOrganization"}, {"latency_ms": 300}, name="slow"))
    started = time.perf_counter()
    assert live_http.get("/organization").status_code == 200
    assert 0.28 <= time.perf_counter() - started < 5


@pytest.mark.server
def test_effect_drop_closes_the_connection_and_the_server_keeps_serving(live_http):
    activate(live_http, "drop", rule({"operation": "getOrganization", "nth": 1}, {"drop": True}, name="drop"))
    with pytest.raises(httpx.TransportError):
        live_http.get("/organization")
    assert live_http.get("/organization").status_code == 200
    dropped = live_http.get("/_mock/calls", params={"operation": "getOrganization"}).json()["results"][0]
    assert dropped["scenario_rule"] == "drop/r"


# ---------------------------------------------------------------- loading at run time
FLAKY_ORG = """\
name: flaky-org
rules:
  - name: org-down
    match: {operation: getOrganization, every: 3}
    effect: {status: 500, message: organization service down}
"""


def test_put_yaml_activates_a_scenario(mock_with):
    http = mock_with()
    described = activate(http, "flaky-org", FLAKY_ORG)
    assert described["name"] == "flaky-org"
    assert [r["name"] for r in described["rules"]] == ["flaky-org/org-down"]
    assert statuses(http, "/organization", 3) == [200, 200, 500]


def test_put_json_activates_a_scenario(mock_with):
    http = mock_with()
    document = {"name": "json-rule", "rules": [{"match": {"operation": "getOrganization"},
                                                "effect": {"status": 500}}]}
    reply = put_scenario(http, "json-rule", json.dumps(document), "application/json")
    assert reply.status_code == 200, reply.text
    assert http.get("/organization").status_code == 500


def test_get_scenario_shows_rules_with_matched_and_fired_counts(mock_with):
    http = mock_with()
    activate(http, "flaky-org", FLAKY_ORG)
    statuses(http, "/organization", 4)
    http.get(f"/project/{PROJECT}")
    described = http.get("/_mock/scenarios/flaky-org").json()
    org_down = described["rules"][0]
    assert org_down["match"] == {"operation": "getOrganization", "every": 3}
    assert org_down["effect"] == {"status": 500, "message": "organization service down"}
    assert (org_down["matched"], org_down["fired"]) == (4, 1)
    assert [s["name"] for s in http.get("/_mock/scenarios").json()["results"]] == ["flaky-org"]


def test_delete_scenario_removes_it(mock_with):
    http = mock_with()
    activate(http, "flaky-org", FLAKY_ORG)
    assert http.delete("/_mock/scenarios/flaky-org").status_code == 204
    assert_error(http.get("/_mock/scenarios/flaky-org"), 404)
    assert statuses(http, "/organization", 3) == [200, 200, 200]
    assert_error(http.delete("/_mock/scenarios/flaky-org"), 404)


def test_put_with_another_name_than_the_document_is_400(mock_with):
    http = mock_with()
    body = assert_error(put_scenario(http, "other-name", FLAKY_ORG), 400)
    assert "flaky-org" in body["message"]


BROKEN = {
    "unknown operation": ("name: broken\nrules:\n  - match: {operation: deployApplicaton}\n"
                          "    effect: {status: 500}\n", ":3:", "unknown operation 'deployApplicaton'"),
    "bad effect key": ("name: broken\nrules:\n  - match: {operation: deployApplication}\n"
                       "    effect: {sttus: 500}\n", ":4:", "unknown key 'sttus' (did you mean 'status'?)"),
    "invalid YAML": ("name: broken\nrules:\n  - match: {operation: deployApplication\n"
                     "    effect: {status: 500}\n", ":4:", "not valid YAML"),
}


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_broken_document_is_400_naming_line_and_problem(mock_with, kind):
    http = mock_with()
    text, line, problem = BROKEN[kind]
    body = assert_error(put_scenario(http, "broken", text), 400)
    assert line in body["message"]
    assert problem in body["message"]
    assert_error(http.get("/_mock/scenarios/broken"), 404)


def test_broken_json_is_400(mock_with):
    http = mock_with()
    body = assert_error(put_scenario(http, "broken", '{"name": "broken", "rules": [', "application/json"), 400)
    assert "JSON" in body["message"]


def test_broken_new_version_keeps_the_previous_one_active(mock_with):
    http = mock_with()
    activate(http, "flaky-org", FLAKY_ORG)
    broken = FLAKY_ORG.replace("every: 3", "every: 0")
    body = assert_error(put_scenario(http, "flaky-org", broken), 400)
    assert ":4:" in body["message"] and "every" in body["message"]
    assert http.get("/_mock/scenarios/flaky-org").json()["rules"][0]["match"]["every"] == 3
    assert statuses(http, "/organization", 3) == [200, 200, 500]


def test_document_with_one_bad_rule_activates_none_of_its_rules(mock_with):
    http = mock_with()
    text = ("name: half\nrules:\n  - match: {operation: getOrganization}\n    effect: {status: 500}\n"
            "  - match: {operation: noSuchOperation}\n    effect: {status: 500}\n")
    body = assert_error(put_scenario(http, "half", text), 400)
    assert ":5:" in body["message"]
    assert http.get("/organization").status_code == 200
    assert http.get("/_mock/scenarios").json()["results"] == []


@pytest.fixture
def broken_file(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text(BROKEN["unknown operation"][0])
    return path


def test_check_refuses_a_broken_file_with_file_line_and_problem(broken_file):
    result = run_cli("check", "--scenario", str(broken_file))
    assert result.returncode != 0
    assert f"{broken_file}:3:" in result.stderr
    assert "unknown operation 'deployApplicaton'" in result.stderr
    assert "Traceback" not in result.stdout + result.stderr


@pytest.mark.server
def test_serve_refuses_to_start_with_a_broken_file(broken_file):
    result = run_cli("serve", "--port", "0", "--scenario", str(broken_file))
    assert result.returncode != 0
    assert f"{broken_file}:3:" in result.stderr
    assert "unknown operation 'deployApplicaton'" in result.stderr
    assert "Traceback" not in result.stdout + result.stderr


def test_reset_keeps_scenarios_and_restarts_their_counts(mock_with):
    http = mock_with()
    activate(http, "flaky-org", FLAKY_ORG)
    statuses(http, "/organization", 2)
    reply = http.post("/_mock/reset")
    assert reply.json()["scenarios"] == ["flaky-org"]
    assert statuses(http, "/organization", 3) == [200, 200, 500]


def test_reset_with_scenarios_true_removes_them(mock_with):
    http = mock_with()
    activate(http, "flaky-org", FLAKY_ORG)
    reply = http.post("/_mock/reset", json={"scenarios": True})
    assert reply.json()["scenarios"] == []
    assert http.get("/_mock/scenarios").json()["results"] == []
    assert statuses(http, "/organization", 3) == [200, 200, 200]
