"""The storage attacked as a full disk, a careless operator or a second server would, against `mockserver serve`
processes: whatever happens, every write answered 2xx is there after a kill -9 and a restart, with its id, and
nothing that was refused is.

- a disk that fills up under the writes: a small tmpfs (as root), and a file-size limit (RLIMIT_FSIZE, anyone);
- a changed byte in the middle of the log: the start stops, naming the file and the record, and deletes nothing;
  `--damaged-log skip` starts without that record alone;
- a write torn by the stop at the end of the log: left out, the rest runs again;
- a second server on the same state file: refused at start, exit 2, naming the holder's pid;
- webhook deliveries made before a kill are not made again after the restart."""

import os
import resource
import shutil
import signal
import subprocess
import sys
import time

import httpx
import pytest
from support import ROOT
from support.http import free_port, wait_for
from support.ids import ADMIN, APP, ORG
from support.receiver import Receiver

from mockserver.sandboxes.logfile import MAGIC, read_log

pytestmark = pytest.mark.server

PROJECTS = f"/organization/{ORG}/project"


class Serve:
    """`mockserver serve` on a state file, killable with SIGKILL; `limit`: RLIMIT_FSIZE of its files. One a test
    left running (an assertion failed before its kill) is killed at the test's end (`no_server_left`)."""
    alive: list = []

    def __init__(self, state, *extra, limit=None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mockserver", "serve", "--port", str(self.port), "--state-file", str(state),
             "--rate-limit", "1000000000/3600", "--exit-with-parent", *extra], cwd=ROOT, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, preexec_fn=None if limit is None else lambda: _limit_files(limit))
        Serve.alive.append(self)
        try:
            wait_for(f"{self.url}/_mock/health", timeout=60)
        except RuntimeError:
            self.kill()
            raise RuntimeError(self.process.stderr.read().decode()) from None
        self.http = httpx.Client(base_url=self.url, headers=ADMIN, timeout=30)

    def kill(self):
        if self in Serve.alive:
            Serve.alive.remove(self)
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(30)
        return self.process.stderr.read().decode()


    def health(self):
        return self.http.get("/_mock/health").json()

    def projects(self):
        found, page = {}, 1
        while True:
            listed = self.http.get(PROJECTS, params={"page_size": 100, "page": page}).json()
            found.update({p["name"]: p["id"] for p in listed["results"]})
            if len(listed["results"]) < 100:
                return found
            page += 1


@pytest.fixture(autouse=True)
def no_server_left():
    yield
    while Serve.alive:
        Serve.alive[-1].kill()


def _limit_files(limit):
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)        # a write past the limit then fails instead of killing
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))


def start_refused(state, *extra):
    result = subprocess.run([sys.executable, "-m", "mockserver", "serve", "--port", str(free_port()), "--state-file",
                             str(state), *extra], cwd=ROOT, capture_output=True, text=True, timeout=60)
    return result.returncode, result.stderr


def until(predicate, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError("never happened")


# ---------------------------------------------------------------- a disk that fills up
class Tmpfs:
    """A small tmpfs mounted for the test (root only)."""

    def __init__(self, folder, size):
        folder.mkdir()
        self.folder = folder
        if os.geteuid() != 0 or shutil.which("mount") is None:
            pytest.skip("mounting a small filesystem needs root and mount(8); the file-size limit case runs anyway")
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip()}); the file-size limit case runs anyway")

    def fill(self):
        """Take every byte left (a file that grows until the disk refuses)."""
        with open(self.folder / "filler", "wb", buffering=0) as filler:
            try:
                while True:
                    filler.write(b"\0" * 4096)
            except OSError:
                pass

    def free(self):
        os.unlink(self.folder / "filler")

    def unmount(self):
        subprocess.run(["umount", "-l", str(self.folder)], capture_output=True)


def writes_until_refused(mock, prefix, refusals=5):
    """Create projects until `refusals` in a row were refused: (acknowledged names, refused names)."""
    acknowledged, refused, row = {}, [], 0
    for index in range(2000):
        reply = mock.http.post(PROJECTS, json={"name": f"{prefix}-{index}"})
        if reply.status_code == 201:
            acknowledged[reply.json()["name"]] = reply.json()["id"]
            row = 0
            continue
        assert reply.status_code == 503, reply.text
        refused.append(f"{prefix}-{index}")
        row += 1
        if row == refusals:
            return acknowledged, refused, reply.json()["message"]
    raise AssertionError("the disk never filled up")


def test_a_small_filesystem_that_fills_up_loses_nothing_acknowledged(tmp_path):
    disk = Tmpfs(tmp_path / "disk", "4m")
    state = disk.folder / "state.bin"
    try:
        mock = Serve(state, "--save-interval", "3600")
        acknowledged = {"first": mock.http.post(PROJECTS, json={"name": "first"}).json()["id"]}
        disk.fill()
        got, refused, message = writes_until_refused(mock, "full")
        acknowledged.update(got)
        assert "No space left on device" in message and str(state) in message
        health = mock.health()
        assert health["status"] == "degraded" and "No space left on device" in health["problems"][0]
        seen = mock.projects()                                   # reads go on, and see nothing refused
        assert not set(refused) & set(seen) and set(acknowledged) <= set(seen)
        disk.free()
        until(lambda: mock.health()["status"] == "ok")           # writing resumes by itself
        after = mock.http.post(PROJECTS, json={"name": "after"})
        assert after.status_code == 201
        acknowledged["after"] = after.json()["id"]
        mock.kill()
        again = Serve(state)
        try:
            found = again.projects()
            assert {name: found.get(name) for name in acknowledged} == acknowledged
            assert not set(refused) & set(found)
        finally:
            again.kill()
    finally:
        disk.unmount()


def test_a_file_size_limit_reached_mid_record_loses_nothing_acknowledged(tmp_path):
    """The same with the log's file refused past a size (as a quota would): the write that crosses it comes up
    short; its bytes are cut off, and the next record is not written after them."""
    state = tmp_path / "state.bin"
    mock = Serve(state, "--save-interval", "3600", limit=4000)
    acknowledged, refused, message = writes_until_refused(mock, "limited")
    assert acknowledged and "File too large" in message or "came up short" in message, message
    assert mock.health()["status"] == "degraded"
    resource.prlimit(mock.process.pid, resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    until(lambda: mock.health()["status"] == "ok")
    assert mock.http.post(PROJECTS, json={"name": "limited-after"}).status_code == 201
    mock.kill()
    reading = read_log(str(state))
    assert reading.damage == [] and reading.torn == 0                  # no torn bytes left in the middle
    again = Serve(state)
    try:
        found = again.projects()
        assert {name: found.get(name) for name in acknowledged} == acknowledged
        assert "limited-after" in found and not set(refused) & set(found)
    finally:
        again.kill()


# ---------------------------------------------------------------- a damaged log
def acknowledged_projects(mock, count, prefix):
    out = {}
    for index in range(count):
        reply = mock.http.post(PROJECTS, json={"name": f"{prefix}-{index}"})
        assert reply.status_code == 201, reply.text
        out[reply.json()["name"]] = reply.json()["id"]
    return out


def segment_of(state):
    [segment] = [path for path in state.parent.glob("state.bin.log.*") if path.suffix[1:].isdigit()
                 and path.stat().st_size > len(MAGIC)]
    return segment


def test_a_changed_byte_in_record_10_stops_the_start_and_skip_costs_that_record_alone(tmp_path):
    state = tmp_path / "state.bin"
    mock = Serve(state, "--save-interval", "3600")
    acknowledged = acknowledged_projects(mock, 100, "p")
    mock.kill()
    segment = segment_of(state)
    data = bytearray(segment.read_bytes())
    tenth = read_log(str(state)).records[8][0][1]                 # where the tenth record begins
    data[tenth + 40] ^= 0x01
    segment.write_bytes(bytes(data))
    code, said = start_refused(state)
    assert code == 2, said
    lines = [line for line in said.splitlines() if line.strip()]
    assert len(lines) == 1 and str(segment) in lines[0] and "record 10" in lines[0] and "--damaged-log skip" in lines[0]
    assert segment.read_bytes() == bytes(data) and not state.exists()     # nothing deleted, nothing written
    again = Serve(state, "--damaged-log", "skip", "--save-interval", "0.2")
    try:
        found = again.projects()
        lost = sorted(set(acknowledged) - set(found))
        assert lost == ["p-9"] and all(found[name] == ident for name, ident in acknowledged.items() if name in found)
        until(state.exists)                                                  # saved since
        time.sleep(0.5)
        assert (tmp_path / f"{segment.name}.damaged").read_bytes() == bytes(data)     # the evidence stays
    finally:
        again.kill()


def test_a_write_torn_by_the_stop_at_the_end_is_left_out_and_the_rest_runs_again(tmp_path):
    state = tmp_path / "state.bin"
    mock = Serve(state, "--save-interval", "3600")
    acknowledged = acknowledged_projects(mock, 10, "t")
    mock.kill()
    with open(segment_of(state), "ab") as segment:
        segment.write(b'0badcafe 120 {"kind":"api","sandbox":"default","meth')        # half a record
    again = Serve(state)
    try:
        assert {name: again.projects().get(name) for name in acknowledged} == acknowledged
        assert "cut short" in again.kill()
    finally:
        again.process.kill()


# ---------------------------------------------------------------- two servers
def test_a_second_server_on_a_state_file_in_use_is_refused_with_the_holders_pid(tmp_path):
    state = tmp_path / "state.bin"
    first = Serve(state)
    try:
        code, said = start_refused(state)
        assert code == 2
        lines = [line for line in said.splitlines() if line.strip()]
        assert len(lines) == 1 and str(state) in lines[0] and f"pid {first.process.pid}" in lines[0], said
        code, said = start_refused(state, "--fresh")                 # not even to set its world aside
        assert code == 2 and f"pid {first.process.pid}" in said
        assert first.http.post(PROJECTS, json={"name": "still-mine"}).status_code == 201
    finally:
        first.kill()
    second = Serve(state)                                           # the lock went with its holder
    try:
        assert "still-mine" in second.projects()
    finally:
        second.kill()


# ---------------------------------------------------------------- webhooks across a restart
@pytest.mark.parametrize("interval", ["3600", "0.3"], ids=["all in the log", "a save between"])
def test_webhook_deliveries_made_before_a_kill_are_not_made_again_after_the_restart(tmp_path, interval):
    state = tmp_path / "state.bin"
    receiver = Receiver()
    mock = Serve(state, "--clock", "manual", "--save-interval", interval)
    try:
        for _ in range(3):
            assert mock.http.post(f"/organization/{ORG}/webhook", json={
                "target_url": receiver.url, "events": ["DEPLOYMENT_STARTED", "DEPLOYMENT_SUCCEEDED"],
                "enabled": True}).status_code == 201
        assert mock.http.post(f"/application/{APP}/deploy", json={}).status_code == 202
        assert mock.http.post("/_mock/clock/advance", json={"seconds": 1}).status_code == 200
        receiver.wait_for(3)
        time.sleep(1)                                       # (with saves: one holds the first three as delivered)
        assert mock.http.post("/_mock/clock/advance", json={"seconds": 8}).status_code == 200
        receiver.wait_for(6)
        until(lambda: all(d["status"] == "DELIVERED"
                          for d in mock.http.get("/_mock/webhooks/deliveries").json()["results"]))
        mock.kill()
        again = Serve(state, "--clock", "manual")
        try:
            time.sleep(1.5)                                 # many rounds of the background loop
            delivered = [request["headers"]["X-Mock-Delivery"] for request in receiver.requests]
            assert sorted(delivered) == sorted(set(delivered)) and len(delivered) == 6, delivered
            statuses = [d["status"] for d in again.http.get("/_mock/webhooks/deliveries").json()["results"]]
            assert statuses == ["DELIVERED"] * 6
        finally:
            again.kill()
    finally:
        receiver.stop()
