"""The floor under the mock's own replies: an app that sends, fixed, the replies the mock sent.

`bench/run.py --floors` records one reply of the mock to each request of the benchmark (status,
headers, body) and serves them, doing none of the mock's work: as an app under the same uvicorn settings
as the mock (httptools, uvloop, no access log), and with no ASGI server at all (bare):

    python bench/floor_app.py --replies FILE --kind raw --port 8082        # a plain ASGI callable
    python bench/floor_app.py --replies FILE --kind starlette --port 8083  # a Starlette route + Response
    python bench/floor_app.py --replies FILE --kind raw --serve-protocol   # the first, under serve's protocol
    python bench/floor_app.py --replies FILE --kind bare --port 8084       # no ASGI, no uvicorn: the bytes alone
    python bench/floor_app.py --replies FILE --kind lean --port 8085       # the first under a minimal ASGI server

`--serve-protocol` runs the app under the protocol `mockserver serve` runs (process/connections.py: the
limits below HTTP, a reply in one write, the keep-alive timeout watched by a sweep) instead of uvicorn's own:
that floor shows what the serving stack costs apart from the mock's own work.

`--kind bare` has no ASGI server at all: an asyncio protocol on uvloop parses each request with httptools (the
parser uvicorn uses) and writes the reply's bytes, made once, with a Date header made once a second, as
uvicorn makes it. It keeps no connection limits and runs no task per request: the cost of reading a request and
writing its reply on this machine, below which no Python server of these replies can go. The gap between it and
floor-serve is what the ASGI server's own steps cost (the scope, the task, the messages).

`--kind lean` runs the plain ASGI app under the least an ASGI server can do (LeanProtocol: a scope, a task,
the head written with the body; none of uvicorn's care for the connection): between bare and lean is what
ASGI itself costs, between lean and floor-serve what a whole server adds to it.

None does any of the mock's work (routing, credentials, rate limit, validation, state, journal):
what they cost is what sending those replies costs on each stack, which no implementation of the mock
can go below on it. A request is answered by (method, path, whether it carries Authorization); anything
else gets the first reply.
"""
import argparse
import asyncio
import json
import time
from email.utils import formatdate
from http import HTTPStatus

import httptools
import uvicorn
import uvloop
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route


def load(path):
    """(method, path, authorized) -> (status, [(name, value)] as bytes, body bytes)."""
    replies = {}
    for item in json.loads(open(path).read()):
        headers = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in item["headers"]]
        replies[item["method"], item["path"], item["authorized"]] = (item["status"], headers,
                                                                     item["body"].encode("utf-8"))
    return replies


def raw_app(replies):
    first = next(iter(replies.values()))

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        more = True
        while more:                                    # the body read whole, as the mock reads it
            more = (await receive()).get("more_body", False)
        authorized = any(name == b"authorization" for name, _ in scope["headers"])
        status, headers, body = replies.get((scope["method"], scope["path"], authorized), first)
        await send({"type": "http.response.start", "status": status,
                    "headers": [*headers, (b"content-length", b"%d" % len(body))]})
        await send({"type": "http.response.body", "body": body})
    return app


def starlette_app(replies):
    first = next(iter(replies.values()))

    async def answer(request):
        await request.body()
        scope = request.scope                          # (not request.url: building it is a cost of its own)
        authorized = any(name == b"authorization" for name, _ in scope["headers"])
        status, headers, body = replies.get((scope["method"], scope["path"], authorized), first)
        return Response(body, status_code=status,
                        headers={name.decode("latin-1"): value.decode("latin-1") for name, value in headers})
    return Starlette(routes=[Route("/{path:path}", answer, methods=["GET", "POST", "PUT", "PATCH", "DELETE"])])


class BareProtocol(asyncio.Protocol):
    """One connection of `--kind bare`: each whole request answered with its reply's bytes, in one write."""

    replies: dict = {}                                 # (method, path, authorized) -> (head, body), made once
    first: tuple = ()

    def connection_made(self, transport):
        self.transport, self.parser = transport, httptools.HttpRequestParser(self)
        self.url, self.authorized = b"", False

    def data_received(self, data):
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            self.transport.close()

    def on_message_begin(self):
        self.url, self.authorized = b"", False

    def on_url(self, url):
        self.url += url

    def on_header(self, name, value):
        if name.lower() == b"authorization":
            self.authorized = True

    def on_message_complete(self):
        key = (self.parser.get_method().decode("ascii"), self.url.decode("latin-1"), self.authorized)
        head, body = self.replies.get(key, self.first)
        self.transport.write(b"".join((head, date_line(), b"content-length: %d\r\n\r\n" % len(body), body)))


class LeanProtocol(BareProtocol):
    """One connection of `--kind lean`: the least an ASGI server does for a request. The parsed request becomes a
    scope, the app (floor-raw's) runs in a task of its own, and the reply's head leaves with its body in one write.
    No connection limits, flow control, 100-continue, pipelining, chunked replies or error replies: a measure of
    what ASGI itself costs, not a server."""

    app = None

    def on_message_begin(self):
        self.url, self.headers, self.body = b"", [], b""

    def on_header(self, name, value):
        self.headers.append((name.lower(), value))

    def on_body(self, body):
        self.body += body

    def on_message_complete(self):
        path, _, query = self.url.partition(b"?")
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "scheme": "http",
                 "method": self.parser.get_method().decode("ascii"), "path": path.decode("latin-1"),
                 "raw_path": path, "query_string": query, "root_path": "", "headers": self.headers,
                 "server": None, "client": None}
        body, transport, held = self.body, self.transport, []

        async def receive():
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(message):
            if message["type"] == "http.response.start":
                held.append(STATUS_LINES[message["status"]] + b"".join(
                    name + b": " + value + b"\r\n" for name, value in message["headers"]) + date_line() + b"\r\n")
            else:
                transport.write(held.pop() + message["body"])
        asyncio.get_running_loop().create_task(self.app(scope, receive, send))


STATUS_LINES = {status.value: b"HTTP/1.1 %d %s\r\n" % (status.value, status.phrase.encode("ascii"))
                for status in HTTPStatus}
_date = [0, b""]                                       # (second, the Date header line of that second)


def date_line():
    """The Date header line, made once a second (as uvicorn makes it)."""
    second = int(time.time())
    if second != _date[0]:
        _date[:] = second, b"date: " + formatdate(second, usegmt=True).encode("ascii") + b"\r\n"
    return _date[1]


def serve_bare(replies, host, port, lean=False):
    """`--kind bare` (BareProtocol) or `--kind lean` (LeanProtocol, running floor-raw's app), until stopped."""
    BareProtocol.replies = {key: (STATUS_LINES[status] + b"".join(name + b": " + value + b"\r\n"
                                                                  for name, value in headers), body)
                            for key, (status, headers, body) in replies.items()}
    BareProtocol.first = next(iter(BareProtocol.replies.values()))
    LeanProtocol.app = staticmethod(raw_app(replies))

    async def main():
        server = await asyncio.get_running_loop().create_server(LeanProtocol if lean else BareProtocol, host, port)
        await server.serve_forever()
    uvloop.install()
    asyncio.run(main())


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--replies", required=True, help="the replies recorded by bench/run.py --floors (JSON)")
    parser.add_argument("--kind", choices=("raw", "starlette", "bare", "lean"), default="raw")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8082)
    parser.add_argument("--serve-protocol", action="store_true", help="run under the protocol of mockserver serve")
    args = parser.parse_args()
    replies = load(args.replies)
    if args.kind in ("bare", "lean"):
        serve_bare(replies, args.host, args.port, lean=args.kind == "lean")
        raise SystemExit(0)
    app = raw_app(replies) if args.kind == "raw" else starlette_app(replies)
    http = "httptools"
    if args.serve_protocol:
        from mockserver.process.connections import Limits, protocol
        http = protocol(Limits())
    # the settings `mockserver serve` gives uvicorn: no proxy headers read, no Server header
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning", access_log=False,
                lifespan="off" if args.kind == "raw" else "on", http=http, loop="uvloop", proxy_headers=False,
                server_header=False)
