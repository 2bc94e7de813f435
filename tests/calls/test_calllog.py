"""The journal's calls packed in compressed blocks (calls/log.py): read back as recorded, in order, counted,
bounded, and far smaller than the calls kept as objects."""

import pickle
import random
import threading
import tracemalloc

from starlette.testclient import TestClient
from support.ids import ADMIN, APP, PROJECT

from mockserver.calls.journal import Budget, Exchange, Journal, header_lines
from mockserver.calls.log import BLOCK, UNPACKED, Block, Call, PackedCall


class _Operation:
    body = None                                 # no request body schema (nothing to redact by it)

    def __init__(self, operation_id):
        self.operation_id, self.template = operation_id, f"/{operation_id}"


GET, POST = _Operation("getThing"), _Operation("createThing")


def _fill(journal, count):
    """Calls like a fleet's: polls of a status, now and then a create with a body, some 404s."""
    for index in range(count):
        post = index % 7 == 0
        journal.record(Exchange(
            journal.reserve(), at=1000.0 + index, received=1_800_000_000.0 + index, method="POST" if post else "GET",
            path=f"/thing/{index % 5}", operation=POST if post else (None if index % 11 == 0 else GET),
            query={"page": index % 3} if index % 2 else {},
            headers_kept=header_lines({"authorization": "Token ...abcd", "x-n": str(index)}),
            body={"key": f"K{index}"} if post else None, status=404 if index % 11 == 0 else 200,
            response=b'{"state":"DEPLOYED","n":%d}' % index, duration=0.002, request_id=f"req-{index}",
            token_name="admin", reply_headers=[(b"content-type", b"application/json")]))


def test_calls_behind_the_newest_are_packed_and_read_back_as_recorded():
    journal = Journal(10_000)
    _fill(journal, 1000)
    log = journal.entries
    assert len(log) == 1000 and len(log.blocks) > 0 and UNPACKED <= len(log.recent) < BLOCK + UNPACKED
    calls = list(log)
    assert [call.request_id for call in calls] == [f"req-{i}" for i in range(1000)]
    first = calls[0]                                          # packed, read back
    assert (first.id, first.at, first.method, first.path, first.status) == (1, 1000.0, "POST", "/thing/0", 404)
    assert first.operation is POST and calls[11].operation is None and calls[1].operation is GET
    assert calls[7].parts() == ({"page": 1}, {"authorization": "Token ...abcd", "x-n": "7"}, {"key": "K7"})
    assert calls[1].response == b'{"state":"DEPLOYED","n":1}'
    assert calls[1].response_headers() == [("content-type", "application/json")]
    assert [call.id for call in reversed(log)] == [call.id for call in calls][::-1]
    assert journal.find(3).request_id == "req-2" and journal.find(999).request_id == "req-998"
    assert journal.find(5000) is None
    assert journal.newest().request_id == "req-999"


def test_packed_calls_take_a_fraction_of_the_bytes_of_calls_kept_as_objects():
    journal = Journal(10_000)
    _fill(journal, 2000)
    as_objects = sum(Call(**call.fields()).size for call in journal.entries)
    assert journal.bytes < as_objects / 5
    assert journal.bytes == journal.entries.held() == sum(block.bytes for block in journal.entries.blocks) + sum(
        call.size for call in journal.entries.recent)


def test_the_count_bound_holds_across_blocks_and_counts_what_went():
    journal = Journal(300)
    _fill(journal, 1000)
    assert len(journal.entries) == 300 and journal.dropped == 700
    assert [call.id for call in journal.entries] == list(range(701, 1001))
    assert all(block.skip < block.count for block in journal.entries.blocks)   # a block wholly given up is gone


def test_a_byte_trim_gives_up_whole_blocks_oldest_first():
    budget = Budget(10**9)
    journal = Journal(10_000, budget)
    _fill(journal, 1500)
    before, blocks = journal.bytes, len(journal.entries.blocks)
    oldest = journal.entries.blocks[0]
    freed = journal.shrink(before - 1)
    assert freed == oldest.bytes and len(journal.entries.blocks) == blocks - 1
    assert journal.dropped == BLOCK and len(journal.entries) == 1500 - BLOCK
    assert next(iter(journal.entries)).id == BLOCK + 1
    assert journal.bytes == before - freed              # (Budget.trim takes what shrink returns off its total)


def test_filters_read_the_packed_calls_too():
    journal = Journal(10_000)
    _fill(journal, 1000)
    not_found = journal.select({"status": "404"})
    assert [call.id for call in not_found] == [i + 1 for i in range(1000) if i % 11 == 0]
    assert [call.request_id for call in journal.latest({"method": "POST"}, 3)] == ["req-980", "req-987", "req-994"]
    assert journal.latest({"path": "/thing/1", "status": "2xx"}, 1000)[0].request_id == "req-1"


def test_a_small_journal_never_packs():
    journal = Journal(BLOCK + UNPACKED - 1)
    _fill(journal, 5000)
    assert not journal.entries.blocks and len(journal.entries) == BLOCK + UNPACKED - 1


def test_packed_calls_survive_a_copy_of_the_log():
    journal = Journal(10_000)
    _fill(journal, 700)
    log = pickle.loads(pickle.dumps(journal.entries))
    assert [call.request_id for call in log] == [call.request_id for call in journal.entries]


def test_over_http_early_calls_are_found_after_they_were_packed(make_server):
    server = make_server(rate_limit=100_000)
    with TestClient(server, base_url="http://mock", headers=ADMIN) as client:
        for index in range(600):
            if index % 10:
                assert client.get(f"/application/{APP}/status").status_code == 200
            else:
                assert client.post(f"/project/{PROJECT}/environmentVariable",
                                   json={"key": f"K{index}", "value": "v"}).status_code == 201
        assert server.rt.journal.entries.blocks                             # some are packed by now
        first = client.get("/_mock/calls/1").json()                          # the inspector's view of a call
        assert (first["method"], first["status"], first["body"]) == ("POST", 201, {"key": "K0", "value": "v"})
        assert first["response"]["key"] == "K0" and first["operation"] == "createProjectVariable"
        posts = client.get("/_mock/calls", params={"method": "POST"}).json()
        assert [call["body"]["key"] for call in posts["results"]] == [f"K{i}" for i in range(0, 600, 10)]
        assert client.post("/_mock/snapshots", json={"name": "busy", "journal": True}).status_code in (200, 201)
        client.delete("/_mock/calls")
        assert client.get("/_mock/calls").json()["results"] == []
        assert client.post("/_mock/snapshots/busy/restore").status_code == 200
        again = client.get("/_mock/calls", params={"method": "POST"}).json()
        assert [call["body"]["key"] for call in again["results"]] == [f"K{i}" for i in range(0, 600, 10)]


def test_a_block_holds_no_more_memory_than_the_bytes_it_counts():
    """The compressor's output keeps its whole work buffer (as large as the input) behind the few bytes it
    holds: a block keeps an exact copy instead. tracemalloc sees what was really allocated."""
    journal = Journal(10_000)
    _fill(journal, BLOCK)
    calls = list(journal.entries)
    Block(calls)                # once before: Python's free lists of small tuples then serve the packing's own
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        block = Block(calls)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert held < 2 * block.bytes < sum(call.size for call in calls) / 5


def test_two_threads_pack_and_read_blocks_at_once():
    """A mock served in a thread of a test process beside another in the main thread: each thread packs with
    a compressor of its own (a shared one mixed up blocks that were packed at the same time)."""
    def calls(seed):
        rng = random.Random(seed)
        return [Call(id=i, at=float(i), method="GET", path=f"/t/{seed}", operation=None, status=200, duration=0.001,
                     rule=None, request_id=f"{seed}-{i}", token=None, truncated=None, request=b"[{},null]",
                     response=bytes(rng.getrandbits(8) for _ in range(300))) for i in range(BLOCK)]
    failures = []

    def work(seed):
        batch = calls(seed)
        expected = [call.response for call in batch]
        for _ in range(150):
            try:
                if [call.response for call in Block(batch).calls()] != expected:
                    failures.append("mixed up")
            except Exception as error:            # a block that no longer decompresses
                failures.append(repr(error))
    threads = [threading.Thread(target=work, args=(seed,)) for seed in (1, 2, 3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def test_a_filter_unpacks_only_the_small_part_of_a_block():
    """Filters, counts and the inspector's rows read HEADS; the bodies of a block are unpacked once, when a
    call of it is first asked for one."""
    journal = Journal(10_000)
    _fill(journal, 1000)
    calls = list(journal.entries)
    packed = [call for call in calls if isinstance(call, PackedCall)]
    assert len(packed) == len(journal.entries.blocks) * BLOCK
    assert [call.id for call in calls if call.status == 404 and call.method == "GET"]      # heads only
    assert all(call.unpacked.rows is None for call in packed)
    assert packed[1].response == b'{"state":"DEPLOYED","n":1}' and packed[1].size > 0
    assert packed[0].unpacked.rows is not None and packed[0].unpacked is packed[1].unpacked
    assert packed[BLOCK].unpacked.rows is None                                               # the next block not
    copy = pickle.loads(pickle.dumps(packed[7]))                                             # alone: a whole Call
    assert type(copy) is Call and copy.parts() == packed[7].parts() and copy.request_id == "req-7"


def test_calls_after_an_id_skip_the_blocks_below_it_unread(monkeypatch):
    """`since=<call id>` (a journal filter, the inspector's poll): blocks whose ids are all at or below it are
    not unpacked, and what is found is what a full read finds."""
    journal = Journal(10_000)
    _fill(journal, 1000)
    opened = []
    calls = Block.calls
    monkeypatch.setattr(Block, "calls", lambda block: opened.append(block.low) or calls(block))
    since = journal.entries.blocks[-1].high - 5              # inside the newest block
    assert [call.id for call in journal.select({"since": str(since)})] == list(range(since + 1, 1001))
    assert opened == [journal.entries.blocks[-1].low]
    assert [c.id for c in journal.select({"since": "0", "status": "404"})] == \
        [i + 1 for i in range(1000) if i % 11 == 0]            # since 0: every block
    assert len(opened) == 1 + len(journal.entries.blocks)


def test_the_inspectors_poll_reads_only_the_calls_past_its_last_id(make_server, monkeypatch):
    server = make_server(rate_limit=100_000)
    with TestClient(server, base_url="http://mock", headers=ADMIN) as client:
        for _ in range(500):
            assert client.get(f"/application/{APP}/status").status_code == 200
        last = client.get("/_mock/calls/rows", params={"limit": 1}).json()["last_id"]
        assert client.post(f"/project/{PROJECT}/environmentVariable", json={"key": "NEW", "value": "v"}).status_code \
            == 201
        opened = []
        calls = Block.calls
        monkeypatch.setattr(Block, "calls", lambda block: opened.append(block) or calls(block))
        polled = client.get("/_mock/calls/rows", params={"since": last, "limit": 50}).json()
        assert opened == []                                   # every block is older than the last id seen
        assert polled["total"] == 1 and polled["results"][0]["method"] == "POST"     # control calls are not kept
        assert polled["journal_total"] == len(server.rt.journal.entries)


def _poll(journal, path, response, headers=b"host: mock\nauthorization: Token ...abcd"):
    journal.record(Exchange(journal.reserve(), at=1.0, received=1.0, method="GET", path=path, operation=GET,
                            headers_kept=header_lines(headers), status=200, response=response, duration=0.001,
                            request_id="r", token_name="admin"))


def test_a_poll_answered_the_same_shares_its_reply_and_headers_with_the_call_before():
    journal = Journal(10_000)
    for _ in range(3):
        _poll(journal, "/status", bytearray(b'{"state":"DEPLOYED"}'))   # a new object each time, equal bytes
    _poll(journal, "/status", b'{"state":"STOPPED"}')
    _poll(journal, "/other", b'{"state":"STOPPED"}')
    first, second, third, changed, other = journal.entries.recent
    assert first.response == b'{"state":"DEPLOYED"}' and type(first.response) is bytes
    assert second.response is first.response and third.response is first.response
    assert third.request_headers is first.request_headers
    assert changed.response == b'{"state":"STOPPED"}' and changed.response is not first.response
    assert other.response is not changed.response             # shared by path only: another path copies
    assert [call.size for call in journal.entries.recent] == [call.measure() for call in journal.entries.recent]
    packed = pickle.dumps(journal)
    assert b"DEPLOYED" in packed and "last" not in pickle.loads(packed).__getstate__()
    assert pickle.loads(packed).last == {}                     # the sharing is not kept in a state file


def test_the_replies_a_journal_remembers_for_sharing_stay_bounded():
    from mockserver.calls.journal import LAST_PATHS
    journal = Journal(10_000)
    for index in range(LAST_PATHS * 3):
        _poll(journal, f"/status/{index}", b"{}")
        assert len(journal.last) <= LAST_PATHS
    journal.shrink(0)
    assert journal.last == {} and len(journal.entries) == 0


def test_a_client_sending_the_same_headers_again_is_journaled_as_before_and_its_credential_never_saved(client):
    client.get("/organization")
    client.get("/organization")
    client.get("/organization", headers={"X-Extra": "1"})
    client.get("/organization", headers={"Authorization": "Token other-token-wxyz"})
    rt = client.app.sandboxes.get("default").rt
    first, second, extra, other = list(rt.journal.entries.recent)[-4:]
    assert second.request_headers is first.request_headers        # the same headers: the same bytes kept
    assert b"x-extra: 1" in extra.request_headers and b"x-extra" not in first.request_headers
    assert b"authorization: Token ...oken" in first.request_headers and b"mock-admin-token" not in first.request_headers
    assert b"authorization: Token ...wxyz" in other.request_headers and b"other-token" not in other.request_headers
    assert rt.journal.last_headers is not None                      # it holds the headers as sent, credential and all
    state = rt.journal.__getstate__()                               # what a state file or snapshot keeps of it
    packed = pickle.dumps({name: value for name, value in state.items() if name != "budget"})
    assert "last_headers" not in state and b"...oken" in packed
    assert b"mock-admin-token" not in packed and b"other-token-wxyz" not in packed
