"""Cached replies (world/replies.py): a project list read again is answered with the bytes it was answered
with, and any change to the world (an API write, a control call, a deployment step falling due, a scenario rule)
makes the next read build it anew."""

import pytest
from starlette.testclient import TestClient
from support.ids import ADMIN, APP, ENV, ORG, PROJECT

from mockserver.world.frozen import dumps, loads
from mockserver.world.replies import MAX_BYTES, MAX_REPLIES, ReplyCache

LIST = f"/organization/{ORG}/project"


@pytest.fixture
def built(server):
    """How many times each cached operation's handler ran."""
    counts = {"listProjects": 0, "getProject": 0, "getApplicationStatus": 0}
    handlers = dict(server.pipeline.handlers)
    for name in counts:
        def counted(ctx, name=name, handler=handlers[name]):
            counts[name] += 1
            return handler(ctx)
        handlers[name] = counted
    server.pipeline.handlers = handlers
    return counts


def world(server):
    return server.sandboxes.get("default").rt


def names(reply):
    assert reply.status_code == 200, reply.text
    return sorted(project["name"] for project in reply.json()["results"])


def test_a_second_read_is_the_same_bytes_without_building_them(client, built):
    first, second = client.get(LIST), client.get(LIST)
    assert first.content == second.content and first.status_code == 200
    assert built["listProjects"] == 1
    assert first.headers["x-request-id"] != second.headers["x-request-id"]
    assert int(second.headers["x-ratelimit-remaining"]) == int(first.headers["x-ratelimit-remaining"]) - 1
    calls = client.get("/_mock/calls", params={"path": LIST}).json()["results"]
    assert len(calls) == 2 and calls[0]["response"] == calls[1]["response"]


def test_every_api_write_drops_what_was_cached(client, built):
    before = names(client.get(LIST))
    assert client.post(LIST, json={"name": "added"}).status_code == 201
    assert names(client.get(LIST)) == sorted([*before, "added"])
    project = client.get(f"/project/{PROJECT}").json()
    assert client.put(f"/project/{PROJECT}", json={"name": "renamed"}).status_code == 200
    assert client.get(f"/project/{PROJECT}").json()["name"] == "renamed" != project["name"]
    assert "renamed" in names(client.get(LIST))
    environment = client.post(f"/project/{PROJECT}/environment", json={"name": "extra"}).json()
    counts = {p["id"]: p["associated_environments_count"] for p in client.get(LIST).json()["results"]}
    assert client.delete(f"/environment/{environment['id']}").status_code == 204
    after = {p["id"]: p["associated_environments_count"] for p in client.get(LIST).json()["results"]}
    assert after[PROJECT] == counts[PROJECT] - 1
    assert built["listProjects"] == 5


def test_a_refused_write_leaves_nothing_stale(client, built):
    client.get(LIST)
    taken = client.get(LIST).json()["results"][0]["name"]
    assert client.post(LIST, json={"name": taken}).status_code == 409
    assert client.get(LIST).status_code == 200
    assert built["listProjects"] == 2                # the write counted as a change before its handler refused


def test_control_calls_drop_what_was_cached(client, built):
    client.get(LIST)
    assert client.post("/_mock/reset").status_code in (200, 204)
    client.get(LIST)
    assert client.post("/_mock/clock/advance", json={"seconds": 1}).status_code == 200
    client.get(LIST)
    assert client.get("/_mock/clock").status_code == 200    # a read of the control API changes nothing
    client.get(LIST)
    assert built["listProjects"] == 3


def test_a_deployment_step_falling_due_counts_as_a_change(client, server):
    rt = world(server)
    assert client.post(f"/application/{APP}/deploy", json={}).status_code in (200, 202)
    before = rt.generation
    client.get(LIST)
    assert rt.generation == before                   # nothing fell due: the world is as it was
    assert client.post("/_mock/clock/advance", json={"seconds": 3600}).status_code == 200
    client.get(f"/application/{APP}/status")
    assert rt.generation > before


def test_a_status_is_cached_only_once_its_deployment_has_ended(client, server, built):
    """The world's clock is moved directly, as a real clock moves: no control call counts a change."""
    status, clock = f"/application/{APP}/status", world(server).clock
    settled = client.get(status).json()
    assert client.get(status).json() == settled and built["getApplicationStatus"] == 1
    assert client.post(f"/application/{APP}/deploy", json={}).status_code in (200, 202)
    seen = []
    for _ in range(60):
        seen.append(client.get(status).json()["state"])
        if seen[-1] == "DEPLOYED" and len(seen) > 1:
            break
        clock.advance(1)
    assert seen[0] == "DEPLOYMENT_QUEUED" and seen[-1] == "DEPLOYED" and "DEPLOYING" in seen
    assert built["getApplicationStatus"] == 1 + len(seen)              # under way: built at every read
    ended = client.get(status).json()
    clock.advance(3600)
    assert client.get(status).json() == ended and built["getApplicationStatus"] == 1 + len(seen)   # cached since


def test_nothing_is_cached_while_a_scenario_rule_is_active(client, built):
    rule = {"name": "third-list-fails", "rules": [{"match": {"operation": "listProjects", "nth": 3},
                                                    "effect": {"status": 500, "message": "no"}}]}
    assert client.put("/_mock/scenarios/third-list-fails", json=rule).status_code == 200
    statuses = [client.get(LIST).status_code for _ in range(4)]
    assert statuses == [200, 200, 500, 200]
    assert built["listProjects"] == 3                # the third was the rule's reply


def test_other_callers_organizations_and_queries_are_cached_apart(client, built):
    whole = client.get(LIST).json()
    paged = client.get(LIST, params={"page": 1, "page_size": 1}).json()
    assert len(paged["results"]) == 1 and paged["pagination"]["page_size"] == 1
    assert client.get(LIST).json() == whole
    assert built["listProjects"] == 2
    assert client.get(LIST, headers={"Authorization": "Token nope"}).status_code == 401


def test_head_and_tracing_build_every_reply(make_server, built, server):
    with TestClient(server, base_url="http://mock", headers=ADMIN) as client:
        client.head(LIST)
        client.head(LIST)
    assert built["listProjects"] == 2
    traced = make_server()
    traced.pipeline.trace(_NoTracer())
    assert traced.pipeline.cached == frozenset()


class _NoTracer:
    def serving(self, fn):
        return fn

    def step(self, name, fn):
        return fn

    def handling(self, handlers):
        return handlers

    def recording(self, fn):
        return fn


def test_a_copied_or_saved_world_carries_no_cached_reply(client, server):
    client.get(LIST)
    rt = world(server)
    assert rt.replies.replies
    copy = loads(dumps(rt, server.shared), server.shared)
    assert copy.replies.replies == {} and copy.generation == rt.generation


def test_replies_hold_only_at_the_count_they_were_cached_at():
    replies = ReplyCache()
    assert replies.get("a", (0, 0)) is None
    replies.put("a", (0, 0), b"A")
    assert replies.get("a", (0, 0)) == b"A"
    replies.put("b", (1, 0), b"B")                  # made when the world was otherwise: not cached
    assert replies.get("b", (0, 0)) is None
    assert replies.get("a", (0, 1)) is None and replies.replies == {}
    assert replies.get("a", (0, 0)) is None          # what was dropped does not come back


def test_replies_are_bounded_in_count_and_bytes():
    replies = ReplyCache()
    replies.get("x", 0)
    for index in range(MAX_REPLIES + 5):
        replies.put(index, 0, b"r")
        assert len(replies.replies) <= MAX_REPLIES
    replies.put("big", 0, b"x" * (MAX_BYTES + 1))
    assert "big" not in replies.replies and replies.bytes <= MAX_BYTES
    replies.put("half", 0, b"x" * (MAX_BYTES // 2))
    replies.put("half2", 0, b"x" * (MAX_BYTES // 2 + 1))
    assert replies.bytes <= MAX_BYTES and "half2" in replies.replies


def test_env_fixture_world_list_matches_a_fresh_build(client, server):
    """What a cached read answers is what building the reply would answer (checked after a mix of changes)."""
    client.get(LIST)
    client.post(f"/project/{PROJECT}/environment", json={"name": "preview"})
    client.post(f"/environment/{ENV}/application", json={"name": "one", "git_repository": {
        "url": "https://git.example.com/a/b.git", "branch": "main"}})
    kept = client.get(LIST).content
    again = client.get(LIST).content
    world(server).replies.replies.clear()
    assert client.get(LIST).content == kept == again
