#!/usr/bin/env python3
"""What CORS and the access log cost per call, in-process (ASGI, no network, no uvicorn).

    .venv/bin/python bench/features.py

A GET status call through the whole MockServer, 15 rounds of 2,000 calls per variant taken in
turn, the CPU time of the fastest round (the least disturbed by other load) per call. The access
log writes to a temporary file (a line flushed per call, as `mockserver serve` does). The served
figures (wrk, CPU per request) come from `bench/run.py --variants`.
"""

import asyncio
import os
import tempfile
import time
import timeit

from mockserver.app import MockServer
from mockserver.core.settings import Settings
from mockserver.document.spec import Spec
from mockserver.edge.accesslog import access_logger

spec = Spec.load()
ROUNDS = 15

STATUS_SCOPE = {"type": "http", "method": "GET", "path": "/application/a7c9e1b3-5d7f-4b9d-8f1b-3d5f7b9d1fa5/status",
                "raw_path": b"/application/a7c9e1b3-5d7f-4b9d-8f1b-3d5f7b9d1fa5/status", "query_string": b"",
                "headers": [(b"host", b"127.0.0.1"), (b"authorization", b"Token mock-admin-token"),
                            (b"user-agent", b"wrk")]}


async def _receive():
    return {"type": "http.request", "body": b"", "more_body": False}


async def _send(message):
    pass


def per_call(mock, loop, calls=2000):
    """CPU time of this process per call (process_time: time spent descheduled by other load is not counted)."""
    async def many():
        for _ in range(calls):
            await mock(dict(STATUS_SCOPE), _receive, _send)
    return timeit.timeit(lambda: loop.run_until_complete(many()), number=1, timer=time.process_time) / calls * 1e6


log_file = tempfile.NamedTemporaryFile("w", prefix="mock-access-", suffix=".log", delete=False)
variants = {"as it ships (CORS on, access log off)": {}, "CORS off": {"cors_origins": "off"},
            "access log on, text, to a file": {"access_log": True},
            "access log on, json, to a file": {"access_log": True, "log_format": "json"}}
mocks = {}
for name, overrides in variants.items():
    mocks[name] = MockServer(Settings(rate_limit=10**9, rate_window=3600, journal_size=1000, **overrides), spec=spec)
    if mocks[name].access_log:
        mocks[name].access_log = access_logger(mocks[name].settings.log_format, log_file)
loop = asyncio.new_event_loop()
took = {name: [] for name in variants}
for _ in range(ROUNDS):                   # round robin: drift of the machine hits every variant alike
    for name, mock in mocks.items():
        took[name].append(per_call(mock, loop))
loop.close()
log_file.close()
os.unlink(log_file.name)
base = min(took["as it ships (CORS on, access log off)"])
for name, times in took.items():
    print(f"{name:40} {min(times):7.2f} us CPU per call  ({(min(times) / base - 1) * 100:+.1f} %)")
