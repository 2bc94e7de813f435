"""HAR 1.2 (HTTP Archive) documents from journaled calls: what browsers' developer tools and many HTTP
clients open, and what the mock's recording and exports write.

`document(calls, base_url)` builds the whole `{"log": ...}` object; `entry(call, base_url)` one
exchange. Calls are the journal's (journal.Call): their request headers and bodies were redacted
when they were recorded (secret values, registry and webhook secrets, the Authorization credential
but its last four characters), so nothing here needs to redact again. A body the journal kept cut is
written as the text kept, with a `comment` that says so. Timings: the journal knows the whole time the
mock took to answer, which is written as `wait` (send and receive are not measured: 0).
"""

from urllib.parse import urlencode

import orjson

from mockserver.core.clock import iso
from mockserver.core.errors import reason
from mockserver.core.version import __version__

JSON_TYPE = "application/json"


def document(calls, base_url, comment=None):
    """A HAR 1.2 log of `calls` (oldest first), their URLs made from `base_url` (scheme://host[:port][/prefix])."""
    log = {"version": "1.2", "creator": {"name": "idp-mockserver", "version": __version__},
           "entries": [entry(call, base_url) for call in calls]}
    if comment:
        log["comment"] = comment
    return {"log": log}


def entry(call, base_url):
    query, headers, body = call.parts()
    truncated = call.truncated or {}
    out = {
        "startedDateTime": iso(call.at - call.duration),
        "time": round(call.duration * 1000, 3),
        "request": request(call, base_url, query, headers, body, truncated),
        "response": response(call, truncated),
        "cache": {},
        "timings": {"send": 0, "wait": round(call.duration * 1000, 3), "receive": 0},
    }
    if call.operation is not None:
        out["comment"] = f"{call.operation.operation_id}" + (f" (scenario rule {call.rule})" if call.rule else "")
    return out


def request(call, base_url, query, headers, body, truncated):
    url = base_url.rstrip("/") + call.path + (f"?{urlencode(query)}" if query else "")
    out = {"method": call.method, "url": url, "httpVersion": "HTTP/1.1", "cookies": [],
           "headers": [{"name": name, "value": value} for name, value in headers.items()],
           "queryString": [{"name": name, "value": str(value)} for name, value in query.items()],
           "headersSize": -1, "bodySize": 0}
    if body is not None:
        text = body if "body" in truncated else orjson.dumps(body).decode()
        out["postData"] = {"mimeType": headers.get("content-type", JSON_TYPE), "text": text}
        out["bodySize"] = truncated.get("body", len(text.encode()))
        if "body" in truncated:
            out["postData"]["comment"] = f"cut: {len(text.encode())} of {truncated['body']} bytes kept"
    return out


def response(call, truncated):
    reply_headers = call.response_headers()
    mime = next((value for name, value in reply_headers if name.lower() == "content-type"), "")
    text = call.response.decode("utf-8", "replace")
    size = truncated.get("response", len(call.response))
    content = {"size": size, "mimeType": mime, "text": text}
    if "response" in truncated:
        content["comment"] = f"cut: {len(call.response)} of {size} bytes kept"
    status = call.status
    return {"status": status, "statusText": reason(status) if status else "", "httpVersion": "HTTP/1.1",
            "cookies": [], "headers": [{"name": name, "value": value} for name, value in reply_headers],
            "content": content, "redirectURL": "", "headersSize": -1, "bodySize": size}
