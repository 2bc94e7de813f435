"""The pytest plugin at the end of a suite: the scenario rules that no test made fire are listed in the summary
(`--mockserver-unused-rules warn`, the default), fail the session with `fail`, are not asked for with `off`; under
xdist the workers' sandboxes are put together, so a rule fired on either worker is not listed. The suites run
against a served mock's URL, each with a sandbox prefix of its own."""

import os
import subprocess
import sys
import textwrap

import pytest
from support.live import LiveServer

SUITE = """
    import httpx

    FLAKY = {"name": "flaky", "rules": [
        {"name": "orgs-fail", "match": {"operation": "getOrganization"}, "effect": {"status": 503}},
        {"name": "never-used", "match": {"operation": "deleteProject"}, "effect": {"status": 500}}]}

    def test_orgs_fail(mockserver):
        mockserver.scenario("flaky", FLAKY)
        assert httpx.get(f"{mockserver.url}/organization", headers=mockserver.headers()).status_code == 503

    def test_loads_it_and_calls_nothing(mockserver):
        mockserver.scenario("flaky", FLAKY)
"""


@pytest.fixture(scope="module")
def mock():
    server = LiveServer("--clock", "manual")
    yield server
    server.stop()


def run_pytest(folder, *args, env=None):
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("MOCKSERVER_", "PYTEST_"))}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(folder), *args]
    return subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=240,
                          env={**clean, **(env or {})})


def unused_lines(output):
    return [line for line in output.splitlines() if "never fired in any test's sandbox" in line]


@pytest.mark.server
@pytest.mark.parametrize("mode", ["warn", "fail", "off"])
def test_the_rules_a_suite_never_fired_are_listed_and_fail_it_when_asked(tmp_path, mock, mode):
    (tmp_path / "test_suite.py").write_text(textwrap.dedent(SUITE))
    result = run_pytest(tmp_path, "-p", "no:xdist", "test_suite.py", "--mockserver-url", mock.url,
                        "--mockserver-sandbox-prefix", f"usage-{mode}", "--mockserver-unused-rules", mode)
    output = result.stdout + result.stderr
    assert "2 passed" in output, output[-3000:]
    if mode == "off":
        assert result.returncode == 0 and unused_lines(output) == [], output[-3000:]
        return
    assert "mockserver: 1 scenario rule(s) never fired" in output, output[-3000:]
    assert unused_lines(output) == ["flaky/never-used: loaded, never fired in any test's sandbox"]
    if mode == "warn":
        assert result.returncode == 0, output[-3000:]
    else:
        assert result.returncode == 1 and "the session fails (--mockserver-unused-rules fail)" in output


@pytest.mark.server
def test_under_xdist_a_rule_fired_on_either_worker_is_not_listed(tmp_path, mock):
    (tmp_path / "test_suite.py").write_text(textwrap.dedent(SUITE))
    result = run_pytest(tmp_path, "-n", "2", "-p", "xdist", "test_suite.py", "--mockserver-url", mock.url,
                        "--mockserver-sandbox-prefix", "usage-xdist", env={"MOCKSERVER_UNUSED_RULES": "fail"})
    output = result.stdout + result.stderr
    assert "2 passed" in output, output[-3000:]
    assert unused_lines(output) == ["flaky/never-used: loaded, never fired in any test's sandbox"], output[-3000:]
    assert result.returncode == 1
