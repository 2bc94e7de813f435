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

import re
import time

from .clock import iso as _iso
from .errors import ApiError

DEFAULT = "default"
PREFIX = "/sandbox/"
HEADER = b"x-mock-sandbox"
NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}\Z")


def check_name(name):
    if not NAME.match(name):
        raise ApiError(400, f"sandbox name {name[:80]!r} is not valid: use 1 to 64 of A-Z a-z 0-9 _ . -")
    return name


def choose(scope):
    """(sandbox name, path without the sandbox prefix) of a request, or ApiError 400."""
    path = scope["path"]
    header = None
    for key, value in scope["headers"]:
        if key == HEADER:
            header = value.decode("latin-1").strip()
            break
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
    __slots__ = ("name", "rt", "origin", "source", "created_at", "last_used", "calls")

    def __init__(self, name, rt, origin, source, now):
        self.name = name
        self.rt = rt                            # the world
        self.origin = origin                    # the frozen world a reset goes back to
        self.source = source                    # what it was made from: fixtures, a snapshot, options
        self.created_at = now
        self.last_used = now
        self.calls = 0

    def describe(self):
        rt = self.rt
        counts = rt.store.count()
        return {"name": self.name, "source": self.source, "created_at": _iso(self.created_at),
                "last_used_at": _iso(self.last_used), "calls": self.calls,
                "resources": sum(counts.values()), "journal_entries": len(rt.journal.entries),
                "active_deployments": len(rt.lifecycle.active), "scenarios": sorted(rt.scenarios.active),
                "clock": rt.clock.describe()}


class Sandboxes:
    def __init__(self, make, limit=1000, ttl=3600.0, wall=time.time, forget=None):
        self.make = make                        # (name, options) -> Sandbox
        self.forget = forget or (lambda box: None)   # told of every sandbox dropped (deleted, replaced, expired)
        self.limit = limit
        self.ttl = ttl
        self.wall = wall
        self.live = {}                          # name -> Sandbox
        self._swept = 0.0

    def get(self, name):
        """The sandbox of a request: made from the defaults on first use."""
        box = self.live.get(name)
        if box is None:
            box = self.create(name)
        box.last_used = self.wall()
        return box

    def get_quietly(self, name):
        """The sandbox, made on first use, without counting a call (the server's own reads)."""
        return self.live.get(name) or self.create(name)

    def create(self, name, options=None, replace=False):
        check_name(name)
        self.sweep(force=True)
        if name not in self.live and len(self.live) >= self.limit:
            raise ApiError(503, f"sandbox {name!r} cannot be created: {len(self.live)} sandboxes exist, the limit "
                                f"is {self.limit} (delete some with DELETE /_mock/sandboxes/{{name}}, or start the "
                                f"server with a higher --max-sandboxes)")
        if name in self.live and not replace:
            return self.live[name]
        box = self.make(name, options or {})
        old = self.live.get(name)
        self.live[name] = box
        if old is not None:
            self.forget(old)
        return box

    def find(self, name):
        box = self.live.get(name)
        if box is None:
            raise ApiError(404, f"sandbox {name} not found")
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
        """Forget sandboxes idle for longer than the ttl (checked at most once a second)."""
        now = self.wall()
        if not force and now - self._swept < 1.0:
            return []
        self._swept = now
        gone = [name for name, box in self.live.items() if name != DEFAULT and now - box.last_used > self.ttl]
        for name in gone:
            self.forget(self.live.pop(name))
        return gone

    def __iter__(self):
        return iter(list(self.live.values()))

    def __len__(self):
        return len(self.live)


