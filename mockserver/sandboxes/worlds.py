"""The worlds one server keeps: the start world, its sandboxes and snapshots, and their upkeep.

`Worlds` builds the start world once from the fixtures (through the handlers), freezes it, and
makes every sandbox by copying those bytes (sandboxes/sandbox.py, sandboxes/options.py). It resets,
restores and retires worlds, restores and saves the state file (sandboxes/statefile.py), and runs the
background loop that applies what fell due on each awake world's clock, expires and puts to
sleep idle sandboxes and keeps the collector's policy (process/collector.py). How a request is answered
is app.py's business: `app.MockServer` is this server with its request path.
"""

import asyncio
import logging
import os
import time
from collections import deque

from mockserver.api.replay import fresh_world
from mockserver.core.clock import Clock
from mockserver.core.settings import Settings
from mockserver.document.spec import Spec
from mockserver.sandboxes.options import patch as patch_world
from mockserver.sandboxes.options import world_for
from mockserver.sandboxes.sandbox import DEFAULT, Sandbox, Sandboxes
from mockserver.world.fixtures import read_fixtures
from mockserver.world.frozen import Shared, freeze, thaw
from mockserver.world.scenarios import Scenarios
from mockserver.world.strictness import vocabulary

log = logging.getLogger("mockserver")
TICK = 0.05                                     # seconds between two rounds of the background loop
BURY_SECONDS = 0.005                            # time a call or a round of the loop may spend freeing worlds
SPARES = 4                                      # copies of the start world kept ready for new sandboxes


class Worlds:
    def __init__(self, settings=None, spec=None, clock=None, wall=time.time, tracer=None):
        self.settings = settings or Settings()
        self.spec = spec or Spec.load()
        self.shared = Shared(self.settings, self.spec, tracer)     # `tracer`: edge/tracing.py's, lent to every world
        self.shared.keeper = self            # its worlds tell it of webhook attempts (Keeper)
        self.fixtures = read_fixtures(self.settings.fixtures, self.spec)
        self.started = time.time()
        # The world every sandbox starts from, built once through the handlers and then only copied.
        first = self.build(self.settings, clock or Clock(self.settings.clock), self.fixtures)
        self.origin = freeze(first, self.shared)
        # scenarios loaded from files at start: every sandbox starts with them, and may name them
        self.library = {name: (item["raw"], item["source"]) for name, item in first.scenarios.active.items()}
        # --inject: the scenario every world runs, whatever it was made from (added back where it is missing)
        self.injected = first.scenarios.active[next(reversed(first.scenarios.active))] if self.settings.inject \
            else None
        # who may make a sandbox by using it, on a mock protected by a control token: a caller of the start world
        self.start_auth = (dict(first.tokens), first.default_org, frozenset(first.store.organizations.rows))
        first.close()
        self.snapshots = {}                    # name -> Snapshot, shared by all sandboxes
        self.changes = 0                       # requests that may have changed state: the state file is saved
        #                                        when this moves (reads do not move it)
        self.graveyard = deque()               # retired sandboxes whose worlds are still to be freed
        self.spares: deque = deque()           # copies of the start world made ahead of time (`spare`)
        self.sandboxes = Sandboxes(self.make_sandbox, self.settings.max_sandboxes, self.settings.sandbox_ttl, wall,
                                   forget=self.forget, sleep_after=self.settings.sleep_after or None)
        self.sandboxes.create(DEFAULT)
        self.collector = None                  # the process's collector policy (process/collector.py), set by `serve`
        self.saver = None
        self.changelog = None                  # with a state file: the changes since its last save (changelog.py)
        self.log_upto = (0, 0)                 # the position in the change log up to which the state file holds
        self.unreplayed = None                 # what the change log holds after it, read at start (logfile.py)
        self.lock = None                       # the state file's lock, held while the server runs (statefile.py)
        self.replaying = False
        self.loaded = {"from": "fixtures", "fixtures": str(self.settings.fixtures)}   # what the start line says
        if self.settings.state_file:
            self._open_state_file(self.settings.state_file)

    def _open_state_file(self, path):
        """The state file's folder checked and its lock taken (a problem, or another server holding it, stops the
        start), then its world restored and its change log read (damage in it stops the start: logfile.py),
        unless `fresh` asks for the fixtures' (the file is then kept aside as PATH.previous)."""
        from mockserver.sandboxes.changelog import ChangeLog, drop_segments
        from mockserver.sandboxes.logfile import check_damage, read_log
        from mockserver.sandboxes.statefile import Saver, hold, prepare, restore, set_aside
        prepare(path)
        self.lock = hold(path)
        try:
            if self.settings.fresh:
                self.loaded["set_aside"] = set_aside(path)
                drop_segments(path)
            elif restore(self, path):
                self.loaded = {"from": "state file", "state_file": path, "fixtures": str(self.settings.fixtures),
                               "saved_at": os.stat(path).st_mtime, "sandboxes": len(self.sandboxes),
                               "snapshots": len(self.snapshots)}
            self.unreplayed = read_log(path, after=self.log_upto)
            if self.unreplayed.damage:
                check_damage(path, self.unreplayed.damage, self.settings.damaged_log)
        except BaseException:
            self.release()
            raise
        if self.settings.durability != "off":
            self.changelog = ChangeLog(path, self.settings.durability)
        self.saver = Saver(self, path, self.settings.save_interval)

    def release(self):
        """Let go of the state file's lock (at the stop): another server may take the file."""
        if self.lock is not None:
            os.close(self.lock)
            self.lock = None

    def attempted(self, webhooks, delivery, attempt, given_up):
        """A webhook attempt ended (world/webhooks.py): noted in the change log, so that a restart does not make it
        again."""
        if self.changelog is None or self.replaying:
            return
        name = next((box.name for box in self.sandboxes.awake() if box.rt.webhooks is webhooks), None)
        if name is not None:
            self.changes += 1
            self.changelog.note({"kind": "attempt", "sandbox": name, "now": webhooks.rt.clock.now(),
                                 "delivery": delivery["id"], "attempt": attempt, "given_up": given_up})

    # ------------------------------------------------------------ worlds
    def build(self, settings, clock, fixtures):
        """A world made by replaying fixtures through the handlers (slow: done once, or for options)."""
        scenarios = Scenarios(self.spec, seed=settings.seed, known=vocabulary(fixtures))
        for path in [*settings.scenarios, *([settings.inject] if settings.inject else [])]:
            scenarios.load_file(path)
            for warning in scenarios.warnings:
                log.warning("%s", warning)
        world = fresh_world(settings, clock, fixtures, scenarios, self.shared.budget)
        world.tracer = self.shared.tracer
        world.keeper = self.shared.keeper
        return world

    def make_sandbox(self, name, options, fixtures=None):
        """A new sandbox: a copy of the start world, or of a snapshot, or a world built for its options
        (`fixtures`: the folder of its `fixtures` option, already read)."""
        rt, origin, source, patch = world_for(self, options, fixtures)
        if self.inject_into(rt) and patch is None:      # a world frozen again holds the injected scenario too
            origin = freeze(rt, self.shared)
        _own(rt, name)
        self.changes += 1
        box = Sandbox(name, rt, origin, source, self.sandboxes.wall(), self.shared)
        box.patch = patch
        box.expires, box.born = options.get("expires"), rt.clock.now()
        return box

    def spare(self):
        """A copy of the start world for a new sandbox: one copied ahead of time when there is one, else one copied
        now. The one taken is copied again as soon as the event loop is free (after the reply that needed it), so
        that sandboxes made at a test's pace never wait for a copy."""
        if not self.spares:
            return thaw(self.origin, self.shared)
        taken = self.spares.popleft()
        try:
            asyncio.get_running_loop().call_soon(self.refill)
        except RuntimeError:                    # no loop (a world made at start, or in a test): upkeep refills
            pass
        return taken

    def refill(self):
        """One more spare copy of the start world, while there are fewer than SPARES."""
        if len(self.spares) < SPARES:
            self.spares.append(thaw(self.origin, self.shared))

    def inject_into(self, rt):
        """The --inject scenario made active in a world that lacks it; whether it was missing."""
        if self.injected is None or self.injected["raw"]["name"] in rt.scenarios.active:
            return False
        rt.scenarios.activate(self.injected["raw"], self.injected["source"])
        return True

    def forget(self, box):
        """A sandbox was deleted, replaced or expired: its world is freed now, or, when many go at once,
        a few at a time by the background loop, so that no request waits behind freeing them all. When no
        sandbox of its name is left, its private snapshots go with it."""
        self.changes += 1
        if box.name not in self.sandboxes.live:
            self.drop_snapshots(box.name, private_only=True)
        box.retire()
        self.graveyard.append(box)
        self.bury()

    def bury(self, budget=BURY_SECONDS):
        """Free retired worlds for at most `budget` seconds (freeing a world takes a fraction of that).
        When the last one is freed, the memory they held is handed back to the system (collector.release):
        a hand-back that ran while some were still waiting would leave theirs in the heap."""
        started = time.perf_counter()
        freed = bool(self.graveyard)
        while self.graveyard and time.perf_counter() - started < budget:
            self.graveyard.popleft()
        if freed and not self.graveyard and self.collector is not None:
            self.spec.forget_paths()
            self.collector.release()

    def drop_snapshots(self, sandbox, private_only=False):
        """Delete the snapshots saved from a sandbox (only its private ones with `private_only`); their names."""
        gone = [snap.name for snap in self.snapshots.values()
                if snap.sandbox == sandbox and (snap.private or not private_only)]
        for name in gone:
            del self.snapshots[name]
        return gone

    def reset_sandbox(self, box, scenarios=False):
        """Back to the world the sandbox started from. Its clock goes on from where it is, and its
        scenarios stay active with their counters rewound (all removed with `scenarios`)."""
        old = box.rt
        rt = thaw(box.origin, self.shared)
        if getattr(box, "patch", None):       # (a sandbox saved before patches were kept has none)
            patch_world(self, rt, box.patch, again=True)
        _own(rt, box.name)
        rt.clock = old.clock
        if scenarios:
            rt.scenarios.clear()
        else:
            rt.scenarios = old.scenarios
            rt.scenarios.rewind()
        self.inject_into(rt)
        box.rt = rt
        old.close()
        return rt

    def restore_snapshot(self, box, name):
        """The sandbox's world replaced by a copy of a snapshot (or of the start world: `fixtures`), which
        goes on from the moment it was saved. 404 for an unknown name."""
        from mockserver.core.errors import ApiError
        if name == "fixtures":
            data, at = self.origin, None
        elif name in self.snapshots:
            data, at = self.snapshots[name].data, self.snapshots[name].clock_at
        else:
            raise ApiError(404, f"snapshot {name} not found")
        old, box.rt = box.rt, thaw(data, self.shared)
        box.rt.source = "fixtures" if name == "fixtures" else f"snapshot {name}"
        self.inject_into(box.rt)
        if at is not None:
            box.rt.clock.resume_at(at)
        old.close()
        return box.rt

    @property
    def rt(self):
        """The default sandbox's world (single-user code and tests)."""
        return self.sandboxes.get_quietly(DEFAULT).rt

    @property
    def clock(self):
        return self.rt.clock

    @property
    def scenarios(self):
        return self.rt.scenarios

    def reset(self, scenarios=False):
        self.reset_sandbox(self.sandboxes.get_quietly(DEFAULT), scenarios)

    # ------------------------------------------------------------ upkeep
    async def keep_up(self):
        """The background loop: due deployment events and webhook attempts without waiting for a request,
        sandboxes expired and put to sleep, the collector's policy, the periodic save."""
        while True:
            self.upkeep()
            await asyncio.sleep(TICK)

    def upkeep(self):
        self.bury()
        if not self.graveyard:                  # one a round: a round stays short
            self.refill()
        for box in self.sandboxes.awake():
            rt = box.rt
            if not rt.falls_due():
                continue                        # nothing has fallen due (idle worlds included)
            try:
                rt.pump()
            except Exception:                   # keep the loop alive; the error is a bug to see in the log
                log.exception("background pump of sandbox %s failed", box.name)
        self.sandboxes.sweep()
        if self.collector is not None:
            if self.shared.budget.trims or self.sandboxes.slept:
                self.shared.budget.trims = self.sandboxes.slept = 0
                self.collector.release()
            self.collector.tick()
        if self.changelog is not None:
            self.changelog.probe()              # a log that could not be written: tried again, once a second
        if self.saver is not None:
            try:
                self.saver.tick()
            except OSError as error:            # the saver reports its own failures; this would be a bug
                log.error("state file %s: the saver failed: %s", self.saver.path, error)

    async def stop(self):
        """At shutdown: webhook attempts cancelled, their clients closed, the last save."""
        for box in self.sandboxes.awake():
            await box.rt.webhooks.close()
        if self.saver is not None:
            self.saver.final()
        if self.changelog is not None:
            self.changelog.close()
        self.release()


def _own(rt, name):
    """New ids of a sandbox come from a sequence of its own, seeded by its name (default: the seed)."""
    if name != DEFAULT:
        rt.fake.reseed(name)
