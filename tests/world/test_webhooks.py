"""Webhook delivery to a real HTTP receiver: events, filters, retries, signatures, the
link between a call and the deliveries it caused, and replies that never wait for a receiver.

One live `mockserver serve --clock manual` serves the whole module (reset before each test);
each test starts its own receiver, a small threaded HTTP server on a free loopback port.
Deliveries are asynchronous, so tests poll (bounded) for what the receiver got.
"""

import hashlib
import hmac
import json
import threading
import time

import httpx
import pytest
from support.http import free_port
from support.ids import ADMIN, APP, DATABASE, ENV, ORG
from support.receiver import DEADLINE, Receiver, Silent

pytestmark = pytest.mark.server

WEBHOOKS = f"/organization/{ORG}/webhook"


@pytest.fixture
def receiver():
    started = []

    def start(statuses=(200,), delay=0.0):
        made = Receiver(statuses, delay)
        started.append(made)
        return made

    yield start
    for made in started:
        made.stop()


# ---------------------------------------------------------------- the mock
@pytest.fixture
def mock(live_manual):
    """An HTTP client on the live mock, reset to its fixtures (scenarios removed)."""
    with httpx.Client(base_url=live_manual.url, headers=ADMIN, timeout=10) as http:
        assert http.post("/_mock/reset", json={"scenarios": True}).status_code == 200
        yield http


def advance(mock, seconds):
    reply = mock.post("/_mock/clock/advance", json={"seconds": seconds})
    assert reply.status_code == 200, reply.text


def register(mock, target_url, events, **fields):
    reply = mock.post(WEBHOOKS, json={"target_url": target_url, "events": events, "enabled": True, **fields})
    assert reply.status_code == 201, reply.text
    return reply.json()


def deploy_app(mock):
    reply = mock.post(f"/application/{APP}/deploy", json={})
    assert reply.status_code == 202, reply.text
    return reply.json()


def run_deploy(mock):
    """Deploy the fixture app and step the clock until it ends (start after 1 s, end after 8 s)."""
    reply = deploy_app(mock)
    advance(mock, 1)
    advance(mock, 8)
    return reply


def deliveries(mock, **filters):
    reply = mock.get("/_mock/webhooks/deliveries", params=filters)
    assert reply.status_code == 200, reply.text
    return reply.json()["results"]


def wait_for_delivery(mock, predicate, timeout=DEADLINE):
    """Poll the delivery log until one delivery satisfies `predicate`; returns it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [d for d in deliveries(mock) if predicate(d)]
        if found:
            return found[0]
        time.sleep(0.02)
    raise AssertionError(f"no delivery matched within {timeout} s: {deliveries(mock)}")


def put_scenario(mock, name, rules):
    reply = mock.put(f"/_mock/scenarios/{name}", content=json.dumps({"name": name, "rules": rules}))
    assert reply.status_code == 200, reply.text


# ---------------------------------------------------------------- events
def test_deploy_sends_started_when_it_leaves_the_queue_then_succeeded(mock, receiver):
    target = receiver()
    register(mock, target.url, ["DEPLOYMENT_STARTED", "DEPLOYMENT_SUCCEEDED"])
    deploy_app(mock)
    assert deliveries(mock) == []                    # still queued: nothing happened yet
    advance(mock, 1)
    target.wait_for(1)
    assert target.events() == ["DEPLOYMENT_STARTED"]
    advance(mock, 8)
    target.wait_for(2)
    assert target.events() == ["DEPLOYMENT_STARTED", "DEPLOYMENT_SUCCEEDED"]


def test_delivery_body_is_event_type_and_payload_of_the_deployment(mock, receiver):
    target = receiver()
    register(mock, target.url, ["DEPLOYMENT_STARTED", "DEPLOYMENT_SUCCEEDED"])
    reply = run_deploy(mock)
    requests = target.wait_for(2)
    for request in requests:
        body = json.loads(request["body"])
        assert set(body) == {"event_type", "payload"}
        assert body["payload"]["application_id"] == APP
        assert body["payload"]["deployment_request_id"] == reply["id"]
        assert request["headers"]["Content-Type"] == "application/json"
        assert request["headers"]["X-Mock-Event"] == body["event_type"]


def test_deployment_of_an_application_names_it_in_application_id_and_as_the_service(mock, receiver):
    target = receiver()
    register(mock, target.url, ["DEPLOYMENT_STARTED"])
    deploy_app(mock)
    advance(mock, 1)
    payload = json.loads(target.wait_for(1)[0]["body"])["payload"]
    assert (payload["application_id"], payload["service_id"], payload["service_type"]) == (APP, APP, "APPLICATION")


def test_deployment_of_a_service_that_is_not_an_application_names_it_without_application_id(mock, receiver):
    """The spec's payload shows `application_id`; other kinds' deployments are delivered too, naming their
    service as `service_id` and `service_type` and carrying no application_id."""
    target = receiver()
    register(mock, target.url, ["DEPLOYMENT_STARTED"])
    assert mock.post(f"/database/{DATABASE}/redeploy").status_code == 202
    advance(mock, 1)
    body = json.loads(target.wait_for(1)[0]["body"])
    assert body["event_type"] == "DEPLOYMENT_STARTED"
    assert (body["payload"]["service_id"], body["payload"]["service_type"]) == (DATABASE, "DATABASE")
    assert "application_id" not in body["payload"]


def test_webhook_for_failures_only_gets_nothing_when_the_deploy_succeeds(mock, receiver):
    target = receiver()
    failures = register(mock, f"{target.url}/failures", ["DEPLOYMENT_FAILED"])
    register(mock, f"{target.url}/successes", ["DEPLOYMENT_SUCCEEDED"])
    run_deploy(mock)
    target.wait_for(1)
    assert target.events("/successes") == ["DEPLOYMENT_SUCCEEDED"]
    assert target.events("/failures") == []
    assert deliveries(mock, webhook_id=failures["id"]) == []


def test_disabled_webhook_gets_nothing(mock, receiver):
    target = receiver()
    disabled = register(mock, f"{target.url}/disabled", ["DEPLOYMENT_SUCCEEDED"], enabled=False)
    register(mock, f"{target.url}/enabled", ["DEPLOYMENT_SUCCEEDED"])
    run_deploy(mock)
    target.wait_for(1)
    assert target.events("/enabled") == ["DEPLOYMENT_SUCCEEDED"]
    assert target.events("/disabled") == []
    assert deliveries(mock, webhook_id=disabled["id"]) == []


def test_failed_deploy_sends_deployment_failed(mock, receiver):
    put_scenario(mock, "fail-build", [{"match": {"operation": "deployApplication"},
                                       "effect": {"deployment": {"fail_at": "BUILD"}}}])
    target = receiver()
    register(mock, target.url, ["DEPLOYMENT_SUCCEEDED", "DEPLOYMENT_FAILED"])
    reply = run_deploy(mock)
    requests = target.wait_for(1)
    body = json.loads(requests[0]["body"])
    assert body["event_type"] == "DEPLOYMENT_FAILED"
    assert body["payload"]["deployment_request_id"] == reply["id"]
    assert target.events() == ["DEPLOYMENT_FAILED"]


def test_cancelled_deploy_sends_deployment_cancelled(mock, receiver):
    target = receiver()
    register(mock, target.url, ["DEPLOYMENT_SUCCEEDED", "DEPLOYMENT_FAILED", "DEPLOYMENT_CANCELLED"])
    reply = deploy_app(mock)
    advance(mock, 2)
    assert mock.post(f"/environment/{ENV}/cancelDeployment").status_code == 202
    requests = target.wait_for(1)
    body = json.loads(requests[0]["body"])
    assert body["event_type"] == "DEPLOYMENT_CANCELLED"
    assert body["payload"]["deployment_request_id"] == reply["id"]
    advance(mock, 20)
    assert [d["event_type"] for d in deliveries(mock)] == ["DEPLOYMENT_CANCELLED"]


# ---------------------------------------------------------------- retries
def test_refused_delivery_is_retried_after_the_backoff(mock, receiver):
    target = receiver(statuses=(500, 200))
    hook = register(mock, target.url, ["DEPLOYMENT_STARTED"])
    deploy_app(mock)
    advance(mock, 1)
    first = wait_for_delivery(mock, lambda d: len(d["attempts"]) == 1)
    assert first["webhook_id"] == hook["id"]
    assert first["attempts"][0]["number"] == 1
    assert first["attempts"][0]["status_code"] == 500
    assert first["status"] == "RETRYING"
    advance(mock, 1)
    done = wait_for_delivery(mock, lambda d: d["status"] == "DELIVERED")
    assert [(a["number"], a["status_code"]) for a in done["attempts"]] == [(1, 500), (2, 200)]
    requests = target.wait_for(2)
    assert requests[0]["body"] == requests[1]["body"]
    assert requests[0]["headers"]["X-Mock-Delivery"] == requests[1]["headers"]["X-Mock-Delivery"]


def test_unreachable_target_is_tried_five_times_then_failed(mock):
    closed = f"http://127.0.0.1:{free_port()}/hook"
    register(mock, closed, ["DEPLOYMENT_STARTED"])
    deploy_app(mock)
    advance(mock, 1)
    for attempts, backoff in ((1, 1), (2, 2), (3, 4), (4, 8)):
        wait_for_delivery(mock, lambda d, n=attempts: len(d["attempts"]) == n)
        advance(mock, backoff)
    failed = wait_for_delivery(mock, lambda d: d["status"] == "FAILED")
    assert [a["number"] for a in failed["attempts"]] == [1, 2, 3, 4, 5]
    assert all(a["status_code"] is None and a["error"] for a in failed["attempts"])
    advance(mock, 100)
    assert len(deliveries(mock)[0]["attempts"]) == 5


# ---------------------------------------------------------------- signature
def test_delivery_with_a_secret_is_signed_with_hmac_sha256(mock, receiver):
    target = receiver()
    hook = register(mock, target.url, ["DEPLOYMENT_STARTED"], target_secret="s3cret")
    assert "target_secret" not in hook
    deploy_app(mock)
    advance(mock, 1)
    request = target.wait_for(1)[0]
    timestamp = request["headers"]["X-Mock-Timestamp"]
    expected = hmac.new(b"s3cret", timestamp.encode() + b"." + request["body"], hashlib.sha256).hexdigest()
    assert request["headers"]["X-Mock-Signature"] == "sha256=" + expected
    wrong = hmac.new(b"other", timestamp.encode() + b"." + request["body"], hashlib.sha256).hexdigest()
    assert request["headers"]["X-Mock-Signature"] != "sha256=" + wrong


def test_delivery_without_a_secret_is_not_signed(mock, receiver):
    target = receiver()
    register(mock, target.url, ["DEPLOYMENT_STARTED"])
    deploy_app(mock)
    advance(mock, 1)
    request = target.wait_for(1)[0]
    assert "X-Mock-Timestamp" in request["headers"]
    assert "X-Mock-Signature" not in request["headers"]


# ---------------------------------------------------------------- deliveries and the call journal
def test_deliveries_name_the_call_that_caused_them(mock, receiver):
    target = receiver()
    register(mock, target.url, ["DEPLOYMENT_STARTED", "DEPLOYMENT_SUCCEEDED"])
    run_deploy(mock)
    target.wait_for(2)
    calls = mock.get("/_mock/calls", params={"operation": "deployApplication"}).json()["results"]
    assert len(calls) == 1
    found = deliveries(mock)
    assert [d["event_type"] for d in found] == ["DEPLOYMENT_STARTED", "DEPLOYMENT_SUCCEEDED"]
    assert all(d["caused_by_call"] == calls[0]["id"] for d in found)
    assert calls[0]["webhook_deliveries"] == [d["id"] for d in found]


# ---------------------------------------------------------------- a slow receiver
def test_hanging_receiver_does_not_delay_api_replies(mock, receiver):
    target = receiver(delay=3.0)
    register(mock, target.url, ["DEPLOYMENT_STARTED"])
    deploy_app(mock)
    advance(mock, 1)
    target.wait_for(1)                              # the delivery is now in flight, held for 3 s
    started = time.monotonic()
    reply = mock.get("/organization")
    elapsed = time.monotonic() - started
    assert reply.status_code == 200
    assert elapsed < 1.0                            # a blocked reply would take the receiver's 3 s
    assert deliveries(mock)[0]["status"] == "PENDING"


def test_four_bad_receivers_slow_only_themselves_and_a_good_one_recovers_at_once(mock, receiver):
    """A receiver that never answers, one that answers 500, one that closes the connection and a closed
    port, each sent many attempts at once: every delivery to a healthy receiver succeeds on its first
    attempt, within that attempt's timeout; once the bad webhooks are removed, new deliveries go at once."""
    from mockserver.world.webhooks import LANE_CONNECTIONS, REPLY_TIMEOUT
    hanging, closing, failing, good = Silent(), Silent(close=True), receiver(statuses=(500,)), receiver()
    events = ["DEPLOYMENT_STARTED", "DEPLOYMENT_SUCCEEDED"]
    try:
        targets = [f"{hanging.url}/{n}" for n in range(6)] + [closing.url, failing.url,
                                                               f"http://127.0.0.1:{free_port()}/hook"]
        bad = [register(mock, url, events)["id"] for url in targets]
        register(mock, f"{good.url}/good", events)
        rounds = 30
        for _ in range(rounds):                     # 2 events a round; retries fall due as the clock moves
            run_deploy(mock)
        good.wait_for(2 * rounds, timeout=15)
        mine = [d for d in deliveries(mock) if d["target_url"].endswith("/good")]
        assert len(mine) == 2 * rounds
        assert all(d["status"] == "DELIVERED" and len(d["attempts"]) == 1 for d in mine), mine
        assert max(d["attempts"][0]["duration_ms"] for d in mine) < REPLY_TIMEOUT * 1000
        assert hanging.open_connections() <= LANE_CONNECTIONS   # one lane for the hanging target's six webhooks
        assert failing.requests and closing.accepted    # the bad ones were tried too
        for ident in bad:
            assert mock.delete(f"{WEBHOOKS}/{ident}").status_code == 204
        deploy_app(mock)
        advance(mock, 1)
        started = time.monotonic()
        good.wait_for(2 * rounds + 1, timeout=2)
        assert time.monotonic() - started < 1.0
    finally:
        hanging.stop()
        closing.stop()


def test_an_attempt_in_flight_when_a_snapshot_is_saved_is_made_again_after_a_restore(mock, receiver):
    """A snapshot holds the delivery an attempt was in flight for: the restored world attempts it anew."""
    target = receiver(delay=0.5)
    register(mock, target.url, ["DEPLOYMENT_STARTED"])
    deploy_app(mock)
    advance(mock, 1)
    target.wait_for(1)                              # answered only after 0.5 s: still in flight
    assert mock.post("/_mock/snapshots", json={"name": "in-flight", "replace": True}).status_code == 201
    wait_for_delivery(mock, lambda d: d["status"] == "DELIVERED")
    assert mock.post("/_mock/snapshots/in-flight/restore").status_code == 200
    assert deliveries(mock)[0]["status"] == "PENDING"
    advance(mock, 0)                                # a request pumps what is due: the attempt made again
    requests = target.wait_for(2)
    assert requests[0]["headers"]["X-Mock-Delivery"] == requests[1]["headers"]["X-Mock-Delivery"]
    done = wait_for_delivery(mock, lambda d: d["status"] == "DELIVERED")
    assert [a["status_code"] for a in done["attempts"]] == [200]
    assert mock.delete("/_mock/snapshots/in-flight").status_code == 204


def test_deliveries_name_the_deploy_call_even_when_another_call_ends_first(mock, receiver):
    put_scenario(mock, "slow-deploy", [{"match": {"operation": "deployApplication"}, "effect": {"latency_ms": 1500}}])
    target = receiver()
    register(mock, target.url, ["DEPLOYMENT_STARTED"])
    worker = threading.Thread(target=deploy_app, args=(mock,))
    worker.start()
    time.sleep(0.3)                                 # the deploy call is now held by the scenario's latency
    assert mock.get("/organization").status_code == 200
    worker.join(timeout=10)
    advance(mock, 1)
    target.wait_for(1)
    deploy_call = mock.get("/_mock/calls", params={"operation": "deployApplication"}).json()["results"][0]
    other_call = mock.get("/_mock/calls", params={"operation": "getOrganization"}).json()["results"][-1]
    delivery = deliveries(mock)[0]
    assert delivery["caused_by_call"] == deploy_call["id"] != other_call["id"]
    assert deploy_call["webhook_deliveries"] == [delivery["id"]]
    assert other_call["webhook_deliveries"] == []


# ---------------------------------------------------------------- the platform's other event names
@pytest.mark.parametrize("succeeded, failed", [("DEPLOYMENT_SUCCEEDED", "DEPLOYMENT_FAILED"),
                                               ("DEPLOYMENT_SUCCESSFUL", "DEPLOYMENT_FAILURE")])
def test_each_vocabulary_receives_events_under_the_names_it_subscribed_with(mock, receiver, succeeded, failed):
    target = receiver()
    hook = register(mock, target.url, ["DEPLOYMENT_STARTED", succeeded, failed])
    assert hook["events"] == ["DEPLOYMENT_STARTED", succeeded, failed]
    run_deploy(mock)
    target.wait_for(2)
    assert sorted(target.events()) == sorted(["DEPLOYMENT_STARTED", succeeded])   # delivered concurrently
    put_scenario(mock, "build-fails", [{"match": {"operation": "deployApplication"},
                                        "effect": {"deployment": {"fail_at": "BUILD", "state": "BUILD_ERROR"}}}])
    run_deploy(mock)
    target.wait_for(4)
    assert sorted(target.events()[:2]) == sorted(["DEPLOYMENT_STARTED", succeeded])
    assert sorted(target.events()[2:]) == sorted(["DEPLOYMENT_STARTED", failed])   # both fall in one clock step
    assert {json.loads(r["body"])["payload"]["application_id"] for r in target.requests} == {APP}
    assert {r["headers"]["X-Mock-Event"] for r in target.requests[:2]} == {"DEPLOYMENT_STARTED", succeeded}


def test_two_webhooks_with_different_vocabularies_each_get_their_own_name(mock, receiver):
    spec_words, platform_words = receiver(), receiver()
    register(mock, spec_words.url, ["DEPLOYMENT_SUCCEEDED"])
    register(mock, platform_words.url, ["DEPLOYMENT_SUCCESSFUL"])
    run_deploy(mock)
    assert [json.loads(r["body"])["event_type"] for r in spec_words.wait_for(1)] == ["DEPLOYMENT_SUCCEEDED"]
    assert [json.loads(r["body"])["event_type"] for r in platform_words.wait_for(1)] == ["DEPLOYMENT_SUCCESSFUL"]


def test_a_webhook_subscribed_with_both_names_gets_one_delivery(mock, receiver):
    target = receiver()
    register(mock, target.url, ["DEPLOYMENT_SUCCESSFUL", "DEPLOYMENT_SUCCEEDED"])
    run_deploy(mock)
    target.wait_for(1)
    time.sleep(0.3)
    assert target.events() == ["DEPLOYMENT_SUCCESSFUL"]


def test_unknown_event_name_is_400(mock):
    reply = mock.post(WEBHOOKS, json={"target_url": "https://hooks.example/x", "events": ["DEPLOYMENT_DONE"],
                                      "enabled": True})
    assert reply.status_code == 400
    assert "body.events" in reply.json()["message"]
