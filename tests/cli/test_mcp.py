"""`mockserver mcp` driven as an agent's MCP client drives it: the SDK's own client over stdio (cli/mcp.py).

Its tools are listed and described, a sandbox is made, a scenario loaded, the API called through the sandbox and
with httpx, the journal read and verified, a pact exported; the global tools are refused without --allow-global
and allowed with it; no tool reaches another sandbox or the default world. A mock is started once per module
(conftest's live_manual); each test starts its own MCP server against it, or lets one start its own mock.
"""

import contextlib
import json
import os
import re
import subprocess
import sys
import time

import anyio
import httpx
import pytest
from support import ROOT
from support.ids import APP

from mockserver.client import connect
from mockserver.client.start import START_LINE

pytestmark = pytest.mark.server

SCOPED = {"sandbox_info", "list_operations", "describe_operation", "create_sandbox", "delete_sandbox",
          "load_scenario", "advance_clock", "call_api", "read_journal", "verify_calls", "export_pact"}
GLOBAL = {"list_sandboxes", "delete_any_sandbox", "reset_world"}
BUILD_FAILS = """
name: build-fails
rules:
  - name: build-breaks
    match: {operation: deployApplication}
    effect: {deployment: {fail_at: BUILD, state: BUILD_ERROR}}
"""
ABSENT = """
import sys
class Absent:                                   # the SDK not installed: no finder finds `mcp`
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "mcp":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, Absent())
from mockserver.cli.main import main
sys.exit(main(["mcp"]))
"""


class Agent:
    """The SDK's client session on `mockserver mcp`: `use` a tool (its JSON answer), or see it `refused`."""

    def __init__(self, session):
        self.session = session

    async def use(self, tool, **arguments):
        result = await self.session.call_tool(tool, arguments)
        assert not result.is_error, f"{tool}: {result.content[0].text}"
        return json.loads(result.content[0].text)

    async def refused(self, tool, **arguments):
        result = await self.session.call_tool(tool, arguments)
        assert result.is_error, f"{tool} was not refused: {result.content[0].text[:300]}"
        return result.content[0].text


@contextlib.asynccontextmanager
async def mcp(*args):
    """`mockserver mcp ARGS` as a subprocess on stdio, and an Agent on it once the session is initialized."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "mockserver", "mcp", *args], cwd=str(ROOT))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield Agent(session)


def drive(steps):
    """Run an async test body."""
    anyio.run(steps)


@pytest.fixture
def mock(live_manual):
    """The module's mock through the control client (its root handle)."""
    client = connect(live_manual.url)
    yield client
    client.close()


def test_it_lists_every_tool_with_a_description_that_states_its_side_effects(live_manual):
    async def steps():
        async with mcp("--url", live_manual.url) as agent:
            tools = {tool.name: tool for tool in (await agent.session.list_tools()).tools}
            assert set(tools) == SCOPED | GLOBAL
            for name, tool in tools.items():
                assert re.search(r"side effects", tool.description, re.IGNORECASE), name
            for name in GLOBAL:
                assert "Refused unless mockserver mcp was started with --allow-global" in tools[name].description
            schema = tools["call_api"].input_schema
            assert {"method", "path", "token", "body", "query", "headers"} <= set(schema["properties"])
            assert set(schema["required"]) == {"method", "path"}
    drive(steps)


def test_an_agent_makes_a_sandbox_loads_a_scenario_calls_the_api_reads_verifies_and_exports(live_manual, mock):
    async def steps():
        async with mcp("--url", live_manual.url) as agent:
            assert "create_sandbox" in await agent.refused("read_journal")
            box = await agent.use("create_sandbox", name="mcp-agent-flow")
            assert box["url"] == f"{live_manual.url}/sandbox/mcp-agent-flow" and box["clock"]["mode"] == "manual"
            loaded = await agent.use("load_scenario", document=BUILD_FAILS)
            assert loaded["name"] == "build-fails"
            deploy = await agent.use("call_api", method="POST", path=f"/application/{APP}/deploy", token="deploy")
            assert deploy["status"] == 202
            await agent.use("advance_clock", seconds=30)
            status = httpx.get(f"{box['url']}/application/{APP}/status",     # as the code under test calls it
                               headers={"Authorization": f"Token {box['tokens']['read']}"})
            assert status.json()["state"] == "BUILD_ERROR"
            calls = await agent.use("read_journal", scenario="build-fails/build-breaks")
            assert [call["operation"] for call in calls] == ["deployApplication"]
            assert (await agent.use("verify_calls", operation="getApplicationStatus", count=1))["ok"]
            missed = await agent.use("verify_calls", operation="deployApplication", count=2)
            assert not missed["ok"] and "found 1" in missed["message"]
            pact = await agent.use("export_pact", consumer="agent-client")
            assert pact["consumer"] == {"name": "agent-client"} and len(pact["interactions"]) == 2
        assert mock.calls() == []                                            # the default world untouched
        mock.delete_sandbox("mcp-agent-flow")
    drive(steps)


def test_it_reads_the_api_document(live_manual):
    async def steps():
        async with mcp("--url", live_manual.url) as agent:
            rows = await agent.use("list_operations", text="deploy")
            deploy = next(row for row in rows if row["operationId"] == "deployApplication")
            assert deploy == {"operationId": "deployApplication", "method": "POST",
                              "path": "/application/{app_id}/deploy", "scope": "deploy", "tag": "Applications",
                              "summary": deploy["summary"]}
            operation = await agent.use("describe_operation", operation_id="createProject")
            assert operation["method"] == "POST" and "requestBody" in operation and "201" in operation["responses"]
            assert operation["components"]["schemas"], "the schemas it refers to come with it"
            assert "deployApplication" in await agent.refused("describe_operation", operation_id="deployApp")
    drive(steps)


def test_global_tools_are_refused_without_the_option_then_allowed_with_it(live_manual, mock):
    mock.create_sandbox("mcp-someone-else")

    async def without():
        async with mcp("--url", live_manual.url, "--sandbox", "mcp-global-1") as agent:
            for tool, arguments in (("list_sandboxes", {}), ("delete_any_sandbox", {"name": "mcp-someone-else"}),
                                    ("reset_world", {"name": "default"})):
                message = await agent.refused(tool, **arguments)
                assert "--allow-global" in message and "\n" not in message, message

    async def allowed():
        async with mcp("--url", live_manual.url, "--sandbox", "mcp-global-2", "--allow-global") as agent:
            assert "mcp-someone-else" in {box["name"] for box in await agent.use("list_sandboxes")}
            assert await agent.use("delete_any_sandbox", name="mcp-someone-else") == {"deleted": "mcp-someone-else"}
            assert (await agent.use("reset_world", name="default"))["name"] == "default"
    drive(without)
    assert "mcp-someone-else" in {box["name"] for box in mock.sandboxes()}
    drive(allowed)
    assert "mcp-someone-else" not in {box["name"] for box in mock.sandboxes()}
    for name in ("mcp-global-1", "mcp-global-2"):
        mock.delete_sandbox(name)


def test_no_tool_reaches_another_sandbox_or_the_default_world(live_manual, mock):
    neighbour = mock.in_sandbox("mcp-neighbour")
    neighbour.http.get("/organization", headers=neighbour.headers("read"))

    async def steps():
        async with mcp("--url", live_manual.url, "--sandbox", "mcp-mine") as agent:
            assert "'mcp-mine'" in await agent.refused("create_sandbox", name="mcp-neighbour")
            for path in ("/_mock/sandboxes", "/%5Fmock/calls", "/sandbox/mcp-neighbour/organization",
                         "/../sandbox/mcp-neighbour/organization", "/a/%2E%2E/%2E%2E/_mock/reset"):
                assert "only this sandbox's API" in await agent.refused("call_api", method="GET", path=path), path
            sent = await agent.use("call_api", method="GET", path="/organization", token="read",
                                   headers={"X-Mock-Sandbox": "mcp-neighbour"})
            assert sent["status"] == 200
            assert len(await agent.use("read_journal")) == 1
            await agent.use("delete_sandbox")
            assert "create_sandbox" in await agent.refused("call_api", method="GET", path="/organization")
    drive(steps)
    assert len(neighbour.calls()) == 1 and len(mock.calls()) == 0
    assert "mcp-mine" not in {box["name"] for box in mock.sandboxes()}, "a deleted sandbox is not made again"
    neighbour.delete_sandbox()
    neighbour.close()


def test_its_sandbox_is_made_at_start_with_the_manual_clock_or_used_as_it_is_and_never_the_default(live_server):
    real = live_server()                                                  # a mock whose clock is the wall clock
    existing = connect(real.url).in_sandbox("mcp-existing")
    existing.http.get("/organization", headers=existing.headers("read"))

    async def steps():
        async with mcp("--url", real.url, "--sandbox", "mcp-made") as agent:
            assert (await agent.use("sandbox_info"))["clock"]["mode"] == "manual"
        async with mcp("--url", real.url, "--sandbox", "mcp-existing") as agent:
            assert [call["operation"] for call in await agent.use("read_journal")] == ["getOrganization"]
    drive(steps)
    result = subprocess.run([sys.executable, "-m", "mockserver", "mcp", "--url", real.url, "--sandbox", "default"],
                            cwd=ROOT, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "default world" in result.stderr
    existing.close()


def test_without_a_url_it_starts_a_mock_and_stops_it_at_the_end():
    async def steps():
        async with mcp("--sandbox", "mcp-own-mock") as agent:
            box = await agent.use("sandbox_info")
            reply = httpx.get(f"{box['url']}/organization", headers={"Authorization": f"Token {box['tokens']['read']}"})
            assert reply.status_code == 200
            return box["url"].split("/sandbox/")[0]
    url = anyio.run(steps)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            httpx.get(f"{url}/_mock/health", timeout=1)
        except httpx.TransportError:
            return
        time.sleep(0.2)
    pytest.fail(f"the mock mockserver mcp started at {url} still answers after the session ended")


@pytest.mark.timeout(60)
def test_serve_does_not_import_the_sdk():
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}       # every import on stderr, across the allocator restart
    process = subprocess.Popen([sys.executable, "-m", "mockserver", "serve", "--port", "0"], cwd=ROOT, env=env,
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines = []
    try:
        for line in process.stderr:
            lines.append(line)
            started = START_LINE.match(line)
            if started:
                assert httpx.get(f"{started[1]}/_mock/health").status_code == 200      # what a request imports
                break
    finally:
        process.terminate()
        process.wait(10)
    assert any(line.rstrip().endswith("| mockserver.app") for line in lines), "the import log was read"
    assert not [line for line in lines if re.search(r"\|\s+mcp(\.|\s*$)", line)]


def test_without_the_sdk_it_says_in_one_line_how_to_install_it():
    result = subprocess.run([sys.executable, "-c", ABSENT], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "pip install 'idp-mockserver[mcp]'" in result.stderr
