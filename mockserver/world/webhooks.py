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

A target is what the platform would take (`target_problem`: http or https, a host name or an
address, a port of 1-65535, no credentials), and never a link-local address or a cloud metadata
service's (unless the mock runs with --webhook-allow-link-local): checked when a webhook is
registered or edited, again before each attempt, and on the addresses a name resolves to, which
the attempt then connects to (a name may point anywhere, and may point elsewhere by the time of
the attempt). Loopback stays allowed: tests deliver to receivers on their own machine. A deleted
webhook's deliveries still to be attempted end at once, FAILED, saying why (`cancel`); an attempt
already in flight ends as it will and is not retried.

With tracing on (edge/tracing.py), the world holds the server's tracer (`rt.tracer`, lent by the server like
its settings): each attempt on the wire is a span in the trace of the call that caused it (`traces`: the
`traceparent` of calls that queued work, the newest TRACES_KEPT), and the receiver gets its `traceparent`.
"""

import asyncio
import hashlib
import heapq
import hmac
import ipaddress
import re
import socket
import ssl
import time
from collections import deque
from typing import NamedTuple, Protocol
from urllib.parse import quote, unquote, urlsplit

import orjson

from mockserver.core.clock import iso
from mockserver.document.schemas import HOST_NAME, IPV4, IPV6, WEBHOOK_TARGET

MAX_ATTEMPTS = 5
BACKOFF = (1, 2, 4, 8, 16)
MAX_DELIVERIES = 10000
TRACES_KEPT = 1000                     # traced calls that queued work whose trace context deliveries may continue

LANE_CONNECTIONS = 4                   # attempts in flight to one target at once
LANE_QUEUE = 1000                      # attempts waiting for one target; one more fails at once
CONNECT_TIMEOUT = 3.0                  # seconds to open the connection (TLS included)
REPLY_TIMEOUT = 5.0                    # seconds from the request sent to the reply's status line
ATTEMPT_TIMEOUT = 10.0                 # seconds for the whole attempt, whatever it waits for
USER_AGENT = "idp-mockserver-webhooks/1"
URL_SAFE = "!#$%&'()*+,/:;=?@[]~"      # kept as they are in a request target; anything else is %-encoded

TARGET = re.compile(WEBHOOK_TARGET)    # the document's pattern of a target_url
HOST = re.compile(rf"{IPV4}|\[{IPV6}\]|{HOST_NAME}")
NETLOC = re.compile(r"(\[[^\]]*\]|[^:]*)(?::(.*))?", re.DOTALL)   # host (an IPv6 one in brackets), then :port
# cloud metadata services, which hand out the machine's credentials to whoever asks from it
METADATA_ADDRESSES = frozenset(ipaddress.ip_address(address) for address in (
    "169.254.169.254",      # AWS, GCP, Azure, OpenStack, DigitalOcean, Oracle Cloud ...
    "169.254.170.2",        # AWS ECS task metadata
    "fd00:ec2::254",        # AWS, over IPv6
    "fd20:ce::254",         # GCP, over IPv6
    "100.100.100.200",      # Alibaba Cloud
    "168.63.129.16",        # Azure's host agent
    "192.0.0.192",          # Oracle Cloud (earlier address)
))
METADATA_NAMES = frozenset({"metadata.google.internal", "metadata.goog", "instance-data.ec2.internal"})
NAT64 = ipaddress.ip_network("64:ff9b::/96")
ALLOW_OPTION = "--webhook-allow-link-local"


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


def target_problem(url, allow_link_local=False):
    """Why the platform would not take `url` as a webhook's target, in words for a 400; None when it would."""
    problem = _form_problem(url)
    if problem is not None:
        return problem
    host = _host_port(urlsplit(url).netloc)[0]
    if allow_link_local:
        return None
    if host.rstrip(".").lower() in METADATA_NAMES:
        return f"{host} names a cloud metadata service ({ALLOW_OPTION} allows it)"
    address = _address(host.strip("[]"))
    kind = None if address is None else address_problem(address)
    return None if kind is None else f"{address} is {kind} ({ALLOW_OPTION} allows it)"


def _form_problem(url):
    """What makes `url` other than http(s)://host[:port][/path] as the document's pattern has it, or None."""
    try:
        parts = urlsplit(url)
    except ValueError as error:
        return f"not a URL ({error})"
    if parts.scheme not in ("http", "https") or not url.startswith(f"{parts.scheme}://"):
        return "must start with http:// or https://"
    if "@" in parts.netloc:
        return "holds credentials (user@host): deliveries carry none (a target_secret signs them instead)"
    host, port = _host_port(parts.netloc)
    if not HOST.fullmatch(host):
        return (f"{host[:100]!r} is not a host name (labels of letters, digits, - and _, the last one starting "
                "with a letter), an IPv4 address or an [IPv6] address")
    if port is not None and not (port.isascii() and port.isdigit() and len(port) <= 5 and 1 <= int(port) <= 65535):
        return f"port {port[:20]!r} is not a port a receiver can listen on (1-65535)"
    if not TARGET.fullmatch(url):
        return ("is not an http(s) URL the platform takes: http(s)://host[:port][/path][?query], without spaces "
                "or control characters")
    return None


def _host_port(netloc):
    """(host, port as written or None) of a URL's netloc; an IPv6 host keeps its brackets."""
    found = NETLOC.fullmatch(netloc)
    return (found[1], found[2]) if found else (netloc, None)


def _address(host):
    """The IP address a URL's host is (its IPv6 zone left out), or None for a name."""
    try:
        return ipaddress.ip_address(unquote(host).split("%")[0])
    except ValueError:
        return None


def address_problem(address):
    """What makes deliveries to this address refused unless ALLOW_OPTION allows them ("a link-local address", "a
    cloud metadata service's address"), or None. An IPv6 address that carries an IPv4 one (mapped, NAT64, 6to4) is
    judged by both."""
    for candidate in (address, _carried(address)):
        if candidate in METADATA_ADDRESSES:
            return "a cloud metadata service's address"
        if candidate is not None and candidate.is_link_local:
            return "a link-local address"
    return None


def _carried(address):
    if address.version == 4:
        return None
    if address.ipv4_mapped is not None or address.sixtofour is not None:
        return address.ipv4_mapped or address.sixtofour
    return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF) if address in NAT64 else None


def target_of(url):
    """The target of a webhook URL (checked with `target_problem` first), or DeliveryError."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as error:
        raise DeliveryError(f"invalid target URL: {error}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise DeliveryError("invalid target URL: it needs http:// or https:// and a host")
    tls = parts.scheme == "https"
    default = 443 if tls else 80
    port = default if port is None else port
    host = unquote(parts.hostname)
    shown = f"[{parts.hostname}]" if ":" in host else host
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


async def connect(target, allow_link_local=False):
    """A connection to the target: its name resolved here and every address it gives checked (a name may point
    at a link-local or metadata address), then the first of them that accepts is connected to."""
    loop = asyncio.get_running_loop()
    try:
        found = await loop.getaddrinfo(target.host, target.port, type=socket.SOCK_STREAM)
    except socket.gaierror as error:
        raise DeliveryError(f"{target.host} does not resolve ({error.strerror or error})") from None
    for *_, sockaddr in found:
        address = _address(sockaddr[0])
        kind = None if address is None or allow_link_local else address_problem(address)
        if kind is not None:
            raise DeliveryError(f"not attempted: {target.host} resolves to {address}, {kind} ({ALLOW_OPTION} "
                                "allows it)")
    failure: Exception = DeliveryError(f"{target.host} resolves to no address")
    for family, kind, proto, _, sockaddr in found:
        sock = socket.socket(family, kind, proto)
        sock.setblocking(False)
        try:
            await loop.sock_connect(sock, sockaddr)
        except OSError as error:
            sock.close()
            failure = error
            continue
        except BaseException:
            sock.close()
            raise
        return await asyncio.open_connection(sock=sock, ssl=_tls_context() if target.tls else None,
                                             server_hostname=target.host if target.tls else None)
    raise failure


async def post(target, headers, body, allow_link_local=False):
    """POST once on a connection of its own, closed when the attempt ends: the reply's status code."""
    writer = None
    try:
        async with asyncio.timeout(ATTEMPT_TIMEOUT):
            try:
                async with asyncio.timeout(CONNECT_TIMEOUT):
                    reader, writer = await connect(target, allow_link_local)
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


class AttemptTracer(Protocol):
    """What a world's webhooks ask of the server's tracer (edge/tracing.py `Tracer`), when it lends one."""

    def attempt(self, delivery: dict, number: int, cause: str | None, headers: dict) -> object:
        """A span begun for one attempt, its `traceparent` added to `headers`."""

    def attempted(self, span, attempt: dict) -> None:
        """The attempt's outcome noted on its span, which ends."""


class Keeper(Protocol):
    """What a world's webhooks ask of the server that keeps it (sandboxes/worlds.py `Worlds`), lent like the tracer:
    the server keeps a log of changes, and runs it again after a restart."""

    replaying: bool
    """True while the server runs its change log again: no attempt is made meanwhile."""

    def attempted(self, webhooks: "Webhooks", delivery: dict, attempt: dict, given_up: bool) -> None:
        """An attempt ended (`given_up`: the delivery failed without one): kept, so that a restart does not make it
        again."""


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
        self.deliveries: deque[dict] = deque(maxlen=MAX_DELIVERIES)
        self.pending = []                      # heap of (due, order, delivery, secret)
        self.forced_failures = []              # [remaining, rule name] from scenarios
        self.lanes: dict[str, Lane] = {}       # origin -> Lane, while it has work
        self.tasks = set()                     # the lanes' workers (a world with any is not quiet)
        self.by_cause = {}                     # call id -> delivery ids, for the journal
        self.traces: dict[int, str] = {}       # call id -> its traceparent (tracing on only), the newest TRACES_KEPT
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
            if len(self.deliveries) == MAX_DELIVERIES:      # the oldest delivery is about to be dropped
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

    def traced(self, call_id, traceparent):
        """The trace context of a call that queued work: the attempts of the deliveries it causes continue it."""
        self.traces[call_id] = traceparent
        if len(self.traces) > TRACES_KEPT:
            del self.traces[next(iter(self.traces))]

    def fail_next(self, count, rule):
        self.forced_failures.append([count, rule])

    # ------------------------------------------------------------ attempts
    def pump(self, now):
        """Hand every attempt that fell due to its target's lane (cheap when none did); none while the server runs
        its change log again (the log says how the attempts made before the restart went)."""
        if not self.pending or self.pending[0][0] > now:
            return
        keeper = self.rt.keeper
        if keeper is not None and keeper.replaying:
            return
        while self.pending and self.pending[0][0] <= now:
            _, _, delivery, secret = heapq.heappop(self.pending)
            self._dispatch(delivery, secret)

    def _dispatch(self, delivery, secret):
        if delivery["webhook_id"] not in self.rt.store.webhooks.rows:     # deleted (in a copy saved before that)
            self._given_up(delivery, "not attempted: its webhook was deleted")
            return
        forced = next((item for item in self.forced_failures if item[0] > 0), None)
        if forced is not None:
            forced[0] -= 1
            self._failed_at_once(delivery, secret, f"failed by scenario rule {forced[1]}")
            return
        problem = target_problem(delivery["target_url"], self._allow_link_local())
        if problem is not None:                  # saved by an older mock, or the option dropped since
            self._given_up(delivery, f"not attempted: target_url {problem}")
            return
        target = target_of(delivery["target_url"])
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

    def _given_up(self, delivery, error):
        """FAILED without an attempt (none could help), the reason recorded where an attempt's error would be."""
        attempt = self._start(delivery)
        attempt.update(status_code=None, error=error, duration_ms=0.0)
        self._end(delivery, attempt)
        self._told(delivery, attempt, True)

    @staticmethod
    def _end(delivery, attempt):
        delivery["attempts"].append(attempt)
        delivery.update(status="FAILED", next_attempt_at=None)

    def _told(self, delivery, attempt, given_up):
        """The server is told of an attempt that ended (`rt.keeper`: it logs it, so that a restart does not make it
        again)."""
        keeper = self.rt.keeper
        if keeper is not None:
            keeper.attempted(self, delivery, attempt, given_up)

    def replay_attempt(self, delivery_id, attempt, given_up):
        """An attempt that ended before a restart, read back from the server's change log: the delivery waiting
        for it takes its outcome instead of being attempted again."""
        index = next((i for i, item in enumerate(self.pending) if item[2]["id"] == delivery_id), None)
        if index is None:
            return
        _, _, delivery, secret = self.pending.pop(index)
        heapq.heapify(self.pending)
        if given_up:
            self._end(delivery, attempt)
        else:
            self._finish(delivery, secret, attempt, replayed=True)

    def _allow_link_local(self):
        return self.rt.settings.webhook_allow_link_local

    def cancel(self, webhook_id):
        """A deleted webhook: each of its deliveries still to be attempted (waiting for its time, or in its
        target's lane) ends FAILED now, saying why. One in flight ends as it will and is not retried (`_finish`)."""
        dropped = [item[2] for item in self.pending if item[2]["webhook_id"] == webhook_id]
        if dropped:
            self.pending = [item for item in self.pending if item[2]["webhook_id"] != webhook_id]
            heapq.heapify(self.pending)
        for lane in self.lanes.values():
            mine = [item for item in lane.waiting if item[0]["webhook_id"] == webhook_id]
            if mine:
                lane.waiting = deque(item for item in lane.waiting if item[0]["webhook_id"] != webhook_id)
                dropped += [delivery for delivery, _, _ in mine]
        for delivery in dropped:
            self._given_up(delivery, "not attempted: its webhook was deleted")
        return len(dropped)

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
        tracer = self.rt.tracer
        span = None if tracer is None else tracer.attempt(delivery, attempt["number"],
                                                          self.traces.get(delivery["caused_by_call"]), headers)
        try:
            attempt.update(status_code=await post(target, headers, body, self._allow_link_local()), error=None)
        except Exception as error:              # any transport failure is a failed attempt, never a crash
            attempt.update(status_code=None, error=describe(error))
        attempt["duration_ms"] = round((time.perf_counter() - started) * 1000, 3)
        if span is not None:
            tracer.attempted(span, attempt)
        return attempt

    def _finish(self, delivery, secret, attempt, replayed=False):
        if not replayed:
            self._told(delivery, attempt, False)
        delivery["attempts"].append(attempt)
        code = attempt["status_code"]
        delivery["next_attempt_at"] = None
        if code is not None and 200 <= code < 300:
            delivery["status"] = "DELIVERED"
        elif attempt["number"] >= MAX_ATTEMPTS or delivery["webhook_id"] not in self.rt.store.webhooks.rows:
            delivery["status"] = "FAILED"           # the last attempt, or its webhook deleted meanwhile
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
