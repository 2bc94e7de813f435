"""Snapshots of a sandbox's world (and the bodies reset and snapshot take) and the state file that keeps every
sandbox across restarts.

In-process tests use the manual clock; the state-file tests run `mockserver serve` and stop it
with SIGKILL (at most one save interval lost) and SIGTERM (nothing lost).
"""

import os
import signal
import time

import httpx
import pytest
from support.http import assert_error
from support.ids import ADMIN, APP, ORG
from support.live import LiveServer

from mockserver.sandboxes.logfile import read_log

APP_DEPLOY_SECONDS = 8


def advance(client, seconds, prefix=""):
    reply = client.post(f"{prefix}/_mock/clock/advance", json={"seconds": seconds})
    assert reply.status_code == 200, reply.text
    return reply.json()


def state_of(client, prefix=""):
    reply = client.get(f"{prefix}/application/{APP}/status")
    assert reply.status_code == 200, reply.text
    return reply.json()["state"]


def new_project(client, name, prefix=""):
    reply = client.post(f"{prefix}/organization/{ORG}/project", json={"name": name})
    assert reply.status_code == 201, reply.text
    return reply.json()["id"]


def project_names(client, prefix=""):
    return [p["name"] for p in client.get(f"{prefix}/organization/{ORG}/project").json()["results"]]


def save(client, name, prefix="", **extra):
    """Save the world of the sandbox `prefix` names (made first when it does not exist: control calls act on
    sandboxes that exist)."""
    if prefix and client.get(f"/_mock/sandboxes/{prefix.rsplit('/', 1)[-1]}").status_code == 404:
        assert client.put(f"/_mock/sandboxes/{prefix.rsplit('/', 1)[-1]}").status_code == 201
    return client.post(f"{prefix}/_mock/snapshots", json={"name": name, **extra})


# ---------------------------------------------------------------- snapshot, restore, delete
def test_restore_puts_back_what_was_saved_and_forgets_what_came_after(client):
    kept = new_project(client, "kept")
    assert save(client, "one").status_code == 201
    new_project(client, "after")
    reply = client.post("/_mock/snapshots/one/restore")
    assert reply.status_code == 200, reply.text
    names = project_names(client)
    assert "kept" in names and "after" not in names
    assert client.get(f"/project/{kept}").status_code == 200


def test_restore_brings_back_a_deployment_in_flight_that_then_finishes_on_time(client):
    assert client.post(f"/application/{APP}/deploy").status_code == 202
    advance(client, 3)                                 # queued 1 s, then building
    assert state_of(client) == "BUILDING"
    save(client, "mid-build")
    advance(client, 60)
    assert state_of(client) == "DEPLOYED"
    client.post("/_mock/snapshots/mid-build/restore")
    assert state_of(client) == "BUILDING"              # the clock is back where it was saved
    advance(client, APP_DEPLOY_SECONDS - 3 - 0.5)
    assert state_of(client) == "DEPLOYING"
    advance(client, 1)
    assert state_of(client) == "DEPLOYED"


def test_the_journal_is_saved_only_when_asked(client):
    client.get("/organization")
    save(client, "without")
    save(client, "with", journal=True)
    client.delete("/_mock/calls")
    client.post("/_mock/snapshots/without/restore")
    assert client.get("/_mock/calls").json()["results"] == []
    client.post("/_mock/snapshots/with/restore")
    assert [c["operation"] for c in client.get("/_mock/calls").json()["results"]] == ["getOrganization"]


def test_snapshots_are_listed_and_deleted(client):
    save(client, "listed")
    names = [s["name"] for s in client.get("/_mock/snapshots").json()["results"]]
    assert names == ["fixtures", "listed"]
    listed = client.get("/_mock/snapshots/listed").json()
    assert listed["resources"] > 0 and listed["journal"] is False
    assert client.delete("/_mock/snapshots/listed").status_code == 204
    assert_error(client.get("/_mock/snapshots/listed"), 404)
    assert_error(client.post("/_mock/snapshots/listed/restore"), 404)
    assert_error(client.delete("/_mock/snapshots/listed"), 404)


def test_snapshot_names_are_checked_and_not_overwritten_by_accident(client):
    assert_error(save(client, "bad name!"), 400)
    assert_error(client.post("/_mock/snapshots", json={}), 400)
    assert save(client, "twice").status_code == 201
    assert "replace" in assert_error(save(client, "twice"), 409)["message"]
    assert save(client, "twice", replace=True).status_code == 201
    assert_error(save(client, "fixtures"), 409)
    assert_error(client.delete("/_mock/snapshots/fixtures"), 409)


def test_restoring_the_fixtures_snapshot_is_a_reset(client):
    new_project(client, "gone")
    reply = client.post("/_mock/snapshots/fixtures/restore")
    assert reply.status_code == 200
    assert "gone" not in project_names(client)
    assert "storefront" in project_names(client)


def test_a_snapshot_taken_in_one_sandbox_starts_another(client):
    new_project(client, "world-of-a", prefix="/sandbox/a")
    assert save(client, "from-a", prefix="/sandbox/a").json()["sandbox"] == "a"
    assert client.put("/_mock/sandboxes/b", json={"snapshot": "from-a"}).status_code == 201
    assert "world-of-a" in project_names(client, "/sandbox/b")
    assert_error(client.post("/sandbox/c/_mock/snapshots/from-a/restore"), 404)     # c does not exist yet
    assert client.put("/_mock/sandboxes/c").status_code == 201
    assert client.post("/sandbox/c/_mock/snapshots/from-a/restore").status_code == 200
    assert "world-of-a" in project_names(client, "/sandbox/c")
    assert "world-of-a" not in project_names(client)    # the default sandbox never saw it
    # a sandbox made from a snapshot resets to that snapshot
    new_project(client, "later", prefix="/sandbox/b")
    client.post("/_mock/sandboxes/b/reset")
    names = project_names(client, "/sandbox/b")
    assert "world-of-a" in names and "later" not in names


def test_sandboxes_made_from_one_snapshot_hand_out_different_new_ids(client):
    save(client, "base")
    client.put("/_mock/sandboxes/x", json={"snapshot": "base"})
    client.put("/_mock/sandboxes/y", json={"snapshot": "base"})
    assert new_project(client, "p", "/sandbox/x") != new_project(client, "p", "/sandbox/y")


def snapshot_names(client):
    return [s["name"] for s in client.get("/_mock/snapshots").json()["results"]]


def test_at_most_max_snapshots_exist(make_server):
    from starlette.testclient import TestClient
    with TestClient(make_server(max_snapshots=2), base_url="http://mock", headers=ADMIN) as client:
        assert save(client, "one").status_code == 201 and save(client, "two").status_code == 201
        message = assert_error(save(client, "three"), 503)["message"]
        assert "the limit is 2" in message and "--max-snapshots" in message
        assert save(client, "two", replace=True).status_code == 201            # replacing makes none more
        assert client.delete("/_mock/snapshots/one").status_code == 204
        assert save(client, "three").status_code == 201
        assert snapshot_names(client) == ["fixtures", "two", "three"]


def test_private_snapshots_go_with_their_sandbox_and_shared_ones_stay(client):
    assert save(client, "mine", "/sandbox/t1", private=True).json()["private"] is True
    assert save(client, "ours", "/sandbox/t1").json()["private"] is False
    assert save(client, "other", "/sandbox/t2", private=True).status_code == 201
    assert client.put("/_mock/sandboxes/t1", json={}).status_code == 200    # replaced: the sandbox goes on
    assert snapshot_names(client) == ["fixtures", "mine", "ours", "other"]
    assert client.delete("/_mock/sandboxes/t1").status_code == 204
    assert snapshot_names(client) == ["fixtures", "ours", "other"]
    assert client.delete("/_mock/sandboxes").status_code == 204             # every sandbox but default goes
    assert snapshot_names(client) == ["fixtures", "ours"]


def test_deleting_a_sandbox_with_snapshots_delete_takes_every_snapshot_saved_from_it(client):
    save(client, "shared-1", "/sandbox/t3")
    save(client, "shared-2", "/sandbox/t3", private=True)
    save(client, "elsewhere", "/sandbox/t4")
    assert_error(client.delete("/_mock/sandboxes/t3?snapshots=all"), 400)
    assert_error(client.delete("/_mock/sandboxes/t3?snapshot=delete"), 400)
    assert snapshot_names(client) == ["fixtures", "shared-1", "shared-2", "elsewhere"]   # nothing done
    assert client.delete("/_mock/sandboxes/t3?snapshots=delete").status_code == 204
    assert snapshot_names(client) == ["fixtures", "elsewhere"]
    assert_error(client.delete("/_mock/sandboxes/t3?snapshots=delete"), 404)


def test_private_snapshots_of_an_expired_sandbox_go_too(server):
    from starlette.testclient import TestClient
    now = [1000.0]
    server.sandboxes.wall = lambda: now[0]
    with TestClient(server, base_url="http://mock", headers=ADMIN) as client:
        save(client, "kept-while-alive", "/sandbox/idle", private=True)
        now[0] += server.settings.sandbox_ttl + 10
        server.sandboxes.sweep(force=True)
        assert "idle" not in [b["name"] for b in client.get("/_mock/sandboxes").json()["results"]]
        assert snapshot_names(client) == ["fixtures"]


@pytest.mark.server
def test_the_plugin_saves_a_tests_snapshots_as_private(live_manual):
    from mockserver.client import Client
    root = Client(live_manual.url)
    handle = root.in_sandbox("plugin-private")
    try:
        assert handle.snapshot("before")["private"] is True
        assert handle.snapshot("for-others", shared=True)["private"] is False
    finally:
        root.http.delete(f"{live_manual.url}/_mock/sandboxes/plugin-private")   # not the plugin's own clean-up
        names = snapshot_names(root.http)
        root.http.delete(f"{live_manual.url}/_mock/snapshots/for-others")
        handle.close()
        root.close()
    assert "for-others" in names and not any(name.startswith("before.") for name in names)


def test_unknown_snapshot_for_a_new_sandbox_is_404(client):
    assert "nope" in assert_error(client.put("/_mock/sandboxes/z", json={"snapshot": "nope"}), 404)["message"]


# ---------------------------------------------------------------- the state file
def _serve(path, *extra):
    return LiveServer("--clock", "manual", "--state-file", str(path), "--save-interval", "0.5", *extra)


def _wait_saved(path, since, timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if os.path.exists(path) and os.stat(path).st_mtime_ns > since:
            return
        time.sleep(0.05)
    raise AssertionError(f"{path} was not saved within {timeout} s")


@pytest.mark.server
def test_sigkill_after_a_save_interval_keeps_everything_saved(tmp_path):
    path = tmp_path / "state.bin"
    server = _serve(path)
    try:
        http = httpx.Client(base_url=server.url, headers=ADMIN, timeout=10)
        ident = new_project(http, "survives", "/sandbox/team-a")
        advance(http, 120, "/sandbox/team-a")
        save(http, "snap", "/sandbox/team-a")
        before = time.time_ns()
        _wait_saved(path, before)
        time.sleep(0.6)                                  # one more interval: the save after the last call
        server.process.send_signal(signal.SIGKILL)
        server.process.wait(timeout=10)
    finally:
        server.stop()
    again = _serve(path)
    try:
        http = httpx.Client(base_url=again.url, headers=ADMIN, timeout=10)
        assert http.get(f"/sandbox/team-a/project/{ident}").json()["name"] == "survives"
        assert http.get("/sandbox/team-a/_mock/clock").json()["offset_seconds"] == 120
        assert [s["name"] for s in http.get("/_mock/snapshots").json()["results"]] == ["fixtures", "snap"]
        assert http.get(f"/project/{ident}").status_code == 404          # still only in its sandbox
    finally:
        again.stop()


@pytest.mark.server
def test_reads_alone_never_rewrite_the_state_file(tmp_path):
    path = tmp_path / "state.bin"
    server = _serve(path, "--save-interval", "0.2")
    try:
        http = httpx.Client(base_url=server.url, headers=ADMIN, timeout=10)
        before = time.time_ns()
        new_project(http, "a-change")
        _wait_saved(path, before)
        time.sleep(0.5)                                  # any save still under way is done
        saved = os.stat(path).st_mtime_ns
        for _ in range(15):                              # health probes and reads for many save intervals
            assert http.get("/_mock/health").status_code == 200
            assert http.get(f"/organization/{ORG}/project").status_code == 200
            assert http.get("/_mock/calls").status_code == 200
            assert http.post(f"/organization/{ORG}/project", json={"name": 7}).status_code == 400
            assert http.delete(f"/project/{ORG}").status_code == 404
            assert http.put("/_mock/scenarios/broken", content=b"rules: [").status_code == 400
            time.sleep(0.1)
        assert os.stat(path).st_mtime_ns == saved        # nothing changed (reads, 400s, 404s), nothing written
        # the log holds only what passed validation (a change is logged before it is made): the handler's 404 and
        # the scenario the control API refused, 15 of each; no read, no 400 of validation
        # (and the create of "a-change", in a segment the next save deletes)
        kinds = [record["kind"] + " " + record.get("method", "") for _, record in read_log(str(path)).records]
        assert kinds.count("api DELETE") == kinds.count("control PUT") == 15, kinds
        assert set(kinds) <= {"api DELETE", "control PUT", "api POST"} and kinds.count("api POST") <= 1, kinds
        assert http.get("/sandbox/made-by-a-read/organization").status_code == 200     # a new sandbox is a change
        _wait_saved(path, saved)
    finally:
        server.stop()


@pytest.mark.server
def test_sigterm_saves_the_last_calls(tmp_path):
    path = tmp_path / "state.bin"
    server = _serve(path, "--save-interval", "3600")
    try:
        http = httpx.Client(base_url=server.url, headers=ADMIN, timeout=10)
        ident = new_project(http, "last-call")
    finally:
        server.stop()                                    # SIGTERM: the shutdown save
    assert server.process.returncode in (0, -signal.SIGTERM)    # uvicorn re-raises the signal it handled
    again = _serve(path)
    try:
        http = httpx.Client(base_url=again.url, headers=ADMIN, timeout=10)
        assert http.get(f"/project/{ident}").json()["name"] == "last-call"
    finally:
        again.stop()


@pytest.mark.server
@pytest.mark.parametrize("damage, problem", [
    (lambda data: data[: len(data) // 2], "truncated"),
    (lambda data: data[:-10] + b"0123456789", "corrupt"),
    (lambda data: data[:21] + (99).to_bytes(4, "big") + data[25:], "format version 99"),
    (lambda data: data[:25] + b"0.0.1".ljust(16, b"\0") + data[41:], "written by mockserver 0.0.1"),
    (lambda data: b"not a state file at all", "not a mockserver state file"),
])
def test_a_damaged_state_file_stops_the_start_and_is_left_untouched(tmp_path, damage, problem):
    path = tmp_path / "state.bin"
    server = _serve(path)
    server.stop()
    damaged = damage(path.read_bytes())
    path.write_bytes(damaged)
    import subprocess
    import sys
    result = subprocess.run([sys.executable, "-m", "mockserver", "serve", "--port", "1", "--state-file", str(path)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert str(path) in result.stderr and problem in result.stderr
    assert "start afresh" in result.stderr
    assert path.read_bytes() == damaged


# ---------------------------------------------------------------- the bodies of reset and snapshot
def test_reset_and_snapshot_bodies_take_only_their_fields_and_booleans(client):
    for route, body, named in (("/_mock/reset", {"scenarios": "yes"}, "body.scenarios"),
                               ("/_mock/reset", {"bogus": 1}, "bogus"),
                               ("/_mock/sandboxes/default/reset", {"scenarios": 1}, "body.scenarios"),
                               ("/_mock/snapshots", {"name": "s", "journal": "yes"}, "body.journal"),
                               ("/_mock/snapshots", {"name": "s", "privat": True}, "privat")):
        reply = client.post(route, json=body)
        assert_error(reply, 400)
        assert named in reply.json()["message"]
    assert client.get("/_mock/snapshots/s").status_code == 404
    assert client.post("/_mock/snapshots", json={"name": "s", "journal": True}).status_code == 201
    assert client.post("/_mock/reset", json={"scenarios": False}).status_code == 200
