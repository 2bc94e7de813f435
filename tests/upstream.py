"""Upstreams for the recording proxy and parity tests: small threaded HTTP servers on a free loopback port.

`Upstream(answer)` answers every request with what `answer(request)` returns, (status, [(name, value)...],
body bytes), sending exactly those headers (no Server or Date of its own) and recording each request
(method, path with query, headers as received, body). `Drifting(target, rules)` stands in front of a
real mock at `target` and changes some of its replies on purpose: a rule is (method, path regex, change),
and change(status, headers, body) returns the reply to send instead (body as parsed JSON).
"""

import http.server
import json
import re
import threading

import httpx


class Upstream:
    def __init__(self, answer):
        self.answer = answer
        self.requests = []
        self.lock = threading.Lock()
        upstream = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def handle_one(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                request = {"method": self.command, "path": self.path, "headers": list(self.headers.items()),
                           "body": body}
                with upstream.lock:
                    upstream.requests.append(request)
                status, headers, payload = upstream.answer(request)
                self.send_response_only(status)
                for name, value in headers:
                    self.send_header(name, value)
                if not any(name.lower() == "content-length" for name, _ in headers):
                    self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = handle_one

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


class Drifting(Upstream):
    """A real mock behind, some replies changed: `rules` is a list of (method, path regex, change)."""

    HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "date", "server"}

    def __init__(self, target, rules):
        self.client = httpx.Client(base_url=target, timeout=10)
        self.rules = [(method, re.compile(pattern), change) for method, pattern, change in rules]
        super().__init__(self.relay)

    def relay(self, request):
        headers = {name: value for name, value in request["headers"] if name.lower() not in ("host", "content-length")}
        reply = self.client.request(request["method"], request["path"], headers=headers, content=request["body"])
        status = reply.status_code
        sent = [(name, value) for name, value in reply.headers.items() if name.lower() not in self.HOP]
        body = reply.json() if reply.content else None
        path = request["path"].split("?", 1)[0]
        for method, pattern, change in self.rules:
            if method == request["method"] and pattern.fullmatch(path):
                status, sent, body = change(status, sent, body)
        return status, sent, json.dumps(body).encode() if body is not None else b""

    def stop(self):
        super().stop()
        self.client.close()
