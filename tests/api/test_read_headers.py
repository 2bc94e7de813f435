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


def test_a_tuple_is_read_once_by_its_value_and_a_list_never_kept():
    pipeline._read.clear()
    first = read_headers(HEADERS)
    assert read_headers(tuple(HEADERS)) is first               # an equal tuple: the values read before
    other = tuple((name, b"Token two") if name == b"authorization" else (name, value) for name, value in HEADERS)
    assert read_headers(other)[0] == "Token two"                # another credential: its own values
    read_headers([*HEADERS, (b"x-more", b"1")])
    assert len(pipeline._read) == 2                             # the list was read, not kept


def test_the_tuples_remembered_are_bounded():
    for n in range(pipeline.KEPT_HEADERS * 3):
        assert read_headers(((b"x-request-id", b"r-%d" % n),))[2] == f"r-{n}"
        assert len(pipeline._read) <= pipeline.KEPT_HEADERS
