"""Nothing acknowledged is lost: writes a mock answered 2xx survive a kill -9 at any moment (the change log of
sandboxes/changelog.py, replayed on top of the last full save), round after round, with a state of more than
20 MB being saved in the background while the writes go on. Each write runs again in the sandbox it ran in,
counted as a call toward the sandbox's `expires`."""

import os
import random
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from support import ROOT
from support.http import free_port, wait_for
from support.ids import ADMIN, ORG

pytestmark = pytest.mark.server

SANDBOXES = 240                     # awake worlds of the default fixtures: a state file of more than 20 MB
ROUNDS = 10


class Mock:
    def __init__(self, state, durability="fsync", interval="1"):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mockserver", "serve", "--port", str(self.port), "--state-file", str(state),
             "--save-interval", interval, "--sleep-after", "0", "--durability", durability, "--rate-limit",
             "1000000000/3600", "--exit-with-parent"], cwd=ROOT, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE)                 # a test that fails midway leaves no server behind
        wait_for(f"{self.url}/_mock/health", timeout=120)

    def kill(self):
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(30)


def write_until(url, stop, acknowledged, lock, prefix):
    """Create projects in random sandboxes until `stop`; every one answered 201 is noted."""
    rng, n = random.Random(prefix), 0
    with httpx.Client(timeout=30, headers=ADMIN) as client:
        while not stop.is_set():
            box = f"box{rng.randrange(SANDBOXES)}"
            name = f"{prefix}-{n}"
            n += 1
            try:
                reply = client.post(f"{url}/sandbox/{box}/organization/{ORG}/project", json={"name": name})
            except httpx.HTTPError:
                return                                   # the server was killed under this request
            if reply.status_code == 201:
                with lock:
                    acknowledged.append((box, name))


def names_in(url, box):
    reply = httpx.get(f"{url}/sandbox/{box}/organization/{ORG}/project", headers=ADMIN, timeout=30)
    return {project["name"] for project in reply.json()["results"]}


@pytest.mark.timeout(1200)            # ten starts over a state of 20 MB: minutes on a loaded machine
def test_a_kill_9_at_any_moment_loses_no_acknowledged_write(tmp_path):
    state = tmp_path / "state.bin"
    mock = Mock(state)
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda i: httpx.put(f"{mock.url}/_mock/sandboxes/box{i}", timeout=60).raise_for_status(),
                      range(SANDBOXES)))
    deadline = time.monotonic() + 60
    while (not state.exists() or state.stat().st_size < 20 * 1024 * 1024) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert state.stat().st_size > 20 * 1024 * 1024, state.stat().st_size
    acknowledged, lock, rng = [], threading.Lock(), random.Random(7)
    for round_number in range(ROUNDS):
        stop = threading.Event()
        writers = [threading.Thread(target=write_until, args=(mock.url, stop, acknowledged, lock,
                                                              f"r{round_number}w{w}")) for w in range(4)]
        for writer in writers:
            writer.start()
        time.sleep(rng.uniform(0.3, 2.0))                 # a save of the state may be under way
        mock.kill()
        stop.set()
        for writer in writers:
            writer.join(30)
        mock = Mock(state)
        lost = []
        for box in {box for box, _ in acknowledged}:
            present = names_in(mock.url, box)
            lost += [name for b, name in acknowledged if b == box and name not in present]
        assert lost == [], f"round {round_number}: acknowledged and lost: {lost[:10]} ({len(lost)})"
    assert len(acknowledged) > ROUNDS * 10
    mock.kill()


def test_without_the_log_a_kill_9_loses_the_writes_since_the_last_save(tmp_path):
    """The same kill with --durability off: what came after the last save is gone (the log is what keeps it)."""
    state = tmp_path / "state.bin"
    mock = Mock(state, durability="off", interval="2")
    httpx.put(f"{mock.url}/_mock/sandboxes/box0", timeout=30).raise_for_status()
    time.sleep(3)                                        # saved once, with box0 in it
    for n in range(20):
        reply = httpx.post(f"{mock.url}/sandbox/box0/organization/{ORG}/project", json={"name": f"gone-{n}"},
                           headers=ADMIN, timeout=30)
        assert reply.status_code == 201
    mock.kill()                                          # well within the next interval
    mock = Mock(state, durability="off", interval="2")
    assert not {f"gone-{n}" for n in range(20)} <= names_in(mock.url, "box0")
    health = httpx.get(f"{mock.url}/_mock/health").json()["state_file"]
    assert "loses those of the last save interval" in health["changes"]
    mock.kill()


def test_a_sandbox_expiring_after_calls_counts_the_calls_the_log_runs_again(tmp_path):
    """A sandbox made to end after 5 API calls makes 3 of them (writes kept by the change log only, no save since),
    then kill -9: the log runs the writes again in that sandbox and counts them, so it serves 2 more calls (the
    projects made then included), and the next meets a fresh one."""
    state = tmp_path / "state.bin"
    mock = Mock(state, interval="3600")                  # no save during the test: the log holds every change
    assert httpx.put(f"{mock.url}/_mock/sandboxes/short", json={"expires": {"calls": 5}}).status_code == 201
    for n in range(3):
        reply = httpx.post(f"{mock.url}/sandbox/short/organization/{ORG}/project", json={"name": f"kept-{n}"},
                           headers=ADMIN, timeout=30)
        assert reply.status_code == 201
    assert not state.exists()
    mock.kill()
    mock = Mock(state, interval="3600")
    try:
        assert httpx.get(f"{mock.url}/_mock/sandboxes/short").json()["calls"] == 3
        kept = {f"kept-{n}" for n in range(3)}
        assert kept <= names_in(mock.url, "short")       # call 4
        assert kept <= names_in(mock.url, "short")       # call 5: the last it serves
        assert not kept & names_in(mock.url, "short")    # call 6: a fresh sandbox
    finally:
        mock.kill()


def test_a_change_made_after_a_sandbox_expired_is_run_again_in_the_fresh_one(tmp_path):
    """Ending after 2 calls, the sandbox takes two writes; the third met a fresh sandbox. After kill -9 the log
    runs each write again where it ran: the sandbox there holds the third project only."""
    state = tmp_path / "state.bin"
    mock = Mock(state, interval="3600")
    assert httpx.put(f"{mock.url}/_mock/sandboxes/short", json={"expires": {"calls": 2}}).status_code == 201
    for n in range(3):
        reply = httpx.post(f"{mock.url}/sandbox/short/organization/{ORG}/project", json={"name": f"made-{n}"},
                           headers=ADMIN, timeout=30)
        assert reply.status_code == 201
    before = names_in(mock.url, "short")
    assert "made-2" in before and not {"made-0", "made-1"} & before
    mock.kill()
    mock = Mock(state, interval="3600")
    try:
        after = names_in(mock.url, "short")
        assert "made-2" in after and not {"made-0", "made-1"} & after
    finally:
        mock.kill()
