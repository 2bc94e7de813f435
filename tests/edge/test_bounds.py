"""Bounded request parsing: JSON nested deeper than the bound is a 400 that names it, on the API and the
control API, and every call that reached the API is journaled, whatever it ended in."""

import pytest
from starlette.testclient import TestClient
from support.http import assert_error
from support.ids import ADMIN, ORG, PROJECT

from mockserver.api import handlers
from mockserver.edge.jsonbody import MAX_DEPTH, depth_exceeds

VARIABLES = f"/project/{PROJECT}/environmentVariable"
JSON = {"Content-Type": "application/json"}


def nested(levels):
    """A JSON object `levels` deep (the outermost object counts as one)."""
    return '{"a":' * (levels - 1) + "{}" + "}" * (levels - 1)


def variable_with(extra, levels):
    """A valid variable body whose unknown member `extra` brings the whole body to `levels` deep."""
    return f'{{"key": "DEEP_{levels}", "value": "1", "{extra}": {nested(levels - 1)}}}'


def test_the_bound_is_counted_in_levels_of_arrays_and_objects():
    assert not depth_exceeds({"a": [{"b": []}]}, 4)
    assert depth_exceeds({"a": [{"b": []}]}, 3)
    assert not depth_exceeds([], 1) and not depth_exceeds("text", 0)
    assert depth_exceeds([[[[]]]] * 3, 3)


def test_a_body_at_the_bound_is_read_and_one_level_more_is_a_400_naming_it(client):
    assert client.post(VARIABLES, content=variable_with("ignored", MAX_DEPTH), headers=JSON).status_code == 201
    reply = client.post(VARIABLES, content=variable_with("ignored", MAX_DEPTH + 1), headers=JSON)
    body = assert_error(reply, 400)
    assert f"deeper than {MAX_DEPTH} levels" in body["message"] and body["message"].startswith("body:")
    assert body["details"][0]["location"] == "body"


@pytest.mark.parametrize("levels", [1000, 3000, 100000])
def test_bodies_nested_far_past_the_bound_are_400s_and_journaled(client, levels):
    for text in (nested(levels), "[" * levels + "]" * levels):
        reply = client.post(f"/organization/{ORG}/project", content=text, headers=JSON)
        assert f"deeper than {MAX_DEPTH} levels" in assert_error(reply, 400)["message"]
    calls = client.get("/_mock/calls", params={"operation": "createProject"}).json()["results"]
    assert [call["status"] for call in calls] == [400, 400]


@pytest.mark.parametrize("method, path", [("PUT", "/_mock/sandboxes/deep"), ("POST", "/_mock/clock/advance"),
                                          ("POST", "/_mock/calls/verify"), ("POST", "/_mock/tokens"),
                                          ("PUT", "/_mock/scenarios/deep"), ("POST", "/_mock/scenarios")])
def test_control_routes_refuse_bodies_past_the_bound_with_the_error_body(client, method, path):
    for text in (nested(MAX_DEPTH + 1), nested(3000), "[" * 3000 + "]" * 3000):
        reply = client.request(method, path, content=text, headers=JSON)
        assert f"deeper than {MAX_DEPTH} levels" in assert_error(reply, 400)["message"]
    assert client.get("/_mock/sandboxes/deep").status_code == 404


def test_a_call_that_ended_in_a_500_is_journaled(client, monkeypatch):
    def broken(ctx):
        raise RuntimeError("a bug")
    monkeypatch.setitem(handlers.HANDLERS, "getOrganization", broken)
    monkeypatch.setattr("mockserver.api.pipeline.HANDLERS", handlers.HANDLERS)
    reply = client.get("/organization", headers={"X-Request-Id": "the-500"})
    assert reply.json() == {"status": 500, "error": "Internal Server Error", "message": "internal error: RuntimeError"}
    call = client.get("/_mock/calls", params={"request_id": "the-500"}).json()["results"]
    assert [(c["status"], c["operation"]) for c in call] == [(500, "getOrganization")]


def test_a_call_whose_body_the_journal_cannot_keep_is_journaled_without_it(server, monkeypatch):
    """Should recording a call ever fail (a bug), the call is still in the journal, with a note for its body."""
    original = server.rt.journal.record.__func__

    def fussy(journal, call):
        if isinstance(call.body, dict):
            raise TypeError("cannot keep this body")
        return original(journal, call)
    monkeypatch.setattr(type(server.rt.journal), "record", fussy)
    with TestClient(server, base_url="http://mock", headers=ADMIN) as client:
        assert client.post(VARIABLES, json={"key": "KEPT", "value": "1"}).status_code == 201
        call = client.get("/_mock/calls").json()["results"][-1]
    assert call["status"] == 201 and call["body"] == "(body not kept: TypeError)"
