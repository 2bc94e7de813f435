"""The pytest plugin (mockserver/pytest_plugin.py) as a client team meets it: the tokens by every name the README
and the fixtures use; a `--mockserver-url` where nothing listens (the first test errors with one line naming the
URL and where it was given, and the session stops there); `--mockserver-pact` written by several xdist workers
(they take turns, and the lock file goes). The pytest runs here are given a served mock's URL, so they start no
in-process mock of their own.

examples/python/ is a client suite written with the plugin, and
tests/sandboxes/test_sandbox_control.py runs it under pytest-xdist."""

import json
import os
import socket
import subprocess
import sys
import textwrap

import httpx
import pytest
from support import ROOT
from support.ids import APP, ORG
from support.live import LiveServer


# ---------------------------------------------------------------- the tokens by every name
@pytest.mark.server
def test_the_plugin_knows_the_tokens_by_every_name_and_lists_them_when_wrong(live_server):
    from mockserver.client import Client
    server = live_server("--clock", "manual")
    mock = Client(server.url)
    try:
        deploy = f"{server.url}/application/{APP}/deploy"
        assert httpx.post(deploy, json={}, headers=mock.headers("deployer")).status_code == 202
        # the fixtures' name, the plugin's old key and the scope are one token
        assert mock.headers("deployer") == mock.headers("deploy") == mock.headers("Deploy")
        for name in ("reader", "read", "Read"):
            assert httpx.get(f"{server.url}/organization", headers=mock.headers(name)).status_code == 200
            assert httpx.post(deploy, json={}, headers=mock.headers(name)).status_code == 403
        assert mock.headers("writer") == mock.headers("write") == {"Authorization": "Token mock-write-token"}
        assert mock.headers() == mock.headers("admin") == {"Authorization": "Token mock-admin-token"}
        assert mock.tokens["deployer"] == "mock-deploy-token"
        with pytest.raises(KeyError) as wrong:
            mock.headers("deployr")
        message = str(wrong.value)
        assert "'deployr'" in message and all(name in message for name in ("admin", "reader", "writer", "deployer"))
    finally:
        mock.http.close()


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


@pytest.mark.server
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
from mockserver.client import write_json
for _ in range(int(sys.argv[2])):
    write_json(sys.argv[1], {"n": 1}, lambda old, new: {"n": old["n"] + 1})
"""


def test_writers_of_one_file_still_take_turns_and_the_lock_file_goes(tmp_path):
    path = tmp_path / "out" / "counter.json"
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), "150"], cwd=ROOT) for _ in range(4)]
    assert [writer.wait(timeout=120) for writer in writers] == [0, 0, 0, 0]
    assert json.loads(path.read_text()) == {"n": 600}          # no write lost: one writer at a time
    assert sorted(os.listdir(path.parent)) == ["counter.json"]


# ---------------------------------------------------------------- the fixture's name, and the one it had
NAMES_SUITE = """
    import httpx
    from mockserver.client import UnknownToken, UnknownTokenError, types

    def test_the_sandbox_fixture_and_its_old_name_are_one_handle(sandbox, mockserver):
        assert sandbox is mockserver and sandbox.url.endswith(f"/sandbox/{sandbox.sandbox}")
        reply = httpx.get(f"{sandbox.url}/organization", headers={"Authorization": f"Token {sandbox.token('reader')}"})
        assert reply.status_code == 200
        call: types.Call = sandbox.calls()[0]
        assert call["token"] == "reader" and call["scenario_rule"] is None
        assert UnknownToken is UnknownTokenError
        try:
            sandbox.token("deployr")
        except UnknownTokenError as error:
            assert "deployer" in str(error)
        else:
            raise AssertionError("an unknown token name was taken")
"""


@pytest.mark.server
def test_the_sandbox_fixture_is_the_handle_the_mockserver_fixture_was(tmp_path):
    (tmp_path / "test_names_suite.py").write_text(textwrap.dedent(NAMES_SUITE))
    mock = LiveServer("--clock", "manual")
    try:
        result = run_pytest(tmp_path, "-p", "no:xdist", "test_names_suite.py", "--mockserver-url", mock.url)
    finally:
        mock.stop()
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "1 passed" in result.stdout
