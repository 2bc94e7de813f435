"""The state file is never lost quietly: a folder it cannot be kept in stops the start, a failed save is
logged, shown in /_mock/health and tried again, no temporary file stays behind, a failed last save is one
line and a non-zero exit, a saving child dies with the server, and the start line says which world was
loaded (and `--fresh` starts from the fixtures). Every case runs `mockserver serve` as a process."""

import glob
import os
import resource
import signal
import subprocess
import sys
import time

import httpx
import pytest
from support import ROOT
from support.http import free_port
from support.ids import ADMIN, ORG
from support.live import LiveServer

pytestmark = pytest.mark.server

PROJECTS = f"/organization/{ORG}/project"


def serve(path, *extra):
    return LiveServer("--clock", "manual", "--state-file", str(path), "--save-interval", "0.2", *extra)


def start_refused(*args):
    """`mockserver serve` that must not start: (exit status, standard error)."""
    result = subprocess.run([sys.executable, "-m", "mockserver", "serve", "--port", str(free_port()), *args],
                            cwd=ROOT, capture_output=True, text=True, timeout=60)
    return result.returncode, result.stderr


def stop(server):
    """SIGTERM, then (exit status, standard error)."""
    server.process.send_signal(signal.SIGTERM)
    code = server.process.wait(timeout=30)
    return code, server.process.stderr.read().decode()


def temporaries(folder):
    return glob.glob(os.path.join(folder, ".*.tmp"))


def health(server):
    return httpx.get(f"{server.url}/_mock/health", timeout=10).json()


def wait_health(server, predicate, timeout=15):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = health(server)
        if predicate(state):
            return state
        time.sleep(0.05)
    raise AssertionError(f"/_mock/health never matched: {health(server)}")


def new_project(server, name):
    reply = httpx.post(f"{server.url}{PROJECTS}", json={"name": name}, headers=ADMIN, timeout=10)
    assert reply.status_code == 201, reply.text
    return reply.json()["id"]


# ---------------------------------------------------------------- folders it cannot be kept in
def test_a_state_file_in_a_missing_folder_stops_the_start_with_one_line(tmp_path):
    path = tmp_path / "not-there" / "state.bin"
    code, stderr = start_refused("--state-file", str(path))
    assert code == 2
    assert stderr.strip().splitlines() == [stderr.strip()]
    assert f"its folder {tmp_path / 'not-there'} does not exist" in stderr and "does not start" in stderr


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_fifo_or_a_device_as_the_state_file_stops_the_start_with_one_line(tmp_path, kind):
    if kind == "fifo":
        path = tmp_path / "state.fifo"
        os.mkfifo(path)
    else:
        path = "/dev/null"
    code, stderr = start_refused("--state-file", str(path))
    assert code == 2 and len(stderr.strip().splitlines()) == 1
    assert "is not a regular file" in stderr


@pytest.fixture
def read_only_folder(tmp_path):
    """A folder this user cannot write in: chmod 0555, or, for root (who writes anyway), a read-only tmpfs."""
    folder = tmp_path / "read-only"
    folder.mkdir()
    if os.geteuid() != 0:
        folder.chmod(0o555)
        yield folder
        folder.chmod(0o755)
        return
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(folder)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"root writes in any folder, and a read-only mount is not allowed here: {mounted.stderr!r}")
    yield folder
    subprocess.run(["umount", str(folder)], check=False)


def test_a_state_file_in_a_read_only_folder_stops_the_start_with_one_line(read_only_folder):
    code, stderr = start_refused("--state-file", str(read_only_folder / "state.bin"))
    assert code == 2 and len(stderr.strip().splitlines()) == 1
    assert f"its folder {read_only_folder} is not writable" in stderr


# ---------------------------------------------------------------- saves that fail: a full disk
def fail_writes(server, on):
    """Writes past 1 KiB fail (EFBIG, "File too large") in the server and the children it forks from now
    on, or work again: the state file does not fit, as on a full disk."""
    soft = 1024 if on else resource.RLIM_INFINITY
    resource.prlimit(server.process.pid, resource.RLIMIT_FSIZE, (soft, resource.RLIM_INFINITY))


def test_failing_saves_are_logged_shown_retried_and_leave_no_temporary_file(tmp_path):
    path = tmp_path / "state.bin"
    server = serve(path)
    try:
        new_project(server, "before-the-disk-filled")
        saved = wait_health(server, lambda h: h["state_file"]["saves"] >= 1)["state_file"]
        assert saved["failing"] is False and saved["last_error"] is None and health(server)["status"] == "ok"
        assert wait_health(server, lambda h: not h["state_file"]["unsaved_changes"])["state_file"]["saves"] >= 1
        fail_writes(server, True)
        new_project(server, "while-full")
        first = wait_health(server, lambda h: h["state_file"]["failing"])["state_file"]
        assert first["unsaved_changes"] is True
        good = path.read_bytes()                             # the last save that worked (one may end meanwhile)
        failing = wait_health(server, lambda h: h["state_file"]["failed_saves"] >= first["failed_saves"] + 2)
        assert failing["status"] == "degraded"                # and it was tried again, and again
        assert "File too large" in failing["state_file"]["last_error"] and failing["state_file"]["last_error_at"]
        assert failing["state_file"]["last_saved_at"] == first["last_saved_at"]
        assert path.read_bytes() == good                     # failed saves leave the last good one as it was
        assert temporaries(tmp_path) == []
        fail_writes(server, False)
        again = wait_health(server, lambda h: not h["state_file"]["failing"])
        assert again["status"] == "ok" and again["state_file"]["saves"] > saved["saves"]
        assert path.read_bytes() != good
    finally:
        code, stderr = stop(server)
    assert code == 0
    failures = [line for line in stderr.splitlines() if "saving failed" in line]
    assert len(failures) >= 2 and all(str(path) in line and "File too large" in line for line in failures)
    assert any("saved again, after" in line for line in stderr.splitlines())
    assert "Traceback" not in stderr and temporaries(tmp_path) == []
    again = serve(path)                                      # what was saved once the disk had room
    try:
        names = {p["name"] for p in httpx.get(f"{again.url}{PROJECTS}", headers=ADMIN).json()["results"]}
        assert {"before-the-disk-filled", "while-full"} <= names
    finally:
        again.stop()


def test_a_failed_last_save_at_the_stop_is_one_line_and_exit_1(tmp_path):
    path = tmp_path / "state.bin"
    server = serve(path, "--save-interval", "3600")
    new_project(server, "never-saved")
    fail_writes(server, True)
    code, stderr = stop(server)
    assert code == 1
    lines = [line for line in stderr.splitlines() if "last save failed" in line]
    assert len(lines) == 1 and "File too large" in lines[0] and str(path) in lines[0]
    assert "Traceback" not in stderr
    assert temporaries(tmp_path) == []


# ---------------------------------------------------------------- a saving child outlives nothing
def children(pid):
    found = set()
    for listing in glob.glob(f"/proc/{pid}/task/*/children"):
        with open(listing) as handle:
            found.update(int(word) for word in handle.read().split())
    return found


def state_of(pid):
    """The process's state letter (R, S, T, Z ...), or None when it is gone."""
    try:
        with open(f"/proc/{pid}/status") as handle:
            return next(line.split()[1] for line in handle if line.startswith("State:"))
    except FileNotFoundError:
        return None


def catch_a_saving_child(server, path, timeout=30):
    """Keep the server changing (each write is a change) until a saving child shows, and stop it while
    it is still making the state, before it opened its temporary file (so before it could rename it)."""
    deadline = time.monotonic() + timeout
    with httpx.Client(base_url=server.url, timeout=10) as http:
        while time.monotonic() < deadline:
            before = os.stat(path).st_ino
            http.put("/_mock/sandboxes/churn")                 # replaced each time: a change to save
            for child in children(server.process.pid):
                if state_of(child) in (None, "Z"):
                    continue                               # a save that ended, not reaped yet
                os.kill(child, signal.SIGSTOP)
                while state_of(child) not in ("T", "t", None, "Z"):
                    time.sleep(0.0005)                     # a stop takes effect a little later
                if state_of(child) not in ("T", "t"):
                    continue
                if not os.path.exists(path.parent / f".{path.name}.{child}.tmp") and os.stat(path).st_ino == before:
                    return child
                os.kill(child, signal.SIGCONT)             # writing, or it wrote already: catch the next one
            time.sleep(0.001)
    raise AssertionError("no saving child was caught while making the state")


@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="reads the process tree from /proc (Linux)")
def test_a_saving_child_exits_when_the_server_is_killed(tmp_path):
    path = tmp_path / "state.bin"
    server = LiveServer("--clock", "manual", "--state-file", str(path), "--save-interval", "0.05")
    try:
        new_project(server, "kept")
        for index in range(30):                                  # worlds enough for a save to take a while
            assert httpx.put(f"{server.url}/_mock/sandboxes/s{index}", timeout=10).status_code == 201
        wait_health(server, lambda h: not h["state_file"]["unsaved_changes"])    # the project is in the file
        child = catch_a_saving_child(server, path)
        saved = os.stat(path).st_ino if path.exists() else None
        server.process.send_signal(signal.SIGKILL)
        server.process.wait(timeout=10)
        deadline = time.monotonic() + 5
        while state_of(child) not in (None, "Z") and time.monotonic() < deadline:
            time.sleep(0.02)
        if state_of(child) not in (None, "Z"):
            # stopped before it asked to die with the server: once running, it sees its server gone and leaves
            os.kill(child, signal.SIGCONT)
            deadline = time.monotonic() + 5
            while state_of(child) not in (None, "Z") and time.monotonic() < deadline:
                time.sleep(0.02)
        assert state_of(child) in (None, "Z"), "the saving child outlived its server"
        assert (os.stat(path).st_ino if path.exists() else None) == saved    # and did not save for a dead server
    finally:
        server.stop()
    again = serve(path)                                      # starts; what the killed child left is removed
    try:
        assert temporaries(tmp_path) == []
        names = {p["name"] for p in httpx.get(f"{again.url}{PROJECTS}", headers=ADMIN).json()["results"]}
        assert "kept" in names
    finally:
        again.stop()


def test_a_temporary_file_left_by_a_dead_process_is_removed_at_the_start(tmp_path):
    path = tmp_path / "state.bin"
    stale = tmp_path / f".state.bin.{2 ** 22 + 12345}.tmp"      # no such process (beyond the default pid_max)
    stale.write_bytes(b"half a state")
    server = serve(path)
    try:
        assert not stale.exists()
    finally:
        server.stop()


# ---------------------------------------------------------------- which world was loaded
def test_the_start_line_says_the_world_came_from_the_state_file_and_fresh_starts_from_the_fixtures(tmp_path):
    path = tmp_path / "state.bin"
    first = serve(path)
    assert "restored" not in " ".join(start_lines_of_running(first))
    ident = new_project(first, "from-the-state-file")
    httpx.post(f"{first.url}/_mock/snapshots", json={"name": "snap"}, timeout=10)
    assert stop(first)[0] == 0
    second = serve(path)
    lines = start_lines_of_running(second)
    world = next(line for line in lines if line.strip().startswith("world"))
    assert f"restored from the state file {path}" in world and "1 snapshot(s)" in world
    assert f"the fixtures in {ROOT / 'fixtures'} were not replayed" in world and "--fresh" in world
    started = health(second)["started_from"]
    assert started["from"] == "state file" and started["snapshots"] == 1 and started["state_file"] == str(path)
    assert httpx.get(f"{second.url}/project/{ident}", headers=ADMIN).status_code == 200
    assert stop(second)[0] == 0
    third = serve(path, "--fresh")
    lines = start_lines_of_running(third)
    world = next(line for line in lines if line.strip().startswith("world"))
    assert f"the fixtures in {ROOT / 'fixtures'}" in world and f"kept as {path}.previous" in world
    assert httpx.get(f"{third.url}/project/{ident}", headers=ADMIN).status_code == 404
    assert health(third)["started_from"]["from"] == "fixtures"
    assert (tmp_path / "state.bin.previous").exists()
    assert stop(third)[0] == 0


def start_lines_of_running(server):
    """The lines the server printed when it started (read while it runs: they come before it answers)."""
    out = []
    while not out or not out[-1].strip().startswith("control API"):
        out.append(server.process.stderr.readline().decode())
    return out
