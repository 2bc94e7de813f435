"""Request bodies, read no further than their bound: the API's (`read_asgi`, from the ASGI messages, or
`bounded`, a body that came whole) and the control API's (`read`, from a Starlette request).

A body past its bound is refused as soon as the bound is crossed: it is never buffered whole.
JSON bodies are bounded by `--max-body` (a 413, as on the API); a scenario document by the bound
of scenario documents (core/yamlbound.py; a 400, as for a scenario file past it).
"""

from starlette.requests import ClientDisconnect

from mockserver.core.errors import ApiError
from mockserver.core.yamlbound import SCENARIO_BYTES, size_text


async def read(request, limit, problem=None, status=413):
    """The whole body of a Starlette request, or ApiError(status) once it passes `limit` bytes."""
    chunks, size = [], 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise ApiError(status, problem or f"request body is larger than {limit} bytes")
            chunks.append(chunk)
    except ClientDisconnect:                 # gone, or cut off by --body-timeout: nobody reads the answer
        raise ApiError(400, "client disconnected before the body was read") from None
    return b"".join(chunks)


async def read_asgi(receive, limit):
    """The whole body from ASGI `receive`, or ApiError(413) once it passes `limit` bytes."""
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ApiError(400, "client disconnected before the body was read")
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise ApiError(413, f"request body is larger than {limit} bytes")
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)


def bounded(body, limit):
    """A body that came whole (the direct path, process/connections.py), or ApiError(413) as `read_asgi` would."""
    if len(body) > limit:
        raise ApiError(413, f"request body is larger than {limit} bytes")
    return body


async def scenario_text(request):
    """A scenario document (YAML or JSON) sent as a request body."""
    raw = await read(request, SCENARIO_BYTES, f"body: the scenario document is larger than "
                                              f"{size_text(SCENARIO_BYTES)} (the bound of scenario documents)", 400)
    return raw.decode("utf-8", errors="replace")
