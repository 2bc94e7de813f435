"""A chunk read as one whole plain request in one step (process/wholerequest.py): whatever it reads, the parser
(httptools, as uvicorn's protocol drives it) reads alike; whatever it is not sure of, it leaves to the parser."""

import random

import httptools
import pytest

from mockserver.process import wholerequest
from mockserver.process.wholerequest import whole_request

LIMIT = 64 * 1024


class Parsed:
    """What uvicorn's protocol takes from the parser's callbacks for each message of a chunk."""

    def __init__(self):
        self.messages, self.url, self.headers, self.body, self.whole = [], b"", [], b"", False

    def on_message_begin(self):
        self.url, self.headers, self.body, self.whole = b"", [], b"", False

    def on_url(self, url):
        self.url += url

    def on_header(self, name, value):
        self.headers.append((name.lower(), value))

    def on_body(self, body):
        self.body += body

    def on_message_complete(self):
        self.whole = True
        self.messages.append((self.url, self.headers, self.body))


def parsed(chunk):
    """(method, target, headers, body, keep-alive) as the parser reads `chunk` when it is exactly one whole
    request of HTTP/1.1 without an upgrade; else None (an error, more than one message, or less than one)."""
    seen = Parsed()
    parser = httptools.HttpRequestParser(seen)
    try:
        parser.feed_data(chunk)
    except httptools.HttpParserError:
        return None
    if len(seen.messages) != 1 or parser.should_upgrade() or parser.get_http_version() != "1.1":
        return None
    url, headers, body = seen.messages[0]
    return parser.get_method().decode("ascii"), url, headers, body, parser.should_keep_alive()


GET = b"GET /organization?page=2 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nAuthorization: Token t\r\n\r\n"
POST = (b"POST /project/p/environmentVariable HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\n"
        b"Content-Length: 13\r\n\r\n{\"key\":\"K_1\"}")


@pytest.mark.parametrize("chunk", [
    GET,
    POST,
    b"DELETE /project/p HTTP/1.1\r\nHost: h\r\n\r\n",
    b"PATCH /x HTTP/1.1\r\ncontent-length: 0\r\n\r\n",
    b"PUT /x HTTP/1.1\r\nConnection: Keep-Alive\r\nContent-Length: 2\r\n\r\n{}",
    b"GET / HTTP/1.1\r\n\r\n",
    b"GET /a HTTP/1.1\r\nX-Blank:\r\nX-Spaced:   value with  blanks \t \r\nX-Tab:\tv\r\n\r\n",
    b"GET /a?q=%20&b=!$&'()*+,;=:@[]{}|^`~\"<> HTTP/1.1\r\nX-Any: !\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~\r\n\r\n",
    b"GET /a HTTP/1.1\r\nContent-Length: 007\r\n\r\n1234567",
])
def test_a_plain_request_is_read_as_the_parser_reads_it(chunk):
    method, target, headers, body = whole_request(chunk, LIMIT)
    assert parsed(chunk) == (method, target, list(headers), body, True)


@pytest.mark.parametrize("chunk", [
    GET + GET,                                                           # two requests
    POST[:-1],                                                           # the body goes on in a later chunk
    POST + b"x",                                                         # ... or another request begins
    GET[:-2],                                                            # the head is not whole
    b"HEAD /a HTTP/1.1\r\n\r\n",                                         # not a method of the direct path
    b"OPTIONS /a HTTP/1.1\r\n\r\n",
    b"GET /a HTTP/1.0\r\n\r\n",
    b"GET http://h/a HTTP/1.1\r\n\r\n",                                  # an absolute target
    b"GET * HTTP/1.1\r\n\r\n",
    b"GET /caf\xc3\xa9 HTTP/1.1\r\n\r\n",
    b"GET /a HTTP/1.1\r\nConnection: close\r\n\r\n",
    b"GET /a HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
    b"POST /a HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n{}",
    b"POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
    b"POST /a HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}",
    b"POST /a HTTP/1.1\r\nContent-Length: 2 \r\n\r\n{}",
    b"POST /a HTTP/1.1\r\nContent-Length: -2\r\n\r\n",
    b"GET /a HTTP/1.1\r\nX-Folded: a\r\n b\r\n\r\n",
    b"GET /a HTTP/1.1\r\nX-Latin: \xe9\r\n\r\n",
    b"GET /a HTTP/1.1\r\nX Bad: 1\r\n\r\n",
    b"GET /a HTTP/1.1\r\nX-Bad : 1\r\n\r\n",
    b"GET /a HTTP/1.1\nHost: h\n\n",
    b"\r\nGET /a HTTP/1.1\r\n\r\n",
])
def test_what_it_is_not_sure_of_is_left_to_the_parser(chunk):
    assert whole_request(chunk, LIMIT) is None


def test_a_head_past_the_limit_is_left_to_the_parser():
    chunk = b"GET /a HTTP/1.1\r\nX-Long: " + b"v" * 200 + b"\r\n\r\n"
    assert whole_request(chunk, len(chunk)) is not None
    assert whole_request(chunk, len(chunk) - 1) is None


def test_any_chunk_it_reads_the_parser_reads_alike():
    # chunks made from plain requests by random edits (a byte changed, dropped, doubled, or one of the characters
    # that matter to HTTP put in): each one whole_request reads must be exactly one request the parser reads the
    # same way, kept alive
    pool = [GET, POST, b"DELETE /a/b HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n"]
    special = b" \t\r\n:/?#%\x00\x7f\x80\xffAz09-_,;=\"'"
    rng = random.Random(20261127)
    read = 0
    for _ in range(6000):
        chunk = bytearray(rng.choice(pool))
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(chunk))
            edit = rng.randrange(4)
            if edit == 0:
                chunk[at] = rng.choice(special)
            elif edit == 1:
                del chunk[at]
            elif edit == 2:
                chunk.insert(at, chunk[at])
            else:
                chunk.insert(at, rng.choice(special))
        chunk = bytes(chunk)
        mine = whole_request(chunk, LIMIT)
        if mine is not None:
            read += 1
            method, target, headers, body = mine
            assert parsed(chunk) == (method, target, list(headers), body, True), chunk
    assert read > 300                          # the edits left many chunks it reads: the comparison compared


def test_a_head_sent_again_is_read_as_the_first_time_and_its_body_is_checked_each_time():
    wholerequest._cache.clear()
    wholerequest._seen.clear()
    reads = [whole_request(bytes(POST), LIMIT) for _ in range(4)]   # the same bytes in new objects, as chunks are
    assert len({(method, target, tuple(headers), body) for method, target, headers, body in reads}) == 1
    assert [type(read[2]) for read in reads] == [list, list, tuple, tuple]   # cached the second time it came
    assert reads[3][2] is reads[2][2]                   # from then on one tuple, which nobody can change
    other_body = POST.replace(b'"K_1"', b'"K_2"')
    assert whole_request(other_body, LIMIT)[3] == b'{"key":"K_2"}'
    assert whole_request(POST[:-1], LIMIT) is None      # the same head, a body short of its length
    assert whole_request(POST + b"x", LIMIT) is None    # ... or longer
    bad = b"GET /a HTTP/1.1\r\nX Bad: 1\r\n\r\n"
    assert whole_request(bad, LIMIT) is None and whole_request(bad, LIMIT) is None


def test_a_head_sent_once_leaves_its_hash_only_and_what_is_cached_is_bounded():
    wholerequest._cache.clear()
    wholerequest._seen.clear()
    for n in range(wholerequest.SEEN * 2):              # a fleet: each head once
        assert whole_request(b"GET /a/%d HTTP/1.1\r\nHost: h\r\n\r\n" % n, LIMIT)[1] == b"/a/%d" % n
        assert len(wholerequest._seen) <= wholerequest.SEEN
    assert wholerequest._cache == {}
    for n in range(wholerequest.CACHED * 3):              # each head twice
        for _ in range(2):
            assert whole_request(b"GET /b/%d HTTP/1.1\r\nHost: h\r\n\r\n" % n, LIMIT)[1] == b"/b/%d" % n
        assert len(wholerequest._cache) <= wholerequest.CACHED
    assert wholerequest._cache
    wholerequest._cache.clear()
    long = b"GET /a HTTP/1.1\r\nX-Long: " + b"v" * wholerequest.CACHED_BELOW + b"\r\n\r\n"
    for _ in range(3):
        assert whole_request(long, LIMIT)[2] == [(b"x-long", b"v" * wholerequest.CACHED_BELOW)]
    assert wholerequest._cache == {}
    assert whole_request(long, len(long) - 1) is None   # the limit is checked before anything is cached
