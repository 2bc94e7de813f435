"""Deployment state progressions, as data tables evaluated against the clock.

A deploy, stop, restart, delete, uninstall or cluster upgrade is a `DeploymentRequest` with a
plan of steps (name, state while it runs, duration). A request a scenario drives by status
reads (`by_reads`) ignores the durations: each read of its target's status moves it on
(`Lifecycle.read`), and its start and end become due at the reads that reach them. Requests of one environment (or
one cluster) run one after the other: each starts when the one before it ends. The
state of a service at time t is computed from its latest request and t, so a read after
the clock moved shows the right state with no background task. `pump(now)` only
applies what must happen once: webhook events and the durable effects of an end.
"""

import heapq
import math
from dataclasses import dataclass, field, fields
from functools import lru_cache

from mockserver.core.kinds import SERVICE_KINDS

# step plans: (step name, state while the step runs, duration in seconds at speed 1)
GIT_BUILD = [("REGISTRY_CREATE_REPOSITORY", "BUILDING", 1), ("GIT_CLONE", "BUILDING", 1),
             ("BUILD_QUEUEING", "BUILDING", 0), ("BUILD", "BUILDING", 2)]
ROLL_OUT = [("DEPLOYMENT_QUEUEING", "DEPLOYING", 0), ("DEPLOYMENT", "DEPLOYING", 2),
            ("ROUTER_DEPLOYMENT", "DEPLOYING", 1)]
MIRROR = [("MIRROR_IMAGE", "DEPLOYING", 1)]
PLANS = {
    ("DEPLOY", "git"): GIT_BUILD + ROLL_OUT,
    ("DEPLOY", "image"): MIRROR + ROLL_OUT,
    ("DEPLOY", "chart"): [("DEPLOYMENT_QUEUEING", "DEPLOYING", 0), ("DEPLOYMENT", "DEPLOYING", 3)],
    ("STOP", None): [("DEPLOYMENT", "STOPPING", 2)],
    ("RESTART", None): [("DEPLOYMENT", "RESTARTING", 2)],
    ("DELETE", None): [("DEPLOYMENT", "DELETING", 2)],
    ("UNINSTALL", None): [("DEPLOYMENT", "DELETING", 2)],
    ("UPGRADE", None): [("DEPLOYMENT_QUEUEING", "DEPLOYING", 1), ("DEPLOYMENT", "DEPLOYING", 8)],
}
QUEUE_DELAY = 1.0              # seconds a request waits in the queue before it starts (at speed 1)
# action -> (state while queued, state after success, status_details.action, trigger_action)
ACTIONS = {
    "DEPLOY": ("DEPLOYMENT_QUEUED", "DEPLOYED", "DEPLOY", "DEPLOY"),
    "STOP": ("STOP_QUEUED", "STOPPED", "STOP", "STOP"),
    "RESTART": ("RESTART_QUEUED", "RESTARTED", "RESTART", "RESTART"),
    "DELETE": ("DELETE_QUEUED", "DELETED", "DELETE", "DELETE"),
    "UNINSTALL": ("DELETE_QUEUED", "DELETED", "DELETE", "UNINSTALL"),
    "UPGRADE": ("DEPLOYMENT_QUEUED", "DEPLOYED", "DEPLOY", "DEPLOY"),
}
# state a step fails into, by the state the step runs in
ERROR_STATES = {"BUILDING": "BUILD_ERROR", "DEPLOYING": "DEPLOYMENT_ERROR", "STOPPING": "STOP_ERROR",
                "RESTARTING": "RESTART_ERROR", "DELETING": "DELETE_ERROR"}
# which plan each service kind deploys with (jobs built from git use "git")
SOURCES = {kind.type: kind.source for kind in SERVICE_KINDS}


@lru_cache(maxsize=4096)
def _details(steps, done, failed):
    """The `details` of a request's finished steps: the first `done` succeeded, and with `failed` the next one
    ended in error. One shared list per (plan, done, failed), since a service's requests repeat the same few
    (read only, like every reply part that is kept)."""
    out = [{"step_name": name, "status": "SUCCESS", "duration_sec": reported} for name, _, _, reported in steps[:done]]
    if failed:
        out.append({"step_name": steps[done][0], "status": "ERROR", "duration_sec": steps[done][3]})
    return out


@dataclass(eq=False, slots=True)
class DeploymentRequest:
    id: str
    target: str                 # service or cluster id
    org: str                    # organization of the target
    queue: str                  # environment id, or cluster id
    action: str
    service_type: str | None
    name: str
    created_at: float
    steps: tuple                # ((name, state, seconds of real run, reported seconds), ...) from plan(): hashable
    triggered_by: str = "api"
    origin: str = "API"
    commit: dict | None = None
    rev: int = 0
    number: int = 1
    call_id: int | None = None
    fail_at: int | None = None
    fail_state: str | None = None
    stall_at: int | None = None
    ready: float = 0.0          # earliest start: created_at plus the queue delay
    start: float = 0.0
    cancelled_at: float | None = None
    started_emitted: bool = False
    finished: bool = False
    effects: list = field(default_factory=list)
    outcome: tuple | None = None    # phase() once the request has ended: it no longer changes (read-only)
    # progress by status reads instead of time (a scenario's `deployment.reads` / `reads_per_step`)
    by_reads: tuple | None = None   # ("reads", N): ends on the N-th read; ("per_step", N): N reads a step
    reads: int = 0
    position: int = 0               # 0 queued, k running step k (1-based), last + 1 ended
    ended_at: float | None = None
    marks: dict = field(default_factory=dict)   # position -> clock time of the read that reached it

    def __reduce__(self):
        # read back by its constructor, its fields in order: cheaper than pickle's way for a slotted object (a dict
        # of its slots, set one by one) in the copy of a world that every new sandbox is (world/frozen.py)
        return DeploymentRequest, tuple(getattr(self, name) for name in _FIELDS)

    @property
    def end(self):
        if self.cancelled_at is not None:
            return self.cancelled_at
        if self.by_reads is not None:
            return math.inf if self.ended_at is None else self.ended_at
        if self.stall_at is not None:
            return math.inf
        last = len(self.steps) if self.fail_at is None else self.fail_at + 1
        return self.start + sum(step[2] for step in self.steps[:last])

    @property
    def execution_id(self):
        return f"{self.target[:8]}-{self.number}"

    def phase(self, now):
        """(state, status_details.status, finished step details, success|None) at time `now`; kept once the
        request has ended, since every later read gives the same (the polls of a finished deploy are most)."""
        if self.outcome is not None:
            return self.outcome
        found = self._phase(now)
        if now >= self.end:
            self.outcome = found
        return found

    def _phase(self, now):
        queued, done, _, _ = ACTIONS[self.action]
        if self.cancelled_at is not None and now >= self.cancelled_at:
            return "CANCELED", "CANCELED", _details(self.steps, self._completed(self.cancelled_at), False), False
        if self.by_reads is not None:
            return self._read_phase()
        if now < self.start:
            return queued, "QUEUED", [], None
        at = self.start
        for index, (_, state, seconds, _) in enumerate(self.steps):
            if index == self.stall_at or now < at + seconds:
                return state, "ONGOING", _details(self.steps, index, False), None
            at += seconds
            if index == self.fail_at:
                return self._failed(index, state)
        return done, "SUCCESS", _details(self.steps, len(self.steps), False), True

    def _failed(self, index, state):
        """The phase of a request whose step `index` (running in `state`) failed."""
        return (self.fail_state or ERROR_STATES.get(state, "DEPLOYMENT_ERROR"), "ERROR",
                _details(self.steps, index, True), False)

    # ------------------------------------------------------------ progress by status reads
    @property
    def last_position(self):
        """The position at which a read-driven request has ended (a stalled one never gets there)."""
        if self.stall_at is not None:
            return math.inf
        return (len(self.steps) if self.fail_at is None else self.fail_at + 1) + 1

    def read(self, now):
        """One status read of a read-driven request at the head of its queue: it moves on as its pace says.
        True when it moved (its start or end may now be due)."""
        self.reads += 1
        mode, count = self.by_reads  # type: ignore[misc]  # Lifecycle.read calls this only when by_reads is set
        last = self.last_position
        goal = last if self.stall_at is None else self.stall_at + 1     # a stall stays in its step
        if mode == "reads":
            wanted = goal if self.reads >= count else self.reads * goal // count
        else:
            wanted = min(self.reads // count, goal)
        if wanted == self.position:
            return False
        for position in range(self.position + 1, wanted + 1):
            self.marks[position] = now
        self.position = wanted
        if self.start == math.inf:
            self.start = now
        if wanted >= last:
            self.ended_at = now
        return True

    def step_times(self):
        """(start, end) of each step on the clock (inf: not reached yet): from the durations, or for a request
        driven by reads, the times of the reads that reached each step."""
        if self.by_reads is not None:
            return [(self.marks.get(i + 1, math.inf), self.marks.get(i + 2, math.inf)) for i in range(len(self.steps))]
        out, at = [], self.start
        for step in self.steps:
            out.append((at, at + step[2]))
            at += step[2]
        return out

    def _read_phase(self):
        queued, done, _, _ = ACTIONS[self.action]
        if self.position == 0:
            return queued, "QUEUED", [], None
        for index, (_, state, _, _) in enumerate(self.steps):
            if index + 1 == self.position and self.ended_at is None:
                return state, "ONGOING", _details(self.steps, index, False), None
            if index == self.fail_at:
                return self._failed(index, state)
        return done, "SUCCESS", _details(self.steps, len(self.steps), False), True

    def _completed(self, now):
        if self.by_reads is not None:
            return max(0, min(self.position - 1, len(self.steps)))
        at, done = self.start, 0
        for index, (_, _, seconds, _) in enumerate(self.steps):
            if index == self.stall_at or now < at + seconds:      # a stalled step never completes
                break
            at += seconds
            done += 1
        return done


_FIELDS = tuple(each.name for each in fields(DeploymentRequest))   # in the constructor's order


def plan(action, service_type, speed=1.0, durations=None, source=None):
    """The steps of an action, with scenario duration overrides and the speed factor applied; `source`
    ("git" or "image") overrides the kind's usual one (a job runs an image or builds from git). A tuple
    shared by every request with the same plan (a busy service keeps thousands of requests)."""
    source = (source or SOURCES.get(service_type)) if action == "DEPLOY" else None
    return _plan(action, source, speed, tuple(sorted((durations or {}).items())))


@lru_cache(maxsize=1024)
def _plan(action, source, speed, durations):
    durations, out = dict(durations), []
    for name, state, seconds in PLANS[(action, source)]:
        reported = int(durations.get(name, seconds))
        out.append((name, state, reported / speed, reported))
    return tuple(out)


class Lifecycle:
    """The queues of requests and the one place that moves them along the clock.

    What falls due is kept in a heap of (time, kind, order, request): `pump` pops what is due, so a
    request costs nothing while nothing of it is due, however many requests are under way. An entry
    whose time has moved (a cancel moves ends earlier and starts of the requests behind) is pushed
    again with the new time; the old one is skipped when it comes up."""

    def __init__(self, on_event=None, on_end=None):
        self.queues = {}                       # queue id -> [DeploymentRequest] not finished, in order
        self.by_target = {}                    # target id -> [DeploymentRequest] all, in order
        self.active = {}                       # DeploymentRequest -> None: not finished, in order of submission
        self.due = []                          # heap of (time, 0 start | 1 end, order, DeploymentRequest)
        self.order = 0
        self.on_event = on_event or (lambda event, request, at: None)
        self.on_end = on_end or (lambda request, success: None)

    def submit(self, request, now, delay=QUEUE_DELAY):
        """Queue a request: it starts `delay` seconds from now, or when the one before it ends."""
        queue = self.queues.setdefault(request.queue, [])
        previous_end = max((r.end for r in queue), default=now)
        request.ready = now + delay
        request.start = math.inf if request.by_reads else max(request.ready, previous_end)
        queue.append(request)
        history = self.by_target.setdefault(request.target, [])
        request.number = len(history) + 1
        history.append(request)
        self.active[request] = None
        self._schedule(request)
        return request

    def _schedule(self, request):
        """Push the request's next events at their current times."""
        if not request.started_emitted and request.cancelled_at is None:
            self._push(request.start, 0, request)
        end = request.end
        if not request.finished and math.isfinite(end):
            self._push(end, 1, request)

    def _push(self, at, kind, request):
        self.order += 1
        heapq.heappush(self.due, (at, kind, self.order, request))

    def latest(self, target):
        history = self.by_target.get(target)
        return history[-1] if history else None

    def history(self, target):
        return self.by_target.get(target, [])

    def busy(self, target, now):
        request = self.latest(target)
        return request is not None and now < request.end

    def cancel(self, queue_id, now, target=None):
        """Cancel the requests of a queue (or of one target in it) that have not ended; the
        requests queued behind them move up. Returns the cancelled requests."""
        cancelled = []
        queue = self.queues.get(queue_id, [])
        for request in queue:
            if not request.finished and now < request.end and target in (None, request.target):
                request.cancelled_at = now
                cancelled.append(request)
        self._restack(queue, now)
        return cancelled

    def _restack(self, queue, now):
        """Requests not started yet start when the one before them ends (a request driven by status reads
        starts at its first read that moves it)."""
        previous_end = now
        for request in queue:
            if request.cancelled_at is None and request.start > now and not request.by_reads:
                request.start = max(previous_end, request.ready)
            if request.cancelled_at is None:
                previous_end = max(previous_end, request.end)
        for request in queue:                  # times moved: their events are due at the new times
            self._schedule(request)

    def read(self, target, now):
        """A status read of a target: its latest request, when status reads drive it and nothing is ahead of
        it in its queue, moves on. True when it moved."""
        request = self.latest(target)
        if request is None or request.by_reads is None or request.finished or request.ended_at is not None \
                or request.cancelled_at is not None:
            return False
        queue = self.queues.get(request.queue, [])
        if request in queue and any(now < r.end for r in queue[:queue.index(request)]):
            return False                       # waits behind another request of its environment or cluster
        if not request.read(now):
            return False
        self._schedule(request)
        if request.ended_at is not None:
            self._restack(queue, now)
        return True

    def forget(self, target):
        self.by_target.pop(target, None)

    def pump(self, now):
        """Emit the events and apply the ends that are due at `now`, in time order (starts before ends
        at the same time)."""
        due = self.due
        while due and due[0][0] <= now:
            at, kind, _, request = heapq.heappop(due)
            if kind == 0:
                if request.started_emitted or request.cancelled_at is not None:
                    continue
                if request.start != at:        # moved: its own entry comes (or came) at the new time
                    if request.start > now:
                        self._push(request.start, 0, request)
                        continue
                    at = request.start
                request.started_emitted = True
                self.on_event("DEPLOYMENT_STARTED", request, at)
            else:
                if request.finished:
                    continue
                end = request.end
                if end != at:
                    if end > now:
                        if math.isfinite(end):
                            self._push(end, 1, request)
                        continue
                    at = end
                self._finish(request, at)

    def _finish(self, request, at):
        request.finished = True
        self.active.pop(request, None)
        queue = self.queues.get(request.queue, [])
        if request in queue:
            queue.remove(request)
        if not queue:
            self.queues.pop(request.queue, None)
        state, _, _, success = request.phase(at)
        if request.cancelled_at is not None:
            self.on_event("DEPLOYMENT_CANCELLED", request, at)
        else:
            self.on_event("DEPLOYMENT_SUCCEEDED" if success else "DEPLOYMENT_FAILED", request, at)
        self.on_end(request, bool(success))
