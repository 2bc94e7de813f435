"""Every problem of a scenario file at once: one `mockserver check` run (and one PUT of the control API) names
each mistake at its line and column, with what was probably meant; a misspelled key is reported at that key.
Rules that load but can never act are warnings naming both rules, and `check` still exits 0 for them."""

import pytest
from starlette.testclient import TestClient
from support.cli import run
from support.http import assert_error
from support.ids import ADMIN

# one file, many kinds of mistake; the comment of each line names what is wrong on it
MISTAKES = """\
name: many-mistakes
rules:
  - name: misspelled-effect
    match: {operation: getApplicationStatus}
    efect: {status: 500}
  - name: misspelled-match-key
    match: {operaton: getApplicationStatus}
    effect: {status: 500}
  - name: near-operation
    match: {operation: getApplicationStatu, method: GETT}
    effect: {status: 503}
  - name: near-path-and-kind
    match: {path: /aplication/*/status, service: {kind: APPLICATON}}
    effect: {status: 500}
  - name: near-token
    match: {token: admn, first: 1, nth: 2}
    effect: {status: "500"}
  - name: near-step
    match: {method: POST}
    effect: {deployment: {durations: {BUILDD: 30}}}
  - name: misspelled-effect
    until: soon
    effect: {status: 500}
  - name: token-before-auth
    phase: before_auth
    match: {token: admin}
    effect: {status: 503}
"""
# (line:column, words of the problem) of each mistake, in the order check prints them
EXPECTED = [
    ("5:5", "rules.0.efect: unknown key 'efect' (did you mean 'effect'?)"),
    ("7:13", "rules.1.match.operaton: unknown key 'operaton' (did you mean 'operation'?)"),
    ("10:13", "rules.2.match.operation: unknown operation 'getApplicationStatu' (did you mean "
              "'getApplicationStatus'?)"),
    ("10:53", "rules.2.match.method: 'GETT' is not one of GET, POST, PUT, DELETE, PATCH (did you mean 'GET'?)"),
    ("13:13", "rules.3.match.path: '/aplication/*/status' matches no documented route (did you mean "
              "/application/{app_id}/status"),
    ("13:57", "rules.3.match.service.kind: 'APPLICATON' is not one of APPLICATION, CONTAINER, DATABASE, JOB, HELM, "
              "TERRAFORM, CLUSTER (did you mean 'APPLICATION'?)"),
    ("16:13", "rules.4.match.token: no token of the fixtures is named or valued 'admn' (did you mean 'admin'?)"),
    ("16:26", "rules.4.match.first: nth and first together"),
    ("17:22", "rules.4.effect.status: '500' is not of type 'integer'"),
    ("20:39", "rules.5.effect.deployment.durations.BUILDD: unknown key 'BUILDD' (did you mean 'BUILD'?)"),
    ("21:5", "rules.6.name: 'misspelled-effect' also names rule 0 (rules.0)"),
    ("22:5", "rules.6.until: 'soon' is not an ISO 8601 time or Unix seconds"),
    ("26:13", "rules.7.match.token: a before_auth rule is tried before authentication: no token is known yet"),
]

WARNED = """\
name: never-acting
rules:
  - name: all-status-reads
    match: {path: /application/*/status}
    effect: {status: 503}
  - name: status-with-header
    match: {operation: getApplicationStatus, headers: {x-trace: abc}}
    effect: {status: 500}
  - name: deploy-effect-on-a-read
    match: {operation: getOrganization, nth: 2}
    effect: {deployment: {fail_at: BUILD}}
  - name: only-some-status-reads
    match: {operation: getApplicationStatus, every: 2}
    effect: {status: 500}
"""


@pytest.fixture
def http(make_server):
    with TestClient(make_server(), base_url="http://mock", headers=ADMIN) as client:
        yield client


def test_one_check_run_names_every_mistake_at_its_line_and_column(tmp_path):
    path = tmp_path / "many.yaml"
    path.write_text(MISTAKES)
    result = run("check", "--scenario", str(path))
    assert result.returncode == 1, result.stderr
    printed = [line.removeprefix("mockserver check: scenario: ") for line in result.stderr.splitlines()
               if line.startswith("mockserver check: scenario: ")]
    assert len(printed) == len(EXPECTED), result.stderr
    for line, (place, words) in zip(printed, EXPECTED, strict=True):
        assert line.startswith(f"{path}:{place}: "), (line, place)
        assert words in line, (line, words)
    assert "'effect' is a required property" not in result.stderr           # the misspelled key says it all
    assert f"mockserver check: {len(EXPECTED)} problem(s)" in result.stderr
    assert "Traceback" not in result.stderr


def test_files_given_as_arguments_are_checked_together_with_a_fixtures_folder(tmp_path):
    from support import ROOT
    many, missing = tmp_path / "many.yaml", tmp_path / "missing.yaml"
    many.write_text(MISTAKES)
    missing.write_text("name: missing\nrules:\n  - match: {operation: getOrganisation}\n    effect: {status: 503}\n")
    result = run("check", str(ROOT / "fixtures"), str(many), str(missing))
    assert result.returncode == 1, result.stderr
    assert f"mockserver check: {len(EXPECTED) + 1} problem(s)" in result.stderr
    assert f"{missing}:3:13: " in result.stderr and "did you mean 'getOrganization'" in result.stderr
    two = run("check", str(ROOT / "fixtures"), str(tmp_path))
    assert two.returncode == 2 and "give one fixtures folder" in two.stderr


def test_a_missing_effect_that_no_key_is_near_is_named_as_missing(tmp_path):
    path = tmp_path / "missing.yaml"
    path.write_text("name: missing\nrules:\n  - match: {operation: getOrganization}\n    colour: red\n")
    result = run("check", "--scenario", str(path))
    assert result.returncode == 1
    assert f"{path}:4:5: rules.0.colour: unknown key 'colour' (expected one of name, match, phase," in result.stderr
    assert f"{path}:3:5: rules.0: 'effect' is a required property" in result.stderr


def test_a_put_answers_400_with_every_problem_in_details(http):
    reply = http.put("/_mock/scenarios/many-mistakes", content=MISTAKES, headers={"Content-Type": "application/yaml"})
    body = assert_error(reply, 400)
    details = body["details"]
    assert [d["location"] for d in details] == [
        "line {}, column {}".format(*place.split(":")) for place, _ in EXPECTED]
    for detail, (_, words) in zip(details, EXPECTED, strict=True):
        assert words in detail["message"]
    assert http.get("/_mock/scenarios/many-mistakes").status_code == 404             # nothing of it activated


def test_rules_that_can_never_act_are_warnings_naming_both_rules(tmp_path, http):
    path = tmp_path / "warned.yaml"
    path.write_text(WARNED)
    result = run("check", "--scenario", str(path))
    assert result.returncode == 0, result.stderr                       # warnings: check still passes
    assert "3 warning(s)" in result.stdout
    assert (f"{path}:6:5: warning: rules.1: rule 'status-with-header' never fires: rule 'all-status-reads' "
            "(rules.0, line 3) is tried before it") in result.stderr
    assert (f"{path}:11:14: warning: rules.2: rule 'deploy-effect-on-a-read' never acts: a deployment effect on "
            "reads only (getOrganization)") in result.stderr
    assert (f"{path}:12:5: warning: rules.3: rule 'only-some-status-reads' never fires: rule 'all-status-reads'"
            in result.stderr)
    reply = http.put("/_mock/scenarios/never-acting", content=WARNED, headers={"Content-Type": "application/yaml"})
    assert reply.status_code == 200
    assert len(reply.json()["warnings"]) == 3


def test_a_rule_that_lets_calls_through_shadows_nothing(http):
    doc = ("name: fine\nrules:\n  - match: {operation: getApplicationStatus, every: 2}\n    effect: {status: 500}\n"
           "  - match: {operation: getApplicationStatus}\n    times: 3\n    effect: {status: 503}\n"
           "  - match: {path: /application/*/status}\n    effect: {status: 502}\n"
           "  - phase: after_handler\n    match: {operation: createProject}\n    effect: {status: 502}\n")
    reply = http.put("/_mock/scenarios/fine", content=doc, headers={"Content-Type": "application/yaml"})
    assert reply.status_code == 200 and reply.json()["warnings"] == []


def test_a_rule_of_a_file_loaded_before_shadows_a_rule_of_the_next(tmp_path):
    first, second = tmp_path / "first.yaml", tmp_path / "second.yaml"
    first.write_text("name: outage\nrules:\n  - name: org-down\n    match: {operation: getOrganization}\n"
                     "    effect: {status: 503}\n")
    second.write_text("name: flaky\nrules:\n  - name: org-500\n    match: {operation: getOrganization}\n"
                      "    effect: {status: 500}\n")
    result = run("check", "--scenario", str(first), "--scenario", str(second))
    assert result.returncode == 0, result.stderr
    assert (f"{second}:3: warning: rule 'flaky/org-500' never fires: rule 'outage/org-down' ({first}:3) is tried "
            "before it") in result.stderr
    reversed_order = run("check", "--scenario", str(second), "--scenario", str(first)).stderr
    assert "rule 'outage/org-down' never fires: rule 'flaky/org-500'" in reversed_order
