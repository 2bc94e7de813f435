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


class Silent:
    """A receiver that accepts connections, reads what is sent and never answers (hangs), or, with
    `close=True`, closes each connection as soon as the request arrived, without a reply. It counts the
    connections it accepted and those the other side closed."""

    def __init__(self, close=False):
        import socket
        self.close_at_once = close
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.accepted = 0
        self.closed_by_peer = 0
        self.lock = threading.Lock()
        self.running = True
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while self.running:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            with self.lock:
                self.accepted += 1
            threading.Thread(target=self._hold, args=(connection,), daemon=True).start()

    def _hold(self, connection):
        with connection:
            try:
                if self.close_at_once:
                    connection.recv(65536)
                    return
                while self.running and connection.recv(65536):
                    pass                        # read and never answer, until the other side closes
            except OSError:
                pass
            with self.lock:
                self.closed_by_peer += 0 if self.close_at_once else 1

    def open_connections(self):
        with self.lock:
            return self.accepted - self.closed_by_peer

    def stop(self):
        self.running = False
        self.listener.close()
