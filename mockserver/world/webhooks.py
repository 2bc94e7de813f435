"""Webhook delivery: deployment events POSTed to every matching registered webhook.

A delivery is queued when its event happens (on the mock's clock). Attempts not yet due wait in
one heap ordered by due time (`pending`): the background loop and each request look only at its
head, so retries waiting for their backoff cost nothing until they fall due. A due attempt goes
to its target's lane.

A target is the origin of a target URL (scheme, host, port), and each target is a lane of its
own: at most LANE_CONNECTIONS attempts in flight, at most LANE_QUEUE waiting (one more fails at
once, and is retried like any failure), a connect, a reply and a whole-attempt timeout, and a
connection opened for one attempt and closed when it ends, however it ends. Nothing is shared
between targets, so a receiver that hangs, fails or refuses slows only its own deliveries, and a
lane that empties is gone: nothing of a bad receiver stays behind. No attempt runs on the request
path, so delivery never delays an API reply.

A reply other than 2xx, or no reply, schedules another attempt after a backoff measured on the
mock's clock (1, 2, 4, 8 s ... up to MAX_ATTEMPTS). Each attempt is recorded: time, status or
error, duration. With a webhook secret, the request carries
`X-Mock-Signature: sha256=HMAC(secret, "<timestamp>.<body>")` and `X-Mock-Timestamp`.
"""

import asyncio
import hashlib
import heapq
import hmac
import ssl
import time
from collections import deque
from typing import NamedTuple
from urllib.parse import quote, urlsplit

import orjson

from mockserver.core.clock import iso

MAX_ATTEMPTS = 5
BACKOFF = (1, 2, 4, 8, 16)
KEEP = 10000

LANE_CONNECTIONS = 4                   # attempts in flight to one target at once
LANE_QUEUE = 1000                      # attempts waiting for one target; one more fails at once
CONNECT_TIMEOUT = 3.0                  # seconds to open the connection (TLS included)
REPLY_TIMEOUT = 5.0                    # seconds from the request sent to the reply's status line
ATTEMPT_TIMEOUT = 10.0                 # seconds for the whole attempt, whatever it waits for
USER_AGENT = "idp-mockserver-webhooks/1"
URL_SAFE = "!#$%&'()*+,/:;=?@[]~"      # kept as they are in a request target; anything else is %-encoded


# an event and the names webhooks may subscribe to it with (the spec's, then the platform's other names)
SYNONYMS = {"DEPLOYMENT_SUCCEEDED": ("DEPLOYMENT_SUCCEEDED", "DEPLOYMENT_SUCCESSFUL"),
            "DEPLOYMENT_FAILED": ("DEPLOYMENT_FAILED", "DEPLOYMENT_FAILURE")}


def sign(secret, timestamp, body):
    return "sha256=" + hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()


# ------------------------------------------------------------ one attempt on the wire
class DeliveryError(Exception):
    """An attempt that got no usable reply, said in words."""


class Target(NamedTuple):
    origin: str                        # scheme://host:port: the lane
    host: str
    port: int
    tls: bool
    request_target: str                # path and query, %-encoded
    host_header: str


def target_of(url):
    """The target of a webhook URL, or DeliveryError naming what is wrong with it."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as error:
        raise DeliveryError(f"invalid target URL: {error}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise DeliveryError("invalid target URL: it needs http:// or https:// and a host")
    tls = parts.scheme == "https"
    default = 443 if tls else 80
    port = port or default
    host = parts.hostname
    shown = f"[{host}]" if ":" in host else host
    host_header = shown if port == default else f"{shown}:{port}"
    path = quote(parts.path or "/", safe=URL_SAFE) + (f"?{quote(parts.query, safe=URL_SAFE)}" if parts.query else "")
    return Target(f"{parts.scheme}://{host_header}", host, port, tls, path, host_header)


_TLS: list[ssl.SSLContext] = []     # the process's one client context, made on first use


def _tls_context():
    if not _TLS:
        _TLS.append(ssl.create_default_context())
    return _TLS[0]


def request_bytes(target, headers, body):
    lines = [f"POST {target.request_target} HTTP/1.1", f"Host: {target.host_header}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    lines += [f"Content-Length: {len(body)}", "Connection: close", "", ""]
    return "\r\n".join(lines).encode("latin-1", "replace") + body


async def post(target, headers, body):
    """POST once on a connection of its own, closed when the attempt ends: the reply's status code."""
    writer = None
    try:
        async with asyncio.timeout(ATTEMPT_TIMEOUT):
            try:
                async with asyncio.timeout(CONNECT_TIMEOUT):
                    reader, writer = await asyncio.open_connection(
                        target.host, target.port, ssl=_tls_context() if target.tls else None,
                        server_hostname=target.host if target.tls else None)
            except TimeoutError:
                raise DeliveryError(f"no connection within {CONNECT_TIMEOUT:g} s") from None
            writer.write(request_bytes(target, headers, body))
            await writer.drain()
            try:
                async with asyncio.timeout(REPLY_TIMEOUT):
                    line = await reader.readline()
            except TimeoutError:
                raise DeliveryError(f"no reply within {REPLY_TIMEOUT:g} s") from None
    except TimeoutError:
        raise DeliveryError(f"the attempt took longer than {ATTEMPT_TIMEOUT:g} s") from None
    finally:
        if writer is not None:
            writer.transport.abort()     # the connection is given back now, whatever happened
    if not line:
        raise DeliveryError("the receiver closed the connection without a reply")
    words = line.split(None, 2)
    if len(words) < 2 or not words[0].startswith(b"HTTP/") or not words[1].isdigit():
        raise DeliveryError(f"not an HTTP reply: {line[:60]!r}")
    return int(words[1])


def describe(error):
    if isinstance(error, DeliveryError):
        return str(error)
    return f"{type(error).__name__}: {error}".strip().rstrip(":")


class Lane:
    """One target's attempts: those waiting, those in flight, and how many workers make them."""

    __slots__ = ("origin", "waiting", "inflight", "workers")

    def __init__(self, origin):
        self.origin = origin
        self.waiting: deque[tuple[dict, str | None, Target]] = deque()   # (delivery, secret, target)
        self.inflight: dict[int, tuple[dict, str | None]] = {}          # delivery id -> (delivery, secret)
        self.workers = 0


# ------------------------------------------------------------ the deliveries of one world
class Webhooks:
    def __init__(self, rt):
        self.rt = rt
        self.deliveries: deque[dict] = deque(maxlen=KEEP)
        self.pending = []                      # heap of (due, order, delivery, secret)
        self.forced_failures = []              # [remaining, rule name] from scenarios
        self.lanes: dict[str, Lane] = {}       # origin -> Lane, while it has work
        self.tasks = set()                     # the lanes' workers (a world with any is not quiet)
        self.by_cause = {}                     # call id -> delivery ids, for the journal
        self.next_id = 1

    # ------------------------------------------------------------ events
    def on_deployment_event(self, event, request, at):
        if request.service_type is None or request.action != "DEPLOY":
            return                             # events concern deployments of services (spec, Events)
        payload = self.rt.deployments.event_payload(event, request, at)
        self.emit(request.org, event, payload, request.call_id, at)

    def emit(self, org, event, payload, cause, at):
        for entry in self.rt.store.webhooks.under(org):
            hook = entry.data
            subscribed = [name for name in hook["events"] if name in SYNONYMS.get(event, (event,))]
            if not hook["enabled"] or not subscribed:
                continue
            delivery = {                       # delivered under the name the webhook subscribed with
                "id": self.next_id, "webhook_id": hook["id"], "event_type": subscribed[0],
                "target_url": hook["target_url"],
                "payload": payload, "caused_by_call": cause, "created_at": iso(at), "status": "PENDING",
                "next_attempt_at": iso(at), "attempts": [],
            }
            self.next_id += 1
            if len(self.deliveries) == KEEP:      # the oldest delivery is about to be dropped
                oldest = self.deliveries[0]
                siblings = self.by_cause.get(oldest["caused_by_call"], [])
                siblings.remove(oldest["id"])
                if not siblings:
                    del self.by_cause[oldest["caused_by_call"]]
            self.deliveries.append(delivery)
            self.by_cause.setdefault(cause, []).append(delivery["id"])
            self._queue(at, delivery, (entry.private or {}).get("target_secret"))

    def __getstate__(self):
        """Saved with the world: deliveries and what is pending, not the event loop's workers nor the
        reference back to the world (the world sets it when it is read back). Attempts waiting in a lane
        or in flight are saved as due now, so that a copy of the world makes them again."""
        state = dict(self.__dict__)
        pending = list(self.pending)
        now = self.rt.clock.now() if self.rt is not None else 0.0
        for lane in self.lanes.values():
            held = list(lane.inflight.values()) + [(delivery, secret) for delivery, secret, _ in lane.waiting]
            for delivery, secret in held:
                heapq.heappush(pending, (now, self._order(delivery), delivery, secret))
        state.update(pending=pending, lanes={}, tasks=set(), rt=None)
        return state

    @staticmethod
    def _order(delivery):
        return delivery["id"] * MAX_ATTEMPTS + len(delivery["attempts"])

    def _queue(self, due, delivery, secret):
        """An attempt due at `due` on the mock's clock (a heap: the earliest first, then in order queued)."""
        heapq.heappush(self.pending, (due, self._order(delivery), delivery, secret))

    def fail_next(self, count, rule):
        self.forced_failures.append([count, rule])

    # ------------------------------------------------------------ attempts
    def pump(self, now):
        """Hand every attempt that fell due to its target's lane (cheap when none did)."""
        if not self.pending or self.pending[0][0] > now:
            return
        while self.pending and self.pending[0][0] <= now:
            _, _, delivery, secret = heapq.heappop(self.pending)
            self._dispatch(delivery, secret)

    def _dispatch(self, delivery, secret):
        forced = next((item for item in self.forced_failures if item[0] > 0), None)
        if forced is not None:
            forced[0] -= 1
            self._failed_at_once(delivery, secret, f"failed by scenario rule {forced[1]}")
            return
        try:
            target = target_of(delivery["target_url"])
        except DeliveryError as error:
            self._failed_at_once(delivery, secret, str(error))
            return
        lane = self.lanes.get(target.origin)
        if lane is None:
            lane = self.lanes[target.origin] = Lane(target.origin)
        if len(lane.waiting) >= LANE_QUEUE:
            self._failed_at_once(delivery, secret, f"not attempted: {LANE_QUEUE} attempts to {target.origin} "
                                                   f"were already waiting")
            return
        lane.waiting.append((delivery, secret, target))
        if lane.workers < LANE_CONNECTIONS:
            lane.workers += 1
            task = asyncio.get_running_loop().create_task(self._work(lane))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    def _failed_at_once(self, delivery, secret, error):
        attempt = self._start(delivery)
        attempt.update(status_code=None, error=error, duration_ms=0.0)
        self._finish(delivery, secret, attempt)

    async def _work(self, lane: Lane):
        """A worker of a lane: attempts one after another while the lane has some waiting."""
        try:
            while lane.waiting:
                await asyncio.sleep(0)         # a refused connection fails without waiting: let requests in
                if not lane.waiting:
                    break
                delivery, secret, target = lane.waiting.popleft()
                lane.inflight[delivery["id"]] = (delivery, secret)
                try:
                    attempt = await self._attempt(delivery, secret, target)
                finally:
                    del lane.inflight[delivery["id"]]
                self._finish(delivery, secret, attempt)
        finally:
            lane.workers -= 1
            if not lane.workers and not lane.waiting and self.lanes.get(lane.origin) is lane:
                del self.lanes[lane.origin]

    def _start(self, delivery):
        return {"number": len(delivery["attempts"]) + 1, "at": iso(self.rt.clock.now()), "signature": None}

    async def _attempt(self, delivery, secret, target):
        attempt = self._start(delivery)
        started = time.perf_counter()
        body = orjson.dumps({"event_type": delivery["event_type"], "payload": delivery["payload"]})
        timestamp = str(int(self.rt.clock.now()))
        headers = {"Content-Type": "application/json", "User-Agent": USER_AGENT,
                   "X-Mock-Event": delivery["event_type"], "X-Mock-Delivery": str(delivery["id"]),
                   "X-Mock-Timestamp": timestamp}
        if secret:
            headers["X-Mock-Signature"] = sign(secret, timestamp, body)
        attempt["signature"] = headers.get("X-Mock-Signature")
        try:
            attempt.update(status_code=await post(target, headers, body), error=None)
        except Exception as error:              # any transport failure is a failed attempt, never a crash
            attempt.update(status_code=None, error=describe(error))
        attempt["duration_ms"] = round((time.perf_counter() - started) * 1000, 3)
        return attempt

    def _finish(self, delivery, secret, attempt):
        delivery["attempts"].append(attempt)
        code = attempt["status_code"]
        delivery["next_attempt_at"] = None
        if code is not None and 200 <= code < 300:
            delivery["status"] = "DELIVERED"
        elif attempt["number"] >= MAX_ATTEMPTS:
            delivery["status"] = "FAILED"
        else:
            delivery["status"] = "RETRYING"
            due = self.rt.clock.now() + BACKOFF[attempt["number"] - 1]
            delivery["next_attempt_at"] = iso(due)
            self._queue(due, delivery, secret)

    def stop(self):
        """Cancel the attempts in flight (a retired world): each closes its connection as it ends."""
        for task in list(self.tasks):
            task.cancel()

    async def close(self):
        """At shutdown: the attempts in flight cancelled, and their connections closed, before returning."""
        tasks = list(self.tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=1.0)

    # ------------------------------------------------------------ reading
    def caused_by(self, call_id):
        return self.by_cause.get(call_id, [])
