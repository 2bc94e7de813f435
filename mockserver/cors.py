"""CORS: pages served on other origins may call the API, the documents and the control API.

`Cors` wraps the whole ASGI app once. A preflight (`OPTIONS` with `Origin` and
`Access-Control-Request-Method`) is answered here and never reaches the request path: no
token, no rate limit, no journal entry. Every other reply, errors included, gets
`Access-Control-Allow-Origin` and `Access-Control-Expose-Headers` (the rate-limit headers,
`Retry-After`, `X-Request-Id`) so that browser code can read them: the API's request path adds them
to the headers it makes, `added(scope, send)` to the replies made elsewhere.

Origins (`--cors-origins`): `*` (the default) allows every origin; a comma-separated list
allows those only (an entry may use `*` as a wildcard: `http://localhost:*`); `off` or
`none` turns CORS off (the app is then not wrapped at all). An allowed origin is echoed with
`Access-Control-Allow-Credentials: true`, so pages that fetch with credentials work too; a
request without `Origin` (curl, a server-side client) gets `*` when every origin is allowed.
"""

import fnmatch
import re

from .errors import ApiError
from .requestid import HEADER as REQUEST_ID, of_scope

ALLOWED_HEADERS = ("authorization", "content-type", "x-mock-sandbox", "x-request-id")
EXPOSED = (b"Retry-After, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, X-Request-Id, Allow, "
           b"X-Mock-Replica")
MAX_AGE = b"600"
DOCUMENTS = frozenset({"/openapi.json", "/openapi.yaml"})
SANDBOX = "/sandbox/"
API_PREFIX = "/api/v1"
OFF = frozenset({"off", "none"})

_ORIGIN = re.compile(r"(https?)://[^/\s?#]+")
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9a-z-]{1,64}")
_PLAIN = re.compile(rb"[\x21-\x7e]{1,256}")

SCOPE_KEY = "mock.cors"                 # the CORS headers a reply to this request carries (set by Cors)
ACAO = b"access-control-allow-origin"
VARY = (b"vary", b"Origin")
EXPOSE = (b"access-control-expose-headers", EXPOSED)
CREDENTIALS = (b"access-control-allow-credentials", b"true")


class Origins:
    """The allowed origins: every one, an exact set, and wildcard patterns."""

    def __init__(self, text):
        entries = [part.strip().rstrip("/").lower() for part in str(text).split(",") if part.strip()]
        if not entries:
            raise ValueError("CORS origins: give `*`, a comma-separated list of origins, or `off`")
        self.any = "*" in entries
        self.exact, self.patterns = set(), []
        for entry in entries:
            if entry == "*":
                continue
            if not _ORIGIN.fullmatch(entry):
                raise ValueError(f"CORS origins: {entry!r} is not an origin like http://localhost:3000 "
                                 "(scheme://host[:port], no path)")
            (self.patterns.append if "*" in entry else self.exact.add)(entry)

    def allows(self, origin):
        if self.any:
            return True
        origin = origin.lower()
        return origin in self.exact or any(fnmatch.fnmatchcase(origin, p) for p in self.patterns)


def parse(text):
    """`--cors-origins` as given: Origins, or None when CORS is off; ValueError if malformed."""
    if str(text).strip().lower() in OFF:
        return None
    return Origins(text)


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
        if path in DOCUMENTS:
            return {"GET", "HEAD"}
        if path.startswith(API_PREFIX + "/"):
            path = path[len(API_PREFIX):]
        return spec.methods(path)
    return methods


class Cors:
    def __init__(self, app, origins, methods):
        self.app = app
        self.origins = origins
        self.methods = methods
        self.no_origin = [(ACAO, b"*"), EXPOSE, VARY] if origins.any else [VARY]

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
        if asked is not None and origin is not None and scope["method"] == "OPTIONS":
            await self.preflight(scope, send, origin, asked_headers)
            return
        # the app adds these where it makes the reply's headers (app.py): no wrapper around `send` per call
        scope[SCOPE_KEY] = self.no_origin if origin is None else self.for_origin(origin)
        await self.app(scope, receive, send)

    def for_origin(self, origin):
        """Headers of a reply to a request from `origin` (bytes): none but Vary when not allowed."""
        if not _PLAIN.fullmatch(origin) or not self.origins.allows(origin.decode("ascii")):
            return [VARY]
        return [(ACAO, origin), CREDENTIALS, EXPOSE, VARY]

    async def preflight(self, scope, send, origin, asked_headers):
        request_id = (REQUEST_ID, of_scope(scope).encode())
        vary = (b"vary", b"Origin, Access-Control-Request-Headers")
        allowed = self.for_origin(origin)
        if len(allowed) == 1:
            error = ApiError(403, f"CORS: origin {origin.decode('latin-1')[:256]} is not allowed (--cors-origins)")
            await _reply(send, 403, error.render(), [vary, request_id, (b"content-type", b"application/json")])
            return
        cors = [(ACAO, origin), CREDENTIALS, vary, request_id]
        methods = self.methods(scope["path"])
        if not methods:
            error = ApiError(404, f"no route for {scope['path']}")
            await _reply(send, 404, error.render(), cors + [EXPOSE, (b"content-type", b"application/json")])
            return
        wanted = {part.strip() for part in asked_headers.decode("latin-1").lower().split(",")}
        headers = sorted(set(ALLOWED_HEADERS) | {name for name in wanted if _TOKEN.fullmatch(name)})
        if any(name == b"access-control-request-private-network" for name, _ in scope["headers"]):
            cors.append((b"access-control-allow-private-network", b"true"))  # a public page calling a local mock
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
