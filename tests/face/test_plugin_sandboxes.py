"""The pytest plugin and the Python client as a team met them in its first hour, each stumble a test: a test's own
sandbox options (a marker, a factory), a failing test's journal kept where pytest shows it (and its sandbox kept
on request), the in-process mock reading MOCKSERVER_SCENARIOS as a served one does, filters by token, header and
body, an assertion that says where the calls went, and a control error said once."""

import json
import os
import subprocess
import sys
import textwrap

import pytest
from support import ROOT
from support.ids import ORG

from mockserver.client import Client, MockServerError

pytestmark = pytest.mark.server
PROJECTS = f"/organization/{ORG}/project"


def run_pytest(folder, source, *args, env=None):
    (folder / "test_suite.py").write_text(textwrap.dedent(source))
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("MOCKSERVER_", "PYTEST_"))}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "--rootdir",
               str(folder), *args, "test_suite.py"]
    return subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=240,
                          env={**clean, "PYTHONPATH": str(ROOT), **(env or {})})


@pytest.fixture
def served(live_server):
    server = live_server("--clock", "manual")
    mock = Client(server.url)
    yield server, mock
    mock.http.close()


def names(mock):
    return {box["name"] for box in mock.sandboxes()} - {"default"}


def test_a_marker_gives_a_test_its_sandbox_options_and_a_factory_more_sandboxes(tmp_path, served):
    server, mock = served
    done = run_pytest(tmp_path, """
        import pytest

        @pytest.mark.sandbox(rate_limit="2/60s", seed=9)
        def test_limited(sandbox):
            codes = [sandbox.http.get("/organization", headers=sandbox.headers("admin")).status_code
                     for _ in range(3)]
            assert codes == [200, 200, 429]

        def test_two_sandboxes(sandbox, make_sandbox):
            other = make_sandbox(rate_limit="1/60s")
            assert other.sandbox != sandbox.sandbox and other.sandbox.startswith(sandbox.sandbox.rsplit("-", 1)[0])
            assert [other.http.get("/organization", headers=other.headers("admin")).status_code
                    for _ in range(2)] == [200, 429]
            assert sandbox.http.get("/organization", headers=sandbox.headers("admin")).status_code == 200
            open("made.txt", "w").write(sandbox.sandbox + "\\n" + other.sandbox)
        """, "--mockserver-url", server.url)
    assert done.returncode == 0, done.stdout + done.stderr
    assert names(mock) == set()                                     # every sandbox deleted with its test


def test_a_misspelled_marker_option_fails_the_test_with_the_nearest_name(tmp_path, served):
    server, _ = served
    done = run_pytest(tmp_path, """
        import pytest

        @pytest.mark.sandbox(rate_limt="2/60s")
        def test_typo(sandbox):
            pass
        """, "--mockserver-url", server.url)
    assert done.returncode == 1
    assert "rate_limt: not a sandbox option (did you mean rate_limit?)" in done.stdout


FAILING = """
    import httpx

    ORG = "8d3e6a4b-1f2c-4b7a-9e1d-3c5f7a9b2d10"

    def test_fails(sandbox):
        for n in range(25):
            sandbox.http.get(f"/organization/{ORG}/project", headers=sandbox.headers("admin"))
        assert False, "planted"

    def test_passes(sandbox):
        sandbox.http.get("/organization", headers=sandbox.headers("admin"))
    """


def test_a_failing_test_leaves_its_journal_and_shows_its_last_calls(tmp_path, served):
    server, mock = served
    done = run_pytest(tmp_path, FAILING, "--mockserver-url", server.url)
    assert done.returncode == 1
    [written] = (tmp_path / "mockserver-journals").iterdir()       # the passing test wrote nothing
    assert written.name == "test_suite.py-test_fails.json"
    calls = json.loads(written.read_text())
    assert [call["id"] for call in calls] == list(range(1, 26))
    assert f"journal: mockserver-journals/{written.name} (25 call(s))" in done.stdout
    shown = [line for line in done.stdout.splitlines() if line.startswith("#")]
    assert shown[0].startswith("#6 GET /organization/") and shown[-1].startswith("#25 GET") and len(shown) == 20
    assert shown[-1].endswith("-> 200 (listProjects)")
    assert names(mock) == set() and "kept" not in done.stdout


def test_a_failing_tests_sandbox_is_kept_on_request_and_named(tmp_path, served):
    server, mock = served
    done = run_pytest(tmp_path, FAILING, "--mockserver-url", server.url,
                      env={"MOCKSERVER_KEEP_SANDBOX": "on-failure", "MOCKSERVER_JOURNAL_DIR": str(tmp_path / "j")})
    assert done.returncode == 1 and (tmp_path / "j" / "test_suite.py-test_fails.json").exists()
    [kept] = names(mock)
    assert "test_fails" in kept and f"kept: {server.url}/sandbox/{kept}" in done.stdout
    assert f"{server.url}/_mock/ui?sandbox={kept}" in done.stdout and "1 sandbox(es) kept on the mock" in done.stdout
    assert len(Client(server.url, sandbox=kept).calls()) == 25        # what the test saw, there for a look


def test_the_in_process_mock_reads_mockserver_scenarios_as_a_served_one_does(tmp_path):
    (tmp_path / "flaky.yaml").write_text(textwrap.dedent("""
        name: flaky
        rules:
          - match: {operation: listProjects}
            effect: {status: 503}
          - name: never
            match: {operation: deleteProject}
            effect: {status: 500}
        """))
    done = run_pytest(tmp_path, f"""
        def test_scripted(sandbox):
            reply = sandbox.http.get("{PROJECTS}", headers=sandbox.headers("admin"))
            assert reply.status_code == 503 and reply.headers["x-mock-rule"] == "flaky/rule-1"
        """, env={"MOCKSERVER_SCENARIOS": str(tmp_path / "flaky.yaml"), "MOCKSERVER_SEED": "4"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "flaky/never: loaded, never fired" in done.stdout           # and the unused-rules report sees it


def test_an_environment_value_the_in_process_mock_cannot_read_is_named(tmp_path):
    done = run_pytest(tmp_path, "def test_x(sandbox):\n    pass\n", env={"MOCKSERVER_RATE_LIMIT": "lots"})
    assert done.returncode != 0 and "MOCKSERVER_RATE_LIMIT='lots'" in done.stdout + done.stderr


def test_the_client_filters_by_token_header_and_body_and_says_where_calls_went(served):
    server, mock = served
    box = mock.in_sandbox("filters")
    try:
        box.http.post(PROJECTS, json={"name": "checkout", "description": "shop"},
                      headers={**box.headers("writer"), "X-Request-Source": "ci"})
        box.http.post(PROJECTS, json={"name": "billing"}, headers=box.headers("admin"))
        assert [c["body"]["name"] for c in box.calls(token="mock-write-token")] == ["checkout"]
        assert [c["body"]["name"] for c in box.calls(headers={"x-request-source": "c*"})] == ["checkout"]
        assert [c["body"]["name"] for c in box.calls(body={"name": "billing"})] == ["billing"]
        box.assert_called(times=1, token="writer", body={"description": "shop"})
        with pytest.raises(AssertionError) as lost:                 # a call sent to the mock's root
            mock.http.post(PROJECTS, json={"name": "lost"}, headers=mock.headers("admin"))
            box.assert_called(body={"name": "lost"})
        assert "went to sandbox default" in str(lost.value) and "base URL" in str(lost.value)
    finally:
        box.delete_sandbox()


def test_an_assertion_on_a_sandbox_never_made_says_so(served):
    server, mock = served
    mock.create_sandbox("orders")
    with pytest.raises(MockServerError) as error:
        Client(server.url, sandbox="ordres").assert_called(operation="createProject")
    assert "sandbox ordres does not exist" in str(error.value) and "did you mean orders" in str(error.value)
    assert str(error.value).count("does not exist") == 1 and repr(error.value).count("does not exist") == 1
