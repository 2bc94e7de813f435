"""Storage faults, in one process: a change whose log write fails or comes up short, or whose fsync fails, is not
made, not answered 2xx and not seen by anyone; the log keeps no torn bytes; reads go on, /_mock/health says
`degraded` with the cause, and changes are taken again by themselves once the log can be written (the system
calls of sandboxes/changelog.py replaced by failing ones)."""

import asyncio
import errno
import os
import time

import orjson
import pytest
from starlette.testclient import TestClient
from support.ids import ADMIN, APP, ORG

from mockserver.app import MockServer
from mockserver.core.settings import Settings
from mockserver.sandboxes.logfile import read_log
from mockserver.sandboxes.statefile import StateFileInUse

PROJECTS = f"/organization/{ORG}/project"


def names(http):
    return {project["name"] for project in http.get(PROJECTS, params={"page_size": 100}).json()["results"]}


def logged_names(path):
    reading = read_log(str(path))
    assert reading.damage == [] and reading.torn == 0      # nothing torn was left behind
    return [record["body"]["name"] for _, record in reading.records
            if record["kind"] == "api" and record["method"] == "POST" and record["path"] == PROJECTS]


def full(fd, data):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def half(fd, data):
    """A write the disk had room for half of."""
    return os.write(fd, data[:len(data) // 2])


def broken_disk(fd):
    raise OSError(errno.EIO, os.strerror(errno.EIO))


@pytest.fixture
def mock(spec, tmp_path):
    """An in-process mock with a state file and the fsync change log, served with its lifespan (the background
    loop that retries a failing log runs)."""
    server = MockServer(Settings(clock="manual", state_file=str(tmp_path / "state.bin"), save_interval=3600),
                        spec=spec)
    with TestClient(server, base_url="http://mock", headers=ADMIN) as http:
        yield server, http


def refused(reply, path):
    assert reply.status_code == 503, reply.text
    assert reply.headers["retry-after"] == "5"
    message = reply.json()["message"]
    assert f"{path}.log.1" in message and "not made" in message
    return message


def wait_healthy(http, timeout=5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if http.get("/_mock/health").json()["status"] == "ok":
            return
        time.sleep(0.05)
    raise AssertionError(http.get("/_mock/health").json())


@pytest.mark.parametrize("failure, cause", [(full, "No space left on device"), (half, "came up short")],
                         ids=["write fails", "short write"])
def test_a_failed_write_is_refused_never_seen_leaves_no_torn_bytes_and_writing_resumes(mock, tmp_path, failure,
                                                                                       cause):
    server, http = mock
    state = tmp_path / "state.bin"
    assert http.post(PROJECTS, json={"name": "before"}).status_code == 201
    server.changelog.write_bytes = failure
    message = refused(http.post(PROJECTS, json={"name": "refused"}), state)
    assert cause in message
    refused(http.put("/_mock/sandboxes/never"), state)                    # a control change alike
    assert http.get(f"/application/{APP}/status").status_code == 200     # reads go on
    assert "refused" not in names(http)
    assert http.get("/_mock/sandboxes/never").status_code == 404
    health = http.get("/_mock/health").json()
    assert health["status"] == "degraded" and cause in health["problems"][0]
    assert health["state_file"]["changes"]["failing"] is True
    assert logged_names(state) == ["before"]
    server.changelog.write_bytes = os.write                              # space again
    wait_healthy(http)                                                   # the background loop's probe saw it
    assert http.post(PROJECTS, json={"name": "after"}).status_code == 201
    assert logged_names(state) == ["before", "after"]
    assert {"before", "after"} <= names(http)


def test_a_failed_fsync_refuses_every_change_waiting_on_it_and_cuts_them_off(spec, tmp_path):
    """Two changes in one group commit whose fsync fails: both refused, neither made, neither left in the log."""
    state = tmp_path / "state.bin"
    server = MockServer(Settings(clock="manual", state_file=str(state)), spec=spec)

    async def run():
        assert await call(server, "POST", PROJECTS, {"name": "first"}) == 201
        server.changelog.sync = broken_disk
        statuses = await asyncio.gather(*(call(server, "POST", PROJECTS, {"name": name}) for name in ("a", "b")))
        after = await call(server, "GET", PROJECTS + "?page_size=100")
        server.changelog.sync = os.fsync
        again = await call(server, "POST", PROJECTS, {"name": "c"})
        return statuses, after, again
    statuses, (status, listed), again = asyncio.run(run())
    assert statuses == [503, 503] and status == 200 and again == 201
    assert not {"a", "b"} & {project["name"] for project in listed["results"]}
    assert logged_names(state) == ["first", "c"]
    server.release()


async def call(server, method, path, body=None):
    """One call through the ASGI app: the status, or (status, JSON) of a GET."""
    sent, data = [], orjson.dumps(body) if body is not None else b""

    async def receive():
        return {"type": "http.request", "body": data, "more_body": False}

    async def send(message):
        sent.append(message)
    path, _, query = path.partition("?")
    await server({"type": "http", "method": method, "path": path, "raw_path": path.encode(), "root_path": "",
                  "query_string": query.encode(), "scheme": "http", "server": ("mock", 80), "client": ("127.0.0.1", 1),
                  "http_version": "1.1", "asgi": {"version": "3.0"},
                  "headers": [(b"host", b"mock"), (b"authorization", ADMIN["Authorization"].encode()),
                              (b"content-type", b"application/json")]}, receive, send)
    status = sent[0]["status"]
    return (status, orjson.loads(sent[1]["body"])) if method == "GET" else status


def test_only_acknowledged_changes_come_back_after_a_restart(spec, tmp_path):
    state = tmp_path / "state.bin"
    server = MockServer(Settings(clock="manual", state_file=str(state), save_interval=3600), spec=spec)
    with TestClient(server, base_url="http://mock", headers=ADMIN) as http:
        kept = [http.post(PROJECTS, json={"name": "kept"}).json()["id"]]
        server.changelog.write_bytes = half
        assert http.post(PROJECTS, json={"name": "lost"}).status_code == 503
        server.changelog.write_bytes = os.write
        kept.append(http.post(PROJECTS, json={"name": "kept-too"}).json()["id"])
        server.saver.final = lambda: True         # as a kill -9: no last save, the log alone brings them back
    again = MockServer(Settings(clock="manual", state_file=str(state)), spec=spec)
    with TestClient(again, base_url="http://mock", headers=ADMIN) as http:
        found = {project["name"]: project["id"] for project in http.get(PROJECTS).json()["results"]}
    assert [found.get("kept"), found.get("kept-too")] == kept and "lost" not in found


def test_a_second_server_on_a_state_file_in_use_is_refused_naming_the_holder(spec, tmp_path):
    state = str(tmp_path / "state.bin")
    first = MockServer(Settings(clock="manual", state_file=state), spec=spec)
    with pytest.raises(StateFileInUse) as refused_start:
        MockServer(Settings(clock="manual", state_file=state), spec=spec)
    assert f"pid {os.getpid()}" in str(refused_start.value) and state in str(refused_start.value)
    first.release()
    MockServer(Settings(clock="manual", state_file=state), spec=spec).release()     # free again: taken
