"""Consumer contracts from real use: a client flow runs in a sandbox of a live mock, its calls are
exported as a pact and as a HAR log, and the Pact engine (pact-python) verifies the pact against a fresh
mock through the provider-state protocol, and against a mock that drifts."""

import json
import os
import re
import subprocess
import sys

import httpx
import jsonschema
import pytest
from pact import Verifier
from support import ROOT
from support.http import assert_error
from support.ids import APP, CLUSTER, ORG

pytestmark = pytest.mark.server

ADMIN = {"Authorization": "Token mock-admin-token"}
STATUS_DRIFT = """\
name: environments-unavailable
rules:
  - name: create-environment-refused
    match: {operation: createEnvironment}
    effect: {status: 503, message: environments are read-only today}
"""
APPLICATION = {"name": "web", "git_repository": {"url": "https://codehost1.com/acme/web.git", "branch": "main"},
               "build_mode": "DOCKER", "cpu": 500, "memory": 512,
               "ports": [{"internal_port": 8080, "publicly_accessible": True}]}


def sandbox(server, name, **options):
    reply = httpx.put(f"{server.url}/_mock/sandboxes/{name}", json=options)
    assert reply.status_code in (200, 201), reply.text
    return httpx.Client(base_url=f"{server.url}/sandbox/{name}", headers=ADMIN, timeout=30)


def client_flow(http, secret="hunter2-app-secret"):
    """What a client team's test does: build a project, environment and application, deploy it and poll its
    status until it is DEPLOYED, then read it back."""
    project = http.post(f"/organization/{ORG}/project", json={"name": "shop", "description": "the shop"}).json()
    env = http.post(f"/project/{project['id']}/environment",
                    json={"name": "staging", "mode": "STAGING", "cluster_id": CLUSTER}).json()
    app = http.post(f"/environment/{env['id']}/application", json=APPLICATION).json()
    assert http.post(f"/application/{app['id']}/secret", json={"key": "API_KEY", "value": secret}).status_code == 201
    assert http.put(f"/project/{project['id']}",
                    json={"name": "shop", "description": "the new shop"}).status_code == 200
    assert http.post(f"/application/{app['id']}/deploy", json={}).status_code == 202
    polls = []
    while not polls or polls[-1] != "DEPLOYED":
        polls.append(http.get(f"/application/{app['id']}/status").json()["state"])
        http.post("/_mock/clock/advance", json={"seconds": 1})
        assert len(polls) < 30
    assert http.get(f"/environment/{env['id']}/application").status_code == 200
    assert http.get(f"/project/{project['id']}").json()["description"] == "the new shop"
    return {"project": project["id"], "environment": env["id"], "application": app["id"], "polls": polls}


def export(http, **params):
    reply = http.get("/_mock/calls/export", params=params)
    assert reply.status_code == 200, reply.text
    assert reply.headers["content-type"].startswith("application/json")
    return reply.json()


def verify(pact, mock_url, tmp_path, name="pact.json"):
    """The Pact engine's verification of `pact` against sandbox `verify` of the mock at `mock_url`: each
    interaction's description -> its result ("OK" or "Error"), and the mismatches."""
    path = tmp_path / name
    path.write_text(json.dumps(pact))
    httpx.delete(f"{mock_url}/_mock/sandboxes/verify")          # control calls never make a sandbox: made here
    assert httpx.put(f"{mock_url}/_mock/sandboxes/verify", json={}).status_code in (200, 201)
    verifier = (Verifier(pact["provider"]["name"], host="127.0.0.1")
                .add_transport(url=f"{mock_url}/sandbox/verify")
                .add_source(str(path))
                .state_handler(f"{mock_url}/sandbox/verify/_mock/provider-states", teardown=True, body=True)
                .add_custom_header("Authorization", "Token mock-admin-token"))
    try:
        verifier.verify()
    except RuntimeError:
        pass                                    # the results say which interactions failed
    results = verifier.results["interactionResults"]
    return ({item["description"]: item["result"] for item in results},
            {item["description"]: item.get("mismatch") for item in results if item["result"] != "OK"})


def by_operation(pact, operation):
    return [item for item in pact["interactions"] if item["description"].startswith(operation + " ")]


# ------------------------------------------------------------ the pact and its verification
def test_a_client_flows_pact_has_its_states_and_matching_rules(recorder):
    with sandbox(recorder, "pact-shape") as http:
        flow = client_flow(http)
        pact = export(http, format="pact", consumer="shop-console", provider="idp-platform")
        calls = http.get("/_mock/calls").json()["results"]
    assert pact["consumer"] == {"name": "shop-console"} and pact["provider"] == {"name": "idp-platform"}
    assert pact["metadata"]["pactSpecification"] == {"version": "4.0"}
    # one interaction per distinct call: the polls that saw one state are one interaction
    polls = by_operation(pact, "getApplicationStatus")
    assert len(flow["polls"]) > len(set(flow["polls"])) == len(polls)
    assert [item["description"].rsplit(", ", 1)[1] for item in polls] == list(dict.fromkeys(flow["polls"]))
    assert len(pact["interactions"]) == len(calls) - (len(flow["polls"]) - len(polls))
    assert len({item["description"] for item in pact["interactions"]}) == len(pact["interactions"])
    for item in pact["interactions"]:
        assert item["type"] == "Synchronous/HTTP"
        assert item["providerStates"][0] == {"name": "the platform starts from {source}",
                                             "params": {"source": "fixtures"}}
        assert "Authorization" not in item["request"].get("headers", {})
    # what the platform generates is matched by format or type, not by value
    created = by_operation(pact, "createProject")[0]
    rules = created["response"]["matchingRules"]["body"]
    assert rules["$.id"]["matchers"] == [{"match": "regex", "regex": rules["$.id"]["matchers"][0]["regex"]}]
    assert re.match(rules["$.id"]["matchers"][0]["regex"], flow["project"])
    assert rules["$.created_at"]["matchers"][0]["match"] == "regex"
    assert re.match(rules["$.created_at"]["matchers"][0]["regex"], "2026-01-01T10:00:00.123456Z")
    assert rules["$.associated_services_count"]["matchers"] == [{"match": "type"}]
    assert "$.name" not in rules                # the client's own values are matched exactly
    deployed = polls[-1]
    body_rules = deployed["response"]["matchingRules"]["body"]
    assert body_rules["$.steps.details"]["matchers"] == [{"match": "type", "min": 0}]
    assert body_rules["$.execution_id"]["matchers"] == [{"match": "type"}]
    # the states it relied on, in the order the flow made them true: the records the flow made (with the call
    # that made them), the project's edit where it happened, then the state the deploy led to
    names = [state["name"] for state in deployed["providerStates"]]
    states = {state["name"]: state["params"] for state in deployed["providerStates"]}
    project = [state["params"] for state in deployed["providerStates"] if state["name"] == "project {id} exists"]
    assert project[0]["create"]["operation"] == "createProject" and project[0]["id"] == flow["project"]
    assert project[-1]["edits"] == [{"operation": "editProject", "method": "PUT", "path": f"/project/{flow['project']}",
                                     "body": {"name": "shop", "description": "the new shop"}}]
    assert states["environment {id} exists"]["create"]["path"] == f"/project/{flow['project']}/environment"
    assert states["application {id} exists"]["id"] == flow["application"]
    assert states["application {id} exists and is {state}"] == {"id": flow["application"], "state": "DEPLOYED",
                                                                 "acted": True}
    assert states["cluster {id} exists"] == {"id": CLUSTER}         # from the fixtures: nothing to create
    assert names.index("secret {id} exists") < len(names) - 1 - names[::-1].index("project {id} exists") \
        < names.index("application {id} exists and is {state}")


def test_a_client_flows_pact_verifies_against_a_fresh_mock(recorder, live_server, tmp_path):
    with sandbox(recorder, "pact-verify") as http:
        client_flow(http)
        pact = export(http, format="pact", consumer="shop-console")
        pact_v3 = export(http, format="pact", consumer="shop-console", spec="3")
    fresh = live_server("--clock", "manual")
    results, mismatches = verify(pact, fresh.url, tmp_path)
    assert set(results) == {item["description"] for item in pact["interactions"]}
    assert set(results.values()) == {"OK"}, mismatches
    assert pact_v3["metadata"]["pactSpecification"] == {"version": "3.0.0"}
    assert "type" not in pact_v3["interactions"][0]
    results, mismatches = verify(pact_v3, fresh.url, tmp_path, "pact-v3.json")
    assert len(results) == len(pact_v3["interactions"]) and set(results.values()) == {"OK"}, mismatches


def test_the_verifier_fails_on_the_interaction_a_drifting_mock_breaks(recorder, live_server, tmp_path):
    with sandbox(recorder, "pact-drift") as http:
        client_flow(http)
        pact = export(http, format="pact")
    drift = tmp_path / "drift.yaml"
    drift.write_text(STATUS_DRIFT)
    drifting = live_server("--clock", "manual", "--scenario", str(drift))
    results, mismatches = verify(pact, drifting.url, tmp_path)
    failed = [description for description, result in results.items() if result != "OK"]
    assert len(failed) == 1 and failed[0].startswith("createEnvironment POST /project/"), results
    assert "503" in json.dumps(mismatches[failed[0]])
    assert len(results) == len(pact["interactions"])


def masked(pact):
    """The pact with every value a matching rule covers replaced (what may differ between two runs)."""
    pact = json.loads(json.dumps(pact))
    for item in pact["interactions"]:
        response = item["response"]
        for path in response.get("matchingRules", {}).get("body", {}):
            steps = [a or int(b) if b else a or c for a, b, c in re.findall(r"\.(\w+)|\[(\d+)\]|\['([^']+)'\]", path)]
            if not steps:
                response["body"]["content"] = "<matched>"
                continue
            holder = response["body"]["content"]
            for key in steps[:-1]:
                holder = holder[key]
            holder[steps[-1]] = "<matched>"
    return pact


def test_the_same_flow_twice_gives_the_same_pact_but_for_what_the_rules_match(recorder):
    pacts = []
    for hours in (0, 5):
        httpx.delete(f"{recorder.url}/_mock/sandboxes/pact-twice")
        with sandbox(recorder, "pact-twice") as http:
            http.post("/_mock/clock/advance", json={"seconds": hours * 3600})
            client_flow(http)
            pacts.append(export(http, format="pact"))
    assert pacts[0] != pacts[1]                 # timestamps differ: the second ran five hours later
    assert masked(pacts[0]) == masked(pacts[1])


# ------------------------------------------------------------ secrets
def test_no_secret_value_or_token_reaches_a_pact_or_a_har(recorder):
    secrets = ["hunter2-app-secret", "env-secret-4711", "registry-password-0815", "AKIA-secret-key-x9",
               "whsec-webhook-secret-77", "override-secret-2202"]
    with sandbox(recorder, "pact-secrets") as http:
        minted = http.post("/_mock/tokens", json={"scopes": ["Admin"]}).json()["token"]
        flow = client_flow(http, secret=secrets[0])
        app, env = flow["application"], flow["environment"]
        assert http.post(f"/environment/{env}/secret", json={"key": "DB_PASS", "value": secrets[1]}).status_code == 201
        for body in ({"name": "hub", "kind": "GENERIC_CR", "url": "https://registry.example.com",
                      "config": {"username": "bot", "password": secrets[2]}},
                     {"name": "ecr", "kind": "CLOUDA_CR", "url": "https://ecr.example.com",
                      "config": {"region": "eu-west-3", "access_key_id": "AKIA1", "secret_access_key": secrets[3]}}):
            assert http.post(f"/organization/{ORG}/containerRegistry", json=body).status_code == 201, body
        hook = {"target_url": "https://hooks.example.com/x", "events": ["DEPLOYMENT_STARTED"],
                "target_secret": secrets[4]}
        assert http.post(f"/organization/{ORG}/webhook", json=hook).status_code == 201
        secret_id = http.get(f"/application/{app}/secret").json()["results"][0]["id"]
        minted_http = httpx.Client(base_url=str(http.base_url), headers={"Authorization": f"Token {minted}"})
        override = minted_http.post(f"/application/{app}/secret/{secret_id}/override", json={"value": secrets[5]})
        assert override.status_code in (200, 201), override.text
        exports = [export(http, format="pact"), export(http, format="pact", spec="3"), export(http, format="har")]
    texts = [json.dumps(document) for document in exports]
    assert all("**redacted**" in text for text in texts)            # the secret fields are there, masked
    for text in texts:
        for value in secrets + [minted, "mock-admin-token"]:
            assert value not in text
    har_headers = [h for e in exports[2]["log"]["entries"] for h in e["request"]["headers"]]
    assert {h["value"] for h in har_headers if h["name"] == "authorization"} <= {"Token ...oken",
                                                                               f"Token ...{minted[-4:]}"}


# ------------------------------------------------------------ HAR
def har_schema():
    """HAR 1.2 (the HTTP Archive format) as the format's field list describes it, with its required fields."""
    def record(required, **properties):
        return {"type": "object", "required": required, "properties": properties}

    text = {"type": "string"}
    number = {"type": "number"}
    pairs = {"type": "array", "items": record(["name", "value"], name=text, value=text, comment=text)}
    cookies = {"type": "array", "items": record(["name", "value"], name=text, value=text)}
    post_data = record(["mimeType"], mimeType=text, text=text, params={"type": "array"}, comment=text)
    request = record(["method", "url", "httpVersion", "cookies", "headers", "queryString", "headersSize", "bodySize"],
                     method=text, url={"type": "string", "pattern": "^https?://"}, httpVersion=text, cookies=cookies,
                     headers=pairs, queryString=pairs, postData=post_data, headersSize={"type": "integer"},
                     bodySize={"type": "integer"}, comment=text)
    content = record(["size", "mimeType"], size={"type": "integer"}, compression={"type": "integer"},
                     mimeType=text, text=text, encoding=text, comment=text)
    response = record(["status", "statusText", "httpVersion", "cookies", "headers", "content", "redirectURL",
                       "headersSize", "bodySize"], status={"type": "integer"}, statusText=text, httpVersion=text,
                      cookies=cookies, headers=pairs, content=content, redirectURL=text,
                      headersSize={"type": "integer"}, bodySize={"type": "integer"}, comment=text)
    timing = {"type": "number", "minimum": -1}
    timings = record(["send", "wait", "receive"], blocked=timing, dns=timing, connect=timing, send=number,
                     wait=number, receive=number, ssl=timing, comment=text)
    entry = record(["startedDateTime", "time", "request", "response", "cache", "timings"],
                   pageref=text, startedDateTime={"type": "string", "pattern": r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d"},
                   time={"type": "number", "minimum": 0}, request=request, response=response,
                   cache={"type": "object"}, timings=timings, serverIPAddress=text, connection=text, comment=text)
    creator = record(["name", "version"], name=text, version=text, comment=text)
    log = record(["version", "creator", "entries"], version={"const": "1.2"}, creator=creator, browser=creator,
                 pages={"type": "array"}, entries={"type": "array", "items": entry}, comment=text)
    return record(["log"], log=log)


def test_the_har_export_is_har_1_2_and_holds_exactly_the_journals_calls(recorder):
    with sandbox(recorder, "har-flow") as http:
        flow = client_flow(http)
        http.get(f"/application/{flow['application']}/log", params={"tail": 5})
        assert http.post(f"/organization/{ORG}/project", json={}).status_code == 400
        har = export(http, format="har")
        calls = http.get("/_mock/calls").json()["results"]
        polls = export(http, format="har", operation="getApplicationStatus")
    jsonschema.validate(har, har_schema())
    entries = har["log"]["entries"]
    assert len(entries) == len(calls)
    base = f"{recorder.url}/sandbox/har-flow"
    for entry, call in zip(entries, calls):
        request = entry["request"]
        assert request["method"] == call["method"]
        assert request["url"].split("?")[0] == base + call["path"]
        assert entry["response"]["status"] == call["status"]
        assert {"name": "x-request-id", "value": call["request_id"]} in entry["response"]["headers"]
        assert entry["time"] == call["duration_ms"] == entry["timings"]["wait"]
        if call["body"] is not None:
            assert json.loads(request["postData"]["text"]) == call["body"]
        if isinstance(call["response"], dict):
            assert json.loads(entry["response"]["content"]["text"]) == call["response"]
    assert {"name": "tail", "value": "5"} in entries[-2]["request"]["queryString"]
    jsonschema.validate(polls, har_schema())
    assert len(polls["log"]["entries"]) == len(flow["polls"])
    assert {e["request"]["url"] for e in polls["log"]["entries"]} == {
        f"{base}/application/{flow['application']}/status"}


# ------------------------------------------------------------ the provider-state protocol
def change(http, name, params):
    return http.post("/_mock/provider-states", json={"state": name, "params": params, "action": "setup"})


def test_provider_states_bring_a_service_to_a_state_and_start_worlds_over(recorder):
    with sandbox(recorder, "states") as http:
        reply = change(http, "application {id} exists and is {state}", {"id": APP, "state": "STOPPED"})
        assert reply.status_code == 200, reply.text
        assert reply.json()["sandbox"] == "states"
        assert http.get(f"/application/{APP}/status").json()["state"] == "STOPPED"
        project = http.post(f"/organization/{ORG}/project", json={"name": "temporary"}).json()["id"]
        # the verifier's query-string form (state, action and params in the query)
        started = http.post("/_mock/provider-states", params={"state": "the platform starts from {source}",
                                                               "action": "setup", "source": "fixtures"})
        assert started.status_code == 200, started.text
        assert http.get(f"/project/{project}").status_code == 404
        assert http.get(f"/application/{APP}/status").json()["state"] == "DEPLOYED"
        teardown = http.post("/_mock/provider-states", json={"state": "application {id} exists", "action": "teardown",
                                                             "params": {"id": APP}})
        assert teardown.status_code == 200 and teardown.json()["done"] == []
        gone = change(http, "application {id} does not exist",
                      {"id": APP, "delete": {"operation": "deleteApplication", "method": "DELETE",
                                             "path": f"/application/{APP}"}})
        assert gone.status_code == 200, gone.text
        assert http.get(f"/application/{APP}").status_code == 404


def test_provider_states_restore_snapshots_and_recreate_the_flows_records(recorder):
    with sandbox(recorder, "states-snap") as http:
        project = http.post(f"/organization/{ORG}/project", json={"name": "kept"}).json()["id"]
        assert http.post("/_mock/snapshots", json={"name": "with-kept", "replace": True}).status_code == 201
    with sandbox(recorder, "states-other") as http:
        assert change(http, "the platform starts from {source}", {"source": "snapshot with-kept"}).status_code == 200
        assert http.get(f"/project/{project}").json()["name"] == "kept"
        assert change(http, "the platform starts from {source}", {"source": "fixtures"}).status_code == 200
        made = change(http, "project {id} exists",
                      {"id": "0b0b0b0b-1111-4222-8333-444444444444",
                       "create": {"method": "POST", "path": f"/organization/{ORG}/project", "body": {"name": "again"}}})
        assert made.status_code == 200, made.text
        assert http.get("/project/0b0b0b0b-1111-4222-8333-444444444444").json()["name"] == "again"
    httpx.delete(f"{recorder.url}/_mock/snapshots/with-kept")


@pytest.mark.parametrize("state, params, expected", [
    ("somebody's state", {}, "is not one the mock writes"),
    ("application {id} exists", {"id": "not-a-uuid"}, "params.id"),
    ("application {id} exists", {"id": "0b0b0b0b-1111-4222-8333-444444444444"}, "does not say how to create it"),
    ("application {id} exists and is {state}", {"id": APP, "state": "CANCELED"}, "cannot be brought to"),
    ("the platform starts from {source}", {"source": "snapshot nowhere"}, "neither fixtures"),
    ("project {id} exists", {"id": "0b0b0b0b-1111-4222-8333-444444444444",
                             "create": {"method": "POST", "path": "/organization/x/project", "body": {}}},
     "state step"),
    ("application {id} exists and is {state}", {"id": APP, "state": ["DEPLOYED"]}, "params.state"),
    ("application {id} exists and is {state}", {"id": APP, "state": 7}, "params.state"),
    ("application {id} exists", {"id": APP, "edits": [{"method": "PUT", "path": f"/application/{APP}"}]},
     "needs a body"),
    ("application {id} exists", {"id": APP, "edits": [{"method": "GET", "path": f"/application/{APP}/log",
                                                       "query": ["tail", 5]}]}, "query must be an object"),
])
def test_a_state_the_mock_cannot_make_true_is_a_clear_400(recorder, state, params, expected):
    with sandbox(recorder, "states-bad") as http:
        body = assert_error(change(http, state, params), 400)
        assert expected in body["message"]
        assert http.get(f"/application/{APP}/status").json()["state"] == "DEPLOYED"      # nothing half done


def test_export_parameters_are_checked(recorder):
    with sandbox(recorder, "export-bad") as http:
        assert "query.format" in assert_error(http.get("/_mock/calls/export"), 400)["message"]
        assert "query.format" in assert_error(http.get("/_mock/calls/export?format=yaml"), 400)["message"]
        assert "query.spec" in assert_error(http.get("/_mock/calls/export?format=pact&spec=2"), 400)["message"]
        assert "unknown filter" in assert_error(http.get("/_mock/calls/export?format=har&colour=red"), 400)["message"]


# ------------------------------------------------------------ bodies the journal keeps cut
def test_cut_bodies_are_matched_by_type_and_listed_and_a_larger_limit_keeps_them_whole(recorder):
    runs = {}
    for name, limit in (("cut-small", 1024), ("cut-large", 1024 * 1024)):
        with sandbox(recorder, name, journal_body_limit=limit) as http:
            listing = http.get(f"/organization/{ORG}/project")
            assert len(listing.content) > 1024
            big = {"key": "BIG", "value": "v" * 3000}
            assert http.post(f"/application/{APP}/environmentVariable", json=big).status_code == 201
            runs[name] = export(http, format="pact")
    small = runs["cut-small"]
    notes = small["metadata"]["idp-mockserver"]
    listed = by_operation(small, "listProjects")[0]
    assert notes["cut"] == [{"description": listed["description"], "call": 1, "bytes": len(listing.content)}]
    assert listed["response"]["body"]["content"] == {}
    assert listed["response"]["matchingRules"]["body"] == {"$": {"combine": "AND", "matchers": [{"match": "type"}]}}
    assert [item["operation"] for item in notes["left_out"]] == ["createApplicationVariable"]
    assert "journal_body_limit" in notes["left_out"][0]["reason"]
    large = runs["cut-large"]
    assert large["metadata"]["idp-mockserver"]["cut"] == [] and large["metadata"]["idp-mockserver"]["left_out"] == []
    assert by_operation(large, "listProjects")[0]["response"]["body"]["content"]["results"]
    assert by_operation(large, "createApplicationVariable")[0]["request"]["body"]["content"]["value"] == "v" * 3000
    refused = httpx.put(f"{recorder.url}/_mock/sandboxes/cut-bad", json={"journal_body_limit": 10})
    assert "journal_body_limit" in assert_error(refused, 400)["message"]


# ------------------------------------------------------------ the pytest plugin
def test_the_plugin_writes_one_pact_for_a_client_suite_that_verifies_against_the_mock(live_server, tmp_path):
    pact_file = tmp_path / "pacts" / "console-idp.json"
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
               "examples/python", "--mockserver-pact", str(pact_file),
               "--mockserver-pact-consumer", "console"]
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("MOCKSERVER_", "PYTEST_"))}
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=240, env=clean)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    pact = json.loads(pact_file.read_text())
    assert pact["consumer"] == {"name": "console"}
    descriptions = [item["description"] for item in pact["interactions"]]
    assert len(descriptions) == len(set(descriptions)) == len({item["key"] for item in pact["interactions"]})
    states = {state["params"].get("state") for item in pact["interactions"] for state in item["providerStates"]}
    assert {"DEPLOYED", "BUILD_ERROR"} <= states
    reasons = {item["reason"] for item in pact["metadata"]["idp-mockserver"]["left_out"]}
    assert "about the caller's credential" in reasons                  # the read token's 403
    assert any("scenario rule status-down" in reason for reason in reasons)
    results, mismatches = verify(pact, live_server("--clock", "manual").url, tmp_path)
    assert len(results) == len(descriptions) and set(results.values()) == {"OK"}, mismatches
