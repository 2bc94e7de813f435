"""The worlds `serve --fresh` sets aside: a start with `--fresh` keeps the state file's world as PATH.previous,
and the worlds set aside before it move down (PATH.previous.1, PATH.previous.2) instead of being overwritten; at
most three are kept, the one deleted is named in the log, and a gap among them is filled first. A world set aside
is restored once it is moved back over PATH. (tests/sandboxes/test_state_file.py: the state file itself.)"""

import logging
import os
import signal

import httpx
import pytest
from support.ids import ADMIN, ORG
from support.live import LiveServer

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


@pytest.mark.server
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
