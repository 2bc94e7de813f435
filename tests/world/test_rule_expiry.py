"""Rules that expire: after `times` firings, or at `until` on the sandbox's clock; an expired rule no longer
fires (nor counts), and the scenario's description says so. And `verify` takes `times` over HTTP, the name
the Python client uses, as well as `count`."""

import json
from datetime import UTC, datetime

import pytest
from starlette.testclient import TestClient
from support.http import assert_error
from support.ids import ADMIN


@pytest.fixture
def http(make_server):
    with TestClient(make_server(), base_url="http://mock", headers=ADMIN) as client:
        yield client


def clock_now(http):
    return http.get("/_mock/clock").json()["epoch"]


def iso(seconds):
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def activate(http, **rule):
    doc = {"name": "expiring", "rules": [{"name": "r", "match": {"operation": "getOrganization"},
                                          "effect": {"status": 503}, **rule}]}
    reply = http.put("/_mock/scenarios/expiring", content=json.dumps(doc))
    assert reply.status_code == 200, reply.text
    return reply.json()["rules"][0]


def statuses(http, calls):
    return [http.get("/organization").status_code for _ in range(calls)]


def described(http):
    return http.get("/_mock/scenarios/expiring").json()["rules"][0]


def test_a_rule_fires_times_times_then_no_more(http):
    assert activate(http, times=2)["expired"] is False
    assert statuses(http, 4) == [503, 503, 200, 200]
    rule = described(http)
    assert (rule["fired"], rule["matched"], rule["times"], rule["expired"]) == (2, 2, 2, True)


def test_times_counts_firings_not_matches(http):
    activate(http, times=2, match={"operation": "getOrganization", "every": 2})
    assert statuses(http, 6) == [200, 503, 200, 503, 200, 200]


def test_a_rule_no_longer_fires_from_until_on_the_clock(http):
    until = iso(int(clock_now(http)) + 60)
    activate(http, until=until)
    assert statuses(http, 2) == [503, 503]
    assert http.post("/_mock/clock/advance", json={"seconds": 59}).status_code == 200
    assert statuses(http, 1) == [503]
    assert http.post("/_mock/clock/advance", json={"seconds": 1}).status_code == 200
    assert statuses(http, 2) == [200, 200]
    rule = described(http)
    assert rule["until"].startswith(until[:-1]) and rule["expired"] is True
    assert rule["fired"] == 3


def test_until_in_unix_seconds_and_a_reset_rewinds_times(http):
    activate(http, until=clock_now(http) + 3600, times=1)
    assert statuses(http, 2) == [503, 200]
    assert http.post("/_mock/reset", json={}).status_code == 200
    assert statuses(http, 2) == [503, 200]


def test_an_until_that_no_clock_can_reach_is_refused(http):
    doc = {"name": "expiring", "rules": [{"until": "soon", "effect": {"status": 503}}]}
    body = assert_error(http.put("/_mock/scenarios/expiring", content=json.dumps(doc)), 400)
    assert "rules.0.until" in body["message"] and "ISO 8601" in body["message"]


# ---------------------------------------------------------------- verify: times is count
def test_verify_takes_times_as_count_over_http(http):
    for _ in range(2):
        http.get("/organization")
    ok = http.post("/_mock/calls/verify", json={"operation": "getOrganization", "times": 2}).json()
    assert ok["ok"] is True and ok["expected"] == {"count": 2}
    missed = http.post("/_mock/calls/verify", json={"operation": "getOrganization", "times": 3}).json()
    assert missed["ok"] is False and "expected count 3" in missed["message"]
    assert http.post("/_mock/calls/verify", json={"operation": "getOrganization", "count": 2}).json()["ok"] is True
    assert_error(http.post("/_mock/calls/verify", json={"operation": "getOrganization", "times": -1}), 400)
    both = assert_error(http.post("/_mock/calls/verify", json={"operation": "getOrganization", "times": 2, "count": 2}),
                        400)
    assert "give count or times, not both" in both["message"]
