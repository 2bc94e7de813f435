"""The errors of the mock, and the one place an API error is rendered.

    Exception
    +-- ApiError            a reply with an error status: every failure a client can see, from routing
    |                       to the domain, rendered here as the spec's body {status, error, message[, details]}
    +-- StartupError        what a command was given cannot work: one line per problem, exit 2, no traceback
        +-- FixtureError        world/fixtures.py: every problem of a fixtures folder
        +-- ScenarioError       world/scenarios.py: a scenario file, at its line
        +-- StateFileError      sandboxes/statefile.py: a state file that cannot be read back
        +-- StateFolderError    sandboxes/statefile.py: a state file that could not be kept where asked
        +-- RecordPathError     contract/proxy.py: recording outputs that could not be written at the stop
        +-- FlowError           contract/flows.py: a parity flow file that cannot be read
        +-- AllowError          contract/report.py: a parity allow-list that cannot be read
        +-- Unavailable         process/allocator.py: the memory allocator asked for is not installed
        +-- TracingError        edge/tracing.py: an OTEL_* setting the mock cannot trace with

The request path catches `ApiError` and nothing else builds error replies; the command line catches
`StartupError` and prints its `lines()`.
"""

from http import HTTPStatus

import orjson


class ApiError(Exception):
    """A reply with an error status. `details` lists every violation as {location, message}."""

    def __init__(self, status, message, details=None, headers=None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.details = details
        self.headers = headers or {}

    def body(self):
        out = {"status": self.status, "error": reason(self.status), "message": self.message}
        if self.details:
            out["details"] = [{"location": loc, "message": msg} for loc, msg in self.details]
        return out

    def render(self):
        if self.details:
            return orjson.dumps(self.body())
        key = (self.status, self.message)       # the same refusal again and again (a 401, a 404): rendered once
        rendered = _RENDERED.get(key)
        if rendered is None:
            rendered = orjson.dumps(self.body())
            if len(_RENDERED) >= RENDER_CACHE:
                _RENDERED.clear()
            _RENDERED[key] = rendered
        return rendered


RENDER_CACHE = 256                             # error bodies without details kept rendered, by status and message
_RENDERED: dict[tuple, bytes] = {}


class StartupError(Exception):
    """A start (or a command) that cannot work with what it was given. `lines()` are what the command line
    prints, one problem a line."""

    def lines(self):
        return [str(self)]


def problems_of(error):
    """The lines that say why a start failed: a StartupError's own; an ApiError is a fixture record the handlers
    refused; an OSError a file that could not be read."""
    if isinstance(error, StartupError):
        return error.lines()
    if isinstance(error, ApiError):
        return [f"fixtures: {error.message}"]
    if isinstance(error, OSError):
        return [f"{error.filename or ''}: {error.strerror or error}"]
    return [f"{type(error).__name__}: {error}"]


# status -> the `error` of its body: the standard phrases, and the name the API document uses for 413
PHRASES = {**{status.value: status.phrase for status in HTTPStatus}, 413: "Payload Too Large"}


def reason(status):
    return PHRASES.get(status, "Error")


def not_found(noun, ident):
    return ApiError(404, f"{noun} {ident} not found")


def conflict(message):
    return ApiError(409, message)


def invalid(violations):
    """400 naming every violation: `body.name: 'name' is a required property; query.tail: ...`."""
    message = "; ".join(f"{loc}: {msg}" for loc, msg in violations)
    return ApiError(400, message, violations)
