"""What a new user's walk over HTTP found: a redirect of a sandbox's control route, a scenario window or a
clock beyond the dates the API can write, a cancelled stall, the sandbox `scenarios` option, scenario size."""

import time

import httpx
from conftest import ADMIN, APP, ENV, assert_error
from starlette.testclient import TestClient


def test_a_trailing_slash_on_a_sandbox_control_route_redirects_within_the_sandbox(server):
    with TestClient(server, base_url="http://mock", headers=ADMIN, follow_redirects=False) as client:
        before = client.get("/_mock/clock").json()["epoch"]
        moved = client.post("/sandbox/scn/_mock/clock/advance/", json={"seconds": 5})
        assert moved.status_code in (307, 308)
        assert httpx.URL(moved.headers["location"]).path == "/sandbox/scn/_mock/clock/advance"
        followed = client.post(moved.headers["location"], json={"seconds": 5})
        assert followed.status_code == 200
        assert client.get("/sandbox/scn/_mock/clock").json()["epoch"] == followed.json()["epoch"]
        assert client.get("/_mock/clock").json()["epoch"] == before          # the default sandbox's: unmoved
        plain = client.post("/_mock/clock/advance/", json={"seconds": 5})      # without a prefix: as before
        assert httpx.URL(plain.headers["location"]).path == "/_mock/clock/advance"


def test_a_scenario_window_must_start_within_the_dates_a_clock_can_have(client):
    for start in (999999999999999, -99999999999999, "10000-01-01T00:00:00Z"):
        doc = {"name": "w", "rules": [{"match": {"operation": "getApplicationStatus"}, "window": {"start": start},
                                       "effect": {"status": 500}}]}
        reply = client.put("/_mock/scenarios/w", json=doc)
        assert_error(reply, 400)
        assert "window.start" in reply.text and "9999-01-01" in reply.text
    assert client.get("/_mock/scenarios").status_code == 200
    ok = {"name": "w", "rules": [{"match": {"operation": "getApplicationStatus"},
                                  "window": {"start": "2030-01-01T00:00:00Z"}, "effect": {"status": 500}}]}
    assert client.put("/_mock/scenarios/w", json=ok).status_code == 200
    assert client.get("/_mock/scenarios/w").status_code == 200


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


def test_the_sandbox_scenarios_option_chooses_among_the_files_loaded_at_start(make_server):
    server = make_server(scenarios=["scenarios/flaky-status.yaml", "scenarios/build-fails.yaml"])
    with TestClient(server, base_url="http://mock", headers=ADMIN) as client:
        every = {s["name"] for s in client.get("/_mock/scenarios").json()["results"]}
        assert len(every) == 2
        one = sorted(every)[0]
        assert client.put("/_mock/sandboxes/one", json={"scenarios": [one]}).status_code in (200, 201)
        assert [s["name"] for s in client.get("/sandbox/one/_mock/scenarios").json()["results"]] == [one]
        assert client.put("/_mock/sandboxes/none", json={"scenarios": []}).status_code in (200, 201)
        assert client.get("/sandbox/none/_mock/scenarios").json()["results"] == []
        assert {s["name"] for s in client.get("/sandbox/plain/_mock/scenarios").json()["results"]} == every


def _rules(count, name=None):
    rule = "  - {match: {operation: getApplicationStatus, nth: %d}, effect: {status: 500}%s}\n"
    return "name: many\nrules:\n" + "".join(rule % (i + 1, f", name: {name}" if name else "") for i in range(count))


def test_a_scenario_holds_at_most_a_thousand_rules(client):
    refused = client.put("/_mock/scenarios/many", content=_rules(1001))
    assert_error(refused, 400)
    assert "more than 1000" in refused.json()["message"]
    assert client.get("/_mock/scenarios/many").status_code == 404
    assert client.put("/_mock/scenarios/many", content=_rules(1000)).status_code == 200


def test_two_rules_of_a_scenario_may_not_share_a_name(client):
    refused = client.put("/_mock/scenarios/many", content=_rules(2, name="x"))
    assert_error(refused, 400)
    assert "rules.1.name" in refused.json()["message"] and "rules.0" in refused.json()["message"]


def test_reset_and_snapshot_bodies_take_only_their_fields_and_booleans(client):
    for route, body, named in (("/_mock/reset", {"scenarios": "yes"}, "body.scenarios"),
                               ("/_mock/reset", {"bogus": 1}, "bogus"),
                               ("/_mock/sandboxes/default/reset", {"scenarios": 1}, "body.scenarios"),
                               ("/_mock/snapshots", {"name": "s", "journal": "yes"}, "body.journal"),
                               ("/_mock/snapshots", {"name": "s", "privat": True}, "privat")):
        reply = client.post(route, json=body)
        assert_error(reply, 400)
        assert named in reply.json()["message"]
    assert client.get("/_mock/snapshots/s").status_code == 404
    assert client.post("/_mock/snapshots", json={"name": "s", "journal": True}).status_code == 201
    assert client.post("/_mock/reset", json={"scenarios": False}).status_code == 200


def test_a_helm_source_that_sends_both_forms_keeps_what_the_document_allows(client):
    """The document lets a body carry both `repository` and `repository_id`, and a values file both `raw` and
    `git`: schema-valid, so never a 400; the record keeps repository_id and both files."""
    chart = {"repository": "8c0e2a4c-6e8a-4c0e-9a2c-4e6a8c0e2a4c", "repository_id": "2a4c6e8a-0c2e-4a4c-8e6a-0c2e4a6c8e0a",
             "chart_name": "redis", "chart_version": "19.6.1"}
    git = {"git_repository": {"url": "https://codehost1.example/acme/values.git", "branch": "main"}, "paths": ["v.yaml"]}
    raw = {"values": [{"name": "a.yaml", "content": "x: 1"}]}
    reply = client.post(f"/environment/{ENV}/helm", json={"name": "both", "source": {"helm_repository": chart},
                                                           "values_override": {"file": {"raw": raw, "git": git}}})
    assert reply.status_code == 201, reply.text
    record = reply.json()
    assert record["source"]["helm_repository"]["repository_id"] == chart["repository_id"]
    assert record["values_override"]["file"]["raw"] == raw
    assert record["values_override"]["file"]["git"]["paths"] == ["v.yaml"]
    assert client.get(f"/helm/{record['id']}").json()["values_override"] == record["values_override"]


def test_verify_takes_no_limit(client):
    reply = client.post("/_mock/calls/verify", json={"operation": "listOrganization", "limit": 5, "count": 1})
    assert_error(reply, 400)
    assert "body.limit" in reply.json()["message"]


def test_a_star_in_an_origin_pattern_stands_for_one_label_only(make_server):
    server = make_server(cors_origins="local,http://10.0.0.*:*,https://*.example.test")
    with TestClient(server, base_url="http://mock", headers=ADMIN) as client:
        for origin in ("http://10.0.0.5:8080", "http://10.0.0.5", "https://console.example.test"):
            reply = client.get("/organization", headers={"Origin": origin})
            assert reply.headers.get("access-control-allow-origin") == origin, origin
        for origin in ("http://10.0.0.5.elsewhere.example:80", "https://a.b.example.test.elsewhere.example"):
            assert "access-control-allow-origin" not in client.get("/organization", headers={"Origin": origin}).headers
            assert_error(client.post("/_mock/reset", headers={"Origin": origin}), 403)
        assert client.get("/_mock/clock").status_code == 200


def test_a_call_that_outlives_the_shutdown_timeout_is_answered_503_in_the_error_body(live_server):
    import signal
    import threading
    server = live_server("--shutdown-timeout", "1")
    doc = {"name": "slow", "rules": [{"match": {"operation": "getOrganization"}, "effect": {"latency_ms": 8000}}]}
    assert httpx.put(f"{server.url}/_mock/scenarios/slow", json=doc, headers=ADMIN).status_code == 200
    replies = []                                        # getOrganization: GET /organization (the list)
    caller = threading.Thread(target=lambda: replies.append(
        httpx.get(f"{server.url}/organization", headers=ADMIN, timeout=20)))
    caller.start()
    time.sleep(0.5)
    server.process.send_signal(signal.SIGTERM)
    caller.join(20)
    assert server.process.wait(20) == 0
    reply = replies[0]
    assert_error(reply, 503)
    assert "--shutdown-timeout" in reply.json()["message"]
    log = server.process.stderr.read().decode()
    assert "Traceback" not in log and "Exception in ASGI application" not in log, log


def test_a_cluster_lock_names_the_same_owner_for_the_same_token(client):
    from conftest import CLUSTER, WRITE
    owners = []
    for headers in (ADMIN, ADMIN, WRITE):
        locked = client.post(f"/cluster/{CLUSTER}/lock", json={"reason": "maintenance"}, headers=headers)
        assert locked.status_code in (200, 201), locked.text
        owners.append(locked.json()["owner_name"])
        assert client.delete(f"/cluster/{CLUSTER}/lock").status_code in (200, 204)
    assert owners[0] == owners[1] and owners[0]


def test_validation_messages_speak_json_and_name_the_clash_of_shapes(client):
    reply = client.post("/organization/8d3e6a4b-1f2c-4b7a-9e1d-3c5f7a9b2d10/project", json={"name": None})
    assert_error(reply, 400)
    assert "null is not of type" in reply.json()["message"] and "None" not in reply.json()["message"]
    job = {"name": "both-schedules", "source": {"image": {"image_name": "busybox", "tag": "1", "registry_id":
                                                          "0a2c4e6f-8b0d-4f2a-9c4e-6f8b0d2f4a6c"}},
           "schedule": {"cronjob": {"scheduled_at": "0 * * * *", "arguments": [], "entrypoint": ""},
                        "on_start": {"arguments": [], "entrypoint": ""}}}
    reply = client.post(f"/environment/{ENV}/job", json=job)
    assert_error(reply, 400)
    message = reply.json()["message"]
    assert "should not be valid under" not in message and "not accepted together" in message, message


def test_self_check_is_an_option_of_serve_and_counts_in_health(live_server):
    server = live_server("--self-check")
    health = httpx.get(f"{server.url}/_mock/health").json()
    assert health["self_check"] == {"violations": 0, "newest": []}
    assert httpx.get(f"{server.url}/organization", headers=ADMIN).status_code == 200
    assert httpx.get(f"{server.url}/_mock/health").json()["self_check"]["violations"] == 0
    plain = live_server()
    assert "self_check" not in httpx.get(f"{plain.url}/_mock/health").json()


def test_a_reply_that_breaks_the_document_is_logged_counted_and_the_newest_kept(make_server, caplog):
    server = make_server()
    operation = server.spec.resolve("GET", "/organization")[0]
    for n in range(105):
        server.pipeline.check_reply(operation, 299, b"", "GET", f"/organization?n={n}")
    assert server.pipeline.violation_count == 105 and len(server.pipeline.violations) == 100
    assert server.pipeline.violations[-1].startswith("GET /organization?n=104: status 299")
    assert "self-check: GET /organization?n=0" in caplog.text
    server.pipeline.violations.clear()                            # what make_server asserts at the end


def test_head_answers_wherever_get_does_with_the_head_of_its_reply(live_server):
    server = live_server()
    get = httpx.get(f"{server.url}/application/{APP}/status", headers=ADMIN)
    head = httpx.head(f"{server.url}/application/{APP}/status", headers=ADMIN)
    assert head.status_code == 200 and head.content == b""
    assert head.headers["content-length"] == get.headers["content-length"]
    assert head.headers["content-type"] == "application/json"
    assert httpx.head(f"{server.url}/application/{APP}/status").status_code == 401
    refused = httpx.delete(f"{server.url}/application/{APP}/status", headers=ADMIN)
    assert refused.status_code == 405 and "HEAD" in refused.headers["allow"].split(", ")
    calls = httpx.get(f"{server.url}/_mock/calls", params={"method": "HEAD"}, headers=ADMIN).json()["results"]
    assert [(c["operation"], c["status"]) for c in calls] == [("getApplicationStatus", 200), ("getApplicationStatus", 401)]
