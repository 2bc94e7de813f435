"""What the mock uses of uvicorn beyond its public face is named in one place (process/connections.py
`UVICORN_INSIDES`, process/stopping.py `UVICORN_SERVER_INSIDES`), and each name is checked here against the uvicorn
installed: an upgrade that drops or renames one fails in this file, naming it, instead of somewhere in a request.
pyproject.toml allows the versions this passes on; .ci/uvicorn-range runs the suite of process/ with the lowest."""

import asyncio
import inspect
from importlib.metadata import version

import pytest
import uvicorn
from packaging.specifiers import SpecifierSet
from support import ROOT
from uvicorn.protocols.http.flow_control import FlowControl
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle
from uvicorn.server import ServerState

from mockserver.process.connections import UVICORN_INSIDES
from mockserver.process.stopping import UVICORN_SERVER_INSIDES

INSTALLED = version("uvicorn")


def allowed():
    """The range of uvicorn pyproject.toml allows."""
    import tomllib
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    [wanted] = [dep for dep in project["dependencies"] if dep.startswith("uvicorn")]
    return SpecifierSet(wanted.split("]", 1)[-1])


def instances():
    """A protocol of uvicorn's with a request read (so that its cycle exists), and its parts."""
    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def build():
        from support.transport import Transport
        config = uvicorn.Config(app, lifespan="off", ws="none", http="httptools")
        config.load()
        protocol = HttpToolsProtocol(config=config, server_state=ServerState(), app_state={},
                                     _loop=asyncio.get_running_loop())
        protocol.connection_made(Transport())
        protocol.data_received(b"GET / HTTP/1.1\r\nHost: h\r\n\r\n")
        await asyncio.sleep(0.01)
        return {"HttpToolsProtocol": protocol, "RequestResponseCycle": protocol.cycle, "FlowControl": protocol.flow,
                "ServerState": protocol.server_state}
    return asyncio.run(build())


CLASSES = {"HttpToolsProtocol": HttpToolsProtocol, "RequestResponseCycle": RequestResponseCycle,
           "FlowControl": FlowControl, "ServerState": ServerState, "Server": uvicorn.Server}


def test_the_installed_uvicorn_is_one_the_project_allows():
    assert INSTALLED in allowed(), f"uvicorn {INSTALLED} is outside {allowed()} (pyproject.toml)"


@pytest.mark.parametrize("owner", sorted(UVICORN_INSIDES))
def test_every_inside_of_uvicorns_protocol_the_mock_uses_is_there(owner):
    found = instances()[owner]
    missing = [name for name in UVICORN_INSIDES[owner] if not hasattr(found, name)]
    assert not missing, (f"uvicorn {INSTALLED}: {owner} has no {', '.join(missing)}, which "
                         f"process/connections.py uses; the project supports uvicorn {allowed()} (pyproject.toml)")


def test_every_method_the_protocol_overrides_is_one_of_uvicorns_with_the_same_parameters():
    from mockserver.process.connections import GuardedProtocol
    own = {name for name, value in vars(GuardedProtocol).items() if inspect.isfunction(value)} - {"__init__"}
    overridden = sorted(name for name in own if hasattr(HttpToolsProtocol, name))
    assert set(overridden) <= set(UVICORN_INSIDES["HttpToolsProtocol"]), "an override not named in UVICORN_INSIDES"
    for name in overridden:
        ours, theirs = inspect.signature(getattr(GuardedProtocol, name)), inspect.signature(getattr(HttpToolsProtocol,
                                                                                                   name))
        assert list(ours.parameters) == list(theirs.parameters), f"uvicorn {INSTALLED}: {name}{theirs} changed"


def test_every_inside_of_uvicorns_server_the_mock_uses_is_there():
    missing = [name for name in UVICORN_SERVER_INSIDES if not hasattr(uvicorn.Server, name)]
    assert not missing, (f"uvicorn {INSTALLED}: Server has no {', '.join(missing)}, which process/stopping.py uses; "
                         f"the project supports uvicorn {allowed()} (pyproject.toml)")


def test_a_name_the_mock_does_not_use_is_not_listed():
    """The lists stay true to the code: each name appears in the module that claims to use it."""
    import re

    from mockserver.process import connections, stopping
    source = inspect.getsource(connections)
    listed = source.index("UVICORN_INSIDES = {")
    text = source[:listed] + source[source.index("}\n", listed):]
    unused = [name for names in UVICORN_INSIDES.values() for name in names if not re.search(rf"\b{name}\b", text)]
    assert not unused, f"listed in UVICORN_INSIDES but not used by process/connections.py: {unused}"
    server_text = inspect.getsource(stopping.Server)
    assert all(f"def {name}(" in server_text or f".{name}(" in server_text for name in UVICORN_SERVER_INSIDES)
