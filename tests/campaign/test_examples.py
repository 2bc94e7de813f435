"""Fault campaigns over the examples' suites, one per language (a small plan: three operations, two faults): each
example client has a robust path the campaign must report survived, a planted bug it must report failed, and a
misbehaviour it must report (a POST sent again after a reset meets the 409 its first write caused). The Node and
Go suites run where their toolchains are installed (clients/node/ci.sh and clients/go/ci.sh install them; CI runs
those first), and say why they are skipped otherwise."""

import json
import os
import shutil
import subprocess
import sys

import pytest
from support import ROOT

pytestmark = pytest.mark.server

PLAN = ["--operation", "createProject", "--operation", "listProjects", "--operation", "editProject",
        "--fault", "status 503", "--fault", "reset"]
WANTED = {"listProjects: status 503 @1": "survived", "listProjects: reset @1": "survived",
          "createProject: status 503 @1": "survived", "editProject: status 503 @1": "failed",
          "createProject: reset @1": "misbehaved"}


def campaign(tmp_path, command, cwd=ROOT, expect=None):
    report = tmp_path / "campaign.json"
    junit = tmp_path / "campaign.xml"
    argv = [sys.executable, "-m", "mockserver", "campaign", "--jobs", "2", *PLAN, "--json", str(report),
            "--junit", str(junit), *(["--expect", str(expect)] if expect else []), "--", *command]
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=900,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert report.exists(), done.stderr[-3000:]
    return done, json.loads(report.read_text()), junit.read_text()


def check(done, report, junit):
    outcomes = {result["key"]: result for result in report["results"]}
    assert {key: outcomes[key]["outcome"] for key in WANTED} == WANTED, done.stderr[-3000:]
    [finding] = {f["rule"] for f in outcomes["createProject: reset @1"]["findings"]}
    assert finding == "repeated a write that may have been made, and met the 409 it caused itself"
    calls = outcomes["createProject: reset @1"]["findings"][0]["calls"]
    assert [call["status"] for call in calls] == [201, 409] and all(call["received_at"] for call in calls)
    assert "rename" in " ".join(outcomes["editProject: status 503 @1"]["failed_tests"]).lower() or \
        outcomes["editProject: status 503 @1"]["tail"]
    assert done.returncode == 1                                   # unexpected outcomes: CI would fail
    assert junit.count("<testcase") == len(report["results"]) and junit.count("<failure") == \
        report["summary"]["unexpected"]
    coverage = report["coverage"]["operations"]["listProjects"]
    assert 503 in coverage["survived"] and 503 in coverage["documented"]


def test_a_campaign_over_the_python_example_finds_its_bug_and_its_misbehaviour(tmp_path):
    done, report, junit = campaign(tmp_path, [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                              "examples/python/test_projects.py"])
    check(done, report, junit)


def test_an_expectations_file_accepts_what_the_team_knows_and_the_campaign_passes(tmp_path):
    expect = tmp_path / "expect.yaml"
    expect.write_text("accept:\n"
                      "  - operation: editProject\n    because: renames are not retried yet (known)\n"
                      "  - operation: createProject\n    fault: reset\n    outcome: misbehaved\n    rule: own-409\n"
                      "    because: tracked in the client's backlog\n")
    done, report, _ = campaign(tmp_path, [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                          "examples/python/test_projects.py"], expect=expect)
    assert done.returncode == 0, done.stderr[-3000:]
    assert report["summary"]["unexpected"] == 0
    accepted = {r["key"]: r["accepted_by"] for r in report["results"] if r["accepted_by"]}
    assert accepted["createProject: reset @1"] == "tracked in the client's backlog"


def test_a_campaign_over_the_node_example_finds_its_bug_and_its_misbehaviour(tmp_path):
    example = ROOT / "examples" / "node"
    if shutil.which("node") is None or not (example / "node_modules" / "idp-mockserver-client").exists():
        pytest.skip("Node.js and the example's packages are not installed (clients/node/ci.sh installs them)")
    check(*campaign(tmp_path, ["node", "--test", "--test-reporter=tap", "test/projects.test.js"], cwd=example))


def test_a_campaign_over_the_go_example_finds_its_bug_and_its_misbehaviour(tmp_path):
    if shutil.which("go") is None:
        pytest.skip("Go is not installed (clients/go/ci.sh installs Debian's golang)")
    check(*campaign(tmp_path, ["go", "test", "-count=1", "./projects"], cwd=ROOT / "examples" / "go"))
