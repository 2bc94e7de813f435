"""Sandboxes: isolated worlds in one server, and the one place a request's world is chosen.

A request names its sandbox by a path prefix `/sandbox/{name}/...` or by the header
`X-Mock-Sandbox: {name}`; with neither it uses `default`. `choose(scope)` reads that and
returns the name and the path without the prefix; everything below the request path gets
only the chosen `Runtime` and never learns that other worlds exist.

A sandbox is created on first use (or explicitly, with options) by `make(name, options)`,
given by the server. Idle sandboxes expire after `ttl` seconds on the wall clock (the
`default` one never does); at most `limit` exist at once, and creating one more is refused,
never answered by evicting a live one.
"""

import difflib
import re
import time
import zlib

from mockserver.core.clock import iso as _iso
from mockserver.core.errors import ApiError
from mockserver.world.frozen import freeze, thaw

DEFAULT = "default"
PREFIX = "/sandbox/"
HEADER = b"x-mock-sandbox"
NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}\Z")


DOTS = frozenset({".", ".."})                  # path segments a client may normalise away (into `default`)


def check_name(name, noun="sandbox"):
    """A valid name of a sandbox (or snapshot): 1 to 64 of A-Z a-z 0-9 _ . -, and not `.` or `..`."""
    if not NAME.match(name) or name in DOTS:
        raise ApiError(400, f"{noun} name {name[:80]!r} is not valid: use 1 to 64 of A-Z a-z 0-9 _ . -, "
                            "other than . and ..")
    return name


def choose(scope):
    """(sandbox name, path without the sandbox prefix) of a request, or ApiError 400."""
    header = next((value for key, value in scope["headers"] if key == HEADER), None)
    return choose_from(scope["path"], header)


def choose_from(path, header):
    """`choose` of a path and the value of its X-Mock-Sandbox header (bytes, or None)."""
    if header is not None:
        header = header.decode("latin-1").strip()
    if path.startswith(PREFIX):
        name, _, rest = path[len(PREFIX):].partition("/")
        check_name(name)
        if header is not None and header != name:
            raise ApiError(400, f"the path names sandbox {name!r} but X-Mock-Sandbox names {header[:80]!r}")
        return name, "/" + rest
    if header is not None:
        return check_name(header), path
    return DEFAULT, path


class Sandbox:
    """A name and its world. An idle, quiet world may sleep: it is then kept as compressed bytes (a small part
    of the memory it holds awake; docs/performance.md) and woken by the next use of `rt`. What the listing
    shows of a sleeping sandbox was noted when it fell asleep."""

    __slots__ = ("name", "_rt", "origin", "source", "created_at", "last_used", "calls", "inflight", "shared",
                 "_sleeping", "_clock", "_noted", "expires", "born", "patch", "made_by")

    def __init__(self, name, rt, origin, source, now, shared=None):
        self.name = name
        self._rt = rt                           # the world, or None while it sleeps
        self.origin = origin                    # the frozen world a reset goes back to ...
        self.patch = None                       # ... with these options applied again (sandboxes/options.py)
        self.source = source                    # what it was made from: fixtures, a snapshot, options
        self.created_at = now
        self.last_used = now
        self.calls = 0
        self.inflight = 0                       # requests of this sandbox being answered now
        self.shared = shared                    # what freezing and thawing need (world.Shared)
        self._sleeping = None                   # the world's compressed bytes while it sleeps
        self._clock = None                      # its clock meanwhile (the listing reads it)
        self._noted = None                      # what describe() shows of it meanwhile
        self.expires = None                     # {"seconds": on its clock, "calls": API calls}: when it ends
        self.born = 0.0                         # when it was made, on its own clock
        self.made_by = "control"                # or "call": an API call to a name nobody made (Sandboxes.get)

    @property
    def rt(self):
        if self._rt is None:
            self._wake()
        return self._rt

    @rt.setter
    def rt(self, world):
        self._rt, self._sleeping, self._clock, self._noted = world, None, None, None

    @property
    def asleep(self):
        return self._rt is None

    def quiet(self):
        """Nothing of the world is under way: no request, deployment, webhook attempt or delivery due."""
        rt = self._rt
        return (rt is not None and not self.inflight and not rt.lifecycle.active and not rt.webhooks.pending
                and not rt.webhooks.tasks)

    def sleep(self):
        """Keep the world as bytes until it is used again (only when quiet; returns whether it slept)."""
        if self.shared is None or not self.quiet():
            return False
        rt = self._rt
        noted = self.describe()
        sleeping = zlib.compress(freeze(rt, self.shared), 1)
        rt.close()
        self._rt, self._sleeping, self._clock, self._noted = None, sleeping, rt.clock, noted
        return True

    def _wake(self):
        rt = thaw(zlib.decompress(self._sleeping), self.shared)
        rt.clock = self._clock                 # the same clock, which went on meanwhile
        self.rt = rt

    def expired(self, now=None):
        """Why the sandbox has ended (its `expires` option reached), or None while it lives; `now`: the time on
        its clock to judge by (default: its clock's now)."""
        if not self.expires:
            return None
        calls, seconds = self.expires.get("calls"), self.expires.get("seconds")
        if calls is not None and self.calls >= calls:
            return f"it expired after {calls} API call(s)"
        if seconds is not None and now is None:
            now = (self._rt.clock if self._rt is not None else self._clock).now()
        if seconds is not None and now - self.born >= seconds:
            return f"it expired {seconds:g} s after it was made, on its clock"
        return None

    def retire(self):
        """The sandbox is gone: its world lets go of what it holds (nothing to do while it sleeps)."""
        if self._rt is not None:
            self._rt.close()

    def describe(self):
        if self._rt is None:
            return {**self._noted, "last_used_at": _iso(self.last_used), "calls": self.calls,
                    "clock": self._clock.describe(), "asleep": True}
        rt = self._rt
        counts = rt.store.count()
        return {**({"expires": self.expires} if self.expires else {}),
                "name": self.name, "source": self.source, "made_by": getattr(self, "made_by", "control"),
                "created_at": _iso(self.created_at),
                "last_used_at": _iso(self.last_used), "calls": self.calls,
                "resources": sum(counts.values()), "journal_entries": len(rt.journal.entries),
                "active_deployments": len(rt.lifecycle.active), "scenarios": sorted(rt.scenarios.active),
                "clock": rt.clock.describe(), "asleep": False}


class Sandboxes:
    def __init__(self, make, limit=1000, ttl=3600.0, wall=time.time, forget=None, sleep_after=None):
        self.make = make                        # (name, options) -> Sandbox
        self.forget = forget or (lambda box: None)   # told of every sandbox dropped (deleted, replaced, expired)
        self.limit = limit
        self.ttl = ttl
        self.wall = wall
        self.sleep_after = sleep_after          # seconds idle before a quiet world sleeps (None: never)
        self.live = {}                          # name -> Sandbox
        self.slept = 0                          # worlds put to sleep so far (memory let go)
        self._swept = 0.0

    def get(self, name):
        """The sandbox of a request: made from the defaults on first use."""
        box = self.live.get(name)
        if box is not None and box.expires and box.expired():       # ended: the call meets a fresh one
            self.forget(self.live.pop(name))
            box = None
        if box is None:
            box = self.create(name)
            box.made_by = "call"                # a misspelled name in a client's URL makes one too
        box.last_used = self.wall()
        return box

    def get_replayed(self, name, now):
        """The sandbox a change of the change log ran in, found as `get` found it then (`now`: the change's time on
        the sandbox's clock): a fresh one when the one there had ended by then. The call counts, as it did."""
        box = self.live.get(name)
        if box is not None and box.expires and box.expired(now):
            self.forget(self.live.pop(name))
            box = None
        if box is None:
            box = self.create(name)
        box.calls += 1
        return box

    def get_quietly(self, name):
        """The sandbox, made on first use, without counting a call (the server's own reads)."""
        return self.live.get(name) or self.create(name)

    def create(self, name, options=None, replace=False, fixtures=None):
        """A sandbox made with `options` (`fixtures`: their fixtures folder, already read), or the live one
        of that name unless `replace`."""
        check_name(name)
        self.sweep(force=name not in self.live and len(self.live) >= self.limit)   # at the limit: the ended go
        if name not in self.live and len(self.live) >= self.limit:
            raise ApiError(503, f"sandbox {name!r} cannot be created: {len(self.live)} sandboxes exist, the limit "
                                f"is {self.limit} (delete some with DELETE /_mock/sandboxes/{{name}}, or start the "
                                f"server with a higher --max-sandboxes)")
        if name in self.live and not replace:
            return self.live[name]
        box = self.make(name, options or {}, fixtures) if fixtures is not None else self.make(name, options or {})
        old = self.live.get(name)
        self.live[name] = box
        if old is not None:
            self.forget(old)
        return box

    def find(self, name):
        """The live sandbox `name`, or a 404 that names it and the closest existing names."""
        box = self.live.get(name)
        ended = box.expired() if box is not None and box.expires else None
        if ended:
            self.forget(self.live.pop(name))
            raise ApiError(404, f"sandbox {name} does not exist: {ended} (an API call with a credential makes a "
                                f"fresh one; PUT /_mock/sandboxes/{name} too)")
        if box is None:
            near = difflib.get_close_matches(name, list(self.live), n=3, cutoff=0.6)
            hint = f"; did you mean {', '.join(near)}?" if near else ""
            raise ApiError(404, f"sandbox {name} does not exist (control calls never create one: PUT "
                                f"/_mock/sandboxes/{name} does){hint}")
        return box

    def existing(self, name):
        """The sandbox a control call acts on: it must exist (`find`); its use is noted."""
        box = self.find(name)
        box.last_used = self.wall()
        return box

    def delete(self, name):
        """Forget a sandbox. `default` always exists: deleting it puts a fresh one in its place
        (at once, so that it never has to wait for a free place under the limit)."""
        box = self.live.pop(name, None)
        if box is not None:
            if name == DEFAULT:
                self.live[DEFAULT] = self.make(DEFAULT, {})
            self.forget(box)
        return box

    def sweep(self, force=False):
        """Forget sandboxes idle for longer than the ttl, and put to sleep the quiet ones idle for longer
        than `sleep_after` (checked at most once a second)."""
        now = self.wall()
        if not force and now - self._swept < 1.0:
            return []
        self._swept = now
        gone = [name for name, box in self.live.items() if name != DEFAULT and now - box.last_used > self.ttl]
        for name in gone:
            self.forget(self.live.pop(name))
        if self.sleep_after is not None:
            for box in self.live.values():
                if not box.asleep and now - box.last_used > self.sleep_after:
                    self.slept += box.sleep()
        return gone

    def awake(self):
        """The sandboxes whose world is in memory (the background loop looks only at these)."""
        return [box for box in self.live.values() if not box.asleep]

    def __iter__(self):
        return iter(list(self.live.values()))

    def __len__(self):
        return len(self.live)


