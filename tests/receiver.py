"""A webhook receiver for tests: a small threaded HTTP server on a free loopback port that records
every POST (path, headers, raw body) and answers with the next status of a sequence. Deliveries are
asynchronous, so tests poll (bounded) for what it got."""

import http.server
import json
import threading
import time

DEADLINE = 5.0                 # seconds to wait for an asynchronous delivery


class Receiver:
    """Records every POST (path, headers, raw body) and answers with the next status of a sequence
    (the last one repeats), after an optional delay."""

    def __init__(self, statuses=(200,), delay=0.0):
        self.statuses = list(statuses)
        self.delay = delay
        self.requests = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with receiver.lock:
                    index = len(receiver.requests)
                    receiver.requests.append({"path": self.path, "headers": dict(self.headers), "body": body,
                                              "at": time.monotonic()})
                    code = receiver.statuses[min(index, len(receiver.statuses) - 1)]
                if receiver.delay:
                    time.sleep(receiver.delay)
                self.send_response(code)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.block_on_close = False
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def wait_for(self, count, timeout=DEADLINE, path=None):
        """The requests received (to `path` only, when given), once there are at least `count`."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                got = [r for r in self.requests if path is None or r["path"] == path]
            if len(got) >= count:
                return got
            time.sleep(0.02)
        raise AssertionError(f"receiver got {len(got)} request(s){f' on {path}' if path else ''}, "
                             f"expected {count} within {timeout} s")

    def events(self, path=None):
        with self.lock:
            return [json.loads(r["body"])["event_type"] for r in self.requests if path is None or r["path"] == path]

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
