"""Deployment lifecycles on the mock's clock: deploy, stop, restart, delete, uninstall,
the environment's queue, cancel, history and failures forced through scenarios.

Most tests use the in-process mock with a manual clock and move time with
POST /_mock/clock/advance; the ones marked `server` run a live server on the real clock.

Default timeline of an application deploy (lifecycle.PLANS, QUEUE_DELAY = 1 s):
    0..1 DEPLOYMENT_QUEUED | 1..5 BUILDING (REGISTRY_CREATE_REPOSITORY 1, GIT_CLONE 1, BUILD_QUEUEING 0,
    BUILD 2) | 5..8 DEPLOYING (DEPLOYMENT_QUEUEING 0, DEPLOYMENT 2, ROUTER_DEPLOYMENT 1) | 8.. DEPLOYED
"""

import time

import httpx
import orjson
import pytest
from starlette.testclient import TestClient
from support.ids import ADMIN, APP, CONTAINER, DATABASE, DEPLOY, ENV, HELM, JOB, REGISTRY, TERRAFORM

APP_STEPS = ["REGISTRY_CREATE_REPOSITORY", "GIT_CLONE", "BUILD_QUEUEING", "BUILD", "DEPLOYMENT_QUEUEING",
             "DEPLOYMENT", "ROUTER_DEPLOYMENT"]
APP_DEPLOY_SECONDS = 8          # 1 s in the queue + 7 s of steps


# ---------------------------------------------------------------- helpers
def advance(client, seconds):
    reply = client.post("/_mock/clock/advance", json={"seconds": seconds})
    assert reply.status_code == 200, reply.text


def create_app(client, name="api"):
    reply = client.post(f"/environment/{ENV}/application", json={
        "name": name, "git_repository": {"url": f"https://git.example.com/acme/{name}.git", "branch": "main"}})
    assert reply.status_code == 201, reply.text
    return reply.json()["id"]


def status(client, kind, ident):
    reply = client.get(f"/{kind}/{ident}/status")
    assert reply.status_code == 200, reply.text
    return reply.json()


def state(client, kind, ident):
    return status(client, kind, ident)["state"]


def deploy(client, kind, ident, body=None, headers=None):
    reply = client.post(f"/{kind}/{ident}/deploy", json=body or {}, headers=headers)
    assert reply.status_code == 202, reply.text
    return reply.json()


def action(client, kind, ident, verb):
    return client.post(f"/{kind}/{ident}/{verb}")


def states_each_second(client, kind, ident, seconds):
    """The state at t = 0, 1, ... seconds (advancing the clock one second at a time)."""
    seen = [state(client, kind, ident)]
    for _ in range(seconds):
        advance(client, 1)
        seen.append(state(client, kind, ident))
    return seen


def collapse(states):
    """Consecutive duplicates removed: the progression of states."""
    out = []
    for item in states:
        if not out or out[-1] != item:
            out.append(item)
    return out


def put_scenario(client, name, rules, as_yaml=False):
    if as_yaml:
        import yaml
        text = yaml.safe_dump({"name": name, "rules": rules})
    else:
        text = orjson.dumps({"name": name, "rules": rules}).decode()
    reply = client.put(f"/_mock/scenarios/{name}", content=text)
    assert reply.status_code == 200, reply.text


def deployment_effect(**effect):
    return [{"match": {"operation": "deployApplication"}, "effect": {"deployment": effect}}]


def queue(client):
    reply = client.get(f"/environment/{ENV}/deploymentQueue")
    assert reply.status_code == 200, reply.text
    return reply.json()["results"]


# ---------------------------------------------------------------- application deploy
def test_deploy_reply_is_the_queued_deployment_request(client):
    app = create_app(client)
    reply = client.post(f"/application/{app}/deploy", json={})
    assert reply.status_code == 202
    body = reply.json()
    assert body["status"] == "QUEUED"
    assert body["application_id"] == app
    assert body["id"] and body["created_at"]


def test_status_right_after_deploy_is_deployment_queued(client):
    app = create_app(client)
    deploy(client, "application", app)
    current = status(client, "application", app)
    assert current["state"] == "DEPLOYMENT_QUEUED"
    assert current["status_details"]["action"] == "DEPLOY"
    assert current["status_details"]["status"] == "QUEUED"


def test_application_deploy_goes_queued_building_deploying_deployed(client):
    app = create_app(client)
    deploy(client, "application", app)
    seen = states_each_second(client, "application", app, APP_DEPLOY_SECONDS + 1)
    assert seen[:2] == ["DEPLOYMENT_QUEUED", "BUILDING"]
    assert collapse(seen) == ["DEPLOYMENT_QUEUED", "BUILDING", "DEPLOYING", "DEPLOYED"]
    assert seen[APP_DEPLOY_SECONDS - 1] == "DEPLOYING"
    assert seen[APP_DEPLOY_SECONDS] == "DEPLOYED"


def test_building_runs_the_build_steps_one_after_another(client):
    app = create_app(client)
    deploy(client, "application", app)
    finished = []
    for _ in range(4):                  # t = 1 .. 4
        advance(client, 1)
        current = status(client, "application", app)
        assert current["state"] == "BUILDING"
        assert current["status_details"]["status"] == "ONGOING"
        finished.append([step["step_name"] for step in current["steps"]["details"]])
    assert finished[0] == []
    assert finished[1] == ["REGISTRY_CREATE_REPOSITORY"]
    assert finished[2] == finished[3] == ["REGISTRY_CREATE_REPOSITORY", "GIT_CLONE", "BUILD_QUEUEING"]
    advance(client, 1)                  # t = 5: the build is done, the roll-out starts
    current = status(client, "application", app)
    assert current["state"] == "DEPLOYING"
    assert [step["step_name"] for step in current["steps"]["details"]][3] == "BUILD"


def test_deployed_status_has_every_step_with_integer_durations_and_their_total(client):
    app = create_app(client)
    reply = deploy(client, "application", app)
    advance(client, APP_DEPLOY_SECONDS)
    current = status(client, "application", app)
    assert current["state"] == "DEPLOYED"
    assert current["status_details"]["status"] == "SUCCESS"
    details = current["steps"]["details"]
    assert [step["step_name"] for step in details] == APP_STEPS
    assert all(step["status"] == "SUCCESS" for step in details)
    assert all(isinstance(step["duration_sec"], int) for step in details)
    assert current["steps"]["total_duration_sec"] == sum(step["duration_sec"] for step in details) == 7
    assert current["deployment_request_id"] == reply["id"]
    assert current["deployment_requests_count"] == 1
    assert current["last_deployment_date"]


def test_each_deploy_increments_the_deployment_requests_count(client):
    app = create_app(client)
    assert status(client, "application", app)["deployment_requests_count"] == 0
    deploy(client, "application", app)
    advance(client, APP_DEPLOY_SECONDS)
    second = deploy(client, "application", app)
    current = status(client, "application", app)
    assert current["deployment_requests_count"] == 2
    assert current["deployment_request_id"] == second["id"]


def test_service_deployment_status_never_deployed_then_up_to_date_then_out_of_date(client):
    app = create_app(client)
    before = status(client, "application", app)
    assert before["service_deployment_status"] == "NEVER_DEPLOYED"
    assert not {"last_deployment_date", "deployment_request_id", "execution_id"} & set(before)
    deploy(client, "application", app)
    advance(client, APP_DEPLOY_SECONDS)
    assert status(client, "application", app)["service_deployment_status"] == "UP_TO_DATE"
    edited = client.put(f"/application/{app}", json={
        "name": "api", "git_repository": {"url": "https://git.example.com/acme/api.git", "branch": "main"},
        "cpu": 1000})
    assert edited.status_code == 200, edited.text
    assert status(client, "application", app)["service_deployment_status"] == "OUT_OF_DATE"


def test_deploy_with_git_commit_id_pins_the_commit_in_history(client):
    app = create_app(client)
    commit = "0123456789abcdef0123456789abcdef01234567"
    deploy(client, "application", app, {"git_commit_id": commit})
    advance(client, APP_DEPLOY_SECONDS)
    history = client.get(f"/application/{app}/deploymentHistory").json()["results"]
    assert history[0]["details"]["commit"]["git_commit_id"] == commit


def test_redeploy_reuses_the_deployed_commit(client):
    app = create_app(client)
    commit = "0123456789abcdef0123456789abcdef01234567"
    deploy(client, "application", app, {"git_commit_id": commit})
    advance(client, APP_DEPLOY_SECONDS)
    reply = client.post(f"/application/{app}/redeploy")
    assert reply.status_code == 202, reply.text
    advance(client, APP_DEPLOY_SECONDS)
    history = client.get(f"/application/{app}/deploymentHistory").json()["results"]
    assert [item["details"]["commit"]["git_commit_id"] for item in history] == [commit, commit]
    assert history[0]["identifier"]["deployment_request_id"] == reply.json()["id"]


def test_redeploy_of_a_never_deployed_application_is_409(client):
    app = create_app(client)
    reply = client.post(f"/application/{app}/redeploy")
    assert reply.status_code == 409
    assert reply.json()["status"] == 409


def create_service(client, kind):
    bodies = {"container": {"name": "w2", "registry_id": REGISTRY, "image_name": "acme/w2", "tag": "1",
                            "entrypoint": "/start"},
              "helm": {"name": "h2", "source": {"git_repository": {"url": "https://git.example.com/acme/charts.git",
                                                                    "root_path": "/nginx"}}}}
    reply = client.post(f"/environment/{ENV}/{kind}", json=bodies[kind])
    assert reply.status_code == 201, reply.text
    return reply.json()["id"]


@pytest.mark.parametrize("kind", ["job", "terraform", "container", "helm"])
def test_redeploy_of_a_never_deployed_service_is_409(client, kind):
    ident = {"job": JOB, "terraform": TERRAFORM}.get(kind) or create_service(client, kind)
    assert status(client, kind, ident)["service_deployment_status"] == "NEVER_DEPLOYED"
    assert client.post(f"/{kind}/{ident}/redeploy").status_code == 409
    assert status(client, kind, ident)["deployment_requests_count"] == 0


def test_second_deploy_while_one_is_in_progress_is_409(client):
    app = create_app(client)
    deploy(client, "application", app)
    advance(client, 2)
    assert client.post(f"/application/{app}/deploy", json={}).status_code == 409
    assert status(client, "application", app)["deployment_requests_count"] == 1


# ---------------------------------------------------------------- stop and restart
def test_stop_of_a_running_application_goes_stop_queued_stopping_stopped(client):
    assert state(client, "application", APP) == "DEPLOYED"
    reply = action(client, "application", APP, "stop")
    assert reply.status_code == 202, reply.text
    seen = states_each_second(client, "application", APP, 4)
    assert collapse(seen) == ["STOP_QUEUED", "STOPPING", "STOPPED"]
    assert status(client, "application", APP)["status_details"] == {
        "action": "STOP", "status": "SUCCESS", "sub_action": "NONE"}


def test_stop_of_a_never_deployed_application_is_409(client):
    app = create_app(client)
    assert action(client, "application", app, "stop").status_code == 409
    assert status(client, "application", app)["deployment_requests_count"] == 0


def test_restart_of_a_running_application_goes_restart_queued_restarting_restarted(client):
    reply = action(client, "application", APP, "restart")
    assert reply.status_code == 202, reply.text
    seen = states_each_second(client, "application", APP, 4)
    assert collapse(seen) == ["RESTART_QUEUED", "RESTARTING", "RESTARTED"]


def test_restart_of_a_stopped_application_is_409(client):
    assert action(client, "application", APP, "stop").status_code == 202
    advance(client, 5)
    assert state(client, "application", APP) == "STOPPED"
    assert action(client, "application", APP, "restart").status_code == 409
    assert state(client, "application", APP) == "STOPPED"


# ---------------------------------------------------------------- other service kinds
def test_container_deploy_mirrors_the_image_and_never_builds(client):
    deploy(client, "container", CONTAINER)
    seen = states_each_second(client, "container", CONTAINER, 6)
    assert "BUILDING" not in seen
    assert collapse(seen) == ["DEPLOYMENT_QUEUED", "DEPLOYING", "DEPLOYED"]
    names = [step["step_name"] for step in status(client, "container", CONTAINER)["steps"]["details"]]
    assert names[0] == "MIRROR_IMAGE"
    assert "BUILD" not in names and "GIT_CLONE" not in names


@pytest.mark.parametrize("kind,ident", [("database", DATABASE), ("helm", HELM), ("terraform", TERRAFORM)])
def test_chart_like_services_go_queued_deploying_deployed(client, kind, ident):
    deploy(client, kind, ident)
    seen = states_each_second(client, kind, ident, 5)
    assert collapse(seen) == ["DEPLOYMENT_QUEUED", "DEPLOYING", "DEPLOYED"]


def test_job_with_a_git_repository_builds(client):
    deploy(client, "job", JOB)
    seen = states_each_second(client, "job", JOB, APP_DEPLOY_SECONDS)
    assert collapse(seen) == ["DEPLOYMENT_QUEUED", "BUILDING", "DEPLOYING", "DEPLOYED"]


# ---------------------------------------------------------------- database uninstall
def test_database_uninstall_replies_202_with_the_service_status(client):
    reply = client.post(f"/database/{DATABASE}/uninstall")
    assert reply.status_code == 202, reply.text
    body = reply.json()
    assert body["id"] == DATABASE
    assert body["state"] == "DELETE_QUEUED"
    assert body["status_details"]["action"] == "DELETE"


def test_database_uninstall_goes_delete_queued_deleting_deleted(client):
    assert client.post(f"/database/{DATABASE}/uninstall").status_code == 202
    seen = states_each_second(client, "database", DATABASE, 4)
    assert collapse(seen) == ["DELETE_QUEUED", "DELETING", "DELETED"]


def test_uninstalled_database_keeps_its_configuration_but_loses_its_backups(client):
    assert len(client.get(f"/database/{DATABASE}/backup").json()["results"]) == 12
    assert client.post(f"/database/{DATABASE}/uninstall").status_code == 202
    advance(client, 4)
    record = client.get(f"/database/{DATABASE}")
    assert record.status_code == 200
    assert record.json()["name"] == "orders-db"
    backups = client.get(f"/database/{DATABASE}/backup")
    assert backups.status_code == 200
    assert backups.json()["results"] == []


# ---------------------------------------------------------------- the environment's queue
def test_requests_of_one_environment_run_one_after_another(client):
    deploy(client, "application", APP)
    deploy(client, "container", CONTAINER)
    advance(client, 7.5)
    assert state(client, "application", APP) == "DEPLOYING"
    assert state(client, "container", CONTAINER) == "DEPLOYMENT_QUEUED"
    advance(client, 1)
    assert state(client, "application", APP) == "DEPLOYED"
    assert state(client, "container", CONTAINER) == "DEPLOYING"


def test_queued_request_starts_when_the_one_before_it_is_cut_short_by_a_delete(client):
    deploy(client, "application", APP)
    deploy(client, "container", CONTAINER)
    advance(client, 2)
    assert client.delete(f"/application/{APP}").status_code == 204
    advance(client, 2.5)                # t = 4.5: the app's deploy ended at 2, nothing else runs before the container
    assert state(client, "container", CONTAINER) == "DEPLOYING"


def test_deployment_queue_shows_the_ongoing_and_the_queued_request(client):
    first = deploy(client, "application", APP)
    second = deploy(client, "container", CONTAINER)
    advance(client, 2)
    items = queue(client)
    assert [item["identifier"]["deployment_request_id"] for item in items] == [first["id"], second["id"]]
    assert [item["stages"][0]["status"] for item in items] == ["ONGOING", "QUEUED"]
    assert [item["trigger_action"] for item in items] == ["DEPLOY", "DEPLOY"]
    services = [item["stages"][0]["services"][0]["identifier"] for item in items]
    assert services[0]["service_id"] == APP and services[0]["service_type"] == "APPLICATION"
    assert services[1]["service_id"] == CONTAINER and services[1]["service_type"] == "CONTAINER"


def test_deployment_queue_is_empty_once_both_requests_end(client):
    deploy(client, "application", APP)
    deploy(client, "container", CONTAINER)
    advance(client, 8 + 4)
    assert state(client, "container", CONTAINER) == "DEPLOYED"
    assert queue(client) == []


def test_environment_status_reflects_an_ongoing_deployment(client):
    reply = deploy(client, "application", APP)
    advance(client, 2)
    current = client.get(f"/environment/{ENV}/status")
    assert current.status_code == 200
    assert current.json()["state"] == "BUILDING"
    assert current.json()["deployment_request_id"] == reply["id"]


def test_environment_database_status_lists_the_databases(client):
    reply = client.get(f"/environment/{ENV}/database/status")
    assert reply.status_code == 200
    results = reply.json()["results"]
    assert [item["id"] for item in results] == [DATABASE]
    assert results[0]["state"] == "DEPLOYED"


# ---------------------------------------------------------------- delete and cancel
def test_deleted_application_is_gone_at_once(client):
    app = create_app(client)
    assert client.delete(f"/application/{app}").status_code == 204
    assert client.get(f"/application/{app}").status_code == 404
    assert client.get(f"/application/{app}/status").status_code == 404


def test_delete_shows_in_the_deployment_queue_until_it_ends(client):
    assert client.delete(f"/application/{APP}").status_code == 204
    items = queue(client)
    assert [item["trigger_action"] for item in items] == ["DELETE"]
    assert items[0]["stages"][0]["services"][0]["identifier"]["service_id"] == APP
    advance(client, 2)
    assert [item["trigger_action"] for item in queue(client)] == ["DELETE"]
    advance(client, 2)
    assert queue(client) == []


def test_cancel_deployment_makes_the_running_deploy_canceled(client):
    app = create_app(client)
    deploy(client, "application", app)
    advance(client, 2)
    assert state(client, "application", app) == "BUILDING"
    reply = client.post(f"/environment/{ENV}/cancelDeployment")
    assert reply.status_code == 202, reply.text
    current = status(client, "application", app)
    assert current["state"] == "CANCELED"
    assert current["status_details"]["status"] == "CANCELED"
    advance(client, 20)
    assert state(client, "application", app) == "CANCELED"
    assert queue(client) == []


# ---------------------------------------------------------------- history
def test_deployment_history_lists_every_request_newest_first(client):
    app = create_app(client)
    first = deploy(client, "application", app)
    advance(client, APP_DEPLOY_SECONDS)
    assert action(client, "application", app, "stop").status_code == 202
    advance(client, 3)
    third = deploy(client, "application", app, headers=DEPLOY)
    advance(client, APP_DEPLOY_SECONDS)
    history = client.get(f"/application/{app}/deploymentHistory").json()["results"]
    assert [item["trigger_action"] for item in history] == ["DEPLOY", "STOP", "DEPLOY"]
    assert [item["status"] for item in history] == ["DEPLOYED", "STOPPED", "DEPLOYED"]
    assert history[0]["identifier"]["deployment_request_id"] == third["id"]
    assert history[2]["identifier"]["deployment_request_id"] == first["id"]
    assert all(item["auditing_data"]["origin"] == "API" for item in history)
    assert [item["auditing_data"]["triggered_by"] for item in history] == ["deployer", "admin", "admin"]


# ---------------------------------------------------------------- failures forced by scenarios
def test_fail_at_build_ends_in_build_error_with_the_build_step_in_error(client):
    put_scenario(client, "fail-build", deployment_effect(fail_at="BUILD", state="BUILD_ERROR"))
    app = create_app(client)
    deploy(client, "application", app)
    advance(client, 20)
    current = status(client, "application", app)
    assert current["state"] == "BUILD_ERROR"
    assert current["status_details"]["status"] == "ERROR"
    last = current["steps"]["details"][-1]
    assert (last["step_name"], last["status"]) == ("BUILD", "ERROR")
    assert "DEPLOYMENT" not in [step["step_name"] for step in current["steps"]["details"]]
    assert client.get(f"/application/{app}/deploymentHistory").json()["results"][0]["status"] == "BUILD_ERROR"


def test_fail_at_deployment_ends_in_deployment_error(client):
    put_scenario(client, "fail-rollout", deployment_effect(fail_at="DEPLOYMENT"))
    app = create_app(client)
    deploy(client, "application", app)
    seen = states_each_second(client, "application", app, 20)
    assert collapse(seen) == ["DEPLOYMENT_QUEUED", "BUILDING", "DEPLOYING", "DEPLOYMENT_ERROR"]
    assert status(client, "application", app)["service_deployment_status"] == "NEVER_DEPLOYED"


def test_stall_keeps_the_deploy_building(client):
    put_scenario(client, "stuck", deployment_effect(stall="BUILDING"))
    app = create_app(client)
    deploy(client, "application", app)
    advance(client, 1000)
    assert state(client, "application", app) == "BUILDING"
    assert client.post(f"/application/{app}/deploy", json={}).status_code == 409


def test_scenario_durations_stretch_the_build_step(client):
    put_scenario(client, "slow-build", deployment_effect(durations={"BUILD": 100}), as_yaml=True)
    app = create_app(client)
    deploy(client, "application", app)
    advance(client, 50)
    assert state(client, "application", app) == "BUILDING"
    advance(client, 52)                 # t = 102: the build (3..103) still runs
    assert state(client, "application", app) == "BUILDING"
    advance(client, 2)                  # t = 104
    assert state(client, "application", app) == "DEPLOYING"
    advance(client, 10)
    current = status(client, "application", app)
    assert current["state"] == "DEPLOYED"
    build = next(step for step in current["steps"]["details"] if step["step_name"] == "BUILD")
    assert build["duration_sec"] == 100


def test_scenario_only_affects_the_operation_it_matches(client):
    put_scenario(client, "fail-build", deployment_effect(fail_at="BUILD"))
    deploy(client, "container", CONTAINER)
    advance(client, 10)
    assert state(client, "container", CONTAINER) == "DEPLOYED"


# ---------------------------------------------------------------- the real clock
def _deploy_and_poll(server, timeout):
    with httpx.Client(base_url=server.url, headers=ADMIN, timeout=5) as http:
        reply = http.post(f"/application/{APP}/deploy", json={})
        assert reply.status_code == 202, reply.text
        started = time.monotonic()
        seen = []
        while time.monotonic() - started < timeout:
            current = http.get(f"/application/{APP}/status").json()["state"]
            seen.append(current)
            if current == "DEPLOYED":
                return time.monotonic() - started, seen
            time.sleep(0.25)
        raise AssertionError(f"not DEPLOYED within {timeout} s; states seen: {collapse(seen)}")


@pytest.mark.server
def test_real_clock_deploy_reaches_deployed_within_15_seconds(live_server):
    server = live_server("--clock", "real")
    elapsed, seen = _deploy_and_poll(server, 15)
    intermediate = set(seen) - {"DEPLOYED"}
    assert intermediate and intermediate <= {"DEPLOYMENT_QUEUED", "BUILDING", "DEPLOYING"}
    assert elapsed > 5                  # the steps really take their time (8 s at speed 1)


@pytest.mark.server
def test_real_clock_speed_4_finishes_within_about_3_seconds(live_server):
    server = live_server("--clock", "real", "--speed", "4")
    elapsed, seen = _deploy_and_poll(server, 15)
    assert elapsed < 3.5
    assert set(seen) - {"DEPLOYED"}


def test_the_background_loop_pumps_a_world_only_once_something_fell_due(server, client):
    """A deployment under way: the loop leaves the world alone until its next step's time, then takes it."""
    assert client.post(f"/application/{APP}/deploy", json={}).status_code == 202
    rt = server.sandboxes.get_quietly("default").rt
    pumped, pump = [], rt.pump
    rt.pump = lambda: (pumped.append(rt.clock.now()), pump())
    try:
        server.upkeep()
        assert pumped == [] and not rt.falls_due()            # the next step is still to come
        step = min(at for at, *_ in rt.lifecycle.due)
        rt.clock.advance(step - rt.clock.now())               # the clock alone: no request pumps the world
        assert rt.falls_due()
        server.upkeep()
        assert pumped == [step] and not rt.falls_due()        # taken once, and nothing due is left behind
        assert all(at > step for at, *_ in rt.lifecycle.due)
    finally:
        del rt.pump


# ---------------------------------------------------------------- what a long history keeps
def test_a_finished_request_reads_the_same_in_history_after_later_deploys(client):
    """Requests of one service share their plan and step details: an older one reads exactly as it did
    while it was the latest."""
    app = create_app(client)
    deploy(client, "application", app)
    advance(client, APP_DEPLOY_SECONDS)
    latest_then = client.get(f"/application/{app}/deploymentHistory").json()["results"][0]
    status_then = status(client, "application", app)
    for _ in range(3):
        deploy(client, "application", app)
        advance(client, APP_DEPLOY_SECONDS)
    history = client.get(f"/application/{app}/deploymentHistory").json()["results"]
    assert len(history) == 4 and history[3] == latest_then
    now = status(client, "application", app)
    assert now["steps"] == status_then["steps"] and now["deployment_requests_count"] == 4
    assert [s["step_name"] for s in now["steps"]["details"]] == APP_STEPS


def test_a_deploy_keeps_under_2_kib_once_it_has_ended(make_server):
    """A busy service's history grows by one request a deploy, for as long as the world lives: the plan's
    steps and the replies' step details are shared by every request with the same plan (each request kept
    5.3 KiB before; under 1 KiB since)."""
    import gc
    import tracemalloc
    server = make_server(journal_size=20)            # the journal stays at its bound while this measures
    with TestClient(server, base_url="http://mock", headers=ADMIN) as client:
        app = create_app(client)

        def deploys(count):
            for _ in range(count):
                deploy(client, "application", app)
                advance(client, APP_DEPLOY_SECONDS)
                status(client, "application", app)
        deploys(30)
        from mockserver.sandboxes.worlds import SPARES
        deadline = time.monotonic() + 10                # the spare worlds are made by the background loop: all of
        while len(server.spares) < SPARES and time.monotonic() < deadline:     # them before, none counted here
            time.sleep(0.02)
        tracemalloc.start()
        try:
            gc.collect()                               # the test client's own cycles are not the world's
            before = tracemalloc.get_traced_memory()[0]
            deploys(200)
            gc.collect()
            held = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
        history = client.get(f"/application/{app}/deploymentHistory?page=1&page_size=1").json()
        assert history["pagination"]["total_count"] == 230
    assert held / 200 < 2048, f"{held / 200:.0f} bytes kept a deploy"


def test_a_cancelled_stall_shows_only_the_steps_finished_before_it(client):
    doc = {"name": "stuck", "rules": [{"match": {"operation": "deployApplication"},
                                       "effect": {"deployment": {"stall": "BUILD"}}}]}
    assert client.put("/_mock/scenarios/stuck", json=doc).status_code == 200
    assert client.post(f"/application/{APP}/deploy", json={}).status_code == 202
    assert client.post("/_mock/clock/advance", json={"seconds": 60}).status_code == 200
    before = client.get(f"/application/{APP}/status").json()
    assert before["state"] == "BUILDING"
    finished = [s["step_name"] for s in before["steps"]["details"] if s["status"] == "SUCCESS"]
    assert finished == ["REGISTRY_CREATE_REPOSITORY", "GIT_CLONE", "BUILD_QUEUEING"]
    assert client.post(f"/environment/{ENV}/cancelDeployment").status_code in (200, 202)
    client.post("/_mock/clock/advance", json={"seconds": 1})
    after = client.get(f"/application/{APP}/status").json()
    assert after["state"] == "CANCELED"
    assert [s["step_name"] for s in after["steps"]["details"]] == finished
    assert after["steps"]["total_duration_sec"] == before["steps"]["total_duration_sec"]
