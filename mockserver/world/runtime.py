"""One world: everything a sandbox owns and a reset rebuilds. The store, tokens, rate-limit
windows, deployment queues, the call journal, webhooks and their deliveries, the active
scenarios with their counters, the seeded source of fake data and the clock.

`Runtime(settings, clock, scenarios, budget)` is the full description of an empty world;
`api.replay.fresh_world` fills one with what the fixtures describe. Worlds are copied and saved whole
(world/frozen.py). Nothing here imports the web stack or knows that other worlds exist.
"""

import uuid as uuidlib
import weakref

from mockserver.calls.journal import Journal
from mockserver.core.clock import iso
from mockserver.world.auth import Token
from mockserver.world.deployments import Deployments
from mockserver.world.fake import Fake
from mockserver.world.lifecycle import Lifecycle
from mockserver.world.ratelimit import RateLimiter
from mockserver.world.replies import ReplyCache
from mockserver.world.store import Store
from mockserver.world.webhooks import AttemptTracer, Keeper, Webhooks


class Context:
    """What a handler gets: the runtime, the caller's organization and the request's values."""

    __slots__ = ("rt", "org", "token", "params", "query", "body", "now", "call_id", "effects", "cacheable")

    def __init__(self, rt, *, org: str, token: Token | None = None, params: dict | None = None,
                 query: dict | None = None, body=None, now: float | None = None, call_id: int | None = None,
                 effects: dict | None = None) -> None:
        self.rt = rt
        self.org = org
        self.token = token
        self.params = params or {}
        self.query = query or {}
        self.body = body if body is not None else {}
        self.now = rt.clock.now() if now is None else now
        self.call_id = call_id
        self.effects = effects or {}
        self.cacheable = True                  # False: the reply moves with the clock (world/replies.py)


class Runtime:
    """A world. Its parts that need the world back (webhooks, deployments) hold a weak reference to it,
    so a world's object graph has no cycle: dropping the last reference to a retired world frees it at
    once (tests/process/test_fleet_memory.py checks this with the collector off). `close()` lets go of what a
    live world holds outside itself: webhook attempts in flight, their HTTP client, its journal's share
    of the memory budget."""

    source = "fixtures"                        # what the world started from: fixtures, options, "snapshot NAME"

    def __init__(self, settings, clock, scenarios=None, budget=None):
        self.settings = settings
        self.clock = clock
        self.scenarios = scenarios             # Scenarios (they need the document, so the server gives them)
        self.fake = Fake(settings.seed)
        self.store = Store()
        self.tokens: dict[str, Token] = {}    # token value -> Token
        self.limiter = RateLimiter(settings.rate_limit or 1000, settings.rate_window or 3600.0)
        self.journal = Journal(settings.journal_size, budget, settings.journal_body_limit)
        self.webhooks = Webhooks(weakref.proxy(self))
        self.deployments = Deployments(weakref.proxy(self))
        self.lifecycle = Lifecycle(on_event=self.webhooks.on_deployment_event, on_end=self.deployments.apply_end)
        self.revision = 0
        self.derived: dict[str, dict[str, None]] = {}   # variable or secret id -> {ids of its overrides and aliases}
        self.default_org: str | None = None
        self.reserved_ids: frozenset[str] = frozenset()   # ids fixtures being loaded give their records
        self.tracer: AttemptTracer | None = None   # the server's tracer (edge/tracing.py), lent like its settings
        self.keeper: Keeper | None = None      # told of each webhook attempt that ended (the server's), lent too
        self.generation = 0                    # counts what may have changed the world (world/replies.py)
        self.replies = ReplyCache()            # replies cached while it stays the same (never saved)

    def __getstate__(self):
        # what is not saved is saved as None, in its place: a world read back keeps its attributes in the order
        # of a built one (the layout attribute reads are fast in)
        return {name: None if name in ("replies", "keeper") else value for name, value in self.__dict__.items()}

    def __setstate__(self, state):
        """A copied or restored world: attributes set one by one (they stay in the object's compact
        layout), and the weak references back to it made anew; no cached reply comes with it."""
        for name, value in state.items():
            object.__setattr__(self, name, value)
        self.webhooks.rt = weakref.proxy(self)
        self.deployments.rt = weakref.proxy(self)
        self.generation = state.get("generation", 0)
        self.replies = ReplyCache()

    def close(self):
        """The world is retired (deleted, expired, reset, replaced or restored over)."""
        self.journal.release()
        self.webhooks.stop()

    # ------------------------------------------------------------ ids, time, revisions
    def new_id(self):
        """A fresh id: the pinned one if fixtures gave one, else the next generated id that no record
        holds or fixtures being loaded will give (records keep the ids they were exported with, which may
        be ids this world's generator hands out too)."""
        if self.fake.pinned:
            return self.fake.uuid()
        ident = self.fake.uuid()
        while ident in self.reserved_ids or self.store.holds(ident):
            ident = self.fake.uuid()
        return ident

    def stamp(self, now):
        text = iso(now)
        return {"created_at": text, "updated_at": text}

    def bump(self, entry):
        """Mark a record changed (services compare this with their last deployment)."""
        self.revision += 1
        entry.meta["rev"] = self.revision

    def add_token(self, token: Token):
        self.tokens[token.value] = token
        return token

    @staticmethod
    def user_id(name):
        return str(uuidlib.uuid5(uuidlib.NAMESPACE_URL, f"mock-user:{name}"))

    def pump(self):
        """Bring deployments and webhook attempts up to now; returns that time. When one fell due, the world
        counts a change (its cached replies no longer hold)."""
        now = self.clock.now()
        if self._due(now):
            self.generation += 1
            self.lifecycle.pump(now)
            self.webhooks.pump(now)
        return now

    def falls_due(self):
        """Whether pump() has anything to do now: a deployment step or a webhook attempt that fell due. The
        background loop asks every awake world 20 times a second, and with hundreds of sandboxes the two
        pumps, called for nothing, would be most of its work."""
        if not (self.lifecycle.due or self.webhooks.pending):
            return False
        return self._due(self.clock.now())

    def _due(self, now):
        due, pending = self.lifecycle.due, self.webhooks.pending
        return bool(due and due[0][0] <= now or pending and pending[0][0] <= now)
