"""A plain API read answered at once, without ASGI (process/connections.py `_direct`, app.py `answer_whole`, the
pipeline's `direct`): the same script of requests goes to two mocks built alike, one whose protocol answers directly
what it can and one whose protocol never does; every reply and every journaled call must be the same, and the reads
the first one took must have been answered within the protocol's callback (written before `data_received`
returned)."""

import asyncio
import logging
import re

import orjson
import pytest
import uvicorn
from support.ids import APP, ORG, PROJECT
from support.transport import Transport
from uvicorn.server import ServerState

from mockserver.app import MockServer
from mockserver.core.clock import Clock
from mockserver.core.settings import Settings
from mockserver.process.connections import Limits, protocol

START = 1_800_000_000.0
TOKEN = b"Authorization: Token mock-admin-token\r\n"


def mock(spec, **overrides):
    settings = Settings(**{"clock": "manual", "self_check": True, **overrides})
    return MockServer(settings, spec=spec, clock=Clock("manual", START))


def connect(app, direct=True, date=None, limits=None, keep_alive=5):
    """A connection of `serve`'s protocol to `app`; `direct=False`: a protocol that never answers at once; `date`:
    the Date header the server sends (uvicorn's server loop keeps it in `default_headers`); `keep_alive`: seconds
    an idle kept-alive connection stays open."""
    config = uvicorn.Config(app, access_log=False, lifespan="off", ws="none", http="httptools",
                            server_header=False, proxy_headers=False, timeout_keep_alive=keep_alive)   # as `serve`
    config.load()
    cls = protocol(limits or Limits(), app if direct else None)
    transport, state = Transport(), ServerState()
    state.default_headers = [(b"date", date)] if date else []
    connection = cls(config=config, server_state=state, app_state={}, _loop=asyncio.get_running_loop())
    connection.connection_made(transport)
    return connection, transport


async def feed(connection, transport, data, replies=1):
    """Feed one chunk; (replies written before `data_received` returned, every reply once `replies` are whole)."""
    connection.data_received(data)
    at_once = replies_in(transport.writes)
    for _ in range(400):
        if len(replies_in(transport.writes)) >= replies and connection.cycle.response_complete:
            break
        await asyncio.sleep(0.005)
    return at_once, replies_in(transport.writes)


def replies_in(writes):
    """(status, headers without Date, body) of each reply in the bytes written."""
    found = []
    for part in b"".join(writes).split(b"HTTP/1.1 ")[1:]:
        head, _, body = part.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        headers = [tuple(line.split(b": ", 1)) for line in lines[1:] if not line.startswith(b"date: ")]
        found.append((int(lines[0][:3]), headers, body))
    return found


def get(path, *extra, token=True):
    return b"GET %s HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n%sX-Request-Id: t-%d\r\n%s\r\n" % (
        path.encode(), TOKEN if token else b"", len(path), b"".join(extra))


def post(path, body, *extra):
    return (b"POST %s HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n%sContent-Type: application/json\r\nContent-Length: %d\r\n"
            b"X-Request-Id: t-post\r\n%s\r\n%s" % (path.encode(), TOKEN, len(body), b"".join(extra), body))


def chunked(path, *pieces):
    """A POST whose JSON body is sent in chunks (Transfer-Encoding: chunked)."""
    body = b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for piece in pieces) + b"0\r\n\r\n"
    return (b"POST %s HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n%sContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\nX-Request-Id: t-chunked\r\n\r\n%s" % (path.encode(), TOKEN, body))


# (request, answered at once by the direct mock)
SCRIPT = [
    (get(f"/application/{APP}/status"), True),
    (get("/organization", token=False), True),                              # 401
    (get(f"/organization/{ORG}/project"), True),
    (get(f"/organization/{ORG}/project"), True),                            # the same again
    (get(f"/api/v1/organization/{ORG}/project?page=1&page_size=2"), True),  # prefix and query
    (get("/project/00000000-0000-4000-8000-000000000000"), True),          # 404
    (get(f"/organization/{ORG}/project?page_size=abc"), True),              # 400
    (get("/no/such/route"), True),                                          # 404 of the router
    (get(f"/project/{PROJECT}", b"X-Mock-Sandbox: default\r\n"), True),
    (post(f"/organization/{ORG}/project", b'{"name":"made-between"}'), True),
    (post(f"/project/{PROJECT}/environmentVariable", b'{"key":"K1","value":"v"}'), True),
    (post(f"/project/{PROJECT}/environmentVariable", b'{"key":"K1","value":"v"}'), True),     # 400: the key exists
    (post(f"/project/{PROJECT}/environmentVariable", b'{"key":'), True),                       # 400: not JSON
    (post(f"/project/{PROJECT}/environmentVariable", b'{"key":"K2","value":"v"}', b"Expect: 100-continue\r\n"),
     False),
    (get(f"/organization/{ORG}/project"), True),                            # sees the project made
    (get(f"/organization/{ORG}/project", b"Origin: http://localhost:3000\r\n"), False),   # CORS
    (get(f"/organization/{ORG}/project", b"Content-Length: 2\r\n") + b"{}", True),         # a body, ignored
    (chunked(f"/project/{PROJECT}/environmentVariable", b'{"key":', b'"K3","value":"v"}'), True),
    (b"GET /organization HTTP/1.0\r\nHost: 127.0.0.1:8080\r\nX-Request-Id: t-10\r\n" + TOKEN + b"\r\n", False),
    (get("/organization", b"Connection: close\r\n"), False),
    (get("/organization/%38d3e6a4b-1f2c-4b7a-9e1d-3c5f7a9b2d10"), False),  # percent-encoded
    (get("/openapi.json"), False),
    (get("/_mock/scenarios"), False),
    (get("/sandbox/fresh-one/organization"), False),                        # makes a sandbox
    (get("/sandbox/fresh-one/organization"), True),                         # which now exists
    (b"HEAD /organization HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nX-Request-Id: t-head\r\n" + TOKEN + b"\r\n", False),
    (get("/organization", b"Connection: Upgrade\r\nUpgrade: websocket\r\n"), False),   # last: no more after it
]


async def through(spec, direct):
    """SCRIPT sent to a new mock: (answered at once, for each request; replies, for each; journaled calls but their
    durations; the mock)."""
    server = mock(spec)
    connection, transport = connect(server, direct)
    at_once, replies = [], []
    for data, _ in SCRIPT:
        if transport.closing:                  # the server closed it after a reply (HTTP/1.0, Connection: close)
            connection, transport = connect(server, direct)
        transport.writes.clear()
        now, whole = await feed(connection, transport, data)
        at_once.append(bool(now))
        replies.append(whole)
        assert len([status for status, _, _ in whole if status >= 200]) == 1, data
    calls = [call.fields() for call in server.sandboxes.get("default").rt.journal.entries]
    for call in calls:
        call.pop("duration")
        call.pop("received")
    connection.connection_lost(None)
    return at_once, replies, calls, server


def both_ways(spec):
    async def run():
        return await through(spec, True), await through(spec, False)
    return asyncio.run(run())


def test_every_journaled_call_is_the_same_either_way(spec):
    (at_once, _, calls, server), (never, _, plain_calls, plain) = both_ways(spec)
    assert at_once == [expected for _, expected in SCRIPT]
    assert not any(never)
    assert calls == plain_calls
    assert server.pipeline.violations == [] and plain.pipeline.violations == []


def test_the_replies_are_the_same_bytes_either_way(spec):
    (_, direct, _, _), (_, plain, _, _) = both_ways(spec)
    assert direct == plain
    statuses = [reply[0][0] for reply in direct]
    assert statuses[:8] == [200, 401, 200, 200, 200, 404, 400, 404]


def test_a_direct_reply_carries_the_servers_date_and_its_length(spec):
    async def run():
        connection, transport = connect(mock(spec), date=b"Fri, 15 Jan 2027 08:00:00 GMT")
        connection.data_received(get(f"/application/{APP}/status"))
        return b"".join(transport.writes)
    raw = asyncio.run(run())
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK\r\ndate: Fri, 15 Jan 2027 08:00:00 GMT\r\n")
    assert b"\r\ncontent-length: %d" % len(body) in head and orjson.loads(body)["id"] == APP


def test_pipelined_requests_are_answered_in_order_the_first_at_once_the_rest_a_task_each(spec):
    """A burst on one connection takes turns with the others: only the first request of a chunk is answered inside
    the callback that read it; the rest go through ASGI, a task each, and come out in order all the same."""
    async def run():
        connection, transport = connect(mock(spec))
        chunk = (get(f"/organization/{ORG}/project?page_size=100") + post(f"/organization/{ORG}/project",
                                                                          b'{"name":"in-the-middle"}')
                 + get(f"/organization/{ORG}/project?page_size=100") + get("/organization", token=False))
        return await feed(connection, transport, chunk, replies=4)
    at_once, replies = asyncio.run(run())
    assert len(at_once) == 1                   # the first, as its message ended; the others in turns after it
    assert [status for status, _, _ in replies] == [200, 201, 200, 401]
    before, after = (orjson.loads(replies[i][2])["results"] for i in (0, 2))
    assert len(after) == len(before) + 1 and "in-the-middle" in {project["name"] for project in after}


def test_a_world_with_an_active_scenario_is_answered_through_asgi_and_its_rules_apply(spec):
    async def run():
        server = mock(spec)
        connection, transport = connect(server)
        scenario = {"name": "fails", "rules": [{"name": "status-fails", "match": {"operation": "getApplicationStatus"},
                               "effect": {"status": 503, "message": "scripted outage"}}]}
        body = orjson.dumps(scenario)
        put = (b"PUT /_mock/scenarios/fails HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nContent-Type: application/json\r\n"
               b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        _, [(put_status, _, put_body)] = await feed(connection, transport, put)
        assert put_status in (200, 201), put_body
        transport.writes.clear()
        return await feed(connection, transport, get(f"/application/{APP}/status"))
    at_once, [(status, headers, body)] = asyncio.run(run())
    assert at_once == [] and status == 503
    assert (b"x-mock-rule", b"fails/status-fails") in headers
    assert orjson.loads(body)["message"] == "scripted outage"


def test_a_handler_that_fails_is_the_specs_500_and_is_journaled(spec, caplog):
    async def run(server):
        connection, transport = connect(server)
        return await feed(connection, transport, get(f"/application/{APP}/status"))

    def broken(ctx):
        raise KeyError("a bug")
    server = mock(spec, self_check=False)
    server.pipeline.handlers = {**server.pipeline.handlers, "getApplicationStatus": broken}
    with caplog.at_level(logging.ERROR, logger="mockserver"):
        at_once, [(status, _, body)] = asyncio.run(run(server))
    assert at_once and status == 500
    assert orjson.loads(body) == {"status": 500, "error": "Internal Server Error",
                                  "message": "internal error: KeyError"}
    assert server.sandboxes.get("default").rt.journal.newest().status == 500
    assert "unhandled error in GET" in caplog.text


def test_a_connection_lost_after_a_direct_reply_closes_quietly(spec, caplog):
    async def run():
        connection, transport = connect(mock(spec))
        at_once, _ = await feed(connection, transport, get(f"/application/{APP}/status"))
        connection.connection_lost(None)
        connection.shutdown()
        return at_once, transport
    with caplog.at_level(logging.WARNING):
        at_once, transport = asyncio.run(run())
    assert at_once and transport.closing
    assert caplog.records == []


@pytest.mark.parametrize("overrides", [{"rate_limit": 1, "rate_window": 60}])
def test_an_exhausted_rate_limit_is_the_same_429_either_way(spec, overrides):
    async def run(direct):
        connection, transport = connect(mock(spec, **overrides), direct)
        await feed(connection, transport, get(f"/application/{APP}/status"))
        transport.writes.clear()
        return await feed(connection, transport, get(f"/application/{APP}/status"))

    async def both():
        return await run(True), await run(False)
    (at_once, direct), (_, plain) = asyncio.run(both())
    assert at_once and direct == plain and direct[0][0] == 429
    assert dict(direct[0][1])[b"retry-after"]


def test_a_body_that_goes_on_in_a_later_chunk_goes_through_asgi_whole_and_a_read_behind_it_waits(spec):
    create = post(f"/project/{PROJECT}/environmentVariable", b'{"key":"SPLIT","value":"across-chunks"}')
    first, second = create[:-20], create[-20:] + get(f"/project/{PROJECT}/environmentVariable?page_size=100")

    async def run(direct):
        server = mock(spec)
        connection, transport = connect(server, direct)
        at_once_first, _ = await feed(connection, transport, first, replies=0)
        await asyncio.sleep(0.02)              # the request was started: it waits for the rest of its body
        assert replies_in(transport.writes) == []
        at_once_second, replies = await feed(connection, transport, second, replies=2)
        calls = [call.fields() for call in server.sandboxes.get("default").rt.journal.entries]
        for call in calls:
            call.pop("duration")
            call.pop("received")
        return at_once_first, at_once_second, replies, calls

    async def both():
        return await run(True), await run(False)
    (first_now, second_now, replies, calls), (_, _, plain_replies, plain_calls) = asyncio.run(both())
    assert first_now == [] and second_now == []
    assert [status for status, _, _ in replies] == [201, 200]
    assert orjson.loads(replies[0][2])["value"] == "across-chunks"
    assert "SPLIT" in {variable["key"] for variable in orjson.loads(replies[1][2])["results"]}
    assert replies == plain_replies and calls == plain_calls


def test_with_a_change_log_a_change_goes_through_asgi_and_a_read_does_not(spec, tmp_path):
    async def run():
        server = mock(spec, state_file=str(tmp_path / "state.json"))
        connection, transport = connect(server)
        change = await feed(connection, transport, post(f"/organization/{ORG}/project", b'{"name":"durable"}'))
        transport.writes.clear()
        read = await feed(connection, transport, get(f"/organization/{ORG}/project?page_size=100"))
        connection.connection_lost(None)
        await server.stop()
        return change, read
    (change_now, [(created, _, _)]), (read_now, [(status, _, body)]) = asyncio.run(run())
    assert change_now == [] and created == 201          # made durable in the change log before its reply
    assert read_now and status == 200 and "durable" in {p["name"] for p in orjson.loads(body)["results"]}


def test_a_slow_body_behind_a_direct_reply_in_the_same_chunk_is_not_closed_as_idle(spec):
    # the keep-alive timeout counts from a reply only while no request is under way: a request whose head came
    # right behind a direct reply, its body slower than the timeout, is still answered
    async def run():
        connection, transport = connect(mock(spec), keep_alive=0.3)
        create = post(f"/project/{PROJECT}/environmentVariable", b'{"key":"SLOW","value":"body"}')
        at_once, _ = await feed(connection, transport, get("/organization") + create[:-10], replies=1)
        await asyncio.sleep(0.9)               # past the keep-alive timeout, and a sweep or more
        closed = transport.closing
        _, replies = await feed(connection, transport, create[-10:], replies=2)
        connection.connection_lost(None)
        return at_once, closed, replies
    at_once, closed, replies = asyncio.run(run())
    assert len(at_once) == 1 and not closed
    assert [status for status, _, _ in replies] == [200, 201]


@pytest.mark.parametrize("sent", [b"has space", b"x" * 129, "caf\u00e9".encode("utf-8")])
def test_a_request_id_a_reply_may_not_carry_is_replaced_on_the_direct_path(spec, sent):
    # the one header of a direct reply the client chooses: admitted only as 1-128 visible ASCII characters
    async def run():
        connection, transport = connect(mock(spec))
        data = b"GET /organization HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n%sX-Request-Id: %s\r\n\r\n" % (TOKEN, sent)
        return await feed(connection, transport, data)
    at_once, [(status, headers, _)] = asyncio.run(run())
    assert at_once and status == 200
    echoed = dict(headers)[b"x-request-id"]
    assert echoed != sent and re.fullmatch(rb"[0-9a-f]{12}-[0-9a-f]{8}", echoed)


def test_a_large_direct_reply_leaves_with_its_head_in_one_call_of_the_transport(spec):
    class Lines(Transport):
        def __init__(self):
            super().__init__()
            self.calls = []

        def writelines(self, pieces):
            self.calls.append(len(pieces))     # one call: uvloop sends the pieces with one writev, uncopied
            self.writes.append(b"".join(pieces))

    async def run():
        connection, _ = connect(mock(spec))
        transport = Lines()
        connection.connection_made(transport)
        for number in range(15):               # 22 projects: a page past 4 KiB
            await feed(connection, transport, post(f"/organization/{ORG}/project", b'{"name":"p%d"}' % number))
        transport.writes.clear()
        transport.calls.clear()
        at_once, replies = await feed(connection, transport, get(f"/organization/{ORG}/project?page_size=100"))
        return at_once, replies, transport
    at_once, [(status, headers, body)], transport = asyncio.run(run())
    assert at_once and status == 200 and len(body) >= 4096
    assert transport.calls == [2] and len(transport.writes) == 1
    assert int(dict(headers)[b"content-length"]) == len(body)


def test_a_failure_of_the_direct_path_itself_is_the_specs_500_and_the_connection_goes_on(spec, caplog):
    server = mock(spec)

    async def run():
        connection, transport = connect(server)
        class Broken:
            def answer_whole(self, method, target, headers, body):
                return 1 / 0                   # a bug before the pipeline: nothing was run
        type(connection).direct_app = Broken()
        failed = await feed(connection, transport, get(f"/application/{APP}/status"))
        type(connection).direct_app = server
        transport.writes.clear()
        return failed, await feed(connection, transport, get(f"/application/{APP}/status"))
    with caplog.at_level(logging.ERROR, logger="mockserver"):
        (at_once, [(status, _, body)]), (again, [(after, _, _)]) = asyncio.run(run())
    assert at_once and status == 500 and orjson.loads(body)["status"] == 500
    assert "unhandled error in GET /application/" in caplog.text
    assert again and after == 200


def test_a_first_request_read_whole_ends_the_header_timeout_of_its_connection(spec):
    # a new connection must send a request head within the header timeout; a request answered from its chunk read
    # whole ends that wait as a request read by the parser's steps does, so the connection stays open, kept alive
    async def run():
        connection, transport = connect(mock(spec), limits=Limits(header_timeout=0.2), keep_alive=30)
        first, _ = await feed(connection, transport, get(f"/application/{APP}/status"))
        await asyncio.sleep(0.7)               # past the header timeout, and two sweeps
        closed = transport.closing
        transport.writes.clear()
        second = await feed(connection, transport, get(f"/application/{APP}/status"))
        connection.connection_lost(None)
        return first, closed, second
    first, closed, (again, replies) = asyncio.run(run())
    assert first and not closed
    assert again and [status for status, _, _ in replies] == [200]


def test_a_request_read_whole_that_the_app_declines_is_offered_once(spec):
    # declined (an Origin: CORS is `__call__`'s), it goes through the parser's steps and ASGI, not offered again
    async def run():
        server = mock(spec)
        connection, transport = connect(server)
        offers = []

        class Counting:
            def answer_whole(self, method, target, headers, body):
                offers.append((method, target))
                return server.answer_whole(method, target, headers, body)
        type(connection).direct_app = Counting()
        at_once, replies = await feed(connection, transport, get(f"/organization/{ORG}/project",
                                                                 b"Origin: http://localhost:3000\r\n"))
        return offers, at_once, replies
    offers, at_once, [(status, headers, _)] = asyncio.run(run())
    assert offers == [("GET", f"/organization/{ORG}/project".encode())]
    assert at_once == [] and status == 200
    assert (b"access-control-allow-origin", b"http://localhost:3000") in headers


def test_a_body_past_the_bound_is_the_same_413_either_way(spec):
    # a chunked body comes whole in one chunk (no Content-Length to refuse it by): bounded as through ASGI
    data = chunked(f"/project/{PROJECT}/environmentVariable", b'{"key":"BIG",', b'"value":"' + b"v" * 64 + b'"}')

    async def run(direct):
        server = mock(spec, max_body=32)
        connection, transport = connect(server, direct)
        at_once, replies = await feed(connection, transport, data)
        return at_once, replies, server.sandboxes.get("default").rt.journal.newest().status

    async def both():
        return await run(True), await run(False)
    (at_once, direct, journaled), (_, plain, _) = asyncio.run(both())
    assert at_once and direct == plain and direct[0][0] == 413 and journaled == 413
    assert orjson.loads(direct[0][2])["message"] == "request body is larger than 32 bytes"


def test_a_head_sent_again_is_answered_for_what_it_says_each_time(spec):
    # the protocol remembers the heads it read (process/wholerequest.py) and the pipeline the values of their
    # headers: a head that differs only in its credential or its body's length is read as what it says
    async def run():
        server = mock(spec)
        connection, transport = connect(server)
        statuses = []
        wrong = get("/organization").replace(b"mock-admin-token", b"mock-wrong-token")
        created = post(f"/project/{PROJECT}/environmentVariable", b'{"key":"R1","value":"v"}')
        longer = post(f"/project/{PROJECT}/environmentVariable", b'{"key":"R22","value":"v"}')
        for data in [get("/organization"), wrong, get("/organization"), get("/organization", token=False),
                     get("/organization"), created, created, longer]:
            transport.writes.clear()
            at_once, replies = await feed(connection, transport, data)
            assert at_once, data
            statuses.append(replies[0][0])
        calls = list(server.sandboxes.get("default").rt.journal.entries)
        return statuses, [call.token for call in calls], [call.request for call in calls[-3:]]
    statuses, tokens, bodies = asyncio.run(run())
    assert statuses == [200, 401, 200, 401, 200, 201, 409, 201]
    assert tokens[:5] == ["admin", None, "admin", None, "admin"]
    assert [b'"R1"' in body for body in bodies] == [True, True, False] and b'"R22"' in bodies[2]
