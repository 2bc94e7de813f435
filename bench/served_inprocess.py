#!/usr/bin/env python3
"""The served path in one process, without sockets: the protocol `mockserver serve` runs (uvicorn's httptools
protocol behind the connection limits) is fed whole requests through a transport that keeps what is written,
and the app answers them. `bench/instructions.py` runs this under valgrind to count instructions per request.

    python bench/served_inprocess.py mock KIND N [--warm W]           # the mock, as `serve` builds it
    python bench/served_inprocess.py floor KIND N --replies FILE      # bench/floor_app.py's plain ASGI app
    python bench/served_inprocess.py record FILE                      # the mock's reply to each kind, for floor

KIND: status, list50, post, 401 (the requests a-d of bench/run.py). The mock gets 48 more projects first (50 in
the organization), then W warm-up requests (default 300), then N measured ones; it prints the statuses
answered and the CPU time per request (process_time: a rough figure; the instruction count is the stable one).
The floor runs under uvicorn's own protocol and the settings bench/floor_app.py serves with.
"""
import argparse
import asyncio
import itertools
import json
import sys
import time
from pathlib import Path

import uvicorn
import uvloop
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

BENCH = Path(__file__).resolve().parent
ORG = "8d3e6a4b-1f2c-4b7a-9e1d-3c5f7a9b2d10"
PROJECT = "2f6b8d0a-4c1e-4b3d-9a5f-7e9c1b3d5f63"
APP = "a7c9e1b3-5d7f-4b9d-8f1b-3d5f7b9d1fa5"
HOST = b"Host: 127.0.0.1:8080\r\n"
AUTH = b"Authorization: Token mock-admin-token\r\n"
KINDS = ("status", "list50", "post", "401")
_numbers = itertools.count()


def request(kind):
    """The bytes of one request of that kind (a create: a new key or name each time)."""
    if kind == "status":
        return b"GET /application/%s/status HTTP/1.1\r\n%s%s\r\n" % (APP.encode(), HOST, AUTH)
    if kind == "list50":
        return b"GET /organization/%s/project HTTP/1.1\r\n%s%s\r\n" % (ORG.encode(), HOST, AUTH)
    if kind == "401":
        return b"GET /organization HTTP/1.1\r\n%s\r\n" % HOST
    if kind == "post":
        path, body = f"/project/{PROJECT}/environmentVariable", b'{"key":"K_%08d","value":"v"}' % next(_numbers)
    else:                                      # "project": what fills the organization to 50
        path, body = f"/organization/{ORG}/project", b'{"name":"bench-%08d"}' % next(_numbers)
    return (b"POST %s HTTP/1.1\r\n%s%sContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
            % (path.encode(), HOST, AUTH, len(body), body))


class Transport(asyncio.Transport):
    """Reading and writing never block; what is written is dropped but for the status of each reply
    (`statuses`) and, when `keep` is set, the bytes (`out`): the driver's own work stays out of the count."""

    def __init__(self):
        super().__init__()
        self.out, self.statuses, self.keep, self.closing = [], set(), False, False

    def write(self, data):
        if data[:9] == b"HTTP/1.1 ":
            self.statuses.add(int(data[9:12]))
        if self.keep:
            self.out.append(bytes(data))

    def get_extra_info(self, name, default=None):
        return {"sockname": ("127.0.0.1", 8080), "peername": ("127.0.0.1", 50000)}.get(name, default)

    def is_closing(self):
        return self.closing

    def close(self):
        self.closing = True

    def pause_reading(self):
        pass

    def resume_reading(self):
        pass

    def get_write_buffer_size(self):
        return 0

    def can_write_eof(self):
        return True

    def write_eof(self):
        pass

    def set_protocol(self, protocol):
        pass


def mock_protocol():
    """The mock as `mockserver serve` runs it (its defaults, a rate limit no run reaches, the collector's
    thresholds and first freeze) and its protocol."""
    from mockserver.app import MockServer
    from mockserver.cli.main import guarded_protocol
    from mockserver.core.settings import Settings
    from mockserver.process.collector import Collector
    settings = Settings(rate_limit=10**9, rate_window=3600)
    mock = MockServer(settings)
    config = uvicorn.Config(mock, access_log=False, lifespan="off", ws="none", proxy_headers=False,
                            server_header=False, http="httptools")
    Collector().install()
    return config, guarded_protocol(settings, mock)


def floor_protocol(replies):
    sys.path.insert(0, str(BENCH))
    from floor_app import load, raw_app
    config = uvicorn.Config(raw_app(load(replies)), access_log=False, lifespan="off", ws="none", http="httptools",
                            proxy_headers=False, server_header=False)      # as `serve` and floor_app.py set them
    return config, HttpToolsProtocol


class Connection:
    """One kept-alive connection: a request in, the loop run until its reply is whole."""

    def __init__(self, config, protocol_class):
        config.load()
        self.transport = Transport()
        self.protocol = protocol_class(config=config, server_state=ServerState(), app_state={},
                                       _loop=asyncio.get_running_loop())
        self.protocol.connection_made(self.transport)

    async def send(self, data):
        self.protocol.data_received(data)
        while not self.protocol.cycle.response_complete:
            await asyncio.sleep(0)

    def replies(self):
        """(status, headers, body) of each reply written since the last call, when the transport keeps them."""
        whole = b"".join(self.transport.out)
        self.transport.out.clear()
        found = []
        for part in whole.split(b"HTTP/1.1 ")[1:]:
            head, _, body = part.partition(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            headers = [tuple(line.split(": ", 1)) for line in lines[1:]]
            found.append((int(lines[0][:3]), headers, body))
        return found


async def measure(app, kind, n, warm, replies):
    config, protocol_class = mock_protocol() if app == "mock" else floor_protocol(replies)
    connection = Connection(config, protocol_class)
    if app == "mock":
        for _ in range(48):
            await connection.send(request("project"))
    batch = [request(kind) for _ in range(warm + n)]
    for data in batch[:warm]:
        await connection.send(data)
    connection.transport.statuses.clear()
    started = time.process_time()
    for data in batch[warm:]:
        await connection.send(data)
    took = time.process_time() - started
    statuses = sorted(connection.transport.statuses)
    print(json.dumps({"app": app, "kind": kind, "requests": n, "statuses": statuses,
                      "cpu_us": round(took / n * 1e6, 2)}))


async def record(path):
    """The mock's reply to each kind, in the form bench/floor_app.py loads (no Date or Content-Length)."""
    connection = Connection(*mock_protocol())
    connection.transport.keep = True
    for _ in range(48):
        await connection.send(request("project"))
    connection.replies()
    out = []
    for kind in KINDS:
        data = request(kind)
        await connection.send(data)
        status, headers, body = connection.replies()[-1]
        line = data.split(b"\r\n", 1)[0].decode().split(" ")
        out.append({"method": line[0], "path": line[1], "authorized": kind != "401", "status": status,
                    "headers": [(name.lower(), value) for name, value in headers
                                if name.lower() not in ("date", "content-length")],
                    "body": body.decode("utf-8")})
    Path(path).write_text(json.dumps(out, indent=1) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("app", choices=("mock", "floor", "record"))
    parser.add_argument("kind", help="a kind (mock, floor) or the file to write (record)")
    parser.add_argument("n", type=int, nargs="?", default=1000)
    parser.add_argument("--warm", type=int, default=300)
    parser.add_argument("--replies", help="the file `record` wrote (floor)")
    args = parser.parse_args()
    uvloop.install()
    if args.app == "record":
        asyncio.run(record(args.kind))
    else:
        if args.kind not in KINDS:
            parser.error(f"kind must be one of {', '.join(KINDS)}")
        asyncio.run(measure(args.app, args.kind, args.n, args.warm, args.replies))


if __name__ == "__main__":
    main()
