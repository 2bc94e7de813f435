"""A bounded request fuzzer over raw sockets against a live `mockserver serve`.

Every operation of the document (its example request) and every control route (a valid request of
the table below) is sent once as it is and once per mutation: JSON nested past the bound and far past
it, NUL and invalid UTF-8 in the body, path and headers, long paths, headers and query strings,
duplicate JSON keys, query parameters and headers, method-override headers, conflicting
Content-Length and Transfer-Encoding, a body on a request that takes none with `Connection: close`,
and a connection closed before the body is complete. Each request is written on a connection of its
own, in the bytes given (no HTTP client tidies them up), and the reply read to the end.

Asserted: no reply is a 5xx, none takes longer than HANG seconds (a hang), every reply of the mock
that is an error has the error body, every API call the mock answered (its reply carries the
request id sent) is in the journal, and afterwards the mock still answers valid requests.
The figures (requests, statuses, slowest reply, time) are printed (`pytest -s`).
"""

import collections
import concurrent.futures
import json
import socket
import time

import pytest
from support.control_routes import CONTROL_REQUESTS, CONTROL_TEMPLATES
from support.examples import example_request

HANG = 10.0                     # seconds a reply may take before the request counts as a hang
WORKERS = 4                     # connections at once
METHODS = ("get", "post", "put", "delete")
LONG = 20000                    # bytes of a long path segment, header value or query string


# ---------------------------------------------------------------- one request on the wire
class Request:
    """A request as bytes are written: request line, headers in order (repeats allowed), body."""

    def __init__(self, method, target, body=None, headers=()):
        self.method, self.target, self.body = method, target, body
        self.headers = [("Host", "mock"), ("Authorization", "Token mock-admin-token"), *headers]
        if body is not None:
            self.headers.append(("Content-Type", "application/json"))
        self.early_close = False
        self.framed = False                     # the mutation wrote its own Content-Length / Transfer-Encoding

    def copy(self):
        other = Request(self.method, self.target, self.body)
        other.headers, other.early_close, other.framed = list(self.headers), self.early_close, self.framed
        return other

    def encode(self, request_id):
        head = [f"{self.method} {self.target} HTTP/1.1".encode("latin-1", "surrogateescape")]
        headers = list(self.headers) + [("X-Request-Id", request_id), ("Connection", "close")]
        if not self.framed and self.body is not None:
            headers.append(("Content-Length", str(len(self.body))))
        head += [f"{name}: ".encode("latin-1") + (value if isinstance(value, bytes) else value.encode("latin-1"))
                 for name, value in headers]
        return b"\r\n".join(head) + b"\r\n\r\n" + (self.body or b"")


def exchange(port, data, early_close=False):
    """Write `data`, read the reply to the end: (status or None, headers, body, seconds)."""
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=HANG) as connection:
        try:
            connection.sendall(data)
            if early_close:
                connection.shutdown(socket.SHUT_WR)
            received = b""
            while time.monotonic() - started < HANG:
                chunk = connection.recv(1 << 16)
                if not chunk:
                    break
                received += chunk
            else:
                return "hang", {}, b"", time.monotonic() - started
        except TimeoutError:
            return "hang", {}, b"", time.monotonic() - started
        except ConnectionResetError:
            received = b""
    return (*parse(received), time.monotonic() - started)


def parse(received):
    if not received:
        return None, {}, b""                    # closed without a reply
    head, _, body = received.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        headers[name.decode("latin-1").lower()] = value.decode("latin-1").strip()
    if headers.get("transfer-encoding") == "chunked":
        body = dechunk(body)
    return status, headers, body


def dechunk(data):
    out = b""
    while data:
        size_line, _, data = data.partition(b"\r\n")
        size = int(size_line.split(b";")[0] or b"0", 16)
        if size == 0:
            break
        out, data = out + data[:size], data[size + 2:]
    return out


# ---------------------------------------------------------------- mutations
def nested(depth, array=False):
    return (b"[" * depth + b"]" * depth) if array else (b'{"a":' * depth + b"1" + b"}" * depth)


def with_body(request, body):
    other = request.copy()
    other.body = body
    if not any(name == "Content-Type" for name, _ in other.headers):
        other.headers.append(("Content-Type", "application/json"))
    return other


def in_object(request, fragment):
    """The request's JSON object body with one more member holding `fragment` (raw JSON text)."""
    body = request.body if request.body and request.body.startswith(b"{") else b"{}"
    inner = body[1:-1].strip()
    return with_body(request, b'{"fuzz":' + fragment + (b"," + inner if inner else b"") + b"}")


def duplicate_keys(request):
    data = json.loads(request.body) if request.body and request.body.startswith(b"{") else {}
    members = [f"{json.dumps(key)}:null,{json.dumps(key)}:{json.dumps(value)}" for key, value in data.items()]
    return with_body(request, ("{" + ",".join(members + ['"k":1,"k":2']) + "}").encode())


def with_query(request, extra):
    other = request.copy()
    other.target += ("&" if "?" in other.target else "?") + extra
    return other


def with_headers(request, *headers):
    other = request.copy()
    other.headers += list(headers)
    return other


def chunked(request):
    other = request.copy()
    body = request.body or b"{}"
    other.body = f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n"
    other.headers.append(("Transfer-Encoding", "chunked"))
    other.framed = True
    return other


def length_and_chunked(request):
    other = chunked(request)
    other.headers.append(("Content-Length", "3"))
    return other


def two_lengths(request):
    other = request.copy()
    body = request.body or b"{}"
    other.body = body
    other.headers += [("Content-Length", str(len(body))), ("Content-Length", str(len(body) + 5))]
    other.framed = True
    return other


def early_close(request):
    other = request.copy()
    body = request.body or b'{"a": 1}'
    other.body = body[: len(body) // 2]
    other.headers += [("Content-Type", "application/json"), ("Content-Length", str(len(body) + 100))]
    other.framed, other.early_close = True, True
    return other


MUTATIONS = {
    "nested 65": lambda r: in_object(r, nested(65)),
    "nested 1000 arrays": lambda r: with_body(r, nested(1000, array=True)),
    "nested 3000": lambda r: with_body(r, nested(3000)),
    "NUL in JSON": lambda r: in_object(r, b'"a\\u0000b"'),
    "raw NUL and invalid UTF-8 in body": lambda r: in_object(r, b'"a\x00\xff\xfeb"'),
    "NUL and invalid UTF-8 in path": lambda r: _target(r, r.target.split("?")[0] + "%00%ff\udcff"),
    "long path": lambda r: _target(r, r.target.split("?")[0] + "/" + "a" * LONG),
    "long query": lambda r: with_query(r, "q=" + "x" * LONG),
    "long header": lambda r: with_headers(r, ("X-Long", "y" * LONG)),
    "invalid UTF-8 and NUL in headers": lambda r: with_headers(r, ("X-Odd", b"\xff\xfe"), ("X-Mock-Event", b"a\x00b")),
    "duplicate JSON keys": duplicate_keys,
    "duplicate query parameters": lambda r: with_query(r, "page=1&page=x&tail=1&tail=-5"),
    "duplicate headers": lambda r: with_headers(r, ("Authorization", "Token nope"), ("Content-Type", "text/plain")),
    "method override headers": lambda r: with_headers(r, ("X-HTTP-Method-Override", "DELETE"),
                                                      ("X-HTTP-Method", "PUT"), ("X-Method-Override", "PATCH")),
    "Content-Length and Transfer-Encoding": length_and_chunked,
    "two Content-Length": two_lengths,
    "chunked body": chunked,
    "Connection: close with a body": lambda r: with_body(r, r.body or b'{"unexpected": true}'),
    "early close": early_close,
}


def _target(request, target):
    other = request.copy()
    other.target = target
    return other


# ---------------------------------------------------------------- what is sent
def api_requests(spec):
    out = []
    for path, item in spec.document["paths"].items():
        for method in METHODS:
            if method in item:
                url, query, body = example_request(path, item[method], spec.components)
                if query:
                    url += "?" + "&".join(f"{k}={v}" for k, v in query.items())
                raw = json.dumps(body).encode() if body is not None else None
                out.append((item[method]["operationId"], Request(method.upper(), url, raw)))
    return out


def control_requests():
    return [(f"{method} {path}", Request(method, path, json.dumps(body).encode() if body is not None else None))
            for (method, path), body in CONTROL_REQUESTS.items()]


def run_all(port, named, tag):
    """Each request as it is and under every mutation, WORKERS at once: a list of outcomes."""
    work = []
    for name, request in named:
        work.append((name, "as is", request))
        work += [(name, mutation, mutate(request)) for mutation, mutate in MUTATIONS.items()]

    def send(index_item):
        index, (name, mutation, request) = index_item
        request_id = f"{tag}-{index}"
        status, headers, body, seconds = exchange(port, request.encode(request_id), request.early_close)
        return {"name": name, "mutation": mutation, "status": status, "headers": headers, "body": body,
                "seconds": seconds, "request_id": request_id, "target": request.target}

    with concurrent.futures.ThreadPoolExecutor(WORKERS) as pool:
        return list(pool.map(send, enumerate(work)))


def problems_of(outcomes):
    problems = []
    for out in outcomes:
        where = f"{out['mutation']} of {out['name']}"
        if out["status"] == "hang":
            problems.append(f"{where}: no reply within {HANG} s")
        elif out["status"] is not None and out["status"] >= 500:
            problems.append(f"{where}: {out['status']} {out['body'][:200]!r}")
        elif out["status"] and out["status"] >= 400 and "x-request-id" in out["headers"]:
            error = json.loads(out["body"])         # the mock's own error: always the error body
            if set(error) - {"details"} != {"status", "error", "message"} or error["status"] != out["status"]:
                problems.append(f"{where}: error body {out['body'][:200]!r}")
    return problems


def figures(outcomes, seconds):
    statuses = collections.Counter(str(out["status"]) for out in outcomes)
    slowest = max(outcomes, key=lambda out: out["seconds"])
    return (f"{len(outcomes)} requests in {seconds:.1f} s; statuses {dict(sorted(statuses.items()))}; "
            f"slowest {slowest['seconds'] * 1000:.0f} ms ({slowest['mutation']} of {slowest['name']})")


def journaled(http, outcomes):
    """The request ids of the API calls that reached the mock and are missing from the journal: those it
    answered (the reply carries the request id sent) and those closed before their body came."""
    answered = {out["request_id"] for out in outcomes
                if out["headers"].get("x-request-id") == out["request_id"] or out["mutation"] == "early close"}
    deadline = time.monotonic() + 5
    while True:
        calls = every_call(http)
        missing = answered - {call["request_id"] for call in calls["results"]}
        if not missing or time.monotonic() > deadline:
            return missing, calls
        time.sleep(0.2)


def every_call(http):
    """The whole journal, page after page."""
    page = http.get("/_mock/calls").json()
    calls = dict(page)
    while page["more"]:
        page = http.get("/_mock/calls", params={"after": page["next_after"]}).json()
        calls["results"] = calls["results"] + page["results"]
    return calls


def test_the_fuzzer_covers_every_control_route():
    from mockserver.control.routes import ROUTES
    routes = {(method, route.path) for route in ROUTES for method in route.methods if method != "HEAD"}
    covered = {(method, CONTROL_TEMPLATES.get(path, path)) for method, path in CONTROL_REQUESTS}
    assert routes - covered == set()


@pytest.mark.server
def test_no_request_however_malformed_is_a_5xx_or_a_hang_and_every_api_call_is_journaled(live_server, spec):
    import httpx
    # uvicorn warns of each malformed request: a full pipe would block it
    server = live_server("--clock", "manual", "--rate-limit", "1000000000/3600", "--journal-size", "200000",
                         "--log-level", "error")
    started = time.monotonic()
    control = run_all(server.port, control_requests(), "control")
    middle = time.monotonic()
    assert httpx.delete(f"{server.url}/_mock/sandboxes").status_code == 204      # the API phase starts afresh
    api = run_all(server.port, api_requests(spec), "api")
    print(f"\nfuzz: control API: {figures(control, middle - started)}\n"
          f"fuzz: API: {figures(api, time.monotonic() - middle)}")
    assert problems_of(control + api) == []
    with_body = {ident for ident, operation in spec.operations.items() if operation.body is not None}
    too_deep = [out for out in api if out["mutation"] == "nested 65" and out["name"] in with_body]
    assert len(too_deep) == len(with_body)
    for out in too_deep:                            # the bound, named
        assert out["status"] == 400 and "deeper than 64 levels" in json.loads(out["body"])["message"], out
    with httpx.Client(base_url=server.url, headers={"Authorization": "Token mock-admin-token"}, timeout=30) as http:
        missing, calls = journaled(http, api)
        assert missing == set(), f"{len(missing)} answered API calls are not in the journal"
        assert calls["dropped"] == 0
        early = {out["request_id"] for out in api if out["mutation"] == "early close"}
        cut = [c for c in calls["results"] if c["request_id"] in early and c["operation"] in with_body
               and c["status"] != 400]        # its body never came: a 400, journaled
        assert cut == [], [(c["method"], c["path"], c["status"], c["response"]) for c in cut]
        assert http.get("/organization").status_code == 200           # the state still answers
        assert http.get("/_mock/health").json()["status"] == "ok"
        for name, request in api_requests(spec):
            if request.method == "GET":
                reply = http.get(request.target)
                assert reply.status_code < 500 and reply.status_code in (200, 404), (name, reply.text[:200])
