"""Pacts of flows that write: what a flow created, edited, deleted and deployed, verified by the Pact engine
(pact-python's verifier, through the state-change URL) against a fresh mock, in the order of the file and in
reverse; provider states that stay small however often a record is edited; and calls that are left out with
the reason (a network fault shaped the reply, a 405, a record the journal does not say how it was made)."""

import json
import os
import subprocess
import sys

import httpx
import pytest
from pact import Verifier
from support.ids import ADMIN, APP, ENV, ORG, PROJECT, REGISTRY
from support.live import LiveServer

pytestmark = pytest.mark.server

LOG_LEVEL = "6e8a0c2d-4f6b-4d8e-8a0c-2d4f6b8e0a2c"        # a project variable of the fixtures
APPLICATION = {"name": "shop", "git_repository": {"url": "https://codehost1.com/acme/shop.git", "branch": "main"},
               "build_mode": "DOCKER", "cpu": 500, "memory": 512,
               "ports": [{"internal_port": 8080, "publicly_accessible": True}]}


@pytest.fixture(scope="module")
def verifier_mock():
    """The fresh mock every pact of this module is verified against."""
    server = LiveServer("--clock", "manual")
    yield server
    server.stop()


def sandbox(server, name, **options):
    httpx.delete(f"{server.url}/_mock/sandboxes/{name}")
    reply = httpx.put(f"{server.url}/_mock/sandboxes/{name}", json=options)
    assert reply.status_code in (200, 201), reply.text
    return httpx.Client(base_url=f"{server.url}/sandbox/{name}", headers=ADMIN, timeout=60)


def ok(reply, *statuses):
    assert reply.status_code in (statuses or (200, 201, 202, 204)), (reply.request.url, reply.status_code, reply.text)
    return reply.json() if reply.content else None


def poll(http, path, until):
    seen = []
    while not seen or seen[-1] not in until:
        seen.append(ok(http.get(path))["state"])
        http.post("/_mock/clock/advance", json={"seconds": 2})
        assert len(seen) < 60, seen
    return seen


def busy_flow(http):
    """Records of several kinds created, edited and deleted, deploys and stops with status reads in between; reads
    whose replies show what earlier calls did to other records (an edit of the project puts its deployed
    application out of date, a renamed registry shows in its container, an edited project variable in the
    application's list)."""
    project = ok(http.post(f"/organization/{ORG}/project", json={"name": "flow", "description": "first"}))["id"]
    env = ok(http.post(f"/project/{project}/environment", json={"name": "qa", "mode": "STAGING"}))["id"]
    app = ok(http.post(f"/environment/{env}/application", json=APPLICATION))["id"]
    variable = ok(http.post(f"/application/{app}/environmentVariable", json={"key": "MODE", "value": "a"}))["id"]
    registry = ok(http.post(f"/organization/{ORG}/containerRegistry", json={
        "name": "hub", "kind": "GENERIC_CR", "url": "https://hub.example", "config": {"username": "u"}}))["id"]
    container = ok(http.post(f"/environment/{env}/container", json={
        "name": "worker", "registry_id": registry, "image_name": "acme/worker", "tag": "1.0"}))["id"]
    ok(http.post(f"/application/{app}/deploy", json={}))
    poll(http, f"/application/{app}/status", ("DEPLOYED",))
    for number in range(3):                      # edits of one record: only the last of them is a state
        ok(http.put(f"/project/{project}", json={"name": "flow", "description": f"edit {number}"}))
    assert ok(http.get(f"/application/{app}/status"))["service_deployment_status"] == "OUT_OF_DATE"
    ok(http.put(f"/organization/{ORG}/containerRegistry/{registry}", json={
        "name": "hub-renamed", "kind": "GENERIC_CR", "url": "https://hub.example", "config": {"username": "u"}}))
    assert ok(http.get(f"/container/{container}"))["registry"]["name"] == "hub-renamed"
    ok(http.put(f"/application/{app}/environmentVariable/{variable}", json={"key": "MODE", "value": "b"}))
    ok(http.put(f"/project/{PROJECT}/environmentVariable/{LOG_LEVEL}", json={"key": "LOG_LEVEL", "value": "debug"}))
    assert "debug" in json.dumps(ok(http.get(f"/application/{APP}/environmentVariable")))
    ok(http.post(f"/application/{APP}/stop", json={}))
    poll(http, f"/application/{APP}/status", ("STOPPED",))
    ok(http.get(f"/environment/{ENV}/status"))
    ok(http.put(f"/environment/{env}", json={"name": "qa-2", "mode": "PRODUCTION"}))
    ok(http.get(f"/environment/{env}"))
    ok(http.delete(f"/application/{app}/environmentVariable/{variable}"))
    ok(http.get(f"/application/{app}/environmentVariable"))
    labels = ok(http.post(f"/organization/{ORG}/labelsGroups", json={
        "name": "team", "labels": [{"key": "team", "value": "a"}]}))["id"]
    ok(http.put(f"/organization/{ORG}/labelsGroups/{labels}", json={
        "name": "team", "labels": [{"key": "team", "value": "b"}]}))
    ok(http.delete(f"/container/{container}"))
    ok(http.get(f"/environment/{env}/container"))
    ok(http.delete(f"/organization/{ORG}/containerRegistry/{REGISTRY}"), 409)
    ok(http.delete(f"/organization/{ORG}/labelsGroups/{labels}"))
    ok(http.get(f"/organization/{ORG}/labelsGroups"))
    ok(http.get(f"/project/{project}"))
    ok(http.delete(f"/project/{project}"))
    ok(http.get(f"/project/{project}"), 404)


def export(http, **params):
    return ok(http.get("/_mock/calls/export", params={"format": "pact", "consumer": "flow", **params}))


def verify(pact, mock_url, path, reverse=False):
    """The Pact engine's results for `pact` against a fresh sandbox `verify` of the mock: description -> "OK"
    or the mismatch. `reverse`: the interactions in the other order."""
    document = {**pact, "interactions": list(reversed(pact["interactions"])) if reverse else pact["interactions"]}
    path.write_text(json.dumps(document))
    httpx.delete(f"{mock_url}/_mock/sandboxes/verify")
    assert httpx.put(f"{mock_url}/_mock/sandboxes/verify", json={"clock": "manual"}).status_code in (200, 201)
    verifier = (Verifier(pact["provider"]["name"], host="127.0.0.1")
                .add_transport(url=f"{mock_url}/sandbox/verify")
                .add_source(str(path))
                .state_handler(f"{mock_url}/sandbox/verify/_mock/provider-states", teardown=True, body=True)
                .add_custom_header("Authorization", "Token mock-admin-token"))
    try:
        verifier.verify()
    except RuntimeError:
        pass                                    # the results say which interactions failed
    return {item["description"]: "OK" if item["result"] == "OK" else item.get("mismatch")
            for item in verifier.results["interactionResults"]}


def test_a_flow_that_writes_verifies_against_a_fresh_mock_in_file_order_and_in_reverse(recorder, verifier_mock,
                                                                                        tmp_path):
    with sandbox(recorder, "busy") as http:
        busy_flow(http)
        pact = export(http)
        calls = ok(http.get("/_mock/calls"))["results"]
    descriptions = [item["description"] for item in pact["interactions"]]
    for reverse in (False, True):
        results = verify(pact, verifier_mock.url, tmp_path / f"busy-{reverse}.json", reverse)
        assert set(results) == set(descriptions)
        assert {name: result for name, result in results.items() if result != "OK"} == {}, reverse
    notes = pact["metadata"]["idp-mockserver"]                  # and nothing of the flow was left out
    assert notes["left_out"] == [] and notes.get("unverifiable") == [], notes
    assert len(pact["interactions"]) >= 35 and notes["calls"] == len(calls)


def states_of(pact, operation, index=-1, not_on=None):
    items = [item for item in pact["interactions"] if item["description"].startswith(operation + " ")
             and (not_on is None or not_on not in item["request"]["path"])]
    return items[index]["providerStates"]


def test_a_state_holds_what_other_records_did_and_a_records_edits_collapsed(recorder):
    with sandbox(recorder, "busy-states") as http:
        busy_flow(http)
        pact = export(http)
    # the application's status after the project's edits: the project made, the application deployed, then the
    # project's last edit (which put the application out of date), in that order
    states = states_of(pact, "getApplicationStatus", not_on=APP)
    project = [(index, state["params"]) for index, state in enumerate(states) if state["name"] == "project {id} exists"
               and state["params"]["id"] != PROJECT]
    assert project[0][1]["create"]["operation"] == "createProject" and "edits" not in project[0][1]
    assert [edit["body"]["description"] for edit in project[-1][1]["edits"]] == ["edit 2"]
    deployed = [state["name"] for state in states].index("application {id} exists and is {state}")
    assert states[deployed]["params"]["acted"] is True and project[0][0] < deployed < project[-1][0]
    # the container's read holds its registry, renamed
    registry = [state["params"] for state in states_of(pact, "getContainer")
                if state["name"] == "container registry {id} exists"]
    assert [edit["body"]["name"] for state in registry for edit in state.get("edits", [])] == ["hub-renamed"]
    # an edit of a record of the fixtures that another record's list shows
    listed = states_of(pact, "listApplicationVariables", 0)
    assert {"name": "variable {id} exists", "params": {"id": LOG_LEVEL, "edits": [
        {"operation": "editProjectVariable", "method": "PUT", "path": f"/project/{PROJECT}/environmentVariable/"
         f"{LOG_LEVEL}", "body": {"key": "LOG_LEVEL", "value": "debug"}}]}} in listed


def test_states_grow_with_the_flow_not_with_the_square_of_a_records_edits(recorder):
    sizes = {}
    for edits in (100, 400):
        with sandbox(recorder, f"edits-{edits}") as http:
            project = ok(http.post(f"/organization/{ORG}/project", json={"name": "edited"}))["id"]
            for number in range(edits):
                ok(http.put(f"/project/{project}", json={"name": "edited", "description": f"edit {number}"}))
            pact = export(http)
        steps = [step for item in pact["interactions"] for state in item["providerStates"]
                 for step in ([state["params"]["create"]] if "create" in state["params"] else [])
                 + state["params"].get("edits", [])]
        assert len(pact["interactions"]) == edits + 1
        assert len(steps) <= 2 * (edits + 1)                      # a create and one edit at most per interaction
        sizes[edits] = len(json.dumps(pact))
    assert sizes[400] < 4.5 * sizes[100] and sizes[400] < 2_000_000, sizes


# ------------------------------------------------------------ what is left out, and why
def activate(http, name, rules):
    reply = http.put(f"/_mock/scenarios/{name}", content=json.dumps({"name": name, "rules": rules}),
                     headers={"Content-Type": "application/json"})
    assert reply.status_code == 200, reply.text


def test_replies_a_network_fault_shaped_and_a_405_are_left_out_with_their_reasons(recorder, verifier_mock, tmp_path):
    with sandbox(recorder, "faults") as http:
        activate(http, "net", [
            {"name": "cut", "match": {"operation": "getProject", "nth": 1}, "effect": {"truncate": {"fraction": 0.5}}},
            {"name": "broken", "match": {"operation": "getEnvironment", "nth": 1}, "effect": {"malformed_body": True}},
            {"name": "slow", "match": {"operation": "getApplication", "nth": 1},
             "effect": {"dribble": {"chunks": 2, "delay_ms": 5}}},
            {"name": "gone", "match": {"operation": "listProjects", "nth": 1}, "effect": {"reset": {"fraction": 0.3}}}])
        with pytest.raises(httpx.TransportError):
            http.get(f"/project/{PROJECT}")
        assert http.get(f"/environment/{ENV}").status_code == 200               # a body that is not JSON
        assert http.get(f"/application/{APP}").status_code == 200                # whole, but slowly
        with pytest.raises(httpx.TransportError):
            http.get(f"/organization/{ORG}/project")
        assert http.patch(f"/project/{PROJECT}", json={}).status_code == 405
        assert http.get(f"/project/{PROJECT}").status_code == 200                # the second read: a real one
        pact = export(http)
    left = {item["operation"] or item["status"]: item["reason"] for item in pact["metadata"]["idp-mockserver"]
            ["left_out"]}
    for operation, fault, rule in (("getProject", "truncate", "net/cut"), ("getEnvironment", "malformed_body",
                                   "net/broken"), ("getApplication", "dribble", "net/slow"),
                                   ("listProjects", "reset", "net/gone")):
        assert left[operation] == (f"its reply was shaped by the network fault ({fault}) of scenario rule {rule}: "
                                   f"not the reply the platform sends")
    assert left[405] == "its path has no PATCH operation (405): no operation of the API answers it"
    assert [item["description"] for item in pact["interactions"]] == [f"getProject GET /project/{PROJECT} -> 200"]
    assert set(verify(pact, verifier_mock.url, tmp_path / "faults.json").values()) == {"OK"}


def test_calls_whose_records_the_journal_gave_up_are_left_out_and_the_pact_says_so(make_server):
    from starlette.testclient import TestClient
    with TestClient(make_server(journal_size=3), base_url="http://mock", headers=ADMIN) as http:
        project = ok(http.post(f"/organization/{ORG}/project", json={"name": "early"}))["id"]
        for _ in range(3):
            ok(http.get(f"/organization/{ORG}/project"))
        ok(http.get(f"/project/{project}"))
        pact = export(http)
    notes = pact["metadata"]["idp-mockserver"]
    assert notes["dropped"] == 2 and pact["interactions"] == []
    reasons = {item["operation"]: item["reason"] for item in notes["left_out"]}
    assert reasons["getProject"].startswith(f"its path names project {project}, which neither the world the flow "
                                            f"started from nor a journaled call made")
    assert reasons["listProjects"] == ("a fresh mock with its provider states gives another reply: its body differs "
                                       "at $.results")      # the list shows the project the journal gave up
    assert notes["unverifiable"] == ["the journal gave up 2 call(s) (--journal-size, --journal-memory), and 3 "
                                     "call(s) that relied on what they made are left out"]


# ------------------------------------------------------------ the pytest plugin and snapshots
SUITE = f'''
import httpx

def test_reads_after_a_restore(mockserver):
    http = httpx.Client(base_url=mockserver.url, headers=mockserver.headers())
    project = http.post("/organization/{ORG}/project", json={{"name": "kept"}}).json()["id"]
    mockserver.snapshot("with-project")
    assert http.delete(f"/project/{{project}}").status_code == 204
    mockserver.restore("with-project")
    assert http.get(f"/project/{{project}}").status_code == 200

def test_reads_the_organization(mockserver):
    assert httpx.get(mockserver.url + "/organization", headers=mockserver.headers()).status_code == 200
'''


def test_the_plugin_refuses_in_one_line_a_pact_that_starts_from_a_private_snapshot(tmp_path):
    (tmp_path / "test_suite.py").write_text(SUITE)
    pact_file = tmp_path / "pacts" / "suite.json"
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("MOCKSERVER_", "PYTEST_"))}
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                             "test_suite.py", "--mockserver-pact", str(pact_file)], cwd=tmp_path,
                            capture_output=True, text=True, timeout=240, env=clean)
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-2000:]
    refused = [line for line in result.stdout.splitlines()          # the line itself (the summary may repeat it)
               if line.startswith("mockserver: the pact") and "is not written" in line]
    assert len(refused) == 1 and "Traceback" not in result.stdout, result.stdout[-3000:]
    assert f"mockserver: the pact {pact_file} is not written: its calls start from snapshot with-project." \
        in refused[0] and "private to sandbox main-test_reads_after_a_restore-" in refused[0]
    assert "2 passed, 1 error" in result.stdout                    # the test passed; writing its pact did not
    pact = json.loads(pact_file.read_text())                        # the other test's calls are written
    assert [item["description"] for item in pact["interactions"]] == ["getOrganization GET /organization -> 200"]
