"""A sandbox made with `expires` ends after a time on its own clock or a number of API calls: its next API call
meets a fresh sandbox of that name, a control call a 404 that says it expired, and a call without a credential
makes nothing."""

from starlette.testclient import TestClient
from support.ids import ADMIN, ORG

PROJECTS = f"/api/v1/organization/{ORG}/project"


def client(make_server):
    return TestClient(make_server(), base_url="http://mock")


def names(http, box):
    return sorted(p["name"] for p in http.get(f"/sandbox/{box}{PROJECTS}", headers=ADMIN).json()["results"])


def test_a_sandbox_expiring_after_calls_serves_that_many_then_a_fresh_one_takes_its_place(make_server):
    http = client(make_server)
    assert http.put("/_mock/sandboxes/short", json={"expires": {"calls": 3}}).json()["expires"] == {"calls": 3}
    start = names(http, "short")                                             # call 1
    assert http.post(f"/sandbox/short{PROJECTS}", json={"name": "kept"}, headers=ADMIN).status_code == 201   # 2
    assert names(http, "short") == sorted([*start, "kept"])                  # call 3: the last it serves
    assert names(http, "short") == start                                     # call 4: a fresh sandbox
    assert "expires" not in http.get("/_mock/sandboxes/short").json()        # made without the option


def test_a_sandbox_expiring_on_its_clock_is_a_404_to_control_calls_that_says_so(make_server):
    http = client(make_server)
    assert http.put("/_mock/sandboxes/timed", json={"clock": "manual", "expires": {"seconds": 60}}).status_code in (
        200, 201)
    assert http.post("/sandbox/timed/_mock/clock/advance", json={"seconds": 59}).status_code == 200
    assert http.get("/sandbox/timed/_mock/calls").status_code == 200         # not yet
    assert http.post("/sandbox/timed/_mock/clock/advance", json={"seconds": 1}).status_code == 200
    reply = http.post("/sandbox/timed/_mock/calls/verify", json={"count": 0})
    assert reply.status_code == 404
    assert "it expired 60 s after it was made, on its clock" in reply.json()["message"]
    assert "timed" not in [box["name"] for box in http.get("/_mock/sandboxes").json()["results"]]


def test_a_call_without_a_credential_does_not_bring_an_expired_sandbox_back(make_server):
    http = client(make_server)
    http.put("/_mock/sandboxes/once", json={"expires": {"calls": 1}})
    assert http.get(f"/sandbox/once{PROJECTS}", headers=ADMIN).status_code == 200
    assert http.get(f"/sandbox/once{PROJECTS}").status_code == 401
    assert http.get("/_mock/sandboxes/once").status_code == 404


def test_expires_is_checked_like_every_option(make_server):
    http = client(make_server)
    for bad in ({"calls": 0}, {"seconds": -1}, {}, {"minutes": 3}, {"calls": "3"}):
        reply = http.put("/_mock/sandboxes/bad", json={"expires": bad})
        assert reply.status_code == 400 and reply.json()["message"].startswith("body.expires"), (bad, reply.text)
