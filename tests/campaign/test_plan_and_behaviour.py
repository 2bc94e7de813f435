"""The parts of a fault campaign that need no run: the plan from a baseline's calls, the faults' rules, the rules of
behaviour read from a run's calls, the expectations file and the verdicts, and the shards of a plan."""

import pytest

from mockserver.campaign import behaviour, plan
from mockserver.campaign.expectations import ExpectationsError, load, verdict
from mockserver.campaign.faults import Fault, action_of, rule
from mockserver.world.scenarios import Scenarios

PROJECTS = "/organization/8d3e6a4b-1f2c-4b7a-9e1d-3c5f7a9b2d10/project"


def call(sandbox, ident, operation, status=200, method="GET", path="/x", received=0.0, duration_ms=5.0, body=None,
         rule_name=None, headers=None):
    return {"sandbox": sandbox, "id": ident, "operation": operation, "status": status, "method": method,
            "path": path, "received": received, "received_at": f"t{received}", "duration_ms": duration_ms,
            "body": body, "scenario_rule": rule_name, "response_headers": headers or {}}


BASELINE = [call("t-a", 1, "getOrganization"), call("t-a", 2, "createProject", 201, "POST", PROJECTS),
            call("t-a", 3, "getApplicationStatus"), call("t-a", 4, "getApplicationStatus"),
            call("t-b", 1, "deployApplication", 202, "POST", "/application/a/deploy"),
            call("t-b", 2, "getApplicationStatus")]


def test_the_plan_has_every_fitting_fault_of_each_operation_called_and_says_what_it_left_out(spec):
    made = plan.make(BASELINE, spec)
    assert made.called == {"getOrganization": 1, "createProject": 1, "getApplicationStatus": 2,
                           "deployApplication": 1}
    assert made.sequences["t-a"] == ["getOrganization", "createProject", "getApplicationStatus",
                                     "getApplicationStatus"]
    keys = {fault.key for fault in made.faults}
    assert "createProject: status 409 @1" in keys and "getApplicationStatus: status 409 @1" not in keys
    assert "deployApplication: deployment failed @1" in keys and "createProject: deployment failed @1" not in keys
    assert not any("delay" in key for key in keys)                     # no --client-timeout
    skipped = dict(made.skipped)
    assert "no --client-timeout" in skipped["createProject: delay"]
    assert "lists no 409" in skipped["getApplicationStatus: status 409"]
    assert {fault.operation for fault in made.faults} == set(made.called)
    assert "deleteProject" in plan.never_called(spec, made)


def test_later_calls_and_filters_of_the_plan(spec):
    made = plan.make(BASELINE, spec, at=plan.parse_at("all"), client_timeout=2, operations={"getApplicationStatus"},
                     faults=("status 503", "delay"))
    assert sorted(fault.key for fault in made.faults) == [
        "getApplicationStatus: delay @1", "getApplicationStatus: delay @2",
        "getApplicationStatus: status 503 @1", "getApplicationStatus: status 503 @2"]
    assert plan.make(BASELINE, spec, at=(3,), operations={"getApplicationStatus"}).faults == []


def test_shards_are_disjoint_and_together_the_plan(spec):
    faults = plan.make(BASELINE, spec).faults
    parts = [plan.shard(faults, index, 3) for index in (1, 2, 3)]
    assert sorted(f.key for part in parts for f in part) == sorted(f.key for f in faults)
    assert plan.shard(faults, 2, 3) == plan.shard(list(reversed(faults)), 2, 3)      # the same whatever the order
    with pytest.raises(ValueError):
        plan.parse_shard("4/3")


@pytest.mark.parametrize("fault", [Fault("createProject", "status 503"), Fault("createProject", "outage 503"),
                                   Fault("createProject", "reset", 2), Fault("createProject", "delay"),
                                   Fault("deployApplication", "deployment stalled")])
def test_every_faults_rule_is_a_scenario_the_mock_takes(spec, fault):
    name, raw = Scenarios(spec).parse(__import__("json").dumps(rule(fault, client_timeout=1.5)), "campaign")
    [entry] = raw["rules"]
    assert name == "campaign" and entry["match"]["operation"] == fault.operation
    if fault.name == "delay":
        assert entry["effect"]["latency_ms"] == 2500 and entry["phase"] == "after_handler"
    if fault.name == "status 503":
        assert entry["effect"]["retry_after"] == 1 and entry["match"]["nth"] == 1
    assert action_of("restartContainer") == "restart" and action_of("createProject") is None


def test_a_retry_sooner_than_retry_after_is_found_and_one_that_waits_is_not():
    faulted = call("t", 1, "getApplicationStatus", 503, received=10.0, duration_ms=10, rule_name="campaign/x",
                   headers={"retry-after": "1"})
    early = call("t", 2, "getApplicationStatus", 200, received=10.3)
    [found] = behaviour.findings([faulted, early], "status 503")
    assert found.rule == behaviour.RETRY_AFTER and [c["id"] for c in found.calls] == [1, 2]
    patient = call("t", 2, "getApplicationStatus", 200, received=11.05)
    assert behaviour.findings([faulted, patient], "status 503") == []


def test_a_write_repeated_after_a_reply_it_lost_is_a_duplicate_or_its_own_409():
    body = {"name": "shop"}
    lost = call("t", 1, "createProject", 201, "POST", PROJECTS, 5.0, body=body, rule_name="campaign/x")
    for status, rule_name in ((201, behaviour.DUPLICATE), (409, behaviour.OWN_CONFLICT)):
        again = call("t", 2, "createProject", status, "POST", PROJECTS, 6.0, body=body)
        [found] = behaviour.findings([lost, again], "reset")
        assert found.rule == rule_name
    other = call("t", 2, "createProject", 201, "POST", PROJECTS, 6.0, body={"name": "other"})
    check = call("t", 2, "listProjects", 200, "GET", PROJECTS, 6.0)
    assert behaviour.findings([lost, other, check], "reset") == []          # another write, or a look first
    assert behaviour.findings([lost, call("t", 2, "createProject", 409, "POST", PROJECTS, 6.0, body=body)],
                              "status 503") == []                           # a refused write was not made


def test_a_storm_of_calls_after_the_fault_is_found_and_a_few_retries_are_not():
    first = call("t", 1, "getApplicationStatus", 503, received=1.0, rule_name="campaign/x")
    storm = [call("t", n, "getApplicationStatus", 503, received=1.0 + n * 0.01) for n in range(2, 14)]
    assert [f.rule for f in behaviour.findings([first, *storm], "outage 503")] == [behaviour.STORM]
    few = [call("t", n, "getApplicationStatus", 200, received=1.0 + n) for n in range(2, 5)]
    assert behaviour.findings([first, *few], "outage 503") == []


def test_the_expectations_file_names_every_problem_at_its_line(tmp_path, spec):
    path = tmp_path / "expect.yaml"
    path.write_text("accept:\n"
                    "  - operation: createProjct\n"
                    "    fault: status 409\n"
                    "    because: conflict\n"
                    "  - operation: createProject\n"
                    "    outcom: failed\n"
                    "    because: x\n"
                    "  - operation: getApplicationStatus\n"
                    "    outcome: misbehave\n"
                    "    because: y\n")
    with pytest.raises(ExpectationsError) as refused:
        load(str(path), list(spec.operations))
    lines = refused.value.lines()
    assert any(":2:" in line and "did you mean 'createProject'" in line for line in lines), lines
    assert any(":6:" in line and "did you mean 'outcome'" in line for line in lines), lines
    assert any(":9:" in line and "did you mean 'misbehaved'" in line for line in lines), lines


def test_an_accepted_outcome_is_expected_and_anything_else_that_failed_is_not(tmp_path, spec):
    path = tmp_path / "expect.yaml"
    path.write_text("accept:\n  - operation: create*\n    fault: status 4*\n    because: refused as designed\n"
                    "  - operation: getApplicationStatus\n    outcome: misbehaved\n    rule: storm\n"
                    "    because: known\n")
    entries = load(str(path), list(spec.operations))
    assert verdict(entries, Fault("createProject", "status 409"), "failed", [])[0] is True
    assert verdict(entries, Fault("createProject", "status 503"), "failed", [])[0] is False
    assert verdict(entries, Fault("getApplicationStatus", "outage 503"), "misbehaved", ["storm"])[0] is True
    assert verdict(entries, Fault("getApplicationStatus", "outage 503"), "misbehaved", ["retry-after"])[0] is False
    assert verdict(entries, Fault("deleteProject", "reset"), "survived", [])[0] is True


def test_the_table_marks_the_unexpected_and_names_failing_tests_short():
    from mockserver.campaign.report import Result, table
    failed = Result(Fault("createProject", "status 500", 1), "failed", expected=False,
                    failed_tests=[f"tests/test_p.py::test_{n}" for n in "abcde"])
    survived = Result(Fault("listProjects", "reset", 1), "survived", expected=True)
    lines = table([survived, failed])
    assert lines[0].startswith("! createProject: status 500 @1") and "test_a, test_b, test_c and 2 more" in lines[0]
    assert "tests/test_p.py" not in lines[0]
    assert lines[1].startswith("  listProjects: reset @1") and lines[1].split()[-1] == "ok"


def test_coverage_counts_the_failures_a_correct_request_may_meet_and_lists_the_clients_own_apart(spec):
    from mockserver.campaign.report import Result, coverage
    results = [Result(Fault("createProject", "status 503", 1), "survived"),
               Result(Fault("createProject", "status 500", 1), "failed"),
               Result(Fault("createProject", "reset", 1), "survived")]
    got = coverage(spec, {"createProject"}, results)
    project = got["operations"]["createProject"]
    assert project["survived"] == [503]                        # a failed run or a network fault counts for nothing
    assert 400 in project["own_mistakes"] and 400 not in project["documented"]
    assert {409, 500, 503} <= set(project["documented"])
    assert got["survived"] == 1 and got["documented"] == len(project["documented"])


def test_a_failing_node_test_is_named_by_itself_not_by_the_suite_around_it():
    """node:test's TAP reporter indents a suite's tests and fails the suite too ('subtestsFailed'): the report names
    the test that failed."""
    from mockserver.campaign.runs import failed_tests
    tap = ["TAP version 13", "# Subtest: ProjectsClient against the mock",
           "    # Subtest: a new project is listed", "    ok 1 - a new project is listed", "      ---",
           "      duration_ms: 19.1", "      ...",
           "    # Subtest: a project renamed is listed under its new name",
           "    not ok 2 - a project renamed is listed under its new name", "      ---",
           "      failureType: 'testCodeFailure'", "      error: 'rename: 503'", "      ...", "    1..2",
           "not ok 1 - ProjectsClient against the mock", "  ---", "  type: 'suite'",
           "  failureType: 'subtestsFailed'", "  error: '1 subtest failed'", "  ...", "1..1"]
    assert failed_tests(tap) == ["a project renamed is listed under its new name"]
    assert failed_tests(["not ok 3 - a flat test", "  ---", "  failureType: 'testCodeFailure'", "  ..."]) == \
        ["a flat test"]
    assert failed_tests(["FAILED tests/test_a.py::test_b - AssertionError", "--- FAIL: TestC (0.00s)"]) == \
        ["tests/test_a.py::test_b", "TestC"]
