"""Flat cost at fleet scale: generated data made once, indexes instead of scans, the journal's byte
budget, and worlds that leave no cycle behind when they are retired."""

import asyncio
import gc
import random
import weakref

import orjson
import pytest
from starlette.testclient import TestClient
from support.ids import ADMIN, APP, JOB, PROJECT

from mockserver.calls.journal import Budget, Exchange, Journal
from mockserver.process.collector import Collector
from mockserver.world.commits import make_commit
from mockserver.world.fake import Fake


# ---------------------------------------------------------------- generated data
def test_commits_are_the_ones_the_seed_always_gave():
    """Figures taken from the generator of commits made one at a time (world/commits.py)."""
    commits = Fake(1).commits("https://github.com/acme/shop.git", "main", 100, 1_700_000_000.0)
    assert len(commits) == 100
    first, last = commits[0], commits[-1]
    assert first["git_commit_id"] == "72a5961a60efcd19128b1239441ae450f9484edf"
    assert first["message"] == "Speed up the cleanup job schedule"
    assert first["author_name"] == "Ben Ivanova"
    assert first["created_at"] == "2023-11-14T22:13:20.000000Z"
    assert last["created_at"] == "2023-11-06T15:08:13.000000Z"


def test_a_sandbox_keeps_its_own_sequence_of_people_and_passwords():
    default, named = Fake(1), Fake(1)
    named.reseed("sb-a")
    assert [default.person(), default.person()] == ["Ryan Gallagher", "Jon Cole"]
    assert default.password(24) == "_#nKi!Kg46s#@SZG4J#4KO55"
    assert default.backup_name("db", "2026-01-01T00:00:00Z") == "db-2026-01-01-ajpg"
    assert [named.person(), named.person()] == ["Dawn White", "Michael Davila"]


def test_generated_values_are_made_once_and_then_looked_up():
    make_commit.cache_clear()
    generator = Fake(3)
    first = generator.commits("https://git.example/a.git", "main", 100, 1e9)[0]
    again = Fake(3).commits("https://git.example/a.git", "main", 100, 1e9)[0]
    assert again is first                         # a second world with the same seed shares the records
    info = make_commit.cache_info()
    assert (info.hits, info.misses) == (1, 1)
    assert Fake(4).commits("https://git.example/a.git", "main", 100, 1e9)[0] != first


def test_a_deploy_and_the_commit_listing_name_the_same_commits_as_before(client):
    """The fixture job's commits and the commit an application deploy pins, as the generator gave them."""
    commits = client.get(f"/job/{JOB}/commit").json()["results"]
    assert len(commits) == 100
    assert commits[0]["git_commit_id"] == "4e41fa1426e8ad80269470315579cafb0bde33ac"
    assert commits[0]["message"] == "Rework the nightly backup script (#169)"
    assert commits[0]["author_name"] == "Olga Eriksson"
    assert commits[-1]["git_commit_id"] == "9d55e81ee16abec8f7778308cf73ab18bac81b1f"
    assert client.post(f"/application/{APP}/deploy", json={}).status_code == 202
    history = client.get(f"/application/{APP}/deploymentHistory").json()["results"]
    commit = history[0]["details"]["commit"]
    assert commit["git_commit_id"] == "6be017eb2c8ed445997b8f41df43b55a804a847c"
    assert commit["message"] == "Simplify errors of the signup form"


def test_log_lines_are_the_ones_the_seed_always_gave(client, server):
    assert client.post(f"/application/{APP}/deploy", json={}).status_code == 202
    client.post("/_mock/clock/advance", json={"seconds": 60})
    lines = [line["message"] for line in client.get(f"/application/{APP}/log?tail=5").json()["results"]]
    # the lines follow from the deployment request's id, which the seed's sequence gives after the default
    # fixtures took theirs: records added to the fixtures (their built-in variables) move it on
    assert lines == ["GET / 200 172ms", "GET /healthz 200 66ms", "Starting web on port 8080", "GET / 200 137ms",
                     "GET /healthz 200 136ms"]


# ---------------------------------------------------------------- indexes
def test_an_override_of_a_built_in_beside_it_keeps_both_in_the_key_index(client):
    """A built-in and its override at the environment share a key: the index holds both, and each
    goes without taking the other out of the index."""
    listed = client.get(f"/application/{APP}/environmentVariable").json()["results"]
    built_in = next(v for v in listed if v["variable_type"] == "BUILT_IN" and v["key"].endswith("_HOST_INTERNAL"))
    env = client.get(f"/application/{APP}").json()["environment"]["id"]
    override = client.post(f"/variable/{built_in['id']}/override",
                           json={"value": "x", "override_scope": "ENVIRONMENT", "override_parent_id": env})
    assert override.status_code == 201, override.text
    again = client.post(f"/variable/{built_in['id']}/override",
                        json={"value": "y", "override_scope": "ENVIRONMENT", "override_parent_id": env})
    assert again.status_code == 409
    assert client.delete(f"/environment/{env}/environmentVariable/{override.json()['id']}").status_code == 204
    third = client.post(f"/variable/{built_in['id']}/override",
                        json={"value": "z", "override_scope": "ENVIRONMENT", "override_parent_id": env})
    assert third.status_code == 201, third.text


def test_a_page_of_a_long_list_reads_only_that_page(server, client):
    store = server.rt.store
    for index in range(300):
        assert client.post(f"/project/{PROJECT}/environmentVariable",
                           json={"key": f"K{index}", "value": "v"}).status_code == 201
    reply = client.get(f"/project/{PROJECT}/environmentVariable?page=3&page_size=20").json()
    assert [item["key"] for item in reply["results"]][:2] == ["K40", "K41"] or reply["pagination"]["page"] == 3
    assert reply["pagination"]["total_count"] >= 300
    assert len(store.variables.view(PROJECT)) >= 300


# ---------------------------------------------------------------- the journal's byte budget
class _Operation:
    operation_id, template = "getOrganization", "/organization"


def _record(journal, index, size=1000):
    """A call whose reply does not compress (each its own random bytes): what a byte bound is tested with."""
    journal.record(Exchange(journal.reserve(), at=float(index), received=float(index), method="GET",
                            path="/organization", operation=_Operation(), headers_kept=b"h: v", status=200,
                            response=random.Random(index).randbytes(size), duration=0.001, request_id=f"r{index}",
                            token_name="admin"))


def test_the_byte_budget_drops_the_oldest_calls_and_counts_them():
    budget = Budget(100_000)
    journal = Journal(10_000, budget)
    for index in range(500):
        _record(journal, index)
    assert budget.total <= budget.limit
    assert journal.bytes == budget.total
    kept = [call.request_id for call in journal.entries]
    assert kept[-1] == "r499"                                   # the newest stay
    assert journal.dropped == 500 - len(kept) > 0               # every call given up is counted
    assert kept == [f"r{i}" for i in range(500 - len(kept), 500)]   # and those are the oldest


def test_a_trim_gives_up_a_small_slice_of_the_budget_not_a_tenth():
    """The calls given up are freed while a request waits: a trim frees about 1/128 of the budget (whole
    blocks of packed calls, so up to one block more)."""
    budget = Budget(20_000_000)
    journal = Journal(100_000, budget)
    while not journal.dropped:
        _record(journal, len(journal.entries))
    kept = budget.total
    assert budget.limit - budget.limit // 64 < kept <= budget.limit     # far above the 90 % a tenth would leave
    block = journal.entries.blocks[0].bytes
    assert journal.dropped % 128 == 0                                   # whole blocks went
    assert journal.dropped // 128 * block <= budget.limit // 128 + block    # one slice, about 156 kB here


def test_a_busy_journal_gives_up_its_calls_before_a_quiet_one():
    budget = Budget(200_000)
    quiet, busy = Journal(10_000, budget), Journal(10_000, budget)
    for index in range(20):
        _record(quiet, index)
    for index in range(2000):
        _record(busy, index)
    assert quiet.dropped == 0 and len(quiet.entries) == 20
    assert busy.dropped > 0
    assert budget.total <= budget.limit


def test_a_long_body_is_kept_cut_and_the_call_says_so(make_server):
    server = make_server(journal_body_limit=200)
    with TestClient(server, base_url="http://mock", headers=ADMIN) as client:
        description = "d" * 250
        reply = client.post(f"/project/{PROJECT}/environmentVariable",
                            json={"key": "LONG", "value": "v" * 1000, "description": description[:255]})
        assert reply.status_code == 201
        call = client.get("/_mock/calls", params={"method": "POST"}).json()["results"][-1]
    assert call["truncated"]["body"]["kept"] == 200 and call["truncated"]["body"]["bytes"] > 1000
    assert call["truncated"]["response"]["bytes"] == len(reply.content)
    assert isinstance(call["body"], str) and len(call["body"]) <= 200


def test_the_journal_memory_of_the_server_is_shared_by_its_sandboxes(make_server):
    server = make_server(journal_memory=400_000)
    with TestClient(server, base_url="http://mock", headers=ADMIN) as client:
        for _round in range(300):
            for name in ("a", "b", "c"):
                client.get(f"/sandbox/{name}/project/{PROJECT}/environmentVariable")
        health = client.get("/_mock/health").json()
    assert health["memory"]["journal_limit"] == 400_000
    assert 0 < health["memory"]["journal_bytes"] <= 400_000
    dropped = {name: server.sandboxes.live[name].rt.journal.dropped for name in ("a", "b", "c")}
    assert sum(dropped.values()) > 0


# ---------------------------------------------------------------- retired worlds are freed at once
# These call the ASGI app directly, in one event loop: the test client's own machinery (anyio portals,
# httpx streams) makes reference cycles of its own, which would hide or mimic the world's.
async def _call(server, method, path, body=None):
    sent = []
    data = orjson.dumps(body) if body is not None else b""

    async def receive():
        return {"type": "http.request", "body": data, "more_body": False}

    async def send(message):
        sent.append(message)

    path, _, query = path.partition("?")
    await server({"type": "http", "method": method, "path": path, "raw_path": path.encode(), "root_path": "",
                  "query_string": query.encode(), "scheme": "http", "server": ("mock", 80),
                  "client": ("127.0.0.1", 1), "http_version": "1.1", "asgi": {"version": "3.0"},
                  "headers": [(b"host", b"mock"), (b"authorization", ADMIN["Authorization"].encode()),
                              (b"content-type", b"application/json")]}, receive, send)
    return sent[0]["status"]


async def _busy(server, name):
    """A sandbox that did what a client does: a deploy under way, variables, a secret, a failed call."""
    base = f"/sandbox/{name}"
    assert await _call(server, "POST", f"{base}/application/{APP}/deploy", {}) == 202
    assert await _call(server, "POST", f"{base}/project/{PROJECT}/environmentVariable",
                       {"key": "A", "value": "1"}) == 201
    assert await _call(server, "POST", f"{base}/project/{PROJECT}/secret", {"key": "S", "value": "s"}) == 201
    assert await _call(server, "POST", f"{base}/project/{PROJECT}/secret", {"key": "S"}) == 400
    assert await _call(server, "POST", f"{base}/_mock/clock/advance", {"seconds": 3}) == 200
    assert await _call(server, "POST", f"{base}/_mock/clock/advance", {"seconds": "soon"}) == 400
    assert await _call(server, "GET", f"{base}/application/{APP}/status") == 200
    assert await _call(server, "POST", f"{base}/_mock/snapshots", {"name": f"keep-{name}"}) == 201


RETIRE = {"delete": ("DELETE", "/_mock/sandboxes/gone", 204), "reset": ("POST", "/_mock/sandboxes/gone/reset", 200),
          "replace": ("PUT", "/_mock/sandboxes/gone", 200),
          "restore": ("POST", "/sandbox/gone/_mock/snapshots/keep-gone/restore", 200),
          "drop all": ("DELETE", "/_mock/sandboxes", 204)}


@pytest.mark.parametrize("how", sorted(RETIRE))
def test_a_retired_world_is_freed_at_once_and_leaves_no_cycle(server, how):
    """Deleted, reset, replaced or restored over: the world is gone the moment the call returns, with the
    collector off, and a collection afterwards finds nothing left over from it."""
    method, path, status = RETIRE[how]

    async def scenario():
        await _busy(server, "gone")
        world = server.sandboxes.live["gone"].rt
        refs = [weakref.ref(world), weakref.ref(world.store), weakref.ref(world.journal),
                weakref.ref(world.webhooks), weakref.ref(world.lifecycle)]
        del world
        gc.collect()
        gc.disable()
        try:
            assert await _call(server, method, path, {} if method == "PUT" else None) == status
            alive = [ref() is not None for ref in refs]
            found = gc.collect()
        finally:
            gc.enable()
        return alive, found

    alive, found = asyncio.run(scenario())
    assert alive == [False] * 5
    assert found == 0


def test_an_expired_sandbox_is_freed_at_once(make_server):
    now = [1000.0]
    server = make_server(sandbox_ttl=60)
    server.sandboxes.wall = lambda: now[0]

    async def scenario():
        await _busy(server, "old")
        ref = weakref.ref(server.sandboxes.live["old"].rt)
        gc.collect()
        gc.disable()
        try:
            now[0] += 120
            gone = server.sandboxes.sweep(force=True)
            return gone, ref() is None
        finally:
            gc.enable()

    assert asyncio.run(scenario()) == (["old"], True)


# ---------------------------------------------------------------- sleeping worlds
def test_a_quiet_idle_sandbox_sleeps_and_wakes_as_it_was(make_server):
    now = [1000.0]
    server = make_server(sleep_after=30)
    server.sandboxes.wall = lambda: now[0]
    with TestClient(server, base_url="http://mock", headers=ADMIN) as client:
        made = client.post(f"/sandbox/nap/project/{PROJECT}/environmentVariable", json={"key": "NAP", "value": "1"})
        assert made.status_code == 201
        client.post("/sandbox/nap/_mock/clock/advance", json={"seconds": 100})
        clock_before = client.get("/sandbox/nap/_mock/clock").json()["now"]
        now[0] += 31
        server.sandboxes.sweep(force=True)
        box = server.sandboxes.live["nap"]
        assert box.asleep
        listed = client.get("/_mock/sandboxes/nap").json()
        assert listed["asleep"] is True and listed["journal_entries"] == 1
        assert box.asleep                                  # the listing does not wake it
        variable = client.get(f"/sandbox/nap/project/{PROJECT}/environmentVariable/{made.json()['id']}")
        assert variable.status_code == 200 and variable.json()["key"] == "NAP"
        assert not box.asleep
        assert client.get("/sandbox/nap/_mock/clock").json()["now"] == clock_before
        assert [c["method"] for c in client.get("/sandbox/nap/_mock/calls").json()["results"]][:1] == ["POST"]


def test_a_sandbox_with_a_deployment_under_way_stays_awake(make_server):
    now = [1000.0]
    server = make_server(sleep_after=30)
    server.sandboxes.wall = lambda: now[0]
    with TestClient(server, base_url="http://mock", headers=ADMIN) as client:
        assert client.post(f"/sandbox/busy/application/{APP}/deploy", json={}).status_code == 202
        now[0] += 31
        server.sandboxes.sweep(force=True)
        assert not server.sandboxes.live["busy"].asleep
        client.post("/sandbox/busy/_mock/clock/advance", json={"seconds": 600})
        now[0] += 31
        server.sandboxes.sweep(force=True)
        assert server.sandboxes.live["busy"].asleep
        assert client.get(f"/sandbox/busy/application/{APP}/status").json()["state"] == "DEPLOYED"


def test_sleeping_sandboxes_take_a_fraction_of_the_memory(make_server):
    server = make_server(sleep_after=30)
    boxes = [server.sandboxes.create(f"s{index}") for index in range(20)]
    for box in boxes:
        assert box.sleep()
    sizes = [len(box._sleeping) for box in boxes]
    assert max(sizes) < len(server.origin) / 2             # compressed: well under the frozen world itself


# ---------------------------------------------------------------- the collector and new worlds
def test_every_world_read_back_is_settled_by_the_collector(make_server):
    """Made, woken, reset or restored: each world read back calls `settle`, so that a burst of new sandboxes
    never piles its objects into the young generations."""
    server = make_server(sleep_after=30)
    settled = []
    server.shared.settle = lambda: settled.append(1)
    box = server.sandboxes.create("burst-1")
    assert len(settled) == 1                                  # made (a copy of the start world)
    assert box.sleep() and box.rt is not None
    assert len(settled) == 2                                  # woken
    server.reset_sandbox(box)
    assert len(settled) == 3                                  # reset


def test_settling_leaves_no_young_objects_for_a_later_collection_to_walk():
    collector = Collector()
    gc.collect()
    frozen = gc.get_freeze_count()
    try:
        world = [{"id": n, "tags": [n, str(n)]} for n in range(20_000)]   # a burst of young, live objects
        collector.settle()
        young = gc.get_objects(generation=0) + gc.get_objects(generation=1)
        assert not any(item is world for item in young)                     # the burst is out of reach
        assert gc.get_freeze_count() >= frozen + 40_000                     # its dicts and lists were frozen
    finally:
        gc.unfreeze()


def test_the_health_reply_never_walks_the_frozen_objects(monkeypatch):
    """Counting the frozen objects walks every one of them (85 ms with 500 busy sandboxes): health must not."""
    collector = Collector()
    monkeypatch.setattr(gc, "get_freeze_count", lambda: pytest.fail("the health reply walked the frozen objects"))
    described = collector.describe()
    assert set(described) == {"collections", "max_pause_ms", "total_pause_ms", "pauses_ms_at_most"}


def test_when_the_last_retired_world_is_freed_memory_is_handed_back_and_paths_forgotten(make_server):
    """The hand-back (allocator.releaser) waits for the last retired world, and the paths remembered for routing go
    too: small objects kept from all over a run pin the pages around them (measured: 146 -> 106 MiB RSS
    5 s after deleting 50 busy sandboxes)."""
    server = make_server()
    released = []
    server.collector = type("Probe", (), {"release": lambda self: released.append(1)})()
    with TestClient(server, base_url="http://mock", headers={**ADMIN, "X-Mock-Sandbox": "gone-soon"}) as client:
        assert client.get(f"/application/{APP}/status").status_code == 200
    assert server.spec._resolved
    server.sandboxes.delete("gone-soon")
    while server.graveyard:
        server.bury()
    assert released and not server.spec._resolved
