"""GET /_mock/calls a page at a time: without a limit, at most PAGE calls by id and a cursor to the next page;
with or without one, the results stop at PAGE_BYTES. The clients follow the pages, so they still read every
call."""

import httpx
import pytest
from support.ids import ADMIN, ORG

from mockserver.client import start_local
from mockserver.control import routes

CALLS = 1234


def send_calls(url, count, **params):
    with httpx.Client(base_url=f"{url}/api/v1", headers=ADMIN) as http:
        for _ in range(count):
            assert http.get("/organization", params=params).status_code == 200


@pytest.fixture(scope="module")
def mock():
    client = start_local("--journal-size", "5000", "--journal-body-limit", "1048576", "--rate-limit", "100000/60")
    yield client
    client.stop()


@pytest.mark.server
def test_without_a_limit_the_journal_comes_in_pages_that_join_up_to_every_call(mock):
    mock.clear_calls()
    send_calls(mock.url, CALLS)
    first = httpx.get(f"{mock.url}/_mock/calls").json()
    assert len(first["results"]) == routes.PAGE and first["more"] is True and first["total"] == CALLS
    ids, page = [call["id"] for call in first["results"]], first
    while page["more"]:
        page = httpx.get(f"{mock.url}/_mock/calls", params={"after": page["next_after"]}).json()
        ids += [call["id"] for call in page["results"]]
    assert len(ids) == CALLS and ids == sorted(set(ids))            # each call once, oldest first
    assert "next_after" not in page
    assert len(mock.calls()) == CALLS                                # the client follows the pages
    assert [call["id"] for call in mock.calls(limit=3)] == ids[-3:]
    filtered = mock.calls(status="200")
    assert len(filtered) == CALLS


@pytest.mark.server
def test_a_reply_stops_at_its_byte_bound_and_says_more_come(mock, monkeypatch):
    mock.clear_calls()
    big = "x" * 300_000                                               # each call journals a 300 KB query
    with httpx.Client(base_url=f"{mock.url}/api/v1", headers=ADMIN) as http:
        for _ in range(40):
            http.post(f"/organization/{ORG}/project", json={"name": "p", "description": big})
    reply = httpx.get(f"{mock.url}/_mock/calls", params={"limit": 40})
    body = reply.json()
    assert len(reply.content) < routes.PAGE_BYTES + 400_000
    assert body["more"] is True and 0 < len(body["results"]) < 40 and body["total"] == 40
    newest = httpx.get(f"{mock.url}/_mock/calls", params={"limit": 1}).json()["results"][0]["id"]
    assert body["results"][-1]["id"] == newest                      # a limit keeps the newest
    assert len(mock.calls()) == 40                                   # pages of fewer calls, every one read


@pytest.mark.parametrize("value", ["-1", "x", "1e3", "9" * 30])
def test_a_cursor_that_is_not_a_call_id_is_a_400(client, value):
    reply = client.get("/_mock/calls", params={"after": value})
    assert reply.status_code == 400 and reply.json()["message"] == "query.after: must be a whole number"
