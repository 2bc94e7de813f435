"""Findings of a walk through the README (the state file's `--fresh`, the pytest plugin and its pacts):

- `--fresh` twice kept only the last world set aside: the second start moved the fresh world's file over
  PATH.previous, and the world the first `--fresh` had kept was gone. Now the worlds set aside move down
  (PATH.previous, PATH.previous.1, PATH.previous.2) and the oldest, when one must go, is named in the log.
- `--mockserver-url` at a URL where nothing listens: every test errored with a long httpx traceback that
  named neither the URL nor the option. Now the first test errors with one line naming both, and the
  session stops there.
- `--mockserver-pact` left `PACT.lock` beside the pact (with `-n 2` too). Now its holder deletes it, and
  writers still take turns.

The pytest runs of these tests are given a served mock's URL, so they start no in-process mock of their own."""

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import textwrap

import httpx
import pytest
from conftest import ADMIN, ORG, ROOT, LiveServer

from mockserver.sandboxes import statefile

PROJECTS = f"/organization/{ORG}/project"


def serve(path, *extra):
    return LiveServer("--clock", "manual", "--state-file", str(path), "--save-interval", "0.2", *extra)


def start_lines(server):
    """The lines the server printed before it answered (up to the start line's last, `control API`)."""
    out = []
    while not out or not out[-1].strip().startswith("control API"):
        out.append(server.process.stderr.readline().decode())
    return out


def stop(server):
    server.process.send_signal(signal.SIGTERM)
    assert server.process.wait(timeout=30) == 0, server.process.stderr.read().decode()


def new_project(server, name):
    reply = httpx.post(f"{server.url}{PROJECTS}", json={"name": name}, headers=ADMIN, timeout=10)
    assert reply.status_code == 201, reply.text
    return reply.json()["id"]


# ---------------------------------------------------------------- --fresh twice
@pytest.fixture
def servers():
    """Start `serve(path, ...)` servers that are stopped after the test, whatever happens in it."""
    started = []

    def start(path, *extra):
        started.append(serve(path, *extra))
        return started[-1]

    yield start
    for server in started:
        if server.process.poll() is None:
            server.stop()


def test_fresh_twice_keeps_the_first_world_set_aside_and_moving_it_back_restores_it(tmp_path, servers):
    path = tmp_path / "state.bin"
    first = servers(path)
    ident = new_project(first, "the-old-world")
    stop(first)
    old_world = path.read_bytes()

    second = servers(path, "--fresh")
    world = next(line for line in start_lines(second) if line.strip().startswith("world"))
    assert f"kept as {path}.previous" in world
    stop(second)                                     # saves the fresh world over PATH
    assert path.read_bytes() != old_world

    third = servers(path, "--fresh")
    lines = start_lines(third)
    world = next(line for line in lines if line.strip().startswith("world"))
    assert f"kept as {path}.previous" in world
    moved = [line for line in lines if "moved down" in line]
    assert len(moved) == 1 and f"{path}.previous -> {path}.previous.1" in moved[0], lines
    assert "deleted" not in moved[0]
    assert httpx.get(f"{third.url}/project/{ident}", headers=ADMIN, timeout=10).status_code == 404
    stop(third)

    assert (tmp_path / "state.bin.previous.1").read_bytes() == old_world     # the first world is still there
    assert (tmp_path / "state.bin.previous").exists()
    os.replace(tmp_path / "state.bin.previous.1", path)                     # "move it back over PATH"
    fourth = servers(path)
    world = next(line for line in start_lines(fourth) if line.strip().startswith("world"))
    assert f"restored from the state file {path}" in world
    assert httpx.get(f"{fourth.url}/project/{ident}", headers=ADMIN, timeout=10).status_code == 200
    stop(fourth)


def test_at_most_three_worlds_are_set_aside_and_the_deleted_one_is_named(tmp_path, caplog):
    path = tmp_path / "state.bin"
    kept = []
    for number in range(1, 5):                      # four --fresh starts, each over a different world
        path.write_bytes(f"world {number}".encode())
        with caplog.at_level(logging.WARNING, logger="mockserver"):
            caplog.clear()
            kept.append(statefile.set_aside(str(path)))
    assert kept == [f"{path}.previous"] * 4
    assert not path.exists()
    assert (tmp_path / "state.bin.previous").read_bytes() == b"world 4"
    assert (tmp_path / "state.bin.previous.1").read_bytes() == b"world 3"
    assert (tmp_path / "state.bin.previous.2").read_bytes() == b"world 2"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.bin.previous", "state.bin.previous.1",
                                                           "state.bin.previous.2"]      # bounded: world 1 went
    said = [record.getMessage() for record in caplog.records]
    assert len(said) == 1, said
    assert f"the oldest, {path}.previous.2 (saved " in said[0] and "was deleted" in said[0]


def test_a_gap_among_the_worlds_set_aside_is_filled_before_any_is_deleted(tmp_path, caplog):
    path = tmp_path / "state.bin"
    (tmp_path / "state.bin.previous").write_bytes(b"newer")
    (tmp_path / "state.bin.previous.2").write_bytes(b"oldest")
    path.write_bytes(b"now")
    with caplog.at_level(logging.WARNING, logger="mockserver"):
        assert statefile.set_aside(str(path)) == f"{path}.previous"
    assert [(tmp_path / name).read_bytes() for name in ("state.bin.previous", "state.bin.previous.1",
                                                          "state.bin.previous.2")] == [b"now", b"newer", b"oldest"]
    assert not any("deleted" in record.getMessage() for record in caplog.records)
    assert statefile.set_aside(str(path)) is None          # no file: nothing set aside, nothing moved


# ---------------------------------------------------------------- the plugin at an unreachable URL
SUITE = """
    import httpx

    def test_one(mockserver):
        assert httpx.get(f"{mockserver.url}/organization", headers=mockserver.headers("admin")).status_code == 200

    def test_two(mockserver):
        assert httpx.get(f"{mockserver.url}/organization", headers=mockserver.headers("admin")).status_code == 200

    def test_three():
        pass
"""


def run_pytest(folder, *args, env=None):
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("MOCKSERVER_", "PYTEST_"))}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(folder), *args]
    return subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=240,
                          env={**clean, **(env or {})})


@pytest.fixture
def refused_url():
    """A URL of a loopback port that is bound but not listening: every connection to it is refused."""
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    yield f"http://127.0.0.1:{holder.getsockname()[1]}"
    holder.close()


@pytest.mark.parametrize("given", ["option", "environment"])
def test_an_unreachable_mockserver_url_fails_early_with_one_line_naming_it(tmp_path, refused_url, given):
    (tmp_path / "test_suite.py").write_text(textwrap.dedent(SUITE))
    if given == "option":
        result = run_pytest(tmp_path, "-p", "no:xdist", "test_suite.py", "--mockserver-url", refused_url)
        named = "given by --mockserver-url"
    else:
        result = run_pytest(tmp_path, "-p", "no:xdist", "test_suite.py", env={"MOCKSERVER_URL": refused_url})
        named = "MOCKSERVER_URL"
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "httpcore" not in output and "Traceback" not in output, output[-3000:]
    said = [line for line in output.splitlines() if line.startswith("mockserver: cannot reach")]
    assert said, output[-3000:]
    assert refused_url in said[0] and named in said[0] and "Connection refused" in said[0]
    assert "Interrupted" in output and "1 error" in output, output[-2000:]        # stopped at the first test
    assert len(output.splitlines()) < 25, output


# ---------------------------------------------------------------- pacts written by xdist workers
PACT_SUITE = """
    import httpx
    import pytest

    @pytest.mark.parametrize("name", [f"project-{{n}}" for n in range(8)])
    def test_create(mockserver, name):
        api = httpx.Client(base_url=mockserver.url, headers=mockserver.headers("admin"))
        assert api.post("/organization/{org}/project", json={{"name": name}}).status_code == 201
"""


def test_a_pact_written_by_two_xdist_workers_leaves_no_lock_file(tmp_path):
    (tmp_path / "test_pact_suite.py").write_text(textwrap.dedent(PACT_SUITE.format(org=ORG)))
    pact = tmp_path / "pacts" / "console-idp.json"
    mock = LiveServer("--clock", "manual")
    try:
        result = run_pytest(tmp_path, "-n", "2", "-p", "xdist", "test_pact_suite.py", "--mockserver-url",
                            mock.url, "--mockserver-pact", str(pact), "--mockserver-pact-consumer", "console")
    finally:
        mock.stop()
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "8 passed" in result.stdout
    assert sorted(os.listdir(pact.parent)) == ["console-idp.json"]          # no .lock, no .tmp
    document = json.loads(pact.read_text())
    bodies = {json.dumps(item["request"].get("body", {}).get("content")) for item in document["interactions"]}
    assert {json.dumps({"name": f"project-{n}"}) for n in range(8)} <= bodies
    assert document["metadata"]["idp-mockserver"]["calls"] == 8


WRITER = """
import sys
from mockserver.pytest_plugin import _write_json
for _ in range(int(sys.argv[2])):
    _write_json(sys.argv[1], {"n": 1}, lambda old, new: {"n": old["n"] + 1})
"""


def test_writers_of_one_file_still_take_turns_and_the_lock_file_goes(tmp_path):
    path = tmp_path / "out" / "counter.json"
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), "150"], cwd=ROOT) for _ in range(4)]
    assert [writer.wait(timeout=120) for writer in writers] == [0, 0, 0, 0]
    assert json.loads(path.read_text()) == {"n": 600}          # no write lost: one writer at a time
    assert sorted(os.listdir(path.parent)) == ["counter.json"]
