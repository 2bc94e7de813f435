"""The one sandbox the tools of `mockserver mcp` (cli/mcp.py) act on, and what keeps them in it.

A scoped tool reaches the mock only through the handle of the server's sandbox (`Scope.box()`: a
`mockserver.client.Client` whose routes are `/sandbox/{name}/...`), so it cannot touch another sandbox or the
default world; `api_path` keeps call_api's paths in the sandbox's API. A global tool asks
`Scope.require_global` first: without `--allow-global` it is refused in one line.
"""

import json
import re
import secrets
import threading
from typing import Any
from urllib.parse import unquote

from mockserver.client import Client, MockServerError
from mockserver.client.control import SANDBOX_NAME

REPLY_LIMIT = 65536                  # characters of a reply body call_api hands back; the rest is cut, and it says so
REF = re.compile(r'"\$ref":\s*"#/components/(\w+)/([^"]+)"')
DEFAULT_WORLD = "default"            # the world of clients that name no sandbox (sandboxes/sandbox.py)


class Refused(Exception):
    """What a tool will not do, in one line, as the agent reads it."""


def dump(value):
    return json.dumps(value, ensure_ascii=False)


class Scope:
    """The one sandbox of this server: given with --sandbox (made at start when missing), else the one the agent
    makes with create_sandbox; and whether the global tools are allowed."""

    def __init__(self, mock, fixed=None, allow_global=False):
        self.mock, self.fixed, self.allow_global = mock, fixed, allow_global
        self.current = None                 # the sandbox's handle (a Client scoped to it), None while there is none
        self.lock = threading.Lock()        # tools run in threads: one make or delete at a time
        if fixed:
            self._check(fixed)
            self.current = self._handle(fixed) if self._exists(fixed) else self.make(fixed, clock="manual")

    def box(self):
        if self.current is None:
            raise Refused("this server has no sandbox: call create_sandbox first (or start mockserver mcp with "
                          "--sandbox NAME)")
        return self.current

    def make(self, name=None, **options):
        """Create this server's sandbox, or replace it with a fresh one; another name is refused."""
        with self.lock:
            own = self.fixed or (self.current.sandbox if self.current else None)
            if name and own and name != own:
                raise Refused(f"this server's sandbox is {own!r}; create_sandbox makes only that one"
                              + ("" if self.fixed else " (delete_sandbox first to make another)"))
            name = name or own or f"mcp-{secrets.token_hex(4)}"
            self._check(name)
            if name != own and self._exists(name):
                raise Refused(f"sandbox {name!r} exists already and is not this server's: choose another name")
            self.mock.create_sandbox(name, **options)
            if self.current is None:
                self.current = self._handle(name)
            return self.current

    def drop(self):
        with self.lock:
            box = self.box()
            box.delete_sandbox()
            box.close()
            self.current = None
            return box.sandbox

    def require_global(self, tool):
        if not self.allow_global:
            raise Refused(f"{tool} reaches beyond this server's sandbox: start mockserver mcp with --allow-global "
                          "(or MOCKSERVER_MCP_ALLOW_GLOBAL=1) to allow it")

    def _check(self, name):
        if name == DEFAULT_WORLD:
            raise Refused("'default' is the mock's default world, not a sandbox: choose another name")
        if not SANDBOX_NAME.match(name) or name in (".", ".."):
            raise Refused(f"not a sandbox name: {name[:80]!r} (1 to 64 of A-Z a-z 0-9 _ . -)")

    def _exists(self, name):
        try:
            self.mock.get_sandbox(name)
        except MockServerError as error:
            if error.status == 404:
                return False
            raise
        return True

    def _handle(self, name):
        return Client(self.mock.root, control_token=self.mock.control_token, sandbox=name, tokens=self.mock.tokens)


def api_path(path):
    """The path of an API call, refused when it would leave the sandbox's API: the control API (/_mock), another
    sandbox (/sandbox/...) or dot segments, percent-encoded or not (the server reads the path decoded)."""
    plain = unquote(path)
    if not path.startswith("/") or "?" in path or "#" in path:
        raise Refused(f"a path starts with / and has no query (give query instead): {path[:80]!r}")
    if (plain.lstrip("/").lower().startswith(("_mock", "sandbox/")) or "\\" in plain
            or any(segment in (".", "..") for segment in plain.split("/"))):
        raise Refused(f"call_api reaches only this sandbox's API: {path[:80]!r} is not one of its paths")
    return path


def reply_of(response):
    """What call_api hands back of a reply: status, headers and the body (JSON when it is, else text, cut)."""
    try:
        body: Any = response.json()
    except ValueError:
        body = response.text
        if len(body) > REPLY_LIMIT:
            body = body[:REPLY_LIMIT] + f"... (cut: {len(response.text)} characters in all)"
    return {"status": response.status_code, "headers": dict(response.headers), "body": body}


def referenced(document, node):
    """Every component `node` refers to, directly or through other components: {kind: {name: component}}."""
    found: dict = {}
    pending = REF.findall(json.dumps(node))
    while pending:
        kind, name = pending.pop()
        if name in found.setdefault(kind, {}):
            continue
        found[kind][name] = component = document.get("components", {}).get(kind, {}).get(name)
        pending += REF.findall(json.dumps(component))
    return found
