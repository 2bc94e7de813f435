"""The one error type of the mock and the one place it is rendered.

Every failure a client can see, from routing to the domain, is an `ApiError`. The
request pipeline catches it and renders `{status, error, message[, details]}` with
`Content-Type: application/json` (the spec's error body). Nothing else builds error replies.
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
        return orjson.dumps(self.body())


PHRASES = {413: "Payload Too Large"}             # the name the API document uses


def reason(status):
    if status in PHRASES:
        return PHRASES[status]
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


def not_found(noun, ident):
    return ApiError(404, f"{noun} {ident} not found")


def conflict(message):
    return ApiError(409, message)


def invalid(violations):
    """400 naming every violation: `body.name: 'name' is a required property; query.tail: ...`."""
    message = "; ".join(f"{loc}: {msg}" for loc, msg in violations)
    return ApiError(400, message, violations)
