"""The floor under the mock's own replies: an app that sends, fixed, the replies the mock sent.

`bench/run.py --floors` records one reply of the mock to each request of the benchmark (status,
headers, body) and serves them with this app, in two forms, under the same uvicorn settings as the
mock (httptools, uvloop, no access log):

    python bench/floor_app.py --replies FILE --kind raw --port 8082        # a plain ASGI callable
    python bench/floor_app.py --replies FILE --kind starlette --port 8083  # a Starlette route + Response
    python bench/floor_app.py --replies FILE --kind raw --serve-protocol   # the first, under serve's protocol

`--serve-protocol` runs the app under the protocol `mockserver serve` runs (process/connections.py: the
limits below HTTP, a reply in one write, the keep-alive timeout watched by a sweep) instead of uvicorn's own:
that floor shows what the serving stack costs apart from the mock's own work.

Neither does any of the mock's work (routing, credentials, rate limit, validation, state, journal):
what they cost is what sending those replies costs on this stack, which no implementation of the mock
can go below. A request is answered by (method, path, whether it carries Authorization); anything
else gets the first reply.
"""
import argparse
import json

import uvicorn
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
        scope = request.scope                          # (not request.url: building it costs ~10 us a call)
        authorized = any(name == b"authorization" for name, _ in scope["headers"])
        status, headers, body = replies.get((scope["method"], scope["path"], authorized), first)
        return Response(body, status_code=status,
                        headers={name.decode("latin-1"): value.decode("latin-1") for name, value in headers})
    return Starlette(routes=[Route("/{path:path}", answer, methods=["GET", "POST", "PUT", "PATCH", "DELETE"])])


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--replies", required=True, help="the replies recorded by bench/run.py --floors (JSON)")
    parser.add_argument("--kind", choices=("raw", "starlette"), default="raw")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8082)
    parser.add_argument("--serve-protocol", action="store_true", help="run under the protocol of mockserver serve")
    args = parser.parse_args()
    replies = load(args.replies)
    app = raw_app(replies) if args.kind == "raw" else starlette_app(replies)
    http = "httptools"
    if args.serve_protocol:
        from mockserver.process.connections import Limits, protocol
        http = protocol(Limits())
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning", access_log=False,
                lifespan="off" if args.kind == "raw" else "on", http=http, loop="uvloop")
