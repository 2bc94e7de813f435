"""The Python control client (mockserver.client) as a client team uses it: every control route reached through
a method named by the control document's x-client, a sandbox per test that others never see, scenarios, the
clock, the journal, snapshots and pacts, three ways to start a mock, and the one line of a version mismatch."""

import http.server
import json
import shutil
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
import yaml
from support.ids import APP, ORG

from mockserver.app import MockServer
from mockserver.client import Client, MockServerError, connect, start_container, start_local, version_mismatch
from mockserver.core.settings import Settings
from mockserver.document.spec import CONTROL_DOCUMENT

pytestmark = pytest.mark.server

BUILD_FAILS = {"rules": [{"name": "build-breaks", "match": {"operation": "deployApplication"},
                          "effect": {"deployment": {"fail_at": "BUILD"}}}]}


def x_clients(document):
    return {op["x-client"]: (method.upper(), path) for path, item in document["paths"].items()
            for method, op in item.items() if isinstance(op, dict) and op.get("x-client")}


def test_every_control_operation_has_a_method_of_its_x_client_name():
    served = x_clients(yaml.safe_load(CONTROL_DOCUMENT.read_text()))
    missing = sorted(name for name in served if not callable(getattr(Client, name, None)))
    assert missing == [], f"control operations without a client method: {missing}"
    assert len(served) >= 37


def test_the_coverage_check_fails_on_an_operation_the_client_lacks():
    document = yaml.safe_load(CONTROL_DOCUMENT.read_text())
    document["paths"]["/_mock/planted"] = {"get": {"operationId": "planted", "x-client": "planted_route"}}
    assert [name for name in x_clients(document) if not hasattr(Client, name)] == ["planted_route"]


@pytest.fixture(scope="module")
def mock():
    client = start_local()
    yield client
    client.stop()


def test_every_control_route_is_reached_through_its_method(mock):
    """One call of every method against a live mock: each answers what its route answers."""
    box = mock.in_sandbox("routes")
    assert mock.health()["status"] == "ok" and box.state()["sandbox"] == "routes"
    assert "organizations:" in box.export_state() and box.state_tree()
    assert box.clock()["mode"] == "manual" and box.advance(5)["offset_seconds"] == 5
    httpx.get(f"{box.url}/organization", headers=box.headers("reader"))
    [call] = box.calls()
    assert box.call(call["id"])["operation"] == "getOrganization" and box.call_rows()["total"] == 1
    assert box.coverage()["called"] == 1 and box.verify(operation="getOrganization", times=1)["ok"]
    assert box.export("har")["log"]["entries"] and box.export_pact()["interactions"]
    with pytest.raises(MockServerError, match="not one the mock writes"):
        box.provider_states(state="the fixtures")
    started = box.provider_states(state="the platform starts from {source}", params={"source": "fixtures"})
    assert started is not None and box.calls() == []
    box.clear_calls()
    lanes = {lane["name"] for env in box.deployments()["results"] for lane in env["lanes"]}
    assert box.calls() == [] and "web" in lanes
    name = box.activate_scenario({"name": "posted", "rules": [{"match": {"operation": "getOrganization"},
                                                                 "effect": {"latency_ms": 1}}]})["name"]
    box.scenario("put", BUILD_FAILS)
    assert {s["name"] for s in box.scenarios()} == {name, "put"} and box.get_scenario("put")["name"] == "put"
    box.remove_scenario("put")
    assert box.deliveries() == [] and box.mint_token(["Read"]).startswith("mock-")
    assert box.scenario_schema()["title"] and box.control_document()["paths"]
    assert "routes" in {s["name"] for s in box.sandboxes()} and box.get_sandbox()["name"] == "routes"
    assert box.reset_sandbox()["name"] == "routes" and box.reset()["reset"] is True
    box.snapshot("s1")
    assert box.get_snapshot("s1")["private"] and any(s.get("private") for s in box.snapshots())
    box.restore("s1")
    box.delete_snapshot("s1")
    assert box.inspector_url().endswith("/sandbox/routes/_mock/ui")
    assert httpx.get(box.inspector_url()).status_code == 200
    other = mock.create_sandbox("routes-other")
    assert other["name"] == "routes-other"
    mock.delete_sandbox("routes-other")
    box.delete_sandbox()
    mock.in_sandbox("doomed")
    mock.delete_all_sandboxes()
    assert {s["name"] for s in mock.sandboxes()} <= {"default"}


def _tenant(mock, index):
    """A test of its own: a project, a scenario and a clock no other tenant sees."""
    box = mock.in_sandbox(f"tenant-{index}")
    try:
        name = f"proj-{index}"
        created = httpx.post(f"{box.url}/organization/{ORG}/project", json={"name": name}, headers=box.headers())
        assert created.status_code == 201
        box.scenario(f"mine-{index}", BUILD_FAILS)
        box.advance(index * 10)
        projects = {p["name"] for p in httpx.get(f"{box.url}/organization/{ORG}/project",
                                                  headers=box.headers("read")).json()["results"]}
        assert name in projects and not any(p.startswith("proj-") and p != name for p in projects)
        assert [s["name"] for s in box.scenarios()] == [f"mine-{index}"]
        assert box.clock()["offset_seconds"] == index * 10
        box.assert_called(operation="createProject", times=1)
        return index
    finally:
        box.delete_sandbox()


def test_eight_tests_in_parallel_each_in_its_own_sandbox_see_only_their_own(mock):
    with ThreadPoolExecutor(8) as pool:
        assert sorted(pool.map(lambda i: _tenant(mock, i), range(8))) == list(range(8))


def test_a_scenario_fails_a_deploy_and_the_clock_runs_a_deployment_through(mock):
    box = mock.in_sandbox("deploys")
    status = f"{box.url}/application/{APP}/status"
    assert httpx.post(f"{box.url}/application/{APP}/deploy", headers=box.headers("deploy")).status_code == 202
    seen = set()
    for _ in range(60):
        box.advance(1)
        seen.add(httpx.get(status, headers=box.headers("read")).json()["state"])
    assert seen >= {"BUILDING", "DEPLOYING", "DEPLOYED"}
    box.scenario("build-fails", BUILD_FAILS)
    httpx.post(f"{box.url}/application/{APP}/deploy", headers=box.headers("deploy"))
    box.advance(600)
    assert httpx.get(status, headers=box.headers("read")).json()["state"] == "BUILD_ERROR"
    box.assert_called(operation="deployApplication", scenario="build-fails", times=1)
    box.delete_sandbox()


def test_verify_counts_and_a_failing_assertion_carries_the_servers_message(mock):
    box = mock.in_sandbox("verify")
    for _ in range(3):
        httpx.get(f"{box.url}/organization", headers=box.headers())
    assert box.verify(operation="getOrganization", times=3)["ok"]
    assert box.verify(operation="getOrganization", at_least=2, at_most=3)["ok"]
    assert not box.verify(operation="getOrganization", count=2)["ok"]
    with pytest.raises(AssertionError) as failed:
        box.assert_called(operation="getOrganization", times=1)
    assert str(failed.value) == box.verify(operation="getOrganization", times=1)["message"]
    box.assert_not_called(operation="deployApplication")
    with pytest.raises(MockServerError) as refused:
        box.verify(operation="getOrganizaton")
    assert refused.value.status == 400 and "getOrganization" in refused.value.message
    with pytest.raises(TypeError, match="give one of them"):
        box.verify(operation="getOrganization", times=3, count=3)
    box.delete_sandbox()


def test_a_snapshot_restores_the_world_and_a_pact_names_the_calls_made(mock, tmp_path):
    box = mock.in_sandbox("snap")
    box.snapshot("clean")
    httpx.post(f"{box.url}/organization/{ORG}/project", json={"name": "kept-out"}, headers=box.headers())
    pact = box.write_pact(tmp_path / "pact.json", consumer="team-a")
    assert [i["request"]["path"] for i in pact["interactions"]] == [f"/organization/{ORG}/project"]
    assert json.loads((tmp_path / "pact.json").read_text())["consumer"]["name"] == "team-a"
    box.restore("clean")
    names = {p["name"] for p in httpx.get(f"{box.url}/organization/{ORG}/project", headers=box.headers()).json()
             ["results"]}
    assert "kept-out" not in names
    box.delete_sandbox()
    assert [s["name"] for s in mock.snapshots() if s.get("sandbox") == "snap"] == []


def test_tokens_come_from_the_mocks_fixtures_by_every_name(mock):
    assert mock.tokens["admin"] == mock.tokens["Admin"] == "mock-admin-token"
    assert mock.tokens["reader"] == mock.tokens["read"] == mock.tokens["READ"] == "mock-read-token"
    with pytest.raises(KeyError, match="no token named 'nobody'"):
        mock.headers("nobody")


def test_in_process_the_same_methods_drive_the_routes_without_a_socket():
    client = Client.in_process(MockServer(Settings(clock="manual")))
    try:
        box = client.in_sandbox("inproc")
        assert box.advance(30)["offset_seconds"] == 30
        box.http.get(f"{box.url}/organization", headers=box.headers())
        box.assert_called(operation="getOrganization", times=1)
    finally:
        client.stop()


def test_connect_to_a_running_mock_by_url_or_environment(mock, monkeypatch):
    client = connect(mock.root)
    assert client.health()["version"] and client.root == mock.root
    monkeypatch.setenv("MOCKSERVER_URL", mock.root)
    assert connect().root == mock.root
    monkeypatch.delenv("MOCKSERVER_URL")
    with pytest.raises(ValueError, match="MOCKSERVER_URL"):
        connect()


def test_two_mocks_in_one_process_are_apart(mock):
    second = start_local()
    try:
        assert second.root != mock.root
        second.in_sandbox("only-here")
        assert "only-here" not in {s["name"] for s in mock.sandboxes()}
    finally:
        second.stop()


class _OldMock(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"status": "ok", "version": "9.9.0"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_a_server_of_another_major_minor_is_named_in_one_line():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _OldMock)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    said = []
    try:
        connect(url, warn=said.append)
    finally:
        server.shutdown()
    assert said == [version_mismatch("9.9.0", url)]
    assert said[0] == (f"idp-mockserver client 0.1.0: the mock at {url} is 9.9.0 (major.minor differ); "
                       f"some calls may not match")
    assert version_mismatch("0.1.7", url) is None


def _engine_and_image(image):
    if shutil.which("docker") is None:
        return "no docker command on this machine"
    if subprocess.run(["docker", "info"], capture_output=True, timeout=30).returncode != 0:
        return "no Docker engine answers (.ci/docker-engine starts one)"
    if subprocess.run(["docker", "image", "inspect", image], capture_output=True, timeout=30).returncode != 0:
        return f"the image {image} is not built (.ci/docker-engine builds it)"
    return None


def test_start_the_mock_as_its_container_through_testcontainers():
    image = "idp-mockserver:local"
    why = _engine_and_image(image)
    if why:
        pytest.skip(f"container start not tested: {why}")
    bridge = subprocess.run(["docker", "network", "inspect", "bridge"], capture_output=True).returncode == 0
    client = start_container(image, network=None if bridge else "host")
    try:
        box = client.in_sandbox("boxed")
        httpx.get(f"{box.url}/organization", headers=box.headers())
        box.assert_called(operation="getOrganization", times=1)
    finally:
        client.stop()
