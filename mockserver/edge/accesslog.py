"""The access log: one line per API call, as text or as JSON (one object a line, for log shippers).

    2026-11-23T10:32:29.123Z GET /organization 200 0.41ms listOrganizations token=admin request_id=...
    {"time":"2026-11-23T10:32:29.123Z","method":"GET","path":"/organization","status":200,...}

Fields: wall-clock time (UTC), method, path as sent, status (0 when a scenario dropped the
connection), latency in ms, operationId, token name, sandbox (when there is one), the scenario
rule that fired, request id. Control calls and CORS preflights are not API calls and are not
logged. Each line is written and flushed at once, so that a container's log shows it at once.
"""

import sys
import time

import orjson

FORMATS = ("text", "json")


def access_logger(fmt="text", stream=None):
    """The function the request path calls once per API call:
    log(method, path, status, latency_seconds, operation_id, token_name, sandbox, rule, request_id)."""
    if fmt not in FORMATS:
        raise ValueError(f"log format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    out = stream or sys.stdout
    write, flush = out.write, out.flush
    clock = _Stamp()

    def text(method, path, status, latency, operation, token, sandbox, rule, request_id):
        if not path.isprintable() or " " in path:
            path = path.encode("unicode_escape").decode("ascii").replace(" ", "%20")
        line = (f"{clock()} {method} {path} {status} {latency * 1000:.2f}ms {operation or '-'} "
                f"token={token or '-'}")
        if sandbox is not None:
            line += f" sandbox={sandbox}"
        if rule is not None:
            line += f" rule={rule}"
        write(f"{line} request_id={request_id}\n")
        flush()

    def json(method, path, status, latency, operation, token, sandbox, rule, request_id):
        write(orjson.dumps({"time": clock(), "method": method, "path": path, "status": status,
                            "latency_ms": round(latency * 1000, 3), "operation": operation, "token": token,
                            "sandbox": sandbox, "scenario_rule": rule, "request_id": request_id}).decode() + "\n")
        flush()

    return json if fmt == "json" else text


class _Stamp:
    """ISO 8601 UTC time with milliseconds; the seconds part is formatted once per second."""

    def __init__(self):
        self.second, self.prefix = None, ""

    def __call__(self):
        now = time.time()
        second = int(now)
        if second != self.second:
            self.second, self.prefix = second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        return f"{self.prefix}.{int((now - second) * 1000):03d}Z"
