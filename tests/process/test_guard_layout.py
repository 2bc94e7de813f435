"""The connection limits keep their notes in one object beside uvicorn's protocol (process/connections.py):
an instance of more attributes than its class's instances share a layout for reads every attribute of
uvicorn's own code the slow way."""

import asyncio

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from mockserver.process.connections import Guard, Limits, protocol

SHARED_LAYOUT_MOST = 30          # CPython's bound on the attribute names instances of a class share


class _Transport(asyncio.Transport):
    def get_extra_info(self, name, default=None):
        return {"sockname": ("127.0.0.1", 8080), "peername": ("127.0.0.1", 50000)}.get(name, default)

    def write(self, data):
        pass

    def is_closing(self):
        return False


async def _attributes(protocol_class):
    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})
    config = uvicorn.Config(app, lifespan="off", ws="none", http="httptools")
    config.load()
    connection = protocol_class(config=config, server_state=ServerState(), app_state={},
                                _loop=asyncio.get_running_loop())
    connection.connection_made(_Transport())
    connection.data_received(b"GET / HTTP/1.1\r\nHost: mock\r\n\r\n")
    await asyncio.sleep(0.01)
    return set(vars(connection)), connection


def test_the_guarded_protocol_adds_one_attribute_to_uvicorns_and_stays_within_the_shared_layout():
    async def run():
        plain, _ = await _attributes(HttpToolsProtocol)
        guarded, connection = await _attributes(protocol(Limits()))
        return plain, guarded, connection
    plain, guarded, connection = asyncio.run(run())
    assert guarded - plain == {"guard"} and len(guarded) <= SHARED_LAYOUT_MOST
    assert isinstance(connection.guard, Guard) and connection.guard.in_head and connection.guard.deadline is None
