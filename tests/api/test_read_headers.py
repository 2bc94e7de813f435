"""The values the request path reads of a request's headers (api/pipeline.py `read_headers`)."""

from mockserver.api.pipeline import read_headers

HEADERS = ((b"host", b"h"), (b"authorization", b"Token one"), (b"content-type", b"application/json"),
           (b"x-request-id", b"r-1"), (b"content-length", b"12"), (b"content-encoding", b"gzip"))


def test_the_values_the_request_path_reads_and_a_chunked_length():
    wanted = ("Token one", "application/json", "r-1", b"12", "gzip")
    assert read_headers(list(HEADERS)) == wanted
    assert read_headers(((b"transfer-encoding", b"chunked"),)) == (None, None, None, b"chunked", None)
    assert read_headers(((b"content-length", b"3"), (b"transfer-encoding", b"chunked")))[3] == b"3"
    assert read_headers(()) == (None, None, None, None, None)
