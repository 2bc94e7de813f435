"""The values the request path reads of a request's headers (api/pipeline.py `read_headers`): the same either way
a request comes, remembered for a tuple of headers (the direct path's), bounded."""

from mockserver.api import pipeline
from mockserver.api.pipeline import read_headers

HEADERS = ((b"host", b"h"), (b"authorization", b"Token one"), (b"content-type", b"application/json"),
           (b"x-request-id", b"r-1"), (b"content-length", b"12"), (b"content-encoding", b"gzip"))


def test_the_values_are_read_alike_from_a_list_and_from_a_tuple():
    wanted = ("Token one", "application/json", "r-1", b"12", "gzip")
    assert read_headers(list(HEADERS)) == wanted
    assert read_headers(HEADERS) == wanted
    assert read_headers(((b"transfer-encoding", b"chunked"),)) == (None, None, None, b"chunked", None)
    assert read_headers(((b"content-length", b"3"), (b"transfer-encoding", b"chunked")))[3] == b"3"
    assert read_headers(()) == (None, None, None, None, None)


def test_a_tuple_is_read_once_and_an_equal_one_alike_and_a_list_never_kept():
    pipeline._read.clear()
    first = read_headers(HEADERS)
    assert read_headers(HEADERS) is first                       # the same tuple: the values read before
    copy = HEADERS[:1] + HEADERS[1:]
    assert copy is not HEADERS and read_headers(copy) == first  # an equal tuple, read for itself
    other = tuple((name, b"Token two") if name == b"authorization" else (name, value) for name, value in HEADERS)
    assert read_headers(other)[0] == "Token two"                # another credential: its own values
    read_headers([*HEADERS, (b"x-more", b"1")])
    assert len(pipeline._read) == 3                             # the list was read, not kept


def test_a_new_tuple_is_never_taken_for_one_read_before():
    # tuples made and dropped one after another (as heads seen once are): the memory of one dropped is often
    # that of the next, so an id alone would name the wrong tuple; each is read as what it holds
    pipeline._read.clear()
    for n in range(pipeline.KEPT_HEADERS * 4):
        assert read_headers(((b"authorization", b"Token t-%d" % n),))[0] == f"Token t-{n}"


def test_the_tuples_remembered_are_bounded():
    for n in range(pipeline.KEPT_HEADERS * 3):
        assert read_headers(((b"x-request-id", b"r-%d" % n),))[2] == f"r-{n}"
        assert len(pipeline._read) <= pipeline.KEPT_HEADERS
