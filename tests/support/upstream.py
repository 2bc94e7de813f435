"""Upstreams for the recording proxy and parity tests: small threaded HTTP servers on a free loopback port,
and `mockserver <command>` processes (`Process`), such as a second mock standing for the platform.

`Upstream(answer)` answers every request with what `answer(request)` returns, (status, [(name, value)...],
body bytes), sending exactly those headers (no Server or Date of its own) and recording each request
(method, path with query, headers as received, body). `Drifting(target, rules)` stands in front of a
real mock at `target` and changes some of its replies on purpose: a rule is (method, path regex, change),
and change(status, headers, body) returns the reply to send instead (body as parsed JSON). `Tiny(port, status,
body)` answers every request on the port given with one status and JSON body, recording (method, path,
Authorization) of each.
"""

import http.server
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading

import httpx

from support import ROOT
from support.http import free_port, wait_for
from support.ids import ORG

PLATFORM_TOKEN = "platform-TOKEN-9f3a71c2e5d8"            # the platform's own token: never written anywhere
PLATFORM = {"Authorization": f"Token {PLATFORM_TOKEN}"}


def platform_folder(folder):
    """The default fixtures with a token of the platform's own (so that a leak of it can be seen)."""
    for name in ("organizations.yaml", "targets.yaml"):
        shutil.copy(ROOT / "fixtures" / name, folder / name)
    (folder / "tokens.yaml").write_text(f"tokens:\n  - {{name: platform-admin, value: {PLATFORM_TOKEN}, "
                                        f"organization: {ORG}, scopes: [Admin]}}\n")
    return folder


class Process:
    """`mockserver <command> --port P ...` in a subprocess; stop() ends it with SIGTERM (a normal stop)."""

    def __init__(self, command, *args):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen([sys.executable, "-m", "mockserver", command, "--port", str(self.port), *args],
                                        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        env={**os.environ, "PYTHONUNBUFFERED": "1"})
        try:
            wait_for(f"{self.url}/_mock/health")
        except RuntimeError:
            self.stop()
            raise RuntimeError(f"mockserver {command} did not start: {self.output}") from None
        self.output = ""

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        out, err = self.process.communicate(timeout=20)
        self.output = out.decode() + err.decode()
        return self.process.returncode




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


class Tiny:
    """A tiny HTTP server on 127.0.0.1:port answering every request with (status, JSON body)."""

    def __init__(self, port, status, body):
        self.requests = []
        tiny = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                tiny.requests.append((self.command, self.path, self.headers.get("Authorization")))
                payload = json.dumps(body).encode()
                self.send_response_only(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = answer

            def log_message(self, *args):
                pass

        http.server.ThreadingHTTPServer.allow_reuse_address = True
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{port}"
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


class Dribbling:
    """An upstream that sends its status line and headers at once, then its body one byte every `interval`
    seconds (a slow or stuck platform): each read gets a byte in time, the whole reply never does."""

    def __init__(self, body, interval=0.2):
        import socket
        self.body, self.interval, self.closed = body, interval, threading.Event()
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.socket.getsockname()[1]}"
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while not self.closed.is_set():
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return
            threading.Thread(target=self.drip, args=(connection,), daemon=True).start()

    def drip(self, connection):
        with connection:
            try:
                connection.recv(65536)
                connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                   b"Content-Length: %d\r\n\r\n" % len(self.body))
                for byte in self.body:
                    if self.closed.wait(self.interval):
                        return
                    connection.sendall(bytes([byte]))
            except OSError:
                return

    def stop(self):
        self.closed.set()
        self.socket.close()
