"""Limits below HTTP: what one connection may cost the server before its request is whole.

`protocol(limits)` is uvicorn's httptools protocol with five bounds (`Limits`, from the options):

- **header timeout**: a request's line and headers must have arrived `header_timeout` seconds
  after the connection opened or the request's first byte came; a connection that stays silent,
  or sends its headers a few bytes at a time, is answered 408 and closed. (Between requests, an
  idle keep-alive connection is closed after the keep-alive timeout, uvicorn's 5 seconds.)
- **body timeout**: the request's body must have arrived `body_timeout` seconds after its headers;
  a slow upload is answered 408 (when nothing was answered yet) and closed, and the request being
  answered sees the client disconnect.
- **header size**: the request line and headers together at most `max_header_size` bytes; past
  that, 431. Bytes are counted as they arrive, so a huge header is never held whole.
- **write timeout**: a reply waiting for its client to read it must move: when the client reads
  nothing of it for `write_timeout` seconds (the reply held back because the client's buffers are
  full, or a closing connection's last bytes), the connection is dropped with what it still held,
  and its place is free. The request being answered sees its client gone, quietly: no traceback.
  The log says what was closed in one line, then at most once every REPORT_EVERY seconds with a
  count, however many connections it was.
- **connections**: at most `max_connections` at once. One more takes the place of the connection
  that has waited longest without a request in progress (silent, still sending its headers, or an
  idle keep-alive); only when every connection has a request in progress is it refused, 503.

Deadlines are times noted on the connection, not timers: one sweep every SWEEP seconds answers the
connections past theirs (and closes those idle past the keep-alive timeout, for which uvicorn would set and
cancel a timer on every request), so a request pays for assignments instead of timers (a timeout fires
at most SWEEP seconds late). The time a deadline starts from is read once per chunk received (`now`),
and the order connections fell idle in is a counter, not a time: the parser's steps, run for every
request, read no clock.

A plain API call is answered at once, without ASGI (`_may_direct`, `_direct`): a GET, POST, PUT, PATCH or
DELETE of HTTP/1.1 kept alive, with nothing before it on the connection, whose message ends in the chunk that
brought its head, is offered whole to the `DirectApp` the protocol was given (process/direct.py: the seam), which
answers it through the same pipeline steps or declines; its reply is written whole, like any other, and the
connection waits for the next request. No cycle, task or ASGI message is made for it. The common case, a chunk that
is exactly one plain request, skips even the parser's steps: it is read in one step (process/wholerequest.py) and
offered as it is; any other chunk goes to the parser. A request whose body goes on in a later chunk, or that the
app declines (offered once, whichever way it was read), goes through uvicorn's cycle and the app as before, started
in the same callback that would have started it without this. At most one request of a chunk is answered at once: the
others a pipelining client sent with it go through ASGI, a task each, as they would without this, so that a burst
on one connection takes turns with the other connections instead of being answered whole inside one callback.

The protocol is uvicorn's httptools protocol, subclassed: what of uvicorn's insides it reads, writes or overrides
is named in `UVICORN_INSIDES` below, and tests/process/test_uvicorn_insides.py checks each against the uvicorn
installed, so that an upgrade that moves one fails there, by name (pyproject.toml pins the range tested).

Replies written here are the spec's error body with `Connection: close`. After one, the
connection reads and discards what the client still sends for a moment (at most LINGER seconds
and LINGER_BYTES bytes) before closing, so that the client reads the reply instead of a reset.

`raise_fd_limit()` raises the process's soft limit of open files to its hard limit where the
system allows; `connection_budget` keeps `max_connections` below what that limit leaves.
"""

import itertools
import logging
import socket
import struct
from dataclasses import dataclass

import httptools
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from mockserver.core.errors import ApiError
from mockserver.edge.faults import WIRE
from mockserver.edge.requestid import request_id
from mockserver.process.direct import DirectApp, head
from mockserver.process.wholerequest import DIRECT_METHODS, whole_request

LINGER = 1.0                     # seconds a refused connection still reads before it closes
LINGER_BYTES = 1024 * 1024       # ... and bytes
SWEEP = 0.25                     # seconds between two looks at the connections' deadlines
FD_RESERVE = 100                 # open files kept for everything but connections (state file, webhooks, logs)
FD_TARGET = 1024 * 1024          # the soft limit asked for when the hard one is unlimited
REPORT_EVERY = 60.0              # seconds between two log lines about connections closed for not reading
JOIN_BELOW = 4096                # bytes of body under which a direct reply's head and body are joined for one write
_base = HttpToolsProtocol          # the steps run for every request call it directly: cheaper than super()

# What of uvicorn's httptools protocol this module uses beyond its constructor: the methods it overrides and
# calls, and the attributes it reads or sets on the protocol, its request-response cycle, its flow control and
# the server's state. A uvicorn that drops or renames one breaks here: tests/process/test_uvicorn_insides.py
# names the one missing.
UVICORN_INSIDES = {
    "HttpToolsProtocol": ("connection_made", "connection_lost", "data_received", "resume_writing",
                          "on_message_begin", "on_headers_complete", "on_body", "on_message_complete",
                          "on_response_complete", "app", "loop", "transport", "flow", "parser", "cycle", "pipeline",
                          "connections", "server_state", "timeout_keep_alive", "expect_100_continue", "url",
                          "headers", "scope"),
    "RequestResponseCycle": ("response_started", "response_complete", "disconnected", "keep_alive", "more_body",
                             "body", "message_event", "transport"),
    "FlowControl": ("write_paused", "resume_reading"),
    "ServerState": ("default_headers", "total_requests"),
}
IDLE_ORDER = itertools.count()   # connections in the order they fell idle: the oldest gives its place first
log = logging.getLogger("mockserver")


@dataclass(frozen=True)
class Limits:
    header_timeout: float = 10.0
    body_timeout: float = 30.0
    max_header_size: int = 64 * 1024
    max_connections: int = 1000
    write_timeout: float = 30.0


def protocol(limits, app: DirectApp | None = None):
    """The protocol class uvicorn is given (`http=`), bound to these limits and, for the direct path, to the app that
    answers a request that came whole (process/direct.py; None: every request goes through ASGI)."""
    return type("GuardedProtocol", (GuardedProtocol,), {"limits": limits, "direct_app": app})


class _Answered(Exception):
    """Stops the parser: this connection was answered here and is closing."""


class Guard:
    """What the limits note on one connection. Kept apart from the protocol object: uvicorn's protocol holds
    27 attributes, and an instance of more than 30 loses the dictionary layout its class's instances share,
    which makes every attribute read of uvicorn's own code on it slower (docs/performance.md)."""

    __slots__ = ("deadline", "expired", "in_head", "head_bytes", "fed", "now", "waiting_since", "answered",
                 "refusal", "discarded", "write_deadline", "write_pending", "dropped", "running", "idle_until",
                 "held", "declined", "spent")

    def __init__(self, now):
        self.deadline = None     # when the header or body timeout in force runs out (loop time)
        self.expired = None      # ... and what is done then
        self.in_head = True      # waiting for, or reading, a request line and headers
        self.head_bytes = 0      # bytes received of them
        self.fed = 0             # bytes of the chunk being parsed
        self.now = now           # when the chunk being parsed arrived (loop time)
        self.waiting_since = next(IDLE_ORDER)   # when it last fell idle, as an order (the smallest waited longest)
        self.answered = False    # a reply was written here (or is due); the connection lingers, then closes
        self.refusal = None      # (status, message) of a reply due once the request before it is answered
        self.discarded = 0
        self.write_deadline = None   # when a reply the client reads nothing of is dropped (loop time) ...
        self.write_pending = 0       # ... and the bytes it still held when last looked at
        self.dropped = False         # dropped for that
        self.running = None          # the request being answered (cycle is the one read last, maybe behind it)
        self.idle_until = None       # when a kept-alive connection that sent nothing more is closed (loop time)
        self.held = None             # the body so far of a request held for the direct path (only while a
                                     # chunk is parsed: see GuardedProtocol._may_direct)
        self.declined = False        # the app declined the request of the chunk being parsed (not offered again)
        self.spent = False           # a request of the chunk being parsed was answered at once: the others of
                                     # it go through ASGI, a task each, so that a pipelined burst takes its turns
                                     # with other connections' requests (see GuardedProtocol._may_direct)


class _AtOnce:
    """The cycle of a request answered at once (`GuardedProtocol._direct`): complete, as uvicorn's steps read it
    (its `message_event`, set when the connection is lost, wakes no one)."""
    response_started = response_complete = True
    more_body = disconnected = keep_alive = False

    class message_event:
        @staticmethod
        def set():
            pass


AT_ONCE = _AtOnce()


class GuardedProtocol(HttpToolsProtocol):
    limits = Limits()
    direct_app: DirectApp | None = None   # answers a request that came whole (`protocol`), or None
    sweeper = None               # the timer of the next sweep of this server's connections, while any are open
    unread = 0                   # connections closed for not reading their replies, not yet in the log
    report_at = 0.0              # when the log may next say so (loop time)
    reporter = None              # the timer of that line, while one is due

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.guard = Guard(self.loop.time())

    # ------------------------------------------------------------ the connection
    def connection_made(self, transport):
        super().connection_made(transport)
        if len(self.connections) > self.limits.max_connections and not self._make_room():
            self._answer(503, f"the server holds its limit of {self.limits.max_connections} connections, each "
                              "with a request in progress (--max-connections); retry in a moment",
                         [(b"retry-after", b"1")])
            return
        self._arm(self.limits.header_timeout, self._head_too_slow)

    def connection_lost(self, exc):
        self._disarm()
        self._gone()
        super().connection_lost(exc)

    def resume_writing(self):
        # uvloop resumes the writing of a transport it is closing (the client reset the connection) before
        # connection_lost is called: the reply's next send would write to a closed transport, a traceback
        if self.transport.is_closing():
            self._gone()
        super().resume_writing()

    def close_connection(self):
        """edge/faults.py's Wire: close the connection in order, the requests under way told their client is gone."""
        self._gone()
        self.transport.close()

    def reset_connection(self):
        """edge/faults.py's Wire: end the connection with a TCP reset (lingering off turns the close into an RST)."""
        self._gone()
        sock = self.transport.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            except OSError:                      # not a TCP socket (a Unix socket): an abort is the nearest
                pass
        self.transport.abort()

    def _gone(self):
        """Tell the request being answered, and the one read last, that the client is gone: their next send
        returns at once instead of writing to a closed transport. uvicorn tells only the one read last, which
        is another when requests came pipelined behind the one being answered."""
        for cycle in {self.guard.running, self.cycle} - {None}:
            if not cycle.response_complete:
                cycle.disconnected = True
                cycle.message_event.set()

    def idle(self):
        """No request in progress (silent, still sending its headers, or between requests), and not closing."""
        return (not self.guard.answered and not self.transport.is_closing()
                and (self.cycle is None or self.cycle.response_complete))

    def _make_room(self):
        """Close the connection that has waited longest without a request in progress; False if none has."""
        waiting = [c for c in self.connections if c is not self and isinstance(c, GuardedProtocol) and c.idle()]
        if not waiting:
            return False
        oldest = min(waiting, key=lambda c: c.guard.waiting_since)
        if oldest.guard.head_bytes:
            oldest._answer(503, "the server is at its connection limit (--max-connections) and this connection "
                                "was the slowest to send its request")
        else:
            oldest.transport.close()             # nothing of a request came: closing is what idle clients expect
        return True

    def data_received(self, data):
        guard = self.guard
        if guard.answered:                       # lingering after a reply: read and drop
            guard.discarded += len(data)
            if guard.discarded > LINGER_BYTES:
                self.transport.close()
            return
        guard.idle_until = None                  # not idle: the keep-alive timeout stops
        guard.now = self.loop.time()
        guard.fed = len(data)
        guard.spent = False
        if guard.in_head:
            if not guard.head_bytes and self.direct_app is not None and self._free():   # a request may begin here
                request = whole_request(data, self.limits.max_header_size)
                if request is not None:
                    if self._direct(*request):
                        guard.deadline = None    # the request is whole and answered, as at its message's end
                        return
                    guard.declined = True        # the parser's steps do not offer it again
            guard.head_bytes += guard.fed
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            pass                                 # no upgrades (no websockets here): answered as plain HTTP
        except httptools.HttpParserError as error:
            if not guard.answered:               # else a step below stopped the parser after its own reply
                self._refuse(400, f"malformed HTTP request: {error}")
            return
        if guard.held is not None:               # a request held for the direct path whose message goes on in a
            self._start_held(complete=False)     # later chunk: through ASGI now, with the body that came
        guard.declined = False
        if guard.in_head and guard.head_bytes > self.limits.max_header_size:
            self._too_large()

    # ------------------------------------------------------------ the parser's steps
    def on_message_begin(self):
        _base.on_message_begin(self)
        guard = self.guard
        guard.idle_until = None                  # a request under way (one may begin behind a direct reply)
        if guard.deadline is None:               # a request's first byte on a kept-alive connection
            guard.deadline, guard.expired = guard.now + self.limits.header_timeout, self._head_too_slow

    def on_headers_complete(self):
        guard = self.guard
        guard.in_head = False
        # this head came in the bytes counted since the last request ended plus the chunk being parsed:
        # only when those could hold more than the limit is it measured (pipelined requests share a chunk)
        limit = self.limits.max_header_size
        if guard.head_bytes + guard.fed > limit and self._head_size() > limit:
            self._disarm()
            self._too_large()
            raise _Answered()
        guard.deadline, guard.expired = guard.now + self.limits.body_timeout, self._body_too_slow
        if self.url[:1] != b"/":
            self._absolute_form()
        if self.direct_app is not None and not guard.declined and self._may_direct():
            guard.held = []                      # started when its message ends, or when this chunk does
            return
        self._start()

    def _absolute_form(self):
        """A target in absolute form (`GET http://name/path`) names the host itself, and RFC 9112 (3.2.2) has the
        server use that name rather than `Host`: it becomes the request's one `Host`, which the app then judges."""
        scheme, _, rest = self.url.partition(b"://")
        if scheme.lower() not in (b"http", b"https") or not rest:
            return
        authority = rest.split(b"/", 1)[0].split(b"?", 1)[0]
        self.headers[:] = [(name, value) for name, value in self.headers if name != b"host"] + [(b"host", authority)]

    def _start(self):
        """uvicorn's step: the request's ASGI cycle made, and its task started (or queued behind the one before).
        Its scope lends it this connection (edge/faults.py's WIRE)."""
        self.scope[WIRE] = self
        _base.on_headers_complete(self)
        cycle = self.cycle
        if not self.pipeline or self.pipeline[0][0] is not cycle:
            self.guard.running = cycle           # started now, not queued behind the one being answered

    def _start_held(self, complete):
        """A request held for the direct path goes through ASGI after all, with the body it has so far (`complete`:
        all of it): as if its cycle had been made with its head."""
        body, self.guard.held = b"".join(self.guard.held), None
        self._start()
        cycle = self.cycle
        cycle.body = body
        if complete:
            cycle.more_body = False
        if body or complete:
            cycle.message_event.set()

    def _may_direct(self):
        """The request may be answered at once, without ASGI, when its message ends within the chunk being parsed:
        a GET, POST, PUT, PATCH or DELETE of HTTP/1.1, kept alive, not waiting for a 100 Continue, with nothing
        before it still being answered and a client that reads its replies. Its body is then held (`on_body`)
        until the message ends (`on_message_complete`: `_direct`); when the chunk ends first, the request goes
        through ASGI at once with what came of its body (`data_received`): a request never waits for more bytes
        than it would through ASGI, and a held body is never larger than one chunk."""
        parser = self.parser
        return (not self.guard.spent and parser.get_method() in DIRECT_METHODS and parser.should_keep_alive()
                and parser.get_http_version() == "1.1" and not parser.should_upgrade() and not self.expect_100_continue
                and self._free())

    def _free(self):
        """Nothing before a request begun now is still being answered, and the client reads its replies."""
        return (self.cycle is None or self.cycle.response_complete) and not self.pipeline and not self.flow.write_paused

    def _direct(self, method, url, headers, body):
        """Offer a whole request to the app (process/direct.py); True when it answered: the reply is written whole
        and the connection waits for the next request, as after any reply."""
        try:
            reply = self.direct_app.answer_whole(method, url, headers, body)
        except Exception:                        # a bug of the mock's: the spec's 500, as through ASGI (the call
            log.exception("unhandled error in %s %s", method, url.decode("latin-1"))   # is not run again)
            error = ApiError(500, "internal error: the call could not be answered").render()
            reply = (500, [(b"content-type", b"application/json"), (b"x-request-id", request_id(None).encode()),
                     (b"content-length", b"%d" % len(error))], error)
        if reply is None:
            return False
        # no header check here, unlike a reply through ASGI: every header of a direct reply is the mock's own
        # (numbers, constants) or the client's X-Request-Id, which edge/requestid.py admits only as visible ASCII
        self.cycle = AT_ONCE
        self.guard.spent = True
        status, headers, body = reply
        written = head(status, [*self.server_state.default_headers, *headers])
        if len(body) < JOIN_BELOW:
            self.transport.write(written + body)
        else:                                    # one writev (uvloop), the body not copied
            self.transport.writelines((written, body))
        self.on_response_complete()
        return True

    def _head_size(self):
        """The request line and headers' size."""
        return len(self.url) + sum(len(name) + len(value) + 4 for name, value in self.headers)

    def on_body(self, body):
        held = self.guard.held
        if held is not None:
            held.append(body)
            return
        _base.on_body(self, body)

    def on_message_complete(self):
        guard = self.guard
        guard.deadline = None
        if guard.held is not None:               # a request held for `direct`, whole
            body = guard.held[0] if len(guard.held) == 1 else b"".join(guard.held)
            if self._direct(self.parser.get_method().decode("ascii"), self.url, self.headers, body):
                guard.held = None
            else:
                self._start_held(complete=True)
        else:
            _base.on_message_complete(self)
        guard.in_head, guard.head_bytes = True, 0

    def on_response_complete(self):
        """uvicorn's step, but while no request waits behind this one the keep-alive timeout is a deadline noted for
        the sweep, not a timer; a request sent while this one was answered is started by uvicorn's own step."""
        guard = self.guard
        guard.waiting_since = next(IDLE_ORDER)
        if self.pipeline and not self.transport.is_closing():
            guard.running = self.pipeline[-1][0]
            _base.on_response_complete(self)     # it starts that request's task
        else:
            self.server_state.total_requests += 1
            if not self.transport.is_closing():
                self.flow.resume_reading()
                guard.idle_until = self.loop.time() + self.timeout_keep_alive
        if guard.refusal is not None:            # a request behind this one was refused: its reply comes now
            self._answer(*guard.refusal)

    # ------------------------------------------------------------ timeouts and replies
    def _arm(self, seconds, callback):
        """A deadline from now, and the sweeps that watch it (the parser's steps set theirs inline: a sweep is
        due while any connection is open)."""
        self.guard.deadline, self.guard.expired = self.loop.time() + seconds, callback
        if type(self).sweeper is None:
            self._sweep_later()

    def _disarm(self):
        self.guard.deadline = None

    def _sweep_later(self):
        type(self).sweeper = self.loop.call_later(SWEEP, self._sweep)

    def _sweep(self):
        """Answer every connection of this server past its deadline; look again later while any is open."""
        cls = type(self)
        cls.sweeper = None
        now = self.loop.time()
        guarded = [c for c in self.connections if isinstance(c, cls)]
        dropped = 0
        for connection in guarded:
            if connection.guard.deadline is not None and connection.guard.deadline <= now:
                connection.guard.deadline = None
                connection.guard.expired()
            if connection.guard.idle_until is not None and connection.guard.idle_until <= now:
                connection.guard.idle_until = None   # kept alive and silent for --timeout-keep-alive: closed
                if not connection.transport.is_closing():
                    connection.transport.close()
            dropped += connection._unread(now)
        if dropped:
            cls.unread += dropped
            self._report_unread()
        if guarded:
            self._sweep_later()

    def _unread(self, now):
        """Drop the connection when its client has read nothing of what waits for it for `write_timeout` seconds
        (1 when dropped, else 0). Only a reply held back (the transport's buffer past its high-water mark) or the
        last bytes of a closing connection are watched: no more can be added to them, so fewer bytes waiting
        than at the last look means the client read some."""
        pending = 0 if self.guard.dropped else self.transport.get_write_buffer_size()
        if not pending or not (self.flow.write_paused or self.transport.is_closing()):
            self.guard.write_deadline = None
            return 0
        if self.guard.write_deadline is None or pending < self.guard.write_pending:
            self.guard.write_deadline, self.guard.write_pending = now + self.limits.write_timeout, pending
            return 0
        if now < self.guard.write_deadline:
            return 0
        self.guard.dropped, self.guard.write_deadline = True, None
        self._disarm()
        self._gone()
        self.pipeline.clear()                    # requests sent behind it are not started
        self.transport.abort()                   # what it held is dropped with it; connection_lost frees its place
        return 1

    def _report_unread(self):
        """One line for the connections dropped since the last: now, or when REPORT_EVERY has passed since it."""
        cls = type(self)
        now = self.loop.time()
        if now < cls.report_at:
            if cls.reporter is None:
                cls.reporter = self.loop.call_at(cls.report_at, self._report_unread)
            return
        cls.reporter = None
        if cls.unread:
            log.warning("closed %d connection(s) whose client read nothing of its reply for %g seconds "
                        "(--write-timeout); their places are free", cls.unread, self.limits.write_timeout)
            cls.unread, cls.report_at = 0, now + REPORT_EVERY

    def _head_too_slow(self):
        self.guard.deadline = None
        if self.cycle is not None and not self.cycle.response_complete:
            # a request sent behind one still being answered: reading waits for that answer, not the client
            self._arm(self.limits.header_timeout, self._head_too_slow)
            return
        self._answer(408, f"the request line and headers did not arrive within {self.limits.header_timeout:g} "
                          "seconds (--header-timeout)")

    def _body_too_slow(self):
        self.guard.deadline = None
        if self.cycle is not None and self.cycle.response_started:
            self.transport.close()               # already answered: nothing more can be said
            return
        self._answer(408, f"the request body did not arrive within {self.limits.body_timeout:g} seconds of its "
                          "headers (--body-timeout)")

    def _too_large(self):
        self._refuse(431, f"the request line and headers are larger than {self.limits.max_header_size} bytes "
                          "(--max-header-size)")

    def _refuse(self, status, message):
        """Refuse the request being read. When it came pipelined behind a whole request still being answered,
        replies go in the order of the requests: that one's first, then this refusal (on_response_complete);
        nothing more is read meanwhile. A request whose own head or body is refused is answered now."""
        cycle = self.cycle                       # the request before, while this one's head is read
        if cycle is not None and not cycle.more_body and not cycle.response_complete and not cycle.disconnected:
            self.guard.answered, self.guard.refusal = True, (status, message)
            return
        self._answer(status, message)

    def _answer(self, status, message, extra=()):
        """Write the error reply, tell a request in progress that its client is gone, then linger and close."""
        self.guard.answered, self.guard.refusal, self.guard.held = True, None, None
        self._disarm()
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete:
            cycle.disconnected = True
            cycle.message_event.set()
        body = ApiError(status, message).render()
        headers = [*self.server_state.default_headers, (b"content-type", b"application/json"),
                   (b"content-length", str(len(body)).encode()), (b"connection", b"close"),
                   (b"x-request-id", request_id(None).encode()), *extra]
        self.transport.write(head(status, headers) + body)
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self.flow.resume_reading()
        self.loop.call_later(LINGER, self.transport.close)


# ---------------------------------------------------------------- open files
def raise_fd_limit():
    """Raise the soft limit of open files to the hard one where allowed; the soft limit in force (None where
    the system has no such limit)."""
    try:
        import resource
    except ImportError:                          # not a Unix
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = FD_TARGET if hard == resource.RLIM_INFINITY else hard
    if soft != resource.RLIM_INFINITY and soft < wanted:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
            soft = wanted
        except (ValueError, OSError):            # not allowed here: the limit stays
            pass
    return None if soft == resource.RLIM_INFINITY else soft


def connection_budget(max_connections, fd_limit):
    """The connections that may be open at once under an open-file limit (a few files kept for the rest)."""
    if fd_limit is None:
        return max_connections
    return max(1, min(max_connections, fd_limit - FD_RESERVE))

