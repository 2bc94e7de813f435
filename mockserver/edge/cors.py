"""CORS, and which browser pages may use the mock at all.

`Cors` wraps the whole ASGI app once. A preflight (`OPTIONS` with `Origin` and
`Access-Control-Request-Method`) is answered here and never reaches the request path: no
token, no rate limit, no journal entry. Every other reply to an allowed origin, errors
included, gets `Access-Control-Allow-Origin` and `Access-Control-Expose-Headers` (the
rate-limit headers, `Retry-After`, `X-Request-Id`) so that browser code can read them: the API's
request path adds them to the headers it makes, `added(scope, send)` to the replies made elsewhere.

Origins (`--cors-origins`), a comma-separated list of:
- `local` (the default): pages served from this machine, `http(s)://localhost:*`,
  `http(s)://127.0.0.1:*` and `http(s)://[::1]:*`;
- an origin (`http://localhost:3000`) or a pattern with `*` (`https://*.example.test`,
  `http://10.1.2.3:*`, where `*` is one label of the host name and `:*` any port);
- `*`: any page may call the API and read the documents, without credentials;
- `off` or `none` alone: no CORS headers and no preflight answers at all.
An origin named by `local` or the list is echoed with `Access-Control-Allow-Credentials: true`.
A Private Network Access preflight (a public page calling the mock on a private address) is
approved only for an origin the list names itself (not by `local`, not by `*`).

The control API (`/_mock/*`) resets, rewrites and exports the mock, so it is guarded whatever
CORS is set to: a request that carries an `Origin` other than the mock's own and not named by
`local` or the list is refused with a 403 before any route runs. A browser sends some
cross-site requests without a preflight (a form's POST, a "simple" fetch) and only hides the
reply from the page; the refusal is what keeps such a page from resetting the mock. `*` does
not open the control API. `cross_origin(scope)` tells the control API which requests come from
a page of another origin (the export of secrets is refused to all of them).
"""

import re

from mockserver.core.errors import ApiError
from mockserver.core.paths import CONTROL, DOCUMENT_PATHS, without_api_prefix
from mockserver.edge.requestid import HEADER as REQUEST_ID
from mockserver.edge.requestid import of_scope

ALLOWED_HEADERS = ("authorization", "content-type", "x-mock-sandbox", "x-request-id")
EXPOSED = (b"Retry-After, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, X-Request-Id, Allow, "
           b"X-Mock-Replica, X-Mock-Rule")
MAX_AGE = b"600"
SANDBOX = "/sandbox/"
OFF = frozenset({"off", "none"})
DEFAULT = "local"
LOCAL = tuple(f"{scheme}://{host}:*" for scheme in ("http", "https") for host in ("localhost", "127.0.0.1", "[::1]"))
CROSS_SITE = frozenset({b"cross-site", b"same-site"})     # Sec-Fetch-Site of a page of another origin

_ORIGIN = re.compile(r"(https?)://[^/\s?#]+")
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9a-z-]{1,64}")
_PLAIN = re.compile(rb"[\x21-\x7e]{1,256}")

SCOPE_KEY = "mock.cors"                 # the CORS headers a reply to this request carries (set by Cors)
ACAO = b"access-control-allow-origin"
VARY = (b"vary", b"Origin")
EXPOSE = (b"access-control-expose-headers", EXPOSED)
CREDENTIALS = (b"access-control-allow-credentials", b"true")
JSON = (b"content-type", b"application/json")


def _pattern(entry):
    """An origin entry as a regex: `*` is one label of a host name (no dot: `http://10.0.0.*:*` must not admit
    `http://10.0.0.5.elsewhere.example`); `:*` at the end any port (or none)."""
    port = entry.endswith(":*")
    parts = (entry[:-2] if port else entry).split("*")
    return re.compile("[^/:.]*".join(map(re.escape, parts)) + (r"(?::\d{1,5})?" if port else ""))


class Origins:
    """The origins pages may call from: named ones (`local` and the list), and whether any other may (`*`)."""

    def __init__(self, text):
        entries = [part.strip().rstrip("/").lower() for part in str(text).split(",") if part.strip()]
        if not entries:
            raise ValueError("CORS origins: give local, *, a comma-separated list of origins, or off")
        self.any = "*" in entries
        self.listed, self.local = [], []
        for entry in entries:
            if entry == "*":
                continue
            if entry == DEFAULT:
                self.local = [_pattern(origin) for origin in LOCAL]
                continue
            if entry in OFF or not _ORIGIN.fullmatch(entry):
                raise ValueError(f"CORS origins: {entry!r} is not an origin like http://localhost:3000 "
                                 "(scheme://host[:port], no path), nor local or * (off stands alone)")
            self.listed.append(_pattern(entry))

    def listed_has(self, origin):
        """The list itself names the origin (what approves Private Network Access)."""
        return any(pattern.fullmatch(origin) for pattern in self.listed)

    def names(self, origin):
        """`local` or the list names the origin: it gets credentials and the control API."""
        return self.listed_has(origin) or any(pattern.fullmatch(origin) for pattern in self.local)


def parse(text):
    """`--cors-origins` as given: Origins, or None when CORS is off; ValueError if malformed."""
    if str(text).strip().lower() in OFF:
        return None
    return Origins(text)


def _header(scope, wanted):
    for name, value in scope["headers"]:
        if name == wanted:
            return value
    return None


def same_origin(scope, origin):
    """The Origin is the mock's own (its host and port are the request's Host): the inspector's pages."""
    host = _header(scope, b"host")
    return host is not None and origin.partition(b"://")[2].lower() == host.strip().lower()


def cross_origin(scope):
    """The request comes from a browser page of another origin (by its Origin or its Sec-Fetch-Site)."""
    origin = _header(scope, b"origin")
    if origin is not None and not same_origin(scope, origin):
        return True
    return _header(scope, b"sec-fetch-site") in CROSS_SITE


def control_path(path):
    """The control API's path, also under a sandbox prefix."""
    if path.startswith(SANDBOX):
        path = "/" + path[len(SANDBOX):].partition("/")[2]
    return path == CONTROL or path.startswith(CONTROL + "/")


def methods_finder(spec, control_routes):
    """path -> the set of methods it answers: the API document's, the control routes', the documents'.

    A sandbox prefix `/sandbox/{name}` and the API prefix `/api/v1` are stripped first.
    """
    def methods(path):
        if path.startswith(SANDBOX):
            path = "/" + path[len(SANDBOX):].partition("/")[2]
        if path.startswith("/_mock"):
            found = set()
            for route in control_routes:
                regex = getattr(route, "path_regex", None)
                if regex is not None and regex.match(path):
                    found |= set(getattr(route, "methods", None) or ())
            return found
        if path in DOCUMENT_PATHS:
            return {"GET", "HEAD"}
        path = without_api_prefix(path)
        return spec.methods(path)
    return methods


class Cors:
    """The CORS headers and preflights (none when `origins` is None: CORS off), and the control API's guard."""

    def __init__(self, app, origins, methods):
        self.app = app
        self.origins = origins
        self.methods = methods
        self.no_origin = [(ACAO, b"*"), EXPOSE, VARY] if origins and origins.any else [VARY]

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        origin = asked = None
        asked_headers = b""
        for name, value in scope["headers"]:
            if name == b"origin":
                origin = value
            elif name == b"access-control-request-method":
                asked = value
            elif name == b"access-control-request-headers":
                asked_headers = value
        control = control_path(scope["path"])
        if self.origins is not None and asked is not None and origin is not None and scope["method"] == "OPTIONS":
            await self.preflight(scope, send, origin, asked_headers, control)
            return
        if control and origin is not None and not self.may_control(scope, origin):
            await self.refuse(scope, send, origin)
            return
        if self.origins is not None:
            # the app adds these where it makes the reply's headers (app.py): no wrapper around `send` per call
            scope[SCOPE_KEY] = self.no_origin if origin is None else self.for_origin(origin, control)
        await self.app(scope, receive, send)

    def named(self, origin):
        return (self.origins is not None and _PLAIN.fullmatch(origin) is not None
                and self.origins.names(origin.decode("ascii").lower()))

    def may_control(self, scope, origin):
        """A page may use the control API: the mock's own, or one of an origin named by local or the list."""
        return same_origin(scope, origin) or self.named(origin)

    def for_origin(self, origin, control=False):
        """Headers of a reply to a request from `origin` (bytes): none but Vary when not allowed."""
        if self.named(origin):
            return [(ACAO, origin), CREDENTIALS, EXPOSE, VARY]
        if self.origins.any and not control:
            return [(ACAO, b"*"), EXPOSE, VARY]
        return [VARY]

    async def refuse(self, scope, send, origin):
        error = ApiError(403, f"origin {origin.decode('latin-1')[:256]} may not use the control API: only the "
                              "mock's own pages and the origins named by --cors-origins (local, or a list) may")
        headers = [VARY, (REQUEST_ID, of_scope(scope).encode()), JSON]
        await _reply(send, 403, error.render(), headers)

    async def preflight(self, scope, send, origin, asked_headers, control):
        request_id = (REQUEST_ID, of_scope(scope).encode())
        vary = (b"vary", b"Origin, Access-Control-Request-Headers")
        allowed = self.for_origin(origin, control)
        if len(allowed) == 1:
            where = "the control API" if control else "the mock"
            error = ApiError(403, f"CORS: origin {origin.decode('latin-1')[:256]} may not call {where} "
                                  "(--cors-origins)")
            await _reply(send, 403, error.render(), [vary, request_id, JSON])
            return
        cors = [header for header in allowed if header not in (EXPOSE, VARY)] + [vary, request_id]
        methods = self.methods(scope["path"])
        if not methods:
            error = ApiError(404, f"no route for {scope['path']}")
            await _reply(send, 404, error.render(), cors + [EXPOSE, JSON])
            return
        wanted = {part.strip() for part in asked_headers.decode("latin-1").lower().split(",")}
        headers = sorted(set(ALLOWED_HEADERS) | {name for name in wanted if _TOKEN.fullmatch(name)})
        if (_header(scope, b"access-control-request-private-network") is not None
                and self.origins.listed_has(origin.decode("ascii").lower())):
            cors.append((b"access-control-allow-private-network", b"true"))   # a public page the list names
        await _reply(send, 204, b"", cors + [
            (b"access-control-allow-methods", ", ".join(sorted(methods)).encode()),
            (b"access-control-allow-headers", ", ".join(headers).encode()),
            (b"access-control-max-age", MAX_AGE)])


def added(scope, send):
    """`send` that adds the CORS headers of the request (replies made outside the API's request path:
    the control API, the documents, errors before routing); `send` itself when CORS is off."""
    extra = scope.get(SCOPE_KEY)
    if not extra:
        return send

    async def send_with_cors(message):
        if message["type"] == "http.response.start":
            message["headers"] = [*message.get("headers", ()), *extra]
        await send(message)
    return send_with_cors


async def _reply(send, status, body, headers):
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
