"""Deployments that progress by status reads instead of by time (a scenario's `deployment.reads` or
`reads_per_step`, or the sandbox option `poll_progress`): client flows that deploy and poll with
the clock never moved, for every action, with the queue, history, webhooks and the timeline."""

import contextlib

import httpx
import pytest
from starlette.testclient import TestClient
from support.ids import ADMIN, APP, CLUSTER, CONTAINER, DATABASE, ENV, ORG

UNREACHABLE_HOOK = "http://127.0.0.1:9/hooks/deployments"


@pytest.fixture
def mock(make_server):
    with contextlib.ExitStack() as stack:
        def start(**overrides):
            return stack.enter_context(TestClient(make_server(**overrides), base_url="http://mock", headers=ADMIN))
        yield start


def scenario(http, deployment, match, name="polls"):
    doc = {"name": name, "rules": [{"name": "by-reads", "match": match, "effect": {"deployment": deployment}}]}
    reply = http.put(f"/_mock/scenarios/{name}", json=doc)
    assert reply.status_code == 200, reply.text


def clock(http):
    return http.get("/_mock/clock").json()["epoch"]


def poll(http, path, until, limit=50, field="state"):
    """Read a status until it is in `until`; the list of states read (the last one is in `until`)."""
    seen = []
    for _ in range(limit):
        seen.append(http.get(path).json()[field])
        if seen[-1] in until:
            return seen
    raise AssertionError(f"never reached {until}: {seen}")


def test_a_deploy_ends_deployed_on_exactly_the_third_read_with_the_clock_still(mock):
    http = mock()
    scenario(http, {"reads": 3}, {"operation": "deployApplication"})
    before = clock(http)
    reply = http.post(f"/application/{APP}/deploy", json={})
    assert reply.status_code == 202 and reply.headers["x-mock-rule"] == "polls/by-reads"
    states = poll(http, f"/application/{APP}/status", {"DEPLOYED", "BUILD_ERROR", "DEPLOYMENT_ERROR"})
    assert len(states) == 3 and states[-1] == "DEPLOYED"
    assert states[:2] == ["BUILDING", "DEPLOYING"]           # 8 positions spread over 3 reads
    assert clock(http) == before
    status = http.get(f"/application/{APP}/status").json()
    assert status["state"] == "DEPLOYED" and status["service_deployment_status"] == "UP_TO_DATE"
    assert [s["status"] for s in status["steps"]["details"]] == ["SUCCESS"] * 7


def test_a_failing_deploy_ends_in_its_error_on_exactly_the_nth_read(mock):
    http = mock()
    scenario(http, {"reads": 4, "fail_at": "BUILD"}, {"operation": "deployApplication"})
    before = clock(http)
    http.post(f"/application/{APP}/deploy", json={})
    states = poll(http, f"/application/{APP}/status", {"DEPLOYED", "BUILD_ERROR"})
    assert len(states) == 4 and states[-1] == "BUILD_ERROR"
    assert set(states[:-1]) <= {"DEPLOYMENT_QUEUED", "BUILDING"}
    details = http.get(f"/application/{APP}/status").json()["steps"]["details"]
    assert details[-1] == {"step_name": "BUILD", "status": "ERROR", "duration_sec": 2}
    assert clock(http) == before


def test_one_step_per_read_walks_every_step_in_order(mock):
    http = mock()
    scenario(http, {"reads_per_step": 1}, {"operation": "deployContainer"})
    http.post(f"/container/{CONTAINER}/deploy")
    path = f"/container/{CONTAINER}/status"
    seen = [http.get(path).json() for _ in range(5)]
    assert [s["state"] for s in seen] == ["DEPLOYING"] * 4 + ["DEPLOYED"]
    assert [len(s["steps"]["details"]) for s in seen] == [0, 1, 2, 3, 4]   # MIRROR_IMAGE + 3 roll-out steps


def test_reads_per_step_two_needs_two_reads_a_step(mock):
    http = mock()
    scenario(http, {"reads_per_step": 2}, {"operation": "stopDatabase"})
    http.post(f"/database/{DATABASE}/deploy")
    http.post("/_mock/clock/advance", json={"seconds": 60})
    assert http.get(f"/database/{DATABASE}/status").json()["state"] == "DEPLOYED"
    assert http.post(f"/database/{DATABASE}/stop").status_code == 202
    states = poll(http, f"/database/{DATABASE}/status", {"STOPPED"})
    assert states == ["STOP_QUEUED", "STOPPING", "STOPPING", "STOPPED"]   # 2 positions x 2 reads


def test_other_reads_and_time_do_not_move_it(mock):
    http = mock()
    scenario(http, {"reads": 2}, {"operation": "deployApplication"})
    http.post(f"/application/{APP}/deploy", json={})
    http.post("/_mock/clock/advance", json={"seconds": 3600})
    for _ in range(3):                                        # the queue, history and environment views only look
        http.get(f"/environment/{ENV}/deploymentQueue")
        http.get(f"/application/{APP}/deploymentHistory")
        http.get(f"/environment/{ENV}/status")
    queue = http.get(f"/environment/{ENV}/deploymentQueue").json()["results"]
    assert [item["stages"][0]["services"][0]["status"] for item in queue] == ["DEPLOYMENT_QUEUED"]
    assert http.get(f"/application/{APP}/status").json()["state"] != "DEPLOYED"
    assert http.get(f"/application/{APP}/status").json()["state"] == "DEPLOYED"
    assert http.get(f"/environment/{ENV}/deploymentQueue").json()["results"] == []
    history = http.get(f"/application/{APP}/deploymentHistory").json()["results"]
    assert history[0]["status"] == "DEPLOYED"


def test_webhooks_fire_at_the_reads_that_start_and_end_it(mock):
    http = mock()
    scenario(http, {"reads": 2}, {"operation": "deployApplication"})
    http.post(f"/organization/{ORG}/webhook", json={"target_url": UNREACHABLE_HOOK,
                                                    "events": ["DEPLOYMENT_STARTED", "DEPLOYMENT_SUCCEEDED"]})
    http.post(f"/application/{APP}/deploy", json={})
    events = lambda: [d["event_type"] for d in http.get("/_mock/webhooks/deliveries").json()["results"]]  # noqa: E731
    assert events() == []
    http.get(f"/application/{APP}/status")
    assert events() == ["DEPLOYMENT_STARTED"]
    http.get(f"/application/{APP}/status")
    assert sorted(events()) == ["DEPLOYMENT_STARTED", "DEPLOYMENT_SUCCEEDED"]


def test_a_request_queued_behind_waits_then_runs_on_the_clock(mock):
    http = mock()
    scenario(http, {"reads": 2}, {"operation": "deployApplication"})
    http.post(f"/application/{APP}/deploy", json={})
    assert http.post(f"/container/{CONTAINER}/deploy").status_code == 202     # same environment: queued behind
    http.post("/_mock/clock/advance", json={"seconds": 600})
    assert http.get(f"/container/{CONTAINER}/status").json()["state"] == "DEPLOYMENT_QUEUED"
    poll(http, f"/application/{APP}/status", {"DEPLOYED"})
    http.post("/_mock/clock/advance", json={"seconds": 60})
    assert http.get(f"/container/{CONTAINER}/status").json()["state"] == "DEPLOYED"


@pytest.mark.parametrize("action, first, done", [
    ("restart", "RESTART_QUEUED", "RESTARTED"), ("stop", "STOP_QUEUED", "STOPPED"), ("redeploy", None, "DEPLOYED")])
def test_every_service_action_moves_by_reads(mock, action, first, done):
    http = mock()
    http.post(f"/application/{APP}/deploy", json={})
    http.post("/_mock/clock/advance", json={"seconds": 60})
    scenario(http, {"reads": 3}, {"method": "POST", "path": f"/application/*/{action}"})
    assert http.post(f"/application/{APP}/{action}", json={}).status_code in (200, 202)
    states = poll(http, f"/application/{APP}/status", {done})
    assert len(states) == 3


def test_uninstall_moves_by_reads(mock):
    http = mock()
    scenario(http, {"reads": 2}, {"operation": "uninstallDatabase"})
    http.post(f"/database/{DATABASE}/deploy")
    http.post("/_mock/clock/advance", json={"seconds": 60})
    assert http.post(f"/database/{DATABASE}/uninstall", json={}).status_code in (200, 202)
    assert poll(http, f"/database/{DATABASE}/status", {"DELETED"}) == ["DELETING", "DELETED"]


def test_cluster_upgrade_moves_by_status_reads(mock):
    http = mock()
    scenario(http, {"reads_per_step": 1}, {"operation": "upgradeCluster"})
    version = http.get(f"/cluster/{CLUSTER}").json()["version"]
    assert http.post(f"/cluster/{CLUSTER}/upgrade").status_code in (200, 202)
    states = poll(http, f"/cluster/{CLUSTER}/status", {"DEPLOYED"}, field="status")
    assert states == ["DEPLOYING", "DEPLOYING", "DEPLOYED"]
    assert http.get(f"/cluster/{CLUSTER}").json()["version"] != version


def test_match_service_by_kind_and_name_glob(mock):
    http = mock()
    name = http.get(f"/container/{CONTAINER}").json()["name"]
    scenario(http, {"reads": 1}, {"method": "POST", "service": {"kind": "CONTAINER", "name": name[:2] + "*"}})
    http.post(f"/application/{APP}/deploy", json={})            # not selected: by time
    http.post(f"/container/{CONTAINER}/deploy")
    assert http.get(f"/application/{APP}/status").json()["state"] == "DEPLOYMENT_QUEUED"
    assert http.get(f"/container/{CONTAINER}/status").json()["state"] == "DEPLOYMENT_QUEUED"   # behind the app
    http.post("/_mock/clock/advance", json={"seconds": 60})
    assert http.get(f"/application/{APP}/status").json()["state"] == "DEPLOYED"
    assert http.get(f"/container/{CONTAINER}/status").json()["state"] == "DEPLOYED"             # its one read
    calls = http.get("/_mock/calls", params={"scenario": "polls"}).json()["results"]
    assert [c["operation"] for c in calls] == ["deployContainer"]


@pytest.mark.server
def test_sandbox_option_poll_progress_over_http(live_server):
    server = live_server("--clock", "manual")
    with httpx.Client(base_url=server.url, headers=ADMIN, timeout=10) as http:
        created = http.put("/_mock/sandboxes/polls", json={"poll_progress": {
            "reads": 3, "services": {"kind": "APPLICATION"}, "actions": ["DEPLOY"], "fail_at": "DEPLOYMENT"}})
        assert created.status_code in (200, 201), created.text
        box = "/sandbox/polls"
        before = http.get(f"{box}/_mock/clock").json()["epoch"]
        assert http.post(f"{box}/application/{APP}/deploy", json={}).status_code == 202
        states = [http.get(f"{box}/application/{APP}/status").json()["state"] for _ in range(3)]
        assert states[-1] == "DEPLOYMENT_ERROR" and "DEPLOYMENT_ERROR" not in states[:2]
        assert http.get(f"{box}/_mock/clock").json()["epoch"] == before
        assert http.get(f"/application/{APP}/status").json()["state"] != "DEPLOYMENT_ERROR"   # other worlds: as usual
        refused = http.put("/_mock/sandboxes/bad", json={"poll_progress": {"reads": 2, "reads_per_step": 1}})
        assert refused.status_code == 400 and "reads and reads_per_step" in refused.json()["message"]


def test_the_inspector_timeline_places_steps_at_the_reads_that_reached_them(mock):
    http = mock()
    scenario(http, {"reads_per_step": 1}, {"operation": "deployContainer"})
    http.post(f"/container/{CONTAINER}/deploy")

    def request():
        groups = http.get("/_mock/deployments").json()["results"]
        return max((r for g in groups for r in g["requests"] if r["target_id"] == CONTAINER),
                   key=lambda r: r["number"])
    assert [s["status"] for s in request()["steps"]] == ["PENDING"] * 4 and request()["start_at"] is None
    http.get(f"/container/{CONTAINER}/status")
    http.post("/_mock/clock/advance", json={"seconds": 5})
    http.get(f"/container/{CONTAINER}/status")
    shown = request()
    assert [s["status"] for s in shown["steps"]] == ["SUCCESS", "ONGOING", "PENDING", "PENDING"]
    first, second = shown["steps"][:2]
    assert first["end"] == second["start"] and first["start"] == shown["start_at"] != first["end"]
    for _ in range(3):
        http.get(f"/container/{CONTAINER}/status")
    shown = request()
    assert shown["outcome"] == "DEPLOYED" and not shown["in_queue"]
    assert [s["status"] for s in shown["steps"]] == ["SUCCESS"] * 4


@pytest.mark.server
def test_a_failure_at_a_step_an_action_has_not_got_leaves_that_action_to_its_plan(live_server):
    """`poll_progress` with `fail_at: BUILD` for every action: the git deploy fails at its build; a
    container (an image: no build) deploys, and a stop (no build either) stops, both by reads, where they
    were refused with a 400 before."""
    server = live_server("--clock", "manual")
    with httpx.Client(base_url=server.url, headers=ADMIN, timeout=10) as http:
        created = http.put("/_mock/sandboxes/fails", json={"poll_progress": {
            "reads_per_step": 1, "fail_at": "BUILD", "state": "BUILD_ERROR"}})
        assert created.status_code in (200, 201), created.text
        box = "/sandbox/fails"
        assert http.post(f"{box}/application/{APP}/deploy", json={}).status_code == 202
        assert poll(http, f"{box}/application/{APP}/status", {"DEPLOYED", "BUILD_ERROR"})[-1] == "BUILD_ERROR"
        deployed = http.post(f"{box}/container/{CONTAINER}/deploy", json={})
        assert deployed.status_code == 202, deployed.text
        states = poll(http, f"{box}/container/{CONTAINER}/status", {"DEPLOYED", "BUILD_ERROR", "DEPLOYMENT_ERROR"})
        assert states[-1] == "DEPLOYED" and len(states) == 5          # 4 steps, one a read, by reads still
        stopped = http.post(f"{box}/container/{CONTAINER}/stop", json={})
        assert stopped.status_code == 202, stopped.text
        assert stopped.headers["x-mock-rule"] == "poll-progress/stop"
        assert poll(http, f"{box}/container/{CONTAINER}/status", {"STOPPED", "STOP_ERROR"})[-1] == "STOPPED"


def test_a_stall_at_a_step_an_action_has_not_got_does_not_stall_it(mock):
    http = mock()
    scenario(http, {"stall": "BUILD", "reads_per_step": 1}, {"operation": "deployContainer"})
    assert http.post(f"/container/{CONTAINER}/deploy").status_code == 202
    assert poll(http, f"/container/{CONTAINER}/status", {"DEPLOYED"})[-1] == "DEPLOYED"
