"""Running sandboxes for many users: the limit on how many exist, expiry of idle ones on the wall
clock, the control token, the replica name, and the pytest plugin giving every test of a suite
run under pytest-xdist its own sandbox of one shared mock.
"""

import os
import re
import subprocess
import sys
import time

import httpx
import pytest
from starlette.routing import Route
from starlette.testclient import TestClient
from support import ROOT
from support.http import assert_error
from support.ids import ADMIN, ORG
from support.live import LiveServer

from mockserver.app import MockServer
from mockserver.client import Client
from mockserver.core.settings import Settings
from mockserver.pytest_plugin import _InProcess, sandbox_name
from mockserver.sandboxes.sandbox import NAME, Sandbox, Sandboxes

PROJECTS = f"/organization/{ORG}/project"


@pytest.fixture
def build(spec):
    """An in-process mock with settings overrides and, optionally, an injected wall clock."""
    made = []

    def make(wall=time.time, **overrides):
        server = MockServer(Settings(clock="manual", self_check=True, **overrides), spec=spec, wall=wall)
        made.append(server)
        return server

    yield make
    for server in made:
        assert server.pipeline.violations == []


def names(mock):
    reply = mock.get("/_mock/sandboxes")
    assert reply.status_code == 200, reply.text
    return {box["name"] for box in reply.json()["results"]}


# ---------------------------------------------------------------- --max-sandboxes
def test_the_sandbox_past_the_limit_is_refused_and_none_is_evicted(build):
    server = build(max_sandboxes=2)                     # `default` and one more
    with TestClient(server, base_url="http://mock", headers=ADMIN) as mock:
        made = mock.post(f"/sandbox/first{PROJECTS}", json={"name": "mine"})
        assert made.status_code == 201
        refusals = [mock.get("/sandbox/second/organization"),
                    mock.get("/organization", headers={"X-Mock-Sandbox": "second"}),
                    mock.put("/_mock/sandboxes/second")]
        for reply in refusals:
            message = assert_error(reply, 503)["message"]
            assert "second" in message and "limit is 2" in message and "--max-sandboxes" in message
        assert "does not exist" in assert_error(mock.get("/sandbox/second/_mock/calls"), 404)["message"]
        assert names(mock) == {"default", "first"}
        assert mock.get(f"/sandbox/first/project/{made.json()['id']}").json()["name"] == "mine"
        assert mock.get("/organization").status_code == 200
        # an existing one may still be replaced; a place freed by a delete can be taken
        assert mock.put("/_mock/sandboxes/first").status_code == 200
        assert mock.delete("/_mock/sandboxes/first").status_code == 204
        assert mock.get("/sandbox/second/organization").status_code == 200
        assert names(mock) == {"default", "second"}


def test_limit_of_one_leaves_only_default(build):
    server = build(max_sandboxes=1)
    with TestClient(server, base_url="http://mock", headers=ADMIN) as mock:
        assert_error(mock.get("/sandbox/any/organization"), 503)
        assert mock.get("/organization").status_code == 200
        assert mock.delete("/_mock/sandboxes/default").status_code == 204
        assert mock.get("/organization").status_code == 200


# ---------------------------------------------------------------- --sandbox-ttl on the wall clock
class Wall:
    def __init__(self, start=1_800_000_000.0):
        self.now = start

    def __call__(self):
        return self.now


def wait_until_gone(mock, name, timeout=3.0):
    """The background sweep runs about every 50 ms (and at most once per wall second)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if name not in names(mock):
            return
        time.sleep(0.02)
    raise AssertionError(f"sandbox {name} did not expire: {names(mock)}")


def test_idle_sandboxes_expire_default_never_and_a_used_one_is_kept(build):
    wall = Wall()
    server = build(wall=wall, sandbox_ttl=60)
    with TestClient(server, base_url="http://mock", headers=ADMIN) as mock:
        mock.post(f"/sandbox/idle{PROJECTS}", json={"name": "forgotten"})
        mock.get("/sandbox/busy/organization")
        wall.now += 40
        mock.get("/sandbox/busy/organization")        # used: its idle time starts again
        wall.now += 30                                 # idle 70 s, busy 30 s, default idle 70 s
        wait_until_gone(mock, "idle")
        assert names(mock) == {"default", "busy"}
        wall.now += 31
        wait_until_gone(mock, "busy")
        assert names(mock) == {"default"}
        # a name used again after it expired is a fresh sandbox from the fixtures
        listed = {p["name"] for p in mock.get(f"/sandbox/idle{PROJECTS}").json()["results"]}
        assert "forgotten" not in listed


def test_expiry_is_checked_before_a_sandbox_is_made(build):
    """Without the background sweep (no lifespan): creating one more frees the expired first."""
    wall = Wall()
    server = build(wall=wall, sandbox_ttl=10, max_sandboxes=2)
    mock = TestClient(server, base_url="http://mock", headers=ADMIN)
    assert mock.get("/sandbox/old/organization").status_code == 200
    assert_error(mock.get("/sandbox/new/organization"), 503)
    wall.now += 11
    assert mock.get("/sandbox/new/organization").status_code == 200
    assert names(mock) == {"default", "new"}


def test_using_the_control_api_of_a_sandbox_keeps_it(build):
    wall = Wall()
    server = build(wall=wall, sandbox_ttl=10)
    mock = TestClient(server, base_url="http://mock", headers=ADMIN)
    mock.get("/sandbox/watched/organization")
    wall.now += 8
    mock.get("/sandbox/watched/_mock/calls")
    wall.now += 8
    mock.put("/_mock/sandboxes/trigger")               # a creation sweeps
    assert "watched" in names(mock)


def test_every_dropped_sandbox_is_handed_over_for_clean_up():
    """Deleted, replaced and expired sandboxes all reach `forget` (the server closes their webhook clients)."""
    wall, dropped = Wall(), []
    boxes = Sandboxes(lambda name, options: Sandbox(name, object(), b"", "fixtures", wall()), limit=10, ttl=5,
                      wall=wall, forget=lambda box: dropped.append(box.name))
    boxes.create("default")
    first = boxes.create("a")
    assert boxes.create("a") is first and dropped == []           # no replace: the same one
    boxes.create("a", replace=True)
    assert dropped == ["a"]
    boxes.create("b")
    boxes.delete("b")
    assert dropped == ["a", "b"]
    boxes.delete("default")
    assert dropped == ["a", "b", "default"] and "default" in boxes.live
    wall.now += 6
    assert boxes.sweep(force=True) == ["a"]
    assert dropped == ["a", "b", "default", "a"] and set(boxes.live) == {"default"}


def test_list_shows_limit_and_ttl(build):
    server = build(max_sandboxes=7, sandbox_ttl=90)
    listing = TestClient(server, base_url="http://mock").get("/_mock/sandboxes").json()
    assert listing["limit"] == 7 and listing["ttl_seconds"] == 90


# ---------------------------------------------------------------- --control-token
TOKEN = "control-s3cret"
OPEN = ("/_mock/health", "/_mock/ui", "/_mock/schemas")   # probes, the inspector page (it asks for the token), schemas
CONTROL = {"Authorization": f"Bearer {TOKEN}"}


def control_routes(server):
    """(method, path) of every route of the control API, with `x` for each path parameter."""
    out = []
    for route in server.control.routes:
        assert isinstance(route, Route)
        for method in sorted(route.methods - {"HEAD"}):
            out.append((method, route.path.replace("{name}", "x")))
    return out


@pytest.fixture
def guarded(build):
    server = build(control_token=TOKEN)
    with TestClient(server, base_url="http://mock") as mock:
        yield server, mock


def test_every_control_route_needs_the_control_token(guarded):
    server, mock = guarded
    routes = control_routes(server)
    assert len(routes) >= 20
    guarded_routes = [(m, p) for m, p in routes if not p.startswith(OPEN)]
    for method, path in guarded_routes:
        for prefix in ("", "/sandbox/x"):
            for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN},
                            {"Authorization": f"Token {TOKEN}"}, ADMIN, {"Authorization": "Bearer mock-admin-token"},
                            {"X-Mock-Sandbox": "x"}):
                reply = mock.request(method, prefix + path, headers=headers)
                body = assert_error(reply, 401)
                assert "control token" in body["message"], (method, prefix + path)
                assert reply.headers["www-authenticate"] == "Bearer"
    assert names(TestClient(server, base_url="http://mock", headers=CONTROL)) == {"default"}   # none was made
    for method, path in routes:
        if path.startswith(OPEN):
            assert mock.request(method, path).status_code != 401, (method, path)


def test_the_control_token_opens_every_control_route(guarded):
    server, mock = guarded
    for method, path in control_routes(server):
        for prefix in ("", "/sandbox/x"):
            reply = mock.request(method, prefix + path, headers=CONTROL)
            assert reply.status_code != 401, (method, prefix + path, reply.text)
            assert reply.status_code < 500, (method, prefix + path, reply.text)


def test_the_control_token_is_not_an_api_token(guarded):
    server, mock = guarded
    for scheme in ("Bearer", "Token"):
        assert_error(mock.get("/organization", headers={"Authorization": f"{scheme} {TOKEN}"}), 401)
        assert_error(mock.get("/sandbox/s/organization", headers={"Authorization": f"{scheme} {TOKEN}"}), 401)
    assert mock.get("/organization", headers=ADMIN).status_code == 200
    journal = mock.get("/_mock/calls", headers=CONTROL).json()
    assert journal["total"] == 3
    assert TOKEN not in str(journal)                     # never journaled in clear


def test_on_a_protected_mock_only_a_caller_of_the_start_world_makes_a_sandbox_by_using_it(guarded):
    server, mock = guarded
    for headers in ({}, {"Authorization": "Token not-a-token"}, {"Authorization": f"Bearer {TOKEN}"}):
        body = assert_error(mock.get("/sandbox/new-one/organization", headers=headers), 401)
        assert "PUT /_mock/sandboxes/new-one" in body["message"]
        assert_error(mock.get("/organization", headers={**headers, "X-Mock-Sandbox": "new-two"}), 401)
    assert mock.get("/sandbox/new-one/_mock/ui").status_code == 200       # the page's files make none either
    assert names(TestClient(server, base_url="http://mock", headers=CONTROL)) == {"default"}
    assert mock.get("/sandbox/new-one/organization", headers=ADMIN).status_code == 200
    assert mock.put("/_mock/sandboxes/new-two", headers=CONTROL).status_code == 201
    assert names(TestClient(server, base_url="http://mock", headers=CONTROL)) == {"default", "new-one", "new-two"}


def test_without_a_control_token_the_control_api_is_open(build):
    mock = TestClient(build(), base_url="http://mock")
    assert mock.get("/_mock/calls").status_code == 200
    assert mock.put("/_mock/sandboxes/open").status_code == 201
    assert mock.get("/sandbox/open/_mock/calls").status_code == 200
    assert mock.get("/_mock/sandboxes").status_code == 200


# ---------------------------------------------------------------- --replica-name
def test_every_reply_names_the_replica(build):
    server = build(replica_name="replica-7", control_token=TOKEN)
    mock = TestClient(server, base_url="http://mock")
    replies = [mock.get("/organization", headers=ADMIN),                         # API
               mock.get("/organization"),                                        # API error (401)
               mock.get("/project/00000000-0000-4000-8000-000000000000", headers=ADMIN),   # 404
               mock.get("/sandbox/a b/organization"),                             # bad sandbox name
               mock.get("/openapi.json"),
               mock.get("/_mock/health"),
               mock.get("/_mock/calls"),                                          # control error (401)
               mock.get("/_mock/calls", headers=CONTROL),
               mock.get("/sandbox/r/_mock/clock", headers=CONTROL),                 # no such sandbox (404)
               mock.get("/_mock/sandboxes/none", headers=CONTROL)]               # control 404
    for reply in replies:
        assert reply.headers.get("x-mock-replica") == "replica-7", (reply.request.url, reply.status_code)
    assert [r.status_code for r in replies] == [200, 401, 404, 400, 200, 200, 401, 200, 404, 404]
    assert mock.get("/_mock/health").json()["replica"] == "replica-7"
    assert mock.get("/_mock/sandboxes", headers=CONTROL).json()["replica"] == "replica-7"


def test_without_a_replica_name_no_reply_names_one(build):
    mock = TestClient(build(), base_url="http://mock")
    assert "x-mock-replica" not in mock.get("/organization", headers=ADMIN).headers
    assert "x-mock-replica" not in mock.get("/_mock/health").headers
    assert mock.get("/_mock/health").json()["replica"] is None


@pytest.mark.server
def test_live_server_with_control_token_and_replica_from_options_and_environment(monkeypatch):
    """Over real sockets: `--control-token`/`--replica-name`, and MOCKSERVER_CONTROL_TOKEN/MOCKSERVER_REPLICA."""
    by_option = LiveServer("--clock", "manual", "--control-token", TOKEN, "--replica-name", "r-opt")
    monkeypatch.setenv("MOCKSERVER_CONTROL_TOKEN", TOKEN)
    monkeypatch.setenv("MOCKSERVER_REPLICA", "r-env")
    by_env = LiveServer("--clock", "manual")
    try:
        for server, replica in ((by_option, "r-opt"), (by_env, "r-env")):
            with httpx.Client(base_url=server.url, timeout=10) as http:
                health = http.get("/_mock/health")
                assert health.json()["replica"] == replica and health.headers["x-mock-replica"] == replica
                assert_error(http.get("/_mock/calls"), 401)
                assert_error(http.get("/sandbox/live/_mock/calls"), 401)
                assert_error(http.get("/_mock/calls", headers=ADMIN), 401)
                assert http.get("/_mock/calls", headers=CONTROL).status_code == 200
                api = http.get("/sandbox/live/organization", headers=ADMIN)
                assert api.status_code == 200 and api.headers["x-mock-replica"] == replica
                assert_error(http.get("/organization", headers=CONTROL), 401)
    finally:
        by_option.stop()
        by_env.stop()


# ---------------------------------------------------------------- the plugin under pytest-xdist
@pytest.mark.parametrize("prefix, worker, nodeid", [
    ("", "main", "tests/test_a.py::test_one"),
    ("job-42.", "gw3", "tests/test_a.py::TestGroup::test_one[param with spaces/and slashes]"),
    ("ci job #9 / ", "gw0", "t.py::test_" + "long" * 40),
    ("p" * 100, "gw1", "t.py::test_x[\u00e9t\u00e9]"),
])
def test_plugin_sandbox_names_are_valid_and_distinct(prefix, worker, nodeid):
    name = sandbox_name(prefix, worker, nodeid)
    assert NAME.match(name), name
    combos = {(prefix, other, nodeid) for other in ("gw0", "gw1", "gw2", "main", worker)}
    combos |= {(prefix + "x", worker, nodeid), (prefix, worker, nodeid + "[2]")}
    names = {sandbox_name(*combo) for combo in combos}
    assert len(names) == len(combos) and all(NAME.match(n) for n in names)     # distinct per prefix, worker, test
    assert sandbox_name(prefix, worker, nodeid) == name                 # stable for a test
    if len(prefix) < 20:
        assert name.startswith(re.sub(r"[^A-Za-z0-9_.-]+", "-", prefix + worker))


@pytest.mark.server
def test_plugin_snapshots_are_private_to_a_test_unless_shared():
    """Two tests in parallel saving the same snapshot name each get back their own world."""
    local = _InProcess(clock="manual")
    session = Client(local.url)
    try:
        left, right = session.in_sandbox("left-test"), session.in_sandbox("right-test")
        for handle in (left, right):
            handle.http.post(PROJECTS, json={"name": f"saved-by-{handle.sandbox}"}, headers=ADMIN)
            handle.snapshot("baseline")
            handle.http.post(PROJECTS, json={"name": "after"}, headers=ADMIN)
        for handle in (left, right):
            handle.restore("baseline")
            listed = {p["name"] for p in handle.http.get(PROJECTS, headers=ADMIN).json()["results"]}
            assert f"saved-by-{handle.sandbox}" in listed and "after" not in listed
            other = "right-test" if handle is left else "left-test"
            assert f"saved-by-{other}" not in listed
        shared = left.snapshot("for-others", shared=True)
        assert shared["name"] == "for-others"
        started = session.in_sandbox("started", snapshot="for-others")
        listed = {p["name"] for p in started.http.get(PROJECTS, headers=ADMIN).json()["results"]}
        assert "saved-by-left-test" in listed
        stored = {s["name"] for s in session.http.get("/_mock/snapshots").json()["results"]}
        assert len(stored) == 4                          # fixtures, two private baselines, for-others
        left.delete_sandbox()
        right.delete_sandbox()
        stored = {s["name"] for s in session.http.get("/_mock/snapshots").json()["results"]}
        assert stored == {"fixtures", "for-others"}
        for handle in (left, right, started):
            handle.close()
    finally:
        session.close()
        local.stop()


class Recorder:
    """Notes which sandboxes a mock makes and deletes (wraps its sandbox factory and delete)."""

    def __init__(self, server):
        self.made, self.deleted = [], []
        sandboxes = server.sandboxes
        make, delete = sandboxes.make, sandboxes.delete

        def recording_make(name, options):
            self.made.append(name)
            return make(name, options)

        def recording_delete(name):
            self.deleted.append(name)
            return delete(name)

        sandboxes.make, sandboxes.delete = recording_make, recording_delete


def run_client_suite(url, *extra, env=None):
    command = [sys.executable, "-m", "pytest", "-n", "2", "-p", "xdist", "-q", "-p", "no:cacheprovider",
               "examples/python/test_client_flow.py", "--mockserver-url", url, *extra]
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("MOCKSERVER_", "PYTEST_"))}
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=240,
                          env={**clean, **(env or {})})


def client_test_names():
    text = (ROOT / "examples" / "python" / "test_client_flow.py").read_text()
    return [line[4:].split("(")[0] for line in text.splitlines() if line.startswith("def test_")]


@pytest.mark.server
def test_client_suite_under_xdist_gets_a_sandbox_per_test_of_one_in_process_mock():
    local = _InProcess(clock="manual")
    recorder = Recorder(local.app)
    try:
        result = run_client_suite(local.url)
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
        assert "8 passed" in result.stdout, result.stdout[-2000:]
        tests = client_test_names()
        assert len(tests) == 8
        made = recorder.made
        assert len(made) == len(set(made)) == 8                  # one fresh sandbox per test
        assert sorted(recorder.deleted) == sorted(made)          # each deleted after its test
        workers = {name.split("-", 1)[0] for name in made}
        assert workers == {"gw0", "gw1"}, made
        for test in tests:
            assert sum(test[:40] in name for name in made) == 1, (test, made)
        with httpx.Client(base_url=local.url, timeout=10) as http:
            assert [b["name"] for b in http.get("/_mock/sandboxes").json()["results"]] == ["default"]
            assert http.get("/_mock/calls").json()["results"] == []          # the default sandbox saw nothing
            assert http.get("/_mock/scenarios").json()["results"] == []
            assert http.get("/_mock/clock").json()["offset_seconds"] == 0
    finally:
        local.stop()


@pytest.mark.server
def test_client_suite_under_xdist_against_a_protected_shared_mock_with_a_job_prefix():
    """The CI recipe: one mock with a control token, each job naming its sandboxes from an
    environment variable (MOCKSERVER_SANDBOX_PREFIX) and sending the token (MOCKSERVER_CONTROL_TOKEN)."""
    local = _InProcess(clock="manual")
    local.app.settings.control_token = TOKEN           # the running mock now guards its control API
    recorder = Recorder(local.app)
    try:
        with httpx.Client(base_url=local.url, timeout=10) as http:
            assert_error(http.get("/_mock/sandboxes"), 401)
        result = run_client_suite(local.url, env={"MOCKSERVER_CONTROL_TOKEN": TOKEN,
                                                  "MOCKSERVER_SANDBOX_PREFIX": "job-42."})
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
        assert "8 passed" in result.stdout, result.stdout[-2000:]
        made = recorder.made
        assert len(set(made)) == 8 and sorted(recorder.deleted) == sorted(made)
        assert {name.split("-", 2)[1][3:] for name in made} == {"gw0", "gw1"}, made
        assert all(name.startswith(("job-42.gw0-", "job-42.gw1-")) for name in made), made
        with httpx.Client(base_url=local.url, timeout=10, headers=CONTROL) as http:
            assert [b["name"] for b in http.get("/_mock/sandboxes").json()["results"]] == ["default"]
            assert http.get("/_mock/calls").json()["results"] == []
    finally:
        local.stop()
