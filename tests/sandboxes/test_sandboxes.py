"""Sandboxes: isolated worlds in one mock, chosen by `/sandbox/{name}/...` or `X-Mock-Sandbox`.

The isolation matrix drives two sandboxes at the same time from two threads against one live
`mockserver serve --clock manual`: each creates a project, an environment and an application,
registers a webhook (one real receiver on a loopback port for both, told apart by path),
activates a scenario, deploys, advances its own clock and resets; every read, the journal,
the deliveries, the scenarios, the status and the clock of each show only its own doings.
The rest (routing, redirects that stay in the sandbox, names, lifecycle and options) runs in-process.
"""

import json
import os
import subprocess
import sys
import threading
import time

import httpx
import pytest
from starlette.testclient import TestClient
from support import ROOT
from support.http import assert_error
from support.ids import ADMIN, APP, ENV, ORG, PROJECT
from support.receiver import DEADLINE, Receiver, Silent

from mockserver.app import MockServer
from mockserver.core.settings import Settings

PROJECTS = f"/organization/{ORG}/project"
WEBHOOKS = f"/organization/{ORG}/webhook"


@pytest.fixture
def receiver():
    """One webhook receiver for both sandboxes, told apart by path."""
    made = Receiver()
    yield made
    made.stop()


# ---------------------------------------------------------------- one sandbox seen by a client
class Tenant:
    """The API and the control API of one sandbox, chosen in one of the ways a client can:
    `prefix` (/sandbox/{name}/...), `api-prefix` (/sandbox/{name}/api/v1/...) or `header`."""

    def __init__(self, url, name, via):
        self.name, self.via = name, via
        if via == "header":
            headers = {"X-Mock-Sandbox": name}
            self.api = httpx.Client(base_url=url, headers={**ADMIN, **headers}, timeout=10)
            self.control = httpx.Client(base_url=url, headers=headers, timeout=10)
        else:
            api_base = f"{url}/sandbox/{name}" + ("/api/v1" if via == "api-prefix" else "")
            self.api = httpx.Client(base_url=api_base, headers=ADMIN, timeout=10)
            self.control = httpx.Client(base_url=f"{url}/sandbox/{name}", timeout=10)
        self.root = httpx.Client(base_url=url, timeout=10)
        self.sent = []                                    # (method, path) of every API call, in order

    def call(self, method, path, status, **kwargs):
        reply = self.api.request(method, path, **kwargs)
        self.sent.append((method, path))
        assert reply.status_code == status, f"{self.name}: {method} {path} -> {reply.status_code} {reply.text}"
        return reply.json() if reply.content else None

    def ctl(self, method, path, status=200, **kwargs):
        reply = self.control.request(method, f"/_mock{path}", **kwargs)
        assert reply.status_code == status, f"{self.name}: {method} /_mock{path} -> {reply.status_code} {reply.text}"
        return reply.json() if reply.content else None

    def listing(self):
        """This sandbox's entry in the global list."""
        found = [box for box in self.root.get("/_mock/sandboxes").json()["results"] if box["name"] == self.name]
        assert len(found) == 1, found
        return found[0]

    def close(self):
        for client in (self.api, self.control, self.root):
            client.close()


def drive(me, receiver, seconds, extra_projects, barrier, shared):
    """Everything one tenant does, in phases the two threads pass together."""
    tag = me.name
    # phase 1: build, register, script, deploy, move the own clock
    project = me.call("POST", PROJECTS, 201, json={"name": f"proj-{tag}"})
    extras = [me.call("POST", PROJECTS, 201, json={"name": f"extra-{tag}-{i}"})["id"] for i in range(extra_projects)]
    env = me.call("POST", f"/project/{project['id']}/environment", 201, json={"name": f"env-{tag}"})
    app = me.call("POST", f"/environment/{env['id']}/application", 201, json={
        "name": f"app-{tag}", "git_repository": {"url": f"https://git.example.com/{tag}.git", "branch": "main"}})
    hook = me.call("POST", WEBHOOKS, 201, json={"target_url": f"{receiver.url}/{tag}", "enabled": True,
                                                 "events": ["DEPLOYMENT_STARTED", "DEPLOYMENT_SUCCEEDED"]})
    me.ctl("PUT", f"/scenarios/down-{tag}", content=json.dumps({"name": f"down-{tag}", "rules": [
        {"match": {"operation": "getApplicationStatus", "first": 1},
         "effect": {"status": 500, "message": f"status down in {tag}"}}]}))
    reply = me.api.get(f"/application/{app['id']}/status")
    me.sent.append(("GET", f"/application/{app['id']}/status"))
    assert assert_error(reply, 500)["message"] == f"status down in {tag}"
    deploy = me.call("POST", f"/application/{app['id']}/deploy", 202, json={})
    before = me.ctl("GET", "/clock")["epoch"]
    barrier.wait()
    me.ctl("POST", "/clock/advance", json={"seconds": 1})
    me.ctl("POST", "/clock/advance", json={"seconds": seconds - 1})
    assert me.call("GET", f"/application/{app['id']}/status", 200)["state"] == "DEPLOYED"
    shared[tag] = {"project": project["id"], "extras": extras, "app": app["id"], "hook": hook["id"]}
    barrier.wait()

    # phase 2: everything read back shows only this tenant's doings
    other = next(value for key, value in shared.items() if key != tag)
    assert me.ctl("GET", "/clock")["epoch"] == before + seconds
    names = {p["name"] for p in me.call("GET", PROJECTS, 200)["results"]}
    assert f"proj-{tag}" in names and {f"extra-{tag}-{i}" for i in range(extra_projects)} <= names
    assert not any(name.endswith(tuple(shared.keys() - {tag}))
                   for name in names if name.startswith(("proj-", "extra-")))
    for ident in [other["project"], *other["extras"]]:    # ids the other tenant made: unknown here
        assert_error(me.api.get(f"/project/{ident}"), 404)
        me.sent.append(("GET", f"/project/{ident}"))
    assert_error(me.api.get(f"/application/{other['app']}"), 404)
    me.sent.append(("GET", f"/application/{other['app']}"))
    own = me.call("GET", f"/project/{project['id']}", 200)
    assert own["name"] == f"proj-{tag}"
    journal = me.ctl("GET", "/calls")
    assert [(e["method"], e["path"]) for e in journal["results"]] == [(m, p.split("?")[0]) for m, p in me.sent]
    assert [e["id"] for e in journal["results"] if e["operation"] == "deployApplication"] != []
    deliveries = me.ctl("GET", "/webhooks/deliveries")["results"]
    assert len(deliveries) == 2
    assert {d["target_url"] for d in deliveries} == {f"{receiver.url}/{tag}"}
    assert {d["payload"]["deployment_request_id"] for d in deliveries} == {deploy["id"]}
    got = [json.loads(r["body"]) for r in receiver.wait_for(2, path=f"/{tag}")]
    assert sorted(body["event_type"] for body in got) == ["DEPLOYMENT_STARTED", "DEPLOYMENT_SUCCEEDED"]
    assert [d["event_type"] for d in deliveries] == ["DEPLOYMENT_STARTED", "DEPLOYMENT_SUCCEEDED"]
    assert {body["payload"]["deployment_request_id"] for body in got} == {deploy["id"]}
    assert [s["name"] for s in me.ctl("GET", "/scenarios")["results"]] == [f"down-{tag}"]
    listed = me.listing()
    assert listed["calls"] == len(me.sent)
    assert listed["journal_entries"] == len(me.sent)
    assert listed["scenarios"] == [f"down-{tag}"]
    assert listed["clock"]["epoch"] == before + seconds
    state = me.ctl("GET", "/state")
    assert state["sandbox"] == tag and state["journal_entries"] == len(me.sent)
    barrier.wait()

    # phase 3: the first tenant resets while the second looks on, then the second resets
    first = sorted(shared)[0]
    if tag == first:
        me.ctl("POST", "/reset", json={"scenarios": True})
    barrier.wait()
    if tag != first:
        assert me.call("GET", f"/project/{project['id']}", 200)["name"] == f"proj-{tag}"
        assert len(me.ctl("GET", "/calls")["results"]) == len(me.sent)
        assert len(me.ctl("GET", "/webhooks/deliveries")["results"]) == 2
        assert [s["name"] for s in me.ctl("GET", "/scenarios")["results"]] == [f"down-{tag}"]
        me.ctl("POST", "/reset", json={"scenarios": True})
    barrier.wait()
    assert me.ctl("GET", "/calls")["results"] == []
    assert me.ctl("GET", "/webhooks/deliveries")["results"] == []
    assert me.ctl("GET", "/scenarios")["results"] == []
    assert_error(me.api.get(f"/project/{project['id']}"), 404)
    assert me.ctl("GET", "/clock")["epoch"] == before + seconds       # a reset keeps the sandbox's time


@pytest.mark.server
@pytest.mark.parametrize("via_a, via_b", [("prefix", "prefix"), ("header", "header"), ("api-prefix", "header")])
def test_two_sandboxes_driven_at_once_see_only_their_own_doings(live_manual, receiver, via_a, via_b):
    tenants = [Tenant(live_manual.url, f"iso-a-{via_a}", via_a), Tenant(live_manual.url, f"iso-b-{via_b}", via_b)]
    barrier = threading.Barrier(2, timeout=30)
    shared, failures = {}, []

    def run(me, seconds, extras):
        try:
            drive(me, receiver, seconds, extras, barrier, shared)
        except BaseException as error:                   # reported by the main thread
            failures.append(error)
            barrier.abort()

    threads = [threading.Thread(target=run, args=(tenants[0], 9, 1)),
               threading.Thread(target=run, args=(tenants[1], 250, 2))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    try:
        real = [f for f in failures if not isinstance(f, threading.BrokenBarrierError)]
        if real or failures:
            raise (real or failures)[0]
        # and the default sandbox saw none of it
        with httpx.Client(base_url=live_manual.url, timeout=10) as root:
            assert root.get("/_mock/calls").json()["results"] == []
            assert root.get("/_mock/webhooks/deliveries").json()["results"] == []
            assert root.get("/_mock/clock").json()["offset_seconds"] == 0
    finally:
        for tenant in tenants:
            tenant.root.delete(f"/_mock/sandboxes/{tenant.name}")
            tenant.close()


@pytest.mark.server
def test_a_slow_sandbox_does_not_hold_up_another(live_manual):
    """A scenario's latency in one sandbox is a request in flight there only."""
    slow = Tenant(live_manual.url, "slow-one", "prefix")
    quick = Tenant(live_manual.url, "quick-one", "header")
    try:
        for tenant in (slow, quick):                      # control calls act on sandboxes that exist
            assert tenant.root.put(f"/_mock/sandboxes/{tenant.name}").status_code in (200, 201)
        slow.ctl("PUT", "/scenarios/lag", content=json.dumps({"name": "lag", "rules": [
            {"match": {"operation": "getOrganization"}, "effect": {"latency_ms": 3000}}]}))
        started = time.monotonic()
        waiting = threading.Thread(target=slow.call, args=("GET", "/organization", 200))
        waiting.start()
        time.sleep(0.2)
        for _ in range(3):
            quick.call("GET", "/organization", 200)
        quick_done = time.monotonic() - started
        waiting.join(10)
        assert quick_done < 2.5, quick_done
        assert time.monotonic() - started >= 3.0
        assert [c["scenario_rule"] for c in quick.ctl("GET", "/calls")["results"]] == [None] * 3
        assert len(slow.ctl("GET", "/calls")["results"]) == 1
    finally:
        for tenant in (slow, quick):
            tenant.root.delete(f"/_mock/sandboxes/{tenant.name}")
            tenant.close()


# ---------------------------------------------------------------- in-process helpers
@pytest.fixture
def mock(server):
    """A client on the in-process mock without any default sandbox header."""
    with TestClient(server, base_url="http://mock", headers=ADMIN) as client:
        yield client


def in_box(name):
    return {"X-Mock-Sandbox": name}


def sandbox_list(mock):
    reply = mock.get("/_mock/sandboxes")
    assert reply.status_code == 200, reply.text
    return {box["name"]: box for box in reply.json()["results"]}


# ---------------------------------------------------------------- choosing a sandbox
def test_prefix_header_and_api_v1_prefix_reach_the_same_sandbox(mock):
    created = mock.post(f"/sandbox/one{PROJECTS}", json={"name": "made-in-one"})
    assert created.status_code == 201, created.text
    ident = created.json()["id"]
    for path, headers in ((f"/sandbox/one/project/{ident}", {}), (f"/sandbox/one/api/v1/project/{ident}", {}),
                          (f"/project/{ident}", in_box("one")), (f"/api/v1/project/{ident}", in_box("one")),
                          (f"/sandbox/one/project/{ident}", in_box("one"))):
        reply = mock.get(path, headers=headers)
        assert reply.status_code == 200, (path, reply.text)
        assert reply.json()["name"] == "made-in-one"
    assert_error(mock.get(f"/project/{ident}"), 404)                        # default
    assert_error(mock.get(f"/sandbox/two/project/{ident}"), 404)
    assert_error(mock.get(f"/project/{ident}", headers=in_box("two")), 404)


def test_documents_are_served_under_the_prefix(mock):
    document = mock.get("/openapi.json").json()
    assert mock.get("/sandbox/docs/openapi.json").json() == document
    yaml_reply = mock.get("/sandbox/docs/openapi.yaml")
    assert yaml_reply.status_code == 200 and yaml_reply.headers["content-type"].startswith("application/yaml")
    control = mock.get("/sandbox/docs/_mock/openapi.json")
    assert control.status_code == 200 and control.json()["paths"]


def test_control_api_under_the_prefix_and_by_header_acts_on_that_sandbox(mock):
    mock.get("/organization", headers=in_box("seen"))
    mock.post("/sandbox/seen/_mock/clock/advance", json={"seconds": 30})
    assert mock.get("/sandbox/seen/_mock/clock").json()["offset_seconds"] == 30
    assert mock.get("/_mock/clock", headers=in_box("seen")).json()["offset_seconds"] == 30
    assert mock.get("/_mock/clock").json()["offset_seconds"] == 0
    assert [c["path"] for c in mock.get("/_mock/calls", headers=in_box("seen")).json()["results"]] == ["/organization"]
    assert mock.get("/_mock/calls").json()["results"] == []


def test_a_fixture_id_exists_in_each_sandbox_separately(mock):
    assert mock.delete(f"/sandbox/gone/project/{PROJECT}").status_code == 204
    assert_error(mock.get(f"/sandbox/gone/project/{PROJECT}"), 404)
    assert_error(mock.get(f"/sandbox/gone/environment/{ENV}"), 404)
    for prefix in ("", "/sandbox/kept"):
        assert mock.get(f"{prefix}/project/{PROJECT}").json()["name"] == "storefront"
        assert mock.get(f"{prefix}/application/{APP}").status_code == 200


def test_an_id_created_in_one_sandbox_is_404_in_another(mock):
    ident = mock.post(PROJECTS, json={"name": "only-here"}, headers=in_box("maker")).json()["id"]
    for headers in (in_box("other"), {}):
        assert_error(mock.get(f"/project/{ident}", headers=headers), 404)
        assert_error(mock.put(f"/project/{ident}", json={"name": "x"}, headers=headers), 404)
        assert_error(mock.delete(f"/project/{ident}", headers=headers), 404)
    assert mock.get(f"/project/{ident}", headers=in_box("maker")).json()["name"] == "only-here"


def test_each_sandbox_generates_its_own_reproducible_ids(mock):
    """Copies of one start world hand out ids of their own, the same again for a sandbox made anew."""
    first = mock.post(PROJECTS, json={"name": "twin"}, headers=in_box("twin-1")).json()["id"]
    second = mock.post(PROJECTS, json={"name": "twin"}, headers=in_box("twin-2")).json()["id"]
    in_default = mock.post(PROJECTS, json={"name": "twin"}).json()["id"]
    assert len({first, second, in_default}) == 3
    assert mock.delete("/_mock/sandboxes/twin-1").status_code == 204
    assert mock.post(PROJECTS, json={"name": "twin"}, headers=in_box("twin-1")).json()["id"] == first
    mock.post("/_mock/sandboxes/twin-2/reset")
    assert mock.post(PROJECTS, json={"name": "twin"}, headers=in_box("twin-2")).json()["id"] == second


def test_tokens_minted_in_one_sandbox_work_only_there(mock):
    put(mock, "mint", {})
    token = mock.post("/sandbox/mint/_mock/tokens", json={"scopes": ["Read"]}).json()["token"]
    bearer = {"Authorization": f"Token {token}"}
    assert mock.get("/sandbox/mint/organization", headers=bearer).status_code == 200
    assert_error(mock.get("/sandbox/elsewhere/organization", headers=bearer), 401)
    assert_error(mock.get("/organization", headers=bearer), 401)


def test_rate_limit_windows_are_per_sandbox(make_server):
    server = make_server(rate_limit=2, rate_window=60.0)
    with TestClient(server, base_url="http://mock", headers=ADMIN) as mock:
        for _ in range(2):
            assert mock.get("/organization", headers=in_box("busy")).status_code == 200
        assert_error(mock.get("/organization", headers=in_box("busy")), 429)
        assert mock.get("/organization", headers=in_box("calm")).status_code == 200
        assert mock.get("/organization").status_code == 200


# ---------------------------------------------------------------- names
@pytest.mark.parametrize("name", ["a", "A-z_0.9", "x" * 64, "ci-1234.job_7", "...", "default"])
def test_valid_names_choose_a_sandbox(mock, name):
    assert mock.get(f"/sandbox/{name}/organization").status_code == 200
    assert mock.get("/organization", headers=in_box(name)).status_code == 200
    assert name in sandbox_list(mock)


BAD_NAMES = ["x" * 65, "a b", "a+b", "caf\u00e9", "a:b", "a@b", "a%b", "a,b", "*"]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_invalid_names_are_400_by_prefix_header_and_control_routes(mock, name):
    before = set(sandbox_list(mock))
    assert "not valid" in assert_error(mock.get(f"/sandbox/{name}/organization"), 400)["message"]
    if name.isascii():
        assert "not valid" in assert_error(mock.get("/organization", headers=in_box(name)), 400)["message"]
        assert "not valid" in assert_error(mock.get("/_mock/calls", headers=in_box(name)), 400)["message"]
    assert_error(mock.put(f"/_mock/sandboxes/{name}"), 400)
    assert_error(mock.get(f"/sandbox/{name}/_mock/calls"), 400)
    assert set(sandbox_list(mock)) == before


@pytest.mark.parametrize("name", [".", ".."])
def test_dot_names_are_refused_as_sandbox_and_snapshot_names(mock, name):
    """A client that normalises paths would turn /sandbox/../x into /x: the default sandbox."""
    before = set(sandbox_list(mock))
    assert "other than . and .." in assert_error(mock.get("/organization", headers=in_box(name)), 400)["message"]
    assert_error(mock.get("/_mock/calls", headers=in_box(name)), 400)
    encoded = name.replace(".", "%2E")                        # as sent by a client that does not normalise
    assert_error(mock.put(f"/_mock/sandboxes/{encoded}"), 400)
    assert_error(mock.get(f"/sandbox/{encoded}/organization"), 400)
    snapshot = assert_error(mock.post("/_mock/snapshots", json={"name": name}), 400)
    assert snapshot["message"].startswith("snapshot name")
    assert set(sandbox_list(mock)) == before


def test_empty_names_are_400(mock):
    assert_error(mock.get("/sandbox//organization"), 400)
    assert_error(mock.get("/sandbox/"), 400)
    assert_error(mock.get("/organization", headers=in_box("")), 400)
    assert_error(mock.get("/organization", headers=in_box("   ")), 400)


def test_non_latin1_header_name_is_400(server):
    """A raw header byte outside ASCII is a bad name, not a crash."""
    with TestClient(server, base_url="http://mock", headers=ADMIN) as mock:
        reply = mock.get("/organization", headers={"X-Mock-Sandbox": "caf\u00e9".encode("utf-8")})
        assert_error(reply, 400)


def test_prefix_and_header_naming_different_sandboxes_is_400(mock):
    body = assert_error(mock.get("/sandbox/left/organization", headers=in_box("right")), 400)
    assert "left" in body["message"] and "right" in body["message"]
    assert_error(mock.get("/sandbox/left/_mock/calls", headers=in_box("right")), 400)
    assert mock.get("/sandbox/left/organization", headers=in_box("left")).status_code == 200


def test_a_sandbox_name_is_not_a_path_segment_of_the_api(mock):
    assert_error(mock.get("/sandbox/a/sandbox/b/organization"), 404)


# ---------------------------------------------------------------- lifecycle
def test_created_on_first_use_from_the_fixtures(mock):
    assert "fresh" not in sandbox_list(mock)
    assert mock.get("/sandbox/fresh/organization").status_code == 200
    listed = sandbox_list(mock)["fresh"]
    assert listed["source"] == "fixtures"
    assert listed["calls"] == 1
    assert listed["resources"] == sandbox_list(mock)["default"]["resources"] > 0


def test_put_creates_then_replaces_a_sandbox(mock):
    created = mock.put("/_mock/sandboxes/explicit")
    assert created.status_code == 201, created.text
    assert created.json()["name"] == "explicit" and created.json()["calls"] == 0
    mock.post(f"/sandbox/explicit{PROJECTS}", json={"name": "temporary"})
    again = mock.put("/_mock/sandboxes/explicit", json={})
    assert again.status_code == 200
    assert again.json()["calls"] == 0                                         # a fresh world under the same name
    names = {p["name"] for p in mock.get(f"/sandbox/explicit{PROJECTS}").json()["results"]}
    assert "temporary" not in names


def test_list_shows_calls_last_use_resources_and_clock(server):
    wall = [1_000_000.0]
    server.sandboxes.wall = lambda: wall[0]
    with TestClient(server, base_url="http://mock", headers=ADMIN) as mock:
        mock.put("/_mock/sandboxes/listed")
        wall[0] += 42
        for _ in range(3):
            mock.get("/sandbox/listed/organization")
        mock.post(f"/sandbox/listed{PROJECTS}", json={"name": "counted"})
        mock.post("/sandbox/listed/_mock/clock/advance", json={"seconds": 5})
        listing = mock.get("/_mock/sandboxes").json()
        assert {"replica", "limit", "ttl_seconds", "results"} <= set(listing)
        box = {b["name"]: b for b in listing["results"]}["listed"]
        default = {b["name"]: b for b in listing["results"]}["default"]
        assert box["calls"] == 4
        assert box["journal_entries"] == 4
        assert box["resources"] == default["resources"] + 1
        assert box["created_at"] == "1970-01-12T13:46:40.000000Z"
        assert box["last_used_at"] == "1970-01-12T13:47:22.000000Z"
        assert box["clock"]["offset_seconds"] == 5
        assert mock.get("/_mock/sandboxes/listed").json() == box
        assert_error(mock.get("/_mock/sandboxes/never-made"), 404)


def test_reset_of_one_sandbox_by_name(mock):
    mock.post(f"/sandbox/r{PROJECTS}", json={"name": "undone"})
    mock.post(f"/sandbox/keep{PROJECTS}", json={"name": "kept"})
    mock.put("/sandbox/r/_mock/scenarios/s", content=json.dumps({"name": "s", "rules": [
        {"match": {"operation": "getOrganization"}, "effect": {"status": 500, "message": "no"}}]}))
    mock.post("/sandbox/r/_mock/clock/advance", json={"seconds": 7})
    reply = mock.post("/_mock/sandboxes/r/reset")
    assert reply.status_code == 200, reply.text
    assert reply.json()["resources"] == sandbox_list(mock)["default"]["resources"]
    assert reply.json()["journal_entries"] == 0
    assert reply.json()["scenarios"] == ["s"]                                 # kept unless asked
    assert reply.json()["clock"]["offset_seconds"] == 7                      # its time goes on
    assert mock.post("/_mock/sandboxes/r/reset", json={"scenarios": True}).json()["scenarios"] == []
    assert "undone" not in {p["name"] for p in mock.get(f"/sandbox/r{PROJECTS}").json()["results"]}
    assert "kept" in {p["name"] for p in mock.get(f"/sandbox/keep{PROJECTS}").json()["results"]}
    assert_error(mock.post("/_mock/sandboxes/not-there/reset"), 404)


def test_delete_one_sandbox(mock):
    mock.post(f"/sandbox/doomed{PROJECTS}", json={"name": "lost"})
    assert mock.delete("/_mock/sandboxes/doomed").status_code == 204
    assert "doomed" not in sandbox_list(mock)
    assert_error(mock.delete("/_mock/sandboxes/doomed"), 404)
    # used again: a fresh one from the fixtures
    assert "lost" not in {p["name"] for p in mock.get(f"/sandbox/doomed{PROJECTS}").json()["results"]}


@pytest.mark.server
@pytest.mark.parametrize("drop", ["delete", "replace", "delete all"])
def test_a_dropped_sandbox_closes_the_connections_of_its_webhook_attempts(server, drop):
    """Deleting or replacing a sandbox cancels its webhook attempts in flight, and each closes its connection."""
    silent = Silent()
    try:
        with TestClient(server, base_url="http://mock", headers=ADMIN) as mock:
            hook = mock.post(f"/sandbox/hooked{WEBHOOKS}", json={"target_url": f"{silent.url}/hooked",
                                                                 "events": ["DEPLOYMENT_STARTED"], "enabled": True})
            assert hook.status_code == 201, hook.text
            assert mock.post(f"/sandbox/hooked/application/{APP}/deploy", json={}).status_code == 202
            mock.post("/sandbox/hooked/_mock/clock/advance", json={"seconds": 1})
            deadline = time.monotonic() + DEADLINE
            while silent.open_connections() < 1 and time.monotonic() < deadline:
                mock.get("/_mock/health")
                time.sleep(0.02)
            assert silent.open_connections() == 1          # the attempt waits for a reply that never comes
            webhooks = server.sandboxes.live["hooked"].rt.webhooks
            if drop == "delete":
                assert mock.delete("/_mock/sandboxes/hooked").status_code == 204
            elif drop == "replace":
                assert mock.put("/_mock/sandboxes/hooked").status_code == 200
            else:
                assert mock.delete("/_mock/sandboxes").status_code == 204
            deadline = time.monotonic() + DEADLINE
            while (silent.open_connections() or webhooks.tasks) and time.monotonic() < deadline:
                mock.get("/_mock/health")                  # let the server's loop run the clean-up
                time.sleep(0.02)
            assert silent.open_connections() == 0 and not webhooks.tasks and not webhooks.lanes
    finally:
        silent.stop()


def test_deleting_default_gives_a_fresh_default_that_always_exists(mock):
    mock.post(PROJECTS, json={"name": "in-default"})
    assert mock.delete("/_mock/sandboxes/default").status_code == 204
    assert "default" in sandbox_list(mock)
    assert "in-default" not in {p["name"] for p in mock.get(PROJECTS).json()["results"]}


def test_delete_all_sandboxes_leaves_default_reset(mock):
    for name in ("one", "two", "three"):
        mock.get(f"/sandbox/{name}/organization")
    mock.post(PROJECTS, json={"name": "in-default"})
    mock.put("/_mock/scenarios/s", content=json.dumps({"name": "s", "rules": [
        {"match": {"operation": "listProjects"}, "effect": {"status": 500, "message": "no"}}]}))
    assert mock.delete("/_mock/sandboxes").status_code == 204
    assert list(sandbox_list(mock)) == ["default"]
    assert mock.get("/_mock/scenarios").json()["results"] == []
    assert "in-default" not in {p["name"] for p in mock.get(PROJECTS).json()["results"]}
    assert mock.get("/_mock/calls").json()["results"][-1]["path"] == PROJECTS   # only the call just made


def test_health_counts_sandboxes(mock):
    before = mock.get("/_mock/health").json()["sandboxes"]
    mock.get("/sandbox/counted/organization")
    assert mock.get("/_mock/health").json()["sandboxes"] == before + 1


# ---------------------------------------------------------------- options of PUT /_mock/sandboxes/{name}
def put(mock, name, options, status=201):
    reply = mock.put(f"/_mock/sandboxes/{name}", json=options)
    assert reply.status_code == status if status else reply.status_code in (200, 201), reply.text
    return reply.json()


@pytest.fixture
def real_server(spec):
    """An in-process mock on the real clock."""
    server = MockServer(Settings(clock="real", self_check=True), spec=spec)
    yield server
    assert server.pipeline.violations == []


def test_option_clock_manual_with_a_start_time(real_server):
    server = real_server
    with TestClient(server, base_url="http://mock", headers=ADMIN) as mock:
        box = put(mock, "timed", {"clock": "manual", "start": "2030-05-01T12:00:00Z"})
        assert box["clock"]["mode"] == "manual" and box["clock"]["now"] == "2030-05-01T12:00:00.000000Z"
        created = mock.post(f"/sandbox/timed{PROJECTS}", json={"name": "dated"}).json()
        assert created["created_at"] == "2030-05-01T12:00:00.000000Z"
        mock.post("/sandbox/timed/_mock/clock/advance", json={"seconds": 60})
        assert mock.get("/sandbox/timed/_mock/clock").json()["now"] == "2030-05-01T12:01:00.000000Z"
        assert mock.get("/_mock/clock").json()["mode"] == "real"
        by_number = put(mock, "numbered", {"clock": "manual", "start": 1900000000})
        assert by_number["clock"]["epoch"] == 1900000000
        naive = put(mock, "naive", {"clock": "manual", "start": "2030-05-01T12:00:00"})
        assert naive["clock"]["now"] == "2030-05-01T12:00:00.000000Z"          # no zone: UTC


def test_option_clock_manual_alone_freezes_the_time(real_server):
    server = real_server
    with TestClient(server, base_url="http://mock", headers=ADMIN) as mock:
        box = put(mock, "still", {"clock": "manual"})
        time.sleep(0.05)
        assert mock.get("/sandbox/still/_mock/clock").json()["epoch"] == box["clock"]["epoch"]


def test_option_seed_gives_other_generated_ids(mock):
    def first_id(options):
        put(mock, "seeded", options, status=None)
        return mock.post(f"/sandbox/seeded{PROJECTS}", json={"name": "p"}).json()["id"]

    eleven = first_id({"seed": 11})
    assert first_id({"seed": 11}) == eleven                             # reproducible
    assert first_id({"seed": 12}) != eleven
    assert first_id({}) != eleven
    assert mock.get(f"/sandbox/seeded/project/{PROJECT}").status_code == 200    # fixture ids are fixed


def test_option_rate_limit_is_applied(mock):
    put(mock, "slow", {"rate_limit": "2/10s"})
    first = mock.get("/sandbox/slow/organization")
    assert first.headers["x-ratelimit-limit"] == "2"
    mock.get("/sandbox/slow/organization")
    assert_error(mock.get("/sandbox/slow/organization"), 429)
    assert mock.get("/organization").headers["x-ratelimit-limit"] != "2"


SCENARIO = {"name": "org-down", "rules": [{"match": {"operation": "getOrganization"},
                                           "effect": {"status": 503, "message": "org down"}}]}


def test_option_scenarios_by_document(mock):
    box = put(mock, "scripted", {"scenarios": [SCENARIO]})
    assert box["scenarios"] == ["org-down"]
    assert assert_error(mock.get("/sandbox/scripted/organization"), 503)["message"] == "org down"
    assert mock.get("/organization").status_code == 200
    # the scenario is part of the world a reset goes back to
    mock.post("/_mock/sandboxes/scripted/reset")
    assert_error(mock.get("/sandbox/scripted/organization"), 503)


def test_option_scenarios_by_the_name_of_a_loaded_file(make_server, tmp_path):
    path = tmp_path / "org-down.yaml"
    path.write_text(json.dumps(SCENARIO))
    server = make_server(scenarios=[path])
    with TestClient(server, base_url="http://mock", headers=ADMIN) as mock:
        put(mock, "named", {})
        mock.delete("/sandbox/named/_mock/scenarios/org-down")                   # made with the files active
        assert mock.get("/sandbox/named/organization").status_code == 200
        box = put(mock, "by-name", {"scenarios": ["org-down"]})
        assert box["scenarios"] == ["org-down"]
        assert_error(mock.get("/sandbox/by-name/organization"), 503)
        message = assert_error(mock.put("/_mock/sandboxes/x", json={"scenarios": ["nope"]}), 400)["message"]
        assert "body.scenarios[0]" in message and "org-down" in message


def test_option_fixtures_folder(mock, tmp_path):
    (tmp_path / "organizations.yaml").write_text(
        "organizations:\n  - id: 11111111-2222-4333-8444-555555555555\n    name: Other\n    plan: FREE\n")
    (tmp_path / "tokens.yaml").write_text(
        "tokens:\n  - {name: admin, value: other-admin, organization: 11111111-2222-4333-8444-555555555555, "
        "scopes: [Admin]}\n")
    box = put(mock, "other-world", {"fixtures": str(tmp_path)})
    assert box["source"] == "options"
    org = mock.get("/sandbox/other-world/organization", headers={"Authorization": "Token other-admin"})
    assert org.status_code == 200, org.text
    assert org.json()["name"] == "Other"
    assert_error(mock.get("/sandbox/other-world/organization"), 401)            # the default tokens are not there
    assert mock.get("/organization").json()["name"] == "Acme"


def test_option_fixtures_reads_only_regular_files_and_never_quotes_them(mock, tmp_path):
    """The folder is the caller's choice: a FIFO would block the reader for ever, and the files may be
    anything of the server's machine, whose contents a 400 must not give away."""
    fifo = tmp_path / "fifo"
    fifo.mkdir()
    os.mkfifo(fifo / "organizations.yaml")
    message = assert_error(mock.put("/_mock/sandboxes/fifo", json={"fixtures": str(fifo)}), 400)["message"]
    assert "organizations.yaml: not a regular file" in message
    private = tmp_path / "private"
    private.mkdir()
    (private / "credentials.yaml").write_text("aws_secret_access_key: AKIA-KEEP-THIS-PRIVATE\n")
    (private / "tokens.yaml").write_text("tokens:\n  - {name: ci, value: tok-keep-this-private, scopes: [Root]}\n")
    (private / "broken.yaml").write_text("organizations: [ {name: 'still-private', : }\n")
    message = assert_error(mock.put("/_mock/sandboxes/private", json={"fixtures": str(private)}), 400)["message"]
    for content in ("AKIA-KEEP-THIS-PRIVATE", "aws_secret_access_key", "tok-keep-this-private", "Root",
                    "still-private"):
        assert content not in message, content
    assert "credentials.yaml: an unknown top-level key" in message
    assert "tokens.yaml: an entry of tokens does not match" in message
    assert "broken.yaml: not valid YAML (line 1)" in message
    assert "mockserver check --fixtures" in message
    assert mock.get("/_mock/health").status_code == 200
    checked = subprocess.run([sys.executable, "-m", "mockserver", "check", "--fixtures", str(private)], cwd=ROOT,
                             capture_output=True, text=True, timeout=60)
    assert "aws_secret_access_key" in checked.stderr           # on the server's machine, check says it all


def test_option_snapshot(mock):
    mock.post(f"/sandbox/source{PROJECTS}", json={"name": "saved-project"})
    mock.post("/sandbox/source/_mock/clock/advance", json={"seconds": 100})
    saved = mock.post("/sandbox/source/_mock/snapshots", json={"name": "saved"})
    assert saved.status_code == 201, saved.text
    mock.post(f"/sandbox/source{PROJECTS}", json={"name": "after-the-snapshot"})
    box = put(mock, "from-snapshot", {"snapshot": "saved"})
    assert box["source"] == "snapshot saved"
    assert box["clock"]["epoch"] == mock.get("/sandbox/source/_mock/clock").json()["epoch"]
    names = {p["name"] for p in mock.get(f"/sandbox/from-snapshot{PROJECTS}").json()["results"]}
    assert "saved-project" in names and "after-the-snapshot" not in names
    mock.post(f"/sandbox/from-snapshot{PROJECTS}", json={"name": "later"})
    mock.post("/_mock/sandboxes/from-snapshot/reset")                         # back to the snapshot
    names = {p["name"] for p in mock.get(f"/sandbox/from-snapshot{PROJECTS}").json()["results"]}
    assert "saved-project" in names and "later" not in names
    assert_error(mock.put("/_mock/sandboxes/x", json={"snapshot": "missing"}), 404)


@pytest.mark.parametrize("options, field", [
    ({"clock": "sundial"}, "body.clock"),
    ({"start": "yesterday"}, "body.start"),
    ({"start": 1e20}, "body.start"),
    ({"start": -1e15}, "body.start"),
    ({"start": "99999-01-01T00:00:00Z"}, "body.start"),
    ({"start": "9999-12-31T23:59:00Z"}, "body.start"),
    ({"start": True}, "body.start"),
    ({"seed": -1}, "body.seed"),
    ({"seed": "seven"}, "body.seed"),
    ({"rate_limit": "lots"}, "body.rate_limit"),
    ({"rate_limit": "0/10s"}, "body.rate_limit"),
    ({"scenarios": "flaky"}, "body.scenarios"),
    ({"scenarios": [{"name": "no-rules"}]}, "body.scenarios[0]"),
    ({"scenarios": [{"name": "bad", "rules": [{"effect": {"status": 99}}]}]}, "body.scenarios[0]"),
    ({"fixtures": "/no/such/folder"}, "body.fixtures"),
    ({"fixtures": ""}, "body.fixtures"),
    ({"snapshot": "s", "seed": 3}, "body.snapshot"),
    ({"colour": "blue"}, "colour"),
])
def test_bad_options_are_400_naming_the_field(mock, options, field):
    message = assert_error(mock.put("/_mock/sandboxes/opts", json=options), 400)["message"]
    assert field in message
    assert "opts" not in sandbox_list(mock)


def test_a_long_bad_option_gets_a_short_message(mock):
    message = assert_error(mock.put("/_mock/sandboxes/opts", json={"scenarios": ["flaky"] * 500}), 400)["message"]
    assert "body.scenarios" in message and "too long" in message and len(message) < 300


def test_option_snapshot_fixtures_is_the_start_world(mock):
    mock.post(PROJECTS, json={"name": "in-default"})
    box = put(mock, "pristine", {"snapshot": "fixtures", "clock": "manual"})
    assert box["resources"] == sandbox_list(mock)["default"]["resources"] - 1
    assert "fixtures" in {s["name"] for s in mock.get("/_mock/snapshots").json()["results"]}


def test_a_clock_cannot_be_moved_past_what_the_api_can_render(mock):
    put(mock, "far", {})
    before = mock.get("/sandbox/far/_mock/clock").json()
    for seconds in (1e12, 1e300):
        body = assert_error(mock.post("/sandbox/far/_mock/clock/advance", json={"seconds": seconds}), 400)
        assert "body.seconds" in body["message"]
    assert mock.get("/sandbox/far/_mock/clock").json() == before                # unchanged
    assert mock.get("/sandbox/far/organization").status_code == 200
    put(mock, "late", {"clock": "manual", "start": "9998-12-31T00:00:00Z"})
    assert mock.post("/sandbox/late/_mock/clock/advance", json={"seconds": 86400}).status_code == 200
    assert_error(mock.post("/sandbox/late/_mock/clock/advance", json={"seconds": 366 * 86400}), 400)
    assert mock.get("/sandbox/late/organization").status_code == 200


def test_options_that_are_not_an_object_are_400(mock):
    assert_error(mock.put("/_mock/sandboxes/opts", content=b"[1, 2]"), 400)
    assert_error(mock.put("/_mock/sandboxes/opts", content=b"{not json"), 400)
    assert "opts" not in sandbox_list(mock)


# ---------------------------------------------------------------- the control document describes these replies
def _draft7(node):
    """OpenAPI 3.0 schema -> JSON Schema: `nullable: true` becomes a null type."""
    if isinstance(node, dict):
        out = {key: _draft7(value) for key, value in node.items() if key != "nullable"}
        if node.get("nullable") and "type" in out:
            out["type"] = [out["type"], "null"]
        return out
    if isinstance(node, list):
        return [_draft7(item) for item in node]
    return node


def test_sandbox_and_snapshot_replies_match_the_control_document(mock):
    import jsonschema
    document = mock.get("/_mock/openapi.json").json()
    components = _draft7(document["components"])

    def check(reply, path, method, status):
        assert reply.status_code == status, reply.text
        schema = document["paths"][path][method]["responses"][str(status)]["content"]["application/json"]["schema"]
        jsonschema.validate(reply.json(), {**_draft7(schema), "components": components})

    check(mock.put("/_mock/sandboxes/doc", json={"clock": "manual"}), "/_mock/sandboxes/{name}", "put", 201)
    check(mock.put("/_mock/sandboxes/doc"), "/_mock/sandboxes/{name}", "put", 200)
    check(mock.get("/_mock/sandboxes/doc"), "/_mock/sandboxes/{name}", "get", 200)
    check(mock.get("/_mock/sandboxes"), "/_mock/sandboxes", "get", 200)
    check(mock.post("/_mock/sandboxes/doc/reset"), "/_mock/sandboxes/{name}/reset", "post", 200)
    check(mock.post("/sandbox/doc/_mock/snapshots", json={"name": "doc-snap"}), "/_mock/snapshots", "post", 201)
    check(mock.get("/_mock/snapshots"), "/_mock/snapshots", "get", 200)
    check(mock.get("/_mock/snapshots/doc-snap"), "/_mock/snapshots/{name}", "get", 200)
    check(mock.post("/sandbox/doc/_mock/snapshots/doc-snap/restore"), "/_mock/snapshots/{name}/restore", "post", 200)
    check(mock.get("/_mock/health"), "/_mock/health", "get", 200)
    for reply in (mock.get("/_mock/sandboxes/none"), mock.put("/_mock/sandboxes/x", json={"seed": -1})):
        assert reply.status_code in (400, 404)
        jsonschema.validate(reply.json(), _draft7(document["components"]["responses"]["Error"]["content"]
                                                   ["application/json"]["schema"]))


# ---------------------------------------------------------------- a redirect stays in the sandbox; the scenarios option
def test_a_trailing_slash_on_a_sandbox_control_route_redirects_within_the_sandbox(server):
    with TestClient(server, base_url="http://mock", headers=ADMIN, follow_redirects=False) as client:
        before = client.get("/_mock/clock").json()["epoch"]
        assert client.put("/_mock/sandboxes/scn").status_code == 201
        moved = client.post("/sandbox/scn/_mock/clock/advance/", json={"seconds": 5})
        assert moved.status_code in (307, 308)
        assert httpx.URL(moved.headers["location"]).path == "/sandbox/scn/_mock/clock/advance"
        followed = client.post(moved.headers["location"], json={"seconds": 5})
        assert followed.status_code == 200
        assert client.get("/sandbox/scn/_mock/clock").json()["epoch"] == followed.json()["epoch"]
        assert client.get("/_mock/clock").json()["epoch"] == before          # the default sandbox's: unmoved
        plain = client.post("/_mock/clock/advance/", json={"seconds": 5})      # without a prefix: as before
        assert httpx.URL(plain.headers["location"]).path == "/_mock/clock/advance"


def test_the_sandbox_scenarios_option_chooses_among_the_files_loaded_at_start(make_server):
    server = make_server(scenarios=["scenarios/flaky-status.yaml", "scenarios/build-fails.yaml"])
    with TestClient(server, base_url="http://mock", headers=ADMIN) as client:
        every = {s["name"] for s in client.get("/_mock/scenarios").json()["results"]}
        assert len(every) == 2
        one = sorted(every)[0]
        assert client.put("/_mock/sandboxes/one", json={"scenarios": [one]}).status_code in (200, 201)
        assert [s["name"] for s in client.get("/sandbox/one/_mock/scenarios").json()["results"]] == [one]
        assert client.put("/_mock/sandboxes/none", json={"scenarios": []}).status_code in (200, 201)
        assert client.get("/sandbox/none/_mock/scenarios").json()["results"] == []
        assert client.put("/_mock/sandboxes/plain").status_code == 201
        assert {s["name"] for s in client.get("/sandbox/plain/_mock/scenarios").json()["results"]} == every
