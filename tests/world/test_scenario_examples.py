"""The example scenarios of round two (scenarios/*.yaml), each loaded as a user would and checked
for what its comment promises: faults over a real socket, the outage window, deploys by polls."""

import contextlib
import json
import time

import httpx
import pytest
from starlette.testclient import TestClient
from support import ROOT
from support.http import assert_error
from support.ids import ADMIN, APP, CONTAINER, ENV, ORG

EXAMPLES = ROOT / "scenarios"
STATUS = f"/application/{APP}/status"


@pytest.fixture
def live(live_manual):
    """The module's live server, emptied of scenarios; `live.load(name)` activates an example file over HTTP."""
    with httpx.Client(base_url=live_manual.url, headers=ADMIN, timeout=10) as http:
        http.post("/_mock/reset", json={"scenarios": True})

        def load(name):
            text = (EXAMPLES / f"{name}.yaml").read_text()
            reply = http.put(f"/_mock/scenarios/{name}", content=text, headers={"Content-Type": "application/yaml"})
            assert reply.status_code == 200, reply.text
            assert reply.json()["warnings"] == []
        http.load = load
        yield http


@pytest.fixture
def example(make_server):
    with contextlib.ExitStack() as stack:
        def start(name):
            server = make_server(scenarios=[EXAMPLES / f"{name}.yaml"])
            return stack.enter_context(TestClient(server, base_url="http://mock", headers=ADMIN))
        yield start


@pytest.mark.server
def test_truncated_body_cuts_every_fourth_status_reply(live):
    live.load("truncated-body")
    outcomes = []
    for _ in range(8):
        try:
            outcomes.append(live.get(STATUS).status_code)
        except httpx.RemoteProtocolError as error:
            assert "complete message body" in str(error)
            outcomes.append("cut")
    assert outcomes == [200, 200, 200, "cut"] * 2


@pytest.mark.server
def test_malformed_json_breaks_the_first_two_listings(live):
    live.load("malformed-json")
    replies = [live.get(f"/organization/{ORG}/project") for _ in range(3)]
    assert [r.status_code for r in replies] == [200, 200, 200]
    for reply in replies[:2]:
        assert reply.headers["content-type"] == "application/json"
        assert reply.headers["x-mock-rule"] == "malformed-json/broken-listing"
        with pytest.raises(json.JSONDecodeError):
            reply.json()
    assert replies[2].json()["results"]


@pytest.mark.server
def test_slow_body_sends_the_queue_in_five_timed_chunks(live):
    live.load("slow-body")
    arrivals, body = [], b""
    started = time.perf_counter()
    with live.stream("GET", f"/environment/{ENV}/deploymentQueue") as reply:
        for chunk in reply.iter_raw():
            arrivals.append(time.perf_counter() - started)
            body += chunk
    assert "results" in json.loads(body)
    assert len(arrivals) == 5 or len(body) < 5                # a body shorter than 5 bytes cannot make 5 pieces
    assert arrivals[-1] - arrivals[0] >= 1.5                  # 4 gaps of 400 ms


@pytest.mark.server
def test_connection_reset_resets_every_third_deploy_after_the_headers(live):
    live.load("connection-reset")
    outcomes = []
    for _ in range(3):
        try:
            outcomes.append(live.post(f"/container/{CONTAINER}/deploy").status_code)
        except httpx.ReadError as error:
            assert "reset" in str(error).lower()
            outcomes.append("reset")
        live.post("/_mock/clock/advance", json={"seconds": 60})
    assert outcomes == [202, 202, "reset"]
    history = live.get(f"/container/{CONTAINER}/deploymentHistory").json()["results"]
    assert len([h for h in history if h["trigger_action"] == "DEPLOY"]) >= 3    # the reset deploy happened


def test_status_outage_window_opens_and_ends_by_itself(example):
    http = example("status-outage-window")
    assert http.get(STATUS).status_code == 200
    http.post("/_mock/clock/advance", json={"seconds": 30})
    body = assert_error(http.get(STATUS), 503)
    assert body["message"] == "status service under maintenance"
    http.post("/_mock/clock/advance", json={"seconds": 119})
    assert http.get(STATUS).status_code == 503
    http.post("/_mock/clock/advance", json={"seconds": 1})
    assert http.get(STATUS).status_code == 200


def test_deploy_by_polls_ends_deployed_on_the_third_read(example):
    http = example("deploy-by-polls")
    before = http.get("/_mock/clock").json()["epoch"]
    assert http.post(f"/application/{APP}/deploy", json={}).status_code == 202
    states = [http.get(STATUS).json()["state"] for _ in range(3)]
    assert states[-1] == "DEPLOYED" and "DEPLOYED" not in states[:2]
    assert http.get("/_mock/clock").json()["epoch"] == before
