"""`mockserver mcp`: an MCP server (stdio) that lets coding agents test against a sandbox of a mock.

It talks to the mock at --url (or MOCKSERVER_URL) through `mockserver.client`, or starts one for the session
(`start_local`, stopped at its end). Every tool acts on one sandbox (cli/mcp_scope.py): the one --sandbox names
(made at start when missing), else the one the agent makes with create_sandbox. The global and destructive tools
(GLOBAL) are refused unless the server was started with --allow-global. The MCP SDK (PyPI `mcp`, the extra
`idp-mockserver[mcp]`) is imported only when this command runs: `mcp` 2's MCPServer, else `mcp` 1's FastMCP.
"""

import difflib
import functools
import inspect
import signal
import sys
from typing import Any, Literal

import httpx

from mockserver.cli.mcp_scope import Refused, Scope, api_path, dump, referenced, reply_of
from mockserver.client import MockServerError, UnknownToken, connect, start_local

INSTALL = ("mockserver mcp: the MCP SDK is not installed: pip install 'idp-mockserver[mcp]' "
           "(or pip install 'mcp>=1.2')")
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
GLOBAL = ("list_sandboxes", "delete_any_sandbox", "reset_world")


class Tools:
    """The tools, in the order an agent meets them; each docstring is the tool's description."""

    SCOPED = ("sandbox_info", "list_operations", "describe_operation", "create_sandbox", "delete_sandbox",
              "load_scenario", "advance_clock", "call_api", "read_journal", "verify_calls", "export_pact")

    def __init__(self, scope):
        self.scope = scope
        self._document = None

    # ---------------------------------------------------------------- the sandbox
    def sandbox_info(self) -> str:
        """This server's sandbox: its name, the base URL to point the code under test at, the API tokens by name
        (admin, read, write, deploy), its clock, its active scenarios (with how often each rule fired) and its
        inspector page (a web page over its calls and state). No side effects."""
        box = self.scope.box()
        return dump({"sandbox": box.sandbox, "url": box.url, "tokens": dict(box.tokens), "clock": box.clock(),
                     "scenarios": box.scenarios(), "inspector": box.inspector_url(),
                     "global_tools": "allowed" if self.scope.allow_global else "refused (no --allow-global)"})

    def create_sandbox(self, name: str | None = None, clock: Literal["manual", "real"] = "manual",
                       seed: int | None = None, start: str | None = None) -> str:
        """Make this server's sandbox: a fresh world from the mock's fixtures, which every other tool then acts on.
        Side effects: creates that one sandbox on the mock, or, called again with its name (or none), replaces it
        with a fresh one (its records, journal and scenarios are gone). One sandbox at a time: another name is
        refused (delete_sandbox first; with --sandbox NAME only NAME), and so is the name of a sandbox that exists
        already and is not this server's. `name`: 1 to 64 of A-Z a-z 0-9 _ . - (default: mcp- and random letters).
        `clock`: manual (default; time moves only with advance_clock) or real. `seed`: of generated ids and data.
        `start`: where its clock starts (ISO 8601)."""
        box = self.scope.make(name, **{"clock": clock, **({} if seed is None else {"seed": seed}),
                                       **({} if start is None else {"start": start})})
        return dump({"sandbox": box.sandbox, "url": box.url, "tokens": dict(box.tokens), "clock": box.clock()})

    def delete_sandbox(self) -> str:
        """Delete this server's sandbox with its records, journal and scenarios; the sandbox tools are refused until
        create_sandbox makes one again. Side effects: deletes that sandbox on the mock (no other)."""
        return dump({"deleted": self.scope.drop()})

    def load_scenario(self, document: str) -> str:
        """Activate a scenario in this server's sandbox: YAML text in the mock's scenario format (name, rules
        with match and effect: a status, a body, a delay, a fault, a deployment that fails at a step...), replacing
        an active one of the same name. It is checked whole first: a broken one is refused with the reason.
        Side effects: from now on the sandbox's API answers as its rules say."""
        return dump(self.scope.box().activate_scenario(document))

    def advance_clock(self, seconds: float) -> str:
        """Move this sandbox's clock forward by `seconds`. Side effects: deployment steps, events and webhook
        retries that fall due in that time happen now, in this sandbox only. The clock after it."""
        return dump(self.scope.box().advance(seconds))

    # ---------------------------------------------------------------- the API and its document
    def list_operations(self, text: str | None = None, tag: str | None = None) -> str:
        """The operations of the platform's API document: operationId, method, path, the token scope each needs
        (read, write, deploy or admin), tag and summary; only those whose path, operationId or summary holds `text`
        (any case), or of `tag`. Reads the document; no side effects."""
        rows = [{"operationId": operation.get("operationId"), "method": method.upper(), "path": path,
                 "scope": operation.get("x-scope"), "tag": (operation.get("tags") or [None])[0],
                 "summary": operation.get("summary")} for method, path, operation in self._operations()]
        if text:
            rows = [row for row in rows if text.lower() in f"{row['path']} {row['operationId']} {row['summary']}"
                    .lower()]
        return dump([row for row in rows if not tag or str(row["tag"]).lower() == tag.lower()])

    def describe_operation(self, operation_id: str) -> str:
        """One operation of the API document by operationId: method, path, token scope, parameters, request body
        and responses, with every component (schema, response, header) they refer to. No side effects."""
        found = {item[2].get("operationId"): item for item in self._operations()}
        if operation_id not in found:
            close = difflib.get_close_matches(operation_id, [str(name) for name in found], 3)
            raise Refused(f"no operation {operation_id!r} in the API document"
                          + (f": did you mean {', '.join(close)}?" if close else " (list_operations lists them)"))
        method, path, operation = found[operation_id]
        return dump({"method": method.upper(), "path": path, "scope": operation.get("x-scope"), **operation,
                     "components": referenced(self._document, operation)})

    def call_api(self, method: str, path: str, token: str = "admin", body: Any = None,
                 query: dict[str, str] | None = None, headers: dict[str, str] | None = None) -> str:
        """Send one request to the platform API as this sandbox serves it (the sandbox's URL + `path`, e.g.
        /organization or /application/{id}/deploy) with a token of the fixtures by name (admin, read, write,
        deploy; `none`: no Authorization header), a JSON `body`, `query` parameters and more `headers`. The reply's
        status, headers and body. Side effects: those of the call itself (a POST creates, a DELETE deletes, a deploy
        starts a deployment), in this sandbox only, journaled like any call. Paths of the control API (/_mock) or
        of another sandbox are refused."""
        box, verb = self.scope.box(), method.upper()
        if verb not in METHODS:
            raise Refused(f"method {method!r} is not one of {', '.join(METHODS)}")
        sent = {key: value for key, value in (headers or {}).items() if key.lower() != "x-mock-sandbox"}
        if token.lower() != "none":
            try:
                sent = {**box.headers(token), **sent}
            except UnknownToken as error:
                raise Refused(str(error)) from None
        response = box.http.request(verb, f"{box.url}{api_path(path)}", params=query, headers=sent,
                                    json=body)
        return dump(reply_of(response))

    # ---------------------------------------------------------------- the journal
    def read_journal(self, operation: str | None = None, method: str | None = None, path: str | None = None,
                     status: str | None = None, scenario: str | None = None, since: str | None = None,
                     limit: int = 20) -> str:
        """The calls this sandbox's API answered: the last `limit` (default 20) matching every filter given, oldest
        first, each with its request, reply, operation, status and the scenario rule that fired. Filters:
        operation (operationId), method, path (a template, exact path or glob such as /application/*/deploy),
        status (202 or 4xx), scenario (scenario/rule), since (a call id or an ISO 8601 time). No side effects."""
        return dump(self.scope.box().calls(limit=limit, **_filters(operation, method, path, status, scenario,
                                                                    since)))

    def verify_calls(self, count: int | None = None, at_least: int | None = None, at_most: int | None = None,
                     operation: str | None = None, method: str | None = None, path: str | None = None,
                     status: str | None = None, scenario: str | None = None, since: str | None = None) -> str:
        """Did calls matching the filters (those of read_journal) happen exactly `count` times, or at least / at
        most so often? With no bound: at least once. The verdict: ok, the count, and a readable message that lists
        the matches and the near misses when it fails. No side effects."""
        return dump(self.scope.box().verify(count=count, at_least=at_least, at_most=at_most,
                                            **_filters(operation, method, path, status, scenario, since)))

    def export_pact(self, consumer: str = "consumer", provider: str = "idp-platform", operation: str | None = None,
                    method: str | None = None, path: str | None = None, status: str | None = None) -> str:
        """This sandbox's calls (filtered as read_journal) as a Pact v4 consumer contract between `consumer` and
        `provider`: the pact JSON document, to save as a file and verify against the platform. No side effects."""
        return dump(self.scope.box().export_pact(consumer=consumer, provider=provider,
                                                 **_filters(operation, method, path, status)))

    # ---------------------------------------------------------------- global: only with --allow-global
    def list_sandboxes(self) -> str:
        """GLOBAL: every sandbox of the mock (other clients' too) with its calls, clock and scenarios. Refused unless
        mockserver mcp was started with --allow-global. No side effects."""
        self.scope.require_global("list_sandboxes")
        return dump(self.scope.mock.sandboxes())

    def delete_any_sandbox(self, name: str) -> str:
        """GLOBAL, DESTRUCTIVE: delete any sandbox of the mock by name, another client's too. Side effects: that
        sandbox is gone with its records, journal and scenarios (this server's own too, when named). Refused unless
        mockserver mcp was started with --allow-global. `default` (the mock's default world) is replaced by a
        fresh one."""
        self.scope.require_global("delete_any_sandbox")
        if self.scope.current is not None and self.scope.current.sandbox == name:
            return dump({"deleted": self.scope.drop()})
        self.scope.mock.delete_sandbox(name)
        return dump({"deleted": name})

    def reset_world(self, name: str = "default") -> str:
        """GLOBAL, DESTRUCTIVE: put a world back as it was made: `default` (the mock's default world, which every
        client that names no sandbox uses) or any sandbox by name. Side effects: its records go back to how it was
        made, its journal and webhook deliveries are emptied, its scenarios kept. Refused unless mockserver mcp was
        started with --allow-global."""
        self.scope.require_global("reset_world")
        return dump(self.scope.mock.reset_sandbox(name))

    # ----------------------------------------------------------------
    def _operations(self):
        """(method, path, operation) of every operation of the mock's API document (read once)."""
        if self._document is None:
            reply = self.scope.mock.http.get(f"{self.scope.mock.root}/openapi.json")
            reply.raise_for_status()
            self._document = reply.json()
        return [(method, path, operation) for path, item in self._document["paths"].items()
                for method, operation in item.items() if isinstance(operation, dict) and method in
                ("get", "put", "post", "delete", "patch", "head", "options")]


def _filters(operation=None, method=None, path=None, status=None, scenario=None, since=None):
    return {key: value for key, value in (("operation", operation), ("method", method), ("path", path),
                                          ("status", status), ("scenario", scenario), ("since", since)) if value}


# ---------------------------------------------------------------- the server
def load_sdk():
    """(server class, ToolError) of the MCP SDK: `mcp` 2's MCPServer, else `mcp` 1's FastMCP; ImportError without."""
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
    except ImportError:
        from mcp.server.fastmcp import FastMCP as MCPServer  # type: ignore[no-redef]
        from mcp.server.fastmcp.exceptions import ToolError  # type: ignore[no-redef]
    return MCPServer, ToolError


def guarded(method, tool_error, root):
    """The tool as the SDK calls it: what it refuses, what the mock answered with an error and a mock out of reach
    become one line for the agent (a ToolError: the call's result is an error) instead of a traceback."""
    @functools.wraps(method)
    def tool(*args, **kwargs):
        try:
            return method(*args, **kwargs)
        except Refused as error:
            raise tool_error(f"refused: {error}") from None
        except MockServerError as error:
            raise tool_error(f"the mock answered {error.status}: {error.message}") from None
        except httpx.HTTPError as error:
            raise tool_error(f"the mock at {root} did not answer: {error or type(error).__name__}") from None
    return tool


def build(server_class, tool_error, scope):
    """The MCP server with every tool of Tools, each described by its docstring."""
    where = f"sandbox {scope.current.sandbox!r}" if scope.current else "the sandbox create_sandbox makes"
    server = server_class("idp-mockserver", log_level="WARNING", instructions=(
        f"Tools over the Infrastructure Deployment Platform API mock at {scope.mock.root}. Every tool acts on "
        f"{where} and nothing else; sandbox_info gives its URL and tokens. Global tools ({', '.join(GLOBAL)}) are "
        + ("allowed." if scope.allow_global else "refused: the server was started without --allow-global.")))
    tools = Tools(scope)
    # the answer is the JSON text alone, not that text again as structured output (where add_tool asks)
    plain = {"structured_output": False} if "structured_output" in inspect.signature(server.add_tool).parameters else {}
    for name in Tools.SCOPED + GLOBAL:
        method = getattr(tools, name)
        server.add_tool(guarded(method, tool_error, scope.mock.root), name=name,
                        description=" ".join(method.__doc__.split()), **plain)
    return server


def run(args):
    """Serve MCP on stdin/stdout until the client closes it: exit 0; 2 when the SDK is missing, no mock answers or
    the sandbox cannot be had (one line on stderr). A mock it started is stopped at the end."""
    try:
        server_class, tool_error = load_sdk()
    except ImportError as error:                  # absent, or present but broken (an old mcp with a newer pydantic)
        print(INSTALL if error.name == "mcp" else f"mockserver mcp: the MCP SDK did not load: {error} (pip install "
              "--upgrade 'mcp>=1.2')", file=sys.stderr)
        return 2
    try:
        mock = connect(args.url, control_token=args.control_token) if args.url else start_local()
    except (OSError, RuntimeError, ValueError, httpx.HTTPError) as error:       # TimeoutError is an OSError
        print(f"mockserver mcp: no mock to talk to at {args.url or 'a started one'}: {error}", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, _stop)          # the client's stop: the finally below still stops the mock
    try:
        try:
            scope = Scope(mock, args.sandbox, args.allow_global)
        except (Refused, MockServerError, httpx.HTTPError) as error:
            print(f"mockserver mcp: sandbox {args.sandbox}: {error}", file=sys.stderr)
            return 2
        build(server_class, tool_error, scope).run("stdio")
    finally:
        mock.stop()
    return 0


def _stop(*_):
    raise SystemExit(0)
