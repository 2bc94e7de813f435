"""Network faults as scenario effects (truncate, malformed_body, dribble, reset), seen by a real
socket client over HTTP; rule windows on the sandbox's clock and by calls; replies that name
the rule that shaped them; 404/405 suggestions; the journal's scenario filter."""

import json
import time

import httpx
import pytest
from support.http import assert_error
from support.ids import ADMIN, APP

pytestmark = pytest.mark.server

ORG_CALL = {"operation": "getOrganization"}


@pytest.fixture
def http(live_manual):
    with httpx.Client(base_url=live_manual.url, headers=ADMIN, timeout=10) as client:
        client.post("/_mock/reset", json={"scenarios": True})
        yield client


def activate(http, effect, match=ORG_CALL, name="net", window=None, rule="r"):
    doc = {"name": name, "rules": [{"name": rule, "match": match, "effect": effect}]}
    if window is not None:
        doc["rules"][0]["window"] = window
    reply = http.put(f"/_mock/scenarios/{name}", content=json.dumps(doc), headers={"Content-Type": "application/json"})
    assert reply.status_code == 200, reply.text
    return reply.json()


def whole_length(http):
    """Bytes of an intact GET /organization reply (the scenario must not be active)."""
    return len(http.get("/organization").content)


def advance(http, seconds):
    assert http.post("/_mock/clock/advance", json={"seconds": seconds}).status_code == 200


# ---------------------------------------------------------------- faults below HTTP
def test_truncate_sends_headers_then_half_the_body_and_closes(http):
    size = whole_length(http)
    activate(http, {"truncate": {"fraction": 0.5}}, {**ORG_CALL, "nth": 1})
    received = []
    with pytest.raises(httpx.RemoteProtocolError, match="incomplete|complete message body"):
        with http.stream("GET", "/organization") as reply:
            assert reply.status_code == 200
            assert reply.headers["content-length"] == str(size)
            assert reply.headers["x-mock-rule"] == "net/r"
            for chunk in reply.iter_raw():
                received.append(chunk)
    assert sum(map(len, received)) == size // 2
    assert http.get("/organization").status_code == 200          # the server keeps serving


def test_truncate_by_byte_count_and_the_journal_keeps_what_was_sent(http):
    activate(http, {"truncate": {"bytes": 7}}, {**ORG_CALL, "nth": 1})
    with pytest.raises(httpx.RemoteProtocolError):
        http.get("/organization")
    call = http.get("/_mock/calls", params={"scenario": "net"}).json()["results"][0]
    assert call["status"] == 200 and call["response"] == '{"id":"'
    assert call["response_headers"]["x-mock-rule"] == "net/r"


def test_reset_after_headers_is_a_connection_reset(http):
    activate(http, {"reset": {"after": "headers"}}, {**ORG_CALL, "nth": 1})
    with http.stream("GET", "/organization") as reply:
        assert reply.status_code == 200                       # the status line and headers arrived
        with pytest.raises(httpx.ReadError, match="reset"):
            reply.read()
    assert http.get("/organization").status_code == 200


def test_reset_mid_body_delivers_part_then_resets(http):
    activate(http, {"reset": {"bytes": 20}}, {**ORG_CALL, "nth": 1})
    received = []
    with pytest.raises(httpx.ReadError, match="reset"):
        with http.stream("GET", "/organization") as reply:
            for chunk in reply.iter_raw():
                received.append(chunk)
    assert b"".join(received) == b'{"id":"8d3e6a4b-1f2c'


def test_malformed_body_is_a_json_decode_error_under_a_json_type(http):
    activate(http, {"malformed_body": True}, {**ORG_CALL, "nth": 1})
    reply = http.get("/organization")
    assert reply.status_code == 200
    assert reply.headers["content-type"] == "application/json"
    assert int(reply.headers["content-length"]) == len(reply.content)
    with pytest.raises(json.JSONDecodeError):
        reply.json()
    assert http.get("/organization").json()["name"]              # only the one call


def test_malformed_body_of_an_injected_error(http):
    activate(http, {"status": 503, "malformed_body": "<html>upstream down</html>"}, {**ORG_CALL, "nth": 1})
    reply = http.get("/organization")
    assert reply.status_code == 503 and reply.content == b"<html>upstream down</html>"
    assert reply.headers["content-type"] == "application/json"


def test_dribble_sends_the_body_in_timed_chunks(http):
    size = whole_length(http)
    activate(http, {"dribble": {"chunks": 4, "delay_ms": 150}}, {**ORG_CALL, "nth": 1})
    arrivals, body = [], b""
    started = time.perf_counter()
    with http.stream("GET", "/organization") as reply:
        for chunk in reply.iter_raw():
            arrivals.append((time.perf_counter() - started, len(chunk)))
            body += chunk
    assert sum(size for _, size in arrivals) == size
    assert len(arrivals) == 4                                    # one read per piece: they came apart
    gaps = [b[0] - a[0] for a, b in zip(arrivals, arrivals[1:])]
    assert all(gap >= 0.12 for gap in gaps), gaps
    assert json.loads(body)["name"]                              # slow, but whole and valid


def test_dribble_by_chunk_size(http):
    activate(http, {"dribble": {"chunk_bytes": 100, "delay_ms": 50}}, {**ORG_CALL, "nth": 1})
    with http.stream("GET", "/organization") as reply:
        sizes = [len(chunk) for chunk in reply.iter_raw()]
    assert sizes[:-1] == [100] * (len(sizes) - 1) and 0 < sizes[-1] <= 100


# ---------------------------------------------------------------- windows and probability
def test_window_on_the_clock_is_an_outage_that_ends_by_itself(http):
    activate(http, {"status": 503, "message": "maintenance"}, ORG_CALL, window={"after": 10, "seconds": 30})
    assert http.get("/organization").status_code == 200          # opens 10 s after this first call
    advance(http, 10)
    assert_error(http.get("/organization"), 503)
    advance(http, 29)
    assert_error(http.get("/organization"), 503)
    advance(http, 1)
    assert http.get("/organization").status_code == 200          # 30 s later it is over
    assert http.get("/_mock/scenarios/net").json()["rules"][0]["window"]["calls_in_window"] == 2


def test_window_from_an_absolute_time(http):
    now = http.get("/_mock/clock").json()["epoch"]
    activate(http, {"status": 503}, ORG_CALL, window={"start": now + 60, "seconds": 5})
    assert http.get("/organization").status_code == 200
    advance(http, 60)
    assert http.get("/organization").status_code == 503
    advance(http, 5)
    assert http.get("/organization").status_code == 200


def test_window_for_the_next_n_calls(http):
    activate(http, {"status": 500}, ORG_CALL, window={"calls": 2})
    assert [http.get("/organization").status_code for _ in range(4)] == [500, 500, 200, 200]


def test_probability_in_a_sandbox_follows_its_seed(live_manual):
    def pattern(seed):
        with httpx.Client(base_url=live_manual.url, headers=ADMIN, timeout=10) as client:
            name = f"seeded-{seed}-{time.monotonic_ns()}"
            doc = {"name": "coin", "rules": [{"match": {**ORG_CALL, "probability": 0.5}, "effect": {"status": 500}}]}
            assert client.put(f"/_mock/sandboxes/{name}", json={"seed": seed, "scenarios": [doc]}).status_code in (
                200, 201)
            out = [client.get(f"/sandbox/{name}/organization").status_code for _ in range(24)]
            client.delete(f"/_mock/sandboxes/{name}")
            return out
    first = pattern(7)
    assert first == pattern(7)
    assert first != pattern(8)
    assert 500 in first and 200 in first


# ---------------------------------------------------------------- replies that explain themselves
def test_x_mock_rule_names_the_rule_on_injected_errors_and_not_elsewhere(http):
    activate(http, {"status": 500}, {**ORG_CALL, "nth": 2}, name="flaky", rule="second")
    first, second = http.get("/organization"), http.get("/organization")
    assert "x-mock-rule" not in first.headers
    assert second.headers["x-mock-rule"] == "flaky/second"


def test_x_mock_rule_on_a_latency_rule_that_left_the_body_alone(http):
    activate(http, {"latency_ms": 1}, {"operation": "getApplicationStatus"}, name="slow")
    reply = http.get(f"/application/{APP}/status")
    assert reply.status_code == 200 and reply.headers["x-mock-rule"] == "slow/r"


def test_404_suggests_the_closest_documented_paths(http):
    body = assert_error(http.get(f"/aplication/{APP}/status"), 404)
    assert "did you mean /application/{app_id}/status" in body["message"]
    assert "did you mean /organization" in assert_error(http.get("/organisation"), 404)["message"]
    assert "did you mean" not in assert_error(http.get("/zzz/qqq/www/eee/rrr"), 404)["message"]


def test_405_names_the_operation_ids_of_the_path(http):
    reply = http.delete(f"/application/{APP}/status")
    body = assert_error(reply, 405)
    assert reply.headers["allow"] == "GET, HEAD"
    assert "getApplicationStatus" in body["message"]


def test_journal_scenario_filter_takes_a_scenario_name_or_a_glob(http):
    doc = {"name": "pair", "rules": [
        {"name": "org", "match": ORG_CALL, "effect": {"latency_ms": 1}},
        {"name": "status", "match": {"operation": "getApplicationStatus"}, "effect": {"latency_ms": 1}}]}
    assert http.put("/_mock/scenarios/pair", json=doc).status_code == 200
    activate(http, {"latency_ms": 1}, {"operation": "listProjects"}, name="other")
    http.get("/organization")
    http.get(f"/application/{APP}/status")
    http.get(f"/organization/{http.get('/organization').json()['id']}/project")

    def rules(**params):
        return sorted(c["scenario_rule"] for c in http.get("/_mock/calls", params=params).json()["results"])
    assert rules(scenario="pair") == ["pair/org", "pair/org", "pair/status"]
    assert rules(scenario="pair/status") == ["pair/status"]
    assert rules(scenario="*/org") == ["pair/org", "pair/org"]
    assert rules(scenario="o*") == ["other/r"]
    assert rules(scenario="nothing") == []
