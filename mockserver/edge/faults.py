"""Faults below HTTP: how a reply shaped by a scenario rule leaves the server.

A rule's effect may ask for one of these (world/scenarios.py checks them; app.py hands the reply here
instead of sending it itself):

- `truncate: {fraction: 0.5}` or `{bytes: N}`: a valid status line and headers announcing the whole
  body (`Content-Length`), then only that part of the body, then the connection is closed. A client
  sees an incomplete body, never a shorter valid one.
- `malformed_body: true` (or a text to send): the status and `Content-Type: application/json` of the
  reply, with a body that is not JSON (the reply cut before its last character, then a stray comma).
- `dribble: {chunks: N, delay_ms: M}` or `{chunk_bytes: N, delay_ms: M}`: the body in N pieces (or
  pieces of N bytes) with M ms of real time before each piece after the first.
- `reset: {after: headers}`, `{fraction: F}` or `{bytes: N}`: the status line and headers, then that
  much of the body, then a TCP reset (RST, not an orderly close), the way a crashed peer or a
  middlebox ends a connection.

The connection is reached through the request's scope: `serve`'s protocol (process/connections.py) puts
itself there under WIRE, as a `Wire`. Without one (an in-process test client) a cut cannot happen; the call
then fails with ConnectionAbortedError, as a dropped connection does.
"""

import asyncio
from typing import Protocol

FAULTS = ("truncate", "malformed_body", "dribble", "reset")
SETTLE = 0.05          # seconds between the last bytes written and the reset, so that they reach the peer
WIRE = "mock.wire"     # where a request's scope holds its connection (a Wire), when it came over one


class Wire(Protocol):
    """A request's connection, as the server's protocol lends it: ended in order or with a reset, and the request
    being answered told that its client is gone (the server then does not try to finish its reply)."""

    def close_connection(self) -> None:
        """Close it in order, what was written first."""

    def reset_connection(self) -> None:
        """End it with a TCP reset (RST), what was written dropped."""


def wire(scope):
    """The scope's connection, or ConnectionAbortedError (an in-process client has none)."""
    found = scope.get(WIRE)
    if found is None:
        raise ConnectionAbortedError("a scenario fault needs a real connection")
    return found


def of(effects):
    """The fault effects of a fired rule ({} when it has none)."""
    return {name: effects[name] for name in FAULTS if name in effects}


def malformed(payload, how):
    """A body that a JSON parser refuses: the given text, or the reply cut before its last character
    followed by a stray comma."""
    if isinstance(how, str):
        return how.encode()
    return (payload[:-1] if payload else b'{"status"') + b","


def cut_at(size, where):
    """Bytes of a body of `size` kept before a truncation or reset."""
    if where.get("after") == "headers":
        return 0
    if "bytes" in where:
        return min(size, where["bytes"])
    return min(size, int(size * where.get("fraction", 0.5)))


def pieces(body, dribble):
    """The body in the pieces a dribble sends."""
    if not body:
        return [body]
    size = dribble.get("chunk_bytes") or -(-len(body) // dribble.get("chunks", 4))
    return [body[i:i + size] for i in range(0, len(body), size)]


async def deliver(scope, send, status, headers, payload, faults):
    """Send a reply with its faults; the bytes of the body that were sent (what the journal keeps)."""
    body = malformed(payload, faults["malformed_body"]) if "malformed_body" in faults else payload
    headers = [pair for pair in headers if pair[0] != b"content-length"]
    if "malformed_body" in faults and not any(name == b"content-type" for name, _ in headers):
        headers.append((b"content-type", b"application/json"))
    headers.append((b"content-length", str(len(body)).encode()))
    cut = faults.get("truncate") or faults.get("reset")
    if cut is None:
        await _send_body(send, status, headers, body, faults.get("dribble"))
        return body
    kept = body[:cut_at(len(body), cut)]
    connection = wire(scope)
    await send({"type": "http.response.start", "status": status, "headers": headers})
    # sent even when nothing of the body is kept: a server may hold the head until a body message comes (ASGI
    # allows it), and the client must see the head before the cut
    await send({"type": "http.response.body", "body": kept, "more_body": True})
    if "reset" in faults:
        await asyncio.sleep(SETTLE)
        connection.reset_connection()
    else:
        connection.close_connection()
    return kept


async def _send_body(send, status, headers, body, dribble):
    await send({"type": "http.response.start", "status": status, "headers": headers})
    parts = pieces(body, dribble) if dribble else [body]
    for index, part in enumerate(parts):
        if index and dribble:
            await asyncio.sleep(dribble["delay_ms"] / 1000)
        await send({"type": "http.response.body", "body": part, "more_body": index + 1 < len(parts)})
