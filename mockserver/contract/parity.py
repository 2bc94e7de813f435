"""`mockserver parity`: one flow against the platform and against a fresh sandbox of the mock, compared
call by call.

Each step of the flow (contract/flows.py) is sent to the platform (the upstream), then to the mock, and the two
replies are compared: the status, the reply's fields by JSON path (drift.against_reply), the enum values
the document does not know, the headers that matter, the error body, and for a status read polled
until a state shows, the sequence of states each side went through (the platform's, seen at its
pace, must be found in order in the mock's, and both must end alike).

The mock side is a sandbox made for the run, on a manual clock moved by `POST /_mock/clock/advance` while
it is polled: of an in-process mock built from `--fixtures`, or of a running one (`--mock URL`).

Safe against a real platform:
- read-only unless `allow_writes`: a step that writes is not run (nor what needs its ids);
- everything a step created is deleted at the end, in reverse order, through the delete operation the
  document links to its create, also when the run is interrupted (SIGINT, SIGTERM) or fails; a signal
  is obeyed at the next safe point, never in the middle of a request (the HTTP clients and the in-process
  mock are left whole for the cleanup): before the next request, or within a tenth of a second of a wait;
  one that comes while a write is under way waits until the write is answered and its delete is known,
  and signals during the cleanup are noted, not obeyed;
- paced: requests to the platform are spread to `pace` (900 an hour by default, under the platform's
  1000), a 429 waits for its `Retry-After` (or `X-RateLimit-Reset`) and is sent again, and a window
  reported empty (`X-RateLimit-Remaining: 0`) is waited out first;
- the token is sent in the Authorization header only: no report, message or log shows it, nor the
  run's secret values.
"""

import fnmatch
import secrets
import signal
import sys
import threading
import time
import traceback
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from pathlib import Path

import httpx
import orjson

from mockserver.contract import drift, flows
from mockserver.contract.drift import NOT_JSON, finding, parse_json
from mockserver.contract.report import AllowError, build, junit, load_allow, markdown, public, summary, to_json
from mockserver.core.errors import ApiError
from mockserver.core.paths import without_api_prefix
from mockserver.core.version import __version__

MOCK_STEP = 0.5            # seconds of mock time between two polls of the mock (every state is seen)
RETRIES = 5                # attempts of one request (429 waits and connection failures together)
CONNECTION_RETRIES = 2     # of which connection failures
BUSY = (409, 423, 425)     # a delete refused while something is under way: waited out and sent again
DELETE_TRIES = 12
REFUSED = (401, 403)       # the platform refused the token: the run cannot go on (not drift)
SAID_WAIT = 0.5            # seconds of a wait for the pace that the terminal is told of
NAP = 0.1                  # seconds a wait sleeps at a time, between looks for a signal



class Stop(Exception):
    """The run cannot go on: interrupted, the platform unreachable, or a wait longer than allowed."""


class Missing(Exception):
    """A step names an id no earlier step gave: `name` (a placeholder's, or the recorded id)."""

    def __init__(self, name, text):
        super().__init__(text)
        self.name = name


@dataclass
class Reply:
    status: int
    headers: dict
    body: object               # parsed JSON, drift.NOT_JSON, or None (no body)
    elapsed: float

    @property
    def ok(self):
        return 200 <= self.status < 300


# ---------------------------------------------------------------- pacing
class Pacer:
    """Requests spread to `limit` per `window` seconds; 429 and empty windows waited out. `say(line)` hears of
    every wait of half a second or more."""

    def __init__(self, limit, window, max_wait, sleep=time.sleep, clock=time.monotonic, say=None):
        self.limit, self.window, self.interval = limit, window, window / limit
        self.max_wait, self.sleep, self.clock = max_wait, sleep, clock
        self.say = say or (lambda line: None)
        self.next_at = 0.0
        self.waits = []                          # (seconds, why) of every wait the platform asked for

    def describe(self):
        return f"at most {self.limit} request(s) per {self.window:g} s (--pace): one every {self.interval:.3g} s"

    def before(self):
        delay = self.next_at - self.clock()
        if delay > 0:
            if delay >= SAID_WAIT:
                self.say(f"  waiting {delay:.1f} s for the pace ({self.limit} per {self.window:g} s)")
            self.sleep(delay)
        self.next_at = self.clock() + self.interval

    def after(self, reply):
        """Seconds to wait before sending the same request again (a 429), or None."""
        if reply.status == 429:
            wait = retry_after(reply.headers)
            self.check(wait, "a 429")
            self.waits.append((wait, "429"))
            self.say(f"  the platform answered 429: waiting {wait:.1f} s, then the same request again")
            self.sleep(wait)
            return wait
        if reply.headers.get("x-ratelimit-remaining", "").strip() == "0":
            wait = retry_after({"x-ratelimit-reset": reply.headers.get("x-ratelimit-reset", "")})
            self.check(wait, "an empty rate-limit window")
            self.waits.append((wait, "X-RateLimit-Remaining: 0"))
            self.say(f"  the platform's rate-limit window is empty: the next request waits {wait:.1f} s")
            self.next_at = max(self.next_at, self.clock() + wait)
        return None

    def check(self, wait, what):
        if wait > self.max_wait:
            raise Stop(f"the platform asks to wait {wait:.0f} s after {what}, more than --max-wait {self.max_wait:g} s")


def retry_after(headers):
    """Seconds to wait: Retry-After (seconds or an HTTP date), else X-RateLimit-Reset (a Unix time, or
    seconds when small), else a minute."""
    text = (headers.get("retry-after") or "").strip()
    if text:
        try:
            return max(0.0, float(text))
        except ValueError:
            try:
                return max(0.0, parsedate_to_datetime(text).timestamp() - time.time())
            except (TypeError, ValueError):
                pass
    text = (headers.get("x-ratelimit-reset") or "").strip()
    try:
        value = float(text)
    except ValueError:
        return 60.0
    return max(0.0, value - time.time()) if value > 1e9 else value


# ---------------------------------------------------------------- one side
class Side:
    """One of the two runs: where it sends, the ids it saved and mapped, what it must delete at the end."""

    def __init__(self, name, client, prefix, headers, pacer=None, advance=None, deadline=None):
        self.name, self.client, self.prefix, self.headers = name, client, prefix, headers
        self.deadline = deadline   # seconds a whole reply may take (None: the client's timeouts alone)
        self.pacer, self.advance = pacer, advance
        self.values = {}           # placeholder -> id (the built-in flow)
        self.ids = {}              # recorded (or platform) id -> this side's id (replayed flows)
        self.created = set()       # ids a replayed flow's creates made when recorded: mapped once made again
        self.map_ids = False       # a replayed flow: ids in paths and bodies are mapped
        self.cleanup = []          # (step index, delete path), in the order created
        self.requests = 0
        self.nap = time.sleep      # how it waits; the run's obeys a signal that came meanwhile (Parity.nap)

    def call(self, method, path, body=None, query=None):
        failures = 0
        for _ in range(RETRIES):
            self.nap(0)
            if self.pacer is not None:
                self.pacer.before()
            started = time.perf_counter()
            headers = self.headers if body is None else {**self.headers, "Content-Type": "application/json"}
            try:
                response, content = self.exchange(method, path, query, headers, body)
            except httpx.HTTPError as error:     # a network fault is tried twice more, 1 then 2 s later
                failures += 1
                if failures > CONNECTION_RETRIES or isinstance(error, httpx.UnsupportedProtocol):
                    raise Stop(f"the {self.name} cannot be reached: {type(error).__name__}") from None
                self.nap(failures)
                continue
            self.requests += 1
            reply = Reply(response.status_code, {k.lower(): v for k, v in response.headers.items()},
                          parse_json(content), time.perf_counter() - started)
            if self.pacer is None or self.pacer.after(reply) is None:
                return reply
        raise Stop(f"the {self.name} kept answering 429")

    def exchange(self, method, path, query, headers, body):
        """(response, body bytes), the whole reply read within the deadline (else httpx.ReadTimeout)."""
        until = None if self.deadline is None else time.monotonic() + self.deadline
        with self.client.stream(method, self.prefix + path, params=query, headers=headers,
                                content=None if body is None else orjson.dumps(body)) as response:
            chunks = []
            for chunk in response.iter_bytes():
                chunks.append(chunk)
                if until is not None and time.monotonic() > until:
                    raise httpx.ReadTimeout(f"no whole reply within {self.deadline:g} s")
            return response, b"".join(chunks)

    def wait(self, seconds):
        """Time passes for this side: the platform's by waiting, the mock's by moving its clock."""
        if self.advance is not None:
            self.advance(seconds)
        else:
            self.nap(seconds)

    def fill(self, value, constants):
        """A step's path, body or query with its placeholders and mapped ids put in (Missing otherwise)."""
        if isinstance(value, dict):
            return {key: self.fill(item, constants) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(self.fill(item, constants) for item in value)
        if not isinstance(value, str):
            return value

        def placeholder(match):
            name = match[1]
            if name in constants:
                return constants[name]
            if name in self.values:
                return self.values[name]
            if self.map_ids:                     # a replayed body's own braces ({{ .Values }} ...) stay
                return match[0]
            raise Missing(name, f"{{{name}}}")
        value = flows.PLACEHOLDER.sub(placeholder, value)
        return flows.UUIDS.sub(self.mapped, value) if self.map_ids else value

    def mapped(self, match):
        ident = match[0]
        if ident in self.created and ident not in self.ids:
            raise Missing(ident, f"the id {ident} that a recorded create made")
        return self.ids.get(ident, ident)


# ---------------------------------------------------------------- comparing two replies
def compare(spec, operation, upstream, mock):
    """Findings of the platform's reply against the mock's, for one call: the records both hold, alike."""
    out = []
    if upstream.status != mock.status:
        out.append(finding("status", "status", f"the platform answers {upstream.status}, the mock {mock.status}",
                           expected=mock.status, actual=upstream.status))
    out += drift.against_headers(upstream.headers, mock.headers)
    if upstream.status >= 400:
        out += drift.error_body(upstream.body, upstream.status)
    if upstream.body is NOT_JSON and mock.body is not NOT_JSON:
        return out + [finding("body", "$", "the platform's body is not JSON")]
    if (upstream.body is None) != (mock.body is None):
        who = "the mock's only" if upstream.body is None else "the platform's only"
        return out + [finding("body", "$", f"a body on one side: {who}")]
    if not isinstance(upstream.body, (dict, list)) or not isinstance(mock.body, (dict, list)):
        return out
    if upstream.ok != mock.ok:                   # a success against an error: their bodies are not alike
        return out
    schema = _schema(spec, operation, mock.status)
    theirs, ours, _ = alike(upstream.body, mock.body)
    out += drift.against_reply(theirs, ours, drift.map_paths(schema) if schema else ())
    if schema:
        out += [item for item in drift.against_schema(upstream.body, schema) if item["kind"] == "enum"]
    return out


def unlike(spec, operation, upstream, mock):
    """What the two replies do not compare, because their records are not alike (no drift): fields that follow
    a record's state on one side only, and listed records only one side holds."""
    if not (upstream.ok and mock.ok and isinstance(upstream.body, dict) and isinstance(mock.body, dict)):
        return []
    schema = _schema(spec, operation, mock.status)
    theirs, ours, (up_only, mock_only) = alike(upstream.body, mock.body)
    out = [f"{path}: sent by one side only, as it follows the record's state ({drift.STATE_FIELDS[_last(path)]})"
           for path in drift.states_apart(theirs, ours, drift.map_paths(schema) if schema else ())]
    if up_only or mock_only:
        out.append(f"$.results: {up_only} record(s) only the platform lists, {mock_only} only the mock: not compared")
    return out


def _last(path):
    return path.replace("[", ".").rsplit(".", 1)[-1]


def alike(upstream, mock):
    """(platform's body, mock's body, (items only the platform lists, items only the mock lists)): of two lists
    whose items pair up (by id, else by name or key and scope), only the pairs, so that records compare with
    the same records; otherwise the bodies as they are."""
    theirs = upstream.get("results") if isinstance(upstream, dict) else None
    ours = mock.get("results") if isinstance(mock, dict) else None
    if not isinstance(theirs, list) or not isinstance(ours, list):
        return upstream, mock, (0, 0)
    pairs = _paired(theirs, ours)
    if not pairs:
        return upstream, mock, (0, 0)
    return ({**upstream, "results": [a for a, _ in pairs]}, {**mock, "results": [b for _, b in pairs]},
            (len(theirs) - len(pairs), len(ours) - len(pairs)))


def _paired(theirs, ours):
    by_id = {item["id"]: item for item in ours if isinstance(item, dict) and isinstance(item.get("id"), str)}
    by_label = {_identity(item): item for item in ours if isinstance(item, dict) and _identity(item)}
    out, used = [], set()
    for item in theirs:
        if not isinstance(item, dict):
            continue
        other = by_id.get(item.get("id")) or by_label.get(_identity(item))
        if other is not None and id(other) not in used:
            used.add(id(other))
            out.append((item, other))
    return out


def _identity(item):
    label = _label(item)
    return None if label is None else (label, item.get("scope"), item.get("variable_type"), item.get("service_type"))


def _schema(spec, operation, status):
    if operation is None or status not in operation.responses:
        return None
    validator = spec.response_validator(operation, status)
    return validator.schema if validator is not None else None


def progression(upstream, mock):
    """The states the platform went through, seen at its pace, must show in the same order in the mock's
    (polled at every step of its clock), and both must end in the same state."""
    if not upstream or not mock:
        return []
    text = f"the platform went {' → '.join(upstream)}; the mock {' → '.join(mock)}"
    if upstream[-1] != mock[-1]:
        return [finding("states", "$.state", f"they end apart: {text}", expected=mock, actual=upstream)]
    remaining = iter(mock)
    if not all(state in remaining for state in upstream):
        return [finding("states", "$.state", f"the order differs: {text}", expected=mock, actual=upstream)]
    return []


# ---------------------------------------------------------------- the run
class Parity:
    """One run of a flow on both sides. `execute()` walks it and cleans up; the report reads the rest."""

    def __init__(self, config, spec, upstream, mock, flow, mapping=None, name=None, say=None):
        self.config, self.spec, self.upstream, self.mock, self.flow = config, spec, upstream, mock, flow
        self.say = say or (lambda line: None)   # progress, a line at a time (the terminal)
        self.ran = self.runnable = 0
        self.name = name or run_name()
        self.constants = {"run": self.name, "secret": secrets.token_urlsafe(18), "git_url": config.git_url}
        mock.ids.update(mapping or {})
        created = {flows.recorded_ids(step) for step in flow} - {None}
        for side in (upstream, mock):
            side.created, side.map_ids = created, flow is not flows.BUILT_IN
        self.flow_operations = {getattr(flows.operation_of(spec, step), "operation_id", None) for step in flow}
        self.calls = []                # every compared call, for the report
        self.not_run = {}              # operationId -> why it was not run
        self.unset = {}                # placeholder -> why no step gave it
        self.progressions = []         # (operationId, path, platform's states, mock's states)
        self.cleanup_failures = []     # what could not be deleted on the platform
        self.aborted = None
        self.unwinding = False
        self.critical = 0
        self.pending_signal = None
        self.signals = []              # signals noted during the cleanup
        self.started = self.finished = None
        for side in (upstream, mock):
            side.nap = self.nap
            if side.pacer is not None and side.pacer.sleep is time.sleep:
                side.pacer.sleep = self.nap

    # ------------------------------------------------------------ signals
    def on_signal(self, signum, frame):
        """Noted, and obeyed at the next safe point (`checkpoint`): raised from here, the stop could land inside
        an HTTP client's or the in-process mock's own code and leave it unable to send the cleanup."""
        name = signal.Signals(signum).name
        if self.unwinding:
            self.signals.append(name)
        else:
            self.pending_signal = name

    def checkpoint(self):
        """Stop here if a signal came, unless a write is under way or the run is cleaning up."""
        if self.pending_signal and not self.critical and not self.unwinding:
            raise Stop(f"interrupted by {self.pending_signal}")

    def nap(self, seconds):
        """Wait, stopping within NAP seconds of a signal (at once when one came before)."""
        end = time.monotonic() + seconds
        while True:
            self.checkpoint()
            left = end - time.monotonic()
            if left <= 0:
                return
            time.sleep(min(left, NAP))

    @contextmanager
    def write_guard(self):
        """A write and the noting of what it created are not cut by a signal: it waits until after."""
        self.critical += 1
        try:
            yield
        finally:
            self.critical -= 1
        self.checkpoint()

    @contextmanager
    def signals_handled(self):
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {sig: signal.signal(sig, self.on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    # ------------------------------------------------------------ walking
    def execute(self):
        self.started = time.time()
        self.announce()
        with self.signals_handled():
            try:
                for index, step in enumerate(self.flow):
                    self.step(index, step)
            except Stop as stop:
                self.unwinding = True            # from here on a signal is noted, not obeyed
                self.aborted = str(stop)
            except Exception as error:          # a failure of the run itself: still clean up, then say what
                self.unwinding = True
                traceback.print_exc()
                self.aborted = f"the run failed: {type(error).__name__}: {error}"
            finally:
                self.unwinding = True
                self.unwind()
        self.finished = time.time()

    def announce(self):
        """The plan on the terminal: how many steps, and the pace they go at."""
        self.runnable = self.planned()
        mode = "writes allowed" if self.config.allow_writes else "read-only"
        pacer = self.upstream.pacer
        pace = f"; the platform gets {pacer.describe()}: {self.runnable} step(s) take at least " \
               f"{self.runnable * pacer.interval:.0f} s" if pacer is not None else ""
        self.say(f"{self.runnable} of {len(self.flow)} step(s) to run ({mode}){pace}")

    def planned(self):
        """How many steps will run: not left out, and every placeholder they need given by a step that runs."""
        given, count = set(self.constants) | set(self.mock.values), 0
        for step in self.flow:
            needed = set(flows.PLACEHOLDER.findall(str((step.path, step.body, step.query))))
            if self.reason_not_to_run(step, self.name_of(step)) is None and (self.mock.map_ids or needed <= given):
                count += 1
                given |= {step.save, step.pick} - {None}
        return count

    def name_of(self, step):
        operation = flows.operation_of(self.spec, step)
        return operation.operation_id if operation is not None else f"{step.method} {step.path}"

    def step(self, index, step):
        self.checkpoint()
        operation = flows.operation_of(self.spec, step)
        name = operation.operation_id if operation is not None else f"{step.method} {step.path}"
        reason = self.reason_not_to_run(step, name)
        if reason is None:
            try:
                requests = [side.fill((step.path, step.body, step.query), self.constants)
                            for side in (self.upstream, self.mock)]
            except Missing as missing:
                reason = f"needs {missing}: {self.unset.get(missing.name, 'no earlier step gave it')}"
        if reason is not None:
            self.not_run.setdefault(name, reason)
            for placeholder in (step.save, step.pick, flows.recorded_ids(step)):
                if placeholder:
                    self.unset[placeholder] = f"{name} was not run"
            return
        self.ran += 1
        self.say(f"[{self.ran}/{max(self.ran, self.runnable)}] {name} {step.method} {step.path}")
        replies = [self.send(index, side, step, operation, request) for side, request in
                   zip((self.upstream, self.mock), requests)]
        self.refused(step, name, replies[0][0], replies[1][0])
        self.compared(index, step, operation, name, requests, replies)

    def refused(self, step, name, up, mock):
        """A 401 or 403 of the platform where the mock answered otherwise is the token refused (wrong, expired,
        or without the scope the step needs), not drift: the run cannot go on (Stop: exit 2, what it made
        is deleted)."""
        if up.status not in REFUSED or mock.status == up.status:
            return
        message = up.body.get("message") if isinstance(up.body, dict) else None
        said = ""
        if isinstance(message, str) and message.strip():
            said = " ".join(message.replace(self.config.token, "<token>").split())[:160]
            said = f" ({said!r})"
        what = ("wrong or expired" if up.status == 401 else
                "not allowed to do this: a token without the scope this step needs")
        raise Stop(f"the platform refused the token: {up.status} to {name} ({step.method} {step.path}){said}, "
                   f"the mock {mock.status}; the token is {what} (--token, MOCKSERVER_UPSTREAM_TOKEN)")

    def reason_not_to_run(self, step, name):
        if any(fnmatch.fnmatchcase(name, glob) for glob in self.config.skip):
            return "left out (--skip)"
        if step.writes and not self.config.allow_writes:
            return "writes: a read-only run (--allow-writes runs it)"
        return None

    def send(self, index, side, step, operation, request):
        """One step on one side: (reply, states seen while polling)."""
        path, body, query = request
        if step.poll:
            return self.poll(side, path, query, step.poll)
        with self.write_guard() if step.writes else _nothing():
            reply = side.call(step.method, path, body, query)
            if step.writes and operation is not None:
                self.track(index, side, step, operation, path, body, reply)
        return reply, None

    def poll(self, side, path, query, until):
        states, waited = [], 0.0
        deadline = time.monotonic() + self.config.poll_timeout
        while True:
            reply = side.call("GET", path, None, query)
            state = reply.body.get("state") if reply.ok and isinstance(reply.body, dict) else None
            if state is not None and (not states or states[-1] != state):
                states.append(state)
                self.say(f"  {side.name}: {state} after {waited:g} s")
            if state is None or state in until:
                return reply, states
            step = MOCK_STEP if side.advance is not None else self.config.poll_interval
            waited += step
            if waited > self.config.poll_timeout or time.monotonic() > deadline:
                return reply, states
            side.wait(step)

    # ------------------------------------------------------------ what a step leaves
    def track(self, index, side, step, operation, path, body, reply):
        """Note the delete of what a write created on one side (at once: before anything can cut the run)."""
        params = _params(self.spec, step.method, path)
        if step.method == "DELETE" and reply.ok:
            side.cleanup = [(i, p) for i, p in side.cleanup if p != path]
        elif reply.ok and isinstance(reply.body, dict) and "id" in reply.body:
            target = flows.delete_path(self.spec, operation, params, body, reply.body)
            if target is not None:
                side.cleanup.append((index, target))

    def compared(self, index, step, operation, name, requests, replies):
        (up, up_states), (mock, mock_states) = replies
        findings = compare(self.spec, operation, up, mock)
        if step.poll:
            findings += progression(up_states, mock_states)
            self.progressions.append({"operation": name, "path": step.path, "upstream": up_states, "mock": mock_states})
        self.calls.append({"step": index, "operation": name, "method": step.method, "path": step.path,
                           "template": operation.template if operation is not None else None,
                           "upstream": {"status": up.status, "ms": round(up.elapsed * 1000, 1)},
                           "mock": {"status": mock.status}, "findings": findings,
                           "unlike": unlike(self.spec, operation, up, mock)})
        self.remember(step, name, up, mock)

    def remember(self, step, name, up, mock):
        """Ids the step gave: saved and picked placeholders, created ids of a replayed flow, pairs by name."""
        if step.save:
            if up.ok and mock.ok and isinstance(up.body, dict) and isinstance(mock.body, dict) and \
                    "id" in up.body and "id" in mock.body:
                self.upstream.values[step.save], self.mock.values[step.save] = up.body["id"], mock.body["id"]
            else:
                self.unset[step.save] = f"{name} answered {up.status} on the platform and {mock.status} on the mock"
        if step.pick:
            picked = _pick(up.body, mock.body)
            if picked is None:
                self.unset[step.pick] = f"{name} listed nothing to read on one side"
            else:
                self.upstream.values[step.pick], self.mock.values[step.pick] = picked
        recorded = flows.recorded_ids(step)
        if recorded and up.ok and mock.ok and isinstance(up.body, dict) and isinstance(mock.body, dict):
            self.upstream.ids[recorded], self.mock.ids[recorded] = up.body.get("id"), mock.body.get("id")
            self.mock.ids[up.body.get("id")] = mock.body.get("id")
        elif recorded:
            self.unset[recorded] = f"{name} answered {up.status} on the platform and {mock.status} on the mock"
        for theirs, ours in _pairs(up.body, mock.body):
            self.mock.ids.setdefault(theirs, ours)

    # ------------------------------------------------------------ cleaning up
    def unwind(self):
        """Delete what the run created, newest first, on both sides; deletes of both sides are compared."""
        ups, mocks = dict(self.upstream.cleanup), dict(self.mock.cleanup)
        if ups or mocks:
            self.say(f"deleting what the run made: {len(ups)} record(s) on the platform, {len(mocks)} on the mock")
        for index in sorted(ups.keys() | mocks.keys(), reverse=True):
            replies = {}
            for side, path in ((self.upstream, ups.get(index)), (self.mock, mocks.get(index))):
                if path is None:
                    continue
                try:
                    replies[side.name] = self.delete(side, path)
                except Stop as stop:
                    replies[side.name] = None
                    if side is self.upstream:
                        self.cleanup_failures.append(f"DELETE {path}: {stop}")
            up = replies.get("upstream")
            if up is not None and not up.ok and up.status != 404:
                self.cleanup_failures.append(f"DELETE {ups[index]}: the platform answered {up.status}")
            if up is not None and replies.get("mock") is not None:
                step = flows.Step("DELETE", self.named(ups[index]))
                operation = flows.operation_of(self.spec, flows.Step("DELETE", ups[index]))
                name = operation.operation_id if operation is not None else f"DELETE {ups[index]}"
                self.compared(index, step, operation, name, None, [(up, None), (replies["mock"], None)])
        self.upstream.cleanup, self.mock.cleanup = [], []

    def named(self, path):
        """A path of the platform's with the ids the run saved shown by their names (`/project/{project}`)."""
        for name, value in self.upstream.values.items():
            path = path.replace(value, f"{{{name}}}")
        return path

    def delete(self, side, path):
        """One delete, sent again while the side answers that something is under way (409, 423, 425)."""
        for _ in range(DELETE_TRIES):
            reply = side.call("DELETE", path)
            if reply.status not in BUSY:
                return reply
            side.wait(self.config.poll_interval if side.advance is None else 1.0)
        return reply


@contextmanager
def _nothing():
    yield


def _params(spec, method, path):
    path = without_api_prefix(path)
    try:
        return spec.match(method, path)[1]
    except ApiError:
        return {}


def _label(record):
    return record.get("name") or record.get("key") if isinstance(record, dict) else None


def _pick(upstream, mock):
    """(platform id, mock id) of a listed record: the platform's first, and the mock's of the same name
    (else its first); None when either lists nothing."""
    theirs = upstream.get("results") if isinstance(upstream, dict) else None
    ours = mock.get("results") if isinstance(mock, dict) else None
    if not theirs or not ours or not isinstance(theirs[0], dict):
        return None
    first = theirs[0]
    same = next((item for item in ours if isinstance(item, dict) and _label(item) is not None
                 and _label(item) == _label(first)), ours[0])
    if "id" not in first or not isinstance(same, dict) or "id" not in same:
        return None
    return first["id"], same["id"]


def _pairs(upstream, mock):
    """(platform id, mock id) of records both replies show: the record each is, and listed records of the
    same name or key (how existing ids are found by listing)."""
    if not isinstance(upstream, dict) or not isinstance(mock, dict):
        return []
    out = []
    if isinstance(upstream.get("id"), str) and isinstance(mock.get("id"), str):
        out.append((upstream["id"], mock["id"]))
    ours = {_label(item): item.get("id") for item in mock.get("results") or () if isinstance(item, dict)}
    for item in upstream.get("results") or ():
        if isinstance(item, dict) and _label(item) is not None and ours.get(_label(item)):
            out.append((item.get("id"), ours[_label(item)]))
    return [(theirs, ours) for theirs, ours in out if theirs and ours and theirs != ours]


# ---------------------------------------------------------------- the command
def run_name():
    return f"parity-{secrets.token_hex(4)}"


def run(config, build_mock, out=None, err=None):
    """`mockserver parity`: the run, its reports, and the exit status (0 agree, 1 drift, 2 cannot run).
    `build_mock(settings)` makes the in-process mock when the run compares with none given (`--mock`)."""
    out, err = out or sys.stdout, err or sys.stderr
    from mockserver.document.spec import Spec

    def say(line):                              # progress on the terminal (stderr), the results on stdout
        print(f"parity: {line}", file=err, flush=True)
    try:
        allowances = load_allow(config.allow) if config.allow else []
        flow = flows.load_flow(config.flow, config.upstream) if config.flow else flows.BUILT_IN
        mapping = flows.load_mapping(config.mapping) if config.mapping else {}
        spec = Spec.load()
        name = run_name()
        mock, label, close = open_mock(config, name, build_mock)
    except (AllowError, flows.FlowError, Stop) as error:
        print(f"mockserver parity: {error}", file=err)
        return 2
    upstream = upstream_side(config, say)
    try:
        parity = Parity(config, spec, upstream, mock, flow, mapping, name, say)
        parity.execute()
    finally:
        upstream.client.close()
        close()
    report = build(parity, spec, allowances, label, str(config.flow) if config.flow else "built-in")
    try:
        for path, data in ((config.json, lambda: to_json(report)), (config.markdown, lambda: markdown(report).encode()),
                           (config.junit, lambda: junit(report))):
            if path is not None:
                Path(path).parent.mkdir(parents=True, exist_ok=True)
                Path(path).write_bytes(data())
    except OSError as error:
        print(f"mockserver parity: cannot write a report: {error.strerror or error} ({error.filename})", file=err)
        return 2
    for line in summary(report):
        print(line, file=out)
    return report["exit_status"]


def upstream_side(config, say=None):
    headers = {"Authorization": f"{config.auth_scheme} {config.token}", "Accept": "application/json",
               "User-Agent": f"mockserver-parity/{__version__}"}
    client = httpx.Client(timeout=config.timeout, follow_redirects=False)
    return Side("upstream", client, str(config.upstream).rstrip("/"), headers,
                pacer=Pacer(*config.pace, config.max_wait, say=say), deadline=config.timeout)


def open_mock(config, name, build_mock):
    """The mock side: a sandbox on a manual clock, of a running mock or of one built here; (side, label, close)."""
    control = {"Authorization": f"Bearer {config.mock_control_token}"} if config.mock_control_token else {}
    if config.mock:
        client = httpx.Client(base_url=str(config.mock).rstrip("/"), timeout=config.timeout)
        label = public(config.mock)
    else:
        client, label = in_process(config, build_mock)
    try:
        reply = client.put(f"/_mock/sandboxes/{name}", json={"clock": "manual"}, headers=control)
    except httpx.HTTPError as error:
        client.close()
        raise Stop(f"the mock at {label} cannot be reached: {type(error).__name__}") from None
    if reply.status_code >= 300:
        client.close()
        raise Stop(f"the mock at {label} did not make sandbox {name}: {reply.status_code} {reply.text[:200]}")
    prefix = f"/sandbox/{name}"

    def advance(seconds):
        client.post(f"{prefix}/_mock/clock/advance", json={"seconds": seconds}, headers=control)

    def close():
        try:
            client.delete(f"/_mock/sandboxes/{name}", headers=control)
        except httpx.HTTPError:
            pass
        client.close()
    side = Side("mock", client, prefix, {"Authorization": f"Token {config.mock_token}"}, advance=advance)
    return side, label, close


def in_process(config, build_mock):
    """A mock built here from the fixtures by `build_mock(settings)` (the command line gives the ASGI app's
    class), answered through an in-process client."""
    from mockserver.core.errors import problems_of
    from mockserver.core.settings import Settings, default_fixtures
    from mockserver.world.fixtures import folder_problem
    fixtures = Path(config.fixtures) if config.fixtures else default_fixtures()
    if folder_problem(fixtures):
        raise Stop(folder_problem(fixtures))
    try:
        server = build_mock(Settings(fixtures=fixtures, seed=config.seed, clock="manual", cors_origins="off"))
    except Exception as error:               # fixtures that do not load: one line each, as `serve` says them
        raise Stop("; ".join(problems_of(error))) from None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from starlette.testclient import TestClient
    return TestClient(server, base_url="http://mock", raise_server_exceptions=False), f"in-process, fixtures {fixtures}"
